"""Run every tests/mpi/test_*.py under mpiexec at several process counts.

Counts: MESHRT_TEST_NPROCS (default 1,2,3,4,8), intersected with a file's
MPI_NPROCS. Whole-run timeout: MESHRT_MPI_TIMEOUT (default 300 s).
"""

import glob
import os

import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import default_nprocs, mpi_nprocs_of, run_mpi_pytest

MPI_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi")


def _cases():
    for path in sorted(glob.glob(os.path.join(MPI_DIR, "test_*.py"))):
        name = os.path.basename(path)
        allowed = mpi_nprocs_of(path)
        for n in default_nprocs():
            marks = []
            if allowed is not None and n not in allowed:
                marks.append(pytest.mark.skip(reason=f"{name} sets MPI_NPROCS = {allowed}"))
            yield pytest.param(path, n, id=f"{name}-n{n}", marks=marks)


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
@pytest.mark.parametrize("path,nprocs", list(_cases()))
def test_mpi(path, nprocs):
    result = run_mpi_pytest(path, nprocs)
    if not result.ok:
        pytest.fail(result.summary(), pytrace=False)
