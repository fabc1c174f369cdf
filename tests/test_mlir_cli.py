"""meshrt mlir partition / run, the committed partitioned corpus, and errors raised before running."""

import os
import subprocess
import sys

import numpy as np
import pytest

from meshrt.cli import find_mlir_opt, main, mlir_partition
from meshrt.launch import find_mpiexec
from meshrt.mlir import MLIRError, parse, parse_file
from meshrt.mlir.interpreters.spmd import check_function, run_function

CORPUS = os.path.join(os.path.dirname(__file__), "mlir", "corpus")
GENERATED = sorted(f[: -len(".partitioned.mlir")] for f in os.listdir(CORPUS)
                   if f.endswith(".partitioned.mlir")
                   and open(os.path.join(CORPUS, f)).readline().startswith("// Generated"))


def _strip_header(text):
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("//"):
        lines.pop(0)
    return "".join(lines)


@pytest.mark.skipif(find_mlir_opt() is None, reason="mlir-opt not installed (apt-get install mlir-22-tools)")
@pytest.mark.parametrize("stem", GENERATED)
def test_committed_partitioned_text_is_what_mlir_opt_makes(stem):
    with open(os.path.join(CORPUS, f"{stem}.partitioned.mlir")) as f:
        committed = _strip_header(f.read())
    assert mlir_partition(os.path.join(CORPUS, f"{stem}.mlir")) == committed


def test_corpus_has_the_generated_files():
    assert {"mlp", "mlp2d", "elementwise", "reductions", "halo", "resharding"} <= set(GENERATED)


def test_partition_without_mlir_opt_names_the_package(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("MESHRT_MLIR_OPT", str(tmp_path / "nowhere" / "mlir-opt"))
    assert find_mlir_opt() is None
    assert main(["mlir", "partition", os.path.join(CORPUS, "mlp.mlir")]) == 2
    err = capsys.readouterr().err
    assert "mlir-22-tools" in err and "MESHRT_MLIR_OPT" in err and "nowhere" in err


@pytest.mark.skipif(find_mlir_opt() is None, reason="mlir-opt not installed")
def test_partition_writes_output_and_reports_mlir_opt_errors(tmp_path, capsys):
    out = tmp_path / "mlp.part.mlir"
    assert main(["mlir", "partition", os.path.join(CORPUS, "mlp.mlir"), "-o", str(out)]) == 0
    assert "shard.all_reduce" in out.read_text()
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @f(%a: i8) -> i8 {\n  %0 = arith.addi %a, %a : i8\n  return %0 : i8\n}\n"
                   "shard.grid @g(shape = 2)\n"
                   "func.func @g(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                   "  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding\n"
                   "  %0 = shard.shard %a to %s : tensor<2xf32>\n  %1 = arith.addi %0, %0 : tensor<2xf32>\n"
                   "  return %1 : tensor<2xf32>\n}\n")
    assert main(["mlir", "partition", str(bad)]) == 2
    assert "mlir-opt failed" in capsys.readouterr().err


# -- errors before anything runs ---------------------------------------------------------------------

UNSUPPORTED = """shard.grid @g3(shape = 3)
func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = shard.all_reduce %a on @g3 grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>
  %c = arith.constant true
  %x = scf.if %c -> (tensor<4xf32>) {
    %y = "tosa.erf"(%r) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %y : tensor<4xf32>
  } else {
    scf.yield %r : tensor<4xf32>
  }
  return %x : tensor<4xf32>
}
func.func @calls(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @f(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @body(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %o: f32):
    %z = "foo.bar"(%x) : (f32) -> f32
    linalg.yield %z : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""


@pytest.mark.parametrize("name, where, op", [("f", "prog.mlir:6:10", "tosa.erf"),
                                             ("calls", "prog.mlir:6:10", "tosa.erf"),
                                             ("body", "prog.mlir:21:10", "foo.bar")])
def test_unsupported_op_named_with_location_before_running(name, where, op):
    m = parse(UNSUPPORTED, "prog.mlir")
    with pytest.raises(MLIRError, match=rf"^{where}: unsupported op '{op}'"):
        check_function(m, name)
    # the all_reduce on a grid of 3 would fail on one process if anything ran first
    with pytest.raises(MLIRError, match=rf"^{where}: unsupported op '{op}'"):
        run_function(m, name, [np.zeros(4, np.float32)])


def test_bad_shard_attributes_raise_with_location_before_running():
    m = parse("shard.grid @g(shape = 2x?)\n"
              "func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
              "  %r = shard.all_reduce %a on @g grid_axes = [0] : tensor<4xf32> -> tensor<4xf32>\n"
              "  %s = shard.sharding @g split_axes = [[1], [1]] : !shard.sharding\n"
              "  return %r : tensor<4xf32>\n}\n", "bad.mlir")
    with pytest.raises(MLIRError, match=r"^bad.mlir:4:8: 'shard.sharding' split_axes"):
        run_function(m, "f", [np.zeros(4, np.float32)])


def test_runtime_errors_name_the_op_and_location():
    m = parse("func.func @f(%a: tensor<4xf32>, %i: index) -> f32 {\n"
              "  %x = tensor.extract %a[%i] : tensor<4xf32>\n"
              "  return %x : f32\n}\n", "idx.mlir")
    with pytest.raises(MLIRError, match=r"^idx.mlir:2:8: 'tensor.extract' failed on process 0: IndexError"):
        run_function(m, "f", [np.zeros(4, np.float32), 9])


def test_missing_function_and_bad_arguments():
    m = parse("func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {\n  return %a : tensor<4xf32>\n}\n", "p.mlir")
    with pytest.raises(MLIRError, match="no function @g; the module has @f"):
        run_function(m, "g", [])
    with pytest.raises(MLIRError, match=r"argument 0: expected tensor<4xf32>, got an array of shape \(5,\)"):
        run_function(m, "f", [np.zeros(5, np.float32)])
    with pytest.raises(MLIRError, match="expected element type f32"):
        run_function(m, "f", [np.zeros(4)])


# -- meshrt mlir run ---------------------------------------------------------------------------------

def _mlp_args(tmp_path):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal(s) for s in ((8, 32), (32, 64), (64, 32))]
    paths = []
    for k, a in enumerate(arrays):
        paths.append(str(tmp_path / f"a{k}.npy"))
        np.save(paths[-1], a)
    x, w1, w2 = arrays
    return paths, np.maximum(x @ w1, 0) @ w2


def test_run_global_program_serially(tmp_path):
    paths, expected = _mlp_args(tmp_path)
    out = tmp_path / "out"
    assert main(["mlir", "run", os.path.join(CORPUS, "mlp.mlir"), "--func", "mlp", "--args", *paths,
                 "--out", str(out)]) == 0
    np.testing.assert_allclose(np.load(out / "result0.npy"), expected, rtol=1e-12)


def test_run_reports_bad_input(tmp_path, capsys):
    paths, _ = _mlp_args(tmp_path)
    assert main(["mlir", "run", os.path.join(CORPUS, "mlp.mlir"), "--func", "nope", "--args", *paths,
                 "--out", str(tmp_path)]) == 1
    assert "no function @nope" in capsys.readouterr().err


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_run_partitioned_program_on_two_processes(tmp_path):
    paths, expected = _mlp_args(tmp_path)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "meshrt.cli", "mlir", "run", "-n", "2",
           os.path.join(CORPUS, "mlp.partitioned.mlir"), "--func", "mlp",
           "--shardings-from", os.path.join(CORPUS, "mlp.mlir"), "--args", *paths, "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    np.testing.assert_allclose(np.load(out / "result0.npy"), expected, rtol=1e-12)
    assert sorted(os.listdir(out)) == ["result0.npy"]


def test_parse_every_corpus_file():
    for f in sorted(os.listdir(CORPUS)):
        m = parse_file(os.path.join(CORPUS, f))
        assert m.functions(), f
