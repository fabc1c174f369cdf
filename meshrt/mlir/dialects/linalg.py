"""The custom (pretty) forms of linalg ops (named, map, reduce, generic):
one reader per op, registered with `_custom` (see `meshrt.mlir.syntax.reader`).

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>, %c: tensor<2x4xf32>) -> tensor<2x4xf32> {
...   %0 = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>) outs(%c : tensor<2x4xf32>) -> tensor<2x4xf32>
...   return %0 : tensor<2x4xf32>
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[0]
>>> op.attributes["operandSegmentSizes"], [o.name for o in op.regions[0].entry.operations]  # the body mlir-opt prints
((2, 1), ['arith.mulf', 'arith.addf', 'linalg.yield'])
"""

from __future__ import annotations

import re

from .arith import _default_attrs
from ..syntax.printer import ATTRIBUTE_KINDS, _array, _typed_int
from ..syntax.reader import _custom, _element, _op
from ..ir import AffineDim, AffineMap, Block, Region, ScalarType, TensorType, Value


# linalg -------------------------------------------------------------------------------------------

_LINALG_BINARY = {
    "add": ("arith.addf", "arith.addi"), "sub": ("arith.subf", "arith.subi"), "mul": ("arith.mulf", "arith.muli"),
    "div": ("arith.divf", "arith.divsi"), "div_unsigned": (None, "arith.divui"),
    "max": ("arith.maximumf", "arith.maxsi"), "min": ("arith.minimumf", "arith.minsi"),
    "powf": ("math.powf", None),
}
_LINALG_UNARY = {
    "exp": "math.exp", "log": "math.log", "abs": "math.absf", "ceil": "math.ceil", "floor": "math.floor",
    "negf": "arith.negf", "sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "tanh": "math.tanh", "erf": "math.erf",
    "round": "math.round",
}
_LINALG_MATMUL_MAPS = {
    "matmul": ((0, 2), (2, 1), (0, 1), 3),
    "batch_matmul": ((0, 1, 3), (0, 3, 2), (0, 1, 2), 4),
}


def _ins_outs(p, keyword):
    if not p.keyword(keyword):
        return [], []
    p.expect("(")
    names = p.value_names()
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    p.expect(")")
    return names, types


def _cast_to(block_ops, v, t):
    """The scalar cast linalg's named ops insert to bring ``v`` to type ``t``."""
    s = v.type
    if s == t:
        return v
    if s.is_float and t.is_float:
        name = "arith.extf" if s.width < t.width else "arith.truncf"
    elif not s.is_float and t.is_float:
        name = "arith.uitofp" if s.name == "i1" else "arith.sitofp"
    elif s.is_float and not t.is_float:
        name = "arith.fptosi"
    elif "index" in (s.name, t.name):
        name = "arith.index_cast"
    else:
        name = "arith.extsi" if s.width < t.width else "arith.trunci"
        if s.name == "i1":
            name = "arith.extui"
    op = _op(name, [v], [t], _default_attrs(name, {}))
    op.results = [Value("%cast", t)]
    block_ops.append(op)
    return op.results[0]


def _scalar_op(block_ops, name, operands, t):
    op = _op(name, operands, [t], _default_attrs(name, {}))
    op.results = [Value("%r", t)]
    block_ops.append(op)
    return op.results[0]


def _named_body(p, kind, in_types, out_types, pos):
    """The body mlir-opt prints for a named linalg op: block args = element types of ins and outs."""
    want = 2 if kind in _LINALG_MATMUL_MAPS or kind in _LINALG_BINARY else 1
    if len(in_types) != want or len(out_types) != 1:
        p.error(f"'linalg.{kind}' expects {want} ins(...) and 1 outs(...) operand, found {len(in_types)} and "
                f"{len(out_types)}", pos)
    for t in in_types + out_types:
        e = _element(t)
        if not (isinstance(e, ScalarType) and _NAMED_ELEMENT.fullmatch(e.name)):
            p.error(f"'linalg.{kind}': expected an integer, index or float (element) type, found {t}", pos)
    args = [Value(f"%in{i}", _element(t)) for i, t in enumerate(in_types)]
    args += [Value(f"%out{i}", _element(t)) for i, t in enumerate(out_types)]
    ops = []
    out_t = args[-1].type
    if not isinstance(out_t, ScalarType):
        p.error(f"linalg.{kind}: element type {out_t} is not a scalar", pos)
    if kind in ("fill", "copy"):
        y = [_cast_to(ops, args[0], out_t)]
    elif kind in ("transpose", "broadcast"):
        y = [args[0]]
    elif kind in _LINALG_MATMUL_MAPS:
        a = _cast_to(ops, args[0], out_t)
        b = _cast_to(ops, args[1], out_t)
        fl = out_t.is_float
        m = _scalar_op(ops, "arith.mulf" if fl else "arith.muli", [a, b], out_t)
        y = [_scalar_op(ops, "arith.addf" if fl else "arith.addi", [args[2], m], out_t)]
    elif kind in _LINALG_BINARY:
        opname = _LINALG_BINARY[kind][0 if out_t.is_float else 1]
        if opname is None:
            p.error(f"linalg.{kind} does not take element type {out_t}", pos)
        a = _cast_to(ops, args[0], out_t)
        b = _cast_to(ops, args[1], out_t)
        y = [_scalar_op(ops, opname, [a, b], out_t)]
    else:
        a = _cast_to(ops, args[0], out_t)
        y = [_scalar_op(ops, _LINALG_UNARY[kind], [a], out_t)]
    ops.append(_op("linalg.yield", y, []))
    return Region([Block(args, ops)])


_NAMED_ELEMENT = re.compile(r"[su]?i\d+|index|bf16|f16|f32|f64|f80|f128")


def _tensor_results(out_types):
    return [t for t in out_types if isinstance(t, TensorType)]


@_custom(*[f"linalg.{k}" for k in ["fill", "copy", *_LINALG_MATMUL_MAPS, *_LINALG_BINARY, *_LINALG_UNARY]])
def _linalg_named(p, name, pos, nres):
    kind = name.split(".", 1)[1]
    attrs = p.opt_attr_dict({})
    if p.keyword("indexing_maps"):
        p.expect("=")
        attrs["indexing_maps"] = p.attribute()
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    p.opt_attr_dict(attrs)
    results = []
    if p.accept("->"):
        results = p.type_list()
    if kind in _LINALG_MATMUL_MAPS and "indexing_maps" not in attrs:
        a, b, c, nd = _LINALG_MATMUL_MAPS[kind]
        attrs["indexing_maps"] = tuple(AffineMap(nd, 0, tuple(AffineDim(i) for i in m)) for m in (a, b, c))
    attrs["operandSegmentSizes"] = (len(ins), len(outs))
    operands = p.resolve(ins + outs, in_types + out_types)
    return _op(name, operands, results, attrs, [_named_body(p, kind, in_types, out_types, pos)])


@_custom("linalg.transpose", "linalg.broadcast")
def _linalg_perm(p, name, pos, nres):
    kind = name.split(".", 1)[1]
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    key = "permutation" if kind == "transpose" else "dimensions"
    p.expect_keyword(key)
    p.expect("=")
    vals = p.array_attribute(key, typed=True)
    attrs = p.opt_attr_dict({key: vals})
    operands = p.resolve(ins + outs, in_types + out_types)
    return _op(name, operands, _tensor_results(out_types), attrs, [_named_body(p, kind, in_types, out_types, pos)])


def _short_body(p, name, in_types, out_types, reduce):
    """``{ arith.addf }``: the body that applies one scalar op to the block arguments."""
    if not out_types or (reduce and not in_types):
        p.error(f"'{name}' with a short body {{ op }} expects ins(...) and outs(...) operands, found "
                f"{len(in_types)} ins and {len(out_types)} outs")
    p.expect("{")
    opname = p.ident("an operation name")
    attrs = p.opt_attr_dict({})
    p.expect("}")
    args = [Value(f"%in{i}", _element(t)) for i, t in enumerate(in_types)]
    args += [Value(f"%init{i}", _element(t)) for i, t in enumerate(out_types)]
    operands = [args[1], args[0]] if reduce else args[:len(in_types)]
    op = _op(opname, operands, [args[-1].type], _default_attrs(opname, attrs))
    op.results = [Value("%r", args[-1].type)]
    return Region([Block(args, [op, _op("linalg.yield", [op.results[0]], [])])])


@_custom("linalg.map", "linalg.reduce")
def _linalg_map_reduce(p, name, pos, nres):
    reduce = name == "linalg.reduce"
    short_at = None
    if p.peek("{"):  # ``{ arith.addf }``: read after ins/outs, which give its types
        short_at = p.pos
        p.balanced()
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    attrs = {}
    if reduce:
        p.expect_keyword("dimensions")
        p.expect("=")
        attrs["dimensions"] = p.array_attribute("dimensions", typed=True)
    p.opt_attr_dict(attrs)
    if short_at is not None:
        end, p.pos = p.pos, short_at
        body = _short_body(p, name, in_types, out_types, reduce)
        p.pos = end
    else:
        p.expect("(")
        args = []
        if not p.accept(")"):
            while True:
                n, q = p.value_name()
                p.expect(":")
                args.append((n, p.type(), q))
                if p.accept(")"):
                    break
                p.expect(",")
        body = p.region(entry_args=args, dialect="linalg")
    operands = p.resolve(ins + outs, in_types + out_types)
    return _op(name, operands, _tensor_results(out_types), attrs, [body])


@_custom("linalg.generic")
def _linalg_generic(p, name, pos, nres):
    attrs = p.attr_dict()
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    if p.keyword("attrs"):
        p.expect("=")
        attrs.update(p.attr_dict())
    body = p.region(dialect="linalg")
    results = []
    if p.accept("->"):
        results = p.type_list()
    attrs["operandSegmentSizes"] = (len(ins), len(outs))
    return _op(name, p.resolve(ins + outs, in_types + out_types), results, attrs, [body])


@_custom("linalg.index")
def _linalg_index(p, name, pos, nres):
    d = p.integer("a dimension")
    attrs = p.opt_attr_dict({"dim": d})
    p.expect(":")
    return _op(name, [], [p.type()], attrs)


# the MLIR form of the attributes ----------------------------------------------------------------------


def _iterators(v, op):
    return "[" + ", ".join(f"#linalg.iterator_type<{x}>" for x in v) + "]"


ATTRIBUTE_KINDS["linalg.*"] = {"operandSegmentSizes": _array("i32"), "iterator_types": _iterators,
                               "permutation": _array("i64"), "dimensions": _array("i64"), "dim": _typed_int("i64")}
