"""Stencil kernels: the streaming-store paths give the plain kernels' bits."""

import numpy as np
import pytest

from meshrt.kernels import stencils as S

SHAPES = [(3, 3), (3, 4), (4, 7), (5, 9), (6, 17), (9, 33), (8, 40), (7, 129), (33, 64)]


def bits(a):
    return a.view(np.int64)


def numpy_heat2d(u, r, box):
    (i0, i1), (j0, j1) = box
    c = u[i0:i1, j0:j1]
    n, s = u[i0 - 1:i1 - 1, j0:j1], u[i0 + 1:i1 + 1, j0:j1]
    w, e = u[i0:i1, j0 - 1:j1 - 1], u[i0:i1, j0 + 1:j1 + 1]
    return c + r * (((n + s) + (w + e)) - 4.0 * c)


def boxes(shape):
    ni, nj = shape
    yield [(1, ni - 1), (1, nj - 1)]
    yield [(1, 2), (1, nj - 1)]
    yield [(1, ni - 1), (1, 2)]
    yield [(ni - 2, ni - 1), (2, max(2, nj - 3))]
    if nj > 6:
        yield [(1, ni - 1), (3, nj - 2)]


@pytest.mark.skipif(not S._STREAM, reason="no streaming stores here")
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("offset", [0, 1, 2, 3])
def test_heat2d_stream_bits(shape, offset):
    rng = np.random.default_rng(shape[0] * 100 + shape[1] + offset)
    # offset the buffers by 0..3 doubles so row starts take every alignment mod 32 bytes
    mem_u = rng.standard_normal(shape[0] * shape[1] + 8)
    mem_v = np.full(shape[0] * shape[1] + 8, np.nan)
    u = mem_u[offset:offset + shape[0] * shape[1]].reshape(shape)
    for box in boxes(shape):
        for r in (0.2, 0.1234567):
            a = np.full(shape, np.nan)
            b = mem_v[offset:offset + shape[0] * shape[1]].reshape(shape)
            b[...] = np.nan
            (i0, i1), (j0, j1) = box
            if i1 <= i0 or j1 <= j0:
                continue
            S._heat2d(u, a, r, i0, i1, j0, j1)
            S._heat2d_nt(u, b, r, i0, i1, j0, j1)
            assert np.array_equal(bits(a), bits(b))
            assert np.array_equal(bits(a[i0:i1, j0:j1]), bits(numpy_heat2d(u, r, box)))


@pytest.mark.parametrize("stream_min", [0, 1 << 40])
def test_heat2d_box_dispatch(monkeypatch, stream_min):
    monkeypatch.setattr(S, "_STREAM_MIN_BYTES", stream_min)
    rng = np.random.default_rng(7)
    for shape in SHAPES:
        u = rng.random(shape)
        v = np.zeros(shape)
        box = [(1, shape[0] - 1), (1, shape[1] - 1)]
        S.heat2d_box(u, v, 0.2, box)
        assert np.array_equal(bits(v[1:-1, 1:-1]), bits(numpy_heat2d(u, 0.2, box)))
        assert not v[0].any() and not v[-1].any() and not v[:, 0].any() and not v[:, -1].any()
    u32 = rng.random((6, 11)).astype(np.float32)
    v32 = np.zeros_like(u32)
    w32 = np.zeros_like(u32)
    S.heat2d_box(u32, v32, 0.2, [(1, 5), (1, 10)])  # float32 always takes the plain kernel
    S._heat2d(u32, w32, np.float32(0.2), 1, 5, 1, 10)
    assert np.array_equal(v32, w32)
