"""The custom (pretty) forms of scf ops (if, for, while, execute_region):
one reader per op, registered with `_custom` (see `meshrt.mlir.syntax.reader`).

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%n: index, %x: f32) -> f32 {
...   %c0 = arith.constant 0 : index
...   %c1 = arith.constant 1 : index
...   %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %x) -> (f32) {
...     %y = arith.addf %acc, %acc : f32
...     scf.yield %y : f32
...   }
...   return %r : f32
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[2]
>>> op.name, [o.name for o in op.regions[0].entry.operations]
('scf.for', ['arith.addf', 'scf.yield'])
"""

from __future__ import annotations

from ..syntax.reader import _I1, _INDEX, _custom, _op
from ..ir import UNIT, Block, Region


# scf ----------------------------------------------------------------------------------------------


def _implicit_yield(region, name="scf.yield"):
    """The custom form may leave out a result-less ``scf.yield``; the generic form has it."""
    for b in region.blocks:
        if not b.operations or b.operations[-1].name != name:
            b.operations.append(_op(name, [], []))
    if not region.blocks:
        region.blocks.append(Block(operations=[_op(name, [], [])]))


@_custom("scf.if")
def _scf_if(p, name, pos, nres):
    c = p.value_name()
    types = []
    if p.accept("->"):
        types = p.type_list()
    then = p.region(dialect="scf")
    other = Region([])
    if p.keyword("else"):
        other = p.region(dialect="scf")
    attrs = p.opt_attr_dict({})
    if not types:
        _implicit_yield(then)
        if other.blocks:
            _implicit_yield(other)
    return _op(name, p.resolve([c], [_I1]), types, attrs, [then, other])


@_custom("scf.for")
def _scf_for(p, name, pos, nres):
    attrs = {}
    if p.keyword("unsigned"):
        attrs["unsignedCmp"] = UNIT
    iv = p.value_name()
    p.expect("=")
    lb = p.value_name()
    p.expect_keyword("to")
    ub = p.value_name()
    p.expect_keyword("step")
    st = p.value_name()
    inits, args, types = [], [], []
    if p.keyword("iter_args"):
        p.expect("(")
        while True:
            args.append(p.value_name())
            p.expect("=")
            inits.append(p.value_name())
            if p.accept(")"):
                break
            p.expect(",")
        p.expect("->")
        types = p.type_list()
    ivt = _INDEX
    if p.accept(":"):
        ivt = p.type()
    entry = [(iv[0], ivt, iv[1])] + [(n, t, q) for (n, q), t in zip(args, types)]
    body = p.region(entry_args=entry, dialect="scf")
    p.opt_attr_dict(attrs)
    if not types:
        _implicit_yield(body)
    operands = p.resolve([lb, ub, st] + inits, [ivt] * 3 + types)
    return _op(name, operands, types, attrs, [body])


@_custom("scf.while")
def _scf_while(p, name, pos, nres):
    p.expect("(")
    args, inits = [], []
    if not p.accept(")"):
        while True:
            args.append(p.value_name())
            p.expect("=")
            inits.append(p.value_name())
            if p.accept(")"):
                break
            p.expect(",")
    p.expect(":")
    ft = p.function_type()
    before = p.region(entry_args=[(n, t, q) for (n, q), t in zip(args, ft.inputs)], dialect="scf")
    p.expect_keyword("do")
    after = p.region(dialect="scf")
    attrs = {}
    if p.keyword("attributes"):
        attrs.update(p.attr_dict())
    return _op(name, p.resolve(inits, list(ft.inputs)), list(ft.results), attrs, [before, after])


@_custom("scf.condition")
def _scf_condition(p, name, pos, nres):
    p.expect("(")
    c = p.value_name()
    p.expect(")")
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    return _op(name, p.resolve([c] + names, [_I1] + types), [], attrs)


@_custom("scf.execute_region")
def _scf_execute_region(p, name, pos, nres):
    types = []
    if p.accept("->"):
        types = p.type_list()
    attrs = {}
    if p.keyword("no_inline"):
        attrs["no_inline"] = UNIT
    region = p.region(dialect="scf")
    p.opt_attr_dict(attrs)
    return _op(name, [], types, attrs, [region])
