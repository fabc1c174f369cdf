"""Scalar op semantics and linalg ops, serially: every op through both paths (arith on
tensors: numpy; inside a linalg.generic body: the Numba kernel) against a plain
Python/numpy oracle of MLIR's definition, over several dtypes."""

import math

import numpy as np
import pytest
from mpi4py import MPI

from meshrt.mlir import parse
from meshrt.mlir.interpreters.spmd import run_function

N = 7
RNG = np.random.default_rng(3)


def trunc_div(a, b):
    return int(math.copysign(abs(int(a)) // abs(int(b)), int(a) * int(b)))


def c_rem(a, b):
    return int(a) - trunc_div(a, b) * int(b)


# op -> (element types, oracle on Python scalars)
BINARY = {
    "arith.addi": (("i8", "i64"), lambda a, b: a + b),
    "arith.subi": (("i16", "i64"), lambda a, b: a - b),
    "arith.muli": (("i8", "i32"), lambda a, b: a * b),
    "arith.divsi": (("i8", "i64"), trunc_div),
    "arith.remsi": (("i16", "i64"), c_rem),
    "arith.floordivsi": (("i32",), lambda a, b: a // b),
    "arith.ceildivsi": (("i32",), lambda a, b: -((-a) // b)),
    "arith.maxsi": (("i8", "i64"), max),
    "arith.minui": (("i8",), lambda a, b: a if (a % 256) < (b % 256) else b),
    "arith.xori": (("i32",), lambda a, b: a ^ b),
    "arith.addf": (("f32", "f64"), lambda a, b: a + b),
    "arith.mulf": (("f32",), lambda a, b: a * b),
    "arith.divf": (("f64",), lambda a, b: a / b),
    "arith.remf": (("f64",), math.fmod),
    "arith.maximumf": (("f32",), max),
    "math.powf": (("f64",), lambda a, b: abs(a) ** b),
}
WIDTH = {"i8": 8, "i16": 16, "i32": 32, "i64": 64}


def _wrap(x, t):
    if t in WIDTH:
        w = WIDTH[t]
        x = int(x) % (1 << w)
        return x - (1 << w) if x >= 1 << (w - 1) else x
    return x


def _operands(op, t, dt):
    if t.startswith("f"):
        a = RNG.standard_normal(N).astype(dt) * 3
        b = RNG.standard_normal(N).astype(dt) * 3
        if op == "math.powf":
            a = np.abs(a)
        return a, b
    info = np.iinfo(dt)
    a = RNG.integers(max(info.min, -10**6), min(info.max, 10**6), N).astype(dt)
    b = RNG.integers(-9, 10, N).astype(dt)
    b[b == 0] = 3
    if op == "arith.minui":
        b[0] = -1  # 255 unsigned: larger than everything
    return a, b


def _programs(op, t):
    ty = f"tensor<{N}x{t}>"
    tensor_form = f"""func.func @f(%a: {ty}, %b: {ty}) -> {ty} {{
  %r = {op} %a, %b : {ty}
  return %r : {ty}
}}"""
    generic_form = f"""func.func @f(%a: {ty}, %b: {ty}) -> {ty} {{
  %e = tensor.empty() : {ty}
  %r = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
       iterator_types = ["parallel"]}} ins(%a, %b : {ty}, {ty}) outs(%e : {ty}) {{
  ^bb0(%x: {t}, %y: {t}, %o: {t}):
    %z = {op} %x, %y : {t}
    linalg.yield %z : {t}
  }} -> {ty}
  return %r : {ty}
}}"""
    return tensor_form, generic_form


@pytest.mark.parametrize("op, t", [(op, t) for op, (ts, _) in BINARY.items() for t in ts])
def test_binary_op_both_paths_match_oracle(op, t):
    dt = parse(f"func.func @g(%a: {t}) -> {t} {{\n  return %a : {t}\n}}").functions()["g"] \
        .attributes["function_type"].type.inputs[0].numpy_dtype
    a, b = _operands(op, t, dt)
    want = np.array([_wrap(BINARY[op][1](x.item(), y.item()), t) for x, y in zip(a, b)], dtype=dt)
    for text in _programs(op, t):
        [got] = run_function(parse(text), "f", [a, b], comm=MPI.COMM_SELF)
        assert got.dtype == dt
        if t.startswith("f"):
            np.testing.assert_allclose(got, want, rtol=1e-6 if t == "f32" else 1e-14)
        else:
            np.testing.assert_array_equal(got, want)


CMPF = {"oeq": lambda a, b: a == b, "olt": lambda a, b: a < b, "one": lambda a, b: a != b and a == a and b == b,
        "ord": lambda a, b: a == a and b == b, "ueq": lambda a, b: not (a < b or a > b),
        "ult": lambda a, b: not (a >= b), "une": lambda a, b: a != b, "uno": lambda a, b: a != a or b != b}


@pytest.mark.parametrize("pred", sorted(CMPF))
def test_cmpf_select_with_nans(pred):
    a = np.array([1.0, np.nan, 2.0, 3.0, np.nan, -1.0, 0.0])
    b = np.array([1.0, 1.0, np.nan, 2.0, np.nan, 5.0, -0.0])
    want = np.array([a[i] if CMPF[pred](a[i], b[i]) else b[i] for i in range(N)])
    ty = f"tensor<{N}xf64>"
    body = f"""  ^bb0(%x: f64, %y: f64, %o: f64):
    %c = arith.cmpf {pred}, %x, %y : f64
    %s = arith.select %c, %x, %y : f64
    linalg.yield %s : f64"""
    generic = f"""func.func @f(%a: {ty}, %b: {ty}) -> {ty} {{
  %e = tensor.empty() : {ty}
  %r = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
       iterator_types = ["parallel"]}} ins(%a, %b : {ty}, {ty}) outs(%e : {ty}) {{
{body}
  }} -> {ty}
  return %r : {ty}
}}"""
    tensor = f"""func.func @f(%a: {ty}, %b: {ty}) -> {ty} {{
  %c = arith.cmpf {pred}, %a, %b : {ty}
  %s = arith.select %c, %a, %b : tensor<{N}xi1>, {ty}
  return %s : {ty}
}}"""
    for text in (generic, tensor):
        [got] = run_function(parse(text), "f", [a, b], comm=MPI.COMM_SELF)
        np.testing.assert_array_equal(got, want)


CASTS = [("arith.sitofp", "i32", "f32", lambda x: float(x)), ("arith.fptosi", "f64", "i16", lambda x: int(x)),
         ("arith.extsi", "i8", "i64", int), ("arith.trunci", "i64", "i8", lambda x: _wrap(x, "i8")),
         ("arith.extui", "i8", "i32", lambda x: int(x) % 256), ("arith.truncf", "f64", "f32", float),
         ("arith.index_cast", "i32", "index", int)]


@pytest.mark.parametrize("op, src, dst, oracle", CASTS, ids=[c[0] for c in CASTS])
def test_casts_in_a_generic_body_and_on_tensors(op, src, dst, oracle):
    sd = {"i8": np.int8, "i32": np.int32, "i64": np.int64, "f64": np.float64}[src]
    dd = {"f32": np.float32, "i16": np.int16, "i64": np.int64, "i8": np.int8, "i32": np.int32,
          "index": np.int64}[dst]
    a = (RNG.standard_normal(N) * 300).astype(sd)
    want = np.array([oracle(x.item()) for x in a]).astype(dd)
    src_t, dst_t = f"tensor<{N}x{src}>", f"tensor<{N}x{dst}>"
    generic = f"""func.func @f(%a: {src_t}) -> {dst_t} {{
  %e = tensor.empty() : {dst_t}
  %r = linalg.generic {{indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
       iterator_types = ["parallel"]}} ins(%a : {src_t}) outs(%e : {dst_t}) {{
  ^bb0(%x: {src}, %o: {dst}):
    %z = {op} %x : {src} to {dst}
    linalg.yield %z : {dst}
  }} -> {dst_t}
  return %r : {dst_t}
}}"""
    tensor = f"""func.func @f(%a: {src_t}) -> {dst_t} {{
  %z = {op} %a : {src_t} to {dst_t}
  return %z : {dst_t}
}}"""
    for text in (generic, tensor):
        [got] = run_function(parse(text), "f", [a], comm=MPI.COMM_SELF)
        assert got.dtype == dd
        np.testing.assert_array_equal(got, want)


def test_generic_matmul_transposed_reduction_index_and_capture():
    # C[i, j] += A[k, i] * B[j, k] * s + index i : a reduction dim, permuted maps, linalg.index
    text = """func.func @f(%a: tensor<5x3xf64>, %b: tensor<4x5xf64>, %c: tensor<3x4xf64>, %s: f64) -> tensor<3x4xf64> {
  %r = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (j, k)>,
       affine_map<(i, j, k) -> (i, j)>], iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%a, %b : tensor<5x3xf64>, tensor<4x5xf64>) outs(%c : tensor<3x4xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %fi = arith.sitofp %ii : i64 to f64
    %m = arith.mulf %x, %y : f64
    %ms = arith.mulf %m, %s : f64
    %t = arith.addf %acc, %ms : f64
    %u = arith.addf %t, %fi : f64
    linalg.yield %u : f64
  } -> tensor<3x4xf64>
  return %r : tensor<3x4xf64>
}"""
    a, b, c = RNG.standard_normal((5, 3)), RNG.standard_normal((4, 5)), RNG.standard_normal((3, 4))
    [got] = run_function(parse(text), "f", [a, b, c, 0.5], comm=MPI.COMM_SELF)
    want = c + 0.5 * (a.T @ b.T) + 5 * np.arange(3)[:, None]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_array_equal(c, c.copy())  # the outs operand keeps its value (SSA)


def test_named_linalg_ops_and_tensor_ops():
    text = """func.func @f(%a: tensor<4x3xf32>, %b: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<2x4x3xf32>, tensor<6x3xf32>, tensor<12xf32>, tensor<8x3xf32>) {
  %e = tensor.empty() : tensor<3xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %r = linalg.reduce ins(%a : tensor<4x3xf32>) outs(%f : tensor<3xf32>) dimensions = [0]
    (%in: f32, %init: f32) {
      %s = arith.addf %in, %init : f32
      linalg.yield %s : f32
    }
  %e2 = tensor.empty() : tensor<4x3xf32>
  %m = linalg.map { arith.mulf } ins(%a, %b : tensor<4x3xf32>, tensor<4x3xf32>) outs(%e2 : tensor<4x3xf32>)
  %e3 = tensor.empty() : tensor<3x4xf32>
  %t = linalg.transpose ins(%a : tensor<4x3xf32>) outs(%e3 : tensor<3x4xf32>) permutation = [1, 0]
  %e4 = tensor.empty() : tensor<2x4x3xf32>
  %bb = linalg.broadcast ins(%a : tensor<4x3xf32>) outs(%e4 : tensor<2x4x3xf32>) dimensions = [0]
  %p = tensor.pad %a low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<4x3xf32> to tensor<6x3xf32>
  %c = tensor.collapse_shape %a [[0, 1]] : tensor<4x3xf32> into tensor<12xf32>
  %cat = tensor.concat dim(0) %a, %b : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %r, %m, %t, %bb, %p, %c, %cat : tensor<3xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<2x4x3xf32>, tensor<6x3xf32>, tensor<12xf32>, tensor<8x3xf32>
}"""
    a = RNG.standard_normal((4, 3)).astype(np.float32)
    b = RNG.standard_normal((4, 3)).astype(np.float32)
    got = run_function(parse(text), "f", [a, b], comm=MPI.COMM_SELF)
    want = [a.sum(0), a * b, a.T, np.broadcast_to(a, (2, 4, 3)), np.pad(a, [(1, 1), (0, 0)]), a.reshape(12),
            np.concatenate([a, b])]
    for g, w in zip(got, want):
        assert g.dtype == np.float32
        np.testing.assert_allclose(g, w, rtol=1e-6)


def test_rank_reducing_slices_insert_and_reshapes():
    text = """func.func @f(%a: tensor<4x1x3xf32>, %i: index) -> (tensor<3xf32>, tensor<2x1xf32>, tensor<4x1x3xf32>, tensor<2x2x3xf32>) {
  %s = tensor.extract_slice %a[%i, 0, 0] [1, 1, 3] [1, 1, 1] : tensor<4x1x3xf32> to tensor<3xf32>
  %t = tensor.extract_slice %a[0, 0, 1] [2, 1, 1] [2, 1, 1] : tensor<4x1x3xf32> to tensor<2x1xf32>
  %z = arith.constant dense<9.0> : tensor<3xf32>
  %u = tensor.insert_slice %z into %a[3, 0, 0] [1, 1, 3] [1, 1, 1] : tensor<3xf32> into tensor<4x1x3xf32>
  %w = tensor.collapse_shape %a [[0], [1, 2]] : tensor<4x1x3xf32> into tensor<4x3xf32>
  %x = tensor.expand_shape %w [[0, 1], [2]] output_shape [2, 2, 3] : tensor<4x3xf32> into tensor<2x2x3xf32>
  return %s, %t, %u, %x : tensor<3xf32>, tensor<2x1xf32>, tensor<4x1x3xf32>, tensor<2x2x3xf32>
}"""
    a = np.arange(12, dtype=np.float32).reshape(4, 1, 3)
    s, t, u, x = run_function(parse(text), "f", [a, 2], comm=MPI.COMM_SELF)
    np.testing.assert_array_equal(s, a[2, 0])
    np.testing.assert_array_equal(t, a[0:4:2, :, 1])
    want = a.copy()
    want[3] = 9
    np.testing.assert_array_equal(u, want)
    np.testing.assert_array_equal(x, a.reshape(2, 2, 3))
    np.testing.assert_array_equal(a, np.arange(12, dtype=np.float32).reshape(4, 1, 3))  # SSA: a unchanged
