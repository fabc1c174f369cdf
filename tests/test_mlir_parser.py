"""meshrt.mlir: reading MLIR text (custom and generic form) and verifying shard attributes.

The oracle for the reader is mlir-opt itself: every file under tests/mlir/parser/
is committed together with the generic form ``mlir-opt --mlir-print-op-generic``
(LLVM 22) printed for it, and both must parse to the same IR.  When mlir-opt is
installed, the generic forms are regenerated and compared too.
"""

import doctest
import glob
import importlib
import os
import re
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshrt import AbstractMesh, Sharding
from meshrt.mlir import (
    DYNAMIC, UNIT, AffineDim, AffineMap, DenseElements, FunctionType, MLIRError, ScalarType, SymbolRef, TensorType,
    TypeAttr, parse, parse_file, verify,
)

HERE = os.path.dirname(__file__)
DATA = os.path.join(HERE, "mlir", "parser")
CUSTOM = sorted(f for f in glob.glob(os.path.join(DATA, "*.mlir")) if not f.endswith(".generic.mlir"))
MLIR_OPT_FLAGS = ["--allow-unregistered-dialect", "--mlir-print-op-generic", "--mlir-print-debuginfo"]


def _mlir_opt():
    """An mlir-opt of LLVM 22 or later (the shard dialect's name and syntax), or None."""
    for path in [shutil.which("mlir-opt"), *sorted(glob.glob("/usr/lib/llvm-*/bin/mlir-opt"), reverse=True)]:
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
        except OSError:
            continue
        m = re.search(r"LLVM version (\d+)", out)
        if m and int(m.group(1)) >= 22:
            return path
    return None


MLIR_OPT = _mlir_opt()


def _body(module, func):
    return module.functions()[func].regions[0].entry.operations


def _ops(module, name):
    return [op for op in module.walk() if op.name == name]


# -- custom form == generic form ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", CUSTOM, ids=os.path.basename)
def test_custom_form_parses_to_the_generic_form(path):
    custom = parse_file(path)
    generic = parse_file(path.replace(".mlir", ".generic.mlir"))
    assert custom.generic() == generic.generic()
    assert len(list(custom.walk())) > 5
    verify(custom)
    verify(generic)


@pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt >= 22 (Debian package mlir-22-tools) is not installed")
def test_committed_generic_forms_are_what_mlir_opt_prints():
    """Regenerate the generic forms; also read mlir-opt's own custom printing of each file."""
    for path in CUSTOM:
        name = os.path.basename(path)
        expected = parse_file(path).generic()
        with open(path.replace(".mlir", ".generic.mlir")) as f:
            assert parse(f.read(), name).generic() == expected
        for flags in (MLIR_OPT_FLAGS, MLIR_OPT_FLAGS[:1]):
            out = subprocess.run([MLIR_OPT, *flags, name], cwd=DATA, capture_output=True, text=True, timeout=60)
            assert out.returncode == 0, out.stderr
            assert parse(out.stdout, name).generic() == expected, flags


# -- the data model on the shard ops -------------------------------------------------------------------------


def test_shard_grids_as_attributes():
    m = parse_file(os.path.join(DATA, "shard.mlir"))
    shapes = {name: op.attributes["shape"] for name, op in m.grids().items()}
    assert shapes == {
        "grid0": (2, 2, 4), "grid1": (4, DYNAMIC), "grid2": (DYNAMIC, 4), "grid3": (DYNAMIC, DYNAMIC),
        "grid4": (3,), "grid5": (DYNAMIC,), "grid6": (8,),
    }
    for name, op in m.grids().items():
        assert op.attributes["sym_name"] == name and not op.operands and not op.results


def test_every_sharding_matches_meshrt_sharding_parse():
    """Each static shard.sharding: the parsed attributes build the Sharding that Sharding.parse reads from the line."""
    m = parse_file(os.path.join(DATA, "shard.mlir"))
    lines = m.source.splitlines()
    grids = {n: op.attributes["shape"] for n, op in m.grids().items()}
    checked = 0
    for op in _ops(m, "shard.sharding"):
        a = op.attributes
        shape = grids[a["grid"].name]
        assert a["operandSegmentSizes"] == (
            sum(v == DYNAMIC for v in a["static_sharded_dims_offsets"]),
            sum(v == DYNAMIC for v in a["static_halo_sizes"]),
        )
        assert all(v.type == ScalarType("i64") for v in op.operands)
        if DYNAMIC in shape or op.operands:
            continue
        mesh = AbstractMesh(shape)
        from_attrs = Sharding(mesh, [list(d) for d in a["split_axes"]],
                              halo_sizes=list(a["static_halo_sizes"]) or None,
                              sharded_dims_offsets=list(a["static_sharded_dims_offsets"]) or None)
        assert Sharding.parse(lines[op.location.line - 1], mesh) == from_attrs
        checked += 1
    assert checked >= 8


def test_shard_op_attributes_and_dynamic_operands():
    m = parse_file(os.path.join(DATA, "shard.mlir"))
    ops = _body(m, "collectives")
    by_result = {op.results[0].name: op for op in ops if op.results}
    ar = by_result["%0"]
    assert ar.name == "shard.all_reduce"
    assert ar.attributes == {"grid": SymbolRef("grid0"), "grid_axes": (1, 0), "reduction": "max"}
    assert ar.results[0].type == TensorType((3, 4), ScalarType("f64"))
    assert by_result["%1"].attributes == {"grid": SymbolRef("grid0"), "grid_axes": (), "reduction": "sum"}
    bc = by_result["%8"]
    assert bc.attributes["root"] == (1, DYNAMIC)
    assert [v.name for v in bc.operands] == ["%q", "%idx"]
    assert by_result["%13"].attributes == {"grid": SymbolRef("grid0"), "grid_axes": (0, 2)}  # recv, no source
    sh = by_result["%22"]
    assert sh.attributes == {"grid": SymbolRef("grid0"), "grid_axes": (0, 2), "shift_axis": 2, "offset": -2,
                             "rotate": UNIT}
    assert by_result["%16"].attributes["scatter_axis"] == 1
    halo = _body(m, "halo")
    uh = [op for op in halo if op.name == "shard.update_halo"]
    assert uh[1].attributes["split_axes"] == ((0,), (1,))
    assert uh[1].attributes["static_halo_sizes"] == (2, 2, DYNAMIC, 2)
    assert uh[1].operands[0] is uh[0].results[0]
    assert uh[3].attributes["static_halo_sizes"] == ()
    idx = _body(m, "index_ops")
    shp = idx[2]
    assert shp.name == "shard.shard_shape" and shp.attributes["dims"] == (8, DYNAMIC)
    assert shp.attributes["operandSegmentSizes"] == (1, 1, 1)
    assert [v.name for v in shp.results] == ["%shp#0", "%shp#1"]
    gs = idx[6]
    assert gs.name == "shard.grid_shape" and gs.attributes["axes"] == () and len(gs.results) == 3
    nb = [op for op in idx if op.name == "shard.neighbors_linear_indices"][1]
    assert nb.attributes["split_axes"] == (2, 0) and len(nb.operands) == 3
    ret = idx[-1]
    assert ret.name == "func.return" and ret.operands == [idx[4].results[0], idx[7].results[1]]


def test_scatter_dim_is_read_as_scatter_axis():
    """Newer LLVM spells reduce_scatter's/scatter's attribute scatter_dim; both read the same."""
    text = """shard.grid @g(shape = 4)
    func.func @f(%a: tensor<8xf32>) -> tensor<2xf32> {
      %0 = shard.reduce_scatter %a on @g grid_axes = [0] reduction = max scatter_dim = 0
        : tensor<8xf32> -> tensor<2xf32>
      %1 = "shard.scatter"(%a) <{grid = @g, grid_axes = array<i16: 0>, root = array<i64: 0>, scatter_dim = 0 : index}>
        : (tensor<8xf32>) -> tensor<2xf32>
      return %0 : tensor<2xf32>
    }"""
    ops = _body(verify(parse(text)), "f")
    assert ops[0].attributes["scatter_axis"] == 0 and "scatter_dim" not in ops[0].attributes
    assert ops[1].attributes["scatter_axis"] == 0 and "scatter_dim" not in ops[1].attributes


def test_partial_shardings_of_the_seed_syntax():
    """meshrt keeps seed 001's ``partial = kind [axes]`` (MLIR 22 dropped it) as partial_type/partial_axes."""
    text = "shard.grid @g(shape = 2x2)\nfunc.func @f() {\n  %s = shard.sharding @g split_axes = [[0]] " \
           "partial = max [1] : !shard.sharding\n  return\n}"
    op = _body(verify(parse(text)), "f")[0]
    assert op.attributes["partial_type"] == "max" and op.attributes["partial_axes"] == (1,)
    for bad, msg in (("max [0]", "both split and partial"), ("mean [1]", "unknown reduction kind 'mean'")):
        with pytest.raises(MLIRError, match=r"^<string>:3:8: .*" + msg):
            verify(parse(text.replace("max [1]", bad)))


def test_sharding_fields_come_from_the_one_sharding_text_parser(monkeypatch):
    from meshrt.sharding import text as _sharding_text

    calls = []
    real = _sharding_text.mlir_sharding_fields
    monkeypatch.setattr(_sharding_text, "mlir_sharding_fields", lambda t: calls.append(t) or real(t))
    parse("shard.grid @g(shape = 2)\nfunc.func @f() {\n %s = shard.sharding @g split_axes = [[0]] : !shard.sharding\n"
          " return\n}")
    assert calls == ["split_axes = [[0]] "]


# -- other attribute kinds ------------------------------------------------------------------------------------------


def test_dense_constants():
    m = parse_file(os.path.join(DATA, "arith_math.mlir"))
    consts = {op.results[0].name: op.attributes["value"] for op in _ops(m, "arith.constant")}
    assert consts["%k0"] == 1.5 and consts["%k1"] == -2 and consts["%k3"] is False
    assert np.isnan(consts["%k4"]) and consts["%k5"] == -np.inf
    assert consts["%k15"] == -1  # 255 : i8, as MLIR stores it
    d = consts["%k7"]
    assert isinstance(d, DenseElements) and not d.splat and d.array.dtype == np.float32
    np.testing.assert_array_equal(d.array, [1.0, 2.5, -3.0, 4.0])
    np.testing.assert_array_equal(consts["%k8"].array, np.array([[1, 2], [3, 4]], dtype=np.int64))
    assert consts["%k9"].splat and consts["%k9"].array.tolist() == [True, True]
    np.testing.assert_array_equal(consts["%k10"].array, np.array([1.0, 2.0], dtype=np.float32))  # hex bytes
    s = consts["%k11"]
    assert s.splat and s.array.shape == (2, 3) and s.array.dtype == np.int8 and (s.array == 3).all()
    assert not s.array.flags.writeable
    assert consts["%k14"].array.shape == () and consts["%k14"].array[()] == 0.5


def test_affine_maps_and_linalg_generic():
    m = parse_file(os.path.join(DATA, "linalg.mlir"))
    gen = [op for op in _ops(m, "linalg.generic")]
    maps = gen[0].attributes["indexing_maps"]
    assert maps == (AffineMap(2, 0, (AffineDim(0), AffineDim(1))), AffineMap(2, 0, (AffineDim(0),)))
    assert maps[0].is_identity() and maps[1].is_projected_permutation() and not maps[1].is_permutation()
    assert gen[0].attributes["iterator_types"] == ("parallel", "reduction")
    assert gen[0].attributes["operandSegmentSizes"] == (1, 1)
    tr = gen[1].attributes["indexing_maps"][0]
    assert tr.is_permutation() and tr.dim_positions() == (1, 0) and tr.evaluate((3, 5)) == (5, 3)
    assert gen[1].attributes["my.flag"] is UNIT and gen[1].attributes["doc"] == "transpose"
    block = gen[1].regions[0].entry
    assert [a.type for a in block.arguments] == [ScalarType("f32")] * 2
    assert block.operations[0].name == "linalg.index" and block.operations[0].attributes == {"dim": 0}

    misc = parse_file(os.path.join(DATA, "misc.mlir"))
    attrs = _ops(misc, "my.op")[0].attributes
    m0, _, m2, m3 = attrs["maps"]
    assert m0.dims == 2 and m0.symbols == 1
    assert m0.evaluate((9, 7), (1,)) == (10, 14, 2, 1, 5, 2)
    assert m0.evaluate((-9, 7), (0,)) == (-9, 14, -3, 1, -4, -16)  # floor/ceil division, mod of negatives
    assert m2.evaluate(()) == (0,) and m3.evaluate((1, 2, 3)) == (3, 8)
    with pytest.raises(MLIRError, match="takes 2 dims and 1 symbols"):
        m0.evaluate((1, 2))


def test_misc_attribute_values():
    misc = parse_file(os.path.join(DATA, "misc.mlir"))
    assert misc.attributes == {"sym_name": "named", "my.flag": UNIT, "my.val": 4}
    a = _ops(misc, "my.op")[0].attributes
    assert a["str"] == 'a "quoted"\n string'
    assert a["arr"] == (1, 2.5, "x", (True, False), SymbolRef("g"), SymbolRef("g", ("h",)))
    assert a["dict"] == {"k": 1, "u": UNIT}
    assert a["ty"] == TypeAttr(TensorType((4, None), ScalarType("i64")))
    assert a["fty"] == TypeAttr(FunctionType((ScalarType("f32"), ScalarType("i1")),
                                             (ScalarType("i32"), TensorType((2,), ScalarType("f64")))))
    assert a["i8a"] == (1, -2) and a["f32a"] == (1.5, 2.0) and a["b1a"] == (True, False) and a["ea"] == ()
    assert a["neg"] == -7 and a["flt"] == -2500.0 and a["bits"] == 1.0 and a["u"] is UNIT
    assert a["d4"].array.tolist() == [[1, 2], [3, 4]] and a["d6"].array.shape == (0,)
    assert a["d5"].type.element == ScalarType("bf16") and a["d5"].array.tolist() == [1.5] * 4
    assert str(a["other"]) == '#my.thing<"complex" [1, 2]>' and a["en"] == "value"
    f = misc.functions()["f"]
    args = f.regions[0].entry.arguments
    assert args[0].type == TensorType((2, None), ScalarType("f32"))  # through the !tt alias
    assert args[2].type.encoding == "enc"
    assert str(f.location) == f"{os.path.join(DATA, 'misc.mlir')}:10:3"


def test_predicates_and_flags_are_names():
    m = parse_file(os.path.join(DATA, "arith_math.generic.mlir"))
    cmps = {op.results[0].name: op.attributes for op in m.walk() if op.name in ("arith.cmpi", "arith.cmpf")}
    assert [c["predicate"] for c in cmps.values()] == ["sge", "une", "eq", "ogt"]
    fast = [op.attributes["fastmath"] for op in _ops(m, "arith.subf")]
    assert fast == ["fast"]
    assert [op.attributes["overflowFlags"] for op in _ops(m, "arith.subi")] == ["nsw,nuw"]


def test_regions_blocks_and_successors():
    m = parse_file(os.path.join(DATA, "scf_func.mlir"))
    ops = _body(m, "scf")
    fn = m.functions()["scf"]
    assert fn.attributes["my.attr"] == 3
    assert m.functions()["decl"].regions[0].blocks == []
    assert m.functions()["decl"].attributes["sym_visibility"] == "private"
    assert m.functions()["callee"].attributes["arg_attrs"] == ({"my.arg": UNIT}, {})
    call = ops[2]
    assert call.name == "func.call" and call.attributes["callee"] == SymbolRef("callee")
    assert ops[3].name == "func.call" and ops[3].operands[0] is call.results[0]
    sif = ops[4]
    assert sif.name == "scf.if" and len(sif.regions) == 2 and len(sif.results) == 2
    no_else = ops[5]
    assert no_else.regions[1].blocks == [] and no_else.regions[0].entry.operations[-1].name == "scf.yield"
    loop = ops[7]
    assert loop.name == "scf.for" and len(loop.operands) == 5
    assert [a.name for a in loop.regions[0].entry.arguments] == ["%i", "%acc", "%tt"]
    whl = next(op for op in ops if op.name == "scf.while")
    assert whl.regions[0].entry.operations[-1].name == "scf.condition"
    blocks = fn.regions[0].blocks
    assert [b.label for b in blocks] == [None, "^bb1", "^bb2", "^bb3"]
    br = blocks[0].operations[-1]
    assert br.name == "cf.cond_br" and br.successors == [blocks[1], blocks[2]]
    assert blocks[2].operations[0].successors == [blocks[3]]
    assert blocks[2].operations[0].operands[0] is whl.results[1]
    assert blocks[3].arguments[0].name == "%phi"


def test_forward_references_across_blocks():
    text = """func.func @f(%c: i1) -> i32 {
      "cf.br"()[^bb2] : () -> ()
    ^bb1:
      "cf.br"(%v)[^bb3] : (i32) -> ()
    ^bb2:
      %v = arith.constant 4 : i32
      "cf.br"()[^bb1] : () -> ()
    ^bb3(%r: i32):
      return %r : i32
    }"""
    blocks = parse(text).functions()["f"].regions[0].blocks
    use = blocks[1].operations[0].operands[0]
    assert use is blocks[2].operations[0].results[0] and use.type == ScalarType("i32")


_DTYPES = {"i1": np.bool_, "i8": np.int8, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}


@settings(derandomize=True, max_examples=80, deadline=None)
@given(st.sampled_from(sorted(_DTYPES)), st.lists(st.integers(0, 3), max_size=3), st.integers(0, 2**32 - 1),
       st.sampled_from(["nested", "hex", "splat"]))
def test_dense_literals_round_trip(elem, shape, seed, form):
    """A numpy array written as a dense literal (nested lists, hex bytes or a splat) reads back equal."""
    rng = np.random.default_rng(seed)
    dt = np.dtype(_DTYPES[elem])
    shape = tuple(shape)
    if dt.kind == "f":
        arr = (rng.standard_normal(shape) * 1e3).astype(dt)
    elif dt.kind == "b":
        arr = rng.integers(0, 2, shape).astype(dt)
    else:
        info = np.iinfo(dt)
        arr = rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    if form == "splat":
        arr = np.full(shape, arr.flat[0] if arr.size else dt.type(1), dtype=dt)
        body = arr.flat[0] if arr.size else dt.type(1)
        text = "true" if body is np.True_ else "false" if body is np.False_ else repr(body.item())
    elif form == "hex" and dt.kind != "b":
        text = '"0x' + arr.astype(dt.newbyteorder("<")).tobytes().hex().upper() + '"'
    else:
        def lit(x):
            return ("true" if x else "false") if dt.kind == "b" else repr(x)
        def nest(a):
            return "[" + ", ".join(nest(x) for x in a) + "]" if isinstance(a, list) else lit(a)
        text = nest(arr.tolist())
    ttype = "tensor<" + "".join(f"{d}x" for d in shape) + elem + ">"
    m = parse(f'"my.c"() {{v = dense<{text}> : {ttype}}} : () -> ()')
    d = m.operations[0].attributes["v"]
    assert d.type == TensorType(shape, ScalarType(elem))
    assert d.array.dtype == dt and d.array.shape == shape
    np.testing.assert_array_equal(d.array, arr)


@settings(derandomize=True, max_examples=60, deadline=None)
@given(st.recursive(
    st.one_of(st.sampled_from(["d0", "d1", "d2", "s0"]), st.integers(-5, 9).map(str)),
    lambda sub: st.tuples(sub, st.sampled_from(["+", "-", "*", "floordiv", "ceildiv", "mod"]), sub),
    max_leaves=6,
), st.lists(st.integers(-20, 20), min_size=4, max_size=4))
def test_affine_expressions_evaluate_as_python(expr, values):
    """Random affine expressions evaluate like Python integer arithmetic (floor division, non-negative mod)."""
    env = dict(zip(["d0", "d1", "d2", "s0"], values))

    def text(e):
        if isinstance(e, str):
            return e if not e.startswith("-") else f"({e})"
        a, op, b = e
        if op in ("floordiv", "ceildiv", "mod"):  # MLIR requires a positive constant right-hand side
            b = str(abs(int(b)) + 1) if isinstance(b, str) and b.lstrip("-").isdigit() else "3"
        return f"({text(a)} {op} {text(b)})"

    def value(e):
        if isinstance(e, str):
            return env[e] if e in env else int(e)
        a, op, b = e
        if op in ("floordiv", "ceildiv", "mod"):
            b = str(abs(int(b)) + 1) if isinstance(b, str) and b.lstrip("-").isdigit() else "3"
        x, y = value(a), value(b)
        return {"+": x + y, "-": x - y, "*": x * y, "floordiv": x // y if y else 0, "ceildiv": -(-x // y) if y else 0,
                "mod": x % y if y else 0}[op]

    m = parse(f"#m = affine_map<(d0, d1, d2)[s0] -> ({text(expr)})>\n\"my.c\"() {{m = #m}} : () -> ()")
    amap = m.operations[0].attributes["m"]
    assert amap.evaluate(tuple(values[:3]), (values[3],)) == (value(expr),)


# -- errors with locations -------------------------------------------------------------------------------------------

GRID = "shard.grid @grid0(shape = 2x4)\n"

# (LLVM invalid.mlir case mirrored, text, line:col, message fragment)
INVALID = [
    ("grid rank", "shard.grid @grid0(shape = [])\n", "1:1", "rank of a grid must be a positive"),
    ("grid shape -1", "shard.grid @grid0(shape = -1)\n", "1:18", "'shard.grid'"),
    ("grid_axis_duplicated_different_subarray", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = "
     "[[0], [0]] : !shard.sharding\n  return\n}", "3:8", "grid axis 0 duplicated"),
    ("grid_axis_duplicated_same_subarray", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = "
     "[[0, 0]] : !shard.sharding\n  return\n}", "3:8", "grid axis 0 duplicated"),
    ("grid_axis_negtive_in_split_part", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = [[-1]]"
     " : !shard.sharding\n  return\n}", "3:8", "grid axis -1 is negative"),
    ("split axis out of range", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = [[2]]"
     " : !shard.sharding\n  return\n}", "3:8", 'grid axis 2 is out of bounds; grid "grid0" has rank 2'),
    ("sharding_attribute_invalid_nested_symbol", GRID + "func.func @f() {\n  %s = shard.sharding @a::@b "
     "split_axes = [[0]] : !shard.sharding\n  return\n}", "3:8", "nested symbol reference"),
    ("sharding_attribute_invalid_halo", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = "
     "[[0], [1]] halo_sizes = [1, 2] : !shard.sharding\n  return\n}", "3:8", "expected 2 per sharded dim"),
    ("sharding_attribute_invalid_sizes", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = [[0]]"
     " halo_sizes = [1, 2] sharded_dims_offsets = [0, 2, 2] : !shard.sharding\n  return\n}", "3:8",
     "mutually exclusive"),
    ("sharding_dyn_grid_and_sizes", "shard.grid @grid_dyn(shape = ?x?)\nfunc.func @f() {\n  %s = shard.sharding "
     "@grid_dyn split_axes = [[0]] sharded_dims_offsets = [0, 2, 2] : !shard.sharding\n  return\n}", "3:8",
     "dynamic shape"),
    ("sharding_sizes_count", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = [[0], [1]] "
     "sharded_dims_offsets = [0, 2, 4, 0, 2, 4, 6] : !shard.sharding\n  return\n}", "3:8", "has 7 entries"),
    ("sharding_sizes_decreasing", "shard.grid @grid0(shape = 4)\nfunc.func @f() {\n  %s = shard.sharding @grid0 "
     "split_axes = [[0]] sharded_dims_offsets = [0, 2, 3, 2, 4] : !shard.sharding\n  return\n}", "3:8",
     "must be non-decreasing"),
    ("undefined grid in sharding", "func.func @f() {\n  %s = shard.sharding @nogrid split_axes = [[0]] : "
     "!shard.sharding\n  return\n}", "2:8", 'undefined grid symbol "nogrid"'),
    ("unknown sharding field", GRID + "func.func @f() {\n  %s = shard.sharding @grid0 split_axes = [[0]] "
     "halo = [1] : !shard.sharding\n  return\n}", "3:49", "unknown sharding attribute 'halo'"),
    ("update_halo halo length", GRID + "func.func @f(%a: tensor<4xf32>) {\n  %0 = shard.update_halo %a on @grid0 "
     "split_axes = [[0]] halo_sizes = [1] : tensor<4xf32>\n  return\n}", "3:8", "expected 2 per sharded dim"),
    ("grid_shape_grid_axis_out_of_bounds", GRID + "func.func @f() {\n  %0:2 = shard.grid_shape @grid0 axes = "
     "[0, 2] : index, index\n  return\n}", "3:10", "grid axis 2 is out of bounds"),
    ("grid_shape_duplicate_grid_axis", "shard.grid @grid0(shape = 1x2x3)\nfunc.func @f() {\n  %0:3 = "
     "shard.grid_shape @grid0 axes = [0, 2, 0] : index, index, index\n  return\n}", "3:10", "duplicated"),
    ("grid_shape_wrong_number_of_results", GRID + "func.func @f() {\n  %0:2 = shard.grid_shape @grid0 axes = [0] "
     ": index, index\n  return\n}", "3:10", "has 2 results; expected 1"),
    ("grid_shape_wrong_number_of_results_empty_grid_axes", "shard.grid @grid0(shape = 1x2x3)\nfunc.func @f() {\n"
     "  %0:2 = shard.grid_shape @grid0 : index, index\n  return\n}", "3:10", "has 2 results; expected 3"),
    ("grid_shape_invalid_grid_name", "func.func @f() {\n  %0 = shard.grid_shape @this_grid_symbol_does_not_exist :"
     " index\n  return\n}", "2:8", 'undefined grid symbol "this_grid_symbol_does_not_exist"'),
    ("process_multi_index_grid_axis_out_of_bounds", GRID + "func.func @f() {\n  %0:2 = shard.process_multi_index "
     "on @grid0 axes = [0, 2] : index, index\n  return\n}", "3:10", "grid axis 2 is out of bounds"),
    ("process_multi_index_wrong_number_of_results_empty_grid_axes", "shard.grid @grid0(shape = 1x2x3)\n"
     "func.func @f() {\n  %0:2 = shard.process_multi_index on @grid0 : index, index\n  return\n}", "3:10",
     "has 2 results; expected 3"),
    ("process_linear_index_invalid_grid_name", "func.func @f() {\n  %0 = shard.process_linear_index on @nope : "
     "index\n  return\n}", "2:8", 'undefined grid symbol "nope"'),
    ("all_reduce_invalid_grid_axis", GRID + "func.func @f(%a: tensor<4xf32>) {\n  %0 = shard.all_reduce %a on @grid0"
     " grid_axes = [2] reduction = sum\n    : tensor<4xf32> -> tensor<4xf64>\n  return\n}", "3:8", "out of bounds"),
    ("all_reduce_duplicate_grid_axis", GRID + "func.func @f(%a: tensor<4xf32>) {\n  %0 = shard.all_reduce %a on "
     "@grid0 grid_axes = [0, 1, 0] : tensor<4xf32> -> tensor<4xf64>\n  return\n}", "3:8", "grid axis 0 duplicated"),
    ("all_reduce_invalid_tensor_dimension_size", GRID + "func.func @f(%a: tensor<4xf32>) {\n  %0 = "
     "shard.all_reduce %a on @grid0 : tensor<4xf32> -> tensor<5xf64>\n  return\n}", "3:8",
     "result dimension 0 is 5; expected 4"),
    ("all_reduce unknown reduction", GRID + "func.func @f(%a: tensor<4xf32>) {\n  %0 = shard.all_reduce %a on "
     "@grid0 reduction = mean : tensor<4xf32> -> tensor<4xf32>\n  return\n}", "3:8", "unknown reduction kind 'mean'"),
    ("all_gather_invalid_gather_axis_dimension_size", "shard.grid @grid0(shape = 1x2)\nfunc.func @f(%a: "
     "tensor<3x4xf32>) {\n  %0 = shard.all_gather %a on @grid0 grid_axes = [1] gather_axis = 1\n    : "
     "tensor<3x4xf32> -> tensor<3x5xf32>\n  return\n}", "3:8", "result dimension 1 is 5; expected 8"),
    ("all_gather_invalid_negative_gather_axis", "shard.grid @grid0(shape = 1)\nfunc.func @f(%a: tensor<3xf32>) {\n"
     "  %0 = shard.all_gather %a on @grid0 grid_axes = [0] gather_axis = -1 : tensor<3xf32> -> tensor<3xf32>\n"
     "  return\n}", "3:8", "gather_axis: -1 is out of bounds [0, 1)"),
    ("all_slice_invalid_operand_static_dimension_size", "shard.grid @grid0(shape = 3)\nfunc.func @f(%a: "
     "tensor<4xf32>) {\n  %0 = shard.all_slice %a on @grid0 grid_axes = [0] slice_axis = 0 : tensor<4xf32> -> "
     "tensor<?xf32>\n  return\n}", "3:8", "not divisible by the device group size 3"),
    ("all_to_all_invalid_non_dynamic_result_dimension_induced_by_dynamic_device_group", "shard.grid @grid0(shape ="
     " ?x1)\nfunc.func @f(%a: tensor<3x6xi8>) {\n  %0 = shard.all_to_all %a on @grid0 grid_axes = [0] split_axis ="
     " 0 concat_axis = 1 : tensor<3x6xi8> -> tensor<3x6xi8>\n  return\n}", "3:8", "expected dynamic"),
    ("broadcast_root_dimension_out_of_bounds", "shard.grid @grid0(shape = 3x?)\nfunc.func @f(%a: tensor<2xi8>) {\n"
     "  %0 = shard.broadcast %a on @grid0 grid_axes = [0] root = [3] : (tensor<2xi8>) -> tensor<2xi8>\n  return\n}",
     "3:8", "coordinate 0 is 3, out of range [0, 2]"),
    ("broadcast_root_wrong_number_dimensions", "shard.grid @grid0(shape = 3x?)\nfunc.func @f(%a: tensor<2xi8>) {\n"
     "  %0 = shard.broadcast %a on @grid0 grid_axes = [0] root = [2, 2] : (tensor<2xi8>) -> tensor<2xi8>\n"
     "  return\n}", "3:8", "has 2 coordinates; expected 1"),
    ("broadcast_different_input_and_result_type", "shard.grid @grid0(shape = 3x?)\nfunc.func @f(%a: "
     "tensor<2xi8>) {\n  %0 = shard.broadcast %a on @grid0 grid_axes = [0] root = [2] : (tensor<2xi8>) -> "
     "tensor<2xi16>\n  return\n}", "3:8", "element type i16 differs"),
    ("send_destination_wrong_number_dimensions", "shard.grid @grid0(shape = 3x?)\nfunc.func @f(%a: tensor<2xi8>) {"
     "\n  %0 = shard.send %a on @grid0 grid_axes = [0] destination = [2, 2] : (tensor<2xi8>) -> tensor<2xi8>\n"
     "  return\n}", "3:8", "destination: in-group device [2, 2] has 2 coordinates"),
    ("shift_invalid_shift_axis", GRID + "func.func @f(%a: tensor<4xi8>) {\n  %0 = shard.shift %a on @grid0 "
     "grid_axes = [0] shift_axis = 1 offset = 2 : tensor<4xi8> -> tensor<4xi8>\n  return\n}", "3:8",
     "shift_axis: 1 must be one of the grid_axes [0]"),
    ("duplicate grid", GRID + GRID, "2:1", "grid symbol @grid0 is defined twice"),
    ("shard split beyond the tensor rank", GRID + "func.func @f(%a: tensor<4xf32>) {\n  %s = shard.sharding @grid0 "
     "split_axes = [[0], [1]] : !shard.sharding\n  %0 = shard.shard %a to %s : tensor<4xf32>\n  return\n}", "4:8",
     "splits tensor dim 1, but tensor<4xf32> has rank 1"),
    ("return type", "func.func @f(%a: tensor<4xf32>) -> tensor<4xf64> {\n  return %a : tensor<4xf32>\n}", "2:3",
     "returns (tensor<4xf32>) but @f declares (tensor<4xf64>)"),
]


@pytest.mark.parametrize("case,text,where,fragment", INVALID, ids=[c[0] for c in INVALID])
def test_invalid_shard_ir_is_rejected_with_its_location(case, text, where, fragment):
    with pytest.raises(MLIRError) as info:
        verify(parse(text, "bad.mlir"))
    msg = str(info.value)
    assert msg.startswith(f"bad.mlir:{where}: "), msg
    assert fragment in msg, msg


def test_verifier_errors_in_generic_form_carry_its_location():
    text = GRID + ('func.func @f(%a: tensor<4xf32>) {\n  %0 = "shard.all_reduce"(%a) <{grid = @grid0, grid_axes = '
                   'array<i16: 0, 0>, reduction = #shard<partial sum>}> : (tensor<4xf32>) -> tensor<4xf32>\n'
                   '  return\n}')
    with pytest.raises(MLIRError, match=r"^g\.mlir:3:8: 'shard.all_reduce' grid_axes: grid axis 0 duplicated"):
        verify(parse(text, "g.mlir"))


PARSE_ERRORS = [
    ("%0 = foo.bar %x : f32", "1:6", "unknown operation 'foo.bar' in custom form"),
    ("func.func @f() {\n  %0 = arith.addf %x, %x : f32\n  return\n}", "2:19", "use of undefined value '%x'"),
    ("func.func @f(%a: f32) {\n  %0 = arith.addi %a, %a : i32\n  return\n}", "2:19",
     "use of value '%a' expects type i32, but it has type f32"),
    ("func.func @f(%a: f32) {\n  %0:2 = arith.addf %a, %a : f32\n  return\n}", "2:3", "has 1 results, but 2 names"),
    ("func.func @f(%a: f32) {\n  %0 = arith.addf %a, %a : f32\n  %0 = arith.addf %a, %a : f32\n  return\n}", "3:3",
     "redefinition of value '%0'"),
    ("func.func @f() {\n  %0 = arith.constant dense<[1.0, 2.0]> : tensor<3xf32>\n  return\n}", "2:23",
     "does not have the shape of tensor<3xf32>"),
    ("func.func @f(%a: f32) {\n  %0 = arith.cmpf lt, %a, %a : f32\n  return\n}", "2:8", "unknown predicate 'lt'"),
    ("func.func @f() {\n  return\n", "3:1", "expected '}'"),
    ('"my.op"() : f32', "1:13", "expected a function type"),
    ("#m = affine_map<(d0) -> (d1)>", "1:26", "unknown identifier 'd1' in affine map"),
    ("func.func @f() {\n  %0 = arith.constant 1.0 : #undefined\n  return\n}", "2:29", "expected a type"),
    ("func.func @f(%a: tensor<4xf32>) {\n  %s = shard.sharding @g split_axes = [[0]] halo_sizes = [1, ?] : "
     "!shard.sharding\n  return\n}", "2:62", "dynamic ('?') sizes are not supported"),
    ('func.func @f() {\n  "cf.br"()[^bb9] : () -> ()\n}', "2:13", "undefined block '^bb9'"),
]


@pytest.mark.parametrize("text,where,fragment", PARSE_ERRORS, ids=[f"parse{i}" for i in range(len(PARSE_ERRORS))])
def test_parse_errors_carry_the_location(text, where, fragment):
    with pytest.raises(MLIRError) as info:
        parse(text, "p.mlir")
    msg = str(info.value)
    assert msg.startswith(f"p.mlir:{where}: "), msg
    assert fragment in msg, msg


def test_mlir_error_is_a_meshrt_value_error():
    from meshrt.errors import MLIRError as Base

    assert MLIRError is Base and issubclass(MLIRError, ValueError)


@pytest.mark.parametrize("name", ["meshrt.mlir", "meshrt.mlir.ir", "meshrt.mlir.parser", "meshrt.mlir.verify",
                                  "meshrt.mlir.printer", "meshrt.mlir.tosa", "meshrt.mlir.execute",
                                  "meshrt._sharding_text"])
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
