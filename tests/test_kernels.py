"""meshrt.kernels local reductions against numpy."""

import numpy as np
import pytest

from meshrt.kernels import local_max, local_min, local_prod, local_sum

DTYPES = [np.int8, np.int32, np.int64, np.uint8, np.uint64, np.float32,
          np.float64, np.complex128, np.bool_]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 4), (2, 3, 5)])
def test_match_numpy(dtype, shape):
    rng = np.random.default_rng(3)
    a = (rng.random(shape) * 4).astype(dtype)
    assert local_sum(a) == pytest.approx(np.sum(a, dtype=None if dtype != np.bool_ else np.int64))
    assert local_prod(a) == pytest.approx(np.prod(a))
    if dtype != np.complex128:
        assert local_max(a) == np.max(a)
        assert local_min(a) == np.min(a)


def test_nan_and_empty():
    a = np.array([1.0, np.nan, 3.0])
    assert np.isnan(local_max(a)) and np.isnan(local_min(a))
    assert local_sum(np.zeros(0)) == 0.0
    assert local_prod(np.zeros(0, np.int32)) == 1
    with pytest.raises(ValueError, match="local_max: array is empty"):
        local_max(np.zeros(0))


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float32, np.uint8])
def test_strided_views_are_reduced_in_place(dtype):
    rng = np.random.default_rng(5)
    for shape, view in [((9, 13), np.s_[1:-1, 2:-1]), ((6, 7, 11), np.s_[1:-1, 1:-1, 1:-1]),
                        ((20,), np.s_[3:17:2]), ((8, 8), np.s_[::-1, ::3]), ((), ...)]:
        a = (rng.random(shape) * 10).astype(dtype)[view]
        assert local_sum(a) == pytest.approx(np.sum(a))
        assert local_prod(a[..., :3] if a.ndim else a) == pytest.approx(np.prod(a[..., :3] if a.ndim else a))
        if a.size:
            assert local_max(a) == np.max(a) and local_min(a) == np.min(a)


def test_nan_anywhere_wins():
    for k in range(11):
        a = np.arange(11.0)
        a[k] = np.nan
        assert np.isnan(local_max(a)) and np.isnan(local_min(a))


def test_rejects_non_arrays_and_non_numbers():
    with pytest.raises(ValueError, match="expected a numpy.ndarray"):
        local_sum([1, 2])
    with pytest.raises(ValueError, match="is not numeric"):
        local_max(np.array(["a"]))
