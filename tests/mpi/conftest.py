"""Runs inside every rank: `mpiexec -n N python -m pytest tests/mpi/test_x.py`.

Registers meshrt.testing's MPIPlugin (per-test faulthandler watchdog of
MESHRT_TEST_TIMEOUT s, a post-test sync, per-rank JSON reports into
MESHRT_TEST_REPORT_DIR). The launcher also loads it with `-p meshrt.testing`;
registration happens once either way.
"""

import pytest
from mpi4py import MPI

from meshrt.testing import pytest_configure  # noqa: F401  (the hook itself)


@pytest.fixture
def comm():
    """MPI.COMM_WORLD; tests assert what must hold at comm.size."""
    return MPI.COMM_WORLD
