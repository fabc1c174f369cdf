"""meshrt.tensor.lazy's two-operand fast path (``t op float``, ``float op t``, ``t op t``): its cached loop
is keyed by the ufunc, the operand dtypes and the scalar's side, so each combination must give numpy's
result and dtype whatever ran before it (serial)."""

import numpy as np
import pytest

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.tensor import lazy as _lazy

MESH = Mesh((-1,))


def tensor(g, **kw):
    return DistributedTensor.from_global(g, Sharding(MESH, [[0]], **kw))


@pytest.mark.parametrize("dt", ["float64", "float32", "int8"])
def test_scalar_both_sides_and_dtypes_in_turn(dt):
    g = (np.arange(1, 13) % 7 + 1).astype(dt)
    t = tensor(g)
    for _ in range(2):  # the second round runs from the cache
        for uf, s in ((np.subtract, 2.5), (np.true_divide, 3.0)):
            for first in (True, False):
                e = uf(t, s) if first else uf(s, t)
                ref = uf(g, s) if first else uf(s, g)
                assert isinstance(e, _lazy.LazyTensor)
                assert e._expr.dtype == ref.dtype, (uf, dt, first)  # the deferred node's dtype
                f = (uf(t, s) if first else uf(s, t)) + t  # a fused kernel of the nodes' loop dtypes
                np.testing.assert_allclose(f.gather(), ref + g, rtol=1e-6)
                got = e.gather()
                assert got.dtype == ref.dtype, (uf, dt, first)
                np.testing.assert_array_equal(got, ref)
        # operators reach the same path
        np.testing.assert_array_equal((t - 2.5).gather(), g - 2.5)
        np.testing.assert_array_equal((2.5 - t).gather(), 2.5 - g)


def test_two_tensors_dtypes_and_shapes():
    a64, a32, i32 = np.linspace(1, 2, 10), np.linspace(3, 4, 10).astype(np.float32), np.arange(10, dtype=np.int32)
    t64, t32, ti = tensor(a64), tensor(a32), tensor(i32)
    for _ in range(2):
        for x, gx in ((t64, a64), (t32, a32), (ti, i32)):
            for y, gy in ((t64, a64), (t32, a32), (ti, i32)):
                for uf in (np.subtract,):
                    e = uf(x, y)
                    ref = uf(gx, gy)
                    assert e._expr.dtype == ref.dtype
                    np.testing.assert_allclose((uf(x, y) + x).gather(), ref + gx, rtol=1e-6)
                    got = e.gather()
                    assert got.dtype == ref.dtype
                    np.testing.assert_array_equal(got, ref)
    # different shapes are not fused here: numpy's broadcasting answer through the eager path
    b = tensor(np.arange(1.0, 11.0).reshape(10, 1))
    np.testing.assert_array_equal((t64 + b).gather(), a64 + np.arange(1.0, 11.0).reshape(10, 1))


def test_halo_slices_stencil_after_fastpath():
    g = np.random.default_rng(3).random(40)
    h, x = tensor(g, halo_sizes=[1, 1]), g.copy()
    for _ in range(3):
        h[1:-1] = 0.5 * (h[:-2] + h[2:])
        x[1:-1] = 0.5 * (x[:-2] + x[2:])
        h[1:-1] = (h[:-2] - h[2:]) * 0.25
        x[1:-1] = (x[:-2] - x[2:]) * 0.25
    np.testing.assert_allclose(h.gather(), x, rtol=0, atol=1e-15)
