"""Shardy programs exported from JAX (tests/mlir/sdy, tools/export_sdy_corpus.py) and hand-written
programs of every sdy op, run on 1, 2 and 4 processes and compared with JAX's outputs / numpy:
float32 within 1e-5 relative, integers exact."""

import glob
import os

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor
from meshrt.errors import MLIRError
from meshrt.mlir import parse, parse_file
from meshrt.mlir.shardy.program import SdyProgram, run_sdy

MPI_NPROCS = (1, 2, 4)

comm = MPI.COMM_WORLD
N = comm.size
CORPUS = os.path.join(os.path.dirname(__file__), "..", "mlir", "sdy")
PROGRAMS = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(CORPUS, "*", "n1.mlir")))
MESH_2D = {1: (1, 1), 2: (2, 1), 4: (2, 2)}


def _compare(got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def test_corpus_is_there():
    assert len(PROGRAMS) >= 11, PROGRAMS


@pytest.mark.parametrize("name", PROGRAMS)
def test_jax_program_equals_jax(name):
    d = os.path.join(CORPUS, name)
    ins = [np.load(p) for p in sorted(glob.glob(os.path.join(d, "in*.npy")))]
    outs = [np.load(p) for p in sorted(glob.glob(os.path.join(d, f"n{N}.out*.npy")))]
    files = [f"n{N}.mlir"] + (["n4.generic.mlir"] if N == 4 else [])
    for f in files:
        res = run_sdy(parse_file(os.path.join(d, f)), "main", ins, comm)
        assert len(res) == len(outs)
        for i, (r, o) in enumerate(zip(res, outs)):
            _compare(r, o, f"{name}/{f} result {i}")


def test_read_args_reads_each_process_its_shards_and_run_consumes_them():
    """`SdyProgram.read_args`: a split argument arrives as this process's shard only (an argument
    left whole, whole); ``run(consume=True)`` empties the list; the results equal JAX's."""
    d = os.path.join(CORPUS, "mlp")
    paths = sorted(glob.glob(os.path.join(d, "in*.npy")))
    p = SdyProgram(parse_file(os.path.join(d, f"n{N}.mlir")), comm)
    try:
        args = p.read_args("main", paths)
        f = p.module.functions()["main"]
        from meshrt.mlir.dialects.sdy import _arg_sharding

        for i, (a, path) in enumerate(zip(args, paths)):
            whole = np.load(path)
            s = p.sharding(_arg_sharding(f, i))
            if s is None:
                assert isinstance(a, np.ndarray) and np.array_equal(a, whole)
            else:
                assert isinstance(a, DistributedTensor) and a.sharding == s
                assert a.interior.size < whole.size and np.array_equal(a.interior, whole[a.shard_slices])
        res = p.run("main", args, consume=True)
        assert args == []
        outs = sorted(glob.glob(os.path.join(d, f"n{N}.out*.npy")))
        for i, (r, o) in enumerate(zip(res, outs)):
            _compare(p.whole(r), np.load(o), f"mlp result {i}")
        with pytest.raises(MLIRError, match="argument 0: expected tensor<8x16xf32>"):
            p.read_args("main", [os.path.join(CORPUS, "collectives", "in0.npy")] + paths[1:])
    finally:
        p.free()


def test_roll_stencil_runs_as_one_fused_pass():
    """The jnp.roll stencil's rolls, adds and multiplies stay deferred on the shards (meshrt's lazy
    expressions): from the first run on (the second where MESHRT_FUSE_AFTER=2, as in the test suite), the
    whole update is one fused pass reading its neighbours' rows through ghost layers, and it equals JAX's
    output."""
    from meshrt.tensor import lazy

    d = os.path.join(CORPUS, "roll_stencil")
    ins = [np.load(p) for p in sorted(glob.glob(os.path.join(d, "in*.npy")))]
    want = np.load(os.path.join(d, f"n{N}.out0.npy"))
    p = SdyProgram(parse_file(os.path.join(d, f"n{N}.mlir")), comm)
    try:
        for i in range(3):
            before = lazy.stats["fused_new"]
            (y,) = p.run("main", ins)
            fused = lazy.stats["fused_new"] - before
            _compare(p.whole(y), want, f"run {i}")
            # fused from the second run at the latest (the first too where HOT is 1 or the same expression on
            # the same layout ran before); one process: nothing is split, plain numpy
            assert fused == (1 if N > 1 else 0) if i or N == 1 or lazy.HOT == 1 else fused in (0, 1), (i, fused)
    finally:
        p.free()


def test_results_stay_sharded_and_root_gathers():
    d = os.path.join(CORPUS, "mlp")
    ins = [np.load(p) for p in sorted(glob.glob(os.path.join(d, "in*.npy")))]
    p = SdyProgram(parse_file(os.path.join(d, f"n{N}.mlir")), comm)
    try:
        (y,) = p.run("main", ins)
        if N > 1:  # result sharding [{"x"}, {}]: each process holds its rows only
            assert isinstance(y, DistributedTensor) and y.interior.shape[0] == 8 // MESH_2D[N][0]
        whole = p.whole(y, root=0)
        if comm.rank == 0:
            _compare(whole, np.load(os.path.join(d, f"n{N}.out0.npy")), "mlp on root")
        else:
            assert whole is None
    finally:
        p.free()


def _mesh_text():
    a, b = MESH_2D[N]
    return f'sdy.mesh @mesh = <["x"={a}, "y"={b}]>'


SDY_OPS = """{mesh}
func.func @main(%arg0: tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}) -> (tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{}}, {{"y"}}]>}}) {{
  %0 = sdy.all_gather [{{}}, {{"y"}}] %arg0 out_sharding=<@mesh, [{{"x"}}, {{}}]> : tensor<8x8xf32>
  %1 = sdy.all_slice [{{}}, {{"y"}}] %0 out_sharding=<@mesh, [{{"x"}}, {{"y"}}]> : tensor<8x8xf32>
  %2 = sdy.all_to_all [{{"y"}}: 1->0] %1 out_sharding=<@mesh, [{{"x", "y"}}, {{}}]> : tensor<8x8xf32>
  %3 = sdy.collective_permute %2 out_sharding=<@mesh, [{{"y", "x"}}, {{}}]> : tensor<8x8xf32>
  %4 = stablehlo.tanh %3 {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{{}}, {{}}], unreduced={{"x"}}>]>}} : tensor<8x8xf32>
  %5 = sdy.all_reduce {{"x"}} %4 out_sharding=<@mesh, [{{}}, {{}}]> : tensor<8x8xf32>
  %6 = sdy.reduce_scatter [{{"y"}}, {{}}] %5 out_sharding=<@mesh, [{{"y"}}, {{}}]> : tensor<8x8xf32>
  %7 = sdy.reshard %6 <@mesh, [{{}}, {{"x"}}]> : tensor<8x8xf32>
  %8 = sdy.propagation_barrier %7 allowed_direction=BACKWARD : tensor<8x8xf32>
  sdy.sharding_group %8 group_id=0 : tensor<8x8xf32>
  %9 = sdy.named_computation<"double">(%8) (%a: tensor<8x8xf32>) {{
    %c = sdy.constant dense<2.000000e+00> : tensor<8x8xf32>
    %m = stablehlo.multiply %a, %c : tensor<8x8xf32>
    sdy.return %m : tensor<8x8xf32>
  }} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %10 = sdy.data_flow_edge %9 sharding=<@mesh, [{{"x", ?}}, {{}}]> : tensor<8x8xf32>
  %11 = sdy.sharding_constraint %10 <@mesh, [{{"x"}}p0, {{?}}]> : tensor<8x8xf32>
  return %11 : tensor<8x8xf32>
}}
"""


def test_every_sdy_op_equals_numpy():
    x = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
    m = parse(SDY_OPS.format(mesh=_mesh_text()))
    (y,) = run_sdy(m, "main", [x], comm)
    _compare(y, 2 * np.tanh(x), "sdy ops")


GENERAL_REDUCES = """{mesh}
func.func @main(%arg0: tensor<9x6xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}, %arg1: tensor<9x6xi32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}) -> (tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<f32>) {{
  %inf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %izero = stablehlo.constant dense<0> : tensor<i32>
  %last = stablehlo.reduce(%arg0 init: %zero) across dimensions = [0] : (tensor<9x6xf32>, tensor<f32>) -> tensor<6xf32>
   reducer(%a: tensor<f32>, %b: tensor<f32>) {{
    stablehlo.return %b : tensor<f32>
  }}
  %mn:2 = stablehlo.reduce(%arg0 init: %inf), (%arg1 init: %izero) across dimensions = [0] : (tensor<9x6xf32>, tensor<9x6xi32>, tensor<f32>, tensor<i32>) -> (tensor<6xf32>, tensor<6xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%i: tensor<i32>, %j: tensor<i32>) {{
    %lt = stablehlo.compare LT, %b, %a : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %lt, %b, %a : tensor<i1>, tensor<f32>
    %k = stablehlo.select %lt, %j, %i : tensor<i1>, tensor<i32>
    stablehlo.return %v, %k : tensor<f32>, tensor<i32>
  }}
  %big = stablehlo.reduce(%arg0 init: %zero) across dimensions = [0, 1] : (tensor<9x6xf32>, tensor<f32>) -> tensor<f32>
   reducer(%a: tensor<f32>, %b: tensor<f32>) {{
    %gt = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %m = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<f32>
    stablehlo.return %m : tensor<f32>
  }}
  return %last, %mn#0, %mn#1, %big : tensor<6xf32>, tensor<6xf32>, tensor<6xi32>, tensor<f32>
}}
"""


def test_reduce_with_any_body_runs_on_the_shards():
    """``reduce`` whose body is no single op (keep the last element: checks the shard order; a
    min with its index; a select-max to a scalar) folds each block, then the group's folds in
    shard order: equal to numpy, and no split operand is gathered (9 rows: uneven blocks)."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((9, 6)).astype(np.float32)
    idx = np.broadcast_to(np.arange(9, dtype=np.int32)[:, None], (9, 6)).copy()
    p = SdyProgram(parse(GENERAL_REDUCES.format(mesh=_mesh_text())), comm)
    try:
        gathered = []
        orig = DistributedTensor.gather
        DistributedTensor.gather = lambda self, *a, **k: gathered.append(self.global_shape) or orig(self, *a, **k)
        try:
            res = p.run("main", [x, idx])
        finally:
            DistributedTensor.gather = orig
        assert (9, 6) not in gathered and p.fallbacks == []
        last, mn, arg, big = (p.whole(r) for r in res)
        _compare(last, x[-1], "last")
        _compare(mn, x.min(axis=0), "min")
        _compare(arg, x.argmin(axis=0).astype(np.int32), "argmin")
        _compare(big, np.maximum(x.max(), np.float32(0)), "select-max")
    finally:
        p.free()


MANUAL_2D = """{mesh}
func.func @main(%arg0: tensor<8x6xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}) -> (tensor<8x6xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) {{
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{{"x"}}, {{"y"}}]>] out_shardings=[<@mesh, [{{"x"}}, {{}}]>] manual_axes={{"x"}} (%a: tensor<{rows}x6xf32>) {{
    %1 = "stablehlo.all_reduce"(%a) <{{replica_groups = dense<{groups}> : tensor<{ng}x{gs}xi64>, use_global_device_ids}}> ({{
    ^bb0(%p: tensor<f32>, %q: tensor<f32>):
      %s = stablehlo.maximum %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }}) : (tensor<{rows}x6xf32>) -> tensor<{rows}x6xf32>
    sdy.return %1 : tensor<{rows}x6xf32>
  }} : (tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}}
"""


def test_manual_computation_with_free_axis_and_max_all_reduce():
    """Manual over "x" only (the free "y" axis stays whole in the body): an all_reduce(max) over the
    x-groups of device ids {y fixed} equals the max over the row blocks."""
    a, b = MESH_2D[N]
    groups = [[i * b + j for i in range(a)] for j in range(b)]
    text = MANUAL_2D.format(mesh=_mesh_text(), rows=8 // a, groups=str(groups), ng=len(groups), gs=len(groups[0]))
    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    (y,) = run_sdy(parse(text), "main", [x], comm)
    want = np.concatenate([np.max(x.reshape(a, 8 // a, 6), axis=0)] * a)
    _compare(y, want, "manual max")


def test_bad_arguments_fail_alike_before_communication():
    d = os.path.join(CORPUS, "mlp")
    m = parse_file(os.path.join(d, f"n{N}.mlir"))
    ins = [np.load(p) for p in sorted(glob.glob(os.path.join(d, "in*.npy")))]
    with pytest.raises(MLIRError, match="argument 0: expected tensor<8x16xf32>, got an array of shape"):
        run_sdy(m, "main", [ins[0][:4]] + ins[1:], comm)
    with pytest.raises(MLIRError, match=r"argument 1: expected element type f32 \(float32\), got float64"):
        run_sdy(m, "main", [ins[0], ins[1].astype(np.float64)] + ins[2:], comm)
    other = {1: 2, 2: 4, 4: 2}[N]
    with pytest.raises(MLIRError, match=f"has {other} devices, but the program runs on {N} processes"):
        SdyProgram(parse_file(os.path.join(d, f"n{other}.mlir")), comm)
    comm.Barrier()


SUB_AXES = """sdy.mesh @mesh = <["x"=4]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x":(2)2}, {"x":(1)2}]>}) {
  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x":(1)2}, {"x":(2)2}]> : tensor<8x8xf32>
  %1 = stablehlo.exponential %0 : tensor<8x8xf32>
  %2 = stablehlo.add %1, %arg0 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
"""


@pytest.mark.skipif(N != 4, reason="sub-axes of a 4-device axis")
def test_sub_axis_shardings_run():
    x = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
    p = SdyProgram(parse(SUB_AXES), comm)
    try:
        (y,) = p.run("main", [x])
        assert y.interior.shape == (4, 4)  # "x":(2)2 splits rows in 2, "x":(1)2 columns in 2
        _compare(p.whole(y), np.exp(x) + x, "sub-axes")
    finally:
        p.free()


DEVICE_IDS = """sdy.mesh @mesh = <["x"={n}], device_ids=[{ids}]>
func.func @main(%arg0: tensor<{rows}x2xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) -> (tensor<{rows}x2xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}, tensor<{rows}x2xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{}}, {{}}]>}}) {{
  %0:2 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{{"x"}}, {{}}]>] out_shardings=[<@mesh, [{{"x"}}, {{}}]>, <@mesh, [{{}}, {{}}]>] manual_axes={{"x"}} (%a: tensor<2x2xf32>) {{
    %1 = "stablehlo.collective_permute"(%a) <{{source_target_pairs = dense<{pairs}> : tensor<{n}x2xi64>}}> : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %2 = "stablehlo.all_gather"(%a) <{{all_gather_dim = 0 : i64, replica_groups = dense<[[{order}]]> : tensor<1x{n}xi64>, use_global_device_ids}}> : (tensor<2x2xf32>) -> tensor<{rows}x2xf32>
    sdy.return %1, %2 : tensor<2x2xf32>, tensor<{rows}x2xf32>
  }} : (tensor<{rows}x2xf32>) -> (tensor<{rows}x2xf32>, tensor<{rows}x2xf32>)
  return %0#0, %0#1 : tensor<{rows}x2xf32>, tensor<{rows}x2xf32>
}}
"""


def test_device_ids_map_replica_groups_to_mesh_positions():
    """Mesh position i holds device ``device_ids[i]`` (reversed here): a permute from device d to d+1
    moves block i to position i-1, and a group listed in device order gathers the blocks reversed."""
    ids = list(range(N))[::-1]
    text = DEVICE_IDS.format(n=N, ids=", ".join(map(str, ids)), rows=2 * N,
                             pairs=str([[d, (d + 1) % N] for d in range(N)]), order=", ".join(map(str, range(N))))
    x = np.arange(4 * N, dtype=np.float32).reshape(2 * N, 2)
    shifted, gathered = run_sdy(parse(text), "main", [x], comm)
    blocks = x.reshape(N, 2, 2)
    _compare(shifted, np.roll(blocks, -1, axis=0).reshape(2 * N, 2) if N > 1 else x, "permute by device id")
    _compare(gathered, blocks[::-1].reshape(2 * N, 2), "gather in device order")


GROUPED = """{mesh}
func.func @main(%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {{
  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>
  %1 = stablehlo.negate %arg1 : tensor<8x8xf32>
  sdy.sharding_group %0 group_id=3 : tensor<8x8xf32>
  sdy.sharding_group %1 group_id=3 : tensor<8x8xf32>
  %2 = sdy.sharding_constraint %1 <@mesh, [{{}}, {{"x"}}]> : tensor<8x8xf32>
  %3 = stablehlo.add %0, %2 : tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
}}
"""


def test_run_follows_propagation():
    """The group member %0 gets the constraint's column split at run time (explain shows it) and the
    values stay right."""
    from meshrt.mlir.shardy.cli import explain

    m = parse(GROUPED.format(mesh=_mesh_text()))
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8)
    (y,) = run_sdy(m, "main", [x, 2 * x], comm)
    _compare(y, np.exp(x) - 2 * x, "grouped")
    text = explain(m, "main", comm)
    if comm.rank == 0:
        line = next(ln for ln in text.splitlines() if "stablehlo.exponential" in ln)
        want = '[{}, {"x"}]' if MESH_2D[N][0] > 1 else "[{}, {}]"
        assert f"// -> <@mesh, {want}>" in line, line


POPCNT = """{mesh}
func.func @main(%arg0: tensor<8x8xi32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}) -> (tensor<8x8xi32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}) {{
  %0 = stablehlo.popcnt %arg0 : tensor<8x8xi32>
  return %0 : tensor<8x8xi32>
}}
"""


def test_popcnt_runs_on_the_shards():
    """``jax.lax.population_count``: each process counts the bits of its own block (nothing moves)."""
    x = (np.arange(64, dtype=np.int64) * 40503 - 2**31 + 7).astype(np.int32).reshape(8, 8)
    x[0, :3] = [-1, 0, np.iinfo(np.int32).min]
    want = np.array([bin(int(v) & 0xFFFFFFFF).count("1") for v in x.ravel()], np.int32).reshape(8, 8)
    p = SdyProgram(parse(POPCNT.format(mesh=_mesh_text())), comm)
    try:
        (y,) = p.run("main", [x])
        if N > 1:
            assert isinstance(y, DistributedTensor) and y.interior.shape == (8 // MESH_2D[N][0], 8 // MESH_2D[N][1])
        assert p.fallbacks == []  # not run on gathered data
        _compare(p.whole(y), want, "popcnt")
    finally:
        p.free()


def test_sharded_argmax_keeps_jax_ties_and_nan():
    """JAX's argmax reduce runs as DistributedTensor.argmax: ties go to the lower index, NaN wins."""
    x = np.array([[1, 3, 3, 0], [np.nan, 1, np.nan, 2], [-1, -1, -1, -1], [0, 0, 5, 5],
                  [2, 1, 0, -1], [np.inf, 1, np.inf, 0], [0, 1, 2, 3], [3, 2, 1, 0]], np.float32)
    res = run_sdy(parse_file(os.path.join(CORPUS, "reductions", f"n{N}.mlir")), "main", [x], comm)
    _compare(res[0], np.argmax(x, axis=1).astype(np.int32), "argmax")


RESHAPES = """{mesh}
func.func @main(%arg0: tensor<8x12xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{"y"}}]>}}) -> (tensor<96xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}]>}}, tensor<4x2x12xf32>, tensor<8x12xf32>) {{
  %0 = stablehlo.reshape %arg0 : (tensor<8x12xf32>) -> tensor<4x24xf32>
  %1 = call @twice(%0) : (tensor<4x24xf32>) -> tensor<4x24xf32>
  %2 = sdy.sharding_constraint %1 <@mesh, [{{"x"}}, {{}}]> : tensor<4x24xf32>
  %3 = stablehlo.reshape %2 : (tensor<4x24xf32>) -> tensor<96xf32>
  %4 = stablehlo.reshape %arg0 : (tensor<8x12xf32>) -> tensor<4x2x12xf32>
  %5 = stablehlo.sine %4 : tensor<4x2x12xf32>
  %6 = stablehlo.reshape %3 : (tensor<96xf32>) -> tensor<8x12xf32>
  %7 = sdy.sharding_constraint %6 <@mesh, [{{"y"}}, {{"x"}}]> : tensor<8x12xf32>
  return %3, %5, %7 : tensor<96xf32>, tensor<4x2x12xf32>, tensor<8x12xf32>
}}
func.func private @twice(%arg0: tensor<4x24xf32>) -> tensor<4x24xf32> {{
  %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
  %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4x24xf32>
  %1 = stablehlo.multiply %arg0, %0 : tensor<4x24xf32>
  return %1 : tensor<4x24xf32>
}}
"""


def test_reshapes_and_calls_equal_numpy_and_never_gather():
    """Reshapes across split dims (to a constraint's sharding, split, merged, back to a transposed
    split) and a private function's call: the values equal numpy, and no reshape gathers."""
    from meshrt.mlir.shardy.cli import explain

    x = np.arange(96, dtype=np.float32).reshape(8, 12) / 7
    m = parse(RESHAPES.format(mesh=_mesh_text()))
    flat, sines, back = run_sdy(m, "main", [x], comm)
    _compare(flat, 2 * x.reshape(96), "reshape to the constraint")
    _compare(sines, np.sin(x.reshape(4, 2, 12)), "split")
    _compare(back, 2 * x, "back, transposed split")
    text = explain(m, "main", comm)
    if comm.rank == 0:
        lines = [ln for ln in text.splitlines() if "stablehlo.reshape" in ln]
        assert len(lines) == 4 and not any("all_gather" in ln or "gather whole" in ln for ln in lines), lines
        if N == 4:  # each process lacks half its (4, 24) block: 4 x 24 float32
            assert "reshape exchange of the runs that change owner [384 B over all processes]" in lines[0], lines[0]
        # the split and the merge of a row-split tensor move nothing
        assert "moves" not in lines[1] and "moves" not in lines[2], lines


def test_partially_manual_body_stays_sharded_over_its_free_axes():
    """In a body manual over "x" of a 2x2 mesh, ``sharding_constraint``/``reshard`` over "y" lay the value
    out on the sub-mesh of "y" (this process's "x" block split over the 2 processes of its "x" row): no
    gather; a scalar constraint in an ``all_reduce`` region is a no-op; the results equal numpy's."""
    sizes = {1: (1, 1), 2: (1, 2), 4: (2, 2)}[N]
    text = f"""sdy.mesh @mesh = <["x"={sizes[0]}, "y"={sizes[1]}]>
func.func @main(%arg0: tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) -> (tensor<8x8xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) {{
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{{"x", ?}}, {{?}}]>] out_shardings=[<@mesh, [{{"x", ?}}, {{?}}]>] manual_axes={{"x"}} (%arg1: tensor<{8 // sizes[0]}x8xf32>) {{
    %1 = sdy.sharding_constraint %arg1 <@mesh, [{{}}, {{"y"}}]> : tensor<{8 // sizes[0]}x8xf32>
    %2 = stablehlo.exponential %1 : tensor<{8 // sizes[0]}x8xf32>
    %3 = "stablehlo.all_reduce"(%2) <{{replica_groups = dense<{[[i * sizes[1] + j for i in range(sizes[0])] for j in range(sizes[1])]}> : tensor<{sizes[1]}x{sizes[0]}xi64>, use_global_device_ids}}> ({{
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      %c = sdy.sharding_constraint %s <@mesh, []> : tensor<f32>
      stablehlo.return %c : tensor<f32>
    }}) : (tensor<{8 // sizes[0]}x8xf32>) -> tensor<{8 // sizes[0]}x8xf32>
    %4 = sdy.reshard %3 <@mesh, [{{"y"}}, {{}}]> : tensor<{8 // sizes[0]}x8xf32>
    sdy.return %4 : tensor<{8 // sizes[0]}x8xf32>
  }} : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}}
"""
    x = np.arange(64, dtype=np.float32).reshape(8, 8) / 64
    seen = {}
    p = SdyProgram(parse(text), comm)
    p.on_result = lambda op, res, local: seen.setdefault(op.name, (res[0], local))
    try:
        got = p.whole(p.run("main", [x])[0])
    finally:
        p.free()
    blocks = np.split(np.exp(x), sizes[0])
    np.testing.assert_allclose(got, np.concatenate([sum(blocks)] * sizes[0]), rtol=1e-6)
    for name, dim in (("sdy.sharding_constraint", 1), ("stablehlo.all_reduce", 1), ("sdy.reshard", 0)):
        v, local = seen[name]
        assert local == (sizes[1] == 1), name  # no free axis of size > 1: the body runs per process
        if sizes[1] == 1:
            continue
        assert isinstance(v, DistributedTensor) and v.mesh.axis_names == ("y",) and v.mesh.size == sizes[1], name
        assert v.global_shape == (8 // sizes[0], 8) and v.sharding.dim_axes(dim) == (0,), name
        assert v.interior.shape[dim] == v.global_shape[dim] // sizes[1], name


def test_reshape_onto_sub_axes_moves_nothing():
    """(8, 3) split over "x"=N reshaped to (2, 4, 3): at 4 processes "x" does not divide the dim of 2
    and propagation splits it into the sub-axes "x":(1)2 and "x":(2)2 (Shardy's rule), which keep
    every block where it is; merged back to (24,) the result is split over all of "x" again.
    Equal to numpy at every count."""
    from meshrt.mlir.shardy.cli import explain

    text = f'''sdy.mesh @mesh = <["x"={N}]>
func.func public @main(%arg0: tensor<8x3xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}, {{}}]>}}) -> (tensor<24xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{"x"}}]>}}) {{
  %0 = stablehlo.reshape %arg0 : (tensor<8x3xf32>) -> tensor<2x4x3xf32>
  %1 = stablehlo.sine %0 : tensor<2x4x3xf32>
  %2 = stablehlo.reshape %1 : (tensor<2x4x3xf32>) -> tensor<24xf32>
  return %2 : tensor<24xf32>
}}'''
    x = np.arange(24, dtype=np.float32).reshape(8, 3) / 7
    (y,) = run_sdy(parse(text), "main", [x], comm)
    _compare(y, np.sin(x).reshape(24), "sub-axes")
    out = explain(parse(text), "main", comm)
    if comm.rank == 0:
        lines = [ln for ln in out.splitlines() if "stablehlo.reshape" in ln or "stablehlo.sine" in ln]
        assert f"// meshrt: {N} processes, 0 bytes moved in all" in out, out  # (a local re-slice may be noted)
        if N == 4:
            assert '-> <@mesh, [{"x":(1)2}, {"x":(2)2}, {}]>' in lines[0], lines[0]
