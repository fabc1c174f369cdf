"""pytest-benchmark suites for meshrt's local kernels against numpy.

    pytest bench/bench_kernels.py --benchmark-only
    pytest bench/bench_kernels.py --benchmark-only --benchmark-group-by=group --benchmark-columns=min,median,mean

Groups (compare the rows of one group):

* ``pack face axisK`` / ``unpack face axisK``: one face of width 1 of a
  160**3 float64 block on axis K (0: contiguous rows, 2: the most strided)
  copied into / out of a contiguous staging buffer, as a halo exchange packs
  it: the Cython ``copy_block`` against ``np.copyto``.
* ``block copy``: the 2048x2048 interior of a padded 2050x2050 float64 array
  into a contiguous block (a reshard piece): ``copy_block``, ``extract`` and
  ``np.copyto``.
* ``reduce <kind> <dtype>``: ``meshrt.kernels.local_*`` (Numba) against the
  numpy reduction on 2**22 elements.

Every case checks its result once before timing; Numba compiles in that first
call, outside the timed rounds.
"""

import numpy as np
import pytest

from meshrt import kernels
from meshrt._blockcopy import copy_block, extract

N3 = 160
N2 = 2048
NRED = 1 << 22


@pytest.fixture(scope="module")
def cube():
    return np.random.default_rng(0).random((N3, N3, N3))


def _face(axis, index=1):
    sl = [slice(None)] * 3
    sl[axis] = slice(index, index + 1)
    return tuple(sl)


IMPLS = {"meshrt copy_block": copy_block, "numpy copyto": np.copyto}


@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_pack_face(benchmark, cube, axis, impl):
    benchmark.group = f"pack face axis{axis}"
    face = cube[_face(axis)]
    buf = np.empty(face.shape)
    fn = IMPLS[impl]
    fn(buf, face)
    assert np.array_equal(buf, face)
    benchmark(fn, buf, face)


@pytest.mark.parametrize("impl", list(IMPLS))
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_unpack_face(benchmark, cube, axis, impl):
    benchmark.group = f"unpack face axis{axis}"
    x = cube.copy()
    halo = x[_face(axis, 0)]
    buf = np.random.default_rng(1).random(halo.shape)
    fn = IMPLS[impl]
    fn(halo, buf)
    assert np.array_equal(x[_face(axis, 0)], buf)
    benchmark(fn, halo, buf)


@pytest.fixture(scope="module")
def padded():
    return np.random.default_rng(2).random((N2 + 2, N2 + 2))


BLOCK = (slice(1, N2 + 1), slice(1, N2 + 1))


@pytest.mark.parametrize("impl", ["meshrt copy_block", "meshrt extract", "numpy copyto"])
def test_block_copy(benchmark, padded, impl):
    benchmark.group = "block copy"
    out = np.empty((N2, N2))
    src = padded[BLOCK]
    if impl == "meshrt copy_block":
        run = lambda: copy_block(out, src)  # noqa: E731
    elif impl == "meshrt extract":
        run = lambda: extract(padded, BLOCK, out)  # noqa: E731
    else:
        run = lambda: np.copyto(out, src)  # noqa: E731
    run()
    assert np.array_equal(out, src)
    benchmark(run)


REDUCTIONS = {"sum": (kernels.local_sum, np.sum), "max": (kernels.local_max, np.max),
              "min": (kernels.local_min, np.min), "prod": (kernels.local_prod, np.prod)}


@pytest.mark.parametrize("impl", ["meshrt.kernels", "numpy"])
@pytest.mark.parametrize("dtype", ["float64", "int32"])
@pytest.mark.parametrize("kind", list(REDUCTIONS))
def test_local_reduction(benchmark, kind, dtype, impl):
    benchmark.group = f"reduce {kind} {dtype}"
    rng = np.random.default_rng(3)
    # values near 1 keep prod finite; small ints keep int sums exact
    a = (1 + 1e-7 * rng.standard_normal(NRED)) if dtype == "float64" else rng.integers(-3, 4, NRED)
    a = a.astype(dtype)
    ours, ref = REDUCTIONS[kind]
    fn = ours if impl == "meshrt.kernels" else ref
    got = fn(a)  # compiles the Numba kernel for this dtype
    want = ref(a)
    if dtype == "float64":
        assert np.isclose(got, want, rtol=1e-9)
    else:
        assert got == want
    benchmark(fn, a)
