"""Read MLIR text (generic form of any op, custom form of the ops meshrt runs) into `meshrt.mlir.ir`.

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

import bisect
import re

import numpy as np

from .. import _sharding_text
from ..errors import MeshError, MLIRError, ShardingError
from ..mesh import parse_mesh_text
from .ir import (
    DYNAMIC, UNIT, AffineBinary, AffineConst, AffineDim, AffineMap, AffineSymbol, Block, DenseElements,
    FunctionType, Location, Module, OpaqueAttr, OpaqueType, Operation, Region, ScalarType, SymbolRef,
    TensorType, TypeAttr, Value,
)

__all__ = ["parse", "parse_file"]


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse MLIR text into a `Module` (the body of its ``builtin.module`` if it has one)."""
    p = _Parser(text, filename)
    ops = p.top_level()
    attrs = {}
    if len(ops) == 1 and ops[0].name == "builtin.module" and ops[0].regions and ops[0].regions[0].blocks:
        attrs = ops[0].attributes
        ops = ops[0].regions[0].blocks[0].operations
    return Module(ops, text, filename, attrs)


def parse_file(path) -> Module:
    """Parse an ``.mlir`` file (locations name ``path``)."""
    with open(path) as f:
        return parse(f.read(), str(path))


# -- lexical pieces -----------------------------------------------------------------------------------

_WS = re.compile(r"(?:\s+|//[^\n]*)+")
_IDENT = re.compile(r"[A-Za-z_][\w$.]*")
_SUFFIX_ID = re.compile(r"(?:[A-Za-z_$.-][\w$.-]*|\d+)")
_VALUE = re.compile(r"%(?:[A-Za-z_$.-][\w$.-]*|\d+)(?:#\d+)?")
_SYMBOL = re.compile(r'@(?:[A-Za-z_$.][\w$.-]*|"(?:[^"\\]|\\.)*")')
_BLOCK = re.compile(r"\^[\w$.-]+")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9a-fA-F]+|\d+\.?\d*(?:[eE][-+]?\d+)?)")
_INT = re.compile(r"-?\d+")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_SCALAR = re.compile(r"(?:[su]?i\d+|index|bf16|f16|f32|f64|f80|f128|tf32)(?![\w$.])")
_DIM = re.compile(r"(\?|\d+)x")

_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


def _unquote(s: str) -> str:
    body = s[1:-1]
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
                continue
            if re.fullmatch(r"[0-9a-fA-F]{2}", body[i + 1:i + 3]):
                out.append(chr(int(body[i + 1:i + 3], 16)))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


CMPI_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
CMPF_PREDICATES = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult",
                   "ule", "une", "uno", "true")

# Ops whose generic form always carries ``fastmath`` / ``overflowFlags`` (default "none").
_FASTMATH = {f"arith.{n}" for n in "addf subf mulf divf remf maximumf minimumf maxnumf minnumf negf cmpf".split()}
_FASTMATH |= {f"math.{n}" for n in (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt tanh sin cos tan sinh cosh asin acos atan atan2 asinh acosh "
    "atanh absf ceil floor round roundeven trunc erf erfc powf cbrt copysign fma fpowi"
).split()}
_OVERFLOW = {f"arith.{n}" for n in "addi subi muli shli trunci".split()}
_NAN_MODE = {f"tosa.{n}" for n in "clamp maximum minimum reduce_max reduce_min argmax max_pool2d".split()}

_I1 = ScalarType("i1")
_INDEX = ScalarType("index")
_I64 = ScalarType("i64")
_SHARDING = OpaqueType("!shard.sharding")


def _bool_like(t):
    if isinstance(t, TensorType):
        return TensorType(t.shape, _I1, t.encoding)
    return _I1


def _element(t):
    return t.element if isinstance(t, TensorType) else t


class _Parser:
    def __init__(self, text: str, filename: str):
        self.s = text
        self.pos = 0
        self.file = filename
        self.lines = [0] + [m.end() for m in re.finditer(r"\n", text)]
        self.attr_aliases = {}
        self.type_aliases = {}
        self.scopes = []        # [{name: Value}] innermost last
        self.forward = []       # per scope: {name: (placeholder Value, pos)}
        self.labels = []        # per region: {label: Block}
        self.dialects = [None]  # default dialect for unprefixed op names

    # -- positions and errors --------------------------------------------------------------------------

    def loc(self, pos=None) -> Location:
        pos = self.pos if pos is None else pos
        line = bisect.bisect_right(self.lines, pos)
        return Location(self.file, line, pos - self.lines[line - 1] + 1)

    def error(self, msg, pos=None):
        raise MLIRError(f"{self.loc(pos)}: {msg}")

    def ws(self):
        while True:
            m = _WS.match(self.s, self.pos)
            if m:
                self.pos = m.end()
            if self.s.startswith("loc(", self.pos):  # source locations are dropped
                self.pos += 3
                self.balanced()
                continue
            if self.s.startswith("{-#", self.pos):  # file metadata (dialect resources)
                end = self.s.find("#-}", self.pos)
                self.pos = len(self.s) if end < 0 else end + 3
                continue
            return

    def at_end(self):
        self.ws()
        return self.pos >= len(self.s)

    def peek(self, tok: str) -> bool:
        self.ws()
        return self.s.startswith(tok, self.pos)

    def accept(self, tok: str) -> bool:
        if self.peek(tok):
            self.pos += len(tok)
            return True
        return False

    def expect(self, tok: str, what=None):
        if not self.accept(tok):
            self.error(f"expected {what or repr(tok)}, found {self.snippet()}")

    def snippet(self):
        self.ws()
        if self.pos >= len(self.s):
            return "end of input"
        m = re.match(r"[^\s]{1,20}", self.s[self.pos:])
        return repr(m.group(0)) if m else repr(self.s[self.pos])

    def match(self, rx):
        self.ws()
        m = rx.match(self.s, self.pos)
        if m:
            self.pos = m.end()
        return m

    def keyword(self, word: str) -> bool:
        self.ws()
        if self.s.startswith(word, self.pos):
            end = self.pos + len(word)
            if end >= len(self.s) or not (self.s[end].isalnum() or self.s[end] in "_$."):
                self.pos = end
                return True
        return False

    def expect_keyword(self, word: str):
        if not self.keyword(word):
            self.error(f"expected '{word}', found {self.snippet()}")

    def ident(self, what="an identifier") -> str:
        m = self.match(_IDENT)
        if not m:
            self.error(f"expected {what}, found {self.snippet()}")
        return m.group(0)

    def integer(self, what="an integer") -> int:
        m = self.match(_INT)
        if not m:
            self.error(f"expected {what}, found {self.snippet()}")
        return int(m.group(0))

    def balanced(self) -> str:
        """Skip a bracketed group starting at pos; return its text."""
        start, depth, i, s = self.pos, 0, self.pos, self.s
        pairs = {"<": ">", "(": ")", "[": "]", "{": "}"}
        while i < len(s):
            c = s[i]
            if c == '"':
                m = _STRING.match(s, i)
                i = m.end() if m else i + 1
                continue
            if c == "-" and s.startswith("->", i):
                i += 2
                continue
            if c in pairs:
                depth += 1
            elif c in ">)]}":
                depth -= 1
                if depth == 0:
                    self.pos = i + 1
                    return s[start:i + 1]
            i += 1
        self.error("unbalanced brackets", start)

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
        m = self.match(_STRING)
        name = _unquote(m.group(0))
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
            label = self.match(_BLOCK).group(0)
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

    # -- types --------------------------------------------------------------------------------------

    def type(self):
        self.ws()
        pos = self.pos
        s = self.s
        if s.startswith("(", pos):
            self.pos += 1
            inputs = self.types_until(")")
            self.expect("->")
            if self.peek("("):
                self.pos += 1
                results = self.types_until(")")
            else:
                results = [self.type()]
            return FunctionType(tuple(inputs), tuple(results))
        if s.startswith("tensor<", pos):
            self.pos += 7
            if self.peek("*"):  # unranked
                self.pos = pos + len("tensor")
                return OpaqueType(re.sub(r"\s+", "", "tensor" + self.balanced()))
            dims = []
            while True:
                m = _DIM.match(s, self.pos)
                if not m:
                    break
                dims.append(None if m.group(1) == "?" else int(m.group(1)))
                self.pos = m.end()
            elem = self.type()
            enc = None
            if self.accept(","):
                enc = self.attribute()
            self.expect(">")
            return TensorType(tuple(dims), elem, enc)
        m = _SCALAR.match(s, pos)
        if m:
            self.pos = m.end()
            return ScalarType(m.group(0))
        if s.startswith("!", pos):
            m = re.compile(r"![\w$.-]+").match(s, pos)
            name = m.group(0)
            self.pos = m.end()
            if name in self.type_aliases and not s.startswith("<", self.pos):
                return self.type_aliases[name]
            if s.startswith("<", self.pos):
                name += self.balanced()
            return OpaqueType(re.sub(r"\s+", "", name))
        m = _IDENT.match(s, pos)
        if m and m.group(0) in ("memref", "vector", "complex", "tuple", "none", "f8E4M3FN", "f8E5M2"):
            self.pos = m.end()
            text = m.group(0)
            if s.startswith("<", self.pos):
                text += self.balanced()
            return OpaqueType(re.sub(r"\s+", "", text))
        self.error(f"expected a type, found {self.snippet()}")

    def types_until(self, close):
        out = []
        if self.accept(close):
            return out
        while True:
            out.append(self.type())
            if self.accept(close):
                return out
            self.expect(",", f"',' or '{close}'")

    def type_list(self):
        """``T1, T2`` or ``(T1, T2)``."""
        if self.peek("(") and not self._is_function_type():
            self.expect("(")
            return self.types_until(")")
        out = [self.type()]
        while self.peek(",") and not self._after_comma_is("%"):
            self.expect(",")
            out.append(self.type())
        return out

    def _is_function_type(self):
        """At ``(``: is this ``(...) -> ...`` rather than a parenthesized type list?"""
        save = self.pos
        try:
            self.ws()
            self.balanced()
            return self.peek("->")
        finally:
            self.pos = save

    def starts_type(self):
        self.ws()
        s, pos = self.s, self.pos
        return bool(
            s.startswith(("tensor<", "!", "(", "memref<", "vector<", "complex<", "tuple<", "none"), pos)
            or _SCALAR.match(s, pos)
        )

    # -- attributes -----------------------------------------------------------------------------------

    def attr_dict(self) -> dict:
        self.expect("{")
        out = {}
        if self.accept("}"):
            return out
        while True:
            self.ws()
            if self.peek('"'):
                key = _unquote(self.match(_STRING).group(0))
            else:
                key = self.ident("an attribute name")
            out[key] = self.attribute() if self.accept("=") else UNIT
            if self.accept("}"):
                return out
            self.expect(",", "',' or '}'")

    def opt_attr_dict(self, attrs):
        if self.peek("{"):
            attrs.update(self.attr_dict())
        return attrs

    def attribute(self, typed=True):
        self.ws()
        s, pos = self.s, self.pos
        c = s[pos] if pos < len(s) else ""
        if c == "@":
            m = self.match(_SYMBOL)
            names = [m.group(0)[1:]]
            while self.s.startswith("::@", self.pos):
                self.pos += 2
                names.append(self.match(_SYMBOL).group(0)[1:])
            names = [_unquote(n) if n.startswith('"') else n for n in names]
            return SymbolRef(names[0], tuple(names[1:]))
        if c == '"':
            v = _unquote(self.match(_STRING).group(0))
            if typed and self.peek(":") and not self.peek("::"):
                self.expect(":")
                self.type()
            return v
        if c == "[":
            self.pos += 1
            items = []
            if not self.accept("]"):
                while True:
                    items.append(self.attribute())
                    if self.accept("]"):
                        break
                    self.expect(",", "',' or ']'")
            return tuple(items)
        if c == "{":
            return self.attr_dict()
        if c == "#":
            return self.hash_attribute()
        if c in "-+0123456789":
            return self.number(typed)
        m = _IDENT.match(s, pos)
        word = m.group(0) if m else ""
        if word in ("true", "false"):
            self.pos = m.end()
            if typed and self.peek(":") and not self.peek("::"):
                self.expect(":")
                self.type()
            return word == "true"
        if word == "unit":
            self.pos = m.end()
            return UNIT
        if word == "dense" and s.startswith("dense<", pos):
            return self.dense()
        if word == "array" and s.startswith("array<", pos):
            return self.dense_array()
        if word == "affine_map" and s.startswith("affine_map<", pos):
            self.pos = m.end()
            return self.affine_map()
        if word in ("dense_resource", "sparse", "affine_set", "strided", "distinct", "opaque"):
            self.pos = m.end()
            text = word + self.balanced()
            if typed and self.peek(":"):
                self.expect(":")
                text += " : " + str(self.type())
            return OpaqueAttr(text)
        if self.starts_type():
            return TypeAttr(self.type())
        self.error(f"expected an attribute value, found {self.snippet()}")

    def number(self, typed=True):
        pos = self.pos
        m = self.match(_NUMBER)
        if not m:
            self.error(f"expected a number, found {self.snippet()}")
        text = m.group(0)
        typ = None
        if typed and self.peek(":") and not self.peek("::"):
            self.expect(":")
            typ = self.type()
        return _literal(self, text, typ, pos)

    def hash_attribute(self):
        start = self.pos
        m = re.compile(r"#[\w$.-]+").match(self.s, self.pos)
        if not m:
            self.error("expected an attribute alias or dialect attribute")
        name = m.group(0)
        self.pos = m.end()
        if not self.s.startswith("<", self.pos):
            if name not in self.attr_aliases:
                self.error(f"undefined attribute alias '{name}'", start)
            return self.attr_aliases[name]
        body_text = self.balanced()
        body = body_text[1:-1].strip()
        if name == "#shard":
            if body.startswith("axisarray"):
                try:
                    return tuple(tuple(x) for x in _sharding_text.axis_array(body[len("axisarray"):]))
                except ShardingError as e:
                    self.error(f"bad axis array {body!r}: {e.reason}", start)
            if body.startswith("partial"):
                return body[len("partial"):].strip()
        if re.fullmatch(r"[\w]+(?:\s*,\s*[\w]+)*", body):  # an enum (or flag set): its case names
            return re.sub(r"\s*,\s*", ",", body)
        return OpaqueAttr(name + body_text)

    def dense(self):
        pos = self.pos
        self.pos += len("dense<")
        if self.accept(">"):
            content = []
            empty = True
        else:
            empty = False
            content = self.dense_content()
            self.expect(">")
        self.expect(":")
        typ = self.type()
        if not isinstance(typ, TensorType):
            return OpaqueAttr(f"dense<...> : {typ}")
        if not typ.is_static:
            self.error(f"dense elements need a static shape, got {typ}", pos)
        elem = typ.element
        dtype = np.float32 if getattr(elem, "name", "") == "bf16" else elem.numpy_dtype
        shape = typ.shape
        if isinstance(content, _Hex):  # raw little-endian bytes
            raw = np.frombuffer(bytes.fromhex(content[2:]), dtype=np.dtype(dtype).newbyteorder("<"))
            arr = raw.astype(dtype)
            splat = arr.size == 1 and int(np.prod(shape)) != 1
            arr = np.broadcast_to(arr.reshape(()), shape) if splat else arr.reshape(shape)
        elif empty:
            arr, splat = np.zeros(shape, dtype), False
        elif not isinstance(content, list):
            splat = True
            arr = np.broadcast_to(np.asarray(_cast_scalar(content, dtype), dtype=dtype), shape)
        else:
            flat = []

            def walk(x, depth):
                if isinstance(x, list):
                    if depth >= len(shape) or len(x) != shape[depth]:
                        self.error(f"dense literal does not have the shape of {typ}", pos)
                    for y in x:
                        walk(y, depth + 1)
                else:
                    if depth != len(shape):
                        self.error(f"dense literal does not have the shape of {typ}", pos)
                    flat.append(_cast_scalar(x, dtype))
            walk(content, 0)
            arr = np.asarray(flat, dtype=dtype).reshape(shape)
            splat = False
        arr = arr.view()
        arr.flags.writeable = False
        return DenseElements(arr, typ, splat)

    def dense_content(self):
        self.ws()
        if self.accept("["):
            items = []
            if not self.accept("]"):
                while True:
                    items.append(self.dense_content())
                    if self.accept("]"):
                        break
                    self.expect(",", "',' or ']'")
            return items
        if self.peek('"'):
            text = _unquote(self.match(_STRING).group(0))
            if not text.startswith("0x"):
                self.error("expected a hex string in dense<...>")
            return _Hex(text)
        if self.keyword("true"):
            return True
        if self.keyword("false"):
            return False
        if self.peek("("):
            self.error("complex dense literals are not supported")
        m = self.match(_NUMBER)
        if not m:
            self.error(f"expected a dense literal, found {self.snippet()}")
        return m.group(0)

    def dense_array(self):
        self.pos += len("array<")
        typ = self.type()
        items = []
        if self.accept(":"):
            while True:
                pos = self.pos
                if self.keyword("true"):
                    items.append(True)
                elif self.keyword("false"):
                    items.append(False)
                else:
                    m = self.match(_NUMBER)
                    if not m:
                        self.error(f"expected a number in array<...>, found {self.snippet()}")
                    items.append(_literal(self, m.group(0), typ, pos))
                if not self.accept(","):
                    break
        self.expect(">")
        return tuple(items)

    # -- affine maps ------------------------------------------------------------------------------------

    def affine_map(self):
        self.expect("<")
        self.expect("(")
        names = {}
        dims = self.affine_names(")", "d", names)
        nsyms = 0
        if self.accept("["):
            nsyms = self.affine_names("]", "s", names)
        self.expect("->")
        self.expect("(")
        results = []
        if not self.accept(")"):
            while True:
                results.append(self.affine_expr(names))
                if self.accept(")"):
                    break
                self.expect(",", "',' or ')'")
        self.expect(">")
        return AffineMap(dims, nsyms, tuple(results))

    def affine_names(self, close, kind, names):
        count = 0
        if self.accept(close):
            return 0
        while True:
            name = self.ident("a dimension name")
            names[name] = AffineDim(count) if kind == "d" else AffineSymbol(count)
            count += 1
            if self.accept(close):
                return count
            self.expect(",")

    def affine_expr(self, names):
        e = self.affine_term(names)
        while True:
            if self.accept("+"):
                e = _affine_bin("+", e, self.affine_term(names))
            elif self.peek("-") and not self.peek("->"):
                self.expect("-")
                rhs = self.affine_term(names)
                e = _affine_bin("+", e, _neg(rhs))
            else:
                return e

    def affine_term(self, names):
        e = self.affine_factor(names)
        while True:
            if self.accept("*"):
                e = _affine_bin("*", e, self.affine_factor(names))
            elif self.keyword("floordiv"):
                e = _affine_bin("floordiv", e, self.affine_factor(names))
            elif self.keyword("ceildiv"):
                e = _affine_bin("ceildiv", e, self.affine_factor(names))
            elif self.keyword("mod"):
                e = _affine_bin("mod", e, self.affine_factor(names))
            else:
                return e

    def affine_factor(self, names):
        if self.accept("("):
            e = self.affine_expr(names)
            self.expect(")")
            return e
        if self.peek("-"):
            self.expect("-")
            return _neg(self.affine_factor(names))
        m = self.match(re.compile(r"\d+"))
        if m:
            return AffineConst(int(m.group(0)))
        pos = self.pos
        name = self.ident("an affine expression")
        if name not in names:
            self.error(f"unknown identifier '{name}' in affine map", pos)
        return names[name]


class _Hex(str):
    """The ``"0x..."`` byte string of a dense literal."""


def _neg(e):
    return _affine_bin("*", e, AffineConst(-1))


def _affine_bin(op, lhs, rhs):
    """MLIR's light canonicalization: constants folded, and kept on the right of ``+`` and ``*``."""
    if isinstance(lhs, AffineConst) and isinstance(rhs, AffineConst) and (op in "+*" or rhs.value > 0):
        return AffineConst(AffineMap(0, 0, (AffineBinary(op, lhs, rhs),)).evaluate(())[0])
    if op in "+*" and isinstance(lhs, AffineConst):
        lhs, rhs = rhs, lhs
    return AffineBinary(op, lhs, rhs)


def _cast_scalar(x, dtype):
    """One dense literal (its text) as a value of ``dtype``; integers wrap as MLIR stores them."""
    dt = np.dtype(dtype)
    if isinstance(x, bool):
        return x
    hexa = x.lower().lstrip("+-").startswith("0x")
    if dt.kind == "f":
        if hexa:  # a float given by its bits
            return np.frombuffer(int(x, 16).to_bytes(dt.itemsize, "little"), dtype=dt)[0]
        return float(x)
    v = int(x, 16) if hexa else int(x)
    if dt.kind == "b":
        return bool(v & 1)
    bits = 8 * dt.itemsize
    v &= (1 << bits) - 1
    if dt.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return v


def _literal(p, text, typ, pos):
    """A number with its optional type -> int or float (hex with a float type: its bits)."""
    is_float_type = isinstance(typ, ScalarType) and typ.is_float
    if text.lower().lstrip("+-").startswith("0x"):
        v = int(text, 16)
        if is_float_type:
            dt = np.float32 if typ.name == "bf16" else typ.numpy_dtype
            if typ.name == "bf16":
                return float(np.frombuffer((v << 16).to_bytes(4, "little"), dtype=np.float32)[0])
            return float(np.frombuffer(v.to_bytes(np.dtype(dt).itemsize, "little"), dtype=dt)[0])
        return _wrap_int(v, typ)
    if re.fullmatch(r"[-+]?\d+", text) and not is_float_type:
        return _wrap_int(int(text), typ)
    return float(text)


def _wrap_int(v, typ):
    """An integer as MLIR stores it in a typed attribute: ``255 : i8`` is -1, ``1 : i1`` is true."""
    if not isinstance(typ, ScalarType) or typ.name == "index" or typ.is_float:
        return v
    w = typ.width
    if typ.name == "i1":
        return bool(v & 1)
    v &= (1 << w) - 1
    if not typ.name.startswith("ui") and v >= 1 << (w - 1):
        v -= 1 << w
    return v


# -- normalization shared by both forms -------------------------------------------------------------------


def _normalize(p, op, pos):
    a = op.attributes
    if op.name in ("arith.cmpi", "arith.cmpf") and isinstance(a.get("predicate"), int) \
            and not isinstance(a.get("predicate"), bool):
        names = CMPI_PREDICATES if op.name == "arith.cmpi" else CMPF_PREDICATES
        if not 0 <= a["predicate"] < len(names):
            p.error(f"'{op.name}' predicate {a['predicate']} is out of range", pos)
        a["predicate"] = names[a["predicate"]]
    if op.name in _NAN_MODE:
        a.setdefault("nan_mode", "PROPAGATE")  # the default mlir-opt prints
    if op.name in ("shard.reduce_scatter", "shard.scatter") and "scatter_dim" in a:
        a["scatter_axis"] = a.pop("scatter_dim")  # the newer dialect's name for the same attribute


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


def _default_attrs(name, attrs):
    if name in _FASTMATH:
        attrs.setdefault("fastmath", "none")
    if name in _OVERFLOW:
        attrs.setdefault("overflowFlags", "none")
    return attrs


def _flags(p, attrs):
    """Optional ``fastmath<...>`` / ``overflow<...>`` after the operands."""
    while True:
        if p.keyword("fastmath"):
            attrs["fastmath"] = re.sub(r"\s+", "", p.balanced()[1:-1])
        elif p.keyword("overflow"):
            attrs["overflowFlags"] = re.sub(r"\s+", "", p.balanced()[1:-1])
        else:
            return


def _op(name, operands, result_types, attrs=None, regions=None, successors=None):
    return Operation(name, list(operands), list(result_types), attrs or {}, regions or [], successors or [])


# arith / math ---------------------------------------------------------------------------------------------

_ARITH_BINARY = (
    "addf subf mulf divf remf maximumf minimumf maxnumf minnumf addi subi muli divsi divui remsi remui ceildivsi "
    "ceildivui floordivsi andi ori xori shli shrsi shrui maxsi minsi maxui minui"
).split()
_MATH_BINARY = "powf atan2 copysign fpowi ipowi".split()
_MATH_UNARY = (
    "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt tanh sin cos tan sinh cosh asin acos atan asinh acosh atanh "
    "absf absi ceil floor round roundeven trunc erf erfc cbrt ctlz cttz ctpop"
).split()
_CASTS = ("index_cast index_castui sitofp uitofp fptosi fptoui extf truncf extsi extui trunci bitcast").split()


@_custom(*[f"arith.{n}" for n in _ARITH_BINARY], *[f"math.{n}" for n in _MATH_BINARY])
def _binary(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    types = p.type_list()
    ta, tb = (types[0], types[0]) if len(types) == 1 else types[:2]
    return _op(name, p.resolve([a, b], [ta, tb]), [ta], _default_attrs(name, attrs))


@_custom("arith.negf", *[f"math.{n}" for n in _MATH_UNARY])
def _unary(p, name, pos, nres):
    a = p.value_name()
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a], [t]), [t], _default_attrs(name, attrs))


@_custom("math.fma")
def _fma(p, name, pos, nres):
    names = [p.value_name()]
    for _ in range(2):
        p.expect(",")
        names.append(p.value_name())
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(names, [t] * 3), [t], _default_attrs(name, attrs))


@_custom("arith.cmpi", "arith.cmpf")
def _cmp(p, name, pos, nres):
    pred = p.ident("a comparison predicate")
    valid = CMPI_PREDICATES if name == "arith.cmpi" else CMPF_PREDICATES
    if pred not in valid:
        p.error(f"'{name}': unknown predicate '{pred}'; expected one of {', '.join(valid)}", pos)
    p.expect(",")
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = {"predicate": pred}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a, b], [t, t]), [_bool_like(t)], _default_attrs(name, attrs))


@_custom("arith.select")
def _select(p, name, pos, nres):
    c = p.value_name()
    p.expect(",")
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    types = p.type_list()
    if len(types) == 1:
        tc, t = _I1, types[0]
    else:
        tc, t = types[0], types[1]
    return _op(name, p.resolve([c, a, b], [tc, t, t]), [t], attrs)


@_custom(*[f"arith.{n}" for n in _CASTS])
def _cast(p, name, pos, nres):
    a = p.value_name()
    attrs = {}
    _flags(p, attrs)
    p.opt_attr_dict(attrs)
    p.expect(":")
    src = p.type()
    p.expect_keyword("to")
    dst = p.type()
    return _op(name, p.resolve([a], [src]), [dst], _default_attrs(name, attrs))


@_custom("arith.constant")
def _constant(p, name, pos, nres):
    attrs = p.opt_attr_dict({})
    vpos = p.pos
    value = p.attribute()
    if isinstance(value, DenseElements):
        t = value.type
    elif isinstance(value, bool):
        t = _I1
    else:
        # the typed literal's type was consumed by attribute(); read it again for the result
        p.pos = vpos
        p.ws()
        if p.keyword("true") or p.keyword("false"):
            t = _I1
        else:
            p.match(_NUMBER)
            if not p.accept(":"):
                p.error("arith.constant needs a typed value such as '1.0 : f32'", vpos)
            t = p.type()
    attrs["value"] = value
    return _op(name, [], [t], attrs)


# func / builtin ----------------------------------------------------------------------------------------------


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
    ft = p.type()
    attrs["callee"] = callee
    return _op(name, p.resolve(names, list(ft.inputs)), list(ft.results), attrs)


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


# tensor -------------------------------------------------------------------------------------------


def _mixed_list(p, open_="[", close="]"):
    """``[0, %a, 4]`` -> (static tuple with DYNAMIC for values, [value names])."""
    p.expect(open_)
    static, dyn = [], []
    if not p.accept(close):
        while True:
            if p.peek("%"):
                dyn.append(p.value_name())
                static.append(DYNAMIC)
            else:
                static.append(p.integer())
            if p.accept(close):
                break
            p.expect(",", f"',' or '{close}'")
    return tuple(static), dyn


@_custom("tensor.empty")
def _tensor_empty(p, name, pos, nres):
    p.expect("(")
    names = p.value_names()
    p.expect(")")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(names, [_INDEX] * len(names)), [t], attrs)


@_custom("tensor.extract")
def _tensor_extract(p, name, pos, nres):
    src = p.value_name()
    p.expect("[")
    idx = p.value_names()
    p.expect("]")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([src] + idx, [t] + [_INDEX] * len(idx)), [t.element], attrs)


@_custom("tensor.insert")
def _tensor_insert(p, name, pos, nres):
    v = p.value_name()
    p.expect_keyword("into")
    dst = p.value_name()
    p.expect("[")
    idx = p.value_names()
    p.expect("]")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([v, dst] + idx, [t.element, t] + [_INDEX] * len(idx)), [t], attrs)


def _slice_lists(p):
    offs, doffs = _mixed_list(p)
    sizes, dsizes = _mixed_list(p)
    strides, dstrides = _mixed_list(p)
    attrs = {"static_offsets": offs, "static_sizes": sizes, "static_strides": strides}
    return attrs, doffs, dsizes, dstrides


@_custom("tensor.extract_slice")
def _extract_slice(p, name, pos, nres):
    src = p.value_name()
    attrs, do, ds, dt = _slice_lists(p)
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("to")
    rt = p.type()
    dyn = do + ds + dt
    attrs["operandSegmentSizes"] = (1, len(do), len(ds), len(dt))
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs)


@_custom("tensor.insert_slice")
def _insert_slice(p, name, pos, nres):
    src = p.value_name()
    p.expect_keyword("into")
    dst = p.value_name()
    attrs, do, ds, dt = _slice_lists(p)
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("into")
    dt_ = p.type()
    dyn = do + ds + dt
    attrs["operandSegmentSizes"] = (1, 1, len(do), len(ds), len(dt))
    return _op(name, p.resolve([src, dst] + dyn, [st, dt_] + [_INDEX] * len(dyn)), [dt_], attrs)


def _conversion(p, name, separator):
    """``%a attr-dict : T0 <separator> T1``: one operand of type T0, one result of type T1."""
    a = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    src = p.type()
    if separator == "to":
        p.expect_keyword("to")
    else:
        p.expect(separator)
    dst = p.type()
    return _op(name, p.resolve([a], [src]), [dst], attrs)


@_custom("tensor.cast", "tensor.bitcast")
def _tensor_cast(p, name, pos, nres):
    return _conversion(p, name, "to")


@_custom("tensor.dim")
def _tensor_dim(p, name, pos, nres):
    a = p.value_name()
    p.expect(",")
    i = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([a, i], [t, _INDEX]), [_INDEX], attrs)


@_custom("tensor.splat")
def _tensor_splat(p, name, pos, nres):
    v = p.value_name()
    dyn = []
    if p.accept("["):
        dyn = p.value_names()
        p.expect("]")
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([v] + dyn, [t.element] + [_INDEX] * len(dyn)), [t], attrs)


@_custom("tensor.from_elements")
def _from_elements(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(names, [t.element] * len(names)), [t], attrs)


@_custom("tensor.pad")
def _tensor_pad(p, name, pos, nres):
    src = p.value_name()
    attrs = {}
    if p.keyword("nofold"):
        attrs["nofold"] = UNIT
    p.expect_keyword("low")
    low, dlow = _mixed_list(p)
    p.expect_keyword("high")
    high, dhigh = _mixed_list(p)
    region = p.region(dialect="tensor")
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("to")
    rt = p.type()
    attrs.update(static_low=low, static_high=high, operandSegmentSizes=(1, len(dlow), len(dhigh)))
    dyn = dlow + dhigh
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs, [region])


def _reassociation(p):
    p.expect("[")
    groups = []
    if not p.accept("]"):
        while True:
            p.expect("[")
            g = []
            if not p.accept("]"):
                while True:
                    g.append(p.integer())
                    if p.accept("]"):
                        break
                    p.expect(",")
            groups.append(tuple(g))
            if p.accept("]"):
                break
            p.expect(",")
    return tuple(groups)


@_custom("tensor.collapse_shape", "tensor.expand_shape")
def _reshape(p, name, pos, nres):
    src = p.value_name()
    attrs = {"reassociation": _reassociation(p)}
    dyn = []
    if name == "tensor.expand_shape":
        p.expect_keyword("output_shape")
        static, dyn = _mixed_list(p)
        attrs["static_output_shape"] = static
    p.opt_attr_dict(attrs)
    p.expect(":")
    st = p.type()
    p.expect_keyword("into")
    rt = p.type()
    return _op(name, p.resolve([src] + dyn, [st] + [_INDEX] * len(dyn)), [rt], attrs)


@_custom("tensor.concat")
def _concat(p, name, pos, nres):
    p.expect_keyword("dim")
    p.expect("(")
    dim = p.integer("a dimension")
    p.expect(")")
    names = p.value_names()
    attrs = p.opt_attr_dict({"dim": dim})
    p.expect(":")
    ft = p.type()
    return _op(name, p.resolve(names, list(ft.inputs)), list(ft.results), attrs)


@_custom("tensor.yield", "linalg.yield", "scf.yield")
def _yield(p, name, pos, nres):
    names = p.value_names()
    attrs = p.opt_attr_dict({})
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    return _op(name, p.resolve(names, types), [], attrs)


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
    ft = p.type()
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


# linalg -------------------------------------------------------------------------------------------

_LINALG_BINARY = {
    "add": ("arith.addf", "arith.addi"), "sub": ("arith.subf", "arith.subi"), "mul": ("arith.mulf", "arith.muli"),
    "div": ("arith.divf", "arith.divsi"), "div_unsigned": (None, "arith.divui"),
    "max": ("arith.maximumf", "arith.maxsi"), "min": ("arith.minimumf", "arith.minsi"),
    "powf": ("math.powf", None),
}
_LINALG_UNARY = {
    "exp": "math.exp", "log": "math.log", "abs": "math.absf", "ceil": "math.ceil", "floor": "math.floor",
    "negf": "arith.negf", "sqrt": "math.sqrt", "rsqrt": "math.rsqrt", "tanh": "math.tanh", "erf": "math.erf",
    "round": "math.round",
}
_LINALG_MATMUL_MAPS = {
    "matmul": ((0, 2), (2, 1), (0, 1), 3),
    "batch_matmul": ((0, 1, 3), (0, 3, 2), (0, 1, 2), 4),
}


def _ins_outs(p, keyword):
    if not p.keyword(keyword):
        return [], []
    p.expect("(")
    names = p.value_names()
    types = []
    if names:
        p.expect(":")
        types = p.type_list()
    p.expect(")")
    return names, types


def _cast_to(block_ops, v, t):
    """The scalar cast linalg's named ops insert to bring ``v`` to type ``t``."""
    s = v.type
    if s == t:
        return v
    if s.is_float and t.is_float:
        name = "arith.extf" if s.width < t.width else "arith.truncf"
    elif not s.is_float and t.is_float:
        name = "arith.uitofp" if s.name == "i1" else "arith.sitofp"
    elif s.is_float and not t.is_float:
        name = "arith.fptosi"
    elif "index" in (s.name, t.name):
        name = "arith.index_cast"
    else:
        name = "arith.extsi" if s.width < t.width else "arith.trunci"
        if s.name == "i1":
            name = "arith.extui"
    op = _op(name, [v], [t], _default_attrs(name, {}))
    op.results = [Value("%cast", t)]
    block_ops.append(op)
    return op.results[0]


def _scalar_op(block_ops, name, operands, t):
    op = _op(name, operands, [t], _default_attrs(name, {}))
    op.results = [Value("%r", t)]
    block_ops.append(op)
    return op.results[0]


def _named_body(p, kind, in_types, out_types, pos):
    """The body mlir-opt prints for a named linalg op: block args = element types of ins and outs."""
    args = [Value(f"%in{i}", _element(t)) for i, t in enumerate(in_types)]
    args += [Value(f"%out{i}", _element(t)) for i, t in enumerate(out_types)]
    ops = []
    out_t = args[-1].type
    if not isinstance(out_t, ScalarType):
        p.error(f"linalg.{kind}: element type {out_t} is not a scalar", pos)
    if kind in ("fill", "copy"):
        y = [_cast_to(ops, args[0], out_t)]
    elif kind in ("transpose", "broadcast"):
        y = [args[0]]
    elif kind in _LINALG_MATMUL_MAPS:
        a = _cast_to(ops, args[0], out_t)
        b = _cast_to(ops, args[1], out_t)
        fl = out_t.is_float
        m = _scalar_op(ops, "arith.mulf" if fl else "arith.muli", [a, b], out_t)
        y = [_scalar_op(ops, "arith.addf" if fl else "arith.addi", [args[2], m], out_t)]
    elif kind in _LINALG_BINARY:
        opname = _LINALG_BINARY[kind][0 if out_t.is_float else 1]
        if opname is None:
            p.error(f"linalg.{kind} does not take element type {out_t}", pos)
        a = _cast_to(ops, args[0], out_t)
        b = _cast_to(ops, args[1], out_t)
        y = [_scalar_op(ops, opname, [a, b], out_t)]
    else:
        a = _cast_to(ops, args[0], out_t)
        y = [_scalar_op(ops, _LINALG_UNARY[kind], [a], out_t)]
    ops.append(_op("linalg.yield", y, []))
    return Region([Block(args, ops)])


def _tensor_results(out_types):
    return [t for t in out_types if isinstance(t, TensorType)]


@_custom(*[f"linalg.{k}" for k in ["fill", "copy", *_LINALG_MATMUL_MAPS, *_LINALG_BINARY, *_LINALG_UNARY]])
def _linalg_named(p, name, pos, nres):
    kind = name.split(".", 1)[1]
    attrs = p.opt_attr_dict({})
    if p.keyword("indexing_maps"):
        p.expect("=")
        attrs["indexing_maps"] = p.attribute()
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    p.opt_attr_dict(attrs)
    results = []
    if p.accept("->"):
        results = p.type_list()
    if kind in _LINALG_MATMUL_MAPS and "indexing_maps" not in attrs:
        a, b, c, nd = _LINALG_MATMUL_MAPS[kind]
        attrs["indexing_maps"] = tuple(AffineMap(nd, 0, tuple(AffineDim(i) for i in m)) for m in (a, b, c))
    attrs["operandSegmentSizes"] = (len(ins), len(outs))
    operands = p.resolve(ins + outs, in_types + out_types)
    return _op(name, operands, results, attrs, [_named_body(p, kind, in_types, out_types, pos)])


@_custom("linalg.transpose", "linalg.broadcast")
def _linalg_perm(p, name, pos, nres):
    kind = name.split(".", 1)[1]
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    key = "permutation" if kind == "transpose" else "dimensions"
    p.expect_keyword(key)
    p.expect("=")
    vals = p.attribute()
    attrs = p.opt_attr_dict({key: tuple(vals)})
    operands = p.resolve(ins + outs, in_types + out_types)
    return _op(name, operands, _tensor_results(out_types), attrs, [_named_body(p, kind, in_types, out_types, pos)])


def _short_body(p, name, in_types, out_types, reduce):
    """``{ arith.addf }``: the body that applies one scalar op to the block arguments."""
    p.expect("{")
    opname = p.ident("an operation name")
    attrs = p.opt_attr_dict({})
    p.expect("}")
    args = [Value(f"%in{i}", _element(t)) for i, t in enumerate(in_types)]
    args += [Value(f"%init{i}", _element(t)) for i, t in enumerate(out_types)]
    operands = [args[1], args[0]] if reduce else args[:len(in_types)]
    op = _op(opname, operands, [args[-1].type], _default_attrs(opname, attrs))
    op.results = [Value("%r", args[-1].type)]
    return Region([Block(args, [op, _op("linalg.yield", [op.results[0]], [])])])


@_custom("linalg.map", "linalg.reduce")
def _linalg_map_reduce(p, name, pos, nres):
    reduce = name == "linalg.reduce"
    short_at = None
    if p.peek("{"):  # ``{ arith.addf }``: read after ins/outs, which give its types
        short_at = p.pos
        p.balanced()
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    attrs = {}
    if reduce:
        p.expect_keyword("dimensions")
        p.expect("=")
        attrs["dimensions"] = tuple(p.attribute())
    p.opt_attr_dict(attrs)
    if short_at is not None:
        end, p.pos = p.pos, short_at
        body = _short_body(p, name, in_types, out_types, reduce)
        p.pos = end
    else:
        p.expect("(")
        args = []
        if not p.accept(")"):
            while True:
                n, q = p.value_name()
                p.expect(":")
                args.append((n, p.type(), q))
                if p.accept(")"):
                    break
                p.expect(",")
        body = p.region(entry_args=args, dialect="linalg")
    operands = p.resolve(ins + outs, in_types + out_types)
    return _op(name, operands, _tensor_results(out_types), attrs, [body])


@_custom("linalg.generic")
def _linalg_generic(p, name, pos, nres):
    attrs = p.attr_dict()
    ins, in_types = _ins_outs(p, "ins")
    outs, out_types = _ins_outs(p, "outs")
    if p.keyword("attrs"):
        p.expect("=")
        attrs.update(p.attr_dict())
    body = p.region(dialect="linalg")
    results = []
    if p.accept("->"):
        results = p.type_list()
    attrs["operandSegmentSizes"] = (len(ins), len(outs))
    return _op(name, p.resolve(ins + outs, in_types + out_types), results, attrs, [body])


@_custom("linalg.index")
def _linalg_index(p, name, pos, nres):
    d = p.integer("a dimension")
    attrs = p.opt_attr_dict({"dim": d})
    p.expect(":")
    return _op(name, [], [p.type()], attrs)


# shard --------------------------------------------------------------------------------------------


def _grid_ref(p):
    p.ws()
    if not p.peek("@"):
        p.error(f"expected a grid symbol (@name), found {p.snippet()}")
    return p.attribute()


def _sharding_fields(p, name, pos, stop_at_colon=True):
    """The split_axes/halo_sizes/... clause, read by meshrt's sharding text parser."""
    p.ws()
    start = p.pos
    depth, i, s = 0, p.pos, p.s
    while i < len(s):  # the clause ends at ':' or '{' outside brackets
        c = s[i]
        if c in "[(":
            depth += 1
        elif c in "])":
            depth -= 1
        elif depth == 0 and (c == ":" or c == "{"):
            break
        elif c == "/" and s.startswith("//", i):
            i = s.find("\n", i)
            if i < 0:
                i = len(s)
            continue
        i += 1
    text = s[start:i]
    try:
        fields = _sharding_text.mlir_sharding_fields(text)
    except ShardingError as e:
        p.error(f"'{name}': {getattr(e, 'reason', e)}", start + getattr(e, "offset", 0))
    p.pos = i
    return fields, start


def _static_dynamic(p, values, start):
    static, dyn = [], []
    for v in values:
        if isinstance(v, str):
            static.append(DYNAMIC)
            dyn.append((v, start))
        else:
            static.append(v)
    return tuple(static), dyn


@_custom("shard.grid")
def _shard_grid(p, name, pos, nres):
    sym = _grid_ref(p)
    start = p.pos
    p.ws()
    if not p.peek("("):
        p.error(f"expected '(shape = ...)' after the grid name, found {p.snippet()}")
    p.balanced()
    text = f"shard.grid @{sym.name}{p.s[start:p.pos].strip()}"
    attrs = {"sym_name": sym.name}
    body = p.s[start:p.pos]
    m = re.match(r"\s*\(\s*shape\s*=\s*(.*?)\s*\)\s*$", body, re.S)
    if m and m.group(1) in ("", "[]"):
        attrs["shape"] = ()  # the verifier rejects it, with the location
    else:
        try:
            shape, _, _ = parse_mesh_text(text)
        except MeshError as e:
            p.error(f"'shard.grid': {e}", start)
        attrs["shape"] = tuple(DYNAMIC if d == -1 else d for d in shape)
    p.opt_attr_dict(attrs)
    return _op(name, [], [], attrs)


@_custom("shard.sharding")
def _shard_sharding(p, name, pos, nres):
    grid = _grid_ref(p)
    fields, start = _sharding_fields(p, name, pos)
    if "split_axes" not in fields:
        p.error("'shard.sharding' expects 'split_axes = [...]'", start)
    halo, dhalo = _static_dynamic(p, fields.get("halo_sizes", ()), start)
    offs, doffs = _static_dynamic(p, fields.get("sharded_dims_offsets", ()), start)
    attrs = {
        "grid": grid,
        "split_axes": tuple(tuple(a) for a in fields["split_axes"]),
        "static_halo_sizes": halo,
        "static_sharded_dims_offsets": offs,
        "operandSegmentSizes": (len(doffs), len(dhalo)),
    }
    if "partial_type" in fields:  # seed 001's mesh.sharding; MLIR 22 dropped it
        attrs["partial_type"] = fields["partial_type"]
        attrs["partial_axes"] = tuple(fields["partial_axes"])
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve(doffs + dhalo, [_I64] * (len(dhalo) + len(doffs))), [t], attrs)


@_custom("shard.shard")
def _shard_shard(p, name, pos, nres):
    src = p.value_name()
    p.expect_keyword("to")
    sh = p.value_name()
    attrs = {}
    if p.keyword("annotate_for_users"):
        attrs["annotate_for_users"] = UNIT
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([src, sh], [t, _SHARDING]), [t], attrs)


@_custom("shard.get_sharding")
def _shard_get_sharding(p, name, pos, nres):
    return _conversion(p, name, "->")


@_custom("shard.shard_shape")
def _shard_shape(p, name, pos, nres):
    p.expect_keyword("dims")
    p.expect("=")
    dims, ddims = _mixed_list(p)
    p.expect_keyword("sharding")
    p.expect("=")
    sh = p.value_name()
    p.expect_keyword("device")
    p.expect("=")
    dev, ddev = _mixed_list(p)
    attrs = p.opt_attr_dict({"dims": dims, "device": dev})
    attrs["operandSegmentSizes"] = (len(ddims), 1, len(ddev))
    p.expect(":")
    types = p.type_list()
    operands = p.resolve(ddims + [sh] + ddev, [_INDEX] * len(ddims) + [_SHARDING] + [_INDEX] * len(ddev))
    return _op(name, operands, types, attrs)


def _axes_kw(p, attrs, key):
    if p.keyword(key):
        p.expect("=")
        attrs[key] = tuple(p.attribute(typed=False))


@_custom("shard.process_multi_index", "shard.process_linear_index")
def _shard_process_index(p, name, pos, nres):
    p.expect_keyword("on")
    attrs = {"grid": _grid_ref(p)}
    if name == "shard.process_multi_index":
        attrs["axes"] = ()
        _axes_kw(p, attrs, "axes")
    p.opt_attr_dict(attrs)
    p.expect(":")
    return _op(name, [], p.type_list(), attrs)


@_custom("shard.grid_shape")
def _shard_grid_shape(p, name, pos, nres):
    attrs = {"grid": _grid_ref(p), "axes": ()}
    _axes_kw(p, attrs, "axes")
    p.opt_attr_dict(attrs)
    p.expect(":")
    return _op(name, [], p.type_list(), attrs)


@_custom("shard.neighbors_linear_indices")
def _shard_neighbors(p, name, pos, nres):
    p.expect_keyword("on")
    attrs = {"grid": _grid_ref(p)}
    p.expect("[")
    dev = p.value_names()
    p.expect("]")
    _axes_kw(p, attrs, "split_axes")
    p.opt_attr_dict(attrs)
    p.expect(":")
    types = p.type_list()
    return _op(name, p.resolve(dev, [_INDEX] * len(dev)), types, attrs)


# keyword -> kind of value, per collective
_COLLECTIVES = {
    "all_gather": ("gather_axis",),
    "all_reduce": ("reduction",),
    "all_slice": ("slice_axis",),
    "all_to_all": ("split_axis", "concat_axis"),
    "broadcast": ("root",),
    "gather": ("gather_axis", "root"),
    "recv": ("source",),
    "reduce": ("reduction", "root"),
    "reduce_scatter": ("reduction", "scatter_axis", "scatter_dim"),
    "scatter": ("scatter_axis", "scatter_dim", "root"),
    "send": ("destination",),
    "shift": ("shift_axis", "offset", "rotate"),
}
_DEVICE_KEYS = ("root", "source", "destination")


@_custom(*[f"shard.{k}" for k in _COLLECTIVES])
def _shard_collective(p, name, pos, nres):
    kind = name.split(".", 1)[1]
    src = p.value_name()
    p.expect_keyword("on")
    attrs = {"grid": _grid_ref(p), "grid_axes": ()}
    if kind in ("all_reduce", "reduce", "reduce_scatter"):
        attrs["reduction"] = "sum"
    allowed = ("grid_axes",) + _COLLECTIVES[kind]
    dyn = []
    while True:
        p.ws()
        m = _IDENT.match(p.s, p.pos)
        if not m or m.group(0) not in allowed:
            break
        key = m.group(0)
        p.pos = m.end()
        if key == "rotate":
            attrs["rotate"] = UNIT
            continue
        p.expect("=")
        if key == "grid_axes":
            attrs[key] = tuple(p.attribute(typed=False))
        elif key == "reduction":
            attrs[key] = p.ident("a reduction kind")
        elif key in _DEVICE_KEYS:
            static, d = _mixed_list(p)
            attrs[key] = static
            dyn += d
        else:
            attrs[key] = p.integer(f"an integer for {key}")
    p.opt_attr_dict(attrs)
    p.expect(":")
    if p.peek("(") and p._is_function_type():
        ft = p.type()
        in_types, out = list(ft.inputs), list(ft.results)
    else:
        in_types = [p.type()]
        p.expect("->")
        out = [p.type()]
    operands = p.resolve([src] + dyn, in_types)
    return _op(name, operands, out, attrs)


@_custom("shard.update_halo")
def _shard_update_halo(p, name, pos, nres):
    dst = p.value_name()
    p.expect_keyword("on")
    grid = _grid_ref(p)
    fields, start = _sharding_fields(p, name, pos)
    if "split_axes" not in fields:
        p.error("'shard.update_halo' expects 'split_axes = [...]'", start)
    extra = set(fields) - {"split_axes", "halo_sizes"}
    if extra:
        p.error(f"'shard.update_halo' takes split_axes and halo_sizes, not {sorted(extra)}", start)
    halo, dhalo = _static_dynamic(p, fields.get("halo_sizes", ()), start)
    attrs = {"grid": grid, "split_axes": tuple(tuple(a) for a in fields["split_axes"]), "static_halo_sizes": halo}
    p.opt_attr_dict(attrs)
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([dst] + dhalo, [t] + [_I64] * len(dhalo)), [t], attrs)


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


# affine ---------------------------------------------------------------------------------------------


def _map_operands(p):
    """``#map(%d0, %d1)[%s0]`` or ``affine_map<...>(...)[...]`` -> (AffineMap, dim names, symbol names)."""
    p.ws()
    pos = p.pos
    m = p.attribute(typed=False)
    if not isinstance(m, AffineMap):
        p.error(f"expected an affine map, found {m}", pos)
    p.expect("(")
    dims = p.value_names()
    p.expect(")")
    syms = []
    if p.accept("["):
        syms = p.value_names()
        p.expect("]")
    if len(dims) != m.dims or len(syms) != m.symbols:
        p.error(f"affine map {m} takes {m.dims} dims and {m.symbols} symbols, "
                f"got {len(dims)} and {len(syms)} operands", pos)
    return m, dims, syms


@_custom("affine.apply", "affine.min", "affine.max")
def _affine_apply(p, name, pos, nres):
    m, dims, syms = _map_operands(p)
    if name == "affine.apply" and len(m.results) != 1:
        p.error(f"'affine.apply' needs a map with one result, got {m}", pos)
    attrs = p.opt_attr_dict({"map": m})
    names = dims + syms
    return _op(name, p.resolve(names, [_INDEX] * len(names)), [_INDEX], attrs)


# vector (read so that a module using them parses; the executor names them unsupported) ---------------


@_custom("vector.constant_mask")
def _vector_constant_mask(p, name, pos, nres):
    sizes = p.attribute(typed=False)
    attrs = p.opt_attr_dict({"mask_dim_sizes": tuple(sizes)})
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
    dims = p.attribute(typed=False)
    attrs = p.opt_attr_dict({"kind": kind, "reduction_dims": tuple(dims)})
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
