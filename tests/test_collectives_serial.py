"""Collectives in one process: bad input, groups of one, and the native op bodies."""

import ctypes

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import AbstractMesh, CollectiveError, Mesh, MeshError
from meshrt.runtime import mpi as _mpi
from meshrt import collectives as C
from meshrt.collectives import common as _collectives_common, move as _collectives_move, reductions as _collectives_reduce
from meshrt.reduction import Generic, ReductionKind, as_reduction

SELF = MPI.COMM_SELF


@pytest.fixture(scope="module")
def mesh():
    return Mesh((1, 1, 1), ("x", "y", "z"), comm=SELF)


def test_reduction_kind_values():
    assert [k.value for k in ReductionKind] == [
        "sum", "max", "min", "product", "average", "bitwise_and", "bitwise_or", "bitwise_xor", "generic"]
    assert as_reduction("max") is ReductionKind.max
    assert isinstance(as_reduction(abs), Generic)
    with pytest.raises(CollectiveError, match="'generic' needs the function"):
        as_reduction("generic")
    with pytest.raises(CollectiveError, match="unknown kind 'mean'"):
        as_reduction("mean")


# -- bad input ---------------------------------------------------------------------------
def test_non_array_input(mesh):
    with pytest.raises(CollectiveError, match="all_reduce: x must be a numpy.ndarray, got list"):
        C.all_reduce([1, 2], mesh)
    with pytest.raises(CollectiveError, match="recv: like must be a numpy.ndarray"):
        C.recv((3,), mesh, None, 0)


def test_wrong_mesh_axis(mesh):
    with pytest.raises(MeshError, match="mesh_axes.*out of range"):
        C.all_gather(np.zeros(2), mesh, [3], 0)
    with pytest.raises(MeshError, match="unknown name 'w'"):
        C.broadcast(np.zeros(2), mesh, ["w"], 0)
    with pytest.raises(MeshError, match="appears twice"):
        C.all_reduce(np.zeros(2), mesh, [0, 0])


def test_root_outside_group(mesh):
    with pytest.raises(MeshError, match=r"root: \(1,\) is outside the device group"):
        C.broadcast(np.zeros(2), mesh, ["x"], (1,))
    with pytest.raises(MeshError, match="root: 2 is outside"):
        C.gather(np.zeros(2), mesh, ["x"], 0, 2)
    with pytest.raises(MeshError, match="destination"):
        C.send(np.zeros(2), mesh, ["x"], (0, 0))
    with pytest.raises(MeshError, match="source"):
        C.recv(np.zeros(2), mesh, ["x"], 5)


@pytest.mark.parametrize("dt", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("kind", ["bitwise_and", "bitwise_or", "bitwise_xor"])
def test_bitwise_on_floats(mesh, dt, kind):
    with pytest.raises(CollectiveError, match=f"{kind} is not defined for {dt}"):
        C.all_reduce(np.zeros(2, dt), mesh, None, kind)


def test_other_unreducible(mesh):
    with pytest.raises(CollectiveError, match="max is not defined for complex128"):
        C.reduce(np.zeros(2, complex), mesh, None, "max", 0)
    with pytest.raises(CollectiveError, match="average is not defined for bool"):
        C.all_reduce(np.zeros(2, bool), mesh, None, "average")
    with pytest.raises(CollectiveError, match="cannot reduce <U1"):
        C.all_reduce(np.array(["a"]), mesh)
    with pytest.raises(CollectiveError, match="unknown kind 'mean'"):
        C.reduce_scatter(np.zeros(2), mesh, None, "mean", 0)


@pytest.mark.parametrize("axis", [-1, 2, 1.0, True, None])
def test_bad_tensor_axes(mesh, axis):
    x = np.zeros((2, 2))
    for call, field in [
        (lambda: C.all_gather(x, mesh, None, axis), "gather_axis"),
        (lambda: C.gather(x, mesh, None, axis, 0), "gather_axis"),
        (lambda: C.all_to_all(x, mesh, None, axis, 0), "split_axis"),
        (lambda: C.all_to_all(x, mesh, None, 0, axis), "concat_axis"),
        (lambda: C.scatter(x, mesh, None, axis, 0), "scatter_axis"),
        (lambda: C.reduce_scatter(x, mesh, None, "sum", axis), "scatter_axis"),
        (lambda: C.all_slice(x, mesh, None, axis), "slice_axis"),
    ]:
        with pytest.raises(CollectiveError, match=field):
            call()


def test_shift_axis_must_be_in_mesh_axes(mesh):
    with pytest.raises(CollectiveError, match=r"shift_axis='z' \(mesh axis 2\) is not one of mesh_axes \(0, 1\)"):
        C.shift(np.zeros(2), mesh, ["x", "y"], "z", 1)
    with pytest.raises(CollectiveError, match="shift_axis: mesh axis: 7 is out of range"):
        C.shift(np.zeros(2), mesh, None, 7, 1)
    with pytest.raises(CollectiveError, match="offset must be an int"):
        C.shift(np.zeros(2), mesh, None, 0, 0.5)


class _OneGroup:
    size, rank = 1, 0


def test_given_sizes_checked():
    with pytest.raises(CollectiveError, match=r"sizes=\[2, 2\] must hold 1 non-negative sizes"):
        _collectives_move._given_sizes([2, 2], _OneGroup, np.zeros(2), 0, "all_gather")
    with pytest.raises(CollectiveError, match=r"all_gather: sizes\[0\]=3 but this device's piece has 2"):
        _collectives_move._given_sizes(3, _OneGroup, np.zeros(2), 0, "all_gather")


def test_abstract_mesh_cannot_communicate():
    am = AbstractMesh((2, 2))
    x = np.zeros(2)
    for call in [lambda: C.all_reduce(x, am), lambda: C.all_gather(x, am, None, 0), lambda: C.broadcast(x, am),
                 lambda: C.shift(x, am, None, 0, 1), lambda: C.send(x, am), lambda: C.all_slice(x, am, None, 0),
                 lambda: C.process_linear_index(am)]:
        with pytest.raises(CollectiveError, match="AbstractMesh"):
            call()
    # pure arithmetic works on an AbstractMesh
    assert C.mesh_shape(am, [1]) == (2,)
    assert C.neighbors_linear_indices(AbstractMesh((10, 20, 30)), (1, 2, 3), [1]) == (633, 693)


# -- groups of one -------------------------------------------------------------------------
def test_group_of_one_semantics(mesh):
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    for axes in [None, (), ["z", "x"]]:
        for kind in ["sum", "max", "average", "bitwise_xor"]:
            r = C.all_reduce(x, mesh, axes, kind)
            assert r is not x and r.dtype == x.dtype and np.array_equal(r, x)
        np.testing.assert_array_equal(C.all_reduce(x, mesh, axes, "sum", dtype="float16"), x.astype(np.float16))
        np.testing.assert_array_equal(C.reduce(x, mesh, axes, "product", (0,) * len(mesh.axes(axes))), x)
        np.testing.assert_array_equal(C.reduce_scatter(x, mesh, axes, "min", 1), x)
        assert C.all_gather(x, mesh, axes, 1) is x
        assert C.gather(x, mesh, axes, 0, 0) is x
        assert C.broadcast(x, mesh, axes, 0) is x
        assert C.scatter(x, mesh, axes, 1, 0) is x
        assert C.all_to_all(x, mesh, axes, 0, 1) is x
        np.testing.assert_array_equal(C.all_slice(x, mesh, axes, 1), x)
        h = C.all_reduce(x, mesh, axes, "sum", wait=False)
        assert h.test() and np.array_equal(h.wait(), x)
    np.testing.assert_array_equal(C.shift(x, mesh, ["x"], "x", 1), x)
    np.testing.assert_array_equal(C.shift(x, mesh, ["x"], "x", 3, rotate=True, wait=False).wait(), x)
    assert C.process_linear_index(mesh) == 0
    assert C.process_multi_index(mesh, ["z"]) == (0,)


def test_send_recv_self(mesh):
    x = np.arange(4.0)
    h = C.send(x, mesh, None, 0, wait=False)
    np.testing.assert_array_equal(C.recv(x, mesh, None, 0), x)
    assert h.wait() is None


def test_check_mode_single_process(mesh):
    old = C.set_check(True)
    try:
        np.testing.assert_array_equal(C.all_gather(np.ones(2), mesh, None, 0), np.ones(2))
    finally:
        C.set_check(old)


def test_check_attribute_follows_set_check():
    from meshrt.runtime import check

    old = C.set_check(True)
    try:
        assert C.CHECK is True and check.CHECK is True
        C.set_check(False)
        assert C.CHECK is False and check.CHECK is False
    finally:
        C.set_check(old)
    assert C.CHECK is old


def test_collectives_module_keeps_attribute_loads_specialized():
    # CPython 3.11 does not specialize `collectives.all_reduce` on a module that defines a
    # module-level __getattr__ (52 ns a lookup instead of 12): CHECK is a plain attribute instead.
    assert "__getattr__" not in vars(C)
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        C.nothing


# -- native op bodies, called directly ---------------------------------------------------
def _call(address, a, b):
    fn = _mpi._USER_FN(address)
    n = ctypes.c_int(a.size)
    fn(a.ctypes.data, b.ctypes.data, ctypes.byref(n), None)


@pytest.mark.parametrize("kind,uf", [("sum", np.add), ("product", np.multiply), ("max", np.maximum),
                                     ("min", np.minimum)])
def test_float16_bodies_match_numpy(kind, uf):
    _mpiops = pytest.importorskip("meshrt._mpiops")
    rng = np.random.RandomState(0)
    bits = rng.randint(0, 1 << 16, 20000).astype(np.uint16)
    a = bits.view(np.float16)
    b = rng.permutation(bits).view(np.float16)
    specials = np.array([0, -0.0, np.inf, -np.inf, np.nan, 6e-8, 65504, -65504, 1e-4], np.float16)
    a = np.concatenate([a, specials, specials[::-1]])
    b = np.concatenate([b, specials[::-1], specials])
    with np.errstate(all="ignore"):
        want = uf(a, b)
    got = b.copy()
    _call(_mpiops.addresses()[f"float16:{kind}"], a, got)
    # equal bit patterns, with every nan counted equal
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(got[~nan].view(np.uint16), want[~nan].view(np.uint16))


def absdiff_max(a, b):
    return max(abs(a), abs(b))


@pytest.mark.parametrize("dt", ["int8", "uint16", "int32", "int64", "float32", "float64", "complex128"])
def test_generic_bodies(dt):
    reduce_ops = _mpi._reduce_ops()

    a = (np.arange(10) - 5).astype(dt)
    b = (5 - np.arange(10) * 2).astype(dt)
    want = np.array([absdiff_max(x, y) for x, y in zip(a, b)]).astype(dt) if dt != "complex128" else None
    cf = reduce_ops.user_function(absdiff_max if dt != "complex128" else (lambda x, y: x * y), dt)
    got = b.copy()
    _call(cf.address, a, got)
    np.testing.assert_array_equal(got, want if want is not None else a * b)
    assert reduce_ops.user_function(absdiff_max, dt) is reduce_ops.user_function(absdiff_max, dt) or dt == "complex128"


def test_generic_op_cached_and_commute_flag():
    p1 = _mpi.reduce_plan(absdiff_max, np.dtype("float64"))
    assert _mpi.reduce_plan(absdiff_max, np.dtype("float64")) is p1
    assert p1.op.Is_commutative()
    p2 = _mpi.reduce_plan(Generic(absdiff_max, commute=False), np.dtype("float64"))
    assert not p2.op.Is_commutative()


def test_generic_that_does_not_compile():
    def bad(a, b):
        return object()

    with pytest.raises(CollectiveError, match="does not compile for float64"):
        _mpi.reduce_plan(bad, np.dtype("float64"))


# -- malloc thresholds (meshrt/runtime/malloc.py) ----------------------------------------------------
_MALLINFO_PROBE = r"""
import ctypes, importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("meshrt_malloc", sys.argv[1])  # the module alone: no MPI start-up
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)

class Info(ctypes.Structure):
    _fields_ = [(f, ctypes.c_size_t) for f in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = Info
before = mallinfo2().hblkhd
a = np.ones(64 << 20, np.uint8)  # 64 MiB: glibc's default serves it with its own mmap
mapped = mallinfo2().hblkhd - before
del a
import resource
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(2):  # a fresh 64 MiB result, as `y = all_reduce(x, mesh)` makes each call
    b = np.ones(64 << 20, np.uint8)
    del b
faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 2
print(json.dumps({"applied": m.applied, "reason": m.reason, "mapped": mapped, "faults": faults}))
"""


def _probe_malloc(**env):
    import json
    import os
    import subprocess
    import sys

    base = {k: v for k, v in os.environ.items()
            if not k.startswith("MALLOC_") and k not in ("MESHRT_MALLOC", "GLIBC_TUNABLES")}
    from meshrt.runtime import malloc as _malloc

    run = subprocess.run([sys.executable, "-c", _MALLINFO_PROBE, _malloc.__file__], env={**base, **env},
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


@pytest.mark.skipif(not (hasattr(ctypes.CDLL(None), "mallinfo2")), reason="needs glibc >= 2.33 (mallinfo2)")
def test_malloc_thresholds_keep_large_buffers_in_the_heap():
    from meshrt.runtime import malloc as _malloc

    # importing meshrt configured this process (or says why not)
    assert _malloc.applied or _malloc.reason != "not configured yet"
    on = _probe_malloc()
    assert on["applied"] == {"M_TRIM_THRESHOLD": _malloc.TRIM_THRESHOLD, "M_MMAP_THRESHOLD": _malloc.MMAP_THRESHOLD}
    assert on["mapped"] == 0  # 64 MiB came from the heap, not from its own mmap
    # and its pages are reused, not faulted in again: 64 MiB is 16384 pages of 4 KiB, or 32 huge
    # pages of 2 MiB (numpy asks for them), so glibc's defaults cost at least 32 faults per array
    assert on["faults"] < 32
    off = _probe_malloc(MESHRT_MALLOC="0")
    assert off["applied"] == {} and off["reason"] == "MESHRT_MALLOC=0"
    assert off["mapped"] >= 64 << 20  # glibc's defaults: mapped on its own
    assert off["faults"] >= 32  # ... and faulted in again every time
    mine = _probe_malloc(MALLOC_MMAP_THRESHOLD_=str(1 << 20))
    assert mine["applied"] == {} and "MALLOC_MMAP_THRESHOLD_" in mine["reason"]
    assert mine["mapped"] >= 64 << 20  # the user's 1 MiB threshold holds, not ours
    tun = _probe_malloc(GLIBC_TUNABLES="glibc.malloc.trim_threshold=0")
    assert tun["applied"] == {} and "GLIBC_TUNABLES" in tun["reason"]


# -- the compiled fronts and the watchdog ---------------------------------------------------
def test_compiled_fronts_publish_the_call_they_are_in(mesh):
    from meshrt import _collfront

    seen = []
    x = np.ones(2)

    class Spy:  # a comm whose Allreduce looks at what the watchdog would see, then does it
        def __getattr__(self, name):
            real = getattr(MPI.COMM_SELF, name)

            def call(*args):
                seen.append(_collfront.current())
                return real(*args)
            return call

    g = _collectives_common._group(mesh, None, "test")
    g.size, real = 2, g.comm  # pretend to be a group of two: the path that calls MPI
    g.comm = Spy()
    try:
        C.all_reduce(x, mesh)  # plans (Python), then
        C.all_reduce(x, mesh)  # the compiled front
    finally:
        g.comm, g.size = real, 1
        _collectives_common._fast.clear()
    (name, names), *values = seen[-1]
    assert name == "all_reduce" and dict(zip(names, values))["x"] is x
    assert _collfront.current() is None  # cleared on return


def test_watchdog_places_a_compiled_mark_among_frames():
    import sys

    from meshrt.runtime import watchdog as _watchdog

    mark = (("all_reduce", ("x", "mesh", "mesh_axes")), np.ones((2, 8)), None, None)
    # the fast path: no Python frame of the op; the mark is innermost, the caller is this test
    ops, caller = _watchdog.operations(sys._getframe(), mark)
    assert ops == [mark] and caller.f_code.co_name == "test_watchdog_places_a_compiled_mark_among_frames"
    assert _watchdog.describe(ops, caller).startswith(
        "all_reduce(x=array(shape=(2, 8), dtype=float64)) at test_collectives_serial.py:")
    # the Python path: the mark sits where the implementation's frame (_all_reduce) is, outside
    # the public operations it calls (here a stand-in named `group`)
    ns = {}
    exec(compile("def _all_reduce(f):\n    return f()\n\ndef group(f):\n    return f()\n", _collectives_reduce.__file__, "exec"), ns)
    ops, caller = ns["_all_reduce"](lambda: ns["group"](lambda: _watchdog.operations(sys._getframe(), mark)))
    assert [op if op is mark else op.f_code.co_name for op in ops] == ["group", mark]
    assert caller.f_code.co_name == "test_watchdog_places_a_compiled_mark_among_frames"
    # no mark: frames only
    assert _watchdog.operations(sys._getframe(), None) == ([], None)
