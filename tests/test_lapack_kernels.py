"""The local BLAS/LAPACK kernels of `meshrt.linalg.lapack` on one process, against numpy/SciPy."""

import numpy as np
import pytest
import scipy.linalg

from meshrt.linalg import lapack


def _triangle(w, dtype, uplo, rng, smallest=1.0):
    a = rng.standard_normal((w, w)) / w
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((w, w)) / w
    a = np.tril(a) if uplo == "L" else np.triu(a)
    a[np.diag_indices(w)] = np.geomspace(1.0, smallest, w)
    return np.asfortranarray(a.astype(dtype))


def _op(a, trans):
    return {"N": a, "T": a.T, "C": a.conj().T}[trans]


def _counting(monkeypatch):
    calls = {"trmm": 0, "trsm": 0}
    for name in calls:
        real = getattr(lapack, name)

        def counted(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(lapack, name, counted)
    return calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128])
@pytest.mark.parametrize("side,uplo,trans,diag", [("R", "L", "T", "N"), ("R", "L", "C", "N"), ("L", "L", "N", "U"),
                                                  ("L", "U", "N", "N"), ("R", "U", "N", "U")])
def test_trsm_by_inverse_solves_as_trsm(monkeypatch, dtype, side, uplo, trans, diag):
    rng = np.random.default_rng(7)
    w = 24
    a = _triangle(w, dtype, uplo, rng)
    if diag == "U":  # what is stored on the diagonal is not read (LU keeps U's diagonal there)
        a[np.diag_indices(w)] = 1e9
    b = np.asfortranarray(rng.standard_normal((40, w) if side == "R" else (w, 40)).astype(dtype))
    calls = _counting(monkeypatch)
    x = b.copy(order="F")
    lapack.trsm_by_inverse(side, uplo, trans, diag, a, x)
    assert calls == {"trmm": 1, "trsm": 0}
    t = a.copy()
    if diag == "U":
        t[np.diag_indices(w)] = 1
    t = _op(t, trans)
    want = b @ np.linalg.inv(t) if side == "R" else scipy.linalg.solve_triangular(t, b, lower=(uplo == "L") == (trans == "N"))
    tol = 1e-4 if dtype == np.float32 else 1e-12
    assert np.abs(x - want).max() <= tol * np.abs(want).max()


def test_trsm_by_inverse_leaves_an_ill_conditioned_triangle_to_trsm(monkeypatch):
    rng = np.random.default_rng(8)
    a = _triangle(32, np.float64, "L", rng, smallest=1e-9)  # max|a| max|a^-1| ~ 1e9
    b = np.asfortranarray(rng.standard_normal((50, 32)))
    want = b.copy(order="F")
    lapack.trsm("R", "L", "T", "N", 1.0, a, want)
    calls = _counting(monkeypatch)
    x = b.copy(order="F")
    lapack.trsm_by_inverse("R", "L", "T", "N", a, x)
    assert calls == {"trmm": 0, "trsm": 1}
    assert np.array_equal(x, want)
