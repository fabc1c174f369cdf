"""The custom (pretty) forms of the Shardy ``sdy`` ops, as JAX prints them:
one reader per op, registered with `_custom` (see `meshrt.mlir.syntax.reader`).

Shardy attributes are kept as MLIR's generic text (`OpaqueAttr` ``#sdy.sharding<...>``,
``#sdy.sharding_per_value<[...]>``, ``#sdy<manual_axes{...}>`` ...), which the generic form
of the same op carries too; `meshrt.mlir.shardy.program` reads them into `meshrt.mlir.dialects.sdy_attrs`.
"""

from __future__ import annotations

import re

import functools

import numpy as np

from ...errors import MLIRError
from ..ir import Module, OpaqueAttr, SymbolRef, TensorType
from ..syntax.printer import ATTRIBUTE_KINDS
from ..syntax.reader import _custom, _op
from .sdy_attrs import (
    DIRECTIONS, DimSharding, TensorSharding, direction_name, parse_axes_per_dim, parse_axis_list, parse_mesh,
    parse_sharding, parse_sharding_list,
)

__all__ = ["verify_sdy", "meshes", "sharding_attr", "shardings_attr"]

_SDY_COLLECTIVES = frozenset(["sdy.all_gather", "sdy.all_slice", "sdy.all_to_all", "sdy.collective_permute",
                              "sdy.all_reduce", "sdy.reduce_scatter"])


def _shard_text(p):
    """``<@mesh, [...]>`` (a TensorShardingAttr without its prefix) -> its text."""
    p.ws()
    if not p.peek("<"):
        p.error(f"expected a Shardy sharding '<@mesh, [...]>', found {p.snippet()}")
    return re.sub(r"\s+", " ", p.balanced())


def _sharding(p):
    return OpaqueAttr("#sdy.sharding" + _shard_text(p))


def _sharding_list(p):
    p.ws()
    if not p.peek("["):
        p.error(f"expected a list of Shardy shardings '[<@mesh, [...]>, ...]', found {p.snippet()}")
    return OpaqueAttr("#sdy.sharding_per_value<" + re.sub(r"\s+", " ", p.balanced()) + ">")


def _kw(p, word):
    p.expect_keyword(word)
    p.expect("=")




@_custom("sdy.mesh")
def _mesh(p, name, pos, nres):
    sym = p.attribute()
    if not isinstance(sym, SymbolRef):
        p.error("expected a mesh name (@mesh)", pos)
    p.expect("=")
    p.ws()
    mesh = OpaqueAttr("#sdy.mesh" + re.sub(r"\s+", " ", p.balanced()))
    attrs = p.opt_attr_dict({})
    attrs["sym_name"] = sym.name
    attrs["mesh"] = mesh
    return _op(name, [], [], attrs)


@_custom("sdy.sharding_constraint", "sdy.reshard")
def _constraint(p, name, pos, nres):
    a = p.value_name()
    attrs = {"sharding": _sharding(p)}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], attrs)


@_custom("sdy.collective_permute")
def _permute(p, name, pos, nres):
    a = p.value_name()
    _kw(p, "out_sharding")
    attrs = {"out_sharding": _sharding(p)}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], attrs)


_AXES_KEY = {"sdy.all_gather": "gathering_axes", "sdy.all_slice": "slicing_axes",
             "sdy.reduce_scatter": "reduce_scatter_axes"}


@_custom("sdy.all_gather", "sdy.all_slice", "sdy.reduce_scatter")
def _per_dim_collective(p, name, pos, nres):
    p.ws()
    axes = OpaqueAttr("#sdy<list_of_axis_ref_lists" + re.sub(r"\s+", " ", p.balanced()) + ">")
    a = p.value_name()
    _kw(p, "out_sharding")
    attrs = {_AXES_KEY[name]: axes, "out_sharding": _sharding(p)}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], attrs)


@_custom("sdy.all_reduce")
def _all_reduce(p, name, pos, nres):
    p.ws()
    axes = OpaqueAttr("#sdy<axis_ref_list" + re.sub(r"\s+", " ", p.balanced()) + ">")
    a = p.value_name()
    _kw(p, "out_sharding")
    attrs = {"reduction_axes": axes, "out_sharding": _sharding(p)}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], attrs)


@_custom("sdy.all_to_all")
def _all_to_all(p, name, pos, nres):
    p.ws()
    params = OpaqueAttr("#sdy<all_to_all_param_list" + re.sub(r"\s+", " ", p.balanced()) + ">")
    a = p.value_name()
    _kw(p, "out_sharding")
    attrs = {"params": params, "out_sharding": _sharding(p)}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], attrs)


@_custom("sdy.sharding_group")
def _group(p, name, pos, nres):
    a = p.value_name()
    _kw(p, "group_id")
    attrs = {"group_id": p.integer("a group id")}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [], attrs)


@_custom("sdy.propagation_barrier")
def _barrier(p, name, pos, nres):
    a = p.value_name()
    _kw(p, "allowed_direction")
    attrs = {"allowed_direction": p.ident("a propagation direction")}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], attrs)


@_custom("sdy.data_flow_edge")
def _edge(p, name, pos, nres):
    a = p.value_name()
    attrs = {}
    if p.keyword("sharding"):
        p.expect("=")
        attrs["sharding"] = _sharding(p)
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], attrs)


@_custom("sdy.constant")
def _constant(p, name, pos, nres):
    attrs = p.opt_attr_dict({})
    value = p.attribute()
    attrs["value"] = value
    return _op(name, [], [value.type], attrs)


@_custom("sdy.return")
def _return(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    return _op(name, p.resolve(names, types), [], attrs)


def _region_with_args(p, dialect="sdy"):
    p.expect("(")
    args = []
    if not p.accept(")"):
        while True:
            n, npos = p.value_name()
            p.expect(":")
            args.append((n, p.type(), npos))
            if p.accept(")"):
                break
            p.expect(",")
    return p.region(entry_args=args)


@_custom("sdy.manual_computation")
def _manual(p, name, pos, nres):
    p.expect("(")
    names = p.value_names()
    p.expect(")")
    _kw(p, "in_shardings")
    attrs = {"in_shardings": _sharding_list(p)}
    _kw(p, "out_shardings")
    attrs["out_shardings"] = _sharding_list(p)
    _kw(p, "manual_axes")
    p.ws()
    attrs["manual_axes"] = OpaqueAttr("#sdy<manual_axes" + re.sub(r"\s+", " ", p.balanced()) + ">")
    region = _region_with_args(p)
    p.opt_attr_dict(attrs)
    p.expect(":")
    ft = p.type()
    return _op(name, p.resolve(names, list(ft.inputs)), list(ft.results), attrs, [region])


@_custom("sdy.named_computation")
def _named(p, name, pos, nres):
    p.expect("<")
    attrs = {"name": p.attribute(typed=False)}
    p.expect(">")
    p.expect("(")
    names = p.value_names()
    p.expect(")")
    if p.keyword("in_shardings"):
        p.expect("=")
        attrs["in_shardings"] = _sharding_list(p)
    if p.keyword("out_shardings"):
        p.expect("=")
        attrs["out_shardings"] = _sharding_list(p)
    region = _region_with_args(p)
    p.opt_attr_dict(attrs)
    p.expect(":")
    ft = p.type()
    return _op(name, p.resolve(names, list(ft.inputs)), list(ft.results), attrs, [region])


def _direction(v, op):
    name = str(v)
    return f"{DIRECTIONS.index(name)} : i32" if name in DIRECTIONS else (f"{int(v)} : i32" if isinstance(v, int) else name)


# the generic form's attribute kinds (JAX's parser reads meshrt's print back)
ATTRIBUTE_KINDS["sdy.propagation_barrier"] = {"allowed_direction": _direction}


# -- attributes --------------------------------------------------------------------------------------

def _where(op):
    return f"{op.location}: '{op.name}'"


@functools.lru_cache(maxsize=4096)
def _sharding_text(text, where):
    return parse_sharding(text, where)


def sharding_attr(op, key):
    v = op.attributes.get(key)
    return None if v is None else _sharding_text(str(v), _where(op))


def shardings_attr(op, key):
    v = op.attributes.get(key)
    return None if v is None else parse_sharding_list(str(v), _where(op))


def meshes(module: Module) -> dict:
    """``{name: MeshAttr}`` of the module's ``sdy.mesh`` ops."""
    out = {}
    for op in module.operations:
        if op.name == "sdy.mesh":
            name = op.attributes.get("sym_name")
            if name in out:
                raise MLIRError(f"{_where(op)}: mesh @{name} is defined twice")
            out[name] = parse_mesh(str(op.attributes.get("mesh")), _where(op))
    return out


def _arg_sharding(func, i, key="arg_attrs"):
    attrs = func.attributes.get(key)
    if not attrs or i >= len(attrs) or not isinstance(attrs[i], dict):
        return None
    v = attrs[i].get("sdy.sharding")
    return None if v is None else _sharding_text(str(v), f"{func.location}: @{func.attributes.get('sym_name')}")


# -- verification (the constraints of shardy-sdy-ops.txt) ----------------------------------------------

def _check_tensor_sharding(where, s: TensorSharding, t, mesh_table, manual=()):
    if s.mesh not in mesh_table:
        raise MLIRError(f"{where}: sharding names mesh @{s.mesh}, which no sdy.mesh defines")
    axes = mesh_table[s.mesh].sizes()
    rank = t.rank if isinstance(t, TensorType) else 0
    if len(s.dims) != rank:
        raise MLIRError(f"{where}: sharding {s} has {len(s.dims)} dimension shardings for a tensor of rank "
                        f"{rank} ({t})")
    seen = {}
    for ref in s.axis_refs():
        if ref.name not in axes:
            raise MLIRError(f"{where}: sharding {s} names axis \"{ref.name}\", which mesh @{s.mesh} "
                            f"({mesh_table[s.mesh]}) does not have")
        if ref.pre is not None:
            if ref.pre < 1 or ref.size < 1 or axes[ref.name] % (ref.pre * ref.size):
                raise MLIRError(f"{where}: sub-axis {ref} does not divide axis \"{ref.name}\" of size "
                                f"{axes[ref.name]}")
        key = (ref.name, ref.pre, ref.size)
        full = (ref.name, None, None)
        if key in seen or (full in seen and ref.pre is not None) or (
                ref.pre is None and any(k[0] == ref.name for k in seen)):
            raise MLIRError(f"{where}: sharding {s}: axis {ref} is used more than once")
        seen[key] = True


def _infer_collective(op, operand_s: TensorSharding):
    """The out_sharding the sdy collective's axes imply for ``operand_s``; None when not determined."""
    dims = [list(d.axes) for d in operand_s.dims]
    name = op.name
    if name == "sdy.all_gather":
        per_dim = parse_axes_per_dim(str(op.attributes["gathering_axes"]), _where(op))
        for d, axes in enumerate(per_dim):
            if axes:
                if dims[d][len(dims[d]) - len(axes):] != list(axes):
                    raise MLIRError(f"{_where(op)}: gathering axes {[str(a) for a in axes]} of dim {d} are not a "
                                    f"suffix of the operand's dimension sharding {DimSharding(tuple(dims[d]))}")
                dims[d] = dims[d][:len(dims[d]) - len(axes)]
    elif name in ("sdy.all_slice", "sdy.reduce_scatter"):
        key = "slicing_axes" if name == "sdy.all_slice" else "reduce_scatter_axes"
        per_dim = parse_axes_per_dim(str(op.attributes[key]), _where(op))
        for d, axes in enumerate(per_dim):
            dims[d] = dims[d] + list(axes)
    elif name == "sdy.all_to_all":
        for axes, src, tgt in _all_to_all_params(op):
            if dims[src][len(dims[src]) - len(axes):] != list(axes):
                raise MLIRError(f"{_where(op)}: all_to_all axes {[str(a) for a in axes]} are not a suffix of "
                                f"dim {src}'s sharding {DimSharding(tuple(dims[src]))}")
            dims[src] = dims[src][:len(dims[src]) - len(axes)]
            dims[tgt] = dims[tgt] + list(axes)
    else:
        return None
    unreduced = operand_s.unreduced
    return TensorSharding(operand_s.mesh, tuple(DimSharding(tuple(d)) for d in dims), operand_s.replicated, unreduced)


def _all_to_all_params(op):
    import re

    text = str(op.attributes["params"])
    m = re.fullmatch(r"#sdy<all_to_all_param_list\s*\[(.*)\]\s*>", text, re.S)
    if not m:
        raise MLIRError(f"{_where(op)}: cannot read the all_to_all parameters {text!r}")
    out = []
    for axes, src, tgt in re.findall(r"(\{[^}]*\})\s*:\s*(\d+)\s*->\s*(\d+)", m.group(1)):
        out.append((parse_axes_per_dim(f"[{axes}]", _where(op))[0], int(src), int(tgt)))
    if not out:
        raise MLIRError(f"{_where(op)}: the all_to_all parameter list must not be empty")
    rank = op.operands[0].type.rank
    srcs = [s for _, s, _ in out]
    dims = srcs + [t for _, _, t in out]
    if any(not 0 <= d < rank for d in dims):
        raise MLIRError(f"{_where(op)}: all_to_all src_dim/tgt_dim must be in [0, {rank})")
    if srcs != sorted(srcs):
        raise MLIRError(f"{_where(op)}: all_to_all src_dim must be sorted in ascending order across parameters")
    if len(set(dims)) != len(dims):
        raise MLIRError(f"{_where(op)}: every all_to_all src_dim and tgt_dim must be unique across parameters")
    return out


def _dims_equal(a: TensorSharding, b: TensorSharding):
    return [tuple(d.axes) for d in a.dims] == [tuple(d.axes) for d in b.dims]


def verify_sdy(module: Module) -> Module:
    """Check every ``sdy`` attribute and op against shardy-sdy-ops.txt; `MLIRError` at the op.

    >>> from meshrt.mlir import parse
    >>> verify_sdy(parse('''sdy.mesh @mesh = <["x"=2]>
    ... func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
    ...   %0 = sdy.sharding_constraint %a <@mesh, [{"y"}]> : tensor<4xf32>
    ...   return %0 : tensor<4xf32>
    ... }'''))
    Traceback (most recent call last):
    ...
    meshrt.errors.MLIRError: <string>:3:8: 'sdy.sharding_constraint': sharding #sdy.sharding<@mesh, [{"y"}]> names axis "y", which mesh @mesh (<["x"=2]>) does not have
    """
    table = meshes(module)
    sizes = {m.size for m in table.values() if not (m.device_ids is not None and len(m.device_ids) == 1)}
    if len(sizes) > 1:
        raise MLIRError(f"{module.filename}: all meshes of a module must have the same number of devices, "
                        f"got {sorted(sizes)}")
    known = {}  # value -> its TensorSharding where the program says it

    def note(v, s):
        if s is not None:
            known[v] = s

    for f in module.operations:
        if f.name != "func.func" or not f.regions or not f.regions[0].blocks:
            continue
        ftype = f.attributes["function_type"].type
        for i, (a, t) in enumerate(zip(f.regions[0].entry.arguments, ftype.inputs)):
            s = _arg_sharding(f, i)
            if s is not None:
                _check_tensor_sharding(f"{f.location}: argument {i} of @{f.attributes['sym_name']}", s, t, table)
            note(a, s)
        for i, t in enumerate(ftype.results):
            s = _arg_sharding(f, i, "res_attrs")
            if s is not None:
                _check_tensor_sharding(f"{f.location}: result {i} of @{f.attributes['sym_name']}", s, t, table)
        for op in f.walk():
            _verify_op(op, table, known, note)
    return module


def _verify_op(op, table, known, note):
    w = _where(op)
    per_value = op.attributes.get("sdy.sharding")
    if per_value is not None:
        ss = parse_sharding_list(str(per_value), w)
        if len(ss) != len(op.results):
            raise MLIRError(f"{w}: sdy.sharding has {len(ss)} shardings for {len(op.results)} results")
        for r, s in zip(op.results, ss):
            _check_tensor_sharding(w, s, r.type, table)
            note(r, s)
    name = op.name
    if name in ("sdy.sharding_constraint", "sdy.reshard"):
        s = sharding_attr(op, "sharding")
        _check_tensor_sharding(w, s, op.results[0].type, table)
        note(op.results[0], s)
    elif name in _SDY_COLLECTIVES:
        out = sharding_attr(op, "out_sharding")
        if out is None:
            raise MLIRError(f"{w}: needs an out_sharding")
        _check_tensor_sharding(w, out, op.results[0].type, table)
        src = known.get(op.operands[0])
        if src is not None:
            _check_tensor_sharding(w, src, op.operands[0].type, table)
        if name == "sdy.all_reduce":
            axes = parse_axis_list(str(op.attributes["reduction_axes"]).replace("#sdy<axis_ref_list", "")
                                   .rstrip(">"), w)
            if src is not None:
                if not _dims_equal(src, out):
                    raise MLIRError(f"{w}: the operand sharding {src} and out_sharding {out} must have equivalent "
                                    "dimension shardings")
                used = {a.name for d in src.dims for a in d.axes} | {a.name for a in src.replicated}
                clash = [a for a in axes if a in used]
                if clash:
                    raise MLIRError(f"{w}: reduction_axes {clash} must not overlap with the operand's dimension "
                                    "sharding and replicated axes")
            clash = [a.name for a in out.unreduced if a.name in axes]
            if clash:
                raise MLIRError(f"{w}: reduction_axes {clash} must not overlap with the unreduced axes of "
                                "out_sharding")
        elif name == "sdy.collective_permute":
            if src is not None:
                sizes = table[src.mesh].sizes()
                for d, (a, b) in enumerate(zip(src.dims, out.dims)):
                    pa = int(np.prod([x.length(sizes) for x in a.axes] or [1]))
                    pb = int(np.prod([x.length(sizes) for x in b.axes] or [1]))
                    if pa != pb:
                        raise MLIRError(f"{w}: dim {d}: the product of the sharding axis sizes in out_sharding "
                                        f"({pb}) must match that of the operand's dimension sharding ({pa})")
        elif src is not None:
            want = _infer_collective(op, src)
            if want is not None and not _dims_equal(want, out):
                raise MLIRError(f"{w}: applying the op's axes to the operand sharding {src} gives {want}, but "
                                f"out_sharding is {out}")
        elif name == "sdy.all_to_all":
            _all_to_all_params(op)  # its own constraints hold whatever the operand's sharding
        note(op.results[0], out)
    elif name == "sdy.manual_computation":
        _verify_manual(op, table, w)
    elif name == "sdy.propagation_barrier":
        d = direction_name(op.attributes.get("allowed_direction", ""))
        if d not in ("FORWARD", "BACKWARD", "NONE"):
            raise MLIRError(f"{w}: allowed_direction must be FORWARD, BACKWARD or NONE (BOTH would make the barrier "
                            f"redundant), got {d!r}")
    elif name == "sdy.named_computation":
        body = op.regions[0].entry
        if [a.type for a in body.arguments] != [v.type for v in op.operands]:
            raise MLIRError(f"{w}: the block argument types must be the operand types")
        ret = body.operations[-1]
        if [v.type for v in ret.operands] != [r.type for r in op.results]:
            raise MLIRError(f"{w}: the returned types must be the result types")
    elif name == "sdy.sharding_group":
        if not isinstance(op.attributes.get("group_id"), int):
            raise MLIRError(f"{w}: group_id must be an integer")
    elif name == "sdy.data_flow_edge":
        if op.attributes.get("sharding") is not None:
            _check_tensor_sharding(w, sharding_attr(op, "sharding"), op.results[0].type, table)


def _verify_manual(op, table, w):
    ins, outs = shardings_attr(op, "in_shardings"), shardings_attr(op, "out_shardings")
    manual = parse_axis_list(str(op.attributes.get("manual_axes", "{}")), w)
    body = op.regions[0].entry
    ret = body.operations[-1]
    if not (len(ins) == len(op.operands) == len(body.arguments)):
        raise MLIRError(f"{w}: the number of in_shardings ({len(ins)}), operands ({len(op.operands)}) and body "
                        f"arguments ({len(body.arguments)}) must match")
    if not (len(outs) == len(op.results) == len(ret.operands)):
        raise MLIRError(f"{w}: the number of out_shardings ({len(outs)}), results ({len(op.results)}) and returned "
                        f"values ({len(ret.operands)}) must match")
    for kind, ss, glob, loc in (("operand", ins, op.operands, body.arguments),
                                ("result", outs, op.results, ret.operands)):
        for i, (s, g, lv) in enumerate(zip(ss, glob, loc)):
            _check_tensor_sharding(f"{w} {kind} {i}", s, g.type, table)
            sizes = table[s.mesh].sizes()
            for a in manual:
                if a not in sizes:
                    raise MLIRError(f"{w}: manual axis \"{a}\" is not an axis of mesh @{s.mesh}")
            want = []
            for d, (dim, n) in enumerate(zip(s.dims, g.type.shape)):
                k, free_seen = 1, False
                for ref in dim.axes:
                    if ref.name in manual:
                        if free_seen:
                            raise MLIRError(f"{w}: {kind} {i} dim {d}: the manual axes must come before any free "
                                            f"axes in each dim sharding ({dim})")
                        k *= ref.length(sizes)
                    else:
                        free_seen = True
                if n % k:
                    raise MLIRError(f"{w}: {kind} {i} dim {d}: the manual axes cannot introduce padding; size {n} "
                                    f"is not divisible by {k}")
                want.append(n // k)
            if tuple(want) != tuple(lv.type.shape):
                raise MLIRError(f"{w}: {kind} {i}: the local type {lv.type} does not match the global type "
                                f"{g.type} divided by the manual axes (local shape {tuple(want)})")
