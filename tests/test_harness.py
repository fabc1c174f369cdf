"""The MPI launcher reports failing and hanging inner tests by name and rank."""

import textwrap

import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import mpi_nprocs_of, run_mpi_pytest

pytestmark = pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")


def _write(tmp_path, body, name="test_inner.py"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return str(p)


def test_failure_on_one_rank_is_named(tmp_path):
    path = _write(tmp_path, """
        from mpi4py import MPI

        def test_fine():
            MPI.COMM_WORLD.Barrier()

        def test_rank_one_breaks():
            comm = MPI.COMM_WORLD
            assert comm.rank != 1, "rank one is broken"
    """)
    res = run_mpi_pytest(path, 2, timeout=120)
    assert not res.ok
    assert [(f.rank, f.nodeid.split("::")[-1]) for f in res.failures] == \
        [(1, "test_rank_one_breaks")]
    text = res.summary()
    assert "test_rank_one_breaks failed on rank 1" in text
    assert "rank one is broken" in text


def test_hang_is_killed_and_named(tmp_path):
    # Rank 0 waits in a barrier rank 1 never enters: a classic MPI hang.
    path = _write(tmp_path, """
        import time
        from mpi4py import MPI

        def test_hangs():
            if MPI.COMM_WORLD.rank == 0:
                MPI.COMM_WORLD.Barrier()
            else:
                time.sleep(600)
    """)
    res = run_mpi_pytest(path, 2, timeout=60, test_timeout=3)
    assert not res.ok
    names = {f.nodeid.split("::")[-1] for f in res.failures}
    assert names == {"test_hangs"}
    assert "timed out" in res.summary()
    assert "test_hangs" in res.summary()


def test_outer_timeout_names_running_test(tmp_path):
    path = _write(tmp_path, """
        import time

        def test_sleeps():
            time.sleep(600)
    """)
    res = run_mpi_pytest(path, 1, timeout=5, test_timeout=300)
    assert res.timed_out and not res.ok
    assert [f.nodeid.split("::")[-1] for f in res.failures] == ["test_sleeps"]


def test_mpi_nprocs_parsed_without_import(tmp_path):
    path = _write(tmp_path, "raise SystemExit('never imported')\nMPI_NPROCS = (2, 4)\n")
    assert mpi_nprocs_of(path) == (2, 4)
    assert mpi_nprocs_of(_write(tmp_path, "x = 1\n", "other.py")) is None


def test_several_files_in_one_job_report_separately(tmp_path):
    good = _write(tmp_path, """
        from mpi4py import MPI

        def test_sum():
            comm = MPI.COMM_WORLD
            assert comm.allreduce(1) == comm.size
    """, name="test_good.py")
    bad = _write(tmp_path, """
        def test_broken():
            assert False, "this file is broken"
    """, name="test_bad.py")
    res = run_mpi_pytest([good, bad], 2, timeout=120)
    assert not res.ok
    assert res.passed_in("test_good.py") and not res.passed_in("test_bad.py")
    assert {f.rank for f in res.failures_in("test_bad.py")} == {0, 1}
    assert not res.failures_in("test_good.py")
    assert "this file is broken" in res.summary("test_bad.py")
    assert "this file is broken" not in res.summary("test_good.py")
