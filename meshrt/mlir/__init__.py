"""Read, verify and run MLIR programs of the ``shard`` dialect (see `meshrt.mlir.ir` for the data model).

The folder, lowest first (each imports only from those before it):

- `meshrt.mlir.ir`: the data model (`Module`, `Operation`, types, attribute values) every part uses.
- `meshrt.mlir.syntax`: MLIR's generic syntax, naming no dialect: lexer, types and attributes, reader, printer.
- `meshrt.mlir.dialects`: one module per dialect namespace: its custom forms, the MLIR form of its
  attributes, its checks; its ``__init__`` registers them all and gives `parse` and `parse_file`.
- `meshrt.mlir.interpreters`: what the ops compute on one process's values, and the SPMD runner of
  ``shard`` programs.
- `meshrt.mlir.shardy`: StableHLO + ``sdy`` programs in the global view, on DistributedTensors.

>>> from meshrt.mlir import parse
>>> m = parse('shard.grid @g(shape = 4)')
>>> m.grids()["g"].attributes["shape"]
(4,)
"""

import importlib as _importlib
import importlib.abc as _abc
import importlib.util as _util
import sys as _sys

from ..errors import MLIRError
from .ir import (
    DYNAMIC, UNIT, AffineBinary, AffineConst, AffineDim, AffineMap, AffineSymbol, Block, DenseElements, FunctionType,
    Location, Module, OpaqueAttr, OpaqueType, Operation, Region, ScalarType, SymbolRef, TensorType, TypeAttr,
    UnitAttr, Value,
)
from . import ir as _ir
from .syntax import printer as _printer
from .dialects import parse, parse_file
from .dialects.shard import verify

_ir._PRINTER.print_generic = _printer.print_generic  # Operation.generic() / Module.generic()

__all__ = [
    "MLIRError", "DYNAMIC", "UNIT", "AffineBinary", "AffineConst", "AffineDim", "AffineMap", "AffineSymbol",
    "Block", "DenseElements", "FunctionType", "Location", "Module", "OpaqueAttr", "OpaqueType", "Operation",
    "Region", "ScalarType", "SymbolRef", "TensorType", "TypeAttr", "UnitAttr", "Value",
    "parse", "parse_file", "verify",
]

# Module paths from before the folder was laid out by dialect, kept for users' imports
# (``from meshrt.mlir.sdy import SdyProgram``, ``import meshrt.mlir.execute``): each names the
# module's new home, and is the same module object there.
_MOVED = {
    "_lexer": "syntax.lexer", "_types_attributes": "syntax.attributes", "_reader": "syntax.reader",
    "printer": "syntax.printer",
    "parser": "dialects", "verify": "dialects.shard", "_sdy_attrs": "dialects.sdy_attrs",
    **{f"_forms_{d}": f"dialects.{d}" for d in ("arith", "cf", "linalg", "scf", "sdy", "shard", "stablehlo", "tensor")},
    "linalg": "interpreters.linalg", "tosa": "interpreters.tosa", "stablehlo": "interpreters.stablehlo",
    "execute": "interpreters.spmd",
    "sdy": "shardy.program", "sdy_propagate": "shardy.propagation", "_sdy_window": "shardy.window",
    "_sdy_index": "shardy.index", "sdy_cli": "shardy.cli",
}


class _OldPath(_abc.MetaPathFinder, _abc.Loader):
    """Imports ``meshrt.mlir.<old>`` as its new module, on first use (the runners stay unimported
    until asked for, as before)."""

    specs = {}

    def find_spec(self, fullname, path=None, target=None):
        head, _, old = fullname.rpartition(".")
        if head != __name__ or old not in _MOVED:
            return None
        return _util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        module = _importlib.import_module(f"{__name__}.{_MOVED[spec.name.rpartition('.')[2]]}")
        self.specs[spec.name] = module.__spec__  # the import system sets the old name's between the two calls
        return module

    def exec_module(self, module):  # already run under its new name
        module.__spec__ = self.specs.pop(module.__spec__.name)


def __getattr__(name):  # ``meshrt.mlir.sdy`` after ``import meshrt.mlir``, as a submodule attribute
    if name in _MOVED:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_sys.meta_path.append(_OldPath())
for _old, _new in _MOVED.items():  # those already imported above: aliased now (meshrt.mlir.verify stays the function)
    if f"{__name__}.{_new}" in _sys.modules:
        _sys.modules.setdefault(f"{__name__}.{_old}", _sys.modules[f"{__name__}.{_new}"])
del _old, _new
