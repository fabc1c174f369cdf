"""Implicit conversion of a split tensor to numpy (issue 53, item 3): ``np.asarray(t)``, ``np.array(t)``,
``A[...] = t``, ``list(t)`` give the global array, the same on every process (one allgather), with a
`PerformanceWarning` naming the call site once per call site; ``MESHRT_IMPLICIT_GATHER=error`` refuses,
naming it. Valid at any process count (uneven blocks at 3 and 4).
"""

import warnings

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import PerformanceWarning, Sharding
from meshrt.tensor import DistributedTensor as DT

MPI_NPROCS = (1, 2, 3, 4)
comm = MPI.COMM_WORLD
G = np.arange(7 * 5, dtype=np.float64).reshape(7, 5) * 0.5 - 3


def _same_everywhere(a):
    everyone = comm.allgather(np.asarray(a))
    assert all(np.array_equal(x, everyone[0]) for x in everyone)


def _layouts(meshes):
    return [Sharding(meshes["1d"], [[0]]), Sharding(meshes["1d"], [[], [0]], halo_sizes=[1, 1]),
            Sharding(meshes["2d"], [[0], [1]]), Sharding(meshes["1d"], [])]


def test_numpy_conversions_gather(meshes):
    for s in _layouts(meshes):
        t = DT.from_global(G, s)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PerformanceWarning)
            a, b, c = np.asarray(t), np.array(t, dtype=np.float32), np.asarray(t + 1.0)  # t + 1.0: deferred
            A = np.zeros((7, 5, 2))
            A[:, :, 1] = t * 2.0  # a numpy target (issue 53's `ccol[:, :, k] = gcv * BET_P`)
            rows = list(t)
            total = sum(t[0])  # a row of a split tensor, iterated
        assert np.array_equal(a, G) and b.dtype == np.float32 and np.array_equal(b, G.astype(np.float32))
        assert np.array_equal(c, G + 1) and np.array_equal(A[:, :, 1], G * 2) and not A[:, :, 0].any()
        assert len(t) == 7 and len(rows) == 7 and all(np.array_equal(r, g) for r, g in zip(rows, G))
        assert total == G[0].sum()
        _same_everywhere(a)
        _same_everywhere(A)
    with pytest.raises(ValueError, match="copy"):
        np.asarray(DT.from_global(G, Sharding(meshes["1d"], [[0]])), copy=False) if comm.size > 1 else \
            np.array(DT.from_global(G, Sharding(meshes["1d"], [[0]])), copy=False)


def test_warning_once_per_call_site(meshes):
    t = DT.from_global(G, Sharding(meshes["1d"], [[0]]))
    r = DT.from_global(G, Sharding(meshes["1d"], []))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("default")  # Python's own filter: once per location
        for _ in range(3):
            np.asarray(t)  # one site, three calls
        np.asarray(t)  # another site
        np.asarray(r)  # replicated: its block, no gather, no warning
        list(t)
    here = [w for w in seen if issubclass(w.category, PerformanceWarning)]
    assert len(here) == 3, [str(w.message) for w in here]
    assert all(w.filename == __file__ for w in here)
    assert f"test_implicit_gather.py:{here[0].lineno}:" in str(here[0].message) and "iter()" in str(here[2].message)
    assert here[0].lineno + 1 == here[1].lineno


def test_refused_under_env(meshes, monkeypatch):
    t = DT.from_global(G, Sharding(meshes["1d"], [[0]]))
    monkeypatch.setenv("MESHRT_IMPLICIT_GATHER", "error")
    with pytest.raises(TypeError, match=r"test_implicit_gather\.py:\d+: a conversion .*MESHRT_IMPLICIT_GATHER"):
        np.asarray(t)
    with pytest.raises(TypeError, match=r"test_implicit_gather\.py:\d+: iter\(\)"):
        list(t)
    with pytest.raises(TypeError, match="gather"):
        np.zeros((7, 5))[...] = t
    assert np.array_equal(np.asarray(DT.from_global(G, Sharding(meshes["1d"], []))), G)  # replicated: allowed
    monkeypatch.setenv("MESHRT_IMPLICIT_GATHER", "sometimes")
    with pytest.raises(ValueError, match="MESHRT_IMPLICIT_GATHER"):
        np.asarray(t)


def test_iteration_and_scalars(meshes):
    v = DT.from_global(np.arange(10.0), Sharding(meshes["1d"], [[0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        assert [float(x) for x in v] == list(range(10))
    assert float(v[3]) == 3.0 and int(v.sum()) == 45 and hasattr(v, "__iter__") and len(v) == 10
    with pytest.raises(TypeError, match="0-d"):
        iter(v[3])


def test_sklearn_iterable_check(meshes):
    """scikit-learn's ``pairwise_distances_argmin`` asks ``hasattr(X, "__iter__")``."""
    metrics = pytest.importorskip("sklearn.metrics")
    x = np.random.default_rng(53).standard_normal((11, 3))
    y = x[[2, 7]] + 0.01
    t = DT.from_global(x, Sharding(meshes["1d"], [[0]]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PerformanceWarning)
        got = metrics.pairwise_distances_argmin(t, y)
    assert np.array_equal(np.asarray(got), metrics.pairwise_distances_argmin(x, y))
