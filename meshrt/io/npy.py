"""Parallel checkpoints: one standard ``.npy`` file per tensor, written and read with MPI-IO.

Every process writes its owned block (never its halos) straight from its
local buffer through a subarray file view, so the file is exactly what
``numpy.save`` would write for the global array and ``numpy.load`` reads it.
Any sharding, on any number of processes, reads it back.

    >>> write_npy("u.npy", local, sharding, (64, 64))          # doctest: +SKIP
    >>> local, sharding, shape = read_npy("u.npy", other_sharding)  # doctest: +SKIP

Choices:

- Crash safety. A save writes ``<path>.tmp-<random>`` in the same directory,
  syncs it (``MPI_File_sync``), closes it, and only when every process is
  done does rank 0 ``os.replace`` it over ``path`` and fsync the directory.
  A job killed at any point leaves the previous ``path`` whole; a leftover
  ``<path>.tmp-*`` is never read and the next successful save of ``path``
  removes it.
- Replicated dims. Of the devices holding the same block (they differ only on
  mesh axes that split no dim) only the one at coordinate 0 on all those axes
  writes; the others join the collective call with nothing to write.
- Partial tensors are refused: their value is a reduction across devices, so
  reshard to a non-partial sharding (or reduce) first.
- Bytes on disk are the dtype's bytes, any byte order (MPI's ``native``
  representation, elements moved as opaque ``itemsize``-byte units), so every
  dtype numpy can save without pickling works; object dtypes are refused.
  Fortran-order files are read correctly (a Fortran-order file view).
- Errors (bad arguments on some process, a foreign or truncated file, an I/O
  failure) are agreed on collectively before anything can block, and raise
  the same `CheckpointError` on every process: never a hang.
- Several tensors: `save_state` writes a directory holding ``manifest.json``
  and one ``.npy`` per tensor inside a generation folder::

      state/manifest.json            names, shapes, dtypes, shardings, metadata
      state/g000002/u.npy, v.npy     the tensors, each a plain .npy file

  ``manifest.json`` is the commit point: the new generation is written and
  synced first, then the manifest is atomically replaced, then the old
  generation is removed. A crash anywhere leaves either the old state or the
  new one, both complete. (A directory, not an ``.npz``: a zip archive cannot
  be written in parallel at known offsets, and each ``.npy`` stays usable with
  plain numpy.)
"""

from __future__ import annotations

import hashlib
import io as _io
import json
import math
import os
import re
import secrets
import shutil
import tokenize
from collections import namedtuple
from typing import Callable, Mapping

import numpy as np
from mpi4py import MPI
from numpy.lib import format as npformat

from ..runtime import mpi as _mpi
from ..sharding.chunks import writer_of_block
from ..errors import ShardingError
from ..mesh import Mesh
from ..sharding.spec import Sharding

__all__ = [
    "CheckpointError", "write_npy", "read_npy", "save_tensor", "load_tensor",
    "save_state", "load_state", "Loaded", "writer_of_block", "file_view", "FileView",
]

MANIFEST = "manifest.json"
_STATE_FORMAT = "meshrt-state"
_STATE_VERSION = 1
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")


class CheckpointError(ValueError):
    """A checkpoint that cannot be written or read.

    Bad arguments, a foreign, truncated or unsupported file, or an I/O failure.
    Errors are agreed on collectively before anything can block, so the same
    `CheckpointError` is raised on every process: never a hang.  A subclass of
    `ValueError`.

    See Also
    --------
    save_state, load_state

    Examples
    --------
    >>> import tempfile
    >>> from meshrt import Mesh, Sharding
    >>> empty = tempfile.TemporaryDirectory()
    >>> try:
    ...     load_state(empty.name, Sharding(Mesh((-1,)), []))
    ... except CheckpointError as e:
    ...     print(str(e).endswith("it is not a meshrt state directory"))
    True
    >>> empty.cleanup()
    """


class Loaded(namedtuple("Loaded", "local sharding global_shape")):
    """What `read_npy`/`load_state` give without a factory.

    A named tuple ``(local, sharding, global_shape)``: the local buffer (owned
    block filled, halos zeroed), its sharding and the global shape.

    Attributes
    ----------
    local : numpy.ndarray
        This process's C-contiguous buffer of ``sharding.local_shape(global_shape)``.
    sharding : Sharding
        The sharding it was read under.
    global_shape : tuple of int
        The array's global shape.
    periodic : tuple of bool or None
        The per-dim periodic flags `load_state` restored (None when none were
        saved).

    Examples
    --------
    >>> loaded = Loaded(np.zeros(3), None, (3,))
    >>> local, sharding, shape = loaded
    >>> shape, loaded.periodic
    ((3,), None)
    """

    periodic = None

    def __new__(cls, local, sharding, global_shape, periodic=None):
        self = super().__new__(cls, local, sharding, global_shape)
        if periodic is not None:
            self.periodic = periodic
        return self


# -- agreement: decide once, raise everywhere --------------------------------------------
def _agree(comm, problem: str | None, what: str, *, key=None) -> None:
    """Raise the same CheckpointError on every process if any process has a
    problem, or (where ``key`` is given) if the processes' keys differ.

    One small allreduce decides (O(log P)); only when something is wrong are
    the details gathered from every process for the message."""
    fingerprint = 0 if key is None else int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=7).digest(), "little")
    votes = np.array([problem is not None, fingerprint, -fingerprint], np.int64)
    with _mpi.internal(what, "agreement", comm):
        comm.Allreduce(MPI.IN_PLACE, votes, op=MPI.MAX)
        if not votes[0] and votes[1] == -votes[2]:
            return
        votes = comm.allgather((problem, key))
    bad = [(r, p) for r, (p, _) in enumerate(votes) if p is not None]
    if bad:
        ranks = [r for r, _ in bad]
        where = "" if len(ranks) == comm.Get_size() else f" (on process{'es' if len(ranks) > 1 else ''} {ranks})"
        raise CheckpointError(f"{what}: {bad[0][1]}{where}")
    if key is not None and len({k for _, k in votes}) != 1:
        seen = {}
        for r, (_, k) in enumerate(votes):
            seen.setdefault(k, []).append(r)
        detail = "; ".join(f"processes {ranks}: {k}" for k, ranks in seen.items())
        raise CheckpointError(f"{what}: the processes disagree on (dtype, global shape): {detail}")


def _root_decides(comm, fn, what: str):
    """Run ``fn()`` on rank 0 only and broadcast its result; its exception becomes a
    CheckpointError on every process."""
    verdict = None
    if comm.Get_rank() == 0:
        try:
            verdict = (True, fn())
        except Exception as e:  # noqa: BLE001 - any failure is reported everywhere
            verdict = (False, str(e) if isinstance(e, (CheckpointError, ShardingError)) else f"{type(e).__name__}: {e}")
    with _mpi.internal(what, "the root's verdict", comm):
        ok, value = comm.bcast(verdict, root=0)
    if not ok:
        raise CheckpointError(f"{what}: {value}")
    return value


# -- the plan: which block, through which datatypes --------------------------------------
def _comm_of(sharding) -> "MPI.Comm":
    if not isinstance(sharding, Sharding):
        raise CheckpointError(f"sharding: {sharding!r} is not a Sharding")
    if not isinstance(sharding.mesh, Mesh):
        raise CheckpointError(
            f"sharding: its mesh {sharding.mesh!r} is an AbstractMesh; checkpoints need a Mesh bound to processes"
        )
    return sharding.mesh.comm


def _element_type(dtype: np.dtype):
    # Elements travel as opaque itemsize-byte units: any dtype, any byte order,
    # and no conversion by MPI's "native" data representation.
    if dtype.itemsize == 1:
        return MPI.BYTE, False
    return MPI.BYTE.Create_contiguous(dtype.itemsize).Commit(), True


def _subarray(etype, sizes, subsizes, starts, order=MPI.ORDER_C):
    return etype.Create_subarray(list(sizes), list(subsizes), list(starts), order=order).Commit()


FileView = namedtuple("FileView", "starts owned local_shape halo_lo writes")
FileView.__doc__ = """Where a device's owned block lies in the file and in its local buffer, and whether it writes it.

The result of `file_view`; a named tuple.

Attributes
----------
starts : tuple of int
    The owned block's first global index per dim.
owned : tuple of int
    The owned block's extent per dim.
local_shape : tuple of int
    The device's local buffer shape (owned block plus halos).
halo_lo : tuple of int
    Where the owned block starts inside the local buffer (the low halo widths).
writes : bool
    Whether this device writes its block (one writer among replicas).

Examples
--------
>>> from meshrt import AbstractMesh, Sharding
>>> file_view(Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[1, 1]), (5, 3), device=1)
FileView(starts=(2, 0), owned=(3, 3), local_shape=(5, 3), halo_lo=(1, 0), writes=True)
"""


def file_view(sharding: Sharding, global_shape, device=None) -> FileView:
    """The file view of one device: where its owned block lies in the global array.

    Pure arithmetic, no MPI, and independent of the number of devices (it works
    on an `AbstractMesh`).

    Parameters
    ----------
    sharding : Sharding
        The array's sharding.
    global_shape : sequence of int
        The array's global shape.
    device : int or tuple of int, optional
        The device; default this process's (required on an `AbstractMesh`).

    Returns
    -------
    FileView
        ``starts`` and ``owned`` (the block's corner and shape in the global
        array), ``local_shape``, ``halo_lo`` (where the block starts in the local
        buffer) and ``writes`` (whether this device writes the block: one of the
        devices holding a replicated block does).

    Raises
    ------
    ShardingError
        The shape does not fit the sharding.
    MeshError
        No device on an `AbstractMesh`, or a device outside the mesh.

    Examples
    --------
    >>> from meshrt.mesh import AbstractMesh
    >>> file_view(Sharding(AbstractMesh((2, 2)), [[0]], halo_sizes=[1, 1]), (10, 3), device=3)
    FileView(starts=(5, 0), owned=(5, 3), local_shape=(7, 3), halo_lo=(1, 0), writes=False)
    """
    shape = tuple(global_shape)
    if device is None:
        device = sharding.mesh.rank
    slices = sharding.shard_slices(shape, device)
    return FileView(
        tuple(s.start for s in slices), tuple(s.stop - s.start for s in slices), sharding.local_shape(shape, device),
        tuple(sharding.halo_widths(d)[0] for d in range(len(shape))), writer_of_block(sharding, device),
    )


class _Block:
    """This process's owned block of a global array: where it lies in the file and
    in the local buffer, and the datatypes that say so."""

    def __init__(self, sharding: Sharding, global_shape: tuple, dtype: np.dtype, fortran_order=False):
        view = file_view(sharding, global_shape)
        self.global_shape = global_shape
        self.owned = view.owned
        self.local_shape = view.local_shape
        self.halo_lo = view.halo_lo
        self.writes = view.writes
        self.count = math.prod(self.owned)
        self.dtype = dtype
        self.fortran = fortran_order
        self._free = []
        self.etype, owned_etype = _element_type(dtype)
        if owned_etype:
            self._free.append(self.etype)
        self.filetype = None
        self.memtype = None
        # MPI subarrays need every size >= 1: empty blocks and 0-d arrays get none.
        if self.count and len(global_shape):
            self.filetype = _subarray(
                self.etype, global_shape, self.owned, view.starts,
                MPI.ORDER_FORTRAN if fortran_order else MPI.ORDER_C,
            )
            self._free.append(self.filetype)
            if self.local_shape != self.owned and not fortran_order:
                self.memtype = _subarray(self.etype, self.local_shape, self.owned, self.halo_lo)
                self._free.append(self.memtype)

    def interior(self, local: np.ndarray) -> np.ndarray:
        return local[tuple(slice(lo, lo + n) for lo, n in zip(self.halo_lo, self.owned))]

    def free(self):
        for t in self._free:
            t.Free()
        self._free = []


def _header_bytes(global_shape: tuple, dtype: np.dtype) -> bytes:
    d = {"descr": npformat.dtype_to_descr(dtype), "fortran_order": False, "shape": tuple(global_shape)}
    buf = _io.BytesIO()
    try:
        npformat.write_array_header_1_0(buf, d)
    except ValueError:  # a header over 64 KiB (huge structured dtypes) needs format 2.0
        buf = _io.BytesIO()
        npformat.write_array_header_2_0(buf, d)
    return buf.getvalue()


# -- write ----------------------------------------------------------------------------------
def _check_write_args(local, sharding, global_shape):
    """This process's complaint about its arguments, or None; plus normalized values."""
    try:
        shape = sharding.check_shape(global_shape)
    except ShardingError as e:
        return str(e), None, None
    if sharding.is_partial:
        return (
            f"the sharding {sharding} is partial over mesh axes {list(sharding.partial_axes)} "
            f"({sharding.partial_type.value}); a file holds full values: reshard to a non-partial "
            "sharding (or reduce) first"
        ), None, None
    if not isinstance(local, np.ndarray):
        return f"local: {type(local).__name__} is not a numpy array", None, None
    if local.dtype.hasobject:
        return f"dtype: {local.dtype} holds Python objects, which a .npy file cannot hold without pickling", None, None
    want = sharding.local_shape(shape)
    owned = sharding.shard_shape(shape)
    if local.shape not in (want, owned):
        return (
            f"local: shape {local.shape} is neither this device's local buffer shape {want} "
            f"nor its owned block shape {owned} for global shape {shape} under {sharding}"
        ), None, None
    return None, shape, local


def write_npy(path, local: np.ndarray, sharding: Sharding, global_shape) -> None:
    """Write the global array whose shards the processes hold to one ``.npy`` file.

    The file is exactly what ``numpy.save`` writes for the global array.  Halos
    are never written.  The previous ``path``, if any, survives a crash at any
    point (see the module docstring).

    Parameters
    ----------
    path : str or os.PathLike
        The file to write.
    local : numpy.ndarray
        This process's local buffer (owned block plus halos, as
        `Sharding.local_shape`) or its owned block alone.
    sharding : Sharding
        The array's sharding, on a `Mesh`; not partial.
    global_shape : sequence of int
        The array's global shape.

    Raises
    ------
    CheckpointError
        On every process: ``local`` does not fit the sharding, the sharding is
        partial or not on a `Mesh`, the dtype cannot be saved without pickling,
        or the write failed.

    See Also
    --------
    read_npy, save_state, DistributedTensor.save

    Notes
    -----
    Collective over the sharding's mesh; one MPI-IO collective write through a
    subarray file view.  Of the devices holding the same block only one writes.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "u.npy")
    >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]], halo_sizes=[1, 1])
    >>> write_npy(path, np.array([0.0, 1, 2, 3, 4, 0]), s, (4,))   # halos are not written
    >>> np.load(path)
    array([1., 2., 3., 4.])
    >>> tmp.cleanup()
    """
    comm = _comm_of(sharding)
    path = os.fspath(path)
    problem, shape, local = _check_write_args(local, sharding, global_shape)
    key = None if problem else (npformat.dtype_to_descr(local.dtype), shape)
    _agree(comm, problem, f"write_npy({path!r})", key=key)

    dtype = local.dtype
    if local.shape != sharding.local_shape(shape):
        # The owned block alone: give it the halos it lacks so one plan serves both.
        full = np.zeros(sharding.local_shape(shape), dtype)
        halo_lo = [sharding.halo_widths(d)[0] for d in range(len(shape))]
        full[tuple(slice(lo, lo + n) for lo, n in zip(halo_lo, local.shape))] = local
        local = full
    local = np.ascontiguousarray(local)

    def make_tmp():
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise CheckpointError(f"directory {directory!r} does not exist")
        if os.path.isdir(path):
            raise CheckpointError(f"{path!r} is a directory")
        return f"{path}.tmp-{secrets.token_hex(6)}"

    tmp = _root_decides(comm, make_tmp, f"write_npy({path!r})")
    header = _header_bytes(shape, dtype)
    _write_file(comm, tmp, header, local, sharding, shape, dtype, path)
    _commit(comm, tmp, path)


def _write_file(comm, tmp, header, local, sharding, shape, dtype, path):
    block = _Block(sharding, shape, dtype)
    writes = block.writes and block.count > 0
    fh = None
    problem = None
    with _mpi.internal(f"write_npy({path!r})", "file open", comm):
        try:
            fh = MPI.File.Open(comm, tmp, MPI.MODE_WRONLY | MPI.MODE_CREATE | MPI.MODE_EXCL)
        except MPI.Exception as e:
            problem = f"cannot create {tmp!r}: {e.Get_error_string()}"
    _agree(comm, problem, f"write_npy({path!r})")
    with _mpi.internal(f"write_npy({path!r})", "parallel write", comm):
        try:
            fh.Set_size(len(header) + math.prod(shape) * dtype.itemsize)
            if comm.Get_rank() == 0:
                fh.Write_at(0, header)
            if block.filetype is not None:
                fh.Set_view(len(header), block.etype, block.filetype)
            else:
                fh.Set_view(len(header), block.etype, block.etype)
            if not writes:
                fh.Write_all([local, 0, block.etype])
            elif block.memtype is not None:
                fh.Write_all([local, 1, block.memtype])
            else:
                fh.Write_all([local, block.count, block.etype])
            fh.Sync()
        except MPI.Exception as e:
            problem = f"writing {tmp!r} failed: {e.Get_error_string()}"
        finally:
            block.free()
            if fh is not None:
                fh.Close()
    _agree_or_discard(comm, problem, f"write_npy({path!r})", tmp)


def _commit(comm, tmp, path):
    """Every process is done with ``tmp``: rename it over ``path`` (rank 0), durably."""
    with _mpi.internal(f"write_npy({path!r})", "barrier before the commit", comm):
        comm.Barrier()

    def rename():
        os.replace(tmp, path)
        _fsync_dir(os.path.dirname(os.path.abspath(path)))
        _remove_stale_tmps(path, keep=tmp)

    _root_decides(comm, rename, f"write_npy({path!r})")


def _fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_stale_tmps(path, keep):
    directory, base = os.path.split(os.path.abspath(path))
    prefix = base + ".tmp-"
    for name in os.listdir(directory):
        if name.startswith(prefix) and os.path.join(directory, name) != os.path.abspath(keep):
            _unlink_quietly(os.path.join(directory, name))


def _agree_or_discard(comm, problem, where, *temporaries):
    """`_agree` on a write's outcome; on a failure anywhere rank 0 removes the write's temporaries
    (files or directories) before every process raises the same CheckpointError."""
    try:
        _agree(comm, problem, where)
    except CheckpointError:
        if comm.Get_rank() == 0:
            for tmp in temporaries:
                _unlink_quietly(tmp)
        raise


def _read_target_problem(sharding, shape):
    """Why a file of global ``shape`` cannot be read into ``sharding`` (None if it can)."""
    try:
        sharding.check_shape(shape)
    except ShardingError as e:
        return f"the file's shape {shape} does not fit {sharding}: {e}"
    if sharding.is_partial:
        return f"cannot read into the partial sharding {sharding}; read a non-partial one, then reshard"
    return None


def _unlink_quietly(p):
    try:
        if os.path.isdir(p):
            shutil.rmtree(p, ignore_errors=True)
        else:
            os.unlink(p)
    except OSError:
        pass


# -- read -----------------------------------------------------------------------------------
def _read_header(path) -> tuple:
    """``(shape, dtype, fortran_order, data_offset)`` of a ``.npy`` file, checked
    against the file's size. Rank 0 runs this."""
    if not os.path.exists(path):
        raise CheckpointError(f"no such file {path!r}")
    if os.path.isdir(path):
        raise CheckpointError(f"{path!r} is a directory, not a .npy file")
    size = os.path.getsize(path)
    with open(path, "rb") as fp:
        try:
            version = npformat.read_magic(fp)
        except ValueError as e:
            raise CheckpointError(f"{path!r} is not a .npy file ({e})") from None
        try:
            if version == (1, 0):
                shape, fortran, dtype = npformat.read_array_header_1_0(fp)
            elif version == (2, 0):
                shape, fortran, dtype = npformat.read_array_header_2_0(fp)
            else:
                raise CheckpointError(f"{path!r} has .npy format version {version}; meshrt reads 1.0 and 2.0")
        except (ValueError, SyntaxError, EOFError, tokenize.TokenError) as e:  # numpy reads the header as Python
            if isinstance(e, CheckpointError):
                raise
            raise CheckpointError(f"{path!r} has a damaged .npy header ({e})") from None
        offset = fp.tell()
    if dtype.hasobject:
        raise CheckpointError(
            f"{path!r} holds dtype {dtype}, which contains Python objects (a pickle); meshrt does not read those"
        )
    if dtype.itemsize == 0:  # MPI-IO would divide by the element size: a crash, not an error
        raise CheckpointError(f"{path!r} holds dtype {dtype.str!r} of 0 bytes per element; meshrt reads sized dtypes")
    need = offset + math.prod(shape) * dtype.itemsize
    if size < need:
        raise CheckpointError(
            f"{path!r} is truncated: {size} bytes, but its header (shape {shape}, dtype {dtype}) needs {need}"
        )
    return tuple(shape), dtype, bool(fortran), offset


def read_npy(path, sharding: Sharding, global_shape=None, *, factory: Callable | None = None):
    """Read a ``.npy`` file into this process's local buffer under ``sharding``.

    Any sharding and any process count, whatever wrote the file (meshrt on any
    count, or ``numpy.save``).  The dtype is the file's; Fortran-order files are
    read correctly.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.
    sharding : Sharding
        The sharding to read it under, on a `Mesh`.
    global_shape : sequence of int, optional
        If given, it must match the file's shape.
    factory : callable, optional
        Called as ``factory(local, sharding, global_shape)``; e.g.
        ``DistributedTensor.from_local``.

    Returns
    -------
    Loaded or object
        Without a factory a `Loaded` ``(local, sharding, global_shape)`` whose
        ``local`` is a C-contiguous buffer of ``sharding.local_shape(global_shape)``
        with the owned block filled and the halos zeroed (run a halo update to
        fill them); otherwise what ``factory`` returns.

    Raises
    ------
    CheckpointError
        On every process: the file is missing, not a ``.npy`` file, truncated,
        has a shape other than ``global_shape`` or one the sharding cannot hold,
        or the read failed.

    See Also
    --------
    write_npy, load_state, DistributedTensor.load

    Notes
    -----
    Collective over the sharding's mesh; one MPI-IO collective read.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> path = os.path.join(tmp.name, "u.npy")
    >>> np.save(path, np.arange(4.0))
    >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]], halo_sizes=[1, 1])
    >>> local, sharding, shape = read_npy(path, s)
    >>> local, shape
    (array([0., 0., 1., 2., 3., 0.]), (4,))
    >>> read_npy(path, s, factory=DistributedTensor.from_local).gather()
    array([0., 1., 2., 3.])
    >>> tmp.cleanup()
    """
    comm = _comm_of(sharding)
    path = os.fspath(path)
    shape, dtype, fortran, offset = _root_decides(comm, lambda: _read_header(path), f"read_npy({path!r})")
    problem = None
    if global_shape is not None:
        try:
            want = Sharding.check_shape(sharding, global_shape)
        except ShardingError:
            want = global_shape
        if want != shape:
            problem = f"the file holds shape {shape}, but global_shape {global_shape!r} was asked for"
    if problem is None:
        problem = _read_target_problem(sharding, shape)
    _agree(comm, problem, f"read_npy({path!r})")

    local = np.zeros(sharding.local_shape(shape), dtype)
    block = _Block(sharding, shape, dtype, fortran)
    fh = None
    with _mpi.internal(f"read_npy({path!r})", "file open", comm):
        try:
            fh = MPI.File.Open(comm, path, MPI.MODE_RDONLY)
        except MPI.Exception as e:
            problem = f"cannot open {path!r}: {e.Get_error_string()}"
    _agree(comm, problem, f"read_npy({path!r})")
    with _mpi.internal(f"read_npy({path!r})", "parallel read", comm):
        try:
            fh.Set_view(offset, block.etype, block.filetype if block.filetype is not None else block.etype)
            if block.count == 0:
                fh.Read_all([local, 0, block.etype])
            elif fortran:
                tmp = np.empty(block.owned, dtype, order="F")
                fh.Read_all([tmp, block.count, block.etype])
                block.interior(local)[...] = tmp
            elif block.memtype is not None:
                fh.Read_all([local, 1, block.memtype])
            else:
                fh.Read_all([local, block.count, block.etype])
        except MPI.Exception as e:
            problem = f"reading {path!r} failed: {e.Get_error_string()}"
        finally:
            block.free()
            if fh is not None:
                fh.Close()
    _agree(comm, problem, f"read_npy({path!r})")
    if factory is not None:
        return factory(local, sharding, shape)
    return Loaded(local, sharding, shape)


# -- DistributedTensor delegates ------------------------------------------------------------
def save_tensor(path, tensor) -> None:
    """`write_npy` for a tensor-like object (``.local``, ``.sharding``, ``.global_shape``).

    Parameters
    ----------
    path : str or os.PathLike
        The ``.npy`` file to write (replaced atomically).
    tensor : DistributedTensor
        Or any object with ``local``, ``sharding`` and ``global_shape``.

    Raises
    ------
    CheckpointError
        As `write_npy`, on every process alike.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> t = DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]]))
    >>> path = os.path.join(tempfile.mkdtemp(), "t.npy")
    >>> save_tensor(path, t)
    >>> np.load(path)
    array([0., 1., 2., 3.])
    """
    write_npy(path, tensor.local, tensor.sharding, tensor.global_shape)


def load_tensor(path, sharding: Sharding, factory: Callable):
    """`read_npy` handing ``(local, sharding, global_shape)`` to ``factory``.

    A non-native byte order in the file becomes native in memory.

    Parameters
    ----------
    path : str or os.PathLike
        A ``.npy`` file (written by meshrt or by ``np.save``).
    sharding : Sharding
        The sharding to read it into (any process count, any layout).
    factory : callable
        Called as ``factory(local, sharding, global_shape)``, e.g.
        ``DistributedTensor.from_local``.

    Returns
    -------
    object
        What ``factory`` returns.

    Raises
    ------
    CheckpointError
        As `read_npy`: a missing file, a shape that does not fit, on every process alike.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> path = os.path.join(tempfile.mkdtemp(), "a.npy")
    >>> np.save(path, np.arange(6).reshape(2, 3))
    >>> t = load_tensor(path, Sharding(Mesh((-1,)), [[0]]), DistributedTensor.from_local)
    >>> t.global_shape, int(t.sum())
    ((2, 3), 15)
    """
    local, sharding, shape = read_npy(path, sharding)
    if not local.dtype.isnative:
        local = local.astype(local.dtype.newbyteorder("="))
    return factory(local, sharding, shape)


# -- several tensors: a state directory with a manifest -------------------------------------
def _as_entry(name, value):
    """``(local, sharding, global_shape, periodic)`` of a tensor-like or a tuple of 3 or 4."""
    if hasattr(value, "local") and hasattr(value, "sharding") and hasattr(value, "global_shape"):
        return value.local, value.sharding, tuple(value.global_shape), getattr(value, "periodic", None)
    try:
        local, sharding, shape, *periodic = value
        if len(periodic) > 1:
            raise ValueError
    except (TypeError, ValueError):
        raise CheckpointError(
            f"save_state: tensor {name!r} is {type(value).__name__}, neither a DistributedTensor "
            "nor a (local, sharding, global_shape[, periodic]) tuple"
        ) from None
    return local, sharding, shape, periodic[0] if periodic else None


def _periodic_flags(periodic, shape, name):
    """The JSON form of per-dim periodic flags (None, a bool, or one bool per dim): a list or None."""
    if periodic is None:
        return None
    ndim = len(tuple(shape))
    flags = [bool(periodic)] * ndim if isinstance(periodic, (bool, np.bool_)) else list(periodic)
    if len(flags) != ndim or not all(isinstance(f, (bool, np.bool_)) for f in flags):
        raise CheckpointError(f"tensor {name!r}: periodic {periodic!r} is not a bool or one bool per dim ({ndim} dims)")
    return [bool(f) for f in flags]


def _generation_of(name):
    m = re.fullmatch(r"g(\d{6,})", name)
    return int(m.group(1)) if m else None


def save_state(dirpath, tensors: Mapping, metadata: Mapping | None = None) -> None:
    """Save several tensors and JSON metadata as one state directory, atomically.

    The directory holds ``manifest.json`` and one plain ``.npy`` per tensor in a
    generation folder.  Crash-safe: the previous state stays loadable until the
    new one is complete.

    Parameters
    ----------
    dirpath : str or os.PathLike
        The state directory (created if missing).
    tensors : mapping
        Names (file-name safe: letters, digits, ``_ . -``) to DistributedTensors
        or ``(local, sharding, global_shape)`` tuples, all on one communicator.
    metadata : mapping, optional
        JSON-serializable data stored in the manifest (a step, a time, ...).

    Raises
    ------
    CheckpointError
        On every process: an empty mapping, an unsafe name, tensors on different
        communicators, metadata that is not JSON, names that differ between
        processes, or a failed write.

    See Also
    --------
    load_state, write_npy

    Notes
    -----
    Collective over the meshes' communicator.  ``manifest.json`` is the commit
    point: the new generation is written and synced first, then the manifest is
    atomically replaced, then the old generation is removed.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> ckpt = os.path.join(tmp.name, "ckpt")
    >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
    >>> u = DistributedTensor.from_global(np.arange(4.0), s)
    >>> save_state(ckpt, {"u": u}, metadata={"step": 100})
    >>> sorted(os.listdir(ckpt))
    ['g000001', 'manifest.json']
    >>> tmp.cleanup()
    """
    dirpath = os.path.abspath(os.fspath(dirpath))
    if not isinstance(tensors, Mapping) or not tensors:
        raise CheckpointError(f"save_state: tensors must be a non-empty mapping of name to tensor, not {tensors!r}")
    items = {name: _as_entry(name, v) for name, v in tensors.items()}
    comm = _comm_of(next(iter(items.values()))[1])
    problem = None
    flags = {}
    for name, (_, sharding, shape, periodic) in items.items():
        if not isinstance(name, str) or not _NAME.match(name) or name == MANIFEST:
            problem = f"tensor name {name!r} is not a safe file name (letters, digits, '_', '.', '-')"
        elif not isinstance(sharding, Sharding) or not isinstance(sharding.mesh, Mesh) or (
            sharding.mesh.comm is not comm and MPI.Comm.Compare(sharding.mesh.comm, comm) == MPI.UNEQUAL
        ):
            problem = f"tensor {name!r}: its sharding is not on the same communicator as the others"
        else:
            try:
                flags[name] = _periodic_flags(periodic, shape, name)
            except (CheckpointError, TypeError) as e:
                problem = str(e) if isinstance(e, CheckpointError) else f"tensor {name!r}: periodic {periodic!r}: {e}"
    try:
        meta_text = json.dumps({} if metadata is None else dict(metadata))
    except (TypeError, ValueError) as e:
        problem = problem or f"metadata is not JSON-serializable: {e}"
    _agree(comm, problem, f"save_state({dirpath!r})")
    names = sorted(items)
    try:
        _agree(comm, None, f"save_state({dirpath!r})", key=tuple(names))
    except CheckpointError:
        raise CheckpointError(f"save_state({dirpath!r}): processes pass different tensor names") from None

    def new_generation():
        os.makedirs(dirpath, exist_ok=True)
        gens = [g for g in map(_generation_of, os.listdir(dirpath)) if g is not None]
        gen = f"g{max(gens, default=0) + 1:06d}"
        os.mkdir(os.path.join(dirpath, gen))
        return gen

    gen = _root_decides(comm, new_generation, f"save_state({dirpath!r})")
    entries = {}
    for name in names:
        local, sharding, shape, _ = items[name]
        fname = os.path.join(gen, name + ".npy")
        write_npy(os.path.join(dirpath, fname), local, sharding, shape)
        entries[name] = {
            "file": fname,
            "shape": list(sharding.check_shape(shape)),
            "dtype": np.lib.format.dtype_to_descr(np.asarray(local).dtype),
            "sharding": str(sharding),
            "mesh_shape": list(sharding.mesh.shape),
            "periodic": flags[name],
        }

    def commit():
        _fsync_dir(os.path.join(dirpath, gen))
        manifest = {
            "format": _STATE_FORMAT, "version": _STATE_VERSION, "generation": gen,
            "nprocs": comm.Get_size(), "tensors": entries, "metadata": json.loads(meta_text),
        }
        tmp = os.path.join(dirpath, f"{MANIFEST}.tmp-{secrets.token_hex(6)}")
        with open(tmp, "w") as f:
            json.dump(manifest, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, os.path.join(dirpath, MANIFEST))
        _fsync_dir(dirpath)
        # The new state is committed: older generations and crash leftovers go.
        for entry in os.listdir(dirpath):
            if entry != gen and (_generation_of(entry) is not None or entry.startswith(MANIFEST + ".tmp-")):
                _unlink_quietly(os.path.join(dirpath, entry))

    with _mpi.internal(f"save_state({dirpath!r})", "barrier before the commit", comm):
        comm.Barrier()
    _root_decides(comm, commit, f"save_state({dirpath!r})")


def _read_manifest(dirpath):
    path = os.path.join(dirpath, MANIFEST)
    if not os.path.isfile(path):
        raise CheckpointError(f"{dirpath!r} holds no {MANIFEST}; it is not a meshrt state directory")
    try:
        with open(path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path!r} is not readable JSON ({e})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != _STATE_FORMAT:
        raise CheckpointError(f"{path!r} is not a meshrt state manifest")
    if manifest.get("version") != _STATE_VERSION:
        raise CheckpointError(f"{path!r} has manifest version {manifest.get('version')!r}; this meshrt reads {_STATE_VERSION}")
    problem = _manifest_problem(manifest)
    if problem:
        raise CheckpointError(f"{path!r}: {problem}")
    return manifest


def _manifest_problem(manifest) -> str | None:
    """What is wrong with the fields `load_state` reads from a manifest (field name and value), or None."""
    tensors = manifest.get("tensors")
    if not isinstance(tensors, dict):
        return f"field 'tensors' is {tensors!r}; expected an object of name to tensor entry"
    if not isinstance(manifest.get("metadata", {}), dict):
        return f"field 'metadata' is {manifest.get('metadata')!r}; expected an object"
    for name, entry in tensors.items():
        where = f"field 'tensors.{name}"
        if not isinstance(entry, dict):
            return f"{where}' is {entry!r}; expected an object with 'file' and 'shape'"
        if not isinstance(entry.get("file"), str) or not entry["file"]:
            return f"{where}.file' is {entry.get('file')!r}; expected the .npy file's name"
        shape = entry.get("shape")
        if not isinstance(shape, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                  for n in shape):
            return f"{where}.shape' is {shape!r}; expected a list of non-negative integers"
        periodic = entry.get("periodic")
        if periodic is not None and not (isinstance(periodic, list) and len(periodic) == len(shape)):
            return f"{where}.periodic' is {periodic!r}; expected null or one flag per dim ({len(shape)})"
    return None


def load_state(dirpath, shardings, *, factory: Callable | None = None) -> tuple:
    """Load a state saved by `save_state`: ``(tensors, metadata)``.

    Any process count, any shardings.  A tensor saved with periodic flags gets
    them back: as ``factory(..., periodic=flags)`` (as
    `DistributedTensor.from_local` takes them) or as ``Loaded.periodic``.

    Parameters
    ----------
    dirpath : str or os.PathLike
        The state directory.
    shardings : Sharding or mapping
        One Sharding for every tensor, or a mapping of name to Sharding (names it
        lacks are not loaded; names the state lacks are an error).
    factory : callable, optional
        Called as ``factory(local, sharding, global_shape)`` per tensor, e.g.
        ``DistributedTensor.from_local``.

    Returns
    -------
    tensors : dict
        Name to ``factory(...)``'s result, or to a `Loaded` without a factory.
    metadata : dict
        The metadata given to `save_state`.

    Raises
    ------
    CheckpointError
        On every process: no manifest (not a state directory), an unreadable or
        foreign manifest, a name the state lacks, or a failed read.

    See Also
    --------
    save_state, read_npy

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
    >>> save_state(tmp.name, {"u": DistributedTensor.from_global(np.arange(4.0), s)}, {"step": 100})
    >>> tensors, meta = load_state(tmp.name, {"u": s}, factory=DistributedTensor.from_local)
    >>> tensors["u"].gather(), meta
    (array([0., 1., 2., 3.]), {'step': 100})
    >>> tmp.cleanup()
    """
    dirpath = os.path.abspath(os.fspath(dirpath))
    first = shardings if isinstance(shardings, Sharding) else next(iter(shardings.values()), None)
    comm = _comm_of(first)
    manifest = _root_decides(comm, lambda: _read_manifest(dirpath), f"load_state({dirpath!r})")
    saved = manifest["tensors"]
    if isinstance(shardings, Sharding):
        wanted = {name: shardings for name in saved}
    else:
        missing = sorted(set(shardings) - set(saved))
        if missing:
            raise CheckpointError(f"load_state({dirpath!r}): no tensor(s) {missing} in the state; it holds {sorted(saved)}")
        wanted = dict(shardings)
    out = {}
    for name in sorted(wanted):
        entry = saved[name]
        local, sharding, shape = read_npy(os.path.join(dirpath, entry["file"]), wanted[name], tuple(entry["shape"]))
        periodic = entry.get("periodic")  # states saved before periodic was stored have none
        periodic = None if periodic is None else tuple(bool(f) for f in periodic)
        if factory is None:
            out[name] = Loaded(local, sharding, shape, periodic)
        elif periodic is None:
            out[name] = factory(local, sharding, shape)
        else:
            out[name] = factory(local, sharding, shape, periodic=periodic)
    return out, manifest.get("metadata", {})

