"""Reading MLIR types (``tensor<4x?xf32>``, function types, aliases) and attributes (integers,
floats, dense literals, arrays, dictionaries, affine maps, dialect attributes) into `meshrt.mlir.ir`.

>>> r = _AttributeReader("tensor<4x?xf32>", "<string>")
>>> t = r.type()
>>> t.shape, str(t.element)
((4, None), 'f32')
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...sharding import text as _sharding_text
from ...errors import ShardingError
from .lexer import _BANG_NAME, _DIM, _IDENT, _NUMBER, _SCALAR, _STRING, _SYMBOL, _Lexer, _unquote
from ..ir import (
    _NUMPY, UNIT, AffineBinary, AffineConst, AffineDim, AffineMap, AffineSymbol, DenseElements, FunctionType,
    OpaqueAttr, OpaqueType, ScalarType, SymbolRef, TensorType, TypeAttr,
)


_MAX_WIDTH = 16_777_215  # MLIR's IntegerType::kMaxWidth; wider, masks of 1 << width would not fit in memory


class _TypeReader(_Lexer):
    """Types: scalars, ``tensor<...>``, function types, ``!alias`` and opaque dialect types."""

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
            name = m.group(0)
            if name[0] in "sui" and name[-1].isdigit() and int(name.lstrip("sui")) > _MAX_WIDTH:
                self.error(f"expected an integer width of at most {_MAX_WIDTH} bits (MLIR's limit), found {name}", pos)
            self.pos = m.end()
            return ScalarType(name)
        if s.startswith("!", pos):
            name = self.must(_BANG_NAME, "a dialect type or type alias (!name)")
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

    def typed(self, kind, what):
        """A type that must be a ``kind`` (`TensorType`, `FunctionType`, ...): else an error
        ``expected <what>, found <type>`` where the type starts."""
        self.ws()
        pos = self.pos
        t = self.type()
        if not isinstance(t, kind):
            self.error(f"expected {what}, found {t}", pos)
        return t

    def tensor_type(self):
        return self.typed(TensorType, "a tensor type")

    def function_type(self):
        return self.typed(FunctionType, "a function type such as (T1, T2) -> R")

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


class _AttributeReader(_TypeReader):
    """Attributes (``#alias``, literals, arrays, dictionaries, dense elements, dialect attributes) and affine maps."""

    # -- attributes -----------------------------------------------------------------------------------

    def attr_dict(self) -> dict:
        self.expect("{")
        out = {}
        if self.accept("}"):
            return out
        while True:
            self.ws()
            if self.peek('"'):
                key = _unquote(self.must(_STRING, "a string literal closed by '\"'"))
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
            names = [self.must(_SYMBOL, "a symbol name (@name)")[1:]]
            while self.s.startswith("::@", self.pos):
                self.pos += 2
                names.append(self.must(_SYMBOL, "a symbol name (@name)")[1:])
            names = [_unquote(n) if n.startswith('"') else n for n in names]
            return SymbolRef(names[0], tuple(names[1:]))
        if c == '"':
            v = _unquote(self.must(_STRING, "a string literal closed by '\"'"))
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

    def array_attribute(self, what, typed=False) -> tuple:
        """An array attribute (``[1, 2]``, ``array<i64: 1, 2>``); else an error naming ``what``."""
        self.ws()
        pos = self.pos
        v = self.attribute(typed=typed)
        if not isinstance(v, tuple):
            self.error(f"expected {what} as an array such as [0, 1], found {self.s[pos:self.pos].strip()!r}", pos)
        return v

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
        if not isinstance(elem, ScalarType) or (elem.name != "bf16" and elem.name not in _NUMPY):
            self.error(f"dense elements of {typ}: expected an integer, index or float element type, found {elem}",
                       pos)
        dtype = np.float32 if elem.name == "bf16" else elem.numpy_dtype
        shape = typ.shape
        if isinstance(content, _Hex):  # raw little-endian bytes
            data = _hex_bytes(content[2:])
            size, count = np.dtype(dtype).itemsize, math.prod(shape)
            if data is None or len(data) % size or len(data) // size not in (1, count):
                self.error(f"dense hex literal of {typ}: expected {count * size} bytes (or {size} for a splat) "
                           f"as pairs of hex digits, found {content!r}", pos)
            raw = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"))
            arr = raw.astype(dtype)
            splat = arr.size == 1 and int(np.prod(shape)) != 1
            arr = np.broadcast_to(arr.reshape(()), shape) if splat else arr.reshape(shape)
        elif empty:
            if math.prod(shape) != 0:
                self.error(f"dense<> holds no elements, but {typ} has {math.prod(shape)}", pos)
            arr, splat = np.zeros(shape, dtype), False
        elif not isinstance(content, list):
            splat = True
            arr = np.broadcast_to(np.asarray(_cast_scalar(self, content, dtype, pos), dtype=dtype), shape)
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
                    flat.append(_cast_scalar(self, x, dtype, pos))
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
            text = _unquote(self.must(_STRING, "a string literal closed by '\"'"))
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


def _hex_bytes(digits):
    """``"0a0b"`` -> ``b"\\n\\x0b"``; None when not pairs of hex digits."""
    return bytes.fromhex(digits) if re.fullmatch(r"(?:[0-9a-fA-F]{2})*", digits) else None


def _cast_scalar(p, x, dtype, pos):
    """One dense literal (its text) as a value of ``dtype``; integers wrap as MLIR stores them."""
    dt = np.dtype(dtype)
    if isinstance(x, bool):
        return x
    hexa = x.lower().lstrip("+-").startswith("0x")
    if dt.kind == "f":
        if hexa:  # a float given by its bits
            v = int(x, 16)
            if not 0 <= v < 1 << (8 * dt.itemsize):
                p.error(f"dense literal {x}: expected the {8 * dt.itemsize} bits of a {dt} value, found more", pos)
            return np.frombuffer(v.to_bytes(dt.itemsize, "little"), dtype=dt)[0]
        return float(x)
    if not hexa and not re.fullmatch(r"[-+]?\d+", x):
        p.error(f"dense literal {x}: expected an integer for element type {dt}, found a float", pos)
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
            bits = 16 if typ.name == "bf16" else 8 * typ.numpy_dtype.itemsize
            if not 0 <= v < 1 << bits:
                p.error(f"hexadecimal float literal {text}: expected the {bits} bits of a {typ}, found more", pos)
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
    if not isinstance(typ, ScalarType) or not re.fullmatch(r"[su]?i\d+", typ.name) or typ.width == 0:
        return v
    w = typ.width
    if typ.name == "i1":
        return bool(v & 1)
    v &= (1 << w) - 1
    if not typ.name.startswith("ui") and v >= 1 << (w - 1):
        v -= 1 << w
    return v
