"""numpy shifts, differences, padding and sorting on DistributedTensors (``np.linalg``: `meshrt.linalg`).

Shifts and differences are built from slices and the elementwise sharding rule
(`meshrt.tensor.elementwise`): ``t[1:] - t[:-1]`` keeps the first slice's blocks and
reshards the other, which moves only the elements that cross a shard boundary
(one per boundary and kept row for ``np.diff``).  What each form communicates
and which sharding its result has:

=====================  ===================================================  =====================================
form                   communication                                        result sharding
=====================  ===================================================  =====================================
np.roll(t, k, axis)    along a split axis: the ``k`` elements per kept row  ``t``'s
                       that cross each boundary (two slice assignments)
np.flip(t, axis)       along a split axis: every block to its mirror device  ``t``'s split, mirrored offsets
np.diff(t, n, axis)    ``n`` boundary exchanges of one element per row       ``t[1:]``'s (uneven offsets)
np.gradient(t, ...)    like two diffs per axis                               ``t``'s
np.pad(t, w, mode)     a slice assignment per padded layer (pad widths are  ``t``'s split axes, even offsets
                       small); constant: none beyond placing ``t``
np.broadcast_to        none (local broadcast)                                ``t``'s split on its dims
np.sort/argsort        none along a dim that is not split; along a split    ``t``'s
                       dim two all-to-alls (its mesh axes move to another
                       dim and back); 1-D split: refused (gather first)
np.nonzero, np.where   one all-gather of the global indices of the nonzero  numpy arrays (global indices),
(cond), argwhere,      elements (one writer per block)                      the same on every process
flatnonzero
np.trace, np.vdot,     one all-reduce of a scalar                            numpy scalar
np.inner (1-D)
np.inner (N-D)         as ``np.tensordot(a, b, ([-1], [-1]))``             tensordot's
np.outer (1-D)         the second operand made replicated (all-gather)      first operand's split on dim 0
ufunc.outer(a, b)      the other operand made replicated (all-gather)       first tensor's split on its dims
=====================  ===================================================  =====================================
"""

from __future__ import annotations

import numbers
import operator

import numpy as np

from ..runtime import mpi as _mpi
from .. import collectives
from ..sharding.chunks import writer_of_block
from ..errors import ShardingError
from ..sharding.spec import Sharding
from . import fastpath
from .distributed_tensor import DistributedTensor
from .dispatch import _HANDLED_FUNCTIONS, implements
from .layout import _layout

__all__ = ["MAX_GATHERED"]

MAX_GATHERED = 1 << 24  # elements: the most a np.linalg function without a distributed form gathers (meshrt.linalg)


def _axis(axis, ndim, name) -> int:
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise ShardingError(f"{name}: axis {axis!r}; expected an int")
    if not -ndim <= axis < ndim:
        raise ShardingError(f"{name}: axis {axis} is out of range for a tensor of {ndim} dims")
    return int(axis) % ndim


def _along(ndim, axis, sl):
    return (slice(None),) * axis + (sl,)


def _tensor(name, t):
    if not isinstance(t, DistributedTensor):
        raise TypeError(f"{name}: expected a DistributedTensor, got {type(t).__name__}")
    return t


def _plain(t: DistributedTensor) -> Sharding:
    s = t.sharding
    return s.replace(partial_axes=()) if s.is_partial else s


@implements(np.roll)
def _np_roll(a, shift, axis=None):
    """``np.roll``: two slice assignments per axis into a tensor of ``a``'s sharding."""
    a = _tensor("np.roll", a)
    if axis is None:
        return _np_roll(a.reshape(-1), shift, 0).reshape(a.shape)
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise ValueError(f"np.roll: shift {shift!r} and axis {axis!r} differ in length")
    total: dict = {}
    for k, ax in zip(shifts, axes):
        ax = _axis(ax, a.ndim, "np.roll")
        total[ax] = total.get(ax, 0) + operator.index(k)
    out = a
    for ax, k in total.items():
        n = out.shape[ax]
        k = k % n if n else 0
        if k == 0:
            continue
        src = out
        out = DistributedTensor.empty(src.shape, _plain(src), src.dtype, periodic=src.periodic)
        pieces = ((slice(k, None), slice(None, n - k)), (slice(None, k), slice(n - k, None)))
        if out.sharding.halo_sizes:
            for dst, part in pieces:
                out[_along(out.ndim, ax, dst)] = src[_along(src.ndim, ax, part)]
        else:  # each piece resharded straight into its view of the result: no temporary block
            for dst, part in pieces:
                view = out[_along(out.ndim, ax, dst)]
                src[_along(src.ndim, ax, part)].reshard(view.sharding, out=view)
    return out.copy() if out is a else out


@implements(np.flip)
def _np_flip(m, axis=None):
    m = _tensor("np.flip", m)
    if m.ndim == 1 and (axis is None or axis in (0, -1, (0,), (-1,), [0], [-1])):
        r = fastpath.replicated_vector(m)  # a small vector: one allgather, reversed on every process
        if r is not None:
            return fastpath.replicated_tensor(np.ascontiguousarray(r[0][::-1]), r[1])
    axes = range(m.ndim) if axis is None else axis if isinstance(axis, (tuple, list)) else (axis,)
    flips = {_axis(ax, m.ndim, "np.flip") for ax in axes}
    return m[tuple(slice(None, None, -1) if d in flips else slice(None) for d in range(m.ndim))]


@implements(np.diff)
def _np_diff(a, n=1, axis=-1, prepend=np._NoValue, append=np._NoValue):
    a = _tensor("np.diff", a)
    if prepend is not np._NoValue or append is not np._NoValue:
        raise TypeError("np.diff on a DistributedTensor: prepend=/append= are not supported; "
                        "np.concatenate them first")
    n = operator.index(n)
    if n < 0:
        raise ValueError(f"order must be non-negative but got {n}")
    ax = _axis(axis, a.ndim, "np.diff")
    out = a
    for _ in range(n):
        hi = out[_along(out.ndim, ax, slice(1, None))]
        lo = out[_along(out.ndim, ax, slice(None, -1))]
        out = np.not_equal(hi, lo) if out.dtype == np.bool_ else hi - lo
    return out


@implements(np.gradient)
def _np_gradient(f, *varargs, axis=None, edge_order=1):
    """``np.gradient`` with scalar spacings (one, or one per axis) and edge orders 1 and 2."""
    f = _tensor("np.gradient", f)
    axes = tuple(range(f.ndim)) if axis is None else tuple(
        _axis(ax, f.ndim, "np.gradient") for ax in (axis if isinstance(axis, (tuple, list)) else (axis,)))
    if len(varargs) == 0:
        spacing = [1.0] * len(axes)
    elif len(varargs) == 1 and np.ndim(varargs[0]) == 0:
        spacing = [varargs[0]] * len(axes)
    elif len(varargs) == len(axes) and all(np.ndim(v) == 0 for v in varargs):
        spacing = list(varargs)
    else:
        raise TypeError("np.gradient on a DistributedTensor: spacing must be scalars (one, or one per axis); "
                        "coordinate arrays are not supported")
    if edge_order not in (1, 2):
        raise ValueError("'edge_order' greater than 2 not supported")
    g = f.astype(np.float64) if f.dtype.kind in "biu" else f
    results = []
    for ax, h in zip(axes, spacing):
        n = g.shape[ax]
        if n < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")

        def part(sl, _ax=ax):
            return g[_along(g.ndim, _ax, sl)]

        out = DistributedTensor.empty(g.shape, _plain(g), g.dtype, periodic=g.periodic)
        if n > 2:
            out[_along(g.ndim, ax, slice(1, -1))] = (part(slice(2, None)) - part(slice(None, -2))) / (2.0 * h)
        if edge_order == 1:
            out[_along(g.ndim, ax, slice(0, 1))] = (part(slice(1, 2)) - part(slice(0, 1))) / h
            out[_along(g.ndim, ax, slice(n - 1, n))] = (part(slice(n - 1, n)) - part(slice(n - 2, n - 1))) / h
        else:
            out[_along(g.ndim, ax, slice(0, 1))] = (
                -1.5 * part(slice(0, 1)) + 2.0 * part(slice(1, 2)) - 0.5 * part(slice(2, 3))) / h
            out[_along(g.ndim, ax, slice(n - 1, n))] = (
                1.5 * part(slice(n - 1, n)) - 2.0 * part(slice(n - 2, n - 1)) + 0.5 * part(slice(n - 3, n - 2))) / h
        results.append(out)
    return results[0] if len(results) == 1 else tuple(results)


def _pad_widths(pad_width, ndim):
    w = np.asarray(pad_width)
    if w.dtype.kind not in "iu":
        raise TypeError(f"np.pad: pad_width {pad_width!r} must be ints")
    try:
        w = np.broadcast_to(w, (ndim, 2))
    except ValueError:
        raise ValueError(f"np.pad: pad_width {pad_width!r} does not fit {ndim} dims") from None
    if (w < 0).any():
        raise ValueError(f"index can't contain negative values (pad_width {pad_width!r})")
    return [tuple(int(x) for x in row) for row in w]


@implements(np.pad)
def _np_pad(array, pad_width, mode="constant", **kwargs):
    """``np.pad`` with modes constant, edge, wrap and reflect, axis by axis as numpy does."""
    a = _tensor("np.pad", array)
    if mode not in ("constant", "edge", "wrap", "reflect"):
        raise TypeError(f"np.pad on a DistributedTensor: mode {mode!r} is not supported; supported: "
                        "constant, edge, wrap, reflect")
    allowed = {"constant": {"constant_values"}, "reflect": {"reflect_type"}}.get(mode, set())
    bad = set(kwargs) - allowed
    if bad:
        raise TypeError(f"np.pad: unsupported keyword(s) {sorted(bad)} for mode {mode!r}")
    if kwargs.get("reflect_type", "even") != "even":
        raise TypeError("np.pad on a DistributedTensor: reflect_type='odd' is not supported")
    widths = _pad_widths(pad_width, a.ndim)
    shape = tuple(n + lo + hi for n, (lo, hi) in zip(a.shape, widths))
    s = _plain(a).replace(sharded_dims_offsets=None)
    fill = kwargs.get("constant_values", 0)
    if np.ndim(fill) != 0:
        raise TypeError("np.pad on a DistributedTensor: constant_values must be one scalar")
    out = DistributedTensor.full(shape, s, fill if mode == "constant" else 0, dtype=a.dtype)
    out[tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape, widths))] = a
    if mode == "constant":
        return out
    for ax, (lo, hi) in enumerate(widths):
        n = a.shape[ax]
        if (lo or hi) and n == 0:
            raise ValueError(f"np.pad: can't extend empty axis {ax} using modes other than 'constant'")
        for side, count in (("lo", lo), ("hi", hi)):
            for j in range(count):  # pad widths are small: one slice assignment per padded layer
                dst = lo - 1 - j if side == "lo" else lo + n + j
                if mode == "edge":
                    i = lo if side == "lo" else lo + n - 1
                elif mode == "wrap":
                    i = lo + (n - 1 - j % n if side == "lo" else j % n)
                else:
                    period = 2 * (n - 1)
                    k = (j + 1) % period if period else 0
                    k = period - k if k > n - 1 else k
                    i = lo + k if side == "lo" else lo + n - 1 - k
                out[_along(out.ndim, ax, slice(dst, dst + 1))] = out[_along(out.ndim, ax, slice(i, i + 1))]
    return out


@implements(np.broadcast_to)
def _np_broadcast_to(array, shape, subok=False):
    """A tensor of ``shape``, split like ``array`` on its own (right-aligned) dims; no communication."""
    from .elementwise import aligned_sharding

    a = _tensor("np.broadcast_to", array)
    shape = tuple(operator.index(n) for n in (shape if isinstance(shape, (tuple, list)) else (shape,)))
    try:
        np.broadcast_shapes(a.shape, shape)
    except ValueError:
        raise ValueError(f"np.broadcast_to: a tensor of global shape {a.shape} cannot broadcast to {shape}") from None
    if len(shape) < a.ndim or np.broadcast_shapes(a.shape, shape) != shape:
        raise ValueError(f"np.broadcast_to: a tensor of global shape {a.shape} cannot broadcast to {shape}")
    lead = len(shape) - a.ndim
    s = _plain(a)
    split = [[] for _ in range(lead)] + [list(s.dim_axes(d)) if a.shape[d] == shape[lead + d] else []
                                         for d in range(a.ndim)]
    result = Sharding(s.mesh, split)
    src = aligned_sharding(result, shape, a.shape)
    block = a.reshard(src)._interior if src != s or a.sharding.halo_sizes else a._interior
    out = DistributedTensor.empty(shape, result, a.dtype)
    slices = _layout(result, shape).slices
    out._interior[...] = np.broadcast_to(block, tuple(sl.stop - sl.start for sl in slices))
    return out


def _sort_like(name, fn):
    def handler(a, axis=-1, kind=None, order=None, **kwargs):
        a = _tensor(name, a)
        if order is not None:
            raise TypeError(f"{name} on a DistributedTensor: order= is not supported")
        if axis is None:
            raise TypeError(f"{name}(axis=None) on a DistributedTensor: flattening needs a global sort; "
                            "gather() first")
        ax = _axis(axis, a.ndim, name)
        moved = a.sharding.dim_axes(ax)
        src = a
        if moved:
            # The dim's mesh axes move to the largest other dim (an all-to-all, like a transpose), the
            # rows are sorted whole, and the result moves back: memory stays one block per process.
            if a.ndim == 1:
                raise TypeError(f"{name} of a 1-D tensor split over mesh axes {moved} needs a global sort; "
                                "gather() first, or sort a 2-D view (t.reshape(rows, -1)) along its last dim")
            other = max((d for d in range(a.ndim) if d != ax), key=lambda d: a.shape[d])
            split = [list(a.sharding.dim_axes(d)) for d in range(a.ndim)]
            split[other] += list(moved)
            split[ax] = []
            src = a.reshard(Sharding(a.mesh, split))
        out = DistributedTensor.empty(src.shape, _plain(src), np.intp if name.endswith("argsort") else a.dtype,
                                      periodic=a.periodic)
        out._interior[...] = fn(src._full_interior(), axis=ax, kind=kind, **kwargs)
        return out.reshard(_plain(a)) if moved else out
    return handler


implements(np.sort)(_sort_like("np.sort", np.sort))
implements(np.argsort)(_sort_like("np.argsort", np.argsort))


def _mesh_axes(t, dims):
    return tuple(sorted({x for d in dims for x in t.sharding.dim_axes(d)}))


@implements(np.trace)
def _np_trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    a = _tensor("np.trace", a)
    if a.ndim != 2 or out is not None:
        raise TypeError("np.trace on a DistributedTensor: 2-D tensors only, without out=")
    block = a._full_interior()
    if sorted((axis1 % 2, axis2 % 2)) != [0, 1]:
        raise ValueError(f"np.trace: axis1 {axis1} and axis2 {axis2} must be the two dims of a 2-D tensor")
    rows, cols = (np.arange(sl.start, sl.stop) for sl in a.shard_slices)
    if axis1 % 2 == 0:  # a[k, k + offset]
        mask = rows[:, None] + offset == cols[None, :]
    else:  # a[k + offset, k]
        mask = rows[:, None] == cols[None, :] + offset
    acc = np.sum(np.zeros(0, a.dtype), dtype=dtype).dtype
    local = np.array([block[mask].sum(dtype=acc)], acc)
    axes = _mesh_axes(a, (0, 1))
    total = collectives.all_reduce(local, a.mesh, axes, reduction="sum") if axes else local
    return acc.type(total[0])


def _one_d_pair(name, a, b):
    if not (isinstance(a, DistributedTensor) and isinstance(b, DistributedTensor)):
        raise TypeError(f"{name} on DistributedTensors: both operands must be tensors")
    return a.reshape(-1), b.reshape(-1)


@implements(np.vdot)
def _np_vdot(a, b):
    if not (isinstance(a, DistributedTensor) and isinstance(b, DistributedTensor) and a.shape == b.shape):
        a, b = _one_d_pair("np.vdot", a, b)  # (of one shape: the sum of the elementwise product as it is)
    return _scalar_dot(np.conj(a) if a.dtype.kind == "c" else a, b)


@implements(np.inner)
def _np_inner(a, b):
    """``np.inner``: a scalar for two 1-D tensors, else ``np.tensordot`` over the last dims (its sharding)."""
    sa, sb = (x.shape if isinstance(x, DistributedTensor) else np.shape(x) for x in (a, b))
    na, nb = len(sa), len(sb)
    if na == 1 and nb == 1:
        return _scalar_dot(a, b)
    if na == 0 or nb == 0:
        return a * b  # numpy's inner with a scalar
    if sa[-1] != sb[-1]:
        raise ValueError(f"np.inner: shapes {sa} and {sb} not aligned: {sa[-1]} (dim {na - 1}) != {sb[-1]} "
                         f"(dim {nb - 1})")
    return np.tensordot(a, b, axes=([na - 1], [nb - 1]))


def _scalar_dot(a, b):
    if a.shape != b.shape:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned")
    prod = a * b  # the elementwise rule lines b up with a
    return prod.sum()


def ufunc_outer(ufunc, inputs, kwargs):
    """``ufunc.outer(a, b)``: ``ufunc(a[i...], b[j...])`` for every pair, of shape ``a.shape + b.shape``.

    As ``np.outer``: the first tensor operand keeps its split (and uneven
    offsets) on its dims, the other operand is made replicated (an all-gather
    of a tensor; a numpy array or scalar is taken as the global value), and
    every process computes its block locally.

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> a = DistributedTensor.from_global(np.arange(3.0), Sharding(Mesh((-1,)), [[0]]))
    >>> np.multiply.outer(a, np.array([1.0, 10.0])).gather()
    array([[ 0.,  0.],
           [ 1., 10.],
           [ 2., 20.]])
    """
    name = f"np.{ufunc.__name__}.outer"
    if ufunc.nin != 2 or ufunc.nout != 1 or ufunc.signature is not None:
        raise TypeError(f"{name}: outer takes an elementwise ufunc of two inputs and one output")
    if len(inputs) != 2:
        raise TypeError(f"{name}: takes 2 operands, got {len(inputs)}")
    bad = sorted(k for k in kwargs if k not in ("dtype", "casting"))
    if bad:
        raise TypeError(f"{name} on a DistributedTensor: {', '.join(bad)} not supported (supported: casting, dtype)")
    first = isinstance(inputs[0], DistributedTensor)
    lead, other = inputs if first else inputs[::-1]
    s = _plain(lead)
    if isinstance(other, DistributedTensor):
        whole = other.reshard(Sharding(other.mesh, []))._interior if other.mesh == lead.mesh else None
        if whole is None:
            raise ShardingError(f"{name}: the operands are on different meshes ({lead.mesh} and {other.mesh})")
    else:
        whole = np.asarray(other)
    block = lead._full_interior()
    local = ufunc.outer(block, whole, **kwargs) if first else ufunc.outer(whole, block, **kwargs)
    split = [list(s.dim_axes(d)) for d in range(lead.ndim)]
    rest = [[] for _ in range(whole.ndim)]
    result = Sharding(s.mesh, split + rest if first else rest + split,
                      sharded_dims_offsets=list(s.sharded_dims_offsets) or None)
    shape = lead.shape + whole.shape if first else whole.shape + lead.shape
    out = DistributedTensor.empty(shape, result, local.dtype)
    out._interior[...] = local
    return out


@implements(np.outer)
def _np_outer(a, b, out=None):
    if out is not None:
        raise TypeError("np.outer on a DistributedTensor: out= is not supported")
    a, b = _one_d_pair("np.outer", a, b)
    s = _plain(a)
    rows = a.reshard(Sharding(s.mesh, [list(s.dim_axes(0))])) if a.sharding.halo_sizes else a
    whole = b.reshard(Sharding(b.mesh, []))
    result = Sharding(s.mesh, [list(s.dim_axes(0))],
                      sharded_dims_offsets=list(s.dim_offsets(a.shape)[0]) if s.sharded_dims_offsets else None)
    block = np.outer(rows._full_interior(), whole._interior)
    out = DistributedTensor.empty((a.shape[0], b.shape[0]), result, block.dtype)
    out._interior[...] = block
    return out


def flat_nonzero(t: DistributedTensor) -> np.ndarray:
    """Sorted flat global indices of ``t``'s nonzero elements, on every process: each block's
    writer contributes its own, one all-gather joins them."""
    t = _tensor("np.nonzero", t)
    if t.ndim == 0:
        raise ValueError("Calling nonzero on 0d arrays is not allowed. Use np.atleast_1d(scalar).nonzero() instead.")
    block = t._full_interior()
    if writer_of_block(_plain(t)) and block.size:
        local = np.unravel_index(np.flatnonzero(block), block.shape)
        flat = np.ravel_multi_index(tuple(i + sl.start for i, sl in zip(local, t.shard_slices)), t.shape)
    else:
        flat = np.zeros(0, np.intp)
    with _mpi.internal("np.nonzero", "all-gather of the nonzero indices", t.mesh):
        parts = t.mesh.comm.allgather(np.asarray(flat, np.intp))
    return np.sort(np.concatenate(parts))


@implements(np.nonzero)
def _np_nonzero(a):
    return np.unravel_index(flat_nonzero(a), a.shape)


@implements(np.flatnonzero)
def _np_flatnonzero(a):
    return flat_nonzero(a)


@implements(np.argwhere)
def _np_argwhere(a):
    return np.stack(np.unravel_index(flat_nonzero(a), a.shape), axis=-1) if a.ndim else np.zeros((0, 0), np.intp)


_where_of_three = _HANDLED_FUNCTIONS[np.where]


@implements(np.where)
def _np_where(condition, x=None, y=None):
    """``np.where(cond)`` is ``np.nonzero(cond)``; with ``x`` and ``y``, elementwise (`meshrt.tensor`)."""
    if x is None and y is None:
        return _np_nonzero(condition)
    return _where_of_three(condition, x, y)
