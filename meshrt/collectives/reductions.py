"""The reductions of the collectives, in Python: `_all_reduce`, `_reduce`, `_reduce_scatter`.

``collectives/__init__.py`` makes the public ``all_reduce``, ``reduce`` and ``reduce_scatter`` from them
(compiled fronts that hand every call they have not planned to these), and copies their docstrings.
"""

from __future__ import annotations

import math

import numpy as np

from ..runtime import check as _settings
from .common import (
    _array, _axis, _back, _check, _contiguous, _empty, _fast, _finish, _finish_average, _front, _group, _into,
    _ndarray, _receiver, _remember, _result, _root,
)
from .._collfront import Handle
from ..runtime.mpi import reduce_plan
from ..sharding.spec import split_sizes


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
    if _settings.CHECK:
        _check(g, "all_reduce", (str(plan.kind), pd.str), x)
    if out is not None:
        _result(out, x.shape, pd, "all_reduce")
    if g.size == 1:
        res = _empty(x.shape, pd) if out is None else out
        res[...] = send
        return _finish(res, wait)
    res = _receiver(out, send, x.shape, pd)  # not out itself where out overlaps x (MPI forbids it)
    if plan.direct:
        sb, rb = send, res
    else:
        sb, rb = [send, plan.datatype], [res, plan.datatype]
    avg = _finish_average(plan, g.size) if plan.average else None
    post = avg if res is out or out is None else (lambda r: _into(out, avg(r) if avg else r))
    if wait:
        g.comm.Allreduce(sb, rb, plan.op)
        return post(res) if post else res
    req = g.comm.Iallreduce(sb, rb, plan.op)
    return Handle(req, res, post, send)


def _reduce(x, mesh, mesh_axes=None, reduction="sum", root=0, dtype=None, *, out=None, wait=True):
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
    out : numpy.ndarray, optional
        On ``root``: a C-contiguous writeable array of ``x``'s shape and the
        result's dtype that receives the result and is returned.  Ignored on
        the other devices (it may be None or anything there; they return None).
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or None or Handle
        The reduced array on ``root`` (``out`` when given), None on the other
        devices.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``out`` does not fit (on ``root``), the
        reduction is unknown, ``mesh`` is not a `Mesh`, or (with
        ``MESHRT_CHECK=1``) the group's arguments disagree.
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
    >>> out = np.empty(2)
    >>> reduce(np.array([4, 5]), mesh, ["x"], "max", root=0, dtype=np.float64, out=out) is out
    True
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
    me = g.rank == r
    if me and out is not None:  # the result exists on the root only: out is checked (and used) there
        _result(out, x.shape, pd, "reduce")
    send = x if same and x.flags.c_contiguous else _contiguous(x, dtype=pd)
    if _settings.CHECK:
        _check(g, "reduce", (str(plan.kind), pd.str, r), x)
    if g.size == 1:
        if out is None:
            return _finish(np.array(send, dtype=pd, copy=True), wait)
        out[...] = send
        return _finish(out, wait)
    res = _receiver(out, send, x.shape, pd) if me else None
    if plan.direct:
        sb, rb = send, res
    else:
        dt = plan.datatype
        sb, rb = [send, dt], ([res, dt] if me else None)
    post = _finish_average(plan, g.size) if plan.average and me else None
    if me and out is not None and res is not out:  # out overlaps x: received beside it, then copied
        avg = post

        def post(r):
            return _into(out, avg(r) if avg else r)
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
    if _settings.CHECK:
        _check(g, "reduce_scatter", (str(plan.kind), pd.str, axis), x)
    n = g.size
    if axis == 0:
        send = x if same and x.flags.c_contiguous else _contiguous(x, dtype=pd)
        if out is not None:
            _result(out, rshape, pd, "reduce_scatter")
        res = _receiver(out, send, rshape, pd)  # not out itself where out overlaps x (MPI forbids it)
        avg0 = _finish_average(plan, n) if plan.average else None
        post = avg0 if res is out or out is None else (lambda r: _into(out, avg0(r) if avg0 else r))
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

