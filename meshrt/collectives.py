"""The shard dialect's collectives on local numpy arrays (SPMD: every process calls).

Names and attribute names are the dialect's.  A device group is given by
``mesh_axes`` (None = all axes, ``()`` = a group of one); ``root``, ``source``
and ``destination`` are in-group multi-indices (an int in-group index is
accepted too; a list works like a tuple).  Sizes that do not divide follow
MLIR's uneven rule (extra elements on the trailing pieces); `all_gather` and
`gather` take the dialect's equal pieces unless given ``sizes=``.
``wait=False`` returns a `Handle`; its ``wait()`` returns the result.

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
disagreeing in-group ranks on every process.  Without it nothing is compared
(an always-on check would cost one more collective per call): a reduction
kind that differs across the group (``sum`` here, ``max`` there) gives wrong
values silently, and unequal `all_gather` pieces without ``sizes=`` may hang.
"""

from __future__ import annotations

import hashlib
import math
import os
import weakref

import numpy as np
from mpi4py import MPI

from . import _collfront
from ._collfront import Group, Handle, done
from ._mpi import reduce_plan
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
# dtypes whose arrays mpi4py takes bare (it infers the datatype from the buffer
# format; non-native byte order is refused there, so such dtypes travel as bytes)
_DIRECT_DTYPES = frozenset(np.dtype(c) for c in _DIRECT)
_PROC_NULL = MPI.PROC_NULL
_empty, _contiguous, _ndarray = np.empty, np.ascontiguousarray, np.ndarray  # one global lookup on hot paths


def set_check(flag: bool) -> bool:
    """Turn the cross-process argument check on or off; returns the previous setting."""
    global CHECK
    old, CHECK = CHECK, bool(flag)
    _collfront.set_check(CHECK)
    return old


def _finish(result, wait):
    return result if wait else done(result)


# -- device groups, cached per (mesh, mesh_axes as given) ---------------------------
_groups: dict = {}


def _group(mesh, mesh_axes, op) -> Group:
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


def _new_group(mesh, mesh_axes, key, op) -> Group:
    if not isinstance(mesh, Mesh):
        what = "an AbstractMesh" if hasattr(mesh, "axes") else type(mesh).__name__
        raise CollectiveError(
            f"{op}: mesh is {what} ({mesh!r}); communication needs a Mesh bound to a communicator"
        )
    axes = mesh.axes(mesh_axes)
    comm = mesh.group(axes)
    g = Group()
    g.mesh_ref, g.axes, g.comm, g.live = weakref.ref(mesh), axes, comm, mesh._groups
    g.size, g.rank = comm.Get_size(), comm.Get_rank()
    g.roots, g.cache = {}, {}
    _groups[key] = g
    return g


def _root(g: Group, mesh, root, field: str) -> int:
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


def _result(out, shape: tuple, dtype, op: str) -> np.ndarray:
    """A new result array, or ``out`` after checking it can take the result as it is."""
    if out is None:
        return _empty(shape, dtype)
    if not isinstance(out, _ndarray):
        raise CollectiveError(f"{op}: out must be a numpy.ndarray, got {type(out).__name__}")
    od = out.dtype
    if out.shape != shape or (od is not dtype and od != dtype):
        raise CollectiveError(
            f"{op}: out has shape {out.shape} and dtype {out.dtype}, but the result has shape {tuple(shape)} "
            f"and dtype {np.dtype(dtype)}"
        )
    flags = out.flags
    if not flags.c_contiguous or not flags.writeable:
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


_digests: dict = {}  # fingerprint of (op, attributes, shape) -> its (h, -h), made once


def _check(g: Group, op: str, attrs: tuple, x: np.ndarray | None, vary_axis=None, hint: str = "") -> None:
    shape = None
    if x is not None:
        shape = list(x.shape)
        if vary_axis is not None:
            shape[vary_axis] = "*"
        shape = (tuple(shape), x.dtype.str)
    fp = (op, attrs, shape)
    # Compare a stable 63-bit fingerprint h first: one 16-byte MAX allreduce of (h, -h)
    # gives (max h, -min h), equal up to sign on every process iff all h agree.  Only
    # a disagreement pays for exchanging the readable descriptions.
    try:
        mine = _digests[fp]
    except (KeyError, TypeError):
        h = int.from_bytes(hashlib.blake2b(repr(fp).encode(), digest_size=8).digest(), "little") >> 1
        mine = np.array([h, -h], np.int64)
        mine.flags.writeable = False
        try:
            if len(_digests) > 1024:
                _digests.clear()
            _digests[fp] = mine
        except TypeError:  # unhashable attributes: not cached
            pass
    both = _empty(2, np.int64)
    g.comm.Allreduce(mine, both, MPI.MAX)
    if both[0] == -both[1]:
        return
    fps = g.comm.allgather(fp)
    bad = [k for k, f in enumerate(fps) if f != fps[0]]
    raise CollectiveError(
        f"{op}: arguments disagree across the device group over mesh axes {g.axes}: "
        f"in-group rank 0 has (op, attributes, (shape, dtype)) = {fps[0]}, but "
        + "; ".join(f"rank {k} has {fps[k]}" for k in bad) + (f" ({hint})" if hint else "")
    )


def _bytes(a: np.ndarray):
    return [a, a.nbytes, _BYTE]


def _finish_average(plan, n):
    if plan.dtype.kind in "iu":
        return lambda r: np.floor_divide(r, n, out=r)
    return lambda r: np.divide(r, n, out=r)


# -- reductions ------------------------------------------------------------------------
# ``_fast`` maps everything a call's Python work derives from (op, mesh, mesh_axes,
# attributes, shape, dtype) to the validated result: the group and the plan or layout.
# A hit costs one dict lookup; ``g.live is mesh._groups`` rejects entries of a freed
# mesh (or of a dead mesh whose id was reused).  Entries are stored only after the
# slow path has validated the arguments, so every error is raised as before.
_fast: dict = {}


def _remember(key, value):
    if len(_fast) > 1024:  # a program cycling through many shapes: start over
        _fast.clear()
    try:
        _fast[key] = value
    except TypeError:  # unhashable attributes: not cached
        pass
    return value


def _rplan(reduction, x, dtype):
    return reduce_plan(reduction, x.dtype if dtype is None else dtype)


def _reduce_setup(op, x, mesh, mesh_axes, reduction, dtype, root=None):
    g = _group(mesh, mesh_axes, op)
    _array(x, op)
    r = _root(g, mesh, root, "root") if op == "reduce" else None
    plan = _rplan(reduction, x, dtype)
    same = x.dtype == plan.dtype
    if op == "all_reduce":
        return _remember((op, id(mesh), mesh_axes, reduction, x.dtype, dtype), (g, plan, same, _fast_reduction(plan)))
    return _remember((op, id(mesh), mesh_axes, reduction, root, x.dtype, dtype),
                     (g, plan, same, r, _fast_reduction(plan)))


def _fast_reduction(plan):
    """What the compiled front needs to run ``plan`` itself: ``(MPI op, result dtype's type
    number, 0 | 1 divide by the group size | 2 floor-divide)``, or None when the buffers
    travel with an explicit datatype (float16 and the like: the Python path)."""
    if not plan.direct:
        return None
    return plan.op, plan.dtype.num, 0 if not plan.average else 2 if plan.dtype.kind in "iu" else 1


def _all_reduce(x, mesh, mesh_axes=None, reduction="sum", dtype=None, *, out=None, wait=True):
    """Reduce ``x`` over the group; every device gets the result (of type ``dtype``).

    The shard dialect's ``all_reduce``.  Every device of the group passes an
    array of the same shape and dtype and receives the elementwise reduction.

    Parameters
    ----------
    x : numpy.ndarray
        This device's contribution.
    mesh : Mesh
        The mesh bound to the communicator (an `AbstractMesh` has no processes).
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the device group (None = all axes, ``()`` = a
        group of one).
    reduction : ReductionKind, str, Generic or callable, optional
        A `ReductionKind` (or its name), or for ``generic`` a function
        ``f(a, b) -> c`` (or `Generic`).  Default ``"sum"``.
    dtype : numpy.dtype, optional
        The type of the result (and of the reduction); default ``x.dtype``.
    out : numpy.ndarray, optional
        A C-contiguous array to receive the result (no allocation); it must have
        ``x``'s shape and the result's dtype.
    wait : bool, optional
        False returns a `Handle` at once; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        The reduced array (``out`` when given), a new array otherwise.

    Raises
    ------
    CollectiveError
        ``x`` or ``out`` is not a fitting numpy array, the reduction is unknown,
        ``mesh`` is not a `Mesh`, or (with ``MESHRT_CHECK=1``) the group's
        arguments disagree.
    MeshError
        ``mesh_axes`` names an axis the mesh does not have.

    See Also
    --------
    reduce, reduce_scatter, ReductionKind

    Notes
    -----
    One ``MPI_Allreduce`` (``MPI_Iallreduce`` with ``wait=False``) over the
    group's communicator.  ``average`` on int dtypes is the floor of the mean.

    Examples
    --------
    At one process the group has one device and the result is a copy of ``x``:

    >>> mesh = Mesh((-1,), ("x",))
    >>> all_reduce(np.array([1, 2, 3]), mesh, ["x"], "max")
    array([1, 2, 3])
    >>> all_reduce(np.array([1, 2]), mesh, dtype=np.float64, wait=False).wait()
    array([1., 2.])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    try:
        g, plan, same, _ = _fast["all_reduce", id(mesh), mesh_axes, reduction, x.dtype, dtype]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, plan, same, _ = _reduce_setup("all_reduce", x, mesh, mesh_axes, reduction, dtype)
    pd = plan.dtype
    send = x if same and x.flags.c_contiguous else _contiguous(x, dtype=pd)
    if CHECK:
        _check(g, "all_reduce", (str(plan.kind), pd.str), x)
    res = _empty(x.shape, pd) if out is None else _result(out, x.shape, pd, "all_reduce")
    if g.size == 1:
        res[...] = send
        return _finish(res, wait)
    if plan.direct:
        sb, rb = send, res
    else:
        sb, rb = [send, plan.datatype], [res, plan.datatype]
    if wait:
        g.comm.Allreduce(sb, rb, plan.op)
        if plan.average:
            _finish_average(plan, g.size)(res)
        return res
    req = g.comm.Iallreduce(sb, rb, plan.op)
    return Handle(req, res, _finish_average(plan, g.size) if plan.average else None, send)


def _reduce(x, mesh, mesh_axes=None, reduction="sum", root=0, dtype=None, *, wait=True):
    """Reduce ``x`` over the group onto ``root``; ``None`` on the other devices.

    The shard dialect's ``reduce``.

    Parameters
    ----------
    x : numpy.ndarray
        This device's contribution (the same shape and dtype on every device).
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    reduction : ReductionKind, str, Generic or callable, optional
        The reduction kind or a ``generic`` function; default ``"sum"``.
    root : int or tuple of int, optional
        The in-group multi-index (or in-group linear index) of the device that
        gets the result; default 0.
    dtype : numpy.dtype, optional
        The type of the result; default ``x.dtype``.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or None or Handle
        The reduced array on ``root``, None on the other devices.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, the reduction is unknown, ``mesh`` is not a
        `Mesh`, or (with ``MESHRT_CHECK=1``) the group's arguments disagree.
    MeshError
        A bad ``mesh_axes`` or a ``root`` outside the group.

    See Also
    --------
    all_reduce, gather

    Notes
    -----
    One ``MPI_Reduce`` over the group's communicator.

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> reduce(np.array([4, 5]), mesh, ["x"], "sum", root=0)
    array([4, 5])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    if type(root) is list:  # the dialect's in-group coordinates, as a hashable key
        root = tuple(root)
    try:
        g, plan, same, r, _ = _fast["reduce", id(mesh), mesh_axes, reduction, root, x.dtype, dtype]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, plan, same, r, _ = _reduce_setup("reduce", x, mesh, mesh_axes, reduction, dtype, root)
    pd = plan.dtype
    send = x if same and x.flags.c_contiguous else _contiguous(x, dtype=pd)
    if CHECK:
        _check(g, "reduce", (str(plan.kind), pd.str, r), x)
    if g.size == 1:
        res = np.array(send, dtype=pd, copy=True)
        return _finish(res, wait)
    me = g.rank == r
    res = _empty(x.shape, pd) if me else None
    if plan.direct:
        sb, rb = send, res
    else:
        dt = plan.datatype
        sb, rb = [send, dt], ([res, dt] if me else None)
    post = _finish_average(plan, g.size) if plan.average and me else None
    if wait:
        g.comm.Reduce(sb, rb, plan.op, r)
        return post(res) if post else res
    return Handle(g.comm.Ireduce(sb, rb, plan.op, r), res, post, send)


def _rs_setup(x, mesh, mesh_axes, reduction, scatter_axis, dtype):
    g = _group(mesh, mesh_axes, "reduce_scatter")
    _array(x, "reduce_scatter")
    axis = _axis(scatter_axis, x.ndim, "reduce_scatter", "scatter_axis")
    plan = _rplan(reduction, x, dtype)
    n = g.size
    sizes = split_sizes(x.shape[axis], n)
    rest = x.shape[:axis] + x.shape[axis + 1:]
    rshape = (sizes[g.rank],) + rest
    oshape = x.shape[:axis] + (sizes[g.rank],) + x.shape[axis + 1:]
    counts = None if sizes[0] == sizes[-1] else [s * math.prod(rest) for s in sizes]
    same = x.dtype == plan.dtype
    entry = (g, plan, same, axis, rshape, oshape, counts, _fast_reduction(plan))
    if type(scatter_axis) is not int:
        return entry
    return _remember(("reduce_scatter", id(mesh), mesh_axes, x.shape, x.dtype, axis, reduction, dtype), entry)


def _reduce_scatter(x, mesh, mesh_axes=None, reduction="sum", scatter_axis=0, dtype=None, *, out=None, wait=True):
    """Reduce over the group, then device ``k`` keeps piece ``k`` along ``scatter_axis``.

    The shard dialect's ``reduce_scatter``.  Pieces follow MLIR's uneven rule
    when the dim does not divide: the extra elements go to the trailing pieces.

    Parameters
    ----------
    x : numpy.ndarray
        This device's contribution (the same shape and dtype on every device).
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    reduction : ReductionKind, str, Generic or callable, optional
        The reduction kind or a ``generic`` function; default ``"sum"``.
    scatter_axis : int, optional
        The tensor axis that is split into one piece per device; default 0.
    dtype : numpy.dtype, optional
        The type of the result; default ``x.dtype``.
    out : numpy.ndarray, optional
        An array to receive the piece.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        This device's piece of the reduced array.

    Raises
    ------
    CollectiveError
        ``x`` or ``out`` is not a fitting numpy array, ``scatter_axis`` is out of
        range, the reduction is unknown, ``mesh`` is not a `Mesh`, or (with
        ``MESHRT_CHECK=1``) the group's arguments disagree.
    MeshError
        A bad ``mesh_axes``.

    See Also
    --------
    all_reduce, all_gather

    Notes
    -----
    One ``MPI_Reduce_scatter_block`` (``MPI_Reduce_scatter`` for uneven pieces).

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> reduce_scatter(np.arange(6).reshape(2, 3), mesh, ["x"], "sum", scatter_axis=1)
    array([[0, 1, 2],
           [3, 4, 5]])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    try:
        if type(scatter_axis) is not int:  # 1.0 would find the entry of 1
            raise KeyError
        g, plan, same, axis, rshape, oshape, counts, _ = _fast[
            "reduce_scatter", id(mesh), mesh_axes, x.shape, x.dtype, scatter_axis, reduction, dtype]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, plan, same, axis, rshape, oshape, counts, _ = _rs_setup(x, mesh, mesh_axes, reduction, scatter_axis, dtype)
    pd = plan.dtype
    if CHECK:
        _check(g, "reduce_scatter", (str(plan.kind), pd.str, axis), x)
    n = g.size
    if axis == 0:
        send = x if same and x.flags.c_contiguous else _contiguous(x, dtype=pd)
        res = _empty(rshape, pd) if out is None else _result(out, rshape, pd, "reduce_scatter")
        post = _finish_average(plan, n) if plan.average else None
    else:
        send = _front(x, axis)
        if not same:
            send = send.astype(pd)
        res = _empty(rshape, pd)
        if out is not None:
            _result(out, oshape, pd, "reduce_scatter")
        avg = _finish_average(plan, n) if plan.average else None

        def post(r):
            if avg is not None:
                avg(r)
            return _into(out, _back(r, axis))

    if n == 1:
        res[...] = send
        return _finish(post(res) if post else res, wait)
    if plan.direct:
        sb, rb = send, res
    else:
        dt = plan.datatype
        sb, rb = [send, dt], [res, dt]
    if counts is None:
        if wait:
            g.comm.Reduce_scatter_block(sb, rb, plan.op)
            return post(res) if post else res
        return Handle(g.comm.Ireduce_scatter_block(sb, rb, plan.op), res, post, send)
    if wait:
        g.comm.Reduce_scatter(sb, rb, counts, plan.op)
        return post(res) if post else res
    return Handle(g.comm.Ireduce_scatter(sb, rb, counts, plan.op), res, post, send)


# -- data movement ---------------------------------------------------------------------
def _given_sizes(sizes, g: Group, x, axis, op):
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


def _gather_setup(op, x, mesh, mesh_axes, gather_axis, root, sizes, out):
    """Validate a gather or all_gather: ``(g, r, layout)``, or ``(g, r, None)`` for a
    group of one (after the checks it does there).  ``sizes=None`` means equal pieces."""
    g = _group(mesh, mesh_axes, op)
    _array(x, op)
    axis = _axis(gather_axis, x.ndim, op, "gather_axis")
    r = _root(g, mesh, root, "root") if op == "gather" else None
    if CHECK:
        _gather_check(g, op, axis, r, x, sizes)
    if g.size == 1:
        if out is not None:
            _result(out, x.shape, x.dtype, "all_gather")
        return g, r, None
    layout = _cached_layout(g, op, x, axis, x.shape[axis] if sizes is None else sizes)
    ts = type(sizes)
    if type(gather_axis) is int and (ts is int or ts is tuple or ts is list or sizes is None):
        _remember((op, id(mesh), mesh_axes, x.shape, x.dtype, gather_axis, root,
                   tuple(sizes) if ts is list else sizes), (g, r, layout))
    return g, r, layout


def _gather_check(g, op, axis, r, x, sizes):
    """``MESHRT_CHECK``: the group agrees on the attributes, and on every dim of the
    pieces (all of them without ``sizes``: the dialect's equal pieces)."""
    attrs = (axis,) if r is None else (axis, r)
    if sizes is None:
        _check(g, op, attrs, x, hint="without sizes= every piece must have the same shape "
                                     "(the dialect's equal pieces); pass sizes= for uneven ones")
    else:
        try:
            skey = (int(sizes),) * g.size if hasattr(sizes, "__index__") else tuple(int(s) for s in sizes)
        except (TypeError, ValueError):
            skey = repr(sizes)  # `_given_sizes` says what is wrong with it
        _check(g, op, attrs + (skey,), x, vary_axis=axis)


def _all_gather(x, mesh, mesh_axes=None, gather_axis=0, *, sizes=None, out=None, wait=True):
    """Concatenate the group's pieces along ``gather_axis`` in group order, on every device.

    As in the dialect, the pieces are equal: the result's ``gather_axis`` is ``x``'s
    times the group size (``MESHRT_CHECK=1`` verifies that they are).  For pieces
    that differ along ``gather_axis`` pass ``sizes``.

    Parameters
    ----------
    x : numpy.ndarray
        This device's piece.
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    gather_axis : int, optional
        The tensor axis along which the pieces are concatenated; default 0.
    sizes : int or sequence of int, optional
        The pieces' sizes along ``gather_axis``, one per group member (an int
        means equal pieces of that size); default: equal pieces of ``x``'s size.
    out : numpy.ndarray, optional
        A C-contiguous array to receive the result (no allocation).
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        The concatenated array, the same on every device of the group.

    Raises
    ------
    CollectiveError
        ``x`` or ``out`` is not a fitting numpy array, ``gather_axis`` is out of
        range, ``sizes`` has the wrong length or disagrees with ``x``, ``mesh`` is
        not a `Mesh`, or (with ``MESHRT_CHECK=1``) the pieces or attributes
        disagree across the group.
    MeshError
        A bad ``mesh_axes``.

    See Also
    --------
    gather, all_slice, reduce_scatter

    Notes
    -----
    One ``MPI_Allgather`` (``MPI_Allgatherv`` with unequal ``sizes``).  Unequal
    pieces without ``sizes=`` and without ``MESHRT_CHECK=1`` may hang.

    Examples
    --------
    Under ``mpiexec -n 2`` with ``mesh = Mesh((2,), ("x",))`` the result has
    4 rows; at one process the group has one device:

    >>> mesh = Mesh((-1,), ("x",))
    >>> all_gather(np.ones((2, 3)), mesh, ["x"], 0).shape
    (2, 3)
    >>> all_gather(np.arange(3), mesh, ["x"], 0, sizes=[3])
    array([0, 1, 2])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    try:
        ts = type(sizes)
        if type(gather_axis) is not int or not (ts is int or ts is tuple or ts is list or sizes is None):
            raise KeyError  # 1.0 would find the entry of 1
        g, _, layout = _fast["all_gather", id(mesh), mesh_axes, x.shape, x.dtype, gather_axis, None,
                             tuple(sizes) if ts is list else sizes]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, _, layout = _gather_setup("all_gather", x, mesh, mesh_axes, gather_axis, None, sizes, out)
        if layout is None:
            return _finish(_into(out, x), wait)
    else:
        if CHECK:
            _gather_check(g, "all_gather", layout[0], None, x, sizes)
    axis, counts, displs, equal, shape, oshape, direct = layout
    if axis == 0:
        send = x if x.flags.c_contiguous else _contiguous(x)
        buf = _empty(shape, x.dtype) if out is None else _result(out, oshape, x.dtype, "all_gather")
        post = None
    else:
        send = _contiguous(np.moveaxis(x, axis, 0))
        if out is not None:
            _result(out, oshape, x.dtype, "all_gather")
        buf = _empty(shape, x.dtype)

        def post(b):
            return _into(out, _back(b, axis))

    if equal:
        if direct:
            sb, rb = send, buf
        else:
            sb, rb = [send, counts[0], _BYTE], [buf, counts[0], _BYTE]
        if wait:
            g.comm.Allgather(sb, rb)
            return post(buf) if post else buf
        return Handle(g.comm.Iallgather(sb, rb), buf, post, send)
    args = ([send, counts[g.rank], _BYTE], [buf, (counts, displs), _BYTE])
    if wait:
        g.comm.Allgatherv(*args)
        return post(buf) if post else buf
    return Handle(g.comm.Iallgatherv(*args), buf, post, send)


def _cached_layout(g: Group, op: str, x, axis: int, sizes):
    """`_layout`, validated and computed once per (op, shape, dtype, axis, sizes) and group:
    ``(axis, counts, displs, equal, shape, out_shape, direct)``."""
    if type(sizes) is int:
        skey = sizes
    elif hasattr(sizes, "__index__"):
        skey = int(sizes)
    else:
        try:
            skey = tuple(sizes)
        except TypeError:
            skey = None  # not a sequence: `_given_sizes` says so
    key = (op, x.shape, x.dtype, axis, skey)
    try:
        layout = g.cache.get(key) if skey is not None else None
    except TypeError:  # sizes holding something unhashable: not cached
        skey = layout = None
    if layout is None:
        counts, displs, equal, shape = _layout(_given_sizes(sizes, g, x, axis, op), x, axis)
        oshape = x.shape[:axis] + (shape[0],) + x.shape[axis + 1:]
        layout = (axis, counts, displs, equal, shape, oshape, x.dtype in _DIRECT_DTYPES)
        if skey is not None:
            if len(g.cache) > 256:  # a program cycling through many shapes: start over
                g.cache.clear()
            g.cache[key] = layout
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


def _gather(x, mesh, mesh_axes=None, gather_axis=0, root=0, *, sizes=None, wait=True):
    """`all_gather` onto ``root`` only; ``None`` on the other devices.

    The pieces are equal unless ``sizes`` is given.

    Parameters
    ----------
    x : numpy.ndarray
        This device's piece.
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    gather_axis : int, optional
        The tensor axis along which the pieces are concatenated; default 0.
    root : int or tuple of int, optional
        The in-group multi-index (or linear index) of the receiving device.
    sizes : int or sequence of int, optional
        The pieces' sizes along ``gather_axis``, one per group member.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or None or Handle
        The concatenated array on ``root``, None elsewhere.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``gather_axis`` is out of range, ``sizes``
        does not fit, ``mesh`` is not a `Mesh`, or (with ``MESHRT_CHECK=1``) the
        group's arguments disagree.
    MeshError
        A bad ``mesh_axes`` or a ``root`` outside the group.

    See Also
    --------
    all_gather, scatter

    Notes
    -----
    One ``MPI_Gather`` (``MPI_Gatherv`` with unequal ``sizes``).

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> gather(np.array([[1, 2]]), mesh, ["x"], gather_axis=0, root=0)
    array([[1, 2]])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    if type(root) is list:  # the dialect's in-group coordinates, as a hashable key
        root = tuple(root)
    try:
        ts = type(sizes)
        if type(gather_axis) is not int or not (ts is int or ts is tuple or ts is list or sizes is None):
            raise KeyError
        g, r, layout = _fast["gather", id(mesh), mesh_axes, x.shape, x.dtype, gather_axis, root,
                             tuple(sizes) if ts is list else sizes]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, r, layout = _gather_setup("gather", x, mesh, mesh_axes, gather_axis, root, sizes, None)
        if layout is None:
            return _finish(x, wait)
    else:
        if CHECK:
            _gather_check(g, "gather", layout[0], r, x, sizes)
    axis, counts, displs, equal, shape, oshape, direct = layout
    me = g.rank == r
    if axis == 0:
        send = x if x.flags.c_contiguous else _contiguous(x)
        post = None
    else:
        send = _contiguous(np.moveaxis(x, axis, 0))
        post = (lambda b: _back(b, axis)) if me else None
    buf = _empty(shape, x.dtype) if me else None
    if equal:
        if direct:
            sb, rb = send, buf
        else:
            sb, rb = [send, counts[0], _BYTE], ([buf, counts[0], _BYTE] if me else None)
        if wait:
            g.comm.Gather(sb, rb, r)
            return post(buf) if post else buf
        return Handle(g.comm.Igather(sb, rb, r), buf, post, send)
    args = ([send, counts[g.rank], _BYTE], [buf, (counts, displs), _BYTE] if me else None)
    if wait:
        g.comm.Gatherv(*args, root=r)
        return post(buf) if post else buf
    return Handle(g.comm.Igatherv(*args, root=r), buf, post, send)


def _bcast_setup(x, mesh, mesh_axes, root):
    g = _group(mesh, mesh_axes, "broadcast")
    _array(x, "broadcast")
    r = _root(g, mesh, root, "root")
    return _remember(("broadcast", id(mesh), mesh_axes, root, x.dtype), (g, r, x.dtype in _DIRECT_DTYPES))


def _broadcast(x, mesh, mesh_axes=None, root=0, *, wait=True):
    """Every device gets ``root``'s ``x``; the others' ``x`` gives shape and dtype.

    The shard dialect's ``broadcast``.

    Parameters
    ----------
    x : numpy.ndarray
        The data on ``root``; on the other devices an array of the same shape and
        dtype (its values are ignored).
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    root : int or tuple of int, optional
        The in-group multi-index (or linear index) of the sending device.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        ``root``'s data: ``x`` itself on the root, a new array elsewhere.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``mesh`` is not a `Mesh`, or (with
        ``MESHRT_CHECK=1``) the group's arguments disagree.
    MeshError
        A bad ``mesh_axes`` or a ``root`` outside the group.

    See Also
    --------
    scatter, all_gather

    Notes
    -----
    One ``MPI_Bcast`` over the group's communicator.

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> x = np.array([1.5, 2.5])
    >>> broadcast(x, mesh, ["x"], root=0) is x
    True
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    if type(root) is list:  # the dialect's in-group coordinates, as a hashable key
        root = tuple(root)
    try:
        g, r, direct = _fast["broadcast", id(mesh), mesh_axes, root, x.dtype]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, r, direct = _bcast_setup(x, mesh, mesh_axes, root)
    if CHECK:
        _check(g, "broadcast", (r,), x)
    if g.size == 1:
        return _finish(x, wait)
    if g.rank == r:
        buf = x if x.flags.c_contiguous else _contiguous(x)
    else:
        buf = _empty(x.shape, x.dtype)
    msg = buf if direct else _bytes(buf)
    if wait:
        g.comm.Bcast(msg, r)
        return buf
    return Handle(g.comm.Ibcast(msg, r), buf)


def _scatter_setup(x, mesh, mesh_axes, scatter_axis, root):
    """``(g, r, layout)``, or ``(g, r, None)`` for a group of one."""
    g = _group(mesh, mesh_axes, "scatter")
    _array(x, "scatter")
    axis = _axis(scatter_axis, x.ndim, "scatter", "scatter_axis")
    r = _root(g, mesh, root, "root")
    if CHECK:
        _check(g, "scatter", (axis, r), x)
    n = g.size
    if n == 1:
        return g, r, None
    sizes = split_sizes(x.shape[axis], n)
    rest = x.shape[:axis] + x.shape[axis + 1:]
    inner = math.prod(rest) * x.itemsize
    bshape = (sizes[g.rank],) + rest
    if sizes[0] == sizes[-1]:
        counts = displs = None
    else:
        counts = [s * inner for s in sizes]
        displs = [o * inner for o in split_offsets(x.shape[axis], n)[:-1]]
    entry = (g, r, (axis, bshape, sizes[0] * inner, counts, displs, x.dtype in _DIRECT_DTYPES))
    if type(scatter_axis) is not int:
        return entry
    return _remember(("scatter", id(mesh), mesh_axes, x.shape, x.dtype, axis, root), entry)


def _scatter(x, mesh, mesh_axes=None, scatter_axis=0, root=0, *, wait=True):
    """Device ``k`` gets piece ``k`` of ``root``'s ``x`` along ``scatter_axis``.

    Pieces follow MLIR's uneven rule (extra elements on the trailing pieces);
    the other devices' ``x`` gives shape and dtype.

    Parameters
    ----------
    x : numpy.ndarray
        The whole array on ``root``; on the other devices an array of the same
        shape and dtype (its values are ignored).
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    scatter_axis : int, optional
        The tensor axis split into one piece per device; default 0.
    root : int or tuple of int, optional
        The in-group multi-index (or linear index) of the sending device.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        This device's piece.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``scatter_axis`` is out of range, ``mesh`` is
        not a `Mesh`, or (with ``MESHRT_CHECK=1``) the group's arguments
        disagree.
    MeshError
        A bad ``mesh_axes`` or a ``root`` outside the group.

    See Also
    --------
    gather, all_slice

    Notes
    -----
    One ``MPI_Scatter`` (``MPI_Scatterv`` for uneven pieces).

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> scatter(np.arange(4), mesh, ["x"], scatter_axis=0, root=0)
    array([0, 1, 2, 3])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    if type(root) is list:  # the dialect's in-group coordinates, as a hashable key
        root = tuple(root)
    try:
        if type(scatter_axis) is not int:
            raise KeyError
        g, r, layout = _fast["scatter", id(mesh), mesh_axes, x.shape, x.dtype, scatter_axis, root]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, r, layout = _scatter_setup(x, mesh, mesh_axes, scatter_axis, root)
        if layout is None:
            return _finish(x, wait)
    else:
        if CHECK:
            _check(g, "scatter", (layout[0], r), x)
    axis, bshape, count, counts, displs, direct = layout
    buf = _empty(bshape, x.dtype)
    me = g.rank == r
    if not me:
        send = None
    elif axis == 0:
        send = x if x.flags.c_contiguous else _contiguous(x)
    else:
        send = _front(x, axis)
    post = (lambda b: _back(b, axis)) if axis else None
    if counts is None:
        if direct:
            sb, rb = send, buf
        else:
            sb, rb = [send, count, _BYTE] if me else None, [buf, buf.nbytes, _BYTE]
        if wait:
            g.comm.Scatter(sb, rb, r)
            return post(buf) if post else buf
        return Handle(g.comm.Iscatter(sb, rb, r), buf, post, send)
    args = ([send, (counts, displs), _BYTE] if me else None, [buf, buf.nbytes, _BYTE])
    if wait:
        g.comm.Scatterv(*args, root=r)
        return post(buf) if post else buf
    return Handle(g.comm.Iscatterv(*args, root=r), buf, post, send)


def _a2a_setup(x, mesh, mesh_axes, split_axis, concat_axis):
    """``(g, layout)``, or ``(g, None)`` for a group of one."""
    g = _group(mesh, mesh_axes, "all_to_all")
    _array(x, "all_to_all")
    sa = _axis(split_axis, x.ndim, "all_to_all", "split_axis")
    ca = _axis(concat_axis, x.ndim, "all_to_all", "concat_axis")
    if CHECK:
        _check(g, "all_to_all", (sa, ca), x)
    n = g.size
    if n == 1:
        return g, None
    sizes = split_sizes(x.shape[sa], n)
    rest = x.shape[:sa] + x.shape[sa + 1:]
    inner = math.prod(rest) * x.itemsize
    mine = sizes[g.rank]
    bshape = (n * mine,) + rest  # n blocks of shape (mine, *rest), from device 0, 1, ... in order
    if sizes[0] == sizes[-1]:
        v = None
    else:
        scounts = [s * inner for s in sizes]
        sdispls = [o * inner for o in split_offsets(x.shape[sa], n)[:-1]]
        rcounts = [mine * inner] * n
        rdispls = [k * mine * inner for k in range(n)]
        v = ((scounts, sdispls), (rcounts, rdispls))
    entry = (g, (sa, ca, bshape, (n, mine) + rest, mine * inner, v, x.dtype in _DIRECT_DTYPES))
    if type(split_axis) is not int or type(concat_axis) is not int:
        return entry
    return _remember(("all_to_all", id(mesh), mesh_axes, x.shape, x.dtype, sa, ca), entry)


def _all_to_all(x, mesh, mesh_axes=None, split_axis=0, concat_axis=0, *, wait=True):
    """Split ``x`` into one piece per device, exchange, and concatenate what arrives.

    ``x`` is split along ``split_axis`` (uneven rule); piece ``j`` goes to device
    ``j``, and the pieces that arrive are concatenated along ``concat_axis`` in
    group order.  Every device's ``x`` must have the same shape (as in the
    dialect).

    Parameters
    ----------
    x : numpy.ndarray
        This device's array.
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    split_axis : int, optional
        The tensor axis split into pieces; default 0.
    concat_axis : int, optional
        The tensor axis along which the received pieces are joined; default 0.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        The joined pieces (``x`` itself for a group of one).

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, an axis is out of range, ``mesh`` is not a
        `Mesh`, or (with ``MESHRT_CHECK=1``) the group's arguments disagree.
    MeshError
        A bad ``mesh_axes``.

    See Also
    --------
    all_gather, all_slice

    Notes
    -----
    One ``MPI_Alltoall`` (``MPI_Alltoallv`` for uneven pieces).

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> all_to_all(np.arange(6).reshape(2, 3), mesh, ["x"], split_axis=1, concat_axis=0)
    array([[0, 1, 2],
           [3, 4, 5]])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    try:
        if type(split_axis) is not int or type(concat_axis) is not int:
            raise KeyError
        g, layout = _fast["all_to_all", id(mesh), mesh_axes, x.shape, x.dtype, split_axis, concat_axis]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, layout = _a2a_setup(x, mesh, mesh_axes, split_axis, concat_axis)
        if layout is None:
            return _finish(x, wait)
    else:
        if CHECK:
            _check(g, "all_to_all", (layout[0], layout[1]), x)
    sa, ca, bshape, bview, count, v, direct = layout
    if sa == 0:
        send = x if x.flags.c_contiguous else _contiguous(x)
    else:
        send = _contiguous(np.moveaxis(x, sa, 0))
    buf = _empty(bshape, x.dtype)
    if sa == 0 and ca == 0:
        post = None
    else:
        def post(b):
            blocks = b.reshape(bview)
            # block i in x's axis order: move its front axis back to sa, then join along ca
            return np.concatenate([np.moveaxis(blocks[i], 0, sa) for i in range(bview[0])], axis=ca)

    if v is None:
        if direct:
            sb, rb = send, buf
        else:
            sb, rb = [send, count, _BYTE], [buf, count, _BYTE]
        if wait:
            g.comm.Alltoall(sb, rb)
            return post(buf) if post else buf
        return Handle(g.comm.Ialltoall(sb, rb), buf, post, send)
    args = ([send, v[0], _BYTE], [buf, v[1], _BYTE])
    if wait:
        g.comm.Alltoallv(*args)
        return post(buf) if post else buf
    return Handle(g.comm.Ialltoallv(*args), buf, post, send)


def _all_slice(x, mesh, mesh_axes=None, slice_axis=0):
    """This device's piece of ``x`` along ``slice_axis`` (uneven rule), as a view.

    No communication: the inverse of `all_gather` for replicated ``x``.

    Parameters
    ----------
    x : numpy.ndarray
        The array, the same on every device of the group.
    mesh : Mesh
        The mesh bound to the communicator (it says which device this is).
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    slice_axis : int, optional
        The tensor axis that is sliced; default 0.

    Returns
    -------
    numpy.ndarray
        A view of ``x``: this device's piece.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``slice_axis`` is out of range, or ``mesh``
        is not a `Mesh`.
    MeshError
        A bad ``mesh_axes``.

    See Also
    --------
    all_gather, scatter

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> x = np.arange(6).reshape(3, 2)
    >>> piece = all_slice(x, mesh, ["x"], slice_axis=0)
    >>> piece.shape, np.shares_memory(piece, x)
    ((3, 2), True)
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    try:
        if type(slice_axis) is not int:
            raise KeyError
        ref, index = _fast["all_slice", id(mesh), mesh_axes, x.shape, slice_axis]
        if ref() is not mesh or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        index = _slice_setup(x, mesh, mesh_axes, slice_axis)
    return x[index]


def _slice_setup(x, mesh, mesh_axes, slice_axis):
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
    index = tuple(index)
    if type(slice_axis) is int:
        _remember(("all_slice", id(mesh), mesh_axes, x.shape, slice_axis), (weakref.ref(mesh), index))
    return index


# -- point to point --------------------------------------------------------------------
_TAG = _collfront.TAG


def _send(x, mesh, mesh_axes=None, destination=0, *, tag=_TAG, wait=True):
    """Send ``x`` to the in-group device ``destination``; matched by `recv` there.

    Parameters
    ----------
    x : numpy.ndarray
        The data to send.
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    destination : int or tuple of int, optional
        The in-group multi-index (or linear index) of the receiver; default 0.
    tag : int, optional
        The MPI tag; `recv` must use the same.
    wait : bool, optional
        False returns a `Handle` at once (a nonblocking send).

    Returns
    -------
    None or Handle
        None when ``wait`` is true; a `Handle` whose ``wait()`` completes the
        send otherwise.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array or ``mesh`` is not a `Mesh`.
    MeshError
        A bad ``mesh_axes`` or a ``destination`` outside the group.

    See Also
    --------
    recv, shift

    Notes
    -----
    One ``MPI_Send`` (``MPI_Isend``).  A blocking send to a peer that has not yet
    posted its `recv` may wait for it.

    Examples
    --------
    At one process a device sends to itself (nonblocking, so the receive can be
    posted after it):

    >>> mesh = Mesh((-1,), ("x",))
    >>> h = send(np.array([7, 8]), mesh, ["x"], destination=0, wait=False)
    >>> recv(np.empty(2, dtype=int), mesh, ["x"], source=0)
    array([7, 8])
    >>> h.wait()
    """
    if type(destination) is list:
        destination = tuple(destination)
    g = _group(mesh, mesh_axes, "send")
    if not isinstance(x, np.ndarray):
        _array(x, "send")
    try:
        d = g.roots[destination]
    except (KeyError, TypeError):
        d = _root(g, mesh, destination, "destination")
    buf = x if x.flags.c_contiguous else np.ascontiguousarray(x)
    msg = buf if x.dtype in _DIRECT_DTYPES else _bytes(buf)
    if wait:
        g.comm.Send(msg, d, tag)
        return None
    return Handle(g.comm.Isend(msg, d, tag), None, None, buf)


def _recv(like, mesh, mesh_axes=None, source=0, *, tag=_TAG, wait=True):
    """Receive an array shaped and typed as ``like`` from the in-group device ``source``.

    Parameters
    ----------
    like : numpy.ndarray
        An array with the shape and dtype of the message (its values are unused).
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    source : int or tuple of int, optional
        The in-group multi-index (or linear index) of the sender; default 0.
    tag : int, optional
        The MPI tag; it must match the `send`'s.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the received array.

    Returns
    -------
    numpy.ndarray or Handle
        A new array holding the message.

    Raises
    ------
    CollectiveError
        ``like`` is not a numpy array or ``mesh`` is not a `Mesh`.
    MeshError
        A bad ``mesh_axes`` or a ``source`` outside the group.

    See Also
    --------
    send, shift

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> h = send(np.array([1.0, 2.0]), mesh, ["x"], destination=0, wait=False)
    >>> recv(np.empty(2), mesh, ["x"], source=0)
    array([1., 2.])
    >>> h.wait()
    """
    if type(source) is list:
        source = tuple(source)
    g = _group(mesh, mesh_axes, "recv")
    if not isinstance(like, np.ndarray):
        _array(like, "recv", "like")
    try:
        s = g.roots[source]
    except (KeyError, TypeError):
        s = _root(g, mesh, source, "source")
    buf = np.empty(like.shape, like.dtype)
    msg = buf if like.dtype in _DIRECT_DTYPES else _bytes(buf)
    if wait:
        g.comm.Recv(msg, s, tag)
        return buf
    return Handle(g.comm.Irecv(msg, s, tag), buf)


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


def _shift_setup(x, mesh, mesh_axes, shift_axis, offset, rotate):
    g = _group(mesh, mesh_axes, "shift")
    _array(x, "shift")
    src, dst = _shift_peers(g, mesh, shift_axis, offset, bool(rotate))
    # what happens: 0 a send and a receive, 1 no source (keep x), 2 the source is this device
    case = 1 if src == _PROC_NULL else 2 if src == g.rank else 0
    return _remember(("shift", id(mesh), mesh_axes, shift_axis, offset, rotate, x.dtype),
                     (g, src, dst, bool(rotate), x.dtype in _DIRECT_DTYPES, case))


def _shift(x, mesh, mesh_axes=None, shift_axis=0, offset=1, rotate=False, *, wait=True):
    """Shift ``x`` by ``offset`` places along the mesh axis ``shift_axis`` inside each group.

    As ``MPI_Cart_shift``: device ``j`` receives from ``j - offset``.  Without
    ``rotate`` a device with no source keeps its input.

    Parameters
    ----------
    x : numpy.ndarray
        This device's array (the same shape and dtype on every device).
    mesh : Mesh
        The mesh bound to the communicator.
    mesh_axes : sequence of int or str, optional
        The mesh axes spanning the group (None = all, ``()`` = a group of one).
    shift_axis : int or str, optional
        The mesh axis along which data moves; one of ``mesh_axes``.  Default 0.
    offset : int, optional
        How many places to shift; default 1.
    rotate : bool, optional
        Wrap around the ends of the axis (default False).
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        A new array: the source device's ``x``, or a copy of this device's ``x``
        where there is no source.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``shift_axis`` is unknown or not among
        ``mesh_axes``, ``offset`` is not an int, ``mesh`` is not a `Mesh`, or
        (with ``MESHRT_CHECK=1``) the group's arguments disagree.
    MeshError
        A bad ``mesh_axes``.

    See Also
    --------
    send, recv, neighbors_linear_indices

    Notes
    -----
    One ``MPI_Sendrecv`` per device.

    Examples
    --------
    >>> mesh = Mesh((-1,), ("x",))
    >>> shift(np.array([1, 2]), mesh, ["x"], shift_axis="x", offset=1, rotate=True)
    array([1, 2])
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    try:
        g, src, dst, rotate, direct, case = _fast["shift", id(mesh), mesh_axes, shift_axis, offset, rotate, x.dtype]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, src, dst, rotate, direct, case = _shift_setup(x, mesh, mesh_axes, shift_axis, offset, rotate)
    if CHECK:
        _check(g, "shift", (shift_axis, offset, rotate), x)
    buf = x if x.flags.c_contiguous else _contiguous(x)
    if case == 0:
        res = _empty(x.shape, x.dtype)
        if wait:
            if direct:
                g.comm.Sendrecv(buf, dst, _TAG, res, src, _TAG)
            else:
                g.comm.Sendrecv(_bytes(buf), dst, _TAG, _bytes(res), src, _TAG)
            return res
        sb, rb = (buf, res) if direct else (_bytes(buf), _bytes(res))
        return Handle([g.comm.Isend(sb, dst, _TAG), g.comm.Irecv(rb, src, _TAG)], res, None, buf)
    res = buf.copy()
    if case == 2 or dst == _PROC_NULL:  # 2: offset a multiple of the axis size with rotate
        return _finish(res, wait)
    sb = buf if direct else _bytes(buf)
    if wait:
        g.comm.Sendrecv(sb, dst, _TAG, None, src, _TAG)
        return res
    return Handle([g.comm.Isend(sb, dst, _TAG)], res, None, buf)


# -- the public names: compiled fronts over the Python implementations above -----------
# Each runs a call planned before in C (`meshrt._collfront`) and hands every other call
# to the Python implementation, which plans it and raises every error.
_PYTHON = {"all_reduce": _all_reduce, "reduce": _reduce, "reduce_scatter": _reduce_scatter, "broadcast": _broadcast,
           "all_gather": _all_gather, "gather": _gather, "scatter": _scatter, "all_to_all": _all_to_all,
           "all_slice": _all_slice, "shift": _shift, "send": _send, "recv": _recv}
_collfront.install(_fast, _groups, _DIRECT_DTYPES, _PYTHON, CHECK)
from ._collfront import (  # noqa: E402  (the fronts need the implementations above)
    all_gather, all_reduce, all_slice, all_to_all, broadcast, gather, recv, reduce, reduce_scatter, scatter, send,
    shift,
)

for _name, _impl in _PYTHON.items():
    _public = getattr(_collfront, _name)
    _public.__doc__, _public.__module__ = _impl.__doc__, __name__
del _name, _impl, _public


# -- index ops -------------------------------------------------------------------------
def process_linear_index(mesh) -> int:
    """This process's linear device index.

    Parameters
    ----------
    mesh : Mesh
        The mesh bound to the communicator.

    Returns
    -------
    int
        The row-major linear index of this process's device (``mesh.rank``).

    Raises
    ------
    CollectiveError
        ``mesh`` is not a `Mesh` (an `AbstractMesh` has no process).

    See Also
    --------
    process_multi_index, Mesh.rank

    Examples
    --------
    >>> process_linear_index(Mesh((-1,)))
    0
    """
    if not isinstance(mesh, Mesh):
        raise CollectiveError(f"process_linear_index: {mesh!r} is not a Mesh; an AbstractMesh has no process")
    return mesh.rank


def process_multi_index(mesh, axes=None) -> tuple:
    """This process's coordinates over ``axes`` (None = all).

    Parameters
    ----------
    mesh : Mesh
        The mesh bound to the communicator.
    axes : sequence of int or str, optional
        The mesh axes whose coordinates are returned, in this order (None = all).

    Returns
    -------
    tuple of int
        One coordinate per axis.

    Raises
    ------
    CollectiveError
        ``mesh`` is not a `Mesh` (an `AbstractMesh` has no process).
    MeshError
        ``axes`` names an axis the mesh does not have.

    See Also
    --------
    process_linear_index, Mesh.coords

    Examples
    --------
    >>> mesh = Mesh((1, -1), ("x", "y"))
    >>> process_multi_index(mesh), process_multi_index(mesh, ["y"])
    ((0, 0), (0,))
    """
    if not isinstance(mesh, Mesh):
        raise CollectiveError(f"process_multi_index: {mesh!r} is not a Mesh; an AbstractMesh has no process")
    return tuple(mesh.coords[a] for a in mesh.axes(axes, field="axes"))


def mesh_shape(mesh, axes=None) -> tuple:
    """Sizes of the mesh ``axes`` (None = all).

    Parameters
    ----------
    mesh : AbstractMesh
        Any mesh (no process needed).
    axes : sequence of int or str, optional
        The mesh axes, in the order wanted (None = all).

    Returns
    -------
    tuple of int
        One size per axis.

    Raises
    ------
    MeshError
        ``axes`` names an axis the mesh does not have, or repeats one.

    Examples
    --------
    >>> from meshrt import AbstractMesh
    >>> m = AbstractMesh((2, 3, 4), ("x", "y", "z"))
    >>> mesh_shape(m), mesh_shape(m, ["z", "x"])
    ((2, 3, 4), (4, 2))
    """
    return tuple(mesh.shape[a] for a in mesh.axes(axes, field="axes"))


def neighbors_linear_indices(mesh, device, split_axes) -> tuple:
    """``(down, up)`` linear indices of ``device``'s neighbours along ``split_axes``.

    The neighbours are the previous and next device along the linearized
    ``split_axes`` (first listed axis outermost); ``-1`` where there is none.

    Parameters
    ----------
    mesh : AbstractMesh
        Any mesh (no process needed).
    device : int or tuple of int
        The device, as a linear index or mesh coordinates (on a `Mesh`, None
        means this process's device).
    split_axes : sequence of int or str
        The mesh axes along which neighbours are counted.

    Returns
    -------
    tuple of int
        ``(down, up)``.

    Raises
    ------
    MeshError
        An unknown axis or a device outside the mesh.

    See Also
    --------
    AbstractMesh.neighbors, shift

    Examples
    --------
    >>> from meshrt import AbstractMesh
    >>> m = AbstractMesh((10, 20, 30))
    >>> neighbors_linear_indices(m, (1, 2, 3), [1])
    (633, 693)
    >>> neighbors_linear_indices(m, (0, 0, 0), [0])
    (-1, 600)
    """
    return mesh.neighbors(split_axes, device)


def shard_shape(shape, sharding, device=None) -> tuple:
    """Shape of ``device``'s shard of a tensor of ``shape`` (default: this process's).

    Parameters
    ----------
    shape : sequence of int
        The tensor's global shape.
    sharding : Sharding
        How the tensor is sharded.
    device : int or tuple of int, optional
        The device (linear index or coordinates); required on an `AbstractMesh`,
        default this process's device on a `Mesh`.

    Returns
    -------
    tuple of int
        The shard's shape (halos not included).

    Raises
    ------
    ShardingError
        ``shape`` does not fit the sharding.
    MeshError
        No device given on an `AbstractMesh`, or a device outside the mesh.

    See Also
    --------
    Sharding.shard_shape, Sharding.local_shape

    Examples
    --------
    Uneven sizes follow MLIR's rule, extra elements on the trailing shards:

    >>> from meshrt import AbstractMesh, Sharding
    >>> s = Sharding(AbstractMesh((4,)), [[0]])
    >>> [shard_shape((10, 3), s, device=d) for d in range(4)]
    [(2, 3), (2, 3), (3, 3), (3, 3)]
    """
    return sharding.shard_shape(shape, device)
