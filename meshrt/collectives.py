"""The shard dialect's collectives on local numpy arrays (SPMD: every process calls).

Names and attribute names are the dialect's.  A device group is given by
``mesh_axes`` (None = all axes, ``()`` = a group of one); ``root``, ``source``
and ``destination`` are in-group multi-indices (an int in-group index is
accepted too).  Sizes that do not divide follow MLIR's uneven rule (extra
elements on the trailing pieces).  ``wait=False`` returns a `Handle`; its
``wait()`` returns the result.

Under ``mpiexec -n 4`` with ``mesh = Mesh((2, 2))``, device (0, 1):

>>> all_gather(np.array([[5, 6], [7, 8]]), mesh, [1], 1)     # doctest: +SKIP
array([[1, 2, 5, 6],
       [3, 4, 7, 8]])

Results are new arrays, except where the data is unchanged: `all_slice`
returns a view of ``x``, `broadcast` returns ``x`` itself on the root, and the
data-moving ops on a group of one return ``x``.  ``average`` on int dtypes is
the floor of the mean (sum, then floor division by the group size).

``MESHRT_CHECK=1`` makes every collective first compare op, attributes,
shape and dtype across its group, and raise `CollectiveError` naming the
disagreeing in-group ranks on every process.
"""

from __future__ import annotations

import hashlib
import math
import os
import weakref

import numpy as np
from mpi4py import MPI

from ._mpi import _plans, reduce_plan
from .errors import CollectiveError, MeshError
from .mesh import Mesh
from .reduction import Generic, ReductionKind
from .sharding import split_offsets, split_sizes

__all__ = [
    "all_gather", "all_reduce", "all_slice", "all_to_all", "broadcast", "gather", "reduce",
    "reduce_scatter", "scatter", "send", "recv", "shift",
    "process_linear_index", "process_multi_index", "mesh_shape", "neighbors_linear_indices", "shard_shape",
    "Handle", "ReductionKind", "Generic", "set_check",
]

CHECK = os.environ.get("MESHRT_CHECK", "0") not in ("", "0")
_BYTE = MPI.BYTE
_DIRECT = frozenset(c for c in MPI._typedict if c in "?bBhHiIlLqQfdFD")  # mpi4py infers these
_MAXDIM = 32


def set_check(flag: bool) -> bool:
    """Turn the cross-process argument check on or off; returns the previous setting."""
    global CHECK
    old, CHECK = CHECK, bool(flag)
    return old


class Handle:
    """A collective in flight; ``wait()`` completes it and returns its result.

    Holds the buffers MPI is using until then.
    """

    __slots__ = ("_reqs", "_result", "_post", "_keep", "_done")

    def __init__(self, reqs, result, post=None, keep=None):
        self._reqs, self._result, self._post, self._keep, self._done = reqs, result, post, keep, False

    def wait(self):
        if not self._done:
            if isinstance(self._reqs, list):
                MPI.Request.Waitall(self._reqs)
            else:
                self._reqs.Wait()
            if self._post is not None:
                self._result = self._post(self._result)
            self._done, self._keep, self._post = True, None, None
        return self._result

    def test(self) -> bool:
        """Whether the operation has finished (then ``wait()`` returns at once)."""
        if self._done:
            return True
        reqs = self._reqs if isinstance(self._reqs, list) else [self._reqs]
        return MPI.Request.Testall(reqs)

    def __repr__(self):
        return f"<meshrt.Handle {'done' if self._done else 'in flight'}>"


class _Done(Handle):
    __slots__ = ()

    def __init__(self, result):
        self._reqs, self._result, self._post, self._keep, self._done = None, result, None, None, True


def _finish(result, wait):
    return result if wait else _Done(result)


# -- device groups, cached per (mesh, mesh_axes as given) ---------------------------
class _Group:
    __slots__ = ("mesh_ref", "live", "axes", "comm", "size", "rank", "roots", "cache")


_groups: dict = {}


def _group(mesh, mesh_axes, op) -> _Group:
    # The hot path: one dict lookup and two identity checks.  ``live`` is the
    # mesh's communicator cache, which `Mesh.free` replaces: a freed group misses.
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    key = (id(mesh), mesh_axes)
    try:
        g = _groups[key]
        if g.live is mesh._groups and g.mesh_ref() is mesh:
            return g
    except (KeyError, AttributeError):
        pass
    except TypeError:  # an unhashable sequence of axes
        key = (id(mesh), tuple(mesh_axes))
    return _new_group(mesh, mesh_axes, key, op)


def _new_group(mesh, mesh_axes, key, op) -> _Group:
    if not isinstance(mesh, Mesh):
        what = "an AbstractMesh" if hasattr(mesh, "axes") else type(mesh).__name__
        raise CollectiveError(
            f"{op}: mesh is {what} ({mesh!r}); communication needs a Mesh bound to a communicator"
        )
    axes = mesh.axes(mesh_axes)
    comm = mesh.group(axes)
    g = _Group()
    g.mesh_ref, g.axes, g.comm, g.live = weakref.ref(mesh), axes, comm, mesh._groups
    g.size, g.rank = comm.Get_size(), comm.Get_rank()
    g.roots, g.cache = {}, {}
    _groups[key] = g
    return g


def _root(g: _Group, mesh, root, field: str) -> int:
    try:
        return g.roots[root]
    except KeyError:
        k = mesh.in_group_from_multi(g.axes, root, field=field)
        g.roots[root] = k
        return k
    except TypeError:  # a list
        return mesh.in_group_from_multi(g.axes, root, field=field)


def _array(x, op: str, field: str = "x") -> np.ndarray:
    if not isinstance(x, np.ndarray):
        raise CollectiveError(f"{op}: {field} must be a numpy.ndarray, got {type(x).__name__}")
    return x


def _axis(axis, ndim: int, op: str, field: str) -> int:
    if isinstance(axis, bool) or not hasattr(axis, "__index__"):
        raise CollectiveError(f"{op}: {field} must be an int tensor axis, got {axis!r}")
    a = int(axis)
    if not 0 <= a < ndim:
        raise CollectiveError(f"{op}: {field}={a} is out of range for an array of rank {ndim} (0 <= {field} < {ndim})")
    return a


def _result(out, shape, dtype, op: str) -> np.ndarray:
    """A new result array, or ``out`` after checking it can take the result as it is."""
    if out is None:
        return np.empty(shape, dtype)
    if not isinstance(out, np.ndarray):
        raise CollectiveError(f"{op}: out must be a numpy.ndarray, got {type(out).__name__}")
    if out.shape != tuple(shape) or out.dtype != dtype:
        raise CollectiveError(
            f"{op}: out has shape {out.shape} and dtype {out.dtype}, but the result has shape {tuple(shape)} "
            f"and dtype {np.dtype(dtype)}"
        )
    if not out.flags.c_contiguous or not out.flags.writeable:
        raise CollectiveError(f"{op}: out must be a writeable C-contiguous array")
    return out


def _into(out, result):
    """Copy a result computed elsewhere into ``out`` (if given) and return what the caller gets."""
    if out is None or result is out:
        return result
    np.copyto(out, result)
    return out


def _c(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _front(x: np.ndarray, axis: int) -> np.ndarray:
    """``x`` with ``axis`` moved to the front, C-contiguous (no copy when axis is 0)."""
    if axis == 0:
        return _c(x)
    return np.ascontiguousarray(np.moveaxis(x, axis, 0))


def _back(buf: np.ndarray, axis: int) -> np.ndarray:
    """Inverse of `_front`: a C-contiguous array with the front axis moved to ``axis``."""
    if axis == 0:
        return buf
    return np.ascontiguousarray(np.moveaxis(buf, 0, axis))


def _check(g: _Group, op: str, attrs: tuple, x: np.ndarray | None, vary_axis=None) -> None:
    shape = None
    if x is not None:
        shape = list(x.shape)
        if vary_axis is not None:
            shape[vary_axis] = "*"
        shape = (tuple(shape), x.dtype.str)
    fp = (op, attrs, shape)
    # Compare a stable 64-bit fingerprint first (one small buffer allgather); only
    # a disagreement pays for exchanging the readable descriptions.
    digest = hashlib.blake2b(repr(fp).encode(), digest_size=8).digest()
    mine = np.frombuffer(digest, np.int64)
    table = np.empty(g.size, np.int64)
    g.comm.Allgather(mine, table)
    first, *rest = table.tolist()
    if all(h == first for h in rest):
        return
    fps = g.comm.allgather(fp)
    bad = [k for k, f in enumerate(fps) if f != fps[0]]
    raise CollectiveError(
        f"{op}: arguments disagree across the device group over mesh axes {g.axes}: "
        f"in-group rank 0 has (op, attributes, (shape, dtype)) = {fps[0]}, but "
        + "; ".join(f"rank {k} has {fps[k]}" for k in bad)
    )


def _bytes(a: np.ndarray):
    return [a, a.nbytes, _BYTE]


def _finish_average(plan, n):
    if plan.dtype.kind in "iu":
        return lambda r: np.floor_divide(r, n, out=r)
    return lambda r: np.divide(r, n, out=r)


# -- reductions ------------------------------------------------------------------------
def _rplan(reduction, x, dtype):
    return reduce_plan(reduction, x.dtype if dtype is None else dtype)


def _prep_reduce(x, reduction, dtype, op):
    plan = reduce_plan(reduction, x.dtype if dtype is None else dtype)
    if x.dtype is plan.dtype or x.dtype == plan.dtype:
        return plan, _c(x)
    return plan, np.ascontiguousarray(x, dtype=plan.dtype)


def all_reduce(x, mesh, mesh_axes=None, reduction="sum", dtype=None, *, out=None, wait=True):
    """Reduce ``x`` over the group; every device gets the result (of type ``dtype``).

    ``reduction``: a `ReductionKind` (or its name), or for ``generic`` a function
    ``f(a, b) -> c`` (or `Generic`).  ``out``: a C-contiguous array to receive
    the result (no allocation).
    """
    g = _group(mesh, mesh_axes, "all_reduce")
    if not isinstance(x, np.ndarray):
        _array(x, "all_reduce")
    plan = _plans.get((reduction, x.dtype if dtype is None else dtype)) or _rplan(reduction, x, dtype)
    send = x if x.dtype == plan.dtype and x.flags.c_contiguous else np.ascontiguousarray(x, dtype=plan.dtype)
    if CHECK:
        _check(g, "all_reduce", (str(plan.kind), plan.dtype.str), x)
    res = _result(out, x.shape, plan.dtype, "all_reduce")
    if g.size == 1:
        res[...] = send
        return _finish(res, wait)
    if wait:
        if plan.direct:
            g.comm.Allreduce(send, res, plan.op)
        else:
            g.comm.Allreduce([send, plan.datatype], [res, plan.datatype], plan.op)
        if plan.average:
            _finish_average(plan, g.size)(res)
        return res
    dt = plan.datatype
    req = g.comm.Iallreduce([send, dt], [res, dt], plan.op)
    return Handle(req, res, _finish_average(plan, g.size) if plan.average else None, send)


def reduce(x, mesh, mesh_axes=None, reduction="sum", root=0, dtype=None, *, wait=True):
    """Reduce ``x`` over the group onto ``root``; ``None`` on the other devices."""
    g = _group(mesh, mesh_axes, "reduce")
    x = _array(x, "reduce")
    r = _root(g, mesh, root, "root")
    plan, send = _prep_reduce(x, reduction, dtype, "reduce")
    if CHECK:
        _check(g, "reduce", (str(plan.kind), plan.dtype.str, r), x)
    if g.size == 1:
        res = np.array(send, dtype=plan.dtype, copy=True)
        return _finish(res, wait)
    dt = plan.datatype
    me = g.rank == r
    res = np.empty(x.shape, plan.dtype) if me else None
    rbuf = [res, dt] if me else None
    post = _finish_average(plan, g.size) if plan.average and me else None
    if wait:
        g.comm.Reduce([send, dt], rbuf, plan.op, root=r)
        return post(res) if post else res
    return Handle(g.comm.Ireduce([send, dt], rbuf, plan.op, root=r), res, post, send)


def reduce_scatter(x, mesh, mesh_axes=None, reduction="sum", scatter_axis=0, dtype=None, *, out=None, wait=True):
    """Reduce over the group, then device ``k`` keeps piece ``k`` along ``scatter_axis``
    (uneven rule).  ``out``: an array to receive the piece."""
    g = _group(mesh, mesh_axes, "reduce_scatter")
    x = _array(x, "reduce_scatter")
    axis = _axis(scatter_axis, x.ndim, "reduce_scatter", "scatter_axis")
    plan = reduce_plan(reduction, x.dtype if dtype is None else dtype)
    if CHECK:
        _check(g, "reduce_scatter", (str(plan.kind), plan.dtype.str, axis), x)
    n = g.size
    send = _front(x, axis)
    if send.dtype != plan.dtype:
        send = send.astype(plan.dtype)
    sizes = split_sizes(x.shape[axis], n)
    inner = math.prod(send.shape[1:])
    rshape = (sizes[g.rank],) + send.shape[1:]
    res = _result(out, rshape, plan.dtype, "reduce_scatter") if axis == 0 else np.empty(rshape, plan.dtype)
    if axis and out is not None:
        _result(out, x.shape[:axis] + (sizes[g.rank],) + x.shape[axis + 1:], plan.dtype, "reduce_scatter")
    avg = _finish_average(plan, n) if plan.average else None

    def post(r):
        if avg is not None:
            avg(r)
        return _into(out, _back(r, axis))

    if n == 1:
        res[...] = send
        return _finish(post(res), wait)
    dt = plan.datatype
    even = sizes[0] == sizes[-1]
    if even:
        args = ([send, dt], [res, dt], plan.op)
        if wait:
            g.comm.Reduce_scatter_block(*args)
            return post(res)
        return Handle(g.comm.Ireduce_scatter_block(*args), res, post, send)
    counts = [s * inner for s in sizes]
    args = ([send, dt], [res, dt], counts, plan.op)
    if wait:
        g.comm.Reduce_scatter(*args)
        return post(res)
    return Handle(g.comm.Ireduce_scatter(*args), res, post, send)


# -- data movement ---------------------------------------------------------------------
def _exchange_shapes(g: _Group, x: np.ndarray, axis: int, op: str):
    """Sizes along ``axis`` of every member's ``x``; raises on every process if shapes or
    dtypes disagree elsewhere."""
    if x.ndim > _MAXDIM:
        raise CollectiveError(f"{op}: arrays of rank {x.ndim} > {_MAXDIM} are not supported")
    mine = np.full(_MAXDIM + 3, -1, np.int64)
    mine[0], mine[1], mine[2] = x.ndim, x.dtype.num, x.dtype.itemsize
    mine[3:3 + x.ndim] = x.shape
    table = np.empty((g.size, _MAXDIM + 3), np.int64)
    g.comm.Allgather([mine, MPI.INT64_T], [table, MPI.INT64_T])
    col = 3 + axis
    other = np.delete(table, col, axis=1)
    bad = np.nonzero((other != other[0]).any(axis=1))[0]
    if bad.size:
        def desc(row):
            return f"shape {tuple(int(v) for v in row[3:3 + row[0]])} dtype#{row[1]}"

        raise CollectiveError(
            f"{op}: pieces must agree in dtype and in every dim but gather_axis={axis}: in-group rank 0 has "
            f"{desc(table[0])}, but " + "; ".join(f"rank {k} has {desc(table[k])}" for k in bad)
        )
    return [int(s) for s in table[:, col]]


def _given_sizes(sizes, g: _Group, x, axis, op):
    if hasattr(sizes, "__index__"):
        sizes = [int(sizes)] * g.size
    try:
        sizes = [int(s) for s in sizes]
    except TypeError:
        raise CollectiveError(f"{op}: sizes must be an int or a sequence of ints, got {sizes!r}") from None
    if len(sizes) != g.size or any(s < 0 for s in sizes):
        raise CollectiveError(f"{op}: sizes={sizes} must hold {g.size} non-negative sizes, one per group member")
    if sizes[g.rank] != x.shape[axis]:
        raise CollectiveError(
            f"{op}: sizes[{g.rank}]={sizes[g.rank]} but this device's piece has {x.shape[axis]} along gather_axis={axis}"
        )
    return sizes


def all_gather(x, mesh, mesh_axes=None, gather_axis=0, *, sizes=None, out=None, wait=True):
    """Concatenate the group's pieces along ``gather_axis`` in group order, on every device.

    Pieces may differ along ``gather_axis``.  With ``sizes=None`` their sizes are
    exchanged first (one small allgather, which also checks shapes and dtypes);
    pass ``sizes`` (an int for equal pieces, or one size per member) to skip it.
    ``out``: a C-contiguous array to receive the result (no allocation).
    """
    g = _group(mesh, mesh_axes, "all_gather")
    x = _array(x, "all_gather")
    axis = _axis(gather_axis, x.ndim, "all_gather", "gather_axis")
    if CHECK:
        _check(g, "all_gather", (axis,), x, vary_axis=axis)
    if g.size == 1:
        if out is not None:
            _result(out, x.shape, x.dtype, "all_gather")
        return _finish(_into(out, x), wait)
    if sizes is None:
        sizes = _exchange_shapes(g, x, axis, "all_gather")
    counts, displs, equal, shape = _cached_layout(g, "all_gather", x, axis, sizes)
    send = _front(x, axis)
    if out is not None:
        _result(out, x.shape[:axis] + (shape[0],) + x.shape[axis + 1:], x.dtype, "all_gather")
    buf = out if out is not None and axis == 0 else np.empty(shape, x.dtype)
    post = (lambda b: _into(out, _back(b, axis))) if axis else None
    if equal:
        args = ([send, counts[0], _BYTE], [buf, counts[0], _BYTE])
        if wait:
            g.comm.Allgather(*args)
            return post(buf) if post else buf
        return Handle(g.comm.Iallgather(*args), buf, post, send)
    args = ([send, counts[g.rank], _BYTE], [buf, (counts, displs), _BYTE])
    if wait:
        g.comm.Allgatherv(*args)
        return post(buf) if post else buf
    return Handle(g.comm.Iallgatherv(*args), buf, post, send)


def _cached_layout(g: _Group, op: str, x, axis: int, sizes):
    """`_layout`, validated and computed once per (op, shape, dtype, axis, sizes) and group."""
    key = (op, x.shape, x.dtype, axis, sizes if type(sizes) is int else tuple(sizes))
    layout = g.cache.get(key)
    if layout is None:
        if len(g.cache) > 256:  # a program cycling through many shapes: start over
            g.cache.clear()
        layout = g.cache[key] = _layout(_given_sizes(sizes, g, x, axis, op), x, axis)
    return layout


def _layout(sizes, x, axis):
    """Byte counts and displacements of pieces of ``sizes`` along ``axis``, and the gathered
    shape with ``axis`` in front."""
    inner = math.prod(x.shape[:axis] + x.shape[axis + 1:]) * x.itemsize
    counts = [n * inner for n in sizes]
    displs = [0] * len(sizes)
    for k in range(1, len(sizes)):
        displs[k] = displs[k - 1] + counts[k - 1]
    shape = (sum(sizes),) + x.shape[:axis] + x.shape[axis + 1:]
    return counts, displs, min(counts) == max(counts), shape


def gather(x, mesh, mesh_axes=None, gather_axis=0, root=0, *, sizes=None, wait=True):
    """`all_gather` onto ``root`` only; ``None`` on the other devices."""
    g = _group(mesh, mesh_axes, "gather")
    x = _array(x, "gather")
    axis = _axis(gather_axis, x.ndim, "gather", "gather_axis")
    r = _root(g, mesh, root, "root")
    if CHECK:
        _check(g, "gather", (axis, r), x, vary_axis=axis)
    if g.size == 1:
        return _finish(x, wait)
    if sizes is None:
        sizes = _exchange_shapes(g, x, axis, "gather")
    counts, displs, equal, shape = _cached_layout(g, "gather", x, axis, sizes)
    send = _front(x, axis)
    me = g.rank == r
    buf = np.empty(shape, x.dtype) if me else None
    post = (lambda b: _back(b, axis)) if axis and me else None
    if equal:
        args = ([send, counts[0], _BYTE], [buf, counts[0], _BYTE] if me else None)
        if wait:
            g.comm.Gather(*args, root=r)
            return post(buf) if post else buf
        return Handle(g.comm.Igather(*args, root=r), buf, post, send)
    args = ([send, counts[g.rank], _BYTE], [buf, (counts, displs), _BYTE] if me else None)
    if wait:
        g.comm.Gatherv(*args, root=r)
        return post(buf) if post else buf
    return Handle(g.comm.Igatherv(*args, root=r), buf, post, send)


def broadcast(x, mesh, mesh_axes=None, root=0, *, wait=True):
    """Every device gets ``root``'s ``x`` (the others' ``x`` gives shape and dtype)."""
    g = _group(mesh, mesh_axes, "broadcast")
    x = _array(x, "broadcast")
    r = _root(g, mesh, root, "root")
    if CHECK:
        _check(g, "broadcast", (r,), x)
    if g.size == 1:
        return _finish(x, wait)
    buf = _c(x) if g.rank == r else np.empty(x.shape, x.dtype)
    if wait:
        g.comm.Bcast(buf if x.dtype.char in _DIRECT else _bytes(buf), r)
        return buf
    return Handle(g.comm.Ibcast(_bytes(buf), root=r), buf)


def scatter(x, mesh, mesh_axes=None, scatter_axis=0, root=0, *, wait=True):
    """Device ``k`` gets piece ``k`` of ``root``'s ``x`` along ``scatter_axis`` (uneven rule);
    the others' ``x`` gives shape and dtype."""
    g = _group(mesh, mesh_axes, "scatter")
    x = _array(x, "scatter")
    axis = _axis(scatter_axis, x.ndim, "scatter", "scatter_axis")
    r = _root(g, mesh, root, "root")
    if CHECK:
        _check(g, "scatter", (axis, r), x)
    n = g.size
    if n == 1:
        return _finish(x, wait)
    sizes = split_sizes(x.shape[axis], n)
    rest = x.shape[:axis] + x.shape[axis + 1:]
    inner = math.prod(rest) * x.itemsize
    buf = np.empty((sizes[g.rank],) + rest, x.dtype)
    me = g.rank == r
    send = _front(x, axis) if me else None
    post = (lambda b: _back(b, axis)) if axis else None
    if sizes[0] == sizes[-1]:
        args = ([send, sizes[0] * inner, _BYTE] if me else None, [buf, buf.nbytes, _BYTE])
        if wait:
            g.comm.Scatter(*args, root=r)
            return post(buf) if post else buf
        return Handle(g.comm.Iscatter(*args, root=r), buf, post, send)
    counts = [s * inner for s in sizes]
    displs = [o * inner for o in split_offsets(x.shape[axis], n)[:-1]]
    args = ([send, (counts, displs), _BYTE] if me else None, [buf, buf.nbytes, _BYTE])
    if wait:
        g.comm.Scatterv(*args, root=r)
        return post(buf) if post else buf
    return Handle(g.comm.Iscatterv(*args, root=r), buf, post, send)


def all_to_all(x, mesh, mesh_axes=None, split_axis=0, concat_axis=0, *, wait=True):
    """Split ``x`` along ``split_axis`` into one piece per device (uneven rule), send piece
    ``j`` to device ``j``, and concatenate what arrives along ``concat_axis`` in group order.

    Every device's ``x`` must have the same shape (as in the dialect).
    """
    g = _group(mesh, mesh_axes, "all_to_all")
    x = _array(x, "all_to_all")
    sa = _axis(split_axis, x.ndim, "all_to_all", "split_axis")
    ca = _axis(concat_axis, x.ndim, "all_to_all", "concat_axis")
    if CHECK:
        _check(g, "all_to_all", (sa, ca), x)
    n = g.size
    if n == 1:
        return _finish(x, wait)
    sizes = split_sizes(x.shape[sa], n)
    send = _front(x, sa)
    rest = send.shape[1:]
    inner = math.prod(rest) * x.itemsize
    mine = sizes[g.rank]
    # received: n blocks of shape (mine, *rest), from device 0, 1, ... in order
    buf = np.empty((n * mine,) + rest, x.dtype)

    def post(b):
        if sa == 0 and ca == 0:
            return b
        blocks = b.reshape((n, mine) + rest)
        # block i in x's axis order: move its front axis back to sa, then join along ca
        return np.concatenate([np.moveaxis(blocks[i], 0, sa) for i in range(n)], axis=ca)

    if sizes[0] == sizes[-1]:
        args = ([send, mine * inner, _BYTE], [buf, mine * inner, _BYTE])
        if wait:
            g.comm.Alltoall(*args)
            return post(buf)
        return Handle(g.comm.Ialltoall(*args), buf, post, send)
    scounts = [s * inner for s in sizes]
    sdispls = [o * inner for o in split_offsets(x.shape[sa], n)[:-1]]
    rcounts = [mine * inner] * n
    rdispls = [k * mine * inner for k in range(n)]
    args = ([send, (scounts, sdispls), _BYTE], [buf, (rcounts, rdispls), _BYTE])
    if wait:
        g.comm.Alltoallv(*args)
        return post(buf)
    return Handle(g.comm.Ialltoallv(*args), buf, post, send)


def all_slice(x, mesh, mesh_axes=None, slice_axis=0):
    """This device's piece of ``x`` along ``slice_axis`` (uneven rule), as a view.

    No communication: the inverse of `all_gather` for replicated ``x``.
    """
    x = _array(x, "all_slice")
    axis = _axis(slice_axis, x.ndim, "all_slice", "slice_axis")
    if not isinstance(mesh, Mesh):
        raise CollectiveError(
            f"all_slice: mesh is {type(mesh).__name__} ({mesh!r}); it needs a Mesh to know this process's device"
        )
    axes = mesh.axes(mesh_axes)
    n = mesh.axes_size(axes)
    k = mesh.in_group_index(mesh.coords, axes)
    off = split_offsets(x.shape[axis], n)
    index = [slice(None)] * x.ndim
    index[axis] = slice(off[k], off[k + 1])
    return x[tuple(index)]


# -- point to point --------------------------------------------------------------------
_TAG = 0x3E5


def send(x, mesh, mesh_axes=None, destination=0, *, tag=_TAG, wait=True):
    """Send ``x`` to the in-group device ``destination``; matched by `recv` there."""
    g = _group(mesh, mesh_axes, "send")
    x = _array(x, "send")
    d = _root(g, mesh, destination, "destination")
    buf = _c(x)
    if wait:
        g.comm.Send(_bytes(buf), d, tag)
        return None
    return Handle(g.comm.Isend(_bytes(buf), d, tag), None, None, buf)


def recv(like, mesh, mesh_axes=None, source=0, *, tag=_TAG, wait=True):
    """Receive an array shaped and typed as ``like`` from the in-group device ``source``."""
    g = _group(mesh, mesh_axes, "recv")
    like = _array(like, "recv", "like")
    s = _root(g, mesh, source, "source")
    buf = np.empty(like.shape, like.dtype)
    if wait:
        g.comm.Recv(_bytes(buf), s, tag)
        return buf
    return Handle(g.comm.Irecv(_bytes(buf), s, tag), buf)


def _shift_peers(g, mesh, shift_axis, offset, rotate):
    key = ("shift", shift_axis, offset, rotate)
    peers = g.cache.get(key)
    if peers is not None:
        return peers
    try:
        a = mesh.axis_index(shift_axis)
    except MeshError as e:
        raise CollectiveError(f"shift: shift_axis: {e}") from None
    if a not in g.axes:
        raise CollectiveError(f"shift: shift_axis={shift_axis!r} (mesh axis {a}) is not one of mesh_axes {g.axes}")
    if isinstance(offset, bool) or not hasattr(offset, "__index__"):
        raise CollectiveError(f"shift: offset must be an int, got {offset!r}")
    offset = int(offset)
    size = mesh.shape[a]
    stride = math.prod(mesh.shape[b] for b in g.axes[g.axes.index(a) + 1:])
    c = mesh.coords[a]
    src_c, dst_c = c - offset, c + offset
    if rotate:
        src_c, dst_c = src_c % size, dst_c % size
    src = g.rank + (src_c - c) * stride if 0 <= src_c < size else MPI.PROC_NULL
    dst = g.rank + (dst_c - c) * stride if 0 <= dst_c < size else MPI.PROC_NULL
    peers = (src, dst)
    g.cache[key] = peers
    return peers


def shift(x, mesh, mesh_axes=None, shift_axis=0, offset=1, rotate=False, *, wait=True):
    """Shift ``x`` by ``offset`` places along the mesh axis ``shift_axis`` inside each group.

    As ``MPI_Cart_shift``: device ``j`` receives from ``j - offset``.  Without
    ``rotate`` a device with no source keeps its input.
    """
    g = _group(mesh, mesh_axes, "shift")
    x = _array(x, "shift")
    src, dst = _shift_peers(g, mesh, shift_axis, offset, bool(rotate))
    if CHECK:
        _check(g, "shift", (shift_axis, offset, bool(rotate)), x)
    buf = _c(x)
    if src == MPI.PROC_NULL:
        res = buf.copy()
        if dst == MPI.PROC_NULL:
            return _finish(res, wait)
    else:
        res = np.empty(x.shape, x.dtype)
    if src == g.rank:  # offset a multiple of the axis size with rotate
        res[...] = buf
        return _finish(res, wait)
    if wait:
        if x.dtype.char in _DIRECT:
            g.comm.Sendrecv(buf, dst, _TAG, res if src != MPI.PROC_NULL else None, src, _TAG)
        else:
            g.comm.Sendrecv(_bytes(buf), dst, _TAG, _bytes(res) if src != MPI.PROC_NULL else None, src, _TAG)
        return res
    reqs = [g.comm.Isend(_bytes(buf), dst, _TAG)]
    if src != MPI.PROC_NULL:
        reqs.append(g.comm.Irecv(_bytes(res), src, _TAG))
    return Handle(reqs, res, None, buf)


# -- index ops -------------------------------------------------------------------------
def process_linear_index(mesh) -> int:
    """This process's linear device index."""
    if not isinstance(mesh, Mesh):
        raise CollectiveError(f"process_linear_index: {mesh!r} is not a Mesh; an AbstractMesh has no process")
    return mesh.rank


def process_multi_index(mesh, axes=None) -> tuple:
    """This process's coordinates over ``axes`` (None = all)."""
    if not isinstance(mesh, Mesh):
        raise CollectiveError(f"process_multi_index: {mesh!r} is not a Mesh; an AbstractMesh has no process")
    return tuple(mesh.coords[a] for a in mesh.axes(axes, field="axes"))


def mesh_shape(mesh, axes=None) -> tuple:
    """Sizes of the mesh ``axes`` (None = all)."""
    return tuple(mesh.shape[a] for a in mesh.axes(axes, field="axes"))


def neighbors_linear_indices(mesh, device, split_axes) -> tuple:
    """``(down, up)`` linear indices of ``device``'s neighbours along ``split_axes``; -1 for none."""
    return mesh.neighbors(split_axes, device)


def shard_shape(shape, sharding, device=None) -> tuple:
    """Shape of ``device``'s shard of a tensor of ``shape`` (default: this process's)."""
    return sharding.shard_shape(shape, device)
