"""ParaView time series: VTK XML image data written in parallel, one piece per process.

    >>> for step in range(0, 100, 10):                       # doctest: +SKIP
    ...     write_vtk("out/wave", {"u": u, "v": v}, step=step, time=step * dt, spacing=(h, h))

writes, per step, ``out/wave_000010.pvti`` (the whole grid, listing the
pieces) and ``out/wave_000010/p<rank>.vti`` (one piece per writing process:
VTK XML ``ImageData``, raw binary appended data, little-endian, UInt64
headers), and keeps ``out/wave.pvd`` (a collection of every step written,
with its time) up to date, so ParaView opens ``wave.pvd`` as one time series.

Tensor dim 0 is VTK's x, dim 1 y, dim 2 z. The grid has as many cells as the
smallest field; a field of that shape is cell data, a field one longer along
every dim is point data (the cells' corners), and a field one longer along
some dims only (faces of a staggered grid, `meshrt.stencil.staggered`) is
refused: VTK image data has no face data, so interpolate it first. Fields on
other layouts are resharded to the first field's (cell) layout; point fields
get the one layer of points above their block from the neighbour through a
one-wide high halo, since pieces share their boundary points.

A step is written to temporaries and renamed into place by rank 0 after every
process succeeded; the ``.pvd`` is replaced atomically, so an interrupted
step leaves the earlier ones readable. Errors are raised as the same
`CheckpointError` on every process.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import xml.etree.ElementTree as ET
from collections import namedtuple

import numpy as np

from ..runtime import mpi as _mpi
from ..sharding.chunks import writer_of_block
from ..errors import ShardingError
from .formats import remove_later
from .npy import _NAME, CheckpointError, _agree, _agree_or_discard, _comm_of, _root_decides
from ..sharding.spec import Sharding

__all__ = ["write_vtk", "vtk_grid", "vtk_pieces", "VtkGrid"]

_VTK_TYPES = {
    "f4": "Float32", "f8": "Float64", "i1": "Int8", "u1": "UInt8", "i2": "Int16", "u2": "UInt16",
    "i4": "Int32", "u4": "UInt32", "i8": "Int64", "u8": "UInt64",
}

VtkGrid = namedtuple("VtkGrid", "cells kinds base")
VtkGrid.__doc__ = ("The cell shape of a step, each field's kind ('cell' or 'point'), and the layout of the "
                   "cells the pieces follow (a halo-free Sharding).")


# -- planning (no MPI, no I/O) ------------------------------------------------------------
def vtk_grid(fields: dict) -> VtkGrid:
    """Classify fields (name -> (global shape, sharding)) as cell or point data on one grid.

    >>> from meshrt.mesh import AbstractMesh
    >>> s = Sharding(AbstractMesh((2,)), [[0]], halo_sizes=[1, 1])
    >>> vtk_grid({"p": ((4, 3), s), "q": ((5, 4), s.replace(sharded_dims_offsets=[0, 2, 5]))})
    VtkGrid(cells=(4, 3), kinds={'p': 'cell', 'q': 'point'}, base=Sharding(shard.sharding @mesh split_axes = [[0]]))
    """
    if not fields:
        raise CheckpointError("write_vtk: fields is empty; give at least one name -> tensor")
    ndims = {len(shape) for shape, _ in fields.values()}
    if len(ndims) != 1 or not 1 <= next(iter(ndims)) <= 3:
        shown = {k: shape for k, (shape, _) in fields.items()}
        raise CheckpointError(f"write_vtk: fields must all be 1-, 2- or 3-d with the same number of dims, got {shown}")
    cells = tuple(min(dims) for dims in zip(*(shape for shape, _ in fields.values())))
    kinds = {}
    for name, (shape, _) in fields.items():
        longer = [d for d, (n, c) in enumerate(zip(shape, cells)) if n != c]
        if not longer:
            kinds[name] = "cell"
        elif len(longer) == len(cells) and all(n == c + 1 for n, c in zip(shape, cells)):
            kinds[name] = "point"
        elif all(shape[d] == cells[d] + 1 for d in longer):
            raise CheckpointError(
                f"write_vtk: field {name!r} has shape {shape} on a grid of {cells} cells: one longer along dims "
                f"{longer} only (face-centred, a staggered field); VTK image data holds cell or point data only, "
                "so interpolate it to cells or points first")
        else:
            raise CheckpointError(
                f"write_vtk: field {name!r} has shape {shape}, which is neither the grid's {cells} cells nor its "
                f"{tuple(c + 1 for c in cells)} points")
    if min(cells) < 1:
        raise CheckpointError(f"write_vtk: the grid has {cells} cells; VTK needs at least one along every dim")
    name, (shape, sharding) = next(iter(fields.items()))
    base = sharding.replace(halo_sizes=None)
    if kinds[name] == "point" and base.sharded_dims:
        flat = []
        for d in base.sharded_dims:
            offs = list(base.dim_offsets(shape)[d])
            offs[-1] -= 1
            flat += offs
        base = base.replace(sharded_dims_offsets=flat)
    if base.sharded_dims and base.sharded_dims_offsets:
        try:
            base.check_shape(cells)
        except ShardingError as e:
            raise CheckpointError(f"write_vtk: the first field's layout gives no cell layout: {e}") from None
    return VtkGrid(cells, kinds, base)


def point_sharding(base: Sharding, cells) -> Sharding:
    """The layout of a point field whose pieces match ``base``'s cell blocks: points
    ``[a, b)`` owned where the cells are ``[a, b)`` (the last block also owns the
    top point) plus a one-wide high halo holding point ``b``."""
    from ..stencil.apply import staggered

    stag, _ = staggered(base, cells, list(range(len(cells))))
    if not stag.sharded_dims:
        return stag
    return stag.replace(halo_sizes=[0, 1] * len(stag.sharded_dims))


def vtk_pieces(base: Sharding, cells, device=None):
    """The cell extent ``((x0, x1), (y0, y1), ...)`` of ``device``'s piece, or None when it
    writes none (an empty block or a replica that is not the writing one). O(ndim).

    >>> from meshrt.mesh import AbstractMesh
    >>> [vtk_pieces(Sharding(AbstractMesh((2, 2)), [[1]]), (4, 3), d) for d in range(4)]
    [((0, 2), (0, 3)), ((2, 4), (0, 3)), None, None]
    """
    if not writer_of_block(base, device):
        return None
    box = tuple((s.start, s.stop) for s in base.shard_slices(cells, device))
    return box if all(b > a for a, b in box) else None


def _extent(box) -> str:
    box = list(box) + [(0, 0)] * (3 - len(box))
    return " ".join(f"{a} {b}" for a, b in box)


def _triple(values, ndim, fill, field):
    if values is None:
        return (fill,) * 3
    try:
        v = [float(x) for x in (values if np.ndim(values) else [values] * ndim)]
    except (TypeError, ValueError):
        raise CheckpointError(f"write_vtk: {field} {values!r} is not a number or one number per dim") from None
    if len(v) != ndim or not all(math.isfinite(x) for x in v):
        raise CheckpointError(f"write_vtk: {field} {values!r} must give one finite number per dim ({ndim} dims)")
    return tuple(v + [fill] * (3 - ndim))


# -- writing ------------------------------------------------------------------------------
def _piece_xml(extent, arrays, whole, origin, spacing) -> tuple:
    """The XML of one ``.vti`` piece and its appended bytes, for (name, kind, little-endian array) entries."""
    offset = 0
    sections = {"point": [], "cell": []}
    blobs = []
    for name, kind, data in arrays:
        sections[kind].append(
            f'        <DataArray type="{_VTK_TYPES[data.dtype.str[1:]]}" Name="{name}" format="appended" '
            f'offset="{offset}"/>')
        blob = data.tobytes(order="F")  # VTK runs x (tensor dim 0) fastest
        blobs.append(np.array([len(blob)], "<u8").tobytes())
        blobs.append(blob)
        offset += 8 + len(blob)
    head = "\n".join([
        '<?xml version="1.0"?>',
        '<VTKFile type="ImageData" version="1.0" byte_order="LittleEndian" header_type="UInt64">',
        f'  <ImageData WholeExtent="{whole}" Origin="{_floats(origin)}" Spacing="{_floats(spacing)}">',
        f'    <Piece Extent="{_extent(extent)}">',
        "      <PointData>", *sections["point"], "      </PointData>",
        "      <CellData>", *sections["cell"], "      </CellData>",
        "    </Piece>",
        "  </ImageData>",
        '  <AppendedData encoding="raw">',
        "   _",
    ])
    return head.encode() + b"".join(blobs) + b"\n  </AppendedData>\n</VTKFile>\n"


def _floats(values):
    return " ".join(repr(float(v)) for v in values)


def _pvti_xml(grid, dtypes, whole, origin, spacing, pieces) -> str:
    def arrays(kind):
        return [f'      <PDataArray type="{_VTK_TYPES[dtypes[n]]}" Name="{n}"/>'
                for n, k in grid.kinds.items() if k == kind]
    return "\n".join([
        '<?xml version="1.0"?>',
        '<VTKFile type="PImageData" version="1.0" byte_order="LittleEndian" header_type="UInt64">',
        f'  <PImageData WholeExtent="{whole}" GhostLevel="0" Origin="{_floats(origin)}" '
        f'Spacing="{_floats(spacing)}">',
        "    <PPointData>", *arrays("point"), "    </PPointData>",
        "    <PCellData>", *arrays("cell"), "    </PCellData>",
        *(f'    <Piece Extent="{_extent(box)}" Source="{src}"/>' for box, src in pieces),
        "  </PImageData>",
        "</VTKFile>",
        "",
    ])


def _update_pvd(pvd, step_file, time):
    """Add (or replace) one dataset of the ``.pvd`` collection, atomically."""
    entries = {}
    if os.path.exists(pvd):
        try:
            root = ET.parse(pvd).getroot()
            for ds in root.iter("DataSet"):
                entries[ds.get("file")] = float(ds.get("timestep"))
        except (ET.ParseError, TypeError, ValueError) as e:
            raise CheckpointError(f"{pvd!r} is not a readable .pvd collection ({e})") from None
    entries[step_file] = float(time)
    lines = ['<?xml version="1.0"?>', '<VTKFile type="Collection" version="1.0" byte_order="LittleEndian">',
             "  <Collection>"]
    lines += [f'    <DataSet timestep="{t!r}" group="" part="0" file="{f}"/>'
              for f, t in sorted(entries.items(), key=lambda e: (e[1], e[0]))]
    lines += ["  </Collection>", "</VTKFile>", ""]
    tmp = f"{pvd}.tmp-{secrets.token_hex(6)}"
    with open(tmp, "w") as fp:
        fp.write("\n".join(lines))
    os.replace(tmp, pvd)


def write_vtk(prefix, fields, step, time=None, spacing=None, origin=None) -> str:
    """Write one step of a ParaView time series.

    Writes ``<prefix>_<step>.pvti`` (with one piece per block in the folder
    ``<prefix>_<step>``) and adds the step to ``<prefix>.pvd``, which ParaView
    opens as a time series.

    Parameters
    ----------
    prefix : str or os.PathLike
        Path prefix of the files; its directory must exist.
    fields : dict
        Name to `DistributedTensor`, all on one mesh, not partial, with an
        integer or float32/64 dtype.
    step : int
        A non-negative int naming the files.
    time : float, optional
        The step's time in the ``.pvd`` (default ``step``).
    spacing : float or sequence of float, optional
        Cell size, one number per dim (default 1).
    origin : float or sequence of float, optional
        The grid's origin, one number per dim (default 0).

    Returns
    -------
    str
        The ``.pvd`` path.

    Raises
    ------
    CheckpointError
        On every process: bad fields, names, step, spacing or origin, a missing
        directory, or a failed write.

    Notes
    -----
    Collective over the fields' mesh.

    Examples
    --------
    >>> import os, tempfile
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> tmp = tempfile.TemporaryDirectory()
    >>> s = Sharding(Mesh((-1, 1), ("x", "y")), [["x"]])
    >>> T = DistributedTensor.zeros((4, 3), s)
    >>> pvd = write_vtk(os.path.join(tmp.name, "heat"), {"T": T}, step=3, time=0.3, spacing=(0.01, 0.01))
    >>> os.path.basename(pvd), sorted(os.listdir(tmp.name))
    ('heat.pvd', ['heat.pvd', 'heat_000003', 'heat_000003.pvti'])
    >>> tmp.cleanup()
    """
    if not isinstance(fields, dict) or not fields:
        raise CheckpointError(f"write_vtk: fields must be a non-empty dict of name -> DistributedTensor, not {fields!r}")
    first = next(iter(fields.values()))
    comm = _comm_of(getattr(first, "sharding", None))
    prefix = os.path.abspath(os.fspath(prefix))
    where = f"write_vtk({prefix!r}, step={step!r})"
    problem = None
    grid = None
    try:
        if not isinstance(step, (int, np.integer)) or isinstance(step, bool) or step < 0:
            raise CheckpointError(f"step: {step!r} is not a non-negative int")
        for name, t in fields.items():
            if not isinstance(name, str) or not _NAME.match(name):
                raise CheckpointError(f"field name {name!r} is not a valid name (letters, digits, '_', '.', '-')")
            if not all(hasattr(t, a) for a in ("interior", "sharding", "global_shape")):
                raise CheckpointError(f"field {name!r}: {type(t).__name__} is not a DistributedTensor")
            if t.sharding.mesh != first.sharding.mesh:
                raise CheckpointError(f"field {name!r}: its mesh {t.sharding.mesh!r} is not the first field's")
            if t.sharding.is_partial:
                raise CheckpointError(f"field {name!r}: its sharding {t.sharding} is partial; reduce it first")
            if t.dtype.newbyteorder("<").str[1:] not in _VTK_TYPES:
                raise CheckpointError(f"field {name!r}: dtype {t.dtype} has no VTK type (ints, uints, float32/64)")
        grid = vtk_grid({n: (tuple(t.global_shape), t.sharding) for n, t in fields.items()})
        ndim = len(grid.cells)
        spacing3 = _triple(spacing, ndim, 1.0, "spacing")
        origin3 = _triple(origin, ndim, 0.0, "origin")
        time = float(step if time is None else time)
    except CheckpointError as e:
        problem = str(e).removeprefix("write_vtk: ")
    except (TypeError, ValueError) as e:
        problem = f"time: {time!r} is not a number ({e})"
    _agree(comm, problem, where)

    base, cells = grid.base, grid.cells
    pieces_dir = f"{os.path.basename(prefix)}_{int(step):06d}"
    parent = os.path.dirname(prefix)

    def prepare():
        if not os.path.isdir(parent):
            raise CheckpointError(f"directory {parent!r} does not exist")
        tmp = os.path.join(parent, f"{pieces_dir}.tmp-{secrets.token_hex(6)}")
        os.mkdir(tmp)
        return tmp

    tmp = _root_decides(comm, prepare, where)
    arrays, dtypes, made = [], {}, []
    cell_layout = base.dim_offsets(cells)
    for name, t in fields.items():
        kind = grid.kinds[name]
        dtypes[name] = t.dtype.newbyteorder("<").str[1:]
        if kind == "cell":
            same = t.sharding.split_axes == base.split_axes and t.sharding.dim_offsets(cells) == cell_layout
            src = t if same else t.reshard(base)
            block = src.interior
        else:
            src = t.reshard(point_sharding(base, cells))
            block = src.local[tuple(slice(0, s.stop - s.start + 1) for s in base.shard_slices(cells))]
        if src is not t:
            made.append(src)
        arrays.append((name, kind, np.asarray(block, dtypes[name])))
    extent = vtk_pieces(base, cells)
    whole = _extent(tuple((0, n) for n in cells))
    problem = None
    try:
        if extent is not None:
            with open(os.path.join(tmp, f"p{base.mesh.rank:06d}.vti"), "wb") as fp:
                fp.write(_piece_xml(extent, arrays, whole, origin3, spacing3))
    except OSError as e:
        problem = f"writing its piece failed: {e}"
    finally:
        for src in made:
            src.free()
    _agree_or_discard(comm, problem, where, tmp)

    def commit():
        pieces = []
        for device in range(base.mesh.size):  # the .pvti lists every piece: O(P) on rank 0 only
            box = vtk_pieces(base, cells, device)
            if box is not None:
                pieces.append((box, f"{pieces_dir}/p{device:06d}.vti"))
        final = os.path.join(parent, pieces_dir)
        old = None
        if os.path.lexists(final):
            old = f"{final}.old-{secrets.token_hex(6)}"
            os.rename(final, old)
        os.rename(tmp, final)
        pvti = f"{prefix}_{int(step):06d}.pvti"
        with open(pvti + ".tmp", "w") as fp:
            fp.write(_pvti_xml(grid, dtypes, whole, origin3, spacing3, pieces))
        os.replace(pvti + ".tmp", pvti)
        _update_pvd(prefix + ".pvd", os.path.basename(pvti), time)
        if old is not None:
            remove_later(old)
        for entry in os.listdir(parent):  # leftovers of interrupted steps of this series
            if re.fullmatch(re.escape(os.path.basename(prefix)) + r"_\d{6,}\.(tmp|old)-[0-9a-f]{12}", entry):
                remove_later(os.path.join(parent, entry))
        return prefix + ".pvd"

    with _mpi.internal(where, "barrier before the commit", comm):
        comm.Barrier()
    return _root_decides(comm, commit, where)
