"""The compiled call path of the collectives (`meshrt._collfront.set_c_calls`): every planned
collective, blocking and ``wait=False``, against a numpy model, with the C calls on (counted by
``c_hits``, so a front that silently fell back to mpi4py fails) and off (none counted).

Each case runs three times: a first call may plan (Python path), the next two take the front.
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import Mesh
from meshrt import _collfront as F
from meshrt import collectives as C

MPI_NPROCS = (1, 2, 3, 4)

comm = MPI.COMM_WORLD
DTYPES = ["float64", "int32", "complex64", "uint8", "float32"]


def _x(k, shape, dtype):
    """Group rank ``k``'s input: small integers, exact in every dtype and under sum/product."""
    return ((np.arange(int(np.prod(shape))) * 3 + 5 * k) % 4 + 1).reshape(shape).astype(dtype)


def _cases(n):
    """``(name, call(x, mesh, wait), reference(inputs, k))`` for every collective the C path takes;
    ``x`` has ``2n`` rows of 3 (pieces of 2 rows split over the group)."""
    def rsum(xs):
        return np.sum(np.stack(xs), axis=0, dtype=xs[0].dtype)

    return [
        ("all_reduce", lambda x, m, w: C.all_reduce(x, m, wait=w), lambda xs, k: rsum(xs)),
        ("all_reduce_product", lambda x, m, w: C.all_reduce(x, m, None, "product", wait=w),
         lambda xs, k: np.prod(np.stack(xs), axis=0, dtype=xs[0].dtype)),
        ("reduce", lambda x, m, w: C.reduce(x, m, None, "sum", n - 1, wait=w),
         lambda xs, k: rsum(xs) if k == n - 1 else None),
        ("reduce_scatter", lambda x, m, w: C.reduce_scatter(x, m, wait=w),
         lambda xs, k: rsum(xs)[2 * k:2 * k + 2]),
        ("broadcast", lambda x, m, w: C.broadcast(x, m, root=n - 1, wait=w), lambda xs, k: xs[n - 1]),
        ("all_gather", lambda x, m, w: C.all_gather(x, m, wait=w), lambda xs, k: np.concatenate(xs)),
        ("gather", lambda x, m, w: C.gather(x, m, root=n // 2, wait=w),
         lambda xs, k: np.concatenate(xs) if k == n // 2 else None),
        ("scatter", lambda x, m, w: C.scatter(x, m, root=0, wait=w), lambda xs, k: xs[0][2 * k:2 * k + 2]),
        ("all_to_all", lambda x, m, w: C.all_to_all(x, m, wait=w),
         lambda xs, k: np.concatenate([v[2 * k:2 * k + 2] for v in xs])),
        ("shift", lambda x, m, w: C.shift(x, m, None, 0, 1, rotate=True, wait=w), lambda xs, k: xs[(k - 1) % n]),
    ]


@pytest.fixture(scope="module")
def mesh():
    m = Mesh((comm.size,), comm=comm)
    yield m
    m.free()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize("c_calls", [True, False])
def test_every_collective(mesh, dtype, wait, c_calls):
    n, k = comm.size, comm.rank
    xs = [_x(j, (2 * n, 3), dtype) for j in range(n)]
    old = F.c_calls()
    try:
        available = F.set_c_calls(c_calls)
        if c_calls:
            assert available, "the C calls found no MPI library functions"
        for name, call, ref in _cases(n):
            want = ref(xs, k)
            for rep in range(3):
                before = F.c_hits()
                got = call(xs[k].copy(), mesh, wait)
                took = F.c_hits() - before
                if not wait:
                    assert isinstance(got, C.Handle), name
                    h, got = got, got.wait()
                    assert h.wait() is got  # done: the same result at once
                if want is None:
                    assert got is None, (name, rep)
                else:
                    np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype} wait={wait} call {rep}")
                    assert got.dtype == np.dtype(dtype), name
                # n == 1: every op returns early, nothing to call; a first call may plan in Python
                if not c_calls or n == 1:
                    assert took == 0, (name, rep, took)
                elif rep > 0:
                    assert took == 1, (name, rep, took)
    finally:
        F.set_c_calls(old)


def test_out_and_test(mesh):
    """``out=`` receives the C call's result; a `Handle` from the C path answers ``test()``."""
    n = comm.size
    x = np.full(4, comm.rank + 1.0)
    out = np.empty(4)
    for _ in range(3):
        r = C.all_reduce(x, mesh, out=out)
        assert r is out
        np.testing.assert_array_equal(out, np.full(4, n * (n + 1) / 2))
        h = C.all_gather(x, mesh, wait=False)
        while not h.test():
            pass
        assert h.test()
        np.testing.assert_array_equal(h.wait(), np.repeat(np.arange(1.0, n + 1), 4))


def test_hot_path_follows_every_change(mesh):
    """The hot path (a repeat of an op's last blocking call, straight to MPI) takes only exact
    repeats: new data in a new or the same array, ``out=`` or not, and then every change of
    root, reduction, shape, dtype, mesh, switch or group communicator between two calls gives
    the numpy model's answer (counted by ``hot_hits``: repeats must take it)."""
    n, k = comm.size, comm.rank
    rng = np.random.default_rng(7)
    roots = [0, n - 1]
    for rep in range(8):
        vals = rng.integers(-9, 9, size=(n, 2 * n, 3)).astype(np.float64)  # every rank's input this round
        x = vals[k].copy()
        root = roots[(rep // 4) % 2]  # the same root 4 rounds in a row, then the other
        out = np.full((2 * n, 3), np.nan)
        before = F.hot_hits()
        np.testing.assert_array_equal(C.all_reduce(x, mesh), vals.sum(0))
        assert C.all_reduce(x, mesh, out=out) is out
        np.testing.assert_array_equal(out, vals.sum(0))
        np.testing.assert_array_equal(C.all_reduce(x, mesh, None, "average"), vals.sum(0) / n)
        got = C.reduce(x, mesh, None, "max", root)
        if k == root:
            np.testing.assert_array_equal(got, vals.max(0))
        else:
            assert got is None
        got = C.broadcast(x, mesh, root=root)
        np.testing.assert_array_equal(got, vals[root])
        assert (got is x) == (k == root)
        np.testing.assert_array_equal(C.all_gather(x, mesh), vals.reshape(-1, 3))
        got = C.gather(x, mesh, root=root)
        np.testing.assert_array_equal(got, vals.reshape(-1, 3)) if k == root else None
        np.testing.assert_array_equal(C.scatter(x, mesh, root=root), vals[root][2 * k:2 * k + 2])
        np.testing.assert_array_equal(C.all_to_all(x, mesh), np.concatenate([v[2 * k:2 * k + 2] for v in vals]))
        np.testing.assert_array_equal(C.reduce_scatter(x, mesh), vals.sum(0)[2 * k:2 * k + 2])
        np.testing.assert_array_equal(C.shift(x, mesh, None, 0, 1, rotate=True), vals[(k - 1) % n])
        # another shape and dtype in the same loop: the hot record is replaced, not misused
        xi = x[:n].astype(np.int32)
        np.testing.assert_array_equal(C.all_reduce(xi, mesh), vals[:, :n].sum(0).astype(np.int32))
        if n > 1 and F.c_calls() and rep % 4 >= 2:
            assert F.hot_hits() > before, "repeats did not take the hot path"
    # a freed mesh's hot record is never taken for the next mesh
    m2 = Mesh((n,), comm=comm)
    try:
        for _ in range(3):
            np.testing.assert_array_equal(C.all_reduce(np.full(2, k + 1.0), m2), np.full(2, n * (n + 1) / 2))
        m2.free()  # its communicators are gone; the mesh makes new ones on its next call
        for _ in range(3):
            np.testing.assert_array_equal(C.all_reduce(np.full(2, k + 1.0), m2), np.full(2, n * (n + 1) / 2))
        m2.free()
        m3 = Mesh((n,), comm=comm)
        np.testing.assert_array_equal(C.all_reduce(np.full(2, k + 2.0), m3), np.full(2, n * (n + 3) / 2))
        m3.free()
    finally:
        m2.free()
    # MESHRT_CHECK on: no call takes the hot path (the Python path checks every call)
    old = C.set_check(True)
    try:
        before = F.hot_hits()
        for _ in range(3):
            np.testing.assert_array_equal(C.all_reduce(np.ones(2), mesh), np.full(2, n))
        assert F.hot_hits() == before
    finally:
        C.set_check(old)
    # an out= that does not fit leaves the hot path for the Python one, which says why
    C.all_reduce(np.ones(2), mesh)
    C.all_reduce(np.ones(2), mesh)
    with pytest.raises(Exception, match="out"):
        C.all_reduce(np.ones(2), mesh, out=np.empty(3))


def test_out_overlapping_x(mesh):
    """An ``out`` that shares memory with ``x`` (MPI forbids receiving into the send buffer) gives
    the numpy model's answer on every path: first call, compiled front, hot path."""
    n, k = comm.size, comm.rank
    for rep in range(3):
        vals = np.arange(n * 4, dtype=np.float64).reshape(n, 4) * (rep + 1)
        x = vals[k].copy()
        assert C.all_reduce(x, mesh, out=x) is x
        np.testing.assert_array_equal(x, vals.sum(0))
        big = np.zeros(4 * n)
        big[:4] = vals[k]
        got = C.all_gather(big[:4], mesh, out=big)
        assert got is big
        np.testing.assert_array_equal(big, vals.reshape(-1))
        x = np.tile(vals[k], n)
        got = C.reduce_scatter(x, mesh, out=x[:4])
        np.testing.assert_array_equal(got, np.tile(vals.sum(0), n)[4 * k:4 * k + 4])
        x = vals[k].copy()
        assert C.shift(x, mesh, None, 0, 1, rotate=True, out=x) is x
        np.testing.assert_array_equal(x, vals[(k - 1) % n])
        x = np.tile(vals[k], n)
        got = C.all_to_all(x, mesh, out=x)
        np.testing.assert_array_equal(got, np.concatenate([v for v in vals]) if n == 1 else
                                      np.concatenate([np.tile(v, n)[4 * k:4 * k + 4] for v in vals]))


def test_hot_call_lets_other_threads_run(mesh):
    """A hot call holds the GIL only while this is the process's one thread: with another thread
    alive, that thread runs while the call waits for a late partner, and sees the call's mark
    (what the MESHRT_TIMEOUT watchdog names): the op, x itself and the mesh."""
    import threading
    import time

    if comm.size < 2:
        pytest.skip("needs 2 processes")
    x = np.ones(2)
    for _ in range(3):
        C.all_reduce(x, mesh)
    ticks, marks, stop = [], [], threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(1)
            mark = F.current()
            if mark is not None:
                marks.append(mark)
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        comm.Barrier()
        if comm.rank == 1:
            time.sleep(0.5)
        before, hot = len(ticks), F.hot_hits()
        C.all_reduce(x, mesh)
        during = len(ticks) - before
    finally:
        stop.set()
        t.join()
    if F.c_calls():
        assert F.hot_hits() == hot + 1
    if comm.rank != 1:
        assert during >= 5, f"the other thread ran {during} times in 0.5 s: the call held the GIL"
        assert marks, "the other thread saw no mark while the call waited"
        assert all(m[0][0] == "all_reduce" and m[1] is x and m[2] is mesh for m in marks), marks[:1]
    assert F.current() is None


def test_send_recv(mesh):
    """send/recv between ranks 0 and 1, blocking and not, through the C calls."""
    if comm.size < 2:
        pytest.skip("needs 2 processes")
    x = np.arange(5, dtype=np.int64) + 10 * comm.rank
    before = F.c_hits()
    for rep in range(3):
        if comm.rank == 0:
            C.send(x, mesh, None, 1)
            got = C.recv(x, mesh, None, 1)
            np.testing.assert_array_equal(got, np.arange(5) + 10)
            h = C.send(x, mesh, None, 1, wait=False)
            assert h.wait() is None
        elif comm.rank == 1:
            got = C.recv(x, mesh, None, 0)
            C.send(x, mesh, None, 0)
            np.testing.assert_array_equal(got, np.arange(5))
            h = C.recv(x, mesh, None, 0, wait=False)
            np.testing.assert_array_equal(h.wait(), np.arange(5))
    if comm.rank < 2:
        took = F.c_hits() - before
        assert took >= 6 if F.c_calls() else took == 0  # the first of each direction may plan in Python


def test_environment_switch(mesh):
    """``MESHRT_C_CALLS=0`` (tests/test_c_calls_off.py runs this file so) leaves every call on mpi4py."""
    import os

    off = os.environ.get("MESHRT_C_CALLS", "1") == "0"
    x = np.ones(3)
    before = F.c_hits()
    for _ in range(3):
        C.all_reduce(x, mesh)
    took = F.c_hits() - before
    if off or comm.size == 1:
        assert took == 0
    else:
        assert took >= 2


@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize("dtype", ["float64", "int16", ">f4"])
def test_unequal_pieces(mesh, dtype, wait):
    """all_gather with ``sizes=`` (MPI_Allgatherv) and an uneven all_to_all (MPI_Alltoallv) take
    the C path too, in bytes, whatever the dtype (a non-native one included)."""
    from meshrt.sharding import split_offsets

    n, k = comm.size, comm.rank
    sizes = [j % 3 + 1 for j in range(n)]
    pieces = [_x(j, (sizes[j], 2), dtype) for j in range(n)]
    wides = [_x(j + 7, (2 * n + 1, 2), dtype) for j in range(n)]
    off = split_offsets(2 * n + 1, n)
    want_a2a = np.concatenate([w[off[k]:off[k + 1]] for w in wides])
    for rep in range(3):
        before = F.c_hits()
        got = C.all_gather(pieces[k], mesh, None, 0, sizes=sizes, wait=wait)
        got = got if wait else got.wait()
        np.testing.assert_array_equal(got, np.concatenate(pieces))
        assert got.dtype == np.dtype(dtype)
        a2a = C.all_to_all(wides[k], mesh, wait=wait)
        a2a = a2a if wait else a2a.wait()
        np.testing.assert_array_equal(a2a, want_a2a)
        took = F.c_hits() - before
        if not F.c_calls() or n == 1:
            assert took == 0
        elif rep > 0:
            assert took == 2, (rep, took)


def test_reshard_exchange_takes_the_c_path(mesh):
    """reshard's point-to-point steps (permute, exchange) post and wait from C (`_collfront.exchange`)."""
    from meshrt.reshard import execute_reshard, plan_reshard
    from meshrt.sharding import Sharding

    n = comm.size
    shape = (4 * n + 3, 5)
    src = Sharding(mesh, [[0]])
    dst = Sharding(mesh, [[0]], sharded_dims_offsets=[0] + [min(shape[0], 2 * k + 1) for k in range(1, n)]
                   + [shape[0]])
    plan = plan_reshard(src, dst, shape)
    if n > 1:
        assert [s.op for s in plan.steps] == ["exchange"]
    g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    have, need = src.shard_slices(shape), dst.shard_slices(shape)
    before = F.c_hits()
    got = execute_reshard(plan, np.ascontiguousarray(g[have]), mesh)
    np.testing.assert_array_equal(got, g[need])
    took = F.c_hits() - before
    assert took == (1 if F.c_calls() and n > 1 else 0)


# -- unequal pieces of gather, scatter and reduce_scatter (MPI_Gatherv, MPI_Scatterv, MPI_Reduce_scatter) --
PAIR = np.dtype([("a", "<i2"), ("b", ">f8")])  # structured, one field of non-native byte order
V_DTYPES = ["float64", "int16", ">f4", "complex128", "pair"]


def _vx(j, shape, dtype):
    """`_x` for any dtype of V_DTYPES (``"pair"``: the structured PAIR, both fields set)."""
    if dtype != "pair":
        return _x(j, shape, dtype)
    out = np.empty(shape, PAIR)
    out["a"], out["b"] = _x(j, shape, "int16"), _x(j + 3, shape, "float64") / 4
    return out


def _v_meshes(n):
    """``(mesh, mesh_axes)``: the 1-D mesh's whole group, and a 2-D mesh with the op over each of
    its axes and over both in reverse order."""
    flat, square = Mesh((n,), comm=comm), Mesh((-1, -1), comm=comm)
    return [flat, square], [(flat, None), (square, (0,)), (square, (1,)), (square, (1, 0))]


def _v_cases(n, k, dtype):
    """``(name, call(mesh, axes, wait), want, on the C path)`` for group size ``n`` and in-group
    rank ``k``: uneven gathers (with a zero-row piece), scatters and reduce_scatters, roots other
    than 0, new arrays each time so a result cannot alias the input."""
    from meshrt.sharding import split_offsets

    cases = []
    for sizes in ([j % 3 + 1 for j in range(n)], [(2 * j) % 3 for j in range(n)]):
        pieces = [_vx(j, (sizes[j], 2), dtype) for j in range(n)]
        for root in {n - 1, n // 2}:
            cases.append((f"gather sizes={sizes} root={root}",
                          lambda m, a, w, p=pieces[k], s=sizes, r=root: C.gather(p.copy(), m, a, 0, r, sizes=s, wait=w),
                          # (concatenate gives a structured dtype's fields native byte order)
                          np.concatenate(pieces).astype(pieces[0].dtype) if k == root else None, True))
    for rows in (2 * n + 1, n - 1):
        whole = _vx(11, (rows, 3), dtype)
        off = split_offsets(rows, n)
        for root in {n - 1, n // 2}:
            # the other members' x gives only shape and dtype: theirs is zeros
            mine = whole if k == root else np.zeros_like(whole)
            cases.append((f"scatter rows={rows} root={root}",
                          lambda m, a, w, x=mine, r=root: C.scatter(x.copy(), m, a, 0, r, wait=w),
                          whole[off[k]:off[k + 1]], True))
    return cases


def _rs_cases(n, k):
    """reduce_scatter of uneven pieces: ``(name, call(mesh, axes, wait), want, on the C path)``;
    float16 takes the C path where the MPI has a datatype for it (else mpi4py's, with a datatype
    meshrt makes), ``average`` with ``wait=False`` always mpi4py's."""
    from meshrt.sharding import split_offsets

    rows = 2 * n + 1
    off = split_offsets(rows, n)
    cases = []
    for dt, kind, cast in [("float64", "sum", None), ("int32", "max", None), ("complex128", "product", None),
                           ("int16", "sum", "float64"), ("float16", "sum", None), ("float64", "average", None)]:
        xs = [_x(j, (rows, 2), dt) for j in range(n)]
        st = np.stack(xs).astype(cast or dt)
        full = {"sum": st.sum(0), "max": st.max(0), "product": st.prod(0), "average": st.sum(0) / n}[kind]
        full = full.astype(cast or dt)
        cases.append((f"reduce_scatter {dt} {kind} dtype={cast}",
                      lambda m, a, w, x=xs[k], kd=kind, c=cast: C.reduce_scatter(x.copy(), m, a, kd, 0, c, wait=w),
                      full[off[k]:off[k + 1]], np.dtype(cast or dt).char in MPI._typedict))
    return cases


def _run_v(cases, mesh, axes, wait, label):
    n = len(mesh.group_devices(axes))
    for name, call, want, compiled in cases:
        for rep in range(3):
            before = F.c_hits()
            got = call(mesh, axes, wait)
            if not wait:
                assert isinstance(got, C.Handle), name
                h = got
                got = h.wait()
                assert h.test() and h.wait() is got
            took = F.c_hits() - before
            if want is None:
                assert got is None, (label, name, rep)
            else:
                assert got.dtype == want.dtype, (label, name)
                np.testing.assert_array_equal(got, want, err_msg=f"{label} {name} wait={wait} call {rep}")
            # a group of one returns early; the first call plans in Python; "average" waits
            on_c = F.c_calls() and n > 1 and compiled and (wait or "average" not in name)
            if not on_c:
                assert took == 0, (label, name, rep, took)
            elif rep > 0:
                assert took == 1, (label, name, rep, took)


@pytest.mark.parametrize("dtype", V_DTYPES)
@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize("c_calls", [True, False])
def test_uneven_gather_scatter(dtype, wait, c_calls):
    """gather with ``sizes=`` (MPI_Gatherv) and an uneven scatter (MPI_Scatterv) take the C path in
    bytes, whatever the dtype (non-native, complex, structured), on 1-D and 2-D meshes, any root,
    blocking and not; off (`set_c_calls(False)`), mpi4py's path gives the same results."""
    old = F.c_calls()
    meshes, groups = _v_meshes(comm.size)
    try:
        available = F.set_c_calls(c_calls)
        if c_calls:
            assert available, "the C calls found no MPI library functions"
        for mesh, axes in groups:
            grp = mesh.group_devices(axes)
            _run_v(_v_cases(len(grp), grp.index(mesh.rank), dtype), mesh, axes, wait, f"{mesh.shape} {axes}")
    finally:
        F.set_c_calls(old)
        for m in meshes:
            m.free()


@pytest.mark.parametrize("wait", [True, False])
@pytest.mark.parametrize("c_calls", [True, False])
def test_uneven_reduce_scatter(wait, c_calls):
    """An uneven reduce_scatter is one MPI_Reduce_scatter (MPI_Ireduce_scatter) from C for every
    dtype with an MPI datatype, with ``dtype=`` casts; the same results with the C calls off."""
    old = F.c_calls()
    meshes, groups = _v_meshes(comm.size)
    try:
        available = F.set_c_calls(c_calls)
        if c_calls:
            assert available, "the C calls found no MPI library functions"
        for mesh, axes in groups:
            grp = mesh.group_devices(axes)
            _run_v(_rs_cases(len(grp), grp.index(mesh.rank)), mesh, axes, wait, f"{mesh.shape} {axes}")
    finally:
        F.set_c_calls(old)
        for m in meshes:
            m.free()


def test_uneven_out_and_fallbacks():
    """reduce_scatter's ``out=`` receives the uneven piece from C; a gather of a non-contiguous
    piece and a tensor axis other than 0 keep mpi4py's path with the same result."""
    from meshrt.sharding import split_offsets

    n, k = comm.size, comm.rank
    mesh = Mesh((n,), comm=comm)
    try:
        off = split_offsets(2 * n + 1, n)
        x = _x(k, (2 * n + 1, 3), "float64")
        want = sum(_x(j, (2 * n + 1, 3), "float64") for j in range(n))[off[k]:off[k + 1]]
        out = np.empty((off[k + 1] - off[k], 3))
        sizes = [j % 3 + 2 for j in range(n)]  # 2 columns or more: a piece's transpose is not C-contiguous
        pieces = [_x(j, (3, sizes[j]), "int32") for j in range(n)]
        for rep in range(3):
            before = F.c_hits()
            assert C.reduce_scatter(x, mesh, out=out) is out
            np.testing.assert_array_equal(out, want)
            assert F.c_hits() - before == (1 if F.c_calls() and n > 1 and rep else 0)
            before = F.c_hits()
            got = C.gather(pieces[k].T, mesh, None, 0, 0, sizes=sizes)  # a transposed view
            got1 = C.gather(pieces[k], mesh, None, 1, 0, sizes=sizes)  # along axis 1
            assert F.c_hits() - before == 0
            if k == 0:
                np.testing.assert_array_equal(got, np.concatenate([p.T for p in pieces]))
                np.testing.assert_array_equal(got1, np.concatenate(pieces, axis=1))
            else:
                assert got is None and got1 is None
    finally:
        mesh.free()
