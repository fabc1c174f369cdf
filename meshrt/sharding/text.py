"""Text forms of shardings: MLIR ``mesh.sharding``/``shard.sharding``, Shardy
``#sdy.sharding<...>`` (with sub-axes), and the `visualize` picture."""

from __future__ import annotations

import re

from ..errors import ShardingError
from ..mesh import AbstractMesh, Mesh
from ..reduction import REDUCTION_KINDS

_TOKEN = re.compile(
    r"""\s*(?:
      (?P<str>"[^"]*")
    | (?P<sym>@[\w.$-]+)
    | (?P<ssa>%[\w.$-]+)
    | (?P<int>-?\d+)
    | (?P<word>[!#]?[A-Za-z_][\w.]*)
    | (?P<punct>[\[\]{}()<>,=:?])
    )""",
    re.VERBOSE,
)


class _Tokens:
    """A token stream that reports the column of anything unexpected."""

    def __init__(self, text: str):
        self.text = text
        self.toks = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if not m or m.end() == pos:
                col = len(stripped) - len(stripped[pos:].lstrip()) if m is None else pos
                self.fail(f"unexpected character {stripped[col]!r}", col)
            kind = m.lastgroup
            self.toks.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, what: str, col=None):
        if col is None:
            col = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text.rstrip())
        err = ShardingError(
            f"sharding text: {what} at column {col + 1} in {self.text.strip()!r}\n"
            f"  {self.text.rstrip()}\n  {' ' * col}^"
        )
        err.offset, err.reason = col, what  # for callers that report their own location (meshrt.mlir)
        raise err

    def peek(self):
        return self.toks[self.i][1] if self.i < len(self.toks) else None

    def kind(self):
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def take(self, expected=None, kind=None):
        if self.i >= len(self.toks):
            self.fail(f"expected {expected!r} but the text ended" if expected else f"expected a {kind} but the text ended")
        k, v, _ = self.toks[self.i]
        if (expected is not None and v != expected) or (kind is not None and k != kind):
            self.fail(f"expected {expected!r} but found {v!r}" if expected else f"expected a {kind} but found {v!r}")
        self.i += 1
        return v

    def accept(self, value) -> bool:
        if self.peek() == value:
            self.i += 1
            return True
        return False

    def done(self) -> bool:
        return self.i >= len(self.toks)


def parse_sharding(text: str, mesh: AbstractMesh, cls):
    if not isinstance(text, str):
        raise ShardingError(f"sharding text: {text!r} is not a string")
    if not isinstance(mesh, AbstractMesh):
        raise ShardingError(f"mesh: {mesh!r} is not a Mesh or AbstractMesh")
    t = _Tokens(text)
    if t.kind() == "ssa":
        t.take(kind="ssa")
        t.take("=")
    head = t.peek()
    if head in ("#sdy.sharding", "sdy.sharding") or head == "<":
        return _parse_sdy(t, mesh, cls)
    if head in ("mesh.sharding", "shard.sharding"):
        return _parse_mlir_op(t, mesh, cls)
    if head in ("#mesh.shard", "#shard.shard", "#mesh.sharding", "#shard.sharding"):
        return _parse_mlir_attr(t, mesh, cls)
    t.fail(f"expected 'shard.sharding', 'mesh.sharding' or '#sdy.sharding', found {head!r}")


def _int_list(t: _Tokens, nested=False, ssa=False):
    """``[1, 2]`` (``[[0], [1, 2]]`` when nested); with ``ssa``, ``%h`` entries are kept as their names."""
    t.take("[")
    out = []
    while not t.accept("]"):
        if out:
            t.take(",")
        if nested:
            out.append(_int_list(t))
        elif t.kind() == "str":
            out.append(t.take(kind="str")[1:-1])
        elif t.peek() == "?":
            t.fail("dynamic ('?') sizes are not supported; give static values")
        elif ssa and t.kind() == "ssa":
            out.append(t.take(kind="ssa"))
        else:
            out.append(int(t.take(kind="int")))
    return out


def _partial(t: _Tokens):
    t.take("partial")
    t.take("=")
    kind = t.take(kind="word")
    return kind, _int_list(t)


def _mlir_fields(t: _Tokens, fields: dict, allow_split=True, ssa=False, stop=(":", ">")):
    while not t.done() and t.peek() not in stop:
        t.accept(",")
        key = t.peek()
        if key == "split_axes" and allow_split:
            t.take()
            t.take("=")
            fields["split_axes"] = _int_list(t, nested=True)
        elif key == "partial":
            fields["partial_type"], fields["partial_axes"] = _partial(t)
        elif key in ("halo_sizes", "sharded_dims_offsets"):
            t.take()
            t.take("=")
            fields[key] = _int_list(t, ssa=ssa)
        else:
            t.fail(f"unknown sharding attribute {key!r}")


def mlir_sharding_fields(text: str) -> dict:
    """The fields of a ``shard.sharding`` / ``shard.update_halo`` op after its grid symbol.

    Sizes given as SSA values stay their names; the MLIR reader turns them
    into operands.  An error is a `ShardingError` whose ``offset`` is the
    0-based position in ``text``.

    >>> mlir_sharding_fields("split_axes = [[0], []] halo_sizes = [1, %h]")
    {'split_axes': [[0], []], 'halo_sizes': [1, '%h']}
    """
    t = _Tokens(text)
    fields = {}
    _mlir_fields(t, fields, ssa=True, stop=())
    return fields


def axis_array(text: str) -> list:
    """The body of ``#shard<axisarray[[0], [1, 2]]>``: ``[[0], [1, 2]]`` -> ``[[0], [1, 2]]``."""
    t = _Tokens(text)
    out = _int_list(t, nested=True)
    if not t.done():
        t.fail(f"unexpected {t.peek()!r}")
    return out


def _build(t: _Tokens, cls, mesh, fields):
    if fields.get("partial_type") is not None:
        if fields["partial_type"] not in REDUCTION_KINDS:
            raise ShardingError(
                f"partial_type: unknown reduction kind {fields['partial_type']!r} in {t.text.strip()!r}; "
                f"expected one of {REDUCTION_KINDS[:-1]}"
            )
    return cls(mesh, fields.pop("split_axes", ()), **fields)


def _parse_mlir_op(t: _Tokens, mesh, cls):
    t.take()
    t.take(kind="sym")
    fields = {}
    if t.peek() != "split_axes":
        t.fail(f"expected 'split_axes', found {t.peek()!r}")
    _mlir_fields(t, fields)
    if t.accept(":"):
        t.take(kind="word")
    if not t.done():
        t.fail(f"unexpected {t.peek()!r}")
    return _build(t, cls, mesh, fields)


def _parse_mlir_attr(t: _Tokens, mesh, cls):
    t.take()
    t.take("<")
    t.take(kind="sym")
    t.take(",")
    fields = {"split_axes": _int_list(t, nested=True)}
    _mlir_fields(t, fields, allow_split=False)
    t.take(">")
    if not t.done():
        t.fail(f"unexpected {t.peek()!r}")
    return _build(t, cls, mesh, fields)


# -- Shardy --------------------------------------------------------------------


def _sdy_axis_ref(t: _Tokens):
    """``"x"`` or ``"x":(2)4`` -> (name, pre_size, size or None)."""
    name = t.take(kind="str")[1:-1]
    if t.accept(":"):
        t.take("(")
        pre = int(t.take(kind="int"))
        t.take(")")
        size = int(t.take(kind="int"))
        return name, pre, size
    return name, None, None


def _sdy_axis_set(t: _Tokens):
    t.take("{")
    out, first = [], True
    while not t.accept("}"):
        if not first:
            t.take(",")
        first = False
        if t.accept("?"):  # an open dimension: it may be split further; it holds what is listed
            continue
        out.append(_sdy_axis_ref(t))
    if t.kind() == "word" and re.fullmatch(r"p\d+", t.peek() or ""):
        t.take()  # a propagation priority: irrelevant for the layout
    return out


def _parse_sdy(t: _Tokens, mesh, cls):
    if t.peek() != "<":
        t.take()
    t.take("<")
    if t.kind() == "sym":
        if t.peek()[1:] != mesh.name:
            t.fail(f"the sharding names mesh {t.peek()!r}, but it is read against mesh '@{mesh.name}' "
                   f"({mesh!r}); parse it with that mesh, or name the mesh {t.peek()[1:]!r}")
        t.take()
    else:
        t.take("<")  # inline mesh: <mesh<[...]>, ...> is not supported
    t.take(",")
    t.take("[")
    dims = []
    while not t.accept("]"):
        if dims:
            t.take(",")
        dims.append(_sdy_axis_set(t))
    replicated, unreduced = [], []
    while t.accept(","):
        key = t.take(kind="word")
        t.take("=")
        refs = _sdy_axis_set(t)
        if key == "replicated":
            replicated += refs
        elif key == "unreduced":
            unreduced += refs
        else:
            t.fail(f"unknown Shardy sharding field {key!r}")
    t.take(">")
    if not t.done():
        t.fail(f"unexpected {t.peek()!r}")

    names = mesh.axis_names
    if not names:
        raise ShardingError(f"mesh: a Shardy sharding names axes, but {mesh!r} has no axis_names")
    refs = [r for d in dims for r in d] + replicated + unreduced
    subs = sub_axes(mesh)
    if subs:  # a refined mesh (what `sdy_text` prints a sub-axis sharding from): its own cuts
        def on_refined(ref):
            name, pre, size = ref
            if name not in subs:
                if name not in names:
                    raise ShardingError(f"sharding text: unknown axis name {name!r}; the mesh has {list(names)}")
                return [name] if size != 1 else []
            runs = subs[name]
            full = runs[-1][1]
            lo, hi = (1, full) if pre is None else (pre, pre * size)
            got = [n for p, q, n in runs if lo <= p and q <= hi]
            if lo == hi or (got and runs[[n for _, _, n in runs].index(got[0])][0] == lo
                            and runs[[n for _, _, n in runs].index(got[-1])][1] == hi):
                return got
            raise ShardingError(f'sharding text: sub-axis "{name}":({pre}){size} is not a run of the axes '
                                f"{[n for _, _, n in runs]} of the refined mesh")

        split = [[a for r in d for a in on_refined(r)] for d in dims]
        partial = [a for r in unreduced for a in on_refined(r)]
        return cls(mesh, split, partial_axes=partial, partial_type="sum")
    for name, pre, size in refs:
        if name not in names:
            raise ShardingError(f"sharding text: unknown axis name {name!r}; the mesh has {list(names)}")
        full = mesh.shape[names.index(name)]
        if pre is not None and (pre < 1 or size < 1 or full % (pre * size) != 0):
            raise ShardingError(
                f'sharding text: sub-axis "{name}":({pre}){size} does not divide axis {name!r} of size {full}'
            )
    cuts = {}
    for name, pre, size in refs:
        if pre is not None and size > 1:  # a size-1 sub-axis splits nothing
            cuts.setdefault(name, set()).update((pre, pre * size))
    if cuts:
        mesh, axis_of = _refine(mesh, cuts)
    else:
        axis_of = {(n, None, None): [n] for n in names}

    def resolve(ref):
        if ref[2] == 1:
            return []
        return axis_of[ref] if ref[1] is not None else axis_of[(ref[0], None, None)]

    split = [[a for r in d for a in resolve(r)] for d in dims]
    partial = [a for r in unreduced for a in resolve(r)]
    return cls(mesh, split, partial_axes=partial, partial_type="sum")


_SUB = re.compile(r"(.*):\((\d+)\)(\d+)")


def sub_axes(mesh) -> dict:
    """The sub-axes of a refined mesh (axis names ``x:(pre)size``, from `_refine`): per full axis
    its runs ``(pre, pre * size, name)``, major first; ``{}`` for a mesh without sub-axes."""
    out = {}
    for n in mesh.axis_names or ():
        m = _SUB.fullmatch(n)
        if m:
            p, k = int(m.group(2)), int(m.group(3))
            out.setdefault(m.group(1), []).append((p, p * k, n))
    return out


def sdy_axes_text(mesh, axes) -> str:
    """One dim's axes (indices into ``mesh``) as a Shardy dim sharding, ``{"x":(1)2, "y"}``: a
    refined mesh's consecutive sub-axes of one axis joined, a run covering the axis written as it."""
    subs = sub_axes(mesh)
    names = mesh.axis_names
    where = {n: (b, p, q) for b, runs in subs.items() for p, q, n in runs}
    out = []  # [base, pre, hi] or [name]
    for a in axes:
        n = names[a]
        if n in where:
            b, p, q = where[n]
            if out and len(out[-1]) == 3 and out[-1][0] == b and out[-1][2] == p:
                out[-1][2] = q
            else:
                out.append([b, p, q])
        else:
            out.append([n])
    text = []
    for r in out:
        if len(r) == 1 or (r[1] == 1 and r[2] == subs[r[0]][-1][1]):
            text.append(f'"{r[0]}"')
        else:
            text.append(f'"{r[0]}":({r[1]}){r[2] // r[1]}')
    return "{" + ", ".join(text) + "}"


def sdy_text(s) -> str:
    """A sharding on a refined mesh as the Shardy text it came from, which `parse_sharding` reads
    back on that mesh or on the unrefined one: ``#sdy.sharding<@mesh, [{"x":(1)2}, {"x":(2)2}]>``
    (consecutive sub-axes of one axis in a dim joined, a run covering the axis written as it)."""
    body = f"@{s.mesh.name}, [" + ", ".join(sdy_axes_text(s.mesh, axes) for axes in s.split_axes) + "]"
    if s.partial_axes:
        body += ", unreduced=" + sdy_axes_text(s.mesh, s.partial_axes)
    return f"#sdy.sharding<{body}>"


def _refine(mesh: AbstractMesh, cuts: dict):
    """Split the axes named in ``cuts`` into sub-axes at the given pre-sizes.

    Row-major order is kept, so every device keeps its linear index; a Shardy
    sub-axis ``"x":(m)k`` becomes the run of sub-axes between pre-sizes m and m*k.
    """
    shape, names, axis_of = [], [], {}
    for name, size in zip(mesh.axis_names, mesh.shape):
        points = sorted({1, size} | cuts.get(name, set()))
        for p in points:
            if size % p:
                raise ShardingError(f"sharding text: sub-axes of {name!r} (size {size}) do not nest: {sorted(points)}")
        sub = []
        if len(points) <= 2:  # no cut inside the axis: "x":(1)size is the whole axis
            shape.append(size)
            names.append(name)
            sub.append((1, size, name))
        else:
            for p, q in zip(points, points[1:]):
                if q % p:
                    raise ShardingError(f"sharding text: sub-axes of {name!r} (size {size}) do not nest: {points}")
                sub_name = f"{name}:({p}){q // p}"
                shape.append(q // p)
                names.append(sub_name)
                sub.append((p, q, sub_name))
        axis_of[(name, None, None)] = [n for _, _, n in sub]
        for lo in points:
            for hi in points:
                if hi > lo and hi % lo == 0:
                    axis_of[(name, lo, hi // lo)] = [n for p, q, n in sub if p >= lo and q <= hi]
    if isinstance(mesh, Mesh):
        refined = Mesh(shape, names, comm=mesh.comm, name=mesh.name)
    else:
        refined = AbstractMesh(shape, names, name=mesh.name)
    return refined, axis_of


# -- visualize -------------------------------------------------------------------


def visualize(s, shape: tuple) -> str:
    """Which device holds which block; one box per distinct block, devices listed in it."""
    s.check_shape(shape)
    mesh = s.mesh
    blocks = {}
    for dev in range(mesh.size):
        key = tuple((x.start, x.stop) for x in s.shard_slices(shape, dev))
        blocks.setdefault(key, []).append(dev)
    header = [f"{s}", f"global shape {shape} on mesh {mesh.shape}" + (
        f" {mesh.axis_names}" if mesh.axis_names else "")]
    if s.partial_axes:
        header.append(
            f"partial ({s.partial_type}) over mesh axes {list(s.partial_axes)}: devices listed together "
            "hold partial values whose reduction is the block"
        )
    if s.halo_sizes:
        widths = [f"dim {d}: -{s.halo_widths(d)[0]}/+{s.halo_widths(d)[1]}" for d in s.sharded_dims]
        header.append("halos " + ", ".join(widths) + " (every local buffer carries them)")

    def label(block, devs):
        rng = ", ".join(f"{a}:{b}" for a, b in block) or "scalar"
        return [("dev " if len(devs) == 1 else "devs ") + ",".join(map(str, devs)), f"[{rng}]"]

    if len(shape) in (1, 2):
        def row_of(block):
            return block[0] if len(shape) == 2 else (0, 1)

        row_spans = sorted({row_of(b) for b in blocks})
        col_spans = sorted({b[-1] for b in blocks})
        cells = {(row_of(b), b[-1]): label(b, devs) for b, devs in blocks.items()}
        width = max(len(line) for c in cells.values() for line in c) + 2
        sep = "+" + "+".join("-" * width for _ in col_spans) + "+"
        lines = [sep]
        for r in row_spans:
            for i in range(2):
                row = [cells.get((r, c), ["", ""])[i].center(width) for c in col_spans]
                lines.append("|" + "|".join(row) + "|")
            lines.append(sep)
        return "\n".join(header + lines)
    lines = [f"  {label(b, devs)[1]}: {label(b, devs)[0]}" for b, devs in sorted(blocks.items(), key=lambda kv: kv[1])]
    return "\n".join(header + lines)
