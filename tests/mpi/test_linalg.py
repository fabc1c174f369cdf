"""Dense linear algebra on split matrices (meshrt.linalg.dense through np.linalg), at any process count.

Oracle: numpy/SciPy on the global matrix (built identically on every rank) and LAPACK's own test
ratios: backward errors ``||A x - b|| / (||A|| ||x|| eps n)`` and ``||A - P L U|| / (||A|| eps n)`` below
a small constant. Block sizes are small so that the cyclic wrap, uneven last blocks and every grid
shape (1 x P, P x 1, 2 x 2, 2 x 4) are exercised on small matrices.
"""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Mesh, Sharding
from meshrt.linalg import dense
from meshrt.linalg.blockcyclic import default_grid
from meshrt.linalg.cyclic import to_cyclic

MPI_NPROCS = (1, 2, 3, 4, 8)
comm = MPI.COMM_WORLD
P = comm.size
THRESH = 30.0  # LAPACK's test threshold on the scaled residuals

DTYPES = [np.float32, np.float64, np.complex128]


def eps(dt):
    return np.finfo(np.dtype(dt)).eps


def rand(shape, dt, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dt)


def spd(n, dt, seed):
    a = rand((n, n), dt, seed)
    return (a @ a.conj().T + n * np.eye(n)).astype(dt)


def ill_conditioned(n, dt, seed, cond=1e12):
    rng = np.random.default_rng(seed)
    q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
    q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
    return ((q1 * np.logspace(0, -np.log10(cond), n)) @ q2.T).astype(dt)


@pytest.fixture(scope="module")
def mesh():
    m = Mesh((-1,))
    yield m
    m.free()


@pytest.fixture(scope="module")
def mesh2():
    m = Mesh((-1, -1))
    yield m
    m.free()


def layouts(mesh, mesh2):
    """Row-split, column-split, 2-D split and uneven row offsets."""
    out = [Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]]), Sharding(mesh2, [[0], [1]])]
    return out


def split(a, s):
    return DT.from_global(np.ascontiguousarray(a), s)


def residual_solve(a, x, b):
    n = a.shape[0]
    num = np.linalg.norm(a @ x - b, 1)
    return num / (np.linalg.norm(a, 1) * max(np.linalg.norm(x, 1), 1e-300) * eps(a.dtype) * n)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", [1, 5, 23])
def test_solve_backward_error_every_layout(mesh, mesh2, dt, n):
    a = rand((n, n), dt, 10 + n)
    b = rand((n, 3), dt, 20 + n)
    for s in layouts(mesh, mesh2):
        x = np.linalg.solve(split(a, s), split(b, s))
        assert isinstance(x, DT) and x.shape == (n, 3) and x.sharding == s
        assert residual_solve(a, x.gather(), b) < THRESH, (s, residual_solve(a, x.gather(), b))


@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_solve_ill_conditioned_and_vector_rhs(mesh, dt):
    n = 40
    a = ill_conditioned(n, dt, 3)
    b = rand(n, dt, 4)
    rows = Sharding(mesh, [[0]])
    x = np.linalg.solve(split(a, rows), split(b, rows))
    assert x.shape == (n,) and x.sharding == rows
    assert residual_solve(a, x.gather()[:, None], b[:, None]) < THRESH
    # a numpy right-hand side: the solution comes back replicated
    y = np.linalg.solve(split(a, rows), b)
    assert y.shape == (n,) and not any(y.sharding.split_axes)
    assert residual_solve(a, y.gather()[:, None], b[:, None]) < THRESH


@pytest.mark.parametrize("block,grid", [(3, None), (4, "column"), (5, "row"), (2, "square")])
def test_factorizations_on_every_grid_shape(mesh, block, grid):
    if grid == "column":
        g = (P, 1)
    elif grid == "row":
        g = (1, P)
    elif grid == "square":
        g = default_grid(P)
    else:
        g = None
    n = 29
    rows = Sharding(mesh, [[0]])
    a = spd(n, np.float64, 7)
    c = dense.cholesky(split(a, rows), block=block, grid=g).gather()
    assert np.abs(np.triu(c, 1)).max() == 0
    assert np.linalg.norm(c @ c.T - a, 1) / (np.linalg.norm(a, 1) * eps(a.dtype) * n) < THRESH
    g2 = rand((n + 4, n), np.float64, 8)
    p, l, u = dense.lu(split(g2, rows), block=block, grid=g)
    p, l, u = p.gather(), l.gather(), u.gather()
    pr, lr, ur = scipy.linalg.lu(g2)
    assert np.array_equal(p, pr)  # the same pivots as LAPACK (partial pivoting, no ties here)
    assert np.allclose(l, lr) and np.allclose(u, ur)
    assert np.linalg.norm(p @ l @ u - g2, 1) / (np.linalg.norm(g2, 1) * eps(g2.dtype) * n) < THRESH


@pytest.mark.parametrize("dt", DTYPES)
def test_cholesky_lower_and_upper(mesh, mesh2, dt):
    n = 26
    a = spd(n, dt, 5)
    for s in layouts(mesh, mesh2):
        low = np.linalg.cholesky(split(a, s))
        up = np.linalg.cholesky(split(a, s), upper=True)
        assert low.sharding == s and up.sharding == s
        lo, hi = low.gather(), up.gather()
        assert np.allclose(lo, np.linalg.cholesky(a), rtol=50 * eps(dt), atol=50 * eps(dt) * n)
        assert np.allclose(hi, lo.conj().T)
        assert np.linalg.norm(lo @ lo.conj().T - a, 1) / (np.linalg.norm(a, 1) * eps(dt) * n) < THRESH


@pytest.mark.parametrize("dt", DTYPES)
def test_cholesky_overwrite_a_writes_the_factor_into_a(mesh, mesh2, dt):
    """``dense.cholesky(a, overwrite_a=True)``: the factor in ``a``'s own blocks (the result shares them,
    ``a`` holds it, zeros above the diagonal where ``a`` had values), on one process row and on several, in
    every layout and uneven rows; where it may not (``upper``, another dtype, halos) ``a`` is untouched and
    the factor is numpy's all the same."""
    n = 23
    a = spd(n, dt, 12)
    a[np.triu_indices(n, 1)] = 7  # (not read: a lower factor reads the lower triangle)
    ref = np.linalg.cholesky(a)
    tol = dict(rtol=50 * eps(dt), atol=50 * eps(dt) * n)
    offs = [0] + [min(n, 2 + 5 * k) for k in range(P - 1)] + [n]
    shardings = layouts(mesh, mesh2) + [Sharding(mesh, [[0]], sharded_dims_offsets=offs)]
    for g in [(1, P), (P, 1)]:
        for s in shardings:
            t = split(a, s)
            block = t.local
            later = t * 2.0  # (deferred: it reads ``a`` as it was)
            low = dense.cholesky(t, block=4, grid=g, overwrite_a=True)
            assert low.sharding == s and (np.shares_memory(low.local, block) or not block.size), (g, s)
            assert np.array_equal(later.gather(), a * 2), (g, s)
            assert np.allclose(low.gather(), ref, **tol) and not np.triu(low.gather(), 1).any()
            assert np.array_equal(t.gather(), low.gather())
    s = Sharding(mesh, [[0]])
    whole = np.round(a.real).astype(np.int64)  # (still positive definite: n I dominates the rounding)
    untouched = [(split(a, s), dict(upper=True)), (split(whole, s), {}),
                 (split(a, Sharding(mesh, [[0]], halo_sizes=[1, 1])), {})]
    for t, kw in untouched:
        before = t.gather()
        got = dense.cholesky(t, overwrite_a=True, **kw).gather()
        assert np.array_equal(t.gather(), before), kw
        want = np.linalg.cholesky(before.astype(got.dtype) if before.dtype.kind == "i" else before, **kw)
        assert np.allclose(got, want, rtol=1e-5, atol=1e-5 * n), kw


def test_not_positive_definite_at_any_panel_raises_everywhere(mesh):
    """A leading minor that is not positive definite in the first, a middle or the last panel: the same
    `LinAlgError` on every process, on every grid shape, with the next panel's broadcast already started
    (look-ahead) and finished before the error leaves; the next factorization on the same processes is
    numpy's (no message of the failed one left behind)."""
    n = 11
    rows = Sharding(mesh, [[0]])
    good = spd(n, np.float64, 3)
    for g in sorted({(1, P), (P, 1), default_grid(P)}):
        for block in (1, 2, 4):
            for where in (0, 5, n - 1):
                bad = np.diag(np.ones(n))
                bad[where, where] = -1.0
                with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
                    dense.cholesky(split(bad, rows), block=block, grid=g)
            low = dense.cholesky(split(good, rows), block=block, grid=g).gather()
            assert np.allclose(low, np.linalg.cholesky(good)), (g, block)


@pytest.mark.parametrize("block", [3, 5, 40])
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_cholesky_written_as_its_panels_come_on_one_process_row(mesh, mesh2, monkeypatch, block, dt):
    """On a grid of one process row each finished block column is written into the output where it
    goes (`factor.cholesky`'s ``emit``, no exchange leaving the layout), on several the factor leaves by
    the exchange: both numpy's factor, zeros above the diagonal, into every layout; ``emit`` refuses a
    grid of several process rows, on every process."""
    from meshrt.linalg import factor

    n = 23
    a = spd(n, dt, 9)
    ref = np.linalg.cholesky(a)
    emitted = []
    real = factor.cholesky

    def counting(c, **kw):
        emitted.append(kw.get("emit") is not None)
        return real(c, **kw)

    monkeypatch.setattr(factor, "cholesky", counting)
    grids = [(1, P), (P, 1)] + ([default_grid(P)] if default_grid(P) not in ((1, P), (P, 1)) else [])
    for g in grids:
        for s in layouts(mesh, mesh2):
            emitted.clear()
            low = dense.cholesky(split(a, s), block=block, grid=g)
            assert emitted == [g[0] == 1] and low.sharding == s
            got = low.gather()
            assert np.allclose(got, ref, rtol=50 * eps(dt), atol=50 * eps(dt) * n)
            assert not np.triu(got, 1).any()
    if P > 1:
        c = to_cyclic(split(a, Sharding(mesh, [[0]])), block=block, grid=(P, 1))
        with pytest.raises(ValueError, match=f"emit needs one process row, got a {P} x 1 grid"):
            real(c, emit=lambda *x: None)


@pytest.mark.parametrize("shape", [(12, 12), (17, 9), (9, 17)])
@pytest.mark.parametrize("dt", DTYPES)
def test_lu_as_scipy_returns_it(mesh, shape, dt):
    g = rand(shape, dt, 11)
    rows = Sharding(mesh, [[0]])
    p, l, u = dense.lu(split(g, rows))
    k = min(shape)
    assert p.shape == (shape[0],) * 2 and l.shape == (shape[0], k) and u.shape == (k, shape[1])
    p, l, u = p.gather(), l.gather(), u.gather()
    assert np.array_equal(np.sort(p, axis=0)[-1], np.ones(shape[0])) and np.all(np.abs(p).sum(0) == 1)
    assert np.allclose(np.diag(l), 1) and np.abs(np.triu(l, 1)).max() == 0 and np.abs(np.tril(u, -1)).max() == 0
    assert np.linalg.norm(p @ l @ u - g, 1) / (np.linalg.norm(g, 1) * eps(dt) * max(shape)) < THRESH
    pl, u2 = dense.lu(split(g, rows), permute_l=True)
    assert np.allclose(pl.gather() @ u2.gather(), g, atol=100 * eps(dt) * np.abs(g).max())


@pytest.mark.parametrize("dt", DTYPES)
def test_inv_det_slogdet(mesh, mesh2, dt):
    n = 19
    a = rand((n, n), dt, 13)
    for s in layouts(mesh, mesh2):
        t = split(a, s)
        ai = np.linalg.inv(t)
        assert ai.sharding == s
        r = np.linalg.norm(a @ ai.gather() - np.eye(n), 1) / (
            np.linalg.norm(a, 1) * np.linalg.norm(ai.gather(), 1) * eps(dt) * n)
        assert r < THRESH
        d, ref = np.linalg.det(t), np.linalg.det(a)
        assert abs(d - ref) <= 1e3 * eps(dt) * n * abs(ref)
        sign, logdet = np.linalg.slogdet(t)
        rs, rl = np.linalg.slogdet(a)
        assert abs(sign - rs) < 1e3 * eps(dt) and abs(logdet - rl) < 1e3 * eps(dt) * n
        # the same numbers on every process
        assert comm.allgather(complex(d)) == [complex(d)] * P


def test_matrix_power(mesh):
    rows = Sharding(mesh, [[0]])
    a = rand((14, 14), np.float64, 17) / 4
    for k in (0, 1, 2, 5, -3):
        got = np.linalg.matrix_power(split(a, rows), k)
        assert got.sharding == rows
        ref = np.linalg.matrix_power(a, k)
        assert np.allclose(got.gather(), ref, rtol=1e-9, atol=1e-12 * np.abs(ref).max()), k
    ints = np.arange(36).reshape(6, 6) % 5
    got = np.linalg.matrix_power(split(ints, rows), 3)
    assert got.dtype == ints.dtype and np.array_equal(got.gather(), np.linalg.matrix_power(ints, 3))
    with pytest.raises(TypeError, match="integer"):
        np.linalg.matrix_power(split(a, rows), 1.5)


@pytest.mark.parametrize("shape", [(9, 9), (31, 6), (6, 31), (1, 5)])
@pytest.mark.parametrize("dt", DTYPES)
def test_qr_every_shape_and_mode(mesh, mesh2, shape, dt):
    a = rand(shape, dt, 31)
    e = eps(dt) * max(shape)
    for s in layouts(mesh, mesh2):
        for mode in ("reduced", "complete"):
            q, r = np.linalg.qr(split(a, s), mode=mode)
            rq, rr = np.linalg.qr(a, mode=mode)
            q, r = q.gather(), r.gather()
            assert q.shape == rq.shape and r.shape == rr.shape
            assert np.linalg.norm(q @ r - a, 1) / (np.linalg.norm(a, 1) * e) < THRESH
            assert np.linalg.norm(q.conj().T @ q - np.eye(q.shape[1]), 1) / e < THRESH
            assert np.abs(np.tril(r, -1)).max(initial=0) == 0
        r_only = np.linalg.qr(split(a, s), mode="r").gather()
        assert np.allclose(np.abs(np.diagonal(r_only)), np.abs(np.diagonal(np.linalg.qr(a, mode="r"))),
                           rtol=1e3 * eps(dt))


@pytest.mark.parametrize("shape", [(30, 7), (7, 30), (12, 12)])
def test_lstsq_as_numpy(mesh, shape):
    a = rand(shape, np.float64, 41)
    b = rand(shape[0], np.float64, 42)
    rows = Sharding(mesh, [[0]])
    x, res, rank, sv = np.linalg.lstsq(split(a, rows), split(b, rows))
    xr, resr, rankr, svr = np.linalg.lstsq(a, b)
    assert rank == rankr and res.shape == resr.shape
    assert np.allclose(x.gather(), xr, atol=1e-10) and np.allclose(sv, svr) and np.allclose(res, resr)
    # rank-deficient: the minimum-norm solution, as numpy's
    low = rand((20, 4), np.float64, 43) @ rand((4, 11), np.float64, 44)
    x, res, rank, sv = np.linalg.lstsq(split(low, rows), b[:20] if b.size >= 20 else rand(20, np.float64, 1))
    xr, resr, rankr, svr = np.linalg.lstsq(low, b[:20] if b.size >= 20 else rand(20, np.float64, 1))
    assert rank == rankr == 4 and np.allclose(x.gather(), xr, atol=1e-9)


def test_uneven_offsets_and_halos(mesh):
    n = 21
    offsets = [0] + [min(n, i * (n // P) + 1) for i in range(1, P)] + [n]  # the first block one row longer
    s = Sharding(mesh, [[0]], sharded_dims_offsets=offsets)
    a = spd(n, np.float64, 21)
    b = rand(n, np.float64, 22)
    x = np.linalg.solve(split(a, s), split(b, Sharding(mesh, [[0]])))
    assert residual_solve(a, x.gather()[:, None], b[:, None]) < THRESH
    halo = Sharding(mesh, [[0]], halo_sizes=[1, 1])
    t = DT.from_global(a, halo)
    t.update_halo()
    assert np.allclose(np.linalg.cholesky(t).gather(), np.linalg.cholesky(a))


def test_singular_and_not_positive_definite_raise_everywhere(mesh):
    rows = Sharding(mesh, [[0]])
    z = np.ones((9, 9))
    for f in (lambda: np.linalg.solve(split(z, rows), np.ones(9)), lambda: np.linalg.inv(split(z, rows))):
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            f()
    assert np.linalg.det(split(z, rows)) == 0
    sign, logdet = np.linalg.slogdet(split(z, rows))
    assert sign == 0 and logdet == -np.inf
    indefinite = np.diag(np.r_[np.ones(6), -1.0, np.ones(4)])
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        np.linalg.cholesky(split(indefinite, rows))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        np.linalg.inv(split(np.ones((4, 6)), rows))
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        np.linalg.solve(split(np.ones((4, 6)), rows), np.ones(4))
    with pytest.raises(TypeError, match="float16"):
        dense.inv(split(np.eye(4, dtype=np.float16), rows))
    # still in step after the errors: a collective that every process reaches
    assert comm.allreduce(1) == P


def test_bad_layout_arguments(mesh, monkeypatch):
    rows = Sharding(mesh, [[0]])
    a = split(spd(6, np.float64, 1), rows)
    with pytest.raises(ValueError, match="grid"):
        dense.cholesky(a, grid=(P + 1, 1))
    with pytest.raises(ValueError, match="block"):
        dense.cholesky(a, block=0)
    monkeypatch.setenv("MESHRT_LINALG_BLOCK", "x")
    with pytest.raises(ValueError, match="MESHRT_LINALG_BLOCK"):
        np.linalg.inv(a)


def test_cyclic_round_trip_any_sharding(mesh, mesh2):
    a = rand((13, 11), np.float64, 2)
    for s in layouts(mesh, mesh2) + [Sharding(mesh, [])]:
        c = to_cyclic(split(a, s), block=(2, 3))
        for s2 in layouts(mesh, mesh2):
            assert np.array_equal(c.to_tensor(s2).gather(), a)


@pytest.mark.parametrize("round_bytes", [1, 8 * 13 * 2, 8 * 13 * 5])
def test_cyclic_round_trip_in_rounds(mesh, mesh2, monkeypatch, round_bytes):
    """The exchanges move a column range per round (one column at the least): every split, uneven offsets
    and a dtype conversion on the way land where one round puts them."""
    from meshrt.linalg import cyclic

    monkeypatch.setattr(cyclic, "_ROUND_BYTES", round_bytes)
    a = rand((13, 11), np.float64, 3)
    offsets = [0] + [min(13, i * (13 // P) + 1) for i in range(1, P)] + [13]  # the first block longer
    offs = Sharding(mesh, [[0]], sharded_dims_offsets=offsets)
    for s in layouts(mesh, mesh2) + [offs]:
        for block, grid in (((2, 3), None), ((4, 1), (P, 1))):
            c = to_cyclic(split(a, s), block=block, grid=grid)
            for s2 in layouts(mesh, mesh2) + [offs]:
                assert np.array_equal(c.to_tensor(s2).gather(), a)
        c32 = to_cyclic(split(a, s), block=(3, 2), dtype=np.float32)
        assert np.array_equal(c32.to_tensor(s).gather(), a.astype(np.float32))
    assert cyclic.exchange_rounds(a.shape, 8) == -(-11 // max(1, round_bytes // (8 * 13)))


@pytest.mark.parametrize("round_bytes", [1, 8 * 13 * 3, 1 << 24])
@pytest.mark.parametrize("shape", [(13, 11), (11, 13), (13, 13)])
def test_cyclic_triangles_move_only_their_triangle(mesh, mesh2, monkeypatch, round_bytes, shape):
    """``triangle=`` exchanges: the layout holds the triangle (and, beside it, at most what lies in the
    rounds' diagonal squares: never more); leaving it gives exactly ``tril``/``triu``, whatever the layout
    held beyond; a triangle's rows in a round are cut right at every round boundary."""
    from meshrt.linalg import cyclic

    monkeypatch.setattr(cyclic, "_ROUND_BYTES", round_bytes)
    a = rand(shape, np.float64, 4) + 3
    bounds = cyclic.round_bounds(shape, 8)
    rows, cols = np.indices(shape)
    round_start = np.searchsorted(bounds, cols, side="right") - 1  # each column's round
    near = {"lower": rows >= np.take(bounds, round_start), "upper": rows < np.take(bounds, round_start + 1)}
    exact = {"lower": np.tril, "upper": np.triu}
    for s in layouts(mesh, mesh2):
        for tri in ("lower", "upper"):
            for block, grid in (((2, 3), None), ((4, 1), (P, 1)), ((3, 3), (1, P))):
                c = to_cyclic(split(a, s), block=block, grid=grid, triangle=tri)
                held = c.to_tensor(s).gather()
                assert np.array_equal(held, np.where(near[tri], a, 0))
                assert np.array_equal(exact[tri](held), exact[tri](a))
                c.local[...] = 7.0  # beyond the triangle too: leaving with triangle= does not carry it
                out = c.to_tensor(s, triangle=tri)
                assert out.sharding == s
                assert np.array_equal(out.gather(), exact[tri](np.full(shape, 7.0)))
    with pytest.raises(ValueError, match="triangle: expected one of"):
        to_cyclic(split(a, layouts(mesh, mesh2)[0]), triangle="diagonal")


@pytest.mark.parametrize("triangle", [None, "lower", "upper"])
def test_leaving_the_layout_gives_its_memory_back(mesh, mesh2, monkeypatch, triangle):
    """``to_tensor(consume=True)``: the result is the matrix, and the layout's pages went back to the
    system round by round (they read as zeros after); a small matrix (not on its own mapping) is left."""
    import mmap

    from meshrt.linalg import cyclic

    monkeypatch.setattr(cyclic, "_ROUND_BYTES", 1 << 18)  # several rounds
    n = 1200
    a = np.arange(1.0, n * n + 1).reshape(n, n)
    want = {None: a, "lower": np.tril(a), "upper": np.triu(a)}[triangle]
    for s in layouts(mesh, mesh2):
        c = to_cyclic(split(a, s), triangle=triangle)
        assert np.count_nonzero(c.local) > 0.3 * c.local.size
        out = c.to_tensor(s, triangle=triangle, consume=True)
        assert np.array_equal(out.gather(), want)
        # every page but those that straddle a round's boundary (one page each)
        straddling = (cyclic.exchange_rounds((n, n), 8) + 1) * (mmap.PAGESIZE // 8)
        assert np.count_nonzero(c.local) <= straddling < 0.25 * c.local.size
    small = to_cyclic(split(a[:10, :10], layouts(mesh, mesh2)[0]))
    kept = small.local.copy()
    small.to_tensor(layouts(mesh, mesh2)[0], consume=True)
    assert np.array_equal(small.local, kept)


def test_cholesky_and_eigh_never_read_the_other_triangle(mesh, mesh2, monkeypatch):
    """numpy's ``cholesky`` and ``eigh`` read one triangle: NaN in the other changes nothing, at every
    layout, with the exchanges in many rounds."""
    from meshrt.linalg import cyclic

    n = 21
    a = spd(n, np.float64, 8)
    poisoned = np.where(np.tri(n, dtype=bool), a, np.nan)
    w_ref = np.linalg.eigvalsh(a)
    for round_bytes in (8 * n * 2, 1 << 24):
        monkeypatch.setattr(cyclic, "_ROUND_BYTES", round_bytes)
        for s in layouts(mesh, mesh2):
            for block in (2, 5):
                lo = dense.cholesky(split(poisoned, s), block=block).gather()
                assert np.array_equal(np.triu(lo, 1), np.zeros((n, n)))
                assert np.linalg.norm(lo @ lo.T - a, 1) / (np.linalg.norm(a, 1) * eps(a.dtype) * n) < THRESH
                up = dense.cholesky(split(poisoned.T.copy(), s), upper=True, block=block).gather()
                assert np.allclose(up, lo.T, rtol=1e-12, atol=1e-12)
                w, v = dense.eigh(split(poisoned, s), block=block)
                assert np.allclose(w.gather(), w_ref, rtol=1e-12, atol=1e-12 * n)
                v = v.gather()
                assert np.linalg.norm(a @ v - v * w.gather()) < 1e-12 * n * np.linalg.norm(a)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(n=st.integers(1, 30), block=st.integers(1, 9), seed=st.integers(0, 2**16))
def test_randomized_solve_and_cholesky(n, block, seed):
    mesh = Mesh((-1,))
    rows = Sharding(mesh, [[0]])
    a = spd(n, np.float64, seed)
    b = rand((n, 2), np.float64, seed + 1)
    c = dense.cholesky(split(a, rows), block=block).gather()
    assert np.linalg.norm(c @ c.T - a, 1) / (np.linalg.norm(a, 1) * eps(a.dtype) * n) < THRESH
    x = dense.solve(split(a, rows), split(b, rows)).gather()
    assert residual_solve(a, x, b) < THRESH
    mesh.free()


def test_explain_op_names_the_layout_and_the_modeled_cost(mesh):
    import meshrt

    t = split(spd(40, np.float64, 3), Sharding(mesh, [[0]]))
    text = str(meshrt.explain_op(np.linalg.cholesky, t))
    assert "block_cyclic<40x40" in text and "Cholesky" in text and "words" in text
    assert "LU" in str(meshrt.explain_op(np.linalg.solve, t, np.ones(40)))
    assert "Householder" in str(meshrt.explain_op(np.linalg.qr, t))


# --- the symmetric/Hermitian eigensolver (meshrt.linalg.eigen) -------------------------------------------

ORTH_THRESH = 50.0  # LAPACK's sep.in threshold; MRRR's orthogonality constant is larger than D&C's


def hermitian(n, dt, seed, kind="random"):
    rng = np.random.default_rng(seed)
    if kind == "random":  # indefinite
        a = rand((n, n), dt, seed)
        return ((a + a.conj().T) / 2).astype(dt)
    if kind == "ill":  # eigenvalues 1 .. 1e-12 of both signs, random eigenvectors
        q, _ = np.linalg.qr(rand((n, n), np.complex128 if np.dtype(dt).kind == "c" else np.float64, seed))
        w = np.logspace(0, -12, n) * np.where(rng.random(n) < 0.5, -1, 1)
        return ((q * w) @ q.conj().T).astype(dt)
    if kind == "rank1":  # identity plus rank one: n - 1 equal eigenvalues
        u = rand((n, 1), dt, seed)
        return (np.eye(n) + u @ u.conj().T).astype(dt)
    if kind == "clusters":  # three eigenvalues, each repeated
        q, _ = np.linalg.qr(rand((n, n), np.complex128 if np.dtype(dt).kind == "c" else np.float64, seed))
        w = np.array([-2.0, 0.5, 3.0])[np.arange(n) % 3]
        return ((q * w) @ q.conj().T).astype(dt)
    raise ValueError(kind)


def check_eigh(a, w, v, dt):
    """LAPACK's ratios: ||A V - V diag(w)|| / (||A|| eps n), ||V^H V - I|| / (eps n); w as numpy's."""
    n = a.shape[0]
    e = eps(dt)
    assert w.dtype == np.linalg.eigvalsh(a).dtype and v.dtype == np.linalg.eigh(a)[1].dtype
    assert np.all(np.diff(w) >= 0)
    ref = np.linalg.eigvalsh(a.astype(np.complex128))
    anorm = np.linalg.norm(a, 1)
    assert np.abs(w - ref).max() <= THRESH * e * n * anorm, np.abs(w - ref).max()
    res = np.linalg.norm(a @ v - v * w, 1) / (anorm * e * n)
    orth = np.linalg.norm(v.conj().T @ v - np.eye(n), 1) / (e * n)
    assert res < THRESH and orth < ORTH_THRESH, (res, orth)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("kind", ["random", "ill", "rank1", "clusters"])
def test_eigh_residual_and_orthogonality(mesh, mesh2, dt, kind):
    n = 23
    a = hermitian(n, dt, 50 + n, kind)
    for s in layouts(mesh, mesh2):
        w, v = np.linalg.eigh(split(a, s))
        assert not any(w.sharding.split_axes) and v.sharding == s and w.shape == (n,) and v.shape == (n, n)
        check_eigh(a, w.gather(), v.gather(), dt)
        assert comm.allgather(w.gather().tobytes()) == [w.gather().tobytes()] * P  # the same everywhere


@pytest.mark.parametrize("block,grid", [(3, None), (4, "column"), (5, "row"), (3, "square"), (40, None)])
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_eigh_on_every_grid_shape(mesh, block, grid, dt):
    g = {"column": (P, 1), "row": (1, P), "square": default_grid(P), None: None}[grid]
    rows = Sharding(mesh, [[0]])
    for n in (1, 2, 29, 40):
        a = hermitian(n, dt, n)
        w, v = dense.eigh(split(a, rows), block=block, grid=g)
        check_eigh(a, w.gather(), v.gather(), dt)
        w2 = dense.eigvalsh(split(a, rows), block=block, grid=g)
        assert np.abs(w2.gather() - w.gather()).max(initial=0) <= THRESH * eps(dt) * n * np.linalg.norm(a, 1)


@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_eigh_wide_clusters_by_mrrr_per_process_column(mesh, monkeypatch, dt):
    """A process column whose range holds a cluster wider than `STEIN_CLUSTER` computes it by MRRR (one
    ``dstemr`` call for the range, or the shared-root subsets where a cluster is wider than a column's
    share), never by inverse iteration: LAPACK's ratios still, wherever the grid has two process columns
    or more."""
    from meshrt.linalg import eigen

    monkeypatch.setattr(eigen, "STEIN_CLUSTER", 3)
    n = 40
    q, _ = np.linalg.qr(rand((n, n), np.complex128 if np.dtype(dt).kind == "c" else np.float64, 11))
    w = np.where(np.arange(n) < n // 2, 1.0, 4.0) + 1e-9 * np.arange(n)  # two clusters of 20
    a = ((q * w) @ q.conj().T).astype(dt)
    rows = Sharding(mesh, [[0]])
    for grid in ((1, P), default_grid(P), (P, 1)):
        before = dict(eigen.stats)
        vals, vecs = dense.eigh(split(a, rows), block=3, grid=grid)
        check_eigh(a, vals.gather(), vecs.gather(), dt)
        took = comm.allreduce(sum(eigen.stats[k] - before[k] for k in ("mrrr_range", "mrrr_subsets")))
        assert (took > 0) == (grid[1] >= 2), (grid, took)  # (a process column may have no range)
        assert eigen.stats["stein"] == before["stein"]


@pytest.mark.parametrize("mode", ["check", "refuse", "accept"])
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_eigh_one_cluster_spectrum_on_every_grid(mesh, monkeypatch, dt, mode):
    """A spectrum that is one ``dstein`` cluster (a large diagonal shift): on two or more process columns
    each computes its own index range by MRRR from the root representation they share (never all the
    vectors), kept where the vectors across the boundaries check orthogonal, which they do, else one
    process column computes them all: LAPACK's ratios either way. Forced both ways (tolerance 0 /
    infinite)."""
    from meshrt.linalg import eigen

    monkeypatch.setattr(eigen, "BOUNDARY_TOL", {"check": eigen.BOUNDARY_TOL, "refuse": 0.0, "accept": np.inf}[mode])
    n = 41
    a = hermitian(n, dt, 7) + 50.0 * n * np.eye(n)
    rows = Sharding(mesh, [[0]])
    for grid in ((1, P), default_grid(P), (P, 1)):
        before = dict(eigen.stats)
        w, v = dense.eigh(split(a, rows), block=3, grid=grid)
        check_eigh(a, w.gather(), v.gather(), dt)
        if grid[1] >= 2:  # (decided alike on every process)
            moved = {k: eigen.stats[k] - before[k] for k in ("mrrr_subsets", "mrrr_refused")}
            refused = mode == "refuse"
            assert moved == {"mrrr_subsets": int(not refused), "mrrr_refused": int(refused)}, moved


@pytest.mark.parametrize("scale", [0.0, 1e-200, 1.0, 1e200])
def test_shared_root_vectors_of_any_scale(scale):
    """`lapack.stemr_shared`: the vectors of index ranges computed by separate calls form one orthonormal
    set of eigenvectors, for a one-cluster spectrum and a split matrix, scaled as ``dstemr`` scales (a
    tridiagonal near the under- or overflow threshold; all zeros)."""
    from meshrt.linalg import lapack

    n = 40
    rng = np.random.default_rng(3)
    for d, e in ((n + 1e-3 * rng.standard_normal(n), 1e-3 * rng.random(n - 1)),  # one dstein cluster
                 (rng.standard_normal(n), np.where(np.arange(n - 1) % 9 == 8, 0.0, rng.random(n - 1)))):  # splits
        d, e = d * scale, e * scale
        z = np.hstack([lapack.stemr_shared(d, e, lo, hi) for lo, hi in ((0, 1), (1, 13), (13, 13), (13, n))])
        w = lapack.stemr(d, e, vectors=False)[0]
        t = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
        assert z.shape == (n, n)
        assert np.abs(z.T @ z - np.eye(n)).max() < 30 * n * eps(np.float64)
        assert np.abs(t @ z - z * w).max() <= 30 * n * eps(np.float64) * np.abs(t).max()


def test_tridiagonal_vectors_written_into_a_window():
    """`eigen.window`: ``stemr_shared`` and ``stemr`` write a range's vectors straight into the caller's
    window (no matrix of their own; the split matrix, whose ``dlarre`` order is not ascending, by a copy
    into it), equal to the calls without one; the window's other columns keep what they held except
    ``dlarrv``'s scratch columns beside the range."""
    from meshrt.linalg import eigen, lapack

    n = 40
    rng = np.random.default_rng(5)
    for d, e in ((n + 1e-3 * rng.standard_normal(n), 1e-3 * rng.random(n - 1)),
                 (rng.standard_normal(n), np.where(np.arange(n - 1) % 9 == 8, 0.0, rng.random(n - 1)))):
        for lo, hi in ((0, 13), (13, 27), (27, n), (0, n)):
            first, stop = max(0, lo - 3), min(n, hi + 2)
            for call in (lambda out: lapack.stemr_shared(d, e, lo, hi, out=out),
                         lambda out: lapack.stemr(d, e, lo, hi, out=out)[1]):
                buf, wfirst = win = eigen.window(n, first, stop)
                buf[:] = 7.0
                z = call(win)
                alone = call(None)
                assert z.shape == (n, hi - lo) and np.shares_memory(z, buf)
                assert z.ctypes.data == buf.ctypes.data + (lo - first) * n * 8 and np.array_equal(z, alone)
                kept = np.ones(stop - first, bool)
                kept[lo - first - 1 if lo > first else 0:hi - first + 1] = False  # (the range and its scratch)
                assert (buf[:, kept] == 7.0).all()
    import tracemalloc

    n = 400  # in place: the call allocates its workspace only, not the range's n x 200 matrix
    d, e = n + 1e-3 * rng.standard_normal(n), 1e-3 * rng.random(n - 1)
    win = eigen.window(n, 99, 301)
    tracemalloc.start()
    try:
        lapack.stemr_shared(d, e, 100, 300, out=win)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < n * 200 * 8 / 4, peak
    buf, wfirst = eigen.window(n, 10, 20)
    with pytest.raises(ValueError, match="out: a window of vectors 5 .. 14"):
        lapack.stemr_shared(np.ones(n), np.ones(n - 1), 5, 15, out=(buf, wfirst))


@pytest.mark.parametrize("block", [None, 3])
def test_eigh_reads_one_triangle_as_numpy(mesh, mesh2, monkeypatch, block):
    """Only the ``UPLO`` triangle is read, on every layout, with diagonal blocks on every process (block 3):
    the other triangle and the diagonal's imaginary part are junk."""
    if block:
        monkeypatch.setenv("MESHRT_LINALG_BLOCK", str(block))
    n = 17
    for dt in (np.complex128, np.float64):
        a = hermitian(n, dt, 3)
        junk = a + np.triu(rand((n, n), dt, 4), 1)  # not Hermitian
        if dt == np.complex128:
            junk = junk + 1j * np.diag(np.arange(n))
        for s in layouts(mesh, mesh2):
            for uplo in ("L", "U"):
                src = junk if uplo == "L" else junk.conj().T
                w, v = np.linalg.eigh(split(src, s), UPLO=uplo)
                check_eigh(a, w.gather(), v.gather(), dt)
                wv = np.linalg.eigvalsh(split(src, s), UPLO=uplo).gather()
                assert np.allclose(wv, np.linalg.eigvalsh(src, UPLO=uplo), atol=1e-12 * n)
    rows = Sharding(mesh, [[0]])
    a = hermitian(n, np.complex128, 3)
    with pytest.raises(ValueError, match="UPLO"):
        np.linalg.eigh(split(a, rows), UPLO="X")
    with pytest.raises(np.linalg.LinAlgError, match="square"):
        np.linalg.eigvalsh(split(np.ones((4, 6)), rows))


@pytest.mark.parametrize("dt", DTYPES + [np.int64])
def test_eigvalsh_as_numpy(mesh, mesh2, dt):
    n = 19
    a = hermitian(n, np.float64 if dt == np.int64 else dt, 9)
    if dt == np.int64:
        a = np.round(a * 10).astype(np.int64)
    for s in layouts(mesh, mesh2):
        w = np.linalg.eigvalsh(split(a, s))
        ref = np.linalg.eigvalsh(a)
        assert w.dtype == ref.dtype and not any(w.sharding.split_axes)
        assert np.abs(w.gather() - ref).max() <= THRESH * eps(ref.dtype) * n * np.linalg.norm(a, 1)


def test_eigh_through_the_array_api(mesh):
    import meshrt.array_api as xp
    from meshrt.array_api._device import GATHERS

    n = 21
    a = hermitian(n, np.float64, 12, "rank1")
    t = split(a, Sharding(mesh, [[0]]))
    GATHERS.clear()
    res = xp.linalg.eigh(t)
    w, v = res.eigenvalues, res.eigenvectors
    check_eigh(a, w.gather(), v.gather(), np.float64)
    assert v.sharding == t.sharding and not any(w.sharding.split_axes)
    wv = xp.linalg.eigvalsh(t)
    assert np.abs(wv.gather() - w.gather()).max() <= THRESH * eps(a.dtype) * n * np.linalg.norm(a, 1)
    assert "linalg.eigh" not in GATHERS and "linalg.eigvalsh" not in GATHERS
    from meshrt.array_api import explain

    for f in (xp.linalg.eigh, xp.linalg.eigvalsh):
        plan = explain(f, t)
        assert not plan.gathers and "tridiagonal" in plan.how, str(plan)


# -- the SVD of any shape and split (meshrt.linalg.svd: one-sided block Jacobi) --------------------------

def _svd_checks(a, u, s, vh, full, what):
    m, n = a.shape
    k = min(m, n)
    tol = 50 * eps(a.dtype) * max(m, n)
    ref = np.linalg.svd(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64), compute_uv=False)
    scale = max(ref[0], 1e-300)
    assert u.shape == ((m, m) if full else (m, k)) and vh.shape == ((n, n) if full else (k, n)), (what, u.shape)
    assert s.shape == (k,) and np.all(np.diff(s) <= 0), what
    assert np.abs(s - ref).max() <= tol * scale, (what, np.abs(s - ref).max() / scale)
    assert np.abs(u.conj().T @ u - np.eye(u.shape[1])).max() <= tol, (what, "U not orthonormal")
    assert np.abs(vh @ vh.conj().T - np.eye(vh.shape[0])).max() <= tol, (what, "Vh not orthonormal")
    assert np.abs((u[:, :k] * s) @ vh[:k] - a).max() <= tol * scale, (what, "U S Vh != A")


@pytest.mark.parametrize("shape", [(12, 12), (23, 9), (9, 23), (1, 6), (6, 1), (40, 33)])
@pytest.mark.parametrize("dt", DTYPES)
def test_svd_every_shape_and_split_as_numpy(mesh, mesh2, shape, dt):
    a = rand(shape, dt, 31 + shape[0])
    for s in layouts(mesh, mesh2):
        t = split(a, s)
        for full in (False, True):
            u, sv, vh = np.linalg.svd(t, full_matrices=full)
            assert isinstance(u, DT) and isinstance(vh, DT) and not any(sv.sharding.split_axes)
            assert u.dtype == np.dtype(dt) and sv.dtype == np.finfo(np.dtype(dt)).dtype
            _svd_checks(a, u.gather(), sv.gather(), vh.gather(), full, f"{shape} {s} full={full}")
        vals = np.linalg.svd(t, compute_uv=False).gather()
        np.testing.assert_allclose(vals, np.linalg.svd(a, compute_uv=False), atol=50 * eps(dt) * max(shape) *
                                   np.abs(a).max() * max(shape))


@pytest.mark.parametrize("kind", ["rank-deficient", "ill", "zero", "clusters"])
def test_svd_hard_spectra(mesh, mesh2, kind):
    n = 30
    rng = np.random.default_rng(5)
    if kind == "rank-deficient":
        a = rng.standard_normal((n + 7, 4)) @ rng.standard_normal((4, n))
    elif kind == "ill":
        a = ill_conditioned(n, np.float64, 6, cond=1e14)
    elif kind == "zero":
        a = np.zeros((n, n - 5))
    else:  # repeated singular values
        q1, _ = np.linalg.qr(rng.standard_normal((n, n)))
        q2, _ = np.linalg.qr(rng.standard_normal((n, n)))
        a = (q1 * np.repeat([3.0, 2.0, 1.0], n // 3)) @ q2.T
    for s in layouts(mesh, mesh2):
        u, sv, vh = np.linalg.svd(split(a, s))
        _svd_checks(a, u.gather(), sv.gather(), vh.gather(), True, f"{kind} {s}")
        assert np.linalg.matrix_rank(split(a, s)) == np.linalg.matrix_rank(a), (kind, s)
        # (1 / sigma for tiny sigma is noise, numpy's too: compare the well-determined part)
        ref = np.linalg.pinv(a, rcond=1e-6)
        np.testing.assert_allclose(np.linalg.pinv(split(a, s), rcond=1e-6).gather(), ref,
                                   atol=1e-7 * max(1.0, np.abs(ref).max()))
        p = np.linalg.pinv(split(a, s)).gather()  # numpy's default rcond (1e-15): the Penrose conditions
        numpy_err = np.abs(a @ np.linalg.pinv(a) @ a - a).max()
        assert np.abs(a @ p @ a - a).max() <= 1000 * numpy_err + 1e-12, kind


@pytest.mark.parametrize("shape", [(14, 14), (25, 8), (8, 25)])
@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_pinv_and_matrix_rank_as_numpy(mesh, mesh2, shape, dt):
    a = rand(shape, dt, 41)
    if shape[0] >= shape[1]:
        a[:, -1] = a[:, 0]  # rank one short
    else:
        a[-1] = a[0]
    for s in layouts(mesh, mesh2):
        p = np.linalg.pinv(split(a, s))
        assert isinstance(p, DT) and p.shape == shape[::-1]
        np.testing.assert_allclose(p.gather(), np.linalg.pinv(a), atol=1e-10)
        np.testing.assert_allclose(np.linalg.pinv(split(a, s), rcond=0.5).gather(), np.linalg.pinv(a, rcond=0.5),
                                   atol=1e-10)
        assert np.linalg.matrix_rank(split(a, s)) == np.linalg.matrix_rank(a) == min(shape) - 1
        assert np.linalg.matrix_rank(split(a, s), tol=1e9) == 0


def test_svd_through_the_array_api_never_gathers(mesh, mesh2):
    import meshrt
    import meshrt.array_api as xp
    from meshrt.array_api import GATHERS

    a = rand((18, 18), np.float64, 9)
    before = dict(GATHERS)
    for s in layouts(mesh, mesh2):
        x = split(a, s)
        u, sv, vh = xp.linalg.svd(x)
        _svd_checks(a, u.gather(), sv.gather(), vh.gather(), True, f"xp {s}")
        np.testing.assert_allclose(xp.linalg.svdvals(x).gather(), np.linalg.svdvals(a), atol=1e-12)
        np.testing.assert_allclose(xp.linalg.pinv(x).gather(), np.linalg.pinv(a), atol=1e-10)
        assert int(xp.linalg.matrix_rank(x).gather()) == 18
        for f in (xp.linalg.svd, xp.linalg.pinv, xp.linalg.matrix_rank):
            assert not meshrt.explain_op(f, x).gathers, (f, s)
    assert {k: v for k, v in GATHERS.items() if before.get(k) != v and "linalg" in k} == {}


def test_svd_round_robin_meets_every_pair():
    from meshrt.linalg.svd import seat_block
    for p in (1, 2, 3, 7, 16):
        met = {frozenset((seat_block(p, q, 0, r), seat_block(p, q, 1, r))) for r in range(2 * p - 1) for q in range(p)}
        assert met == {frozenset((i, j)) for i in range(2 * p) for j in range(i + 1, 2 * p)}
        # a sweep brings every block home
        assert [[seat_block(p, q, sl, 2 * p - 1) for sl in (0, 1)] for q in range(p)] == \
            [[2 * q, 2 * q + 1] for q in range(p)]


def test_svd_bad_input_raises_everywhere(mesh):
    t = split(np.ones(5), Sharding(mesh, [[0]]))
    with pytest.raises(np.linalg.LinAlgError, match="1-dimensional array given"):
        np.linalg.svd(t)
    with pytest.raises(TypeError, match="unsupported in linalg"):
        np.linalg.svd(split(np.ones((4, 4), dtype="f2"), Sharding(mesh, [[0]])))
    with pytest.raises(ValueError, match="can't be both set"):
        np.linalg.pinv(split(np.eye(4), Sharding(mesh, [[0]])), rcond=0.1, rtol=0.1)


@pytest.mark.parametrize("dt", [np.float64, np.complex128])
def test_norms_trace_outer_of_split_matrices(mesh, mesh2, dt):
    import meshrt.array_api as xp
    from meshrt.array_api import GATHERS

    a = rand((13, 9), dt, 51)
    v = rand(11, dt, 52)
    before = set(GATHERS)
    for s in layouts(mesh, mesh2):
        t = split(a, s)
        for ord_ in (None, "fro", 1, -1, np.inf, -np.inf, 2, -2, "nuc"):
            np.testing.assert_allclose(float(np.linalg.norm(t, ord_)), np.linalg.norm(a, ord_), rtol=1e-12)
            np.testing.assert_allclose(float(xp.linalg.matrix_norm(t, ord="fro" if ord_ is None else ord_).gather()),
                                       np.linalg.norm(a, ord_), rtol=1e-12)
        for off in (-2, 0, 3):
            np.testing.assert_allclose(complex(xp.linalg.trace(t, offset=off).gather()), np.trace(a, offset=off),
                                       rtol=1e-12, atol=1e-12)
    tv = split(v, Sharding(mesh, [[0]]))
    for ord_ in (1, 3, np.inf, -np.inf, 0):
        np.testing.assert_allclose(float(xp.linalg.vector_norm(tv, ord=ord_).gather()), np.linalg.vector_norm(v, ord=ord_),
                                   rtol=1e-12)
    tm = split(a, Sharding(mesh, [[0]]))
    np.testing.assert_allclose(xp.linalg.vector_norm(tm, axis=0, ord=1).gather(), np.linalg.vector_norm(a, axis=0, ord=1),
                               rtol=1e-12)
    np.testing.assert_allclose(xp.linalg.outer(tv, tv).gather(), np.outer(v, v), rtol=1e-12)
    assert not {k for k in set(GATHERS) - before if k.startswith("linalg.")}, set(GATHERS) - before
