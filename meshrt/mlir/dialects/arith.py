"""The ``arith`` and ``math`` dialects (math's ops share arith's forms and its ``fastmath`` flag): their
custom (pretty) forms, one reader per op registered with `_custom` (see `meshrt.mlir.syntax.reader`);
the predicate names of ``cmpi``/``cmpf``; the flags their generic form always carries; the MLIR form
of their attributes. What the ops compute: `meshrt.mlir.interpreters.arith`.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%a: i32, %b: i32) -> i1 {
...   %0 = arith.cmpi slt, %a, %b : i32
...   return %0 : i1
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[0]
>>> op.attributes["predicate"], op.generic().split("{")[1].split("}")[0]  # its number in the generic form
('slt', 'predicate = 2 : i64')
"""

from __future__ import annotations

import re

from ..ir import DenseElements
from ..syntax.lexer import _NUMBER
from ..syntax.printer import ATTRIBUTE_KINDS, _by_result_type, _enum
from ..syntax.reader import _I1, _bool_like, _custom, _normalizer, _op


# arith / math ---------------------------------------------------------------------------------------------

# in the order of MLIR's enums: the generic form's ``predicate = 3 : i64`` is the fourth name
CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
                   "ule", "une", "uno", "true")

# Ops whose generic form always carries ``fastmath`` / ``overflowFlags`` (default "none").
_FASTMATH = {f"arith.{n}" for n in "addf subf mulf divf remf maximumf minimumf maxnumf minnumf negf cmpf".split()}
_FASTMATH |= {f"math.{n}" for n in (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt tanh sin cos tan sinh cosh asin acos atan atan2 asinh acosh "
    "atanh absf ceil floor round roundeven trunc erf erfc powf cbrt copysign fma fpowi"
).split()}
_OVERFLOW = {f"arith.{n}" for n in "addi subi muli shli trunci".split()}


def _default_attrs(name, attrs):
    if name in _FASTMATH:
        attrs.setdefault("fastmath", "none")
    if name in _OVERFLOW:
        attrs.setdefault("overflowFlags", "none")
    return attrs


def _flags(p, attrs):
    """Optional ``fastmath<...>`` / ``overflow<...>`` after the operands."""
    while True:
        if p.keyword("fastmath"):
            attrs["fastmath"] = re.sub(r"\s+", "", p.balanced()[1:-1])
        elif p.keyword("overflow"):
            attrs["overflowFlags"] = re.sub(r"\s+", "", p.balanced()[1:-1])
        else:
            return


def _predicates(op_name):
    return CMPI_PREDICATES if op_name == "arith.cmpi" else CMPF_PREDICATES


@_normalizer("arith.cmpi", "arith.cmpf")
def _predicate_name(p, op, pos):
    """The generic form's predicate number -> its name, as the custom form says it."""
    a = op.attributes
    if isinstance(a.get("predicate"), int) and not isinstance(a.get("predicate"), bool):
        names = _predicates(op.name)
        if not 0 <= a["predicate"] < len(names):
            p.error(f"'{op.name}' predicate {a['predicate']} is out of range", pos)
        a["predicate"] = names[a["predicate"]]


def _predicate_number(v, op):
    return f"{_predicates(op.name).index(v)} : i64"


ATTRIBUTE_KINDS["arith.*"] = {"fastmath": _enum("arith", "fastmath"), "overflowFlags": _enum("arith", "overflow"),
                              "predicate": _predicate_number, "value": _by_result_type}
ATTRIBUTE_KINDS["math.*"] = {"fastmath": _enum("arith", "fastmath")}

_ARITH_BINARY = (
    "addf subf mulf divf remf maximumf minimumf maxnumf minnumf addi subi muli divsi divui remsi remui ceildivsi "
    "ceildivui floordivsi andi ori xori shli shrsi shrui maxsi minsi maxui minui"
).split()
_MATH_BINARY = "powf atan2 copysign fpowi ipowi".split()
_MATH_UNARY = (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt tanh sin cos tan sinh cosh asin acos atan asinh acosh atanh "
    "absf absi ceil floor round roundeven trunc erf erfc cbrt ctlz cttz ctpop"
).split()
_CASTS = ("index_cast index_castui sitofp uitofp fptosi fptoui extf truncf extsi extui trunci bitcast").split()


@_custom(*[f"arith.{n}" for n in _ARITH_BINARY], *[f"math.{n}" for n in _MATH_BINARY])
def _binary(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    types = p.type_list()
    ta, tb = (types[0], types[0]) if len(types) == 1 else types[:2]
    return _op(name, p.resolve([a, b], [ta, tb]), [ta], _default_attrs(name, attrs))


@_custom("arith.negf", *[f"math.{n}" for n in _MATH_UNARY])
def _unary(p, name, pos, nres):
    a = p.value_name()
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], _default_attrs(name, attrs))


@_custom("math.fma")
def _fma(p, name, pos, nres):
    names = [p.value_name()]
    for _ in range(2):
        p.expect(",")
        names.append(p.value_name())
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(names, [t] * 3), [t], _default_attrs(name, attrs))


@_custom("arith.cmpi", "arith.cmpf")
def _cmp(p, name, pos, nres):
    pred = p.ident("a comparison predicate")
    valid = _predicates(name)
    if pred not in valid:
        p.error(f"'{name}': unknown predicate '{pred}'; expected one of {', '.join(valid)}", pos)
    p.expect(",")
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = {"predicate": pred}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a, b], [t, t]), [_bool_like(t)], _default_attrs(name, attrs))


@_custom("arith.select")
def _select(p, name, pos, nres):
    c = p.value_name()
    p.expect(",")
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    types = p.type_list()
    if len(types) == 1:
        tc, t = _I1, types[0]
    else:
        tc, t = types[0], types[1]
    return _op(name, p.resolve([c, a, b], [tc, t, t]), [t], attrs)


@_custom(*[f"arith.{n}" for n in _CASTS])
def _cast(p, name, pos, nres):
    a = p.value_name()
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    src = p.type()
    p.expect_keyword("to")
    dst = p.type()
    return _op(name, p.resolve([a], [src]), [dst], _default_attrs(name, attrs))


@_custom("arith.constant")
def _constant(p, name, pos, nres):
    attrs = p.opt_attr_dict({})
    vpos = p.pos
    value = p.attribute()
    if isinstance(value, DenseElements):
        t = value.type
    elif isinstance(value, bool):
        t = _I1
    else:
        # the typed literal's type was consumed by attribute(); read it again for the result
        p.pos = vpos
        p.ws()
        if p.keyword("true") or p.keyword("false"):
            t = _I1
        else:
            p.match(_NUMBER)
            if not p.accept(":"):
                p.error("arith.constant needs a typed value such as '1.0 : f32'", vpos)
            t = p.type()
    attrs["value"] = value
    return _op(name, [], [t], attrs)
