"""The ``cf`` dialect's custom forms (``br``, ``cond_br``, ``assert``): one reader per op, registered with
`_custom` (see `meshrt.mlir.syntax.reader`); the MLIR form of its attributes.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%c: i1, %x: f32) -> f32 {
...   cf.cond_br %c, ^bb1(%x : f32), ^bb1(%x : f32)
... ^bb1(%y: f32):
...   return %y : f32
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[0]
>>> op.name, len(op.successors), op.attributes["operandSegmentSizes"]
('cf.cond_br', 2, (1, 1, 1))
"""

from __future__ import annotations

from ..syntax.printer import ATTRIBUTE_KINDS, _array
from ..syntax.reader import _I1, _custom, _op


# cf -----------------------------------------------------------------------------------------------


def _successor_with_args(p):
    """``^bb1`` or ``^bb1(%a, %b : f32, i32)`` -> (block, [values])."""
    block = p.successor()
    if not p.accept("("):
        return block, []
    names = p.value_names()
    p.expect(":")
    types = p.type_list()
    p.expect(")")
    return block, p.resolve(names, types)


@_custom("cf.br")
def _cf_br(p, name, pos, nres):
    block, args = _successor_with_args(p)
    return _op(name, args, [], p.opt_attr_dict({}), successors=[block])


@_custom("cf.cond_br")
def _cf_cond_br(p, name, pos, nres):
    c = p.operand(_I1)
    p.expect(",")
    t, targs = _successor_with_args(p)
    p.expect(",")
    f, fargs = _successor_with_args(p)
    attrs = p.opt_attr_dict({"operandSegmentSizes": (1, len(targs), len(fargs))})
    return _op(name, [c] + targs + fargs, [], attrs, successors=[t, f])


@_custom("cf.assert")
def _cf_assert(p, name, pos, nres):
    c = p.operand(_I1)
    p.expect(",")
    msg = p.attribute(typed=False)
    return _op(name, [c], [], p.opt_attr_dict({"msg": msg}))


# the MLIR form of the attributes ----------------------------------------------------------------------

ATTRIBUTE_KINDS["cf.*"] = {"operandSegmentSizes": _array("i32")}
