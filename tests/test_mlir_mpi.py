"""Bufferized shard programs and the mpi dialect, on one process: memref aliasing (views), linalg
on memrefs, each mpi op and its retval/error-class semantics, the verifier on memrefs against
mlir-opt 22, errors said at file:line:col before anything runs, the committed lowerings of
tests/mlir/mpi (regenerated with mlir-opt when installed) and ``meshrt mlir compare``.
The same programs on 2 to 4 processes: tests/mpi/test_mlir_lowered.py.
"""

import glob
import importlib.util
import os
import subprocess
import sys

import numpy as np
import pytest

from meshrt.cli import find_mlir_opt, main
from meshrt.mlir import MLIRError, parse, parse_file, verify
from meshrt.mlir.interpreters.spmd import Program, check_function, run_function
from meshrt.mlir.ir import memref_type

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "mlir", "mpi")
MLIR_OPT = find_mlir_opt()


def _mlir_opt_22():
    if MLIR_OPT is None:
        return None
    out = subprocess.run([MLIR_OPT, "--version"], capture_output=True, text=True).stdout
    return MLIR_OPT if "version 22" in out or "version 23" in out else None


needs_mlir_opt = pytest.mark.skipif(_mlir_opt_22() is None, reason="mlir-opt 22 (mlir-22-tools) is not installed")


def run1(text, name, args):
    return run_function(parse(text, "t.mlir"), name, args)


# -- memref: views alias -----------------------------------------------------------------------------------

def test_memref_type_reads_shape_element_layout():
    m = parse("func.func @f(%a: memref<2x?xf32, strided<[?, 1], offset: ?>>) {\n return\n}")
    t = memref_type(m.functions()["f"].attributes["function_type"].type.inputs[0])
    assert t.shape == (2, None) and str(t.element) == "f32" and t.layout.startswith("strided<")
    assert memref_type(parse("func.func @f(%a: memref<*xf32>) {\n return\n}").functions()["f"]
                       .attributes["function_type"].type.inputs[0]) is None


def test_subview_writes_through_and_rank_reduces():
    text = """func.func @f(%m: memref<4x5xf64>, %v: f64, %i: index) -> f64 {
  %s = memref.subview %m[%i, 0] [1, 3] [1, 2] : memref<4x5xf64> to memref<3xf64, strided<[2], offset: ?>>
  linalg.fill ins(%v : f64) outs(%s : memref<3xf64, strided<[2], offset: ?>>)
  %c2 = arith.constant 2 : index
  %x = memref.load %s[%c2] : memref<3xf64, strided<[2], offset: ?>>
  return %x : f64
}"""
    m = np.zeros((4, 5))
    [x] = run1(text, "f", [m, 7.0, np.int64(2)])
    want = np.zeros((4, 5))
    want[2, 0::2] = 7.0
    np.testing.assert_array_equal(m, want)  # the caller's buffer, written through the view
    assert x == 7.0


def test_copy_store_collapse_cast_and_tensor_values():
    text = """func.func @f(%t: tensor<2x3xi32>) -> (tensor<6xi32>, tensor<2x3xi32>) {
  %b = bufferization.to_buffer %t : tensor<2x3xi32> to memref<2x3xi32>
  %c = memref.alloc() : memref<2x3xi32>
  memref.copy %b, %c : memref<2x3xi32> to memref<2x3xi32>
  %flat = memref.collapse_shape %c [[0, 1]] : memref<2x3xi32> into memref<6xi32>
  %snap = bufferization.to_tensor %c : memref<2x3xi32> to tensor<2x3xi32>
  %v = arith.constant 9 : i32
  %i = arith.constant 4 : index
  memref.store %v, %flat[%i] : memref<6xi32>
  %d = memref.cast %flat : memref<6xi32> to memref<?xi32>
  %e = memref.cast %d : memref<?xi32> to memref<6xi32>
  %r = bufferization.to_tensor %e : memref<6xi32> to tensor<6xi32>
  memref.dealloc %c : memref<2x3xi32>
  return %r, %snap : tensor<6xi32>, tensor<2x3xi32>
}"""
    t = np.arange(6, dtype=np.int32).reshape(2, 3)
    r, snap = run1(text, "f", [t])
    assert r.tolist() == [0, 1, 2, 3, 9, 5]  # the store through the collapsed view reached the buffer
    assert snap.tolist() == [[0, 1, 2], [3, 4, 5]]  # a tensor taken before the store keeps its value
    assert t.tolist() == [[0, 1, 2], [3, 4, 5]]  # to_buffer of a tensor: the tensor is unchanged


def test_write_into_read_only_buffer_is_an_error_at_the_op():
    text = """func.func @f(%t: tensor<3xf32>, %v: f32) {
  %b = bufferization.to_buffer %t read_only : tensor<3xf32> to memref<3xf32>
  %i = arith.constant 0 : index
  memref.store %v, %b[%i] : memref<3xf32>
  return
}"""
    with pytest.raises(MLIRError, match=r"^t\.mlir:4:3: 'memref\.store' failed on process 0"):
        run1(text, "f", [np.zeros(3, np.float32), np.float32(1)])


def test_linalg_on_memrefs_writes_outs():
    text = """#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @f(%a: memref<2x2xf32>, %b: memref<2x2xf32>, %c: memref<2x2xf32>, %d: memref<2x2xf32>) {
  linalg.matmul ins(%a, %b : memref<2x2xf32>, memref<2x2xf32>) outs(%c : memref<2x2xf32>)
  linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%c : memref<2x2xf32>) outs(%d : memref<2x2xf32>) {
  ^bb0(%x: f32, %o: f32):
    %y = arith.addf %x, %o : f32
    linalg.yield %y : f32
  }
  linalg.transpose ins(%c : memref<2x2xf32>) outs(%a : memref<2x2xf32>) permutation = [1, 0]
  return
}"""
    a = np.array([[1, 2], [3, 4]], np.float32)
    b = np.array([[0, 1], [1, 0]], np.float32)
    c, d = np.ones((2, 2), np.float32), np.full((2, 2), 10, np.float32)
    a0 = a.copy()
    run1(text, "f", [a, b, c, d])
    np.testing.assert_array_equal(c, 1 + a0 @ b)
    np.testing.assert_array_equal(d, 10 + c)
    np.testing.assert_array_equal(a, c.T)


def test_shard_collectives_on_memrefs_one_process():
    text = """shard.grid @g(shape = 1)
func.func @f(%m: memref<2x3xf32>) -> (memref<2x3xf64>, memref<2x3xf32>) {
  %r = shard.all_reduce %m on @g grid_axes = [0] : memref<2x3xf32> -> memref<2x3xf64>
  %h = shard.update_halo %m on @g split_axes = [[0]] halo_sizes = [0, 1] : memref<2x3xf32>
  return %r, %h : memref<2x3xf64>, memref<2x3xf32>
}"""
    m = np.arange(6, dtype=np.float32).reshape(2, 3)
    r, h = run1(text, "f", [m])
    assert r.dtype == np.float64 and r.tolist() == m.tolist()
    assert h is m  # update_halo on a memref: the operand, updated in place


# -- the mpi dialect ----------------------------------------------------------------------------------------

MPI_OPS = """func.func @f(%m: memref<4xf32>) -> (i32, i32, i32, memref<4xf32>, i1, i1, i1) {
  %e0 = mpi.init : !mpi.retval
  %w = mpi.comm_world : !mpi.comm
  %e1, %rank = mpi.comm_rank(%w) : !mpi.retval, i32
  %size = mpi.comm_size(%w) : i32
  %c0 = arith.constant 0 : i32
  %sub = mpi.comm_split(%w, %c0, %rank) : !mpi.comm
  %subsize = mpi.comm_size(%sub) : i32
  %tag = arith.constant 5 : i32
  %out = memref.alloc() : memref<4xf32>
  %r1 = mpi.irecv(%out, %tag, %rank, %sub) : memref<4xf32>, i32, i32 -> !mpi.request
  %r2 = mpi.isend(%m, %tag, %rank, %sub) : memref<4xf32>, i32, i32 -> !mpi.request
  mpi.wait(%r2) : !mpi.request
  mpi.wait(%r1) : !mpi.request
  mpi.allreduce(%out, %out, MPI_SUM, %sub) : memref<4xf32>, memref<4xf32>
  mpi.barrier(%w)
  %bad = arith.constant 77 : i32
  %e2 = mpi.send(%m, %tag, %bad, %w) : memref<4xf32>, i32, i32 -> !mpi.retval
  %ok = mpi.retval_check %e1 = <MPI_SUCCESS> : i1
  %rank_err = mpi.retval_check %e2 = <MPI_ERR_RANK> : i1
  %cls = mpi.error_class %e2 : !mpi.retval
  %still = mpi.retval_check %cls = <MPI_ERR_RANK> : i1
  mpi.finalize
  return %rank, %size, %subsize, %out, %ok, %rank_err, %still : i32, i32, i32, memref<4xf32>, i1, i1, i1
}"""


def test_mpi_ops_and_retval_semantics():
    m = parse(MPI_OPS, "t.mlir")
    p = Program(m)
    try:
        x = np.arange(4, dtype=np.float32)
        rank, size, subsize, out, ok, rank_err, still = p.run("f", [x])
        assert (rank, size, subsize) == (0, 1, 1)
        np.testing.assert_array_equal(out, x)  # self message, then a sum over one process
        assert ok and rank_err and still  # a send to rank 77 gives MPI_ERR_RANK in its retval
        assert p._mpi_comms == []  # the split communicator was freed after the run
    finally:
        p.free()


def test_mpi_failure_without_retval_names_the_op():
    text = """func.func @f(%m: memref<2xf32>) {
  %w = mpi.comm_world : !mpi.comm
  %t = arith.constant 1 : i32
  %r = arith.constant 9 : i32
  mpi.send(%m, %t, %r, %w) : memref<2xf32>, i32, i32
  return
}"""
    with pytest.raises(MLIRError, match=r"^t\.mlir:5:3: 'mpi\.send' failed: MPI error"):
        run1(text, "f", [np.zeros(2, np.float32)])


def test_unsupported_reduction_said_before_running():
    text = """func.func @f(%m: memref<2xf32>) {
  %w = mpi.comm_world : !mpi.comm
  mpi.allreduce(%m, %m, MPI_MAXLOC, %w) : memref<2xf32>, memref<2xf32>
  return
}"""
    with pytest.raises(MLIRError, match=r"^t\.mlir:3:3: 'mpi\.allreduce' reduction MPI_MAXLOC is not run"):
        run1(text, "f", [np.zeros(2, np.float32)])


def test_dlti_rank_and_size_must_match_the_world():
    text = """module attributes { mpi.dlti = #dlti.map<"MPI:comm_world_rank" = 3, "MPI:comm_world_size" = 4> } {
  func.func @f() {
    return
  }
}"""
    with pytest.raises(MLIRError, match=r"MPI:comm_world_rank = 3, MPI:comm_world_size = 4; it cannot run on process"):
        run1(text, "f", [])
    ok = text.replace("= 3", "= 0").replace("= 4>", "= 1>")
    assert run1(ok, "f", []) == []


def test_bad_memref_argument_and_type_errors():
    text = "func.func @f(%m: memref<4xf32>) {\n  return\n}"
    with pytest.raises(MLIRError, match=r"^t\.mlir:1:1: @f argument 0: expected memref<4xf32>, got an array of shape \(3,\)"):
        run1(text, "f", [np.zeros(3, np.float32)])
    with pytest.raises(MLIRError, match=r"expected element type f32"):
        run1(text, "f", [np.zeros(4)])


def test_unknown_mpi_syntax_is_a_reader_error():
    with pytest.raises(MLIRError, match=r"^t\.mlir:2:3: 'mpi\.allreduce': unknown reduction MPI_AVG"):
        parse("func.func @f(%m: memref<2xf32>, %c: !mpi.comm) {\n"
              "  mpi.allreduce(%m, %m, MPI_AVG, %c) : memref<2xf32>, memref<2xf32>\n  return\n}", "t.mlir")


# -- verifier on memrefs, against mlir-opt 22 -------------------------------------------------------------------

MEMREF_CASES = [  # (op text, accepted by mlir-opt 22)
    ("all_reduce %a on @g grid_axes = [0] : memref<4x4xf32> -> memref<4x4xf32>", True),
    ("all_reduce %a on @g grid_axes = [0] : memref<4x4xf32> -> memref<4x4xf64>", True),
    ("all_reduce %a on @g grid_axes = [0] : memref<4x4xf32> -> tensor<4x4xf32>", True),
    ("all_reduce %a on @g grid_axes = [0] : memref<?x4xf32> -> memref<4x4xf32>", True),
    ("all_reduce %a on @g grid_axes = [0] : memref<4x4xf32, strided<[8, 1]>> -> memref<4x4xf32>", True),
    ("all_reduce %a on @g grid_axes = [0] : memref<f32> -> memref<f32>", True),
    ("all_reduce %a on @g grid_axes = [0] : memref<4x4xf32> -> memref<4x5xf32>", False),
    ("all_reduce %a on @g grid_axes = [0] : memref<4x4xf32> -> memref<16xf32>", False),
    ("all_gather %a on @g grid_axes = [0] gather_axis = 0 : memref<4x4xf32> -> memref<8x4xf32>", False),
    ("all_slice %a on @g grid_axes = [0] slice_axis = 0 : memref<4x4xf32> -> memref<2x4xf32>", False),
    ("reduce_scatter %a on @g grid_axes = [0] scatter_axis = 0 : memref<4x4xf32> -> memref<2x4xf32>", False),
    ("shift %a on @g grid_axes = [0] shift_axis = 0 offset = 1 : memref<4x4xf32> -> memref<4x4xf32>", False),
    ("update_halo %a on @g split_axes = [[0]] halo_sizes = [1, 1] : memref<4x4xf32>", True),
    ("update_halo %a on @g split_axes = [[0]] halo_sizes = [1, 1] : memref<4x4xf32, strided<[8,1]>>", True),
    ("update_halo %a on @g split_axes = [[0]] halo_sizes = [1, 1] : memref<f32>", False),
    ("update_halo %a on @g split_axes = [[0]] halo_sizes = [1, 1] : tensor<f32>", False),
]


def _memref_case(op):
    arg = op.split(": ", 1)[1].split(" -> ")[0]
    return f"shard.grid @g(shape = 2)\nfunc.func @f(%a: {arg}) {{\n  %0 = shard.{op}\n  return\n}}\n"


@pytest.mark.parametrize("op,accepted", MEMREF_CASES, ids=[f"{c[0].split()[0]}-{i}" for i, c in enumerate(MEMREF_CASES)])
def test_shard_ops_on_memrefs_verified_as_llvm_22(op, accepted):
    text = _memref_case(op)
    if accepted:
        verify(parse(text, "t.mlir"))
    else:
        with pytest.raises(MLIRError, match=r"^t\.mlir:3:8: "):
            verify(parse(text, "t.mlir"))


@needs_mlir_opt
def test_memref_cases_are_what_mlir_opt_says():
    for op, accepted in MEMREF_CASES:
        p = subprocess.run([MLIR_OPT, "-"], input=_memref_case(op), capture_output=True, text=True)
        assert (p.returncode == 0) == accepted, (op, p.stderr)


# -- the committed lowerings ---------------------------------------------------------------------------------------

def _tool():
    spec = importlib.util.spec_from_file_location("lower_corpus", os.path.join(HERE, "..", "tools", "lower_corpus.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@needs_mlir_opt
def test_committed_lowerings_are_what_mlir_opt_makes():
    made = _tool().outputs()
    for fname, text in made.items():
        with open(os.path.join(DATA, fname)) as f:
            assert f.read() == text, f"{fname} differs from what tools/lower_corpus.py makes"


def test_lowerings_parse_verify_and_use_the_mpi_dialect():
    files = sorted(glob.glob(os.path.join(DATA, "*.mpi.mlir")))
    assert len(files) >= 10
    dialects = set()
    for path in files:
        m = verify(parse_file(path))
        for f in m.functions():
            check_function(m, f)
        dialects |= {op.dialect for op in m.walk()}
    assert {"mpi", "memref", "bufferization"} <= dialects


# -- meshrt mlir compare ------------------------------------------------------------------------------------------

def test_compare_with_a_given_lowering(tmp_path, capsys):
    # the bufferized programs and their lowering, on 1-process grids
    def one(text):
        return text.replace("shape = 2)", "shape = 1)").replace("shape = 2x2)", "shape = 1x1)")

    a, b = tmp_path / "a.mlir", tmp_path / "b.mlir"
    a.write_text(one(open(os.path.join(DATA, "buffers.bufferized.mlir")).read()))
    b.write_text(one(open(os.path.join(DATA, "buffers.bufferized.mpi.mlir")).read()))
    for f in ("allreduce_memref", "allreduce_new_type", "allreduce_tensor_to_memref"):  # (halo ranks are constants)
        assert main(["mlir", "compare", str(a), "--lowered", str(b), "--func", f]) == 0
        assert "same: 1 result(s)" in capsys.readouterr().out


def test_compare_reports_the_first_differing_value(tmp_path, capsys):
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @f(%a: tensor<3xi32>) -> tensor<3xi32> {\n"
                    "  %0 = arith.addi %a, %a : tensor<3xi32>\n  return %0 : tensor<3xi32>\n}\n")
    low = tmp_path / "l.mlir"
    low.write_text("func.func @f(%a: tensor<3xi32>) -> tensor<3xi32> {\n"
                   "  %b = bufferization.to_buffer %a : tensor<3xi32> to memref<3xi32>\n"
                   "  %v = arith.constant 100 : i32\n  %i = arith.constant 1 : index\n"
                   "  memref.store %v, %b[%i] : memref<3xi32>\n"
                   "  %t = bufferization.to_tensor %b : memref<3xi32> to tensor<3xi32>\n"
                   "  %0 = arith.addi %a, %t : tensor<3xi32>\n  return %0 : tensor<3xi32>\n}\n")
    np.save(tmp_path / "a.npy", np.array([1, 2, 3], np.int32))
    assert main(["mlir", "compare", str(prog), "--lowered", str(low), "--func", "f",
                 "--args", str(tmp_path / "a.npy")]) == 1
    out = capsys.readouterr().out
    assert "first difference: result 0 at [1] on process 0: shard-level 4, lowered 102 (1 of 3 differ)" in out


def test_compare_needs_lower_or_lowered(tmp_path, capsys):
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @f() {\n  return\n}\n")
    assert main(["mlir", "compare", str(prog), "--func", "f"]) == 2
    assert "give --lower" in capsys.readouterr().err


@needs_mlir_opt
def test_compare_lower_runs_mlir_opt_on_two_processes(tmp_path):
    from meshrt.launch import find_mpiexec

    if find_mpiexec() is None:
        pytest.skip("no mpiexec")
    out = subprocess.run([sys.executable, "-m", "meshrt", "mlir", "compare", "-n", "2",
                          os.path.join(DATA, "reductions.n2.mlir"), "--lower", "--func", "row_sums",
                          "--keep", str(tmp_path)], capture_output=True, text=True, timeout=300,
                         cwd=str(tmp_path))  # outside the source tree: the installed meshrt
    assert out.returncode == 0, out.stderr
    assert "same: 1 result(s) of @row_sums equal on 2 process(es) and equal the global program" in out.stdout
    assert (tmp_path / "reductions.n2.mpi.mlir").read_text().count("mpi.allreduce") >= 1
    # one lowering per process, its rank folded to constants (mpi.dlti)
    out = subprocess.run([sys.executable, "-m", "meshrt", "mlir", "compare", "-n", "2",
                          os.path.join(DATA, "reductions.n2.mlir"), "--lower", "--per-process", "--func", "row_sums",
                          "--keep", str(tmp_path)], capture_output=True, text=True, timeout=300,
                         cwd=str(tmp_path))  # outside the source tree: the installed meshrt
    assert out.returncode == 0, out.stderr
    assert "(for each of the 2 processes: mpi.dlti)" in out.stdout and "same: 1 result(s)" in out.stdout
    one = (tmp_path / "reductions.n2.rank1.mpi.mlir").read_text()
    assert '"MPI:comm_world_rank" = 1' in one and "mpi.comm_rank" not in one


@pytest.mark.parametrize("text, message", [
    ('func.func @f(%m: memref<2xf32>) {\n  "mpi.send"(%m) : (memref<2xf32>) -> ()\n  return\n}',
     r"^t\.mlir:2:3: 'mpi\.send' takes 4 operand\(s\), found 1"),
    ('func.func @f(%m: memref<2xf32>, %t: i32) {\n  "mpi.send"(%m, %t, %t, %t) : (memref<2xf32>, i32, i32, i32) -> ()\n'
     '  return\n}', r"^t\.mlir:2:3: 'mpi\.send' operand 3 must be a !mpi\.comm, found i32"),
    ('func.func @f(%m: memref<2xf32>) {\n  %0 = "memref.subview"(%m) : (memref<2xf32>) -> memref<1xf32>\n  return\n}',
     r"^t\.mlir:2:8: 'memref\.subview' needs static_offsets, static_sizes and static_strides"),
    ('func.func @f(%m: memref<2xf32>) {\n  %0 = "memref.collapse_shape"(%m) : (memref<2xf32>) -> memref<2xf32>\n'
     '  return\n}', r"^t\.mlir:2:8: 'memref\.collapse_shape' needs its reassociation"),
])
def test_malformed_generic_ops_said_before_running(text, message):
    with pytest.raises(MLIRError, match=message):
        run1(text, "f", [np.zeros(2, np.float32)])


def test_get_sharding_of_an_unannotated_value_is_replicated():
    text = """shard.grid @g(shape = 2x2)
func.func @f(%a: tensor<4x8xf32>) -> !shard.sharding {
  %0 = shard.get_sharding %a : tensor<4x8xf32> -> !shard.sharding
  return %0 : !shard.sharding
}
func.func @h(%a: tensor<4x8xf32>) -> !shard.sharding {
  %s = shard.sharding @g split_axes = [[0], [1]] : !shard.sharding
  %b = shard.shard %a to %s : tensor<4x8xf32>
  %0 = shard.get_sharding %a : tensor<4x8xf32> -> !shard.sharding
  return %0 : !shard.sharding
}"""
    m = parse(text, "t.mlir")
    [s] = run_function(m, "f", [np.zeros((4, 8), np.float32)])
    assert str(s) == "shard.sharding @g split_axes = [[]]"
    [s] = run_function(m, "h", [np.zeros((4, 8), np.float32)])
    assert str(s) == "shard.sharding @g split_axes = [[0], [1]]"


def test_a_request_never_waited_for_is_completed_after_the_run():
    text = """func.func @f(%m: memref<3xi64>) {
  %w = mpi.comm_world : !mpi.comm
  %t = arith.constant 2 : i32
  %r = arith.constant 0 : i32
  %a = mpi.irecv(%m, %t, %r, %w) : memref<3xi64>, i32, i32 -> !mpi.request
  return
}"""
    p = Program(parse(text, "t.mlir"))
    try:
        assert p.run("f", [np.zeros(3, np.int64)]) == []
        assert p._mpi_requests == []  # cancelled: nothing sends it
    finally:
        p.free()


def test_collective_into_a_memref_checks_the_shape_it_gets():
    text = """shard.grid @g(shape = 1)
func.func @f(%m: memref<?x4xf32>) -> memref<4x4xf32> {
  %r = shard.all_reduce %m on @g grid_axes = [0] : memref<?x4xf32> -> memref<4x4xf32>
  return %r : memref<4x4xf32>
}"""
    assert run1(text, "f", [np.ones((4, 4), np.float32)])[0].shape == (4, 4)
    with pytest.raises(MLIRError, match=r"^t\.mlir:3:8: 'shard\.all_reduce' result has shape \(3, 4\) on this "
                                        r"process, which its type memref<4x4xf32> does not allow"):
        run1(text, "f", [np.ones((3, 4), np.float32)])


def test_module_attributes_need_a_dialect_prefix_as_in_llvm_22():
    bare = 'module attributes { dlti = #dlti.map<"MPI:comm_world_rank" = 0> } {\n  func.func @f() {\n    return\n  }\n}'
    with pytest.raises(MLIRError, match=r"^t\.mlir:1:1: 'builtin\.module' can only contain attributes with "
                                        r"dialect-prefixed names, found: 'dlti'"):
        verify(parse(bare, "t.mlir"))
    assert run1(bare.replace("{ dlti", "{ mpi.dlti"), "f", []) == []
    if _mlir_opt_22():
        assert subprocess.run([MLIR_OPT, "-"], input=bare, capture_output=True, text=True).returncode != 0


def test_compare_committed_lowering_with_shardings_on_two_processes(tmp_path):
    from meshrt.launch import find_mpiexec

    if find_mpiexec() is None:
        pytest.skip("no mpiexec")
    out = subprocess.run([sys.executable, "-m", "meshrt", "mlir", "compare", "-n", "2",
                          os.path.join(DATA, "reductions.n2.partitioned.mlir"),
                          "--lowered", os.path.join(DATA, "reductions.n2.mpi.mlir"),
                          "--shardings-from", os.path.join(DATA, "reductions.n2.mlir"), "--func", "col_max"],
                         capture_output=True, text=True, timeout=300,
                         cwd=str(tmp_path))  # outside the source tree: the installed meshrt
    assert out.returncode == 0, out.stderr
    assert "same: 1 result(s) of @col_max equal on 2 process(es) and equal the global program" in out.stdout


@needs_mlir_opt
def test_a_greedy_rewrite_erases_update_halo_of_a_memref():
    """What running both levels found in MLIR 22: shard.update_halo declares no memory effects, so a
    pass with the greedy rewriter (here the all_slice lowering) erases it on a memref whose result is
    unused, although it writes the memref.  lower_flags() runs that pass only where an all_slice is."""
    from meshrt.mlir.lowering import LOWER_FLAGS, lower_flags

    text = open(os.path.join(DATA, "buffers.bufferized.mlir")).read()
    erased = subprocess.run([MLIR_OPT, LOWER_FLAGS[0], "-"], input=text, capture_output=True, text=True).stdout
    m = parse(erased, "erased.mlir")
    assert not any(op.name == "shard.update_halo" for op in m.functions()["update_halo_subview"].walk())
    assert lower_flags(text) == LOWER_FLAGS[1:]
