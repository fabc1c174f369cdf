"""The small numpy functions programs call on arrays in passing: shape queries (``np.shape``, ``np.ndim``,
``np.size``, ``np.result_type``, ``np.iscomplexobj``, ``np.isrealobj``), shape forms (``np.ravel``,
``np.squeeze``, ``np.expand_dims``), blockwise ones (``np.round``/``np.around``, ``np.nan_to_num``,
``np.real``, ``np.imag``, ``np.triu``, ``np.tril``), and ``np.ptp``, ``np.cumprod``, ``np.trapezoid``,
``np.diag``, ``np.diagonal``, ``np.cross``, built from the tensor operations that exist.

None of them communicates beyond what the operations it is made of do (``np.ptp``: two reductions;
``np.diag`` of a 1-D tensor: none, of a 2-D one and ``np.diagonal``: one allreduce over the mesh axes of
the other dim, `diagonal_2d`; ``np.cross``: none where the operands are laid out alike).

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> t = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), Sharding(Mesh((-1,)), [[0]]))
>>> np.shape(t), np.ravel(t).shape, np.triu(t).gather()[2].tolist()
((3, 2), (6,), [0.0, 0.0])
"""

from __future__ import annotations

import operator

import numpy as np

from .distributed_tensor import DistributedTensor
from .dispatch import implements
from .layout import _axes_tuple


def _blockwise(t: DistributedTensor, fn, dtype=None) -> DistributedTensor:
    """``fn`` applied to this process's block (an elementwise function: no communication)."""
    block = fn(t._full_interior())
    s = t.sharding
    if s.is_partial or s.halo_sizes:
        s = s.replace(partial_axes=(), halo_sizes=None)
    out = DistributedTensor.empty(t.global_shape, s, block.dtype if dtype is None else dtype)
    out._interior[...] = block
    return out


@implements(np.shape)
def _np_shape(a):
    return a.global_shape


@implements(np.ndim)
def _np_ndim(a):
    return a.ndim


@implements(np.size)
def _np_size(a, axis=None):
    return a.size if axis is None else a.global_shape[axis]


@implements(np.result_type)
def _np_result_type(*arrays_and_dtypes):
    return np.result_type(*[x.dtype if isinstance(x, DistributedTensor) else x for x in arrays_and_dtypes])


@implements(np.iscomplexobj)
def _np_iscomplexobj(x):
    return x.dtype.kind == "c"


@implements(np.isrealobj)
def _np_isrealobj(x):
    return x.dtype.kind != "c"


@implements(np.ravel)
def _np_ravel(a, order="C"):
    if order not in ("C", "K", "A"):
        raise TypeError(f"np.ravel on a DistributedTensor: order={order!r} is not supported (C order only)")
    return a.reshape(-1)


@implements(np.squeeze)
def _np_squeeze(a, axis=None):
    shape = a.global_shape
    if axis is None:
        axes = tuple(d for d, n in enumerate(shape) if n == 1)
    else:
        axes = _axes_tuple(axis, a.ndim, "axis")
        for d in axes:
            if shape[d] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    return a[tuple(0 if d in axes else slice(None) for d in range(a.ndim))] if axes else a


@implements(np.expand_dims)
def _np_expand_dims(a, axis):
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = a.ndim + len(axes)
    axes = _axes_tuple(tuple(axes), nd, "axis")
    key, src = [], 0
    for d in range(nd):
        if d in axes:
            key.append(None)
        else:
            key.append(slice(None))
            src += 1
    return a[tuple(key)]


@implements(np.round, np.around)
def _np_round(a, decimals=0, out=None):
    if out is not None:
        raise TypeError("np.round on a DistributedTensor: out= is not supported")
    return _blockwise(a, lambda b: np.round(b, decimals))


@implements(np.nan_to_num)
def _np_nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
    return _blockwise(x, lambda b: np.nan_to_num(b, copy=True, nan=nan, posinf=posinf, neginf=neginf))


@implements(np.real)
def _np_real(val):
    return _blockwise(val, np.real) if val.dtype.kind == "c" else val


@implements(np.imag)
def _np_imag(val):
    return _blockwise(val, np.imag)


def _tri(name, m, k, upper):
    if m.ndim < 2:
        raise TypeError(f"{name} on a DistributedTensor: 2-D and up only")
    rows, cols = m.shard_slices[-2], m.shard_slices[-1]
    i = np.arange(rows.start, rows.stop)[:, None]
    j = np.arange(cols.start, cols.stop)[None, :]
    keep = (j - i >= k) if upper else (j - i <= k)
    return _blockwise(m, lambda b: np.where(keep, b, np.zeros((), b.dtype)))


@implements(np.triu)
def _np_triu(m, k=0):
    return _tri("np.triu", m, operator.index(k), True)


@implements(np.tril)
def _np_tril(m, k=0):
    return _tri("np.tril", m, operator.index(k), False)


@implements(np.ptp)
def _np_ptp(a, axis=None, out=None, keepdims=False):
    if out is not None:
        raise TypeError("np.ptp on a DistributedTensor: out= is not supported")
    return np.subtract(np.max(a, axis=axis, keepdims=keepdims), np.min(a, axis=axis, keepdims=keepdims))


@implements(np.cumprod)
def _np_cumprod(a, axis=None, dtype=None, out=None):
    if out is not None:
        raise TypeError("np.cumprod on a DistributedTensor: out= is not supported")
    if axis is None:
        a, axis = a.reshape(-1), 0
    return np.multiply.accumulate(a, axis=axis, dtype=dtype)


@implements(np.trapezoid) if hasattr(np, "trapezoid") else (lambda f: f)
def _np_trapezoid(y, x=None, dx=1.0, axis=-1):
    axis = _axes_tuple(axis, y.ndim, "axis")[0]
    hi = tuple(slice(1, None) if d == axis else slice(None) for d in range(y.ndim))
    lo = tuple(slice(None, -1) if d == axis else slice(None) for d in range(y.ndim))
    if x is not None:
        if getattr(x, "ndim", 0) != 1:
            raise TypeError("np.trapezoid on a DistributedTensor: x= must be 1-D")
        d = np.diff(x)
        shape = [1] * y.ndim
        shape[axis] = d.shape[0]
        d = d.reshape(shape)
        return np.sum(d * (y[hi] + y[lo]) / 2.0, axis=axis)
    return np.sum(dx * (y[hi] + y[lo]) / 2.0, axis=axis)


@implements(np.diag)
def _np_diag(v, k=0):
    k = operator.index(k)
    if v.ndim == 1:  # each process writes the rows it owns: no communication
        n = v.global_shape[0] + abs(k)
        axes = v.sharding.dim_axes(0)
        from ..sharding.spec import Sharding

        out = DistributedTensor.zeros((n, n), Sharding(v.mesh, [list(axes)] if axes else []), v.dtype)
        g = v.gather()
        rows = out.shard_slices[0]
        i = np.arange(rows.start, rows.stop)
        j = i + k
        idx = i if k >= 0 else j
        ok = (j >= 0) & (j < n) & (idx >= 0) & (idx < g.shape[0])
        out._interior[i[ok] - rows.start, j[ok]] = g[idx[ok]]
        return out
    if v.ndim == 2:
        return diagonal_2d(v, k)
    raise ValueError("Input must be 1- or 2-d.")


def diagonal_2d(v: DistributedTensor, k: int = 0) -> DistributedTensor:
    """The ``k``-th diagonal of a 2-D tensor without gathering it: each process takes the elements of the
    diagonal it owns, and one allreduce over the mesh axes of the other dim (each element has one owner
    there; the others add ``-0.0``, which leaves every value's bits, ``-0.0`` too) gives each process its
    part.  The result is split like the rows where they are split (like the columns otherwise), with the
    rows' blocks clipped to the diagonal: uneven blocks, no data moved along that dim.

    >>> from meshrt import Mesh, Sharding
    >>> t = DistributedTensor.from_global(np.arange(12.0).reshape(3, 4), Sharding(Mesh((-1,)), [[0]]))
    >>> diagonal_2d(t, 1).gather().tolist()
    [1.0, 6.0, 11.0]
    """
    from .. import collectives
    from ..sharding.spec import Sharding

    n0, n1 = v.global_shape
    r0, c0 = max(0, -k), max(0, k)  # diagonal element i is (r0 + i, c0 + i)
    length = max(0, min(n0 - r0, n1 - c0))
    s = v.sharding
    lead = 0 if s.dim_axes(0) else 1
    lead_axes, other_axes = s.dim_axes(lead), s.dim_axes(1 - lead)
    start = r0 if lead == 0 else c0
    if lead_axes:
        offs = np.clip(np.asarray(s.dim_offsets(v.global_shape)[lead], np.int64) - start, 0, length)
        rs = Sharding(v.mesh, [list(lead_axes)], sharded_dims_offsets=[int(o) for o in offs])
    else:
        rs = Sharding(v.mesh, [])
    rows, cols = v.shard_slices
    own = rows if lead == 0 else cols
    lo, hi = min(max(own.start - start, 0), length), min(max(own.stop - start, 0), length)
    i = np.arange(lo, hi)
    r, c = r0 + i, c0 + i
    mine = (r >= rows.start) & (r < rows.stop) & (c >= cols.start) & (c < cols.stop)
    dt = v.dtype
    fill = dt.type(complex(-0.0, -0.0)) if dt.kind == "c" else dt.type(-0.0) if dt.kind == "f" else dt.type(0)
    part = np.full(hi - lo, fill, dt)
    block = v._full_interior()
    part[mine] = block[r[mine] - rows.start, c[mine] - cols.start]
    if other_axes:
        if dt.kind == "b":
            part = collectives.all_reduce(part.view(np.uint8), v.mesh, tuple(other_axes), "max").view(dt)
        else:
            part = collectives.all_reduce(part, v.mesh, tuple(other_axes), "sum")
    return DistributedTensor(np.ascontiguousarray(part), rs, (length,))


@implements(np.diagonal)
def _np_diagonal(a, offset=0, axis1=0, axis2=1):
    """``np.diagonal`` of a 2-D tensor (`diagonal_2d`; the other axis order: of its transpose)."""
    offset = operator.index(offset)
    if a.ndim != 2:
        raise TypeError("np.diagonal on a DistributedTensor: a 2-D tensor only (np.linalg.diagonal takes the "
                        "last two dims of a stack through meshrt.array_api)")
    ax = sorted((axis1 % 2, axis2 % 2))
    if ax != [0, 1]:
        raise ValueError(f"axis1 and axis2 cannot be the same ({axis1}, {axis2})")
    return diagonal_2d(a if axis1 % 2 == 0 else a.T, offset)


@implements(np.cross)
def _np_cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """``np.cross`` of two tensors of one shape whose vectors' dim (length 2 or 3) no mesh axis splits: numpy's
    cross of each process's blocks (``b`` resharded to ``a``'s layout first if it differs)."""
    if not (isinstance(a, DistributedTensor) and isinstance(b, DistributedTensor)) or a.shape != b.shape:
        raise TypeError("np.cross on DistributedTensors: two tensors of one shape (wrap a numpy operand with "
                        "DistributedTensor.from_global)")
    if axis is not None:
        axisa = axisb = axisc = axis
    if not (axisa == axisb == axisc):
        raise TypeError("np.cross on a DistributedTensor: one axis for a, b and the result")
    ax = operator.index(axisa) % a.ndim
    s = a.sharding
    if s.dim_axes(ax):
        raise TypeError(f"np.cross on a DistributedTensor: the vectors' dim {ax} must not be split; reshard first")
    if a.shape[ax] == 2:  # (numpy's z component of 2-vectors drops the dim: not a blockwise result here)
        raise TypeError("np.cross on a DistributedTensor: 3-vectors only")
    if a.shape[ax] != 3:
        raise ValueError(f"incompatible dimensions for cross product (dimension must be 2 or 3): {a.shape[ax]}")
    plain = s.replace(partial_axes=(), halo_sizes=None) if s.is_partial or s.halo_sizes else s
    if b.sharding != plain:
        b = b.reshard(plain)
    block = np.cross(a._full_interior(), b._full_interior(), axis=ax)
    return DistributedTensor(np.ascontiguousarray(block), plain, a.shape)
