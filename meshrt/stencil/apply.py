"""Stencils on DistributedTensors: a user's Numba kernel on boxes, halo exchange hidden behind it.

A kernel is plain ``@numba.njit`` code written on a box of *local* indices
(``lo``, ``hi``: tuples, half-open) of the local buffers (owned part plus
halos). `apply_stencil` starts the halo exchange of the fields the kernel
reads, runs the kernel on the inner box (cells that read no halo), waits,
fills ghost cells at non-periodic domain boundaries, then runs the kernel on
each rim box (ImplicitGlobalGrid's ``@hide_communication``, PETSc's
``DMGlobalToLocalBegin/End``)::

    @numba.njit(cache=True)
    def wave(lo, hi, u_new, u, u_old, c2):
        for i in range(lo[0], hi[0]):
            for j in range(lo[1], hi[1]):
                lap = (u[i - 1, j] + u[i + 1, j]) + (u[i, j - 1] + u[i, j + 1]) - 4.0 * u[i, j]
                u_new[i, j] = 2.0 * u[i, j] - u_old[i, j] + c2 * lap

    apply_stencil(wave, u_new, u, u_old, 0.1, reads=[u], boundary=Dirichlet(0.0))

Arguments after the kernel are passed to it in order, each DistributedTensor
as its local buffer. ``reads``: the fields whose neighbours (halos) the
kernel reads; they are exchanged together, one message per neighbour (see
`update_halos`), and must not be written by the kernel. The kernel covers the
owned cells of ``over`` (default: the first tensor argument), optionally
narrowed by ``where`` (slices of the *global* index space, e.g.
``(slice(1, -1), slice(None))`` to leave the walls of a staggered field
alone). The kernel may read a field of ``reads`` at most its halo width away
(that width also sets the rim); every tensor argument must be laid out so
that one local index is one global index in all of them (same split axes,
same shard starts less the low halo: equal shardings, or staggered ones from
`staggered`).

Boundary handling (``boundary=``, for every field of ``reads``, on dims that
are sharded, carry halos and are not periodic; periodic dims wrap through the
tensor's ``periodic`` flags): `Dirichlet` sets the ghost cells to a value,
`Neumann` mirrors the owned cells next to the boundary into them (zero
normal derivative for centred differences of any order); one spec for every
dim, or one per dim, or one ``(low, high)`` pair per dim. Ghosts are filled
dim by dim, so at a corner the later dim wins.

``overlap=False`` is the blocking variant: exchange, fill ghosts, one kernel
call on the whole box. Both give the same bits (the kernel runs once per
cell either way).
"""

from __future__ import annotations

import collections
import math
import operator
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ShardingError
from ..halo import HaloGroupExchange
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor

__all__ = ["apply_stencil", "update_halos", "fill_ghosts", "Dirichlet", "Neumann", "StencilPlan", "plan_stencil",
           "staggered", "t_eff", "clear_stencil_cache"]


@dataclass(frozen=True)
class Dirichlet:
    """A boundary condition: ghost cells hold ``value``.

    Pass it as ``boundary=`` of `apply_stencil` or `fill_ghosts`; it applies on
    sharded, non-periodic dims that carry halos.

    Parameters
    ----------
    value : float, optional
        The value written into the ghost cells; default 0.0.

    See Also
    --------
    Neumann, fill_ghosts, apply_stencil

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
    >>> u = DistributedTensor.from_global(np.arange(1.0, 5.0), s)
    >>> fill_ghosts(u, Dirichlet(-1.0))
    >>> u.local
    array([-1.,  1.,  2.,  3.,  4., -1.])
    """

    value: float = 0.0


@dataclass(frozen=True)
class Neumann:
    """A boundary condition: ghost cells mirror the owned cells next to the boundary.

    ``u[-1-t] = u[t]``: a zero normal derivative for centred differences of any
    order.  Pass it as ``boundary=`` of `apply_stencil` or `fill_ghosts`.

    See Also
    --------
    Dirichlet, fill_ghosts, apply_stencil

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
    >>> u = DistributedTensor.from_global(np.arange(1.0, 5.0), s)
    >>> fill_ghosts(u, Neumann())
    >>> u.local
    array([1., 1., 2., 3., 4., 4.])
    """


_BC_TYPES = (type(None), Dirichlet, Neumann)


def _bc_table(spec, ndim: int) -> tuple:
    """``spec`` as one ``(low, high)`` pair of None/Dirichlet/Neumann per dim."""
    if isinstance(spec, _BC_TYPES):
        return ((spec, spec),) * ndim
    try:
        per_dim = list(spec)
    except TypeError:
        raise ShardingError(f"boundary: {spec!r} is not Dirichlet(value), Neumann(), None or a per-dim "
                            "sequence of them") from None
    if len(per_dim) != ndim:
        raise ShardingError(f"boundary: {len(per_dim)} entries for a {ndim}-d field; give one per dim")
    out = []
    for d, e in enumerate(per_dim):
        pair = (e, e) if isinstance(e, _BC_TYPES) else tuple(e) if isinstance(e, (list, tuple)) else None
        if pair is None or len(pair) != 2 or not all(isinstance(b, _BC_TYPES) for b in pair):
            raise ShardingError(f"boundary: dim {d} entry {e!r} is not Dirichlet(value), Neumann(), None "
                                "or a (low, high) pair of them")
        out.append(pair)
    return tuple(out)


# ---------------------------------------------------------------------------
# planning (pure, no MPI)
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class StencilPlan:
    """Boxes and ghost fills of one device; boxes are ``((lo0, hi0), ...)`` in local indices.

    ``inner`` reads no halo; ``inner`` and ``rims`` partition ``box``
    (empty boxes dropped). ``ghosts[f]`` lists the fills of read field ``f``
    as ``(dst, src, value)``: ``local[dst] = local[src]`` when ``src`` is
    given, else ``local[dst] = value``.
    """

    device: int
    box: tuple
    inner: Optional[tuple]
    rims: tuple
    ghosts: tuple

    @property
    def boxes(self) -> tuple:
        """Every non-empty box the kernel runs on, inner first."""
        return ((self.inner,) if self.inner else ()) + self.rims


def _empty(box) -> bool:
    return any(hi <= lo for lo, hi in box)


def _partition(box, inner):
    """``inner`` clipped to ``box``, and slabs of ``box`` around it, dim by dim."""
    cur, rims = list(box), []
    for d, ((lo, hi), (ilo, ihi)) in enumerate(zip(box, inner)):
        ilo = min(max(ilo, lo), hi)
        ihi = min(max(ihi, ilo), hi)
        if ilo > lo:
            rims.append(tuple(cur[:d]) + ((lo, ilo),) + tuple(cur[d + 1:]))
        if hi > ihi:
            rims.append(tuple(cur[:d]) + ((ihi, hi),) + tuple(cur[d + 1:]))
        cur[d] = (ilo, ihi)
    return tuple(cur), tuple(r for r in rims if not _empty(r))


def _where_ranges(where, shape):
    if where is None:
        return tuple((0, n) for n in shape)
    where = list(where) if isinstance(where, (list, tuple)) else [where]
    if len(where) > len(shape):
        raise ShardingError(f"where: {len(where)} entries for a {len(shape)}-d field")
    out = []
    for d, n in enumerate(shape):
        w = where[d] if d < len(where) else None
        if w is None:
            w = slice(None)
        if not isinstance(w, slice):
            raise ShardingError(f"where: dim {d} entry {w!r} is not a slice of global indices")
        start, stop, step = w.indices(n)
        if step != 1:
            raise ShardingError(f"where: dim {d} slice {w} has step {step}; only step 1")
        out.append((start, max(start, stop)))
    return tuple(out)


def plan_stencil(fields, over: int, reads, where=None, boundary=None, device=None) -> StencilPlan:
    """The stencil plan of ``device`` (linear index; default this process).

    ``fields``: ``(sharding, global_shape, periodic)`` per tensor argument;
    ``over`` and ``reads`` index into it. Pure and cached; every check looks
    at every device, so a bad layout raises on every process alike.

    >>> from meshrt.mesh import AbstractMesh
    >>> s = Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[1, 1])
    >>> p = plan_stencil([(s, (8, 4), None), (s, (8, 4), None)], 0, [1], device=1)
    >>> p.box, p.inner, p.rims
    (((1, 5), (0, 4)), ((2, 4), (0, 4)), (((1, 2), (0, 4)), ((4, 5), (0, 4))))
    """
    fields = tuple((s, tuple(g), None if p is None else tuple(p)) for s, g, p in fields)
    bcs = _bc_table(boundary, len(fields[over][1]))
    where = _where_ranges(where, fields[over][1])
    mesh = fields[over][0].mesh
    if device is None:
        device = mesh.rank
    return _plan(fields, over, tuple(reads), where, bcs, device)


_plan_cache: dict = {}


def _plan(fields, over, reads, where, bcs, device) -> StencilPlan:
    key = (fields, over, reads, where, bcs, device)
    plan = _plan_cache.get(key)
    if plan is None:
        _check_layout(fields, reads, bcs)
        plan = _make_plan(fields, over, reads, where, bcs, device)
        if len(_plan_cache) > 1024:
            _plan_cache.clear()
        _plan_cache[key] = plan
    return plan


def _check_layout(fields, reads, bcs):
    s0, g0, _ = fields[0]
    for i, (s, g, _) in enumerate(fields):
        if not isinstance(s, Sharding):
            raise ShardingError(f"fields[{i}]: {s!r} is not a Sharding")
        if s.mesh != s0.mesh:
            raise ShardingError(f"tensor argument {i}: mesh {s.mesh} differs from argument 0's {s0.mesh}")
        if len(g) != len(g0):
            raise ShardingError(f"tensor argument {i}: {len(g)}-d (shape {g}), argument 0 is {len(g0)}-d ({g0})")
        if s.is_partial:
            raise ShardingError(f"tensor argument {i}: {s} is partial; reduce it before a stencil")
        for d in range(len(g)):
            if s.dim_axes(d) != s0.dim_axes(d):
                raise ShardingError(
                    f"tensor argument {i}: dim {d} is split along mesh axes {list(s.dim_axes(d))}, argument 0's "
                    f"along {list(s0.dim_axes(d))}; a stencil needs one layout (local index = global index - base)")
    # One local index must name one global index in every field, on every device.
    offs = [s.dim_offsets(g) for s, g, _ in fields]
    for d in range(len(g0)):
        base0 = [o - fields[0][0].halo_widths(d)[0] for o in offs[0][d][:-1]]
        for i, (s, g, _) in enumerate(fields):
            base = [o - s.halo_widths(d)[0] for o in offs[i][d][:-1]]
            if base != base0:
                raise ShardingError(
                    f"tensor argument {i}: dim {d} shards start at {list(offs[i][d][:-1])} with low halo "
                    f"{s.halo_widths(d)[0]}, argument 0's at {list(offs[0][d][:-1])} with low halo "
                    f"{fields[0][0].halo_widths(d)[0]}; local indices would name different global cells")
    for f in reads:
        s, g, per = fields[f]
        for d in s.sharded_dims:
            if per is not None and per[d]:
                continue
            lo, hi = s.halo_widths(d)
            widths = [b - a for a, b in zip(offs[f][d], offs[f][d][1:])]
            for side, (bc, h, w, k) in enumerate(((bcs[d][0], lo, widths[0], 0),
                                                  (bcs[d][1], hi, widths[-1], len(widths) - 1))):
                if isinstance(bc, Neumann) and h > w:
                    raise ShardingError(
                        f"boundary: Neumann on dim {d} {'high' if side else 'low'} side mirrors {h} cells, but "
                        f"shard {k} of tensor argument {f} owns only {w} (shape {g})")


def _make_plan(fields, over, reads, where, bcs, device) -> StencilPlan:
    s_over, g_over, _ = fields[over]
    owned = s_over.shard_slices(g_over, device)
    box = []
    for d, sl in enumerate(owned):
        base = sl.start - s_over.halo_widths(d)[0]
        lo, hi = max(sl.start, where[d][0]), min(sl.stop, where[d][1])
        box.append((lo - base, max(lo, hi) - base))
    box = tuple(box)
    # Cells that read no halo of any read field, the kernel's reach being the halo width.
    inner = list(box)
    for f in reads:
        s, g, _ = fields[f]
        for d, n in enumerate(s.shard_shape(g, device)):
            lo, hi = s.halo_widths(d)
            a, b = inner[d]
            inner[d] = (max(a, 2 * lo), min(b, lo + n - hi))
    inner, rims = _partition(box, inner)
    ghosts = tuple(_ghosts(*fields[f], bcs, device) for f in reads)
    return StencilPlan(device, box, None if _empty(box) or _empty(inner) else inner,
                       () if _empty(box) else rims, ghosts)


def _reversed(start: int, stop: int) -> slice:
    """``[start, stop)`` read backwards (the mirror image of a ghost slab)."""
    return slice(stop - 1, start - 1 if start > 0 else None, -1)


def _ghosts(s: Sharding, g, per, bcs, device) -> tuple:
    local = s.local_shape(g, device)
    owned = s.shard_shape(g, device)
    ops = []
    for d in s.sharded_dims:
        if per is not None and per[d]:
            continue
        lo, hi = s.halo_widths(d)
        k, n = s.shard_index(d, device), s.dim_split_size(d)
        full = [slice(0, m) for m in local]
        e = lo + owned[d]
        for bc, h, at_edge, dst, src in ((bcs[d][0], lo, k == 0, slice(0, lo), _reversed(lo, 2 * lo)),
                                         (bcs[d][1], hi, k == n - 1, slice(e, e + hi), _reversed(e - hi, e))):
            if bc is None or not h or not at_edge:
                continue
            ix = tuple(full[:d]) + (dst,) + tuple(full[d + 1:])
            if isinstance(bc, Dirichlet):
                ops.append((ix, None, bc.value))
            else:
                ops.append((ix, tuple(full[:d]) + (src,) + tuple(full[d + 1:]), None))
    return tuple(ops)


# ---------------------------------------------------------------------------
# execution (MPI through the halo exchanges)
# ---------------------------------------------------------------------------

# Grouped exchanges and prepared stencil calls, most recently used last. An
# entry keeps its tensors or arrays alive, so the ids in its key are never
# reused while it lives; evicted exchanges are freed (a local operation).
_CACHE_SIZE = 32
_group_cache: "collections.OrderedDict" = collections.OrderedDict()
_call_cache: "collections.OrderedDict" = collections.OrderedDict()
_halos_cache: "collections.OrderedDict" = collections.OrderedDict()  # update_halos: tensors -> starters


def clear_stencil_cache() -> None:
    """Free every grouped exchange cached by `update_halos` and `apply_stencil`."""
    _call_cache.clear()
    _halos_cache.clear()
    while _group_cache:
        _, (ex, _) = _group_cache.popitem()
        ex.free()
    _plan_cache.clear()


def _lru_put(cache, key, value, on_evict=None):
    cache[key] = value
    while len(cache) > _CACHE_SIZE:
        _, old = cache.popitem(last=False)
        if on_evict is not None:
            on_evict(old)


def _compat_key(t: DistributedTensor):
    s, per = t.sharding, t.periodic
    return (s.mesh, tuple((d, s.dim_axes(d), bool(per and per[d])) for d in s.sharded_dims))


def _starters(tensors) -> list:
    """One ``start()`` per exchange the tensors need: grouped by compatible sharding."""
    for i, t in enumerate(tensors):
        if not isinstance(t, DistributedTensor):
            raise ShardingError(f"tensors[{i}]: {type(t).__name__} is not a DistributedTensor")
    if len({id(t) for t in tensors}) != len(tensors):
        raise ShardingError("tensors: a tensor is listed twice")
    groups: dict = {}
    for t in tensors:
        groups.setdefault(_compat_key(t), []).append(t)
    out = []
    for ts in groups.values():
        if len(ts) == 1:
            out.append((ts[0], None))
            continue
        key = tuple((id(t.local), t.sharding, t.global_shape, t.periodic) for t in ts)
        entry = _group_cache.get(key)
        if entry is None or entry[0].freed or any(a is not t.local for a, t in zip(entry[1], ts)):
            ex = HaloGroupExchange([t.local for t in ts], [t.sharding for t in ts], [t.global_shape for t in ts],
                                   [t.periodic for t in ts])
            old = _group_cache.pop(key, None)
            if old is not None:
                old[0].free()
            entry = (ex, tuple(t.local for t in ts))
            _lru_put(_group_cache, key, entry, lambda e: e[0].free())
        else:
            _group_cache.move_to_end(key)
        out.append((None, entry[0]))
    return out


def _still_valid(entry, tensors) -> bool:
    """A cached (tensors, starters) entry still fits these tensors and its exchanges live."""
    if not all(map(operator.is_, entry[0], tensors)):  # (map: this runs on every update_halos call)
        return False
    for _, ex in entry[1]:
        if ex is not None and ex.freed:
            return False
    return True


class _Handles:
    __slots__ = ("_hs",)

    def __init__(self, hs):
        self._hs = hs

    def wait(self):
        for h in self._hs:
            h.wait()


def _start(starters):
    if len(starters) == 1:  # one exchange (one tensor read, or one compatible group): its own handle
        t, ex = starters[0]
        return t.update_halo(False) if ex is None else ex.start()
    return _Handles([t.update_halo(False) if ex is None else ex.start() for t, ex in starters])


def update_halos(*tensors, wait: bool = True):
    """Update the halos of several tensors, one message per neighbour direction for all of them.

    IGG's ``update_halo!(A, B, C)``: tensors of compatible shardings (same
    mesh, split axes and periodic flags on the sharded dims; halo widths,
    dtypes and sizes may differ) share each message (faces, edges, corners);
    others get their own exchange.  Halos at a non-periodic domain boundary are
    left untouched.

    Parameters
    ----------
    *tensors : DistributedTensor
        The tensors whose halos are filled, in place.
    wait : bool, optional
        False returns a handle whose ``.wait()`` finishes the update.

    Returns
    -------
    None or handle
        None when ``wait`` is true.

    Raises
    ------
    ShardingError
        An argument is not a `DistributedTensor`, or its layout does not allow a
        halo exchange.

    See Also
    --------
    DistributedTensor.update_halo, update_halo, apply_stencil

    Notes
    -----
    The exchange is built once per tuple of tensors and cached
    (`clear_stencil_cache` frees it); later calls only pack, start and wait.
    Collective: every process must call it with the same tensors in the same
    order.

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
    >>> u = DistributedTensor.from_global(np.arange(1.0, 5.0), s, periodic=True)
    >>> v = DistributedTensor.from_global(np.arange(10, 14), s, periodic=True)
    >>> update_halos(u, v)
    >>> u.local, v.local
    (array([4., 1., 2., 3., 4., 1.]), array([13, 10, 11, 12, 13, 10]))
    >>> h = update_halos(u, v, wait=False)      # overlap work with the messages
    >>> _ = h.wait()
    """
    key = tuple(map(id, tensors))
    entry = _halos_cache.get(key)
    if entry is None or not _still_valid(entry, tensors):
        entry = (tensors, _starters(tensors))
        _halos_cache.pop(key, None)
        _lru_put(_halos_cache, key, entry)
    else:
        _halos_cache.move_to_end(key)
    h = _start(entry[1])
    if wait:
        h.wait()
        return None
    return h


def _field(t: DistributedTensor):
    return (t.sharding, t.global_shape, t.periodic)


def fill_ghosts(tensor: DistributedTensor, boundary) -> None:
    """Fill the ghost cells of ``tensor`` at its non-periodic domain boundaries.

    Only the halos at the domain boundary are written (see the module doc);
    halos between shards are `update_halos`' job.  Ghosts are filled dim by dim,
    so at a corner the later dim wins.

    Parameters
    ----------
    tensor : DistributedTensor
        The tensor whose boundary ghost cells are filled, in place.
    boundary : Dirichlet or Neumann or sequence
        One spec for every dim, one per dim, or one ``(low, high)`` pair per
        dim; None leaves a boundary alone.

    Raises
    ------
    ShardingError
        ``tensor`` is not a `DistributedTensor`, or ``boundary`` is malformed.

    See Also
    --------
    Dirichlet, Neumann, apply_stencil

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
    >>> u = DistributedTensor.from_global(np.arange(1.0, 5.0), s)
    >>> fill_ghosts(u, [(Dirichlet(-1.0), Neumann())])
    >>> u.local
    array([-1.,  1.,  2.,  3.,  4.,  4.])
    """
    if not isinstance(tensor, DistributedTensor):
        raise ShardingError(f"tensor: {type(tensor).__name__} is not a DistributedTensor")
    plan = _plan((_field(tensor),), 0, (0,), tuple((0, n) for n in tensor.global_shape),
                 _bc_table(boundary, len(tensor.global_shape)), tensor.mesh.rank)
    _run_ghosts(tensor.local, plan.ghosts[0])


def _run_ghosts(local, ops):
    for dst, src, value in ops:
        if src is None:
            local[dst] = value
        else:
            local[dst] = local[src]


def _hashable(v):
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if isinstance(v, (list, tuple)):
        return tuple(_hashable(e) for e in v)
    return v


class _Call:
    """A prepared `apply_stencil`: its tensors, plan, exchanges and ghost fills."""

    __slots__ = ("tensors", "plan", "starters", "fills", "inner", "rims", "box")

    def __init__(self, tensors, plan, starters, fills):
        self.tensors, self.plan, self.starters, self.fills = tensors, plan, starters, fills
        self.inner = tuple(zip(*plan.inner)) if plan.inner else None
        self.rims = tuple(tuple(zip(*b)) for b in plan.rims)
        self.box = None if _empty(plan.box) else tuple(zip(*plan.box))


def _prepare(tensors, reads, over, where, boundary) -> _Call:
    order = {id(t): i for i, t in enumerate(tensors)}
    read_pos = []
    for r in reads:
        if id(r) not in order:
            raise ShardingError(f"reads: a tensor of global shape {getattr(r, 'global_shape', r)!r} is not among "
                                "the kernel's arguments")
        read_pos.append(order[id(r)])
    if over is None:
        over_pos = 0
    elif id(over) in order:
        over_pos = order[id(over)]
    else:
        raise ShardingError("over: the tensor is not among the kernel's arguments")
    if over_pos in read_pos:
        raise ShardingError("reads: the tensor the kernel writes (over) is also read through its halos; "
                            "its halos would be sent while the kernel overwrites them: use two buffers")
    fields = tuple(_field(t) for t in tensors)
    g = fields[over_pos][1]
    plan = _plan(fields, over_pos, tuple(read_pos), _where_ranges(where, g), _bc_table(boundary, len(g)),
                 tensors[0].mesh.rank)
    fills = tuple((r.local, ops) for r, ops in zip(reads, plan.ghosts) if ops)
    return _Call(tensors, plan, _starters(reads) if reads else (), fills)


def apply_stencil(kernel, *args, reads=(), over=None, where=None, boundary=None, overlap: bool = True):
    """Run ``kernel(lo, hi, *args)`` over the owned box of ``over``, halo exchange hidden behind it.

    Starts the halo exchange of ``reads``, runs the kernel on the inner box
    (cells that read no halo), waits, fills ghost cells at non-periodic domain
    boundaries, then runs the kernel on each rim box.  See the module docstring
    for the layout rules.

    Parameters
    ----------
    kernel : callable
        ``kernel(lo, hi, *locals)``, usually ``@numba.njit``: loops over the
        half-open box ``lo``/``hi`` (tuples of local indices) of the local
        buffers (owned part plus halos).
    *args : DistributedTensor or object
        Passed to the kernel in order, each `DistributedTensor` as its local
        buffer; at least one must be a tensor.
    reads : sequence of DistributedTensor, optional
        The fields whose halos the kernel reads; they are exchanged together and
        must not be written by the kernel.
    over : DistributedTensor, optional
        Whose owned cells the kernel covers; default the first tensor argument.
    where : tuple of slice, optional
        Narrow the covered cells to these slices of the *global* index space.
    boundary : Dirichlet or Neumann or sequence, optional
        Ghost-cell rule for ``reads`` at non-periodic boundaries (as in
        `fill_ghosts`).
    overlap : bool, optional
        False: exchange, fill ghosts, then one kernel call on the whole box
        (same bits, no overlap).

    Returns
    -------
    None

    Raises
    ------
    ShardingError
        No tensor among ``args``, or tensors laid out so that one local index is
        not one global index in all of them, or a kernel reach wider than a
        read field's halo (raised on every process alike).

    See Also
    --------
    update_halos, fill_ghosts, staggered

    Notes
    -----
    Collective (through the halo exchange).  The plan, exchanges and boxes are
    prepared on the first call with given tensors and reused after; the last 32
    prepared calls keep their tensors alive (`clear_stencil_cache` drops them
    and frees their exchanges).

    Examples
    --------
    A 3-point average with zero ghosts (a plain Python kernel; use
    ``numba.njit`` for speed):

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> s = Sharding(Mesh((-1,), ("x",)), [[0]], halo_sizes=[1, 1])
    >>> def smooth(lo, hi, out, u):
    ...     for i in range(lo[0], hi[0]):
    ...         out[i] = (u[i - 1] + u[i] + u[i + 1]) / 3
    >>> u = DistributedTensor.from_global(np.array([3.0, 6.0, 9.0, 3.0]), s)
    >>> v = DistributedTensor.zeros((4,), s)
    >>> apply_stencil(smooth, v, u, reads=[u], boundary=Dirichlet(0.0))
    >>> v.gather()
    array([3., 6., 6., 4.])
    """
    # (runs every time step: list comprehensions and the cache check in C, not generators)
    tensors = tuple([a for a in args if isinstance(a, DistributedTensor)])
    if not tensors:
        raise ShardingError("args: no DistributedTensor among the kernel's arguments")
    if isinstance(reads, DistributedTensor):
        reads = (reads,)
    key = (tuple(map(id, tensors)), tuple(map(id, reads)), id(over),
           None if where is None else _hashable(where), None if boundary is None else _hashable(boundary))
    call = _call_cache.get(key)
    if call is None or not _still_valid((call.tensors, call.starters), tensors):
        call = _prepare(tensors, tuple(reads), over, where, boundary)
        _call_cache.pop(key, None)
        _lru_put(_call_cache, key, call)
    else:
        _call_cache.move_to_end(key)
    local = [a.local if isinstance(a, DistributedTensor) else a for a in args]
    h = _start(call.starters) if call.starters else None
    if overlap and call.inner is not None:
        kernel(*call.inner, *local)
    if h is not None:
        h.wait()
    for buf, ops in call.fills:
        _run_ghosts(buf, ops)
    if overlap:
        for lo, hi in call.rims:
            kernel(lo, hi, *local)
    elif call.box is not None:
        kernel(*call.box, *local)


# ---------------------------------------------------------------------------
# staggered fields, metrics
# ---------------------------------------------------------------------------

def staggered(sharding: Sharding, global_shape, dims):
    """The sharding and shape of a field one longer along ``dims`` on the cells' layout.

    For faces and edges: face ``i`` lies between cells ``i - 1`` and ``i``; each
    shard owns the faces below its cells (the shard's first face is the
    boundary with the shard below) and the last shard also owns the top face,
    so every face has one owner and one local index names the face below the
    cell of the same index.  Halos stay those of ``sharding``: a face's low halo
    holds the neighbour's top faces.

    Parameters
    ----------
    sharding : Sharding
        The cells' sharding.
    global_shape : sequence of int
        The cells' global shape.
    dims : int or sequence of int
        The tensor dims along which the field is one longer.

    Returns
    -------
    sharding : Sharding
        The field's sharding (explicit ``sharded_dims_offsets``).
    shape : tuple of int
        The field's global shape.

    Raises
    ------
    ShardingError
        ``global_shape`` does not fit ``sharding``, or a dim is out of range.

    See Also
    --------
    apply_stencil

    Examples
    --------
    >>> from meshrt.mesh import AbstractMesh
    >>> s = Sharding(AbstractMesh((4,)), [[0]], halo_sizes=[1, 1])
    >>> sx, shape = staggered(s, (10, 6), [0])
    >>> shape, sx.sharded_dims_offsets
    ((11, 6), (0, 2, 4, 7, 11))
    """
    shape = list(sharding.check_shape(global_shape))
    dims = [dims] if isinstance(dims, int) else list(dims)
    for d in dims:
        if not 0 <= d < len(shape):
            raise ShardingError(f"dims: {d} is not a dim of a {len(shape)}-d field")
    offs = sharding.dim_offsets(shape)
    flat = []
    for d in sharding.sharded_dims:
        o = list(offs[d])
        if d in dims:
            o[-1] += 1
        flat += o
    for d in dims:
        shape[d] += 1
    if not sharding.sharded_dims:
        return sharding, tuple(shape)
    return sharding.replace(sharded_dims_offsets=flat), tuple(shape)


def _nbytes(x) -> int:
    if isinstance(x, DistributedTensor):
        return math.prod(x.global_shape) * x.dtype.itemsize
    if isinstance(x, np.ndarray):
        return x.nbytes
    if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
        return int(x)
    raise TypeError(f"t_eff: {type(x).__name__} is neither a tensor, an array nor a byte count")


def t_eff(seconds_per_iteration: float, *, updated=(), read=()) -> float:
    """ParallelStencil's effective memory throughput in GB/s: ``(2 D_u + D_k) / t_it``.

    Halo traffic and temporaries do not count: the metric is what a perfect
    code would have to move.

    Parameters
    ----------
    seconds_per_iteration : float
        The measured time of one iteration.
    updated : sequence, optional
        The fields each iteration must read and write (counted twice).
    read : sequence, optional
        The fields it only reads.  In both, tensors count their global size,
        arrays their bytes, ints are bytes.

    Returns
    -------
    float
        Gigabytes per second.

    Raises
    ------
    ValueError
        ``seconds_per_iteration`` is not positive.
    TypeError
        A field is neither a tensor, an array nor a byte count.

    Examples
    --------
    >>> round(t_eff(0.01, updated=[np.zeros((1000, 1000))], read=[8_000_000]), 3)
    2.4
    """
    if not seconds_per_iteration > 0:
        raise ValueError(f"seconds_per_iteration: {seconds_per_iteration!r} must be > 0")
    total = 2 * sum(_nbytes(x) for x in updated) + sum(_nbytes(x) for x in read)
    return total / seconds_per_iteration / 1e9
