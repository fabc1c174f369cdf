"""Loop programs as a numpy user writes them (issue 53): Python loops over an index or small statements
on fresh temporaries, run unchanged on numpy arrays and on `DistributedTensor` s split on dim 0.

Each `Program` has ``make(n, rng) -> dict`` of global numpy inputs (the same on every process), ``run(**inputs)``
the program itself (it mutates its array inputs, as the originals do, and returns what it computes), and the
sizes: ``small`` for the tests (`tests/mpi/test_loop_programs.py`), ``bench`` where one numpy process takes
0.05-0.2 s (`bench/bench_loops.py`).  ``split`` names the inputs made tensors (split on dim 0); the others
stay numpy arrays or Python scalars.

>>> p = PROGRAMS["trisolv"]
>>> inputs = p.make(p.small, np.random.default_rng(0))
>>> x = p.run(**inputs)
>>> bool(np.allclose(inputs["L"] @ x, inputs["b"]))
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Program", "PROGRAMS"]


@dataclass(frozen=True)
class Program:
    """One loop program: inputs, the code, its sizes (see the module docstring)."""

    make: object
    run: object
    small: int
    bench: int
    split: tuple
    note: str = ""


def _spd(n, rng):
    """A well-conditioned symmetric positive definite matrix."""
    m = rng.random((n, n))
    return m @ m.T / n + np.eye(n) * 2.0


# -- triangular solve (forward substitution, by rows) --------------------------------------------------
def _trisolv_make(n, rng):
    L = np.tril(rng.random((n, n))) + np.eye(n) * n
    return {"L": L, "b": rng.random(n), "x": np.zeros(n), "solves": 1 if n < 100 else 8}


def trisolv(L, b, x, solves):
    n = len(b)
    for _ in range(solves):
        for i in range(n):
            x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


# -- Cholesky by rows (polybench) -----------------------------------------------------------------------
def _chol_make(n, rng):
    return {"A": _spd(n, rng)}


def cholesky_rows(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[j, :j]
            A[i, j] /= A[j, j]
        A[i, i] -= A[i, :i] @ A[i, :i]
        A[i, i] = np.sqrt(A[i, i])
    return A


# -- Cholesky by slices (right-looking, outer-product updates) ----------------------------------------
def cholesky_slices(A):
    n = A.shape[0]
    for k in range(n):
        A[k, k] = np.sqrt(A[k, k])
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= A[k + 1:, k, None] * A[k + 1:, k][None, :]
    return A


# -- LU by rows (polybench, no pivoting) ----------------------------------------------------------------
def _lu_make(n, rng):
    return {"A": rng.random((n, n)) + np.eye(n) * n}


def lu_rows(A):
    n = A.shape[0]
    for i in range(n):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, n):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A


# -- LU by slices (right-looking Gaussian elimination) -------------------------------------------------
def lu_slices(A):
    n = A.shape[0]
    for k in range(n - 1):
        A[k + 1:, k] /= A[k, k]
        A[k + 1:, k + 1:] -= A[k + 1:, k, None] * A[k, k + 1:][None, :]
    return A


# -- Gram-Schmidt (polybench gramschmidt, column slices) -----------------------------------------------
def _gs_make(n, rng):
    return {"A": rng.random((2 * n, n)) + np.eye(2 * n, n), "Q": np.zeros((2 * n, n)), "R": np.zeros((n, n))}


def gram_schmidt(A, Q, R):
    n = A.shape[1]
    for k in range(n):
        R[k, k] = np.linalg.norm(A[:, k])
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = Q[:, k] @ A[:, j]
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R


# -- Levinson-Durbin (polybench durbin) ------------------------------------------------------------------
def _durbin_make(n, rng):
    return {"r": rng.random(n) * 0.5 / n, "y": np.zeros(n)}


def durbin(r, y):
    n = len(r)
    y[0] = -r[0]
    beta, alpha = 1.0, -float(r[0])
    for k in range(1, n):
        beta = (1 - alpha * alpha) * beta
        alpha = -(float(r[k]) + float(np.dot(np.flip(r[:k]), y[:k]))) / beta
        y[:k] += alpha * np.flip(y[:k])
        y[k] = alpha
    return y


# -- CRC-16 over a byte array (a scalar loop) -------------------------------------------------------------
def _crc_make(n, rng):
    return {"data": rng.integers(0, 256, n).astype(np.int64)}


def crc16(data):
    crc = 0xFFFF
    for i in range(len(data)):
        crc ^= int(data[i])
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


# -- a trace by index ------------------------------------------------------------------------------------
def _trace_make(n, rng):
    return {"a": rng.random((n, n)), "sweeps": 1 if n < 100 else 60}


def trace_tanh(a, sweeps):
    tr = 0.0
    for _ in range(sweeps):
        for i in range(a.shape[0]):
            tr += np.tanh(a[i, i])
    return float(tr)


# -- a row recurrence (Deriche's causal pass along each row) -------------------------------------------
def _rec_make(n, rng):
    return {"x": rng.random((4 * n, n)), "y": np.zeros((4 * n, n))}


def row_recurrence(x, y):
    a1, a2, b1 = 0.6, 0.3, 0.25
    y[:, 0] = a1 * x[:, 0]
    for j in range(1, x.shape[1]):
        y[:, j] = a1 * x[:, j] + a2 * x[:, j - 1] + b1 * y[:, j - 1]
    return y


# -- conjugate gradient on a 5-point Laplacian, by slices with temporaries ------------------------------
def _cg_make(n, rng):
    b = rng.random((n, n))
    return {"b": b, "x": np.zeros((n, n)), "r": b.copy(), "P": np.pad(b, 1), "iters": 20 if n < 50 else 200}


def cg(b, x, r, P, iters):
    rr = np.vdot(r, r)
    for _ in range(iters):
        q = 4.0 * P[1:-1, 1:-1] - P[:-2, 1:-1] - P[2:, 1:-1] - P[1:-1, :-2] - P[1:-1, 2:]
        alpha = rr / np.vdot(P[1:-1, 1:-1], q)
        x += alpha * P[1:-1, 1:-1]
        r -= alpha * q
        rr_new = np.vdot(r, r)
        P[1:-1, 1:-1] = r + (rr_new / rr) * P[1:-1, 1:-1]
        rr = rr_new
    return x


PROGRAMS = {
    "trisolv": Program(_trisolv_make, trisolv, 12, 5000, ("L", "b", "x"),
                       "x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]; 8 solves"),
    "cholesky_rows": Program(_chol_make, cholesky_rows, 10, 360, ("A",), "A[i, j] -= A[i, :j] @ A[j, :j]"),
    "cholesky_slices": Program(_chol_make, cholesky_slices, 10, 600, ("A",), "A[k+1:, k+1:] -= outer"),
    "lu_rows": Program(_lu_make, lu_rows, 10, 270, ("A",), "A[i, j] -= A[i, :i] @ A[:i, j]"),
    "lu_slices": Program(_lu_make, lu_slices, 10, 660, ("A",), "A[k+1:, k+1:] -= outer"),
    "gram_schmidt": Program(_gs_make, gram_schmidt, 8, 240, ("A", "Q", "R"), "column slices"),
    "durbin": Program(_durbin_make, durbin, 12, 12000, ("r", "y"), "y[:k] += alpha * np.flip(y[:k])"),
    "crc16": Program(_crc_make, crc16, 16, 190000, ("data",), "crc ^= int(data[i]); 8 shifts"),
    "trace_tanh": Program(_trace_make, trace_tanh, 12, 3300, ("a",), "tr += np.tanh(a[i, i]); 60 sweeps"),
    "row_recurrence": Program(_rec_make, row_recurrence, 8, 1400, ("x", "y"), "y[:, j] = ... y[:, j-1]"),
    "cg_96": Program(_cg_make, cg, 10, 96, ("b", "x", "r", "P"), "200 iterations, 96 x 96"),
}
