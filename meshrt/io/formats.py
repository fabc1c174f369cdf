"""Files that other tools open: Zarr v3 and HDF5 (with an XDMF sidecar), written and read in parallel.

    >>> u.to_zarr("run/u.zarr")                                   # doctest: +SKIP
    >>> v = DistributedTensor.from_zarr("run/u.zarr", other_sharding)  # doctest: +SKIP
    >>> u.to_hdf5("run/fields.h5", "u")                           # doctest: +SKIP
    >>> w = DistributedTensor.from_hdf5("run/fields.h5", "u", other_sharding)  # doctest: +SKIP

Zarr: each process writes whole chunks of its own block, never gathering.
When shard boundaries do not fall on chunk boundaries the tensor is first
resharded (by the reshard planner) to the chunk-aligned layout of
`meshrt.sharding.chunks`, so each chunk has one writer. Default chunks follow the
sharding; chunks are stored uncompressed by default (``compressors=None``,
bytes as in a ``.npy`` file; pass ``compressors="auto"`` for Zarr's zstd).
The array's attributes hold ``meshrt``: mesh shape and axis names, the
sharding's text and ``periodic``, so `from_zarr` given just a `Mesh` restores
the tensor as it was.

HDF5 (h5py from PyPI has no MPI): each process writes its block to its own
file ``<path>.blocks/<name>.a/p<rank>.h5`` and rank 0 writes the master
file ``path`` in which dataset ``name`` is a virtual dataset over the blocks,
so ``h5py.File(path)[name][...]`` is the whole array. The next write uses
``<name>.b``, the one after ``<name>.a`` again: the files the current master
names are never touched. An h5py built with MPI
(``h5py.get_config().mpi``) writes the dataset collectively instead (one
file, no blocks). Next to ``path``, ``<stem>.xmf`` (XDMF) describes every
dataset of the master file as cell data on a uniform grid, for ParaView.

Failure behaviour: everything is written to temporaries and renamed into
place by rank 0 only after every process succeeded, so an exception or a
kill on any process leaves the previous file readable (data are not fsynced:
this protects against a dying process, not a dying machine). Every error,
a bad argument on one process, a missing file or field, a shape that does
not fit, is agreed on and raised as the same `CheckpointError` on every
process, naming the file and field.
"""

from __future__ import annotations

import importlib
import itertools
import json
import os
import re
import secrets
import shutil
import sys
import threading

import numpy as np

from . import dataset as _dataset
from ..runtime import mpi as _mpi
from ..sharding.chunks import (
    aligned_sharding, check_chunks, default_chunks, is_aligned, owned_chunks, writer_of_block,
)
from ..errors import MeshError, ShardingError
from .npy import (
    _NAME, CheckpointError, _agree, _agree_or_discard, _comm_of, _read_target_problem, _root_decides, _unlink_quietly,
)
from ..mesh import Mesh
from ..sharding.spec import Sharding

__all__ = ["to_zarr", "from_zarr", "to_hdf5", "from_hdf5", "hdf5_is_parallel", "write_xdmf", "require",
           "wait_for_removals"]

_FORMAT_VERSION = 1


def require(module: str, what: str):
    """Import an optional dependency, or raise an ImportError that names the extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise ImportError(
            f"{what} needs the '{module}' package, which is not installed: "
            f"pip install \"meshrt[io]\" (or pip install {module})") from e


# -- shared pieces ----------------------------------------------------------------------
_removals: dict = {}  # the paths -> the thread removing them


def remove_later(*paths) -> None:
    """Remove superseded files or directories in a background thread: deleting the
    previous step's data (tens of ms for 100 MiB here) then overlaps the
    computation instead of lengthening the write. Not a daemon thread: the
    interpreter waits for it at exit."""
    for p, t in list(_removals.items()):
        if not t.is_alive():
            del _removals[p]
    if not paths or paths in _removals:
        return
    thread = threading.Thread(target=lambda: [_unlink_quietly(p) for p in paths], name="meshrt-remove")
    thread.start()
    _removals[paths] = thread


def wait_for_removals() -> None:
    """Block until the superseded files of earlier writes (removed in the background) are gone.

    >>> wait_for_removals()
    """
    while _removals:
        _removals.popitem()[1].join()


def _where(fn, path, name):
    return f"{fn}({path!r}" + (f", name={name!r})" if name is not None else ")")


def _check_tensor(t, name, *, need_name=False):
    """This process's complaint about a tensor argument and a dataset name, or None."""
    if not all(hasattr(t, a) for a in ("interior", "sharding", "global_shape")):
        return f"tensor: {type(t).__name__} is not a DistributedTensor"
    if t.sharding.is_partial:
        return (f"the sharding {t.sharding} is partial over mesh axes {list(t.sharding.partial_axes)}; "
                "a file holds full values: reshard to a non-partial sharding (or reduce) first")
    if t.dtype.hasobject or t.dtype.fields is not None:
        return f"dtype: {t.dtype} is not a plain numeric dtype"
    if (need_name or name is not None) and (not isinstance(name, str) or not _NAME.match(name)):
        return f"name: {name!r} is not a valid field name (letters, digits, '_', '.', '-')"
    return None


def _meshrt_attrs(t) -> dict:
    mesh = t.sharding.mesh
    periodic = getattr(t, "periodic", None)
    return {
        "version": _FORMAT_VERSION,
        "mesh_shape": list(mesh.shape),
        "axis_names": list(mesh.axis_names) if mesh.axis_names else None,
        "sharding": str(t.sharding),
        "periodic": None if periodic is None else [bool(p) for p in periodic],
    }


def _resolve_sharding(sharding, saved: dict | None):
    """``(sharding, None)``, or given a Mesh the sharding saved in the file parsed on it;
    ``(None, problem)`` when that cannot be."""
    if isinstance(sharding, Sharding):
        return sharding, None
    if not isinstance(saved, dict) or "sharding" not in saved:
        return None, "the file carries no meshrt sharding; pass a Sharding, not a Mesh"
    mesh_shape = saved.get("mesh_shape", [])
    if not isinstance(mesh_shape, list):
        return None, f"the file's meshrt attribute 'mesh_shape' is {mesh_shape!r}; expected a list of sizes"
    if list(sharding.shape) != mesh_shape:
        return None, (f"the file was written on a mesh of shape {tuple(saved.get('mesh_shape', ()))}, "
                      f"but the given mesh has shape {sharding.shape}; pass a Sharding for this mesh")
    try:
        return Sharding.parse(saved["sharding"], sharding), None
    except (ShardingError, MeshError) as e:
        return None, f"the saved sharding {saved['sharding']!r} does not parse on {sharding!r}: {e}"


def _fill_block(comm, where, sharding, shape, dtype, read_block, library):
    """A zeroed local buffer with this process's owned block filled by ``read_block(slices)``
    (which reads through ``library``); a failure anywhere raises the same CheckpointError everywhere."""
    _agree(comm, _read_target_problem(sharding, shape), where)
    problem = None
    local = np.zeros(sharding.local_shape(shape), dtype)
    slices = sharding.shard_slices(shape)
    lo = [sharding.halo_widths(d)[0] for d in range(len(shape))]
    inner = tuple(slice(a, a + s.stop - s.start) for a, s in zip(lo, slices))
    try:
        if local[inner].size:
            local[inner] = read_block(slices)
    except Exception as e:  # noqa: BLE001 - reported on every process
        problem = (f"reading the block {[(s.start, s.stop) for s in slices]} failed: {library} cannot read it "
                   f"({type(e).__name__}: {e})")
    _agree(comm, problem, where)
    return local


def _aside(target, name=None):
    """Where temporaries and moved-aside copies of ``target`` live: next to it, or for a
    group member next to the group (``<group>.<name>``), so that no reader of the group
    ever sees them as members."""
    return target if name is None else f"{os.path.dirname(target)}.{name}"


def _swap_into_place(tmp, target, aside):
    """Rank 0, after every process finished ``tmp``: put it at ``target`` and drop the old one
    (removed in the background; returns where it was moved, or None).

    A directory cannot be renamed over a non-empty one, so the old target is
    first moved aside, to ``<aside>.old-*``; a crash between the two renames
    leaves it there (`_existing` reads it from there)."""
    old = None
    if os.path.lexists(target):
        old = f"{aside}.old-{secrets.token_hex(6)}"
        os.rename(target, old)
    os.rename(tmp, target)
    if old is not None:
        remove_later(old)
    parent, base = os.path.split(aside)
    for entry in os.listdir(parent):  # leftovers of interrupted writes of the same target
        if re.fullmatch(re.escape(base) + r"\.(tmp|old)-[0-9a-f]{12}", entry):
            remove_later(os.path.join(parent, entry))
    return old


def _existing(target, aside):
    """``target``, or the old copy a crash between `_swap_into_place`'s two renames left behind."""
    if os.path.lexists(target):
        return target
    parent, base = os.path.split(aside)
    if os.path.isdir(parent):
        olds = sorted(e for e in os.listdir(parent) if re.fullmatch(re.escape(base) + r"\.old-[0-9a-f]{12}", e))
        if olds:
            return os.path.join(parent, olds[0])
    return None


# -- Zarr -------------------------------------------------------------------------------
def to_zarr(t, path, chunks=None, name=None, *, compressors=None, dims=None, coords=None, origin=None,
            spacing=None, attrs=None) -> None:
    """Write a DistributedTensor to a Zarr v3 group xarray opens, every process its own chunks.

    ``path`` is a group holding the array ``name`` (default: the path's stem,
    ``u`` for ``u.zarr``; other arrays of the group are kept), with Zarr v3
    ``dimension_names`` (``dims``, default ``dim_0, dim_1, ...``), optional
    coordinate arrays (``coords``: dim -> 1-D array, or ``origin`` +
    ``spacing`` * i) and attributes (``attrs``: units, long_name, ...), and the
    group's consolidated metadata. ``chunks``: one int per dim, or one int for
    all; default `meshrt.sharding.chunks.default_chunks` (the sharding's blocks).
    Collective over the tensor's mesh.

    >>> t.to_zarr("out/u.zarr", dims=("y", "x"), spacing=(h, h), attrs={"units": "K"})  # doctest: +SKIP
    >>> xr.open_zarr("out/u.zarr").u                                               # doctest: +SKIP
    """
    comm = _comm_of(t.sharding)
    path = os.path.abspath(os.fspath(path))
    where = _where("to_zarr", path, name)
    explicit_name = name is not None
    if name is None:
        stem = os.path.splitext(os.path.basename(path))[0]
        name = stem if _NAME.match(stem) else "data"
    problem = _check_tensor(t, name)
    shape = tuple(t.global_shape)
    if problem is None:
        try:
            chunks = default_chunks(t.sharding, shape) if chunks is None else check_chunks(chunks, shape)
            dim_names, coord_values = _dataset.grid_coords(where, shape, dims, coords, origin=origin, spacing=spacing)
            user_attrs = _dataset.check_attrs(where, attrs)
        except ShardingError as e:
            problem = str(e)
        except CheckpointError as e:
            problem = str(e).removeprefix(where + ": ")
    _agree(comm, problem, where, key=None if problem else (str(t.dtype), shape, chunks))
    zarr = require("zarr", "to_zarr")

    aligned = aligned_sharding(t.sharding, shape, chunks)
    box = owned_chunks(aligned, shape, chunks)
    target = os.path.join(path, name)
    aside = _aside(target, name)

    def create():
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise CheckpointError(f"directory {parent!r} does not exist")
        kind = _zarr_node_type(path)
        if os.path.exists(path) and kind is None:
            raise CheckpointError(f"{path!r} exists and is not a Zarr v3 group")
        if kind == "array" and explicit_name:
            raise CheckpointError(f"{path!r} is a Zarr array, not a group that could hold {name!r}")
        whole = None
        if kind == "array":  # a store written before groups: replaced as a whole by a new group
            whole = f"{path}.tmp-{secrets.token_hex(6)}"
            zarr.open_group(whole, mode="w", zarr_format=3)
            tmp, used = os.path.join(whole, name), {}
        else:
            zarr.open_group(path, mode="a", zarr_format=3)
            tmp, used = f"{aside}.tmp-{secrets.token_hex(6)}", _dataset.zarr_dims_in_use(path, name)
        names = _dataset.dims_beside(name, dim_names, shape, used, explicit=dims is not None)
        zarr.create_array(tmp, shape=shape, chunks=chunks, dtype=t.dtype, fill_value=0, compressors=compressors,
                          zarr_format=3, dimension_names=names or None,
                          attributes={"meshrt": _meshrt_attrs(t), **user_attrs})
        return tmp, whole, names

    tmp, whole, names = _root_decides(comm, create, where)
    src = t if is_aligned(t.sharding, shape, chunks) else t.reshard(aligned)
    problem, chunk_file = None, None
    try:
        if box.writes and all(b > a for a, b in zip(box.start, box.stop)):
            # every chunk written is whole and new: skip zarr's scan for chunks equal to the fill value
            arr = zarr.open_array(tmp, mode="r+", zarr_format=3, config={"write_empty_chunks": True})
            chunk_file = _raw_chunk_file(zarr, arr, src.dtype)
            if chunk_file is None:
                arr[src.shard_slices] = src.interior
            else:
                _write_raw_chunks(chunk_file, src.interior, src.shard_slices, shape, chunks, box)
    except Exception as e:  # noqa: BLE001 - reported on every process
        problem = f"writing chunks {box.start}..{box.stop} failed: {type(e).__name__}: {e}"
    finally:
        if src is not t:
            src.free()
    _agree_or_discard(comm, problem, where, whole or tmp)
    with _mpi.internal(where, "barrier before the commit", comm):
        comm.Barrier()

    def commit():
        coords_by_name = {n: coord_values[d] for d, n in zip(dim_names, names) if d in coord_values}
        group = whole or path
        if whole is None:
            old = _swap_into_place(tmp, target, aside)
        _dataset.write_zarr_coords(zarr, group, coords_by_name, _swap_into_place)
        _dataset.write_consolidated(group)
        if whole is not None:
            old = _swap_into_place(whole, path, path)
        else:  # leftovers of an interrupted write of the whole store (before groups, or a replaced array)
            parent, base = os.path.split(path)
            for entry in os.listdir(parent):
                if re.fullmatch(re.escape(base) + r"\.(tmp|old)-[0-9a-f]{12}", entry):
                    remove_later(os.path.join(parent, entry))
        return old

    old = _root_decides(comm, commit, where)
    if old is not None and chunk_file is not None and comm.Get_rank() != 0:
        # Rank 0 removes the superseded array; each process deleting the chunks it wrote
        # (in a time series the old array's chunks are these) spreads the cost of
        # freeing them over the processes instead of rank 0 freeing all: O(own chunks).
        remove_later(*(os.path.join(old, os.path.relpath(chunk_file(c), tmp)) for c in _chunk_coords(box)))


def _zarr_node_type(path):
    """``"group"`` or ``"array"`` for a local Zarr v3 node at ``path``; None for anything else."""
    try:
        with open(os.path.join(path, "zarr.json")) as f:
            kind = json.load(f).get("node_type")
    except (OSError, ValueError, AttributeError):
        return None
    return kind if kind in ("group", "array") else None


def _raw_chunk_file(zarr, arr, dtype):
    """For an uncompressed Zarr v3 array on a local disk whose chunks are the plain
    C-order little-endian bytes of the data (codecs: ``bytes`` only), a function from
    chunk coordinates to that chunk's file; None for any other array.

    Zarr's own write path copies a chunk through its codec pipeline and an
    event-loop thread, 2-4x the cost of writing the bytes (docs/io.md); for such an
    array the encoded chunk *is* the bytes, so each process writes them itself.
    Compressed, sharded, transposed or remote arrays go through zarr.
    """
    from zarr.codecs import BytesCodec
    from zarr.core.chunk_grids import RegularChunkGrid
    from zarr.storage import LocalStore

    meta, store = arr.metadata, arr.store_path.store
    codecs = getattr(meta, "codecs", ())
    little = np.dtype(dtype).byteorder in "=|" and sys.byteorder == "little" or np.dtype(dtype).byteorder == "<"
    if not (isinstance(store, LocalStore) and isinstance(meta.chunk_grid, RegularChunkGrid) and len(codecs) == 1
            and isinstance(codecs[0], BytesCodec) and getattr(codecs[0].endian, "value", "little") == "little"
            and little and np.dtype(dtype).kind in "biufc" and getattr(arr, "order", "C") == "C"):
        return None
    root = os.path.join(os.fspath(store.root), *filter(None, arr.store_path.path.split("/")))
    return lambda coords: os.path.join(root, *meta.encode_chunk_key(coords).split("/"))


def _chunk_coords(box):
    """The chunk coordinates in a `ChunkBox`, C order."""
    return itertools.product(*(range(a, b) for a, b in zip(box.start, box.stop)))


def _write_raw_chunks(chunk_file, interior, block, shape, chunks, box) -> None:
    """Write each chunk of ``box`` (chunk indices; they tile ``block``, the global
    slices of ``interior``) as its raw bytes; a chunk cut by the array's edge is
    padded with zeros (the fill value) to the full chunk shape, as Zarr v3 stores it."""
    made = set()
    for coords in _chunk_coords(box):
        glob = [slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(coords, chunks, shape)]
        data = interior[tuple(slice(g.start - s.start, g.stop - s.start) for g, s in zip(glob, block))]
        if data.shape != tuple(chunks):
            padded = np.zeros(chunks, dtype=data.dtype)
            padded[tuple(slice(0, n) for n in data.shape)] = data
            data = padded
        path = chunk_file(coords)
        parent = os.path.dirname(path)
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
        with open(path, "wb") as f:
            _preallocate(f.fileno(), 0, data.nbytes)
            f.write(np.ascontiguousarray(data).data)


def _preallocate(fd, offset, nbytes) -> None:
    """Reserve a new file's blocks before writing them, as ``ndarray.tofile`` does:
    on ext4 here a 64 MiB write then takes 13 ms instead of 40 (the filesystem
    allocates one extent instead of growing the file page by page). Best effort:
    filesystems without fallocate write as before."""
    if nbytes > 0 and hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, offset, nbytes)
        except OSError:
            pass


def _open_zarr_array(zarr, path, name, where):
    found = _existing(path, path)
    if found is None:
        raise CheckpointError(f"no such file {path!r}")
    problem = _zarr_metadata_problem(found)
    if problem:
        raise CheckpointError(f"{path!r} is not a Zarr store: {problem}")
    try:
        node = zarr.open(found, mode="r")
    except Exception as e:  # noqa: BLE001 - zarr's own reading of its metadata
        raise CheckpointError(f"{path!r} is not a Zarr store: zarr cannot read its metadata "
                              f"({type(e).__name__}: {e})") from None
    if name is not None:
        if not isinstance(node, zarr.Group):
            raise CheckpointError(f"{path!r} is a Zarr array, not a group holding field {name!r}")
        member = _existing(os.path.join(found, name), _aside(os.path.join(path, name), name))
        if member is None:
            raise CheckpointError(f"{path!r} holds no field {name!r}; it holds {sorted(node.array_keys())}")
        return member
    if isinstance(node, zarr.Group):
        # a group written by to_zarr(path): its array is named after the path's stem (or is the only one
        # that is not a coordinate)
        keys = sorted(node.array_keys())
        stem = os.path.splitext(os.path.basename(path))[0]
        fields = [stem] if stem in keys else [
            k for k in keys if list(getattr(node[k].metadata, "dimension_names", None) or ()) != [k]]
        if len(fields) != 1:
            raise CheckpointError(f"{path!r} is a Zarr group; name one of its fields {keys}")
        return _open_zarr_array(zarr, path, fields[0], where)
    return found


def _zarr_metadata_problem(store) -> str | None:
    """The first wrong top-level field of a Zarr v3 ``zarr.json`` (field name and value), or None;
    what zarr itself reads beyond these it reports on its own."""
    meta_path = os.path.join(store, "zarr.json")
    if not os.path.isfile(meta_path):
        return None  # a Zarr v2 store (.zarray/.zgroup): zarr reads it
    try:
        with open(meta_path, "rb") as f:
            meta = json.loads(f.read())
    except (OSError, ValueError) as e:
        return f"{meta_path!r} is not readable JSON ({e})"
    if not isinstance(meta, dict):
        return f"{meta_path!r} holds {type(meta).__name__} {meta!r:.60}; expected a JSON object"
    for key, ok, want in (
        ("zarr_format", lambda v: v == 3, "3"),
        ("node_type", lambda v: v in ("array", "group"), "'array' or 'group'"),
    ):
        if not ok(meta.get(key)):
            return f"{meta_path!r}: field {key!r} is {meta.get(key)!r}; expected {want}"
    if meta["node_type"] == "array":
        shape = meta.get("shape")
        if not (isinstance(shape, list) and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                                                for n in shape)):
            return f"{meta_path!r}: field 'shape' is {shape!r}; expected a list of non-negative integers"
        if not isinstance(meta.get("attributes", {}), dict):
            return f"{meta_path!r}: field 'attributes' is {meta.get('attributes')!r}; expected an object"
    return None


def from_zarr(path, sharding, name=None, *, factory=None):
    """Read a Zarr array (any writer: meshrt, zarr, xarray) into ``sharding``, each
    process reading only its block. ``sharding`` may be a `Mesh`: the sharding
    saved by `to_zarr` is used on it. Returns ``factory(local, sharding, shape,
    periodic=...)`` (default: a `DistributedTensor`); halos are zero.

    >>> u = DistributedTensor.from_zarr("out/u.zarr", Sharding(mesh, [[0], [1]], halo_sizes=[1] * 4))  # doctest: +SKIP
    """
    path = os.path.abspath(os.fspath(path))
    where = _where("from_zarr", path, name)
    if not isinstance(sharding, (Sharding, Mesh)):
        raise CheckpointError(f"{where}: sharding: {sharding!r} is neither a Sharding nor a Mesh")
    comm = sharding.comm if isinstance(sharding, Mesh) else _comm_of(sharding)
    zarr = require("zarr", "from_zarr")

    def inspect():
        target = _open_zarr_array(zarr, path, name, where)
        arr = zarr.open_array(target, mode="r")
        attrs = dict(arr.attrs).get("meshrt")
        return target, tuple(arr.shape), np.dtype(arr.dtype).str, attrs
    target, shape, dtype, attrs = _root_decides(comm, inspect, where)
    sharding = _resolved_everywhere(comm, sharding, attrs, where)

    def read_block(slices):
        return zarr.open_array(target, mode="r")[slices]
    local = _fill_block(comm, where, sharding, shape, np.dtype(dtype), read_block, "zarr")
    return _build(factory, local, sharding, shape, attrs)


def _resolved_everywhere(comm, sharding, attrs, where):
    out, problem = _resolve_sharding(sharding, attrs)
    _agree(comm, problem, where)
    return out


def _build(factory, local, sharding, shape, attrs):
    periodic = None
    if isinstance(attrs, dict) and isinstance(attrs.get("periodic"), list) and len(attrs["periodic"]) == len(shape):
        periodic = tuple(bool(p) for p in attrs["periodic"])
    if factory is None:
        from ..tensor.distributed_tensor import DistributedTensor
        factory = DistributedTensor.from_local
    if not local.dtype.isnative:
        local = local.astype(local.dtype.newbyteorder("="))
    return factory(local, sharding, shape, periodic=periodic)


# -- HDF5 -------------------------------------------------------------------------------
def hdf5_is_parallel() -> bool:
    """Whether the installed h5py was built against an MPI-enabled HDF5 (then `to_hdf5`
    writes one file collectively); PyPI's h5py is not."""
    h5py = require("h5py", "to_hdf5")
    return bool(h5py.get_config().mpi)


def _blocks_dir(path):
    return f"{path}.blocks"


def _copy_master(h5py, path, tmp):
    """Start the new master file ``tmp`` from the current ``path`` (other datasets are kept)."""
    if os.path.exists(path):
        if os.path.isdir(path) or not h5py.is_hdf5(path):
            raise CheckpointError(f"{path!r} exists and is not an HDF5 file")
        shutil.copyfile(path, tmp)
    else:
        parent = os.path.dirname(path)
        if not os.path.isdir(parent):
            raise CheckpointError(f"directory {parent!r} does not exist")
        h5py.File(tmp, "w").close()


def to_hdf5(t, path, name, *, parallel=None, dims=None, coords=None, origin=None, spacing=None,
            attrs=None) -> None:
    """Write a DistributedTensor as dataset ``name`` of the HDF5 file ``path`` (collective).

    Without MPI in h5py: per-process block files and a virtual dataset in
    ``path`` over them; with it (or ``parallel=True``): one collective write.
    Other datasets of ``path`` are kept; ``<stem>.xmf`` is rewritten for ParaView.
    The file is a netCDF-4 dataset for xarray (h5netcdf engine): ``dims``
    (default ``dim_0, dim_1, ...``) are HDF5 dimension scales attached to the
    dataset, coordinates (``coords`` or ``origin`` + ``spacing`` * i) their
    values, ``attrs`` (units, long_name, ...) the dataset's attributes.

    >>> t.to_hdf5("out/fields.h5", "u", dims=("y", "x"), spacing=(h, h))  # doctest: +SKIP
    >>> xr.open_dataset("out/fields.h5").u                                # doctest: +SKIP
    """
    comm = _comm_of(t.sharding)
    path = os.path.abspath(os.fspath(path))
    where = _where("to_hdf5", path, name)
    problem = _check_tensor(t, name, need_name=True)
    shape = tuple(t.global_shape)
    if problem is None:
        try:
            dim_names, coord_values = _dataset.grid_coords(where, shape, dims, coords, origin=origin, spacing=spacing)
            cf = (dim_names, coord_values, _dataset.check_attrs(where, attrs), dims is not None)
        except CheckpointError as e:
            problem = str(e).removeprefix(where + ": ")
    _agree(comm, problem, where, key=None if problem else (str(t.dtype), shape, name))
    h5py = require("h5py", "to_hdf5")
    if parallel is None:
        parallel = bool(h5py.get_config().mpi)
    elif parallel and not h5py.get_config().mpi:
        raise CheckpointError(f"{where}: parallel=True, but this h5py was built without MPI (h5py.get_config().mpi)")
    attrs = json.dumps(_meshrt_attrs(t))
    if parallel:
        _to_hdf5_collective(h5py, comm, t, path, name, shape, attrs, where, cf)
    else:
        _to_hdf5_blocks(h5py, comm, t, path, name, shape, attrs, where, cf)


def _to_hdf5_blocks(h5py, comm, t, path, name, shape, attrs, where, cf=None):
    sharding, mesh = t.sharding, t.sharding.mesh

    def prepare():
        tmp = f"{path}.tmp-{secrets.token_hex(6)}"
        gen = _next_generation(h5py, path, tmp, name)
        os.makedirs(os.path.join(_blocks_dir(path), gen), exist_ok=True)
        return tmp, gen

    tmp, gen = _root_decides(comm, prepare, where)
    gen_dir = os.path.join(_blocks_dir(path), gen)
    has_blocks = bool(shape) and all(shape)  # 0-d or empty: no blocks, rank 0 writes the data itself
    problem, grids, files = None, None, set()
    block_name = f"p{mesh.rank:06d}.h5"
    try:
        if writer_of_block(sharding) and t.interior.size and has_blocks:
            _write_hdf5_block(h5py, os.path.join(gen_dir, block_name), t.interior)
    except Exception as e:  # noqa: BLE001 - reported on every process
        problem = f"writing block file {block_name!r} failed: {type(e).__name__}: {e}"
    if comm.Get_rank() == 0 and has_blocks and problem is None:
        # The virtual dataset names the block files, not their data: rank 0 builds the
        # master while the others still write, and the commit is only renames.
        try:
            layout, files = _block_layout(h5py, path, gen_dir, sharding, shape, t.dtype)
            grids = _build_master(h5py, tmp, name, attrs, gen, layout, cf)
        except Exception as e:  # noqa: BLE001 - reported on every process
            problem = f"writing the master file failed: {type(e).__name__}: {e}"
    whole = None if has_blocks else t.gather(root=0)
    _agree_or_discard(comm, problem, where, tmp)

    def commit():
        master_grids = grids if has_blocks else _build_master(h5py, tmp, name, attrs, gen, whole, cf)
        os.replace(tmp, path)
        # Block files of an earlier, larger job left in this generation, and generations
        # of the old naming (<name>.<12 hex digits>), are no longer named by any master.
        for entry in os.listdir(gen_dir):
            if entry not in files:
                _unlink_quietly(os.path.join(gen_dir, entry))
        for entry in os.listdir(_blocks_dir(path)):
            if entry.startswith(name + ".") and re.fullmatch(r"[0-9a-f]{12}", entry[len(name) + 1:]):
                remove_later(os.path.join(_blocks_dir(path), entry))
        _remove_stale(path)
        _write_xdmf_grids(path, master_grids)

    _root_decides(comm, commit, where)


def _next_generation(h5py, path, tmp, name) -> str:
    """Start the new master ``tmp`` from ``path`` and pick the block generation to write.

    Two generations per field, ``<name>.a`` and ``<name>.b``, take turns: a write
    rewrites the files of the one the current master does *not* name, so a
    failed or killed write leaves the current one whole, and a time series
    rewrites the same files instead of creating and deleting them each step."""
    _copy_master(h5py, path, tmp)
    with h5py.File(tmp, "r") as f:
        current = f[name].attrs.get("meshrt_blocks") if name in f else None
    return f"{name}.b" if current == f"{name}.a" else f"{name}.a"


def _block_layout(h5py, path, gen_dir, sharding, shape, dtype):
    """The virtual layout of the whole array over the block files, and the files' names
    (every block: O(P) on rank 0 only)."""
    layout = h5py.VirtualLayout(shape=shape, dtype=dtype)
    rel = os.path.relpath(gen_dir, os.path.dirname(path))
    files = set()
    for device in range(sharding.mesh.size):
        block = sharding.shard_slices(shape, device)
        sizes = tuple(s.stop - s.start for s in block)
        if writer_of_block(sharding, device) and all(sizes):
            files.add(f"p{device:06d}.h5")
            layout[block] = h5py.VirtualSource(os.path.join(rel, f"p{device:06d}.h5"), "block", shape=sizes)
    return layout, files


def _build_master(h5py, tmp, name, attrs, gen, data, cf=None) -> dict:
    """Put field ``name`` (a VirtualLayout, or the data of a 0-d/empty tensor) into the
    master file ``tmp``, with its dimension scales and attributes (``cf``); returns the
    file's datasets for the XDMF sidecar."""
    with h5py.File(tmp, "a") as f:
        if name in f:
            _dataset.detach_dims(f[name])
            del f[name]
        if isinstance(data, h5py.VirtualLayout):
            dset = f.create_virtual_dataset(name, data)  # every element lies in a block: no fill value
        else:
            dset = f.create_dataset(name, data=data)
        dset.attrs["meshrt"] = attrs
        dset.attrs["meshrt_blocks"] = gen
        _describe_hdf5(h5py, f, dset, name, cf)
        return _xdmf_grids(h5py, f)


def _describe_hdf5(h5py, f, dset, name, cf) -> None:
    """The netCDF-4 side of dataset ``name``: dimension scales (shared with the file's other
    fields where names and lengths agree), coordinate values, the user's attributes."""
    if cf is None or not dset.ndim:
        return
    dims, coords, user, explicit = cf
    used = {k: f[k].shape[0] for k in f if isinstance(f[k], h5py.Dataset) and f[k].ndim == 1 and f[k].is_scale}
    names = _dataset.dims_beside(name, dims, dset.shape, used, explicit)
    for k, v in user.items():
        dset.attrs[k] = v
    _dataset.attach_dims(h5py, f, dset, names, {n: coords[d] for d, n in zip(dims, names) if d in coords})


def _write_hdf5_block(h5py, path, block) -> None:
    """A new HDF5 file holding ``block`` as dataset "block", contiguous, renamed over ``path``.

    h5py lays out the file and allocates the dataset (no fill values written);
    the bytes of a native-endian numeric block then go straight to the
    dataset's offset, after preallocating them (3x faster than h5py's default
    write here, and no HDF5 lock is held meanwhile). A new file, not a rewrite:
    a reader that still has the old one open (a VDS keeps its sources open)
    goes on reading the old data."""
    tmp = f"{path}.tmp"
    data = np.ascontiguousarray(block)
    with h5py.File(tmp, "w") as f:
        dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
        dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
        dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
        dset = f.create_dataset("block", shape=data.shape, dtype=data.dtype, dcpl=dcpl)
        offset = dset.id.get_offset()
        raw = offset is not None and data.dtype.isnative and data.dtype.kind in "biufc"
        if not raw:
            dset.write_direct(data)
    if raw:  # the file type is the memory type: the dataset's storage is these bytes
        with open(tmp, "r+b") as fp:
            _preallocate(fp.fileno(), offset, data.nbytes)
            fp.seek(offset)
            fp.write(data.data)
    os.replace(tmp, path)


def _remove_stale(path):
    parent, base = os.path.split(path)
    for entry in os.listdir(parent):
        if re.fullmatch(re.escape(base) + r"\.tmp-[0-9a-f]{12}", entry):
            _unlink_quietly(os.path.join(parent, entry))


def _to_hdf5_collective(h5py, comm, t, path, name, shape, attrs, where, cf=None):

    def prepare():
        tmp = f"{path}.tmp-{secrets.token_hex(6)}"
        _copy_master(h5py, path, tmp)
        return tmp

    tmp = _root_decides(comm, prepare, where)
    problem = None
    try:
        with h5py.File(tmp, "a", driver="mpio", comm=comm) as f:  # every call here is collective
            if name in f:
                _dataset.detach_dims(f[name])
                del f[name]
            dset = f.create_dataset(name, shape=shape, dtype=t.dtype)
            dset.attrs["meshrt"] = attrs
            _describe_hdf5(h5py, f, dset, name, cf)
            if writer_of_block(t.sharding) and t.interior.size:
                dset[t.shard_slices] = t.interior
    except Exception as e:  # noqa: BLE001
        problem = f"collective write failed: {type(e).__name__}: {e}"
    _agree_or_discard(comm, problem, where, tmp)

    def commit():
        os.replace(tmp, path)
        _remove_stale(path)
        write_xdmf(path)

    with _mpi.internal(where, "barrier before the commit", comm):
        comm.Barrier()
    _root_decides(comm, commit, where)


def from_hdf5(path, name, sharding, *, factory=None):
    """Read dataset ``name`` of an HDF5 file (virtual or not, any writer) into ``sharding``,
    each process reading only its block. ``sharding`` may be a `Mesh` for a file
    meshrt wrote (its saved sharding is used). Halos are zero.

    >>> u = DistributedTensor.from_hdf5("out/fields.h5", "u", Sharding(mesh, [[], [0]]))  # doctest: +SKIP
    """
    path = os.path.abspath(os.fspath(path))
    where = _where("from_hdf5", path, name)
    if not isinstance(sharding, (Sharding, Mesh)):
        raise CheckpointError(f"{where}: sharding: {sharding!r} is neither a Sharding nor a Mesh")
    comm = sharding.comm if isinstance(sharding, Mesh) else _comm_of(sharding)
    h5py = require("h5py", "from_hdf5")

    def inspect():
        if not os.path.exists(path):
            raise CheckpointError(f"no such file {path!r}")
        if os.path.isdir(path) or not h5py.is_hdf5(path):
            raise CheckpointError(f"{path!r} is not an HDF5 file")
        with h5py.File(path, "r") as f:
            if not isinstance(name, str) or name not in f:
                datasets = []
                f.visititems(lambda k, v: datasets.append(k) if isinstance(v, h5py.Dataset) and not v.is_scale else None)
                raise CheckpointError(f"{path!r} holds no field {name!r}; it holds {sorted(datasets)}")
            d = f[name]
            if not isinstance(d, h5py.Dataset):
                raise CheckpointError(f"{path!r}: {name!r} is a group, not a dataset")
            if d.dtype.hasobject or d.dtype.fields is not None:
                raise CheckpointError(f"{path!r}: field {name!r} has dtype {d.dtype}, not a plain numeric dtype")
            saved = d.attrs.get("meshrt")
            try:
                attrs = json.loads(saved) if isinstance(saved, (str, bytes)) else None
            except ValueError as e:
                raise CheckpointError(f"{path!r}: field {name!r}: its 'meshrt' attribute is not JSON ({e})") from None
            return tuple(d.shape), d.dtype.str, attrs

    shape, dtype, attrs = _root_decides(comm, inspect, where)
    sharding = _resolved_everywhere(comm, sharding, attrs, where)

    def read_block(slices):
        with h5py.File(path, "r") as f:
            return f[name][slices] if shape else f[name][()]
    local = _fill_block(comm, where, sharding, shape, np.dtype(dtype), read_block, "h5py")
    return _build(factory, local, sharding, shape, attrs)


# -- XDMF ---------------------------------------------------------------------------------
_XDMF_TYPES = {"f": "Float", "i": "Int", "u": "UInt"}


def write_xdmf(h5path, spacing=None, origin=None) -> str:
    """Write ``<stem>.xmf`` next to the HDF5 file ``h5path``: every 2-D and 3-D numeric
    dataset as cell data on a uniform grid (one grid per shape), so ParaView
    (XDMF3 reader) opens the file. Serial: call it on one process. Returns its path.

    >>> write_xdmf("out/fields.h5")                    # doctest: +SKIP
    'out/fields.xmf'
    """
    h5py = require("h5py", "write_xdmf")
    h5path = os.path.abspath(os.fspath(h5path))
    with h5py.File(h5path, "r") as f:
        grids = _xdmf_grids(h5py, f)
    return _write_xdmf_grids(h5path, grids, spacing, origin)


def _xdmf_grids(h5py, f) -> dict:
    """The 2-D and 3-D numeric datasets of an open HDF5 file, by shape: {shape: [(key, dtype)]}."""
    grids = {}

    def visit(key, obj):
        if isinstance(obj, h5py.Dataset) and obj.ndim in (2, 3) and obj.dtype.kind in _XDMF_TYPES:
            grids.setdefault(obj.shape, []).append((key, obj.dtype))
    f.visititems(visit)
    return grids


def _write_xdmf_grids(h5path, grids, spacing=None, origin=None) -> str:
    fname = os.path.basename(h5path)
    out = ['<?xml version="1.0" ?>', '<Xdmf Version="3.0">', "  <Domain>"]
    for i, (shape, fields) in enumerate(sorted(grids.items())):
        nd = len(shape)
        pts = " ".join(str(n + 1) for n in shape)
        o = list(origin or (0.0,) * nd)[:nd]
        h = list(spacing or (1.0,) * nd)[:nd]
        geo = "ORIGIN_DXDYDZ" if nd == 3 else "ORIGIN_DXDY"
        out += [
            f'    <Grid Name="grid{i}" GridType="Uniform">',
            f'      <Topology TopologyType="{nd}DCoRectMesh" Dimensions="{pts}"/>',
            f'      <Geometry GeometryType="{geo}">',
            f'        <DataItem Format="XML" Dimensions="{nd}">{" ".join(map(repr, map(float, o)))}</DataItem>',
            f'        <DataItem Format="XML" Dimensions="{nd}">{" ".join(map(repr, map(float, h)))}</DataItem>',
            "      </Geometry>",
        ]
        for key, dt in fields:
            out += [
                f'      <Attribute Name="{key}" AttributeType="Scalar" Center="Cell">',
                f'        <DataItem Format="HDF" NumberType="{_XDMF_TYPES[dt.kind]}" Precision="{dt.itemsize}" '
                f'Dimensions="{" ".join(map(str, shape))}">{fname}:/{key}</DataItem>',
                "      </Attribute>",
            ]
        out.append("    </Grid>")
    out += ["  </Domain>", "</Xdmf>", ""]
    text = "\n".join(out)
    xmf = os.path.splitext(h5path)[0] + ".xmf"
    try:
        with open(xmf) as fp:
            if fp.read() == text:  # a time series rewrites the same fields: nothing to do
                return xmf
    except OSError:
        pass
    tmp = f"{xmf}.tmp-{secrets.token_hex(6)}"
    with open(tmp, "w") as fp:
        fp.write(text)
    os.replace(tmp, xmf)
    return xmf
