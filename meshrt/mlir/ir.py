"""The MLIR IR data model: what `meshrt.mlir.parse` returns.

Plain Python values: an `Operation` holds its full dialect name, operand and
result `Value`s, one attribute dict (MLIR's properties ``<{...}>`` and
attributes ``{...}`` merged), `Region`s of `Block`s, successor blocks and a
`Location`.  The custom and the generic form of an op parse to the same
Operation: attribute names and values are those ``mlir-opt
--mlir-print-op-generic`` (LLVM 22) prints, turned into Python objects.

>>> from meshrt.mlir import parse
>>> m = parse('shard.grid @g(shape = 2x?)')
>>> m.grids()["g"].attributes["shape"] == (2, DYNAMIC)
True

Attribute values
----------------
=============================================  =====================================
MLIR                                           Python
=============================================  =====================================
``1 : index``, ``2 : i64``, ``3``              ``int`` (the type is dropped)
``1.0 : f32``, ``0x7FC00000 : f32``            ``float``
``true`` / ``false``                           ``bool``
``"text"``                                     ``str``
``@grid0``, ``@a::@b``                         `SymbolRef`
``[a, b]``                                     ``tuple``
``array<i64: 1, 2>``, ``array<i16>``           ``tuple`` of ints (``()`` when empty)
``#shard<axisarray[[0], [1, 2]]>``             ``tuple`` of tuples of ints
``dense<...> : tensor<...>``                   `DenseElements`
a type (``function_type = (f32) -> f32``)      `TypeAttr`
``affine_map<(d0, d1) -> (d1)>``               `AffineMap`
a unit attribute (``rotate``)                  ``UNIT`` (the `UnitAttr` singleton)
``{k = v}``                                    ``dict``
enums: ``#shard<partial max>``                 ``str``: ``"max"``
``#arith.fastmath<none>``                      ``"none"`` (``"nnan,ninf"`` ...)
``#linalg.iterator_type<parallel>``            ``"parallel"``
``arith.cmpi``/``cmpf`` ``predicate = 2``      ``"slt"`` (the name, not the number)
any other dialect attribute                    `OpaqueAttr` (its text)
=============================================  =====================================

A dynamic size inside an integer array (``?`` in a shape, an SSA operand in
``halo_sizes = [1, %h]``) is ``DYNAMIC`` (``-2**63``, as MLIR's
``ShapedType::kDynamic``); the SSA values are then operands of the op.

The ``shard`` ops' operands and attributes as this model holds them: see
`meshrt.mlir.dialects.shard`.

Other ops follow the same rule as the shard ops (see the generic form of any op with
``mlir-opt --mlir-print-op-generic``); e.g. float ``arith``/``math`` ops carry
``fastmath: str`` (``"none"`` by default), ``arith.cmpi`` ``predicate:
str``, named linalg ops (``linalg.matmul``, ``linalg.fill``, ``linalg.add``,
``linalg.transpose`` ...) carry ``operandSegmentSizes``/``indexing_maps`` as
printed and the scalar body region that mlir-opt prints for them
(synthesized by the parser from the custom form), ``linalg.generic`` has
``indexing_maps: tuple[AffineMap]`` and ``iterator_types: tuple[str]``,
``func.func`` has ``sym_name: str`` and ``function_type: TypeAttr``.

Ops the reader has no custom form for are read when written in the
functional form ``name %a, %b {attrs} : (A, B) -> R`` (as tosa prints), and
always in the generic form.  `OpaqueType` text has its whitespace removed.

Values, blocks and operations compare by identity (they are nodes of a
graph; use them as dict keys); `Module.generic` prints MLIR's generic form,
canonical (equal for equal IR whatever the SSA names were) and read back by
``mlir-opt`` to the same IR (`meshrt.mlir.syntax.printer`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import NamedTuple, Union

import numpy as np

from ..errors import MLIRError

# meshrt.mlir.syntax.printer, which reads this data model (so this module cannot import it): `generic()` prints
# through it; meshrt/mlir/__init__.py sets it, and importing any part of meshrt.mlir runs that first.
_PRINTER = SimpleNamespace(print_generic=None)

__all__ = [
    "DYNAMIC", "MLIRError", "Location", "Type", "TensorType", "ScalarType", "FunctionType", "OpaqueType",
    "Value", "Operation", "Block", "Region", "Module", "SymbolRef", "DenseElements", "TypeAttr",
    "AffineMap", "AffineDim", "AffineSymbol", "AffineConst", "AffineBinary", "UnitAttr", "UNIT",
    "OpaqueAttr", "MemRef", "memref_type", "shaped",
]

DYNAMIC = -(2**63)
"""A dynamic size (``?``) in shapes and static-size arrays, as MLIR's ``ShapedType::kDynamic``."""


def _static(attr, it):
    """Fill the ``DYNAMIC`` entries of a static-size array attribute from SSA operand values, in order."""
    return tuple(int(next(it)) if a == DYNAMIC else int(a) for a in attr)


@dataclass(frozen=True)
class Location:
    """Where an op or token starts in the source text (1-based line and column)."""

    file: str
    line: int
    col: int

    def __str__(self):
        return f"{self.file}:{self.line}:{self.col}"


# -- types -------------------------------------------------------------------------------------

_NUMPY = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "si8": np.int8, "si16": np.int16, "si32": np.int32, "si64": np.int64,
    "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64,
    "index": np.int64, "f16": np.float16, "f32": np.float32, "f64": np.float64,
}


@dataclass(frozen=True)
class ScalarType:
    """A builtin integer, index or float type: ``i1 i8 i16 i32 i64 ui8.. si8.. index f16 bf16 f32 f64``."""

    name: str

    @property
    def numpy_dtype(self) -> np.dtype:
        """The numpy dtype of the type (``index`` -> int64); bf16 has none and raises `MLIRError`."""
        dt = _NUMPY.get(self.name)
        if dt is None:
            raise MLIRError(f"type {self.name}: numpy has no dtype for it")
        return np.dtype(dt)

    @property
    def is_float(self) -> bool:
        return self.name in ("f16", "bf16", "f32", "f64")

    @property
    def is_integer(self) -> bool:
        return not self.is_float

    @property
    def width(self) -> int:
        """Bit width (64 for ``index``)."""
        if self.name == "index":
            return 64
        return int(self.name.lstrip("uisbf"))

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class TensorType:
    """``tensor<4x?xf32>`` -> ``TensorType((4, None), ScalarType("f32"), None)``."""

    shape: tuple
    element: "Type"
    encoding: object = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)

    def __str__(self):
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        enc = f", {format_attr(self.encoding)}" if self.encoding is not None else ""
        return f"tensor<{dims}{self.element}{enc}>"


@dataclass(frozen=True)
class FunctionType:
    """``(f32, index) -> tensor<4xf32>``: tuples of input and result types."""

    inputs: tuple
    results: tuple

    def __str__(self):
        ins = ", ".join(map(str, self.inputs))
        if len(self.results) == 1 and not isinstance(self.results[0], FunctionType):
            return f"({ins}) -> {self.results[0]}"
        return f"({ins}) -> ({', '.join(map(str, self.results))})"


@dataclass(frozen=True)
class OpaqueType:
    """Any other type, kept as its text with aliases expanded (``!shard.sharding``, ``memref<4xf32>``)."""

    text: str

    def __str__(self):
        return self.text


class MemRef(NamedTuple):
    """A ranked ``memref``: ``shape`` (None for ``?``), ``element`` (a `ScalarType`), ``layout``
    (its text or None: the identity) and ``space`` (the memory space's text or None)."""

    shape: tuple
    element: object
    layout: str | None = None
    space: str | None = None

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def is_static(self) -> bool:
        return all(d is not None for d in self.shape)

    def __str__(self):
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        extra = "".join(f", {x}" for x in (self.layout, self.space) if x is not None)
        return f"memref<{dims}{self.element}{extra}>"


def _split_top(text):
    """``a,b<c,d>,e`` -> ``["a", "b<c,d>", "e"]``: split at commas outside brackets."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<[(":
            depth += 1
        elif ch in ">])":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


@functools.lru_cache(maxsize=None)
def _parse_memref(text):
    if not (text.startswith("memref<") and text.endswith(">")):
        return None
    parts = _split_top(text[len("memref<"):-1])
    dims = parts[0].split("x")
    if dims[0] == "*":
        return None  # unranked
    shape = []
    for d in dims[:-1]:
        if d == "?":
            shape.append(None)
        elif d.isdigit():
            shape.append(int(d))
        else:
            return None
    elem = dims[-1]
    if not re.fullmatch(r"(?:[su]?i\d+|index|bf16|f16|f32|f64)", elem):
        return None
    layout = space = None
    for extra in parts[1:]:
        if extra.startswith(("strided<", "affine_map<", "#")) and layout is None:
            layout = extra
        else:
            space = extra
    return MemRef(tuple(shape), ScalarType(elem), layout, space)


def memref_type(t) -> MemRef | None:
    """The `MemRef` of a ranked ``memref`` type with a numeric element, else None."""
    return _parse_memref(t.text) if isinstance(t, OpaqueType) else None


def shaped(t):
    """A `TensorType` or a ranked memref (as `MemRef`), else None: what has a shape and an element."""
    if isinstance(t, TensorType):
        return t
    return memref_type(t)


Type = Union[ScalarType, TensorType, FunctionType, OpaqueType]


# -- attributes ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SymbolRef:
    """``@grid0`` -> ``SymbolRef("grid0")``; ``@a::@b`` -> ``SymbolRef("a", ("b",))``."""

    name: str
    nested: tuple = ()

    def __str__(self):
        return "".join(f"@{_sym(n)}" if i == 0 else f"::@{_sym(n)}" for i, n in enumerate((self.name,) + self.nested))


@dataclass(frozen=True)
class TypeAttr:
    """A type used as an attribute value (``function_type``, ``type``)."""

    type: Type

    def __str__(self):
        return str(self.type)


class UnitAttr:
    """A present-or-absent flag (``rotate``, ``annotate_for_users``); use the ``UNIT`` singleton."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self):
        return "UNIT"

    def __reduce__(self):
        return (UnitAttr, ())


UNIT = UnitAttr()


@dataclass(frozen=True)
class OpaqueAttr:
    """An attribute of an unknown dialect, kept as text (``#foo.bar<1>``)."""

    text: str

    def __str__(self):
        return self.text


@dataclass(frozen=True, eq=False)
class DenseElements:
    """``dense<...> : tensor<...>``: ``array`` has the tensor's shape and dtype (read-only).

    ``splat`` says the text gave one value for all elements; ``array`` is then
    a broadcast view, so a large splat costs one element.  numpy has no
    bfloat16: a ``bf16`` tensor's array is float32.
    """

    array: np.ndarray
    type: TensorType
    splat: bool = False

    def __eq__(self, other):
        if not isinstance(other, DenseElements):
            return NotImplemented
        return (
            self.type == other.type
            and self.array.shape == other.array.shape
            and bool(np.array_equal(self.array, other.array, equal_nan=self.array.dtype.kind in "fc"))
        )

    def __hash__(self):
        return hash((self.type, self.array.shape))

    def __str__(self):
        def lit(x):
            if isinstance(x, (bool, np.bool_)):
                return "true" if x else "false"
            if isinstance(x, (float, np.floating)):
                return _float_text(float(x))
            return str(int(x))

        if self.splat or self.array.size == 0:
            body = lit(self.array.flat[0]) if self.array.size else ""
        else:
            def nest(a):
                return "[" + ", ".join(nest(x) for x in a) + "]" if a.ndim else lit(a[()])
            body = nest(self.array)
        return f"dense<{body}> : {self.type}"


# -- affine maps ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AffineDim:
    """``d<position>``."""

    position: int

    def __str__(self):
        return f"d{self.position}"


@dataclass(frozen=True)
class AffineSymbol:
    """``s<position>``."""

    position: int

    def __str__(self):
        return f"s{self.position}"


@dataclass(frozen=True)
class AffineConst:
    value: int

    def __str__(self):
        return str(self.value)


@dataclass(frozen=True)
class AffineBinary:
    """``lhs <op> rhs`` with op one of ``+ * mod floordiv ceildiv``."""

    op: str
    lhs: "AffineExpr"
    rhs: "AffineExpr"

    def __str__(self):
        return f"({self.lhs} {self.op} {self.rhs})"


AffineExpr = Union[AffineDim, AffineSymbol, AffineConst, AffineBinary]


def _eval_expr(e, dims, symbols):
    if isinstance(e, AffineDim):
        return dims[e.position]
    if isinstance(e, AffineSymbol):
        return symbols[e.position]
    if isinstance(e, AffineConst):
        return e.value
    a, b = _eval_expr(e.lhs, dims, symbols), _eval_expr(e.rhs, dims, symbols)
    if e.op == "+":
        return a + b
    if e.op == "*":
        return a * b
    if e.op == "mod":
        return a % b  # Python's mod has the sign of the divisor, as MLIR's (b > 0)
    if e.op == "floordiv":
        return a // b
    return -((-a) // b)  # ceildiv


@dataclass(frozen=True)
class AffineMap:
    """``affine_map<(d0, d1)[s0] -> (d1, d0 + s0)>``: ``dims=2, symbols=1, results=(...)``.

    >>> m = AffineMap(2, 0, (AffineDim(1), AffineDim(0)))
    >>> m.evaluate((3, 5)), m.is_permutation(), m.dim_positions()
    ((5, 3), True, (1, 0))
    """

    dims: int
    symbols: int
    results: tuple

    def evaluate(self, dims, symbols=()) -> tuple:
        """The results at the given dim (and symbol) values."""
        if len(dims) != self.dims or len(symbols) != self.symbols:
            raise MLIRError(
                f"affine map {self}: takes {self.dims} dims and {self.symbols} symbols, "
                f"got {len(dims)} and {len(symbols)}"
            )
        return tuple(_eval_expr(e, dims, symbols) for e in self.results)

    def dim_positions(self):
        """The dim position of every result if every result is a bare ``d<i>``, else None."""
        if all(isinstance(e, AffineDim) for e in self.results):
            return tuple(e.position for e in self.results)
        return None

    def is_projected_permutation(self) -> bool:
        """Every result a distinct bare dim (dims may be dropped): ``(d0, d1, d2) -> (d2, d0)``."""
        pos = self.dim_positions()
        return pos is not None and len(set(pos)) == len(pos)

    def is_permutation(self) -> bool:
        """A projected permutation that keeps every dim: ``(d0, d1) -> (d1, d0)``."""
        return self.is_projected_permutation() and len(self.results) == self.dims

    def is_identity(self) -> bool:
        return self.dim_positions() == tuple(range(self.dims))

    def __str__(self):
        dims = ", ".join(f"d{i}" for i in range(self.dims))
        syms = f"[{', '.join(f's{i}' for i in range(self.symbols))}]" if self.symbols else ""
        return f"affine_map<({dims}){syms} -> ({', '.join(_affine_text(e) for e in self.results)})>"


def _affine_text(e, top=True):
    if isinstance(e, AffineBinary):
        s = f"{_affine_text(e.lhs, False)} {e.op} {_affine_text(e.rhs, False)}"
        return s if top else f"({s})"
    return str(e)


# -- the graph --------------------------------------------------------------------------------------


@dataclass(eq=False)
class Value:
    """An SSA value: a block argument (``%arg0``) or an op result (``%0``, ``%0#1``)."""

    name: str
    type: Type

    def __repr__(self):
        return f"Value({self.name}: {self.type})"


@dataclass(eq=False)
class Block:
    """A basic block: arguments, operations, and its label (``^bb1``) when it had one."""

    arguments: list = field(default_factory=list)
    operations: list = field(default_factory=list)
    label: str | None = None


@dataclass(eq=False)
class Region:
    blocks: list = field(default_factory=list)

    @property
    def entry(self) -> Block:
        return self.blocks[0]


@dataclass(eq=False)
class Operation:
    """One op; ``name`` is the full dialect name (``"shard.all_reduce"``)."""

    name: str
    operands: list = field(default_factory=list)
    results: list = field(default_factory=list)
    attributes: dict = field(default_factory=dict)
    regions: list = field(default_factory=list)
    successors: list = field(default_factory=list)
    location: Location = Location("<unknown>", 0, 0)

    @property
    def dialect(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def result(self) -> Value:
        """The single result (`MLIRError` if the op has not exactly one)."""
        if len(self.results) != 1:
            raise MLIRError(f"{self.location}: '{self.name}' has {len(self.results)} results, not 1")
        return self.results[0]

    def walk(self):
        """This op and every op nested in its regions, in pre-order."""
        yield self
        for region in self.regions:
            for block in region.blocks:
                for op in block.operations:
                    yield from op.walk()

    def generic(self) -> str:
        """MLIR's generic form of this op (`meshrt.mlir.syntax.printer`): values renumbered, attributes sorted."""
        return _PRINTER.print_generic(self)

    def __repr__(self):
        return f"<Operation {self.name} at {self.location}>"


@dataclass(eq=False)
class Module:
    """A parsed file: its top-level ops (the body of ``builtin.module`` when the file has one)."""

    operations: list
    source: str = ""
    filename: str = "<string>"
    attributes: dict = field(default_factory=dict)
    location: Location | None = None  # of the ``module`` op, when the file has one

    def walk(self):
        for op in self.operations:
            yield from op.walk()

    def functions(self) -> dict:
        """``{name: func.func Operation}``."""
        return {op.attributes["sym_name"]: op for op in self.operations if op.name == "func.func"}

    def grids(self) -> dict:
        """``{name: shard.grid Operation}``; its ``attributes["shape"]`` has ``DYNAMIC`` for ``?``."""
        return {op.attributes["sym_name"]: op for op in self.operations if op.name == "shard.grid"}

    def generic(self) -> str:
        """MLIR's generic form of the module, which ``mlir-opt`` reads back to the same IR.

        Canonical: equal IR prints equal text whatever the SSA names were
        (see `meshrt.mlir.syntax.printer`).
        """
        return _PRINTER.print_generic(self)


# -- printing (canonical generic form) -----------------------------------------------------------

_BARE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.")


def _sym(name):
    if name and set(name) <= _BARE and not name[0].isdigit():
        return name
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _float_text(x: float) -> str:
    if x != x or x in (float("inf"), float("-inf")):
        return repr(x)
    return repr(float(x))


def format_attr(v) -> str:
    """The text of an attribute value in the canonical printing (types of ints/floats dropped)."""
    if v is UNIT:
        return "unit"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _float_text(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(v, tuple):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k} = {format_attr(v[k])}" for k in sorted(v)) + "}"
    return str(v)
