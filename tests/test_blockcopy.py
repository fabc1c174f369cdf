"""meshrt._blockcopy against numpy slicing, the oracle."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meshrt._blockcopy import copy_block, extract, insert

DTYPES = [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, np.float16, np.float32, np.float64, np.complex64,
          np.complex128, np.bool_]


def _random(shape, dtype, rng):
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize,
                       dtype=np.uint8)
    if dtype == np.bool_:
        raw = raw & 1
    return raw.view(dtype).reshape(shape)


@st.composite
def _slice_case(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 7), min_size=ndim, max_size=ndim)))
    slices = []
    for n in shape:
        start = draw(st.none() | st.integers(-n - 1, n + 1))
        stop = draw(st.none() | st.integers(-n - 1, n + 1))
        step = draw(st.none() | st.sampled_from([1, 2, 3, -1, -2, -3]))
        slices.append(slice(start, stop, step))
    return shape, tuple(slices), draw(st.sampled_from(DTYPES)), draw(st.integers(0, 2**32 - 1))


@settings(derandomize=True, max_examples=300, deadline=None)
@given(_slice_case())
def test_extract_insert_match_numpy(case):
    shape, slices, dtype, seed = case
    rng = np.random.default_rng(seed)
    a = _random(shape, dtype, rng)
    got = extract(a, slices)
    want = a[slices]
    assert got.flags.c_contiguous and got.dtype == a.dtype
    assert got.shape == want.shape and got.tobytes() == want.tobytes()

    block = _random(want.shape, dtype, rng)
    b = a.copy()
    insert(b, slices, block)
    ref = a.copy()
    ref[slices] = block
    assert b.tobytes() == ref.tobytes()


@settings(derandomize=True, max_examples=200, deadline=None)
@given(st.integers(1, 5), st.sampled_from(DTYPES), st.integers(0, 2**32 - 1))
def test_copy_block_between_arbitrary_views(ndim, dtype, seed):
    """Both sides strided, reversed and transposed: the general N-d path."""
    rng = np.random.default_rng(seed)
    shape = tuple(int(x) for x in rng.integers(1, 5, ndim))
    perm = [int(p) for p in rng.permutation(ndim)]

    def make():
        steps = [int(s) for s in rng.choice([1, 2, -1, -3], ndim)]
        big = _random(tuple(shape[p] * abs(s) + 1 for p, s in zip(perm, steps)), dtype, rng)

        def view(b):
            v = b[tuple(slice(None, None, s) for s in steps)]
            v = v[tuple(slice(0, shape[p]) for p in perm)]
            return v.transpose(np.argsort(perm))
        return big, view

    sbig, sview = make()
    dbig, dview = make()
    ref = dbig.copy()
    dview(ref)[...] = sview(sbig)
    copy_block(dview(dbig), sview(sbig))
    assert dview(dbig).shape == shape
    assert dbig.tobytes() == ref.tobytes()  # dst right, nothing else written


def test_copy_block_does_not_touch_neighbours():
    a = np.zeros((6, 7), np.float64)
    copy_block(a[1:5:2, 6:0:-3], np.ones((2, 2)))
    want = np.zeros((6, 7))
    want[1:5:2, 6:0:-3] = 1
    assert np.array_equal(a, want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zero_d_and_empty(dtype):
    rng = np.random.default_rng(0)
    src = _random((), dtype, rng)
    dst = np.zeros((), dtype)
    copy_block(dst, src)
    assert dst.tobytes() == src.tobytes()
    e = np.zeros((3, 0, 2), dtype)
    copy_block(e, np.ones((3, 0, 2), dtype))
    assert extract(np.zeros((4, 4), dtype), (slice(2, 2), slice(None))).shape == (0, 4)


@pytest.mark.parametrize("shape,sl", [
    ((4096, 64), (slice(None), slice(0, 1))),
    ((512, 64), (slice(None), slice(60, 64))),
    ((64, 512), (slice(3, 9), slice(None))),
    ((8, 9, 10), (slice(None, None, -1), slice(2, 3), slice(1, None, 4))),
])
def test_faces_and_strips(shape, sl):
    a = np.random.default_rng(1).random(shape)
    assert np.array_equal(extract(a, sl), a[sl])
    out = np.empty_like(a[sl])
    assert extract(a, sl, out=out) is out


def test_high_ndim_and_wide_items():
    a = np.arange(2**12, dtype=np.float64).reshape((2,) * 12)
    sl = tuple(slice(None, None, -1) if i % 2 else slice(None) for i in range(12))
    assert np.array_equal(extract(a, sl), a[sl])
    rec = np.zeros(10, dtype=[("a", "i4"), ("b", "f8"), ("c", "u1")])  # itemsize 13
    rec["a"] = np.arange(10)
    assert extract(rec, (slice(None, None, -3),)).tobytes() == rec[::-3].tobytes()


def test_unaligned_views():
    buf = np.zeros(8 * 20 + 1, np.uint8)
    a = buf[1:].view(np.float64).reshape(4, 5)
    a[...] = np.arange(20.0).reshape(4, 5)
    assert np.array_equal(extract(a, (slice(None), slice(1, None, 2))), a[:, 1::2])


def test_errors_name_field_and_value():
    with pytest.raises(ValueError, match=r"shape of dst is \(2, 3\).*\(3, 2\)"):
        copy_block(np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"shape of dst is \(2,\).*\(2, 1\)"):
        copy_block(np.zeros(2), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="dtype of dst is float64.*float32"):
        copy_block(np.zeros(3), np.zeros(3, np.float32))
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="not writeable"):
        copy_block(ro, np.zeros(3))
    with pytest.raises(ValueError, match="Python objects"):
        copy_block(np.zeros(2, object), np.zeros(2, object))
    with pytest.raises(ValueError, match="dst must be a numpy.ndarray, got list"):
        copy_block([1, 2], np.zeros(2))
    with pytest.raises(ValueError, match=r"slices\[1\] is 3"):
        extract(np.zeros((2, 4)), (slice(None), 3))
    with pytest.raises(ValueError, match="3 slices given for an array of ndim 2"):
        insert(np.zeros((2, 4)), (slice(None),) * 3, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="shape of dst"):
        insert(np.zeros((2, 4)), (slice(None), slice(0, 2)), np.zeros((2, 3)))
