"""meshrt.array_api's sorting, searching and set functions on split tensors (issue 44) at 1-4 processes,
against numpy on the global arrays: the sample sort (stable, descending, NaNs as numpy, the result in the
input's blocks), searchsorted over a split sorted x1, unique_* with inverse indices placed like the input,
nonzero with uneven blocks; uneven sizes, duplicates, several dtypes, meshes of two axes; none gathers.
"""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

import meshrt
import meshrt.array_api as xp
from meshrt import Mesh, Sharding
from meshrt.array_api import GATHERS
from test_array_api import _raises_everywhere

MPI_NPROCS = (1, 2, 3, 4)
comm = MPI.COMM_WORLD
DTYPES = (np.float64, np.float32, np.int32, np.uint8, np.bool_, np.complex128)


def sample(dtype, n, seed):
    rng = np.random.default_rng(seed)
    if dtype == np.bool_:
        return rng.integers(0, 2, n).astype(bool)
    if dtype == np.complex128:
        a = rng.integers(0, 3, n) + 1j * rng.integers(0, 2, n)
        if n > 4:
            a[[1, 4]] = complex(np.nan, 1.0), complex(2.0, np.nan)
        return a
    a = rng.integers(0, max(2, n // 3), n).astype(dtype)  # many duplicates
    if dtype in (np.float64, np.float32) and n > 4:
        a[[1, 3]] = np.nan
        a[2], a[4] = -0.0, 0.0
    return a


def argsort_ref(a, descending):
    if not descending:
        return np.argsort(a, kind="stable")
    return a.size - 1 - np.flip(np.argsort(np.flip(a), kind="stable"))


def placements():
    """The default placement, plus (at 4 processes) dim 0 over a 2x2 mesh's both axes in reverse order, and
    over one axis (the other axis holds replicas)."""
    yield None
    if comm.size == 4:
        m = Mesh((2, 2))
        yield from (Sharding(m, [[1, 0]]), Sharding(m, [[1]]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_of_a_split_vector(dtype):
    GATHERS.clear()
    for n in (0, 1, 5, 38):
        a = sample(dtype, n, n)
        for device in placements():
            x = xp.asarray(a, device=device)
            for desc in (False, True):
                ref = argsort_ref(a, desc)
                got = xp.argsort(x, descending=desc)
                assert got.sharding == x.sharding and got.dtype == np.int64
                np.testing.assert_array_equal(got.gather(), ref)
                s = xp.sort(x, descending=desc)
                assert s.sharding == x.sharding
                np.testing.assert_array_equal(s.interior, a[ref][x.shard_slices])  # each block where x's was
    assert not GATHERS


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_sort_along_each_dim_of_a_split_matrix(axis):
    b = sample(np.float64, 63, 7).reshape(9, 7)
    x = xp.asarray(b)
    GATHERS.clear()
    for desc in (False, True):
        ref = np.argsort(b, axis=axis, kind="stable") if not desc else \
            b.shape[axis] - 1 - np.flip(np.argsort(np.flip(b, axis), axis=axis, kind="stable"), axis)
        np.testing.assert_array_equal(xp.argsort(x, axis=axis, descending=desc).gather(), ref)
        np.testing.assert_array_equal(xp.sort(x, axis=axis, descending=desc).gather(),
                                      np.take_along_axis(b, ref, axis))
    assert not GATHERS


@settings(max_examples=25, derandomize=True, deadline=None, database=None)
@given(st.lists(st.sampled_from([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 3.0]), max_size=30),
       st.booleans())
def test_sample_sort_matches_numpy_on_any_vector(values, descending):
    a = np.array(values, np.float64)
    ref = argsort_ref(a, descending)
    np.testing.assert_array_equal(xp.argsort(xp.asarray(a), descending=descending).gather(), ref)
    np.testing.assert_array_equal(xp.sort(xp.asarray(a), descending=descending).gather(), a[ref])


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8, np.bool_])
def test_searchsorted_counts_in_the_blocks_of_x1(dtype):
    GATHERS.clear()
    for n in (0, 2, 5, 41):
        srt = np.sort(sample(dtype, n, n + 1))
        v = np.concatenate([srt[:4], sample(dtype, 6, 3)])
        for device in placements():
            x1 = xp.asarray(srt, device=device)
            for side in ("left", "right"):
                got = xp.searchsorted(x1, xp.asarray(v), side=side)
                assert got.sharding == xp.asarray(v).sharding
                np.testing.assert_array_equal(got.gather(), np.searchsorted(srt, v, side=side))
            rep = xp.asarray(v, device=Sharding(x1.mesh, []))
            np.testing.assert_array_equal(xp.searchsorted(x1, rep).interior, np.searchsorted(srt, v))
    assert not GATHERS
    assert "side" in _raises_everywhere(ValueError, lambda: xp.searchsorted(x1, xp.asarray(v), side="middle"))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, np.complex128])
def test_unique_all_and_inverse_keep_the_inverse_in_place(dtype):
    GATHERS.clear()
    for shape in ((0,), (23,), (7, 3)):
        a = sample(dtype, int(np.prod(shape)), 5).reshape(shape)
        for device in placements():
            x = xp.asarray(a, device=device)
            values = np.unique(a, equal_nan=False)
            u = xp.unique_all(x)
            assert u.inverse_indices.sharding == x.sharding and u.inverse_indices.shape == shape
            v = u.values.gather()
            np.testing.assert_array_equal(v, values)
            np.testing.assert_array_equal(v[u.inverse_indices.gather()], a)  # NaNs each their own value
            np.testing.assert_array_equal(a.ravel()[u.indices.gather()], values)
            first = np.unique(a, equal_nan=False, return_index=True)[1]
            ok = ~(np.isnan(values) if values.dtype.kind in "fc" else np.zeros(values.size, bool))
            np.testing.assert_array_equal(u.indices.gather()[ok], first[ok])  # the first occurrences
            np.testing.assert_array_equal(u.counts.gather(), np.unique(a, equal_nan=False, return_counts=True)[1])
            inv = xp.unique_inverse(x)
            np.testing.assert_array_equal(inv.inverse_indices.gather(), u.inverse_indices.gather())
    assert not GATHERS


def test_nonzero_gives_uneven_blocks():
    GATHERS.clear()
    for shape in ((1,), (13,), (6, 5), (3, 2, 4)):
        a = (sample(np.int32, int(np.prod(shape)), 11) % 3 == 0).astype(np.int32).reshape(shape)
        ref = np.nonzero(a)
        for device in (None, Sharding(Mesh((-1,)), [[]] * (len(shape) - 1) + [[0]])):
            x = xp.asarray(a, device=device)
            got = xp.nonzero(x)
            assert len(got) == len(ref)
            for g, r in zip(got, ref):
                np.testing.assert_array_equal(g.gather(), r)
                counts = comm.allgather(g.interior.size)
                assert g.sharding.split_axes == ((0,),) and sum(counts) == r.size
            assert int(xp.count_nonzero(x)) == np.count_nonzero(a)
    assert not GATHERS
    assert not meshrt.explain_op(xp.nonzero, xp.asarray(np.arange(5))).gathers


def test_gathering_is_decided_before_running(monkeypatch):
    x = xp.asarray(np.arange(10.0))
    GATHERS.clear()
    counts = xp.asarray(np.arange(10) % 3)
    np.testing.assert_array_equal(xp.repeat(x, counts).gather(), np.repeat(np.arange(10.0), np.arange(10) % 3))
    plan = meshrt.explain_op(xp.repeat, x, counts)
    assert plan.gathers and "repeat" in GATHERS and "data-dependent" in str(plan)  # split even at 1 process
    # a replicated 0-d operand of where broadcasts locally: the split operand stays
    np.testing.assert_array_equal(xp.where(x > 4, xp.asarray(0.0), x).gather(), np.where(np.arange(10) > 4, 0, np.arange(10.0)))
    assert "where" not in GATHERS
    # an error inside a distributed form is raised on every process, not answered by gathering
    from meshrt.array_api import _sorting

    def broken(*a, **k):
        raise TypeError("a bug in the sample sort")
    monkeypatch.setattr(_sorting, "sample_sort", broken)
    if comm.size > 1:
        assert "bug" in _raises_everywhere(TypeError, lambda: xp.sort(x))
    assert "sort" not in GATHERS


@pytest.mark.parametrize("split", [0, 1])
def test_take_and_take_along_axis_do_not_gather(split):
    """take along any axis (the split one too: each process fetches the rows its result block needs) and
    take_along_axis along a whole axis, against numpy, indices negative and repeated; out-of-range indices
    raise IndexError on every process."""
    a = sample(np.float64, 7 * 5, 3).reshape(7, 5)
    x = xp.asarray(a, device=Sharding(Mesh((-1,)), [[0]] if split == 0 else [[], [0]]))
    GATHERS.clear()
    for axis, idx in ((0, [6, 0, -1, 3, 3]), (1, [4, 0, -2]), (0, [])):
        ind = np.array(idx, dtype=np.int64)
        for i in (xp.asarray(ind), ind):
            got = xp.take(x, i, axis=axis)
            np.testing.assert_array_equal(got.gather(), np.take(a, ind, axis=axis))
    np.testing.assert_array_equal(xp.take(xp.asarray(a[:, 0]), xp.asarray([5, 1])).gather(), a[[5, 1], 0])
    along = 1 - split  # the axis that is whole on every process
    order = xp.argsort(x, axis=along)
    got = xp.take_along_axis(x, order, axis=along)
    np.testing.assert_array_equal(got.gather(), np.take_along_axis(a, np.argsort(a, axis=along, kind="stable"), along))
    assert got.sharding.split_axes == x.sharding.split_axes
    first = xp.take_along_axis(x, order[:, :1] if along == 1 else order[:1, :], axis=along)  # fewer along the axis
    np.testing.assert_array_equal(first.gather(), np.sort(a, axis=along)[:, :1] if along == 1 else np.sort(a, axis=0)[:1])
    assert not GATHERS, GATHERS
    assert not meshrt.explain_op(xp.take, x, xp.asarray([1]), axis=0).gathers
    _raises_everywhere(IndexError, lambda: xp.take(x, xp.asarray([0, 7 if split == 0 else 5]), axis=split))
    _raises_everywhere(IndexError, lambda: xp.take(x, xp.asarray([0.5]), axis=0))
    _raises_everywhere(IndexError, lambda: xp.take(x, xp.asarray([0]), axis=2))
    across = xp.asarray(np.argsort(a, axis=split, kind="stable"), device=x.sharding)
    xs = xp.take_along_axis(x, across, axis=split)  # along the split axis: gathers, and says so
    np.testing.assert_array_equal(xs.gather(), np.sort(a, axis=split))
    assert "split axis" in GATHERS["take_along_axis"]


@pytest.mark.parametrize("split", [0, 1])
def test_tile_and_repeat_do_not_gather(split):
    """tile (copies joined by concat) and repeat by an int (each block repeated; along the split dim the
    result's blocks are uneven) against numpy, used afterwards with an evenly split tensor; negative counts
    raise ValueError on every process."""
    a = sample(np.float64, 7 * 5, 5).reshape(7, 5)
    x = xp.asarray(a, device=Sharding(Mesh((-1,)), [[0]] if split == 0 else [[], [0]]))
    GATHERS.clear()
    for reps in [(2,), (3, 1), (1, 2), (2, 2, 2), (0, 1), (2, 0)]:
        np.testing.assert_array_equal(xp.tile(x, reps).gather(), np.tile(a, reps))
    for r in (0, 1, 3):
        for axis in (None, 0, 1, -1):
            got = xp.repeat(x, r, axis=axis)
            np.testing.assert_array_equal(got.gather(), np.repeat(a, r, axis=axis))
    y = xp.repeat(x, 2, axis=split) + xp.ones((14, 5) if split == 0 else (7, 10))
    np.testing.assert_array_equal(y.gather(), np.repeat(a, 2, axis=split) + 1)
    assert not GATHERS, GATHERS
    _raises_everywhere(ValueError, lambda: xp.tile(x, (2, -1)))
    _raises_everywhere(ValueError, lambda: xp.repeat(x, -1, axis=0))
    _raises_everywhere(IndexError, lambda: xp.repeat(x, 2, axis=2))
