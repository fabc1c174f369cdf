"""numpy reductions on DistributedTensors beyond one int axis: axis tuples, ``keepdims``,
``any/all``, ``count_nonzero``, the ``nan*`` family, ``var/std``, ``argmax/argmin``,
``average``, ``ufunc.reduce/accumulate``, and the elementwise ``np.isclose``.

Every reduction is local first (numpy over this process's interior), then one
all-reduce over the mesh axes that split the reduced dims; axes that split
only kept dims, or no dim, hold distinct blocks or replicas and are never
reduced over, so nothing is counted twice.  The result is a numpy scalar on
every process when every dim is reduced (``keepdims=False``), else a tensor
sharded like the input on its kept dims (a kept size-1 dim is not split).

    ========================  =============================================
    form                      communication
    ========================  =============================================
    sum/prod/max/min/any/all  one all-reduce of the kept block
    mean, nanmean, average    one all-reduce (sum); counts are global shapes
    nanmax/nanmin             two all-reduces (value, count of non-NaN)
    var/std                   two all-reduces (sums, then the Chan merge)
    argmax/argmin             two all-reduces (value, lowest global index)
    isclose                   none if the shardings agree, else a reshard
    ========================  =============================================

>>> # under mpiexec: np.var(t, axis=(0, 1), ddof=1) == np.var(t.gather(), axis=(0, 1), ddof=1)
"""

from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from .. import collectives
from ..errors import ShardingError
from .distributed_tensor import DistributedTensor
from .reductions import _accumulate
from .dispatch import implements
from .layout import _drop, _drop_dim, _from_dims, _per_dim
from .numpy_functions import _align
from .numpy_shifts import ufunc_outer
from .reductions import _ACCUMULATED, _acc_dtype, _combine, _identity, _kernel, _out_dtype

__all__ = ["reduce_tensor", "var", "argextreme", "UFUNC_REDUCTIONS"]

# op -> (MPI reduction kind, numpy reduce function)
_OPS = {
    "sum": ("sum", np.add.reduce), "prod": ("product", np.multiply.reduce),
    "max": ("max", np.maximum.reduce), "min": ("min", np.minimum.reduce),
    "any": ("max", np.logical_or.reduce), "all": ("min", np.logical_and.reduce),
}
# ufunc -> the reduction its .reduce is (np.add.reduce(t, axis) == np.sum(t, axis))
UFUNC_REDUCTIONS = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min",
                    np.logical_or: "any", np.logical_and: "all"}


def normalize_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, an int or a tuple of ints) as a sorted tuple of non-negative dims.

    >>> normalize_axes(None, 3), normalize_axes(-1, 3), normalize_axes((2, 0), 3)
    ((0, 1, 2), (2,), (0, 2))
    """
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in items:
        if isinstance(a, (bool, np.bool_)) or not isinstance(a, numbers.Integral):
            raise ShardingError(f"axis: {axis!r}; expected None, an int or a tuple of ints")
        if not -ndim <= a < ndim:
            raise ShardingError(f"axis: {a} is out of range for a tensor of {ndim} dims")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ShardingError(f"axis: {axis!r} repeats a dim")
    return tuple(sorted(out))


def _mesh_axes(t: DistributedTensor, dims) -> tuple:
    return tuple(sorted({a for d in dims for a in t.sharding.dim_axes(d)}))


def _finish(t: DistributedTensor, red, dims, keepdims: bool, dtype):
    """The reduced values ``red`` (this process's kept block, every process combined) as the result:
    a numpy scalar when nothing is kept, else a tensor over the kept dims (``keepdims``: size-1 dims)."""
    dtype = np.dtype(dtype)
    shape = t.shape
    if len(dims) == len(shape) and not keepdims:
        return dtype.type(np.asarray(red).reshape(()))
    s = t.sharding.replace(partial_axes=()) if t.sharding.is_partial else t.sharding
    periodic = t.periodic
    for d in sorted(dims, reverse=True):
        s = _drop_dim(s, d, (), "sum")
        periodic = _drop(periodic, d)
    kept_shape = tuple(n for d, n in enumerate(shape) if d not in dims)
    if keepdims:
        per = _per_dim(s, kept_shape)
        full, it = [], iter(per)
        for d in range(len(shape)):
            full.append(((), None, (0, 0)) if d in dims else next(it))
        kept_shape = tuple(1 if d in dims else n for d, n in enumerate(shape))
        s = _from_dims(s, full, kept_shape)
        periodic = None if periodic is None else _insert(periodic, dims)
        red = np.expand_dims(red, dims)
    out = DistributedTensor.empty(kept_shape, s, dtype, periodic=periodic)
    out._interior[...] = red
    return out


def _insert(flags, dims):
    it = iter(flags)
    return tuple(False if d in dims else next(it) for d in range(len(flags) + len(dims)))


def reduce_tensor(t: DistributedTensor, op: str, axis=None, dtype=None, keepdims=False, *, nan=False):
    """``np.<op>(t, axis, dtype, keepdims)`` for ``op`` in sum, prod, max, min, mean, any, all,
    count_nonzero; ``nan=True`` skips NaNs (``nansum``, ``nanprod``, ``nanmax``, ``nanmin``, ``nanmean``)."""
    dims = normalize_axes(axis, t.ndim)
    block = t._full_interior()
    axes = _mesh_axes(t, dims)
    floating = block.dtype.kind in "fc"
    if op == "count_nonzero":
        red = np.count_nonzero(block, axis=dims) if dims else (block != 0).astype(np.intp)
        red = collectives.all_reduce(np.ascontiguousarray(red, np.intp), t.mesh, axes, reduction="sum") if axes else red
        return _finish(t, red, dims, keepdims, np.intp)
    if op in ("any", "all"):
        kind, fn = _OPS[op]
        red = fn(block, axis=dims).astype(np.uint8) if dims else (block != 0).astype(np.uint8)
        red = _combine(np.ascontiguousarray(red), t.mesh, axes, kind, op) if axes else red
        return _finish(t, red.astype(bool), dims, keepdims, bool)
    if op in ("max", "min") and block.dtype.kind == "c":
        raise TypeError(f"np.{'nan' if nan else ''}{op}: complex numbers are not ordered")
    if op == "mean":
        acc, out_dt = _acc_dtype("mean", block.dtype, dtype), _out_dtype("mean", block.dtype, dtype)
        values = np.where(np.isnan(block), 0, block) if nan and floating else block
        total = np.add.reduce(values, axis=dims, dtype=acc)
        if axes:
            total = collectives.all_reduce(np.ascontiguousarray(total), t.mesh, axes, reduction="sum")
        if nan and floating:  # the count of non-NaN values, combined like the total
            count = np.add.reduce(~np.isnan(block), axis=dims, dtype=np.int64)
            if axes:
                count = collectives.all_reduce(np.ascontiguousarray(count), t.mesh, axes, reduction="sum")
        else:
            count = math.prod(t.shape[d] for d in dims)
        with np.errstate(invalid="ignore", divide="ignore"):
            red = np.true_divide(total, count)
        return _finish(t, red, dims, keepdims, out_dt)
    kind, fn = _OPS[op]
    if op in ("sum", "prod"):
        acc, out_dt = _acc_dtype(op, block.dtype, dtype), _out_dtype(op, block.dtype, dtype)
        values = np.where(np.isnan(block), 0 if op == "sum" else 1, block) if nan and floating else block
        red = fn(values, axis=dims, dtype=acc) if block.size else np.full(
            tuple(n for d, n in enumerate(block.shape) if d not in dims), _identity(op, acc), acc)
        red = collectives.all_reduce(np.ascontiguousarray(red), t.mesh, axes, reduction=kind) if axes else red
        return _finish(t, red, dims, keepdims, out_dt)
    # max / min
    if math.prod(t.shape[d] for d in dims) == 0:
        raise ValueError(f"np.{'nan' if nan else ''}{op}: zero-size reduction (shape {t.shape}, axis {axis}); "
                         f"{op} has no identity")
    kept = tuple(n for d, n in enumerate(block.shape) if d not in dims)
    if nan and floating:
        nans = np.isnan(block)
        fill = -np.inf if op == "max" else np.inf
        values = np.where(nans, fill, block)
        red = fn(values, axis=dims) if block.size else np.full(kept, fill, block.dtype)
        count = np.add.reduce(~nans, axis=dims, dtype=np.int64) if block.size else np.zeros(kept, np.int64)
        if axes:
            red = collectives.all_reduce(np.ascontiguousarray(red), t.mesh, axes, reduction=kind)
            count = collectives.all_reduce(np.ascontiguousarray(count), t.mesh, axes, reduction="sum")
        red = np.where(count == 0, np.nan, red)
        return _finish(t, red, dims, keepdims, block.dtype)
    red = fn(block, axis=dims) if block.size else np.full(kept, _identity(op, block.dtype), block.dtype)
    red = _combine(np.ascontiguousarray(red), t.mesh, axes, kind, op) if axes else red
    return _finish(t, red, dims, keepdims, block.dtype)


def var(t: DistributedTensor, axis=None, dtype=None, ddof=0, keepdims=False, *, std=False):
    """``np.var`` / ``np.std``: per-shard moments merged exactly (Chan et al.).

    Each process computes its block's count ``n_i``, mean ``m_i`` and squared
    deviations ``M2_i`` (numpy, two local passes); one all-reduce of
    ``n_i m_i`` gives the global mean ``m``, a second of
    ``M2_i + n_i |m_i - m|^2`` gives ``M2``.  No sum of squares is ever
    formed, so ``1e8 + noise`` keeps its digits.
    """
    if isinstance(ddof, bool) or not isinstance(ddof, numbers.Real):
        raise TypeError(f"ddof: {ddof!r}; expected a number")
    dims = normalize_axes(axis, t.ndim)
    block = t._full_interior()
    axes = _mesh_axes(t, dims)
    kind = block.dtype.kind
    acc = np.dtype(dtype) if dtype is not None else (np.dtype(np.float64) if kind in "biu" else block.dtype)
    out_dt = np.empty(0, acc).real.dtype if acc.kind == "c" else acc
    n_local = math.prod(block.shape[d] for d in dims)
    n_total = math.prod(t.shape[d] for d in dims)
    if len(dims) == t.ndim and acc.kind == "f" and block.dtype == acc:  # the same choice on every process
        return _var_all(t, block, axes, n_local, n_total, ddof, keepdims, std)
    values = block.astype(acc, copy=False)
    local_sum = np.add.reduce(values, axis=dims, dtype=acc) if block.size else np.zeros(
        tuple(n for d, n in enumerate(block.shape) if d not in dims), acc)
    local_mean = local_sum / n_local if n_local else local_sum
    dev = values - np.expand_dims(local_mean, dims) if block.size else values
    m2 = np.add.reduce((dev * dev.conj()).real if acc.kind == "c" else dev * dev, axis=dims,
                       dtype=out_dt) if block.size else np.zeros(np.shape(local_sum), out_dt)
    total = collectives.all_reduce(np.ascontiguousarray(local_sum), t.mesh, axes, reduction="sum") if axes \
        else local_sum
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / n_total
        if axes:
            shift = local_mean - mean
            term = m2 + n_local * ((shift * shift.conj()).real if acc.kind == "c" else shift * shift)
            m2 = collectives.all_reduce(np.ascontiguousarray(term, out_dt), t.mesh, axes, reduction="sum")
        red = m2 / max(n_total - ddof, 0)
    if std:
        red = np.sqrt(red)
    return _finish(t, red, dims, keepdims, out_dt)


def _var_all(t, block, axes, n_local, n_total, ddof, keepdims, std):
    """``var`` over every dim of a real float block in one compiled pass: the sums of ``x - c`` and
    ``(x - c)**2`` with ``c`` the block's first element (no temporaries), then the same merge as `var`.

    ``M2 = s2 - s1**2 / n`` loses digits only when ``c`` lies many standard deviations from the
    mean; then (``s1**2 / n`` above ``s2 / 2``) a second pass sums the squared deviations exactly."""
    c = block.flat[0] if n_local else block.dtype.type(0)
    s1, s2 = _kernel("local_shifted_moments")(block, c)
    local_mean = c + s1 / n_local if n_local else block.dtype.type(0)
    m2 = s2 - s1 * s1 / n_local if n_local else block.dtype.type(0)
    if n_local and s1 * s1 / n_local > 0.5 * s2:
        m2 = _kernel("local_sq_dev")(block, local_mean)
    local_sum = np.array([local_mean * n_local], block.dtype)
    total = collectives.all_reduce(local_sum, t.mesh, axes, reduction="sum") if axes else local_sum
    mean = total[0] / n_total
    if axes:
        m2 = collectives.all_reduce(np.array([m2 + n_local * (local_mean - mean) ** 2], block.dtype), t.mesh,
                                    axes, reduction="sum")[0]
    with np.errstate(invalid="ignore", divide="ignore"):
        red = np.divide(m2, max(n_total - ddof, 0), dtype=block.dtype)
    return _finish(t, np.sqrt(red) if std else red, tuple(range(t.ndim)), keepdims, block.dtype)


def argextreme(t: DistributedTensor, op: str, axis=None, keepdims=False):
    """``np.argmax`` / ``np.argmin``: flat (``axis=None``) or per-axis global indices; the first
    occurrence wins and a NaN is the extreme, as in numpy."""
    if t.ndim == 0:
        return np.intp(0)
    block = t._full_interior()
    if block.dtype.kind == "c":
        raise TypeError(f"np.arg{op}: complex numbers are not ordered")
    flat = axis is None
    dims = tuple(range(t.ndim)) if flat else normalize_axes(axis, t.ndim)
    if len(dims) != 1 and not flat:
        raise ShardingError(f"axis: {axis!r}; np.arg{op} takes None or one int")
    size = math.prod(t.shape[d] for d in dims)
    if size == 0:
        raise ValueError(f"attempt to get arg{op} of an empty sequence")
    starts = [sl.start for sl in t._slices]
    big = np.iinfo(np.int64).max
    if flat:
        vals, idx = _local_flat_extreme(block, op, starts, t.shape)
    else:
        vals, idx = _local_axis_extreme(block, op, dims[0], starts[dims[0]])
    axes = _mesh_axes(t, dims)
    if axes:
        best = _combine(np.ascontiguousarray(vals), t.mesh, axes, op, op)
        mine = (vals == best) | (np.isnan(vals) & np.isnan(best)) if vals.dtype.kind == "f" else vals == best
        cand = np.where(mine & (idx >= 0), idx, big).astype(np.int64)
        idx = collectives.all_reduce(np.ascontiguousarray(cand), t.mesh, axes, reduction="min")
    if flat:
        result = np.intp(np.asarray(idx).reshape(()))
        if keepdims:
            return _finish(t, np.asarray(result), dims, True, np.intp)
        return result
    return _finish(t, idx.astype(np.intp), dims, keepdims, np.intp)


def _nan_first(block, op, axis):
    """Local arg-extreme along ``axis`` where a NaN beats every number (numpy's rule)."""
    arg = getattr(np, f"arg{op}")(block, axis=axis)
    if block.dtype.kind == "f":
        nans = np.isnan(block)
        if nans.any():
            has = nans.any(axis=axis)
            arg = np.where(has, np.argmax(nans, axis=axis), arg)
    return arg


def _local_flat_extreme(block, op, starts, shape):
    if block.size == 0:
        return np.array([_identity(op, block.dtype)], block.dtype), np.array([-1], np.int64)
    i = int(_nan_first(block.reshape(-1), op, 0))
    local = np.unravel_index(i, block.shape)
    glob = np.ravel_multi_index(tuple(s + k for s, k in zip(starts, local)), shape)
    return np.array([block.reshape(-1)[i]], block.dtype), np.array([glob], np.int64)


def _local_axis_extreme(block, op, axis, start):
    kept = block.shape[:axis] + block.shape[axis + 1:]
    if block.shape[axis] == 0:
        return np.full(kept, _identity(op, block.dtype), block.dtype), np.full(kept, -1, np.int64)
    arg = _nan_first(block, op, axis)
    vals = np.take_along_axis(block, np.expand_dims(arg, axis), axis).squeeze(axis)
    return vals, (arg + start).astype(np.int64)


# -- numpy entry points ----------------------------------------------------------------------------
def _only(name, kwargs, allowed):
    bad = sorted(k for k, v in kwargs.items() if k not in allowed and v is not None and v is not np._NoValue)
    if bad:
        raise TypeError(f"{name} on a DistributedTensor: {', '.join(bad)} not supported (supported: "
                        f"{', '.join(sorted(allowed)) or 'none'})")


def _no_mask(where) -> bool:
    return where is True or where is np._NoValue or where is None


def _mask(a: DistributedTensor, where) -> DistributedTensor:
    """``where`` (a bool, a numpy array or a tensor, broadcast to ``a``'s global shape) laid out
    exactly like ``a``: a numpy mask is sliced locally, a tensor one resharded if it differs."""
    m = DistributedTensor.empty(a.shape, a.sharding.replace(partial_axes=()) if a.sharding.is_partial
                                else a.sharding, bool)
    if isinstance(where, (bool, np.bool_)):
        m.interior[...] = where
        return m
    np.logical_or(where, False, out=m)
    return m


def _masked(a: DistributedTensor, where, fill) -> DistributedTensor:
    """``a`` with the elements ``where`` leaves out replaced by ``fill`` (the reduction's identity)."""
    m = _mask(a, where)
    out = DistributedTensor.empty(a.shape, m.sharding, a.dtype)
    np.copyto(out.interior, a._full_interior())
    out.interior[~m.interior] = fill
    return out


def _count(a: DistributedTensor, where, dims, keepdims):
    """How many elements ``where`` selects per kept position (a scalar when nothing is kept)."""
    return reduce_tensor(_mask(a, where), "count_nonzero", dims, None, keepdims)


def _masked_reduce(a, op, axis, dtype, keepdims, where, nan=False, initial=np._NoValue):
    """``np.<op>(a, axis, where=where, initial=initial)``: masked elements become the identity."""
    if op in ("max", "min"):
        if _no_mask(where) and initial is np._NoValue:
            return reduce_tensor(a, op, axis, None, keepdims, nan=nan)
        if initial is np._NoValue:
            raise ValueError(f"reduction operation '{'maximum' if op == 'max' else 'minimum'}' does not have an "
                             "identity, so to use a where mask one has to specify 'initial'")
        src = a if _no_mask(where) else _masked(a, where, initial)
        red = reduce_tensor(src, op, axis, None, keepdims, nan=nan) if a.size else None
        ext = np.maximum if op == "max" else np.minimum
        return ext(red, initial) if red is not None else a.dtype.type(initial)
    if _no_mask(where):
        return reduce_tensor(a, op, axis, dtype, keepdims, nan=nan)
    fill = {"sum": 0, "mean": 0, "prod": 1, "any": False, "all": True}[op]
    if nan and a.dtype.kind in "fc":
        fill = np.nan  # nan-reductions skip NaNs: masked elements become NaN
    src = _masked(a, where, fill)
    if op != "mean":
        return reduce_tensor(src, op, axis, dtype, keepdims, nan=nan)
    total = reduce_tensor(src, "sum", axis, dtype if dtype is not None else _acc_dtype("mean", a.dtype, None),
                          keepdims, nan=nan)
    count = (_count(a, where & ~np.isnan(a), axis, keepdims) if nan and a.dtype.kind in "fc"
             else _count(a, where, axis, keepdims))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / count).astype(_out_dtype("mean", a.dtype, dtype)) if isinstance(total, DistributedTensor) \
            else _out_dtype("mean", a.dtype, dtype).type(total / count)


def _handler(op, nan=False):
    name = f"np.{'nan' if nan else ''}{op}"

    def handler(a, axis=None, dtype=None, out=None, keepdims=False, *args, where=True, **kwargs):
        if not isinstance(a, DistributedTensor):
            raise TypeError(f"{name}: expected a DistributedTensor")
        if out is not None or args:
            raise TypeError(f"{name} on a DistributedTensor: out= is not supported")
        initial = kwargs.pop("initial", np._NoValue)
        _only(name, kwargs, set())
        keepdims = bool(keepdims) if keepdims is not np._NoValue else False
        result = _masked_reduce(a, op, axis, dtype, keepdims, where, nan=nan)
        if initial is not np._NoValue and op in ("sum", "prod"):
            result = result + initial if op == "sum" else result * initial
        elif initial is not np._NoValue:
            raise TypeError(f"{name}() got an unexpected keyword argument 'initial'")
        return result
    handler.__name__ = f"_{name[3:]}"
    return handler


def _ordered_handler(op, nan=False):
    """max/min take no dtype: numpy's signature is (a, axis, out, keepdims, initial, where)."""
    name = f"np.{'nan' if nan else ''}{op}"

    def handler(a, axis=None, out=None, keepdims=False, initial=np._NoValue, where=True):
        if out is not None:
            raise TypeError(f"{name} on a DistributedTensor: out= is not supported")
        keepdims = bool(keepdims) if keepdims is not np._NoValue else False
        return _masked_reduce(a, op, axis, None, keepdims, where, nan=nan, initial=initial)
    return handler


for _op in ("sum", "prod", "mean"):
    implements(getattr(np, _op))(_handler(_op))
    implements(getattr(np, "nan" + _op))(_handler(_op, nan=True))
for _op in ("max", "min"):
    implements(getattr(np, _op), getattr(np, "a" + _op))(_ordered_handler(_op))
    implements(getattr(np, "nan" + _op))(_ordered_handler(_op, nan=True))


@implements(np.any)
def _np_any(a, axis=None, out=None, keepdims=False, *, where=True):
    if out is not None:
        raise TypeError("np.any on a DistributedTensor: out= is not supported")
    return _masked_reduce(a, "any", axis, None, bool(keepdims) if keepdims is not np._NoValue else False, where)


@implements(np.all)
def _np_all(a, axis=None, out=None, keepdims=False, *, where=True):
    if out is not None:
        raise TypeError("np.all on a DistributedTensor: out= is not supported")
    return _masked_reduce(a, "all", axis, None, bool(keepdims) if keepdims is not np._NoValue else False, where)


@implements(np.count_nonzero)
def _np_count_nonzero(a, axis=None, *, keepdims=False):
    return reduce_tensor(a, "count_nonzero", axis, None, keepdims)


def _masked_var(a, axis, dtype, ddof, keepdims, where, std):
    """``np.var(a, where=where)``: the masked mean first (kept dims as size 1), then the masked
    squared deviations; two passes, each a masked sum."""
    acc = np.dtype(dtype) if dtype is not None else (np.dtype(np.float64) if a.dtype.kind in "biu" else a.dtype)
    count_kd = _count(a, where, axis, True)
    total_kd = reduce_tensor(_masked(a.astype(acc), where, 0), "sum", axis, acc, True)
    with np.errstate(invalid="ignore", divide="ignore"):
        dev = a.astype(acc) - total_kd / count_kd
        sq = np.abs(dev) ** 2 if acc.kind == "c" else dev * dev
        m2 = reduce_tensor(_masked(sq, where, 0), "sum", axis, None, keepdims)
        n = _count(a, where, axis, keepdims)
        red = m2 / np.maximum(n - ddof, 0)
        return np.sqrt(red) if std else red


def _var_handler(std):
    name = "np.std" if std else "np.var"

    def handler(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=True, mean=np._NoValue,
                correction=np._NoValue):
        if out is not None:
            raise TypeError(f"{name} on a DistributedTensor: out= is not supported")
        if mean is not np._NoValue:
            raise TypeError(f"{name} on a DistributedTensor: mean= is not supported")
        if correction is not np._NoValue:
            ddof = correction
        keepdims = bool(keepdims) if keepdims is not np._NoValue else False
        if _no_mask(where):
            return var(a, axis, dtype, ddof, keepdims, std=std)
        return _masked_var(a, axis, dtype, ddof, keepdims, where, std)
    return handler


implements(np.var)(_var_handler(False))
implements(np.std)(_var_handler(True))


@implements(np.argmax)
def _np_argmax(a, axis=None, out=None, *, keepdims=False):
    if out is not None:
        raise TypeError("np.argmax on a DistributedTensor: out= is not supported")
    return argextreme(a, "max", axis, bool(keepdims))


@implements(np.argmin)
def _np_argmin(a, axis=None, out=None, *, keepdims=False):
    if out is not None:
        raise TypeError("np.argmin on a DistributedTensor: out= is not supported")
    return argextreme(a, "min", axis, bool(keepdims))


@implements(np.average)
def _np_average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """``np.average``: the mean, or with ``weights`` (a tensor of ``a``'s shape) sum(a w) / sum(w)."""
    if keepdims is np._NoValue:
        keepdims = False
    if weights is None:
        avg = reduce_tensor(a, "mean", axis, None, keepdims)
        if returned:
            count = math.prod(a.shape[d] for d in normalize_axes(axis, a.ndim))
            return avg, (np.float64(count) if isinstance(avg, np.generic) else _full_like(avg, count))
        return avg
    if not isinstance(weights, DistributedTensor) or weights.shape != a.shape:
        raise TypeError("np.average on a DistributedTensor: weights must be a DistributedTensor of the same "
                        f"shape {a.shape} (got {type(weights).__name__} "
                        f"{getattr(weights, 'shape', '')}); gather() first for other weights")
    _, (a, w) = _align("np.average", [a, weights])
    num = reduce_tensor(a * w, "sum", axis, None, keepdims)
    den = reduce_tensor(w, "sum", axis, None, keepdims)
    if isinstance(den, np.generic) and den == 0:
        raise ZeroDivisionError("Weights sum to zero, can't be normalized")
    avg = num / den
    return (avg, den) if returned else avg


def _full_like(t, value):
    out = DistributedTensor.empty(t.shape, t.sharding, np.float64, periodic=t.periodic)
    out._interior[...] = value
    return out


@implements(np.isclose)
def _np_isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise, like numpy: a boolean tensor laid out like the first tensor operand."""
    ref, (a, b) = _align("np.isclose", [a, b])
    blocks = [v._full_interior() if isinstance(v, DistributedTensor) else v for v in (a, b)]
    res = np.isclose(*blocks, rtol=rtol, atol=atol, equal_nan=equal_nan)
    s = ref.sharding.replace(partial_axes=()) if ref.sharding.is_partial else ref.sharding
    out = DistributedTensor.empty(ref.shape, s, bool, periodic=ref.periodic)
    out._interior[...] = res
    return out


def ufunc_method(ufunc, method, inputs, kwargs):
    """``ufunc.reduce`` (add, multiply, maximum, minimum, logical_or/and), ``ufunc.accumulate``
    (add, multiply, maximum, minimum) and ``ufunc.outer`` (any elementwise ufunc of two inputs)."""
    name = f"np.{ufunc.__name__}.{method}"
    if method == "outer":
        return ufunc_outer(ufunc, inputs, kwargs)
    if len(inputs) != 1 or not isinstance(inputs[0], DistributedTensor):
        raise TypeError(f"{name}: expected one DistributedTensor")
    a = inputs[0]
    axis = kwargs.pop("axis", 0)
    if method == "reduce" and ufunc in UFUNC_REDUCTIONS:
        dtype = kwargs.pop("dtype", None)
        keepdims = kwargs.pop("keepdims", False)
        _only(name, {k: v for k, v in kwargs.items() if not (k == "where" and v is True)}, set())
        op = UFUNC_REDUCTIONS[ufunc]
        return reduce_tensor(a, op, axis, dtype if op in ("sum", "prod") else None, keepdims)
    if method == "accumulate" and ufunc in _ACCUMULATED:
        dtype = kwargs.pop("dtype", None)
        _only(name, kwargs, set())
        if a.ndim == 0:
            raise ValueError(f"{name}: a 0-d tensor has no axis to accumulate along")
        return _accumulate(a, ufunc, normalize_axes(operator.index(axis), a.ndim)[0], dtype)
    supported = ", ".join([f"np.{u.__name__}.reduce" for u in UFUNC_REDUCTIONS] +
                          [f"np.{u.__name__}.accumulate" for u in _ACCUMULATED] + ["ufunc.outer"])
    raise TypeError(f"{name} on a DistributedTensor is not supported; supported: {supported}")
