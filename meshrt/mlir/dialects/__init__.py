"""The dialects meshrt knows, one module per dialect namespace, and `parse`, which reads MLIR text
(generic form of any op, custom form of the ops meshrt runs) into `meshrt.mlir.ir`.

Each module holds what is its dialect's own and registers it with the generic syntax
(`meshrt.mlir.syntax`) when imported: its ops' custom forms (`reader._custom`), the
normalizations of its ops once read (`reader._normalizer`), the MLIR form of its attributes
(`printer.ATTRIBUTE_KINDS`), and its checks (`shard.verify`, `sdy.verify_sdy`). This
``__init__`` imports them all:

- `arith` (and ``math``, which shares its forms and flags), `func`, `builtin`, `cf`, `affine`,
  `scf`, `vector`, `tensor`, `linalg`, `tosa`: the dialects of ``mlir-opt``'s programs;
- `memref` (with ``bufferization``) and `mpi`: bufferized programs and what
  ``--convert-shard-to-mpi`` makes of them;
- `shard`: the ``shard`` dialect, and `verify`;
- `stablehlo`, `sdy` (with `sdy_attrs`, its attributes as data) and `verify_sdy`: what JAX exports.

What the ops compute is in `meshrt.mlir.interpreters`.

>>> m = parse('''
... shard.grid @g(shape = 4)
... func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {
...   %0 = shard.all_reduce %x on @g grid_axes = [0] reduction = max : tensor<8xf32> -> tensor<8xf32>
...   return %0 : tensor<8xf32>
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[0]
>>> op.name, op.attributes["reduction"], op.attributes["grid_axes"], str(op.location)
('shard.all_reduce', 'max', (0,), '<string>:4:8')

Errors are `MLIRError`s whose message starts with ``file:line:col:``.
"""

from __future__ import annotations

from . import affine, arith, builtin, cf, func, linalg, scf, shard, tensor, vector  # noqa: F401  (register the custom forms)
from . import sdy, stablehlo  # noqa: F401  (Shardy and the StableHLO JAX prints)
from . import tosa  # noqa: F401  (its nan_mode default, its attributes' MLIR form)
from . import memref, mpi  # noqa: F401  (bufferized programs, and the mpi dialect of --convert-shard-to-mpi)
from ...errors import MLIRError
from ..syntax.reader import _Parser
from ..ir import Module

__all__ = ["parse", "parse_file"]


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse MLIR text into a `Module` (the body of its ``builtin.module`` if it has one)."""
    p = _Parser(text, filename)
    try:
        ops = p.top_level()
    except RecursionError:
        p.error("brackets or regions nested too deeply for the reader")
    except (AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
        if isinstance(e, MLIRError):
            raise
        # the last resort: every refusal is meant to be an MLIRError said where it arises (the fuzzing of
        # tests/test_fuzz_readers.py checks that); one that is not still gets the place, as a bug
        raise MLIRError(f"{p.loc()}: internal error of meshrt's MLIR reader (a bug, please report it): "
                        f"{type(e).__name__}: {e}") from e
    attrs, loc = {}, None
    if len(ops) == 1 and ops[0].name == "builtin.module" and ops[0].regions and ops[0].regions[0].blocks:
        attrs, loc = ops[0].attributes, ops[0].location
        ops = ops[0].regions[0].blocks[0].operations
    return Module(ops, text, filename, attrs, loc)


def parse_file(path) -> Module:
    """Parse an ``.mlir`` file (locations name ``path``)."""
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode()
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise MLIRError(f"{path}:{line}:{col}: expected UTF-8 text, found byte {data[e.start]:#04x}") from None
    return parse(text.replace("\r\n", "\n").replace("\r", "\n"), str(path))  # as open() in text mode
