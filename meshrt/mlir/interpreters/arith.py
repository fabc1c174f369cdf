"""What the scalar ``arith`` and ``math`` ops compute, on numpy scalars and arrays.

One table (`SCALAR_OPS`) says what every supported scalar op computes, as an
expression template that is valid both for numpy (scalars and whole arrays:
``arith.addf`` on tensors) and inside a Numba kernel (the body of a
``linalg.generic``, `meshrt.mlir.interpreters.linalg`).

>>> import numpy as np
>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%a: f64, %b: f64) -> f64 {
...   %0 = arith.maximumf %a, %b : f64
...   return %0 : f64
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[0]
>>> float(scalar_function(op)(np.float64(2.0), np.float64(3.0)))
3.0
"""

from __future__ import annotations

import functools

import numpy as np

from ...errors import MLIRError
from ..ir import MemRef, OpaqueType, ScalarType, TensorType, memref_type

__all__ = ["SCALAR_OPS", "SCALAR_OP_NAMES", "scalar_function"]

# -- scalar ops ------------------------------------------------------------------------------------
# name -> template over {0}, {1}, ... (operands), {T} (result dtype constructor, e.g. np.float32) and
# {U0} (the unsigned dtype of operand 0's width).  A pair is (numpy form, Numba form) where they differ.

_BIN = {"addf": "+", "subf": "-", "mulf": "*", "divf": "/", "addi": "+", "subi": "-", "muli": "*",
        "andi": "&", "ori": "|", "xori": "^"}
SCALAR_OPS = {f"arith.{k}": f"({{0}} {v} {{1}})" for k, v in _BIN.items()}
SCALAR_OPS.update({
    "arith.negf": "(-{0})",
    "arith.remf": "np.fmod({0}, {1})",
    # C division truncates toward zero; Numba's integer fmod does not follow numpy's, so the
    # kernel form spells it out with Python's exact integer floor division
    "arith.remsi": ("np.fmod({0}, {1})",
                    "({0} - {1} * ((abs({0}) // abs({1})) * (1 if ({0} < 0) == ({1} < 0) else -1)))"),
    "arith.remui": "({U0}({0}) % {U0}({1}))",
    "arith.divsi": ("(({0} - np.fmod({0}, {1})) // {1})",
                    "((abs({0}) // abs({1})) * (1 if ({0} < 0) == ({1} < 0) else -1))"),
    "arith.divui": "({U0}({0}) // {U0}({1}))",
    "arith.floordivsi": "({0} // {1})",
    "arith.ceildivsi": "(-((-{0}) // {1}))",
    "arith.maximumf": "np.maximum({0}, {1})",
    "arith.minimumf": "np.minimum({0}, {1})",
    "arith.maxnumf": "np.fmax({0}, {1})",
    "arith.minnumf": "np.fmin({0}, {1})",
    "arith.maxsi": "np.maximum({0}, {1})",
    "arith.minsi": "np.minimum({0}, {1})",
    "arith.maxui": "np.maximum({U0}({0}), {U0}({1}))",
    "arith.minui": "np.minimum({U0}({0}), {U0}({1}))",
    "arith.shli": "({0} << {1})",
    "arith.shrsi": "({0} >> {1})",
    "arith.shrui": "({U0}({0}) >> {U0}({1}))",
    "arith.select": ("np.where({0}, {1}, {2})", "({1} if {0} else {2})"),
    "math.absf": "np.abs({0})", "math.absi": "np.abs({0})",
    "math.exp": "np.exp({0})", "math.exp2": "np.exp2({0})", "math.expm1": "np.expm1({0})",
    "math.log": "np.log({0})", "math.log2": "np.log2({0})", "math.log10": "np.log10({0})",
    "math.log1p": "np.log1p({0})",
    "math.sqrt": "np.sqrt({0})", "math.rsqrt": "(1 / np.sqrt({0}))", "math.cbrt": "np.cbrt({0})",
    "math.tanh": "np.tanh({0})", "math.sin": "np.sin({0})", "math.cos": "np.cos({0})",
    "math.tan": "np.tan({0})", "math.atan": "np.arctan({0})", "math.atan2": "np.arctan2({0}, {1})",
    "math.sinh": "np.sinh({0})", "math.cosh": "np.cosh({0})", "math.asin": "np.arcsin({0})",
    "math.acos": "np.arccos({0})",
    "math.floor": "np.floor({0})", "math.ceil": "np.ceil({0})", "math.trunc": "np.trunc({0})",
    "math.roundeven": "np.rint({0})",
    "math.round": "(np.sign({0}) * np.floor(np.abs({0}) + 0.5))",
    "math.powf": "np.power({0}, {1})", "math.fpowi": "np.power({0}, {1})", "math.ipowi": "({0} ** {1})",
    "math.copysign": "np.copysign({0}, {1})",
    "math.fma": "({0} * {1} + {2})",
})
_CASTS = ("arith.extf", "arith.truncf", "arith.sitofp", "arith.fptosi", "arith.fptoui", "arith.extsi",
          "arith.trunci", "arith.index_cast", "arith.index_castui", "arith.extui", "arith.uitofp")
_UNSIGNED_SOURCE_CASTS = ("arith.extui", "arith.uitofp", "arith.index_castui")

_CMPI = {"eq": "({0} == {1})", "ne": "({0} != {1})", "slt": "({0} < {1})", "sle": "({0} <= {1})",
         "sgt": "({0} > {1})", "sge": "({0} >= {1})", "ult": "({U0}({0}) < {U0}({1}))",
         "ule": "({U0}({0}) <= {U0}({1}))", "ugt": "({U0}({0}) > {U0}({1}))", "uge": "({U0}({0}) >= {U0}({1}))"}
_ORD = "(({0} == {0}) & ({1} == {1}))"
_CMPF = {"oeq": "({0} == {1})", "ogt": "({0} > {1})", "oge": "({0} >= {1})", "olt": "({0} < {1})",
         "ole": "({0} <= {1})", "one": f"(({{0}} != {{1}}) & {_ORD})", "ord": _ORD,
         "ueq": "(({0} == {1}) | ({0} != {0}) | ({1} != {1}))", "ugt": "(({0} <= {1}) == False)",
         "uge": "(({0} < {1}) == False)", "ult": "(({0} >= {1}) == False)", "ule": "(({0} > {1}) == False)",
         "une": "({0} != {1})", "uno": f"({_ORD} == False)", "false": "(({0} != {0}) & ({0} == {0}))",
         "true": "(({0} != {0}) | ({0} == {0}))"}

SCALAR_OP_NAMES = frozenset(SCALAR_OPS) | frozenset(_CASTS) | {"arith.cmpi", "arith.cmpf"}


@functools.lru_cache(maxsize=None)
def _dtype(t) -> np.dtype:
    """The numpy dtype of a scalar type or of a tensor or memref type's elements (the runners' values)."""
    if isinstance(t, (TensorType, MemRef)):
        t = t.element
    elif isinstance(t, OpaqueType):
        m = memref_type(t)
        t = m.element if m is not None else t
    if isinstance(t, ScalarType):
        return t.numpy_dtype
    raise MLIRError(f"type {t}: no numpy dtype")


def _dtype_of(t) -> np.dtype:
    if isinstance(t, TensorType):
        t = t.element
    elif isinstance(t, OpaqueType) and memref_type(t) is not None:
        t = memref_type(t).element
    if not isinstance(t, ScalarType):
        raise MLIRError(f"type {t}: not an integer, index or float element type")
    return t.numpy_dtype


def _np_name(dt: np.dtype) -> str:
    return "np.bool_" if dt == np.bool_ else f"np.{dt.name}"


def _unsigned(dt: np.dtype) -> str:
    if dt == np.bool_:
        return "np.bool_"
    return f"np.uint{dt.itemsize * 8}"


def _template(op, numba: bool) -> str:
    """The expression template of a scalar op (raises `MLIRError` for an unsupported one)."""
    name = op.name
    if name in ("arith.cmpi", "arith.cmpf"):
        table = _CMPI if name == "arith.cmpi" else _CMPF
        pred = op.attributes.get("predicate")
        if pred not in table:
            raise MLIRError(f"{op.location}: '{name}' has predicate {pred!r}; expected one of {sorted(table)}")
        return table[pred]
    if name in _CASTS:
        src = "{U0}({0})" if name in _UNSIGNED_SOURCE_CASTS else "{0}"
        return "{T}(" + src + ")" if numba else "_cast(" + src + ", {T})"
    t = SCALAR_OPS.get(name)
    if t is None:
        raise MLIRError(f"{op.location}: unsupported op '{name}'")
    if isinstance(t, tuple):
        t = t[1] if numba else t[0]
    return t


def _fill(template: str, op, args) -> str:
    t0 = op.operands[0].type if op.operands else op.results[0].type
    return template.format(*args, T=_np_name(_dtype_of(op.results[0].type)), U0=_unsigned(_dtype_of(t0)))


def _cast(x, t):
    a = np.asarray(x).astype(t)
    return a if a.ndim else a[()]


_SCALAR_CACHE: dict = {}


def scalar_function(op):
    """A Python callable computing ``op`` on numpy scalars or same-shape arrays.

    The result has the op's result element type.  Cached per (op name,
    predicate, dtypes).
    """
    dt = _dtype_of(op.results[0].type)
    key = (op.name, op.attributes.get("predicate"), dt,
           tuple(_dtype_of(v.type) for v in op.operands))
    fn = _SCALAR_CACHE.get(key)
    if fn is None:
        args = [f"a{i}" for i in range(len(op.operands))]
        expr = _fill(_template(op, numba=False), op, args)
        body = eval(f"lambda {', '.join(args)}: {expr}", {"np": np, "_cast": _cast})  # noqa: S307 (our own text)
        if op.name in _CASTS or dt == np.bool_:
            fn = body
        else:
            def fn(*a, _body=body, _dt=dt):
                r = _body(*a)
                if r.dtype != _dt:  # numpy promotes (int8 + int8 stays, bool & ...); MLIR keeps the type
                    r = _cast(r, _dt)
                return r
        _SCALAR_CACHE[key] = fn
    return fn
