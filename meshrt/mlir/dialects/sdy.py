"""The custom (pretty) forms of the Shardy ``sdy`` ops, as JAX prints them:
one reader per op, registered with `_custom` (see `meshrt.mlir._reader`).

Shardy attributes are kept as MLIR's generic text (`OpaqueAttr` ``#sdy.sharding<...>``,
``#sdy.sharding_per_value<[...]>``, ``#sdy<manual_axes{...}>`` ...), which the generic form
of the same op carries too; `meshrt.mlir.sdy` reads them into `meshrt.mlir._sdy_attrs`.
"""

from __future__ import annotations

import re

from ..syntax.reader import _custom, _op
from .sdy_attrs import DIRECTIONS
from ..ir import OpaqueAttr, SymbolRef
from ..syntax.printer import ATTRIBUTE_KINDS


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
