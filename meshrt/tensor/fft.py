"""``np.fft`` on DistributedTensors: local transforms between the data moves `fft_plan` plans.

Every function of ``np.fft`` works on a DistributedTensor with numpy's arguments and dtypes
(float32/complex64 stay single precision)::

    k = np.fft.rfftn(t)              # planned once per (shape, sharding, axes, s, dtype), then cached
    u = np.fft.irfftn(k, s=t.shape)  # back in t's layout, moving the data once

The axes that are whole on each process are transformed locally (scipy.fft with ``workers=`` when
scipy is installed, else numpy.fft); the mesh axes splitting the others move to a transformed or
untransformed dim (one all-to-all for a slab or each step of a pencil) and those are transformed.
The result keeps the last layout (``meshrt.explain_op(np.fft.fftn, t)`` prints it); ``out=``, or
``sharding=`` of the `meshrt.fft` functions, asks for another.  Bad input raises numpy's own error on
every process before anything moves: the arguments are checked by numpy on a 2-element-per-dim proxy.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> t = DistributedTensor.from_global(np.arange(8.0).reshape(2, 4), Sharding(Mesh((-1,)), [[0]]))
>>> np.allclose(np.fft.fft2(t).gather(), np.fft.fft2(np.arange(8.0).reshape(2, 4)))
True
"""

from __future__ import annotations

import numbers
import os
import warnings

import numpy as np

from ..errors import ShardingError
from ..reshard import execute_reshard
from ..sharding.spec import Sharding
from .dispatch import implements
from .distributed_tensor import DistributedTensor
from .fft_plan import C2C, C2R, HFFT, IHFFT, R2C, FFTPlan, plan_fft

# scipy.fft: the same pocketfft as numpy, plus workers= and in-place transforms of our own buffers.  Imported
# at the first transform (`_library`), not with meshrt: importing scipy.fft takes about a second.
_scipy_fft = False  # not looked for yet; None: absent

__all__ = ["fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn",
           "hfft", "ihfft", "fftshift", "ifftshift", "fftfreq", "rfftfreq", "explain_fft", "plan_for", "workers"]

_ND = ("fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn")
_INVREAL = ("irfft", "irfft2", "irfftn", "hfft")


def workers() -> int:
    """The threads one process's local transforms use: ``MESHRT_FFT_WORKERS``, else this process's
    share of the node's cores (as for BLAS, ``meshrt.runtime.threads``), else every core it may use.

    >>> workers() >= 1
    True
    """
    from ..runtime import threads

    given = os.environ.get("MESHRT_FFT_WORKERS")
    if given:
        try:
            n = int(given)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"MESHRT_FFT_WORKERS={given!r}: expected a positive integer")
        return n
    try:
        bound = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        bound = os.cpu_count() or 1
    env = {k: v for k, v in os.environ.items() if k not in threads.USER_VARS and k != "MESHRT_BLAS_THREADS"}
    return threads.blas_threads(env, os.cpu_count() or 1, bound) or bound


_WORKERS = []


def _workers(given):
    if given is not None:
        return int(given)
    if not _WORKERS:
        _WORKERS.append(workers())
    return _WORKERS[0]


# -- checking arguments: numpy's own errors, on every process, before anything moves -------------------------
def _small(v):
    return min(int(v), 2) if isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1 else v


def _check(name, t, n_or_s, axis_or_axes, norm, out):
    """numpy's verdict on the arguments (its exceptions), the resolved ``s`` and ``axes``, and the result dtype."""
    if not isinstance(t, DistributedTensor):
        raise TypeError(f"np.fft.{name}: expected a DistributedTensor, got {type(t).__name__}")
    shape = t.global_shape
    proxy = np.zeros(tuple(min(n, 2) for n in shape), t.dtype)
    func = getattr(np.fft, name)
    nd = name in _ND
    small = None if n_or_s is None else (tuple(_small(v) for v in n_or_s) if nd and np.iterable(n_or_s)
                                         else n_or_s if nd else _small(n_or_s))
    # numpy's own warnings (s without axes is deprecated in numpy 2) come from this call, under the caller's filters
    res = func(proxy, small, axis_or_axes, norm) if axis_or_axes is not None or not nd else \
        func(proxy, small, norm=norm)
    if nd:
        from numpy.fft._pocketfft import _cook_nd_args

        dummy = np.lib.stride_tricks.as_strided(np.zeros(1), shape, (0,) * len(shape))
        axes = axis_or_axes if axis_or_axes is not None else ((-2, -1) if name.endswith("2") else None)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            s, axes = _cook_nd_args(dummy, n_or_s, axes, invreal=name in _INVREAL)
        axes = tuple(int(a) % len(shape) for a in axes)
        s = tuple(shape[a] if v is None else int(v) for v, a in zip(s, axes))
    else:
        axes = (int(axis_or_axes) % len(shape),)
        m = shape[axes[0]]
        s = (int(n_or_s) if n_or_s is not None else (2 * (m - 1) if name in _INVREAL else m),)
    if out is not None:
        want = _result_shape(name, shape, s, axes)
        if not isinstance(out, DistributedTensor):
            raise TypeError(f"np.fft.{name}: out must be a DistributedTensor beside a DistributedTensor input, "
                            f"got {type(out).__name__}")
        if out.global_shape != want:
            raise ValueError(f"output array has wrong shape: out has global shape {out.global_shape}, "
                             f"np.fft.{name} gives {want}")
        if out.dtype != res.dtype:
            raise TypeError(f"np.fft.{name}: out has dtype {out.dtype}, the result is {res.dtype}")
        if out.mesh != t.mesh:
            raise ShardingError(f"np.fft.{name}: out is on mesh {out.mesh!r}, the input on {t.mesh!r}")
    return s, axes, res.dtype


def _result_shape(name, shape, s, axes):
    out = list(shape)
    for a, n in zip(axes, s):
        out[a] = n
    if name in ("rfft", "rfft2", "rfftn", "ihfft"):
        out[axes[-1]] = s[-1] // 2 + 1
    return tuple(out)


# -- running a plan -----------------------------------------------------------------------------------------
def _plain(s: Sharding) -> Sharding:
    return s.replace(halo_sizes=None) if s.halo_sizes else s


def plan_for(name, t, s=None, axes=None, result_dtype=None) -> FFTPlan:
    """The cached `FFTPlan` ``np.fft.<name>`` runs on ``t`` (``s``/``axes`` resolved as numpy's)."""
    sh = t.sharding
    if sh.is_partial:
        sh = sh.replace(partial_axes=())
    return plan_fft(name, t.global_shape, _plain(sh), np.dtype(t.dtype), None if s is None else tuple(s),
                    None if axes is None else tuple(axes), None if result_dtype is None else np.dtype(result_dtype))


def _library():
    global _scipy_fft
    if _scipy_fft is False:
        try:
            import scipy.fft as lib
        except ImportError:  # pragma: no cover - scipy is optional
            lib = None
        _scipy_fft = lib
    return _scipy_fft


def _local(passes, x, norm, nworkers, own):
    """Run ``passes`` (all on local axes) on the block ``x``; ``own``: x is ours to overwrite."""
    lib = _library()
    i = 0
    while i < len(passes):
        p = passes[i]
        if p.kind == C2C:
            j, seen = i, set()
            while j < len(passes) and passes[j].kind == C2C and passes[j].inverse == p.inverse \
                    and passes[j].axis not in seen:  # the library's fftn takes each axis once
                seen.add(passes[j].axis)
                j += 1
            group = passes[i:j]
            axes, s = [q.axis for q in group], [q.n for q in group]
            fname = "ifftn" if p.inverse else "fftn"
            if lib is not None:
                x = getattr(lib, fname)(x, s=s, axes=axes, norm=norm, overwrite_x=own, workers=nworkers)
            else:
                x = getattr(np.fft, fname)(x, s=s, axes=axes, norm=norm)
            i = j
        else:
            fname = {R2C: "rfft", C2R: "irfft", HFFT: "hfft", IHFFT: "ihfft"}[p.kind]
            if lib is not None:
                x = getattr(lib, fname)(x, n=p.n, axis=p.axis, norm=norm, overwrite_x=own, workers=nworkers)
            else:
                x = getattr(np.fft, fname)(x, n=p.n, axis=p.axis, norm=norm)
            i += 1
        own = True
    return x


def _input_dtype(plan: FFTPlan) -> np.dtype:
    first = plan.stages[0].passes[0] if plan.stages and plan.stages[0].passes else None
    rdt = plan.result_dtype
    if first is not None and first.kind in (R2C, IHFFT):
        return np.dtype(rdt).type(0).real.dtype
    return np.result_type(rdt, np.complex64)


#: bytes per chunk of a pipelined exchange (``MESHRT_FFT_CHUNK_BYTES``); 0, the default: each move in one piece.
#: Measured on 2 processes of a shared 2-core machine (MPICH shared memory, no asynchronous progress), the
#: pipelined 256^3 fftn + ifftn took 1.3-2.7x the plain one (1-16 MiB chunks): the transforms of strided
#: chunks and the copy of each received chunk into place cost more than the overlap wins there.
CHUNK_BYTES = int(os.environ.get("MESHRT_FFT_CHUNK_BYTES", "0"))
_TAG_CHUNK = 0x5f0


def _whole(s: Sharding, d: int) -> bool:
    return all(s.mesh.shape[a] == 1 for a in s.dim_axes(d))


def _chunk_dim(before: Sharding, stage, pending, ndim):
    """A dim to pipeline ``stage``'s move along, with the passes split around it, or None.

    The dim must be whole on both sides of the move (each chunk's pieces go where the whole block's
    go); its own passes run on the whole block first (``pending``'s) or last (``stage``'s), the
    others chunk by chunk, which reorders only complex passes (they commute).
    """
    step = stage.reshard.steps
    if len(step) != 1 or step[0].op not in ("all_to_all", "permute", "exchange"):
        return None
    for c in sorted(range(ndim), key=lambda d: -stage.shape[d]):
        if not (_whole(before, c) and _whole(stage.sharding, c)) or stage.shape[c] < 2:
            continue
        a1 = tuple(p for p in pending if p.axis == c)
        a2 = tuple(p for p in pending if p.axis != c)
        b2 = tuple(p for p in stage.passes if p.axis != c)
        b3 = tuple(p for p in stage.passes if p.axis == c)
        if a1 and any(p.kind != C2C for p in a2) or any(p.kind != C2C for p in a1[1:]):
            continue
        if any(p.kind != C2C for p in b2) and b3 or any(p.kind != C2C for p in b3[:-1]):
            continue
        return c, a1, a2, b2, b3
    return None


def _chunks(stage, c, itemsize, size):
    """The chunks along ``c``, from global sizes: every process cuts the same ones (tags pair the messages)."""
    n = stage.shape[c]
    per_unit = itemsize * int(np.prod(stage.shape)) // (n * size)
    per = max(1, CHUNK_BYTES // max(1, per_unit))
    return [(k, min(k + per, n)) for k in range(0, n, per)]


def _pipelined(x, own, stage, split, bounds, mesh, norm, nworkers):
    """``a1`` on the whole block, then per chunk along ``c``: ``a2``, the chunk's pieces sent; the chunks
    received are transformed by ``b2`` while the next is in flight; ``b3`` on the whole result."""
    from mpi4py import MPI

    from ..reshard import _abstract, _exchange_program
    from ..runtime import mpi as _mpi

    c, a1, a2, b2, b3 = split
    if a1:
        x, own = _local(a1, x, norm, nworkers, own), True
    step = stage.reshard.steps[0]
    rank, comm = mesh.rank, mesh.comm
    sends, recvs, need = _exchange_program(_abstract(step.before), _abstract(step.after), stage.shape, rank)
    mine = [sl for src, sl in recvs if src == rank]
    peers = _mpi.Peers(mesh, tuple(sorted({d for d, _ in recvs} | {d for d, _ in sends})))
    n = x.shape[c]
    whole = (slice(None),) * x.ndim

    def along(sl, k0, k1):
        return sl[:c] + (slice(k0, k1),) + sl[c + 1:]

    def chunk_of(sl, k0, k1):
        return sl[:c] + (slice(0, k1 - k0),) + sl[c + 1:]

    posted = {}

    def post(j):  # the receives of chunk j: into one buffer of the chunk's received block
        if j >= len(bounds) or j in posted:
            return
        k0, k1 = bounds[j]
        shape = list(need)
        shape[c] = k1 - k0
        z = np.empty(shape, x.dtype)
        reqs, later = [], []
        for src, sl in recvs:
            if src == rank:
                continue
            view = z[chunk_of(sl, k0, k1)]
            buf = view if view.flags.c_contiguous else np.empty(view.shape, x.dtype)
            if buf is not view:
                later.append((view, buf))
            with _mpi.internal("np.fft", "pipelined exchange", peers):
                reqs.append(comm.Irecv(buf, src, _TAG_CHUNK + j))
        posted[j] = (z, reqs, later)

    result = [None]

    def finish(j):
        z, reqs, later = posted.pop(j)
        MPI.Request.Waitall(reqs)
        for view, buf in later:
            view[...] = buf
        z = _local(b2, z, norm, nworkers, True) if b2 else z
        if result[0] is None:
            shape = list(z.shape)
            shape[c] = n
            result[0] = np.empty(shape, z.dtype)
        k0, k1 = bounds[j]
        result[0][along(whole, k0, k1)] = z

    with _mpi.internal("np.fft", "pipelined exchange", peers):
        post(0)
        sent = []
        for j, (k0, k1) in enumerate(bounds):
            post(j + 1)
            y = x[along(whole, k0, k1)]
            if a2:
                y = _local(a2, y, norm, nworkers, own)
            reqs = []
            for dest, sl in sends:
                piece = y[chunk_of(sl, k0, k1)]
                if dest == rank:
                    posted[j][0][chunk_of(mine[0], k0, k1)] = piece
                    continue
                buf = np.ascontiguousarray(piece)  # kept until the send completes
                reqs.append((comm.Isend(buf, dest, _TAG_CHUNK + j), buf))
            sent.append(reqs)
            if j:
                finish(j - 1)
                MPI.Request.Waitall([r for r, _ in sent[j - 1]])
                sent[j - 1] = None
        finish(len(bounds) - 1)
        MPI.Request.Waitall([r for r, _ in sent[-1]])
    return _local(b3, result[0], norm, nworkers, True) if b3 else result[0]


def execute_fft(plan: FFTPlan, block: np.ndarray, mesh, norm=None, nworkers=None, pipeline=None) -> np.ndarray:
    """Run ``plan`` on this process's owned block; return the result's owned block.

    ``pipeline`` (default: when ``CHUNK_BYTES`` > 0): a move whose exchange can be cut along a dim whole on
    both sides runs chunk by chunk, each chunk's transforms overlapping the previous chunk's exchange
    (at least two chunks; else the move runs in one piece).
    """
    want = _input_dtype(plan)
    own = block.dtype != want
    x = block.astype(want) if own else block
    nworkers = _workers(nworkers)
    pipeline = CHUNK_BYTES > 0 if pipeline is None else pipeline
    rank = mesh.rank
    pending = ()
    for st in plan.stages:
        if st.reshard is not None:
            split = _chunk_dim(st.reshard.src, st, pending, len(st.shape)) if pipeline and mesh.size > 1 else None
            bounds = _chunks(st, split[0], np.result_type(x.dtype, np.complex64).itemsize, mesh.size) if split \
                else ()
            if len(bounds) > 1:
                x = _pipelined(x, own, st, split, bounds, mesh, norm, nworkers)
                own, pending = True, ()
                continue
            if pending:
                x = _local(pending, x, norm, nworkers, own)
                own, pending = True, ()
            dst = np.empty(st.sharding.shard_shape(st.shape, rank), x.dtype)
            x = execute_reshard(st.reshard, x, mesh, out=dst)
            own = True
        pending = pending + st.passes
    if pending:
        x = _local(pending, x, norm, nworkers, own)
    if x.dtype != plan.result_dtype:  # numpy's result type where the library's differs (never for pocketfft)
        x = x.astype(plan.result_dtype)
    return np.ascontiguousarray(x)


def _transform(name, a, n_or_s, axis_or_axes, norm, out, sharding=None, nworkers=None):
    s, axes, rdt = _check(name, a, n_or_s, axis_or_axes, norm, out)
    if sharding is not None and not isinstance(sharding, Sharding):
        raise ShardingError(f"np.fft.{name}: sharding must be a Sharding, got {sharding!r}")
    t = a.reshard(a.sharding.replace(partial_axes=())) if a.sharding.is_partial else a
    plan = plan_for(name, t, s, axes, rdt)
    block = execute_fft(plan, t.interior, t.mesh, norm, nworkers)
    result = DistributedTensor(block, plan.result_sharding, plan.result_shape)
    target = out.sharding if out is not None else sharding
    if target is not None and target != result.sharding:
        return result.reshard(target, out=out)
    if out is not None:
        out.interior[...] = block
        return out
    return result


def _nd(name):
    def handler(a, s=None, axes=None, norm=None, out=None):
        return _transform(name, a, s, axes, norm, out)
    handler.__name__ = name
    return implements(getattr(np.fft, name))(handler)


def _one(name):
    def handler(a, n=None, axis=-1, norm=None, out=None):
        return _transform(name, a, n, axis, norm, out)
    handler.__name__ = name
    return implements(getattr(np.fft, name))(handler)


for _name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"):
    _one(_name)
for _name in _ND:
    _nd(_name)


def _shift(name, x, axes, sign):
    if not isinstance(x, DistributedTensor):
        raise TypeError(f"np.fft.{name}: expected a DistributedTensor, got {type(x).__name__}")
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, numbers.Integral):
        axes = (axes,)
    from numpy.lib.array_utils import normalize_axis_index

    axes = tuple(normalize_axis_index(int(ax), x.ndim) for ax in axes)
    shifts = tuple(sign * (x.shape[ax] // 2) for ax in axes)
    return np.roll(x, shifts, axes) if axes else x.copy()


@implements(np.fft.fftshift)
def _np_fftshift(x, axes=None):
    """``np.fft.fftshift``: ``np.roll`` by half of each axis (the elements crossing a shard boundary move)."""
    return _shift("fftshift", x, axes, 1)


@implements(np.fft.ifftshift)
def _np_ifftshift(x, axes=None):
    return _shift("ifftshift", x, axes, -1)


# -- the public functions: numpy's signatures, plus the layout of the result and the threads ----------------
def _doc(name):
    return (f"``np.fft.{name}`` of a DistributedTensor (numpy's arguments and result).\n\n"
            "    ``sharding=`` asks for the result's layout (default: the layout of the last stage, which saves\n"
            "    a move; see `explain_fft`); ``workers=`` the threads of the local transforms.\n\n"
            "    >>> from meshrt import DistributedTensor, Mesh, Sharding\n"
            "    >>> t = DistributedTensor.from_global(np.arange(8.0).reshape(2, 4), Sharding(Mesh((-1,)), [[0]]))\n"
            f"    >>> np.allclose({name}(t).gather(), np.fft.{name}(np.arange(8.0).reshape(2, 4)))\n"
            "    True\n")


def _public_nd(name):
    def f(a, s=None, axes=None, norm=None, out=None, *, sharding=None, workers=None):
        return _transform(name, a, s, axes, norm, out, sharding, workers)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = _doc(name)
    return f


def _public_one(name):
    def f(a, n=None, axis=-1, norm=None, out=None, *, sharding=None, workers=None):
        return _transform(name, a, n, axis, norm, out, sharding, workers)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = _doc(name)
    return f


fft, ifft, rfft, irfft, hfft, ihfft = (_public_one(n) for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft"))
fft2, ifft2, fftn, ifftn, rfft2, irfft2, rfftn, irfftn = (_public_nd(n) for n in _ND)
fftshift, ifftshift = _np_fftshift, _np_ifftshift


def fftfreq(n, d=1.0, *, sharding=None, device=None):
    """``np.fft.fftfreq``; with ``sharding=`` (1-D) a DistributedTensor laid out by it.

    >>> fftfreq(4, 0.5)
    array([ 0. ,  0.5, -1. , -0.5])
    """
    return _freq(np.fft.fftfreq(n, d), sharding)


def rfftfreq(n, d=1.0, *, sharding=None, device=None):
    """``np.fft.rfftfreq``; with ``sharding=`` (1-D) a DistributedTensor laid out by it."""
    return _freq(np.fft.rfftfreq(n, d), sharding)


def _freq(values, sharding):
    if sharding is None:
        return values
    block = np.ascontiguousarray(values[sharding.shard_slices(values.shape)])
    return DistributedTensor.from_local(block, sharding, values.shape)


def explain_fft(name, a, *args, **kwargs) -> FFTPlan:
    """The plan ``np.fft.<name>(a, *args, **kwargs)`` runs: its stages, the bytes moved, the result's layout.

    Also reached as ``meshrt.explain_op(np.fft.fftn, t, ...)``.  Checks the arguments as the transform does;
    moves nothing.

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> t = DistributedTensor.from_global(np.ones((4, 6)), Sharding(Mesh((-1,)), [[0]]))
    >>> explain_fft("rfft2", t).result_shape
    (4, 4)
    """
    func = getattr(np.fft, name)
    import inspect

    bound = inspect.signature(func).bind(a, *args, **kwargs)
    bound.apply_defaults()
    p = dict(bound.arguments)
    nd = name in _ND
    s, axes, rdt = _check(name, a, p["s" if nd else "n"], p["axes" if nd else "axis"], p["norm"], p["out"])
    return plan_for(name, a, s, axes, rdt)


EXPLAIN = {getattr(np.fft, n): (lambda _n: lambda a, *args, **kw: explain_fft(_n, a, *args, **kw))(n)
           for n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft") + _ND}

from .dispatch import EXPLAINERS as _EXPLAINERS  # noqa: E402  (explain_op(np.fft.fftn, t) reads it)

_EXPLAINERS.update(EXPLAIN)
