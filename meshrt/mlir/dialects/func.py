"""The ``func`` dialect's custom forms (``func.func``, ``func.return``, ``func.call``): one reader per op,
registered with `_custom` (see `meshrt.mlir.syntax.reader`).

>>> from meshrt.mlir import parse
>>> f = parse('''func.func private @g(%a: f32) -> f32 {
...   return %a : f32
... }''').functions()["g"]
>>> f.attributes["sym_visibility"], str(f.attributes["function_type"])
('private', '(f32) -> f32')
"""

from __future__ import annotations

from ..ir import FunctionType, Region, SymbolRef, TypeAttr
from ..syntax.reader import _custom, _op


@_custom("func.func")
def _func(p, name, pos, nres):
    attrs = {}
    if p.keyword("private"):
        attrs["sym_visibility"] = "private"
    elif p.keyword("public"):
        attrs["sym_visibility"] = "public"
    elif p.keyword("nested"):
        attrs["sym_visibility"] = "nested"
    sym = p.attribute()
    if not isinstance(sym, SymbolRef):
        p.error("expected a function name (@name)", pos)
    p.expect("(")
    args, arg_attrs, named = [], [], False
    if not p.accept(")"):
        while True:
            if p.peek("%"):
                n, npos = p.value_name()
                p.expect(":")
                args.append((n, p.type(), npos))
                named = True
            else:
                args.append((None, p.type(), p.pos))
            arg_attrs.append(p.attr_dict() if p.peek("{") else {})
            if p.accept(")"):
                break
            p.expect(",", "',' or ')'")
    results, res_attrs = [], []
    if p.accept("->"):
        if p.peek("(") and not p._is_function_type():
            p.expect("(")
            if not p.accept(")"):
                while True:
                    results.append(p.type())
                    res_attrs.append(p.attr_dict() if p.peek("{") else {})
                    if p.accept(")"):
                        break
                    p.expect(",")
        else:  # a lone result type carries no attributes: a '{' is the body
            results.append(p.type())
            res_attrs.append({})
    if p.keyword("attributes"):
        attrs.update(p.attr_dict())
    attrs["sym_name"] = sym.name
    attrs["function_type"] = TypeAttr(FunctionType(tuple(t for _, t, _ in args), tuple(results)))
    if any(arg_attrs):
        attrs["arg_attrs"] = tuple(arg_attrs)
    if any(res_attrs):
        attrs["res_attrs"] = tuple(res_attrs)
    regions = []
    if p.peek("{"):
        if not named and args:
            p.error("a function with a body needs named arguments (%arg0: type)")
        regions.append(p.region(entry_args=args, dialect="func"))
    else:
        regions.append(Region([]))
    return _op(name, [], [], attrs, regions)


@_custom("func.return")
def _return(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    return _op(name, p.resolve(names, types), [], attrs)


@_custom("func.call")
def _call(p, name, pos, nres):
    callee = p.attribute()
    p.expect("(")
    names = p.value_names()
    p.expect(")")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    ft = p.function_type()
    attrs["callee"] = callee
    return _op(name, p.resolve(names, list(ft.inputs)), list(ft.results), attrs)
