"""Time series of running simulations, in one store xarray opens: `open_series`, `from_series`.

    >>> w = open_series("out/run.zarr", {"u": u, "v": v}, dims=("y", "x"), spacing=(h, h))  # doctest: +SKIP
    >>> for step in range(steps):                                                         # doctest: +SKIP
    ...     if step % every == 0:
    ...         w.write(step=step, time=step * dt)
    >>> xr.open_zarr("out/run.zarr")          # u, v: (time, y, x), coordinates time, step, y, x  # doctest: +SKIP
    >>> u = from_series("out/run.zarr", "u", step=500, sharding=other_sharding)         # doctest: +SKIP

Every registered field gets a leading ``time`` dimension; ``time`` (float64)
is its coordinate and ``step`` (int64, along ``time``) a second coordinate.
Each `SeriesWriter.write` appends the current value of every field, every
process writing its own block at once, and commits the step only after every
process finished it, so a killed run keeps every completed step and never
shows a partial one. ``open_series(..., mode="a")`` continues after the last
committed step, on any process count; writing a step not after the last one
(a restart from an older checkpoint) first drops the steps from there on.

Two layouts:

``format="zarr"`` (a directory ``*.zarr``): a Zarr v3 group. A field is an
array of shape ``(steps, *shape)``, chunks ``(1, *chunks)`` (the sharding's
blocks, `meshrt.sharding.chunks.default_chunks`), uncompressed, so a chunk file is the
raw bytes of a block and each process writes its own; uneven or unaligned
shardings are first resharded to the chunk-aligned layout, as in
`meshrt.io.formats.to_zarr`. The commit point of a step is the group's
``zarr.json``, whose consolidated metadata (every member's metadata inlined)
holds the arrays' shapes: one atomic rename by rank 0. xarray and zarr read
the consolidated metadata; the members' own ``zarr.json`` follow right after
(a kill in between leaves them a step behind until the next write or
``mode="a"`` rewrites them).

``format="netcdf"`` (a file ``*.nc``, HDF5 with netCDF-4 dimension scales,
read by xarray's h5netcdf engine): PyPI's h5py has no MPI, so each process
appends its blocks to its own *segment* files
``<path>.blocks/<field>/r<run>/p<device>.s<segment>.h5`` (one contiguous
dataset holding up to a few hundred steps; a step's block goes to its offset
as raw bytes, never touching a committed step's bytes), and rank 0 rewrites
the small master ``path`` (new file, renamed over the old) whose field
``u`` is a virtual dataset over the committed steps of the segments, with
the dimension scales ``time``, ``step`` and the grid's coordinates. A
restart on another layout (process count, sharding) starts a new *run* of
segment files; the virtual dataset maps each run's steps.

Data are not fsynced: a killed process, not a dying machine.
"""

from __future__ import annotations

import json
import math
import os
import secrets
from collections.abc import Mapping

import numpy as np

from . import dataset as _dataset
from ..sharding.chunks import ChunkBox, aligned_sharding, default_chunks, is_aligned, owned_chunks, writer_of_block
from .formats import (
    _build, _check_tensor, _fill_block, _meshrt_attrs, _preallocate, _resolve_sharding, _swap_into_place,
    _write_raw_chunks, remove_later, require,
)
from .npy import CheckpointError, _agree, _comm_of, _root_decides, _unlink_quietly
from ..mesh import AbstractMesh, Mesh
from ..sharding.spec import Sharding

__all__ = ["open_series", "from_series", "SeriesWriter"]

_VERSION = 1
_TIME_CHUNK = 1024  # time and step: one chunk file per 1024 steps, rewritten (new file + rename) by rank 0
_SEGMENT_BYTES = 1 << 30  # netcdf: a segment file holds this many bytes of one process's blocks (sparse until written)
_RESERVED = ("time", "step")


def _format_of(path, fmt, where):
    if fmt is None:
        low = path.lower()
        if low.endswith(".zarr"):
            return "zarr"
        if low.endswith((".nc", ".h5", ".hdf5", ".nc4")):
            return "netcdf"
        raise CheckpointError(f"{where}: format: cannot tell it from the path's suffix; "
                              "pass format='zarr' or format='netcdf' (or name it *.zarr / *.nc)")
    if fmt not in ("zarr", "netcdf"):
        raise CheckpointError(f"{where}: format: {fmt!r} is neither 'zarr' nor 'netcdf'")
    return fmt


class _Field:
    """What every process knows about one field of a series."""

    def __init__(self, name, shape, dtype, dims, attrs, sharding, meshrt_attrs):
        self.name, self.shape, self.dtype, self.dims = name, tuple(shape), np.dtype(dtype), tuple(dims)
        self.attrs, self.meshrt = attrs, meshrt_attrs
        self.sharding = sharding.replace(halo_sizes=None)  # the layout written (files hold no halos)
        self.chunks = default_chunks(self.sharding, self.shape)


def _check_fields(where, fields, dims, coords, origin, spacing, attrs):
    """Every process alike: the fields' specs and the coordinates, or a CheckpointError."""
    if not isinstance(fields, Mapping) or not fields:
        raise CheckpointError(f"{where}: fields: {fields!r} is not a non-empty dict of name to DistributedTensor")
    first = next(iter(fields.values()))
    if not hasattr(first, "sharding"):
        raise CheckpointError(f"{where}: fields: {type(first).__name__} is not a DistributedTensor")
    comm = _comm_of(first.sharding)
    problem, specs, all_coords, sizes = None, {}, {}, {}
    try:
        if attrs is not None and (not isinstance(attrs, Mapping) or set(attrs) - set(fields)):
            raise CheckpointError(f"attrs: {attrs!r} must map field names (of {sorted(fields)}) to dicts of attributes")
        if coords is not None and not isinstance(coords, Mapping):
            raise CheckpointError(f"coords: {coords!r} is not a dict of dimension name to 1-D array")
        for name, t in fields.items():
            complaint = _check_tensor(t, name, need_name=True)
            if complaint is not None:
                raise CheckpointError(f"field {name!r}: {complaint}")
            if name in _RESERVED:
                raise CheckpointError(f"fields: {name!r} is reserved for the series' coordinate")
            if t.sharding.mesh.comm is not comm and _comm_of(t.sharding).Compare(comm) not in (0, 1):
                raise CheckpointError(f"field {name!r}: its mesh is not on the same processes as the others'")
            d = dims.get(name) if isinstance(dims, Mapping) else dims
            mine = None if coords is None else {k: v for k, v in coords.items() if k in (d or ())}
            d, c = _dataset.grid_coords(f"field {name!r}", t.global_shape, d, mine, origin=origin, spacing=spacing,
                                        reserved=_RESERVED)
            for dim, n in zip(d, t.global_shape):
                if sizes.setdefault(dim, (n, name))[0] != n:
                    raise CheckpointError(f"dims: {dim!r} has length {sizes[dim][0]} in field {sizes[dim][1]!r} "
                                          f"but {n} in field {name!r}; name them differently")
                if dim in fields:
                    raise CheckpointError(f"dims: {dim!r} is also a field's name")
            all_coords.update(c)
            a = _dataset.check_attrs(f"attrs[{name!r}]", None if attrs is None else attrs.get(name))
            specs[name] = _Field(name, t.global_shape, t.dtype.newbyteorder("="), d, a, t.sharding, _meshrt_attrs(t))
        if coords is not None and set(coords) - set(sizes):
            raise CheckpointError(f"coords: {sorted(set(coords) - set(sizes))} are not dims of any field "
                                  f"(dims: {sorted(sizes)})")
    except CheckpointError as e:
        problem = str(e)
    key = None if problem else tuple((s.name, s.shape, s.dtype.str, s.dims) for s in specs.values())
    _agree(comm, problem, where, key=key)
    return comm, specs, all_coords


def open_series(path, fields, dims=None, coords=None, *, origin=None, spacing=None, attrs=None, format=None,
                mode="w") -> "SeriesWriter":
    """Open a time series for writing: ``w.write(step=, time=)`` appends every field (collective).

    Parameters
    ----------
    path : str or os.PathLike
        The store: a directory ``*.zarr`` or a file ``*.nc`` (netCDF-4/HDF5).
    fields : dict
        Field name to `DistributedTensor`, all on the same processes. Their
        current values are written at each `SeriesWriter.write`.
    dims : sequence of str or dict, optional
        The dimension names of the fields (one tuple for all, or per field);
        default ``dim_0, dim_1, ...``. ``time`` and ``step`` are reserved.
    coords : dict, optional
        Dimension name to an explicit 1-D coordinate array.
    origin, spacing : float or sequence of float, optional
        Coordinates ``origin + spacing * i`` for every dim (``coords`` wins).
    attrs : dict, optional
        Field name to its attributes (``{"u": {"units": "m", "long_name": ...}}``).
    format : {"zarr", "netcdf"}, optional
        Default: from the suffix (``.zarr``; ``.nc``, ``.h5``).
    mode : {"w", "a"}
        ``"w"`` starts a new series (replacing one at ``path``); ``"a"``
        continues the one there (or starts one), on any process count.

    Returns
    -------
    SeriesWriter

    Raises
    ------
    CheckpointError
        On every process: a bad field, dim, coordinate or attribute (named), a
        series at ``path`` whose fields differ (``mode="a"``), or a failed write.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> s = Sharding(Mesh((-1,), ("x",)), [["x"]])
    >>> u = DistributedTensor.from_global(np.arange(4.0), s)
    >>> w = open_series(os.path.join(tmp.name, "run.zarr"), {"u": u}, dims=("x",), spacing=0.5)
    >>> for step in range(3):
    ...     w.write(step=step, time=0.1 * step)
    ...     u += 1.0
    >>> w.steps
    [0, 1, 2]
    >>> from_series(os.path.join(tmp.name, "run.zarr"), "u", step=2, sharding=s).gather()
    array([2., 3., 4., 5.])
    >>> tmp.cleanup()
    """
    path = os.path.abspath(os.fspath(path))
    where = f"open_series({path!r})"
    fmt = _format_of(path, format, where)
    if mode not in ("w", "a"):
        raise CheckpointError(f"{where}: mode: {mode!r} is neither 'w' nor 'a'")
    comm, specs, coords = _check_fields(where, fields, dims, coords, origin, spacing, attrs)
    backend = (_ZarrSeries if fmt == "zarr" else _NetCDFSeries)(path, comm, specs, coords, where)
    state = _root_decides(comm, lambda: backend.open_root(mode), where)
    backend.adopt(state)
    return SeriesWriter(backend, comm, dict(fields), where)


class SeriesWriter:
    """An open time series (`open_series`): `write` appends a step of every field.

    Attributes
    ----------
    path : str
        The store.
    steps : list of int
        The committed steps, in order (every process alike).

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> u = DistributedTensor.from_global(np.zeros(4), Sharding(Mesh((-1,)), [[0]]))
    >>> with open_series(os.path.join(tmp.name, "run.nc"), {"u": u}) as w:
    ...     w.write(step=10, time=1.0)
    >>> w.steps
    [10]
    >>> tmp.cleanup()
    """

    def __init__(self, backend, comm, fields, where):
        self._backend, self._comm, self._fields, self._where = backend, comm, fields, where
        self.path = backend.path

    @property
    def steps(self) -> list:
        return list(self._backend.steps)

    def write(self, step, time=None, fields=None) -> None:
        """Append the current value of every registered field as step ``step`` (collective).

        ``time`` defaults to the step. ``fields`` replaces some registered
        tensors from now on (same names, shapes, dtypes; any sharding), for
        codes that swap buffers. A step not after the last committed one
        first drops the committed steps from it on.

        Examples
        --------
        >>> w.write(step=100, time=0.5, fields={"u": u_new})  # doctest: +SKIP
        """
        b, comm, where = self._backend, self._comm, f"{self._where}.write(step={step!r})"
        problem = None
        try:
            if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)):
                raise CheckpointError(f"step: {step!r} is not an int")
            step = int(step)
            time = float(step if time is None else time)
            if not math.isfinite(time):
                raise CheckpointError(f"time: {time!r} is not finite")
            if fields is not None:
                for name, t in fields.items():
                    if name not in b.specs:
                        raise CheckpointError(f"fields: {name!r} is not a field of the series ({sorted(b.specs)})")
                    spec, complaint = b.specs[name], _check_tensor(t, name)
                    if complaint is None and (tuple(t.global_shape) != spec.shape or t.dtype != spec.dtype):
                        complaint = (f"shape {tuple(t.global_shape)} dtype {t.dtype}, but the series holds "
                                     f"shape {spec.shape} dtype {spec.dtype}")
                    if complaint is not None:
                        raise CheckpointError(f"field {name!r}: {complaint}")
        except (CheckpointError, TypeError, ValueError, AttributeError) as e:
            problem = str(e)
        _agree(comm, problem, where, key=None if problem else (step, time))
        if fields is not None:
            self._fields.update(fields)
        index = b.index_for(step)
        if index < len(b.steps):  # a restart from an older step: drop the steps from here on, first
            state = _root_decides(comm, lambda: b.truncate_root(index), where)
            b.truncated(index, state)
        b.before_write(index, step, time)
        problem = None
        for name, spec in b.specs.items():  # every field, even after a failure: a reshard inside is collective
            try:
                b.write_local(index, spec, self._fields[name])
            except Exception as e:  # noqa: BLE001 - reported on every process
                problem = problem or f"field {name!r}: writing this process's block failed: {type(e).__name__}: {e}"
        _agree(comm, problem, where)  # every process finished the step: only now is it committed
        _root_decides(comm, lambda: b.commit_root(index, step, time), where)
        b.committed(index, step, time)

    def close(self) -> None:
        """Close the files this process holds open (the committed steps need nothing more)."""
        self._backend.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# -- Zarr ------------------------------------------------------------------------------------------------
class _Common:
    def __init__(self, path, comm, specs, coords, where):
        self.path, self.comm, self.specs, self.coords, self.where = path, comm, specs, coords, where
        self.steps, self.times = [], []

    def index_for(self, step):
        if not self.steps or step > self.steps[-1]:
            return len(self.steps)
        return int(np.searchsorted(np.asarray(self.steps), step))

    def adopt(self, state):
        self.steps, self.times = list(state["steps"]), list(state["times"])

    def truncated(self, index, state):
        del self.steps[index:], self.times[index:]

    def committed(self, index, step, time):
        self.steps.append(step)
        self.times.append(time)

    def before_write(self, index, step, time):
        pass

    def close(self):
        pass

    def _series_attrs(self, fmt):
        return {"version": _VERSION, "format": fmt, "fields": sorted(self.specs)}

    def _check_existing(self, saved_fields):
        """Rank 0, mode="a": the fields saved (name -> (shape, dtype str, dims)) against ours."""
        if sorted(saved_fields) != sorted(self.specs):
            raise CheckpointError(f"{self.path!r} holds fields {sorted(saved_fields)}, not {sorted(self.specs)}; "
                                  "open it with the same fields, or with mode='w' to start anew")
        for name, (shape, dtype, dims) in saved_fields.items():
            s = self.specs[name]
            if (tuple(shape), np.dtype(dtype), tuple(dims)) != (s.shape, s.dtype, ("time",) + s.dims):
                raise CheckpointError(f"{self.path!r}: field {name!r} is saved with shape {tuple(shape)} dtype "
                                      f"{np.dtype(dtype)} dims {tuple(dims)}, not shape {s.shape} dtype {s.dtype} "
                                      f"dims {('time',) + s.dims}")


def _chunk_path(root, coords):
    return os.path.join(root, "c", *map(str, coords))


def _little(a):
    a = np.ascontiguousarray(a)
    return a if a.dtype.byteorder in "<|" or (a.dtype.byteorder == "=" and np.little_endian) else a.astype(
        a.dtype.newbyteorder("<"))


class _ZarrSeries(_Common):
    def open_root(self, mode):
        exists = os.path.exists(os.path.join(self.path, "zarr.json"))
        if mode == "a" and exists:
            return self._open_existing()
        parent = os.path.dirname(self.path)
        if not os.path.isdir(parent):
            raise CheckpointError(f"directory {parent!r} does not exist")
        if os.path.exists(self.path) and not exists:
            raise CheckpointError(f"{self.path!r} exists and is not a Zarr store")
        zarr = require("zarr", "open_series")
        tmp = f"{self.path}.tmp-{secrets.token_hex(6)}"
        zarr.open_group(tmp, mode="w", zarr_format=3, attributes={"meshrt_series": self._series_attrs("zarr")})
        for s in self.specs.values():
            zarr.create_array(os.path.join(tmp, s.name), shape=(0,) + s.shape, chunks=(1,) + s.chunks,
                              dtype=s.dtype, fill_value=0, compressors=None, zarr_format=3,
                              dimension_names=("time",) + s.dims,
                              attributes={"meshrt": s.meshrt, "coordinates": "step", **s.attrs})
        for name, dtype in (("time", "float64"), ("step", "int64")):
            zarr.create_array(os.path.join(tmp, name), shape=(0,), chunks=(_TIME_CHUNK,), dtype=dtype, fill_value=0,
                              compressors=None, zarr_format=3, dimension_names=("time",),
                              attributes={"long_name": name})
        for dim, values in self.coords.items():
            zarr.create_array(os.path.join(tmp, dim), data=values, compressors=None, zarr_format=3,
                              dimension_names=(dim,))
        self.group = _dataset.write_consolidated(tmp)
        _swap_into_place(tmp, self.path, self.path)
        return {"steps": [], "times": [], "chunks": {s.name: s.chunks for s in self.specs.values()}}

    def _open_existing(self):
        zarr = require("zarr", "open_series")
        with open(os.path.join(self.path, "zarr.json")) as f:
            group = json.load(f)
        meta = group.get("consolidated_metadata", {}).get("metadata") if isinstance(group, dict) else None
        if "meshrt_series" not in group.get("attributes", {}) or not isinstance(meta, dict):
            raise CheckpointError(f"{self.path!r} is a Zarr store but not a meshrt series")
        saved = {n: (m["shape"][1:], m["data_type"], m.get("dimension_names") or ())
                 for n, m in meta.items() if n in group["attributes"]["meshrt_series"]["fields"]}
        self._check_existing(saved)
        for n in self.specs:
            codecs = meta[n].get("codecs", [])
            if len(codecs) != 1 or codecs[0].get("name") != "bytes" or \
                    codecs[0].get("configuration", {}).get("endian", "little") != "little":
                raise CheckpointError(f"{self.path!r}: field {n!r} has codecs {codecs}; a series appends raw "
                                      "little-endian chunks (codec 'bytes' only)")
        for name, doc in meta.items():  # the members' own metadata, maybe a step behind after a kill: repaired
            _dataset.write_json(os.path.join(self.path, name, "zarr.json"), doc)
        self.group = group
        g = zarr.open_group(self.path, mode="r", use_consolidated=True)
        return {"steps": [int(x) for x in g["step"][...]], "times": [float(x) for x in g["time"][...]],
                "chunks": {n: tuple(meta[n]["chunk_grid"]["configuration"]["chunk_shape"][1:]) for n in self.specs}}

    def adopt(self, state):
        super().adopt(state)
        for name, chunks in state["chunks"].items():
            self.specs[name].chunks = tuple(chunks)

    def write_local(self, index, spec, t):
        shape, chunks = spec.shape, spec.chunks
        aligned = aligned_sharding(t.sharding, shape, chunks)
        box = owned_chunks(aligned, shape, chunks)
        src = t if is_aligned(t.sharding, shape, chunks) else t.reshard(aligned)
        try:
            if box.writes and all(b > a for a, b in zip(box.start, box.stop)):
                root = os.path.join(self.path, spec.name)
                _write_raw_chunks(lambda c: _chunk_path(root, c), _little(src.interior)[None],
                                  (slice(index, index + 1),) + tuple(src.shard_slices), (index + 1,) + shape,
                                  (1,) + chunks, ChunkBox((index,) + box.start, (index + 1,) + box.stop, True))
        finally:
            if src is not t:
                src.free()

    def _write_time_chunks(self, steps, times, upto):
        """Rank 0: the time and step chunk that holds index ``upto - 1`` (new file + rename)."""
        c = (upto - 1) // _TIME_CHUNK
        for name, values, dtype in (("time", times, "<f8"), ("step", steps, "<i8")):
            buf = np.zeros(_TIME_CHUNK, dtype)
            part = values[c * _TIME_CHUNK:upto]
            buf[:len(part)] = part
            path = _chunk_path(os.path.join(self.path, name), (c,))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp-{secrets.token_hex(6)}"
            with open(tmp, "wb") as f:
                f.write(buf.data)
            os.replace(tmp, path)

    def _set_length(self, nt):
        """Rank 0: commit ``nt`` steps (the group's zarr.json, one rename), then the members' zarr.json."""
        meta = self.group["consolidated_metadata"]["metadata"]
        names = list(self.specs) + ["time", "step"]
        for name in names:
            meta[name]["shape"][0] = nt
        _dataset.write_json(os.path.join(self.path, "zarr.json"), self.group)
        for name in names:
            _dataset.write_json(os.path.join(self.path, name, "zarr.json"), meta[name])

    def truncate_root(self, index):
        self._set_length(index)
        return None

    def commit_root(self, index, step, time):
        steps, times = self.steps[:index] + [step], self.times[:index] + [time]
        self._write_time_chunks(steps, times, index + 1)
        self._set_length(index + 1)


# -- netCDF-4 (HDF5) ------------------------------------------------------------------------------------
class _NetCDFSeries(_Common):
    """Segment files per process and run; a master file rank 0 rewrites each step."""

    def blocks_dir(self):
        return f"{self.path}.blocks"

    def _run_record(self, rid, first):
        def layout(s):
            mesh = s.sharding.mesh
            return {"mesh_shape": list(mesh.shape), "axis_names": list(mesh.axis_names) if mesh.axis_names else None,
                    "sharding": str(s.sharding), "cap": self._cap(s)}
        return {"id": rid, "first": first, "layout": {n: layout(s) for n, s in self.specs.items()}}

    @staticmethod
    def _cap(spec):
        widest = math.prod(spec.chunks) * spec.dtype.itemsize  # the widest block (default_chunks)
        return max(1, min(4096, _SEGMENT_BYTES // max(1, widest)))

    def open_root(self, mode):
        h5py = require("h5py", "open_series")
        self.h5py = h5py
        if mode == "a" and os.path.exists(self.path):
            return self._open_existing(h5py)
        parent = os.path.dirname(self.path)
        if not os.path.isdir(parent):
            raise CheckpointError(f"directory {parent!r} does not exist")
        if os.path.isdir(self.path):
            raise CheckpointError(f"{self.path!r} is a directory, not an HDF5 file")
        self.meta = {**self._series_attrs("netcdf"), "runs": [self._run_record(0, 0)],
                     "dims": {n: list(s.dims) for n, s in self.specs.items()}}
        self._write_master(h5py, [], [], 0)  # the new, empty series replaces the old one first
        if os.path.exists(self.blocks_dir()):
            old = f"{self.blocks_dir()}.old-{secrets.token_hex(6)}"
            os.rename(self.blocks_dir(), old)
            remove_later(old)
        return {"steps": [], "times": [], "run": self.meta["runs"][-1]}

    def _open_existing(self, h5py):
        if os.path.isdir(self.path) or not h5py.is_hdf5(self.path):
            raise CheckpointError(f"{self.path!r} is not an HDF5 file")
        with h5py.File(self.path, "r") as f:
            raw = f.attrs.get("meshrt_series")
            if raw is None:
                raise CheckpointError(f"{self.path!r} is an HDF5 file but not a meshrt series")
            meta = json.loads(raw)
            steps = [int(x) for x in f["step"][...]]
            times = [float(x) for x in f["time"][...]]
            saved = {n: (f[n].shape[1:], f[n].dtype.str, ["time"] + meta["dims"][n]) for n in meta["fields"]}
        self._check_existing(saved)
        self.meta = meta
        runs = meta["runs"]
        last, mine = runs[-1], self._run_record(runs[-1]["id"], runs[-1]["first"])
        if last["layout"] != mine["layout"]:  # another process count or sharding: a new run of segment files
            runs.append(self._new_run(len(steps)))
        return {"steps": steps, "times": times, "run": runs[-1]}

    def _new_run(self, first):
        rid = max(r["id"] for r in self.meta["runs"]) + 1
        for name in self.specs:  # left by a killed job whose run never committed a step: no master names them
            _unlink_quietly(os.path.join(self.blocks_dir(), name, "r%03d" % rid))
        return self._run_record(rid, first)

    def adopt(self, state):
        super().adopt(state)
        self.run = state["run"]
        self.files = {}  # (field, run id, segment) -> (fd, offset of the dataset's bytes)
        self.master_tmp = None

    def truncate_root(self, index):
        runs = self.meta["runs"]
        if index < runs[-1]["first"]:  # this job's run started after the new end: a new run from there
            new = self._new_run(index)  # an id no committed run has: its files are not the ones read now
            self.meta["runs"] = [r for r in runs if r["first"] < index] + [new]
        self._write_master(self.h5py, self.steps[:index], self.times[:index], index)
        return self.meta["runs"][-1]

    def truncated(self, index, state):
        super().truncated(index, state)
        if state["id"] != self.run["id"]:
            self.close()
            self.run = state

    def _segment_path(self, name, rid, device, seg):
        return os.path.join(self.blocks_dir(), name, "r%03d" % rid, "p%06d.s%05d.h5" % (device, seg))

    def _segment(self, spec, seg, block_shape):
        key = (spec.name, self.run["id"], seg)
        if key in self.files:
            return self.files[key]
        h5py = require("h5py", "open_series")
        cap = self.run["layout"][spec.name]["cap"]
        path = self._segment_path(spec.name, self.run["id"], spec.sharding.mesh.rank, seg)
        offset = None
        if os.path.exists(path):  # a restart: the committed steps in it stay, the next go after them
            try:
                with h5py.File(path, "r") as f:
                    d = f["block"]
                    if d.shape == (cap,) + block_shape and d.dtype == spec.dtype:
                        offset = d.id.get_offset()
            except Exception:  # noqa: BLE001 - a segment file made by a killed step: made anew below
                offset = None
        if offset is None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.tmp"
            with h5py.File(tmp, "w") as f:
                dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
                dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
                dcpl.set_fill_time(h5py.h5d.FILL_TIME_NEVER)
                offset = f.create_dataset("block", shape=(cap,) + block_shape, dtype=spec.dtype, dcpl=dcpl).id.get_offset()
            os.replace(tmp, path)
        if offset is None:
            raise CheckpointError(f"{path!r}: HDF5 gave the segment dataset no contiguous storage")
        for k in [k for k in self.files if k[0] == spec.name]:  # the previous segment is full
            os.close(self.files.pop(k)[0])
        self.files[key] = (os.open(path, os.O_RDWR), offset)
        return self.files[key]

    def write_local(self, index, spec, t):
        src = t if t.sharding.replace(halo_sizes=None) == spec.sharding else t.reshard(spec.sharding)
        try:
            if writer_of_block(spec.sharding) and src.interior.size:
                data = _little(src.interior) if spec.dtype.kind != "b" else np.ascontiguousarray(src.interior)
                seg, k = divmod(index - self.run["first"], self.run["layout"][spec.name]["cap"])
                fd, offset = self._segment(spec, seg, data.shape)
                pos = offset + k * data.nbytes
                _preallocate(fd, pos, data.nbytes)
                view, done = memoryview(data.reshape(-1).view(np.uint8)), 0
                while done < data.nbytes:
                    done += os.pwrite(fd, view[done:], pos + done)
        finally:
            if src is not t:
                src.free()

    def before_write(self, index, step, time):
        # Rank 0 builds the next master while every process (itself too) writes: it names
        # the segment files, not their data. Renamed into place only at the commit.
        if self.comm.Get_rank() == 0:
            if self.master_tmp is not None:  # built for a step that failed
                _unlink_quietly(self.master_tmp)
            self.master_tmp, self.master_error = None, None
            try:
                self.master_tmp = self._write_master(self.h5py, self.steps[:index] + [step],
                                                     self.times[:index] + [time], index + 1, commit=False)
            except Exception as e:  # noqa: BLE001 - the commit reports it on every process
                self.master_error = f"{type(e).__name__}: {e}"

    def commit_root(self, index, step, time):
        if self.master_tmp is None:
            raise CheckpointError(f"building the master file failed: {self.master_error}")
        os.replace(self.master_tmp, self.path)
        self.master_tmp = None

    def _write_master(self, h5py, steps, times, nt, commit=True):
        """Rank 0: a new master file for ``nt`` committed steps; renamed over ``path`` when ``commit``."""
        tmp = f"{self.path}.tmp-{secrets.token_hex(6)}"
        try:
            with h5py.File(tmp, "w") as f:
                f.attrs["meshrt_series"] = json.dumps(self.meta)
                time = f.create_dataset("time", data=np.asarray(times, np.float64), dtype=np.float64)
                time.make_scale("time")
                time.attrs["long_name"] = "time"
                step = f.create_dataset("step", data=np.asarray(steps, np.int64), dtype=np.int64)
                step.attrs["long_name"] = "step"
                step.dims[0].attach_scale(time)
                for dim, values in self.coords.items():
                    _dataset.netcdf_dimension(h5py, f, dim, len(values), values)
                for name, spec in self.specs.items():
                    dset = self._field_dataset(h5py, f, spec, nt)
                    dset.attrs["meshrt"] = json.dumps(spec.meshrt)
                    dset.attrs["coordinates"] = "step"
                    for k, v in spec.attrs.items():
                        dset.attrs[k] = v
                    _dataset.attach_dims(h5py, f, dset, ("time",) + spec.dims, self.coords)
        except BaseException:
            _unlink_quietly(tmp)
            raise
        if commit:
            os.replace(tmp, self.path)
            return None
        return tmp

    def _field_dataset(self, h5py, f, spec, nt):
        if nt == 0 or not all(spec.shape):
            return f.create_dataset(spec.name, shape=(nt,) + spec.shape, dtype=spec.dtype)
        layout = h5py.VirtualLayout(shape=(nt,) + spec.shape, dtype=spec.dtype)
        runs = [r for r in self.meta["runs"] if r["first"] < nt]
        base = os.path.dirname(self.path)
        for i, run in enumerate(runs):
            end = runs[i + 1]["first"] if i + 1 < len(runs) else nt
            cap = run["layout"][spec.name]["cap"]
            sharding = self._run_sharding(run, spec)
            for device in range(sharding.mesh.size):
                block = sharding.shard_slices(spec.shape, device)
                sizes = tuple(s.stop - s.start for s in block)
                if not (writer_of_block(sharding, device) and all(sizes)):
                    continue
                for seg in range(-(-(end - run["first"]) // cap)):
                    a = run["first"] + seg * cap
                    b = min(a + cap, end)
                    rel = os.path.relpath(self._segment_path(spec.name, run["id"], device, seg), base)
                    layout[(slice(a, b),) + tuple(block)] = h5py.VirtualSource(rel, "block", shape=(cap,) + sizes)[0:b - a]
        return f.create_virtual_dataset(spec.name, layout)

    def _run_sharding(self, run, spec):
        if run is self.run or run["id"] == self.run["id"]:
            return spec.sharding
        cache = self.__dict__.setdefault("_parsed", {})
        key = (run["id"], spec.name)
        if key not in cache:
            saved = run["layout"][spec.name]
            cache[key] = Sharding.parse(saved["sharding"], AbstractMesh(tuple(saved["mesh_shape"]), saved["axis_names"]))
        return cache[key]

    def close(self):
        for fd, _ in self.files.values():
            os.close(fd)
        self.files = {}


# -- reading ----------------------------------------------------------------------------------------------
def from_series(path, name, step=None, sharding=None, *, index=None, factory=None):
    """Read one step of field ``name`` of a series into ``sharding`` (any process count).

    Parameters
    ----------
    path : str or os.PathLike
        The series (``*.zarr`` or ``*.nc``).
    name : str
        The field.
    step : int, optional
        The step (as given to `SeriesWriter.write`); default the last one.
    sharding : Sharding or Mesh
        The layout to read into, or a `Mesh` for the sharding the series was
        written with.
    index : int, optional
        The position along ``time`` instead of ``step`` (negative counts from
        the end).

    Returns
    -------
    DistributedTensor
        Halos zero, the saved ``periodic`` flags restored.

    Raises
    ------
    CheckpointError
        On every process: no such series, field or step (the message lists
        what there is), or a shape the sharding cannot hold.

    Examples
    --------
    >>> u = from_series("out/run.zarr", "u", step=500, sharding=mesh)  # doctest: +SKIP
    """
    path = os.path.abspath(os.fspath(path))
    where = f"from_series({path!r}, {name!r}, step={step!r})"
    if not isinstance(sharding, (Sharding, Mesh)):
        raise CheckpointError(f"{where}: sharding: {sharding!r} is neither a Sharding nor a Mesh")
    comm = sharding.comm if isinstance(sharding, Mesh) else _comm_of(sharding)
    if os.path.isdir(path):
        zarr = require("zarr", "from_series")

        def inspect():
            if not os.path.exists(os.path.join(path, "zarr.json")):
                raise CheckpointError(f"{path!r} is not a Zarr store")
            g = zarr.open_group(path, mode="r", use_consolidated=True)
            if "meshrt_series" not in g.attrs:
                raise CheckpointError(f"{path!r} is not a meshrt series")
            fields = list(g.attrs["meshrt_series"]["fields"])
            if name not in fields:
                raise CheckpointError(f"{path!r} holds no field {name!r}; it holds {sorted(fields)}")
            a = g[name]
            return _pick(path, [int(x) for x in g["step"][...]], step, index), tuple(a.shape[1:]), \
                np.dtype(a.dtype).str, dict(a.attrs).get("meshrt")

        def read(i):
            return lambda slices: zarr.open_group(path, mode="r", use_consolidated=True)[name][(i,) + tuple(slices)]
    else:
        h5py = require("h5py", "from_series")

        def inspect():
            if not os.path.exists(path):
                raise CheckpointError(f"no such file {path!r}")
            if not h5py.is_hdf5(path):
                raise CheckpointError(f"{path!r} is neither a Zarr store nor an HDF5 file")
            with h5py.File(path, "r") as f:
                if "meshrt_series" not in f.attrs:
                    raise CheckpointError(f"{path!r} is not a meshrt series")
                fields = json.loads(f.attrs["meshrt_series"])["fields"]
                if name not in fields:
                    raise CheckpointError(f"{path!r} holds no field {name!r}; it holds {sorted(fields)}")
                d = f[name]
                attrs = d.attrs.get("meshrt")
                return _pick(path, [int(x) for x in f["step"][...]], step, index), tuple(d.shape[1:]), \
                    d.dtype.str, json.loads(attrs) if attrs is not None else None

        def read(i):
            def block(slices):
                with h5py.File(path, "r") as f:
                    return f[name][(i,) + tuple(slices)]
            return block
    i, shape, dtype, attrs = _root_decides(comm, inspect, where)
    resolved, problem = _resolve_sharding(sharding, attrs)
    _agree(comm, problem, where)
    library = "zarr" if os.path.isdir(path) else "h5py"
    local = _fill_block(comm, where, resolved, shape, np.dtype(dtype), read(i), library)
    return _build(factory, local, resolved, shape, attrs)


def _pick(path, steps, step, index):
    """The position along time of ``step`` (or ``index``), or a CheckpointError listing the steps."""
    if not steps:
        raise CheckpointError(f"{path!r} holds no step yet")
    if index is not None:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not -len(steps) <= index < len(steps):
            raise CheckpointError(f"index: {index!r} is not a position in the {len(steps)} steps")
        return int(index) % len(steps)
    if step is None:
        return len(steps) - 1
    if step not in steps:
        shown = steps if len(steps) <= 10 else steps[:5] + ["..."] + steps[-5:]
        raise CheckpointError(f"{path!r} holds no step {step!r}; it holds steps {shown}")
    return steps.index(step)
