"""Malformed input never reaches a Python traceback: mutation fuzzing of every reader of outside input.

Each reader gets a few hundred mutated inputs in a normal run (hypothesis, derandomized: the same
cases every run) and 100,000 with ``pytest --fuzz-long`` (or ``MESHRT_FUZZ_LONG=100000``).  A case
passes when the reader accepts it or raises its own error type with a location (``file:line:col``
for text, the field and value for files and arguments); see tests/fuzz_inputs.py.  Every distinct
internal error is reported once, as a minimized input.  ``MESHRT_FUZZ_REPORT=path`` appends the
counts per reader and error kind as JSON lines (docs/failures.md quotes them).

The bugs found this way are the named regression cases of tests/test_reader_errors.py.
"""

import argparse
import collections
import contextlib
import glob
import io
import json
import os
import re
import shutil
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

import meshrt
from meshrt import AbstractMesh, Mesh, Sharding
from meshrt.errors import MeshError, MLIRError, ShardingError
from meshrt.io import CheckpointError, load_state, read_npy, save_state

from fuzz_inputs import Internal, classify, minimize, mutate, mutations, signature

HERE = os.path.dirname(__file__)
REPO = os.path.dirname(HERE)
MLIR_FILES = sorted(glob.glob(os.path.join(HERE, "mlir", "**", "*.mlir"), recursive=True)) + sorted(
    f for f in glob.glob(os.path.join(REPO, "**", "*.mlir"), recursive=True) if not f.startswith(os.path.join(HERE, ""))
)


def _read(path):
    with open(path) as f:
        return f.read()


SEEDS = {os.path.relpath(f, REPO): _read(f) for f in MLIR_FILES}
LOCATION = re.compile(r"^\S+:\d+:\d+: ")  # file:line:col:


def _examples(request, normal):
    n = request.config.getoption("--fuzz-long") or int(os.environ.get("MESHRT_FUZZ_LONG", "0") or 0)
    return n or normal


def _settings(n):
    return settings(max_examples=n, derandomize=True, deadline=None, database=None, phases=[Phase.generate],
                    suppress_health_check=list(HealthCheck))


class Tally:
    """Outcomes of one reader's cases, and its distinct internal errors (minimized)."""

    def __init__(self, reader):
        self.reader = reader
        self.counts = collections.Counter()
        self.failures = {}
        self.t0 = time.perf_counter()

    def case(self, run, data, allowed, location=None, label=None, foreign=None, shown=None):
        try:
            kind = classify(run, data, allowed, location, foreign)
        except Internal as e:
            self.counts["internal"] += 1
            key = signature(e.__cause__ if e.__cause__ is not None else e)  # one report per bug
            if key not in self.failures and len(self.failures) < 20:
                if shown is None:
                    shown = f"minimized input: {minimize(run, data, allowed, location, budget=1500)!r}"
                self.failures[key] = f"{e}\n  {shown}"
                if os.environ.get("MESHRT_FUZZ_REPORT"):
                    with open(os.environ["MESHRT_FUZZ_REPORT"], "a") as f:
                        f.write(json.dumps({"reader": self.reader, "failure": self.failures[key]}) + "\n")
            return
        self.counts[kind if label is None or kind == "accepted" else f"{kind} ({label(kind)})"] += 1
        if sum(self.counts.values()) % 1_000 == 0:
            self.report(partial=True)

    def report(self, partial=False):
        line = {"reader": self.reader, "cases": sum(self.counts.values()),
                "seconds": round(time.perf_counter() - self.t0, 1), **dict(sorted(self.counts.items()))}
        if partial:
            line["partial"] = True
        else:
            print(json.dumps(line))
        if os.environ.get("MESHRT_FUZZ_REPORT"):
            with open(os.environ["MESHRT_FUZZ_REPORT"], "a") as f:
                f.write(json.dumps(line) + "\n")

    def check(self):
        total = sum(self.counts.values())
        self.report()
        if self.failures:
            pytest.fail(f"{self.reader}: {len(self.failures)} internal error(s) in {total} cases:\n"
                        + "\n".join(self.failures.values()), pytrace=False)


def test_harness_flags_and_minimizes():
    """The oracle itself: an internal exception, a relabelled one and a missing location are caught,
    and the input that caused one shrinks to its few characters."""
    def reader(text):
        if "@@" in text:
            return None.group(0)  # the kind of bug the fuzzing is for
        if "!" in text:
            raise MLIRError("t.mlir:1:1: wrapped TypeError: x")
        raise MLIRError("t.mlir:1:1: expected something")

    assert classify(reader, "abc", MLIRError, LOCATION) == "MLIRError"
    for bad in ("x@@y", "x!y"):
        with pytest.raises(Internal):
            classify(reader, bad, MLIRError, LOCATION)
    with pytest.raises(Internal, match="without a location"):
        classify(lambda s: (_ for _ in ()).throw(MLIRError("no place")), "", MLIRError, LOCATION)
    assert mutate("abcdef", [("delete", 1, 2, "x"), ("insert", 0, 1, "@")]) == "@adef"
    big = "module {\n" + "  %0 = op\n" * 200 + "  x@@y\n" + "  %1 = op\n" * 200 + "}\n"
    assert minimize(reader, big, MLIRError, LOCATION) == "@@"


# -- the MLIR reader, verifier and the executor's checks before a run --------------------------------------------


def _read_mlir(name):
    from meshrt.mlir import parse, verify
    from meshrt.mlir.interpreters.spmd import Program, check_function, function_shardings, is_partitioned

    stage = {}

    def run(text):
        stage["at"] = "parse"
        module = parse(text, name)
        stage["at"] = "verify"
        verify(module)
        stage["at"] = "check"
        for f in module.functions():
            check_function(module, f)
            is_partitioned(module, f)
        stage["at"] = "shardings"  # what meshrt mlir run --shardings-from reads of a global program
        prog = Program(module)
        try:
            for f in module.functions():
                function_shardings(prog, f)
        finally:
            prog.free()  # the meshes' communicators
        stage["at"] = "accepted"
    return run, stage


def test_fuzz_mlir(request):
    tally = Tally("mlir")
    names = sorted(SEEDS)

    @_settings(_examples(request, 400))
    @given(st.sampled_from(names), mutations())
    def case(name, edits):
        run, stage = _read_mlir(name)
        tally.case(run, mutate(SEEDS[name], edits), MLIRError, LOCATION, label=lambda k: stage["at"])
    case()
    tally.check()


# attribute values of every kind, for attributes that expect another: what the generic form lets a file say
_WRONG_VALUES = ["x", 5, -3, 10**30, 2.5, True, (1,), ((0,),), (), ("a",), {"a": 1}]


def test_fuzz_mlir_attributes(request):
    """The verifier and the executor's checks on programs that parse: one attribute of one op of the
    repository's programs given a value of another kind, or removed (as the generic form allows)."""
    from meshrt.mlir import UNIT, AffineDim, AffineMap, ScalarType, SymbolRef, TypeAttr, parse, verify
    from meshrt.mlir.interpreters.spmd import Program, check_function, function_shardings

    tally = Tally("mlir attributes (verify, checks)")
    wrong = _WRONG_VALUES + [UNIT, SymbolRef("nope", ()), TypeAttr(ScalarType("f32")), AffineMap(1, 0, (AffineDim(0),))]
    modules = {}
    for name in sorted(SEEDS):
        m = parse(SEEDS[name], name)
        modules[name] = (m, [(op, k) for op in m.walk() for k in op.attributes])

    def run(module):
        verify(module)
        for f in module.functions():
            check_function(module, f)
        prog = Program(module)
        try:
            for f in module.functions():
                function_shardings(prog, f)
        finally:
            prog.free()

    @_settings(_examples(request, 300))
    @given(st.sampled_from(sorted(modules)), st.integers(0, (1 << 32) - 1), st.integers(-1, len(wrong) - 1))
    def case(name, which, value):
        module, slots = modules[name]
        if not slots:
            return
        op, key = slots[which % len(slots)]
        saved = op.attributes[key]
        if value < 0:
            del op.attributes[key]
        else:
            op.attributes[key] = wrong[value]
        try:
            given_value = op.attributes.get(key, "(removed)")
            tally.case(run, module, MLIRError, LOCATION,
                       shown=f"input: {name}, {op.name} at {op.location} with {key} = {given_value!r}")
        finally:
            op.attributes[key] = saved
    case()
    tally.check()


# -- sharding text -------------------------------------------------------------------------------------------


def _sharding_seeds():
    seeds = {
        "shard.sharding @mesh split_axes = [[0], [1, 2]] halo_sizes = [1, 2, 0, 3]",
        "shard.sharding @mesh split_axes = [[0], []] sharded_dims_offsets = [0, 3, 8, 0, 8]",
        "mesh.sharding @mesh split_axes = [[1, 0]] partial = sum[2] : !mesh.sharding",
        "%s = shard.sharding @mesh split_axes = [[2]] : !shard.sharding",
        '#sdy.sharding<@mesh, [{"x"}, {"y", "z"}]>',
        '#sdy.sharding<@mesh, [{"x":(1)2, ?}, {?}p1], replicated={"y"}, unreduced={"z"}>',
        '#sdy.sharding<@mesh, [{"y"}, {}], replicated={"x":(1)2}>',
        "#shard.sharding<@mesh, [[0], [1]], halo_sizes = [1, 1, 2, 2]>",
        "#mesh.shard<@mesh, [[0]], partial = max[1]>",
    }
    pat = re.compile(r"(?:shard|mesh)\.sharding @\w+ [^:\n{]*|#sdy\.sharding<[^\n]*?>(?=[\s,}\]])")
    for text in SEEDS.values():
        seeds.update(m.group(0).strip() for m in pat.finditer(text))
    return sorted(seeds)


def test_fuzz_sharding_text(request):
    tally = Tally("sharding text")
    mesh = AbstractMesh((2, 2, 2), ("x", "y", "z"), name="mesh")
    seeds = _sharding_seeds()
    # the position in the text ("at column 12") or the field at fault ("halo_sizes: ...")
    where = re.compile(r"at column \d+|^(sharding text|mesh|[a-z_]+(?: \d+)?|dim \d+|split axis .*?): ")

    @_settings(_examples(request, 400))
    @given(st.sampled_from(seeds), mutations(3))
    def case(seed, edits):
        tally.case(lambda s: Sharding.parse(s, mesh), mutate(seed, edits), (ShardingError, MeshError), where)
    case()
    tally.check()


# -- .npy headers, checkpoints (load_state), Zarr and HDF5 attributes -----------------------------------------------


@pytest.fixture(scope="module")
def one_process():
    return Mesh((-1,), ("x",))


def _npy_seeds():
    out = []
    for a in (np.arange(12.0).reshape(3, 4), np.arange(5, dtype=np.int16), np.zeros((2, 3), ">f4"),
              np.asfortranarray(np.arange(6, dtype=np.complex64).reshape(2, 3)), np.array(7, np.uint8)):
        for version in ((1, 0), (2, 0)):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, a, version=version)
            out.append(buf.getvalue())
    return out


def test_fuzz_npy_header(request, tmp_path, one_process):
    tally = Tally("npy header (read_npy)")
    seeds = _npy_seeds()
    path = str(tmp_path / "a.npy")

    def run(data):
        with open(path, "wb") as f:
            f.write(data)
        s = Sharding(one_process, [[0]] if b"'shape': (" in data[:200] and b"()" not in data[:200] else [])
        read_npy(path, s)

    @_settings(_examples(request, 300))
    @given(st.sampled_from(range(len(seeds))), mutations(3))
    def case(i, edits):
        data = seeds[i]
        head = data.index(b"\n") + 1  # mutate the header, keep the data
        tally.case(run, mutate(data[:head], edits) + data[head:], CheckpointError, re.compile(re.escape(path)))
    case()
    tally.check()


@pytest.fixture(scope="module")
def saved_state(tmp_path_factory, one_process):
    d = tmp_path_factory.mktemp("state")
    s = Sharding(one_process, [[0]])
    t = meshrt.DistributedTensor.from_global(np.arange(6.0).reshape(3, 2), s)
    save_state(str(d), {"u": t, "v": t}, {"step": 3})
    with open(d / "manifest.json") as f:
        return d, f.read(), s


def test_fuzz_state_manifest(request, saved_state, tmp_path):
    tally = Tally("state manifest (load_state)")
    src, manifest, s = saved_state
    d = tmp_path / "state"
    shutil.copytree(src, d)

    def run(text):
        (d / "manifest.json").write_text(text)
        load_state(str(d), s)
        load_state(str(d), {"u": s})

    @_settings(_examples(request, 200))
    @given(mutations(3))
    def case(edits):
        tally.case(run, mutate(manifest, edits), CheckpointError, re.compile(re.escape(str(d))))
    case()
    tally.check()


def test_fuzz_zarr_metadata(request, tmp_path, one_process):
    pytest.importorskip("zarr")
    tally = Tally("zarr metadata (from_zarr)")
    s = Sharding(one_process, [[0]])
    t = meshrt.DistributedTensor.from_global(np.arange(8.0).reshape(4, 2), s)
    path = tmp_path / "u.zarr"
    t.to_zarr(str(path))
    meta = (path / "zarr.json").read_text()

    def run(text):
        (path / "zarr.json").write_text(text)
        meshrt.DistributedTensor.from_zarr(str(path), one_process)
        meshrt.DistributedTensor.from_zarr(str(path), s)

    @_settings(_examples(request, 150))
    @given(mutations(3))
    def case(edits):
        tally.case(run, mutate(meta, edits), CheckpointError, re.compile(re.escape(str(path))),
                   foreign="zarr cannot read")
    case()
    tally.check()


def test_fuzz_hdf5_attributes(request, tmp_path, one_process):
    h5py = pytest.importorskip("h5py")
    tally = Tally("hdf5 attributes (from_hdf5)")
    s = Sharding(one_process, [[0]])
    t = meshrt.DistributedTensor.from_global(np.arange(8.0).reshape(4, 2), s)
    path = tmp_path / "f.h5"
    t.to_hdf5(str(path), "u")
    with h5py.File(path, "r") as f:
        attrs = f["u"].attrs["meshrt"]
    attrs = attrs.decode() if isinstance(attrs, bytes) else str(attrs)

    def run(text):
        with h5py.File(path, "r+") as f:
            f["u"].attrs["meshrt"] = text
        meshrt.DistributedTensor.from_hdf5(str(path), "u", one_process)
        meshrt.DistributedTensor.from_hdf5(str(path), "u", s)

    @_settings(_examples(request, 150))
    @given(mutations(3))
    def case(edits):
        tally.case(run, mutate(attrs, edits), CheckpointError, re.compile(re.escape(str(path))))
    case()
    tally.check()


# -- the command line: meshrt bench options, meshrt mlir run arguments and --args files ----------------------------


def _bench_parser():
    from meshrt.bench import add_arguments

    p = argparse.ArgumentParser(prog="meshrt bench", exit_on_error=False)
    add_arguments(p)
    return p


_BENCH_SEEDS = [
    "all_reduce --mesh 2x2 --mesh-axes 1 --sizes 8:16M --dtype float32 --reduction max",
    "all_gather --sizes 8,1K,64K --iters 10 --warmup 2 --method imb",
    "halo --shape 64x64 --split 0,1 --mesh 1x1",
    'reshard --shape 16x16 --from [[0]] --to [[],[0]]',
    "reduce_scatter --mesh 2x? --dtype int32 --reduction bitwise_xor --no-meshrt",
    "broadcast --dtype f4 --sizes 1K --iters 3",
]


def test_fuzz_bench_options(request):
    from meshrt.bench import BenchError, check_options

    tally = Tally("meshrt bench options")
    parser = _bench_parser()

    def run(line):
        try:
            with contextlib.redirect_stderr(io.StringIO()):
                args = parser.parse_args(line.split(" "))
        except (argparse.ArgumentError, SystemExit):
            return  # argparse's own usage error names the option
        check_options(args)
    # every message starts with the option (or OP) at fault
    where = re.compile(r"^(--[a-z-]+(/--[a-z-]+)?|OP): ")

    @_settings(_examples(request, 300))
    @given(st.sampled_from(_BENCH_SEEDS), mutations(3))
    def case(seed, edits):
        line = mutate(seed, edits)
        if re.search(r"(^| )--(json|csv|plot)", line):
            return  # would write files
        tally.case(run, line, BenchError, where)
    case()
    tally.check()


class Refused(Exception):
    """``meshrt mlir run`` refused its arguments with a message and exit status 1 or 2."""


_DTYPES = ["float32", "float64", "int32", "int64", "int8", "bool", "complex64", ">f4", "uint16"]


def test_fuzz_mlir_run_args(request, tmp_path, monkeypatch):
    from meshrt.cli import main

    tally = Tally("meshrt mlir run --args")
    monkeypatch.chdir(tmp_path)
    prog = tmp_path / "p.mlir"
    prog.write_text("func.func @f(%a: tensor<4x3xf32>, %b: tensor<3xf32>, %c: i32) -> tensor<4x3xf32> {\n"
                    "  %0 = linalg.add ins(%a, %a : tensor<4x3xf32>, tensor<4x3xf32>)"
                    " outs(%a : tensor<4x3xf32>) -> tensor<4x3xf32>\n"
                    "  return %0 : tensor<4x3xf32>\n}\n")
    # a failure names the file and the place in it, or the --args file at fault
    where = re.compile(r"meshrt mlir run: (\S+:\d+:\d+: |--args \S+: argument \d+ |\S+\.mlir: no function @|"
                       r"(--shardings-from )?\S+: cannot read it)")

    def run(argv):
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            try:
                rc = main(argv)
            except SystemExit as e:  # argparse: usage error
                rc = e.code
        if rc not in (0, 1, 2):
            raise RuntimeError(f"exit status {rc!r}")
        if rc == 1 and not where.search(err.getvalue()):
            raise RuntimeError(f"no location in: {err.getvalue()!r}")
        if rc:
            raise Refused(f"exit status {rc}: {err.getvalue().strip()}")

    valid = [((4, 3), "float32", False), ((3,), "float32", False), ((), "int32", False)]
    change = st.tuples(st.sampled_from(["shape", "dtype", "drop", "duplicate", "npz"]), st.integers(0, 2),
                       st.lists(st.integers(0, 5), max_size=3), st.sampled_from(_DTYPES))

    glob_prog = tmp_path / "global.mlir"  # a global program for --shardings-from: @f's arguments sharded
    glob_prog.write_text("shard.grid @g(shape = 1)\n" + prog.read_text().replace(
        "  %0 = linalg.add", "  %s = shard.sharding @g split_axes = [[0]] : !shard.sharding\n"
        "  %x = shard.shard %a to %s : tensor<4x3xf32>\n  %0 = linalg.add"))
    shardings_from = {"none": [], "global": ["--shardings-from", str(glob_prog)],
                      "itself": ["--shardings-from", str(prog)],
                      "missing": ["--shardings-from", str(tmp_path / "missing.mlir")],
                      "not mlir": ["--shardings-from", str(tmp_path / "a0.npy")]}

    @_settings(_examples(request, 100))
    @given(st.lists(change, max_size=2), st.sampled_from(["f", "g", "f"]), st.sampled_from(sorted(shardings_from)))
    def case(changes, func, sfrom):
        args = list(valid)  # the arguments @f takes, then a change or two: wrong shape, dtype, count, format
        for kind, i, shape, dtype in changes:
            i = i % max(len(args), 1)
            if not args:
                break
            if kind == "shape":
                args[i] = (tuple(shape), args[i][1], args[i][2])
            elif kind == "dtype":
                args[i] = (args[i][0], dtype, args[i][2])
            elif kind == "drop":
                del args[i]
            elif kind == "duplicate":
                args.insert(i, args[i])
            else:
                args[i] = (args[i][0], args[i][1], True)
        paths = []
        for i, (shape, dtype, npz) in enumerate(args):
            a = np.zeros(shape, dtype)
            p = str(tmp_path / f"a{i}.npy")
            if npz:  # a .npz archive (or any non-.npy file) under a .npy name
                with open(p, "wb") as f:
                    np.savez(f, a=a)
            else:
                np.save(p, a)
            paths.append(p)
        argv = ["mlir", "run", str(prog), "--func", func, "--out", "out", *shardings_from[sfrom], "--args", *paths]
        tally.case(run, argv, Refused)
    case()
    tally.check()
