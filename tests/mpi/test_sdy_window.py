"""pad, dynamic_slice, dynamic_update_slice, reduce_window and sort of split operands in Shardy programs
(meshrt/mlir/_sdy_window.py): hand-written StableHLO + sdy programs compared with numpy references
written here, at 1-4 processes; none of them runs on gathered operands (``fallbacks`` stays empty)
and no split tensor is gathered whole while the program runs."""

import contextlib
import glob
import os

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor
from meshrt.errors import MLIRError
from meshrt.mlir import parse, parse_file
from meshrt.mlir.shardy.window import SHARDED_OPS
from meshrt.mlir.shardy.program import SdyProgram

MPI_NPROCS = (1, 2, 4)  # the counts for Shardy programs; the shapes split unevenly at 2 and 4 too

comm = MPI.COMM_WORLD
N = comm.size
MESH_2D = {1: (1, 1), 2: (2, 1), 3: (3, 1), 4: (2, 2)}
MESH = 'sdy.mesh @mesh = <["x"={}, "y"={}]>'.format(*MESH_2D[N])
CORPUS = os.path.join(os.path.dirname(__file__), "..", "mlir", "sdy")
TYPES = {np.float32: "f32", np.float64: "f64", np.int32: "i32"}


def sh(*dims):
    """``#sdy.sharding<@mesh, [{"x"}, {}]>`` from ``sh("x", "")`` (``"x,y"``: both axes on one dim)."""
    return "#sdy.sharding<@mesh, [" + ", ".join(
        "{" + ", ".join(f'"{a}"' for a in d.split(",") if a) + "}" for d in dims) + "]>"


def tt(shape, dtype):
    return "tensor<" + "".join(f"{n}x" for n in shape) + TYPES[dtype] + ">"


@contextlib.contextmanager
def no_whole_gathers():
    """Record every gather of a tensor, and every reshard of a split tensor to a replicated layout."""
    calls = []
    gather, reshard = DistributedTensor.gather, DistributedTensor.reshard

    def rec_gather(t, root=None):
        calls.append(("gather", t.global_shape, str(t.sharding)))
        return gather(t, root)

    def rec_reshard(t, sharding, *, out=None):
        if any(t.sharding.split_axes) and not any(sharding.split_axes):
            calls.append(("reshard to replicated", t.global_shape, str(t.sharding)))
        return reshard(t, sharding, out=out)

    DistributedTensor.gather, DistributedTensor.reshard = rec_gather, rec_reshard
    try:
        yield calls
    finally:
        DistributedTensor.gather, DistributedTensor.reshard = gather, reshard


def run(text, args, split_results=True):
    """Run ``@main``; no gathered fallback, no whole gather of a split tensor; the whole results."""
    p = SdyProgram(parse(text), comm)
    try:
        with no_whole_gathers() as calls:
            res = p.run("main", args)
        assert calls == [], calls
        assert p.fallbacks == [], [(str(op.location), op.name) for op, _ in p.fallbacks]
        if split_results and N > 1:
            assert all(isinstance(r, DistributedTensor) for r in res), [type(r) for r in res]
        return [p.whole(r) for r in res]
    finally:
        p.free()


def check(got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=what, equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    return rng.integers(-50, 50, shape).astype(dtype)


# -- pad ---------------------------------------------------------------------------------------------

def np_pad(a, v, low, high, interior):
    body = np.full([(n - 1) * (k + 1) + 1 for n, k in zip(a.shape, interior)], v, a.dtype)
    body[tuple(slice(None, None, k + 1) for k in interior)] = a
    body = np.pad(body, [(max(lo, 0), max(hi, 0)) for lo, hi in zip(low, high)], constant_values=v)
    return body[tuple(slice(max(-lo, 0), n - max(-hi, 0)) for n, lo, hi in zip(body.shape, low, high))]


PADS = [((1, 0), (2, 1), (0, 0)), ((1, -1), (2, 0), (1, 0)), ((-2, 3), (-1, 1), (2, 1)), ((-4, -1), (3, -2), (1, 2))]
SPLITS = [("x,y", ""), ("", "x,y"), ("x", "y")]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("low,high,interior", PADS)
def test_pad(dtype, split, low, high, interior):
    x = data((7, 5), dtype)
    v = np.asarray(-3, dtype)
    want = np_pad(x, v, low, high, interior)
    text = f"""{MESH}
func.func @main(%a: {tt(x.shape, dtype)} {{sdy.sharding = {sh(*split)}}}, %v: {tt((), dtype)}) -> ({tt(want.shape, dtype)} {{sdy.sharding = {sh(*split)}}}) {{
  %0 = stablehlo.pad %a, %v, low = [{low[0]}, {low[1]}], high = [{high[0]}, {high[1]}], interior = [{interior[0]}, {interior[1]}] : ({tt(x.shape, dtype)}, {tt((), dtype)}) -> {tt(want.shape, dtype)}
  return %0 : {tt(want.shape, dtype)}
}}"""
    (y,) = run(text, [x, v])
    check(y, want, f"pad {low} {high} {interior}")


def test_pad_writes_straight_into_the_sharding_its_op_names():
    """An ``sdy.sharding`` on the op: the padded result is allocated split that way (rows in, columns out)."""
    x = data((7, 5), np.float32)
    v = np.float32(0.5)
    want = np_pad(x, v, (1, 2), (0, 1), (1, 0))
    text = f"""{MESH}
func.func @main(%a: tensor<7x5xf32> {{sdy.sharding = {sh("x,y", "")}}}, %v: tensor<f32>) -> (tensor<14x8xf32> {{sdy.sharding = {sh("", "x,y")}}}) {{
  %0 = stablehlo.pad %a, %v, low = [1, 2], high = [0, 1], interior = [1, 0] {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{{}}, {{"x", "y"}}]>]>}} : (tensor<7x5xf32>, tensor<f32>) -> tensor<14x8xf32>
  return %0 : tensor<14x8xf32>
}}"""
    moves = []
    reshard = DistributedTensor.reshard
    DistributedTensor.reshard = lambda t, s, out=None: moves.append(str(s)) or reshard(t, s, out=out)
    try:
        (y,) = run(text, [x, v])
    finally:
        DistributedTensor.reshard = reshard
    check(y, want, "pad into the op's sharding")
    if N > 1:  # one move: the operand's rows into the result's column blocks; none after the op
        assert len(moves) == 1, moves


# -- dynamic_slice / dynamic_update_slice --------------------------------------------------------------

STARTS = [(2, 1), (-3, 100), (8, -1), (5, 3)]


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("starts", STARTS)
def test_dynamic_slice_clamps_starts(dtype, split, starts):
    x = data((9, 6), dtype)
    s0, s1 = (min(max(s, 0), n - k) for s, n, k in zip(starts, x.shape, (4, 3)))
    want = x[s0:s0 + 4, s1:s1 + 3]
    text = f"""{MESH}
func.func @main(%a: {tt(x.shape, dtype)} {{sdy.sharding = {sh(*split)}}}, %i: tensor<i32>, %j: tensor<i32>) -> ({tt(want.shape, dtype)} {{sdy.sharding = {sh(*split)}}}) {{
  %0 = stablehlo.dynamic_slice %a, %i, %j, sizes = [4, 3] : ({tt(x.shape, dtype)}, tensor<i32>, tensor<i32>) -> {tt(want.shape, dtype)}
  return %0 : {tt(want.shape, dtype)}
}}"""
    (y,) = run(text, [x, np.int32(starts[0]), np.int32(starts[1])])
    check(y, want, f"dynamic_slice at {starts}")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("starts", STARTS)
@pytest.mark.parametrize("update_split", [("", ""), ("x", "")])
def test_dynamic_update_slice_clamps_starts(dtype, split, starts, update_split):
    x, u = data((9, 6), dtype), data((3, 2), dtype, seed=1)
    s0, s1 = (min(max(s, 0), n - k) for s, n, k in zip(starts, x.shape, u.shape))
    want = x.copy()
    want[s0:s0 + 3, s1:s1 + 2] = u
    text = f"""{MESH}
func.func @main(%a: {tt(x.shape, dtype)} {{sdy.sharding = {sh(*split)}}}, %u: {tt(u.shape, dtype)} {{sdy.sharding = {sh(*update_split)}}}, %i: tensor<i32>, %j: tensor<i32>) -> ({tt(x.shape, dtype)} {{sdy.sharding = {sh(*split)}}}) {{
  %0 = stablehlo.dynamic_update_slice %a, %u, %i, %j : ({tt(x.shape, dtype)}, {tt(u.shape, dtype)}, tensor<i32>, tensor<i32>) -> {tt(x.shape, dtype)}
  return %0 : {tt(x.shape, dtype)}
}}"""
    y, = run(text, [x, u, np.int32(starts[0]), np.int32(starts[1])])
    check(y, want, f"dynamic_update_slice at {starts}")


def test_dynamic_update_slice_of_a_broadcast_scalar_leaves_the_operand_alone():
    """The update is a broadcast scalar (as jnp's ``.at[].set(1.0)`` gives); the argument is not written."""
    x = data((9, 6), np.float32)
    text = f"""{MESH}
func.func @main(%a: tensor<9x6xf32> {{sdy.sharding = {sh("x,y", "")}}}, %i: tensor<i32>) -> (tensor<9x6xf32> {{sdy.sharding = {sh("x,y", "")}}}, tensor<9x6xf32> {{sdy.sharding = {sh("x,y", "")}}}) {{
  %c = stablehlo.constant dense<1.0> : tensor<f32>
  %u = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<4x6xf32>
  %0 = stablehlo.dynamic_update_slice %a, %u, %i, %i : (tensor<9x6xf32>, tensor<4x6xf32>, tensor<i32>, tensor<i32>) -> tensor<9x6xf32>
  %1 = stablehlo.add %a, %a : tensor<9x6xf32>
  return %0, %1 : tensor<9x6xf32>, tensor<9x6xf32>
}}"""
    y, twice = run(text, [x, np.int32(3)])
    want = x.copy()
    want[3:7] = 1
    check(y, want, "update by a splat")
    check(twice, 2 * x, "the operand is unchanged")


# -- reduce_window -------------------------------------------------------------------------------------

_UFUNC = {"add": np.add, "maximum": np.maximum, "minimum": np.minimum, "multiply": np.multiply}


def np_reduce_window(x, init, wd, ws, bd, wdl, pad, body):
    """The definition, element by element."""
    fn = _UFUNC[body]
    dil = np.full([(n - 1) * b + 1 for n, b in zip(x.shape, bd)], init, x.dtype)
    dil[tuple(slice(None, None, b) for b in bd)] = x
    padded = np.pad(dil, pad, constant_values=init)
    out_shape = [(n - ((w - 1) * d + 1)) // s + 1 for n, w, d, s in zip(padded.shape, wd, wdl, ws)]
    out = np.empty(out_shape, x.dtype)
    for idx in np.ndindex(*out_shape):
        acc = np.asarray(init, x.dtype)
        for o in np.ndindex(*wd):
            acc = fn(acc, padded[tuple(i * s + j * d for i, s, j, d in zip(idx, ws, o, wdl))]).astype(x.dtype)
        out[idx] = acc
    return out


def reduce_window_text(shape, out_shape, dtype, split, out_split, wd, ws, bd, wdl, pad, body):
    t, o, s = tt(shape, dtype), tt(out_shape, dtype), tt((), dtype)
    ints = lambda v: ", ".join(map(str, v))  # noqa: E731
    return f"""{MESH}
func.func @main(%a: {t} {{sdy.sharding = {sh(*split)}}}, %init: {s}) -> ({o} {{sdy.sharding = {sh(*out_split)}}}) {{
  %0 = "stablehlo.reduce_window"(%a, %init) <{{base_dilations = array<i64: {ints(bd)}>, padding = dense<{[list(p) for p in pad]}> : tensor<{len(shape)}x2xi64>, window_dilations = array<i64: {ints(wdl)}>, window_dimensions = array<i64: {ints(wd)}>, window_strides = array<i64: {ints(ws)}>}}> ({{
  ^bb0(%p: {s}, %q: {s}):
    %r = stablehlo.{body} %p, %q : {s}
    stablehlo.return %r : {s}
  }}) : ({t}, {s}) -> {o}
  return %0 : {o}
}}"""


WINDOWS = [  # window, strides, base dilations, window dilations, padding
    ((3, 1), (2, 1), (1, 1), (1, 1), ((1, 1), (0, 0))),
    ((2, 2), (1, 2), (2, 1), (1, 2), ((0, 1), (1, 0))),
    ((3, 2), (3, 1), (1, 1), (2, 1), ((2, 2), (0, 1))),
    ((1, 3), (1, 1), (1, 1), (1, 1), ((0, 0), (2, 0))),   # windowed along dim 1 only
    ((13, 1), (1, 1), (1, 1), (1, 1), ((12, 0), (0, 0))),  # a running max, product...: a scan
    ((9, 1), (1, 1), (1, 1), (1, 1), ((4, 4), (0, 0))),    # wider than a shard: the split moves to dim 1
]


@pytest.mark.parametrize("dtype,body,init", [(np.float32, "add", 0), (np.float32, "maximum", -np.inf),
                                             (np.int32, "minimum", 2 ** 31 - 1), (np.float64, "multiply", 1),
                                             (np.int32, "add", 0)])
@pytest.mark.parametrize("split", SPLITS)
@pytest.mark.parametrize("window", WINDOWS)
def test_reduce_window(dtype, body, init, split, window):
    wd, ws, bd, wdl, pad = window
    x = data((13, 7), dtype)
    if body == "multiply":
        x = (1 + x / 10).astype(dtype)
    init = np.asarray(init, dtype)
    want = np_reduce_window(x, init, wd, ws, bd, wdl, pad, body)
    text = reduce_window_text(x.shape, want.shape, dtype, split, split, wd, ws, bd, wdl, pad, body)
    (y,) = run(text, [x, init])
    check(y, want, f"reduce_window {body} {window}")


def test_reduce_window_1d_strided_with_uneven_shards():
    x = data((29,), np.float32)
    init = np.float32(0)
    want = np_reduce_window(x, init, (4,), (3,), (1,), (2,), ((3, 2),), "add")
    text = reduce_window_text(x.shape, want.shape, np.float32, ("x,y",), ("x,y",), (4,), (3,), (1,), (2,), ((3, 2),),
                              "add")
    (y,) = run(text, [x, init])
    check(y, want, "1-d reduce_window")


ARGMAX_WINDOW = f"""{MESH}
func.func @main(%x: tensor<29xf32> {{sdy.sharding = {sh("x,y")}}}) -> (tensor<15xf32> {{sdy.sharding = {sh("x,y")}}}, tensor<15xi32> {{sdy.sharding = {sh("x,y")}}}) {{
  %i = stablehlo.iota dim = 0 : tensor<29xi32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = "stablehlo.reduce_window"(%x, %i, %ninf, %zero) <{{padding = dense<[[1, 1]]> : tensor<1x2xi64>, window_dimensions = array<i64: 3>, window_strides = array<i64: 2>}}> ({{
  ^bb0(%av: tensor<f32>, %ai: tensor<i32>, %bv: tensor<f32>, %bi: tensor<i32>):
    %gt = stablehlo.compare GT, %bv, %av, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %bv, %av, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %lt = stablehlo.compare LT, %bi, %ai, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %tie = stablehlo.and %eq, %lt : tensor<i1>
    %take = stablehlo.or %gt, %tie : tensor<i1>
    %v = stablehlo.select %take, %bv, %av : tensor<i1>, tensor<f32>
    %j = stablehlo.select %take, %bi, %ai : tensor<i1>, tensor<i32>
    stablehlo.return %v, %j : tensor<f32>, tensor<i32>
  }}) : (tensor<29xf32>, tensor<29xi32>, tensor<f32>, tensor<i32>) -> (tensor<15xf32>, tensor<15xi32>)
  return %0#0, %0#1 : tensor<15xf32>, tensor<15xi32>
}}"""


def test_reduce_window_with_two_operands_and_a_region_body():
    """A windowed argmax (values, iota) with a body of its own: stride 2, padding 1 on each side."""
    x = np.random.default_rng(4).integers(0, 6, 29).astype(np.float32)  # ties
    padded = np.pad(x, 1, constant_values=-np.inf)
    idx = np.pad(np.arange(29, dtype=np.int32), 1)
    wv, wi = [], []
    for j in range(15):
        win = padded[2 * j: 2 * j + 3]
        best = -np.inf
        at = 0
        for v, i in zip(win, idx[2 * j: 2 * j + 3]):
            if v > best or (v == best and i < at):
                best, at = v, i
        wv.append(best)
        wi.append(at)
    values, where = run(ARGMAX_WINDOW, [x])
    check(values, np.array(wv, np.float32), "window max")
    check(where, np.array(wi, np.int32), "window argmax")


def test_reduce_window_rejects_a_zero_dilation_before_running():
    text = reduce_window_text((13, 7), (13, 7), np.float32, ("x", ""), ("x", ""), (1, 1), (1, 1), (1, 1), (0, 1),
                              ((0, 0), (0, 0)), "add")
    p = SdyProgram(parse(text), comm)
    try:
        with pytest.raises(MLIRError, match=r"<string>:3:8: 'stablehlo.reduce_window' window_dilations must be positive, got "
                                            r"\[0, 1\]"):
            p.run("main", [np.zeros((13, 7), np.float32), np.float32(0)])
    finally:
        p.free()
    comm.Barrier()


# -- sort ------------------------------------------------------------------------------------------------

JAX_FLOAT_LESS = """
      %z = stablehlo.constant dense<0.000000e+00> : tensor<{t}>
      %e1 = stablehlo.compare EQ, %a, %z, FLOAT : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      %a1 = stablehlo.select %e1, %z, %a : tensor<i1>, tensor<{t}>
      %n1 = stablehlo.compare NE, %a, %a, FLOAT : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      %nan = stablehlo.constant dense<0x{nan}> : tensor<{t}>
      %a2 = stablehlo.select %n1, %nan, %a1 : tensor<i1>, tensor<{t}>
      %e2 = stablehlo.compare EQ, %b, %z, FLOAT : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      %b1 = stablehlo.select %e2, %z, %b : tensor<i1>, tensor<{t}>
      %n2 = stablehlo.compare NE, %b, %b, FLOAT : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      %b2 = stablehlo.select %n2, %nan, %b1 : tensor<i1>, tensor<{t}>
      %lt = stablehlo.compare {dir}, %a2, %b2, TOTALORDER : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>"""

INT_LESS = """
      %lt = stablehlo.compare {dir}, %a, %b, SIGNED : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>"""

NAN = {np.float32: "7FC00000", np.float64: "7FF8000000000000"}


def comparator(dtype, descending):
    d = "GT" if descending else "LT"
    if np.dtype(dtype).kind == "f":
        return JAX_FLOAT_LESS.format(t=TYPES[dtype], nan=NAN[dtype], dir=d)
    return INT_LESS.format(t=TYPES[dtype], dir=d)


def order_key(x):
    """An int64 that orders like the comparator: floats by totalOrder after -0 -> 0 and NaN -> +NaN."""
    x = np.asarray(x)
    if x.dtype.kind != "f":
        return x.astype(np.int64)
    x = np.where(x == 0, 0, np.where(np.isnan(x), np.nan, x)).astype(x.dtype)
    bits = x.view(f"i{x.dtype.itemsize}").astype(np.int64)
    return np.where(bits < 0, bits ^ np.iinfo(f"i{x.dtype.itemsize}").max, bits)


def np_sort_perm(x, dim, descending):
    k = order_key(x)
    return np.argsort(~k if descending else k, axis=dim, kind="stable")


def sort_text(shape, dtype, dim, split, out_split, descending, with_iota=False):
    t = tt(shape, dtype)
    it = tt(shape, np.int32)
    s = TYPES[dtype]
    body = comparator(dtype, descending)
    if with_iota:
        return f"""{MESH}
func.func @main(%x: {t} {{sdy.sharding = {sh(*split)}}}) -> ({t} {{sdy.sharding = {sh(*out_split)}}}, {it} {{sdy.sharding = {sh(*out_split)}}}) {{
  %i = stablehlo.iota dim = {dim} : {it}
  %0:2 = "stablehlo.sort"(%x, %i) <{{dimension = {dim} : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<{s}>, %b: tensor<{s}>, %c: tensor<i32>, %d: tensor<i32>):{body}
  }}) : ({t}, {it}) -> ({t}, {it})
  return %0#0, %0#1 : {t}, {it}
}}"""
    return f"""{MESH}
func.func @main(%x: {t} {{sdy.sharding = {sh(*split)}}}) -> ({t} {{sdy.sharding = {sh(*out_split)}}}) {{
  %0 = "stablehlo.sort"(%x) <{{dimension = {dim} : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<{s}>, %b: tensor<{s}>):{body}
  }}) : ({t}) -> {t}
  return %0 : {t}
}}"""


def with_ties_and_nan(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, shape).astype(dtype)  # many ties
    if np.dtype(dtype).kind == "f":
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, max(1, flat.size // 8), replace=False)] = np.nan
        flat[rng.choice(flat.size, max(1, flat.size // 8), replace=False)] = -0.0
        flat[:2] = [np.inf, -np.inf][:flat.size]
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dim,split,out_split", [
    (0, ("", "x,y"), ("", "x,y")),      # the sort dim whole: each process sorts its blocks
    (1, ("x,y", ""), ("x,y", "")),
    (0, ("x,y", ""), ("x,y", "")),      # the sort dim split: the split moves to dim 1
    (0, ("x", "y"), ("x", "y")),
    (1, ("x", "y"), ("", "x,y")),
])
def test_sort_argsort_style_is_stable(dtype, descending, dim, split, out_split):
    x = with_ties_and_nan((11, 9), dtype)
    perm = np_sort_perm(x, dim, descending)
    text = sort_text(x.shape, dtype, dim, split, out_split, descending, with_iota=True)
    values, idx = run(text, [x])
    check(idx, perm.astype(np.int32), "argsort indices")
    check(values, np.take_along_axis(x, perm, dim), "sorted values")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("n", [1, 5, 1001])
def test_distributed_sort_1d(dtype, descending, n):
    """The only dim is split: a sample sort over the processes; (values, iota) checks stability."""
    x = with_ties_and_nan((n,), dtype, seed=n) if n < 1000 else data((n,), dtype, seed=3)
    if n == 1001:
        x[::7] = x[3]  # ties across the shards
    perm = np_sort_perm(x, 0, descending)
    values, idx = run(sort_text(x.shape, dtype, 0, ("x,y",), ("x,y",), descending, with_iota=True), [x])
    check(idx, perm.astype(np.int32), "argsort indices")
    check(values, x[perm], "sorted values")
    (only,) = run(sort_text(x.shape, dtype, 0, ("x,y",), ("y,x",), descending), [x])
    check(only, x[perm], "sorted values, one operand")


@pytest.mark.parametrize("split", ["y", "x"])
def test_distributed_sort_over_one_mesh_axis(split):
    """Split over one axis of a 2-D mesh: each group of processes along the other axis sorts its copy."""
    x = with_ties_and_nan((23,), np.float64, seed=11)
    perm = np_sort_perm(x, 0, True)
    values, idx = run(sort_text(x.shape, np.float64, 0, (split,), (split,), True, with_iota=True), [x],
                      split_results=MESH_2D[N][split == "y"] > 1)
    check(idx, perm.astype(np.int32), "argsort indices")
    check(values, x[perm], "sorted values")


def test_distributed_sort_buckets_stay_small_even_when_every_value_ties(monkeypatch):
    """Ties are split by global index, so equal values spread over the buckets (O(n/P) each) and keep
    their order."""
    from meshrt.mlir.shardy import window as _sdy_window

    sizes = []
    exchange = _sdy_window._alltoallv

    def recording(comm, arrays, send, recv, what, p):
        if what == "exchange of the buckets":
            sizes.append(sum(recv))
        return exchange(comm, arrays, send, recv, what, p)

    monkeypatch.setattr(_sdy_window, "_alltoallv", recording)
    n = 1000
    x = np.full(n, 2.0, np.float32)
    values, idx = run(sort_text(x.shape, np.float32, 0, ("x,y",), ("x,y",), False, with_iota=True), [x])
    check(idx, np.arange(n, dtype=np.int32), "ties keep their order")
    if N > 1:
        assert sizes and max(sizes) <= 2 * -(-n // N) + N, sizes


def test_distributed_sort_of_lines_along_a_split_dim():
    """(37, 2) sorted along dim 0 split over every process: dim 1 cannot take the split beyond 2 processes,
    so each column is sorted by the distributed sort."""
    x = with_ties_and_nan((37, 2), np.float32, seed=5)
    perm = np_sort_perm(x, 0, False)
    values, idx = run(sort_text(x.shape, np.float32, 0, ("x,y", ""), ("x,y", ""), False, with_iota=True), [x])
    check(idx, perm.astype(np.int32), "argsort indices")
    check(values, np.take_along_axis(x, perm, 0), "sorted values")


LEX = f"""{MESH}
func.func @main(%k: tensor<40xi32> {{sdy.sharding = {sh("x,y")}}}, %v: tensor<40xf32> {{sdy.sharding = {sh("x,y")}}}) -> (tensor<40xi32> {{sdy.sharding = {sh("x,y")}}}, tensor<40xf32> {{sdy.sharding = {sh("x,y")}}}) {{
  %0:2 = "stablehlo.sort"(%k, %v) <{{dimension = 0 : i64, is_stable = false}}> ({{
    ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<f32>):
      %lt = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %gt2 = stablehlo.compare GT, %c, %d, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %and = stablehlo.and %eq, %gt2 : tensor<i1>
      %or = stablehlo.or %lt, %and : tensor<i1>
      stablehlo.return %or : tensor<i1>
  }}) : (tensor<40xi32>, tensor<40xf32>) -> (tensor<40xi32>, tensor<40xf32>)
  return %0#0, %0#1 : tensor<40xi32>, tensor<40xf32>
}}"""


def test_distributed_sort_with_a_two_key_comparator():
    """A comparator that is not one operand's order: keys ascending, then values descending."""
    rng = np.random.default_rng(7)
    k = rng.integers(0, 4, 40).astype(np.int32)
    v = rng.permutation(40).astype(np.float32)
    order = np.lexsort((-v, k))
    ks, vs = run(LEX, [k, v])
    check(ks, k[order], "keys")
    check(vs, v[order], "values")


ABS = f"""{MESH}
func.func @main(%x: tensor<NNxi32> {{sdy.sharding = {sh("x,y")}}}) -> (tensor<NNxi32> {{sdy.sharding = {sh("x,y")}}}) {{
  %0 = "stablehlo.sort"(%x) <{{dimension = 0 : i64, is_stable = true}}> ({{
    ^bb0(%a: tensor<i32>, %b: tensor<i32>):
      %aa = stablehlo.abs %a : tensor<i32>
      %ab = stablehlo.abs %b : tensor<i32>
      %lt = stablehlo.compare LT, %aa, %ab, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
  }}) : (tensor<NNxi32>) -> tensor<NNxi32>
  return %0 : tensor<NNxi32>
}}"""


@pytest.mark.parametrize("n", [7, 301])
def test_sort_by_a_comparator_that_is_no_plain_key(n):
    """|a| < |b| is no operand's own order: the merge sort that only calls the comparator runs (stable:
    x and -x keep their order)."""
    x = np.random.default_rng(n).integers(-9, 10, n).astype(np.int32)
    (y,) = run(ABS.replace("NN", str(n)), [x])
    check(y, x[np.argsort(np.abs(x), kind="stable")], "sorted by |x|")


def test_explain_says_what_ran():
    """``explain`` names the plans: the split moved off a wide window's dim, the sample sort's exchanges;
    nothing on gathered operands."""
    from meshrt.mlir.shardy.cli import explain

    wide = reduce_window_text((13, 7), (13, 7), np.float32, ("x,y", ""), ("x,y", ""), (9, 1), (1, 1), (1, 1),
                              (1, 1), ((4, 4), (0, 0)), "maximum")
    sort = sort_text((50,), np.float32, 0, ("x,y",), ("x,y",), False, with_iota=True)
    for text, want in ((wide, "the split moves to dim 1"), (sort, "sort: alltoallv (exchange of the buckets)")):
        out = explain(parse(text), "main", comm)
        if comm.rank == 0:
            assert "gathered operands" not in out, out
            if N > 1:
                assert want in out, out


# -- the JAX corpus ---------------------------------------------------------------------------------------

@pytest.mark.skipif(N == 3, reason="the corpus is exported for 1, 2 and 4 devices")
@pytest.mark.parametrize("name", ["misc", "indexing", "reductions"])
def test_corpus_runs_these_ops_on_the_shards(name):
    d = os.path.join(CORPUS, name)
    ins = [np.load(f) for f in sorted(glob.glob(os.path.join(d, "in*.npy")))]
    outs = [np.load(f) for f in sorted(glob.glob(os.path.join(d, f"n{N}.out*.npy")))]
    p = SdyProgram(parse_file(os.path.join(d, f"n{N}.mlir")), comm)
    try:
        res = [p.whole(r) for r in p.run("main", ins)]
        assert not [op.name for op, _ in p.fallbacks if op.name in SHARDED_OPS], p.fallbacks
    finally:
        p.free()
    for i, (r, o) in enumerate(zip(res, outs)):
        if o.dtype.kind == "f":
            np.testing.assert_allclose(r, o, rtol=1e-5, atol=1e-6, err_msg=f"{name} result {i}")
        else:
            np.testing.assert_array_equal(r, o, err_msg=f"{name} result {i}")
