"""`_Parser`: the structure of an MLIR file, the generic syntax of an op, and the custom forms.

It reads the top level, SSA scopes (values defined before or after their uses), operations and
regions. An op in custom (pretty) form is read by the function registered for its name with
`_custom` (the modules of `meshrt.mlir.dialects`, one per dialect, register theirs; its ``__init__``
imports them all); any other op in the functional form ``name %a {attrs} : (A) -> R``. Once read, an
op goes through the normalizations its dialect registered with `_normalizer` (defaults, old names).
This module names no dialect.

>>> ops = _Parser('"my.op"() {n = 2 : i64} : () -> ()', "<string>").top_level()
>>> [(op.name, op.attributes) for op in ops]
[('my.op', {'n': 2})]
"""

from __future__ import annotations

import re

from ...errors import MLIRError
from .lexer import _BLOCK, _STRING, _SUFFIX_ID, _VALUE, _WS, _unquote
from .attributes import _AttributeReader
from ..ir import Block, FunctionType, Operation, Region, ScalarType, TensorType, Value, memref_type


_I1 = ScalarType("i1")
_INDEX = ScalarType("index")
_I64 = ScalarType("i64")


def _bool_like(t):
    if isinstance(t, TensorType):
        return TensorType(t.shape, _I1, t.encoding)
    return _I1


def _element(t):
    if isinstance(t, TensorType):
        return t.element
    m = memref_type(t)
    return m.element if m is not None else t


class _Parser(_AttributeReader):
    """A whole file: top level, SSA scopes, operations (generic or custom form) and regions."""

    # -- top level --------------------------------------------------------------------------------

    def top_level(self) -> list:
        self.push_scope()
        ops = []
        while not self.at_end():
            if self.peek("#") or self.peek("!"):
                self.alias_definition()
                continue
            ops.append(self.operation())
        self.pop_scope(final=True)
        return ops

    def alias_definition(self):
        start = self.pos
        is_attr = self.s[self.pos] == "#"
        self.pos += 1
        m = _SUFFIX_ID.match(self.s, self.pos)
        if not m:
            self.error("expected an alias name", start)
        name = self.s[start:m.end()]
        self.pos = m.end()
        self.expect("=")
        if is_attr:
            self.pos = _WS.match(self.s, self.pos).end() if _WS.match(self.s, self.pos) else self.pos
            if self.s.startswith("loc(", self.pos):  # a location alias: dropped with the locations
                self.ws()
                return
            self.attr_aliases[name] = self.attribute()
        else:
            self.type_aliases[name] = self.type()

    # -- scopes ------------------------------------------------------------------------------------

    def push_scope(self):
        self.scopes.append({})
        self.forward.append({})

    def pop_scope(self, final=False):
        self.scopes.pop()
        pending = self.forward.pop()
        if pending:
            if final or not self.forward:
                name, (v, pos) = next(iter(pending.items()))
                self.error(f"use of undefined value '{name}'", pos)
            self.forward[-1].update(pending)

    def define(self, name, typ, pos):
        scope = self.scopes[-1]
        if name in scope:
            self.error(f"redefinition of value '{name}'", pos)
        for fwd in reversed(self.forward):
            if name in fwd:
                v, _ = fwd.pop(name)
                if v.type != typ:
                    self.error(f"value '{name}' defined with type {typ} but used as {v.type}", pos)
                break
        else:
            v = Value(name, typ)
        scope[name] = v
        return v

    def lookup(self, name, typ, pos):
        if name.endswith("#0") and not any(name in sc for sc in self.scopes):
            # MLIR reads ``%v#0`` as the first result of ``%v`` however many it has
            base = name[:-2]
            if any(base in sc for sc in self.scopes):
                name = base
        for scope in reversed(self.scopes):
            v = scope.get(name)
            if v is not None:
                if typ is not None and v.type != typ:
                    self.error(f"use of value '{name}' expects type {typ}, but it has type {v.type}", pos)
                return v
        for fwd in reversed(self.forward):
            if name in fwd:
                return fwd[name][0]
        if typ is None:
            self.error(f"use of undefined value '{name}'", pos)
        v = Value(name, typ)
        self.forward[-1][name] = (v, pos)
        return v

    def resolve(self, names, types):
        if len(names) != len(types):
            pos = names[0][1] if names else self.pos
            self.error(f"{len(names)} operands but {len(types)} types", pos)
        return [self.lookup(n, t, p) for (n, p), t in zip(names, types)]

    # -- values and operands ------------------------------------------------------------------------

    def value_name(self):
        self.ws()
        pos = self.pos
        m = self.match(_VALUE)
        if not m:
            self.error(f"expected an SSA value, found {self.snippet()}")
        return m.group(0), pos

    def value_names(self):
        """``%a, %b#1, ...`` (possibly none)."""
        out = []
        if not self.peek("%"):
            return out
        out.append(self.value_name())
        while self.peek(",") and self._after_comma_is("%"):
            self.expect(",")
            out.append(self.value_name())
        return out

    def _after_comma_is(self, c):
        save = self.pos
        self.accept(",")
        ok = self.peek(c)
        self.pos = save
        return ok

    def operand(self, typ=None):
        name, pos = self.value_name()
        return self.lookup(name, typ, pos)

    # -- operations -------------------------------------------------------------------------------------

    def operation(self) -> Operation:
        results = []  # [(name, count, pos)]
        if self.peek("%"):
            while True:
                self.ws()
                pos = self.pos
                m = self.match(re.compile(r"%(?:[A-Za-z_$.-][\w$.-]*|\d+)"))
                if not m:
                    self.error(f"expected a result name, found {self.snippet()}")
                count = 1
                if self.accept(":"):
                    count = self.integer("a result count")
                results.append((m.group(0), count, pos))
                if not self.accept(","):
                    break
            self.expect("=")
        self.ws()
        pos = self.pos
        if self.peek('"'):
            op = self.generic_operation(pos)
        else:
            name = self.ident("an operation name")
            if "." not in name:
                if name in _BUILTIN_NAMES:
                    name = _BUILTIN_NAMES[name]
                elif self.dialects[-1]:
                    name = f"{self.dialects[-1]}.{name}"
            fn = _CUSTOM.get(name, _functional_form)
            save = self.pos
            try:
                op = fn(self, name, pos, sum(c for _, c, _ in results))
            except MLIRError:
                if fn is not _functional_form:
                    raise
                self.pos = save
                self.error(f"unknown operation '{name}' in custom form; give it in generic form "
                           f"(mlir-opt --mlir-print-op-generic)", pos)
            op.location = self.loc(pos)
        _normalize(self, op, pos)
        self.bind_results(op, results, pos)
        return op

    def bind_results(self, op, results, pos):
        want = sum(c for _, c, _ in results)
        types = op.results
        if not results:  # MLIR lets an op leave its results unnamed (an implicit terminator yields them)
            op.results = [Value(f"%<unnamed {i}>", t) for i, t in enumerate(types)]
            return
        if want != len(types):
            self.error(f"'{op.name}' has {len(types)} results, but {want} names are given", results[0][2])
        values, i = [], 0
        for name, count, rpos in results:
            for k in range(count):
                full = name if count == 1 else f"{name}#{k}"
                values.append(self.define(full, types[i], rpos))
                i += 1
        op.results = values

    def generic_operation(self, pos) -> Operation:
        name = _unquote(self.must(_STRING, "an operation name closed by '\"'"))
        self.expect("(")
        names = self.value_names()
        self.expect(")")
        successors = []
        if self.accept("["):
            if not self.peek("]"):
                successors.append(self.successor())
                while self.accept(","):
                    successors.append(self.successor())
            self.expect("]")
        attrs = {}
        if self.accept("<"):
            attrs.update(self.attr_dict())
            self.expect(">")
        regions = []
        if self.peek("("):
            save = self.pos
            self.accept("(")
            if self.peek("{"):
                self.dialects.append(name.split(".")[0])
                regions.append(self.region())
                while self.accept(","):
                    regions.append(self.region())
                self.dialects.pop()
                self.expect(")")
            else:
                self.pos = save
        if self.peek("{"):
            attrs.update(self.attr_dict())
        self.expect(":")
        self.ws()
        tpos = self.pos
        ftype = self.type()
        if not isinstance(ftype, FunctionType):
            self.error(f"expected a function type for '{name}', found {ftype}", tpos)
        operands = self.resolve(names, list(ftype.inputs))
        return Operation(name, operands, list(ftype.results), attrs, regions, successors, self.loc(pos))

    def successor(self):
        self.ws()
        pos = self.pos
        m = self.match(_BLOCK)
        if not m:
            self.error(f"expected a block label, found {self.snippet()}")
        return self.block_ref(m.group(0), pos)

    def block_ref(self, label, pos):
        if not self.labels:
            self.error(f"block '{label}' named outside a region; successors and blocks live in a region", pos)
        blocks = self.labels[-1]
        if label not in blocks:
            blocks[label] = (Block(label=label), pos)
        return blocks[label][0]

    # -- regions -------------------------------------------------------------------------------------

    def region(self, entry_args=None, dialect=None) -> Region:
        """``{ ops }`` or ``{ ^bb0(%a: T): ops ^bb1: ops }``; ``entry_args``: [(name, type, pos)] defined by the op."""
        self.expect("{")
        self.push_scope()
        self.labels.append({})
        if dialect:
            self.dialects.append(dialect)
        blocks = []
        if entry_args is not None or not (self.peek("^") or self.peek("}")):
            block = Block()
            for n, t, p in entry_args or ():
                block.arguments.append(self.define(n, t, p))
            self.block_body(block)
            blocks.append(block)
        while self.peek("^"):
            pos = self.pos
            label = self.must(_BLOCK, "a block label (^name)")
            block = self.block_ref(label, pos)
            if block in blocks:
                self.error(f"redefinition of block '{label}'", pos)
            if self.accept("("):
                if not self.peek(")"):
                    while True:
                        n, p = self.value_name()
                        self.expect(":")
                        block.arguments.append(self.define(n, self.type(), p))
                        if not self.accept(","):
                            break
                self.expect(")")
            self.expect(":")
            self.block_body(block)
            blocks.append(block)
        self.expect("}")
        undefined = [(lbl, p) for lbl, (b, p) in self.labels[-1].items() if b not in blocks]
        if undefined:
            self.error(f"reference to an undefined block '{undefined[0][0]}'", undefined[0][1])
        self.labels.pop()
        if dialect:
            self.dialects.pop()
        self.pop_scope()
        return Region(blocks)

    def block_body(self, block):
        while not (self.peek("^") or self.peek("}")):
            if self.at_end():
                self.error("expected '}' to close the region")
            block.operations.append(self.operation())


# -- normalization shared by both forms -------------------------------------------------------------------


def _normalize(p, op, pos):
    for fn in _NORMALIZE.get(op.name, ()):
        fn(p, op, pos)


_NORMALIZE = {}


def _normalizer(*names):
    """Register ``fn(p, op, pos)``, run on every op of these names once read (custom or generic form):
    a dialect's defaults and old spellings, brought to the one form the rest of meshrt reads."""
    def deco(fn):
        for n in names:
            _NORMALIZE.setdefault(n, []).append(fn)
        return fn
    return deco


# -- custom forms ------------------------------------------------------------------------------------------

_CUSTOM = {}
_BUILTIN_NAMES = {"module": "builtin.module"}


def _custom(*names):
    def deco(fn):
        for n in names:
            _CUSTOM[n] = fn
        return fn
    return deco


def _functional_form(p, name, pos, nres):
    """Any other op written ``name %a, %b {attrs} : (A, B) -> R`` (tosa and many more print so)."""
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    ft = p.type()
    if not isinstance(ft, FunctionType):
        p.error(f"expected a function type for '{name}'")
    return _op(name, p.resolve(names, list(ft.inputs)), list(ft.results), attrs)


def _op(name, operands, result_types, attrs=None, regions=None, successors=None):
    return Operation(name, list(operands), list(result_types), attrs or {}, regions or [], successors or [])
