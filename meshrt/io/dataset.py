"""What makes a Zarr group or an HDF5 file an xarray dataset: dimension names, coordinates, attributes.

Shared by `meshrt.io.formats` (``to_zarr``/``to_hdf5`` snapshots) and `meshrt.io.series`
(time series). xarray reads a variable's dimension names from Zarr v3's
``dimension_names`` and, in HDF5 (netCDF-4, the h5netcdf engine), from the
dimension scales attached to it; a 1-D variable named like a dimension is that
dimension's coordinate. Pure bookkeeping plus small rank-0 writes, no MPI:

>>> dims, coords = grid_coords("to_zarr", (3, 2), ("y", "x"), None, origin=(0.0, 10.0), spacing=(0.5, 1.0))
>>> dims, coords["x"]
(('y', 'x'), array([10., 11.]))
>>> default_dims(3)
('dim_0', 'dim_1', 'dim_2')

Zarr groups meshrt writes carry *consolidated metadata* (every member's
``zarr.json`` inlined in the group's, `write_consolidated`), which xarray reads
first: one small file instead of one per member, and, for a time series, the
single atomic commit point of a step.
"""

from __future__ import annotations

import json
import os
import re
import secrets

import numpy as np

from .npy import _NAME, CheckpointError

__all__ = ["default_dims", "grid_coords", "check_attrs", "write_json", "write_consolidated", "member_docs",
           "netcdf_dimension", "attach_dims", "detach_dims", "dims_beside", "zarr_dims_in_use", "write_zarr_coords"]

# attributes meshrt or the formats own; a user's attrs= may not set them
_RESERVED_ATTRS = {"meshrt", "meshrt_blocks", "meshrt_series", "coordinates", "_ARRAY_DIMENSIONS", "DIMENSION_LIST",
                   "REFERENCE_LIST", "CLASS", "NAME", "_FillValue", "_Netcdf4Dimid", "_NCProperties"}


def default_dims(ndim: int) -> tuple:
    """The dimension names used when none are given: ``dim_0``, ``dim_1``, ...

    >>> default_dims(2)
    ('dim_0', 'dim_1')
    """
    return tuple(f"dim_{d}" for d in range(ndim))


def _check_dims(where, dims, ndim, reserved=()):
    if dims is None:
        return default_dims(ndim)
    if isinstance(dims, str) or not hasattr(dims, "__len__"):
        raise CheckpointError(f"{where}: dims: {dims!r} is not a sequence of dimension names")
    dims = tuple(dims)
    if len(dims) != ndim:
        raise CheckpointError(f"{where}: dims: {dims!r} names {len(dims)} dims, the field has {ndim}")
    for d in dims:
        if not isinstance(d, str) or not _NAME.match(d):
            raise CheckpointError(f"{where}: dims: {d!r} is not a valid dimension name (letters, digits, '_', '.', '-')")
        if d in reserved:
            raise CheckpointError(f"{where}: dims: {d!r} is reserved (the series' own coordinate)")
    if len(set(dims)) != len(dims):
        raise CheckpointError(f"{where}: dims: {dims!r} repeats a name")
    return dims


def _per_dim(where, what, value, ndim):
    if value is None:
        return None
    try:
        out = [float(v) for v in (value if hasattr(value, "__len__") else [value] * ndim)]
    except (TypeError, ValueError):
        raise CheckpointError(f"{where}: {what}: {value!r} is not a number or one number per dim") from None
    if len(out) != ndim or not all(np.isfinite(out)):
        raise CheckpointError(f"{where}: {what}: {value!r} must give one finite number per dim ({ndim} dims)")
    return out


def grid_coords(where, shape, dims=None, coords=None, *, origin=None, spacing=None, reserved=()):
    """Check ``dims`` and build the coordinate arrays: ``(dims, {dim: 1-D array})``.

    ``spacing`` (one number per dim, or one for all) gives every dim the
    coordinate ``origin + spacing * i`` (``origin`` defaults to 0); ``coords``
    maps a dim name to an explicit 1-D array of that dim's length and wins over
    ``spacing``. Raises a CheckpointError naming the bad value.

    >>> grid_coords("w", (2,), ("x",), {"x": [0.1, 0.7]})[1]["x"]
    array([0.1, 0.7])
    """
    shape = tuple(shape)
    dims = _check_dims(where, dims, len(shape), reserved)
    out = {}
    h = _per_dim(where, "spacing", spacing, len(shape))
    o = _per_dim(where, "origin", origin, len(shape))
    if o is not None and h is None:
        raise CheckpointError(f"{where}: origin: {origin!r} needs spacing= too (the coordinate is origin + spacing * i)")
    if h is not None:
        for d, (name, n) in enumerate(zip(dims, shape)):
            out[name] = (o[d] if o else 0.0) + h[d] * np.arange(n, dtype=np.float64)
    if coords is not None:
        if not isinstance(coords, dict):
            raise CheckpointError(f"{where}: coords: {coords!r} is not a dict of dimension name to 1-D array")
        for name, values in coords.items():
            if name not in dims:
                raise CheckpointError(f"{where}: coords: {name!r} is not one of the dims {dims}")
            a = np.asarray(values)
            n = shape[dims.index(name)]
            if a.ndim != 1 or a.shape[0] != n or a.dtype.kind not in "biuf":
                raise CheckpointError(f"{where}: coords[{name!r}]: needs a numeric 1-D array of length {n} "
                                      f"(dim {name!r}), got shape {a.shape} dtype {a.dtype}")
            out[name] = np.ascontiguousarray(a)
    return dims, out


def check_attrs(where, attrs) -> dict:
    """A user's attributes (``units``, ``long_name``, ...): strings, numbers, or lists of numbers.

    >>> check_attrs("w", {"units": "m/s", "scale": 2})
    {'units': 'm/s', 'scale': 2}
    """
    if attrs is None:
        return {}
    if not isinstance(attrs, dict):
        raise CheckpointError(f"{where}: attrs: {attrs!r} is not a dict")
    for k, v in attrs.items():
        if not isinstance(k, str) or not k or k in _RESERVED_ATTRS:
            raise CheckpointError(f"{where}: attrs: the key {k!r} is not a string or is reserved")
        ok = isinstance(v, (str, bool, int, float, np.number)) or (
            isinstance(v, (list, tuple)) and all(isinstance(x, (bool, int, float, np.number)) for x in v))
        if not ok:
            raise CheckpointError(f"{where}: attrs[{k!r}]: {v!r} is not a string, a number or a list of numbers")
    return {k: (v.item() if isinstance(v, np.number) else list(v) if isinstance(v, tuple) else v)
            for k, v in attrs.items()}


def write_json(path, doc) -> None:
    """Write ``doc`` as JSON to ``path`` atomically (a new file renamed over the old)."""
    tmp = f"{path}.tmp-{secrets.token_hex(6)}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)


def member_docs(group) -> dict:
    """The ``zarr.json`` of every direct member of a local Zarr v3 group, by name."""
    out = {}
    for entry in sorted(os.listdir(group)):
        meta = os.path.join(group, entry, "zarr.json")
        if re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", entry) and os.path.isfile(meta):
            with open(meta) as f:
                out[entry] = json.load(f)
    return out


def write_consolidated(group, members=None, attributes=None) -> dict:
    """Rewrite the group's ``zarr.json`` with every member's metadata inlined (Zarr's
    consolidated metadata, which xarray and zarr read instead of the members'),
    atomically. ``members``: the docs to inline (default: read from disk).
    Serial (rank 0). Returns the group's document."""
    meta = os.path.join(group, "zarr.json")
    with open(meta) as f:
        doc = json.load(f)
    if attributes is not None:
        doc["attributes"] = attributes
    doc["consolidated_metadata"] = {"kind": "inline", "must_understand": False,
                                    "metadata": member_docs(group) if members is None else members}
    write_json(meta, doc)
    return doc


# -- HDF5: netCDF-4 dimensions as HDF5 dimension scales ------------------------------------------------
def netcdf_dimension(h5py, f, dim, n, values=None):
    """The dimension scale ``dim`` of length ``n`` in the open HDF5 file ``f``: a coordinate
    variable holding ``values``, or without them netCDF-4's "dimension but not a variable"
    (no data stored). An existing one of another length is an error naming it."""
    if dim in f:
        old = f[dim]
        if not isinstance(old, h5py.Dataset) or old.shape != (n,):
            raise CheckpointError(f"the file already has {dim!r} with shape {getattr(old, 'shape', None)}, "
                                  f"but this field's dim {dim!r} has length {n}: pass other dims=")
        if values is None or (old.dtype.kind in "biuf" and np.array_equal(old[...], values)):
            return old
        _detach_all(h5py, f, old)
        del f[dim]
    if values is not None:
        scale = f.create_dataset(dim, data=values)
        scale.make_scale(dim)
    else:
        scale = f.create_dataset(dim, shape=(n,), dtype="f4")
        scale.make_scale(f"This is a netCDF dimension but not a netCDF variable. {n:10d}")
    return scale


def _detach_all(h5py, f, scale):
    """Detach ``scale`` from every dataset of ``f`` it is attached to (before deleting it)."""
    def visit(key, obj):
        if isinstance(obj, h5py.Dataset) and obj.name != scale.name:
            for d in range(obj.ndim):
                if scale in obj.dims[d].values():
                    obj.dims[d].detach_scale(scale)
    f.visititems(visit)


def detach_dims(dset) -> None:
    """Detach every dimension scale from ``dset`` (before it is deleted: the scales' back
    references would otherwise point at a deleted object)."""
    for d in range(dset.ndim):
        for scale in list(dset.dims[d].values()):
            dset.dims[d].detach_scale(scale)


def attach_dims(h5py, f, dset, dims, coords) -> None:
    """Attach a dimension scale per dim of ``dset`` (made by `netcdf_dimension`)."""
    for d, dim in enumerate(dims):
        dset.dims[d].attach_scale(netcdf_dimension(h5py, f, dim, dset.shape[d], coords.get(dim)))


def dims_beside(name, dims, shape, used, explicit) -> tuple:
    """The dims of field ``name`` next to the dims other fields of its group or file
    already ``used`` (dim -> length). Default names that another field uses with another
    length become ``<name>_dim_<d>``; given names that clash are an error naming both.

    >>> dims_beside("v", ("dim_0",), (3,), {"dim_0": 10}, explicit=False)
    ('v_dim_0',)
    """
    out = []
    for dim, n in zip(dims, shape):
        if used.get(dim, n) != n:
            if explicit:
                raise CheckpointError(f"dims: {dim!r} has length {used[dim]} in another field of the group, "
                                      f"but {n} in {name!r}; name it differently")
            dim = f"{name}_{dim}"
        out.append(dim)
    if name in out and len(out) > 1:
        raise CheckpointError(f"dims: {tuple(out)} holds the field's own name {name!r}, which xarray takes for a "
                              "coordinate; name the dims differently")
    return tuple(out)


def zarr_dims_in_use(group, skip) -> dict:
    """Rank 0: dim -> length over the members of a local Zarr v3 group (member ``skip`` left out)."""
    used = {}
    if os.path.isdir(group):
        for member, doc in member_docs(group).items():
            if member != skip and doc.get("node_type") == "array":
                used.update(zip(doc.get("dimension_names") or (), doc.get("shape", ())))
    return used


def write_zarr_coords(zarr, group, coords, swap) -> None:
    """Rank 0: each coordinate as the 1-D array ``<group>/<dim>`` (``dimension_names == [dim]``), written
    only where it changed, each a new array put in place by ``swap(tmp, target, aside)``."""
    docs = member_docs(group)
    for dim, values in coords.items():
        target = os.path.join(group, dim)
        doc = docs.get(dim)
        if doc is not None:
            if doc.get("dimension_names") != [dim]:
                raise CheckpointError(f"coords: {dim!r} is a field of the group {group!r}, not a coordinate; "
                                      "name the dim differently")
            try:
                if np.array_equal(zarr.open_array(target, mode="r")[...], values):
                    continue
            except Exception:  # noqa: BLE001 - unreadable: rewritten
                pass
        aside = f"{group}.{dim}"
        tmp = f"{aside}.tmp-{secrets.token_hex(6)}"
        zarr.create_array(tmp, data=values, compressors=None, zarr_format=3, dimension_names=(dim,))
        swap(tmp, target, aside)
