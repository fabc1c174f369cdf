"""The ``tosa`` dialect: its ops are read in the generic or functional form (``tosa.add %a, %b :
(A, B) -> R``, no custom forms); what is its own is the default of ``nan_mode`` and the MLIR form
of its attributes. What the ops compute: `meshrt.mlir.interpreters.tosa`.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
...   %0 = tosa.clamp %a {min_val = 0.0 : f32, max_val = 1.0 : f32} : (tensor<4xf32>) -> tensor<4xf32>
...   return %0 : tensor<4xf32>
... }''')
>>> m.functions()["f"].regions[0].entry.operations[0].attributes["nan_mode"]
'PROPAGATE'
"""

from __future__ import annotations

from ..syntax.printer import ATTRIBUTE_KINDS, _array, _by_element_type, _enum, _typed_int
from ..syntax.reader import _normalizer

_NAN_MODE = [f"tosa.{n}" for n in "clamp maximum minimum reduce_max reduce_min argmax max_pool2d".split()]


@_normalizer(*_NAN_MODE)
def _nan_mode(p, op, pos):
    op.attributes.setdefault("nan_mode", "PROPAGATE")  # the default mlir-opt prints


ATTRIBUTE_KINDS["tosa.*"] = {"axis": _typed_int("i32"), "perms": _array("i32"), "min_val": _by_element_type,
                             "max_val": _by_element_type, "new_shape": _array("i64"),
                             "nan_mode": _enum("tosa", "nan_mode")}
