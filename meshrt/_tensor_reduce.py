"""The local half of a `DistributedTensor` reduction: which kernel and ufunc reduce a block, the
accumulator and result dtypes, identities, and `_combine`, the collective that merges the blocks.

No tensors here: ``tensor.py`` (``sum``/``max``/... and ``accumulate``) and ``_npreduce.py`` build on it.
"""

from __future__ import annotations

import numpy as np

from . import collectives


# Reductions: method name -> (collective reduction kind, local kernel name, numpy ufunc for axis reductions).
_REDUCTIONS = {
    "sum": ("sum", "local_sum", np.add),
    "prod": ("product", "local_prod", np.multiply),
    "max": ("max", "local_max", np.maximum),
    "min": ("min", "local_min", np.minimum),
    "mean": ("sum", "local_sum", np.add),
}


def _kernel(name):
    # Imported on first use: Numba's import costs seconds per process, and
    # programs that never reduce a whole tensor should not pay it.
    try:
        from . import kernels
    except ImportError:  # a source checkout: kernels/ becomes meshrt.kernels only when installed
        import kernels
    return getattr(kernels, name)


_PARTIAL_OF = {"sum": "sum", "prod": "product", "max": "max", "min": "min", "mean": "sum"}


def _acc_dtype(op, dtype, requested) -> np.dtype:
    if requested is not None:
        dt = np.dtype(requested)
    elif op in ("sum", "prod"):
        dt = getattr(np, op)(np.zeros(1, dtype)).dtype
    elif op == "mean":
        dt = np.dtype(np.float64) if dtype.kind in "biu" else dtype
    else:
        dt = dtype
    if dt.kind == "f" and dt.itemsize < 4:
        dt = np.dtype(np.float32)  # half precision accumulates in single, as numpy's mean does
    return dt


def _out_dtype(op, dtype, requested) -> np.dtype:
    if requested is not None:
        return np.dtype(requested)
    if op == "mean":
        return np.dtype(np.float64) if dtype.kind in "biu" else dtype
    if op in ("sum", "prod"):
        return getattr(np, op)(np.zeros(1, dtype)).dtype
    return dtype


def _identity(op, dt: np.dtype):
    if op in ("sum", "mean"):
        return dt.type(0)
    if op == "prod":
        return dt.type(1)
    if dt.kind == "b":
        return dt.type(op == "min")
    if dt.kind == "f":
        return dt.type(-np.inf if op == "max" else np.inf)
    info = np.iinfo(dt)
    return dt.type(info.min if op == "max" else info.max)


def _local_full(op, kernel, block, acc):
    """This process's reduction of its block with the compiled kernel (identity if empty)."""
    if block.size == 0:
        return _identity(op, acc)
    kernel = _kernel(kernel)
    if block.dtype != acc:  # the kernels reduce strided interiors in place, but in the block's dtype
        block = block.astype(acc)
    return kernel(block)


def _local_axis(op, ufunc, block, axis, acc):
    # The local kernels reduce whole buffers; along one axis numpy's compiled reduce loop does it.
    if block.shape[axis] == 0:
        shape = block.shape[:axis] + block.shape[axis + 1:]
        return np.full(shape, _identity(op, acc), acc)
    return ufunc.reduce(block, axis=axis, dtype=acc)


def _combine(x, mesh, axes, kind, op):
    """All-reduce ``x`` over ``axes``; for float max/min a NaN on any process wins, as in numpy."""
    if not axes:
        return x
    if op in ("max", "min") and x.dtype.kind == "f":
        flags = np.isnan(x).astype(x.dtype)
        both = np.concatenate([x.reshape(-1), flags.reshape(-1) if op == "max" else -flags.reshape(-1)])
        both = collectives.all_reduce(both, mesh, axes, reduction=kind)
        n = x.size
        val, nan = both[:n].reshape(x.shape), both[n:].reshape(x.shape)
        return np.where(nan != 0, np.nan, val).astype(x.dtype)
    return collectives.all_reduce(x, mesh, axes, reduction=kind)


_ACCUMULATED = {np.add: "sum", np.multiply: "prod", np.maximum: "max", np.minimum: "min"}
