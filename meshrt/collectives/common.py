"""What the collectives share: device groups (`_group`), argument checks and the cross-process check
(`_check`, on under ``MESHRT_CHECK=1`` or `set_check`), result buffers, and the plan cache `_fast`.

``_groups``, ``_digests`` and ``_fast`` live here and only here, and the package front
(``collectives/__init__.py``) hands the caches to the compiled fronts (``_collfront.install``).
The ``MESHRT_CHECK`` setting lives in `meshrt.runtime.check`: the modules of the collectives
(``reduce``, ``move``, ``p2p``) read it as ``_check.CHECK`` (`set_check` rebinds it).
"""

from __future__ import annotations

import hashlib
import os
import weakref

import numpy as np
from mpi4py import MPI

from .. import _collfront
from ..runtime.check import set_check  # noqa: F401  (the public switch, re-exported by the front)
from .._collfront import Group, done
from ..errors import CollectiveError
from ..mesh import Mesh


_BYTE = MPI.BYTE
_DIRECT = frozenset(c for c in MPI._typedict if c in "?bBhHiIlLqQfdFD")  # mpi4py infers these
# dtypes whose arrays mpi4py takes bare (it infers the datatype from the buffer
# format; non-native byte order is refused there, so such dtypes travel as bytes)
_DIRECT_DTYPES = frozenset(np.dtype(c) for c in _DIRECT)
_PROC_NULL = MPI.PROC_NULL
_empty, _contiguous, _ndarray = np.empty, np.ascontiguousarray, np.ndarray  # one global lookup on hot paths


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


def _receiver(out, send, shape, dtype):
    """The array an MPI call receives a result into: ``out`` itself, or a new array of ``shape``
    and ``dtype`` when there is no ``out`` or it may overlap the send buffer (MPI forbids that
    aliasing: the result is then copied into ``out`` with `_into` after the call)."""
    if out is None or (send is not None and np.may_share_memory(out, send)):
        return _empty(shape, dtype)
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


def _back_into(out: np.ndarray, buf: np.ndarray, axis: int) -> np.ndarray:
    """`_back` written into ``out`` (one copy, no temporary); returns ``out``."""
    np.copyto(out, np.moveaxis(buf, 0, axis))
    return out


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



# -- the plan cache ----------------------------------------------------------------
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

