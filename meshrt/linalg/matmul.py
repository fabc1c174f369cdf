"""matmul, dot, tensordot and einsum on DistributedTensors: sharding propagation, then local numpy.

Every call becomes one einsum-like `Contraction` (a label per operand dim), and
one pure, cached planner (`plan_contraction`) picks the sharding each label
has during the local multiply, in the spirit of PyTorch DTensor's op
strategies and Shardy's op sharding rules:

* a label split on mesh axes splits every operand dim (and the result dim)
  carrying it on those axes: batch and free dims keep their axes, a
  contracting (or summed) label makes the result *partial* over its axes;
* a mesh axis serves one label only (device ``p`` must hold matching blocks
  of both operands), so when the operands' shardings disagree the planner
  reshards one of them;
* among the label assignments built from the operands' (and ``out_sharding``'s)
  own axes, it takes the one moving the fewest elements: the operands'
  reshards plus the result's reduction (``all_reduce``, or ``reduce_scatter``
  when the requested result is split on the partial axes).

The result is reduced to a non-partial sharding unless ``partial_ok=True`` or
an ``out_sharding`` says otherwise.  Planning is pure and works on an
`AbstractMesh`; its volume model sums per-dimension interval lengths over the
mesh axes involved (no loop over device pairs):

>>> from meshrt import AbstractMesh, Sharding
>>> mesh = AbstractMesh((4,), ("x",))
>>> rows, cols = Sharding(mesh, [["x"]]), Sharding(mesh, [[], ["x"]])
>>> plan = plan_contraction(matmul_contraction((8, 6), (6, 4)), (rows, Sharding(mesh, [])), ((8, 6), (6, 4)))
>>> plan.result == rows, plan.estimated_volume
(True, 0)
>>> plan = plan_contraction(matmul_contraction((8, 6), (6, 4)), (cols, rows), ((8, 6), (6, 4)))
>>> str(plan.result), str(plan.final)  # contracting dim split on x in both: partial, then all_reduce
('shard.sharding @mesh split_axes = [[]] partial = sum[0]', 'shard.sharding @mesh split_axes = [[]]')

`explain_matmul(a, b)` returns the plan `matmul(a, b)` runs; print it to read
the collectives (the operands' reshards with their volume, the reduction).
"""

from __future__ import annotations

import functools
import itertools
import math
import numbers
import string
from dataclasses import dataclass, field

import numpy as np

from ..runtime import mpi as _mpi
from ..errors import ShardingError
from ..reshard import ReshardPlan, execute_reshard, plan_reshard, scatter_target
from ..sharding.spec import Sharding, split_offsets
from ..tensor.distributed_tensor import DistributedTensor
from ..tensor.dispatch import implements
from ..tensor import fastpath as _fastpath

__all__ = [
    "Contraction", "ContractionPlan", "plan_contraction", "matmul_contraction", "dot_contraction",
    "tensordot_contraction", "einsum_contraction", "matmul", "dot", "tensordot", "einsum",
    "explain_matmul", "explain_einsum",
]

_LETTERS = string.ascii_letters
_MAX_COMBOS = 1024  # label assignments tried exhaustively; beyond that, the greedy candidates only


@dataclass(frozen=True)
class Contraction:
    """Which operand dims meet, as einsum labels: ``inputs`` one label string per
    operand, ``output`` the result's labels.  ``replicated`` labels must stay
    unsplit (matmul's broadcast size-1 batch dims).  ``op`` names the call for
    messages and ``explain``.

    >>> Contraction(("ij", "jk"), "ik", op="matmul").subscripts
    'ij,jk->ik'
    """

    inputs: tuple
    output: str
    replicated: frozenset = frozenset()
    op: str = "einsum"

    @property
    def subscripts(self) -> str:
        return ",".join(self.inputs) + "->" + self.output


# -- the frontends' contractions (pure: shapes in, Contraction out) -------------------------------


def matmul_contraction(shape_a, shape_b) -> Contraction:
    """``np.matmul``'s dims as labels: 1-D operands, broadcast batch dims.

    >>> matmul_contraction((5, 2, 3), (3, 4)).subscripts
    'abc,cd->abd'
    >>> c = matmul_contraction((1, 2, 3), (6, 3, 4)); c.subscripts, sorted(c.replicated)
    ('acd,bde->bce', ['a'])
    """
    sa, sb = tuple(shape_a), tuple(shape_b)
    for i, s in enumerate((sa, sb)):
        if not s:
            raise ValueError(f"matmul: operand {i} is 0-d (shape ()); matmul needs at least one dim, use * for scalars")
    names = iter(_LETTERS)
    ba, bb = sa[:-2], sb[:-2]
    nbatch = max(len(ba), len(bb))
    la, lb, lo, replicated = [], [], [], set()
    for pos in range(nbatch):
        da = ba[pos - nbatch + len(ba)] if pos >= nbatch - len(ba) else None
        db = bb[pos - nbatch + len(bb)] if pos >= nbatch - len(bb) else None
        if da is None or db is None or da == db:
            label = next(names)
            if da is not None:
                la.append(label)
            if db is not None:
                lb.append(label)
            lo.append(label)
        elif da == 1 or db == 1:
            one, other = next(names), next(names)  # the size-1 dim is summed away (a squeeze), the other kept
            la.append(one if da == 1 else other)
            lb.append(other if da == 1 else one)
            lo.append(other)
            replicated.add(one)
        else:
            raise ValueError(f"matmul: the batch dims of shapes {sa} and {sb} do not broadcast ({da} vs {db})")
    i = next(names) if len(sa) > 1 else None
    j = next(names)
    k = next(names) if len(sb) > 1 else None
    kb = sb[-2] if len(sb) > 1 else sb[-1]
    if sa[-1] != kb:
        raise ValueError(f"matmul: shapes {sa} and {sb} do not match in the contracted dim ({sa[-1]} vs {kb})")
    la += [i, j] if i else [j]
    lb += [j, k] if k else [j]
    lo += [x for x in (i, k) if x]
    return Contraction(("".join(la), "".join(lb)), "".join(lo), frozenset(replicated), "matmul")


def dot_contraction(shape_a, shape_b) -> Contraction:
    """``np.dot``'s dims (both operands at least 1-D): a's last dim with b's
    second-to-last (or only) dim.

    >>> dot_contraction((2, 3, 4), (5, 4, 6)).subscripts
    'abc,dce->abde'
    """
    sa, sb = tuple(shape_a), tuple(shape_b)
    names = iter(_LETTERS)
    la = [next(names) for _ in sa[:-1]]
    j = next(names)
    lb = [next(names) for _ in sb[:-2]]
    last = [next(names)] if len(sb) > 1 else []
    kb = sb[-2] if len(sb) > 1 else sb[-1]
    if sa[-1] != kb:
        raise ValueError(f"dot: shapes {sa} and {sb} not aligned: {sa[-1]} (dim {len(sa) - 1}) != {kb}")
    return Contraction(("".join(la) + j, "".join(lb) + j + "".join(last)), "".join(la + lb + last), op="dot")


def normalize_tensordot_axes(axes, na: int, nb: int) -> tuple:
    """``np.tensordot``'s ``axes`` (an int N, or a pair of ints or sequences) as two tuples of dims."""
    if isinstance(axes, numbers.Integral) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(na, nb):
            raise ValueError(f"tensordot: axes={n} is out of range for operands of {na} and {nb} dims")
        return tuple(range(na - n, na)), tuple(range(n))
    try:
        xa, xb = axes
    except (TypeError, ValueError):
        raise TypeError(f"tensordot: axes={axes!r}; expected an int or a pair (axes_a, axes_b)") from None
    out = []
    for x, n, which in ((xa, na, "a"), (xb, nb, "b")):
        x = (x,) if isinstance(x, numbers.Integral) else tuple(x)
        dims = []
        for d in x:
            if isinstance(d, bool) or not isinstance(d, numbers.Integral) or not -n <= d < n:
                raise ValueError(f"tensordot: axes={axes!r}: {d!r} is not a dim of operand {which} ({n} dims)")
            dims.append(int(d) % n)
        if len(set(dims)) != len(dims):
            raise ValueError(f"tensordot: axes={axes!r}: operand {which} lists a dim twice")
        out.append(tuple(dims))
    if len(out[0]) != len(out[1]):
        raise ValueError(f"tensordot: axes={axes!r}: {len(out[0])} dims of a against {len(out[1])} dims of b")
    return out[0], out[1]


def tensordot_contraction(shape_a, shape_b, axes=2) -> Contraction:
    """``np.tensordot``'s dims.

    >>> tensordot_contraction((2, 3, 4), (4, 3, 5), axes=([1, 2], [1, 0])).subscripts
    'abc,cbd->ad'
    """
    sa, sb = tuple(shape_a), tuple(shape_b)
    xa, xb = normalize_tensordot_axes(axes, len(sa), len(sb))
    for da, db in zip(xa, xb):
        if sa[da] != sb[db]:
            raise ValueError(f"tensordot: shape mismatch for axes={axes!r}: a dim {da} has {sa[da]}, "
                             f"b dim {db} has {sb[db]}")
    names = iter(_LETTERS)
    la = [next(names) for _ in sa]
    lb = [la[xa[xb.index(d)]] if d in xb else next(names) for d in range(len(sb))]
    out = [la[d] for d in range(len(sa)) if d not in xa] + [lb[d] for d in range(len(sb)) if d not in xb]
    return Contraction(("".join(la), "".join(lb)), "".join(out), op="tensordot")


def einsum_contraction(subscripts: str, shapes) -> Contraction:
    """Parse einsum-lite: one or two operands, letters only (no ``...``), no label
    twice in one operand, each label at most twice in all; implicit output as numpy.

    >>> einsum_contraction("ij,jk", [(2, 3), (3, 4)]).subscripts
    'ij,jk->ik'
    >>> einsum_contraction("ij->j", [(2, 3)]).subscripts
    'ij->j'
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a str, got {subscripts!r}")
    text = subscripts.replace(" ", "")

    def bad(why):
        return ValueError(f"einsum: subscripts {subscripts!r}: {why}")

    if "." in text:
        raise bad("ellipsis ('...') is not supported on DistributedTensors; name every dim")
    lhs, arrow, out = text.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise bad(f"{len(terms)} operand terms for {len(shapes)} operands")
    if not 1 <= len(terms) <= 2:
        raise bad(f"{len(terms)} operands; einsum on DistributedTensors takes one or two")
    for t, shape in zip(terms, shapes):
        if not all(c in _LETTERS for c in t):
            raise bad(f"term {t!r} has characters other than letters")
        if len(set(t)) != len(t):
            raise bad(f"term {t!r} repeats a label (a diagonal); not supported")
        if len(t) != len(shape):
            raise bad(f"term {t!r} has {len(t)} labels for an operand of shape {tuple(shape)}")
    counts = {c: lhs.count(c) for c in set(lhs) - {","}}  # at most 2: two terms, no label twice in one
    if not arrow:
        out = "".join(sorted(c for c, n in counts.items() if n == 1))
    if not all(c in _LETTERS for c in out) or len(set(out)) != len(out):
        raise bad(f"output {out!r} must be distinct letters")
    for c in out:
        if c not in counts:
            raise bad(f"output label {c!r} is in no operand")
    sizes = {}
    for t, shape in zip(terms, shapes):
        for c, n in zip(t, shape):
            if sizes.setdefault(c, n) != n:
                raise bad(f"label {c!r} has size {sizes[c]} in one operand and {n} in the other")
    return Contraction(tuple(terms), out, op="einsum")


# -- the planner ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContractionPlan:
    """What a contraction does: the operands' shardings during the local multiply
    (``targets``), the local result's sharding (``result``, maybe partial) and the
    returned one (``final``).  The reshard plans are built on first use
    (`operand_reshards`, `result_reshard`); ``str(plan)`` lists every collective."""

    contraction: Contraction
    shapes: tuple
    shardings: tuple
    targets: tuple
    result: Sharding
    final: Sharding
    out_shape: tuple
    estimated_volume: int
    _cache: dict = field(default_factory=dict, compare=False, repr=False, hash=False)

    @property
    def operand_reshards(self) -> tuple:
        """Per operand a `ReshardPlan` to its target, or None where it is used as is."""
        if "ops" not in self._cache:
            self._cache["ops"] = tuple(
                None if _bare(s) == t else plan_reshard(_bare(s), t, shape)
                for s, t, shape in zip(self.shardings, self.targets, self.shapes))
        return self._cache["ops"]

    @property
    def result_reshard(self) -> ReshardPlan | None:
        """The plan from the local result to ``final`` (the reduction), or None."""
        if "out" not in self._cache:
            self._cache["out"] = None if self.result == self.final else plan_reshard(
                self.result, self.final, self.out_shape)
        return self._cache["out"]

    @property
    def ring(self):
        """``(operand, dim, mesh axis)`` whose all_gather runs as a ring of shifts overlapped with
        the local multiply (`_ring_operand`), or None."""
        if "ring" not in self._cache:
            self._cache["ring"] = _ring_operand(self, self.shapes, self.result.mesh.shape)
        return self._cache["ring"]

    def collectives(self) -> list:
        """``(stage, ReshardStep)`` for every step that runs, in order; stage is
        ``"operand i"`` or ``"result"``."""
        out = []
        for i, rp in enumerate(self.operand_reshards):
            if rp is not None:
                out += [(f"operand {i}", st) for st in rp.steps]
        if self.result_reshard is not None:
            out += [("result", st) for st in self.result_reshard.steps]
        return out

    @property
    def elements_moved(self) -> int:
        """Elements crossing process boundaries, as the reshard planner counts them."""
        plans = [p for p in self.operand_reshards + (self.result_reshard,) if p is not None]
        return sum(p.elements_moved for p in plans)

    def __str__(self):
        c = self.contraction
        mesh = self.result.mesh
        shapes = " x ".join(str(s) for s in self.shapes)
        lines = [f"{c.op} {c.subscripts!r}: {shapes} -> {self.out_shape} on mesh {mesh.shape}"]
        for i, (s, rp) in enumerate(zip(self.shardings, self.operand_reshards)):
            lines.append(f"  operand {i} <{s}>")
            if rp is None:
                lines.append("    used as is")
            for st in rp.steps if rp is not None else ():
                lines.append(f"    {st}")
                if self.ring is not None and self.ring[0] == i and st.op == "all_gather":
                    n = mesh.shape[self.ring[2]]
                    lines.append(f"      as a ring: {n - 1} shift(s) of one piece, each overlapped with the "
                                 "multiply of the piece before")
            if rp is not None:
                lines.append(f"    -> <{rp.dst}>")
        lines.append(f"  local {c.op} on each device's blocks -> <{self.result}>")
        rp = self.result_reshard
        if rp is None:
            lines.append("  result: returned as is")
        else:
            lines.append("  result:")
            lines += [f"    {st}" for st in rp.steps]
            lines.append(f"    -> <{self.final}>")
        lines.append(f"  elements moved between processes: {self.elements_moved}")
        return "\n".join(lines)


def plan_contraction(contraction: Contraction, shardings, shapes, *, out_sharding: Sharding | None = None,
                     partial_ok: bool = False) -> ContractionPlan:
    """The cheapest sharding assignment for ``contraction`` (pure and cached).

    ``shardings``/``shapes``: one per operand.  ``out_sharding``: the sharding
    the result must have (default: the propagated one, made non-partial unless
    ``partial_ok``).
    """
    shardings, shapes = tuple(shardings), tuple(tuple(s) for s in shapes)
    if len(shardings) != len(contraction.inputs) or len(shapes) != len(shardings):
        raise ValueError(f"{contraction.op}: {len(contraction.inputs)} operands in {contraction.subscripts!r}, "
                         f"got {len(shardings)} shardings and {len(shapes)} shapes")
    mesh = shardings[0].mesh
    for i, s in enumerate(shardings):
        if not isinstance(s, Sharding):
            raise ShardingError(f"{contraction.op}: operand {i} sharding {s!r} is not a Sharding")
        if s.mesh.abstract() != mesh.abstract():
            raise ShardingError(f"{contraction.op}: operand {i} is on mesh {s.mesh!r}, operand 0 on {mesh!r}; "
                                "a contraction needs one mesh")
        s.check_shape(shapes[i])
        if len(shapes[i]) != len(contraction.inputs[i]):
            raise ValueError(f"{contraction.op}: operand {i} has shape {shapes[i]} for labels "
                             f"{contraction.inputs[i]!r}")
    if out_sharding is not None:
        if not isinstance(out_sharding, Sharding):
            raise ShardingError(f"out_sharding: {out_sharding!r} is not a Sharding")
        if out_sharding.mesh.abstract() != mesh.abstract():
            raise ShardingError(f"out_sharding: its mesh {out_sharding.mesh!r} is not the operands' mesh {mesh!r}")
        if partial_ok:
            raise ValueError("partial_ok: give either out_sharding or partial_ok=True, not both")
    return _plan(contraction, shardings, shapes, out_sharding, bool(partial_ok))


@functools.lru_cache(maxsize=512)
def _plan(c: Contraction, shardings, shapes, out_sharding, partial_ok) -> ContractionPlan:
    mesh = shardings[0].mesh
    sizes = {}
    for labels, shape in zip(c.inputs, shapes):
        for lab, n in zip(labels, shape):
            if lab not in c.replicated and sizes.setdefault(lab, n) != n:
                raise ValueError(f"{c.op}: label {lab!r} of {c.subscripts!r} has sizes {sizes[lab]} and {n} "
                                 f"(shapes {shapes})")
    out_shape = tuple(sizes[lab] for lab in c.output)
    if out_sharding is not None:
        out_sharding.check_shape(out_shape)
    bare = tuple(_bare(s) for s in shardings)

    # A sum-partial operand stays partial when no other operand touches its partial axes:
    # (sum_i A_i) B = sum_i (A_i B) on the devices holding A_i and B.
    kept = []
    for i, s in enumerate(bare):
        others = {a for j, o in enumerate(bare) if j != i for a in _used_axes(o)}
        kept.append(s.is_partial and s.partial_type == "sum" and not set(s.partial_axes) & others)
    reserved = {a for s, k in zip(bare, kept) if k for a in s.partial_axes}

    labels = list(dict.fromkeys("".join(c.inputs) + c.output))
    options, offsets = {}, {}
    for lab in labels:
        opts = []
        sources = [(s, labs.index(lab), shape) for s, labs, shape in zip(bare, c.inputs, shapes) if lab in labs]
        if out_sharding is not None and lab in c.output:
            sources.append((out_sharding, c.output.index(lab), out_shape))
        for s, d, shape in sources:
            axes = s.dim_axes(d)
            if axes and lab not in c.replicated and axes not in opts and not set(axes) & reserved:
                opts.append(axes)
                if s.sharded_dims_offsets:  # the first operand with these axes sets the pieces
                    offsets[lab, axes] = s.dim_offsets(shape)[d]
        options[lab] = opts + [()]

    best = None
    for combo in _combos(labels, options):
        used = [a for axes in combo.values() for a in axes]
        if len(used) != len(set(used)):
            continue
        cand = _candidate(c, mesh, bare, kept, shapes, combo, offsets, out_shape, out_sharding, partial_ok)
        if best is None or cand[0] < best[0]:
            best = cand
    (volume, _), targets, result, final = best
    return ContractionPlan(c, shapes, shardings, targets, result, final, out_shape, volume)


def _combos(labels, options):
    """Every assignment of one option per label (first options first), or the greedy
    ones (each operand's axes first, dropping clashes) when there are too many."""
    split = [lab for lab in labels if len(options[lab]) > 1]
    if math.prod(len(options[lab]) for lab in split) <= _MAX_COMBOS:
        for pick in itertools.product(*(options[lab] for lab in split)):
            yield dict(zip(split, pick))
        return
    for rank in range(max(len(options[lab]) for lab in split)):
        used, combo = set(), {}
        for lab in split:
            order = options[lab][rank:] + options[lab][:rank]
            axes = next((ax for ax in order if not set(ax) & used), ())
            combo[lab] = axes
            used |= set(axes)
        yield combo


def _candidate(c, mesh, bare, kept, shapes, combo, offsets, out_shape, out_sharding, partial_ok):
    def layout(labels, shape, partial=(), kind="sum"):
        axes = [combo.get(lab, ()) for lab in labels]
        return _sharding(mesh, axes, [offsets.get((lab, ax)) for lab, ax in zip(labels, axes)], shape,
                         partial, kind)

    targets = []
    for s, k, labels, shape in zip(bare, kept, c.inputs, shapes):
        targets.append(layout(labels, shape, s.partial_axes if k else (), s.partial_type if k else "sum"))
    partial = {a for lab, axes in combo.items() if lab not in c.output for a in axes}
    partial |= {a for s, k in zip(bare, kept) if k for a in s.partial_axes}
    result = layout(c.output, out_shape, tuple(sorted(partial)))
    if out_sharding is not None:
        final = out_sharding
    elif partial_ok:
        final = result
    else:
        final = result.replace(partial_axes=())
    volume = sum(reshard_volume(s, t, shape) for s, t, shape in zip(bare, targets, shapes))
    volume += reshard_volume(result, _bare(final), out_shape)
    steps = sum(s != t for s, t in zip(bare, targets)) + (result != final)
    return (volume, steps), tuple(targets), result, final


def _sharding(mesh, axes, offsets, shape, partial, kind) -> Sharding:
    custom = [off for ax, off, n in zip(axes, offsets, shape)
              if ax and off is not None and off != split_offsets(n, math.prod(mesh.shape[a] for a in ax))]
    flat = None
    if custom:
        flat = []
        for ax, off, n in zip(axes, offsets, shape):
            if ax:
                flat += list(off if off is not None else split_offsets(n, math.prod(mesh.shape[a] for a in ax)))
    return Sharding(mesh, axes, partial_axes=partial, partial_type=kind if partial else "sum",
                    sharded_dims_offsets=flat)


def _bare(s: Sharding) -> Sharding:
    return s.replace(halo_sizes=None) if s.halo_sizes else s


def _used_axes(s: Sharding) -> set:
    return {a for axes in s.split_axes for a in axes} | set(s.partial_axes)


# -- the volume model: reshard_volume mirrors plan_reshard's elements_moved, summed per dimension ----


def reshard_volume(src: Sharding, dst: Sharding, shape) -> int:
    """Elements `plan_reshard(src, dst, shape)` moves, from per-dimension interval
    lengths summed over the mesh axes involved (never a loop over device pairs).

    >>> from meshrt import AbstractMesh
    >>> m = AbstractMesh((4,))
    >>> reshard_volume(Sharding(m, [[0]]), Sharding(m, []), (8, 3))  # all_gather: each lacks 3/4 of 24
    72
    """
    shape = tuple(shape)
    cur, target = _bare(src), _bare(dst)
    volume = 0
    if cur.is_partial and not (cur.partial_axes == target.partial_axes and cur.partial_type == target.partial_type):
        axes = cur.partial_axes
        g = math.prod(cur.mesh.shape[a] for a in axes)
        full = cur.replace(partial_axes=(), partial_type="sum")
        local = _device_sum(cur.mesh.shape, [_length(full, shape, d) for d in range(len(shape))])
        after = scatter_target(cur, target, shape)
        if after is not None:
            volume += local * (g - 1) // g
            cur = after
        else:
            volume += 2 * local * (g - 1) // g
            cur = full
    want = target.replace(partial_axes=(), partial_type="sum") if target.is_partial and not cur.is_partial \
        else target
    if cur != want:
        volume += _lacking(cur, want, shape)
    return volume


def _lacking(src: Sharding, dst: Sharding, shape) -> int:
    """Elements each device's ``dst`` block lacks from its ``src`` block, summed over devices."""
    ms = src.mesh.shape
    need = _device_sum(ms, [_length(dst, shape, d) for d in range(len(shape))])
    have = _device_sum(ms, [_overlap(src, dst, shape, d) for d in range(len(shape))])
    return need - have


def _piece_index(s: Sharding, d, coords):
    k = 0
    for a in s.dim_axes(d):
        k = k * s.mesh.shape[a] + coords[a]
    return k


def _offsets(s: Sharding, shape, d):
    return np.asarray(s.dim_offsets(shape)[d], np.int64)


def _length(s: Sharding, shape, d):
    """Factor: the length of a device's piece of dim ``d``; over all pieces they sum to the dim."""
    def fn(coords):
        offs, k = _offsets(s, shape, d), _piece_index(s, d, coords)
        return offs[1:][k] - offs[:-1][k]
    return s.dim_axes(d), fn, shape[d]


def _overlap(src: Sharding, dst: Sharding, shape, d):
    """Factor: the length of the intersection of a device's ``src`` and ``dst`` pieces of dim ``d``."""
    a_src, a_dst = src.dim_axes(d), dst.dim_axes(d)

    def fn(coords):
        os_, od = _offsets(src, shape, d), _offsets(dst, shape, d)
        ks, kd = _piece_index(src, d, coords), _piece_index(dst, d, coords)
        return np.maximum(np.minimum(os_[1:][ks], od[1:][kd]) - np.maximum(os_[:-1][ks], od[:-1][kd]), 0)
    total = None  # the sum over all coordinates of the axes, where it has a closed form
    if not a_src or not a_dst or (a_src == a_dst and not src.sharded_dims_offsets and not dst.sharded_dims_offsets):
        total = shape[d]  # one side holds the whole dim, or both cut the same pieces
    elif a_src == a_dst:
        os_, od = _offsets(src, shape, d), _offsets(dst, shape, d)
        total = int(np.maximum(np.minimum(os_[1:], od[1:]) - np.maximum(os_[:-1], od[:-1]), 0).sum())
    return tuple(dict.fromkeys(a_src + a_dst)), fn, total


def _device_sum(mesh_shape, factors) -> int:
    """Sum over all devices of the product of ``factors`` (``(mesh axes, fn(coords),
    sum or None)``): factors sharing mesh axes are evaluated together on every
    coordinate of those axes (vectorized), a factor alone on its axes contributes its
    closed-form sum, axes no factor reads count their size."""
    comps = []  # [axes set, factor list]
    for f in factors:
        merged = [c for c in comps if c[0] & set(f[0])]
        comp = [set(f[0]), [f]]
        for c in merged:
            comp[0] |= c[0]
            comp[1] += c[1]
            comps.remove(c)
        comps.append(comp)
    total, covered = 1, set()
    for axes, fs in comps:
        axes = sorted(axes)
        covered |= set(axes)
        if len(fs) == 1 and fs[0][2] is not None:
            total *= int(fs[0][2])
            continue
        grid = np.indices([mesh_shape[a] for a in axes]).reshape(len(axes), -1) if axes else np.zeros((0, 1), int)
        coords = dict(zip(axes, grid))
        prod = np.ones(grid.shape[1], np.int64)
        for _, fn, _ in fs:
            prod = prod * fn(coords)
        total *= int(prod.sum())
    for a, n in enumerate(mesh_shape):
        if a not in covered:
            total *= n
    return total


# -- execution -------------------------------------------------------------------------------------


def _as_operands(op, operands):
    """DistributedTensors as given; numpy arrays (and scalars) as global arrays, replicated."""
    ref = next((x for x in operands if isinstance(x, DistributedTensor)), None)
    if ref is None:
        raise TypeError(f"{op}: no operand is a DistributedTensor; call numpy's {op} on numpy arrays")
    out = []
    for i, x in enumerate(operands):
        if isinstance(x, DistributedTensor):
            if x.mesh != ref.mesh:
                raise ShardingError(f"{op}: operand {i} is on mesh {x.mesh!r}, another on {ref.mesh!r}")
            out.append(x)
            continue
        arr = np.asarray(x)
        if arr.dtype.hasobject:
            raise TypeError(f"{op}: operand {i} of type {type(x).__name__} is not an array")
        # A process passing its local block instead would plan differently from the others and hang them:
        # one small allgather makes that an error everywhere.
        with _mpi.internal(op, "operand agreement", ref.mesh):
            metas = ref.mesh.comm.allgather((arr.shape, arr.dtype.str))
        if any(m != metas[0] for m in metas):
            raise ShardingError(f"{op}: operand {i} is a numpy array, taken as the global array, so every process "
                                f"must pass the same one; shapes/dtypes per device: {metas}")
        arr = arr if arr.flags.c_contiguous else arr.copy(order="C")
        out.append(DistributedTensor(arr, Sharding(ref.mesh, []), arr.shape))
    return out


#: an all_gather feeding a contraction runs as a ring (`_ring_operand`) from this many gathered
#: elements per process (below, one collective's latency beats n-1 shifts) ...
RING_MIN_ELEMENTS = 1 << 18
#: ... on groups up to this size (a ring's steps grow with the group)
RING_MAX_GROUP = 64


def _ring_operand(plan: ContractionPlan, shapes, mesh_shape):
    """``(k, d, axis)`` when operand ``k``'s reshard is one all_gather of equal pieces along its
    dim ``d`` over the single mesh axis ``axis`` (and no other dim of operand ``k`` has ``d``'s
    label), gathering at least `RING_MIN_ELEMENTS` per process on a group of at most
    `RING_MAX_GROUP`: the local multiply then runs piece by piece while the pieces go round a
    ring, each process holding two pieces instead of the gathered operand (`_ring_contract`).
    Else None.

    >>> from meshrt import AbstractMesh
    >>> m = AbstractMesh((2,), ("x",))
    >>> c, s = Contraction(("ij", "jk"), "ik"), (Sharding(m, [[0]]), Sharding(m, [[], [0]]))
    >>> _ring_operand(plan_contraction(c, s, ((2048, 512), (512, 1024))), ((2048, 512), (512, 1024)), (2,))
    (1, 1, 0)
    >>> _ring_operand(plan_contraction(c, s, ((8, 6), (6, 8))), ((8, 6), (6, 8)), (2,)) is None  # one all_gather
    True
    """
    c = plan.contraction
    found = None
    for k, rp in enumerate(plan.operand_reshards):
        if rp is None:
            continue
        steps = [s for s in rp.steps if s.op != "update_halo"]
        if found is not None or len(steps) != 1 or steps[0].op != "all_gather" or len(steps[0].mesh_axes) != 1:
            return None
        step = steps[0]
        d = dict(step.attrs)["gather_axis"]
        axis = step.mesh_axes[0]
        pieces = math.prod(mesh_shape[a] for a in step.before.dim_axes(d))
        split = math.prod(mesh_shape[a] for i in range(len(shapes[k])) for a in step.before.dim_axes(i))
        gathered = math.prod(shapes[k]) // split * mesh_shape[axis]
        if (step.before.mesh.shape != tuple(mesh_shape) or c.inputs[k].count(c.inputs[k][d]) != 1
                or shapes[k][d] % pieces or step.before.sharded_dims_offsets
                or gathered < RING_MIN_ELEMENTS or mesh_shape[axis] > RING_MAX_GROUP):
            return None
        found = (k, d, axis)
    return found


#: a ring step multiplies in chunks of about this many result elements (small temporaries)
RING_CHUNK_ELEMENTS = 1 << 18


def _ring_contract(plan: ContractionPlan, want: tuple, tensors, local_fn, ring) -> np.ndarray:
    """The local result of ``plan`` with operand ``k``'s all_gather done as a ring: at step ``s``
    each process holds the piece of the process ``s`` places before it on the axis, multiplies it
    with the matching slices of the other operands (into its slice of the result where the
    gathered label is a result dim, else, a contracted label, added to the result), then passes it
    on to the next.  Each step runs in chunks of `RING_CHUNK_ELEMENTS` result elements along a
    result dim of another operand, and the pieces go round in one buffer, shifted in chunks of as
    many elements, so besides the operands and the result a process holds one piece and one chunk
    (the peak memory of an exported MLP: `bench/bench_sdy.py --memory`)."""
    from .. import collectives

    k, d, axis = ring
    c = plan.contraction
    mesh = tensors[0].mesh
    blocks = [t.interior if rp is None or i == k else execute_reshard(rp, t.interior, mesh)
              for i, (t, rp) in enumerate(zip(tensors, plan.operand_reshards))]
    piece = np.ascontiguousarray(blocks[k])
    n, me = mesh.shape[axis], mesh.coords[axis]
    m = piece.shape[d]
    label = c.inputs[k][d]
    od = c.output.index(label) if label in c.output else None
    others = blocks[:k] + blocks[k + 1:]
    labels = c.inputs[:k] + c.inputs[k + 1:]
    chunked = next((ch for ch in c.output if ch not in c.inputs[k] and sum(lab.count(ch) for lab in labels) == 1),
                   None)
    oc = None if chunked is None else c.output.index(chunked)
    extent = 1 if oc is None else want[oc]
    rows = max(1, RING_CHUNK_ELEMENTS // max(1, math.prod(want) // max(1, extent)))
    y = buf = spare = None
    for s in range(n):
        src = (me - s) % n
        window = slice(src * m, (src + 1) * m)
        for lo in range(0, extent, rows):
            part_of = slice(lo, min(lo + rows, extent)) if oc is not None else slice(None)
            sliced = [b[tuple(window if ch == label else part_of if ch == chunked else slice(None) for ch in lab)]
                      for b, lab in zip(others, labels)]
            part = np.asarray(local_fn(*sliced[:k], piece, *sliced[k:]))
            if y is None:
                y = np.empty(want, part.dtype)
            where = [slice(None)] * len(want)
            if od is not None:
                where[od] = window
            if oc is not None:
                where[oc] = part_of
            if od is None and s:
                y[tuple(where)] += part
            else:
                y[tuple(where)] = part
        if s < n - 1:  # pass the piece on in chunks through one buffer (the operand's own block untouched)
            flat = piece.reshape(-1)
            if buf is None:
                buf = np.empty_like(piece)
            into = buf.reshape(-1)
            step = max(1, RING_CHUNK_ELEMENTS)
            for lo in range(0, flat.size, step):
                hi = min(lo + step, flat.size)
                if piece is buf:  # in place: each chunk through a spare of one chunk
                    if spare is None:
                        spare = np.empty(min(step, flat.size), flat.dtype)
                    got = collectives.shift(flat[lo:hi], mesh, (axis,), axis, 1, rotate=True, out=spare[:hi - lo])
                    into[lo:hi] = got
                else:
                    collectives.shift(flat[lo:hi], mesh, (axis,), axis, 1, rotate=True, out=into[lo:hi])
            piece = buf
    return y


def _run(plan: ContractionPlan, want: tuple, tensors, local_fn) -> DistributedTensor:
    mesh = tensors[0].mesh
    blocks = []  # the local operands, where the result could be a view of one
    if plan.ring is not None and math.prod(want):
        y = _ring_contract(plan, want, tensors, local_fn, plan.ring)  # a new array, written piece by piece
    else:
        for t, rp in zip(tensors, plan.operand_reshards):
            x = t.interior
            blocks.append(x if rp is None else execute_reshard(rp, x, mesh))
        y = np.asarray(local_fn(*blocks))
    if not y.flags.c_contiguous or any(np.may_share_memory(y, x) for x in blocks):  # einsum may return views
        y = y.copy(order="C")
    if y.shape != want:  # pragma: no cover - a planner bug, never user input
        raise AssertionError(f"{plan.contraction.op}: local result {y.shape}, planned {want}")
    result = DistributedTensor(y, plan.result, plan.out_shape)
    rp = plan.result_reshard
    if rp is None:
        return result
    out = DistributedTensor.empty(plan.out_shape, plan.final, y.dtype)
    execute_reshard(rp, y, mesh, out=out.interior)
    if plan.final.halo_sizes:
        out.update_halo()
    return out


@functools.lru_cache(maxsize=256)
def _prepare(contraction_of, extra, shapes, shardings, out_sharding, partial_ok):
    """Once per call signature: the contraction, its plan with the reshard plans
    built, and this process's local result shape."""
    c = contraction_of(*shapes, *extra)
    plan = plan_contraction(c, shardings, shapes, out_sharding=out_sharding, partial_ok=partial_ok)
    plan.operand_reshards, plan.result_reshard  # built here, not on the first execution
    return c, plan, plan.result.shard_shape(plan.out_shape, shardings[0].mesh.rank)


def _contract(contraction_of, extra, local_fn, op, operands, out_sharding, partial_ok):
    tensors = _as_operands(op, operands)
    c, plan, want = _prepare(contraction_of, extra, tuple(t.global_shape for t in tensors),
                             tuple(t.sharding for t in tensors), out_sharding, bool(partial_ok))
    if local_fn is None:  # einsum
        local_fn = functools.partial(np.einsum, c.subscripts, optimize=len(tensors) > 1)
    return _run(plan, want, tensors, local_fn)


def matmul(a, b, *, out_sharding: Sharding | None = None, partial_ok: bool = False) -> DistributedTensor:
    """``a @ b`` on the global arrays, by one local ``np.matmul`` per device.

    numpy's matmul rules (1-D operands, broadcast batch dims).  The planner
    picks the reshards around the local multiply that move the fewest elements
    (`explain_matmul` shows them).  Also reached through ``a @ b`` and
    ``np.matmul(a, b)``.

    Parameters
    ----------
    a, b : DistributedTensor or numpy.ndarray
        The operands; at least one a `DistributedTensor`.  A numpy operand is the
        global array, the same on every process.
    out_sharding : Sharding, optional
        The result's sharding (e.g. a split the partial result is
        reduce-scattered into).
    partial_ok : bool, optional
        True returns a partial result (a sum over its partial axes) instead of
        all-reducing it.

    Returns
    -------
    DistributedTensor
        The product.

    Raises
    ------
    ValueError
        Shapes that do not match in the contracted dim or whose batch dims do not
        broadcast, a 0-d operand, or both ``out_sharding`` and ``partial_ok``.
    ShardingError
        Operands (or ``out_sharding``) on different meshes.
    TypeError
        No operand is a `DistributedTensor`.

    See Also
    --------
    explain_matmul, dot, einsum

    Notes
    -----
    Collective: the operands' reshards, then the result's reduction
    (``all_reduce``, or ``reduce_scatter`` into ``out_sharding``) when the
    contracted dim is split.

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> rows = Sharding(Mesh((-1,), ("x",)), [["x"]])
    >>> x = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), rows)
    >>> y = matmul(x, np.array([[1.0, 0.0], [0.0, 2.0]]), out_sharding=x.sharding)
    >>> y.gather()
    array([[ 0.,  2.],
           [ 2.,  6.],
           [ 4., 10.]])
    """
    return _contract(matmul_contraction, (), np.matmul, "matmul", (a, b), out_sharding, partial_ok)


def dot(a, b, *, out_sharding: Sharding | None = None, partial_ok: bool = False):
    """``np.dot`` on the global arrays (a 0-d operand multiplies elementwise).

    Planned and run like `matmul`; also reached through ``np.dot``.

    Parameters
    ----------
    a, b : DistributedTensor or numpy.ndarray or scalar
        The operands; a numpy operand is the global array, the same on every
        process.
    out_sharding : Sharding, optional
        The result's sharding.
    partial_ok : bool, optional
        True returns a partial result instead of all-reducing it.

    Returns
    -------
    DistributedTensor
        The product (0-d for two vectors).

    Raises
    ------
    ValueError
        Shapes that are not aligned, or both ``out_sharding`` and
        ``partial_ok``.
    ShardingError
        Operands on different meshes.
    TypeError
        No operand is a `DistributedTensor`.

    See Also
    --------
    matmul, tensordot

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> rows = Sharding(Mesh((-1,), ("x",)), [["x"]])
    >>> v = DistributedTensor.from_global(np.arange(3.0), rows)
    >>> dot(v, v).item()
    5.0
    """
    if _ndim(a) == 0 or _ndim(b) == 0:
        return a * b
    return _contract(dot_contraction, (), np.dot, "dot", (a, b), out_sharding, partial_ok)


def _ndim(x) -> int:
    return x.ndim if isinstance(x, DistributedTensor) else np.ndim(x)


def tensordot(a, b, axes=2, *, out_sharding: Sharding | None = None, partial_ok: bool = False):
    """``np.tensordot`` on the global arrays.

    Planned and run like `matmul`; also reached through ``np.tensordot``.

    Parameters
    ----------
    a, b : DistributedTensor or numpy.ndarray
        The operands; a numpy operand is the global array, the same on every
        process.
    axes : int or pair of sequences of int, optional
        The last ``axes`` dims of ``a`` against the first of ``b``, or
        ``(axes_a, axes_b)``; default 2.
    out_sharding : Sharding, optional
        The result's sharding.
    partial_ok : bool, optional
        True returns a partial result instead of all-reducing it.

    Returns
    -------
    DistributedTensor
        The contraction.

    Raises
    ------
    ValueError
        ``axes`` out of range, repeated or of unequal lengths, mismatched dim
        sizes, or both ``out_sharding`` and ``partial_ok``.
    TypeError
        ``axes`` is neither an int nor a pair, or no operand is a
        `DistributedTensor`.
    ShardingError
        Operands on different meshes.

    See Also
    --------
    einsum, matmul

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> rows = Sharding(Mesh((-1,), ("x",)), [["x"]])
    >>> x = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), rows)
    >>> tensordot(x, x, axes=([0], [0])).gather()        # x.T @ x
    array([[20., 26.],
           [26., 35.]])
    """
    na, nb = _ndim(a), _ndim(b)
    xa, xb = normalize_tensordot_axes(axes, na, nb)
    return _contract(tensordot_contraction, ((xa, xb),), functools.partial(np.tensordot, axes=(xa, xb)),
                     "tensordot", (a, b), out_sharding, partial_ok)


def einsum(subscripts: str, *operands, out_sharding: Sharding | None = None, partial_ok: bool = False):
    """einsum-lite on the global arrays.

    One or two operands, no ``...``, each label at most twice: ``"ij,jk->ik"``,
    ``"bij,bjk->bik"``, ``"ij->ji"``, ``"ij->i"``, ``"i,i"``.  Planned and run
    like `matmul`; also reached through ``np.einsum``.

    Parameters
    ----------
    subscripts : str
        The einsum subscripts.
    *operands : DistributedTensor or numpy.ndarray
        One or two operands; a numpy operand is the global array, the same on
        every process.
    out_sharding : Sharding, optional
        The result's sharding.
    partial_ok : bool, optional
        True returns a partial result instead of all-reducing it.

    Returns
    -------
    DistributedTensor
        The result.

    Raises
    ------
    ValueError
        Subscripts outside the supported form (the message names them), or
        label sizes that disagree.
    TypeError
        ``subscripts`` is not a str, or no operand is a `DistributedTensor`.
    ShardingError
        Operands on different meshes.

    See Also
    --------
    explain_einsum, tensordot

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> rows = Sharding(Mesh((-1,), ("x",)), [["x"]])
    >>> x = DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), rows)
    >>> einsum("ij->ji", x).gather()
    array([[0., 2., 4.],
           [1., 3., 5.]])
    >>> einsum("ij->j", x).gather()
    array([6., 9.])
    """
    if not isinstance(subscripts, str):
        raise TypeError(f"einsum: subscripts must be a str, got {subscripts!r}")
    return _contract(_einsum_of, (subscripts,), None, "einsum", operands, out_sharding, partial_ok)


def _einsum_of(*args):
    *shapes, subscripts = args
    return einsum_contraction(subscripts, shapes)


def _spec(x, what):
    if isinstance(x, DistributedTensor):
        return x.global_shape, x.sharding
    try:
        shape, sharding = x
    except (TypeError, ValueError):
        raise TypeError(f"{what}: expected a DistributedTensor or a (global_shape, Sharding) pair, got {x!r}") from None
    if not isinstance(sharding, Sharding):
        raise TypeError(f"{what}: expected a DistributedTensor or a (global_shape, Sharding) pair, got {x!r}")
    return tuple(shape), sharding


def explain_matmul(a, b, *, out_sharding: Sharding | None = None, partial_ok: bool = False) -> ContractionPlan:
    """The plan ``matmul(a, b, ...)`` runs; print it to read the collectives.

    Pure: with ``(global_shape, Sharding)`` pairs on an `AbstractMesh` it plans
    for any number of devices without MPI.

    Parameters
    ----------
    a, b : DistributedTensor or tuple
        The operands, or ``(global_shape, Sharding)`` pairs.
    out_sharding : Sharding, optional
        As in `matmul`.
    partial_ok : bool, optional
        As in `matmul`.

    Returns
    -------
    ContractionPlan
        The operands' reshards, the local multiply and the result's reduction;
        ``str`` of it lists every collective with the elements it moves.

    Raises
    ------
    TypeError
        An operand that is neither a tensor nor a ``(shape, Sharding)`` pair.
    ValueError
        Shapes that do not match.
    ShardingError
        Shardings on different meshes.

    See Also
    --------
    matmul, explain_einsum, explain_reshard

    Examples
    --------
    >>> from meshrt import AbstractMesh, Sharding
    >>> m = AbstractMesh((2,), ("x",))
    >>> print(explain_matmul(((4, 6), Sharding(m, [[], ["x"]])), ((6, 2), Sharding(m, [["x"]]))))
    matmul 'ab,bc->ac': (4, 6) x (6, 2) -> (4, 2) on mesh (2,)
      operand 0 <shard.sharding @mesh split_axes = [[], [0]]>
        used as is
      operand 1 <shard.sharding @mesh split_axes = [[0]]>
        used as is
      local matmul on each device's blocks -> <shard.sharding @mesh split_axes = [[]] partial = sum[0]>
      result:
        all_reduce(mesh_axes=[0], reduction=sum)  moves 16 elements
        -> <shard.sharding @mesh split_axes = [[]]>
      elements moved between processes: 16
    """
    (sa, a_s), (sb, b_s) = _spec(a, "a"), _spec(b, "b")
    return plan_contraction(matmul_contraction(sa, sb), (a_s, b_s), (sa, sb), out_sharding=out_sharding,
                            partial_ok=partial_ok)


def explain_einsum(subscripts: str, *operands, out_sharding: Sharding | None = None,
                   partial_ok: bool = False) -> ContractionPlan:
    """The plan ``einsum(subscripts, *operands, ...)`` runs; print it to read the collectives.

    Pure: with ``(global_shape, Sharding)`` pairs on an `AbstractMesh` it plans
    for any number of devices without MPI.

    Parameters
    ----------
    subscripts : str
        The einsum subscripts, as in `einsum`.
    *operands : DistributedTensor or tuple
        One or two operands, or ``(global_shape, Sharding)`` pairs.
    out_sharding : Sharding, optional
        As in `einsum`.
    partial_ok : bool, optional
        As in `einsum`.

    Returns
    -------
    ContractionPlan
        The operands' reshards, the local einsum and the result's reduction.

    Raises
    ------
    TypeError
        An operand that is neither a tensor nor a ``(shape, Sharding)`` pair.
    ValueError
        Unsupported subscripts or mismatched shapes.
    ShardingError
        Shardings on different meshes.

    See Also
    --------
    einsum, explain_matmul

    Examples
    --------
    Both operands split on ``x`` along their first dim: the second is gathered
    so that the contracted label ``j`` is whole on every device:

    >>> from meshrt import AbstractMesh, Sharding
    >>> m = AbstractMesh((2,), ("x",))
    >>> print(explain_einsum("ij,jk->ik", ((4, 6), Sharding(m, [["x"]])), ((6, 2), Sharding(m, [["x"]]))))
    einsum 'ij,jk->ik': (4, 6) x (6, 2) -> (4, 2) on mesh (2,)
      operand 0 <shard.sharding @mesh split_axes = [[0]]>
        used as is
      operand 1 <shard.sharding @mesh split_axes = [[0]]>
        all_gather(mesh_axes=[0], gather_axis=0)  moves 12 elements
        -> <shard.sharding @mesh split_axes = [[]]>
      local einsum on each device's blocks -> <shard.sharding @mesh split_axes = [[0]]>
      result: returned as is
      elements moved between processes: 12
    """
    specs = [_spec(x, f"operand {i}") for i, x in enumerate(operands)]
    c = einsum_contraction(subscripts, [s for s, _ in specs])
    return plan_contraction(c, [s for _, s in specs], [s for s, _ in specs], out_sharding=out_sharding,
                            partial_ok=partial_ok)


# -- numpy entry points ------------------------------------------------------------------------------


def _no_extra(name, kwargs, allowed=()):
    bad = sorted(k for k, v in kwargs.items() if k not in allowed and v is not None)
    if bad:
        raise TypeError(f"np.{name} on DistributedTensors: unsupported arguments {bad}; "
                        f"use meshrt.{name} (out_sharding=, partial_ok=) or gather() first")


@implements(np.matmul)
def _np_matmul(a, b, out=None, **kwargs):
    _no_extra("matmul", dict(kwargs, out=out))
    return matmul(a, b)


@implements(np.dot)
def _np_dot(a, b, out=None):
    if out is not None:
        _no_extra("dot", {"out": out})
    r = _fastpath.dot_1d(a, b, dot)  # two 1-D tensors of one sharding: one local dot, one allreduce
    return dot(a, b) if r is None else r


@implements(np.tensordot)
def _np_tensordot(a, b, axes=2):
    return tensordot(a, b, axes)


@implements(np.einsum)
def _np_einsum(*operands, out=None, optimize=False, **kwargs):
    _no_extra("einsum", dict(kwargs, out=out))
    if not operands or not isinstance(operands[0], str):
        raise TypeError("np.einsum on DistributedTensors: give the subscripts as a str first "
                        "(the interleaved operand/sublist form is not supported)")
    return einsum(operands[0], *operands[1:])
