"""The custom (pretty) forms of the StableHLO ops JAX prints: one reader per op, registered
with `_custom` (see `meshrt.mlir.syntax.reader`).  Ops JAX prints in generic form (the collectives,
``reduce_window``, ``gather`` ...) need no reader here.

Attributes get the names of StableHLO's generic form (``broadcast_dimensions``,
``comparison_direction``, ``dimensions``, ...), so both forms give the same `Operation`.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
...   %0 = stablehlo.popcnt %a : tensor<4xi32>
...   return %0 : tensor<4xi32>
... }''')
>>> op = m.functions()["main"].regions[0].entry.operations[0]
>>> op.name, [str(v.type) for v in op.operands + op.results]
('stablehlo.popcnt', ['tensor<4xi32>', 'tensor<4xi32>'])
"""

from __future__ import annotations

from ..syntax.reader import _custom, _op
from ..ir import FunctionType, OpaqueAttr, Region, TensorType
from ..syntax.printer import ATTRIBUTE_KINDS

UNARY = (
    "abs cbrt ceil cosine count_leading_zeros exponential exponential_minus_one floor imag is_finite log "
    "log_plus_one logistic negate not popcnt real round_nearest_afz round_nearest_even rsqrt sign sine sqrt "
    "tan tanh convert bitcast_convert reshape"
).split()
BINARY = (
    "add subtract multiply divide remainder maximum minimum power atan2 and or xor shift_left "
    "shift_right_arithmetic shift_right_logical complex"
).split()


def _types_after_colon(p, n_operands):
    """``: T`` (all operands and the result), ``: (A, B) -> R``, or ``: A, B`` (select)."""
    p.expect(":")
    t = p.type()
    if isinstance(t, FunctionType):
        return list(t.inputs), list(t.results)
    types = [t]
    while p.peek(",") and not p._after_comma_is("%"):
        p.expect(",")
        types.append(p.type())
    if len(types) == 1:
        return [t] * n_operands, [t]
    return types, [types[-1]]


def _values(p):
    names = [p.value_name()]
    while p.peek(",") and p._after_comma_is("%"):
        p.expect(",")
        names.append(p.value_name())
    return names


@_custom(*[f"stablehlo.{n}" for n in UNARY + BINARY])
def _elementwise(p, name, pos, nres):
    names = _values(p)
    attrs = p.opt_attr_dict({})
    ins, outs = _types_after_colon(p, len(names))
    return _op(name, p.resolve(names, ins), outs, attrs)


@_custom("stablehlo.select", "stablehlo.clamp")
def _select(p, name, pos, nres):
    names = _values(p)
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    if isinstance(t, FunctionType):
        ins, outs = list(t.inputs), list(t.results)
    else:
        types = [t]
        while p.peek(","):
            p.expect(",")
            types.append(p.type())
        if name == "stablehlo.select":  # pred type, value type
            ins, outs = ([types[0], types[-1], types[-1]], [types[-1]]) if len(types) == 2 else (types * 3, types)
        else:  # clamp: one type for all, or min/max scalars
            ins, outs = (types * 3, types) if len(types) == 1 else (types, [types[1]])
    return _op(name, p.resolve(names, ins), outs, attrs)


@_custom("stablehlo.compare")
def _compare(p, name, pos, nres):
    direction = p.ident("a comparison direction")
    p.expect(",")
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = {"comparison_direction": OpaqueAttr(f"#stablehlo<comparison_direction {direction}>")}
    if p.accept(","):
        attrs["compare_type"] = OpaqueAttr(f"#stablehlo<comparison_type {p.ident('a comparison type')}>")
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, 2)
    return _op(name, p.resolve([a, b], ins), outs, attrs)


@_custom("stablehlo.constant")
def _constant(p, name, pos, nres):
    attrs = p.opt_attr_dict({})
    value = p.attribute()
    attrs["value"] = value
    return _op(name, [], [value.type], attrs)


@_custom("stablehlo.iota")
def _iota(p, name, pos, nres):
    p.expect_keyword("dim")
    p.expect("=")
    attrs = {"iota_dimension": p.integer("a dimension")}
    p.opt_attr_dict(attrs)
    p.expect(":")
    return _op(name, [], [p.type()], attrs)


def _dims_list(p):
    p.expect("[")
    out = []
    while not p.accept("]"):
        if out:
            p.expect(",")
        out.append(p.integer("a dimension"))
    return tuple(out)


@_custom("stablehlo.broadcast_in_dim", "stablehlo.transpose")
def _with_dims(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    p.expect_keyword("dims")
    p.expect("=")
    key = "broadcast_dimensions" if name.endswith("broadcast_in_dim") else "permutation"
    attrs = {key: _dims_list(p)}
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, 1)
    return _op(name, p.resolve([a], ins), outs, attrs)


@_custom("stablehlo.reverse")
def _reverse(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    p.expect_keyword("dims")
    p.expect("=")
    attrs = {"dimensions": _dims_list(p)}
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, 1)
    return _op(name, p.resolve([a], ins), outs, attrs)


@_custom("stablehlo.concatenate")
def _concat(p, name, pos, nres):
    names = _values(p)
    p.expect(",")
    p.expect_keyword("dim")
    p.expect("=")
    attrs = {"dimension": p.integer("a dimension")}
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, len(names))
    return _op(name, p.resolve(names, ins), outs, attrs)


@_custom("stablehlo.slice")
def _slice(p, name, pos, nres):
    a = p.value_name()
    p.expect("[")
    start, limit, stride = [], [], []
    while not p.accept("]"):
        if start:
            p.expect(",")
        start.append(p.integer())
        p.expect(":")
        limit.append(p.integer())
        stride.append(p.integer() if p.accept(":") else 1)
    attrs = {"start_indices": tuple(start), "limit_indices": tuple(limit), "strides": tuple(stride)}
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, 1)
    return _op(name, p.resolve([a], ins), outs, attrs)


@_custom("stablehlo.dynamic_slice")
def _dynamic_slice(p, name, pos, nres):
    names = _values(p)
    p.expect(",")
    p.expect_keyword("sizes")
    p.expect("=")
    attrs = {"slice_sizes": _dims_list(p)}
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, len(names))
    return _op(name, p.resolve(names, ins), outs, attrs)


@_custom("stablehlo.dynamic_update_slice", "stablehlo.optimization_barrier")
def _plain(p, name, pos, nres):
    names = _values(p)
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    if isinstance(t, FunctionType):
        ins, outs = list(t.inputs), list(t.results)
    else:
        types = [t]
        while p.peek(","):
            p.expect(",")
            types.append(p.type())
        ins, outs = (types, types) if name.endswith("barrier") else (types, [types[0]])
    return _op(name, p.resolve(names, ins), outs, attrs)


@_custom("stablehlo.pad")
def _pad(p, name, pos, nres):
    names = [p.value_name()]
    p.expect(",")
    names.append(p.value_name())
    attrs = {}
    for key, attr in (("low", "edge_padding_low"), ("high", "edge_padding_high"), ("interior", "interior_padding")):
        p.expect(",")
        p.expect_keyword(key)
        p.expect("=")
        attrs[attr] = _dims_list(p)
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, 2)
    return _op(name, p.resolve(names, ins), outs, attrs)


@_custom("stablehlo.dot_general")
def _dot_general(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = {"lhs_batching_dimensions": (), "rhs_batching_dimensions": ()}
    while p.accept(","):
        if p.keyword("batching_dims"):
            p.expect("=")
            attrs["lhs_batching_dimensions"] = _dims_list(p)
            p.expect_keyword("x")
            attrs["rhs_batching_dimensions"] = _dims_list(p)
        elif p.keyword("contracting_dims"):
            p.expect("=")
            attrs["lhs_contracting_dimensions"] = _dims_list(p)
            p.expect_keyword("x")
            attrs["rhs_contracting_dimensions"] = _dims_list(p)
        elif p.keyword("precision"):
            p.expect("=")
            p.ws()
            attrs["precision_config"] = p.balanced()
        elif p.keyword("algorithm"):
            p.expect("=")
            p.ws()
            attrs["algorithm"] = p.balanced()
        else:
            p.error(f"unexpected {p.snippet()} in 'stablehlo.dot_general'")
    attrs.setdefault("lhs_contracting_dimensions", ())
    attrs.setdefault("rhs_contracting_dimensions", ())
    # the generic form's attributes: #stablehlo.dot<...> (non-empty fields) and the precision enums
    fields = [f"{k} = [{', '.join(str(x) for x in attrs.pop(k))}]" for k in (
        "lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
        "rhs_contracting_dimensions")]
    attrs["dot_dimension_numbers"] = OpaqueAttr("#stablehlo.dot<" + ", ".join(
        f for f in fields if not f.endswith("[]")) + ">")
    if "precision_config" in attrs:
        names = [x.strip() for x in attrs["precision_config"].strip("[]").split(",") if x.strip()]
        attrs["precision_config"] = OpaqueAttr("[" + ", ".join(f"#stablehlo<precision {n}>" for n in names) + "]")
    p.opt_attr_dict(attrs)
    ins, outs = _types_after_colon(p, 2)
    return _op(name, p.resolve([a, b], ins), outs, attrs)


@_custom("stablehlo.return")
def _return(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    return _op(name, p.resolve(names, types), [], attrs)


@_custom("stablehlo.reduce")
def _reduce(p, name, pos, nres):
    """``reduce(%a init: %i), (%b init: %j) applies stablehlo.add across dimensions = [1] : T``
    or ``... across dimensions = [1] : T reducer(%x: A, %y: A) (%u: B, %v: B) { body }``."""
    inputs, inits = [], []
    while True:
        p.expect("(")
        inputs.append(p.value_name())
        p.expect_keyword("init")
        p.expect(":")
        inits.append(p.value_name())
        p.expect(")")
        if not p.accept(","):
            break
    applies = None
    if p.keyword("applies"):
        applies = p.ident("an op name")
    p.expect_keyword("across")
    p.expect_keyword("dimensions")
    p.expect("=")
    attrs = {"dimensions": _dims_list(p)}
    p.opt_attr_dict(attrs)
    p.expect(":")
    ft = p.type()
    if not isinstance(ft, FunctionType):
        p.error("expected a function type for 'stablehlo.reduce'", pos)
    n = len(inputs)
    operands = p.resolve(inputs + inits, list(ft.inputs))
    if applies is not None:
        scalar = [TensorType((), t.element) for t in ft.inputs[n:]]
        region = _applies_region(p, applies, scalar)
    else:
        p.expect_keyword("reducer")
        args_a, args_b = [], []
        for _ in range(n):
            p.expect("(")
            for lst in (args_a, args_b):
                nm, npos = p.value_name()
                p.expect(":")
                lst.append((nm, p.type(), npos))
                p.accept(",")
            p.expect(")")
        region = p.region(entry_args=args_a + args_b, dialect="stablehlo")
    return _op(name, operands, list(ft.results), attrs, [region])


def _applies_region(p, opname, scalar_types):
    """The body ``applies stablehlo.add`` stands for, built as IR."""
    from ..ir import Block, Operation, Value

    full = opname if "." in opname else f"stablehlo.{opname}"
    a = [Value(f"%lhs{i}", t) for i, t in enumerate(scalar_types)]
    b = [Value(f"%rhs{i}", t) for i, t in enumerate(scalar_types)]
    ops = []
    outs = []
    for x, y, t in zip(a, b, scalar_types):
        op = Operation(full, [x, y], [t], {}, [], [])
        op.results = [Value(f"%r{len(ops)}", t)]
        ops.append(op)
        outs.append(op.results[0])
    ops.append(Operation("stablehlo.return", outs, [], {}, [], []))
    block = Block()
    block.arguments.extend(a + b)
    block.operations.extend(ops)
    return Region([block])


@_custom("stablehlo.while")
def _while(p, name, pos, nres):
    """``while(%iterArg = %a, ...) : T1, T2 cond { ... } do { ... }``."""
    p.expect("(")
    pairs = []
    if not p.accept(")"):
        while True:
            inner = p.value_name()
            p.expect("=")
            outer = p.value_name()
            pairs.append((inner, outer))
            if p.accept(")"):
                break
            p.expect(",")
    attrs = p.opt_attr_dict({})
    types = []
    if pairs:
        p.expect(":")
        types = p.type_list()
    operands = p.resolve([o for _, o in pairs], types)
    args = [(n, t, npos) for ((n, npos), _), t in zip(pairs, types)]
    p.expect_keyword("cond")
    cond = p.region(entry_args=args, dialect="stablehlo")
    p.expect_keyword("do")
    body = p.region(entry_args=args, dialect="stablehlo")
    return _op(name, operands, types, attrs, [cond, body])


_ = Region  # re-exported for the forms that build regions


def _i64_array(v, op):
    return f"array<i64: {', '.join(str(int(x)) for x in v)}>" if len(v) else "array<i64>"


def _typed_i64(v, op):
    return f"{int(v)} : i64"


# Module.generic() prints StableHLO's attributes with the kinds its ops declare, so that JAX's
# MLIR parser (and stablehlo-opt) read meshrt's print back.
ATTRIBUTE_KINDS["stablehlo.*"] = {
    **{k: _i64_array for k in (
        "broadcast_dimensions", "permutation", "start_indices", "limit_indices", "strides", "slice_sizes",
        "edge_padding_low", "edge_padding_high", "interior_padding", "dimensions", "window_dimensions",
        "window_strides", "base_dilations", "window_dilations")},
    "iota_dimension": _typed_i64, "dimension": _typed_i64, "all_gather_dim": _typed_i64,
    "scatter_dimension": _typed_i64, "split_dimension": _typed_i64, "concat_dimension": _typed_i64,
    "split_count": _typed_i64,
}
