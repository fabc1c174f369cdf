"""Matrices in the 2-D block-cyclic layout on a process grid, and the exchanges that enter and leave it.

A `CyclicMatrix` is a `BlockCyclic` layout, the `ProcessGrid` it lives on (a ``Pr x Pc`` `Mesh` over the
tensor's communicator, with its row and column communicators) and this process's column-major local
matrix. `to_cyclic` takes a `DistributedTensor` of any sharding into it with one ``Alltoallv`` (each
element sent once, by the one process that writes it); `CyclicMatrix.to_tensor` takes it back out to any
sharding the same way. A replicated tensor enters without communication.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> t = DistributedTensor.from_global(np.arange(20.0).reshape(4, 5), Sharding(Mesh((-1,)), [[0]]))
>>> a = to_cyclic(t, block=2)
>>> str(a.layout)
'block_cyclic<4x5, block 2x2, grid 1x1>'
>>> bool(np.array_equal(a.to_tensor(t.sharding).gather(), t.gather()))
True
"""

from __future__ import annotations

import numpy as np

from ..mesh import Mesh
from ..runtime import mpi as _mpi
from ..sharding.chunks import writer_of_block
from ..sharding.spec import Sharding
from ..tensor.distributed_tensor import DistributedTensor
from .blockcyclic import BlockCyclic, local_index

__all__ = ["ProcessGrid", "CyclicMatrix", "to_cyclic", "process_grid"]

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
        return cls(layout, grid, np.zeros(layout.local_shape(grid.coords), dtype, order="F"), mesh)

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

    def to_tensor(self, sharding: Sharding, shape=None) -> DistributedTensor:
        """The matrix (or its leading ``shape`` part) as a `DistributedTensor` of ``sharding`` (no halos, not
        partial; on ``self.mesh``)."""
        lay = self.layout
        shape = lay.shape if shape is None else tuple(shape)
        out = DistributedTensor.empty(shape, sharding, self.dtype)
        mesh = sharding.mesh
        comm = self.grid.comm
        my_rows, my_cols = self.rows(), self.cols()
        # what I send to each device: my rows and cols inside its block, in global order
        sends, scount = [], np.zeros(comm.Get_size(), np.int64)
        me, mine = comm.Get_rank(), None
        for d in range(mesh.size):
            rs, cs = sharding.shard_slices(shape, d)
            rpos = np.flatnonzero((my_rows >= rs.start) & (my_rows < rs.stop))
            cpos = np.flatnonzero((my_cols >= cs.start) & (my_cols < cs.stop))
            if rpos.size and cpos.size and d != me:
                sends.append((d, rpos, cpos))
                scount[d] = rpos.size * cpos.size
            elif rpos.size and cpos.size:
                mine = (rpos, cpos)
        # what each grid process sends me: its rows and cols inside my block
        rs, cs = out.shard_slices
        recv_parts, rcount = [], np.zeros(comm.Get_size(), np.int64)
        for q in range(lay.nprocs):
            pr, pc = lay.coords(q)
            grow = lay.global_rows(pr)
            gcol = lay.global_cols(pc)
            grow = grow[(grow >= rs.start) & (grow < rs.stop)]  # my block lies inside ``shape``
            gcol = gcol[(gcol >= cs.start) & (gcol < cs.stop)]
            if grow.size and gcol.size and q != me:
                recv_parts.append((q, grow, gcol))
                rcount[q] = grow.size * gcol.size
            elif grow.size and gcol.size and mine is not None:  # my own part: copied, not sent
                _copy(out._interior, grow - rs.start, gcol - cs.start, self.local, *mine)
        sbuf = _packed(self.local, sends, scount, self.dtype)
        rbuf = np.empty(int(rcount.sum()), self.dtype)
        _alltoallv(comm, sbuf, scount, rbuf, rcount, "CyclicMatrix.to_tensor")
        block = out._interior
        offs = np.concatenate([[0], np.cumsum(rcount)])
        for q, grow, gcol in recv_parts:
            part = rbuf[offs[q]:offs[q + 1]].reshape((grow.size, gcol.size), order="F")
            _unpack(block, grow - rs.start, gcol - cs.start, part)
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


def _packed(src: np.ndarray, sends: list, scount: np.ndarray, dtype) -> np.ndarray:
    """The send buffer of an exchange: for each ``(dest, rpos, cpos)`` of ``sends`` (ascending ``dest``),
    ``src``'s selection `_pack`-ed straight into its place (no per-destination copies to concatenate)."""
    sbuf = np.empty(int(scount.sum()), dtype)
    offs = np.concatenate([[0], np.cumsum(scount)])
    for d, rpos, cpos in sends:
        _pack(src, rpos, cpos, sbuf[offs[d]:offs[d + 1]])
    return sbuf


def _unpack(dst: np.ndarray, rpos: np.ndarray, cpos: np.ndarray, part: np.ndarray) -> None:
    """``dst[np.ix_(rpos, cpos)] = part`` (ascending positions), tile by tile as `_pack`."""
    rruns = _runs(rpos, _TILE_ROWS)
    for cs, ce, co in _runs(cpos, 128):
        for rs, re, ro in rruns:
            dst[rs:re, cs:ce] = part[ro:ro + re - rs, co:co + ce - cs]


def _alltoallv(comm, sbuf, scount, rbuf, rcount, what):
    sdisp = np.concatenate([[0], np.cumsum(scount)[:-1]])
    rdisp = np.concatenate([[0], np.cumsum(rcount)[:-1]])
    with _mpi.internal(what, "the block-cyclic exchange", comm):
        comm.Alltoallv([sbuf, (scount, sdisp)], [rbuf, (rcount, rdisp)])


def _plain(t: DistributedTensor) -> DistributedTensor:
    s = t.sharding
    if s.is_partial or s.halo_sizes:
        return t.reshard(s.replace(partial_axes=(), halo_sizes=None))
    return t


def to_cyclic(t: DistributedTensor, *, block=None, grid=None, dtype=None) -> CyclicMatrix:
    """The 2-D tensor ``t`` as a `CyclicMatrix` over all processes of its mesh (`BlockCyclic.default`
    layout unless ``block``/``grid`` are given; ``dtype``: convert on the way)."""
    if not isinstance(t, DistributedTensor) or t.ndim != 2:
        raise ValueError(f"to_cyclic: a 2-D DistributedTensor expected, got "
                         f"{getattr(t, 'shape', type(t).__name__)}")
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
    sends, scount = [], np.zeros(layout.nprocs, np.int64)
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
                sends.append((q, rpos, cpos))
                scount[q] = rpos.size * cpos.size
            elif rpos.size and cpos.size:
                mine = (rpos, cpos)
    local = np.empty(layout.local_shape(me_coords), dtype, order="F")
    # I receive from each writing device the part of its block I hold
    recv_parts, rcount = [], np.zeros(layout.nprocs, np.int64)
    for d in range(mesh.size):
        if not writer_of_block(s, d):
            continue
        rs, cs = s.shard_slices(shape, d)
        grow = my_rows[(my_rows >= rs.start) & (my_rows < rs.stop)]
        gcol = my_cols[(my_cols >= cs.start) & (my_cols < cs.stop)]
        if grow.size and gcol.size and d != me:
            recv_parts.append((d, grow, gcol))
            rcount[d] = grow.size * gcol.size
        elif grow.size and gcol.size and mine is not None:  # my own part: copied, not sent
            _copy(local, local_index(grow, layout.block[0], layout.grid[0]),
                  local_index(gcol, layout.block[1], layout.grid[1]), t._interior, *mine)
    sbuf = _packed(t._interior, sends, scount, dtype)
    rbuf = np.empty(int(rcount.sum()), dtype)
    _alltoallv(comm, sbuf, scount, rbuf, rcount, "to_cyclic")
    offs = np.concatenate([[0], np.cumsum(rcount)])
    for d, grow, gcol in recv_parts:
        part = rbuf[offs[d]:offs[d + 1]].reshape((grow.size, gcol.size), order="F")
        _unpack(local, local_index(grow, layout.block[0], layout.grid[0]),
                local_index(gcol, layout.block[1], layout.grid[1]), part)
    return CyclicMatrix(layout, pgrid, local, mesh)
