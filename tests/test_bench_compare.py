"""meshrt bench --compare imb|c and meshrt bench imb: the pure parts serially (IMB-MPI1's output,
rows, table, JSON, options), then short runs at 2 processes: the C loop column, and the IMB
column through a stand-in IMB-MPI1 (``MESHRT_IMB``) where the MPI ships none."""

import argparse
import doctest
import json
import math
import os
import stat
import subprocess
import sys
import textwrap

import pytest

import meshrt.bench.compare as M
import meshrt.bench as B
from meshrt.launch import find_mpiexec
from meshrt.testing import mpiexec_command

needs_mpiexec = pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")

# IMB-MPI1 2021.x output, trimmed (two process counts for Allreduce: the larger one is kept)
IMB_OUT = """\
#----------------------------------------------------------------
# Benchmarking Allreduce
# #processes = 2
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            8         1000         0.22         0.26         0.24
        65536          640         2.90         3.10         3.00
#----------------------------------------------------------------
# Benchmarking Allreduce
# #processes = 4
#----------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
            8         1000         0.52         0.56         0.54
#-----------------------------------------------------------------------------
# Benchmarking Sendrecv
# #processes = 2
#-----------------------------------------------------------------------------
       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]   Mbytes/sec
            8         1000         0.31         0.33         0.32        49.10
# All processes entering MPI_Finalize
"""


def test_docstring_examples():
    assert doctest.testmod(M).failed == 0


def test_parse_imb_tables():
    got = M.parse_imb(IMB_OUT)
    assert got == {"Allreduce": {8: (1000, 0.54)}, "Sendrecv": {8: (1000, 0.32)}}  # the last (largest) count
    assert M.parse_imb("no tables here\n") == {}


def test_imb_names_msglen_and_command():
    assert set(M.IMB_SET) <= set(M.IMB_NAMES) and M.IMB_NAMES["reduce_scatter"] == "Reduce_scatter_block"
    assert [M.imb_msglen(op, 4096, 4) for op in ("all_to_all", "reduce_scatter", "all_gather", "scatter")] == \
        [1024, 1024, 4096, 4096]
    cmd = M.imb_command("/v/bin/mpiexec", "/v/bin/IMB-MPI1", ["all_reduce", "shift", "all_reduce"], 2, "/t/len",
                        ("-genv", "X=1"))
    assert cmd == ["/v/bin/mpiexec", "-genv", "X=1", "-n", "2", "/v/bin/IMB-MPI1", "Allreduce", "Sendrecv",
                   "-npmin", "2", "-msglen", "/t/len"]


def test_imb_env_drops_the_launchers_variables():
    env = {"PMI_FD": "3", "PMI_RANK": "1", "HYDRA_CONTROL_FD": "4", "OMPI_COMM_WORLD_RANK": "1", "PMIX_RANK": "1",
           "MPI_LOCALNRANKS": "2", "I_MPI_PIN": "0", "PATH": "/bin"}
    got = M.imb_env(env, "/v/lib")
    assert got == {"I_MPI_PIN": "0", "PATH": "/bin", "LD_LIBRARY_PATH": "/v/lib"}


def _exe(path, text):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_find_imb_beside_the_library(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "bin").mkdir()
    lib = tmp_path / "lib" / "libmpi.so.12"
    lib.write_text("")
    assert M.find_imb(str(lib)) is None  # nothing there yet
    imb = _exe(tmp_path / "bin" / "IMB-MPI1", "#!/bin/sh\n")
    assert M.find_imb(str(lib)) is None  # no mpiexec beside it
    mpiexec = _exe(tmp_path / "bin" / "mpiexec", "#!/bin/sh\n")
    assert M.find_imb(str(lib)) == (imb, mpiexec)
    assert M.find_imb(None, str(tmp_path / "bin" / "python")) == (imb, mpiexec)


def test_compare_rows_table_and_json(tmp_path):
    base = B.make_row("all_reduce", 8, 2, 2, 100, 1000, [1.0e-6, 1.2e-6], [1.6e-6, 1.6e-6])
    row = M.compare_row(base, (1000, 0.5), [0.4e-6, 0.6e-6], rounds=5)
    assert row["imb_latency_avg_us"] == 0.5 and row["imb_repetitions"] == 1000
    assert math.isclose(row["c_latency_avg_us"], 0.5) and math.isclose(row["ratio_imb"], 2.2)
    assert math.isclose(row["ratio_c"], 2.2) and row["rounds"] == 5
    head, line = M.compare_header(True).split(), M.format_compare_row(row, True).split()
    assert head == ["#size", "iters", "imb_reps", "imb_avg_us", "c_avg_us", "raw_avg_us", "avg_us", "meshrt/IMB",
                    "meshrt/C", "raw/C"]
    assert line == ["8", "1000", "1000", "0.50", "0.50", "1.60", "1.10", "2.200", "2.200", "3.200"]
    # no IMB-MPI1 and no C loop: no imb columns, '-' for the C loop's
    bare = M.compare_row(base, None, None)
    assert M.format_compare_row(bare, False).split() == ["8", "1000", "-", "1.60", "1.10", "-", "-"]
    assert len(M.compare_header(False).split()) == 7
    path = tmp_path / "r.json"
    B.write_json(str(path), {"compare": "imb"}, [row, bare], B.FIELDS + M.COMPARE_FIELDS)
    doc = json.loads(path.read_text())
    assert doc["results"][0]["imb_latency_avg_us"] == 0.5 and doc["results"][1]["imb_latency_avg_us"] is None
    assert doc["results"][1]["c_latency_avg_us"] is None and doc["results"][0]["ratio_c"] == pytest.approx(2.2)
    csv_path = tmp_path / "r.csv"
    B.write_csv(str(csv_path), [row], B.FIELDS + M.COMPARE_FIELDS)
    assert csv_path.read_text().splitlines()[0].endswith("imb_latency_avg_us,imb_repetitions,c_latency_avg_us,"
                                                         "ratio_imb,ratio_c,rounds")


def test_plot_carries_the_compared_lines(tmp_path):
    pytest.importorskip("matplotlib")
    base = B.make_row("all_reduce", 8, 2, 2, 1, 10, [1e-6], [2e-6])
    rows = [M.compare_row(base, (10, 0.5), [0.4e-6])]
    B.plot(str(tmp_path / "p.png"), rows, "t")
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_sides_timed_in_order_then_reversed():
    calls = []

    def side(name):
        return lambda: calls.append(name)

    def floor(warmup, k, sync):
        calls.append(("c", k, sync))
        return 1e-3 * k

    t = M._sides_time([side("m"), side("r"), ("c", floor)], 0, 4, lambda: None, B._loop, sync=False)
    timed = [c for c in calls[2:]]  # after one untimed call of each Python side
    assert calls[:2] == ["m", "r"]
    assert timed == ["m", "m", "r", "r", ("c", 2, False), ("c", 2, False), "r", "r", "m", "m"]
    assert t[2] == pytest.approx(1e-3)


def test_median_per_process():
    assert M.median_per_process([[1, 10], [3, 30], [2, 20], [5, 0], [4, 40]]) == [3, 20]


def _options(*argv):
    p = argparse.ArgumentParser()
    B.add_arguments(p)
    return B.check_options(p.parse_args(list(argv)))


def test_compare_options():
    o = _options("imb")
    assert o.op == "imb" and o.compare == "imb" and o.repeat == 1 and o.result == "new" and o.alloc == "numpy"
    o = _options("all_gather", "--compare", "c", "--repeat", "5", "--method", "imb")
    assert o.compare == "c" and o.repeat == 5 and o.result == "reuse" and o.method == "imb" and o.alloc == "mpi"
    assert _options("all_gather", "--method", "imb", "--alloc", "numpy").alloc == "numpy"
    assert _options("all_gather", "--alloc", "mpi").alloc == "mpi"
    o = _options("all_reduce", "--method", "imb-nosync", "--result", "new", "--imb-args", "-genv A 1")
    assert o.result == "new" and o.imb_args == ("-genv", "A", "1")
    assert B.default_iterations(1 << 20, "imb-nosync") == (10, 40)


@pytest.mark.parametrize("argv,words", [
    (["halo", "--compare", "c"], "--compare: halo has no single MPI call"),
    (["all_slice", "--compare", "imb"], "--compare: all_slice"),
    (["all_reduce", "--repeat", "3"], "--repeat: only with --compare"),
    (["all_reduce", "--compare", "c", "--repeat", "0"], "--repeat: 0"),
    (["all_reduce", "--compare", "c", "--no-meshrt"], "not with --no-meshrt"),
    (["nope"], "or imb"),
])
def test_compare_option_errors(argv, words):
    with pytest.raises(B.BenchError) as e:
        _options(*argv)
    assert words in str(e.value)


# -- at 2 processes ------------------------------------------------------------------------
def _bench(*args, cwd, env=None, timeout=120):
    cmd = mpiexec_command(2, [sys.executable, "-m", "meshrt", "bench", *args, "--no-progress"])
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=env or os.environ.copy())


def _table(stdout):
    return [line.split() for line in stdout.splitlines() if line and not line.startswith("#")]


@needs_mpiexec
def test_two_processes_compare_c(tmp_path):
    from meshrt import _cfloor

    r = _bench("all_gather", "--compare", "c", "--sizes", "8,1K", "--iters", "20", "--warmup", "2",
               "--repeat", "2", "--json", str(tmp_path / "c.json"), cwd=tmp_path)
    assert r.returncode == 0, r.stderr + r.stdout
    head = next(line for line in r.stdout.splitlines() if line.startswith("#size")).split()
    assert "c_avg_us" in head and "imb_avg_us" not in head
    rows = _table(r.stdout)
    assert [row[0] for row in rows] == ["8", "1024"]
    doc = json.loads((tmp_path / "c.json").read_text())
    assert doc["meta"]["compare"] == "c" and doc["meta"]["repeat"] == 2
    for row in doc["results"]:
        assert row["rounds"] == 2 and row["latency_avg_us"] > 0 and row["raw_latency_avg_us"] > 0
        assert (row["c_latency_avg_us"] or 0) > 0 or not _cfloor.available()
        assert row["imb_latency_avg_us"] is None


FAKE_IMB = r"""#!/usr/bin/env python3
# a stand-in IMB-MPI1: one table per benchmark named, t_avg = bytes / 1000 + 1 us
import sys
args = sys.argv[1:]
names = args[:args.index("-npmin")]
sizes = [int(s) for s in open(args[args.index("-msglen") + 1]).read().split()]
for name in names:
    print(f"# Benchmarking {name}\n# #processes = 2")
    print("       #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]")
    for s in sizes:
        t = s / 1000 + 1
        print(f"{s:>13} {1000:>12} {t:>12.2f} {t:>12.2f} {t:>12.2f}")
"""


@needs_mpiexec
def test_two_processes_compare_imb_with_a_stand_in(tmp_path):
    d = tmp_path / "imb"
    d.mkdir()
    imb = _exe(d / "IMB-MPI1", FAKE_IMB.replace("/usr/bin/env python3", sys.executable))
    _exe(d / "mpiexec", '#!/bin/sh\n# drop "-n N": the stand-in runs once\nshift 2\nexec "$@"\n')
    env = dict(os.environ, MESHRT_IMB=imb)
    r = _bench("imb", "--sizes", "8,2K", "--iters", "5", "--warmup", "1", "--json", str(tmp_path / "i.json"),
               cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "# IMB-MPI1: " + imb in r.stdout
    doc = json.loads((tmp_path / "i.json").read_text())
    assert [op for op in doc["meta"]["ops"]] == list(M.IMB_SET)
    by = {(row["op"], row["size"]): row for row in doc["results"]}
    assert by["all_reduce", 8]["imb_latency_avg_us"] == pytest.approx(1.01)
    assert by["all_to_all", 2048]["imb_latency_avg_us"] == pytest.approx(2.02)  # IMB's length: the piece
    assert by["shift", 2048]["imb_latency_avg_us"] == pytest.approx(3.05)
    for row in doc["results"]:
        assert row["ratio_imb"] == pytest.approx(row["latency_avg_us"] / row["imb_latency_avg_us"])
    head = [line for line in r.stdout.splitlines() if line.startswith("#size")]
    assert len(head) == len(M.IMB_SET) and "meshrt/IMB" in head[0].split()


@needs_mpiexec
def test_two_processes_compare_imb_without_imb_says_so(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "MESHRT_IMB"}
    r = _bench("broadcast", "--compare", "imb", "--sizes", "8", "--iters", "5", "--warmup", "1", cwd=tmp_path,
               env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    from meshrt.bench.compare import find_imb  # noqa: F401  (the test's MPI may ship IMB-MPI1: then no note)
    if "# IMB-MPI1: " not in r.stdout:
        assert "IMB-MPI1 not found beside the MPI library" in r.stdout and "c_avg_us" in r.stdout


@pytest.mark.parametrize("argv,words", [(["all_reduce", "--compare", "osu"], "--compare: 'osu'; choose one of imb, c"),
                                        (["all_reduce", "--result", "old"], "--result: 'old'; choose one of new, reuse"),
                                        (["all_reduce", "--alloc", "malloc"],
                                         "--alloc: 'malloc'; choose one of numpy, mpi")])
def test_compare_values_checked_with_the_field_named(argv, words):
    with pytest.raises(B.BenchError) as e:
        _options(*argv)
    assert words in str(e.value)


MPI_MEMORY_CASES = r"""
import numpy as np
from mpi4py import MPI
from meshrt import Mesh
from meshrt.bench.cases import _collective_case

mesh = Mesh((MPI.COMM_WORLD.size,))
for op in ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "all_to_all", "gather",
           "scatter", "shift", "send_recv"):
    for nbytes in (8, 4096):
        case = _collective_case(op, mesh, None, nbytes, np.dtype(np.float64), "sum", reuse=True, alloc="mpi")
        m = case.meshrt()
        kept = m.copy() if isinstance(m, np.ndarray) else m
        r = case.raw()
        assert case.check(kept, r), (op, nbytes)
        # one result array for both sides (send_recv's meshrt side makes its own; a root broadcasts x)
        if isinstance(m, np.ndarray) and op != "send_recv":
            assert m is r, (op, nbytes)
        if case.floor is not None:
            assert case.floor(1, 2) >= 0
        closure = [c.cell_contents for c in case.meshrt.__closure__]
        held = [a for a in closure if isinstance(a, np.ndarray)]
        assert held and all(isinstance(a.base, MPI.buffer) for a in held), (op, [type(a.base) for a in held])
        case.free()
MPI.COMM_WORLD.Barrier()
if MPI.COMM_WORLD.rank == 0:
    print("every op ok")
"""


@needs_mpiexec
def test_two_processes_buffers_from_mpi_alloc_mem(tmp_path):
    """``--alloc mpi``: the inputs and reused results of every op come from MPI_Alloc_mem, both
    sides and the C loop run on them (the two sides on one result array) and agree with the numpy
    model, and `Case.free` hands the blocks back."""
    script = tmp_path / "cases.py"
    script.write_text(MPI_MEMORY_CASES)
    r = subprocess.run(mpiexec_command(2, [sys.executable, str(script)]), cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr + r.stdout
    assert "every op ok" in r.stdout, r.stdout


@pytest.mark.parametrize("compare", [False, True])
def test_every_mpi_alloc_mem_block_is_freed(monkeypatch, compare):
    """Sizes that collapse onto one case (1 and 8 bytes of float64) make a case that is dropped:
    its blocks are handed back too, as every kept case's are after timing."""
    import io

    from mpi4py import MPI

    from meshrt.bench import cases

    made, freed = [], []
    real_call, real_free = cases._MpiMemory.__call__, cases._MpiMemory.free

    def call(self, count, dtype):
        made.append(id(self))
        return real_call(self, count, dtype)

    def free(self):
        freed.extend(id(self) for _ in self.blocks)
        real_free(self)

    monkeypatch.setattr(cases._MpiMemory, "__call__", call)
    monkeypatch.setattr(cases._MpiMemory, "free", free)
    argv = ["all_reduce", "--sizes", "1,8,64", "--method", "imb", "--iters", "2", "--warmup", "1", "--no-progress"]
    o = _options(*(argv + (["--compare", "c"] if compare else [])))
    assert o.alloc == "mpi"
    assert B.run(o, MPI.COMM_SELF, io.StringIO(), compare=M.run_compare) == 0
    assert made and sorted(made) == sorted(freed)
