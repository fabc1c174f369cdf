"""Loop programs as numpy users write them (issue 53; `meshrt.bench.loops`): a triangular solve, Cholesky
and LU by rows and by slices, Gram-Schmidt, Levinson-Durbin, a CRC-16 scalar loop, a trace by index, a row
recurrence and conjugate gradient iterations, run unchanged on tensors split on dim 0, equal numpy's results
at any process count (small sizes; `bench/bench_loops.py` times them).
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Sharding
from meshrt.bench.loops import PROGRAMS

MPI_NPROCS = (1, 2, 3, 4)
comm = MPI.COMM_WORLD


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_loop_program_equals_numpy(name, meshes):
    p = PROGRAMS[name]
    g = p.make(p.small, np.random.default_rng(53))
    want = p.run(**{k: v.copy() if isinstance(v, np.ndarray) else v for k, v in g.items()})
    s = Sharding(meshes["1d"], [[0]])
    got = p.run(**{k: DT.from_global(v, s) if k in p.split else v for k, v in g.items()})
    for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        a = a.gather() if isinstance(a, DT) else a
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)
        everyone = comm.allgather(np.asarray(a))
        assert all(np.array_equal(x, everyone[0]) for x in everyone), name
