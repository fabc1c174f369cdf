"""The multi-process collective tests with the compiled call path off (``MESHRT_C_CALLS=0``):
mpi4py's path, the fallback, must pass them as the C path does (tests/test_mpi.py runs them
with it on)."""

import os

import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import run_mpi_pytest

MPI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi")

FILES = ["test_collectives.py", "test_collectives_c_calls.py", "test_reshard.py"]


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
@pytest.mark.parametrize("nprocs", [2])
def test_collectives_without_c_calls(nprocs, monkeypatch):
    monkeypatch.setenv("MESHRT_C_CALLS", "0")
    result = run_mpi_pytest([os.path.join(MPI_DIR, f) for f in FILES], nprocs)
    for name in FILES:
        assert result.passed_in(name), result.summary(name)
