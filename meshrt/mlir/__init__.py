"""Read, verify and run MLIR programs of the ``shard`` dialect (see `meshrt.mlir.ir` for the data model).

>>> from meshrt.mlir import parse
>>> m = parse('shard.grid @g(shape = 4)')
>>> m.grids()["g"].attributes["shape"]
(4,)
"""

from ..errors import MLIRError
from .ir import (
    DYNAMIC, UNIT, AffineBinary, AffineConst, AffineDim, AffineMap, AffineSymbol, Block, DenseElements, FunctionType,
    Location, Module, OpaqueAttr, OpaqueType, Operation, Region, ScalarType, SymbolRef, TensorType, TypeAttr,
    UnitAttr, Value,
)
from . import ir as _ir, printer as _printer

_ir._PRINTER.print_generic = _printer.print_generic  # Operation.generic() / Module.generic()

__all__ = [
    "MLIRError", "DYNAMIC", "UNIT", "AffineBinary", "AffineConst", "AffineDim", "AffineMap", "AffineSymbol",
    "Block", "DenseElements", "FunctionType", "Location", "Module", "OpaqueAttr", "OpaqueType", "Operation",
    "Region", "ScalarType", "SymbolRef", "TensorType", "TypeAttr", "UnitAttr", "Value",
]

try:  # the parser lands after the data model; keep the package importable in between
    from .parser import parse, parse_file  # noqa: F401
    from .verify import verify  # noqa: F401
    __all__ += ["parse", "parse_file", "verify"]
except ImportError:  # pragma: no cover
    pass
