"""The ``builtin`` dialect's custom forms (``module``, ``unrealized_conversion_cast``): one reader per
op, registered with `_custom` (see `meshrt.mlir.syntax.reader`).

>>> from meshrt.mlir import parse
>>> m = parse('''module attributes {mhlo.num_partitions = 4 : i32} {
...   func.func private @f()
... }''')
>>> m.attributes, [op.name for op in m.operations]
({'mhlo.num_partitions': 4}, ['func.func'])
"""

from __future__ import annotations

from ..syntax.reader import _custom, _op


@_custom("builtin.module")
def _module(p, name, pos, nres):
    attrs = {}
    if p.peek("@"):
        attrs["sym_name"] = p.attribute().name
    if p.keyword("attributes"):
        attrs.update(p.attr_dict())
    return _op(name, [], [], attrs, [p.region(entry_args=[])])


@_custom("builtin.unrealized_conversion_cast")
def _ucc(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    p.expect_keyword("to")
    out = p.type_list()
    return _op(name, p.resolve(names, types), out, attrs)
