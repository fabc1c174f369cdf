"""``stablehlo.gather`` and ``stablehlo.scatter`` on sharded values, in the global view of
`meshrt.mlir.shardy.program`: no process holds a split operand whole.

Both ops are read as one *index form*: every operand dim is either a **point** dim, which each
index vector picks (a start clamped for gather, checked for scatter; a window of size > 1 there
is expanded into one point per element), or a **box** dim, which every window covers from 0 to
its size (dims the index vector does not name, and named dims whose window is the whole dim).
A *lookup* is one batch position (and one offset in the expanded windows): its point coords name
the operand rows it touches; the box dims are the same range for every lookup.  An operand
batching dim (``jax.vmap`` over indexing) is a point dim whose coord is the lookup's own global
position on the batch dim it follows, so a batch split alike in operand and indices stays local.
A scatter of N operands routes once: operands and updates travel as the fields of one record array.

gather: each process computes the block of the result its sharding gives it.  It asks the owner
of every row it needs (the owner in its own replica group of the operand's mesh axes: itself when
it holds the row) for that row's part of its box; with replicated indices every owner knows
the requests already, with split indices they are sent first; replies come back in one
``Alltoallv``.  scatter: the result keeps the operand's sharding; each holder of an update sends
it to the owners of its targets (a replicated update is applied by each owner from its own copy,
nothing moves), and each owner applies what it got in the updates' order with the region's
combiner (numpy's ``ufunc.at`` for add/multiply/min/max, the last update for a replacing body,
any other body in rounds over the duplicates).

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%x: tensor<5x2xf32>, %i: tensor<3x1xi32>) -> tensor<3x2xf32> {
...   %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
...     collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
...     slice_sizes = array<i64: 1, 2>}> : (tensor<5x2xf32>, tensor<3x1xi32>) -> tensor<3x2xf32>
...   return %0 : tensor<3x2xf32>
... }''')
>>> f = gather_form(next(op for op in m.walk() if op.name == "stablehlo.gather"), (5, 2), (3, 1))
>>> f.point, f.box, f.batch_dims, f.win_dims
((0,), (1,), (0,), (1,))
>>> coords, keys, valid = lookups(f, np.array([[4], [-1], [9]]), (0,), (3,), [(0, 1), (0, 2)])
>>> coords[:, 0].tolist(), keys.tolist()      # starts clamped into [0, 5 - 1]
([4, 0, 4], [0, 1, 2])
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import numpy as np

from ...errors import MLIRError
from ...runtime import mpi as _mpi
from ...sharding.spec import Sharding
from ...tensor.distributed_tensor import DistributedTensor
from ..interpreters import stablehlo as H
from ..dialects.sdy_attrs import parse_sharding_list

__all__ = ["IndexForm", "check_index_op", "gather_form", "scatter_form", "lookups", "route", "run_index_op",
           "combiner_kind", "apply_updates"]


# -- the index form (pure) ----------------------------------------------------------------------------

class IndexForm(NamedTuple):
    """A gather's or scatter's dimension numbers, read against the operand's shape."""

    shape: tuple        # the operand's shape
    index_of: tuple     # per operand dim, its position in the index vector, or -1
    size: tuple         # per operand dim, the window size
    point: tuple        # operand dims each lookup picks (window smaller than the dim)
    box: tuple          # operand dims every window covers as [0, size)
    nc: tuple           # operand dims with a dim in the result (gather) / updates (scatter), in order
    win_dims: tuple     # those dims of the result / updates, in the same order
    batch_dims: tuple   # the other result / update dims: the indices' dims but index_vector_dim
    ivd: int            # index_vector_dim
    clamp: bool         # gather clamps starts into range; scatter skips windows out of range
    batching: tuple = ()  # per operand batching dim (vmap), (that dim, the batch dim it follows)


def _form(op, shape, indices_shape, index_map, collapsed, win_dims, size, value_rank, ivd, clamp,
          operand_batching=(), indices_batching=()):
    where = f"{op.location}: '{op.name}'"
    rank = len(shape)
    if len(operand_batching) != len(indices_batching):
        raise MLIRError(f"{where}: {len(operand_batching)} operand batching dims for {len(indices_batching)} "
                        "indices batching dims")
    jpos = H.batch_positions(op, len(indices_shape), ivd, indices_batching)
    for d, j in zip(operand_batching, jpos):
        if not 0 <= d < rank or d in collapsed or d in index_map:
            raise MLIRError(f"{where}: operand batching dim {d} is out of range or also collapsed / index-mapped")
        if indices_shape[indices_batching[operand_batching.index(d)]] != shape[d]:
            raise MLIRError(f"{where}: operand batching dim {d} has size {shape[d]}, its indices batching dim "
                            f"{indices_batching[operand_batching.index(d)]} has size "
                            f"{indices_shape[indices_batching[operand_batching.index(d)]]}")
    nmap = len(index_map)
    index_map = tuple(index_map) + tuple(operand_batching)
    collapsed = set(collapsed) | set(operand_batching)
    if len(size) != rank:
        raise MLIRError(f"{where}: {len(size)} window sizes for an operand of rank {rank}")
    index_of = [-1] * rank
    for k, d in enumerate(index_map):
        if not 0 <= d < rank or index_of[d] >= 0:
            raise MLIRError(f"{where}: index map {list(index_map)} names dim {d} of a rank-{rank} operand twice or "
                            "out of range")
        index_of[d] = k
    nvec = 1 if ivd == len(indices_shape) else indices_shape[ivd]
    if nvec != nmap:
        raise MLIRError(f"{where}: index vectors of length {nvec} for an index map of {nmap} dims")
    for d in range(rank):
        if not 0 <= size[d] <= shape[d]:
            raise MLIRError(f"{where}: window size {size[d]} of operand dim {d} is not in [0, {shape[d]}]")
        if d in collapsed and size[d] != 1:
            raise MLIRError(f"{where}: collapsed dim {d} has window size {size[d]}, not 1")
    nc = tuple(d for d in range(rank) if d not in collapsed)
    if len(nc) != len(win_dims):
        raise MLIRError(f"{where}: {len(win_dims)} window dims for {len(nc)} uncollapsed operand dims")
    batch_dims = tuple(d for d in range(value_rank) if d not in win_dims)
    point = tuple(d for d in range(rank) if index_of[d] >= 0 and size[d] < shape[d])
    box = tuple(d for d in range(rank) if d not in point)
    return IndexForm(tuple(shape), tuple(index_of), tuple(size), point, box, nc, tuple(win_dims), batch_dims,
                     ivd, clamp, tuple(zip(operand_batching, jpos)))


def gather_form(op, operand_shape, indices_shape) -> IndexForm:
    """The `IndexForm` of a ``stablehlo.gather``."""
    n = H._numbers(op, "dimension_numbers", ("offset_dims", "collapsed_slice_dims", "start_index_map",
                                            "index_vector_dim"))
    return _form(op, operand_shape, indices_shape, n["start_index_map"], set(n["collapsed_slice_dims"]),
                 n["offset_dims"], tuple(H._attr_ints(op, "slice_sizes")), op.results[0].type.rank,
                 n["index_vector_dim"], True, n["operand_batching_dims"], n["start_indices_batching_dims"])


def scatter_form(op, operand_shape, indices_shape, updates_shape) -> IndexForm:
    """The `IndexForm` of a ``stablehlo.scatter`` (of its first operand and updates: every
    operand has one shape, every update one shape)."""
    n = H._numbers(op, "scatter_dimension_numbers", ("update_window_dims", "inserted_window_dims",
                                                    "scatter_dims_to_operand_dims", "index_vector_dim"))
    inserted = set(n["inserted_window_dims"]) | set(n["input_batching_dims"])
    uwd = n["update_window_dims"]
    nc = [d for d in range(len(operand_shape)) if d not in inserted]
    if len(nc) != len(uwd):
        raise MLIRError(f"{op.location}: '{op.name}': {len(uwd)} update_window_dims for {len(nc)} operand dims "
                        "not in inserted_window_dims")
    size = [1] * len(operand_shape)
    for d, u in zip(nc, uwd):
        size[d] = updates_shape[u]
    return _form(op, operand_shape, indices_shape, n["scatter_dims_to_operand_dims"], set(n["inserted_window_dims"]),
                 uwd, tuple(size), len(updates_shape), n["index_vector_dim"], False, n["input_batching_dims"],
                 n["scatter_indices_batching_dims"])


def check_index_op(op) -> None:
    """`MLIRError` at the op for dimension numbers that do not fit its operand types (before any run)."""
    types = [v.type for v in op.operands]
    if not all(hasattr(t, "shape") for t in types):
        return
    if op.name == "stablehlo.gather":
        gather_form(op, tuple(types[0].shape), tuple(types[1].shape))
    elif op.name == "stablehlo.scatter":
        n = (len(types) - 1) // 2
        if len(types) != 2 * n + 1 or n < 1:
            raise MLIRError(f"{op.location}: 'stablehlo.scatter' has {len(types)} operands, not N operands, the "
                            "indices and N updates")
        for k in range(1, n):
            for what, a, b in (("operand", types[0], types[k]), ("updates", types[n + 1], types[n + 1 + k])):
                if tuple(a.shape) != tuple(b.shape):
                    raise MLIRError(f"{op.location}: 'stablehlo.scatter' {what} {k} has shape {tuple(b.shape)}, "
                                    f"{what} 0 {tuple(a.shape)}")
        scatter_form(op, tuple(types[0].shape), tuple(types[n].shape), tuple(types[n + 1].shape))


def block_ranges(form: IndexForm, value_slices) -> tuple:
    """(batch slices, per nc dim its window range) of a result / update block given as slices."""
    batch = tuple(value_slices[d] for d in form.batch_dims)
    win = [(value_slices[w].start, value_slices[w].stop) for w in form.win_dims]
    return batch, win


def box_ranges(form: IndexForm, win) -> tuple:
    """Per box dim the operand range a block of windows covers (``win`` per nc dim)."""
    return tuple(win[form.nc.index(d)] if d in form.nc else (0, 1) for d in form.box)


def lookups(form: IndexForm, vec, batch_lo, batch_shape, win):
    """The lookups of a block: ``vec`` (its index vectors, shape batch block + (k,)), the block's
    first global batch position ``batch_lo`` in a batch space of ``batch_shape``, and its window
    range per nc dim ``win``.  Returns (coords: per lookup its operand coords on the point dims,
    keys: its global batch position, row-major; valid: False where a scatter window is out of
    range), ordered batch position major, then window offset on the expanded point dims."""
    vec = np.asarray(vec).astype(np.int64, copy=False)
    bl = vec.shape[:-1]
    if form.batching:  # an operand batching dim picks the lookup's own global position on its batch dim
        cols = []
        for _, j in form.batching:
            shape = [1] * len(bl)
            shape[j] = bl[j]
            cols.append(np.broadcast_to((batch_lo[j] + np.arange(bl[j], dtype=np.int64)).reshape(shape), bl))
        vec = np.concatenate([vec, np.stack(cols, axis=-1)], axis=-1)
    valid = np.ones(bl, bool)
    starts = []
    for d in form.point:
        s = vec[..., form.index_of[d]]
        if form.clamp:
            s = np.clip(s, 0, form.shape[d] - form.size[d])
        else:
            valid &= (s >= 0) & (s <= form.shape[d] - form.size[d])
        starts.append(s)
    if not form.clamp:  # a window that covers its whole dim fits only at start 0
        for d in form.box:
            if form.index_of[d] >= 0:
                valid &= vec[..., form.index_of[d]] == 0
    expanded = [d for d in form.point if d in form.nc]
    jr = [win[form.nc.index(d)] for d in expanded]
    jl = tuple(b - a for a, b in jr)
    extra = (1,) * len(jl)
    coords = []
    for d, s in zip(form.point, starts):
        c = s.reshape(bl + extra)
        if d in expanded:
            i = expanded.index(d)
            shape = [1] * (len(bl) + len(jl))
            shape[len(bl) + i] = jl[i]
            c = c + np.arange(*jr[i], dtype=np.int64).reshape(shape)
        coords.append(np.broadcast_to(c, bl + jl).reshape(-1))
    n = int(np.prod(bl + jl, dtype=np.int64))
    coords = np.stack(coords, axis=1) if coords else np.zeros((n, 0), np.int64)
    keys = np.zeros(bl, np.int64)
    stride = 1
    for i in reversed(range(len(bl))):
        pos = (batch_lo[i] + np.arange(bl[i], dtype=np.int64)).reshape([-1 if j == i else 1 for j in range(len(bl))])
        keys = keys + pos * stride
        stride *= batch_shape[i]
    keys = np.broadcast_to(keys.reshape(bl + extra), bl + jl).reshape(-1)
    valid = np.broadcast_to(valid.reshape(bl + extra), bl + jl).reshape(-1)
    return coords, keys, valid


def _strides(mesh_shape):
    out, s = [0] * len(mesh_shape), 1
    for a in reversed(range(len(mesh_shape))):
        out[a] = s
        s *= mesh_shape[a]
    return out


def route(form: IndexForm, sharding: Sharding, coords, boxes, me, mesh_shape, free_axes=(), require=()) -> dict:
    """Where lookups go: ``{rank: (positions, box ranges)}``: the lookups (positions into
    ``coords``) whose rows ``rank`` holds, and the part of ``boxes`` (per box dim a range) it holds.

    The process is the owner with ``me``'s coords on the mesh axes the operand is not split along,
    but on ``free_axes`` (every coord: each replica gets it); a lookup whose owner differs from
    ``me`` on a ``require`` axis goes nowhere (another process sends it).

    >>> from meshrt import AbstractMesh
    >>> f = IndexForm((8, 4), (0, -1), (1, 4), (0,), (1,), (1,), (1,), (0,), 1, True)
    >>> r = route(f, Sharding(AbstractMesh((4,)), [[0]]), np.array([[7], [0], [6]]), [(0, 4)], (1,), (4,))
    >>> {k: (v[0].tolist(), v[1]) for k, v in sorted(r.items())}
    {0: ([1], ((0, 4),)), 3: ([0, 2], ((0, 4),))}
    """
    n = len(coords)
    if n == 0 or any(b <= a for a, b in boxes):
        return {}
    offs = sharding.dim_offsets(form.shape)
    strides = _strides(mesh_shape)
    point_coords = {}  # mesh axis -> per lookup, the owner's coord on it
    for i, d in enumerate(form.point):
        axes = sharding.dim_axes(d)
        if axes:
            k = np.searchsorted(np.asarray(offs[d]), coords[:, i], side="right") - 1
            for a, c in zip(axes, np.unravel_index(k, [mesh_shape[a] for a in axes])):
                point_coords[a] = c
    keep = np.ones(n, bool)
    for a in require:
        if a in point_coords:
            keep &= point_coords[a] == me[a]
    choices = []
    for d, (lo, hi) in zip(form.box, boxes):
        axes = sharding.dim_axes(d)
        if not axes:
            choices.append([({}, (lo, hi))])
            continue
        o, opts = offs[d], []
        for k in range(len(o) - 1):
            a, b = max(lo, o[k]), min(hi, o[k + 1])
            if a < b:
                opts.append((dict(zip(axes, (int(c) for c in np.unravel_index(k, [mesh_shape[x] for x in axes])))),
                             (a, b)))
        choices.append(opts)
    point_rank = np.zeros(n, np.int64)
    for a, c in point_coords.items():
        point_rank += c.astype(np.int64) * strides[a]
    out = {}
    for combo in itertools.product(*choices):
        fixed, rngs = {}, []
        for m, r in combo:
            fixed.update(m)
            rngs.append(r)
        if any(fixed[a] != me[a] for a in require if a in fixed):
            continue
        for fc in itertools.product(*[range(mesh_shape[a]) for a in free_axes]):
            q = list(me)
            for a, c in zip(free_axes, fc):
                q[a] = c
            for a, c in fixed.items():
                q[a] = c
            base = sum(q[a] * strides[a] for a in range(len(mesh_shape)) if a not in point_coords)
            ranks = np.where(keep, point_rank + base, -1)
            order = np.argsort(ranks, kind="stable")
            sorted_ranks = ranks[order]
            cuts = np.flatnonzero(np.diff(sorted_ranks)) + 1
            for grp in np.split(order, cuts):
                r = int(ranks[grp[0]])
                if r >= 0:
                    out[r] = (grp, tuple(rngs))
    return out


def natural_result_sharding(form: IndexForm, operand_s, mesh):
    """The gather result's sharding when nothing asks for one: its window dims over box dims split
    like the operand's dims (so that ``x[idx]`` with ``x`` split on another dim moves nothing)."""
    split = [[] for _ in range(len(form.batch_dims) + len(form.win_dims))]
    for d, w in zip(form.nc, form.win_dims):
        if d in form.box:
            split[w] = list(operand_s.dim_axes(d))
    for d, j in form.batching:  # vmap: the batch dim split as the operand's batching dim
        split[form.batch_dims[j]] = list(operand_s.dim_axes(d))
    return Sharding(mesh, split) if any(split) else None


def combiner_kind(region) -> str | None:
    """'sum', 'prod', 'max', 'min', 'all', 'any', 'set' (the body returns the update), 'keep' (it
    returns the operand), or None (any other body)."""
    kind = H.simple_reduction(region)
    if kind is not None:
        return kind
    block = region.entry
    ops = block.operations
    if len(block.arguments) == 2 and len(ops) == 1 and ops[0].name == "stablehlo.return" and len(ops[0].operands) == 1:
        v = ops[0].operands[0]
        if v is block.arguments[1]:
            return "set"
        if v is block.arguments[0]:
            return "keep"
    return None


_AT = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum, "all": np.logical_and,
       "any": np.logical_or}


def apply_updates(flat, idx, keys, vals, kind, fn=None):
    """Apply updates ``vals`` at flat positions ``idx`` of ``flat`` in the order of ``keys``
    (stable: equal keys keep their order), combining with ``kind`` (`combiner_kind`) or ``fn``.

    >>> flat = np.zeros(3)
    >>> apply_updates(flat, np.array([2, 0, 2]), np.array([5, 1, 0]), np.array([1., 2., 3.]), "set")
    >>> flat                            # position 2: key 5 comes after key 0, its update wins
    array([2., 0., 1.])
    >>> apply_updates(flat, np.array([2, 2]), np.array([0, 1]), np.array([4., 8.]), None, lambda a, b: (a + b) / 2)
    >>> flat                            # ((1 + 4) / 2 + 8) / 2: the body in the updates' order
    array([2.  , 0.  , 5.25])
    """
    if idx.size == 0 or kind == "keep":
        return
    order = np.argsort(keys, kind="stable")
    idx, vals = idx[order], vals[order].astype(flat.dtype, copy=False)
    if kind in _AT:
        uf = _AT[kind]
        if flat.dtype == bool and kind in ("max", "min"):
            uf = np.logical_or if kind == "max" else np.logical_and
        uf.at(flat, idx, vals)
        return
    if kind == "set":  # duplicates: the last update wins, on every process alike
        last = idx.size - 1 - np.unique(idx[::-1], return_index=True)[1]
        flat[idx[last]] = vals[last]
        return
    # any other body: round r applies every target's r-th update (targets are distinct within a round)
    by_target = np.argsort(idx, kind="stable")
    st = idx[by_target]
    first = np.r_[0, np.flatnonzero(np.diff(st)) + 1]
    rank = np.arange(st.size) - np.repeat(first, np.diff(np.r_[first, st.size]))
    rounds = np.empty(idx.size, np.int64)
    rounds[by_target] = rank
    for r in range(int(rounds.max()) + 1):
        sel = rounds == r
        t = idx[sel]
        flat[t] = np.asarray(fn(flat[t], vals[sel])).astype(flat.dtype, copy=False)


# -- running (MPI) ---------------------------------------------------------------------------------------

def _exchange(comm, sends, recv_counts, what):
    """One ``Alltoallv`` of byte buffers: ``sends[r]`` (an array or None) to rank ``r``; the
    bytes from each rank (``recv_counts``: known per rank, or None to exchange the counts first)."""
    from mpi4py import MPI

    size = comm.size
    scount = np.array([0 if s is None else s.nbytes for s in sends], np.int64)
    if recv_counts is None:
        recv_counts = np.empty(size, np.int64)
        with _mpi.internal(what, "alltoall of the byte counts", comm):
            comm.Alltoall(scount, recv_counts)
    rcount = np.asarray(recv_counts, np.int64)
    sdispl = np.r_[0, np.cumsum(scount)[:-1]]
    rdispl = np.r_[0, np.cumsum(rcount)[:-1]]
    sbuf = np.empty(int(scount.sum()), np.uint8)
    for r, s in enumerate(sends):
        if s is not None and s.nbytes:
            sbuf[sdispl[r]:sdispl[r] + scount[r]] = np.ascontiguousarray(s).view(np.uint8).reshape(-1)
    rbuf = np.empty(int(rcount.sum()), np.uint8)
    # counts as Python ints: mpi4py takes MPI-4's large-count call where one exceeds a C int
    with _mpi.internal(what, "alltoallv", comm):
        comm.Alltoallv([sbuf, (scount.tolist(), sdispl.tolist()), MPI.BYTE],
                       [rbuf, (rcount.tolist(), rdispl.tolist()), MPI.BYTE])
    return [rbuf[rdispl[r]:rdispl[r] + rcount[r]] for r in range(size)]


def _plain(t):
    """Whether a DistributedTensor has no halos and no partial values (the index ops' layouts)."""
    s = t.sharding
    return not s.partial_axes and not any(s.halo_widths(d) != (0, 0) for d in range(t.ndim))


def _local_dt(array, sharding, shape):
    """A replicated array (or a _Splat's scalar) as a tensor laid out by ``sharding``: each process
    takes its block, nothing moves."""
    sl = sharding.shard_slices(shape)
    return DistributedTensor(np.ascontiguousarray(np.broadcast_to(array, shape)[sl]), sharding, shape)


def _indices_sharding_for(form, batch_split, mesh, nd):
    """The indices' sharding that splits their batch dims as ``batch_split`` (per batch dim)."""
    split = [[] for _ in range(nd)]
    idims = [d for d in range(nd) if d != form.ivd]
    for idim, axes in zip(idims, batch_split):
        split[idim] = list(axes)
    return Sharding(mesh, split)


def _batch_split_of(form, s, nd):
    idims = [d for d in range(nd) if d != form.ivd]
    return [tuple(s.dim_axes(d)) for d in idims]


def run_index_op(prog, op, vals, env, splat):
    """The sharded ``gather`` / ``scatter`` of ``op`` for `SdyProgram` ``prog`` (see the module
    docstring), or None where these layouts do not apply (the caller then runs the op on gathered
    operands).  The result is computed in the sharding the program gives it (its ``sdy.sharding``
    attribute, else the propagated one) where it can be; ``splat`` is the class of a broadcast
    scalar (``sdy._Splat``)."""
    attr = op.attributes.get("sdy.sharding")
    ss = None if attr is None else parse_sharding_list(str(attr), f"{op.location}: '{op.name}'")
    ts = ss[0] if ss else prog._prop.get(op.results[0])
    target = None if ts is None else prog.sharding(ts.without_unreduced())
    if op.name == "stablehlo.gather":
        return _gather(prog, op, vals, env, target, splat)
    return _scatter(prog, op, vals, env, target, splat)


def _gather(prog, op, vals, env, target, Splat):
    DT = DistributedTensor
    x, idx = vals
    t = op.results[0].type
    out_shape, dtype = tuple(t.shape), H.np_dtype(t)
    if isinstance(x, Splat):  # every element of the result is the splat's value
        return [Splat(np.asarray(x.value).astype(dtype), out_shape)]
    if isinstance(idx, Splat):
        idx = np.asarray(idx.full())
    dts = [v for v in (x, idx) if isinstance(v, DT)]
    if not dts:
        return prog._local_op(op, [x, idx], env)
    if any(not _plain(v) for v in dts) or len({v.mesh for v in dts}) > 1:
        return None
    mesh = dts[0].mesh
    xshape = tuple(x.global_shape) if isinstance(x, DT) else np.shape(x)
    ishape = tuple(idx.global_shape) if isinstance(idx, DT) else np.shape(idx)
    form = gather_form(op, xshape, ishape)
    if not isinstance(x, DT):
        x = _local_dt(np.asarray(x), Sharding(mesh, []), xshape)
    if target is not None and target.mesh != mesh:
        target = None
    nd = len(ishape)
    if isinstance(idx, DT):
        want = [tuple(target.dim_axes(d)) for d in form.batch_dims] if target is not None else []
        if not any(want):  # keep the indices' split of the batch dims (never gather them whole)
            want = _batch_split_of(form, idx.sharding, nd)
        s = _indices_sharding_for(form, want, mesh, nd)
        if idx.sharding != s:
            idx = idx.reshard(s)
        if not any(want):
            idx = idx.interior  # split on index_vector_dim only, now whole: replicated
    if isinstance(idx, DT):
        used = {a for axes in want for a in axes}
        base = target if target is not None else natural_result_sharding(form, x.sharding, mesh)
        split = [[] for _ in out_shape]
        for bd, axes in zip(form.batch_dims, want):
            split[bd] = list(axes)
        if base is not None:
            for w in form.win_dims:
                split[w] = [a for a in base.dim_axes(w) if a not in used]
        res_s = Sharding(mesh, split)
    else:
        res_s = target if target is not None else natural_result_sharding(form, x.sharding, mesh)
        if res_s is not None and not any(res_s.split_axes):
            res_s = None
    block = _gather_blocks(prog, form, x, idx, res_s, out_shape, mesh)
    block = block.astype(dtype, copy=False)
    if res_s is None or not any(res_s.split_axes):
        return [block]
    return [DT(np.ascontiguousarray(block), res_s, out_shape)]


def _result_slices(res_s, out_shape, rank):
    if res_s is None:
        return tuple(slice(0, n) for n in out_shape)
    return res_s.shard_slices(out_shape, rank)


def _requests_of(form, res_s, out_shape, rank, vec_of, batch_shape):
    """Requester ``rank``'s lookups: (coords, box ranges, block batch shape, window ranges)."""
    sl = _result_slices(res_s, out_shape, rank)
    batch, win = block_ranges(form, sl)
    vec = vec_of(batch)
    coords, _, _ = lookups(form, vec, [b.start for b in batch], batch_shape, win)
    return coords, box_ranges(form, win), tuple(b.stop - b.start for b in batch), win


def _gather_blocks(prog, form, x, idx, res_s, out_shape, mesh):
    DT = DistributedTensor
    comm, me = mesh.comm, mesh.rank
    ms, size = mesh.shape, mesh.size
    xs = x.sharding
    op_axes = {a for d in range(len(form.shape)) for a in xs.dim_axes(d)}
    batch_shape = tuple(out_shape[d] for d in form.batch_dims)
    my_lo = [s.start for s in x.shard_slices]
    my_hi = [s.stop for s in x.shard_slices]
    blk_t = x.interior.transpose(list(form.point) + list(form.box))
    split_idx = isinstance(idx, DT)
    if split_idx:
        myvec = H._index_vectors(idx.interior, form.ivd)
        vec_of = None
    else:
        allvec = H._index_vectors(np.asarray(idx), form.ivd)
        vec_of = lambda batch: allvec[tuple(batch)]  # noqa: E731

    def piece(coords, rngs):
        pts = tuple(coords[:, i] - my_lo[d] for i, d in enumerate(form.point))
        sls = tuple(slice(a - my_lo[d], b - my_lo[d]) for d, (a, b) in zip(form.box, rngs))
        if pts:
            return blk_t[pts + sls]
        return np.broadcast_to(blk_t[sls], (len(coords),) + blk_t[sls].shape)

    # what this process needs, and from whom
    if split_idx:
        sl = _result_slices(res_s, out_shape, me)
        batch, win = block_ranges(form, sl)
        coords, _, _ = lookups(form, myvec, [b.start for b in batch], batch_shape, win)
        mybox, bl = box_ranges(form, win), tuple(b.stop - b.start for b in batch)
    else:
        coords, mybox, bl, win = _requests_of(form, res_s, out_shape, me, vec_of, batch_shape)
    need = route(form, xs, coords, mybox, mesh.coords, ms)
    nl = len(coords)
    box_ext = tuple(b - a for a, b in mybox)
    out = np.empty((nl,) + box_ext, x.dtype)

    def place(pos, rngs, data):
        rel = tuple(slice(a - lo, b - lo) for (a, b), (lo, _) in zip(rngs, mybox))
        out[(pos,) + rel] = data.reshape((len(pos),) + tuple(b - a for a, b in rngs))

    local_only = _gather_is_local(form, xs, res_s, out_shape, mesh)
    if me in need:
        pos, rngs = need[me]
        place(pos, rngs, piece(coords[pos], rngs))
    if not local_only:
        item = x.dtype.itemsize
        sends = [None] * size
        if split_idx:  # requests first: the point coords of the rows wanted from each owner
            reqs = [None] * size
            width = max(len(form.point), 1)  # no point dims: one placeholder per lookup still counts them
            for r, (pos, _) in need.items():
                if r != me:
                    reqs[r] = np.ascontiguousarray(coords[pos]) if form.point else np.zeros((len(pos), 1), np.int64)
            got = _exchange(comm, reqs, None, "stablehlo.gather")
            sent = sum(q.nbytes for r, q in enumerate(reqs) if q is not None)
            for p in range(size):
                if p == me or got[p].size == 0:
                    continue
                c = got[p].view(np.int64).reshape(-1, width)[:, :len(form.point)]
                sl = _result_slices(res_s, out_shape, p)
                pbox = box_ranges(form, block_ranges(form, sl)[1])
                rngs = tuple((max(a, my_lo[d]), min(b, my_hi[d])) for d, (a, b) in zip(form.box, pbox))
                sends[p] = np.ascontiguousarray(piece(c, rngs))
        else:  # every owner knows what each process of its replica group asks of it
            sent = 0
            cache = {}
            for p in range(size):
                if p == me or any(mesh.multi_index(p)[a] != mesh.coords[a] for a in range(len(ms))
                                  if a not in op_axes):
                    continue
                key = tuple((s.start, s.stop) for s in _result_slices(res_s, out_shape, p))
                if key not in cache:
                    c, pbox, _, _ = _requests_of(form, res_s, out_shape, p, vec_of, batch_shape)
                    r = route(form, xs, c, pbox, mesh.multi_index(p), ms).get(me)
                    cache[key] = None if r is None else np.ascontiguousarray(piece(c[r[0]], r[1]))
                sends[p] = cache[key]
        counts = [0] * size
        for r, (pos, rngs) in need.items():
            if r != me:
                counts[r] = len(pos) * int(np.prod([b - a for a, b in rngs])) * item
        sent += sum(s.nbytes for s in sends if s is not None)
        prog.count("gather: each owner sends the rows asked of it (alltoallv)", sent,
                   same_everywhere=False)
        got = _exchange(comm, sends, counts, "stablehlo.gather")
        for r, (pos, rngs) in need.items():
            if r != me:
                place(pos, rngs, got[r].view(x.dtype))
    # canonical (lookups, box) -> the result block's dim order
    jl = [w[1] - w[0] for d, w in zip(form.nc, win) if d in form.point]
    arr = out.reshape(tuple(bl) + tuple(jl) + box_ext)
    labels = list(form.batch_dims) + [form.win_dims[form.nc.index(d)] for d in form.point if d in form.nc]
    keep = []
    for i, d in enumerate(form.box):
        if d in form.nc:
            labels.append(form.win_dims[form.nc.index(d)])
            keep.append(slice(None))
        else:
            keep.append(0)
    arr = arr[(slice(None),) * (len(bl) + len(jl)) + tuple(keep)]
    return np.transpose(arr, np.argsort(labels))


def _gather_is_local(form, xs, res_s, out_shape, mesh):
    """Whether no process needs a row it does not hold (known from the shardings alone, so every
    process decides alike): point dims whole, and every result block's box inside its operand block."""
    bdims = dict(form.batching)
    if any(xs.dim_axes(d) for d in form.point if d not in bdims):
        return False
    for p in range(mesh.size):
        batch, win = block_ranges(form, _result_slices(res_s, out_shape, p))
        xsl = xs.shard_slices(form.shape, p)
        for d, j in form.batching:  # a batching dim: the block's batch rows inside the operand's block
            if batch[j].stop > batch[j].start and xs.dim_axes(d) and not (
                    xsl[d].start <= batch[j].start and batch[j].stop <= xsl[d].stop):
                return False
        for d, (a, b) in zip(form.box, box_ranges(form, win)):
            if b > a and xs.dim_axes(d) and not (xsl[d].start <= a and b <= xsl[d].stop):
                return False
    return True


def _scatter(prog, op, vals, env, target, Splat):
    DT = DistributedTensor
    n = (len(vals) - 1) // 2
    xs_in, idx, us_in = list(vals[:n]), vals[n], list(vals[n + 1:])
    t = op.results[0].type
    shape = tuple(t.shape)
    dtypes = [H.np_dtype(r.type) for r in op.results]
    if isinstance(idx, Splat):
        idx = np.asarray(idx.full())
    us_in = [u.full() if isinstance(u, Splat) else u for u in us_in]
    if n > 1:
        xs_in = [x.full() if isinstance(x, Splat) else x for x in xs_in]
    dts = [v for v in xs_in + [idx] + us_in if isinstance(v, DT)]
    if target is not None and dts and target.mesh != dts[0].mesh:
        target = None
    if not dts and target is None:  # nothing is split, nor wanted split: every process computes it all
        return prog._local_op(op, [x.full() if isinstance(x, Splat) else x for x in xs_in] + [idx] + us_in, env)
    if any(not _plain(v) for v in dts) or len({v.mesh for v in dts}) > 1:
        return None
    mesh = dts[0].mesh if dts else target.mesh
    ishape = tuple(idx.global_shape) if isinstance(idx, DT) else np.shape(idx)
    ushape = tuple(us_in[0].global_shape) if isinstance(us_in[0], DT) else np.shape(us_in[0])
    form = scatter_form(op, shape, ishape, ushape)
    # every operand laid out as the first split one (else as the result is wanted), every update as the first
    # split update: one routing serves them all
    first = next((x for x in xs_in if isinstance(x, DT)), None)
    xs = first.sharding if first is not None else (target if target is not None else Sharding(mesh, []))
    xs_in = [(x if x.sharding == xs else x.reshard(xs)) if isinstance(x, DT) else
             _local_dt(x.value if isinstance(x, Splat) else np.asarray(x), xs, shape) for x in xs_in]
    ufirst = next((u for u in us_in if isinstance(u, DT)), None)
    if ufirst is not None:
        us_in = [(u if u.sharding == ufirst.sharding else u.reshard(ufirst.sharding)) if isinstance(u, DT) else
                 _local_dt(np.asarray(u), ufirst.sharding, ushape) for u in us_in]
    upd = us_in[0]
    nd = len(ishape)
    # indices and updates aligned on the batch dims: each holder of updates holds their indices
    if isinstance(upd, DT):
        ub = [tuple(upd.sharding.dim_axes(d)) for d in form.batch_dims]
        s = _indices_sharding_for(form, ub, mesh, nd)
        if isinstance(idx, DT):
            if idx.sharding != s:
                idx = idx.reshard(s)
        elif any(ub):
            idx = _local_dt(np.asarray(idx), s, ishape)
    elif isinstance(idx, DT):
        want = _batch_split_of(form, idx.sharding, nd)
        s = _indices_sharding_for(form, want, mesh, nd)
        if idx.sharding != s:
            idx = idx.reshard(s)
        if any(want):
            split = [[] for _ in ushape]
            for bd, axes in zip(form.batch_dims, want):
                split[bd] = list(axes)
            us_in = [_local_dt(np.asarray(u), Sharding(mesh, split), ushape) for u in us_in]
        else:
            idx = idx.interior
    upd = us_in[0]
    if isinstance(upd, DT):
        uinfo = (upd.sharding, [u.interior for u in us_in], upd.shard_slices)
    else:
        uinfo = (None, [np.asarray(u) for u in us_in], tuple(slice(0, k) for k in ushape))
    f = None if n == 1 and combiner_kind(op.regions[0]) is not None else prog._region_fn(op.regions[0], True, env)
    if n == 1:
        kind = combiner_kind(op.regions[0])
        fn = None if f is None else (lambda a, b: f(a, b)[0])
        block = np.array(xs_in[0].interior, dtype=dtypes[0])
        ublock = uinfo[1][0]
    else:  # N operands as the fields of one record array: the routing and the update order serve them all
        kind = None
        rec = np.dtype([(f"f{k}", dt) for k, dt in enumerate(dtypes)])
        block = _records([x.interior for x in xs_in], rec)
        ublock = _records(uinfo[1], rec)

        def fn(a, b):
            res = f(*(a[f"f{k}"] for k in range(n)), *(b[f"f{k}"] for k in range(n)))
            return _records([np.broadcast_to(np.asarray(r), a.shape) for r in res], rec)
    _scatter_blocks(prog, form, block, xs, idx, (uinfo[0], ublock, uinfo[2]), ushape, mesh, kind, fn)
    blocks = [block] if n == 1 else [np.ascontiguousarray(block[f"f{k}"]) for k in range(n)]
    if not any(xs.split_axes):
        return blocks
    return [DT(b, xs, shape) for b in blocks]


def _records(arrays, rec):
    """Arrays of one shape as the fields of one record array of dtype ``rec``."""
    out = np.empty(np.shape(arrays[0]), rec)
    for k, a in enumerate(arrays):
        out[f"f{k}"] = a
    return out


def _scatter_blocks(prog, form, block, xs, idx, upd, ushape, mesh, kind, fn):
    DT = DistributedTensor
    comm, me, size, ms = mesh.comm, mesh.rank, mesh.size, mesh.shape
    batch_shape = tuple(ushape[d] for d in form.batch_dims)
    us, ublock, usl = upd  # the updates' sharding (None: replicated), this process's block and its slices
    vec = H._index_vectors(idx.interior if isinstance(idx, DT) else np.asarray(idx), form.ivd)
    batch, win = block_ranges(form, usl)
    if not isinstance(idx, DT):
        vec = vec[tuple(batch)]
    coords, keys, valid = lookups(form, vec, [b.start for b in batch], batch_shape, win)
    ubox = box_ranges(form, win)
    # the update block in lookup order: (lookups, box dims ...), collapsed box dims of length 1
    expanded = [d for d in form.point if d in form.nc]
    perm = list(form.batch_dims) + [form.win_dims[form.nc.index(d)] for d in expanded] + \
        [form.win_dims[form.nc.index(d)] for d in form.box if d in form.nc]
    ucan = np.transpose(ublock, perm).reshape((len(coords),) + tuple(b - a for a, b in ubox))
    upd_axes = set() if us is None else {a for d in range(len(ushape)) for a in us.dim_axes(d)}
    op_axes = {a for d in range(len(form.shape)) for a in xs.dim_axes(d)}
    ok = np.flatnonzero(valid)
    dest = route(form, xs, coords[ok], ubox, mesh.coords, ms,
                 free_axes=tuple(sorted(upd_axes - op_axes)), require=tuple(sorted(op_axes - upd_axes)))
    my_lo = [s.start for s in xs.shard_slices(form.shape)]
    bstrides = np.array(block.strides, np.int64) // max(block.itemsize, 1) if block.size else \
        np.zeros(block.ndim, np.int64)

    def pack(pos, rngs):
        rel = tuple(slice(a - lo, b - lo) for (a, b), (lo, _) in zip(rngs, ubox))
        return np.ascontiguousarray(ucan[(ok[pos],) + rel])

    def targets(c, k, rngs, data):
        """Flat positions in this block, keys and values of updates ``c`` over box ranges ``rngs``."""
        shape = (len(c),) + tuple(b - a for a, b in rngs)
        flat = np.zeros(shape, np.int64)
        nb = len(rngs)
        for i, d in enumerate(form.point):
            flat += ((c[:, i] - my_lo[d]) * bstrides[d]).reshape((-1,) + (1,) * nb)
        for j, (d, (a, b)) in enumerate(zip(form.box, rngs)):
            r = (np.arange(a, b, dtype=np.int64) - my_lo[d]) * bstrides[d]
            flat += r.reshape((1,) + tuple(-1 if i == j else 1 for i in range(nb)))
        kk = np.broadcast_to(np.asarray(k).reshape((-1,) + (1,) * nb), shape)
        return flat.reshape(-1), kk.reshape(-1), np.asarray(data).reshape(-1)

    parts = []
    if me in dest:
        pos, rngs = dest[me]
        parts.append(targets(coords[ok[pos]], keys[ok[pos]], rngs, pack(pos, rngs)))
    if us is not None:  # updates split: each holder sends them to the owners of their targets
        npt = len(form.point)
        meta = [None] * size
        data = [None] * size
        for r, (pos, rngs) in dest.items():
            if r != me:
                meta[r] = np.ascontiguousarray(np.concatenate([keys[ok[pos]][:, None], coords[ok[pos]]], axis=1))
                data[r] = pack(pos, rngs)
        prog.count("scatter: updates to the owners of their targets",
                   sum(a.nbytes for a in meta + data if a is not None), same_everywhere=False)
        got = _exchange(comm, meta, None, "stablehlo.scatter")
        my_hi = [s.stop for s in xs.shard_slices(form.shape)]
        counts, boxes = [0] * size, {}
        for s in range(size):
            n = got[s].size // (8 * (1 + npt))
            if s == me or n == 0:
                continue
            sbox = box_ranges(form, block_ranges(form, us.shard_slices(ushape, s))[1])
            boxes[s] = tuple((max(a, my_lo[d]), min(b, my_hi[d])) for d, (a, b) in zip(form.box, sbox))
            counts[s] = n * int(np.prod([b - a for a, b in boxes[s]])) * ucan.dtype.itemsize
        vals = _exchange(comm, data, counts, "stablehlo.scatter")
        for s, rngs in boxes.items():
            m = got[s].view(np.int64).reshape(-1, 1 + npt)
            parts.append(targets(m[:, 1:], m[:, 0], rngs, vals[s].view(ucan.dtype)))
    if parts:
        idx_all = np.concatenate([p[0] for p in parts])
        key_all = np.concatenate([p[1] for p in parts])
        val_all = np.concatenate([p[2] for p in parts])
        apply_updates(block.reshape(-1), idx_all, key_all, val_all, kind, fn)
