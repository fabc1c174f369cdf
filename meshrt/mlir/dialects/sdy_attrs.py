"""Shardy attributes as data: `MeshAttr` (``<["x"=2, "y"=4]>``), `TensorSharding`
(``<@mesh, [{"x", ?}p1, {}], replicated={"y"}, unreduced={"z"}>``) and their axis references,
read from text exactly as JAX prints them and printed back the same way.

>>> s = parse_sharding('#sdy.sharding<@mesh, [{"x", ?}p1, {}], replicated={"y"}>')
>>> s.mesh, s.dims[0].axes[0].name, s.dims[0].closed, s.dims[0].priority, str(s)
('mesh', 'x', False, 1, '#sdy.sharding<@mesh, [{"x", ?}p1, {}], replicated={"y"}>')
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...errors import MLIRError

__all__ = ["direction_name", "DIRECTIONS", "AxisRef", "DimSharding", "TensorSharding", "MeshAttr", "parse_sharding", "parse_sharding_list",
           "parse_mesh", "parse_axis_list"]

_TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<sym>@[\w$.-]+)|(?P<int>-?\d+)|(?P<word>[A-Za-z_#][\w.#]*)'
                    r'|(?P<arrow>->)|(?P<punct>[<>\[\]{}(),:=?]))')


class _Tokens:
    def __init__(self, text, where):
        self.text, self.where, self.toks, pos = text, where, [], 0
        while pos < len(text):
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                if text[pos:].strip() == "":
                    break
                raise MLIRError(f"{where}: cannot read Shardy attribute {text!r} at {text[pos:pos + 12]!r}")
            self.toks.append((m.lastgroup, m.group(m.lastgroup)))
            pos = m.end()
        self.i = 0

    def peek(self):
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def kind(self):
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def take(self, want=None, kind=None):
        if self.i >= len(self.toks):
            self.fail(f"expected {want or kind}, found the end")
        k, v = self.toks[self.i]
        if (want is not None and v != want) or (kind is not None and k != kind):
            self.fail(f"expected {want or kind}, found {v!r}")
        self.i += 1
        return v

    def accept(self, want):
        if self.peek() == want:
            self.i += 1
            return True
        return False

    def fail(self, msg):
        raise MLIRError(f"{self.where}: Shardy attribute {self.text!r}: {msg}")


@dataclass(frozen=True)
class AxisRef:
    """A mesh axis or a sub-axis ``"x":(pre)size`` of it."""

    name: str
    pre: int | None = None
    size: int | None = None

    def __str__(self):
        return f'"{self.name}"' if self.pre is None else f'"{self.name}":({self.pre}){self.size}'

    def length(self, mesh_axes: dict) -> int:
        return mesh_axes[self.name] if self.pre is None else self.size


@dataclass(frozen=True)
class DimSharding:
    """The axes of one tensor dim (major first); open (``?``: may be sharded further) or closed."""

    axes: tuple = ()
    closed: bool = True
    priority: int | None = None

    def __str__(self):
        items = [str(a) for a in self.axes] + ([] if self.closed else ["?"])
        return "{" + ", ".join(items) + "}" + ("" if self.priority is None else f"p{self.priority}")


@dataclass(frozen=True)
class TensorSharding:
    """``#sdy.sharding<@mesh, [dims], replicated={..}, unreduced={..}>``."""

    mesh: str
    dims: tuple = ()
    replicated: tuple = ()
    unreduced: tuple = ()

    def body(self) -> str:
        s = f"@{self.mesh}, [{', '.join(str(d) for d in self.dims)}]"
        if self.replicated:
            s += ", replicated={" + ", ".join(str(a) for a in self.replicated) + "}"
        if self.unreduced:
            s += ", unreduced={" + ", ".join(str(a) for a in self.unreduced) + "}"
        return f"<{s}>"

    def __str__(self):
        return "#sdy.sharding" + self.body()

    def axis_refs(self):
        return [a for d in self.dims for a in d.axes] + list(self.replicated) + list(self.unreduced)

    def without_unreduced(self) -> "TensorSharding":
        return TensorSharding(self.mesh, self.dims, self.replicated, ())


@dataclass(frozen=True)
class MeshAttr:
    """``<["x"=2, "y"=4], device_ids=[...]>``: named axes in order, and the device order (None: iota)."""

    axes: tuple = ()               # ((name, size), ...)
    device_ids: tuple | None = None

    @property
    def size(self) -> int:
        n = 1
        for _, s in self.axes:
            n *= s
        return n if self.device_ids is None else len(self.device_ids)

    def __str__(self):
        s = "[" + ", ".join(f'"{n}"={k}' for n, k in self.axes) + "]"
        if self.device_ids is not None:
            s += ", device_ids=[" + ", ".join(str(d) for d in self.device_ids) + "]"
        return f"<{s}>"

    def sizes(self) -> dict:
        return dict(self.axes)


@dataclass
class ManualAxes:
    axes: tuple = field(default_factory=tuple)

    def __str__(self):
        return "{" + ", ".join(f'"{a}"' for a in self.axes) + "}"


def _axis_ref(t):
    name = t.take(kind="str")[1:-1]
    if t.accept(":"):
        t.take("(")
        pre = int(t.take(kind="int"))
        t.take(")")
        size = int(t.take(kind="int"))
        return AxisRef(name, pre, size)
    return AxisRef(name)


def _dim(t):
    t.take("{")
    axes, closed = [], True
    while not t.accept("}"):
        if axes or not closed:
            t.take(",")
        if t.accept("?"):
            closed = False
            continue
        axes.append(_axis_ref(t))
    prio = None
    if t.kind() == "word" and re.fullmatch(r"p\d+", t.peek()):
        prio = int(t.take()[1:])
    return DimSharding(tuple(axes), closed, prio)


def _sharding(t):
    t.take("<")
    if t.kind() != "sym":
        t.fail("expected a mesh name (@mesh); inline meshes are not supported")
    mesh = t.take()[1:]
    t.take(",")
    t.take("[")
    dims = []
    while not t.accept("]"):
        if dims:
            t.take(",")
        dims.append(_dim(t))
    replicated, unreduced = (), ()
    while t.accept(","):
        key = t.take(kind="word")
        t.take("=")
        refs = _dim(t).axes
        if key == "replicated":
            replicated = refs
        elif key == "unreduced":
            unreduced = refs
        else:
            t.fail(f"unknown field {key!r} (expected replicated= or unreduced=)")
    t.take(">")
    return TensorSharding(mesh, tuple(dims), tuple(replicated), tuple(unreduced))


def _strip(text, *prefixes):
    text = text.strip()
    for p in prefixes:
        if text.startswith(p):
            return text[len(p):]
    return text


def parse_sharding(text, where="<sdy>") -> TensorSharding:
    """``#sdy.sharding<@m, [...]>`` or ``<@m, [...]>``."""
    if isinstance(text, TensorSharding):
        return text
    t = _Tokens(_strip(str(text), "#sdy.sharding"), where)
    s = _sharding(t)
    if t.peek() is not None:
        t.fail(f"unexpected {t.peek()!r}")
    return s


def parse_sharding_list(text, where="<sdy>") -> tuple:
    """``#sdy.sharding_per_value<[<...>, ...]>`` or ``[<...>, ...]``."""
    if isinstance(text, tuple) and all(isinstance(x, TensorSharding) for x in text):
        return text
    body = _strip(str(text), "#sdy.sharding_per_value")
    t = _Tokens(body, where)
    wrapped = t.accept("<")
    t.take("[")
    out = []
    while not t.accept("]"):
        if out:
            t.take(",")
        out.append(_sharding(t))
    if wrapped:
        t.take(">")
    if t.peek() is not None:
        t.fail(f"unexpected {t.peek()!r}")
    return tuple(out)


def parse_mesh(text, where="<sdy>") -> MeshAttr:
    """``#sdy.mesh<[...]>`` or ``<["x"=2], device_ids=[..]>``."""
    if isinstance(text, MeshAttr):
        return text
    t = _Tokens(_strip(str(text), "#sdy.mesh"), where)
    t.take("<")
    axes, ids = [], None
    if t.peek() == "[":
        t.take("[")
        while not t.accept("]"):
            if axes:
                t.take(",")
            name = t.take(kind="str")[1:-1]
            t.take("=")
            axes.append((name, int(t.take(kind="int"))))
        if t.accept(","):
            t.take("device_ids")
            t.take("=")
            t.take("[")
            ids = []
            while not t.accept("]"):
                if ids:
                    t.take(",")
                ids.append(int(t.take(kind="int")))
            ids = tuple(ids)
    elif t.peek() == "device_ids":
        t.take()
        t.take("=")
        t.take("[")
        ids = [int(t.take(kind="int"))]
        t.take("]")
        ids = tuple(ids)
    t.take(">")
    return MeshAttr(tuple(axes), ids)


def parse_axis_list(text, where="<sdy>") -> tuple:
    """``{"x", "y"}`` or ``#sdy<manual_axes{"x"}>`` -> axis names."""
    if isinstance(text, ManualAxes):
        return text.axes
    body = str(text).strip()
    m = re.fullmatch(r"#sdy<manual_axes(.*)>", body, re.S)
    if m:
        body = m.group(1)
    t = _Tokens(body, where)
    return tuple(a.name for a in _dim(t).axes)


def parse_axes_per_dim(text, where="<sdy>") -> tuple:
    """``[{"b", "c"}, {}, {"d"}]`` (gathering / slicing axes) -> tuple of tuples of AxisRef."""
    body = str(text).strip()
    m = re.fullmatch(r"#sdy<list_of_axis_ref_lists(.*)>", body, re.S) or re.fullmatch(r"#sdy\.list_of_axis_ref_lists<(.*)>", body, re.S)
    if m:
        body = m.group(1)
    t = _Tokens(body, where)
    t.take("[")
    out = []
    while not t.accept("]"):
        if out:
            t.take(",")
        out.append(_dim(t).axes)
    return tuple(out)


DIRECTIONS = ("NONE", "FORWARD", "BACKWARD", "BOTH")  # sdy's PropagationDirection enum, in its order


def direction_name(v) -> str:
    """A ``propagation_barrier``'s ``allowed_direction``: the pretty form's name, or the generic
    form's ``2 : i32`` (BACKWARD)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return DIRECTIONS[v] if 0 <= v < len(DIRECTIONS) else str(v)
    text = str(v)
    return text.rstrip(">").split()[-1] if text.startswith("#") else text
