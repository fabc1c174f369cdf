"""Collectives against a numpy reference model of the global picture; any process count.

Every rank generates every device's local input from a seed, computes what its
own device must get with plain numpy, and compares with the collective.
"""

import functools
import itertools
import math
import zlib

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import CollectiveError, Mesh
from meshrt import collectives as C
from meshrt.collectives import common as _collectives_common
from meshrt.sharding import split_offsets

MPI_NPROCS = (1, 2, 3, 4, 8)

comm = MPI.COMM_WORLD
DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128", "bool"]
KINDS = ["sum", "max", "min", "product", "average", "bitwise_and", "bitwise_or", "bitwise_xor"]


def meshes():
    """1-D, 2-D and 3-D meshes over all processes, plus one with a fixed axis when possible."""
    out = [Mesh((-1,)), Mesh((-1, -1)), Mesh((-1, -1, -1))]
    if comm.size % 2 == 0:
        out.append(Mesh((2, -1), ("x", "y")))
    return out


def axes_choices(mesh, rng, k=4):
    """Random subsets in random orders, plus all axes and the empty group."""
    out = [None, ()]
    for _ in range(k):
        r = rng.randint(1, mesh.ndim + 1)
        out.append(tuple(int(a) for a in rng.permutation(mesh.ndim)[:r]))
    return out


def group_of(mesh, axes):
    return mesh.group_devices(axes, mesh.rank)


def valid(kind, dt):
    k = np.dtype(dt).kind
    if kind.startswith("bitwise") and k in "fc":
        return False
    if kind in ("max", "min") and k == "c":
        return False
    return not (kind == "average" and k == "b")


def local_input(seed, device, shape, dtype, kind="sum"):
    rng = np.random.RandomState(seed * 1009 + device)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.randint(0, 2, shape).astype(bool)
    lo, hi = (1, 3) if kind == "product" else (0, 9)
    if dt.kind in "iu":
        hi = 100
    a = rng.randint(lo, hi, shape)
    if dt.kind == "c":
        a = a + 1j * rng.randint(lo, hi, shape)
    return a.astype(dt)


def np_reduce(kind, arrays, dt):
    dt = np.dtype(dt)
    arrays = [a.astype(dt) for a in arrays]
    with np.errstate(over="ignore"):
        if dt.kind == "b":
            uf = {"sum": np.logical_or, "max": np.logical_or, "product": np.logical_and, "min": np.logical_and,
                  "bitwise_and": np.logical_and, "bitwise_or": np.logical_or, "bitwise_xor": np.logical_xor}[kind]
        else:
            uf = {"sum": np.add, "average": np.add, "max": np.maximum, "min": np.minimum, "product": np.multiply,
                  "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}[kind]
        r = functools.reduce(lambda a, b: uf(a, b).astype(dt), arrays)
        if kind == "average":
            r = r // len(arrays) if dt.kind in "iu" else (r / len(arrays)).astype(dt)
    return r


def assert_same(got, want):
    assert isinstance(got, np.ndarray)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_array_equal(got, want)


_SUBS = {}


def sub_mesh(shape):
    """A Mesh of ``shape`` over the first prod(shape) ranks (None on the others and when too few)."""
    n = math.prod(shape)
    if comm.size < n:
        return None
    if n not in _SUBS:
        _SUBS[n] = comm.Split(0 if comm.rank < n else MPI.UNDEFINED, comm.rank)
    sub = _SUBS[n]
    if sub == MPI.COMM_NULL:
        return None
    return Mesh(shape, comm=sub)


# -- reductions --------------------------------------------------------------------------
def check_reductions(mesh, axes, combos, rng, tag):
    grp = group_of(mesh, axes)
    shape = (3, 2)
    for dt, kind in combos:
        seed = zlib.crc32(repr((tag, axes, dt, kind)).encode()) % 10000
        x = local_input(seed, mesh.rank, shape, dt, kind)
        if not valid(kind, dt):
            with pytest.raises(CollectiveError, match="reduction"):
                C.all_reduce(x, mesh, axes, kind)
            continue
        want = np_reduce(kind, [local_input(seed, d, shape, dt, kind) for d in grp], dt)
        assert_same(C.all_reduce(x, mesh, axes, kind), want)
        root = int(rng.randint(len(grp)))
        got = C.reduce(x, mesh, axes, kind, root)
        if grp[root] == mesh.rank:
            assert_same(got, want)
        else:
            assert got is None
        # out= on the root (x itself every other time: received beside it, then copied); ignored elsewhere
        y = x.copy()
        out = (y if seed % 2 else np.empty_like(x)) if grp[root] == mesh.rank else "ignored here"
        got = C.reduce(y, mesh, axes, kind, root, out=out)
        if grp[root] == mesh.rank:
            assert got is out
            assert_same(got, want)
        else:
            assert got is None


ALL_COMBOS = list(itertools.product(DTYPES, KINDS))


def test_all_reduce_reduce_every_dtype_and_kind():
    rng = np.random.RandomState(1)
    check_reductions(Mesh((-1,)), None, ALL_COMBOS, rng, "all")


def test_all_reduce_reduce_random_groups():
    rng = np.random.RandomState(11)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng, 3):
            pick = rng.choice(len(ALL_COMBOS), 8, replace=False)
            check_reductions(mesh, axes, [ALL_COMBOS[i] for i in pick], rng, mi)


def test_reduction_dtype_casts_before_reducing():
    mesh = Mesh((-1,))
    x = np.full(4, 200, np.uint8)
    got = C.all_reduce(x, mesh, None, "sum", dtype=np.int64)
    assert_same(got, np.full(4, 200 * comm.size, np.int64))
    got = C.all_reduce(np.full(3, comm.rank % 2 == 0), mesh, None, "average", dtype="float64")
    assert_same(got, np.full(3, ((comm.size + 1) // 2) / comm.size))
    got = C.all_reduce(np.full(2, 1000.0), mesh, None, "sum", dtype=np.float16)
    assert_same(got, np.full(2, 1000 * comm.size, np.float16))


def absmax(a, b):
    return max(abs(a), abs(b))


def test_generic_reduction_native():
    mesh = Mesh((-1, -1))
    # one dtype here: each (function, dtype) costs a Numba compile; tests/test_collectives_serial.py
    # runs the compiled bodies for the other dtypes without MPI
    for dt in ["float64"]:
        for axes in [None, (1,), (1, 0)]:
            grp = group_of(mesh, axes)
            xs = [(local_input(7, d, (5,), dt) - 4).astype(dt) for d in grp]
            want = functools.reduce(lambda a, b: np.maximum(np.abs(a), np.abs(b)), xs).astype(dt)
            me = grp.index(mesh.rank)
            assert_same(C.all_reduce(xs[me], mesh, axes, absmax), want)
            assert_same(C.all_reduce(xs[me], mesh, axes, C.Generic(absmax), wait=False).wait(), want)
            got = C.reduce(xs[me], mesh, axes, absmax, 0)
            assert (got is None) if me else np.array_equal(got, want)


def test_reduce_scatter_uneven():
    rng = np.random.RandomState(2)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng):
            grp = group_of(mesh, axes)
            n, k = len(grp), grp.index(mesh.rank)
            for dt, kind in [("int32", "sum"), ("float16", "max"), ("float64", "average"), ("complex64", "product")]:
                shape = tuple(int(s) for s in rng.randint(1, 7, size=rng.randint(1, 4)))
                axis = int(rng.randint(len(shape)))
                xs = [local_input(mi, d, shape, dt, kind) for d in grp]
                full = np_reduce(kind, xs, dt)
                off = split_offsets(shape[axis], n)
                want = np.take(full, range(off[k], off[k + 1]), axis=axis)
                assert_same(C.reduce_scatter(xs[k], mesh, axes, kind, axis), want)
                assert_same(C.reduce_scatter(xs[k], mesh, axes, kind, axis, wait=False).wait(), want)


# -- data movement -----------------------------------------------------------------------
def test_all_gather_and_gather_unequal_pieces():
    rng = np.random.RandomState(3)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng):
            grp = group_of(mesh, axes)
            me = grp.index(mesh.rank)
            ndim = int(rng.randint(1, 4))
            base = [int(s) for s in rng.randint(1, 4, ndim)]
            axis = int(rng.randint(ndim))
            dt = DTYPES[int(rng.randint(len(DTYPES)))]
            sizes = [int(s) for s in rng.randint(0, 4, mesh.size)]  # per device, 0 included

            def piece(d):
                shape = list(base)
                shape[axis] = sizes[d]
                return local_input(mi, d, tuple(shape), dt)

            want = np.concatenate([piece(d) for d in grp], axis=axis)
            x = piece(mesh.rank)
            gs = [sizes[d] for d in grp]
            assert_same(C.all_gather(x, mesh, axes, axis, sizes=gs), want)
            assert_same(C.all_gather(x, mesh, axes, axis, sizes=tuple(gs), wait=False).wait(), want)
            root = tuple(int(rng.randint(mesh.shape[a])) for a in mesh.axes(axes))
            root_k = mesh.in_group_from_multi(axes, root)
            for r in (root, list(root), root_k):  # in-group coordinates as a tuple or a list, or the index
                got = C.gather(x, mesh, axes, axis, r, sizes=gs)
                if me == root_k:
                    assert_same(got, want)
                else:
                    assert got is None
            got = C.gather(x, mesh, axes, axis, root_k, sizes=gs, wait=False).wait()
            assert (got is None) == (me != root_k)
            out = np.empty_like(want) if me == root_k else None
            for wait in (True, False):
                got = C.gather(x, mesh, axes, axis, root, sizes=gs, out=out, wait=wait)
                got = got if wait else got.wait()
                assert got is out
                if out is not None:
                    assert_same(out, want)
                    out[...] = 0
            # equal pieces along a non-leading axis of a non-contiguous input
            y = np.asfortranarray(local_input(mi, mesh.rank, (2, 3, 2), dt))
            want = np.concatenate([local_input(mi, d, (2, 3, 2), dt) for d in grp], axis=1)
            assert_same(C.all_gather(y, mesh, axes, 1, sizes=3), want)


def test_broadcast_scatter_with_in_group_roots():
    rng = np.random.RandomState(4)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng):
            grp = group_of(mesh, axes)
            n, me = len(grp), grp.index(mesh.rank)
            root = tuple(int(rng.randint(mesh.shape[a])) for a in mesh.axes(axes))
            rk = mesh.in_group_from_multi(axes, root)
            shape = tuple(int(s) for s in rng.randint(1, 6, 3))
            dt = DTYPES[int(rng.randint(len(DTYPES)))]
            x = local_input(mi, mesh.rank, shape, dt)
            rootx = local_input(mi, grp[rk], shape, dt)
            for r in (root, list(root), rk):  # the dialect's coordinates (tuple or list) or the index
                assert_same(C.broadcast(x, mesh, axes, r), rootx)
            assert_same(C.broadcast(x, mesh, axes, rk, wait=False).wait(), rootx)
            out = np.empty(shape, dt)
            assert C.broadcast(x, mesh, axes, root, out=out) is out
            assert_same(out, rootx)
            y = x.copy()  # in place: the root's out is its x, the others receive into theirs
            h = C.broadcast(y, mesh, axes, rk, out=y, wait=False)
            assert h.wait() is y
            assert_same(y, rootx)
            h = C.broadcast(np.asfortranarray(x), mesh, axes, root, out=out, wait=False)  # the root copies x
            assert h.wait() is out
            assert_same(out, rootx)
            axis = int(rng.randint(3))
            off = split_offsets(shape[axis], n)
            want = np.take(rootx, range(off[me], off[me + 1]), axis=axis)
            assert_same(C.scatter(x, mesh, axes, axis, root), want)
            assert_same(C.scatter(x, mesh, axes, axis, list(root)), want)
            assert_same(C.scatter(x, mesh, axes, axis, rk, wait=False).wait(), want)
            for wait in (True, False):
                out = np.empty(want.shape, dt)
                got = C.scatter(x, mesh, axes, axis, root, out=out, wait=wait)
                assert (got if wait else got.wait()) is out
                assert_same(out, want)
            # all_slice is scatter without communication for replicated data
            assert_same(np.ascontiguousarray(C.all_slice(rootx, mesh, axes, axis)), want)


def test_all_to_all_uneven_any_axes():
    rng = np.random.RandomState(5)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng, 2):
            grp = group_of(mesh, axes)
            n, me = len(grp), grp.index(mesh.rank)
            for sa, ca in [(0, 0), (1, 0), (0, 2), (2, 2), (1, 2)]:
                shape = tuple(int(s) for s in rng.randint(1, 6, 3))
                xs = [local_input(mi, d, shape, "float32") for d in grp]
                off = split_offsets(shape[sa], n)
                want = np.concatenate([np.take(xs[i], range(off[me], off[me + 1]), axis=sa) for i in range(n)], axis=ca)
                assert_same(C.all_to_all(xs[me], mesh, axes, sa, ca), want)
                assert_same(C.all_to_all(xs[me], mesh, axes, sa, ca, wait=False).wait(), want)
                out = np.empty_like(want)
                got = C.all_to_all(xs[me], mesh, axes, sa, ca, out=out, wait=sa != 1)
                assert (got if sa != 1 else got.wait()) is out
                assert_same(out, want)


def test_shift_any_offset_rotate_or_not():
    rng = np.random.RandomState(6)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng):
            axes_n = mesh.axes(axes)
            if not axes_n:
                continue
            grp = group_of(mesh, axes)
            for shift_axis in axes_n:
                size = mesh.shape[shift_axis]
                for offset in sorted({-size - 1, -1, 0, 1, 2, size}):
                    for rotate in (False, True):
                        c = list(mesh.coords)
                        src = c[shift_axis] - offset
                        if rotate:
                            src %= mesh.shape[shift_axis]
                        x = local_input(mi, mesh.rank, (2, 3), "int16")
                        if 0 <= src < mesh.shape[shift_axis]:
                            c[shift_axis] = src
                            want = local_input(mi, mesh.linear_index(c), (2, 3), "int16")
                            assert mesh.linear_index(c) in grp
                        else:
                            want = x
                        assert_same(C.shift(x, mesh, axes, shift_axis, offset, rotate), want)
                        if offset == 1:
                            assert_same(C.shift(x, mesh, axes, shift_axis, offset, rotate, wait=False).wait(), want)
                        # into out (a device with no source gets its x copied there), or in place
                        y = x.copy()
                        out = y if offset % 2 else np.empty_like(x)
                        got = C.shift(y, mesh, axes, shift_axis, offset, rotate, out=out, wait=rotate)
                        assert (got if rotate else got.wait()) is out
                        assert_same(out, want)


def test_send_recv_ring():
    mesh = Mesh((-1, -1))
    for axes in [None, (1,), (1, 0)]:
        grp = group_of(mesh, axes)
        n, me = len(grp), grp.index(mesh.rank)
        x = local_input(8, mesh.rank, (4,), "float64")
        h = C.send(x, mesh, axes, (me + 1) % n, wait=False)
        got = C.recv(x, mesh, axes, (me - 1) % n)
        assert h.wait() is None
        assert_same(got, local_input(8, grp[(me - 1) % n], (4,), "float64"))
        # the same with in-group coordinates as lists
        dst = list(mesh.multi_index(grp[(me + 1) % n]))
        src = list(mesh.multi_index(grp[(me - 1) % n]))
        group_axes = mesh.axes(axes)
        h = C.send(x, mesh, axes, [dst[a] for a in group_axes], wait=False)
        got = C.recv(x, mesh, axes, [src[a] for a in group_axes])
        assert h.wait() is None
        assert_same(got, local_input(8, grp[(me - 1) % n], (4,), "float64"))


def test_index_ops():
    mesh = Mesh((-1, -1))
    assert C.process_linear_index(mesh) == comm.rank
    assert C.process_multi_index(mesh) == mesh.coords
    assert C.process_multi_index(mesh, [1]) == (mesh.coords[1],)
    assert C.mesh_shape(mesh) == mesh.shape
    assert C.mesh_shape(mesh, (1, 0)) == mesh.shape[::-1]
    assert C.neighbors_linear_indices(mesh, mesh.rank, [1]) == mesh.neighbors([1])


# -- the compiled fronts --------------------------------------------------------------------
FRONT_DTYPES = ["float64", "int32", "bool", "float16", ">f8"]  # the last two travel as bytes


# the spellings with out= that the compiled fronts hand to the Python implementations
PYTHON_OUT = {f"{op}(out=)" for op in ("reduce", "broadcast", "gather", "scatter", "all_to_all", "shift")}


def _repeated_cases(mesh, axes, dt, rows):
    """(name, call(x, w, out, wait), wanted result of this device or None, out's shape or None) per
    spelling, for inputs made by ``inputs(device)`` (shape (rows, 3)) and ``wide(device)``
    (rows * n rows)."""
    grp = group_of(mesh, axes)
    n, me = len(grp), grp.index(mesh.rank)
    gaxes = mesh.axes(axes)
    as_list = None if axes is None else list(axes)
    root = n - 1
    root_coords = [mesh.multi_index(grp[root])[a] for a in gaxes]

    def piece(a, k):
        off = split_offsets(a.shape[0], n)
        return a[off[k]:off[k + 1]]

    def cases(inputs, wide):
        xs = [inputs(d) for d in grp]
        ws = [wide(d) for d in grp]
        gathered = np.concatenate(xs)
        if not np.dtype(dt).isnative:  # reductions refuse non-native byte orders (tested elsewhere)
            yield from moving(inputs, xs, ws, gathered)
            return
        total = np_reduce("sum", xs, dt)
        yield "all_reduce", lambda x, w, out, wait: C.all_reduce(x, mesh, as_list, "sum", wait=wait), total, None
        yield "all_reduce(out=)", lambda x, w, out, wait: C.all_reduce(x, mesh, axes, out=out, wait=wait), \
            total, xs[me].shape
        yield "reduce", lambda x, w, out, wait: C.reduce(x, mesh, axes, "sum", root_coords, wait=wait), \
            total if me == root else None, None
        # out= is used on the root only: the others' out (of a wrong shape here) is ignored
        yield "reduce(out=)", lambda x, w, out, wait: C.reduce(x, mesh, axes, "sum", root, out=out, wait=wait), \
            total if me == root else None, xs[me].shape if me == root else (1,)
        yield "reduce_scatter", lambda x, w, out, wait: C.reduce_scatter(w, mesh, axes, wait=wait), \
            piece(np_reduce("sum", ws, dt), me), None
        yield "reduce_scatter(out=)", lambda x, w, out, wait: C.reduce_scatter(w, mesh, axes, out=out, wait=wait), \
            piece(np_reduce("sum", ws, dt), me), piece(ws[me], me).shape
        if dt in ("float64", "int32"):  # average; and a dtype= cast before reducing
            avg = np_reduce("average", xs, dt)
            yield "all_reduce(average)", lambda x, w, out, wait: C.all_reduce(x, mesh, axes, "average", wait=wait), \
                avg, None
            yield "reduce(average)", lambda x, w, out, wait: C.reduce(x, mesh, axes, "average", root, wait=wait), \
                avg if me == root else None, None
            yield "reduce_scatter(average)", lambda x, w, out, wait: C.reduce_scatter(w, mesh, axes, "average",
                                                                                     wait=wait), \
                piece(np_reduce("average", ws, dt), me), None
            wider = "int64" if dt == "int32" else "complex128"
            cast = np_reduce("sum", [a.astype(wider) for a in xs], wider)
            yield "all_reduce(dtype=)", lambda x, w, out, wait: C.all_reduce(x, mesh, axes, dtype=wider, wait=wait), \
                cast, None
            yield "reduce(dtype=)", lambda x, w, out, wait: C.reduce(x, mesh, axes, "sum", root, wider, wait=wait), \
                cast if me == root else None, None
            yield "reduce_scatter(dtype=)", lambda x, w, out, wait: C.reduce_scatter(w, mesh, axes, dtype=wider,
                                                                                    wait=wait), \
                piece(np_reduce("sum", [a.astype(wider) for a in ws], wider), me), None
        yield from moving(inputs, xs, ws, gathered)

    def moving(inputs, xs, ws, gathered):
        yield "broadcast", lambda x, w, out, wait: C.broadcast(x, mesh, axes, root=root_coords, wait=wait), \
            xs[root], None
        yield "broadcast(int root)", lambda x, w, out, wait: C.broadcast(x, mesh, axes, root, wait=wait), \
            xs[root], None
        yield "broadcast(out=)", lambda x, w, out, wait: C.broadcast(x, mesh, axes, root_coords, out=out,
                                                                     wait=wait), xs[root], xs[me].shape
        yield "all_gather", lambda x, w, out, wait: C.all_gather(x, mesh, axes, 0, wait=wait), gathered, None
        yield "all_gather(sizes=)", lambda x, w, out, wait: C.all_gather(x, mesh, as_list, 0, sizes=[rows] * n,
                                                                          wait=wait), gathered, None
        yield "all_gather(out=)", lambda x, w, out, wait: C.all_gather(x, mesh, axes, out=out, wait=wait), \
            gathered, gathered.shape
        yield "gather", lambda x, w, out, wait: C.gather(x, mesh, axes, 0, root_coords, wait=wait), \
            gathered if me == root else None, None
        yield "gather(out=)", lambda x, w, out, wait: C.gather(x, mesh, axes, 0, root, out=out, wait=wait), \
            gathered if me == root else None, gathered.shape if me == root else (1,)
        yield "scatter", lambda x, w, out, wait: C.scatter(w, mesh, axes, 0, root, wait=wait), \
            piece(ws[root], me), None
        yield "scatter(out=)", lambda x, w, out, wait: C.scatter(w, mesh, axes, 0, root_coords, out=out, wait=wait), \
            piece(ws[root], me), piece(ws[root], me).shape
        yield "all_to_all", lambda x, w, out, wait: C.all_to_all(w, mesh, axes, 0, 0, wait=wait), \
            np.concatenate([piece(ws[j], me) for j in range(n)]), None
        exchanged = np.concatenate([piece(ws[j], me) for j in range(n)])
        yield "all_to_all(out=)", lambda x, w, out, wait: C.all_to_all(w, mesh, axes, 0, 0, out=out, wait=wait), \
            exchanged, exchanged.shape
        moved = [a for a in gaxes if mesh.shape[a] > 1]  # along an axis of one, shift is a copy
        if moved:
            src = list(mesh.coords)
            a = moved[-1]
            src[a] = (src[a] - 1) % mesh.shape[a]
            yield "shift", lambda x, w, out, wait: C.shift(x, mesh, as_list, a, 1, True, wait=wait), \
                inputs(mesh.linear_index(src)), None
            yield "shift(out=)", lambda x, w, out, wait: C.shift(x, mesh, axes, a, 1, True, out=out, wait=wait), \
                inputs(mesh.linear_index(src)), xs[me].shape

    return cases


def test_repeated_calls_take_the_compiled_path_and_agree_with_numpy():
    # The first call of a spelling plans in Python; the next ones run the compiled front
    # (meshrt._collfront).  Both are checked against numpy, blocking and not, new result and out=.
    from meshrt import _collfront

    rng = np.random.RandomState(11)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng, 1):
            n = len(group_of(mesh, axes))
            for dt in FRONT_DTYPES if comm.size <= 4 else FRONT_DTYPES[::3]:  # oversubscribed: fewer
                for rows in (2, 3):  # rows * n rows for the scattering ops: even pieces, then uneven ones
                    wide_rows = rows * n + (rows == 3 and n > 1)
                    cases = _repeated_cases(mesh, axes, dt, rows)
                    fast_expected = n > 1 and dt not in ("float16", ">f8")
                    _collectives_common._fast.clear()  # it starts over at 1024 plans: not in the middle of this block
                    for rep in range(2):
                        seed = mi * 1000 + rep * 100 + rows

                        def inputs(d):
                            return local_input(seed, d, (rows, 3), dt)

                        def wide(d):
                            return local_input(seed + 7, d, (wide_rows, 3), dt)

                        for name, call, want, out_shape in cases(inputs, wide):
                            uneven = wide_rows % n != 0 and name.startswith(("reduce_scatter", "scatter",
                                                                             "all_to_all"))
                            for wait in (True, False):
                                # average's division runs after the wait: wait=False takes the Python path;
                                # so do the ops whose compiled front does not take out= (yet)
                                stays_python = uneven or ("average" in name and not wait) or name in PYTHON_OUT
                                out = None if out_shape is None else np.empty(out_shape, np.dtype(dt))
                                before = _collfront.hits()
                                got = call(inputs(mesh.rank), wide(mesh.rank), out, wait)
                                if not wait:
                                    got = got.wait()
                                where = (name, axes, dt, rows, rep, wait)
                                if want is None:
                                    assert got is None, where
                                else:
                                    # np.concatenate makes byte order native; dtype= rows have their own type
                                    assert_same(got, want if "dtype=" in name else want.astype(dt))
                                    if out is not None:
                                        assert got is out, where
                                if rep and fast_expected and not stays_python and not C.CHECK:
                                    assert _collfront.hits() == before + 1, where


def test_compiled_path_tells_alternating_calls_apart():
    # The compiled front remembers each op's last call and matches the next by identity (lists
    # by their items): a mutated list, another reduction, dtype, shape or root must not match.
    mesh = Mesh((-1, -1))
    axes = [0]
    for rep in range(3):
        for a in (0, 1):
            axes[0] = a  # the same list object, another group
            grp = group_of(mesh, axes)
            n, me = len(grp), grp.index(mesh.rank)
            for kind in ("sum", "max"):
                for dt in ("float64", "int32"):
                    x = local_input(rep + a, mesh.rank, (2, 3), dt)
                    want = np_reduce(kind, [local_input(rep + a, d, (2, 3), dt) for d in grp], dt)
                    assert_same(C.all_reduce(x, mesh, axes, kind), want)
            for rows in (1, 2):
                x = local_input(rep, mesh.rank, (rows, 2), "float64")
                want = np.concatenate([local_input(rep, d, (rows, 2), "float64") for d in grp])
                assert_same(C.all_gather(x, mesh, axes, 0), want)
            for root in (0, n - 1):
                x = local_input(rep, mesh.rank, (3,), "float64")
                assert_same(C.broadcast(x, mesh, axes, [root]), local_input(rep, grp[root], (3,), "float64"))
            for sa in (0, 1):
                for rows in (4, 5):
                    w = np.arange(rows * 6.0).reshape(rows, 6)
                    off = split_offsets(w.shape[sa], n)
                    want = np.take(w, range(off[me], off[me + 1]), axis=sa)
                    assert_same(np.ascontiguousarray(C.all_slice(w, mesh, axes, sa)), want)
                got = C.gather(x, mesh, axes, 0, [root])
                assert (got is None) == (me != root)
    mesh.free()
    ring, n, me = Mesh((-1,)), comm.size, comm.rank
    for rep in range(3):
        for dt in ("float64", "float16", ">f8", "int32"):  # bare, as bytes, as bytes, bare
            x = local_input(rep, me, (3,), dt)
            h = C.send(x, ring, [0], [(me + 1) % n], wait=False)
            assert_same(C.recv(x, ring, [0], [(me - 1) % n]), local_input(rep, (me - 1) % n, (3,), dt))
            assert h.wait() is None
    ring.free()


def test_compiled_path_misses_a_freed_mesh():
    # A freed mesh's plans name freed communicators: the next call makes new ones (Mesh.free
    # replaces the mesh's group cache, which the compiled front checks), and a new mesh that
    # reuses a dead one's id never finds the dead one's plans.
    x = np.full(2, float(comm.rank))
    want = np.full(2, float(sum(range(comm.size))))
    for _ in range(3):
        mesh = Mesh((-1,))
        for _ in range(2):
            for _ in range(3):
                assert_same(C.all_reduce(x, mesh), want)
                assert_same(C.all_gather(x, mesh)[::2], np.arange(comm.size, dtype=float))
            mesh.free()
        del mesh


def test_compiled_path_refuses_what_the_python_path_refuses():
    mesh = Mesh((-1,))
    x = np.ones((2, 3))
    for _ in range(2):  # planned, then through the compiled front
        C.all_reduce(x, mesh)
        C.all_gather(x, mesh)
        C.reduce_scatter(np.ones((2 * comm.size, 3)), mesh)
    with pytest.raises(CollectiveError, match="out has shape"):
        C.all_reduce(x, mesh, out=np.empty((3, 2)))
    with pytest.raises(CollectiveError, match="out has shape"):
        C.all_reduce(x, mesh, out=np.empty((2, 3), np.float32))
    with pytest.raises(CollectiveError, match="C-contiguous"):
        C.all_reduce(x, mesh, out=np.empty((3, 2)).T)
    ro = np.empty((2, 3))
    ro.flags.writeable = False
    with pytest.raises(CollectiveError, match="writeable"):
        C.all_reduce(x, mesh, out=ro)
    with pytest.raises(CollectiveError, match="out has shape"):
        C.all_gather(x, mesh, out=np.empty((2 * comm.size + 1, 3)))
    with pytest.raises(CollectiveError, match="out has shape"):
        C.reduce_scatter(np.ones((2 * comm.size, 3)), mesh, out=np.empty((3, 3)))
    with pytest.raises(CollectiveError, match="numpy.ndarray"):
        C.all_reduce([1.0, 2.0], mesh)
    # a non-contiguous x after a contiguous one: same result, through the Python path
    y = np.arange(12.0).reshape(3, 4)[:, ::2]
    assert_same(C.all_reduce(np.ascontiguousarray(y), mesh), y * comm.size)
    assert_same(C.all_reduce(y, mesh), y * comm.size)
    mesh.free()


def _bad_outs(shape, dtype):
    """(what is wrong, an out that cannot take a result of ``shape`` (2-D) and ``dtype``, the error's words)."""
    ro = np.empty(shape, dtype)
    ro.flags.writeable = False
    return [("shape", np.empty((shape[0] + 1,) + shape[1:], dtype), "out has shape"),
            ("dtype", np.empty(shape, np.float32), "out has shape .* and dtype float32"),
            ("order", np.empty(shape, dtype, order="F"), "out must be a writeable C-contiguous"),
            ("read-only", ro, "out must be a writeable C-contiguous"),
            ("list", np.zeros(shape).tolist(), "out must be a numpy.ndarray, got list")]


def test_out_that_does_not_fit_raises_before_communicating():
    # Every process passes the same bad out: where out is used, the call raises before any
    # communication (no process is left waiting).  reduce and gather use out on the root only:
    # the others go ahead, and the root, after raising, makes the call they are in.
    mesh = Mesh((-1,))
    n, me = comm.size, comm.rank
    root = n - 1
    x, wide = local_input(21, me, (2, 3), "int64"), local_input(22, me, (2 * n, 3), "int64")
    everywhere = {  # op: (the result's shape, call)
        "broadcast": ((2, 3), lambda out, wait: C.broadcast(x, mesh, None, root, out=out, wait=wait)),
        "scatter": ((2, 3), lambda out, wait: C.scatter(wide, mesh, None, 0, root, out=out, wait=wait)),
        "all_to_all": ((2 * n, 3), lambda out, wait: C.all_to_all(wide, mesh, None, 0, 0, out=out, wait=wait)),
        "shift": ((2, 3), lambda out, wait: C.shift(x, mesh, None, 0, 1, True, out=out, wait=wait)),
    }
    for planned in (False, True):  # the first call's path, then the plan cache's
        for op, (shape, call) in everywhere.items():
            for what, bad, words in _bad_outs(shape, "int64"):
                for wait in (True, False):
                    if planned:
                        call(None, True)
                    else:
                        _collectives_common._fast.clear()
                    with pytest.raises(CollectiveError, match=f"{op}: {words}"):
                        call(bad, wait)
    rooted = {
        "reduce": ((2, 3), lambda out, wait: C.reduce(x, mesh, None, "sum", root, out=out, wait=wait),
                   np_reduce("sum", [local_input(21, d, (2, 3), "int64") for d in range(n)], "int64")),
        "gather": ((2 * n, 3), lambda out, wait: C.gather(x, mesh, None, 0, [root], out=out, wait=wait),
                   np.concatenate([local_input(21, d, (2, 3), "int64") for d in range(n)])),
    }
    for op, (shape, call, want) in rooted.items():
        for what, bad, words in _bad_outs(shape, "int64"):
            for wait in (True, False):
                if wait:  # the first call's path; after it, the plan cache's
                    _collectives_common._fast.clear()
                if me == root:
                    with pytest.raises(CollectiveError, match=f"{op}: {words}"):
                        call(bad, wait)
                    good = np.empty(shape, np.int64)
                    got = call(good, wait)  # the call the others are in (blocking or not, as theirs)
                    assert (got if wait else got.wait()) is good
                    assert_same(good, want)
                else:
                    got = call(bad, wait)
                    assert (got if wait else got.wait()) is None
    mesh.free()


# -- agreement checks --------------------------------------------------------------------
def test_all_gather_default_is_equal_pieces():
    # the dialect's all_gather: result dim = operand dim x group size, no size exchange
    rng = np.random.RandomState(11)
    for mi, mesh in enumerate(meshes()):
        for axes in axes_choices(mesh, rng):
            grp = group_of(mesh, axes)
            me = grp.index(mesh.rank)
            ndim = int(rng.randint(1, 4))
            shape = tuple(int(s) for s in rng.randint(1, 4, ndim))
            axis = int(rng.randint(ndim))
            dt = DTYPES[int(rng.randint(len(DTYPES)))]
            x = local_input(mi, mesh.rank, shape, dt)
            want = np.concatenate([local_input(mi, d, shape, dt) for d in grp], axis=axis)
            assert want.shape[axis] == shape[axis] * len(grp)
            assert_same(C.all_gather(x, mesh, axes, axis), want)
            assert_same(C.all_gather(x, mesh, axes, axis, wait=False).wait(), want)
            out = np.empty_like(want)
            assert C.all_gather(x, mesh, axes, axis, out=out) is out
            assert_same(out, want)
            root = [int(rng.randint(mesh.shape[a])) for a in mesh.axes(axes)]
            got = C.gather(x, mesh, axes, axis, root)
            assert (got is None) == (me != mesh.in_group_from_multi(axes, root))
            if got is not None:
                assert_same(got, want)


def test_default_forms_make_one_mpi_call_each():
    # no hidden size exchange or root translation: the call a user of mpi4py would make, once
    mesh = Mesh((-1,))
    if comm.size == 1 or C.CHECK:  # a group of one moves nothing; MESHRT_CHECK adds its own
        return
    x, xs = np.ones(3), np.ones(3 * comm.size)
    forms = [
        (lambda: C.all_gather(x, mesh, gather_axis=0), "Allgather"),
        (lambda: C.gather(x, mesh, None, 0, [0]), "Gather"),
        (lambda: C.broadcast(x, mesh, None, root=[0]), "Bcast"),
        (lambda: C.broadcast(x, mesh, None, root=(0,)), "Bcast"),
        (lambda: C.reduce(x, mesh, None, "max", [0]), "Reduce"),
        (lambda: C.scatter(xs, mesh, None, 0, [0]), "Scatter"),
        (lambda: C.all_reduce(x, mesh), "Allreduce"),
        (lambda: C.all_to_all(xs, mesh), "Alltoall"),
        (lambda: C.reduce_scatter(xs, mesh), "Reduce_scatter_block"),
    ]
    for call, _ in forms:
        call()  # plans and communicators are made here
    g = _collectives_common._group(mesh, None, "test")
    real, seen = g.comm, []

    class Counting:
        def __getattr__(self, name):
            seen.append(name)
            return getattr(real, name)

    g.comm = Counting()
    try:
        for call, want in forms:
            del seen[:]
            call()
            assert seen == [want]
    finally:
        g.comm = real


def test_mismatched_gather_shapes_raise_everywhere():
    mesh = Mesh((-1,))
    if comm.size == 1:
        return
    old = C.set_check(True)
    try:
        x = np.zeros((2, 3 + comm.rank % 2))  # disagree outside the gather axis
        with pytest.raises(CollectiveError, match="all_gather.*rank 1"):
            C.all_gather(x, mesh, None, 0, sizes=2)
        with pytest.raises(CollectiveError, match="gather"):
            C.gather(x.astype(np.float32) if comm.rank == 0 else x, mesh, None, 1, 0, sizes=[3] * comm.size)
        # the default form needs equal pieces: unequal ones are caught under MESHRT_CHECK
        y = np.zeros((1 + comm.rank % 2, 3))
        for call in (lambda: C.all_gather(y, mesh, None, 0), lambda: C.gather(y, mesh, None, 0, [0]),
                     lambda: C.all_gather(y, mesh, None, 0, wait=False).wait()):
            with pytest.raises(CollectiveError, match=r"gather.*rank 1 has.*\(2, 3\).*pass sizes="):
                call()
        # sizes must agree across the group too
        with pytest.raises(CollectiveError, match="all_gather.*rank 1"):
            C.all_gather(np.zeros((2, 3)), mesh, None, 0, sizes=[2 + (comm.rank == 1)] + [2] * (comm.size - 1))
        # the same calls pass when the pieces are equal, and with sizes= when they are not
        assert C.all_gather(np.zeros((2, 3)), mesh, None, 0).shape == (2 * comm.size, 3)
        sizes = [1 + k % 2 for k in range(comm.size)]
        assert C.all_gather(y, mesh, None, 0, sizes=sizes).shape == (sum(sizes), 3)
    finally:
        C.set_check(old)


def test_meshrt_check_names_op_and_ranks():
    mesh = Mesh((-1,))
    old = C.set_check(True)
    try:
        x = np.zeros(3)
        assert_same(C.all_reduce(x, mesh), x)
        if comm.size == 1:
            return
        y = np.zeros(3 + (comm.rank == comm.size - 1))
        with pytest.raises(CollectiveError, match=f"all_reduce.*rank {comm.size - 1}"):
            C.all_reduce(y, mesh)
        with pytest.raises(CollectiveError, match="broadcast"):
            C.broadcast(x, mesh, None, comm.rank % 2 if comm.size > 1 else 0)
    finally:
        C.set_check(old)


# -- SPEC seed examples, verbatim --------------------------------------------------------
SEED_2x2 = {(0, 0): [[1, 2], [3, 4]], (0, 1): [[5, 6], [7, 8]], (1, 0): [[1, 2], [3, 4]], (1, 1): [[5, 6], [7, 8]]}


def test_seed_all_gather_2x2():
    mesh = sub_mesh((2, 2))
    if mesh is None:
        return
    x = np.array(SEED_2x2[mesh.coords])
    assert C.all_gather(x, mesh, [1], 1).tolist() == [[1, 2, 5, 6], [3, 4, 7, 8]]


def test_seed_reduce_scatter_2x2():
    mesh = sub_mesh((2, 2))
    if mesh is None:
        return
    got = C.reduce_scatter(np.array(SEED_2x2[mesh.coords]), mesh, [1], "sum", 0)
    assert got.tolist() == ([[6, 8]] if mesh.coords[1] == 0 else [[10, 12]])


def test_seed_all_to_all_3():
    mesh = sub_mesh((3,))
    if mesh is None:
        return
    d = mesh.rank
    x = np.array([[10 * d + j] for j in range(3)])  # row block j goes to device j
    assert C.all_to_all(x, mesh, [0], 0, 0).tolist() == [[j * 10 + d] for j in range(3)]


def test_seed_shift_2x4_rotate():
    mesh = sub_mesh((2, 4))
    if mesh is None:
        return
    row = [1, 2, 3, 4]
    x = np.array([row[mesh.coords[1]]])
    got = C.shift(x, mesh, [1], 1, 2, rotate=True)
    assert got.tolist() == [[3, 4, 1, 2][mesh.coords[1]]]


def test_seed_rooted_ops_in_group_roots():
    mesh = sub_mesh((2, 2))
    if mesh is None:
        return
    i, j = mesh.coords
    x = np.array([10 * i + j])
    # root (1,) of the group over axis 0: device (1, j)
    assert C.broadcast(x, mesh, [0], (1,)).tolist() == [10 + j]
    src = np.arange(4) + j if i == 1 else np.zeros(4, int)
    assert C.scatter(src, mesh, [0], 0, [1]).tolist() == [2 * i + j, 2 * i + 1 + j]
    got = C.gather(x, mesh, [1, 0], 0, (0, 1))  # group over (1, 0): device (1, 0) is in-group (0, 1)
    assert (got.tolist() == [0, 10, 1, 11]) if (i, j) == (1, 0) else got is None
    for root in ((1,), [1]):
        got = C.reduce(x, mesh, [1], "sum", root)
        assert (got.tolist() == [20 * i + 1]) if j == 1 else got is None
