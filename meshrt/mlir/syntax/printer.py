"""MLIR's generic syntax for `meshrt.mlir.ir` ops: text ``mlir-opt`` reads back to the same IR.

The data model drops what MLIR keeps in an attribute's type (``2 : index``
and ``2 : i64`` are both ``2``; ``array<i16: 0>`` and ``[0]`` both tuples;
``#shard<partial sum>`` is ``"sum"``).  The printer puts it back from one
table, `ATTRIBUTE_KINDS`: per op (or dialect) and attribute name, the MLIR
form of the value; each module of `meshrt.mlir.dialects` writes its dialect's
rows (this module names no dialect).  An attribute it does not know prints in the default form
(``i64`` integers, ``f64`` floats, ``[...]`` arrays), which MLIR reads as a
discardable attribute of that type.

Values are renumbered ``%v0, %v1 ...`` in order of definition (results of an
op with several are ``%vN:k`` and used as ``%vN#i``), blocks ``^bb0 ...``,
attributes sorted: equal IR prints equal text.

>>> from meshrt.mlir import parse
>>> m = parse('''shard.grid @g(shape = 2x2)
... func.func @f(%a: tensor<4xf32>) -> tensor<8xf32> {
...   %0 = shard.all_gather %a on @g grid_axes = [1] gather_axis = 0 : tensor<4xf32> -> tensor<8xf32>
...   return %0 : tensor<8xf32>
... }''')
>>> print(print_generic(m))  # doctest: +NORMALIZE_WHITESPACE
"shard.grid"() {shape = array<i64: 2, 2>, sym_name = "g"} : () -> ()
"func.func"() ({
^bb0(%v0: tensor<4xf32>):
  %v1 = "shard.all_gather"(%v0) {gather_axis = 0 : index, grid = @g, grid_axes = array<i16: 1>} : (tensor<4xf32>) -> tensor<8xf32>
  "func.return"(%v1) : (tensor<8xf32>) -> ()
}) {function_type = (tensor<4xf32>) -> tensor<8xf32>, sym_name = "f"} : () -> ()
"""

from __future__ import annotations

import math
import struct

import numpy as np

from ..ir import (
    UNIT, AffineMap, Block, DenseElements, FunctionType, OpaqueAttr, Operation, Region, ScalarType, SymbolRef,
    TensorType, TypeAttr,
)

__all__ = ["print_generic", "ATTRIBUTE_KINDS"]

def _ints(v):
    return ", ".join(str(int(x)) for x in v)


def _array(elem):
    return lambda v, op: f"array<{elem}: {_ints(v)}>" if v else f"array<{elem}>"


def _typed_int(t):
    return lambda v, op: f"{int(v)} : {t}"


def _enum(dialect, kind):
    return lambda v, op: f"#{dialect}.{kind}<{v}>"


def _element_of(t):
    return t.element if isinstance(t, TensorType) else t


def _scalar_literal(v, t) -> str:
    """A number typed ``t`` as MLIR reads it (non-finite floats by their bits)."""
    if isinstance(v, bool) or (isinstance(t, ScalarType) and t.name == "i1"):
        return "true" if v else "false"
    if isinstance(t, ScalarType) and t.is_float:
        x = float(v)
        if math.isfinite(x):
            return f"{float_literal(x)} : {t}"
        if t.name == "bf16":
            bits = struct.unpack("<I", struct.pack("<f", x))[0] >> 16
        else:
            bits = int(np.array(x, dtype=t.numpy_dtype).view(f"u{t.width // 8}"))
        return f"0x{bits:X} : {t}"
    return f"{int(v)} : {t}"


def _by_result_type(v, op):
    """``arith.constant``'s value: typed like the result."""
    return _value(v, op.results[0].type)


def _by_element_type(v, op):
    """``tosa.clamp``'s bounds: typed like the operand's elements."""
    return _value(v, _element_of(op.operands[0].type))


def _value(v, t):
    if isinstance(v, DenseElements):
        return dense_text(v)
    if isinstance(v, (bool, int, float, np.generic)):
        return _scalar_literal(v, t)
    return default_attr(v)


def float_literal(x: float) -> str:
    """A finite float as MLIR's lexer reads it: a digit after the point (``-3.0e+38``, not ``-3e+38``)."""
    t = repr(float(x))
    mant, _, exp = t.partition("e")
    if "." not in mant:
        mant += ".0"
    return mant + ("e" + exp if exp else "")


def dense_text(d: DenseElements) -> str:
    """``dense<...> : tensor<...>`` with every element in a form MLIR reads (non-finite floats as hex bytes)."""
    a = d.array
    if a.dtype.kind == "f" and getattr(d.type.element, "name", "") != "bf16" and not np.isfinite(a).all():
        raw = np.ascontiguousarray(a.reshape(-1)[:1] if d.splat else a).astype(a.dtype.newbyteorder("<"))
        return f'dense<"0x{raw.tobytes().hex().upper()}"> : {d.type}'

    def lit(x):
        if a.dtype.kind == "b":
            return "true" if x else "false"
        return float_literal(x) if a.dtype.kind == "f" else str(int(x))

    if d.splat or a.size == 0:
        body = lit(a.reshape(-1)[0]) if a.size else ""
    else:
        def nest(b):
            return "[" + ", ".join(nest(x) for x in b) + "]" if b.ndim else lit(b[()])
        body = nest(a)
    return f"dense<{body}> : {d.type}"


# op name (or "dialect.*") -> {attribute name: formatter(value, op) -> text}; each dialect of
# meshrt.mlir.dialects writes its rows when imported (meshrt.mlir imports them all)
ATTRIBUTE_KINDS = {}


def _formatter(op_name, key):
    for scope in (op_name, op_name.split(".", 1)[0] + ".*"):
        f = ATTRIBUTE_KINDS.get(scope, {}).get(key)
        if f is not None:
            return f
    return None


def default_attr(v) -> str:
    """An attribute value with no entry in the table: MLIR's builtin forms (``i64``, ``f64``, arrays)."""
    if v is UNIT:
        return "unit"
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, np.integer)):
        return f"{int(v)} : i64"
    if isinstance(v, (float, np.floating)):
        return _scalar_literal(v, ScalarType("f64"))
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, tuple):
        return "[" + ", ".join(default_attr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(k if v[k] is UNIT else f"{_key(k)} = {default_attr(v[k])}" for k in sorted(v)) + "}"
    if isinstance(v, DenseElements):
        return dense_text(v)
    if isinstance(v, (SymbolRef, TypeAttr, AffineMap, OpaqueAttr)):
        return str(v)
    return str(v)


def _key(k: str) -> str:
    import re

    return k if re.fullmatch(r"[A-Za-z_][\w$.]*", k) else '"' + k.replace('"', '\\"') + '"'


def attribute_text(op: Operation, key: str, value) -> str:
    if value is UNIT:
        return _key(key)
    f = _formatter(op.name, key)
    return f"{_key(key)} = {f(value, op) if f is not None else default_attr(value)}"


class _Printer:
    def __init__(self):
        self.names = {}
        self.blocks = {}
        self.count = 0

    def number(self, op: Operation):
        """Name every value and block op defines, in printing order (nested ones first)."""
        for r in op.regions:
            for b in r.blocks:
                self.blocks[b] = f"^bb{len(self.blocks)}"
                for a in b.arguments:
                    self._new(a)
                for inner in b.operations:
                    self.number(inner)
        if len(op.results) == 1:
            self._new(op.results[0])
        elif op.results:
            base = f"%v{self.count}"
            self.count += 1
            for i, v in enumerate(op.results):
                self.names[v] = f"{base}#{i}"

    def _new(self, v):
        self.names[v] = f"%v{self.count}"
        self.count += 1

    def name(self, v):
        if v not in self.names:  # a value no printed op defines (an IR built by hand): still one name each
            self._new(v)
        return self.names[v]

    def op(self, op: Operation, indent="") -> str:
        operands = ", ".join(self.name(v) for v in op.operands)
        succ = ""
        if op.successors:
            succ = "[" + ", ".join(self.blocks.get(b, "^undefined") for b in op.successors) + "]"
        regions = ""
        if op.regions:
            regions = " (" + ", ".join(self.region(r, indent) for r in op.regions) + ")"
        attrs = ""
        if op.attributes:
            attrs = " {" + ", ".join(attribute_text(op, k, v) for k, v in sorted(op.attributes.items())) + "}"
        lhs = ""
        if len(op.results) == 1:
            lhs = f"{self.name(op.results[0])} = "
        elif op.results:
            lhs = f"{self.name(op.results[0]).split('#')[0]}:{len(op.results)} = "
        ftype = FunctionType(tuple(v.type for v in op.operands), tuple(v.type for v in op.results))
        return f'{indent}{lhs}"{op.name}"({operands}){succ}{regions}{attrs} : {ftype}\n'

    def region(self, r, indent) -> str:
        out = ["{\n"]
        for b in r.blocks:
            args = ", ".join(f"{self.name(a)}: {a.type}" for a in b.arguments)
            out.append(f"{indent}{self.blocks[b]}({args}):\n" if args else f"{indent}{self.blocks[b]}:\n")
            for inner in b.operations:
                out.append(self.op(inner, indent + "  "))
        out.append(indent + "}")
        return "".join(out)


def print_generic(what) -> str:
    """MLIR generic text of a `Module` (its top-level ops) or one `Operation`.

    A module with attributes (``module @m attributes {...}``) prints as its
    ``builtin.module`` op, so they are kept.
    """
    p = _Printer()
    if isinstance(what, Operation):
        p.number(what)
        return p.op(what)
    ops = what.operations
    if what.attributes:
        ops = [Operation("builtin.module", [], [], dict(what.attributes), [Region([Block([], list(ops))])])]
    for op in ops:
        p.number(op)
    return "".join(p.op(op) for op in ops)

