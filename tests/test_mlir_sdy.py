"""Reading and checking Shardy programs (sdy + StableHLO as JAX prints them), serially: the JAX
corpus in both forms, the sdy attributes, every constraint of shardy-sdy-ops.txt as a
``file:line:col`` error, StableHLO op semantics against numpy, and bad input stopping before a run."""

import glob
import os

import numpy as np
import pytest

from meshrt.errors import MLIRError
from meshrt.mlir import parse, parse_file
from meshrt.mlir.interpreters import stablehlo as H
from meshrt.mlir.dialects.sdy_attrs import parse_mesh, parse_sharding, parse_sharding_list
from meshrt.mlir.dialects.sdy import verify_sdy
from meshrt.mlir.shardy.program import SdyProgram, is_sdy, run_sdy

CORPUS = os.path.join(os.path.dirname(__file__), "mlir", "sdy")
FILES = sorted(glob.glob(os.path.join(CORPUS, "*", "n*.mlir")))


class _Comm:  # one process, no MPI needed for the checks that fail before any communication
    size, rank = 1, 0


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, CORPUS))
def test_corpus_reads_and_verifies(path):
    m = verify_sdy(parse_file(path))
    assert is_sdy(m)
    main = m.functions()["main"]
    assert "arg_attrs" in main.attributes
    SdyProgram(m, comm=type("C", (), {"size": int(os.path.basename(path)[1]), "rank": 0})()).check("main")


def test_pretty_and_generic_forms_give_the_same_ops():
    for d in sorted(glob.glob(os.path.join(CORPUS, "*"))):
        a = parse_file(os.path.join(d, "n4.mlir"))
        b = parse_file(os.path.join(d, "n4.generic.mlir"))
        na = [op.name for op in a.walk()]
        nb = [op.name for op in b.walk()]
        assert na == nb, d


def test_sharding_attributes_round_trip():
    text = '#sdy.sharding<@mesh, [{"x", ?}p1, {"y":(2)2}, {}], replicated={"z"}, unreduced={"w"}>'
    s = parse_sharding(text)
    assert str(s) == text
    d0, d1, d2 = s.dims
    assert (d0.closed, d0.priority, d1.axes[0].pre, d1.axes[0].size, d2.closed) == (False, 1, 2, 2, True)
    assert [a.name for a in s.replicated] == ["z"] and [a.name for a in s.unreduced] == ["w"]
    per = parse_sharding_list('#sdy.sharding_per_value<[<@mesh, [{"x"}]>, <@mesh, []>]>')
    assert [str(p) for p in per] == ['#sdy.sharding<@mesh, [{"x"}]>', '#sdy.sharding<@mesh, []>']
    m = parse_mesh('#sdy.mesh<["x"=2, "y"=4], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>')
    assert m.axes == (("x", 2), ("y", 4)) and m.size == 8 and m.device_ids[0] == 7
    with pytest.raises(MLIRError, match="unknown field 'partial'"):
        parse_sharding('#sdy.sharding<@mesh, [{"x"}], partial={"y"}>')


HEAD = 'sdy.mesh @mesh = <["x"=2, "y"=2]>\n'


def _prog(body, arg='tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}'):
    return HEAD + f"func.func @main(%arg0: {arg}) -> tensor<8x8xf32> {{\n{body}\n}}\n"


BAD = [
    # (body, message) -- each a rule of shardy-sdy-ops.txt or of TensorShardingAttr
    ('  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"q"}, {}]> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r'3:8: .*names axis "q", which mesh @mesh'),
    ('  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}]> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r"3:8: .*1 dimension shardings for a tensor of rank 2"),
    ('  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x"}, {"x"}]> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r'3:8: .*axis "x" is used more than once'),
    ('  %0 = sdy.sharding_constraint %arg0 <@other, [{}, {}]> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r"3:8: .*names mesh @other, which no sdy.mesh defines"),
    ('  %0 = sdy.sharding_constraint %arg0 <@mesh, [{"x":(1)3}, {}]> : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r'3:8: .*sub-axis "x":\(1\)3 does not divide axis "x" of size 2'),
    ('  %0 = sdy.all_gather [{}, {"y"}] %arg0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"3:8: 'sdy.all_gather': applying the op's axes .* but out_sharding is"),
    ('  %0 = sdy.all_gather [{"y"}, {}] %arg0 out_sharding=<@mesh, [{}, {"y"}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"3:8: 'sdy.all_gather': gathering axes .* are not a suffix"),
    ('  %0 = sdy.all_slice [{}, {"x"}] %arg0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"3:8: 'sdy.all_slice': applying the op's axes"),
    ('  %0 = sdy.all_reduce {"x"} %arg0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"3:8: 'sdy.all_reduce': reduction_axes \['x'\] must not overlap with the operand"),
    ('  %0 = sdy.all_reduce {"x"} %arg0 out_sharding=<@mesh, [{"y"}, {"x"}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"must have equivalent dimension shardings"),
    ('  %0 = sdy.collective_permute %arg0 out_sharding=<@mesh, [{"x", "y"}, {}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"3:8: 'sdy.collective_permute': dim 0: the product of the sharding axis sizes"),
    ('  %0 = sdy.all_to_all [{"y"}: 1->1] %arg0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"must be unique across parameters"),
    ('  %0 = sdy.all_to_all [{"y"}: 1->0, {"x"}: 0->1] %arg0 out_sharding=<@mesh, [{"y"}, {"x"}]> : '
     'tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>', r"must be sorted in ascending order"),
    ('  %0 = sdy.all_to_all [{"x"}: 1->0] %arg0 out_sharding=<@mesh, [{"x"}, {"y"}]> : tensor<8x8xf32>\n'
     '  return %0 : tensor<8x8xf32>', r"all_to_all axes \[.*\] are not a suffix of dim 1"),
    ('  %0 = sdy.propagation_barrier %arg0 allowed_direction=BOTH : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r"3:8: 'sdy.propagation_barrier': allowed_direction must be FORWARD, BACKWARD or NONE"),
    ('  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"y", "x"}, {}]>] out_shardings=[<@mesh, [{}, {}]>] '
     'manual_axes={"x"} (%a: tensor<2x8xf32>) {\n    sdy.return %a : tensor<2x8xf32>\n  } : (tensor<8x8xf32>) -> '
     'tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>', r"the manual axes must come before any free axes"),
    ('  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, [{}, {}]>] '
     'manual_axes={"x"} (%a: tensor<8x8xf32>) {\n    sdy.return %a : tensor<8x8xf32>\n  } : (tensor<8x8xf32>) -> '
     'tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>', r"operand 0: the local type tensor<8x8xf32> does not match"),
    ('  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>, <@mesh, [{}, {}]>] '
     'out_shardings=[<@mesh, [{}, {}]>] manual_axes={"x"} (%a: tensor<4x8xf32>) {\n    sdy.return %a : '
     'tensor<4x8xf32>\n  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r"the number of in_shardings \(2\), operands \(1\) and body arguments \(1\) must match"),
    ('  %0 = sdy.named_computation<"f">(%arg0) (%a: tensor<8x4xf32>) {\n    sdy.return %arg0 : tensor<8x8xf32>\n'
     '  } : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>',
     r"the block argument types must be the operand types"),
]


@pytest.mark.parametrize("body,msg", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_violated_constraint_is_an_error_at_the_op(body, msg):
    with pytest.raises(MLIRError, match=msg) as e:
        verify_sdy(parse(_prog(body)))
    assert str(e.value).startswith("<string>:")


def test_manual_axes_cannot_introduce_padding():
    text = HEAD + ('func.func @main(%arg0: tensor<7x8xf32>) -> tensor<7x8xf32> {\n'
                   '  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x"}, {}]>] out_shardings=[<@mesh, '
                   '[{}, {}]>] manual_axes={"x"} (%a: tensor<3x8xf32>) {\n    sdy.return %a : tensor<3x8xf32>\n'
                   '  } : (tensor<7x8xf32>) -> tensor<7x8xf32>\n  return %0 : tensor<7x8xf32>\n}\n')
    with pytest.raises(MLIRError, match=r"3:8: .*dim 0: the manual axes cannot introduce padding; size 7"):
        verify_sdy(parse(text))


def test_meshes_of_a_module_have_one_device_count():
    text = 'sdy.mesh @a = <["x"=2]>\nsdy.mesh @b = <["x"=4]>\nsdy.mesh @one = <[], device_ids=[0]>\n'
    with pytest.raises(MLIRError, match=r"same number of devices, got \[2, 4\]"):
        verify_sdy(parse(text))


def test_unknown_op_and_mesh_size_stop_before_a_run():
    text = _prog('  %0 = stablehlo.fft %arg0 : tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>')
    with pytest.raises(MLIRError, match="unknown operation 'stablehlo.fft' in custom form"):
        parse(text)
    text = _prog('  %0 = "stablehlo.fft"(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>\n  return %0 : tensor<8x8xf32>')
    m = parse(text)
    two = type("C", (), {"size": 4, "rank": 0})()
    with pytest.raises(MLIRError, match=r"<string>:3:8: unsupported op 'stablehlo.fft' \(in @main\)"):
        SdyProgram(m, comm=two).check("main")
    with pytest.raises(MLIRError, match=r"mesh @mesh <\[\"x\"=2, \"y\"=2\]> has 4 devices, but the program runs on 1"):
        SdyProgram(m, comm=_Comm())


PARTIAL_UNSUPPORTED = """sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x8xf32> {
  %0 = sdy.manual_computation(%arg0) in_shardings=[<@mesh, [{"x", ?}, {?}]>] out_shardings=[<@mesh, [{"x", ?}, {?}]>] manual_axes={"x"} (%arg1: tensor<4x8xf32>) {
    %1 = sdy.sharding_constraint %arg1 <@mesh, [{}, {"y"}]> : tensor<4x8xf32>
    %2 = "stablehlo.fft"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    sdy.return %2 : tensor<4x8xf32>
  } : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
"""


def test_unsupported_op_in_a_partially_manual_body_stops_before_communication():
    """A truly unsupported op, nested in a partially manual body: its name and file:line:col, raised by
    ``run`` before anything moves (the stand-in communicator has no MPI to call)."""
    four = type("C", (), {"size": 4, "rank": 0})()
    p = SdyProgram(parse(PARTIAL_UNSUPPORTED, "partial.mlir"), comm=four)
    with pytest.raises(MLIRError, match=r"^partial.mlir:5:10: unsupported op 'stablehlo.fft' \(in @main\)"):
        p.run("main", [np.zeros((8, 8), np.float32)])


def test_bad_argument_fails_before_communication():
    m = parse_file(os.path.join(CORPUS, "mlp", "n1.mlir"))
    p = SdyProgram(m, comm=_Comm())  # _Comm has no MPI: any communication would raise AttributeError
    with pytest.raises(MLIRError, match="@main takes 4 arguments, got 1"):
        p.run("main", [np.zeros((8, 16), np.float32)])
    with pytest.raises(MLIRError, match=r"argument 2: expected tensor<8xf32>, got an array of shape \(9,\)"):
        p.run("main", [np.zeros((8, 16), np.float32), np.zeros((16, 8), np.float32), np.zeros(9, np.float32),
                       np.zeros((8, 4), np.float32)])


# -- StableHLO semantics against numpy written independently --------------------------------------------

def _one(text, *args):
    m = parse("func.func @f(" + ", ".join(f"%a{i}: {t}" for i, (t, _) in enumerate(args)) + ") -> "
              + text.split("->")[-1].strip().split("\n")[0] + " {\n  %0 = " + text + "\n  return %0 : "
              + text.split("->")[-1].strip() + "\n}")
    op = m.functions()["f"].regions[0].entry.operations[0]
    return H.local_function(op)(*[a for _, a in args])[0]


def test_integer_division_and_remainder_follow_c():
    a = np.array([-7, 7, -7, 7, 5], np.int32)
    b = np.array([2, -2, -2, 2, 0], np.int32)
    q = _one("stablehlo.divide %a0, %a1 : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>",
             ("tensor<5xi32>", a), ("tensor<5xi32>", b))
    r = _one("stablehlo.remainder %a0, %a1 : (tensor<5xi32>, tensor<5xi32>) -> tensor<5xi32>",
             ("tensor<5xi32>", a), ("tensor<5xi32>", b))
    np.testing.assert_array_equal(q, [-3, -3, 3, 3, -1])
    np.testing.assert_array_equal(r, [-1, 1, -1, 1, 5])


def test_popcnt_counts_the_bits_of_each_pattern():
    """``jax.lax.population_count`` lowers to ``stablehlo.popcnt``: the set bits of the integer's bit
    pattern (8 for an i8 -1), the result of the operand's type; as JAX prints it, and generic."""
    for t, dt in (("i8", np.int8), ("i32", np.int32), ("i64", np.int64), ("ui16", np.uint16), ("i1", np.bool_)):
        x = np.array([0, 1, 1, 0, 1], dt) if dt is np.bool_ else np.array(
            [0, 1, 6, np.iinfo(dt).max, np.iinfo(dt).min, 77], dt)
        n = x.size
        for form in (f"stablehlo.popcnt %a : tensor<{n}x{t}>",
                     f'"stablehlo.popcnt"(%a) : (tensor<{n}x{t}>) -> tensor<{n}x{t}>'):
            m = parse(f"func.func @main(%a: tensor<{n}x{t}>) -> tensor<{n}x{t}> {{\n  %0 = {form}\n"
                      f"  return %0 : tensor<{n}x{t}>\n}}")
            op = m.functions()["main"].regions[0].entry.operations[0]
            (got,) = H.local_function(op)(x)
            want = [bin(int(v) & ((1 << 8 * x.itemsize) - 1)).count("1") for v in x]
            assert got.dtype == dt, (t, got.dtype)
            np.testing.assert_array_equal(got, np.array(want).astype(dt), err_msg=t)
            g = op.generic()
            assert '= "stablehlo.popcnt"(%v' in g and g.endswith(f": (tensor<{n}x{t}>) -> tensor<{n}x{t}>\n"), g


def test_convert_compare_select_and_nan():
    x = np.array([-1.7, 2.9, np.nan, 1e10], np.float32)
    c = _one("stablehlo.convert %a0 : (tensor<4xf32>) -> tensor<4xi32>", ("tensor<4xf32>", x))
    np.testing.assert_array_equal(c, [-1, 2, 0, np.iinfo(np.int32).max])
    u = _one("stablehlo.compare LT, %a0, %a1, UNSIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>",
             ("tensor<2xi32>", np.array([-1, 1], np.int32)), ("tensor<2xi32>", np.array([1, 2], np.int32)))
    np.testing.assert_array_equal(u, [False, True])
    mx = _one("stablehlo.maximum %a0, %a1 : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>",
              ("tensor<2xf32>", np.array([np.nan, 1], np.float32)),
              ("tensor<2xf32>", np.array([0, 2], np.float32)))
    assert np.isnan(mx[0]) and mx[1] == 2


def test_dot_general_batch_and_contracting_dims():
    a = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((2, 4, 5)).astype(np.float32)
    r = _one("stablehlo.dot_general %a0, %a1, batching_dims = [0] x [0], contracting_dims = [2] x [1] : "
             "(tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>", ("tensor<2x3x4xf32>", a),
             ("tensor<2x4x5xf32>", b))
    np.testing.assert_allclose(r, a @ b, rtol=1e-5)


def test_pad_with_interior_and_negative_edges():
    x = np.arange(4, dtype=np.int32)
    r = _one("stablehlo.pad %a0, %a1, low = [-1], high = [2], interior = [1] : (tensor<4xi32>, tensor<i32>) -> "
             "tensor<8xi32>", ("tensor<4xi32>", x), ("tensor<i32>", np.int32(9)))
    np.testing.assert_array_equal(r, [9, 1, 9, 2, 9, 3, 9, 9])


def test_argmax_reduce_and_cumsum_reduce_window_run_serially():
    d = os.path.join(CORPUS, "reductions")
    pytest.importorskip("mpi4py")
    ins = [np.load(os.path.join(d, "in0.npy"))]
    from mpi4py import MPI

    res = run_sdy(parse_file(os.path.join(d, "n1.mlir")), "main", ins, MPI.COMM_SELF)
    x = ins[0]
    np.testing.assert_array_equal(res[0], np.argmax(x, axis=1))
    np.testing.assert_allclose(res[1], np.cumsum(x, axis=0), rtol=1e-5)
    np.testing.assert_allclose(res[2], np.prod(x, axis=1), rtol=1e-5)
    assert res[3] == x.max()


# -- the command line ------------------------------------------------------------------------------------

def _cli(*args, cwd):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "meshrt.cli", "mlir", *args], capture_output=True, text=True,
                          timeout=180, cwd=cwd)


@pytest.mark.skipif(__import__("meshrt.launch", fromlist=["x"]).find_mpiexec() is None, reason="no mpiexec")
def test_cli_run_and_explain_on_two_processes(tmp_path):
    d = os.path.join(CORPUS, "collectives")
    ins = sorted(glob.glob(os.path.join(d, "in*.npy")))
    r = _cli("run", "-n", "2", os.path.join(d, "n2.mlir"), "--func", "main", "--args", *ins, "--out",
             str(tmp_path / "out"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path / "out")) == ["result0.npy", "result1.npy", "result2.npy"]
    for i in range(3):
        np.testing.assert_allclose(np.load(tmp_path / "out" / f"result{i}.npy"),
                                   np.load(os.path.join(d, f"n2.out{i}.npy")), rtol=1e-5)
    # a wrong argument: one clear error, exit 1, no output directory
    bad = tmp_path / "bad.npy"
    np.save(bad, np.zeros((3, 3), np.float32))
    r = _cli("run", "-n", "2", os.path.join(d, "n2.mlir"), "--func", "main", "--args", str(bad), *ins[1:],
             "--out", str(tmp_path / "out2"), cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.count("argument 0: expected tensor<8x4xf32>") == 1, r.stderr
    assert not (tmp_path / "out2").exists()
    r = _cli("explain", os.path.join(CORPUS, "mlp", "n2.mlir"), cwd=tmp_path)  # 2 processes: the mesh's
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    dot = next(line for line in lines if "stablehlo.dot_general %4" in line)
    assert '// -> <@mesh, [{"x"}, {}]>' in dot and "einsum" in dot
    assert lines[-1].startswith("// meshrt: 2 processes,") and "bytes moved in all" in lines[-1]
    # the annotated text is the program still: meshrt reads it back to the same ops
    again = parse("\n".join(lines))
    assert [o.name for o in again.walk()] == [o.name for o in parse_file(os.path.join(CORPUS, "mlp", "n2.mlir")).walk()]


@pytest.mark.skipif(__import__("meshrt.launch", fromlist=["x"]).find_mpiexec() is None, reason="no mpiexec")
def test_cli_run_keeps_ranks_of_arguments_and_results(tmp_path):
    """``--args``/``--out`` files keep exact ranks: a 0-d argument (misc's ``tensor<i32>``) reads as one,
    a manual computation's ``tensor<f32>`` result is written as shape ``()`` and its ``tensor<1xf32>``
    one as ``(1,)``, each equal to JAX's."""
    for name, n in (("scalar_psum", 2), ("misc", 2)):
        d = os.path.join(CORPUS, name)
        ins = sorted(glob.glob(os.path.join(d, "in*.npy")))
        out = tmp_path / name
        r = _cli("run", "-n", str(n), os.path.join(d, f"n{n}.mlir"), "--func", "main", "--args", *ins, "--out",
                 str(out), cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        want = sorted(glob.glob(os.path.join(d, f"n{n}.out*.npy")))
        assert len(os.listdir(out)) == len(want)
        for i, w in enumerate(want):
            got, w = np.load(out / f"result{i}.npy"), np.load(w)
            assert got.shape == w.shape and got.dtype == w.dtype, (name, i, got.shape, w.shape)
            np.testing.assert_allclose(got, w, rtol=1e-5, atol=1e-6)
    assert np.load(os.path.join(CORPUS, "misc", "in1.npy")).shape == ()
    assert [np.load(tmp_path / "scalar_psum" / f"result{i}.npy").shape for i in (1, 2)] == [(), (1,)]


def test_explain_output_is_read_by_jax_parser():
    """Where jaxlib is installed: JAX's own MLIR parser reads ``explain``'s annotated text."""
    pytest.importorskip("jax")
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir
    from mpi4py import MPI

    from meshrt.mlir.shardy.cli import explain

    for name in ("mlp", "halo_ppermute", "reductions"):
        text = explain(parse_file(os.path.join(CORPUS, name, "n1.mlir")), "main", MPI.COMM_SELF)
        assert "// -> <@mesh" in text
        with jmlir.make_ir_context() as ctx:
            mod = ir.Module.parse(text, context=ctx)
            assert "sdy.mesh" in str(mod)


def test_generic_print_is_the_same_ir_for_jax():
    """Where jaxlib is installed: JAX's MLIR parser reads meshrt's generic print of every corpus file
    as the IR it reads from JAX's own text (the module's typed integer attributes aside: meshrt keeps
    ``mhlo.num_partitions = 4 : i32`` as the integer 4 and prints it ``: i64``)."""
    pytest.importorskip("jax")
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    for path in FILES:
        with jmlir.make_ir_context() as ctx:
            ours = str(ir.Module.parse(parse_file(path).generic(), context=ctx)).split("\n", 1)[1]
            theirs = str(ir.Module.parse(open(path).read(), context=ctx)).split("\n", 1)[1]
        assert ours == theirs, path


# -- propagation ----------------------------------------------------------------------------------------

def _propagated(body, args="%arg0: tensor<8x8xf32>", results="tensor<8x8xf32>"):
    from meshrt.mlir.shardy.propagation import propagate

    m = verify_sdy(parse(HEAD + f"func.func @main({args}) -> {results} {{\n{body}\n}}\n"))
    f = m.functions()["main"]
    names = {}
    for op in f.walk():
        for r in op.results:
            names[r] = r.name
    for a in f.regions[0].entry.arguments:
        names[a] = a.name
    return {names[v]: str(s.body()) for v, s in propagate(m, "main").items() if v in names}


def test_propagation_follows_priorities_and_open_dims():
    got = _propagated(
        '  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>\n'
        '  %1 = sdy.sharding_constraint %0 <@mesh, [{"y"}p1, {?}]> : tensor<8x8xf32>\n'
        '  %2 = stablehlo.tanh %0 : tensor<8x8xf32>\n'
        '  %3 = sdy.sharding_constraint %2 <@mesh, [{?}, {"x"}p0]> : tensor<8x8xf32>\n'
        '  return %3 : tensor<8x8xf32>')
    # p0 first gives %0 its column split; p1 then adds the row split on the open dim
    assert got["%0"] == '<@mesh, [{"y", ?}, {"x", ?}]>'
    # the constraint's own open dim takes the row split too; its closed one stays as written
    assert got["%arg0"] == got["%0"] and got["%3"] == '<@mesh, [{"y", ?}, {"x"}p0]>'


def test_propagation_keeps_closed_dims_and_stops_at_barriers():
    got = _propagated(
        '  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>\n'
        '  %1 = sdy.propagation_barrier %0 allowed_direction=NONE : tensor<8x8xf32>\n'
        '  %2 = stablehlo.tanh %1 : tensor<8x8xf32>\n'
        '  %3 = sdy.sharding_constraint %2 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>\n'
        '  return %3 : tensor<8x8xf32>',
        args='%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}')
    assert got["%0"] == '<@mesh, [{?}, {"y", ?}]>' and got["%2"] == '<@mesh, [{"x", ?}, {?}]>'
    assert got["%arg0"] == '<@mesh, [{}, {"y"}]>'  # closed: the constraint beyond the barrier cannot reach it
    fwd = _propagated(
        '  %1 = sdy.propagation_barrier %arg0 allowed_direction=FORWARD : tensor<8x8xf32>\n'
        '  %2 = sdy.sharding_constraint %1 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>\n'
        '  return %2 : tensor<8x8xf32>')
    assert "%arg0" not in fwd and fwd["%1"] == '<@mesh, [{"x", ?}, {?}]>'  # backward is blocked


def test_sharding_group_members_get_one_sharding():
    got = _propagated(
        '  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>\n'
        '  %1 = stablehlo.negate %arg1 : tensor<8x8xf32>\n'
        '  sdy.sharding_group %0 group_id=3 : tensor<8x8xf32>\n'
        '  sdy.sharding_group %1 group_id=3 : tensor<8x8xf32>\n'
        '  %2 = sdy.sharding_constraint %1 <@mesh, [{}, {"x"}]> : tensor<8x8xf32>\n'
        '  %3 = stablehlo.add %0, %2 : tensor<8x8xf32>\n'
        '  return %3 : tensor<8x8xf32>',
        args="%arg0: tensor<8x8xf32>, %arg1: tensor<8x8xf32>")
    assert got["%0"] == got["%1"] == '<@mesh, [{?}, {"x", ?}]>'


def test_every_sdy_op_prints_as_jax_reads_it():
    """Where jaxlib is installed: the hand-written program of every sdy op (tests/mpi/test_sdy_exec.py)
    read by meshrt and printed in generic form is the IR JAX's parser reads from the text itself, and
    JAX's generic print of it reads and verifies in meshrt."""
    pytest.importorskip("jax")
    from jax._src.interpreters import mlir as jmlir
    from jax._src.lib.mlir import ir

    src = open(os.path.join(os.path.dirname(__file__), "mpi", "test_sdy_exec.py")).read()
    start = src.index('SDY_OPS = """') + len('SDY_OPS = """')
    prog = src[start:src.index('"""', start)].format(mesh='sdy.mesh @mesh = <["x"=2, "y"=2]>')
    with jmlir.make_ir_context() as ctx:
        theirs = ir.Module.parse(prog, context=ctx)
        assert str(ir.Module.parse(parse(prog).generic(), context=ctx)) == str(theirs)
        generic = theirs.operation.get_asm(print_generic_op_form=True)
    m = verify_sdy(parse(generic))
    assert [op.name for op in m.walk()] == [op.name for op in parse(prog).walk()]


def test_propagation_through_reshape_split_merge_and_both_directions():
    # forward: a split dim split into (4, 24) keeps its axis on the major dim
    got = _propagated(
        '  %0 = stablehlo.reshape %arg0 : (tensor<96xf32>) -> tensor<4x24xf32>\n'
        '  %1 = stablehlo.exponential %0 : tensor<4x24xf32>\n'
        '  return %1 : tensor<4x24xf32>',
        args='%arg0: tensor<96xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}', results="tensor<4x24xf32>")
    assert got["%0"] == got["%1"] == '<@mesh, [{"x", ?}, {?}]>'
    # backward: a constraint on the merged (24,) puts "x" on the split-whole major dim, "y" on the next
    got = _propagated(
        '  %0 = stablehlo.exponential %arg0 : tensor<2x12xf32>\n'
        '  %1 = stablehlo.reshape %0 : (tensor<2x12xf32>) -> tensor<24xf32>\n'
        '  %2 = sdy.sharding_constraint %1 <@mesh, [{"x", "y"}]> : tensor<24xf32>\n'
        '  return %2 : tensor<24xf32>',
        args='%arg0: tensor<2x12xf32>', results="tensor<24xf32>")
    assert got["%0"] == got["%arg0"] == '<@mesh, [{"x", ?}, {"y", ?}]>'
    # the corpus's (8, 12) -> (4, 24): "x" on the major dims carries, "y" on a minor factor stays behind
    got = _propagated(
        '  %0 = stablehlo.reshape %arg0 : (tensor<8x12xf32>) -> tensor<4x24xf32>\n'
        '  return %0 : tensor<4x24xf32>',
        args='%arg0: tensor<8x12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}',
        results="tensor<4x24xf32>")
    assert got["%0"] == '<@mesh, [{"x", ?}, {?}]>'
    # a dim of the same size keeps its axes (size-1 dims in between); one the axes do not divide does not
    got = _propagated(
        '  %0 = stablehlo.reshape %arg0 : (tensor<6x5xf32>) -> tensor<6x1x5xf32>\n'
        '  %1 = stablehlo.reshape %arg0 : (tensor<6x5xf32>) -> tensor<3x10xf32>\n'
        '  return %0 : tensor<6x1x5xf32>',
        args='%arg0: tensor<6x5xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x", "y"}, {}]>}',
        results="tensor<6x1x5xf32>")
    assert got["%0"] == '<@mesh, [{"x", "y", ?}, {?}, {?}]>'
    assert got["%1"] == '<@mesh, [{?}, {?}]>'  # 4 devices do not split 3 rows evenly: Shardy pads, meshrt waits


def test_propagation_through_reshape_keeps_priorities_and_closed_dims():
    got = _propagated(
        '  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>\n'
        '  %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {"y"}p0]> : tensor<8x8xf32>\n'
        '  %2 = stablehlo.reshape %0 : (tensor<8x8xf32>) -> tensor<64xf32>\n'
        '  %3 = sdy.sharding_constraint %2 <@mesh, [{"x"}p1]> : tensor<64xf32>\n'
        '  %4 = stablehlo.reshape %3 : (tensor<64xf32>) -> tensor<8x8xf32>\n'
        '  %5 = sdy.sharding_constraint %4 <@mesh, [{}, {}]> : tensor<8x8xf32>\n'
        '  return %5 : tensor<8x8xf32>', results="tensor<8x8xf32>")
    # p0's column split first; p1's "x" comes back through the reshape onto the open row dim
    assert got["%0"] == '<@mesh, [{"x", ?}, {"y", ?}]>'
    # %2 took nothing from %0's columns (a minor factor), then the constraint
    assert got["%2"] == '<@mesh, [{"x", ?}]>'
    assert got["%5"] == '<@mesh, [{}, {}]>'  # closed: the reshape gives it nothing


def _propagated_calls(text):
    """Propagated shardings by ``function:value`` name: main's, then each call site's callee."""
    from meshrt.mlir.shardy.propagation import propagate

    m = verify_sdy(parse(HEAD + text))

    def named(shardings, fname, out, prefix=""):
        f = m.functions()[fname]
        names = {a: a.name for a in f.regions[0].entry.arguments}
        names.update({r: r.name for op in f.walk() for r in op.results})
        for v, s in shardings.items():
            out[f"{prefix}{fname}:{names[v]}"] = str(s.body())
        for call, inner in shardings.calls.items():
            named(inner, call.attributes["callee"].name, out, f"{prefix}{fname}:{call.results[0].name}>")
        return out

    return named(propagate(m, "main"), "main", {})


CALLS = '''func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = call @f(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = call @g(%arg1) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = stablehlo.add %0, %1 : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
func.func private @f(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
func.func private @g(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
  %1 = sdy.sharding_constraint %0 <@mesh, [{?}, {"y"}]> : tensor<8x8xf32>
  %2 = sdy.propagation_barrier %1 allowed_direction=BACKWARD : tensor<8x8xf32>
  return %2 : tensor<8x8xf32>
}
'''


def test_propagation_through_calls_of_private_functions():
    got = _propagated_calls(CALLS)
    # into the callee's argument, through its body, out of its result, and on to the add
    assert got["main:%0>f:%arg0"] == got["main:%0>f:%0"] == got["main:%0"] == '<@mesh, [{"x", ?}, {?}]>'
    # back out of a callee: the constraint in @g reaches @g's argument and main's %arg1 ...
    assert got["main:%1>g:%arg0"] == got["main:%arg1"] == '<@mesh, [{"x", ?}, {"y", ?}]>'
    # ... but not forward across the barrier: @g's result gets only what the add gives it
    assert got["main:%1>g:%2"] == got["main:%1"] == '<@mesh, [{"x", ?}, {?}]>'


CALLED_TWICE = '''func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"y"}]>}) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = call @f(%arg0) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = call @f(%arg1) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0, %1 : tensor<8x8xf32>, tensor<8x8xf32>
}
func.func private @f(%arg0: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
'''


def test_a_function_called_twice_gets_shardings_per_call_site():
    got = _propagated_calls(CALLED_TWICE)
    assert got["main:%0>f:%0"] == got["main:%0"] == '<@mesh, [{"x", ?}, {?}]>'
    assert got["main:%1>f:%0"] == got["main:%1"] == '<@mesh, [{?}, {"y", ?}]>'


def test_a_constrained_value_returned_keeps_its_constraint():
    """The function result's sharding is where the return moves the value to; the constraint is the
    value's own (JAX's `with_sharding_constraint` on a returned value, the `uneven` program)."""
    got = _propagated(
        '  %0 = stablehlo.exponential %arg0 : tensor<8x8xf32>\n'
        '  %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}, {}]> : tensor<8x8xf32>\n'
        '  return %1 : tensor<8x8xf32>',
        results='(tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {}]>})')
    assert got["%1"] == '<@mesh, [{"x"}, {}]>' and got["%0"] == '<@mesh, [{"x", ?}, {?}]>'


def test_propagation_enters_a_manual_body_over_its_free_axes():
    """A manual computation's body: its arguments and results take the in/out shardings without the
    manual axes, and propagation goes on through the body's ops over the free axes."""
    from meshrt.mlir.shardy.propagation import propagate

    text = PARTIAL_UNSUPPORTED.replace('"stablehlo.fft"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>',
                                       "stablehlo.exponential %1 : tensor<4x8xf32>")
    m = parse(text)
    got = propagate(m, "main")
    manual = next(op for op in m.walk() if op.name == "sdy.manual_computation")
    body = manual.regions[0].entry
    exp = next(op for op in body.operations if op.name == "stablehlo.exponential")
    # the argument's open dims take "y" back from the constraint its only user sets: never the manual "x"
    assert str(got[body.arguments[0]]) == '#sdy.sharding<@mesh, [{?}, {"y", ?}]>'
    assert str(got[exp.results[0]]) == '#sdy.sharding<@mesh, [{?}, {"y", ?}]>'  # propagated forward
    assert str(got[manual.results[0]]) == '#sdy.sharding<@mesh, [{"x", ?}, {?}]>'


def test_propagation_gives_a_loop_carried_value_one_sharding():
    """``while`` (fori's loop): the carried operand's sharding reaches the cond's and body's arguments,
    the body's result and the loop's result alike; ``case`` branches' results are the op's."""
    from meshrt.mlir.shardy.propagation import propagate

    m = parse_file(os.path.join(CORPUS, "fori", "n4.mlir"))
    got = propagate(m, "main")
    loop = next(op for op in m.walk() if op.name == "stablehlo.while")
    cond, body = (r.entry for r in loop.regions)
    i = next(k for k, v in enumerate(loop.operands) if v.type.rank == 2 and v.type.shape == (8, 4))
    carried = [loop.operands[i], cond.arguments[i], body.arguments[i], body.operations[-1].operands[i],
               loop.results[i]]
    assert {str(got[v].dims[0]).replace(", ?", "") for v in carried} == {'{"x"}'}
    m = parse_file(os.path.join(CORPUS, "indexing", "n4.mlir"))
    got = propagate(m, "main")
    case = next(op for op in m.walk() if op.name in ("stablehlo.case", "stablehlo.if"))
    for region in case.regions:
        v = region.entry.operations[-1].operands[0]
        assert str(got[v].dims[0]).replace(", ?", "") == str(got[case.results[0]].dims[0]).replace(", ?", "")
        assert got[case.results[0]].dims[0].axes


def test_propagation_splits_an_axis_that_does_not_divide_a_dim_into_sub_axes():
    """Shardy's rule: "x"=4 over a dim of 2 becomes "x":(1)2 there and "x":(2)2 on the next dim
    (the blocks stay where they are); merged back, the sub-axes join; where the axis and the dim
    share a factor only, the major sub-axis of that size carries and the rest stays behind."""
    head = HEAD.replace('<["x"=2, "y"=2]>', '<["x"=4, "y"=2]>')
    assert head != HEAD
    from meshrt.mlir.shardy.propagation import propagate

    text = head + '''func.func @main(%arg0: tensor<8x3xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}, %arg1: tensor<12xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<24xf32>, tensor<6x2xf32>) {
  %0 = stablehlo.reshape %arg0 : (tensor<8x3xf32>) -> tensor<2x4x3xf32>
  %1 = stablehlo.sine %0 : tensor<2x4x3xf32>
  %2 = stablehlo.reshape %1 : (tensor<2x4x3xf32>) -> tensor<24xf32>
  %3 = stablehlo.reshape %arg1 : (tensor<12xf32>) -> tensor<6x2xf32>
  return %2, %3 : tensor<24xf32>, tensor<6x2xf32>
}
'''
    m = verify_sdy(parse(text))
    got = {r.name: str(s.body()) for r, s in propagate(m, "main").items() if hasattr(r, "name")}
    assert got["%0"] == got["%1"] == '<@mesh, [{"x":(1)2, ?}, {"x":(2)2, ?}, {?}]>'
    assert got["%2"] == '<@mesh, [{"x", ?}]>'  # the sub-axes joined back
    assert got["%3"] == '<@mesh, [{"x":(1)2, ?}, {?}]>'


def test_sub_axis_shardings_print_as_shardy_text_that_parses_back():
    """A sharding on a refined mesh prints as the Shardy text (sub-axes ``"y":(1)2``, consecutive
    ones joined) that reads back, on the refined mesh or the original one, to the same blocks; JAX's
    own parser (where installed) reads it inside a ``sharding_constraint``."""
    from meshrt import AbstractMesh, Sharding

    mesh = AbstractMesh((2, 8), ("x", "y"))
    cases = {'#sdy.sharding<@mesh, [{"y":(1)2}, {"x"}]>': None,
             '#sdy.sharding<@mesh, [{"y":(1)2, "x"}, {"y":(2)4}]>': None,
             '#sdy.sharding<@mesh, [{"y":(2)2}], unreduced={"x"}>': None,
             '#sdy.sharding<@mesh, [{"y":(1)2, "y":(2)4}, {"x"}]>': '#sdy.sharding<@mesh, [{"y"}, {"x"}]>',
             '#sdy.sharding<@mesh, [{"y":(2)2, "y":(4)2}, {"y":(1)2}]>': '#sdy.sharding<@mesh, [{"y":(2)4}, {"y":(1)2}]>'}
    for text, want in cases.items():
        s = Sharding.parse(text, mesh)
        if want is None:
            assert s.mesh.shape != mesh.shape and str(s) == text
        else:
            assert str(s) == want
        for m in (mesh, s.mesh):
            back = Sharding.parse(str(s), m)
            assert all(back.shard_slices((8, 16), r) == s.shard_slices((8, 16), r) for r in range(16)), text
    with pytest.raises(Exception, match=r'sub-axis "y":\(1\)4 is not a run of the axes'):
        Sharding.parse('#sdy.sharding<@mesh, [{"y":(1)4}]>', Sharding.parse(list(cases)[1], mesh).mesh)
    try:
        from jax._src.interpreters import mlir as jmlir
        from jax._src.lib.mlir import ir
    except ImportError:
        return
    for text in cases:
        s = Sharding.parse(text, mesh)
        body = str(s)[len("#sdy.sharding"):]
        mod = ('sdy.mesh @mesh = <["x"=2, "y"=8]>\nfunc.func @main(%a: tensor<8x16xf32>) -> tensor<8x16xf32> {\n'
               f'  %0 = sdy.sharding_constraint %a {body} : tensor<8x16xf32>\n  return %0 : tensor<8x16xf32>\n}}')
        if "unreduced" in body:
            continue  # Shardy wants unreduced axes declared elsewhere; the dims are what is checked here
        with jmlir.make_ir_context() as ctx:
            assert body[1:-1] in str(ir.Module.parse(mod, context=ctx))
