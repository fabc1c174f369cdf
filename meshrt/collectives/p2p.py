"""Point to point between the devices of a group, in Python: `_send`, `_recv`, `_shift`.

``collectives/__init__.py`` makes the public ``send``, ``recv`` and ``shift`` from them (compiled fronts that
hand every call they have not planned to these), and copies their docstrings.
"""

from __future__ import annotations

import math

import numpy as np
from mpi4py import MPI

from ..runtime import check as _settings
from .. import _collfront
from .common import (
    _DIRECT_DTYPES, _PROC_NULL, _array, _bytes, _check, _contiguous, _empty, _fast, _finish, _group, _into,
    _ndarray, _receiver, _remember, _result, _root,
)
from .._collfront import Handle
from ..errors import CollectiveError, MeshError


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


def _shift(x, mesh, mesh_axes=None, shift_axis=0, offset=1, rotate=False, *, out=None, wait=True):
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
    out : numpy.ndarray, optional
        A C-contiguous writeable array of ``x``'s shape and dtype that receives
        the result and is returned.  A device with no source gets a copy of its
        ``x`` in it (none when ``out`` is ``x``).
    wait : bool, optional
        False returns a `Handle`; its ``wait()`` returns the result.

    Returns
    -------
    numpy.ndarray or Handle
        ``out`` when given, else a new array: the source device's ``x``, or a
        copy of this device's ``x`` where there is no source.

    Raises
    ------
    CollectiveError
        ``x`` is not a numpy array, ``out`` does not fit, ``shift_axis`` is
        unknown or not among ``mesh_axes``, ``offset`` is not an int, ``mesh`` is
        not a `Mesh`, or (with ``MESHRT_CHECK=1``) the group's arguments
        disagree.
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
    >>> out = np.empty(2, int)
    >>> shift(np.array([1, 2]), mesh, ["x"], shift_axis="x", offset=1, out=out) is out
    True
    """
    if type(mesh_axes) is list:
        mesh_axes = tuple(mesh_axes)
    try:
        g, src, dst, rotate, direct, case = _fast["shift", id(mesh), mesh_axes, shift_axis, offset, rotate, x.dtype]
        if g.live is not mesh._groups or not isinstance(x, _ndarray):
            raise KeyError
    except (KeyError, TypeError, AttributeError):
        g, src, dst, rotate, direct, case = _shift_setup(x, mesh, mesh_axes, shift_axis, offset, rotate)
    if out is not None:
        _result(out, x.shape, x.dtype, "shift")
    if _settings.CHECK:
        _check(g, "shift", (shift_axis, offset, rotate), x)
    buf = x if x.flags.c_contiguous else _contiguous(x)
    if case == 0:
        res = _receiver(out, buf, x.shape, x.dtype)
        post = (lambda r: _into(out, r)) if res is not out and out is not None else None
        if wait:
            if direct:
                g.comm.Sendrecv(buf, dst, _TAG, res, src, _TAG)
            else:
                g.comm.Sendrecv(_bytes(buf), dst, _TAG, _bytes(res), src, _TAG)
            return post(res) if post else res
        sb, rb = (buf, res) if direct else (_bytes(buf), _bytes(res))
        return Handle([g.comm.Isend(sb, dst, _TAG), g.comm.Irecv(rb, src, _TAG)], res, post, buf)
    res = buf.copy() if out is None else _into(out, buf)  # no source: the result equals x
    if case == 2 or dst == _PROC_NULL:  # 2: offset a multiple of the axis size with rotate
        return _finish(res, wait)
    sb = buf if direct else _bytes(buf)
    if wait:
        g.comm.Sendrecv(sb, dst, _TAG, None, src, _TAG)
        return res
    return Handle([g.comm.Isend(sb, dst, _TAG)], res, None, buf)

