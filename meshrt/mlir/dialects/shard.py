"""The custom (pretty) forms of shard dialect ops (grid, sharding, collectives, update_halo):
one reader per op, registered with `_custom` (see `meshrt.mlir._reader`)."""

from __future__ import annotations

import re

from ...sharding import text as _sharding_text
from ...errors import MeshError, MLIRError, ShardingError
from ...mesh import parse_mesh_text
from .tensor import _conversion, _mixed_list
from ..syntax.lexer import _IDENT
from ..syntax.printer import ATTRIBUTE_KINDS, _array, _ints, _typed_int
from ..syntax.reader import _I64, _INDEX, _custom, _normalizer, _op
from ..ir import DYNAMIC, UNIT, OpaqueType

_SHARDING = OpaqueType("!shard.sharding")


# shard --------------------------------------------------------------------------------------------


def _grid_ref(p):
    p.ws()
    if not p.peek("@"):
        p.error(f"expected a grid symbol (@name), found {p.snippet()}")
    return p.attribute()


def _sharding_fields(p, name, pos, stop_at_colon=True):
    """The split_axes/halo_sizes/... clause, read by meshrt's sharding text parser."""
    p.ws()
    start = p.pos
    depth, i, s = 0, p.pos, p.s
    while i < len(s):  # the clause ends at ':' or '{' outside brackets
        c = s[i]
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif depth == 0 and (c == ":" or c == "{"):
            break
        elif c == "/" and s.startswith("//", i):
            i = s.find("\n", i)
            if i < 0:
                i = len(s)
            continue
        i += 1
    text = s[start:i]
    try:
        fields = _sharding_text.mlir_sharding_fields(text)
    except ShardingError as e:
        p.error(f"'{name}': {getattr(e, 'reason', e)}", start + getattr(e, "offset", 0))
    p.pos = i
    return fields, start


def _static_dynamic(p, values, start):
    static, dyn = [], []
    for v in values:
        if isinstance(v, str):
            static.append(DYNAMIC)
            dyn.append((v, start))
        else:
            static.append(v)
    return tuple(static), dyn


@_custom("shard.grid")
def _shard_grid(p, name, pos, nres):
    sym = _grid_ref(p)
    start = p.pos
    p.ws()
    if not p.peek("("):
        p.error(f"expected '(shape = ...)' after the grid name, found {p.snippet()}")
    p.balanced()
    text = f"shard.grid @{sym.name}{p.s[start:p.pos].strip()}"
    attrs = {"sym_name": sym.name}
    body = p.s[start:p.pos]
    m = re.match(r"\s*\(\s*shape\s*=\s*(.*?)\s*\)\s*$", body, re.S)
    if m and m.group(1) in ("", "[]"):
        attrs["shape"] = ()  # the verifier rejects it, with the location
    else:
        try:
            shape, _, _ = parse_mesh_text(text)
        except MeshError as e:
            p.error(f"'shard.grid': {e}", start)
        attrs["shape"] = tuple(DYNAMIC if d == -1 else d for d in shape)
    p.opt_attr_dict(attrs)
    return _op(name, [], [], attrs)


@_custom("shard.sharding")
def _shard_sharding(p, name, pos, nres):
    grid = _grid_ref(p)
    fields, start = _sharding_fields(p, name, pos)
    if "split_axes" not in fields:
        p.error("'shard.sharding' expects 'split_axes = [...]'", start)
    halo, dhalo = _static_dynamic(p, fields.get("halo_sizes", ()), start)
    offs, doffs = _static_dynamic(p, fields.get("sharded_dims_offsets", ()), start)
    attrs = {
        "grid": grid,
        "split_axes": tuple(tuple(a) for a in fields["split_axes"]),
        "static_halo_sizes": halo,
        "static_sharded_dims_offsets": offs,
        "operandSegmentSizes": (len(doffs), len(dhalo)),
    }
    if "partial_type" in fields:  # seed 001's mesh.sharding; MLIR 22 dropped it
        attrs["partial_type"] = fields["partial_type"]
        attrs["partial_axes"] = tuple(fields["partial_axes"])
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(doffs + dhalo, [_I64] * (len(dhalo) + len(doffs))), [t], attrs)


@_custom("shard.shard")
def _shard_shard(p, name, pos, nres):
    src = p.value_name()
    p.expect_keyword("to")
    sh = p.value_name()
    attrs = {}
    if p.keyword("annotate_for_users"):
        attrs["annotate_for_users"] = UNIT
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([src, sh], [t, _SHARDING]), [t], attrs)


@_custom("shard.get_sharding")
def _shard_get_sharding(p, name, pos, nres):
    return _conversion(p, name, "->")


@_custom("shard.shard_shape")
def _shard_shape(p, name, pos, nres):
    p.expect_keyword("dims")
    p.expect("=")
    dims, ddims = _mixed_list(p)
    p.expect_keyword("sharding")
    p.expect("=")
    sh = p.value_name()
    p.expect_keyword("device")
    p.expect("=")
    dev, ddev = _mixed_list(p)
    attrs = p.opt_attr_dict({"dims": dims, "device": dev})
    attrs["operandSegmentSizes"] = (len(ddims), 1, len(ddev))
    p.expect(":")
    types = p.type_list()
    operands = p.resolve(ddims + [sh] + ddev, [_INDEX] * len(ddims) + [_SHARDING] + [_INDEX] * len(ddev))
    return _op(name, operands, types, attrs)


def _axes_kw(p, attrs, key):
    if p.keyword(key):
        p.expect("=")
        attrs[key] = p.array_attribute(key)


@_custom("shard.process_multi_index", "shard.process_linear_index")
def _shard_process_index(p, name, pos, nres):
    p.expect_keyword("on")
    attrs = {"grid": _grid_ref(p)}
    if name == "shard.process_multi_index":
        attrs["axes"] = ()
        _axes_kw(p, attrs, "axes")
    p.opt_attr_dict(attrs)
    p.expect(":")
    return _op(name, [], p.type_list(), attrs)


@_custom("shard.grid_shape")
def _shard_grid_shape(p, name, pos, nres):
    attrs = {"grid": _grid_ref(p), "axes": ()}
    _axes_kw(p, attrs, "axes")
    p.opt_attr_dict(attrs)
    p.expect(":")
    return _op(name, [], p.type_list(), attrs)


@_custom("shard.neighbors_linear_indices")
def _shard_neighbors(p, name, pos, nres):
    p.expect_keyword("on")
    attrs = {"grid": _grid_ref(p)}
    p.expect("[")
    dev = p.value_names()
    p.expect("]")
    _axes_kw(p, attrs, "split_axes")
    p.opt_attr_dict(attrs)
    p.expect(":")
    types = p.type_list()
    return _op(name, p.resolve(dev, [_INDEX] * len(dev)), types, attrs)


# keyword -> kind of value, per collective
_COLLECTIVES = {
    "all_gather": ("gather_axis",),
    "all_reduce": ("reduction",),
    "all_slice": ("slice_axis",),
    "all_to_all": ("split_axis", "concat_axis"),
    "broadcast": ("root",),
    "gather": ("gather_axis", "root"),
    "recv": ("source",),
    "reduce": ("reduction", "root"),
    "reduce_scatter": ("reduction", "scatter_axis", "scatter_dim"),
    "scatter": ("scatter_axis", "scatter_dim", "root"),
    "send": ("destination",),
    "shift": ("shift_axis", "offset", "rotate"),
}
_DEVICE_KEYS = ("root", "source", "destination")


@_custom(*[f"shard.{k}" for k in _COLLECTIVES])
def _shard_collective(p, name, pos, nres):
    kind = name.split(".", 1)[1]
    src = p.value_name()
    p.expect_keyword("on")
    attrs = {"grid": _grid_ref(p), "grid_axes": ()}
    if kind in ("all_reduce", "reduce", "reduce_scatter"):
        attrs["reduction"] = "sum"
    allowed = ("grid_axes",) + _COLLECTIVES[kind]
    dyn = []
    while True:
        p.ws()
        m = _IDENT.match(p.s, p.pos)
        if not m or m.group(0) not in allowed:
            break
        key = m.group(0)
        p.pos = m.end()
        if key == "rotate":
            attrs["rotate"] = UNIT
            continue
        p.expect("=")
        if key == "grid_axes":
            attrs[key] = p.array_attribute(key)
        elif key == "reduction":
            attrs[key] = p.ident("a reduction kind")
        elif key in _DEVICE_KEYS:
            static, d = _mixed_list(p)
            attrs[key] = static
            dyn += d
        else:
            attrs[key] = p.integer(f"an integer for {key}")
    p.opt_attr_dict(attrs)
    p.expect(":")
    if p.peek("(") and p._is_function_type():
        ft = p.type()
        in_types, out = list(ft.inputs), list(ft.results)
    else:
        in_types = [p.type()]
        p.expect("->")
        out = [p.type()]
    operands = p.resolve([src] + dyn, in_types)
    return _op(name, operands, out, attrs)


@_custom("shard.update_halo")
def _shard_update_halo(p, name, pos, nres):
    dst = p.value_name()
    p.expect_keyword("on")
    grid = _grid_ref(p)
    fields, start = _sharding_fields(p, name, pos)
    if "split_axes" not in fields:
        p.error("'shard.update_halo' expects 'split_axes = [...]'", start)
    extra = set(fields) - {"split_axes", "halo_sizes"}
    if extra:
        p.error(f"'shard.update_halo' takes split_axes and halo_sizes, not {sorted(extra)}", start)
    halo, dhalo = _static_dynamic(p, fields.get("halo_sizes", ()), start)
    attrs = {"grid": grid, "split_axes": tuple(tuple(a) for a in fields["split_axes"]), "static_halo_sizes": halo}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([dst] + dhalo, [t] + [_I64] * len(dhalo)), [t], attrs)


# normalization and the MLIR form of the attributes -----------------------------------------------


@_normalizer("shard.reduce_scatter", "shard.scatter")
def _scatter_axis(p, op, pos):
    if "scatter_dim" in op.attributes:
        op.attributes["scatter_axis"] = op.attributes.pop("scatter_dim")  # the newer dialect's name for the same attribute


def _shard_reduction(v, op):
    return f"#shard<partial {v}>"


def _axis_array(v, op):
    return "#shard<axisarray[" + ", ".join("[" + _ints(a) + "]" for a in v) + "]>"


def _partial_sharding(v, op):
    kind, axes = op.attributes.get("partial_type"), list(op.attributes.get("partial_axes", ()))
    raise MLIRError(f"{op.location}: 'shard.sharding' with partial = {kind} {axes}: LLVM 22 dropped partial "
                    "annotations from the sharding op (llvm/llvm-project#149805, July 2025), so no MLIR text "
                    "says this sharding; reduce the partial axes first (an all_reduce) or keep meshrt's own "
                    "form (str(Sharding))")


ATTRIBUTE_KINDS["shard.*"] = {
    "grid_axes": _array("i16"), "axes": _array("i16"),
    "shape": _array("i64"), "static_halo_sizes": _array("i64"), "static_sharded_dims_offsets": _array("i64"),
    "root": _array("i64"), "source": _array("i64"), "destination": _array("i64"),
    "dims": _array("i64"), "device": _array("i64"), "operandSegmentSizes": _array("i32"),
    "gather_axis": _typed_int("index"), "slice_axis": _typed_int("index"), "split_axis": _typed_int("index"),
    "concat_axis": _typed_int("index"), "scatter_axis": _typed_int("index"),
    "shift_axis": _typed_int("index"), "offset": _typed_int("i64"),
    "reduction": _shard_reduction, "split_axes": _axis_array,
    "partial_type": _partial_sharding, "partial_axes": _partial_sharding,
}
ATTRIBUTE_KINDS["shard.neighbors_linear_indices"] = {"split_axes": _array("i16")}
