"""A `DistributedTensor`'s reductions, methods and local half.

The methods ``sum``, ``prod``, ``max``, ``min``, ``mean``, ``var``, ``std``, ``argmax``, ``argmin``,
``any`` and ``all`` are on `_TensorReductions`, a base class of `DistributedTensor` (``distributed_tensor.py``);
`_accumulate` is ``ufunc.accumulate`` along a dim (``cumsum``).  The local half: which kernel and
ufunc reduce a block, the accumulator and result dtypes, identities, and `_combine`, the collective
that merges the blocks.  ``numpy_reductions.py`` (above ``distributed_tensor.py``, reached through `ABOVE`) builds the
numpy forms and multi-axis reductions on it.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from ..runtime import check as _check
from .. import collectives
from ..errors import CollectiveError, ShardingError
from .dispatch import ABOVE, _HANDLED_FUNCTIONS
from .layout import _drop, _drop_dim


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
        from .. import kernels
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


def _accumulate(t: "DistributedTensor", ufunc, axis: int, dtype) -> "DistributedTensor":
    """``ufunc.accumulate`` along ``axis`` (add, multiply, maximum, minimum): each process accumulates
    its block, then combines it with the totals of the shards before it along the split dim (an
    exscan: one all_gather of the per-shard totals over that dim's mesh axes)."""
    s = t._sharding
    out_dtype = ufunc.accumulate(np.zeros(1, t.dtype), dtype=dtype).dtype
    local = ufunc.accumulate(t._full_interior(), axis=axis, dtype=out_dtype)
    axes = s.dim_axes(axis)
    if axes:
        rest = local.shape[:axis] + local.shape[axis + 1:]
        identity = _identity(_ACCUMULATED[ufunc], out_dtype)
        total = local.take(-1, axis) if local.shape[axis] else np.full(rest, identity, out_dtype)
        totals = collectives.all_gather(np.array(total, out_dtype).reshape((1,) + rest), t.mesh, axes, 0, sizes=1)
        k = s.shard_index(axis)
        if k:
            ufunc(local, np.expand_dims(ufunc.reduce(totals[:k], axis=0, dtype=out_dtype), axis), out=local)
    out = type(t).empty(t._global_shape, s.replace(partial_axes=()), out_dtype, periodic=t._periodic)
    out._interior[...] = local
    return out


class _TensorReductions:
    """The reductions of `DistributedTensor`; see its documentation."""

    __slots__ = ()

    @_check.method("DistributedTensor.sum")
    def sum(self, axis=None, dtype=None, out=None, keepdims=False, *, keep_partial=False, **kwargs):
        """Sum of the elements (all, or along ``axis``).

        Reduces locally, then over the mesh axes that split the reduced dims;
        replicas are never counted twice.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        dtype : numpy.dtype, optional
            The accumulator and result type.
        out : None
            numpy's argument; only None (a new result).
        keepdims : bool, optional
            Keep the reduced dims with size 1, as numpy's (likewise ``initial=``
            and ``where=``, as in ``np.sum``; the same keywords work on `prod`,
            `max`, `min` and `mean`, each as its numpy function takes them).
        keep_partial : bool, optional
            With ``axis``: leave the result partial over the mesh axes that split
            ``axis`` instead of all-reducing it (not with numpy's keywords).

        Returns
        -------
        numpy scalar or DistributedTensor
            A numpy scalar on every process for ``axis=None``; otherwise a tensor
            without the reduced dims, sharded like this one on the others.

        Raises
        ------
        ShardingError
            ``axis`` is out of range or not an int.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), Sharding(Mesh((-1,)), [[0]]))
        >>> t.sum(), t.sum(axis=0).gather()
        (np.float64(15.0), array([6., 9.]))
        """
        if out is not None or keepdims or kwargs:
            return self._numpy_form(np.sum, keep_partial, axis=axis, dtype=dtype, out=out, keepdims=keepdims, **kwargs)
        return self._reduce("sum", axis, dtype, keep_partial)

    @_check.method("DistributedTensor.prod")
    def prod(self, axis=None, dtype=None, out=None, keepdims=False, *, keep_partial=False, **kwargs):
        """Product of the elements (all, or along ``axis``).

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        dtype : numpy.dtype, optional
            The accumulator and result type.
        keep_partial : bool, optional
            As in `sum`.

        Returns
        -------
        numpy scalar or DistributedTensor
            As in `sum`.

        Raises
        ------
        ShardingError
            ``axis`` is out of range or not an int.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.from_global(np.arange(1, 5), Sharding(Mesh((-1,)), [[0]])).prod()
        np.int64(24)
        """
        if out is not None or keepdims or kwargs:
            return self._numpy_form(np.prod, keep_partial, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                                    **kwargs)
        return self._reduce("prod", axis, dtype, keep_partial)

    @_check.method("DistributedTensor.max")
    def max(self, axis=None, out=None, keepdims=False, *, keep_partial=False, **kwargs):
        """Largest element (all, or along ``axis``); NaN wins, as in numpy.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        keep_partial : bool, optional
            As in `sum`.

        Returns
        -------
        numpy scalar or DistributedTensor
            As in `sum`.

        Raises
        ------
        ShardingError
            ``axis`` is out of range or not an int.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.from_global(np.array([3, 9, 4]), Sharding(Mesh((-1,)), [[0]])).max()
        np.int64(9)
        """
        if out is not None or keepdims or kwargs:
            return self._numpy_form(np.max, keep_partial, axis=axis, out=out, keepdims=keepdims, **kwargs)
        return self._reduce("max", axis, None, keep_partial)

    @_check.method("DistributedTensor.min")
    def min(self, axis=None, out=None, keepdims=False, *, keep_partial=False, **kwargs):
        """Smallest element (all, or along ``axis``); NaN wins, as in numpy.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        keep_partial : bool, optional
            As in `sum`.

        Returns
        -------
        numpy scalar or DistributedTensor
            As in `sum`.

        Raises
        ------
        ShardingError
            ``axis`` is out of range or not an int.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.from_global(np.array([3, 9, 4]), Sharding(Mesh((-1,)), [[0]])).min()
        np.int64(3)
        """
        if out is not None or keepdims or kwargs:
            return self._numpy_form(np.min, keep_partial, axis=axis, out=out, keepdims=keepdims, **kwargs)
        return self._reduce("min", axis, None, keep_partial)

    @_check.method("DistributedTensor.mean")
    def mean(self, axis=None, dtype=None, out=None, keepdims=False, *, keep_partial=False, **kwargs):
        """Mean of the elements (all, or along ``axis``): the global sum over the global count.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        dtype : numpy.dtype, optional
            The accumulator and result type.
        keep_partial : bool, optional
            As in `sum` (the partial type is then ``sum``).

        Returns
        -------
        numpy scalar or DistributedTensor
            As in `sum`.

        Raises
        ------
        ShardingError
            ``axis`` is out of range or not an int.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]])).mean()
        np.float64(1.5)
        """
        if out is not None or keepdims or kwargs:
            return self._numpy_form(np.mean, keep_partial, axis=axis, dtype=dtype, out=out, keepdims=keepdims,
                                    **kwargs)
        return self._reduce("mean", axis, dtype, keep_partial)

    def var(self, axis=None, dtype=None, ddof=0, keepdims=False):
        """Variance, as ``np.var``: per-shard moments merged exactly (see ``meshrt.tensor.numpy_reductions.var``).

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        dtype : numpy.dtype, optional
            The accumulator and result type.
        ddof : int, optional
            Delta degrees of freedom, as numpy's.
        keepdims : bool, optional
            Keep the reduced dims with size 1.

        Returns
        -------
        numpy scalar or DistributedTensor
            As in `sum`.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]])).var()
        np.float64(1.25)
        """
        return ABOVE.npreduce.var(self, axis, dtype, ddof, keepdims)

    def std(self, axis=None, dtype=None, ddof=0, keepdims=False):
        """Standard deviation, as ``np.std``.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        dtype : numpy.dtype, optional
            The accumulator and result type.
        ddof : int, optional
            Delta degrees of freedom, as numpy's.
        keepdims : bool, optional
            Keep the reduced dims with size 1.

        Returns
        -------
        numpy scalar or DistributedTensor
            As in `sum`.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> DistributedTensor.from_global(np.array([1.0, 3.0]), Sharding(Mesh((-1,)), [[0]])).std()
        np.float64(1.0)
        """
        return ABOVE.npreduce.var(self, axis, dtype, ddof, keepdims, std=True)

    def argmax(self, axis=None, keepdims=False):
        """Global index of the largest element (flat, or along ``axis``); first occurrence, NaN wins.

        Parameters
        ----------
        axis : int, optional
            The dim to search; None: the flattened tensor.
        keepdims : bool, optional
            Keep the reduced dim with size 1.

        Returns
        -------
        numpy integer or DistributedTensor
            The index (global, not local), or a tensor of indices along ``axis``.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> int(DistributedTensor.from_global(np.array([3, 9, 4]), Sharding(Mesh((-1,)), [[0]])).argmax())
        1
        """
        return ABOVE.npreduce.argextreme(self, "max", axis, keepdims)

    def argmin(self, axis=None, keepdims=False):
        """Global index of the smallest element (flat, or along ``axis``); first occurrence, NaN wins.

        Parameters
        ----------
        axis : int, optional
            The dim to search; None: the flattened tensor.
        keepdims : bool, optional
            Keep the reduced dim with size 1.

        Returns
        -------
        numpy integer or DistributedTensor
            The index (global, not local), or a tensor of indices along ``axis``.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> int(DistributedTensor.from_global(np.array([3, 9, 4]), Sharding(Mesh((-1,)), [[0]])).argmin())
        0
        """
        return ABOVE.npreduce.argextreme(self, "min", axis, keepdims)

    def any(self, axis=None, keepdims=False):
        """Whether any element is true (all, or along ``axis``), as ``np.any``.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        keepdims : bool, optional
            Keep the reduced dims with size 1.

        Returns
        -------
        numpy.bool or DistributedTensor
            As in `sum`.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> t = DistributedTensor.from_global(np.array([0, 0, 2]), Sharding(Mesh((-1,)), [[0]]))
        >>> bool(t.any()), bool(t.all())
        (True, False)
        """
        return ABOVE.npreduce.reduce_tensor(self, "any", axis, None, keepdims)

    def all(self, axis=None, keepdims=False):
        """Whether every element is true (all, or along ``axis``), as ``np.all``.

        Parameters
        ----------
        axis : int or tuple of int, optional
            The dims to reduce; None: all.
        keepdims : bool, optional
            Keep the reduced dims with size 1.

        Returns
        -------
        numpy.bool or DistributedTensor
            As in `sum`.

        Examples
        --------
        >>> from meshrt import Mesh, Sharding
        >>> bool(DistributedTensor.from_global(np.array([1, 2]), Sharding(Mesh((-1,)), [[0]])).all())
        True
        """
        return ABOVE.npreduce.reduce_tensor(self, "all", axis, None, keepdims)

    def _numpy_form(self, func, keep_partial, **kwargs):
        """``t.max(axis=0, keepdims=True)`` and the other numpy keywords: as ``np.max(t, ...)``."""
        if keep_partial:
            raise TypeError(f"{func.__name__}: keep_partial=True does not combine with numpy's keywords "
                            f"{sorted(k for k, v in kwargs.items() if v is not None and v is not False)}")
        return _HANDLED_FUNCTIONS[func](self, **kwargs)

    def _reduce(self, op: str, axis, dtype, keep_partial: bool):
        """Reduce the interior locally, then over the mesh axes that split the reduced dims.

        ``axis=None`` returns a numpy scalar on every process.  ``axis=k``
        returns a tensor without dim ``k``, sharded like this one on the other
        dims; the mesh axes that split dim ``k`` are all-reduced, or with
        ``keep_partial=True`` become the result's partial axes (``mean``
        divides by the global size of dim ``k`` first, so its partial type is
        ``sum``).  Axes that do not split the reduced dims hold replicas and
        are never reduced over, so nothing is counted twice.  A partial input
        whose partial type is this reduction's kind is reduced over its partial
        axes in the same collective; any other partial input is made full first.
        """
        kind, kernel, ufunc = _REDUCTIONS[op]
        s, shape, mesh = self._sharding, self._global_shape, self.mesh
        if isinstance(axis, (tuple, list)) and len(axis) != 1 and not keep_partial:
            return ABOVE.npreduce.reduce_tensor(self, op, tuple(axis), dtype)
        if axis is not None:
            if isinstance(axis, (tuple, list)) and len(axis) == 1:
                axis = axis[0]
            if isinstance(axis, bool) or not isinstance(axis, numbers.Integral):
                raise ShardingError(f"axis: {axis!r}; reductions take None, an int or a tuple of ints")
            if not -len(shape) <= axis < len(shape):
                raise ShardingError(f"axis: {axis} is out of range for a tensor of {len(shape)} dims (shape {shape})")
            axis = int(axis) % len(shape)
            if len(shape) == 1 and not keep_partial:
                axis = None
        elif keep_partial:
            raise ShardingError("keep_partial: needs axis=k; a full reduction returns a scalar on every process")
        if op in ("max", "min") and self.dtype.kind == "c":
            raise CollectiveError(f"{op}: not defined for {self.dtype}; complex numbers are not ordered")

        block = self._interior
        partial_axes = ()
        if s.is_partial:
            if s.partial_type == _PARTIAL_OF[op]:
                partial_axes = s.partial_axes
            else:
                block = self._full_interior()
        acc = _acc_dtype(op, self.dtype, dtype)
        out_dtype = _out_dtype(op, self.dtype, dtype)
        n_reduced = math.prod(shape) if axis is None else shape[axis]
        if op in ("max", "min") and n_reduced == 0:
            raise ShardingError(f"{op}: zero-size reduction (shape {shape}, axis {axis}); {op} has no identity")

        if axis is None:
            value = _local_full(op, kernel, block, acc)
            axes = tuple(sorted({a for ax in s.split_axes for a in ax} | set(partial_axes)))
            value = _combine(np.array([value], acc), mesh, axes, kind, op)[0]
            if op == "mean":
                value = value / n_reduced if n_reduced else np.divide(value, 0.0)
            return out_dtype.type(value)

        red = _local_axis(op, ufunc, block, axis, acc)
        if op == "mean":
            red = red / shape[axis] if shape[axis] else red * np.nan
        dim_axes = s.dim_axes(axis)
        if keep_partial:
            new_partial = tuple(sorted(set(partial_axes) | set(dim_axes)))
            result_sharding = _drop_dim(s, axis, new_partial, _PARTIAL_OF[op] if new_partial else "sum")
        else:
            red = _combine(np.ascontiguousarray(red), mesh, tuple(sorted(set(dim_axes) | set(partial_axes))), kind, op)
            result_sharding = _drop_dim(s, axis, (), "sum")
        new_shape = shape[:axis] + shape[axis + 1:]
        out = type(self).empty(new_shape, result_sharding, out_dtype, periodic=_drop(self._periodic, axis))
        out._interior[...] = red
        return out
