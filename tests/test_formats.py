"""Serial tests of the output formats' planning (meshrt.chunks, meshrt.vtk) and their guards.

The parallel writing and reading is tested in tests/mpi/test_formats.py.
"""

import itertools
import math
import os
import sys
import time
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from meshrt import Sharding
from meshrt.sharding.chunks import (
    aligned_sharding, check_chunks, chunk_count, default_chunks, is_aligned, owned_chunks,
)
from meshrt.errors import ShardingError
from meshrt.io.npy import CheckpointError
from meshrt.mesh import AbstractMesh
from meshrt.io.vtk import point_sharding, vtk_grid, vtk_pieces

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def chunk_writers(aligned, shape, chunks):
    """Every writing device's chunk box, checked against the chunk grid: each chunk exactly once."""
    grid = tuple(-(-n // c) for n, c in zip(shape, chunks))
    count = np.zeros(grid, int)
    for device in range(aligned.mesh.size):
        box = owned_chunks(aligned, shape, chunks, device)
        if box.writes:
            count[tuple(slice(a, b) for a, b in zip(box.start, box.stop))] += 1
            # the device's block is exactly the union of its chunks (clipped at the array's end)
            block = aligned.shard_slices(shape, device)
            if any(s.start == s.stop for s in block):
                assert chunk_count(box) == 0, (device, block, box)
            for s, a, b, c, n in zip(block, box.start, box.stop, chunks, shape):
                assert (s.start, s.stop) == (min(a * c, n), min(b * c, n)) or s.start == s.stop
    return count


@pytest.mark.parametrize("mesh_shape,split,shape,chunks", [
    ((4,), [[0]], (10,), None),                  # uneven: 2, 2, 3, 3
    ((4,), [[0]], (10,), (3,)),
    ((3,), [[0]], (2,), (1,)),                   # an empty shard
    ((2,), [[0]], (19,), (100,)),                # one chunk wider than the array: the empty block owns none
    ((2, 3), [[0], [1]], (37, 23), None),
    ((2, 3), [[0], [1]], (37, 23), (5, 7)),
    ((2, 3), [[1, 0]], (17, 4), (4, 2)),         # two axes on one dim
    ((2, 3), [[], [0]], (5, 9), (2, 2)),         # axis 1 replicates: one writer per block
    ((2, 2, 2), [[0], [1], [2]], (5, 6, 7), (2, 4, 3)),
    ((2, 2), [], (3, 4), (2, 2)),                # replicated: device 0 writes everything
])
def test_every_chunk_has_exactly_one_writer(mesh_shape, split, shape, chunks):
    s = Sharding(AbstractMesh(mesh_shape), split, halo_sizes=None)
    chunks = default_chunks(s, shape) if chunks is None else chunks
    aligned = aligned_sharding(s, shape, chunks)
    assert is_aligned(aligned, shape, chunks)
    assert aligned.split_axes == s.split_axes and not aligned.halo_sizes
    assert (chunk_writers(aligned, shape, chunks) == 1).all()


def test_default_chunks_follow_the_sharding():
    mesh = AbstractMesh((2, 4))
    even = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    assert default_chunks(even, (8, 12)) == (4, 3)
    assert is_aligned(even, (8, 12), (4, 3))
    assert aligned_sharding(even, (8, 12), (4, 3)) == even.replace(halo_sizes=None)  # nothing moves
    assert default_chunks(Sharding(mesh, [[1]]), (10, 5)) == (3, 5)
    assert not is_aligned(Sharding(mesh, [[1]]), (10, 5), (3, 5))
    assert default_chunks(Sharding(mesh, [[1]]), (0, 5)) == (1, 5)  # Zarr needs chunks >= 1


def test_aligned_boundaries_round_up_so_few_elements_move():
    s = Sharding(AbstractMesh((4,)), [[0]], sharded_dims_offsets=[0, 1, 5, 6, 13])
    assert aligned_sharding(s, (13,), (4,)).dim_offsets((13,)) == ((0, 4, 8, 8, 13),)
    assert aligned_sharding(s, (13,), (100,)).dim_offsets((13,)) == ((0, 13, 13, 13, 13),)


def test_chunk_planning_on_a_large_mesh_costs_per_process_not_per_mesh():
    big = AbstractMesh((100, 100))  # 10^4 devices: checked whole
    s = Sharding(big, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    shape, chunks = (1003, 997), (7, 11)
    aligned = aligned_sharding(s, shape, chunks)
    assert (chunk_writers(aligned, shape, chunks) == 1).all()
    huge = AbstractMesh((320, 320))  # 102,400 devices: one process's plan only
    s = Sharding(huge, [[0], [1]])
    shape = (320 * 1000 + 17, 320 * 1000 + 5)
    aligned = aligned_sharding(s, shape, default_chunks(s, shape))
    chunks = default_chunks(s, shape)
    owned_chunks(aligned, shape, chunks, device=5)
    t0 = time.perf_counter()
    total = sum(chunk_count(owned_chunks(aligned, shape, chunks, device=d)) for d in range(0, huge.size, 1024))
    per_call = (time.perf_counter() - t0) / (huge.size // 1024)
    assert total > 0 and per_call < 2e-3, f"owned_chunks took {per_call * 1e6:.0f} us on a 10^5-device mesh"


@pytest.mark.parametrize("chunks,match", [((0, 2), r"chunks: \(0, 2\)"), ((2,), r"chunks: \(2,\)"),
                                          ("ab", "chunks: 'ab'"), ((2.5, 1), r"chunks: \(2.5, 1\)"),
                                          ((True, 2), r"chunks: \(True, 2\)")])
def test_bad_chunks_are_named(chunks, match):
    with pytest.raises(ShardingError, match=match):
        check_chunks(chunks, (4, 4))
    assert check_chunks(3, (4, 4)) == (3, 3)


def test_vtk_grid_classifies_cell_point_and_face_fields():
    mesh = AbstractMesh((2, 2))
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    grid = vtk_grid({"p": ((9, 6), s), "v": ((10, 7), s.replace(sharded_dims_offsets=[0, 4, 10, 0, 3, 7]))})
    assert grid.cells == (9, 6) and grid.kinds == {"p": "cell", "v": "point"}
    assert grid.base == s.replace(halo_sizes=None)
    points_first = vtk_grid({"v": ((10, 7), Sharding(mesh, [[0], [1]])), "p": ((9, 6), s)})
    assert points_first.kinds == {"v": "point", "p": "cell"}
    assert points_first.base.dim_offsets((9, 6)) == ((0, 5, 9), (0, 3, 6))  # the point blocks' cells
    assert vtk_grid({"v": ((10, 7), s)}).kinds == {"v": "cell"}  # alone, a field is the grid's cells
    with pytest.raises(CheckpointError, match=r"field 'vx' has shape \(10, 6\).*dims \[0\] only.*face-centred"):
        vtk_grid({"p": ((9, 6), s), "vx": ((10, 6), s)})
    with pytest.raises(CheckpointError, match=r"field 'w' has shape \(11, 6\), which is neither"):
        vtk_grid({"p": ((9, 6), s), "w": ((11, 6), s)})
    with pytest.raises(CheckpointError, match="1-, 2- or 3-d"):
        vtk_grid({"a": ((2, 2, 2, 2), Sharding(mesh, []))})


def test_point_layout_takes_one_point_from_the_neighbour():
    s = Sharding(AbstractMesh((3,)), [[0]])
    ps = point_sharding(s, (10,))
    assert ps.dim_offsets((11,)) == ((0, 3, 6, 11),) and ps.halo_sizes == (0, 1)
    # each piece's points [a, b] inclusive: owned [a, b) plus the high halo (the last shard owns b)
    for d in range(3):
        cells = s.shard_slices((10,), d)[0]
        owned = ps.shard_slices((11,), d)[0]
        assert owned.start == cells.start and ps.local_shape((11,), d)[0] >= cells.stop - cells.start + 1


def test_vtk_pieces_cover_the_grid_once_with_one_writer_per_block():
    mesh = AbstractMesh((2, 3))
    for split in ([[0], [1]], [[1]], [[], [0]], []):
        s = Sharding(mesh, split)
        cover = np.zeros((7, 5), int)
        for d in range(mesh.size):
            box = vtk_pieces(s, (7, 5), d)
            if box is not None:
                cover[tuple(slice(a, b) for a, b in box)] += 1
        assert (cover == 1).all(), split


@pytest.mark.parametrize("shape,chunks,dtype", [
    ((7, 5), (3, 2), "f8"),        # edge chunks cut on both dims
    ((6, 4), (3, 2), "i4"),        # every chunk whole
    ((5,), (8,), "f4"),            # one chunk wider than the array
    ((4, 3, 5), (2, 3, 2), "u1"),
    ((3, 2), (2, 2), "c16"),
])
def test_raw_chunk_files_equal_what_zarr_writes(tmp_path, shape, chunks, dtype):
    """to_zarr writes uncompressed chunks itself (formats._write_raw_chunks): the files
    must be byte for byte zarr's own."""
    zarr = pytest.importorskip("zarr", minversion="3")
    from meshrt.sharding.chunks import ChunkBox
    from meshrt.io.formats import _raw_chunk_file, _write_raw_chunks

    data = (np.arange(math.prod(shape)) * 7 % 251).reshape(shape).astype(dtype)
    grid = tuple(-(-n // c) for n, c in zip(shape, chunks))
    arrays = [zarr.create_array(tmp_path / name, shape=shape, chunks=chunks, dtype=dtype, fill_value=0,
                                compressors=None, zarr_format=3) for name in ("theirs", "ours")]
    arrays[0][...] = data
    chunk_file = _raw_chunk_file(zarr, arrays[1], data.dtype)
    assert chunk_file is not None
    _write_raw_chunks(chunk_file, data, tuple(slice(0, n) for n in shape), shape, chunks,
                      ChunkBox((0,) * len(shape), grid, True))
    for coords in itertools.product(*map(range, grid)):
        key = os.path.join(*arrays[0].metadata.encode_chunk_key(coords).split("/"))
        assert (tmp_path / "ours" / key).read_bytes() == (tmp_path / "theirs" / key).read_bytes(), coords
    assert np.array_equal(zarr.open_array(tmp_path / "ours", mode="r")[...], data)


def test_compressed_zarr_arrays_are_written_by_zarr(tmp_path):
    zarr = pytest.importorskip("zarr", minversion="3")
    from meshrt.io.formats import _raw_chunk_file

    arr = zarr.create_array(tmp_path / "z", shape=(4,), chunks=(2,), dtype="f8", compressors="auto", zarr_format=3)
    assert _raw_chunk_file(zarr, arr, np.dtype("f8")) is None
    big = zarr.create_array(tmp_path / "b", shape=(4,), chunks=(2,), dtype=">f8", compressors=None, zarr_format=3)
    assert _raw_chunk_file(zarr, big, np.dtype(">f8")) is None


def test_missing_library_names_the_extra(monkeypatch):
    from meshrt.io import formats
    monkeypatch.setitem(sys.modules, "zarr", None)
    with pytest.raises(ImportError, match=r"to_zarr needs the 'zarr' package.*pip install \"meshrt\[io\]\""):
        formats.require("zarr", "to_zarr")


def test_hdf5_block_generations_take_turns_and_drop_files_no_master_names(tmp_path):
    """One process: to_hdf5 alternates <name>.a / <name>.b, and a generation's files that the
    new master does not name (left by an earlier job with more processes) are removed."""
    h5py = pytest.importorskip("h5py")
    from meshrt import DistributedTensor, Mesh

    path, blocks = tmp_path / "f.h5", tmp_path / "f.h5.blocks"
    s = Sharding(Mesh((-1,)), [[0]], halo_sizes=[1, 1])
    gens = []
    for step in range(3):
        DistributedTensor.from_global(np.full((6, 4), float(step)), s).to_hdf5(path, "u")
        with h5py.File(path) as f:
            gens.append(f["u"].attrs["meshrt_blocks"])
            assert (f["u"][...] == step).all()
        if step == 1:
            (blocks / "u.a" / "p000007.h5").write_bytes(b"from a job of 8 processes")
            (blocks / "u.a" / "p000000.h5.tmp").write_bytes(b"a killed write")
    assert gens == ["u.a", "u.b", "u.a"]
    assert sorted(os.listdir(blocks / "u.a")) == ["p000000.h5"]


def test_xdmf_describes_the_hdf5_datasets(tmp_path):
    h5py = pytest.importorskip("h5py")
    from meshrt.io.formats import write_xdmf
    path = tmp_path / "f.h5"
    with h5py.File(path, "w") as f:
        f["u"] = np.zeros((4, 3))
        f["n"] = np.zeros((4, 3), np.int32)
        f["w"] = np.zeros((2, 3, 5), np.float32)
        f["line"] = np.zeros(7)
    xmf = write_xdmf(path, spacing=(0.5, 0.25))
    root = ET.parse(xmf).getroot()
    grids = root.find("Domain").findall("Grid")
    assert len(grids) == 2
    shapes = {g.find("Topology").get("Dimensions"): g for g in grids}
    assert set(shapes) == {"5 4", "3 4 6"}
    two = shapes["5 4"]
    assert two.find("Topology").get("TopologyType") == "2DCoRectMesh"
    assert [a.get("Name") for a in two.findall("Attribute")] == ["n", "u"]
    items = {a.get("Name"): a.find("DataItem") for a in two.findall("Attribute")}
    assert items["u"].text == "f.h5:/u" and items["u"].get("Precision") == "8"
    assert items["n"].get("NumberType") == "Int" and items["n"].get("Dimensions") == "4 3"
    assert [d.text for d in two.find("Geometry").findall("DataItem")] == ["0.0 0.0", "0.5 0.25"]


def test_io_extra_and_test_extra_carry_the_format_libraries():
    tomllib = pytest.importorskip("tomllib")
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    names = {k: {req.split(";")[0].split(">")[0].split("=")[0].strip() for req in v} for k, v in extras.items()}
    assert {"zarr", "h5py"} <= names["io"]
    assert {"zarr", "h5py"} <= names["test"]


def test_xdmf_opens_in_vtk_when_installed(tmp_path):
    """VTK's own XDMF reader (ParaView's) reads the sidecar; skipped where the 140 MB vtk is absent."""
    h5py = pytest.importorskip("h5py")
    pytest.importorskip("vtkmodules.vtkIOXdmf2")
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkIOXdmf2 import vtkXdmfReader

    from meshrt.io.formats import write_xdmf
    u, w = np.arange(105.0).reshape(7, 5, 3), np.arange(36, dtype=np.float32).reshape(9, 4)
    with h5py.File(tmp_path / "f.h5", "w") as f:
        f["u"], f["w"] = u, w
    reader = vtkXdmfReader()
    reader.SetFileName(write_xdmf(tmp_path / "f.h5"))
    reader.Update()
    blocks = reader.GetOutputDataObject(0)
    got = {}
    for b in range(blocks.GetNumberOfBlocks()):
        cells = blocks.GetBlock(b).GetCellData()
        got.update({cells.GetArrayName(i): vtk_to_numpy(cells.GetArray(i)) for i in range(cells.GetNumberOfArrays())})
    assert np.array_equal(got["u"].reshape(u.shape), u) and np.array_equal(got["w"].reshape(w.shape), w)
