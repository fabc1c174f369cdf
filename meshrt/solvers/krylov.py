"""Krylov solvers on DistributedTensors with the signatures of `scipy.sparse.linalg`.

Vectors are this process's owned blocks (contiguous numpy arrays); the dot
products of an iteration travel in one ``MPI_Allreduce`` of a few numbers
where the algorithm allows (CG in the Chronopoulos-Gear form, GMRES with
one-reduce classical Gram-Schmidt; BiCGSTAB needs two, MINRES two), so every
process sees the same scalars and takes the same branch: ``info`` is the same
everywhere and a stop is never a hang.  ``info``: 0 converged; > 0 the number
of iterations done when ``maxiter`` was reached or the method broke down (a
CG operator or preconditioner that is not SPD, a zero denominator).
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ..runtime import mpi as _mpi
from ..tensor.distributed_tensor import DistributedTensor
from .operator import _same_layout, aslinearoperator

try:
    from ..kernels import multigrid as _k
except ImportError:  # a source checkout: kernels/ becomes meshrt.kernels when installed
    from kernels import multigrid as _k

__all__ = ["cg", "bicgstab", "gmres", "minres"]


class _Space:
    """Dot products over the owned blocks of tensors laid out like ``b`` (replicas counted once)."""

    def __init__(self, b: DistributedTensor):
        mesh = b.mesh
        self.comm = mesh.comm
        used = {a for d in range(b.ndim) for a in b.sharding.dim_axes(d)}
        coords = mesh.coords
        self.weight = 1.0 if all(coords[a] == 0 for a in range(mesh.ndim) if a not in used) else 0.0
        self.dtype = np.result_type(b.dtype, np.float64)

    def _local(self, pairs):
        out = np.empty(len(pairs), self.dtype)
        for i, (a, c) in enumerate(pairs):
            out[i] = np.vdot(a, c) * self.weight
        return out

    def dots(self, *pairs) -> np.ndarray:
        """The global dot products ``(a, c)`` (a conjugated) in one allreduce."""
        buf = self._local(pairs)
        if self.comm.size > 1:
            with _mpi.internal("solvers", "dot products", self.comm):
                self.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        return buf

    def allsum(self, values) -> np.ndarray:
        """Sum local partial dot products over the processes (one allreduce)."""
        buf = np.array(values, dtype=np.float64) * self.weight
        if self.comm.size > 1:
            with _mpi.internal("solvers", "dot products", self.comm):
                self.comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
        return buf

    def iallsum(self, values):
        """Start `allsum`; returns ``(request, buffer)``."""
        buf = np.array(values, dtype=np.float64) * self.weight
        if self.comm.size > 1:
            with _mpi.internal("solvers", "dot products (started)", self.comm):
                return self.comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM), buf
        return None, buf

    def idots(self, *pairs):
        """Start `dots`; returns ``(request, buffer)``."""
        buf = self._local(pairs)
        if self.comm.size > 1:
            with _mpi.internal("solvers", "dot products (started)", self.comm):
                return self.comm.Iallreduce(MPI.IN_PLACE, buf, op=MPI.SUM), buf
        return None, buf


def _check_tol(rtol, atol, maxiter):
    if not (np.isscalar(rtol) and np.isfinite(rtol) and rtol >= 0):
        raise ValueError(f"rtol: {rtol!r}; expected a finite number >= 0")
    if not (np.isscalar(atol) and np.isfinite(atol) and atol >= 0):
        raise ValueError(f"atol: {atol!r}; expected a finite number >= 0")
    if maxiter is not None and (int(maxiter) != maxiter or maxiter < 1):
        raise ValueError(f"maxiter: {maxiter!r}; expected an int >= 1 or None")


def _prepare(A, b, x0, rtol, atol, maxiter, M, default_maxiter=None):
    """Checks (raised alike on every process: they read global metadata only) and the bound operators."""
    if not isinstance(b, DistributedTensor):
        raise TypeError(f"b: {type(b).__name__}; expected a DistributedTensor")
    if b.sharding.is_partial:
        raise ValueError("b: a partial sharding; reduce it first (reshard)")
    if np.dtype(b.dtype).kind not in "fc":
        raise TypeError(f"b: dtype {b.dtype}; expected a floating or complex dtype")
    _check_tol(rtol, atol, maxiter)
    if x0 is not None:
        if not isinstance(x0, DistributedTensor):
            raise TypeError(f"x0: {type(x0).__name__}; expected a DistributedTensor or None")
        if tuple(x0.global_shape) != tuple(b.global_shape):
            raise ValueError(f"x0: global shape {tuple(x0.global_shape)}, expected {tuple(b.global_shape)} "
                             f"(the shape of b)")
    op = aslinearoperator(A, "A")._bind(b)
    prec = None if M is None else aslinearoperator(M, "M")._bind(b)
    space = _Space(b)
    dtype = space.dtype
    bl = np.ascontiguousarray(b.interior, dtype=dtype)
    if x0 is None:
        x = np.zeros_like(bl)
    else:
        xi = (x0 if _same_layout(x0, b) else x0.reshard(b.sharding)).interior
        x = np.array(xi, dtype=dtype, order="C")
    if maxiter is None:
        maxiter = default_maxiter or 10 * int(b.size)
    return space, op, prec, x, bl, int(maxiter)


def _result(b, x) -> DistributedTensor:
    out = DistributedTensor.zeros(b.global_shape, b.sharding, np.result_type(b.dtype, np.float64),
                                  periodic=b.periodic)
    out.interior[...] = x
    return out


def _apply(op, x, out):
    op._apply(x, out)
    return out


def _callback(callback, b, x):
    if callback is not None:
        callback(_result(b, x))


def cg(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None, pipelined=False):
    """Conjugate gradients for SPD ``A``, as `scipy.sparse.linalg.cg`; returns ``(x, info)``.

    One allreduce per iteration (Chronopoulos-Gear); ``pipelined=True`` is
    Ghysels-Vanroose pipelined CG: that allreduce is non-blocking and overlaps
    the preconditioner and the matvec (one more vector update per iteration, a
    little less stable).  Stops when ``||r|| <= max(rtol ||b||, atol)``
    (``r`` the recurrence residual).  ``info > 0`` when ``maxiter`` is reached
    or a curvature ``p'Ap`` or ``r'Mr`` is not positive (A or M not SPD).

    Parameters
    ----------
    A : LinearOperator or Laplacian or callable or DistributedTensor
        The operator: also a stencil kernel of `apply_stencil`, or a split 2-D
        matrix (a DistributedTensor, with a 1-D ``b``).
    b : DistributedTensor
    x0 : DistributedTensor, optional
    rtol, atol : float, optional
    maxiter : int, optional
        Default ``10 * b.size``.
    M : LinearOperator or Multigrid or callable, optional
        The preconditioner (an approximation of ``A^-1``, e.g. `Multigrid`).
    callback : callable, optional
        ``callback(xk)`` after each iteration, ``xk`` a DistributedTensor.
    pipelined : bool, optional

    Examples
    --------
    >>> A = Laplacian(b, h=1.0 / (n + 1))                          # doctest: +SKIP
    >>> x, info = cg(A, b, rtol=1e-8, M=Multigrid(A))              # doctest: +SKIP
    """
    space, op, prec, x, bl, maxiter = _prepare(A, b, x0, rtol, atol, maxiter, M)
    if pipelined:
        return _pipecg(space, op, prec, x, bl, b, rtol, atol, maxiter, callback)
    r = bl - _apply(op, x, np.empty_like(x))
    u = r if prec is None else _apply(prec, r, np.empty_like(x))
    w = _apply(op, u, np.empty_like(x))
    bb, gamma, delta, rr = space.dots((bl, bl), (r, u), (w, u), (r, r)).real
    tol = max(rtol * np.sqrt(bb), atol)
    if np.sqrt(rr) <= tol:
        return _result(b, x), 0
    p = np.zeros_like(x)
    s = np.zeros_like(x)
    alpha = beta = 0.0
    fused = x.dtype == np.float64  # one compiled pass for the updates, one for the dot products
    for it in range(1, maxiter + 1):
        if gamma <= 0 or not np.isfinite(gamma):
            return _result(b, x), it
        if it == 1:
            beta, denom = 0.0, delta
        else:
            beta = gamma / gamma_old
            denom = delta - beta * gamma / alpha
        if denom <= 0 or not np.isfinite(denom):  # p'Ap <= 0: not SPD
            return _result(b, x), it
        alpha = gamma / denom
        if fused:
            _k.cg_update(x.ravel(), r.ravel(), p.ravel(), s.ravel(), u.ravel(), w.ravel(), alpha, beta)
        else:
            p *= beta
            p += u
            s *= beta
            s += w
            x += alpha * p
            r -= alpha * s
        if prec is not None:
            _apply(prec, r, u)
        _apply(op, u, w)
        gamma_old = gamma
        if fused:
            gamma, delta, rr = space.allsum(_k.dots3(r.ravel(), u.ravel(), w.ravel()))
        else:
            gamma, delta, rr = space.dots((r, u), (w, u), (r, r)).real
        _callback(callback, b, x)
        if np.sqrt(rr) <= tol:
            return _result(b, x), 0
    return _result(b, x), maxiter


def _pipecg(space, op, prec, x, bl, b, rtol, atol, maxiter, callback):
    r = bl - _apply(op, x, np.empty_like(x))
    u = r if prec is None else _apply(prec, r, np.empty_like(x))  # without M, u is r (updated with it)
    w = _apply(op, u, np.empty_like(x))
    bb = space.dots((bl, bl))[0].real
    tol = max(rtol * np.sqrt(bb), atol)
    z, q, s, p = (np.zeros_like(x) for _ in range(4))
    m = np.empty_like(x)
    n = np.empty_like(x)
    alpha = gamma_old = 0.0
    for it in range(0, maxiter + 1):
        if x.dtype == np.float64:
            req, buf = space.iallsum(_k.dots3(r.ravel(), u.ravel(), w.ravel()))
        else:
            req, buf = space.idots((r, u), (w, u), (r, r))
        # overlapped with the reduction: m = M w, n = A m
        mm = w if prec is None else _apply(prec, w, m)
        _apply(op, mm, n)
        if req is not None:
            req.Wait()
        gamma, delta, rr = buf.real
        if np.sqrt(rr) <= tol:
            return _result(b, x), 0
        if it == maxiter:
            break
        if gamma <= 0 or not np.isfinite(gamma):
            return _result(b, x), max(it, 1)
        if it == 0:
            beta, denom = 0.0, delta
        else:
            beta = gamma / gamma_old
            denom = delta - beta * gamma / alpha
        if denom <= 0 or not np.isfinite(denom):
            return _result(b, x), max(it, 1)
        alpha = gamma / denom
        gamma_old = gamma
        if x.dtype == np.float64:
            _k.pipecg_update(x.ravel(), r.ravel(), u.ravel(), w.ravel(), z.ravel(), q.ravel(), s.ravel(),
                             p.ravel(), n.ravel(), mm.ravel(), alpha, beta, prec is not None)
        else:
            z *= beta
            z += n
            q *= beta
            q += mm
            s *= beta
            s += w
            p *= beta
            p += u
            x += alpha * p
            r -= alpha * s
            if prec is not None:
                u -= alpha * q
            w -= alpha * z
        _callback(callback, b, x)
    return _result(b, x), maxiter


def bicgstab(A, b, x0=None, *, rtol=1e-5, atol=0.0, maxiter=None, M=None, callback=None):
    """BiCGSTAB for general ``A``, as `scipy.sparse.linalg.bicgstab` (right preconditioning); returns ``(x, info)``.

    Two allreduces per iteration: ``(r0, v)``, then the five products that give
    ``omega``, the next ``rho`` and ``||r||`` together (the true residual norm
    is confirmed by one more dot product before reporting convergence).

    Examples
    --------
    >>> x, info = bicgstab(A, b, rtol=1e-8, M=Multigrid(A))        # doctest: +SKIP
    """
    space, op, prec, x, bl, maxiter = _prepare(A, b, x0, rtol, atol, maxiter, M)
    r = bl - _apply(op, x, np.empty_like(x))
    rhat = r.copy()
    bb, rho, rr = space.dots((bl, bl), (rhat, r), (r, r))
    bb, rr = bb.real, rr.real
    tol = max(rtol * np.sqrt(bb), atol)
    if np.sqrt(rr) <= tol:
        return _result(b, x), 0
    p = r.copy()
    v = np.empty_like(x)
    t = np.empty_like(x)
    ph = np.empty_like(x) if prec is not None else p
    sh = np.empty_like(x)
    tiny = np.finfo(np.float64).tiny
    for it in range(1, maxiter + 1):
        if abs(rho) <= tiny or not np.isfinite(abs(rho)):
            return _result(b, x), it
        if prec is not None:
            _apply(prec, p, ph)
        _apply(op, ph, v)
        rv = space.dots((rhat, v))[0]
        if abs(rv) <= tiny:
            return _result(b, x), it
        alpha = rho / rv
        s = r - alpha * v
        shh = s if prec is None else _apply(prec, s, sh)
        _apply(op, shh, t)
        ts, tt, rs, rt, ss = space.dots((t, s), (t, t), (rhat, s), (rhat, t), (s, s))
        tt, ss = tt.real, ss.real
        if tt <= tiny:
            omega = 0.0
        else:
            omega = ts / tt
        x += alpha * ph
        x += omega * shh
        r = s - omega * t
        rnorm2 = max(ss - 2 * (np.conj(omega) * ts).real + abs(omega) ** 2 * tt, 0.0)
        _callback(callback, b, x)
        if rnorm2 <= (2 * tol) ** 2 or np.sqrt(ss) <= tol:
            rnorm2 = space.dots((r, r))[0].real
            if np.sqrt(rnorm2) <= tol:
                return _result(b, x), 0
        if omega == 0.0:
            return _result(b, x), it
        rho_new = rs - omega * rt
        beta = (rho_new / rho) * (alpha / omega)
        rho = rho_new
        p = r + beta * (p - omega * v)
        if prec is None:
            ph = p
    return _result(b, x), maxiter


def gmres(A, b, x0=None, *, rtol=1e-5, atol=0.0, restart=None, maxiter=None, M=None, callback=None,
          callback_type=None):
    """Restarted GMRES, as `scipy.sparse.linalg.gmres` (right preconditioning); returns ``(x, info)``.

    ``restart`` (default 20) is the Krylov dimension of a cycle, ``maxiter``
    the number of cycles (default ``10 * b.size``).  Orthogonalization is
    classical Gram-Schmidt in one allreduce (the new vector's products with the
    basis and its norm together), repeated once when cancellation is large.
    ``callback_type``: ``"x"`` calls ``callback(xk)`` after each cycle,
    ``"pr_norm"`` (default when a callback is given) ``callback(|r| / |b|)``
    after each inner iteration.

    Examples
    --------
    >>> x, info = gmres(A, b, rtol=1e-8, restart=30)               # doctest: +SKIP
    """
    if restart is None:
        restart = 20
    if int(restart) != restart or restart < 1:
        raise ValueError(f"restart: {restart!r}; expected an int >= 1")
    if callback_type not in (None, "x", "pr_norm", "legacy"):
        raise ValueError(f"callback_type: {callback_type!r}; expected 'x', 'pr_norm' or None")
    space, op, prec, x, bl, maxiter = _prepare(A, b, x0, rtol, atol, maxiter, M)
    restart = int(min(restart, b.size))
    bb = space.dots((bl, bl))[0].real
    tol = max(rtol * np.sqrt(bb), atol)
    bnorm = np.sqrt(bb) if bb > 0 else 1.0
    n = x.size
    V = np.empty((restart + 1, n), x.dtype)
    H = np.zeros((restart + 1, restart), x.dtype)
    w = np.empty_like(x)
    z = np.empty_like(x)
    total = 0
    for cycle in range(1, maxiter + 1):
        r = bl - _apply(op, x, w)
        beta = np.sqrt(space.dots((r, r))[0].real)
        if beta <= tol:
            return _result(b, x), 0
        V[0] = r.ravel() / beta
        g = np.zeros(restart + 1, x.dtype)
        g[0] = beta
        cs = np.zeros(restart, x.dtype)
        sn = np.zeros(restart, x.dtype)
        k_used = 0
        for k in range(restart):
            vk = V[k].reshape(x.shape)
            zz = vk if prec is None else _apply(prec, vk, z)
            _apply(op, zz, w)
            wf = w.ravel()
            pairs = [(V[i], wf) for i in range(k + 1)] + [(wf, wf)]
            res = space.dots(*pairs)
            h, ww = res[:-1], res[-1].real
            wf -= h @ V[:k + 1]
            hn2 = ww - np.vdot(h, h).real
            if hn2 < 0.01 * ww:  # cancellation: orthogonalize again
                res = space.dots(*pairs)
                h2, ww2 = res[:-1], res[-1].real
                wf -= h2 @ V[:k + 1]
                h = h + h2
                hn2 = ww2 - np.vdot(h2, h2).real
            hn = np.sqrt(max(hn2, 0.0))
            H[:k + 1, k] = h
            H[k + 1, k] = hn
            if hn > 0:
                V[k + 1] = wf / hn
            for i in range(k):  # apply the previous rotations
                t = cs[i] * H[i, k] + sn[i] * H[i + 1, k]
                H[i + 1, k] = -np.conj(sn[i]) * H[i, k] + cs[i] * H[i + 1, k]
                H[i, k] = t
            a, c = H[k, k], H[k + 1, k]
            den = np.sqrt(abs(a) ** 2 + abs(c) ** 2)
            if den == 0:
                cs[k], sn[k] = 1.0, 0.0
            else:
                cs[k], sn[k] = a / den, np.conj(c / den) if np.iscomplexobj(H) else c / den
            H[k, k] = cs[k] * a + sn[k] * c
            H[k + 1, k] = 0.0
            g[k + 1] = -np.conj(sn[k]) * g[k]
            g[k] = cs[k] * g[k]
            k_used = k + 1
            total += 1
            if callback is not None and callback_type in (None, "pr_norm", "legacy"):
                callback(abs(g[k + 1]) / bnorm)
            if abs(g[k + 1]) <= tol or hn == 0:
                break
        y = np.linalg.solve(np.triu(H[:k_used, :k_used]), g[:k_used]) if k_used else g[:0]
        upd = (y @ V[:k_used]).reshape(x.shape)
        if prec is not None:
            upd = _apply(prec, upd, np.empty_like(x))
        x += upd
        if callback is not None and callback_type == "x":
            callback(_result(b, x))
    r = bl - _apply(op, x, w)
    if np.sqrt(space.dots((r, r))[0].real) <= tol:
        return _result(b, x), 0
    return _result(b, x), maxiter


def minres(A, b, x0=None, *, rtol=1e-5, shift=0.0, maxiter=None, M=None, callback=None, show=False, check=False,
           atol=0.0):
    """MINRES for symmetric (possibly indefinite) ``A``, as `scipy.sparse.linalg.minres`; returns ``(x, info)``.

    Solves ``(A - shift I) x = b`` with an SPD preconditioner ``M``; stops when
    the residual's ``M``-norm estimate is at most ``max(rtol ||b||_M, atol)``
    (scipy stops on ``||r|| / (||A|| ||x||)``, a weaker test).  Two
    allreduces per iteration (Lanczos needs ``alpha`` before ``beta``).
    ``info > 0`` when ``maxiter`` is reached or ``M`` is not SPD.

    Examples
    --------
    >>> x, info = minres(A, b, rtol=1e-10, shift=0.5)              # doctest: +SKIP
    """
    space, op, prec, x, bl, maxiter = _prepare(A, b, x0, rtol, atol, maxiter, M, default_maxiter=5 * b.size)
    eps = np.finfo(np.float64).eps
    r1 = bl - _apply(op, x, np.empty_like(x))
    if shift:
        r1 += shift * x
    y = r1 if prec is None else _apply(prec, r1, np.empty_like(x))
    bM = bl if prec is None else _apply(prec, bl, np.empty_like(x))
    beta1, bnorm2 = space.dots((r1, y), (bl, bM)).real
    if beta1 < 0 or bnorm2 < 0:
        return _result(b, x), 1
    tol = max(rtol * np.sqrt(bnorm2), atol)
    if np.sqrt(beta1) <= tol:
        return _result(b, x), 0
    beta1 = np.sqrt(beta1)
    oldb, beta, dbar, epsln, phibar = 0.0, beta1, 0.0, 0.0, beta1
    cs, sn = -1.0, 0.0
    w = np.zeros_like(x)
    w2 = np.zeros_like(x)
    r2 = r1.copy()
    v = np.empty_like(x)
    yy = np.empty_like(x)
    for itn in range(1, maxiter + 1):
        np.multiply(y, 1.0 / beta, out=v)
        _apply(op, v, yy)
        if shift:
            yy -= shift * v
        if itn >= 2:
            yy -= (beta / oldb) * r1
        alfa = space.dots((v, yy))[0].real
        yy -= (alfa / beta) * r2
        r1, r2 = r2, yy.copy()
        y = r2 if prec is None else _apply(prec, r2, np.empty_like(x))
        oldb = beta
        beta2 = space.dots((r2, y))[0].real
        if beta2 < 0 or not np.isfinite(beta2):
            return _result(b, x), itn
        beta = np.sqrt(beta2)
        oldeps = epsln
        delta = cs * dbar + sn * alfa
        gbar = sn * dbar - cs * alfa
        epsln = sn * beta
        dbar = -cs * beta
        gamma = max(np.hypot(gbar, beta), eps)
        cs, sn = gbar / gamma, beta / gamma
        phi = cs * phibar
        phibar = sn * phibar
        w1 = w2
        w2 = w
        w = (v - oldeps * w1 - delta * w2) / gamma
        x += phi * w
        _callback(callback, b, x)
        if phibar <= tol:
            return _result(b, x), 0
        if beta == 0:  # the Krylov space is exhausted: x is the answer
            return _result(b, x), 0
    return _result(b, x), maxiter
