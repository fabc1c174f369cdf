"""meshrt against mlir-opt 22 on the constructs of LLVM's shard tests, with programs of our own.

tests/mlir/conformance/ holds small programs, one construct each: what mlir-opt
accepts, meshrt accepts; the executor runs each tosa/affine op and the result
equals numpy written here independently; the places where meshrt is stricter
are exactly the documented ones (docs/mlir.md); ``Module.generic()`` is text
mlir-opt reads back to the same IR.  Tests that need mlir-opt skip without
it.  ``tools/shard_conformance.py`` runs the same comparison on LLVM's own
files (kept out of this repository); its file splitting is tested here.
"""

import glob
import importlib.util
import os
import subprocess

import numpy as np
import pytest

from meshrt import AbstractMesh, Sharding
from meshrt.mlir import MLIRError, parse, parse_file, verify
from meshrt.mlir.interpreters.spmd import check_function, run_function
from meshrt.mlir.syntax.printer import print_generic

HERE = os.path.dirname(__file__)
DATA = os.path.join(HERE, "mlir", "conformance")
TOSA = os.path.join(DATA, "tosa.mlir")
CONSTRUCTS = os.path.join(DATA, "constructs.mlir")
ALL_MLIR = sorted(glob.glob(os.path.join(HERE, "mlir", "*", "*.mlir")))


def _mlir_opt():
    """An mlir-opt of LLVM 22 or later, or None."""
    import re
    import shutil

    for path in [shutil.which("mlir-opt"), *sorted(glob.glob("/usr/lib/llvm-*/bin/mlir-opt"), reverse=True)]:
        if path:
            out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
            m = re.search(r"LLVM version (\d+)", out)
            if m and int(m.group(1)) >= 22:
                return path
    return None


MLIR_OPT = _mlir_opt()
needs_mlir_opt = pytest.mark.skipif(MLIR_OPT is None, reason="mlir-opt >= 22 (mlir-22-tools) is not installed")


def _mlir_opt_accepts(text, *flags):
    p = subprocess.run([MLIR_OPT, *flags, "-"], input=text, capture_output=True, text=True, timeout=60)
    return p.returncode == 0, p.stdout, p.stderr


# -- tosa, op by op against numpy ----------------------------------------------------------------------

rng = np.random.default_rng(7)
F = rng.standard_normal((2, 3)).astype(np.float32)
G = rng.standard_normal((1, 3)).astype(np.float32)
I8 = np.array([-128, -3, 0, 127], np.int8)
J8 = np.array([-1, 100, 5, 1], np.int8)
I32 = rng.integers(-1000, 1000, (2, 3)).astype(np.int32)
J32 = rng.integers(-1000, 1000, (2, 3)).astype(np.int32)
A3 = rng.standard_normal((2, 3, 4)).astype(np.float32)
B3 = rng.standard_normal((2, 4, 5)).astype(np.float32)
QA = rng.integers(-128, 127, (1, 2, 3)).astype(np.int8)
QB = rng.integers(-128, 127, (1, 3, 2)).astype(np.int8)
ZIN, ZOUT = np.array([0.5], np.float32), np.array([-2.0], np.float32)
P32 = np.array([3, -7, 100000, -5], np.int32)
Q32 = np.array([5, 5, 100000, 1], np.int32)

# function -> (arguments, numpy result)
TOSA_CASES = {
    "abs": ([I8.reshape(2, 2).repeat(2, 1)[:, :3]], lambda a: np.where(a == -128, a, np.abs(a))),
    "add": ([F, G], lambda a, b: a + b),
    "add_wraps": ([I8, J8], lambda a, b: ((a.astype(int) + b + 128) % 256 - 128).astype(np.int8)),
    "sub": ([I32, J32], lambda a, b: a - b),
    "mul": ([F, F[:, :1]], lambda a, b: a * b),
    "mul_shift": ([P32, Q32], lambda a, b: ((a.astype(np.int64) * b + 2) >> 2).astype(np.int32)),
    "negate": ([F, ZIN, ZOUT], lambda a, zi, zo: -(a - 0.5) - 2.0),
    "negate_i8": ([I8], lambda a: np.clip(-a.astype(int), -128, 127).astype(np.int8)),
    "exp": ([F], np.exp),
    "log": ([np.abs(F) + 0.1], np.log),
    "tanh": ([F.astype(np.float64)], np.tanh),
    "sigmoid": ([F], lambda a: 1 / (1 + np.exp(-a))),
    "rsqrt": ([np.abs(F) + 0.1], lambda a: 1 / np.sqrt(a)),
    "clamp": ([F], lambda a: np.minimum(np.maximum(a, -0.5), 0.5)),
    "clamp_i8": ([I8], lambda a: np.minimum(np.maximum(a, -3), 7).astype(np.int8)),
    "maximum": ([F, F[::-1]], np.maximum),
    "minimum": ([I32, J32[:1]], np.minimum),
    "reduce_sum": ([F], lambda a: a.sum(axis=1, keepdims=True)),
    "reduce_max": ([I32], lambda a: a.max(axis=0, keepdims=True)),
    "reshape": ([F], lambda a: a.reshape(3, 2)),
    "transpose": ([A3], lambda a: np.moveaxis(a, 2, 0)),
    "const": ([], lambda: np.array([[1, 2], [3, 4]], np.float32)),
    "matmul": ([A3, B3], lambda a, b: np.einsum("bik,bkj->bij", a, b)),
    "matmul_i8": ([QA, QB], lambda a, b: np.einsum("bik,bkj->bij", a.astype(np.int32) - 1, b.astype(np.int32) + 2)),
}


@pytest.mark.parametrize("name", sorted(TOSA_CASES))
def test_tosa_op_equals_numpy(name):
    m = parse_file(TOSA)
    args, oracle = TOSA_CASES[name]
    [got] = run_function(m, name, args)
    want = oracle(*args)
    result_type = m.functions()[name].attributes["function_type"].type.results[0]
    assert got.dtype == result_type.element.numpy_dtype and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_every_tosa_op_of_the_subset_has_a_case():
    from meshrt.mlir.interpreters.tosa import TOSA_OPS

    used = {op.name for op in parse_file(TOSA).walk() if op.name.startswith("tosa.")}
    assert used == set(TOSA_OPS)


def test_tosa_nan_modes_and_float_only_ops():
    m = parse("""func.func @f(%a: tensor<3xf32>, %b: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %0 = tosa.maximum %a, %b {nan_mode = "IGNORE"} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %1 = tosa.maximum %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      %2 = tosa.clamp %a {min_val = 0.0 : f32, max_val = 1.0 : f32, nan_mode = "IGNORE"} : (tensor<3xf32>) -> tensor<3xf32>
      return %0, %1, %2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    }
    func.func @g(%a: tensor<3xi32>) -> tensor<3xi32> {
      %0 = tosa.exp %a : (tensor<3xi32>) -> tensor<3xi32>
      return %0 : tensor<3xi32>
    }""", "nan.mlir")
    a = np.array([np.nan, 2, 0.5], np.float32)
    b = np.array([1, np.nan, 3], np.float32)
    ignore, propagate, clamp = run_function(m, "f", [a, b])
    np.testing.assert_array_equal(ignore, [1, 2, 3])
    assert np.isnan(propagate[:2]).all() and propagate[2] == 3
    np.testing.assert_array_equal(clamp, [0, 1, 0.5])
    with pytest.raises(MLIRError, match=r"^nan.mlir:8:12: 'tosa.exp' on element type i32: tosa.exp is defined "):
        run_function(m, "g", [np.zeros(3, np.int32)])


# -- the constructs mlir-opt accepts ------------------------------------------------------------------------

def test_constructs_are_accepted_and_run():
    m = verify(parse_file(CONSTRUCTS))
    a, b = np.arange(18, dtype=np.int8).reshape(3, 6), np.ones(4, np.float32)
    for name in ("dynamic_result_dims", "compatible_shapes", "hash_zero", "affine", "private_grid"):
        check_function(m, name)
    # on one process the grids of '?' take one device; @g3 needs three, so only the index ops run
    y, i = run_function(m, "hash_zero", [b])
    np.testing.assert_array_equal(y, b)
    assert int(i) == 0
    assert [int(v) for v in run_function(m, "affine", [np.int64(7), np.int64(-5), np.int64(9)])] == [
        7 * -5 + 9, min(7 // 2, -5 % 3, 7), max(-(-7 // 4), 9 - 2), 7 * 3 - 9]
    with pytest.raises(MLIRError, match=r"constructs.mlir:48:11: unsupported op 'vector.constant_mask'"):
        check_function(m, "vector_ops")
    ops = [op for op in m.functions()["vector_ops"].walk() if op.name.startswith("vector.")]
    assert [op.name for op in ops] == ["vector.constant_mask", "vector.broadcast", "vector.mask",
                                       "vector.multi_reduction", "vector.yield"]
    assert ops[0].attributes["mask_dim_sizes"] == (8,) and ops[3].attributes == {"kind": "add",
                                                                                  "reduction_dims": (0,)}
    assert ops[4].operands == ops[3].results and ops[2].results[0].type.name == "f32"


def test_dynamic_grid_split_axes_beyond_the_grid_fail_when_run():
    m = parse_file(CONSTRUCTS)
    with pytest.raises(MLIRError, match=r"constructs.mlir:24:8: 'shard.sharding': split_axes: .* out of range "
                                        r"for a mesh of rank 1"):
        run_function(m, "dynamic_grid_split_axes", [np.zeros((2, 4, 8), np.float32)])


@needs_mlir_opt
@pytest.mark.parametrize("path", [CONSTRUCTS, TOSA], ids=os.path.basename)
def test_mlir_opt_accepts_our_programs(path):
    with open(path) as f:
        ok, _, err = _mlir_opt_accepts(f.read())
    assert ok, err


# -- where meshrt is stricter: exactly the list of docs/mlir.md ------------------------------------------------

G2 = "shard.grid @g(shape = 2)\n"
SHARDED = "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {{\n  %s = shard.sharding @g {}\n" \
          "  %0 = shard.shard %a to %s : tensor<4xf32>\n  return %0 : tensor<4xf32>\n}}\n"
STRICTER = [
    ("split axis beyond a static grid", G2 + SHARDED.format("split_axes = [[1]] : !shard.sharding"),
     "3:8", "grid axis 1 is out of bounds"),
    ("sharding beyond the tensor rank", "shard.grid @g(shape = 2x2)\n"
     + SHARDED.format("split_axes = [[0], [1]] : !shard.sharding"), "4:8", "splits tensor dim 1"),
    ("negative halo size", G2 + SHARDED.format("split_axes = [[0]] halo_sizes = [-1, 2] : !shard.sharding"),
     "3:8", "negative size -1"),
    ("grid axis of size 0", "shard.grid @g(shape = 2x0)\n", "1:14", "sizes must be positive"),
    ("reduction = generic", G2 + "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = shard.all_reduce %a "
     "on @g grid_axes = [0] reduction = generic : tensor<4xf32> -> tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n",
     "3:8", "unknown reduction kind 'generic'"),
    ("negative in-group coordinate", G2 + "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  %0 = "
     "shard.broadcast %a on @g grid_axes = [0] root = [-1] : (tensor<4xf32>) -> tensor<4xf32>\n"
     "  return %0 : tensor<4xf32>\n}\n", "3:8", "coordinate 0 is -1"),
    ("custom form of an op meshrt does not know", "func.func @f() -> index {\n  %0 = index.constant 3\n"
     "  return %0 : index\n}\n", "2:8", "unknown operation 'index.constant' in custom form"),
]


@pytest.mark.parametrize("case, text, where, fragment", STRICTER, ids=[c[0] for c in STRICTER])
def test_stricter_than_mlir_opt_only_where_documented(case, text, where, fragment):
    with pytest.raises(MLIRError) as info:
        verify(parse(text, "s.mlir"))
    assert str(info.value).startswith(f"s.mlir:{where}: ") and fragment in str(info.value)
    with open(os.path.join(HERE, "..", "docs", "mlir.md")) as f:
        assert case in f.read(), f"docs/mlir.md does not list '{case}'"
    if MLIR_OPT is not None:
        assert _mlir_opt_accepts(text)[0], f"mlir-opt 22 rejects '{case}' too: not a place where meshrt is stricter"


# -- printing --------------------------------------------------------------------------------------------------

@needs_mlir_opt
def test_generic_print_is_read_back_by_mlir_opt_to_the_same_ir():
    texts = [parse_file(path).generic() for path in ALL_MLIR]
    # one mlir-opt for all files: --split-input-file reads and prints them one by one
    ok, out, err = _mlir_opt_accepts("// -----\n".join(texts), "--allow-unregistered-dialect",
                                     "--mlir-print-op-generic", "--split-input-file")
    assert ok, err
    back = out.split("// -----\n")
    assert len(back) == len(texts)
    for path, text, printed in zip(ALL_MLIR, texts, back):
        assert parse(printed).generic() == text, os.path.basename(path)


def test_generic_print_of_multi_result_ops_and_module_attributes():
    m = parse('module @m attributes {my.k = 4} {\nfunc.func @f() -> (index, index) {\n'
              '  %0:2 = "my.two"() : () -> (index, index)\n  return %0#1, %0#0 : index, index\n}\n}')
    text = m.generic()
    assert '%v0:2 = "my.two"()' in text and '"func.return"(%v0#1, %v0#0)' in text
    assert text.startswith('"builtin.module"() ({') and 'my.k = 4 : i64' in text and 'sym_name = "m"' in text
    assert parse(text).generic() == text


def test_partial_sharding_has_no_llvm22_text():
    m = parse("shard.grid @g(shape = 2x2)\nfunc.func @f() {\n  %s = shard.sharding @g split_axes = [[0]] "
              "partial = sum [1] : !shard.sharding\n  return\n}", "p.mlir")
    with pytest.raises(MLIRError, match=r"^p.mlir:3:8: 'shard.sharding' with partial = sum \[1\]: LLVM 22"):
        print_generic(m)
    s = Sharding(AbstractMesh((2, 2)), [[0]], partial_axes=[1])
    assert "partial" in str(s)  # meshrt's own text keeps it (seed 001's syntax, read back by Sharding.parse)


# -- tools/shard_conformance.py: splitting LLVM's files ----------------------------------------------------------

def _tool():
    spec = importlib.util.spec_from_file_location(
        "shard_conformance", os.path.join(HERE, "..", "tools", "shard_conformance.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


LLVM_LIKE = """// RUN: mlir-opt %s
shard.grid @g(shape = 2)
// CHECK-LABEL: func @a
func.func @a(
  %x: tensor<2xf32>)
  -> tensor<2xf32> {
  %0 = func.call @b(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @b(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>   // a "quoted { brace" in a comment
}

// -----
module attributes {my.k = 1} {
  shard.grid @h(shape = ?)
  func.func @c() {
    // expected-error@+1 {{something}}
    %0 = shard.process_linear_index on @h : index
    return
  }
}
"""


def test_tool_splits_files_into_function_modules():
    tool = _tool()
    (l1, c1), (l2, c2) = tool.chunks(LLVM_LIKE)
    assert (l1, l2) == (1, 15)
    mods = dict(tool.function_modules(c1))
    assert sorted(mods) == ["a", "b"]
    assert "shard.grid @g" in mods["a"] and "@b(" in mods["a"] and "@a(" not in mods["b"]
    for text in mods.values():
        verify(parse(text))
    [(name, text)] = tool.function_modules(c2)
    assert name == "c" and text.startswith("module attributes {my.k = 1} {") and parse(text).attributes["my.k"] == 1
    assert tool.expected_error_line(c2, l2) == 19


def test_question_mark_result_dims_are_checked_when_run(monkeypatch):
    """A '?' the shape rule fixes is checked against the size the op produced, naming op and process."""
    from meshrt import collectives as C

    m = parse("shard.grid @g(shape = ?)\nfunc.func @f(%a: tensor<3x6xi8>) -> tensor<3x?xi8> {\n"
              "  %0 = shard.all_gather %a on @g grid_axes = [0] gather_axis = 1 : tensor<3x6xi8> -> tensor<3x?xi8>\n"
              "  return %0 : tensor<3x?xi8>\n}\n", "q.mlir")
    a = np.arange(18, dtype=np.int8).reshape(3, 6)
    np.testing.assert_array_equal(run_function(m, "f", [a])[0], a)  # one process: a group of one
    real = C.all_gather
    monkeypatch.setattr(C, "all_gather", lambda x, *args, **kw: np.concatenate([real(x, *args, **kw)] * 2, 1))
    with pytest.raises(MLIRError, match=r"^q.mlir:3:8: 'shard.all_gather' result dimension 1 is 12 on process 0; "
                                        r"the dialect's rule gives 6 for input tensor<3x6xi8> on a device group of 1"):
        run_function(m, "f", [a])
