"""Where a namespace array lives: the standard's ``device`` is a meshrt `Mesh`, ``device=`` a `Mesh` or `Sharding`.

Pure rules plus the two data moves every namespace function is built from: `local` (a tensor as one numpy
array on every process: its block when replicated, else an allgather) and `wrap` (a numpy result, the same on
every process, kept as a tensor: each process keeps its own block of it, no communication).

>>> from meshrt import Mesh
>>> s = sharding_for(2, Mesh((-1,)))
>>> s.split_axes
((0,),)
"""

from __future__ import annotations

import numpy as np

from ..errors import ShardingError
from ..mesh import Mesh
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor

__all__ = ["default_device", "set_default_device", "sharding_for", "mesh_of", "local", "wrap", "GATHERS"]

_DEFAULT = {"device": None}
_CACHE = {}

# what the namespace gathers (function -> the case), read by explain_op and listed in docs/array_api.md
GATHERS = {}


def default_device() -> Mesh:
    """The mesh new arrays go to when no ``device=`` is given: by default all processes of ``MPI.COMM_WORLD``
    as one axis (created on first use), or what `set_default_device` set."""
    d = _DEFAULT["device"]
    if d is None:
        d = _DEFAULT["device"] = Mesh((-1,))
    return d


def set_default_device(device) -> None:
    """Set the default ``device=`` of the namespace's creation functions: a `Mesh` (dim 0 split over all its
    axes), a `Sharding` (used as given), or None (back to the default, every process on one axis).

    Raises ValueError (the standard's error for a bad device) for anything else.
    """
    if device is not None and not isinstance(device, (Mesh, Sharding)):
        raise ValueError(f"device: expected a meshrt Mesh or Sharding (or None), got {device!r}")
    if isinstance(device, Sharding) and not isinstance(device.mesh, Mesh):
        raise ValueError(f"device: the sharding's mesh must be a Mesh, not {device.mesh!r}")
    _DEFAULT["device"] = device


def sharding_for(ndim: int, device=None) -> Sharding:
    """The sharding of a new ``ndim``-dim array on ``device`` (None: the default): dim 0 split over every
    axis of a mesh; a `Sharding` as given (replicated for a 0-d array, or when it splits dims the array
    lacks); 0-d arrays are always replicated."""
    if device is None:
        device = _DEFAULT["device"] or default_device()
    if isinstance(device, Sharding):
        s = device
        if ndim == 0 or any(s.split_axes[ndim:]) or (s.halo_sizes and len(s.split_axes) > ndim):
            return sharding_for(ndim, s.mesh)
        return s
    if not isinstance(device, Mesh):
        raise ValueError(f"device: expected a meshrt Mesh or Sharding, got {device!r}")
    key = (id(device), ndim)
    hit = _CACHE.get(key)
    if hit is None or hit[0] is not device:
        s = Sharding(device, [tuple(range(device.ndim))] if ndim else [])
        hit = _CACHE[key] = (device, s)
    return hit[1]


def replicated(ndim: int, mesh: Mesh) -> Sharding:
    key = (id(mesh), "r")
    hit = _CACHE.get(key)
    if hit is None or hit[0] is not mesh:
        hit = _CACHE[key] = (mesh, Sharding(mesh, []))
    return hit[1]


def mesh_of(*values):
    """The mesh of the first tensor among ``values`` (looking into lists and tuples), else the default's."""
    for v in values:
        if isinstance(v, DistributedTensor):
            return v.mesh
        if isinstance(v, (list, tuple)):
            m = mesh_of(*v)
            if m is not None:
                return m
    return None


def _device_mesh(device):
    if device is None:
        d = _DEFAULT["device"] or default_device()
        return d.mesh if isinstance(d, Sharding) else d
    return device.mesh if isinstance(device, Sharding) else device


def is_replicated(t: DistributedTensor) -> bool:
    s = t.sharding
    return not any(s.split_axes) and not s.is_partial


def local(x):
    """``x`` as a numpy array equal on every process (a tensor's global array; anything else unchanged)."""
    if isinstance(x, DistributedTensor):
        if is_replicated(x):
            return x.interior
        return x.gather()
    if isinstance(x, (list, tuple)):
        return type(x)(local(v) for v in x)
    return x


def wrap(r, mesh=None, *, replicate=False):
    """A numpy result computed alike on every process, as tensors (each process keeps its block);
    tuples and named tuples are wrapped field by field, Python scalars pass through."""
    if isinstance(r, DistributedTensor):
        return r
    if isinstance(r, tuple):
        vals = [wrap(v, mesh, replicate=replicate) for v in r]
        return type(r)(*vals) if hasattr(r, "_fields") else type(r)(vals)
    if isinstance(r, list):
        return [wrap(v, mesh, replicate=replicate) for v in r]
    if isinstance(r, (np.ndarray, np.generic)):
        a = np.asarray(r)
        mesh = mesh if mesh is not None else _device_mesh(None)
        s = replicated(0, mesh) if (replicate or a.ndim == 0) else sharding_for(a.ndim, mesh)
        return from_numpy(a, s)
    return r


def from_numpy(a: np.ndarray, s: Sharding) -> DistributedTensor:
    """Each process keeps its block of ``a`` (the same array everywhere): no communication."""
    if not any(s.split_axes) and not s.halo_sizes and not s.is_partial:
        block = np.array(a, order="C", copy=True)
        return DistributedTensor._fast(block, block, s, a.shape, tuple(slice(0, n) for n in a.shape), None)
    try:
        return DistributedTensor.from_global(np.ascontiguousarray(a), s)
    except ShardingError as e:
        raise ValueError(str(e)) from None
