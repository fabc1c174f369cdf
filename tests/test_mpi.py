"""Run every tests/mpi/test_*.py under mpiexec at several process counts.

Counts: MESHRT_TEST_NPROCS (default 1,2,3,4,8), intersected with a file's
MPI_NPROCS. All files selected at one count (``-k halo`` selects by name) run in
ONE mpiexec job (imports and start-up on 8 oversubscribed processes cost seconds
per job); each file still gets its own outcome, ``test_mpi[FILE-nN]``, reporting
only its own failures.
Whole-job timeout: MESHRT_MPI_TIMEOUT (default 900 s).
"""

import glob
import os

import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import default_nprocs, mpi_nprocs_of, run_mpi_pytest

MPI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi")
FILES = sorted(glob.glob(os.path.join(MPI_DIR, "test_*.py")))
_JOBS = {}


def _allowed(path, n):
    allowed = mpi_nprocs_of(path)
    return allowed is None or n in allowed


def _job(n, session):
    if n not in _JOBS:
        timeout = float(os.environ.get("MESHRT_MPI_TIMEOUT", "900"))
        selected = {item.callspec.params["path"] for item in session.items
                    if getattr(item, "originalname", None) == "test_mpi" and item.callspec.params["nprocs"] == n}
        _JOBS[n] = run_mpi_pytest([p for p in FILES if p in selected and _allowed(p, n)], n, timeout=timeout)
    return _JOBS[n]


def _cases():
    for path in FILES:
        name = os.path.basename(path)
        for n in default_nprocs():
            marks = [] if _allowed(path, n) else [
                pytest.mark.skip(reason=f"{name} sets MPI_NPROCS = {mpi_nprocs_of(path)}")]
            yield pytest.param(path, n, id=f"{name}-n{n}", marks=marks)


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
@pytest.mark.parametrize("path,nprocs", list(_cases()))
def test_mpi(path, nprocs, request):
    result = _job(nprocs, request.session)
    name = os.path.basename(path)
    if not result.passed_in(name):
        pytest.fail(result.summary(name), pytrace=False)
