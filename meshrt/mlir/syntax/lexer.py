"""The lexical layer of the MLIR reader: token patterns, string literals, and `_Lexer`, which
holds the text and the position, reports errors as ``file:line:col:``, and reads identifiers,
punctuation and balanced brackets.

>>> lx = _Lexer("%x = foo.bar", "f.mlir")
>>> lx.loc(5)
Location(file='f.mlir', line=1, col=6)
"""

from __future__ import annotations

import bisect
import re

from ...errors import MLIRError
from ..ir import Location


# -- lexical pieces -----------------------------------------------------------------------------------

_WS = re.compile(r"(?:\s+|//[^\n]*)+")
_IDENT = re.compile(r"[A-Za-z_][\w$.]*")
_SUFFIX_ID = re.compile(r"(?:[A-Za-z_$.-][\w$.-]*|\d+)")
_VALUE = re.compile(r"%(?:[A-Za-z_$.-][\w$.-]*|\d+)(?:#\d+)?")
_SYMBOL = re.compile(r'@(?:[A-Za-z_$.][\w$.-]*|"(?:[^"\\]|\\.)*")')
_BLOCK = re.compile(r"\^[\w$.-]+")
_BANG_NAME = re.compile(r"![\w$.-]+")
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


class _Lexer:
    """The text, the position in it, and the reader's state (aliases, SSA scopes, block labels).

    The reader is one object: `_TypeReader`, `_AttributeReader` (`meshrt.mlir.syntax.attributes`) and
    `_Parser` (`meshrt.mlir.syntax.reader`) each add the methods of their layer to this one.
    """

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

    def must(self, rx, what) -> str:
        """The text ``rx`` matches at the position (after whitespace), or an error ``expected <what>,
        found ...`` there: the one way the reader takes a token it cannot do without."""
        m = self.match(rx)
        if not m:
            self.error(f"expected {what}, found {self.snippet()}")
        return m.group(0)

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
