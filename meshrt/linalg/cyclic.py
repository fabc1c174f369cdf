"""Matrices in the 2-D block-cyclic layout on a process grid, and the exchanges that enter and leave it.

A `CyclicMatrix` is a `BlockCyclic` layout, the `ProcessGrid` it lives on (a ``Pr x Pc`` `Mesh` over the
tensor's communicator, with its row and column communicators) and this process's column-major local
matrix. `to_cyclic` takes a `DistributedTensor` of any sharding into it in rounds of point-to-point
messages (each element sent once, by the one process that writes it); `CyclicMatrix.to_tensor` takes it
back out to any sharding the same way. A replicated tensor enters without communication.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> t = DistributedTensor.from_global(np.arange(20.0).reshape(4, 5), Sharding(Mesh((-1,)), [[0]]))
>>> a = to_cyclic(t, block=2)
>>> str(a.layout)
'block_cyclic<4x5, block 2x2, grid 1x1>'
>>> bool(np.array_equal(a.to_tensor(t.sharding).gather(), t.gather()))
True
"""

from __future__ import annotations

import mmap

import numpy as np
from mpi4py import MPI

from ..mesh import Mesh
from ..runtime import mpi as _mpi
from ..sharding.chunks import writer_of_block
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor
from .blockcyclic import BlockCyclic, local_index

__all__ = ["ProcessGrid", "CyclicMatrix", "to_cyclic", "process_grid", "lazy_zeros", "give_back"]

#: triangles an exchange can be limited to (`_exchange`)
TRIANGLES = (None, "lower", "upper")

#: below this many bytes `lazy_zeros` is `np.zeros`: a mapping of its own costs more than it saves
_LAZY_BYTES = 1 << 20


def lazy_zeros(shape, dtype, order="C", *, huge=False) -> np.ndarray:
    """Zeros whose memory the kernel provides only where they are written, a page at a time, on a
    private anonymous mapping of their own (whose pages `give_back` can return early).

    Small pages by default (4 KiB): a triangle written into a matrix costs the pages it covers, about
    half, in resident memory and first-touch time (numpy asks for transparent huge pages, and then a write
    anywhere in 2 MiB costs the whole 2 MiB). ``huge``: ask for huge pages, as numpy does, for a matrix
    that will be written whole (first touch 0.10 s a 256 MiB share here, against 0.18 s in small pages;
    on a fragmented machine the first huge pages wait for the kernel to compact memory). The mapping
    goes when the array and its views do.

    >>> z = lazy_zeros((512, 1024), np.float64, order="F")
    >>> z.shape, z.flags.f_contiguous, z.flags.writeable, float(z.sum())
    ((512, 1024), True, True, 0.0)
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if nbytes < _LAZY_BYTES or not hasattr(mmap, "MAP_PRIVATE"):  # (small, or not a POSIX system)
        return np.zeros(shape, dtype, order=order)
    pages = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE)
    if huge and hasattr(mmap, "MADV_HUGEPAGE"):
        pages.madvise(mmap.MADV_HUGEPAGE)
    return np.frombuffer(pages, dtype).reshape(shape, order=order)


def give_back(x: np.ndarray, lo: int, hi: int) -> bool:
    """Return the memory pages wholly inside bytes ``lo:hi`` of ``x`` (a `lazy_zeros` array or a view of
    one) to the kernel now; they read as zeros afterwards. False, and nothing done, for any other array.

    >>> z = lazy_zeros((1024, 1024), np.float64, order="F")
    >>> z[:] = 1.0
    >>> give_back(z, 0, z.nbytes), float(z[:, :512].sum()), give_back(np.ones(4), 0, 32)
    (True, 0.0, False)
    """
    root = x
    while isinstance(root.base, np.ndarray):
        root = root.base
    pages = root.base.obj if isinstance(root.base, memoryview) else root.base  # (np.frombuffer's view)
    if not isinstance(pages, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return False
    offset = x.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    first = -(-(offset + lo) // mmap.PAGESIZE) * mmap.PAGESIZE
    end = min(len(pages), (offset + hi) // mmap.PAGESIZE * mmap.PAGESIZE)
    if end > first:
        pages.madvise(mmap.MADV_DONTNEED, first, end - first)
    return True

_GRIDS: dict = {}


class ProcessGrid:
    """``Pr x Pc`` processes of a communicator (process ``(r, c)`` is rank ``r * Pc + c``), with the
    communicators of its process rows (``row``, rank ``c``) and columns (``col``, rank ``r``). Made once per
    communicator and shape (`process_grid`); its communicators are freed with the grid's `Mesh` at exit."""

    def __init__(self, comm, shape):
        self.shape = tuple(shape)
        self.mesh = Mesh(self.shape, ("prow", "pcol"), comm=comm)
        self.comm = self.mesh.group()
        self.coords = tuple(self.mesh.coords)
        self.row = self.mesh.group(["pcol"])  # my process row: the processes (r, 0 .. Pc-1)
        self.col = self.mesh.group(["prow"])  # my process column: the processes (0 .. Pr-1, c)

    @property
    def nprocs(self) -> int:
        return self.shape[0] * self.shape[1]


def process_grid(mesh, shape) -> ProcessGrid:
    """The `ProcessGrid` of ``shape`` over ``mesh``'s communicator (cached)."""
    key = (id(mesh.comm), tuple(shape))
    hit = _GRIDS.get(key)
    if hit is None or hit[0] is not mesh.comm:
        hit = _GRIDS[key] = (mesh.comm, ProcessGrid(mesh.comm, shape))
    return hit[1]


class CyclicMatrix:
    """This process's part of a block-cyclic matrix: ``local`` (column-major, `BlockCyclic.local_shape`
    of this process) on ``grid``; ``mesh`` is the mesh of the tensors it came from and goes back to."""

    __slots__ = ("layout", "grid", "local", "mesh")

    def __init__(self, layout: BlockCyclic, grid: ProcessGrid, local: np.ndarray, mesh):
        self.layout, self.grid, self.local, self.mesh = layout, grid, local, mesh

    @classmethod
    def zeros(cls, layout: BlockCyclic, grid: ProcessGrid, dtype, mesh) -> "CyclicMatrix":
        return cls(layout, grid, lazy_zeros(layout.local_shape(grid.coords), dtype, order="F", huge=True), mesh)

    @classmethod
    def identity(cls, layout: BlockCyclic, grid: ProcessGrid, dtype, mesh) -> "CyclicMatrix":
        a = cls.zeros(layout, grid, dtype, mesh)
        rows, cols = a.rows(), a.cols()
        hit = np.intersect1d(rows, cols)
        a.local[local_index(hit, layout.block[0], layout.grid[0]), local_index(hit, layout.block[1],
                                                                               layout.grid[1])] = 1
        return a

    @property
    def shape(self) -> tuple:
        return self.layout.shape

    @property
    def dtype(self):
        return self.local.dtype

    def rows(self, start: int = 0) -> np.ndarray:
        """The global rows of ``local``'s rows (from global row ``start``)."""
        return self.layout.global_rows(self.grid.coords[0], start)

    def cols(self, start: int = 0) -> np.ndarray:
        return self.layout.global_cols(self.grid.coords[1], start)

    def like(self, local: np.ndarray | None = None) -> "CyclicMatrix":
        return CyclicMatrix(self.layout, self.grid, self.local.copy(order="F") if local is None else local,
                            self.mesh)

    def to_tensor(self, sharding: Sharding, shape=None, *, triangle=None, consume=False,
                  out: DistributedTensor | None = None) -> DistributedTensor:
        """The matrix (or its leading ``shape`` part) as a `DistributedTensor` of ``sharding`` (no halos, not
        partial; on ``self.mesh``). ``triangle="lower"`` (``"upper"``): the matrix is that triangle, the rest
        zero: only the triangle moves (`_exchange`), into a `lazy_zeros` tensor whose other pages are
        never touched; values above (below) the diagonal in the layout are not read. ``consume``: the
        matrix is not used again, and its memory goes back to the system round by round as it leaves
        (`give_back`; it reads as zeros after), so leaving the layout needs little more than the result.
        ``out``: a tensor of that sharding, shape and dtype to write it into instead (its blocks
        overwritten; across a ``triangle``'s diagonal, zeroed), returned."""
        if triangle not in TRIANGLES:
            raise ValueError(f"triangle: expected one of {TRIANGLES}, got {triangle!r}")
        lay = self.layout
        shape = lay.shape if shape is None else tuple(shape)
        given = out is not None
        if given:
            if out.sharding != sharding or out.shape != shape or out.dtype != self.dtype:
                raise ValueError(f"out: a tensor of shape {shape}, dtype {self.dtype} and sharding {sharding} "
                                 f"expected, got {out.shape}, {out.dtype}, {out.sharding}")
        elif triangle is None:
            out = DistributedTensor.empty(shape, sharding, self.dtype)
        else:
            out = DistributedTensor.from_local(lazy_zeros(sharding.local_shape(shape), self.dtype), sharding, shape)
        mesh = sharding.mesh
        comm = self.grid.comm
        my_rows, my_cols = self.rows(), self.cols()
        # what I send to each device: my rows and cols inside its block, in global order
        sends = []
        me, mine = comm.Get_rank(), None
        for d in range(mesh.size):
            rs, cs = sharding.shard_slices(shape, d)
            rpos = np.flatnonzero((my_rows >= rs.start) & (my_rows < rs.stop))
            cpos = np.flatnonzero((my_cols >= cs.start) & (my_cols < cs.stop))
            if rpos.size and cpos.size and d != me:
                sends.append((d, rpos, cpos, my_cols[cpos], my_rows[rpos]))
            elif rpos.size and cpos.size:
                mine = (rpos, cpos)
        # what each grid process sends me: its rows and cols inside my block
        rs, cs = out.shard_slices
        block = out._interior
        recvs, own = [], None
        for q in range(lay.nprocs):
            pr, pc = lay.coords(q)
            grow = lay.global_rows(pr)
            gcol = lay.global_cols(pc)
            grow = grow[(grow >= rs.start) & (grow < rs.stop)]  # my block lies inside ``shape``
            gcol = gcol[(gcol >= cs.start) & (gcol < cs.stop)]
            if grow.size and gcol.size and q != me:
                recvs.append((q, grow - rs.start, gcol - cs.start, gcol, grow))
            elif grow.size and gcol.size and mine is not None:  # my own part: copied, not sent
                own = (grow - rs.start, gcol - cs.start, *mine, gcol, grow)
        _exchange(comm, self.local, sends, block, recvs, shape, "CyclicMatrix.to_tensor", own, triangle,
                  my_cols if consume else None)
        if triangle is not None and given:  # (all across the diagonal: ``out`` held values there)
            zero_across(block, rs.start, cs.start, triangle)
        elif triangle is not None:  # (only the rounds' squares: the rest of a lazy_zeros block is zero)
            _zero_beyond(block, rs.start, cs.start, shape, triangle)
        return out


def _runs(pos: np.ndarray, chunk: int = 0) -> list:
    """``(start, stop, offset)`` of the runs of consecutive values in ascending ``pos`` (``offset``: where the
    run begins in ``pos``), runs longer than ``chunk`` (if given) cut into pieces of ``chunk``."""
    if not pos.size:
        return []
    cut = np.flatnonzero(np.diff(pos) != 1) + 1
    out = []
    for b, e in zip(np.concatenate([[0], cut]).tolist(), np.concatenate([cut, [pos.size]]).tolist()):
        step = chunk or (e - b)
        for o in range(b, e, step):
            first = int(pos[o])
            out.append((first, first + min(step, e - o), o))
    return out


#: rows per tile of the packing copies (at most 128 columns): a small tile stays in cache while it is
#: transposed (numpy transposes a whole C-ordered matrix into Fortran order ten times slower than it copies)
_TILE_ROWS = 32


def _pack(src: np.ndarray, rpos: np.ndarray, cpos: np.ndarray, flat: np.ndarray) -> None:
    """``flat`` (1-D, ``rpos.size * cpos.size`` elements) = ``src[np.ix_(rpos, cpos)]`` (ascending positions)
    raveled column-major: copied tile by tile over the runs of consecutive positions (a block-cyclic
    selection is a few long runs), many times faster than fancy indexing and a transposing ravel."""
    out = flat.reshape((rpos.size, cpos.size), order="F")
    rruns = _runs(rpos, _TILE_ROWS)
    for cs, ce, co in _runs(cpos, 128):
        for rs, re, ro in rruns:
            out[ro:ro + re - rs, co:co + ce - cs] = src[rs:re, cs:ce]


def _joint_runs(a: np.ndarray, b: np.ndarray, chunk: int) -> list:
    """``(start in a, start in b, length)`` of the runs where ascending ``a`` and ``b`` both step by one,
    cut into pieces of at most ``chunk``."""
    if not a.size:
        return []
    cut = np.flatnonzero((np.diff(a) != 1) | (np.diff(b) != 1)) + 1
    out = []
    for s, e in zip(np.concatenate([[0], cut]).tolist(), np.concatenate([cut, [a.size]]).tolist()):
        for o in range(s, e, chunk):
            out.append((int(a[o]), int(b[o]), min(chunk, e - o)))
    return out


def _copy(dst: np.ndarray, drpos, dcpos, src: np.ndarray, srpos, scpos) -> None:
    """``dst[np.ix_(drpos, dcpos)] = src[np.ix_(srpos, scpos)]`` (ascending positions, pairwise), tile by
    tile: the part of an exchange that stays on its process, copied without a buffer or MPI."""
    rruns = _joint_runs(drpos, srpos, _TILE_ROWS)
    for dc, sc, m in _joint_runs(dcpos, scpos, 128):
        for dr, sr, n in rruns:
            dst[dr:dr + n, dc:dc + m] = src[sr:sr + n, sc:sc + m]


def _unpack(dst: np.ndarray, rpos: np.ndarray, cpos: np.ndarray, part: np.ndarray) -> None:
    """``dst[np.ix_(rpos, cpos)] = part`` (ascending positions), tile by tile as `_pack`."""
    rruns = _runs(rpos, _TILE_ROWS)
    for cs, ce, co in _runs(cpos, 128):
        for rs, re, ro in rruns:
            dst[rs:re, cs:ce] = part[ro:ro + re - rs, co:co + ce - cs]


#: the tag of `_exchange`'s messages (a round's parts between two processes: one message each way, in order)
_EXCHANGE_TAG = 0x6379


#: the most bytes an exchange's send (or receive) buffer holds at once: a matrix moves in rounds of whole
#: global columns, so entering or leaving the layout needs this much beside the two matrices, not a copy
_ROUND_BYTES = 16 << 20


def exchange_rounds(shape, itemsize: int) -> int:
    """How many rounds (`_exchange`) an ``m x n`` matrix of ``itemsize``-byte elements moves in: column
    ranges of at most `_ROUND_BYTES` of ``m`` rows each (a global fact, so every process takes part in
    every round).

    >>> exchange_rounds((8192, 8192), 8), exchange_rounds((10, 10), 8), exchange_rounds((10**8, 3), 8)
    (32, 1, 3)
    """
    m, n = shape
    width = max(1, _ROUND_BYTES // max(1, m * itemsize))
    return max(1, -(-n // width)) if n else 1


def round_bounds(shape, itemsize: int) -> list:
    """The global columns where each round of `_exchange` starts, and ``n``.

    >>> round_bounds((4, 10), 8), len(round_bounds((8192, 8192), 8))
    ([0, 10], 33)
    """
    rounds = exchange_rounds(shape, itemsize)
    return [round(shape[1] * i / rounds) for i in range(rounds + 1)]


def _rows_in_round(grows: np.ndarray, bounds, k: int, triangle) -> slice:
    """Which of a part's rows (ascending global rows ``grows``) move in round ``k``: all, or for a
    ``triangle`` those that meet it in the round's columns (a lower triangle's rows from the round's
    first column on; an upper one's before its last)."""
    if triangle == "lower":
        return slice(int(np.searchsorted(grows, bounds[k])), grows.size)
    if triangle == "upper":
        return slice(0, int(np.searchsorted(grows, bounds[k + 1])))
    return slice(0, grows.size)


def _exchange(comm, src, sends, dst, recvs, shape, what, own=None, triangle=None, release=None) -> None:
    """Move the parts of an exchange between processes, round by round over global column ranges.

    ``sends``: ``(dest, rpos, cpos, gcols, grows)``, ``src[np.ix_(rpos, cpos)]`` goes to ``dest`` (``gcols``,
    ``grows``: the global columns of ``cpos`` and rows of ``rpos``, ascending); ``recvs``: ``(source, rpos,
    cpos, gcols, grows)``, what ``source`` sends lands in ``dst[np.ix_(rpos, cpos)]``; ``own``: ``(drpos,
    dcpos, srpos, scpos, gcols, grows)``, the part that stays here, copied. Each round moves the parts'
    columns in its range, one message to each process that has a part of them (posted first; the part that
    stays is copied while they travel: 0.25 -> 0.16 s entering the layout at N = 8192 on 2 processes,
    against an ``Alltoallv`` after the copy), through two buffers reused by every round (`_ROUND_BYTES`
    each at most, or one column). ``triangle`` (``"lower"``/``"upper"``): of a round's columns only the
    rows that meet that triangle move (`_rows_in_round`): about half the matrix, plus the rounds' diagonal squares.
    ``release``: the global columns of column-major ``src``'s columns; each round's are given back to the
    system once sent (`give_back`)."""
    dtype = dst.dtype
    bounds = round_bounds(shape, dtype.itemsize)
    rounds = len(bounds) - 1
    size = comm.Get_size()

    def cuts(parts):  # per part, where each round's columns start in its gcols
        return [np.searchsorted(p[3], bounds) for p in parts]

    scuts, rcuts = cuts(sends), cuts(recvs)
    sbuf = np.empty(max(1, _round_total(sends, scuts, rounds)), dtype)
    rbuf = np.empty(max(1, _round_total(recvs, rcuts, rounds)), dtype)
    scount, rcount = np.zeros(size, np.int64), np.zeros(size, np.int64)
    ocut = None if own is None else np.searchsorted(own[4], bounds)
    if release is not None and src.flags.f_contiguous:  # each round's columns are one byte range of src
        released = np.searchsorted(release, bounds) * (src.shape[0] * src.itemsize)
    else:
        released = None
    for k in range(rounds):
        scount[:] = 0
        rcount[:] = 0
        srows = [_rows_in_round(p[4], bounds, k, triangle) for p in sends]
        rrows = [_rows_in_round(p[4], bounds, k, triangle) for p in recvs]
        for (d, *_), c, r in zip(sends, scuts, srows):
            scount[d] = (r.stop - r.start) * int(c[k + 1] - c[k])
        for (q, *_), c, r in zip(recvs, rcuts, rrows):
            rcount[q] = (r.stop - r.start) * int(c[k + 1] - c[k])
        soff = np.concatenate([[0], np.cumsum(scount)])
        roff = np.concatenate([[0], np.cumsum(rcount)])
        with _mpi.internal(what, "the block-cyclic exchange", comm):
            reqs = [comm.Irecv(rbuf[roff[q]:roff[q + 1]], q, _EXCHANGE_TAG) for q, *_ in recvs if rcount[q]]
        for (d, rpos, cpos, *_), c, r in zip(sends, scuts, srows):
            if scount[d]:
                part = sbuf[soff[d]:soff[d + 1]]
                _pack(src, rpos[r], cpos[c[k]:c[k + 1]], part)
                with _mpi.internal(what, "the block-cyclic exchange", comm):
                    reqs.append(comm.Isend(part, d, _EXCHANGE_TAG))
        if own is not None and ocut[k + 1] > ocut[k]:  # (while the parts travel)
            drpos, dcpos, srpos, scpos, _, grows = own
            r = _rows_in_round(grows, bounds, k, triangle)
            cols = slice(ocut[k], ocut[k + 1])
            _copy(dst, drpos[r], dcpos[cols], src, srpos[r], scpos[cols])
        with _mpi.internal(what, "the block-cyclic exchange", comm):
            MPI.Request.Waitall(reqs)
        if released is not None:
            give_back(src, int(released[k]), int(released[k + 1]))
        for (q, rpos, cpos, *_), c, r in zip(recvs, rcuts, rrows):
            if rcount[q]:
                part = rbuf[roff[q]:roff[q + 1]].reshape((r.stop - r.start, int(c[k + 1] - c[k])), order="F")
                _unpack(dst, rpos[r], cpos[c[k]:c[k + 1]], part)


def _zero_beyond(block: np.ndarray, row0: int, col0: int, shape, triangle) -> None:
    """Zero what a ``triangle`` exchange brought beside the triangle into ``block`` (global rows and columns
    from ``row0``, ``col0``): the elements across the diagonal in each round's square (`zero_across` on
    each; the rest of a `lazy_zeros` block is zero already, and its pages stay untouched)."""
    bounds = round_bounds(shape, block.dtype.itemsize)
    for c0, c1 in zip(bounds[:-1], bounds[1:]):
        r0, r1 = max(c0, row0), min(c1, row0 + block.shape[0])
        k0, k1 = max(c0, col0), min(c1, col0 + block.shape[1])
        if r0 < r1 and k0 < k1:
            zero_across(block[r0 - row0:r1 - row0, k0 - col0:k1 - col0], r0, k0, triangle)


def zero_across(block: np.ndarray, row0: int, col0: int, triangle) -> None:
    """Zero the elements of ``block`` (global rows from ``row0``, columns from ``col0``) strictly across the
    diagonal from ``triangle``: above it for ``"lower"``, below it for ``"upper"``; row by row.

    >>> b = np.ones((2, 4)); zero_across(b, 1, 0, "lower"); b.tolist()
    [[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 0.0]]
    >>> b = np.ones((2, 4)); zero_across(b, 1, 0, "upper"); b.tolist()
    [[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
    """
    n = block.shape[1]
    for i in range(block.shape[0]):
        d = row0 + i - col0  # (the diagonal's column in this row, in the block)
        if triangle == "lower":
            block[i, min(max(d + 1, 0), n):] = 0
        else:
            block[i, :min(max(d, 0), n)] = 0


def _round_total(parts, cuts, rounds) -> int:
    """The most elements any one round moves over ``parts``."""
    best = 0
    for k in range(rounds):
        best = max(best, sum(p[1].size * int(c[k + 1] - c[k]) for p, c in zip(parts, cuts)))
    return best


def _plain(t: DistributedTensor) -> DistributedTensor:
    s = t.sharding
    if s.is_partial or s.halo_sizes:
        return t.reshard(s.replace(partial_axes=(), halo_sizes=None))
    return t


def to_cyclic(t: DistributedTensor, *, block=None, grid=None, dtype=None, triangle=None) -> CyclicMatrix:
    """The 2-D tensor ``t`` as a `CyclicMatrix` over all processes of its mesh (`BlockCyclic.default`
    layout unless ``block``/``grid`` are given; ``dtype``: convert on the way). ``triangle="lower"``
    (``"upper"``): only that triangle is read (Cholesky's and ``eigh``'s input), and moved (`_exchange`):
    the local matrix is `lazy_zeros`, so what lies beyond the rounds' diagonal squares is zero and costs
    no memory until written."""
    if not isinstance(t, DistributedTensor) or t.ndim != 2:
        raise ValueError(f"to_cyclic: a 2-D DistributedTensor expected, got "
                         f"{getattr(t, 'shape', type(t).__name__)}")
    if triangle not in TRIANGLES:
        raise ValueError(f"triangle: expected one of {TRIANGLES}, got {triangle!r}")
    t = _plain(t)
    mesh = t.mesh
    layout = BlockCyclic.default(t.shape, mesh.size, block, grid)
    pgrid = process_grid(mesh, layout.grid)
    dtype = np.dtype(t.dtype if dtype is None else dtype)
    me_coords = pgrid.coords
    my_rows, my_cols = layout.global_rows(me_coords[0]), layout.global_cols(me_coords[1])
    s = t.sharding
    if not any(s.split_axes):  # replicated: every process has the whole matrix
        local = np.asarray(t._interior[np.ix_(my_rows, my_cols)], dtype=dtype, order="F")
        return CyclicMatrix(layout, pgrid, local, mesh)
    comm = pgrid.comm
    shape = t.shape
    # I send the part of my block that each grid process holds (if I write my block)
    sends = []
    me, mine = comm.Get_rank(), None
    if writer_of_block(s):
        rs, cs = t.shard_slices
        rows = np.arange(rs.start, rs.stop)
        cols = np.arange(cs.start, cs.stop)
        rown = layout.row_owner(rows)
        coln = layout.col_owner(cols)
        for q in range(layout.nprocs):
            pr, pc = layout.coords(q)
            rpos, cpos = np.flatnonzero(rown == pr), np.flatnonzero(coln == pc)
            if rpos.size and cpos.size and q != me:
                sends.append((q, rpos, cpos, cols[cpos], rows[rpos]))
            elif rpos.size and cpos.size:
                mine = (rpos, cpos)
    local_shape = layout.local_shape(me_coords)
    # on a mapping of its own, whose pages can go back as it leaves (to_tensor's consume)
    local = lazy_zeros(local_shape, dtype, "F", huge=triangle is None)
    # I receive from each writing device the part of its block I hold
    recvs, own = [], None
    for d in range(mesh.size):
        if not writer_of_block(s, d):
            continue
        rs, cs = s.shard_slices(shape, d)
        grow = my_rows[(my_rows >= rs.start) & (my_rows < rs.stop)]
        gcol = my_cols[(my_cols >= cs.start) & (my_cols < cs.stop)]
        lrow = local_index(grow, layout.block[0], layout.grid[0])
        lcol = local_index(gcol, layout.block[1], layout.grid[1])
        if grow.size and gcol.size and d != me:
            recvs.append((d, lrow, lcol, gcol, grow))
        elif grow.size and gcol.size and mine is not None:  # my own part: copied, not sent
            own = (lrow, lcol, *mine, gcol, grow)
    _exchange(comm, np.asarray(t._interior), sends, local, recvs, shape, "to_cyclic", own, triangle)
    return CyclicMatrix(layout, pgrid, local, mesh)
