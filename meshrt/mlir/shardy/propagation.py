"""Sharding propagation for Shardy programs, after the RFC's rules, on the ops meshrt can map dim
to dim: every value of a function gets a `TensorSharding` from the shardings the program states.

Seeds (they win): argument and result ``sdy.sharding``, an op's ``sdy.sharding``, the results of
``sharding_constraint``/``reshard``/the sdy collectives, ``data_flow_edge`` shardings, the
operands and results of ``manual_computation`` (and, without its manual axes, its body's arguments
and results: propagation goes on inside the body over the free axes).  Seeds are taken in priority order (``p0``
first; a sharding's priority is its lowest dim priority, none: after all prioritized ones); each
round propagates forward and backward until nothing changes, through elementwise ops (``sdy``
pass-throughs included), ``transpose``, ``broadcast_in_dim``, one-operand ``reduce``, into and out of
``while`` (a loop-carried value has one sharding) and ``case``/``if`` regions,
``convert`` and ``dot_general`` (batch and free dims; contracting dims map to none).  A value sharded in an earlier round keeps it, except that an open dim (``{"x", ?}``
or a propagated one) may take more axes from a neighbour; a closed dim never changes.
``sharding_group`` members all get the sharding of the first member to have one, and no sharding
crosses a ``propagation_barrier`` in a blocked direction.

>>> from meshrt.mlir import parse
>>> m = parse('''sdy.mesh @mesh = <["x"=2]>
... func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
...   %0 = stablehlo.exponential %a : tensor<4xf32>
...   %1 = stablehlo.negate %0 : tensor<4xf32>
...   return %1 : tensor<4xf32>
... }''')
>>> f = m.functions()["main"]
>>> str(propagate(m, "main")[f.regions[0].entry.arguments[0]])
'#sdy.sharding<@mesh, [{"x", ?}]>'
"""

from __future__ import annotations

import math

from ..interpreters import stablehlo as H
from ..dialects.sdy import _arg_sharding, meshes, sharding_attr, shardings_attr
from ..dialects.sdy_attrs import AxisRef, DimSharding, TensorSharding, direction_name, parse_axis_list
from ..ir import TensorType

__all__ = ["propagate", "Shardings", "reshape_axes"]

# a sharding_constraint's sharding also says how its operand should be sharded (its only use, or dangling)
_IDENTITY = frozenset(list(H.ELEMENTWISE) + ["stablehlo.compare", "stablehlo.select", "stablehlo.convert",
                                              "stablehlo.clamp", "sdy.data_flow_edge", "stablehlo.optimization_barrier",
                                              "sdy.sharding_constraint"])
_SEED_OPS = frozenset(["sdy.sharding_constraint", "sdy.reshard", "sdy.all_gather", "sdy.all_slice", "sdy.all_to_all",
                       "sdy.collective_permute", "sdy.all_reduce", "sdy.reduce_scatter"])


def _priority(ts: TensorSharding):
    ps = [d.priority for d in ts.dims if d.priority is not None]
    return min(ps) if ps else 1 << 30


def _edges(ops, mesh_sizes=None):
    """(src, dst, dim map: dst dim -> src dim or None, or a function of the src sharding) for every
    value pair a sharding flows between."""
    out = []
    mesh_sizes = mesh_sizes or {}

    def both(a, b, m_ab, m_ba):
        out.append((a, b, m_ab))
        out.append((b, a, m_ba))

    for op in ops:
        name = op.name
        res = op.results[0] if op.results else None
        if res is None or not isinstance(res.type, TensorType):
            continue
        rank = res.type.rank
        if name in _IDENTITY:
            for v in op.operands:
                if isinstance(v.type, TensorType) and v.type.shape == res.type.shape:
                    both(v, res, tuple(range(rank)), tuple(range(rank)))
        elif name == "sdy.propagation_barrier":
            d = direction_name(op.attributes.get("allowed_direction", "NONE"))
            v = op.operands[0]
            if d == "FORWARD":
                out.append((v, res, tuple(range(rank))))
            elif d == "BACKWARD":
                out.append((res, v, tuple(range(rank))))
        elif name == "stablehlo.transpose":
            perm = H._attr_ints(op, "permutation")
            inv = [perm.index(i) for i in range(rank)]
            both(op.operands[0], res, tuple(perm), tuple(inv))
        elif name == "stablehlo.broadcast_in_dim":
            v = op.operands[0]
            dims = H._attr_ints(op, "broadcast_dimensions")
            fwd = [None] * rank
            back = [None] * v.type.rank
            for i, d in enumerate(dims):
                if v.type.shape[i] == res.type.shape[d]:
                    fwd[d], back[i] = i, d
            both(v, res, tuple(fwd), tuple(back))
        elif name == "stablehlo.dot_general":
            lb, rb, lc, rc = H._dot_numbers(op)
            a, b = op.operands
            lfree = [d for d in range(a.type.rank) if d not in lb and d not in lc]
            rfree = [d for d in range(b.type.rank) if d not in rb and d not in rc]
            # result dims: batch, lhs free, rhs free (contracting dims map to none)
            for v, batch, free, offset in ((a, lb, lfree, len(lb)), (b, rb, rfree, len(lb) + len(lfree))):
                fwd = [None] * rank
                back = [None] * v.type.rank
                for i, d in enumerate(batch):
                    fwd[i], back[d] = d, i
                for i, d in enumerate(free):
                    fwd[offset + i], back[d] = d, offset + i
                both(v, res, tuple(fwd), tuple(back))
        elif name == "stablehlo.reshape":
            v = op.operands[0]
            if isinstance(v.type, TensorType):
                old, new = tuple(v.type.shape), tuple(res.type.shape)
                both(v, res, _ReshapeMap(old, new, mesh_sizes), _ReshapeMap(new, old, mesh_sizes))
        elif name == "stablehlo.reduce" and len(op.operands) == 2:
            v = op.operands[0]
            kept = [d for d in range(v.type.rank) if d not in H._attr_ints(op, "dimensions")]
            back = [None] * v.type.rank
            for i, d in enumerate(kept):
                back[d] = i
            both(v, res, tuple(kept), tuple(back))
    return out


def reshape_axes(old, new, axes_per_dim, length, split=None) -> list:
    """Per dim of ``new``, the axes a reshape from ``old`` carries over (Shardy's reshape rule on
    the dims' common factors): a dim of the same size keeps its axes; otherwise the axes that split
    a run of merged/split dims major first (a dim's axes, then the next dim's only where the first
    is split whole) go onto the new run's dims major first, each where it divides what is left of
    the dim (``length(axis)``: its size).  An axis that does not divide what is left becomes, as in
    Shardy, its major sub-axis of the greatest common size there (``split(axis, k)`` -> (major of
    size k, the minor rest)); the minor rest goes on to the next dim where that one is full, else
    stays behind with the axes after it.

    >>> reshape_axes((96,), (4, 24), [["x"]], lambda a: 2)
    [['x'], []]
    >>> reshape_axes((2, 12), (24,), [["x"], ["y"]], lambda a: 2)
    [['x', 'y']]
    >>> reshape_axes((8, 12), (4, 24), [["x"], ["y"]], lambda a: 2)
    [['x'], []]
    >>> halves = lambda a, k: (f"{a}.major{k}", f"{a}.rest")
    >>> reshape_axes((8,), (2, 4), [["x"]], lambda a: 4, halves)       # "x"=4 over a dim of 2
    [['x.major2'], ['x.rest']]
    """
    from ...tensor.layout import _reshape_groups

    out = [[] for _ in new]
    for gi, gj in _reshape_groups(tuple(old), tuple(new)):
        gi = [d for d in gi if old[d] != 1]
        gj = [e for e in gj if new[e] != 1]
        if not gi or not gj:
            continue
        if len(gi) == 1 and len(gj) == 1:  # the same dim: same layout, even where the split is uneven
            out[gj[0]] = list(axes_per_dim[gi[0]])
            continue
        chain = []
        for d in gi:
            whole = 1
            for a in axes_per_dim[d]:
                if old[d] % (whole * length(a)):  # an uneven split is no factor of the run
                    break
                chain.append(a)
                whole *= length(a)
            if whole != old[d]:
                break
        j, room = 0, new[gj[0]]
        todo = list(chain)
        while todo:
            a = todo.pop(0)
            n = length(a)
            while room == 1 and j + 1 < len(gj):
                j += 1
                room = new[gj[j]]
            if room % n:
                k = math.gcd(room, n)
                if split is None or k == 1 or n >= 1 << 62:
                    break
                major, minor = split(a, k)
                out[gj[j]].append(major)
                room //= k
                if room != 1:  # the dim is not full: the minor part cannot go on to the next one
                    break
                todo.insert(0, minor)
                continue
            out[gj[j]].append(a)
            room //= n
    return out


class _ReshapeMap:
    """A reshape's edge: the source sharding's axes per `reshape_axes`, on open dims."""

    def __init__(self, old, new, mesh_sizes):
        self.old, self.new, self.mesh_sizes = old, new, mesh_sizes

    def __call__(self, ts: TensorSharding) -> TensorSharding:
        sizes = self.mesh_sizes.get(ts.mesh, {})
        axes = [d.axes for d in ts.dims] + [()] * (len(self.old) - len(ts.dims))
        carried = reshape_axes(self.old, self.new, axes, lambda a: a.length(sizes) if a.name in sizes or a.pre
                               is not None else 1 << 62, lambda a, k: _split_axis(a, k, sizes))
        return TensorSharding(ts.mesh, tuple(DimSharding(_joined(a, sizes), False) for a in carried))


def _split_axis(a: AxisRef, k: int, sizes: dict):
    """Axis (or sub-axis) ``a`` as its major sub-axis of size ``k`` and the minor rest (a sub-axis
    covering a whole axis is that axis)."""
    full = sizes[a.name]
    pre, n = (1, full) if a.pre is None else (a.pre, a.size)

    def ref(p, z):
        return AxisRef(a.name) if (p, z) == (1, full) else AxisRef(a.name, p, z)
    return ref(pre, k), ref(pre * k, n // k)


def _joined(axes, sizes) -> tuple:
    """A dim's axes with consecutive sub-axes of one axis joined (Shardy keeps sub-axes as big as
    possible): ``"x":(1)2, "x":(2)2`` of an axis of 4 is ``"x"``."""
    out = []
    for a in axes:
        b = out[-1] if out else None
        if b is not None and a.pre is not None and b.pre is not None and a.name == b.name and b.pre * b.size == a.pre:
            p, z = b.pre, b.size * a.size
            out[-1] = AxisRef(a.name) if (p, z) == (1, sizes.get(a.name)) else AxisRef(a.name, p, z)
        else:
            out.append(a)
    return tuple(out)


def _overlap(a: AxisRef, b: AxisRef) -> bool:
    """Whether two axis refs share a part of one mesh axis (sub-axes ``(pre)size`` as the ranges
    [pre, pre * size) of the axis's pre-sizes; a full axis is all of them)."""
    if a.name != b.name:
        return False
    if a.pre is None or b.pre is None:
        return True
    return max(a.pre, b.pre) < min(a.pre * a.size, b.pre * b.size)


def _mapped(ts: TensorSharding, m) -> TensorSharding:
    """``ts`` carried along a dim map: mapped dims keep their axes (open: more may come), others
    are open and empty; replicated/unreduced axes and priorities stay behind."""
    dims = []
    for src in m:
        if src is None:
            dims.append(DimSharding((), False))
        else:
            dims.append(DimSharding(ts.dims[src].axes, False))
    return TensorSharding(ts.mesh, tuple(dims))


def _merge(cur: TensorSharding, new: TensorSharding):
    """``cur`` with its open dims extended by ``new``'s axes where ``cur``'s are a prefix of them and
    no axis is used twice; None if nothing changes."""
    if cur.mesh != new.mesh or len(cur.dims) != len(new.dims):
        return None
    used = list(cur.axis_refs())
    dims, changed = [], False
    for c, n in zip(cur.dims, new.dims):
        if (not c.closed and len(n.axes) > len(c.axes) and tuple(n.axes[:len(c.axes)]) == tuple(c.axes)
                and not any(_overlap(a, u) for a in n.axes[len(c.axes):] for u in used)):
            used += list(n.axes[len(c.axes):])
            dims.append(DimSharding(n.axes, c.closed, c.priority))
            changed = True
        else:
            dims.append(c)
    return TensorSharding(cur.mesh, tuple(dims), cur.replicated, cur.unreduced) if changed else None


def _block_ops(block, module=None, ctx=(), stack=()):
    """``(call sites, op)`` for the ops of ``block``, of the named computations in it, and of the
    private functions its ``func.call`` ops call: a callee's ops once per call site (``ctx``, the
    calls that lead there), as Shardy's inlining of the call graph would (a recursive call is not
    followed)."""
    for op in block.operations:
        yield ctx, op
        if op.name in ("sdy.named_computation", "sdy.manual_computation", "stablehlo.while", "stablehlo.case",
                       "stablehlo.if"):
            for r in op.regions:
                yield from _block_ops(r.entry, module, ctx, stack)
        elif op.name == "func.call" and module is not None:
            callee = _callee(module, op)
            if callee is not None and callee not in stack:
                yield from _block_ops(callee.regions[0].entry, module, ctx + (op,), stack + (callee,))


def _free_part(ts: TensorSharding, manual) -> TensorSharding:
    """``ts`` without the ``manual`` axes: how a manual computation's body sees an in/out sharding
    (its values are local over the manual axes, sharded over the free ones)."""
    dims = tuple(DimSharding(tuple(a for a in d.axes if a.name not in manual), d.closed, d.priority) for d in ts.dims)
    return TensorSharding(ts.mesh, dims, tuple(a for a in ts.replicated if getattr(a, "name", a) not in manual),
                          tuple(a for a in ts.unreduced if getattr(a, "name", a) not in manual))


def _callee(module, op):
    f = module.functions().get(op.attributes["callee"].name)
    return f if f is not None and f.regions and f.regions[0].blocks else None


def _mesh_sizes(module) -> dict:
    return {name: mesh.sizes() for name, mesh in meshes(module).items()}


class Shardings(dict):
    """``{Value: TensorSharding}`` for one function's values at one call site; ``calls`` maps each
    ``func.call`` op in it to the shardings of its callee's values there."""

    def __init__(self, *args):
        super().__init__(*args)
        self.calls = {}


def propagate(module, name) -> Shardings:
    """``{Value: TensorSharding}`` for the values of ``@name`` (its own body and named computations);
    its ``calls`` hold the private functions' values per call site."""
    f = module.functions()[name]
    block = f.regions[0].entry
    ops = list(_block_ops(block, module, (), (f,)))
    seeds = []  # (priority, order, (call sites, value), sharding)

    def seed(v, ts, ctx=()):
        if ts is not None and isinstance(v.type, TensorType):
            seeds.append((_priority(ts), len(seeds), (ctx, v), ts))

    by_ctx = {}
    for ctx, op in ops:
        by_ctx.setdefault(ctx, []).append(op)
    # a value an op gives a user sharding (a constraint's result, ...) keeps it where it is also a result
    # of the function: the result's sharding is the return's to move to
    own = {(ctx, r) for ctx, op in ops for r in op.results
           if "sdy.sharding" in op.attributes or op.name in _SEED_OPS or op.name == "sdy.manual_computation"
           or (op.name == "sdy.data_flow_edge" and op.attributes.get("sharding") is not None)}

    def seed_results(func, ctx):
        for i, v in enumerate(func.regions[0].entry.operations[-1].operands):
            if (ctx, v) not in own:
                seed(v, _arg_sharding(func, i, "res_attrs"), ctx)

    for i, a in enumerate(block.arguments):
        seed(a, _arg_sharding(f, i))
    seed_results(f, ())
    groups = {}
    sizes = _mesh_sizes(module)
    edges = [((ctx, a), (ctx, b), m) for ctx, ops_here in by_ctx.items() for a, b, m in _edges(ops_here, sizes)]
    for ctx, op in ops:
        if "sdy.sharding" in op.attributes:
            for r, ts in zip(op.results, shardings_attr(op, "sdy.sharding")):
                seed(r, ts.without_unreduced(), ctx)
        if op.name in _SEED_OPS:
            key = "sharding" if op.name in ("sdy.sharding_constraint", "sdy.reshard") else "out_sharding"
            seed(op.results[0], sharding_attr(op, key).without_unreduced(), ctx)
        elif op.name == "sdy.data_flow_edge" and op.attributes.get("sharding") is not None:
            seed(op.results[0], sharding_attr(op, "sharding"), ctx)
        elif op.name == "sdy.manual_computation":
            for v, ts in zip(op.operands, shardings_attr(op, "in_shardings")):
                seed(v, ts, ctx)
            for v, ts in zip(op.results, shardings_attr(op, "out_shardings")):
                seed(v, ts, ctx)
            # the body's arguments and results: the same shardings over the free axes, whence propagation
            # goes on inside the body (a partially manual body runs in global view over those axes)
            manual = set(parse_axis_list(str(op.attributes.get("manual_axes", "{}")), ""))
            body = op.regions[0].entry
            for a, ts in zip(body.arguments, shardings_attr(op, "in_shardings")):
                seed(a, _free_part(ts, manual), ctx)
            for v, ts in zip(body.operations[-1].operands, shardings_attr(op, "out_shardings")):
                seed(v, _free_part(ts, manual).without_unreduced(), ctx)
        elif op.name == "sdy.sharding_group":
            groups.setdefault(op.attributes.get("group_id"), []).append((ctx, op.operands[0]))
        elif op.name == "func.call" and (ctx + (op,)) in by_ctx:
            # a private function's arguments and results are its call's operands and results
            callee, inner = _callee(module, op), ctx + (op,)
            body = callee.regions[0].entry
            for i, a in enumerate(body.arguments):
                seed(a, _arg_sharding(callee, i), inner)
            seed_results(callee, inner)
            for v, a in zip(op.operands, body.arguments):
                r = tuple(range(a.type.rank)) if isinstance(a.type, TensorType) else ()
                edges += [((ctx, v), (inner, a), r), ((inner, a), (ctx, v), r)]
            for v, r_ in zip(body.operations[-1].operands, op.results):
                r = tuple(range(r_.type.rank)) if isinstance(r_.type, TensorType) else ()
                edges += [((inner, v), (ctx, r_), r), ((ctx, r_), (inner, v), r)]
        elif op.name == "stablehlo.while":
            # a loop-carried value has one sharding: operand, cond and body arguments, body result, result
            cond, body = (r.entry for r in op.regions)
            for i, (v, r_) in enumerate(zip(op.operands, op.results)):
                if not isinstance(v.type, TensorType):
                    continue
                r = tuple(range(v.type.rank))
                chain = [v, cond.arguments[i], body.arguments[i], body.operations[-1].operands[i], r_]
                for a, b in zip(chain, chain[1:]):
                    edges += [((ctx, a), (ctx, b), r), ((ctx, b), (ctx, a), r)]
                edges += [((ctx, body.arguments[i]), (ctx, v), r)]
        elif op.name in ("stablehlo.case", "stablehlo.if"):
            for region in op.regions:  # each branch's results are the op's results
                for v, r_ in zip(region.entry.operations[-1].operands, op.results):
                    r = tuple(range(r_.type.rank)) if isinstance(r_.type, TensorType) else ()
                    edges += [((ctx, v), (ctx, r_), r), ((ctx, r_), (ctx, v), r)]
        elif op.name == "sdy.named_computation":
            body = op.regions[0].entry
            for v, a in zip(op.operands, body.arguments):
                r = tuple(range(a.type.rank)) if isinstance(a.type, TensorType) else ()
                edges += [((ctx, v), (ctx, a), r), ((ctx, a), (ctx, v), r)]
            for v, r_ in zip(body.operations[-1].operands, op.results):
                r = tuple(range(r_.type.rank)) if isinstance(r_.type, TensorType) else ()
                edges += [((ctx, v), (ctx, r_), r), ((ctx, r_), (ctx, v), r)]

    got = {}
    seeded = set()
    for prio, _, v, ts in sorted(seeds, key=lambda s: (s[0], s[1])):
        if v not in got:
            got[v] = ts
        elif v in seeded:  # an earlier (higher priority) user sharding: this one may only extend its open dims
            merged = _merge(got[v], ts)
            if merged is not None:
                got[v] = merged
        else:  # what propagation gave it so far yields to the user's sharding, on the open dims too
            got[v] = _merge(ts, got[v]) or ts
        seeded.add(v)
        changed = True
        while changed:
            changed = False
            for src, dst, m in edges:
                if src not in got:
                    continue
                cand = m(got[src]) if callable(m) else _mapped(got[src], m)
                if dst not in got:
                    got[dst] = cand
                    changed = True
                else:
                    merged = _merge(got[dst], cand)
                    if merged is not None:
                        got[dst] = merged
                        changed = True
            for members in groups.values():
                first = next((got[v] for v in members if v in got), None)
                for v in members:
                    if first is not None and got.get(v) != first:
                        got[v] = first
                        changed = True
    out = {ctx: Shardings() for ctx in by_ctx}
    out.setdefault((), Shardings())
    for (ctx, v), ts in got.items():
        out[ctx][v] = ts
    for ctx in sorted(out, key=len, reverse=True):
        if ctx:
            out[ctx[:-1]].calls[ctx[-1]] = out[ctx]
    return out[()]

