"""Runs inside every rank: `mpiexec -n N python -m pytest tests/mpi/test_x.py`.

Registers meshrt.testing's MPIPlugin (per-test faulthandler watchdog of
MESHRT_TEST_TIMEOUT s, a post-test sync, per-rank JSON reports into
MESHRT_TEST_REPORT_DIR). The launcher also loads it with `-p meshrt.testing`;
registration happens once either way.
"""

import os

# before any test file of the job imports scipy: test_sklearn.py runs scikit-learn's array API dispatch
os.environ.setdefault("SCIPY_ARRAY_API", "1")

import pytest  # noqa: E402
from mpi4py import MPI  # noqa: E402

from meshrt import Mesh  # noqa: E402
from meshrt.testing import pytest_configure  # noqa: F401,E402  (the hook itself)


@pytest.fixture
def comm():
    """MPI.COMM_WORLD; tests assert what must hold at comm.size."""
    return MPI.COMM_WORLD


@pytest.fixture(scope="module")
def meshes():
    """1-, 2- and 3-d meshes over all processes (``"1d"``, ``"2d"``, ``"3d"``), freed after the module."""
    ms = {"1d": Mesh((-1,)), "2d": Mesh((-1, -1)), "3d": Mesh((-1, -1, -1))}
    yield ms
    for m in ms.values():
        m.free()
