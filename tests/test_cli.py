"""meshrt info and meshrt run, as a user types them."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import mpiexec_command

needs_mpiexec = pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")


def _meshrt(*args, cwd, timeout=60):
    # python -m meshrt.cli runs the same main() as the console script.
    return subprocess.run([sys.executable, "-m", "meshrt.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_info_serial(tmp_path):
    r = _meshrt("info", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for word in ("meshrt", "mpi4py", "MPI", "numpy", "numba", "processes: 1"):
        assert word in r.stdout


@needs_mpiexec
def test_info_two_processes_with_mesh(tmp_path):
    r = subprocess.run(mpiexec_command(2, [sys.executable, "-m", "meshrt.cli",
                        "info", "--mesh", "2x1"]), cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "processes: 2" in r.stdout
    assert "rank 1: coords (1, 0)" in r.stdout
    assert r.stdout.count("numpy") == 1  # printed by rank 0 only


def _script(tmp_path, body):
    p = tmp_path / "script.py"
    p.write_text(textwrap.dedent(body))
    return str(p)


@needs_mpiexec
def test_run_aborts_when_one_rank_raises(tmp_path):
    script = _script(tmp_path, """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            raise RuntimeError("boom on rank one")
        comm.Barrier()  # rank 0 would wait here forever
    """)
    t0 = time.monotonic()
    r = _meshrt("run", "-n", "2", script, cwd=tmp_path, timeout=60)
    assert time.monotonic() - t0 < 15
    assert r.returncode != 0
    assert "[rank 1] Traceback" in r.stderr
    assert "RuntimeError: boom on rank one" in r.stderr


@needs_mpiexec
def test_run_good_script_and_args(tmp_path):
    script = _script(tmp_path, """
        import sys
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        total = comm.allreduce(comm.rank)
        if comm.rank == 0:
            print("args", sys.argv[1:], "total", total, "name", __name__)
    """)
    r = _meshrt("run", "-n", "2", script, "--flag", "x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "args ['--flag', 'x'] total 1 name __main__" in r.stdout


@needs_mpiexec
def test_run_default_one_process_exit_code(tmp_path):
    script = _script(tmp_path, "import sys; sys.exit(3)\n")
    assert _meshrt("run", script, cwd=tmp_path).returncode == 3


def test_run_missing_script(tmp_path):
    r = _meshrt("run", "-n", "2", "nope.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "script 'nope.py' does not exist" in r.stderr


def _alive_with_marker(marker):
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


@needs_mpiexec
def test_run_ends_promptly_when_a_process_is_killed(tmp_path):
    marker = f"meshrt-kill-test-{os.getpid()}"
    script = _script(tmp_path, """
        import os, signal, time
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        comm.Barrier()
        if comm.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        comm.Barrier()  # the others wait here for a process that is gone
        time.sleep(60)
    """)
    t0 = time.monotonic()
    r = _meshrt("run", "-n", "3", script, marker, cwd=tmp_path, timeout=60)
    elapsed = time.monotonic() - t0
    assert r.returncode != 0
    assert elapsed < 10, f"meshrt run took {elapsed:.1f} s to end after a SIGKILL"
    deadline = time.monotonic() + 5
    while _alive_with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive_with_marker(marker), "processes left behind after the job ended"
