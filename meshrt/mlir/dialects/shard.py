"""The ``shard`` dialect: its custom (pretty) forms (grid, sharding, collectives, update_halo), one reader
per op registered with `_custom` (see `meshrt.mlir.syntax.reader`); the MLIR form of its attributes;
and `verify`, its checker.

The shard ops (operands in order; attribute -> Python type)
-----------------------------------------------------------
Every collective has ``grid: SymbolRef`` and ``grid_axes: tuple[int]``
(``()`` when omitted), one tensor operand and one result.  Reductions are
strings of meshrt's `ReductionKind` values (``"sum"``, ``"max"``, ...).

- ``shard.grid``: no operands/results; ``sym_name: str``,
  ``shape: tuple[int]`` (``DYNAMIC`` for ``?``).
- ``shard.sharding`` -> ``!shard.sharding``; operands: dynamic
  sharded_dims_offsets, then dynamic halo sizes (i64; split by
  ``operandSegmentSizes: (o, h)``);
  ``grid: SymbolRef``, ``split_axes: tuple[tuple[int]]``,
  ``static_halo_sizes: tuple[int]``, ``static_sharded_dims_offsets:
  tuple[int]`` (both always present, ``()`` when absent).
- ``shard.shard(src, sharding)`` -> tensor; ``annotate_for_users: UNIT`` when
  given.
- ``shard.get_sharding(src)`` -> ``!shard.sharding``; no attributes.
- ``shard.shard_shape(sharding, dynamic dims..., dynamic device...)`` ->
  index results; ``dims: tuple[int]``, ``device: tuple[int]``,
  ``operandSegmentSizes: (d, 1, v)`` (dims, sharding, device).  NB. the
  generic form puts the dims operands first: the operand order is that of
  ``operandSegmentSizes``, i.e. ``(dims..., sharding, device...)``.
- ``shard.process_multi_index`` -> index results; ``grid``, ``axes:
  tuple[int]``.
- ``shard.process_linear_index`` -> index; ``grid``.
- ``shard.grid_shape`` -> index results; ``grid``, ``axes: tuple[int]``.
- ``shard.neighbors_linear_indices(device...)`` -> (down, up) index;
  ``grid``, ``split_axes: tuple[int]``.
- ``shard.all_gather``: ``gather_axis: int``.
- ``shard.all_reduce``: ``reduction: str`` (default ``"sum"``, always present).
- ``shard.all_slice``: ``slice_axis: int``.
- ``shard.all_to_all``: ``split_axis: int``, ``concat_axis: int``.
- ``shard.broadcast(input, root_dynamic...)``: ``root: tuple[int]``.
- ``shard.gather(input, root_dynamic...)``: ``gather_axis: int``,
  ``root: tuple[int]``.
- ``shard.recv(input, source_dynamic...)``: ``source: tuple[int]`` (absent
  when not given).
- ``shard.reduce(input, root_dynamic...)``: ``reduction: str``,
  ``root: tuple[int]``.
- ``shard.reduce_scatter``: ``reduction: str``, ``scatter_axis: int``.
- ``shard.scatter(input, root_dynamic...)``: ``scatter_axis: int``,
  ``root: tuple[int]``.  (Newer LLVM spells it ``scatter_dim``; both read
  as ``scatter_axis``.)
- ``shard.send(input, destination_dynamic...)``: ``destination: tuple[int]``.
- ``shard.shift``: ``shift_axis: int``, ``offset: int``, ``rotate: UNIT``
  when given.
- ``shard.update_halo(destination, halo_sizes dynamic...)`` -> tensor;
  ``grid``, ``split_axes: tuple[tuple[int]]``, ``static_halo_sizes:
  tuple[int]``.

A ``shard.sharding`` with partial axes (seed 001's ``partial = sum [1]``,
kept by meshrt) has no MLIR form: LLVM 22 is the first release without the
partial clause (llvm/llvm-project#149805 removed it from ``mesh.sharding``
in July 2025, before the rename to ``shard``).  Printing one raises
`MLIRError` rather than print a sharding that LLVM would read as a
different, non-partial one.

`verify` checks a parsed module the way the ``shard`` dialect's verifiers do, before anything runs.
Every error is an `MLIRError` whose message starts with the op's ``file:line:col:``;
it depends on the text only, so every process of an SPMD run raises the same one.

>>> from meshrt.mlir import parse
>>> verify(parse('''shard.grid @g(shape = 2x4)
... func.func @f() {
...   %s = shard.sharding @g split_axes = [[0], [0]] : !shard.sharding
...   return
... }'''))
Traceback (most recent call last):
...
meshrt.errors.MLIRError: <string>:3:8: 'shard.sharding' split_axes: grid axis 0 duplicated in [[0], [0]]
"""

from __future__ import annotations

import math
import re

from ...sharding import text as _sharding_text
from ...errors import MeshError, MLIRError, ShardingError
from ...reduction import ReductionKind
from ...mesh import parse_mesh_text
from .tensor import _conversion, _mixed_list
from ..syntax.lexer import _IDENT
from ..syntax.printer import ATTRIBUTE_KINDS, _array, _ints, _typed_int
from ..syntax.reader import _I64, _INDEX, _custom, _normalizer, _op
from ..ir import DYNAMIC, UNIT, FunctionType, Module, OpaqueType, Operation, SymbolRef, TensorType, TypeAttr, memref_type, shaped

__all__ = ["verify"]

_SHARDING = OpaqueType("!shard.sharding")


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
        attrs[key] = p.array_attribute(key)


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
            attrs[key] = p.array_attribute(key)
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


# normalization and the MLIR form of the attributes -----------------------------------------------


@_normalizer("shard.reduce_scatter", "shard.scatter")
def _scatter_axis(p, op, pos):
    if "scatter_dim" in op.attributes:
        op.attributes["scatter_axis"] = op.attributes.pop("scatter_dim")  # the newer dialect's name for the same attribute


def _shard_reduction(v, op):
    return f"#shard<partial {v}>"


def _axis_array(v, op):
    return "#shard<axisarray[" + ", ".join("[" + _ints(a) + "]" for a in v) + "]>"


def _partial_sharding(v, op):
    kind, axes = op.attributes.get("partial_type"), list(op.attributes.get("partial_axes", ()))
    raise MLIRError(f"{op.location}: 'shard.sharding' with partial = {kind} {axes}: LLVM 22 dropped partial "
                    "annotations from the sharding op (llvm/llvm-project#149805, July 2025), so no MLIR text "
                    "says this sharding; reduce the partial axes first (an all_reduce) or keep meshrt's own "
                    "form (str(Sharding))")


ATTRIBUTE_KINDS["shard.*"] = {
    "grid_axes": _array("i16"), "axes": _array("i16"),
    "shape": _array("i64"), "static_halo_sizes": _array("i64"), "static_sharded_dims_offsets": _array("i64"),
    "root": _array("i64"), "source": _array("i64"), "destination": _array("i64"),
    "dims": _array("i64"), "device": _array("i64"), "operandSegmentSizes": _array("i32"),
    "gather_axis": _typed_int("index"), "slice_axis": _typed_int("index"), "split_axis": _typed_int("index"),
    "concat_axis": _typed_int("index"), "scatter_axis": _typed_int("index"),
    "shift_axis": _typed_int("index"), "offset": _typed_int("i64"),
    "reduction": _shard_reduction, "split_axes": _axis_array,
    "partial_type": _partial_sharding, "partial_axes": _partial_sharding,
}
ATTRIBUTE_KINDS["shard.neighbors_linear_indices"] = {"split_axes": _array("i16")}


# the checker --------------------------------------------------------------------------------------

_REDUCTIONS = tuple(k.value for k in ReductionKind if k.value != "generic")

# collective -> (tensor-axis attributes, in-group device attribute)
_COLLECTIVE_AXES = {
    "shard.all_gather": (("gather_axis",), None),
    "shard.all_reduce": ((), None),
    "shard.all_slice": (("slice_axis",), None),
    "shard.all_to_all": (("split_axis", "concat_axis"), None),
    "shard.broadcast": ((), "root"),
    "shard.gather": (("gather_axis",), "root"),
    "shard.recv": ((), "source"),
    "shard.reduce": ((), "root"),
    "shard.reduce_scatter": (("scatter_axis",), None),
    "shard.scatter": (("scatter_axis",), "root"),
    "shard.send": ((), "destination"),
    "shard.shift": ((), None),
}


def verify(module: Module) -> Module:
    """Raise `MLIRError` for the first invalid op (in text order); return the module when it is valid."""
    for key in module.attributes:  # builtin.module's own rule (a bare `dlti = ...` is newer than LLVM 22)
        if "." not in key and key not in ("sym_name", "sym_visibility"):
            raise MLIRError(f"{module.location or module.filename}: 'builtin.module' can only contain attributes "
                            f"with dialect-prefixed names, found: '{key}' (LLVM 22 reads `mpi.dlti = ...`)")
    grids = {}
    for op in module.operations:
        if op.name in ("shard.grid", "func.func") and not isinstance(op.attributes.get("sym_name"), str):
            _fail(op, f"sym_name: expected a symbol name (a string), got {op.attributes.get('sym_name')!r}")
        if op.name == "func.func" and len(op.regions) != 1:
            _fail(op, f"expects one region (the body, empty for a declaration), found {len(op.regions)}")
        if op.name == "shard.grid":
            name = op.attributes.get("sym_name")
            if name in grids:
                _fail(op, f"grid symbol @{name} is defined twice")
            _verify_grid(op)
            grids[name] = tuple(op.attributes["shape"])
    defining = {}
    for op in module.walk():
        for v in op.results:
            defining[v] = op
        if op.name == "func.func":
            _verify_returns(op)
        check = _CHECKS.get(op.name)
        if check is not None:
            check(op, grids)
        elif op.name in _COLLECTIVE_AXES:
            _verify_collective(op, grids)
        elif op.name == "shard.shard":
            _verify_shard(op, defining)
    return module


def _fail(op: Operation, msg: str):
    raise MLIRError(f"{op.location}: '{op.name}' {msg}")


def _fmt(seq):
    return "[" + ", ".join(_fmt(x) if isinstance(x, (tuple, list)) else str(x) for x in seq) + "]"


def _int_tuple(op, key, value, nested=False):
    if not isinstance(value, tuple) or not all(
        (isinstance(x, tuple) and all(isinstance(y, int) for y in x)) if nested else
        (isinstance(x, int) and not isinstance(x, bool)) for x in value
    ):
        _fail(op, f"{key}: expected {'a list of lists' if nested else 'a list'} of integers, got {value!r}")
    return value


def _grid_of(op, grids):
    ref = op.attributes.get("grid")
    if not isinstance(ref, SymbolRef):
        _fail(op, f"grid: expected a grid symbol (@name), got {ref!r}")
    if ref.nested:
        _fail(op, f"grid: {ref} is a nested symbol reference; expected a flat @name")
    if ref.name not in grids:
        known = ", ".join(f"@{g}" for g in grids) or "none"
        _fail(op, f'grid: undefined grid symbol "{ref.name}" (grids defined: {known})')
    return ref.name, grids[ref.name]


def _verify_grid(op):
    shape = _int_tuple(op, "shape", op.attributes.get("shape"))
    if not shape:
        _fail(op, "shape: the rank of a grid must be a positive integer, got shape []")
    for i, s in enumerate(shape):
        if s != DYNAMIC and s <= 0:
            _fail(op, f"shape: axis {i} has size {s}; sizes must be positive or '?'")


def _check_axes(op, key, axes, name, shape, allow_dup=False):
    seen = set()
    for a in axes:
        if a < 0:
            _fail(op, f"{key}: grid axis {a} is negative; grid axes are non-negative")
        if a >= len(shape):
            _fail(op, f'{key}: grid axis {a} is out of bounds; grid "{name}" has rank {len(shape)}')
        if a in seen and not allow_dup:
            _fail(op, f"{key}: grid axis {a} duplicated in {_fmt(axes)}")
        seen.add(a)


def _group_size(shape, axes):
    sizes = [shape[a] for a in axes]
    return DYNAMIC if DYNAMIC in sizes else math.prod(sizes)


def _check_split_axes(op, split, name, shape):
    split = _int_tuple(op, "split_axes", split, nested=True)
    flat = [a for dim in split for a in dim]
    seen = set()
    for a in flat:
        if a in seen:
            _fail(op, f"split_axes: grid axis {a} duplicated in {_fmt(split)}")
        seen.add(a)
    if DYNAMIC in shape:
        # upstream checks split axes against no grid rank; on a grid of dynamic shape meshrt
        # follows it (sharding-propagation.mlir splits over axes [0, 1, 2] of a `?` grid) and
        # the run reports an axis the resolved grid lacks
        _check_axes(op, "split_axes", flat, name, (DYNAMIC,) * (max(flat, default=-1) + 1))
    else:
        _check_axes(op, "split_axes", flat, name, shape)
    return split


def _check_halo(op, split, halo):
    halo = _int_tuple(op, "halo_sizes", halo)
    sharded = sum(1 for dim in split if dim)
    if halo and len(halo) != 2 * sharded:
        _fail(op, f"halo_sizes: {_fmt(_show(halo))} has {len(halo)} entries; expected 2 per sharded dim of "
                  f"split_axes = {_fmt(split)}, i.e. {2 * sharded}")
    for h in halo:
        if h != DYNAMIC and h < 0:
            _fail(op, f"halo_sizes: {_fmt(_show(halo))} has a negative size {h}")


def _show(values):
    return ["?" if v == DYNAMIC else v for v in values]


def _verify_sharding(op, grids):
    a = op.attributes
    name, shape = _grid_of(op, grids)
    split = _check_split_axes(op, a.get("split_axes"), name, shape)
    halo = a.get("static_halo_sizes", ())
    offsets = _int_tuple(op, "sharded_dims_offsets", a.get("static_sharded_dims_offsets", ()))
    if halo and offsets:
        _fail(op, "halo_sizes and sharded_dims_offsets are mutually exclusive; give one of them")
    _check_halo(op, split, halo)
    if offsets:
        if DYNAMIC in shape:
            _fail(op, f'sharded_dims_offsets: not allowed on grid "{name}" of dynamic shape {_fmt(_show(shape))}')
        pos = 0
        for d, dim in enumerate(split):
            if not dim:
                continue
            n = _group_size(shape, dim) + 1
            part = offsets[pos:pos + n]
            if len(part) == n:
                static = [x for x in part if x != DYNAMIC]
                if any(x < y for x, y in zip(static[1:], static)):
                    _fail(op, f"sharded_dims_offsets: {_fmt(_show(part))} for tensor dim {d} must be non-decreasing")
            pos += n
        if pos != len(offsets):
            _fail(op, f"sharded_dims_offsets: {_fmt(_show(offsets))} has {len(offsets)} entries; split_axes = "
                      f"{_fmt(split)} on grid shape {_fmt(shape)} needs {pos} (shards + 1 per sharded dim)")
    if "partial_type" in a:
        if a["partial_type"] not in _REDUCTIONS:
            _fail(op, f"partial_type: unknown reduction kind {a['partial_type']!r}; expected one of {_REDUCTIONS}")
        _check_axes(op, "partial_axes", _int_tuple(op, "partial_axes", a.get("partial_axes", ())), name, shape)
        if set(a.get("partial_axes", ())) & {x for dim in split for x in dim}:
            _fail(op, "partial_axes: an axis cannot be both split and partial")


def _verify_shard(op, defining):
    if len(op.operands) != 2 or len(op.results) != 1:
        _fail(op, "expects a tensor and a sharding operand and one result")
    src, res = op.operands[0].type, op.results[0].type
    if src != res:
        _fail(op, f"result type {res} differs from the operand type {src}")
    spec = defining.get(op.operands[1])
    if isinstance(src, TensorType) and spec is not None and spec.name == "shard.sharding":
        split = spec.attributes.get("split_axes", ())
        used = max((d + 1 for d, axes in enumerate(split) if axes), default=0)
        if used > src.rank:
            _fail(op, f"sharding split_axes = {_fmt(split)} (at {spec.location}) splits tensor dim {used - 1}, "
                      f"but {src} has rank {src.rank}")


def _as_tensor(t):
    """A memref type as the tensor type of its shape and element (the shape rules are the same)."""
    m = shaped(t)
    return m if isinstance(m, TensorType) else TensorType(m.shape, m.element)


def _verify_update_halo(op, grids):
    name, shape = _grid_of(op, grids)
    if not op.operands or len(op.results) != 1:
        _fail(op, "needs a destination operand and one result")
    t = op.operands[0].type
    st = shaped(t)
    if st is None or st.rank == 0:
        _fail(op, f"destination must be a non-0-ranked tensor or memref, found {t}")
    if op.results[0].type != t:
        _fail(op, f"result type {op.results[0].type} differs from the destination's {t}")
    split = _check_split_axes(op, op.attributes.get("split_axes"), name, shape)
    _check_halo(op, split, op.attributes.get("static_halo_sizes", ()))


def _verify_axes_results(op, grids):
    name, shape = _grid_of(op, grids)
    axes = _int_tuple(op, "axes", op.attributes.get("axes", ()))
    _check_axes(op, "axes", axes, name, shape)
    want = len(axes) if axes else len(shape)
    if len(op.results) != want:
        _fail(op, f"has {len(op.results)} results; expected {want} (one per axis of {_fmt(axes) if axes else name})")


def _verify_linear_index(op, grids):
    _grid_of(op, grids)


def _verify_neighbors(op, grids):
    name, shape = _grid_of(op, grids)
    axes = _int_tuple(op, "split_axes", op.attributes.get("split_axes", ()))
    _check_axes(op, "split_axes", axes, name, shape)
    if len(op.operands) != len(shape):
        _fail(op, f"device: {len(op.operands)} coordinates given; grid \"{name}\" has rank {len(shape)}")


def _verify_collective(op, grids):
    a = op.attributes
    name, shape = _grid_of(op, grids)
    axes = _int_tuple(op, "grid_axes", a.get("grid_axes", ()))
    _check_axes(op, "grid_axes", axes, name, shape)
    tensor_axes, device_key = _COLLECTIVE_AXES[op.name]
    if "reduction" in a and a["reduction"] not in _REDUCTIONS:
        _fail(op, f"reduction: unknown reduction kind {a['reduction']!r}; expected one of {', '.join(_REDUCTIONS)}")
    if not op.operands or not op.results:
        _fail(op, "needs an input operand and a result")
    src, dst = op.operands[0].type, op.results[0].type
    if op.name in _ON_MEMREFS:  # AnyTypeOf<[AnyMemRef, AnyRankedTensor]> on either side, as in LLVM 22
        if shaped(src) is None or shaped(dst) is None:
            _fail(op, f"expects a ranked tensor or memref operand and result, found {src} -> {dst}")
        src, dst = _as_tensor(src), _as_tensor(dst)
    elif not (isinstance(src, TensorType) and isinstance(dst, TensorType)):
        more = " (LLVM 22 takes memrefs only in shard.all_reduce and shard.update_halo)" if (
            memref_type(src) is not None or memref_type(dst) is not None) else ""
        _fail(op, f"expects a ranked tensor operand and result, found {src} -> {dst}{more}")
    rank = src.rank if isinstance(src, TensorType) else None
    for key in tensor_axes:
        if key not in a:
            _fail(op, f"{key}: missing")
        v = a[key]
        if not isinstance(v, int) or isinstance(v, bool):
            _fail(op, f"{key}: expected an integer, got {v!r}")
        if rank is not None and not 0 <= v < rank:
            _fail(op, f"{key}: {v} is out of bounds [0, {rank}) for operand type {src}")
    if device_key is not None and (device_key in a or device_key != "source"):
        dev = _int_tuple(op, device_key, a.get(device_key, ()))
        if len(dev) != len(axes):
            _fail(op, f'{device_key}: in-group device {_fmt(_show(dev))} has {len(dev)} coordinates; '
                      f"expected {len(axes)}, one per grid axis of {_fmt(axes)}")
        for i, (c, ax) in enumerate(zip(dev, axes)):
            if c == DYNAMIC:
                continue
            if c < 0 or (shape[ax] != DYNAMIC and c >= shape[ax]):
                _fail(op, f'{device_key}: coordinate {i} is {c}, out of range [0, {shape[ax] - 1}] of grid axis {ax}')
        dynamic = sum(1 for c in dev if c == DYNAMIC)
        if len(op.operands) != 1 + dynamic:
            _fail(op, f"{device_key}: {dynamic} dynamic coordinates but {len(op.operands) - 1} index operands")
    if op.name == "shard.shift":
        if not isinstance(a.get("offset", 0), int) or isinstance(a.get("offset"), bool):
            _fail(op, f"offset: expected an integer, got {a.get('offset')!r}")
        if a.get("shift_axis") not in axes:
            _fail(op, f"shift_axis: {a.get('shift_axis')} must be one of the grid_axes {_fmt(axes)}")
    if isinstance(src, TensorType) and isinstance(dst, TensorType):
        _verify_collective_shapes(op, src, dst, _group_size(shape, axes))


# ops with MLIR's SameOperandsAndResultShape: a '?' on either side is compatible
_ON_MEMREFS = frozenset(["shard.all_reduce"])  # (and shard.update_halo, checked on its own)
_SAME_SHAPE = frozenset(["shard.all_reduce", "shard.broadcast", "shard.recv", "shard.reduce", "shard.send",
                         "shard.shift"])


def collective_result_dims(op, src, group, uneven=False) -> list:
    """The result dims the dialect's shape rule gives a collective: per dim an int, or None where
    it depends on what the types do not say (a '?' operand dim, a '?' group size, an uneven
    all_to_all split).  Raises `MLIRError` for a static dim the group does not divide.

    ``group``: the device group's size (``DYNAMIC`` when the grid leaves it open).  The verifier
    calls it with the grid's static shape, the executor with the size it runs on and ``uneven``:
    there a dim the group does not divide is split by MLIR's uneven rule (None: sizes differ).
    """
    a = op.attributes
    expected = list(src.shape)

    def scale(axis, mul, uneven_ok=False):
        d = expected[axis]
        if d is None or group == DYNAMIC or ((uneven_ok or uneven) and not mul and d % group):
            expected[axis] = None  # all_to_all of an uneven split: sizes differ per device
        elif mul:
            expected[axis] = d * group
        else:
            if d % group:
                _fail(op, f"operand dimension {axis} of size {d} is not divisible by the device group size {group}")
            expected[axis] = d // group

    if op.name in ("shard.all_gather", "shard.gather"):
        scale(a["gather_axis"], True)
    elif op.name in ("shard.all_slice", "shard.reduce_scatter", "shard.scatter"):
        scale(a["slice_axis" if op.name == "shard.all_slice" else "scatter_axis"], False)
    elif op.name == "shard.all_to_all":
        split, concat = a["split_axis"], a["concat_axis"]
        if split != concat:
            scale(split, False, uneven_ok=True)
            scale(concat, True)
    return expected


def _verify_collective_shapes(op, src, dst, group):
    same_element = op.name not in ("shard.all_reduce", "shard.reduce", "shard.reduce_scatter")
    if same_element and src.element != dst.element:
        _fail(op, f"result element type {dst.element} differs from the input's {src.element}")
    if src.rank != dst.rank:
        _fail(op, f"result type {dst} has rank {dst.rank}; the input {src} has rank {src.rank}")
    expected = collective_result_dims(op, src, group)
    for i, (e, r) in enumerate(zip(expected, dst.shape)):
        # a '?' result dim is compatible with any size (MLIR's verifyCompatibleShape); the
        # executor checks the size it gets against the rule (`collective_result_dims`)
        if e != r and r is not None and not (e is None and op.name in _SAME_SHAPE):
            want = "dynamic" if e is None else e
            _fail(op, f"result dimension {i} is {'?' if r is None else r}; expected {want} for input {src} "
                      f"(device group size {'?' if group == DYNAMIC else group})")


def _verify_returns(fn):
    ftype = fn.attributes.get("function_type")
    if not (isinstance(ftype, TypeAttr) and isinstance(ftype.type, FunctionType)):
        _fail(fn, f"function_type: expected a function type, got {ftype!r}")
    want = list(ftype.type.results)
    for region in fn.regions:
        for block in region.blocks:
            for op in block.operations:
                if op.name == "func.return":
                    got = [v.type for v in op.operands]
                    if got != want:
                        _fail(op, f"returns ({', '.join(map(str, got))}) but @{fn.attributes.get('sym_name')} "
                                  f"declares ({', '.join(map(str, want))})")


_CHECKS = {
    "shard.sharding": _verify_sharding,
    "shard.update_halo": _verify_update_halo,
    "shard.grid_shape": _verify_axes_results,
    "shard.process_multi_index": _verify_axes_results,
    "shard.process_linear_index": _verify_linear_index,
    "shard.neighbors_linear_indices": _verify_neighbors,
}
