"""The data-moving collectives, in Python: `_all_gather`, `_gather`, `_broadcast`, `_scatter`,
`_all_to_all` and `_all_slice` (no communication), with their layouts.

``collectives/__init__.py`` makes the public names from them (compiled fronts that hand every call they have
not planned to these), and copies their docstrings.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..runtime import check as _settings
from .common import (
    _BYTE, _DIRECT_DTYPES, _array, _axis, _back, _back_into, _bytes, _check, _contiguous, _empty, _fast, _finish,
    _front, _group, _into, _ndarray, _receiver, _remember, _result, _root,
)
from .._collfront import Group, Handle
from ..errors import CollectiveError
from ..mesh import Mesh
from ..sharding.spec import split_offsets, split_sizes


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
    if out is not None and (r is None or r == g.rank):  # where out is used, checked before communicating
        _gathered_out(g, op, x, axis, sizes, out)
    if _settings.CHECK:
        _gather_check(g, op, axis, r, x, sizes)
    if g.size == 1:
        return g, r, None
    layout = _cached_layout(g, op, x, axis, x.shape[axis] if sizes is None else sizes)
    ts = type(sizes)
    if type(gather_axis) is int and (ts is int or ts is tuple or ts is list or sizes is None):
        _remember((op, id(mesh), mesh_axes, x.shape, x.dtype, gather_axis, root,
                   tuple(sizes) if ts is list else sizes), (g, r, layout))
    return g, r, layout


def _gathered_out(g, op, x, axis, sizes, out):
    """Check that ``out`` can take the gathered array (`_result`).  Bad ``sizes`` are left to the
    caller, which raises them after the agreement check (on every process alike)."""
    if g.size == 1:
        shape = x.shape
    else:
        try:
            shape = _cached_layout(g, op, x, axis, x.shape[axis] if sizes is None else sizes)[5]
        except CollectiveError:
            return
    _result(out, shape, x.dtype, op)


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
        if _settings.CHECK:
            _gather_check(g, "all_gather", layout[0], None, x, sizes)
    axis, counts, displs, equal, shape, oshape, direct = layout
    if axis == 0:
        send = x if x.flags.c_contiguous else _contiguous(x)
        if out is not None:
            _result(out, oshape, x.dtype, "all_gather")
        buf = _receiver(out, send, shape, x.dtype)  # not out itself where out overlaps x (MPI forbids it)
        post = (lambda b: _into(out, b)) if buf is not out and out is not None else None
    else:  # the pieces arrive one after another, each in x's own layout, and are concatenated once
        send = x if x.flags.c_contiguous else _contiguous(x)
        if out is not None:
            _result(out, oshape, x.dtype, "all_gather")
        buf = _empty(sum(counts) // x.itemsize, x.dtype)

        def post(b):
            return _concatenate_pieces(b, x, axis, counts, displs, oshape, out)

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


def _concatenate_pieces(buf, x, axis, counts, displs, oshape, out):
    """The gathered pieces, each C-ordered in ``x``'s layout at its byte displacement in the flat
    ``buf``, concatenated along ``axis`` into ``out`` (or a new array): one copy, and no
    temporary the size of the result beside ``buf``.

    >>> x = np.zeros((2, 1), int)
    >>> _concatenate_pieces(np.arange(6), x, 1, [16, 32], [0, 16], (2, 3), None)
    array([[0, 2, 3],
           [1, 4, 5]])
    """
    res = _empty(oshape, x.dtype) if out is None else out
    inner = math.prod(x.shape[:axis] + x.shape[axis + 1:]) * x.itemsize
    if inner == 0 or res.size == 0:
        return res
    pieces = []
    for c, d in zip(counts, displs):
        shape = x.shape[:axis] + (c // inner,) + x.shape[axis + 1:]
        pieces.append(buf[d // x.itemsize:(d + c) // x.itemsize].reshape(shape))
    return np.concatenate(pieces, axis=axis, out=res)


def _gather(x, mesh, mesh_axes=None, gather_axis=0, root=0, *, sizes=None, out=None, wait=True):
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
    out : numpy.ndarray, optional
        On ``root``: a C-contiguous writeable array of the result's shape and
        ``x``'s dtype that receives the result and is returned.  Ignored on the
        other devices (it may be None or anything there; they return None).
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or None or Handle
        The concatenated array on ``root`` (``out`` when given), None elsewhere.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``out`` does not fit (on ``root``),
        ``gather_axis`` is out of range, ``sizes`` does not fit, ``mesh`` is not
        a `Mesh`, or (with ``MESHRT_CHECK=1``) the group's arguments disagree.
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
    >>> out = np.zeros((1, 2), int)
    >>> gather(np.array([[1, 2]]), mesh, ["x"], gather_axis=0, root=0, out=out) is out
    True
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
        g, r, layout = _gather_setup("gather", x, mesh, mesh_axes, gather_axis, root, sizes, out)
        if layout is None:  # a group of one: this device is the root
            return _finish(_into(out, x), wait)
    else:
        if out is not None and g.rank == r:  # checked before communicating
            _result(out, layout[5], x.dtype, "gather")
        if _settings.CHECK:
            _gather_check(g, "gather", layout[0], r, x, sizes)
    axis, counts, displs, equal, shape, oshape, direct = layout
    me = g.rank == r
    if not me:
        out = None  # the result exists on the root only
    send = x if x.flags.c_contiguous else _contiguous(x)
    if axis == 0:
        buf = _receiver(out, send, shape, x.dtype) if me else None
        post = (lambda b: _into(out, b)) if buf is not out and out is not None else None
    else:  # as in all_gather: the pieces in x's own layout, concatenated once on the root
        post = (lambda b: _concatenate_pieces(b, x, axis, counts, displs, oshape, out)) if me else None
        buf = _empty((sum(counts) // x.itemsize,), x.dtype) if me else None
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


def _broadcast(x, mesh, mesh_axes=None, root=0, *, out=None, wait=True):
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
    out : numpy.ndarray, optional
        A C-contiguous writeable array of ``x``'s shape and dtype that gets
        ``root``'s data and is returned, on every device: received into it
        elsewhere, a copy of ``x`` on the root (none when ``out`` is ``x``).
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        ``root``'s data: ``out`` when given; else ``x`` itself on the root, a
        new array elsewhere.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``out`` does not fit, ``mesh`` is not a
        `Mesh`, or (with ``MESHRT_CHECK=1``) the group's arguments disagree.
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
    >>> out = np.empty(2)
    >>> broadcast(x, mesh, ["x"], root=0, out=out) is out, out
    (True, array([1.5, 2.5]))
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
    if out is not None:
        _result(out, x.shape, x.dtype, "broadcast")
    if _settings.CHECK:
        _check(g, "broadcast", (r,), x)
    if g.size == 1:
        return _finish(_into(out, x), wait)
    if g.rank != r:
        buf = _empty(x.shape, x.dtype) if out is None else out  # x's values are not read here
    elif out is None:
        buf = x if x.flags.c_contiguous else _contiguous(x)
    else:  # the root sends from out, a copy of x
        buf = _into(out, x)
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
    if _settings.CHECK:
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


def _scatter(x, mesh, mesh_axes=None, scatter_axis=0, root=0, *, out=None, wait=True):
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
    out : numpy.ndarray, optional
        A C-contiguous writeable array of this device's piece's shape and
        ``x``'s dtype that receives the piece and is returned.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        This device's piece (``out`` when given; ``x`` itself for a group of
        one without ``out``).

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``out`` does not fit, ``scatter_axis`` is
        out of range, ``mesh`` is not a `Mesh`, or (with ``MESHRT_CHECK=1``) the
        group's arguments disagree.
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
    >>> out = np.empty(4, int)
    >>> scatter(np.arange(4), mesh, ["x"], scatter_axis=0, root=0, out=out) is out
    True
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
        if layout is None:  # a group of one
            if out is not None:
                _result(out, x.shape, x.dtype, "scatter")
            return _finish(_into(out, x), wait)
    else:
        if _settings.CHECK:
            _check(g, "scatter", (layout[0], r), x)
    axis, bshape, count, counts, displs, direct = layout
    if out is not None:
        _result(out, x.shape[:axis] + bshape[:1] + x.shape[axis + 1:], x.dtype, "scatter")
    me = g.rank == r
    if not me:
        send = None
    elif axis == 0:
        send = x if x.flags.c_contiguous else _contiguous(x)
    else:
        send = _front(x, axis)
    if axis:
        buf = _empty(bshape, x.dtype)
        post = (lambda b: _back(b, axis)) if out is None else (lambda b: _back_into(out, b, axis))
    else:
        buf = _receiver(out, send, bshape, x.dtype)
        post = (lambda b: _into(out, b)) if buf is not out and out is not None else None
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
    if _settings.CHECK:
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


def _all_to_all(x, mesh, mesh_axes=None, split_axis=0, concat_axis=0, *, out=None, wait=True):
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
    out : numpy.ndarray, optional
        A C-contiguous writeable array of the result's shape and ``x``'s dtype
        that receives the joined pieces and is returned.
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        The joined pieces (``out`` when given; ``x`` itself for a group of one
        without ``out``).

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``out`` does not fit, an axis is out of
        range, ``mesh`` is not a `Mesh`, or (with ``MESHRT_CHECK=1``) the
        group's arguments disagree.
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
    >>> out = np.empty((2, 3), int)
    >>> all_to_all(np.arange(6).reshape(2, 3), mesh, ["x"], 1, 0, out=out) is out
    True
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
        if layout is None:  # a group of one
            if out is not None:
                _result(out, x.shape, x.dtype, "all_to_all")
            return _finish(_into(out, x), wait)
    else:
        if _settings.CHECK:
            _check(g, "all_to_all", (layout[0], layout[1]), x)
    sa, ca, bshape, bview, count, v, direct = layout
    if out is not None:
        _result(out, _a2a_shape(x.shape, sa, ca, bview[0], bview[1]), x.dtype, "all_to_all")
    if sa == 0:
        send = x if x.flags.c_contiguous else _contiguous(x)
    else:
        send = _contiguous(np.moveaxis(x, sa, 0))
    if sa == 0 and ca == 0:
        buf = _receiver(out, send, bshape, x.dtype)
        post = (lambda b: _into(out, b)) if buf is not out and out is not None else None
    else:
        buf = _empty(bshape, x.dtype)

        def post(b):
            blocks = b.reshape(bview)
            # block i in x's axis order: move its front axis back to sa, then join along ca
            return np.concatenate([np.moveaxis(blocks[i], 0, sa) for i in range(bview[0])], axis=ca, out=out)

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


def _a2a_shape(shape: tuple, sa: int, ca: int, n: int, mine: int) -> tuple:
    """The shape of `all_to_all`'s result on a device whose piece along ``sa`` has ``mine`` elements:
    ``n`` such pieces joined along ``ca``.

    >>> _a2a_shape((4, 3), 0, 1, 2, 2), _a2a_shape((5, 3), 0, 0, 2, 3)
    ((2, 6), (6, 3))
    """
    res = list(shape)
    res[sa] = mine
    res[ca] *= n
    return tuple(res)


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

