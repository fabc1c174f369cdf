"""The numpy functions a `DistributedTensor` supports beyond ufuncs and reductions: layout
(``transpose``, ``moveaxis``, ``reshape``, ``concatenate``, ``stack``), ``*_like`` constructors,
``where``, ``clip``, ``allclose``, ``array_equal``, ``linalg.norm``, ``cumsum``.

Each is registered with `implements`; importing meshrt imports this module.
"""

from __future__ import annotations

import numbers

import numpy as np

from .. import collectives
from ..errors import ShardingError
from .distributed_tensor import DistributedTensor
from .dispatch import implements
from .layout import _axes_tuple, _from_dims, _per_dim


# -- numpy functions -------------------------------------------------------------------------------
def _only(name, kwargs, allowed=()):
    bad = sorted(k for k, v in kwargs.items() if k not in allowed and v is not None)
    if bad:
        raise TypeError(f"{name} on a DistributedTensor: unsupported argument(s) {bad}")


def _tensor(name, x) -> "DistributedTensor":
    if not isinstance(x, DistributedTensor):
        raise TypeError(f"{name}: expected a DistributedTensor, got {type(x).__name__}")
    return x


@implements(np.transpose)
def _np_transpose(a, axes=None):
    return _tensor("np.transpose", a).transpose(axes)


@implements(np.moveaxis)
def _np_moveaxis(a, source, destination):
    a = _tensor("np.moveaxis", a)
    src = _axes_tuple(source, a.ndim, "source")
    dst = _axes_tuple(destination, a.ndim, "destination")
    if len(src) != len(dst):
        raise ValueError("`source` and `destination` arguments must have the same number of elements")
    order = [n for n in range(a.ndim) if n not in src]
    for d, s_ in sorted(zip(dst, src)):
        order.insert(d, s_)
    return a.transpose(order)


@implements(np.swapaxes)
def _np_swapaxes(a, axis1, axis2):
    a = _tensor("np.swapaxes", a)
    i, j = _axes_tuple(axis1, a.ndim, "axis1")[0], _axes_tuple(axis2, a.ndim, "axis2")[0]
    perm = list(range(a.ndim))
    perm[i], perm[j] = j, i
    return a.transpose(perm)


@implements(np.reshape)
def _np_reshape(a, shape=None, order="C", *, newshape=None, copy=None):
    if order != "C":
        raise TypeError(f"np.reshape on a DistributedTensor: order={order!r}; only 'C' is supported")
    return _tensor("np.reshape", a).reshape(shape if shape is not None else newshape)


@implements(np.copy)
def _np_copy(a, order="K", subok=False):
    return _tensor("np.copy", a).copy()


@implements(np.astype)
def _np_astype(x, dtype, /, *, copy=True, device=None):
    return _tensor("np.astype", x).astype(dtype)


def _new_like(name, a, dtype, shape, value):
    a = _tensor(f"np.{name}", a)
    if shape is not None and tuple(np.atleast_1d(shape)) != a.shape:
        raise TypeError(f"np.{name} on a DistributedTensor: shape= must be the tensor's shape {a.shape}, got {shape}")
    s = a.sharding.replace(partial_axes=()) if a.sharding.is_partial else a.sharding
    out = DistributedTensor.empty(a.shape, s, a.dtype if dtype is None else np.dtype(dtype), periodic=a.periodic)
    if value is not None:
        out.interior[...] = value
    return out


@implements(np.empty_like)
def _np_empty_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _new_like("empty_like", a, dtype, shape, None)


@implements(np.zeros_like)
def _np_zeros_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _new_like("zeros_like", a, dtype, shape, 0)


@implements(np.ones_like)
def _np_ones_like(a, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _new_like("ones_like", a, dtype, shape, 1)


@implements(np.full_like)
def _np_full_like(a, fill_value, dtype=None, order="K", subok=True, shape=None, *, device=None):
    return _new_like("full_like", a, dtype, shape, fill_value)


def _align(name, operands):
    """The DistributedTensors among ``operands`` laid out like the first one (resharded if they differ);
    numpy arrays of more than 0 dims are refused as ambiguous."""
    ref = next((x for x in operands if isinstance(x, DistributedTensor)), None)
    out = []
    for i, x in enumerate(operands):
        if isinstance(x, DistributedTensor):
            if x.mesh != ref.mesh:
                raise ShardingError(f"{name}: operand {i} is on mesh {x.mesh!r}, operand 0 on {ref.mesh!r}")
            if x.shape != ref.shape:
                raise ShardingError(f"{name}: operand {i} has global shape {x.shape}, another {ref.shape}; "
                                    "tensors must have one shape (no broadcasting between tensors)")
            if x.sharding != ref.sharding:
                x = x.reshard(ref.sharding)
            out.append(x)
        elif isinstance(x, np.ndarray) and x.ndim > 0:
            raise ShardingError(f"{name}: operand {i} is a numpy array of shape {x.shape} beside a DistributedTensor; "
                                "wrap it with DistributedTensor.from_global")
        else:
            out.append(x)
    return ref, out


@implements(np.where)
def _np_where(condition, x=None, y=None):
    if x is None or y is None:
        raise TypeError("np.where on a DistributedTensor needs both x and y, or neither (then it is np.nonzero)")
    ref, (c, x, y) = _align("np.where", [condition, x, y])
    if ref.sharding.is_partial:
        raise ShardingError("np.where: an operand is partial; reshard it to a non-partial sharding first")
    res = np.where(*(v._interior if isinstance(v, DistributedTensor) else v for v in (c, x, y)))
    out = DistributedTensor.empty(ref.shape, ref.sharding, res.dtype, periodic=ref.periodic)
    out._interior[...] = res
    return out


@implements(np.clip)
def _np_clip(a, a_min=None, a_max=None, out=None, **kwargs):
    _only("np.clip", kwargs)
    ref, (a, lo, hi) = _align("np.clip", [a, a_min, a_max])
    if ref.sharding.is_partial:
        raise ShardingError("np.clip: the tensor is partial; reshard it to a non-partial sharding first")
    ops = [v._interior if isinstance(v, DistributedTensor) else v for v in (a, lo, hi)]
    res = np.clip(*ops)
    if out is not None:
        out = _tensor("np.clip out", out)
        if out.sharding != ref.sharding or out.shape != ref.shape:
            raise ShardingError(f"np.clip: out has sharding <{out.sharding}>, the input <{ref.sharding}>")
        out._interior[...] = res
        return out
    new = DistributedTensor.empty(ref.shape, ref.sharding, res.dtype, periodic=ref.periodic)
    new._interior[...] = res
    return new


def _all_true(flag: bool, t: "DistributedTensor") -> bool:
    """Whether ``flag`` holds on every process of ``t``'s mesh (replicas hold the same blocks)."""
    return bool(collectives.all_reduce(np.array([int(flag)], np.int32), t.mesh, None, reduction="min")[0])


@implements(np.allclose)
def _np_allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    ref, (a, b) = _align("np.allclose", [a, b])
    blocks = [v._full_interior() if isinstance(v, DistributedTensor) else v for v in (a, b)]
    return _all_true(bool(np.allclose(*blocks, rtol=rtol, atol=atol, equal_nan=equal_nan)), ref)


@implements(np.array_equal)
def _np_array_equal(a1, a2, equal_nan=False):
    if not (isinstance(a1, DistributedTensor) and isinstance(a2, DistributedTensor)):
        raise TypeError("np.array_equal on a DistributedTensor: both operands must be DistributedTensors")
    if a1.shape != a2.shape:
        return False
    ref, (a, b) = _align("np.array_equal", [a1, a2])
    return _all_true(bool(np.array_equal(a._full_interior(), b._full_interior(), equal_nan=equal_nan)), ref)


# the matrix norms of a 2-D tensor (``np.linalg.norm(x, ord)``, ord not None/'fro'): set by
# meshrt.linalg.numpy_linalg, a layer above (2, -2 and 'nuc' need the SVD)
MATRIX_NORM = None


@implements(np.linalg.norm)
def _np_norm(x, ord=None, axis=None, keepdims=False):
    x = _tensor("np.linalg.norm", x)
    if keepdims:
        raise TypeError("np.linalg.norm on a DistributedTensor: keepdims=True is not supported")
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    vector = axis is not None or x.ndim == 1
    if axis is None and x.ndim == 2 and ord not in (None, "fro"):
        return MATRIX_NORM(x, ord)
    if axis is None and x.ndim > 2 and ord not in (None, "fro"):
        raise TypeError(f"np.linalg.norm on a DistributedTensor: ord={ord!r} with axis=None on {x.ndim} dims; "
                        "supported: None/'fro' (Frobenius), a matrix norm of a 2-D tensor, or a vector norm "
                        "with axis=k")
    if axis is not None and not isinstance(axis, numbers.Integral):
        raise TypeError(f"np.linalg.norm on a DistributedTensor: axis={axis!r}; supported: None or one int")
    if x.ndim == 1 and (ord is None or ord == 2) and x.dtype.kind in "fc":  # numpy's own: sqrt(dot(x, x))
        if x.dtype.kind == "c":
            return np.sqrt(np.vdot(x, x).real)
        return np.sqrt(np.dot(x, x))
    if not vector or ord is None or ord == 2:
        a = abs(x)
        return np.sqrt((a * a).sum(axis))
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    a = abs(x)
    if a.dtype.kind in "biu":
        a = a.astype(np.float64)
    if ord == np.inf:
        return a.max(axis)
    if ord == -np.inf:
        return a.min(axis)
    if ord == 0:
        return (a != 0).astype(a.dtype).sum(axis)
    if ord == 1:
        return a.sum(axis)
    return ((a ** ord).sum(axis)) ** (1.0 / ord)


@implements(np.cumsum)
def _np_cumsum(a, axis=None, dtype=None, out=None):
    a = _tensor("np.cumsum", a)
    if out is not None:
        raise TypeError("np.cumsum on a DistributedTensor: out= is not supported")
    return a.cumsum(axis, dtype)


@implements(np.concatenate)
def _np_concatenate(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    if out is not None:
        raise TypeError("np.concatenate on a DistributedTensor: out= is not supported")
    arrays = [_tensor("np.concatenate", x) for x in arrays]
    ref = arrays[0]
    if axis is None:
        arrays, axis = [x.reshape(-1) for x in arrays], 0
    axis = _axes_tuple(axis, ref.ndim, "axis")[0]
    for i, x in enumerate(arrays):
        if x.mesh != ref.mesh or x.ndim != ref.ndim or x.shape[:axis] + x.shape[axis + 1:] != \
                ref.shape[:axis] + ref.shape[axis + 1:]:
            raise ValueError(f"np.concatenate: array {i} has shape {x.shape} (mesh {x.mesh!r}); all dims but "
                             f"axis {axis} must match array 0's {ref.shape} on one mesh")
    # The result is split like array 0; along ``axis`` each piece is gathered (a reshard), joined, and split
    # again along the same mesh axes (a local slice).
    s = ref.sharding
    dims = [(a, None, (0, 0)) for a, _, _ in _per_dim(s, ref.shape)]
    axes = dims[axis][0]
    dims[axis] = ((), None, (0, 0))
    ops = [x.reshard(_from_dims(s.replace(partial_axes=()), dims, x.shape, keep_halos=False)) for x in arrays]
    parts = [x._interior for x in ops]
    dt = dtype if dtype is not None else np.result_type(*parts)
    block = np.concatenate(parts, axis=axis, dtype=dt, casting=casting)
    shape = ref.shape[:axis] + (sum(x.shape[axis] for x in arrays),) + ref.shape[axis + 1:]
    joined = DistributedTensor(block, ops[0].sharding, shape)
    if axes:
        dims[axis] = (axes, None, (0, 0))
        joined = joined.reshard(_from_dims(ops[0].sharding, dims, shape, keep_halos=False))
    return joined


@implements(np.stack)
def _np_stack(arrays, axis=0, out=None, *, dtype=None, casting="same_kind"):
    arrays = [_tensor("np.stack", x) for x in arrays]
    if not arrays:
        raise ValueError("need at least one array to stack")
    axis = _axes_tuple(axis, arrays[0].ndim + 1, "axis")[0]
    shapes = {x.shape for x in arrays}
    if len(shapes) != 1:
        raise ValueError(f"all input arrays must have the same shape, got {sorted(shapes)}")
    key = (slice(None),) * axis + (None,)
    return _np_concatenate([x[key] for x in arrays], axis=axis, out=out, dtype=dtype, casting=casting)
