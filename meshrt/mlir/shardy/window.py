"""Sharded ``pad``, ``dynamic_slice``, ``dynamic_update_slice``, ``reduce_window`` and ``sort`` for
`meshrt.mlir.shardy.program`'s global view: no process gathers an operand that a sharding splits.

* ``pad``: the result is allocated split like the operand (or as propagation wants it), filled with
  the padding value, and the operand (cropped where the padding is negative) is written into its
  strided place by distributed slice assignment: only the elements whose owner changes move.
* ``dynamic_slice`` / ``dynamic_update_slice``: the start indices (replicated scalars) are clamped as
  StableHLO says, then it is a static slice (a view, no data moves) / slice assignment.
* ``reduce_window``: a running sum/product/max/min (``cummax``...) is a scan of each block plus the
  totals of the shards before it; where every split dim has a trivial window (size 1, stride 1, no padding or
  dilation) each process reduces its own block; otherwise the padded, base-dilated operand is cut
  into one strided slice per window offset, each resharded to the result's layout (halo-sized
  moves) and folded with the body.  A window wider than a shard would move more than halos: the
  split then moves to a dim with a trivial window when one can take it (``explain`` says so).
* ``sort``: along a dim that is whole in every block, each process sorts its blocks; a split sort
  dim moves its axes to another dim that can take them; a dim no other can relieve (1-D) is sorted
  by a distributed sample sort (local sort, splitters from regular samples, one ``Alltoallv`` of the
  buckets, a local merge, one ``Alltoallv`` to the result's block sizes), stable with respect to the
  global index.  Local sorts are `meshrt.mlir.interpreters.stablehlo.stable_sort_perm`: numpy's stable sort on
  the key order the comparator shows on probe values, kept only when the comparator agrees on
  every adjacent pair of the result, else a merge sort that calls the comparator on vectors
  only; so any strict weak order sorts, as StableHLO's does, and no comparator is refused.

The planning functions (`pad_slices`, `clamp_starts`, `window_slices`, `prefix_axis`, `count_before`,
`rebalance_counts`) are pure; `sample_sort` is the one that talks to MPI.

>>> pad_slices((4,), low=(-1,), high=(2,), interior=(1,))
((slice(1, 4, 1),), (slice(1, 6, 2),))
"""

from __future__ import annotations

import math

import numpy as np

from ...errors import MLIRError
from ...runtime import mpi as _mpi
from ...sharding.spec import Sharding, split_offsets
from ...tensor.distributed_tensor import DistributedTensor
from ..interpreters import stablehlo as H
from ..dialects.sdy_attrs import parse_sharding_list
from ..interpreters.stablehlo import stable_sort_perm

__all__ = ["SHARDED_OPS", "run_global", "pad_slices", "clamp_starts", "window_slices", "prefix_axis", "count_before",
           "rebalance_counts", "sample_sort"]

SHARDED_OPS = frozenset(["stablehlo.pad", "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
                         "stablehlo.reduce_window", "stablehlo.sort"])


# -- planning: pure functions ------------------------------------------------------------------------

def pad_slices(shape, low, high, interior):
    """``(src, dst)``: the operand's elements that survive a ``pad`` (``src``, unit-step slices) and where
    they land in the result (``dst``, step ``interior + 1``); None when none survives.

    >>> pad_slices((3, 2), (1, 0), (0, -1), (0, 0))
    ((slice(0, 3, 1), slice(0, 1, 1)), (slice(1, 4, 1), slice(0, 1, 1)))
    """
    src, dst = [], []
    for n, lo, hi, k in zip(shape, low, high, interior):
        step = k + 1
        out_n = lo + ((n - 1) * step + 1 if n else 0) + hi
        i0 = max(0, -(-(-lo) // step)) if lo < 0 else 0      # first i with lo + i*step >= 0
        i1 = min(n - 1, (out_n - 1 - lo) // step) if out_n > 0 else -1
        if n == 0 or i1 < i0:
            return None
        src.append(slice(i0, i1 + 1, 1))
        dst.append(slice(lo + i0 * step, lo + i1 * step + 1, step))
    return tuple(src), tuple(dst)


def clamp_starts(starts, shape, sizes):
    """StableHLO's clamp of dynamic start indices to ``[0, dim - size]``.

    >>> clamp_starts((-3, 7), (8, 8), (2, 4))
    (0, 4)
    """
    return tuple(min(max(int(s), 0), n - k) for s, n, k in zip(starts, shape, sizes))


def window_slices(offset, window_dilations, strides, out_shape):
    """The strided slice of the padded, dilated operand that window element ``offset`` reads for
    every output position.

    >>> window_slices((1,), (2,), (3,), (4,))
    (slice(2, 12, 3),)
    """
    return tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, s, n in zip(offset, window_dilations, strides,
                                                                               out_shape))


def count_before(sorted_cols, probe_cols, before):
    """For each probe, how many of the sorted elements come before it: ``before(elem_cols, probe_cols)``
    must hold for a prefix of the sorted elements (a vectorized binary search).

    >>> count_before([np.array([1, 3, 5])], [np.array([0, 3, 9])], lambda e, q: e[0] < q[0])
    array([0, 1, 3])
    """
    n, m = len(sorted_cols[0]), len(probe_cols[0])
    lo, hi = np.zeros(m, np.int64), np.full(m, n, np.int64)
    if n == 0 or m == 0:
        return lo
    for _ in range(int(n).bit_length()):
        mid = (lo + hi) // 2
        q = np.minimum(mid, n - 1)
        res = np.broadcast_to(np.asarray(before([c[q] for c in sorted_cols], probe_cols), bool), (m,))
        active = lo < hi
        lo = np.where(active & res, mid + 1, lo)
        hi = np.where(active & ~res, mid, hi)
    return lo


def rebalance_counts(counts, targets, rank):
    """``(send, recv)``: element counts this process sends to / receives from each process when the
    concatenation of every process's ``counts[i]`` elements (in process order) is cut at the shard
    boundaries ``targets`` (``split_offsets``).

    >>> rebalance_counts([3, 0, 5], (0, 2, 5, 8), 0)
    ([2, 1, 0], [2, 0, 0])
    """
    starts = np.concatenate([[0], np.cumsum(counts)])

    def overlap(a0, a1, b0, b1):
        return max(0, min(a1, b1) - max(a0, b0))

    k = len(counts)
    send = [overlap(starts[rank], starts[rank + 1], targets[j], targets[j + 1]) for j in range(k)]
    recv = [overlap(starts[i], starts[i + 1], targets[rank], targets[rank + 1]) for i in range(k)]
    return [int(x) for x in send], [int(x) for x in recv]


def prefix_axis(wd, ws, bd, wdl, padding, shape):
    """The dim along which a ``reduce_window`` is a running reduction (a window of the whole dim, padded
    by its size - 1 in front; every other dim, stride and dilation trivial), else None.

    >>> prefix_axis((1, 5), (1, 1), (1, 1), (1, 1), ((0, 0), (4, 0)), (3, 5))
    1
    """
    rank = len(shape)
    if any(x != 1 for x in (*ws, *bd, *wdl)):
        return None
    dims = [d for d in range(rank) if wd[d] != 1 or padding[d] != (0, 0)]
    if len(dims) != 1:
        return None
    d = dims[0]
    return d if wd[d] == shape[d] and padding[d] == (shape[d] - 1, 0) else None


def _even(mesh, split_axes) -> Sharding | None:
    return Sharding(mesh, [list(a) for a in split_axes]) if any(split_axes) else None


def _axes_of(s: Sharding, rank):
    return [tuple(s.dim_axes(d)) if d < len(s.split_axes) else () for d in range(rank)]


def _count(mesh, axes) -> int:
    return math.prod(mesh.shape[a] for a in axes)


# -- running in global view -----------------------------------------------------------------------------

def _scalar(p, v):
    """A replicated scalar operand's value (a 0-d array, a broadcast scalar, a 0-d tensor)."""
    if hasattr(v, "full") and hasattr(v, "value"):
        return np.asarray(v.value)
    return np.asarray(p.whole(v))


def _target(p, op, i, like: Sharding | None):
    """The sharding the op's result ``i`` will be moved to after the op (its ``sdy.sharding``, else the
    propagated one), so the op writes it there at once; ``like`` where neither says, or where it is
    replicated (the result is then computed split and gathered, as it would be anyway)."""
    attr = op.attributes.get("sdy.sharding")
    if attr is not None:
        ts = parse_sharding_list(str(attr), f"{op.location}: '{op.name}'")[i].without_unreduced()
    elif p._prop and op.results[i] in p._prop:
        ts = p._prop[op.results[i]].without_unreduced()
    else:
        return like
    s = p.sharding(ts)
    if s is None or (like is not None and s.mesh != like.mesh):
        return like
    return s


def _as_dt(v, sharding, shape):
    DT = DistributedTensor
    if isinstance(v, DT):
        return v if v.sharding == sharding else v.reshard(sharding)
    if hasattr(v, "full") and hasattr(v, "value"):
        v = v.full()
    return DT.from_global(np.ascontiguousarray(np.broadcast_to(np.asarray(v), shape)), sharding)


def run_global(p, op, vals, env):
    """The op's results computed on the shards, or None when it has no split operand this module takes
    (the caller then runs it as before)."""
    DT = DistributedTensor
    name = op.name
    if name == "stablehlo.pad" and isinstance(vals[0], DT):
        return [pad(p, op, vals[0], _scalar(p, vals[1]))]
    if name == "stablehlo.dynamic_slice" and isinstance(vals[0], DT):
        x = vals[0]
        sizes = H._attr_ints(op, "slice_sizes")
        starts = clamp_starts([_scalar(p, v) for v in vals[1:]], x.global_shape, sizes)
        return [x[tuple(slice(s, s + k) for s, k in zip(starts, sizes))]]
    if name == "stablehlo.dynamic_update_slice" and isinstance(vals[0], DT):
        return [dynamic_update_slice(p, op, vals[0], vals[1], [_scalar(p, v) for v in vals[2:]])]
    if name == "stablehlo.reduce_window":
        n = len(vals) // 2
        if any(isinstance(v, DT) for v in vals[:n]):
            return reduce_window(p, op, vals[:n], [_scalar(p, v) for v in vals[n:]], env)
        return None
    if name == "stablehlo.sort" and any(isinstance(v, DT) for v in vals):
        return sort(p, op, vals, env)
    return None


def pad(p, op, x, value):
    """``stablehlo.pad`` of a split operand: fill, then one distributed strided slice assignment."""
    DT = DistributedTensor
    low, high = H._attr_ints(op, "edge_padding_low"), H._attr_ints(op, "edge_padding_high")
    interior = H._attr_ints(op, "interior_padding")
    t = op.results[0].type
    dt = H.np_dtype(t)
    s = _target(p, op, 0, _even(x.mesh, _axes_of(x.sharding, x.ndim)) or Sharding(x.mesh, []))
    r = DT.full(tuple(t.shape), s, np.asarray(value).astype(dt), dtype=dt)
    plan = pad_slices(x.global_shape, low, high, interior)
    if plan is not None:
        src, dst = plan
        r[dst] = x[src]
    return r


def dynamic_update_slice(p, op, x, update, starts):
    DT = DistributedTensor
    shape = update.shape if not isinstance(update, DT) else update.global_shape
    starts = clamp_starts(starts, x.global_shape, shape)
    s = _target(p, op, 0, x.sharding.replace(halo_sizes=None))
    r = x.reshard(s) if x.sharding != s else x.copy()
    key = tuple(slice(a, a + k) for a, k in zip(starts, shape))
    if hasattr(update, "full") and hasattr(update, "value"):  # a broadcast scalar: every process writes it
        r[key] = np.asarray(update.value)
    else:
        r[key] = update
    return r


def reduce_window(p, op, xs, inits, env):
    """``stablehlo.reduce_window`` with any body (``simple_reduction``'s kinds through numpy)."""
    DT = DistributedTensor
    ref = next(v for v in xs if isinstance(v, DT))
    rank = ref.ndim
    wd, ws, bd, wdl, padding = H.window_params(op, rank)
    kind = H.simple_reduction(op.regions[0]) if len(xs) == 1 else None
    body = p._region_fn(op.regions[0], True, env)
    out_shape = tuple(op.results[0].type.shape)
    dtypes = [H.np_dtype(r.type) for r in op.results]
    axis = prefix_axis(wd, ws, bd, wdl, padding, ref.global_shape)
    if axis is not None and kind in ("sum", "prod", "max", "min") and ref.dtype != bool and (
            kind in ("max", "min") or np.all(inits[0] == (0 if kind == "sum" else 1))):
        # a running sum/product/max/min (cummax, cumprod...): a scan of each block, then the totals of the
        # shards before it combined in (DistributedTensor's accumulate), never a window per offset
        uf = H._NP_REDUCE[kind]
        x = _as_dt(xs[0], ref.sharding, ref.global_shape)
        split = x.sharding.dim_axes(axis)
        if split:  # every process receives the k - 1 other shards' totals
            k = _count(x.mesh, split)
            rest = x.interior.size // max(1, x.interior.shape[axis])
            p.count(f"reduce_window: running {kind} along dim {axis}: all_gather of the {k} shards' totals",
                    x.mesh.size * (k - 1) * rest * x.dtype.itemsize)
        r = uf.accumulate(x, axis=axis, dtype=ref.dtype)
        return [uf(r, inits[0].astype(ref.dtype)) if kind in ("max", "min") else r]
    trivial = [wd[d] == 1 and ws[d] == 1 and bd[d] == 1 and padding[d] == (0, 0) for d in range(rank)]
    axes = _axes_of(ref.sharding, rank)
    mesh = ref.mesh
    if any(axes[d] for d in range(rank) if not trivial[d]):
        extent = [(wd[d] - 1) * wdl[d] + 1 for d in range(rank)]
        too_wide = [d for d in range(rank) if axes[d] and not trivial[d]
                    and extent[d] > max(1, ref.global_shape[d] * bd[d] // _count(mesh, axes[d]))]
        if too_wide:
            moved = [a for d in range(rank) if not trivial[d] for a in axes[d]]
            took = [d for d in range(rank) if trivial[d]
                    and ref.global_shape[d] >= _count(mesh, axes[d]) * _count(mesh, moved)]
            if took:
                e = max(took, key=lambda d: ref.global_shape[d])
                split = [list(axes[d]) + (moved if d == e else []) if trivial[d] else [] for d in range(rank)]
                p.count(f"reduce_window: a window of {extent} is wider than a shard along dims {too_wide}: "
                        f"the split moves to dim {e}, the windowed dims whole", 0)
                xs = [_as_dt(v, Sharding(mesh, split), ref.global_shape) for v in xs]
                ref = xs[0]
                axes = _axes_of(ref.sharding, rank)
        if any(axes[d] for d in range(rank) if not trivial[d]):
            return _reduce_window_by_offsets(p, op, xs, inits, ref, kind, body, out_shape, dtypes)
    # every split dim has a trivial window: each process reduces its own blocks
    s = ref.sharding.replace(halo_sizes=None)
    blocks = [_as_dt(v, s, ref.global_shape).interior for v in xs]
    local_out = tuple(blocks[0].shape[d] if axes[d] else out_shape[d] for d in range(rank))
    outs = H.reduce_window_with(op, blocks, inits, body, kind, out_shape=local_out)
    return [DT(np.ascontiguousarray(o.astype(dt, copy=False)), s, out_shape) for o, dt in zip(outs, dtypes)]


def _reduce_window_by_offsets(p, op, xs, inits, ref, kind, body, out_shape, dtypes):
    """One strided slice of the padded operand per window offset, resharded to the result's layout
    (the elements whose owner differs: halo-sized for a window narrower than a shard), folded in."""
    DT = DistributedTensor
    rank = ref.ndim
    wd, ws, bd, wdl, padding = H.window_params(op, rank)
    even = _even(ref.mesh, _axes_of(ref.sharding, rank))
    xs = [_as_dt(v, ref.sharding, ref.global_shape) for v in xs]
    low, high = [a for a, _ in padding], [b for _, b in padding]
    if any(b != 1 for b in bd) or any(low) or any(high):
        padded = []
        for x, init in zip(xs, inits):
            s = _even(x.mesh, _axes_of(x.sharding, rank)) or Sharding(x.mesh, [])
            shape = tuple(max(0, lo + (n - 1) * b + 1 + hi) if n else max(0, lo + hi)
                          for n, b, lo, hi in zip(x.global_shape, bd, low, high))
            r = DT.full(shape, s, np.asarray(init).astype(x.dtype), dtype=x.dtype)
            plan = pad_slices(x.global_shape, low, high, [b - 1 for b in bd])
            if plan is not None:
                r[plan[1]] = x[plan[0]]
            padded.append(r)
        xs = padded
    res = _target(p, op, 0, even)
    if res is None:
        res = Sharding(ref.mesh, [])
    local = res.shard_shape(out_shape)
    accs = [np.full(local, np.asarray(i), dt) for i, dt in zip(inits, dtypes)]
    if 0 not in out_shape:
        for offset in np.ndindex(*wd):
            key = window_slices(offset, wdl, ws, out_shape)
            vals = [x[key].reshard(res).interior for x in xs]
            if kind is not None:
                accs = [np.asarray(H._NP_REDUCE[kind](accs[0], vals[0])).astype(dtypes[0], copy=False)]
            else:
                accs = [np.asarray(a) for a in body(*accs, *vals)]
    return [DT(np.ascontiguousarray(np.broadcast_to(a, local).astype(dt, copy=False)), res, out_shape)
            for a, dt in zip(accs, dtypes)]


# -- sort ---------------------------------------------------------------------------------------------

def _comparator(p, op, env):
    fn = p._region_fn(op.regions[0], True, env)

    def less(a, b):
        args = []
        for x, y in zip(a, b):
            args += [x, y]
        return np.asarray(fn(*args)[0])
    return less


def _sort_blocks(blocks, dim, less):
    """Each process's blocks sorted along ``dim`` (whole in every block), all operands by the first's order."""
    moved = [np.moveaxis(b, dim, -1) for b in blocks]
    shape = moved[0].shape
    flat = [m.reshape(-1, shape[-1]) for m in moved]
    perm = stable_sort_perm(flat, less)
    return [np.ascontiguousarray(np.moveaxis(np.take_along_axis(f, perm, 1).reshape(shape), -1, dim)) for f in flat]


def sort(p, op, vals, env):
    """``stablehlo.sort`` of split operands (see the module docstring for the plans)."""
    DT = DistributedTensor
    ref = next(v for v in vals if isinstance(v, DT))
    rank = ref.ndim
    dim = int(op.attributes.get("dimension", -1))
    dim = dim + rank if dim < 0 else dim
    less = _comparator(p, op, env)
    dtypes = [H.np_dtype(r.type) for r in op.results]
    shape = ref.global_shape
    mesh = ref.mesh
    axes = _axes_of(ref.sharding, rank)
    if axes[dim]:
        k = _count(mesh, axes[dim])
        room = [d for d in range(rank) if d != dim and shape[d] >= _count(mesh, axes[d]) * k]
        if room:
            e = max(room, key=lambda d: shape[d])
            axes = [() if d == dim else axes[d] + (axes[dim] if d == e else ()) for d in range(rank)]
            p.count(f"sort: the split of dim {dim} moves to dim {e} (dim {dim} whole in every block)", 0)
        elif rank > 1 and any(axes[d] for d in range(rank) if d != dim):
            axes = [axes[d] if d == dim else () for d in range(rank)]
    s = _even(mesh, axes) or Sharding(mesh, [])
    xs = [_as_dt(v, s, shape) for v in vals]
    if not axes[dim]:
        out = _sort_blocks([x.interior for x in xs], dim, less)
        return [DT(o.astype(dt, copy=False), s, shape) for o, dt in zip(out, dtypes)]
    # the sort dim is split and no other dim can take its axes: a distributed sort per line along it
    comm = mesh.group(axes[dim])
    g0 = s.dim_offsets(shape)[dim][s.shard_index(dim)]
    moved = [np.moveaxis(x.interior, dim, -1) for x in xs]
    lines = moved[0].shape[:-1]
    n = shape[dim]
    k = comm.Get_size()
    mine = split_offsets(n, k)
    out = [np.empty(lines + (mine[comm.Get_rank() + 1] - mine[comm.Get_rank()],), m.dtype) for m in moved]
    for line in np.ndindex(*lines):
        got = sample_sort([np.ascontiguousarray(m[line]) for m in moved], g0, n, comm, less, p, f"{op.location}")
        for o, g in zip(out, got):
            o[line] = g
    res = Sharding(mesh, [list(axes[dim]) if d == dim else [] for d in range(rank)])
    return [DT(np.ascontiguousarray(np.moveaxis(o, -1, dim)).astype(dt, copy=False), res, shape)
            for o, dt in zip(out, dtypes)]


def _alltoallv(comm, arrays, send_counts, recv_counts, what, p):
    """Each array's consecutive pieces (``send_counts`` elements to each process) exchanged."""
    sd = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(np.int64)
    rd = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(np.int64)
    out = []
    me = comm.Get_rank()
    for a in arrays:
        a = np.ascontiguousarray(a)
        w = a.dtype.itemsize
        recv = np.empty(int(sum(recv_counts)), a.dtype)
        p.count(f"sort: alltoallv ({what})", w * (sum(send_counts) - send_counts[me]), same_everywhere=False)
        with _mpi.internal("stablehlo.sort", what, comm):
            comm.Alltoallv([a.view(np.uint8), (np.asarray(send_counts) * w, sd * w)],
                           [recv.view(np.uint8), (np.asarray(recv_counts) * w, rd * w)])
        out.append(recv)
    return out


def sample_sort(cols, g0, n, comm, less, p, where="sort"):
    """Sort the ``n`` elements that the processes of ``comm`` hold in order (this one: ``cols``, starting
    at global index ``g0``) by ``less``, stable; this process gets elements ``split_offsets(n, k)[rank]``
    up to the next offset of the sorted sequence.  Every process holds O(n/k) elements throughout."""
    k, me = comm.Get_size(), comm.Get_rank()
    perm = stable_sort_perm([c[None] for c in cols], less)[0]
    cols = [c[perm] for c in cols]
    if k == 1 or n == 0:
        return cols
    gidx = g0 + perm.astype(np.int64)
    m = len(cols[0])
    ns = min(m, k)
    pos = (np.arange(1, ns + 1) * m) // (ns + 1)
    with _mpi.internal("stablehlo.sort", "allgather of the sample counts", comm):
        counts = comm.allgather(int(ns))
    samples = []
    for c in [*cols, gidx]:
        piece = np.ascontiguousarray(c[pos])
        buf = np.empty(sum(counts), c.dtype)
        w = c.dtype.itemsize
        displs = np.concatenate([[0], np.cumsum(counts)[:-1]]) * w
        with _mpi.internal("stablehlo.sort", "allgather of the regular samples", comm):
            comm.Allgatherv(piece.view(np.uint8), [buf.view(np.uint8), (np.asarray(counts) * w, displs)])
        samples.append(buf)
    # samples arrive in process order, each sorted: a stable sort orders ties by global index
    sperm = stable_sort_perm([s[None] for s in samples[:-1]], less)[0]
    samples = [s[sperm] for s in samples]
    total = len(samples[0])
    picks = [(j * total) // k for j in range(1, k)]
    split_cols = [s[picks] for s in samples[:-1]]
    split_idx = samples[-1][picks]

    def before(e, q):  # element before splitter, ties by global index
        ecols, eidx = e[:-1], e[-1]
        qcols, qidx = q[:-1], q[-1]
        lt = np.asarray(less(ecols, qcols), bool)
        gt = np.asarray(less(qcols, ecols), bool)
        return lt | (~gt & (eidx < qidx))

    cuts = count_before([*cols, gidx], [*split_cols, split_idx], before) if k > 1 else np.zeros(0, np.int64)
    bounds = np.concatenate([[0], cuts, [m]])
    send = [int(b - a) for a, b in zip(bounds[:-1], bounds[1:])]
    with _mpi.internal("stablehlo.sort", "alltoall of the bucket sizes", comm):
        recv = comm.alltoall(send)
    got = _alltoallv(comm, cols, send, recv, "exchange of the buckets", p)
    # the pieces come in process order, each sorted: a stable merge keeps global-index order on ties
    mperm = stable_sort_perm([g[None] for g in got], less)[0]
    got = [g[mperm] for g in got]
    with _mpi.internal("stablehlo.sort", "allgather of the bucket sizes", comm):
        sizes = comm.allgather(len(got[0]))
    send, recv = rebalance_counts(sizes, split_offsets(n, k), me)
    if sum(sizes) != n:
        raise MLIRError(f"{where}: 'stablehlo.sort': the distributed sort lost elements ({sum(sizes)} of {n})")
    return _alltoallv(comm, got, send, recv, "rebalance to the result's blocks", p)
