"""Compiled loops of meshrt.solvers: the 5-/7-point diffusion operator on a box of a padded block.

Every array is a level buffer with one ghost layer on every side; ``lo``/``hi``
bound the box (half-open, padded indices).  The operator is

    (A u)[i] = diag[i] u[i] - sum_d (f_d[i - e_d] u[i - e_d] + f_d[i] u[i + e_d])

with ``f_d[i]`` the coefficient of the face between cells ``i`` and ``i + e_d``
(already divided by h_d**2).  Constant coefficients arrive as zero-stride
broadcast arrays: one kernel serves both, and a broadcast array costs no
memory traffic.
"""

from numba import njit

__all__ = ["apply2", "apply3", "resid2", "resid3", "gs2", "gs3", "jacobi2", "jacobi3"]


@njit(cache=True, nogil=True)
def apply2(u, out, diag, f0, f1, lo0, hi0, lo1, hi1, o0, o1):
    """out = A u on the box; ``out`` is indexed from (o0, o1) (its own layout)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            out[i - o0, j - o1] = (diag[i, j] * u[i, j]
                                   - ((f0[i - 1, j] * u[i - 1, j] + f0[i, j] * u[i + 1, j])
                                      + (f1[i, j - 1] * u[i, j - 1] + f1[i, j] * u[i, j + 1])))


@njit(cache=True, nogil=True)
def apply3(u, out, diag, f0, f1, f2, lo0, hi0, lo1, hi1, lo2, hi2, o0, o1, o2):
    """out = A u on the box (3-D)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            for k in range(lo2, hi2):
                out[i - o0, j - o1, k - o2] = (
                    diag[i, j, k] * u[i, j, k]
                    - ((f0[i - 1, j, k] * u[i - 1, j, k] + f0[i, j, k] * u[i + 1, j, k])
                       + (f1[i, j - 1, k] * u[i, j - 1, k] + f1[i, j, k] * u[i, j + 1, k])
                       + (f2[i, j, k - 1] * u[i, j, k - 1] + f2[i, j, k] * u[i, j, k + 1])))


@njit(cache=True, nogil=True)
def resid2(u, b, r, diag, f0, f1, lo0, hi0, lo1, hi1):
    """r = b - A u on the box (all padded alike)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            r[i, j] = b[i, j] - (diag[i, j] * u[i, j]
                                 - ((f0[i - 1, j] * u[i - 1, j] + f0[i, j] * u[i + 1, j])
                                    + (f1[i, j - 1] * u[i, j - 1] + f1[i, j] * u[i, j + 1])))


@njit(cache=True, nogil=True)
def resid3(u, b, r, diag, f0, f1, f2, lo0, hi0, lo1, hi1, lo2, hi2):
    """r = b - A u on the box (3-D)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            for k in range(lo2, hi2):
                r[i, j, k] = b[i, j, k] - (
                    diag[i, j, k] * u[i, j, k]
                    - ((f0[i - 1, j, k] * u[i - 1, j, k] + f0[i, j, k] * u[i + 1, j, k])
                       + (f1[i, j - 1, k] * u[i, j - 1, k] + f1[i, j, k] * u[i, j + 1, k])
                       + (f2[i, j, k - 1] * u[i, j, k - 1] + f2[i, j, k] * u[i, j, k + 1])))


@njit(cache=True, nogil=True)
def jacobi2(u, b, v, diag, f0, f1, omega, lo0, hi0, lo1, hi1):
    """v = u + omega D^-1 (b - A u) on the box."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            d = diag[i, j]
            au = d * u[i, j] - ((f0[i - 1, j] * u[i - 1, j] + f0[i, j] * u[i + 1, j])
                                + (f1[i, j - 1] * u[i, j - 1] + f1[i, j] * u[i, j + 1]))
            v[i, j] = u[i, j] + omega * (b[i, j] - au) / d


@njit(cache=True, nogil=True)
def jacobi3(u, b, v, diag, f0, f1, f2, omega, lo0, hi0, lo1, hi1, lo2, hi2):
    """v = u + omega D^-1 (b - A u) on the box (3-D)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            for k in range(lo2, hi2):
                d = diag[i, j, k]
                au = d * u[i, j, k] - ((f0[i - 1, j, k] * u[i - 1, j, k] + f0[i, j, k] * u[i + 1, j, k])
                                       + (f1[i, j - 1, k] * u[i, j - 1, k] + f1[i, j, k] * u[i, j + 1, k])
                                       + (f2[i, j, k - 1] * u[i, j, k - 1] + f2[i, j, k] * u[i, j, k + 1]))
                v[i, j, k] = u[i, j, k] + omega * (b[i, j, k] - au) / d


@njit(cache=True, nogil=True)
def gs2(u, b, diag, f0, f1, color, g0, g1, lo0, hi0, lo1, hi1):
    """One colour of red-black Gauss-Seidel on the box, in place.

    A cell is red (colour 0) when its *global* index sum is even; ``g0, g1``
    are the global indices of padded index 0, so every process colours alike.
    """
    for i in range(lo0, hi0):
        j0 = lo1 + ((i + g0 + lo1 + g1 + color) & 1)
        for j in range(j0, hi1, 2):
            u[i, j] = (b[i, j] + ((f0[i - 1, j] * u[i - 1, j] + f0[i, j] * u[i + 1, j])
                                  + (f1[i, j - 1] * u[i, j - 1] + f1[i, j] * u[i, j + 1]))) / diag[i, j]


@njit(cache=True, nogil=True)
def gs3(u, b, diag, f0, f1, f2, color, g0, g1, g2, lo0, hi0, lo1, hi1, lo2, hi2):
    """One colour of red-black Gauss-Seidel on the box, in place (3-D)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            k0 = lo2 + ((i + g0 + j + g1 + lo2 + g2 + color) & 1)
            for k in range(k0, hi2, 2):
                u[i, j, k] = (b[i, j, k] + ((f0[i - 1, j, k] * u[i - 1, j, k] + f0[i, j, k] * u[i + 1, j, k])
                                            + (f1[i, j - 1, k] * u[i, j - 1, k] + f1[i, j, k] * u[i, j + 1, k])
                                            + (f2[i, j, k - 1] * u[i, j, k - 1] + f2[i, j, k] * u[i, j, k + 1]))
                              ) / diag[i, j, k]


# -- constant coefficients: scalars instead of broadcast arrays (contiguous loads only, so LLVM vectorizes) --

@njit(cache=True, nogil=True)
def apply2c(u, out, dg, c0, c1, w0, w1, lo0, hi0, lo1, hi1, o0, o1):
    """out = A u on the box, constant coefficients."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            out[i - o0, j - o1] = ((dg + w0[i] + w1[j]) * u[i, j]
                                   - (c0 * (u[i - 1, j] + u[i + 1, j]) + c1 * (u[i, j - 1] + u[i, j + 1])))


@njit(cache=True, nogil=True)
def apply3c(u, out, dg, c0, c1, c2, w0, w1, w2, lo0, hi0, lo1, hi1, lo2, hi2, o0, o1, o2):
    """out = A u on the box, constant coefficients (3-D)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            for k in range(lo2, hi2):
                out[i - o0, j - o1, k - o2] = ((dg + w0[i] + w1[j] + w2[k]) * u[i, j, k]
                                               - (c0 * (u[i - 1, j, k] + u[i + 1, j, k])
                                                  + c1 * (u[i, j - 1, k] + u[i, j + 1, k])
                                                  + c2 * (u[i, j, k - 1] + u[i, j, k + 1])))


@njit(cache=True, nogil=True)
def resid2c(u, b, r, dg, c0, c1, w0, w1, lo0, hi0, lo1, hi1):
    """r = b - A u on the box, constant coefficients."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            r[i, j] = b[i, j] - ((dg + w0[i] + w1[j]) * u[i, j]
                                 - (c0 * (u[i - 1, j] + u[i + 1, j]) + c1 * (u[i, j - 1] + u[i, j + 1])))


@njit(cache=True, nogil=True)
def resid3c(u, b, r, dg, c0, c1, c2, w0, w1, w2, lo0, hi0, lo1, hi1, lo2, hi2):
    """r = b - A u on the box, constant coefficients (3-D)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            for k in range(lo2, hi2):
                r[i, j, k] = b[i, j, k] - ((dg + w0[i] + w1[j] + w2[k]) * u[i, j, k]
                                            - (c0 * (u[i - 1, j, k] + u[i + 1, j, k])
                                               + c1 * (u[i, j - 1, k] + u[i, j + 1, k])
                                               + c2 * (u[i, j, k - 1] + u[i, j, k + 1])))


@njit(cache=True, nogil=True)
def gs2c(u, b, dg, c0, c1, w0, w1, color, g0, g1, lo0, hi0, lo1, hi1):
    """One colour of red-black Gauss-Seidel, constant coefficients (``w0``, ``w1``: the diagonal's wall terms)."""
    for i in range(lo0, hi0):
        j0 = lo1 + ((i + g0 + lo1 + g1 + color) & 1)
        di = dg + w0[i]
        for j in range(j0, hi1, 2):
            u[i, j] = (b[i, j] + c0 * (u[i - 1, j] + u[i + 1, j]) + c1 * (u[i, j - 1] + u[i, j + 1])) / (di + w1[j])


@njit(cache=True, nogil=True)
def gs3c(u, b, dg, c0, c1, c2, w0, w1, w2, color, g0, g1, g2, lo0, hi0, lo1, hi1, lo2, hi2):
    """One colour of red-black Gauss-Seidel, constant coefficients (3-D)."""
    for i in range(lo0, hi0):
        for j in range(lo1, hi1):
            k0 = lo2 + ((i + g0 + j + g1 + lo2 + g2 + color) & 1)
            dij = dg + w0[i] + w1[j]
            for k in range(k0, hi2, 2):
                u[i, j, k] = (b[i, j, k] + c0 * (u[i - 1, j, k] + u[i + 1, j, k])
                              + c1 * (u[i, j - 1, k] + u[i, j + 1, k]) + c2 * (u[i, j, k - 1] + u[i, j, k + 1])
                              ) / (dij + w2[k])


# -- fused Krylov vector updates (1-D views of the owned blocks) --------------------------------

@njit(cache=True, nogil=True)
def cg_update(x, r, p, s, u, w, alpha, beta):
    """p = u + beta p; s = w + beta s; x += alpha p; r -= alpha s: one pass."""
    for i in range(x.shape[0]):
        pi = u[i] + beta * p[i]
        si = w[i] + beta * s[i]
        p[i] = pi
        s[i] = si
        x[i] += alpha * pi
        r[i] -= alpha * si


@njit(cache=True, nogil=True)
def dots3(r, u, w):
    """(r, u), (w, u), (r, r) in one pass."""
    a = 0.0
    b = 0.0
    c = 0.0
    for i in range(r.shape[0]):
        a += r[i] * u[i]
        b += w[i] * u[i]
        c += r[i] * r[i]
    return a, b, c


@njit(cache=True, nogil=True)
def pipecg_update(x, r, u, w, z, q, s, p, n, m, alpha, beta, precond):
    """Pipelined CG's eight recurrences in one pass (``precond`` False: u is r, q is s, m is w)."""
    for i in range(x.shape[0]):
        zi = n[i] + beta * z[i]
        si = w[i] + beta * s[i]
        pi = u[i] + beta * p[i]
        z[i] = zi
        s[i] = si
        p[i] = pi
        x[i] += alpha * pi
        r[i] -= alpha * si
        w[i] -= alpha * zi
        if precond:
            qi = m[i] + beta * q[i]
            q[i] = qi
            u[i] -= alpha * qi
