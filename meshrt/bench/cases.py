"""What ``meshrt bench`` times: per op and size, a `Case` holding the meshrt call and the same
operation written directly with mpi4py, on the same inputs, and a check of both against a numpy
model.  `_collective_case` builds the collectives' (one builder per op in `_COLLECTIVE_CASES`),
`_halo_case` the halo exchange's, `_reshard_case` a reshard's; `meshrt.bench` runs them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


class BenchError(ValueError):
    """A bad ``meshrt bench`` option; the message names the option and the value."""


@dataclass
class Case:
    """One size of one op: a meshrt call and the raw mpi4py call, on the same buffers.

    ``check(meshrt_result, raw_result) -> bool`` compares both with a numpy model.
    ``scale`` multiplies the measured time (0.5 for a ping-pong round trip).
    """

    size: int
    meshrt: object
    raw: object
    check: object
    scale: float = 1.0
    free: object = None
    label: str = ""
    check_calls: tuple | None = None  # (meshrt, raw) calls for the check, if not the timed ones
    floor: object = None  # ``floor(warmup, iters, sync) -> seconds``: the same call in a C loop (`_c_floor`)


def _values(k: int, count: int, dtype, small: bool = False) -> np.ndarray:
    """In-group rank ``k``'s deterministic input: small integers, exact in every dtype."""
    base = (np.arange(count, dtype=np.int64) + 3 * k) % (2 if small else 7) + 1
    if dtype.kind == "b":
        return (base % 2).astype(bool)
    return base.astype(dtype)


def _same(a, b) -> bool:
    if a is None or b is None:
        return a is b
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        single = a.dtype.itemsize <= (4 if a.dtype.kind == "f" else 8)
        tol = 1e-2 if single else 1e-9
        return bool(np.allclose(a, b, rtol=tol, atol=0, equal_nan=True))
    return bool(np.array_equal(a, b))


_UFUNC = {"sum": np.add, "product": np.multiply, "max": np.maximum, "min": np.minimum,
          "bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
          "average": np.add}


def _model_reduce(inputs, reduction, dtype):
    out = _UFUNC[reduction].reduce(np.stack(inputs), axis=0, dtype=dtype)
    if reduction == "average":
        n = len(inputs)
        out = out // n if dtype.kind in "iu" else out / n
    return np.asarray(out, dtype=dtype)


def _raw_reduce(reduction, dtype):
    """``(datatype, op, average)`` for the raw reference: MPI's predefined op where MPI has one,
    with datatype None (bare arrays: mpi4py finds the type, as a user's code lets it)."""
    from mpi4py import MPI

    builtin = {"sum": MPI.SUM, "product": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN, "average": MPI.SUM,
               "bitwise_and": MPI.BAND, "bitwise_or": MPI.BOR, "bitwise_xor": MPI.BXOR}
    t = MPI._typedict.get(dtype.char)
    if t is not None and dtype.kind in "iufc" and not (dtype.kind == "f" and dtype.itemsize == 2):
        return None, builtin[reduction], reduction == "average"
    from ..runtime.mpi import reduce_plan

    plan = reduce_plan(reduction, dtype)  # bool, float16: MPI has no op of its own for these
    return plan.datatype, plan.op, plan.average


@dataclass
class _Inputs:
    """What every collective's `Case` starts from: the device group, this rank's input ``x`` and
    the raw side's buffer spec of it (``sx``: the bare array, or ``[x, MPI.BYTE]`` for a dtype
    mpi4py has no datatype for).  The builders copy the fields they use into locals, so the timed
    closures read cells, as an inline loop would, not attributes."""

    mesh: object
    axes: object
    g: object       # the group's communicator
    n: int          # group size
    k: int          # this process's rank in the group
    count: int      # elements per process
    dtype: object
    small: bool     # product: inputs of 1s and 2s, so the product stays exact
    x: np.ndarray
    sx: object
    bare: bool
    reduction: str
    reuse: bool = False  # one result array reused by every call (IMB's fixed receive buffer; meshrt's out=), else new each call
    new: object = np.empty  # the result allocator: np.empty, or under ``reuse`` the shared `_Reuse`
    zeros: object = np.zeros  # the fixed buffers' allocator: np.zeros, or `_MpiMemory` under ``--alloc mpi``

    def shared(self, count):
        """Under ``reuse`` the result array of ``count`` elements that meshrt's ``out=``, the raw
        side and the C loop all receive into (one per size: `_Reuse`), else None."""
        return self.new(count, self.dtype) if self.reuse else None

    def inputs(self, m=None):
        """Every group rank's input (the numpy model's operands)."""
        return [_values(j, m or self.count, self.dtype, self.small) for j in range(self.n)]


class _Reuse:
    """``np.empty``'s signature, returning one array per (count, dtype) made on first use (by
    ``zeros``): the raw side's result under ``--result reuse`` (IMB-MPI1 receives into one
    buffer every call)."""

    def __init__(self, zeros=np.zeros):
        self.arrays = {}
        self.zeros = zeros

    def __call__(self, count, dtype):
        a = self.arrays.get((count, dtype))
        if a is None:
            a = self.arrays[count, dtype] = self.zeros(count, dtype)  # touched once, outside the timing
        return a


class _MpiMemory:
    """``np.zeros(count, dtype)`` on memory from ``MPI_Alloc_mem``, as IMB-MPI1 allocates its
    buffers (``--alloc mpi``); `free` hands every block back with ``MPI_Free_mem``.

    It matters under Intel MPI: its ``MPI_Alloc_mem`` carves blocks from a pool on 2 MiB pages,
    and its large shared-memory copies run faster from and into such pages (scatter 64 KiB 8.3 ->
    5.7 us, 1 MiB 164 -> 114; all_gather 1 MiB 248 -> 200, a C loop under each); numpy's arrays
    below 4 MiB lie on 4 KiB pages.

        >>> memory = _MpiMemory()
        >>> memory(3, np.float64).tolist()
        [0.0, 0.0, 0.0]
        >>> memory.free()
    """

    def __init__(self):
        self.blocks = []

    def __call__(self, count, dtype):
        from mpi4py import MPI

        dtype = np.dtype(dtype)
        block = MPI.Alloc_mem(max(1, count * dtype.itemsize))
        self.blocks.append(block)
        a = np.frombuffer(block, dtype, count)
        a[...] = 0
        return a

    def free(self):
        from mpi4py import MPI

        for block in self.blocks:
            MPI.Free_mem(block)
        self.blocks.clear()


def _collective_case(op, mesh, axes, nbytes, dtype, reduction, reuse=False, alloc="numpy"):
    """The `Case` of a collective.  The raw side is the plainest mpi4py code for the job: bare
    arrays (mpi4py finds the datatype), buffer specs of the fixed inputs made once, nothing but
    ``np.empty`` and the MPI call per call -- within a few percent of an inline loop of the
    same call (``tests/test_bench.py`` checks it).  ``reuse``: both sides and the C loop receive
    into one shared result array every call, as IMB-MPI1 does (meshrt through ``out=``; the
    broadcast root's result is its input), so no column gains or loses by where its own array
    lies.  ``alloc``: where the fixed buffers (inputs, reused results, the C loop's) lie:
    ``numpy`` arrays, or ``mpi`` blocks from ``MPI_Alloc_mem`` as IMB-MPI1's (`_MpiMemory`;
    `Case.free` hands them back)."""
    from mpi4py import MPI

    g = mesh.group(axes)
    n, k = g.Get_size(), g.Get_rank()
    count = max(1, nbytes // dtype.itemsize)
    if op in ("reduce_scatter", "all_to_all", "all_slice"):
        count = -(-count // n) * n  # n equal pieces
    small = reduction == "product"
    memory = _MpiMemory() if alloc == "mpi" else None
    zeros = np.zeros if memory is None else memory
    x = zeros(count, dtype)
    x[...] = _values(k, count, dtype, small)
    # Every dtype check_options admits is in mpi4py's table on common MPIs; bytes otherwise.
    bare = dtype.char in MPI._typedict
    sx = x if bare else [x, MPI.BYTE]
    build = _COLLECTIVE_CASES.get(op)
    if build is None:  # pragma: no cover - check_options admits no other op
        raise AssertionError(op)
    results = _Reuse(zeros) if reuse else None
    case = build(_Inputs(mesh, axes, g, n, k, count, dtype, small, x, sx, bare, reduction, reuse,
                         results or np.empty, zeros))
    case.floor = _c_floor(op, mesh, axes, g, n, k, count, dtype, reduction, x, zeros, results)
    if memory is not None:  # (no collective builder sets a free of its own)
        case.free = memory.free
    return case


def _reducing(i: _Inputs):
    """``(sx, rt, rop, average, divide)`` of a reducing collective's raw side: the input's spec with
    the reference's datatype, MPI's op, whether to divide by the group size afterwards, and how."""
    rt, rop, average = _raw_reduce(i.reduction, i.dtype)
    sx = i.x if rt is None else [i.x, rt]
    divide = np.floor_divide if i.dtype.kind in "iu" else np.divide
    return sx, rt, rop, average, divide


# The raw side makes its result each call too (np.empty), as meshrt does.
def _all_reduce_case(i: _Inputs) -> Case:
    from .. import collectives as C

    mesh, axes, g, n, count, dtype, x, reduction = i.mesh, i.axes, i.g, i.n, i.count, i.dtype, i.x, i.reduction
    sx, rt, rop, average, divide = _reducing(i)
    new = i.new
    ym = i.shared(count)
    fm = lambda: C.all_reduce(x, mesh, axes, reduction)  # noqa: E731
    if ym is not None:
        fm = lambda: C.all_reduce(x, mesh, axes, reduction, out=ym)  # noqa: E731

    def fr():
        out = new(count, dtype) if ym is None else ym
        g.Allreduce(sx, out if rt is None else [out, rt], rop)
        if average:
            divide(out, n, out=out)
        return out

    want = lambda: _model_reduce(i.inputs(), reduction, dtype)  # noqa: E731
    check = lambda a, b: _same(a, want()) and _same(b, want())  # noqa: E731
    return Case(x.nbytes, fm, fr, check)


def _reduce_case(i: _Inputs) -> Case:
    from .. import collectives as C

    mesh, axes, g, n, k, count, dtype, x, reduction = i.mesh, i.axes, i.g, i.n, i.k, i.count, i.dtype, i.x, i.reduction
    sx, rt, rop, average, divide = _reducing(i)
    new = i.new
    ym = i.shared(count)
    fm = lambda: C.reduce(x, mesh, axes, reduction, 0)  # noqa: E731
    if ym is not None:
        fm = lambda: C.reduce(x, mesh, axes, reduction, 0, out=ym)  # noqa: E731

    def fr():
        if k:
            g.Reduce(sx, None, rop, 0)
            return None
        out = new(count, dtype) if ym is None else ym
        g.Reduce(sx, out if rt is None else [out, rt], rop, 0)
        if average:
            divide(out, n, out=out)
        return out

    def check(a, b):
        if k != 0:
            return a is None
        want = _model_reduce(i.inputs(), reduction, dtype)
        return _same(a, want) and _same(b, want)
    return Case(x.nbytes, fm, fr, check)


def _reduce_scatter_case(i: _Inputs) -> Case:
    from .. import collectives as C

    mesh, axes, g, n, k, count, dtype, x, reduction = i.mesh, i.axes, i.g, i.n, i.k, i.count, i.dtype, i.x, i.reduction
    sx, rt, rop, average, divide = _reducing(i)
    new = i.new
    ym = i.shared(count // n)
    fm = lambda: C.reduce_scatter(x, mesh, axes, reduction, 0)  # noqa: E731
    if ym is not None:
        fm = lambda: C.reduce_scatter(x, mesh, axes, reduction, 0, out=ym)  # noqa: E731

    m = count // n

    def fr():
        piece = new(m, dtype) if ym is None else ym
        g.Reduce_scatter_block(sx, piece if rt is None else [piece, rt], rop)
        if average:
            divide(piece, n, out=piece)
        return piece

    def check(a, b):
        want = _model_reduce(i.inputs(), reduction, dtype)[k * (count // n):(k + 1) * (count // n)]
        return _same(a, want) and _same(b, want)
    return Case(x.nbytes, fm, fr, check)


def _broadcast_case(i: _Inputs) -> Case:
    from mpi4py import MPI

    from .. import collectives as C

    mesh, axes, g, k, count, dtype, x, sx, bare = i.mesh, i.axes, i.g, i.k, i.count, i.dtype, i.x, i.sx, i.bare
    BYTE = MPI.BYTE
    new = i.new
    ym = i.shared(count) if k != 0 else None  # the root's result is x itself
    fm = lambda: C.broadcast(x, mesh, axes, 0)  # noqa: E731
    if ym is not None:
        fm = lambda: C.broadcast(x, mesh, axes, 0, out=ym)  # noqa: E731

    def fr():
        if k == 0:
            g.Bcast(sx, 0)
            return x
        out = new(count, dtype) if ym is None else ym
        g.Bcast(out if bare else [out, BYTE], 0)
        return out

    check = lambda a, b: _same(a, i.inputs()[0]) and _same(b, i.inputs()[0])  # noqa: E731
    return Case(x.nbytes, fm, fr, check)


def _gather_case(i: _Inputs, op: str) -> Case:
    """``all_gather`` or ``gather`` (to group rank 0)."""
    from mpi4py import MPI

    from .. import collectives as C

    mesh, axes, g, k, dtype, x, sx, bare = i.mesh, i.axes, i.g, i.k, i.dtype, i.x, i.sx, i.bare
    BYTE = MPI.BYTE
    cn = i.count * i.n
    new = i.new
    if op == "all_gather":
        ym = i.shared(cn)
        fm = lambda: C.all_gather(x, mesh, axes, 0)  # noqa: E731
        if ym is not None:
            fm = lambda: C.all_gather(x, mesh, axes, 0, out=ym)  # noqa: E731

        def fr():
            big = new(cn, dtype) if ym is None else ym
            g.Allgather(sx, big if bare else [big, BYTE])
            return big
    else:
        ym = i.shared(cn)
        fm = lambda: C.gather(x, mesh, axes, 0, 0)  # noqa: E731
        if ym is not None:
            fm = lambda: C.gather(x, mesh, axes, 0, 0, out=ym)  # noqa: E731

        def fr():
            if k:
                g.Gather(sx, None, 0)
                return None
            big = new(cn, dtype) if ym is None else ym
            g.Gather(sx, big if bare else [big, BYTE], 0)
            return big

    def check(a, b):
        if op == "gather" and k != 0:
            return a is None
        want = np.concatenate(i.inputs())
        return _same(a, want) and _same(b, want)
    return Case(x.nbytes, fm, fr, check)


def _scatter_case(i: _Inputs) -> Case:
    from mpi4py import MPI

    from .. import collectives as C

    mesh, axes, g, k, count, dtype, x, bare = i.mesh, i.axes, i.g, i.k, i.count, i.dtype, i.x, i.bare
    BYTE = MPI.BYTE
    new = i.new
    xs = i.zeros(count * i.n, dtype)  # only its shape counts off the root
    if k == 0:
        xs[...] = np.concatenate(i.inputs())
    ym = i.shared(count)
    fm = lambda: C.scatter(xs, mesh, axes, 0, 0)  # noqa: E731
    if ym is not None:
        fm = lambda: C.scatter(xs, mesh, axes, 0, 0, out=ym)  # noqa: E731

    sxs = (xs if bare else [xs, BYTE]) if k == 0 else None

    def fr():
        out = new(count, dtype) if ym is None else ym
        g.Scatter(sxs, out if bare else [out, BYTE], 0)
        return out

    check = lambda a, b: _same(a, x) and _same(b, x)  # noqa: E731
    return Case(x.nbytes, fm, fr, check)


def _all_to_all_case(i: _Inputs) -> Case:
    from mpi4py import MPI

    from .. import collectives as C

    mesh, axes, g, k, count, dtype, x, sx, bare = i.mesh, i.axes, i.g, i.k, i.count, i.dtype, i.x, i.sx, i.bare
    BYTE = MPI.BYTE
    new = i.new
    m = count // i.n
    ym = i.shared(count)
    fm = lambda: C.all_to_all(x, mesh, axes, 0, 0)  # noqa: E731
    if ym is not None:
        fm = lambda: C.all_to_all(x, mesh, axes, 0, 0, out=ym)  # noqa: E731

    def fr():
        out = new(count, dtype) if ym is None else ym
        g.Alltoall(sx, out if bare else [out, BYTE])
        return out

    def check(a, b):
        want = np.concatenate([v[k * m:(k + 1) * m] for v in i.inputs()])
        return _same(a, want) and _same(b, want)
    return Case(x.nbytes, fm, fr, check)


def _all_slice_case(i: _Inputs) -> Case:
    from .. import collectives as C

    mesh, axes, k, x = i.mesh, i.axes, i.k, i.x
    m = i.count // i.n
    fm = lambda: C.all_slice(x, mesh, axes, 0)  # noqa: E731
    piece = slice(k * m, (k + 1) * m)
    fr = lambda: x[piece]  # noqa: E731
    check = lambda a, b: _same(a, x[k * m:(k + 1) * m]) and _same(b, a)  # noqa: E731
    return Case(x.nbytes, fm, fr, check)


def _shift_case(i: _Inputs) -> Case:
    from mpi4py import MPI

    from .. import collectives as C

    mesh, axes, g, k, count, dtype, x, sx, bare = i.mesh, i.axes, i.g, i.k, i.count, i.dtype, i.x, i.sx, i.bare
    BYTE = MPI.BYTE
    new = i.new
    gaxes = mesh.axes(axes)
    a = gaxes[-1]
    stride = 1  # the last group axis is the innermost in group order
    c = mesh.coords[a]
    src = k + ((c - 1) % mesh.shape[a] - c) * stride
    dst = k + ((c + 1) % mesh.shape[a] - c) * stride
    tag = 0x7B1
    ym = i.shared(count)
    fm = lambda: C.shift(x, mesh, axes, a, 1, rotate=True)  # noqa: E731
    if ym is not None:
        fm = lambda: C.shift(x, mesh, axes, a, 1, rotate=True, out=ym)  # noqa: E731

    def fr():
        out = new(count, dtype) if ym is None else ym
        g.Sendrecv(sx, dst, tag, out if bare else [out, BYTE], src, tag)
        return out

    check = lambda a_, b: _same(a_, i.inputs()[src]) and _same(b, i.inputs()[src])  # noqa: E731
    return Case(x.nbytes, fm, fr, check)


def _send_recv_case(i: _Inputs) -> Case:
    """A ping-pong between group ranks 2j and 2j+1 (an odd one out idles); the time is one way."""
    from mpi4py import MPI

    from .. import collectives as C

    mesh, axes, g, n, k, count, dtype, x, sx, bare = i.mesh, i.axes, i.g, i.n, i.k, i.count, i.dtype, i.x, i.sx, i.bare
    BYTE = MPI.BYTE
    new = i.new
    peer = k + 1 if k % 2 == 0 else k - 1
    tag = 0x7B2
    if peer >= n:  # the odd one out idles
        fm = fr = lambda: None  # noqa: E731
        check = lambda a, b: True  # noqa: E731
    else:
        if k % 2 == 0:
            def fm():
                C.send(x, mesh, axes, peer)
                return C.recv(x, mesh, axes, peer)

            def fr():
                g.Send(sx, peer, tag)
                out = new(count, dtype)
                g.Recv(out if bare else [out, BYTE], peer, tag)
                return out
        else:
            def fm():
                r = C.recv(x, mesh, axes, peer)
                C.send(x, mesh, axes, peer)
                return r

            def fr():
                out = new(count, dtype)
                g.Recv(out if bare else [out, BYTE], peer, tag)
                g.Send(sx, peer, tag)
                return out

        check = lambda a, b: _same(a, i.inputs()[peer]) and _same(b, i.inputs()[peer])  # noqa: E731
    return Case(x.nbytes, fm, fr, check, scale=0.5)


def _c_floor(op, mesh, axes, g, n, k, count, dtype, reduction, x, zeros=np.zeros, results=None):
    """``floor(warmup, iters, sync) -> seconds``: ``op``'s MPI call in a compiled loop on fixed
    buffers (`meshrt._cfloor`, IMB-MPI1's loop; inputs made by ``zeros``, results by ``results``,
    by default ``zeros`` too), the same datatype, op and peers as the raw side; None for all_slice
    (no call) or where the MPI library's functions were not found."""
    from mpi4py import MPI

    from .. import _cfloor

    if op not in _cfloor.KINDS or not _cfloor.available():
        return None
    h = MPI._handleof
    t = MPI._typedict.get(dtype.char)
    if op in ("all_reduce", "reduce", "reduce_scatter"):
        rt, rop, _ = _raw_reduce(reduction, dtype)
        dt, rh, per = h(t if rt is None else rt), h(rop), 1
    else:
        dt, rh, per = (h(t), 0, 1) if t is not None else (h(MPI.BYTE), 0, dtype.itemsize)
    root, dst, src = 0, -1, -1
    results = results or zeros
    y = results(count, dtype)
    if op == "all_reduce":
        send, recv, c = x, y, count
    elif op == "reduce":
        send, recv, c = x, (y if k == 0 else None), count
    elif op == "reduce_scatter":
        send, recv, c = x, results(count // n, dtype), count // n
    elif op == "broadcast":
        send, recv, c = (x if k == 0 else y), None, count
    elif op == "all_gather":
        send, recv, c = x, results(count * n, dtype), count
    elif op == "gather":
        send, recv, c = x, (results(count * n, dtype) if k == 0 else None), count
    elif op == "scatter":
        send, recv, c = (zeros(count * n, dtype) if k == 0 else None), y, count
        if k == 0:
            send[...] = np.tile(x, n)
    elif op == "all_to_all":
        send, recv, c = x, y, count // n
    elif op == "shift":
        a = mesh.axes(axes)[-1]
        co = mesh.coords[a]
        src = k + ((co - 1) % mesh.shape[a] - co)
        dst = k + ((co + 1) % mesh.shape[a] - co)
        send, recv, c = x, y, count
    else:  # send_recv: pairs 2j, 2j+1; an odd one out idles
        peer = k + 1 if k % 2 == 0 else k - 1
        dst, root = (peer if peer < n else -1), int(k % 2 == 0)
        send, recv, c = x, y, count
    run = _cfloor.run

    def floor(warmup, iters, sync=True):
        return run(op, g, send, recv, dt, rh, c * per, root, dst, src, warmup, iters, sync)
    return floor


# op -> the builder of its Case
_COLLECTIVE_CASES = {
    "all_reduce": _all_reduce_case, "reduce": _reduce_case, "reduce_scatter": _reduce_scatter_case,
    "broadcast": _broadcast_case, "all_gather": lambda i: _gather_case(i, "all_gather"),
    "gather": lambda i: _gather_case(i, "gather"), "scatter": _scatter_case, "all_to_all": _all_to_all_case,
    "all_slice": _all_slice_case, "shift": _shift_case, "send_recv": _send_recv_case,
}


def _global_values(index, dtype):
    v = index % 97 + 1
    return (v % 2).astype(bool) if dtype.kind == "b" else v.astype(dtype)


def _halo_case(mesh, axes, o):
    from mpi4py import MPI

    from ..halo import HaloExchange
    from ..sharding.spec import Sharding

    shape, dtype = o.shape, o.dtype
    axes = tuple(range(mesh.ndim)) if axes is None else axes
    if len(o.split) == 1:
        per_dim = {o.split[0]: list(axes)}
    elif len(o.split) == len(axes):
        per_dim = {d: [a] for d, a in zip(o.split, axes)}
    else:
        raise BenchError(f"--split: {len(o.split)} dims need one mesh axis each, but --mesh-axes gives "
                         f"{len(axes)} ({','.join(map(str, axes))})")
    split_axes = [per_dim.get(d, []) for d in range(max(o.split) + 1)]
    s = Sharding(mesh, split_axes, halo_sizes=[1, 1] * len(o.split))
    s.check_shape(shape)
    # Expected buffer: every cell inside the domain holds its global value, the rest 0.
    owned = s.shard_slices(shape)
    idx, inside = [], []
    for d, sl in enumerate(owned):
        lo, hi = s.halo_widths(d)
        i = np.arange(sl.start - lo, sl.stop + hi)
        inside.append((i >= 0) & (i < shape[d]))
        idx.append(np.clip(i, 0, shape[d] - 1))
    lin = np.ravel_multi_index(np.ix_(*idx), shape)
    want = _global_values(lin, dtype)
    mask = np.ones(want.shape, bool)
    for d, m in enumerate(inside):  # (np.ix_ would turn bool arrays into indices)
        mask &= m.reshape([-1 if e == d else 1 for e in range(len(shape))])
    want[~mask] = 0
    del lin
    interior = tuple(slice(s.halo_widths(d)[0], s.halo_widths(d)[0] + (sl.stop - sl.start))
                     for d, sl in enumerate(owned))
    start = np.zeros_like(want)
    start[interior] = want[interior]
    x = start.copy()
    ex = HaloExchange(x, s, shape)
    plan = ex.plan
    comm = mesh.group(tuple(range(mesh.ndim)))  # the communicator the exchange uses
    reqs, pack, unpack = [], [], []
    for m in plan.recvs:
        view = x[m.recv_box]
        buf = view if view.flags.c_contiguous else np.empty(view.shape, dtype)
        if buf is not view:
            unpack.append((view, buf))
        reqs.append(comm.Recv_init([buf.reshape(-1).view(np.uint8), MPI.BYTE], m.peer, m.recv_tag))
    for m in plan.sends:
        view = x[m.send_box]
        buf = view if view.flags.c_contiguous else np.empty(view.shape, dtype)
        if buf is not view:
            pack.append((buf, view))
        reqs.append(comm.Send_init([buf.reshape(-1).view(np.uint8), MPI.BYTE], m.peer, m.send_tag))
    local = [(x[r], x[sl]) for r, sl in plan.local_copies]
    startall, waitall, copyto = MPI.Prequest.Startall, MPI.Request.Waitall, np.copyto

    def raw():
        for d, src in pack:
            copyto(d, src)
        if reqs:
            startall(reqs)
        for d, src in local:
            copyto(d, src)
        if reqs:
            waitall(reqs)
        for d, src in unpack:
            copyto(d, src)
        return x

    def check(a, b):
        return bool(np.array_equal(a, want) and np.array_equal(b, want))

    sent = sum(x[m.send_box].nbytes for m in plan.sends)
    size = mesh.comm.allreduce(sent, op=MPI.MAX)

    def fresh(fn):
        def run():
            np.copyto(x, start)
            return fn().copy()
        return run

    def free():
        ex.free()
        for r in reqs:
            r.Free()

    return Case(size, ex, raw, check, free=free, check_calls=(fresh(ex), fresh(raw)),
                label=f"halo {'x'.join(map(str, shape))} split_axes {split_axes}, halo width 1")


def _reshard_case(mesh, o):
    from mpi4py import MPI

    from ..reshard import exchange_recvs, exchange_sends, execute_reshard, plan_reshard
    from ..sharding.spec import Sharding

    shape, dtype = o.shape, o.dtype
    src, dst = Sharding(mesh, o.src), Sharding(mesh, o.dst)
    src.check_shape(shape)
    dst.check_shape(shape)
    plan = plan_reshard(src, dst, shape)
    rank = mesh.rank

    def block(s):
        sl = s.shard_slices(shape)
        idx = np.ix_(*[np.arange(q.start, q.stop) for q in sl])
        return _global_values(np.ravel_multi_index(idx, shape), dtype)

    x = block(src)
    want = block(dst)
    out = np.empty_like(want)
    raw_out = np.empty_like(want)
    have = [q.start for q in src.shard_slices(shape)]
    need = [q.start for q in dst.shard_slices(shape)]

    def local(box, origin):
        return tuple(slice(b0 - o0, b1 - o0) for (b0, b1), o0 in zip(box, origin))

    n, item = mesh.size, dtype.itemsize
    sends = sorted(exchange_sends(src, dst, shape, rank))
    recvs = sorted(exchange_recvs(src, dst, shape, rank))
    scount, rcount = [0] * n, [0] * n
    for d, box in sends:
        scount[d] += math.prod(b - a for a, b in box) * item
    for s_, box in recvs:
        rcount[s_] += math.prod(b - a for a, b in box) * item
    sdispl = [sum(scount[:i]) for i in range(n)]
    rdispl = [sum(rcount[:i]) for i in range(n)]
    sbuf = np.empty(sum(scount), np.uint8)
    rbuf = np.empty(sum(rcount), np.uint8)
    pack, unpack, pos = [], [], {}
    for d, box in sends:
        view = x[local(box, have)]
        p = sdispl[d] + pos.get(("s", d), 0)
        pos[("s", d)] = pos.get(("s", d), 0) + view.nbytes
        pack.append((sbuf[p:p + view.nbytes].view(dtype).reshape(view.shape), view))
    for s_, box in recvs:
        view = raw_out[local(box, need)]
        p = rdispl[s_] + pos.get(("r", s_), 0)
        pos[("r", s_)] = pos.get(("r", s_), 0) + view.nbytes
        unpack.append((view, rbuf[p:p + view.nbytes].view(dtype).reshape(view.shape)))
    comm = mesh.comm
    copyto = np.copyto

    def raw():
        for d, s_ in pack:
            copyto(d, s_)
        comm.Alltoallv([sbuf, (scount, sdispl), MPI.BYTE], [rbuf, (rcount, rdispl), MPI.BYTE])
        for d, s_ in unpack:
            copyto(d, s_)
        return raw_out

    sent = sum(c for d, c in enumerate(scount) if d != rank)
    size = comm.allreduce(sent, op=MPI.MAX)
    steps = ", ".join(st.op for st in plan.steps) or "none"
    case = Case(size, lambda: execute_reshard(plan, x, mesh, out=out), raw,
                lambda a, b: _same(a, want) and _same(b, want),
                label=f"reshard {'x'.join(map(str, shape))} {list(map(list, o.src))} -> "
                      f"{list(map(list, o.dst))} (steps: {steps})")
    return case
