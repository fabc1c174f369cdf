"""BLAS and LAPACK calls on column-major views, in place: the local kernels of the distributed algorithms.

SciPy's ``scipy.linalg.blas`` wrappers copy any operand that is not contiguous, so ``C[i:, j:] -= A @ B``
on a view of a process's local matrix would cost a copy of the trailing matrix at every step. These call
the Fortran routines SciPy exports for Cython (``scipy.linalg.cython_blas`` / ``cython_lapack``) with the
view's leading dimension instead: a view is any 2-D array whose first axis has unit stride (a slice of a
Fortran-ordered array). The dtype picks the routine (``s``, ``d``, ``c``, ``z``).

>>> a = np.asfortranarray(np.arange(16.0).reshape(4, 4))
>>> c = np.zeros((4, 4), order="F")
>>> gemm(1.0, a[:2, :3], a[:3, 1:3], 0.0, c[1:3, :2]); bool(np.allclose(c[1:3, :2], a[:2, :3] @ a[:3, 1:3]))
True
"""

from __future__ import annotations

import ctypes

import numpy as np

__all__ = ["gemm", "gemv", "trsm", "trsm_by_inverse", "trmm", "trtri", "herk", "potrf", "getrf", "laswp", "geqrf", "larft", "larfb", "stemr", "stemr_shared", "PREFIX"]

PREFIX = {np.dtype(np.float32): "s", np.dtype(np.float64): "d", np.dtype(np.complex64): "c",
          np.dtype(np.complex128): "z"}

_capsule_name = ctypes.pythonapi.PyCapsule_GetName
_capsule_name.restype, _capsule_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype, _capsule_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
_ROUTINES: dict = {}


def _routine(name: str):
    """The Fortran routine ``name`` (``dgemm``) as a ctypes function taking pointers."""
    f = _ROUTINES.get(name)
    if f is None:
        from scipy.linalg import cython_blas, cython_lapack

        module = cython_blas if name in cython_blas.__pyx_capi__ else cython_lapack
        capsule = module.__pyx_capi__[name]
        address = _capsule_pointer(capsule, _capsule_name(capsule))
        f = _ROUTINES[name] = ctypes.CFUNCTYPE(None)(address)
    return f


def _prefix(*arrays) -> str:
    dt = arrays[0].dtype
    if any(a.dtype != dt for a in arrays[1:]):
        raise TypeError(f"lapack: operands of one dtype expected, got {[str(a.dtype) for a in arrays]}")
    try:
        return PREFIX[dt]
    except KeyError:
        raise TypeError(f"lapack: dtype {dt} has no BLAS routine (float32, float64, complex64, complex128)") from None


def _ld(a: np.ndarray) -> int:
    """The leading dimension of a column-major view (its column stride in elements)."""
    if a.ndim != 2 or (a.shape[0] > 1 and a.strides[0] != a.itemsize):
        raise ValueError(f"lapack: a 2-D view with unit row stride expected, got strides {a.strides}")
    return max(1, a.strides[1] // a.itemsize if a.shape[1] > 1 else a.shape[0])


def _p(a: np.ndarray):
    return ctypes.c_void_p(a.ctypes.data)


def _i(n: int):
    return ctypes.byref(ctypes.c_int(int(n)))


def _c(flag: str):
    return ctypes.c_char_p(flag.encode())


def _scalar(x, dt):
    return ctypes.c_void_p(np.array(x, dt).ctypes.data), np.array(x, dt)  # (pointer, keep-alive)


def gemm(alpha, a, b, beta, c, trans_a="N", trans_b="N") -> None:
    """``c = alpha * op(a) @ op(b) + beta * c`` in place (``op``: ``N``, ``T`` or ``C``)."""
    if c.size == 0:
        return
    pre = _prefix(a, b, c)
    m, n = c.shape
    k = a.shape[1] if trans_a == "N" else a.shape[0]
    if k == 0:
        c *= beta
        return
    pa, ka = _scalar(alpha, c.dtype)
    pb, kb = _scalar(beta, c.dtype)
    _routine(pre + "gemm")(_c(trans_a), _c(trans_b), _i(m), _i(n), _i(k), pa, _p(a), _i(_ld(a)), _p(b),
                            _i(_ld(b)), pb, _p(c), _i(_ld(c)))


def gemv(alpha, a, x, beta, y, trans="N") -> None:
    """``y = alpha * op(a) @ x + beta * y`` in place, ``x`` and ``y`` contiguous 1-D."""
    if y.size == 0:
        return
    pre = _prefix(a, x, y)
    m, n = a.shape
    if m == 0 or n == 0:
        y *= beta
        return
    pa, ka = _scalar(alpha, y.dtype)
    pb, kb = _scalar(beta, y.dtype)
    one = _i(1)
    _routine(pre + "gemv")(_c(trans), _i(m), _i(n), pa, _p(a), _i(_ld(a)), _p(x), one, pb, _p(y), one)


def trsm(side, uplo, trans, diag, alpha, a, b) -> None:
    """``b = alpha * op(a)^-1 b`` (``side='L'``) or ``alpha * b op(a)^-1`` (``'R'``), ``a`` triangular."""
    _triangular("trsm", side, uplo, trans, diag, alpha, a, b)


def _triangular(routine, side, uplo, trans, diag, alpha, a, b) -> None:
    """``trsm`` or ``trmm`` (``routine``) of triangular ``a`` on ``b``, in place."""
    if b.size == 0:
        return
    pre = _prefix(a, b)
    m, n = b.shape
    pa, ka = _scalar(alpha, b.dtype)
    _routine(pre + routine)(_c(side), _c(uplo), _c(trans), _c(diag), _i(m), _i(n), pa, _p(a), _i(_ld(a)), _p(b),
                             _i(_ld(b)))


# `trsm_by_inverse` solves by trsm itself where max|a| max|a^-1| exceeds this: the inverse's rounding
# grows with the triangle's condition, which trsm's substitution does not magnify the same way
_INVERSE_CONDITION = 1e6


def trsm_by_inverse(side, uplo, trans, diag, a, b) -> None:
    """``b = op(a)^-1 b`` (``side='L'``) or ``b op(a)^-1`` (``'R'``) as `trsm`, for a small triangle ``a``
    and a large ``b`` (a panel): through ``a``'s inverse (``trtri``) and ``trmm``, which OpenBLAS runs
    three times as fast as its ``trsm`` on such shapes (float64, 6000 x 128 by 128: 1.9 against 5.6 ms).
    A triangle whose inverse is large against it (``max|a| max|a^-1| > 1e6``, an ill-conditioned one)
    goes to `trsm`.

    >>> a = np.asfortranarray([[2.0, 0.0], [1.0, 4.0]])
    >>> b = np.asfortranarray(np.ones((3, 2)))
    >>> trsm_by_inverse("R", "L", "T", "N", a, b); b.tolist()
    [[0.5, 0.125], [0.5, 0.125], [0.5, 0.125]]
    """
    if b.size == 0:
        return
    inverse = np.array(a, order="F")
    if trtri(uplo, diag, inverse) == 0:
        if np.isfinite(inverse).all() and _largest(inverse, uplo, diag) * _largest(a, uplo, diag) <= _INVERSE_CONDITION:
            trmm(side, uplo, trans, diag, 1.0, inverse, b)
            return
    trsm(side, uplo, trans, diag, 1.0, a, b)


def _largest(a, uplo, diag) -> float:
    """The largest magnitude in the ``uplo`` triangle of ``a`` (``diag='U'``: its ones, not what is stored)."""
    unit = diag == "U"
    part = np.tril(a, -unit) if uplo == "L" else np.triu(a, unit)
    return max(float(np.abs(part).max(initial=0.0)), 1.0 if unit else 0.0)


def trmm(side, uplo, trans, diag, alpha, a, b) -> None:
    """``b = alpha * op(a) b`` (``side='L'``) or ``alpha * b op(a)`` (``'R'``), ``a`` triangular."""
    _triangular("trmm", side, uplo, trans, diag, alpha, a, b)


def trtri(uplo, diag, a) -> int:
    """The inverse of triangular ``a`` in place (its other triangle untouched); LAPACK's ``info`` (> 0: a
    zero on the diagonal)."""
    info = ctypes.c_int(0)
    if a.shape[0]:
        _routine(_prefix(a) + "trtri")(_c(uplo), _c(diag), _i(a.shape[0]), _p(a), _i(_ld(a)), ctypes.byref(info))
    return info.value


def herk(uplo, trans, alpha, a, beta, c) -> None:
    """``c = alpha * a @ a^H + beta * c`` (``trans='N'``) on the ``uplo`` triangle of ``c``
    (``syrk`` for real dtypes, ``herk`` with real ``alpha``, ``beta`` for complex)."""
    if c.size == 0:
        return
    pre = _prefix(a, c)
    n = c.shape[0]
    k = a.shape[1] if trans == "N" else a.shape[0]
    scalar = c.real.dtype  # herk's alpha and beta are real
    pa, ka = _scalar(alpha, scalar)
    pb, kb = _scalar(beta, scalar)
    name = pre + ("herk" if c.dtype.kind == "c" else "syrk")
    t = trans if trans == "N" else ("C" if c.dtype.kind == "c" else "T")
    _routine(name)(_c(uplo), _c(t), _i(n), _i(k), pa, _p(a), _i(_ld(a)), pb, _p(c), _i(_ld(c)))


def potrf(uplo, a) -> int:
    """Cholesky of the ``uplo`` triangle of ``a`` in place; LAPACK's ``info`` (> 0: not positive definite)."""
    info = ctypes.c_int(0)
    if a.shape[0]:
        _routine(_prefix(a) + "potrf")(_c(uplo), _i(a.shape[0]), _p(a), _i(_ld(a)), ctypes.byref(info))
    return info.value


def getrf(a) -> tuple:
    """LU with partial pivoting of ``a`` in place: (ipiv, info), ``ipiv`` 0-based row swaps as LAPACK's."""
    m, n = a.shape
    ipiv = np.zeros(max(1, min(m, n)), np.intc)
    info = ctypes.c_int(0)
    if m and n:
        _routine(_prefix(a) + "getrf")(_i(m), _i(n), _p(a), _i(_ld(a)), _p(ipiv), ctypes.byref(info))
    return ipiv[:min(m, n)] - 1, info.value


def laswp(a, ipiv) -> None:
    """Row interchanges ``i <-> ipiv[i]`` (0-based, in order, as `getrf` returns them) of ``a`` in place,
    LAPACK's ``laswp`` (column blocks at a time: no strided row gathers)."""
    if not (a.size and len(ipiv)):
        return
    piv = np.asarray(ipiv, np.intc) + 1
    _routine(_prefix(a) + "laswp")(_i(a.shape[1]), _p(a), _i(_ld(a)), _i(1), _i(piv.size), _p(piv), _i(1))


def geqrf(a) -> np.ndarray:
    """Householder QR of ``a`` in place (``R`` above the diagonal, the reflectors below): ``tau``."""
    m, n = a.shape
    k = min(m, n)
    tau = np.zeros(max(1, k), a.dtype)
    if not k:
        return tau[:0]
    info = ctypes.c_int(0)
    lwork = max(1, n) * 64
    work = np.zeros(lwork, a.dtype)
    _routine(_prefix(a) + "geqrf")(_i(m), _i(n), _p(a), _i(_ld(a)), _p(tau), _p(work), _i(lwork),
                                    ctypes.byref(info))
    return tau[:k]


def larft(v, tau) -> np.ndarray:
    """The ``k x k`` upper triangular ``T`` of the block reflector ``H = I - V T V^H`` (forward, columnwise)."""
    n, k = v.shape
    t = np.zeros((k, k), v.dtype, order="F")
    if k:
        _routine(_prefix(v, tau) + "larft")(_c("F"), _c("C"), _i(n), _i(k), _p(v), _i(_ld(v)), _p(tau), _p(t),
                                             _i(k))
    return t


def larfb(side, trans, v, t, c) -> None:
    """``c = op(H) c`` (``side='L'``) or ``c op(H)`` with ``H = I - V T V^H`` (forward, columnwise), in place."""
    m, n = c.shape
    if not (m and n and v.shape[1]):
        return
    k = v.shape[1]
    ldwork = n if side == "L" else m
    work = np.zeros((ldwork, k), c.dtype, order="F")
    _routine(_prefix(v, t, c) + "larfb")(_c(side), _c(trans), _c("F"), _c("C"), _i(m), _i(n), _i(k), _p(v),
                                          _i(_ld(v)), _p(t), _i(_ld(t)), _p(c), _i(_ld(c)), _p(work), _i(ldwork))


def stemr(d, e, il=None, iu=None, vectors=True, out=None):
    """Eigenvalues (ascending) and, with ``vectors``, eigenvectors of the real symmetric tridiagonal matrix
    with diagonal ``d`` and off-diagonal ``e`` (float64), by MRRR (``dstemr``): all of them, or those of
    0-based indices ``il .. iu - 1``. The eigenvectors come back ``n x (iu - il)`` only (SciPy's wrapper
    allocates ``n x n`` whatever the range). ``out``: a window to write them in (`eigen.window`; they come
    back as its view). Raises ``LinAlgError`` if LAPACK's ``info`` is not 0."""
    n = d.size
    d = np.array(d, np.float64)
    ework = np.zeros(max(1, n), np.float64)
    ework[:n - 1] = e
    whole = il is None
    il, iu = (0, n) if whole else (int(il), int(iu))
    m_want = iu - il
    w = np.zeros(max(1, n), np.float64)
    if vectors and out is not None and m_want > 0:
        z = _window_columns(out, n, il, iu)
    else:
        z = np.zeros((n, max(1, m_want)) if vectors else (1, 1), np.float64, order="F")
    if n == 0 or m_want <= 0:
        return w[:0], z[:, :0]
    isuppz = np.zeros(2 * max(1, m_want), np.intc)
    tryrac = ctypes.c_int(1)
    m = ctypes.c_int(0)
    info = ctypes.c_int(0)
    lwork, liwork = 18 * n, 10 * n
    work = np.zeros(lwork, np.float64)
    iwork = np.zeros(liwork, np.intc)
    vl = ctypes.c_double(0.0)
    _routine("dstemr")(_c("V" if vectors else "N"), _c("A" if whole else "I"), _i(n), _p(d), _p(ework),
                       ctypes.byref(vl), ctypes.byref(vl), _i(il + 1), _i(iu), ctypes.byref(m), _p(w), _p(z),
                       _i(max(1, n) if vectors else 1), _i(max(1, m_want) if vectors else 1), _p(isuppz),
                       ctypes.byref(tryrac), _p(work), _i(lwork), _p(iwork), _i(liwork), ctypes.byref(info))
    if info.value:
        raise np.linalg.LinAlgError(f"Eigenvalues did not converge (dstemr info {info.value})")
    return w[:m.value], z[:, :m.value] if vectors else z[:, :0]


def _window_columns(out, n: int, il: int, iu: int) -> np.ndarray:
    """The columns of eigenvectors ``il .. iu - 1`` in the window ``out`` (`eigen.window`), checked."""
    buf, first = out
    if buf.dtype != np.float64 or not buf.flags.f_contiguous or buf.shape[0] != n \
            or il < first or iu - first > buf.shape[1]:
        raise ValueError(f"out: a window of vectors {il} .. {iu - 1} of {n} expected, got columns "
                         f"{first} .. {first + buf.shape[1] - 1} of a {buf.shape} {buf.dtype} array")
    return buf[:, il - first:iu - first]


def stemr_shared(d, e, il: int, iu: int, out=None) -> np.ndarray:
    """The eigenvectors of 0-based indices ``il .. iu - 1`` (ascending eigenvalues) of the real symmetric
    tridiagonal matrix ``(d, e)``, ``n x (iu - il)``, by MRRR from the root representation of the whole
    spectrum (``dlarre`` over all eigenvalues, then ``dlarrv`` for the wanted ones), as ScaLAPACK's
    ``PDSYEVR`` does: every caller builds the same representation tree from the same ``(d, e)``, so vectors
    computed by different callers for different ranges are orthogonal as if one call computed them all.
    (``dstemr`` on an index subset chooses its root for the subset: two subsets need not agree.)
    ``out``: a window to write them in (`eigen.window`; they come back as its view; ``dlarrv`` also
    writes the window's columns ``il - 1`` and ``iu`` where it has them, as scratch).

    >>> d, e = np.full(6, 2.0), np.full(5, -1.0)
    >>> z = np.hstack([stemr_shared(d, e, 0, 2), stemr_shared(d, e, 2, 6)])
    >>> bool(np.allclose(np.abs(z), np.abs(stemr(d, e)[1])))
    True
    """
    n = d.size
    il, iu = int(il), int(iu)
    if iu <= il or n == 1:  # (a 1 x 1 matrix's vector is 1; LAPACK's n = 1 path crashed here)
        return np.ones((n, iu - il), np.float64, order="F")
    fi = np.finfo(np.float64)
    eps = fi.eps
    dd = np.array(d, np.float64)
    ee = np.zeros(n, np.float64)
    ee[:n - 1] = e
    # dstemr's scaling into the range where its squares neither overflow nor underflow (the vectors are
    # those of the scaled matrix)
    rmin = np.sqrt(fi.tiny / eps)
    rmax = min(np.sqrt(eps / fi.tiny), 1 / np.sqrt(np.sqrt(fi.tiny)))
    tnrm = max(float(np.abs(dd).max()), float(np.abs(ee).max()))
    if 0 < tnrm < rmin or tnrm > rmax:
        scale = (rmin if tnrm < rmin else rmax) / tnrm
        dd *= scale
        ee *= scale
    e2 = ee * ee
    info = ctypes.c_int(0)
    _routine("dlarrr")(_i(n), _p(dd), _p(ee), ctypes.byref(info))  # does T warrant relative accuracy?
    thresh = ctypes.c_double(eps if info.value == 0 else -eps)  # dstemr's splitting criterion
    rtol1, rtol2 = ctypes.c_double(np.sqrt(eps)), ctypes.c_double(max(np.sqrt(eps) * 5e-3, 4 * eps))
    vl, vu = ctypes.c_double(0.0), ctypes.c_double(0.0)
    nsplit, m, pivmin = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_double(0.0)
    isplit, iblock, indexw = (np.zeros(n, np.intc) for _ in range(3))
    w, werr, wgap = (np.zeros(n, np.float64) for _ in range(3))
    gers = np.zeros(2 * n, np.float64)
    work, iwork = np.zeros(12 * n, np.float64), np.zeros(7 * n, np.intc)  # (kept alive across the calls)
    _routine("dlarre")(_c("A"), _i(n), ctypes.byref(vl), ctypes.byref(vu), _i(1), _i(n), _p(dd), _p(ee), _p(e2),
                       ctypes.byref(rtol1), ctypes.byref(rtol2), ctypes.byref(thresh), ctypes.byref(nsplit),
                       _p(isplit), ctypes.byref(m), _p(w), _p(werr), _p(wgap), _p(iblock), _p(indexw), _p(gers),
                       ctypes.byref(pivmin), _p(work), _p(iwork), ctypes.byref(info))
    if info.value or m.value != n:
        raise np.linalg.LinAlgError(f"Eigenvalues did not converge (dlarre info {info.value})")
    # dlarre's order is block by block; the wanted indices are those of the ascending spectrum
    shifted = w + ee[isplit[iblock - 1] - 1]  # each block's eigenvalues plus its root's shift
    want = np.argsort(shifted, kind="stable")[il:iu]
    dol, dou = int(want.min()) + 1, int(want.max()) + 1  # 1-based, dlarre's order
    first = max(1, dol - 1)  # dlarrv writes (and zeroes) columns dol - 1 .. dou + 1 of its n x n Z
    cols = min(n, dou + 1) - first + 1
    m_want = iu - il
    in_place = None
    if out is not None:
        target = _window_columns(out, n, il, iu)
        buf, wfirst = out
        k = il - wfirst  # the window's column of vector il
        # in place where dlarre's order is the ascending one on the range and its scratch columns fit
        if dou - dol + 1 == m_want and (want == np.arange(dol - 1, dou)).all() \
                and (dol == 1 or k >= 1) and (dou == n or k + m_want < buf.shape[1]):
            in_place = target
    if in_place is not None:
        z = None
        zbase = ctypes.c_void_p(buf.ctypes.data + (k - (dol - 1)) * n * 8)  # Z(1, dol) is vector il's column
    else:
        z = np.zeros((n, cols), np.float64, order="F")
        zbase = ctypes.c_void_p(z.ctypes.data - (first - 1) * n * 8)  # Z(1, first) is z[0, 0]
    isuppz = np.zeros(2 * n, np.intc)
    _routine("dlarrv")(_i(n), ctypes.byref(vl), ctypes.byref(vu), _p(dd), _p(ee), ctypes.byref(pivmin),
                       _p(isplit), _i(n), _i(dol), _i(dou), ctypes.byref(ctypes.c_double(1e-3)),
                       ctypes.byref(rtol1), ctypes.byref(rtol2), _p(w), _p(werr), _p(wgap), _p(iblock),
                       _p(indexw), _p(gers), zbase, _i(n), _p(isuppz), _p(work), _p(iwork), ctypes.byref(info))
    if info.value:
        raise np.linalg.LinAlgError(f"Eigenvectors did not converge (dlarrv info {info.value})")
    if in_place is not None:
        return in_place
    picked = want - (first - 1)
    if out is None:
        return np.asfortranarray(z[:, picked])
    for j in range(0, m_want, 256):  # (a few columns at a time: no second copy of the range)
        target[:, j:j + 256] = z[:, picked[j:j + 256]]
    return target
