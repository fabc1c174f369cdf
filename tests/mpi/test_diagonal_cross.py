"""``np.diagonal``/``np.diag``/``np.linalg.diagonal`` of a split matrix and ``np.cross``/``np.linalg.cross`` of
split vectors, never gathered (`meshrt.tensor.numpy_misc`), against numpy at every process count: every
offset, row, column and 2-D splits, uneven blocks, halos, partial tensors, several dtypes (``-0.0`` and NaN
keep their bits), and the array API's ``linalg.diagonal``/``linalg.cross`` with their gather decisions."""

import numpy as np
import pytest
from mpi4py import MPI

import meshrt.array_api as xp
from meshrt import DistributedTensor as DT, Sharding

comm = MPI.COMM_WORLD


def _layouts(meshes, shape):
    m1, m2 = meshes["1d"], meshes["2d"]
    n0 = shape[0]
    uneven = [0] + sorted(min(n0, 1 + 2 * k) for k in range(1, comm.size)) + [n0]
    layouts = {"rows": Sharding(m1, [[0]]), "cols": Sharding(m1, [[], [0]]), "2d": Sharding(m2, [[0], [1]]),
               "2d-swapped": Sharding(m2, [[1], [0]]), "both-axes-rows": Sharding(m2, [[0, 1]]),
               "uneven": Sharding(m1, [[0]], sharded_dims_offsets=uneven), "replicated": Sharding(m1, [])}
    if n0 >= 2 * comm.size:  # (a halo needs a neighbour block at least as wide)
        layouts["halo"] = Sharding(m1, [[0]], halo_sizes=[1, 1])
    return layouts


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64, np.bool_])
def test_diagonal_of_every_offset_equals_numpy(meshes, dtype):
    rng = np.random.default_rng(3)
    for shape in ((comm.size * 2 + 3, comm.size + 4), (3, comm.size * 3 + 1)):
        g = (rng.random(shape) * 10 - 5).astype(dtype)
        if dtype in (np.float64, np.float32):
            g[0, 0], g[1, 1] = -0.0, np.nan
        if dtype == np.complex128:
            g[0, 0], g[1, 1] = complex(-0.0, -0.0), complex(1.0, -0.0)
        for name, s in _layouts(meshes, shape).items():
            t = DT.from_global(g, s)
            for k in range(-shape[0] - 1, shape[1] + 2):
                want = np.diagonal(g, k)
                for got in (np.diagonal(t, k), np.diag(t, k), np.linalg.diagonal(t, offset=k),
                            xp.linalg.diagonal(t, offset=k)):
                    got, w = np.ascontiguousarray(got.gather()), np.ascontiguousarray(want)
                    assert got.dtype == w.dtype and got.shape == w.shape, (name, k)
                    assert np.array_equal(got.view(np.uint8), w.view(np.uint8)), (name, k, got, w)
            np.testing.assert_array_equal(np.diagonal(t, 1, axis1=1, axis2=0).gather(), np.diagonal(g, 1, 1, 0))


def test_diagonal_of_a_partial_tensor_and_its_layout(meshes):
    g = np.arange(30.0).reshape(6, 5)
    s = Sharding(meshes["2d"], [[0]], partial_axes=[1]) if meshes["2d"].shape[1] > 1 else None
    if s is not None:  # a sum-partial tensor: the diagonal of the summed values
        t = DT.from_global(g, Sharding(meshes["2d"], [[0]])).reshard(s)
        np.testing.assert_array_equal(np.diagonal(t).gather(), np.diagonal(g))
    t = DT.from_global(g, Sharding(meshes["1d"], [[0]]))
    d = np.diagonal(t, -1)
    assert d.sharding.split_axes == ((0,),)  # split like the rows, nothing moved along them
    mine = d.shard_slices[0]
    rows = t.shard_slices[0]
    assert mine.start == min(max(rows.start - 1, 0), 5) and mine.stop == min(max(rows.stop - 1, 0), 5)


def test_cross_equals_numpy_and_its_errors(meshes):
    rng = np.random.default_rng(4)
    a, b = rng.random((comm.size * 2 + 1, 3)), rng.random((comm.size * 2 + 1, 3))
    for name, s in _layouts(meshes, a.shape).items():
        if name in ("cols", "2d", "2d-swapped"):
            continue  # (the vectors' dim split: below)
        A, B = DT.from_global(a, s), DT.from_global(b, Sharding(s.mesh, [[0]]))  # (b laid out apart)
        want = np.cross(a, b)
        for got in (np.cross(A, B), np.linalg.cross(A, B), xp.linalg.cross(A, B), np.cross(A, B, axis=1)):
            np.testing.assert_allclose(got.gather(), want, rtol=1e-15, err_msg=name)
    v = rng.random((3, comm.size + 2))
    V = DT.from_global(v, Sharding(meshes["1d"], [[], [0]]))
    np.testing.assert_allclose(np.cross(V, V * 2.0, axis=0).gather(), np.cross(v, v * 2.0, axis=0))
    A = DT.from_global(a, Sharding(meshes["2d"], [[0], [1]]))
    if meshes["2d"].shape[1] > 1:
        with pytest.raises(TypeError, match="must not be split"):
            np.cross(A, A)
        before = dict(xp.GATHERS)
        np.testing.assert_allclose(xp.linalg.cross(A, A).gather(), np.zeros_like(a))  # gathered, and says why
        assert xp.GATHERS.get("linalg.cross") == "the vectors' axis is split" or "linalg.cross" in before
    with pytest.raises(ValueError, match="dimension must be 2 or 3"):
        np.cross(DT.from_global(np.ones((4, 4)), Sharding(meshes["1d"], [[0]])),
                 DT.from_global(np.ones((4, 4)), Sharding(meshes["1d"], [[0]])))
