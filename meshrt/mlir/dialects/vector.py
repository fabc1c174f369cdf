"""The ``vector`` dialect's custom forms, read so that a module using them parses (the runners name them
unsupported): one reader per op, registered with `_custom` (see `meshrt.mlir.syntax.reader`); the MLIR
form of its attributes.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f() -> vector<4xi1> {
...   %0 = vector.constant_mask [2] : vector<4xi1>
...   return %0 : vector<4xi1>
... }''')
>>> m.functions()["f"].regions[0].entry.operations[0].attributes["mask_dim_sizes"]
(2,)
"""

from __future__ import annotations

from .tensor import _conversion
from ..syntax.printer import ATTRIBUTE_KINDS, _array, _enum
from ..syntax.reader import _custom, _op


@_custom("vector.constant_mask")
def _vector_constant_mask(p, name, pos, nres):
    sizes = p.array_attribute("mask_dim_sizes")
    attrs = p.opt_attr_dict({"mask_dim_sizes": sizes})
    p.expect(":")
    return _op(name, [], [p.type()], attrs)


@_custom("vector.broadcast")
def _vector_broadcast(p, name, pos, nres):
    return _conversion(p, name, "to")


@_custom("vector.multi_reduction")
def _vector_multi_reduction(p, name, pos, nres):
    p.expect("<")
    kind = p.ident("a combining kind")
    p.expect(">")
    p.expect(",")
    src = p.value_name()
    p.expect(",")
    acc = p.value_name()
    dims = p.array_attribute("reduction_dims")
    attrs = p.opt_attr_dict({"kind": kind, "reduction_dims": dims})
    p.expect(":")
    st = p.type()
    p.expect_keyword("to")
    rt = p.type()
    return _op(name, p.resolve([src, acc], [st, rt]), [rt], attrs)


@_custom("vector.mask")
def _vector_mask(p, name, pos, nres):
    names = [p.value_name()]
    if p.accept(","):
        names.append(p.value_name())  # the pass-through value
    region = p.region(dialect="vector")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    mask_t = p.type()
    results = []
    if p.accept("->"):
        results = p.type_list()
    for b in region.blocks:  # the custom form leaves out the terminator that yields the masked op's results
        ops = b.operations
        if not ops or ops[-1].name != "vector.yield":
            ops.append(_op("vector.yield", list(ops[-1].results) if ops else [], []))
    types = [mask_t] + results[:len(names) - 1]
    return _op(name, p.resolve(names, types), results, attrs, [region])


# the MLIR form of the attributes ----------------------------------------------------------------------

ATTRIBUTE_KINDS["vector.*"] = {"mask_dim_sizes": _array("i64"), "reduction_dims": _array("i64"),
                               "kind": _enum("vector", "kind")}
