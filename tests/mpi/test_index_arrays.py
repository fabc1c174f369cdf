"""``x[idx]`` with ``idx`` an integer DistributedTensor and ``x`` split on dim 0: the rows are fetched from
their owners (meshrt.tensor.advanced_index._take_rows), never a gather of ``x``; checked against numpy on the
global arrays at 1-4 processes, uneven shards, any sharding of ``idx``."""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Sharding

MPI_NPROCS = (1, 2, 3, 4)

comm = MPI.COMM_WORLD
N = comm.size


def uneven(n):
    """Dim-0 offsets over N shards of ``n`` rows: the first shard empty, the last the largest."""
    cuts = sorted(min(n, (k * k * n) // (N * N)) for k in range(N))
    return [0] + cuts[1:] + [n] if N > 1 else [0, n]


def x_layouts(meshes, n):
    m1, m2 = meshes["1d"], meshes["2d"]
    out = [("rows", Sharding(m1, [[0]])),
           ("rows uneven", Sharding(m1, [[0]], sharded_dims_offsets=uneven(n))),
           ("replicated", Sharding(m1, [])),
           ("2d: rows over both axes", Sharding(m2, [[0, 1]])),
           ("2d: rows over axis 0", Sharding(m2, [[0]]))]
    if n >= 2 * N:  # (a halo is no wider than a shard)
        out.append(("rows halo", Sharding(m1, [[0]], halo_sizes=[1, 2])))
    return out


def idx_layouts(meshes, x_sharding, ndim):
    m = x_sharding.mesh
    out = [("replicated", Sharding(m, [])), ("split", Sharding(m, [[0]]))]
    if m.ndim == 2:
        out.append(("split on the other axis", Sharding(m, [[1]])))
    if ndim == 2:
        out.append(("split on dim 1", Sharding(m, [[], [0]])))
    return out


def test_rows_fetched_from_owners_equal_numpy(meshes, monkeypatch):
    rng = np.random.default_rng(7)
    real_gather = DT.gather
    gathers = []

    def counting(self, *a, **k):
        gathers.append(self.shape)
        return real_gather(self, *a, **k)

    for n, rest in ((3 * N + 2, ()), (2 * N + 5, (3,)), (1, (2, 2)), (N + 1, (0,))):
        g = rng.standard_normal((n,) + rest)
        for xname, xs in x_layouts(meshes, n):
            x = DT.from_global(g, xs)
            for ishape in ((7,), (0,), (3, 2 * N + 1)):
                ig = rng.integers(-n, n, ishape)
                for iname, isd in idx_layouts(meshes, xs, len(ishape)):
                    idx = DT.from_global(ig, isd)
                    monkeypatch.setattr(DT, "gather", counting)
                    r = x[idx]
                    r2 = x[(idx + 0,)]  # a deferred expression, in a tuple
                    monkeypatch.setattr(DT, "gather", real_gather)
                    what = f"{xname} {rest} / idx {iname} {ishape}"
                    assert not gathers, (what, gathers)
                    want = g[ig]
                    assert r.shape == want.shape, what
                    assert r.sharding.split_axes == isd.split_axes, what
                    np.testing.assert_array_equal(r.gather(), want, err_msg=what)
                    np.testing.assert_array_equal(r2.gather(), want, err_msg=what)
    u = DT.from_global(np.arange(10, dtype=np.uint8), Sharding(meshes["1d"], [[0]]))
    iu = DT.from_global(np.array([9, 0, 9], np.uint16), Sharding(meshes["1d"], [[0]]))
    np.testing.assert_array_equal(u[iu].gather(), np.array([9, 0, 9], np.uint8))


def test_out_of_range_index_raises_everywhere(meshes):
    n = 2 * N + 1
    for xname, xs in x_layouts(meshes, n):
        x = DT.from_global(np.arange(n * 2.0).reshape(n, 2), xs)
        for bad in (n, -n - 1):
            ig = np.zeros(3 * N, np.int64)
            ig[-1] = bad  # on the last process only when idx is split
            for iname, isd in idx_layouts(meshes, xs, 1):
                with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis 0 with size {n}"):
                    x[DT.from_global(ig, isd)]
        np.testing.assert_array_equal(x[DT.from_global(np.array([-n, n - 1]), Sharding(xs.mesh, []))].gather(),
                                      np.arange(n * 2.0).reshape(n, 2)[[-n, n - 1]])
