"""Stencil kernels for local buffers with halos, and the inner/rim split that overlaps halo exchange.

Each kernel updates one box of ``v`` (local indices, half-open) from ``u``;
a box must keep one cell away from the buffer's edge (halos supply the
neighbours).  Floating-point operations run in the order the docstrings
give, so a numpy expression written the same way matches bit for bit.

    >>> inner, rims = inner_and_rim([(1, 9), (1, 5)], 1)
    >>> inner, len(rims)
    ([(2, 8), (2, 4)], 4)

Overlap (ImplicitGlobalGrid's ``hide_communication``)::

    h = u.update_halo(wait=False)
    heat2d_box(u.local, v.local, r, inner)      # reads no halo
    h.wait()
    for box in rims:
        heat2d_box(u.local, v.local, r, box)

`meshrt.apply_stencil` does this for any kernel written on a box
``(lo, hi, *args)``, as `wave2d_leapfrog` and `heat3d_7pt` below are::

    apply_stencil(heat3d_7pt, v, u, r, reads=[u])
"""

import os
import platform

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["inner_and_rim", "interior_box", "heat2d_box", "heat3d_box", "life_box", "wave2d_leapfrog",
           "heat3d_7pt"]


def interior_box(tensor) -> list:
    """The owned block of a `DistributedTensor` as ``[(lo, hi), ...]`` in local indices."""
    s = tensor.sharding
    return [(s.halo_widths(d)[0], s.halo_widths(d)[0] + n) for d, n in enumerate(tensor.interior.shape)]


def inner_and_rim(box, width: int = 1):
    """Split ``box`` into the inner box (``width`` cells from every side) and rim boxes.

    The rim boxes and the inner box partition ``box``; cells of the inner box
    read no halo for a stencil of radius ``width``.
    """
    inner = [tuple(b) for b in box]
    rims = []
    for d in range(len(inner)):
        lo, hi = inner[d]
        ilo = min(lo + width, hi)
        ihi = max(hi - width, ilo)
        if ilo > lo:
            rims.append(inner[:d] + [(lo, ilo)] + inner[d + 1:])
        if hi > ihi:
            rims.append(inner[:d] + [(ihi, hi)] + inner[d + 1:])
        inner[d] = (ilo, ihi)
    return inner, rims


# The loops read rows through 1-D views: indexing the 2-D arrays directly keeps
# LLVM from vectorizing the inner loop (measured 2x slower, same bits).
@njit(cache=True, nogil=True)
def _heat2d(u, v, r, i0, i1, j0, j1):
    for i in range(i0, i1):
        north, row, south, out = u[i - 1], u[i], u[i + 1], v[i]
        for j in range(j0, j1):
            c = row[j]
            out[j] = c + r * (((north[j] + south[j]) + (row[j - 1] + row[j + 1])) - 4.0 * c)


# Streaming (non-temporal) stores.  An ordinary store first reads the line it
# writes (write-allocate): 24 bytes of memory traffic per point against the 16
# that must move.  For float64 boxes too big to stay in cache, the kernels below
# write 4 points at a time with one 32-byte-aligned ``<4 x double>`` store that
# carries ``!nontemporal`` (vmovntpd), doing the same operations in the same
# order as the plain kernels, so the bits agree.  The unaligned head and the
# tail of a row use the plain statement; an ``sfence`` ends each call.
# MESHRT_NO_STREAM=1 turns it off; so does a CPU other than x86-64 or a failed
# self-check at import.
_STREAM_MIN_BYTES = 4 << 20  # a box writing less than this stays in cache: plain stores
_LANES = 4


def _vec_args(context, builder, sig, args):
    dbl = ir.DoubleType()
    vty = ir.VectorType(dbl, _LANES)
    arys = [context.make_array(t)(context, builder, a) for t, a in zip(sig.args, args)]

    def load(k, idx):  # <4 x double> at arys[k].data + idx, 8-byte aligned
        p = builder.gep(arys[k].data, [idx])
        return builder.load(builder.bitcast(p, vty.as_pointer()), align=8)

    def splat(x):
        vec = ir.Constant(vty, ir.Undefined)
        for lane in range(_LANES):
            vec = builder.insert_element(vec, x, ir.Constant(ir.IntType(32), lane))
        return vec

    def stream(k, idx, val):  # non-temporal store, the address 32-byte aligned
        p = builder.gep(arys[k].data, [idx])
        st = builder.store(val, builder.bitcast(p, vty.as_pointer()), align=8 * _LANES)
        st.set_metadata("nontemporal", builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)]))

    return vty, load, splat, stream


def _f64_rows(*tys):
    return all(isinstance(t, types.Array) and t.ndim == 1 and t.dtype == types.float64 for t in tys)


@intrinsic
def _heat2d_stream4(typingctx, north, row, south, out, j, r):
    """``out[j:j+4] = row[j:j+4] + r * (((north + south) + (west + east)) - 4.0 * c)``, one streaming store."""
    if not (_f64_rows(north, row, south, out) and isinstance(j, types.Integer) and r == types.float64):
        return None
    sig = types.void(north, row, south, out, types.intp, types.float64)

    def codegen(context, builder, sig, args):
        _, load, splat, stream = _vec_args(context, builder, sig, args[:4])
        j, r = args[4], args[5]
        one = ir.Constant(j.type, 1)
        c = load(1, j)
        t = builder.fadd(builder.fadd(load(0, j), load(2, j)),
                         builder.fadd(load(1, builder.sub(j, one)), load(1, builder.add(j, one))))
        t = builder.fsub(t, builder.fmul(splat(ir.Constant(ir.DoubleType(), 4.0)), c))
        stream(3, j, builder.fadd(c, builder.fmul(splat(r), t)))
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def _sfence(typingctx):
    """Order the streaming stores before anything after (x86 ``sfence``)."""
    def codegen(context, builder, sig, args):
        fn = cgutils.get_or_insert_function(builder.module, ir.FunctionType(ir.VoidType(), []),
                                            "llvm.x86.sse.sfence")
        builder.call(fn, [])
        return context.get_dummy_value()

    return types.void(), codegen


@njit(cache=True, nogil=True)
def _stream_head(out, j0, j1):
    """First index from ``j0`` whose element is 32-byte aligned, at most ``j1``."""
    a = out.ctypes.data + 8 * j0
    if a % 8 != 0:
        return j1
    return min(j0 + ((32 - a % 32) % 32) // 8, j1)


@njit(cache=True, nogil=True)
def _heat2d_nt(u, v, r, i0, i1, j0, j1):
    for i in range(i0, i1):
        north, row, south, out = u[i - 1], u[i], u[i + 1], v[i]
        jh = _stream_head(out, j0, j1)
        jt = jh + (j1 - jh) // 4 * 4
        for j in range(j0, jh):
            c = row[j]
            out[j] = c + r * (((north[j] + south[j]) + (row[j - 1] + row[j + 1])) - 4.0 * c)
        for q in range((jt - jh) // 4):
            _heat2d_stream4(north, row, south, out, jh + 4 * q, r)
        for j in range(jt, j1):
            c = row[j]
            out[j] = c + r * (((north[j] + south[j]) + (row[j - 1] + row[j + 1])) - 4.0 * c)
    _sfence()


def _stream(u, box):
    """Whether to write ``box`` of ``u``'s shape with streaming stores."""
    if not _STREAM or u.dtype != np.float64:
        return False
    return int(np.prod([max(hi - lo, 0) for lo, hi in box])) * 8 >= _STREAM_MIN_BYTES


def heat2d_box(u, v, r, box):
    """Explicit 5-point heat step on ``box``:
    ``v = c + r * (((n + s) + (w + e)) - 4.0 * c)``."""
    (i0, i1), (j0, j1) = box
    _check(u, v, box, 2)
    if i1 > i0 and j1 > j0:
        kernel = _heat2d_nt if _stream(u, box) and v.flags.c_contiguous and u.flags.c_contiguous else _heat2d
        kernel(u, v, u.dtype.type(r), i0, i1, j0, j1)


@njit(cache=True, nogil=True)
def _heat3d(u, v, r, i0, i1, j0, j1, k0, k1):
    for i in range(i0, i1):
        for j in range(j0, j1):
            west, east = u[i - 1, j], u[i + 1, j]
            south, row, north, out = u[i, j - 1], u[i, j], u[i, j + 1], v[i, j]
            for k in range(k0, k1):
                c = row[k]
                out[k] = c + r * ((((west[k] + east[k]) + (south[k] + north[k])) + (row[k - 1] + row[k + 1])) - 6.0 * c)


def heat3d_box(u, v, r, box):
    """Explicit 7-point heat step on ``box``:
    ``v = c + r * ((((x- + x+) + (y- + y+)) + (z- + z+)) - 6.0 * c)``."""
    (i0, i1), (j0, j1), (k0, k1) = box
    _check(u, v, box, 3)
    if i1 > i0 and j1 > j0 and k1 > k0:
        _heat3d(u, v, u.dtype.type(r), i0, i1, j0, j1, k0, k1)


@njit(cache=True, nogil=True)
def _life(u, v, i0, i1, j0, j1):
    for i in range(i0, i1):
        for j in range(j0, j1):
            n = 0
            for di in range(-1, 2):
                for dj in range(-1, 2):
                    if di != 0 or dj != 0:
                        n += u[i + di, j + dj]
            v[i, j] = 1 if n == 3 or (n == 2 and u[i, j] != 0) else 0


def life_box(u, v, box):
    """One Game of Life generation on ``box`` (9-point: corners count); cells are 0 or 1."""
    (i0, i1), (j0, j1) = box
    _check(u, v, box, 2)
    if i1 > i0 and j1 > j0:
        _life(u, v, i0, i1, j0, j1)


def _self_check():
    """Whether the streaming kernels run here and give the plain kernels' bits."""
    if os.environ.get("MESHRT_NO_STREAM", "") not in ("", "0"):
        return False
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        rng = np.random.default_rng(0)
        u = rng.random((5, 19))
        a, b = np.zeros_like(u), np.zeros_like(u)
        _heat2d(u, a, 0.2, 1, 4, 1, 18)
        _heat2d_nt(u, b, 0.2, 1, 4, 1, 18)
        return bool(np.array_equal(a.view(np.int64), b.view(np.int64)))
    except Exception:
        return False


_STREAM = _self_check()


def _check(u, v, box, ndim):
    if not (isinstance(u, np.ndarray) and isinstance(v, np.ndarray)):
        raise ValueError("stencil: u and v must be numpy arrays")
    if u.ndim != ndim or u.shape != v.shape or u.dtype != v.dtype:
        raise ValueError(f"stencil: u {u.shape} {u.dtype} and v {v.shape} {v.dtype} must be {ndim}-d, alike")
    for d, (lo, hi) in enumerate(box):
        if hi > lo and (lo < 1 or hi > u.shape[d] - 1):
            raise ValueError(f"stencil: box {list(box)} reaches past the halo of a buffer of shape {u.shape}")


# -- kernels for meshrt.apply_stencil: ``kernel(lo, hi, *args)`` on a box of local indices --------

@njit(cache=True, nogil=True)
def wave2d_leapfrog(lo, hi, old, u, C):
    """Leapfrog wave step in place: ``old = (2 c - old) + C * (((n + s) + (w + e)) - 4 c)``."""
    for i in range(lo[0], hi[0]):
        north, row, south, out = u[i - 1], u[i], u[i + 1], old[i]  # 1-D rows: the inner loop vectorizes
        for j in range(lo[1], hi[1]):
            c = row[j]
            out[j] = (2.0 * c - out[j]) + C * (((north[j] + south[j]) + (row[j - 1] + row[j + 1])) - 4.0 * c)


@njit(cache=True, nogil=True)
def heat3d_7pt(lo, hi, v, u, r):
    """``v = c + r * ((((x- + x+) + (y- + y+)) + (z- + z+)) - 6.0 * c)`` (same order as `heat3d_box`)."""
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            west, east = u[i - 1, j], u[i + 1, j]
            south, row, north, out = u[i, j - 1], u[i, j], u[i, j + 1], v[i, j]
            for k in range(lo[2], hi[2]):
                c = row[k]
                out[k] = c + r * ((((west[k] + east[k]) + (south[k] + north[k])) + (row[k - 1] + row[k + 1]))
                                  - 6.0 * c)
