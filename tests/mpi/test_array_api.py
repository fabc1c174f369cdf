"""meshrt.array_api (issue 44) at 1-3 processes against a plain-numpy model of the global arrays: the
namespace protocol and device = placement rules, asarray keeping the local block, 0-d values equal on every
process, TSQR qr/svd never gathering the rows, scans along a split axis, the functions that gather (and
that explain_op says so), and bad input raising the same error on every process.
"""

import numpy as np
import pytest
from mpi4py import MPI

import meshrt
import meshrt.linalg.tall
import meshrt.array_api as xp
from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.array_api import GATHERS

MPI_NPROCS = (1, 2, 3)
comm = MPI.COMM_WORLD
rng = np.random.default_rng(44)


def same_everywhere(value):
    got = comm.allgather(value)
    assert all(g == got[0] for g in got), got
    return got[0]


def test_namespace_device_and_array_object():
    a = rng.standard_normal((7, 3))
    x = xp.asarray(a)
    assert x.__array_namespace__() is xp and x.__array_namespace__(api_version="2024.12") is xp
    assert x.device == xp.__array_namespace_info__().default_device() == x.mesh
    assert x.sharding.split_axes == ((0,),)  # the default: dim 0 split over every process
    np.testing.assert_array_equal(x.interior, a[x.shard_slices])  # only the local block kept
    np.testing.assert_array_equal(x.mT.gather(), a.T)
    rep = x.to_device(Sharding(x.mesh, []))
    assert not any(rep.sharding.split_axes)
    np.testing.assert_array_equal(rep.interior, a)
    np.testing.assert_array_equal(np.from_dlpack(rep), a)  # a replicated tensor's block is the array
    cols = xp.zeros((4, 6), device=Sharding(x.mesh, [[], [0]]))
    assert cols.sharding.split_axes == ((), (0,)) and cols.device == x.mesh
    assert xp.ones_like(cols).sharding == cols.sharding  # *_like keep the placement
    np.testing.assert_array_equal(xp.arange(10).gather(), np.arange(10))
    np.testing.assert_array_equal(xp.linspace(0, 1, 5).gather(), np.linspace(0, 1, 5))
    np.testing.assert_array_equal(xp.eye(5, k=1).gather(), np.eye(5, k=1))
    assert xp.full((2,), 3).dtype == np.int64 and xp.full((2,), True).dtype == np.bool_


def test_default_device_is_settable():
    sub = Mesh((1, -1))
    xp.set_default_device(sub)
    try:
        x = xp.zeros((6, 2))
        assert x.mesh == sub and x.sharding.split_axes == ((0, 1),)
    finally:
        xp.set_default_device(None)
    assert xp.zeros(3).mesh == Mesh((-1,))


def test_zero_dim_values_are_equal_on_every_process():
    a = rng.integers(-5, 5, 11)
    x = xp.asarray(a)
    s = xp.sum(x)
    assert s.ndim == 0
    assert same_everywhere(int(s)) == a.sum()
    assert same_everywhere(float(xp.mean(xp.astype(x, xp.float64)))) == pytest.approx(a.mean())
    assert same_everywhere(bool(xp.any(x > 3))) == bool((a > 3).any())
    assert same_everywhere(complex(xp.asarray(1 + 2j))) == 1 + 2j
    assert same_everywhere(list(range(10))[xp.asarray(3)]) == 3  # __index__
    assert same_everywhere(float(x[4])) == a[4]


@pytest.mark.parametrize("shape,chunk", [((50, 4), 4096), ((50, 4), 3), ((97, 5), 7), ((7, 3), 4096), ((12, 6), 4096)])
def test_tsqr_qr_and_svd_keep_rows_where_they_are(shape, chunk, monkeypatch):
    monkeypatch.setattr(meshrt.linalg.tall, "_CHUNK", chunk)  # small chunks: each block is itself a TSQR of chunks
    a = rng.standard_normal(shape)
    x = xp.asarray(a)
    GATHERS.clear()
    q, r = xp.linalg.qr(x)
    assert q.sharding == x.sharding and q.shape == shape and r.shape == (shape[1], shape[1])
    np.testing.assert_allclose((q @ r).gather(), a, atol=1e-12)
    np.testing.assert_allclose(np.abs(r.gather()), np.abs(np.linalg.qr(a)[1]), atol=1e-12)
    np.testing.assert_allclose((q.mT @ q).gather(), np.eye(shape[1]), atol=1e-12)
    u, s, vh = xp.linalg.svd(x, full_matrices=False)
    if shape[1] * comm.size <= shape[0]:  # TSQR; else (a replicated R as large as a share) the Jacobi SVD
        assert u.sharding == x.sharding
    np.testing.assert_allclose(s.gather(), np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose(((u * s) @ vh).gather(), a, atol=1e-12)
    np.testing.assert_allclose(xp.linalg.svdvals(x).gather(), np.linalg.svdvals(a), rtol=1e-12)
    assert not GATHERS  # the rows never gathered
    assert not meshrt.explain_op(xp.linalg.svd, x, full_matrices=False).gathers


def test_small_matrices_where_replicated_and_gathering_named():
    a = rng.standard_normal((5, 5))
    spd = a @ a.T + 5 * np.eye(5)
    m = xp.asarray(spd, device=Sharding(Mesh((-1,)), []))
    GATHERS.clear()
    np.testing.assert_allclose(xp.linalg.cholesky(m).gather(), np.linalg.cholesky(spd), rtol=1e-12)
    np.testing.assert_allclose(xp.linalg.solve(m, xp.asarray(np.ones((5, 1)), device=m.sharding)).gather(),
                               np.linalg.solve(spd, np.ones((5, 1))), rtol=1e-10)
    w, v = xp.linalg.eigh(m)
    np.testing.assert_allclose(w.gather(), np.linalg.eigvalsh(spd), rtol=1e-12)
    sign, logdet = xp.linalg.slogdet(m)
    assert same_everywhere(float(logdet)) == pytest.approx(np.linalg.slogdet(spd)[1])
    assert not GATHERS  # replicated operands: computed in place
    split = xp.asarray(spd)
    np.testing.assert_allclose(xp.linalg.inv(split).gather(), np.linalg.inv(spd), rtol=1e-10)
    plan = meshrt.explain_op(xp.linalg.inv, split)
    assert not plan.gathers and "block-cyclic" in str(plan)
    assert not GATHERS  # inv of a split matrix: distributed
    for f in (xp.linalg.det, lambda t: xp.linalg.slogdet(t)[1]):
        d = f(split)
        assert isinstance(d, meshrt.DistributedTensor) and d.shape == ()
    assert float(xp.linalg.det(split)) == pytest.approx(np.linalg.det(spd))
    q, r = xp.linalg.qr(split, mode="complete")
    np.testing.assert_allclose(q.gather() @ r.gather(), spd, atol=1e-12)
    assert not meshrt.explain_op(xp.linalg.qr, split, mode="complete").gathers


def test_scans_sorts_and_sets_against_numpy():
    a = rng.integers(0, 6, 17)
    x = xp.asarray(a)
    np.testing.assert_array_equal(xp.cumulative_sum(x).gather(), np.cumsum(a))
    np.testing.assert_array_equal(xp.cumulative_sum(x, include_initial=True).gather(),
                                  np.cumulative_sum(a, include_initial=True))
    b = rng.standard_normal((9, 4))
    np.testing.assert_allclose(xp.cumulative_prod(xp.asarray(b), axis=0).gather(), np.cumprod(b, axis=0))
    np.testing.assert_array_equal(xp.sort(x, descending=True).gather(), np.sort(a)[::-1])
    np.testing.assert_array_equal(xp.argsort(x).gather(), np.argsort(a, kind="stable"))
    np.testing.assert_array_equal(xp.unique_values(xp.asarray(a[::-1].copy())).gather(), np.unique(a))  # sorted
    GATHERS.clear()
    u = xp.unique_counts(x)
    assert "unique_counts" not in GATHERS  # only each process's distinct values move
    ref = np.unique_counts(a)
    np.testing.assert_array_equal(u.values.gather(), ref.values)
    np.testing.assert_array_equal(u.counts.gather(), ref.counts)
    np.testing.assert_array_equal(xp.searchsorted(xp.sort(x), xp.asarray([2, 4])).gather(),
                                  np.searchsorted(np.sort(a), [2, 4]))
    masked = x[x > 2]
    np.testing.assert_array_equal(masked.gather(), a[a > 2])
    y = xp.asarray(a.astype(np.float64))
    y[y > 2] = 0.0
    np.testing.assert_array_equal(y.gather(), np.where(a > 2, 0.0, a))
    f = np.array([1.0, np.nan, 2.0, np.nan, 1.0, 3.0, 2.0])
    np.testing.assert_array_equal(xp.unique_values(xp.asarray(f)).gather(), np.unique(f, equal_nan=False))
    assert not meshrt.explain_op(xp.sort, x).gathers and "sort" not in GATHERS


def test_elementwise_and_reductions_follow_the_standard():
    a = rng.standard_normal((6, 5))
    b = rng.standard_normal(5)
    x, y = xp.asarray(a), xp.asarray(b)
    np.testing.assert_allclose((x - y).gather(), a - b)
    np.testing.assert_allclose(xp.hypot(x, 2.0).gather(), np.hypot(a, 2.0))
    np.testing.assert_allclose(xp.var(x, axis=0, correction=1).gather(), np.var(a, axis=0, ddof=1))
    np.testing.assert_allclose(xp.vecdot(x, xp.ones_like(x)).gather(), a.sum(axis=1))
    np.testing.assert_allclose(xp.matmul(x.mT, x).gather(), a.T @ a)
    assert xp.sum(xp.asarray(np.arange(4, dtype=np.int8))).dtype == np.int64
    np.testing.assert_array_equal(xp.max(x, axis=1, keepdims=True).gather(), a.max(axis=1, keepdims=True))
    z = xp.clip(x, min=-0.5, max=0.5)
    np.testing.assert_array_equal(z.gather(), np.clip(a, -0.5, 0.5))


def _raises_everywhere(exc, fn):
    try:
        fn()
    except exc as e:
        msg = str(e)
    else:
        msg = None
    got = comm.allgather(msg)
    assert got[0] is not None and all(g == got[0] for g in got), got
    return got[0]


def test_bad_input_raises_the_same_error_everywhere():
    x = xp.ones((4, 3))
    assert "device" in _raises_everywhere(ValueError, lambda: xp.zeros(3, device="cpu"))
    assert "device" in _raises_everywhere(ValueError, lambda: xp.set_default_device(42))
    _raises_everywhere(TypeError, lambda: xp.sum(np.ones(3)))
    _raises_everywhere(TypeError, lambda: xp.add(1, 2))
    _raises_everywhere(ValueError, lambda: xp.matmul(x, xp.ones((4, 3))))
    _raises_everywhere(ValueError, lambda: xp.linalg.qr(x, mode="full"))
    _raises_everywhere(ValueError, lambda: xp.squeeze(x, axis=0))
    _raises_everywhere(ValueError, lambda: x.to_device(Mesh((-1,)), stream=1))
    _raises_everywhere(ValueError, lambda: x.__array_namespace__(api_version="2099.01"))
    _raises_everywhere(ValueError, lambda: xp.cumulative_sum(x))


@pytest.mark.parametrize("dtype", [np.float64, np.int32])
def test_np_unique_of_a_split_tensor_does_not_gather(dtype):
    a = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9], dtype=dtype)
    if dtype == np.float64:
        a[[2, 7, 11]] = np.nan  # numpy collapses the NaNs to one (equal_nan=True)
    x = xp.asarray(a)
    GATHERS.clear()
    u, i, inv, c = np.unique(x, return_index=True, return_inverse=True, return_counts=True)
    assert "np.unique" not in GATHERS
    for got, want in zip((u, i, inv, c), np.unique(a, return_index=True, return_inverse=True, return_counts=True)):
        np.testing.assert_array_equal(got.gather() if hasattr(got, "gather") else got, want)
    assert inv.sharding == x.sharding
    np.testing.assert_array_equal(np.unique(x).gather(), np.unique(a))
    if dtype == np.float64:
        np.testing.assert_array_equal(np.unique(x, equal_nan=False).gather(), np.unique(a, equal_nan=False))
    with pytest.raises(TypeError, match="np.unique on a DistributedTensor: axis= is not supported"):
        np.unique(x, axis=0)


def test_where_with_condition_only_and_diff_with_positional_order():
    """Two numpy spellings scikit-learn's roc_curve uses on the namespace: where(c) and diff(x, n)."""
    a = rng.standard_normal(11)
    x = xp.asarray(a)
    (got,) = xp.where(x > 0)
    np.testing.assert_array_equal(got.gather(), np.nonzero(a > 0)[0])
    GATHERS.clear()
    np.testing.assert_allclose(xp.diff(x, 2).gather(), np.diff(a, 2))
    np.testing.assert_allclose(xp.diff(x, n=1).gather(), np.diff(a))
    assert "diff" not in GATHERS  # shifted slices, not a gather
    with pytest.raises(TypeError, match="give both x1 and x2, or neither"):
        xp.where(x > 0, x)
    with pytest.raises(TypeError, match="diff.. takes at most 2 positional arguments"):
        xp.diff(x, 1, 2)
