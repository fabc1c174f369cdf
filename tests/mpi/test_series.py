"""Output xarray opens as a dataset: snapshots (to_zarr/to_hdf5) and time series (open_series), any process count.

Every file is opened on rank 0 with xarray itself (``xr.open_zarr``, and
``xr.open_dataset`` with the h5netcdf engine) and compared with the numpy
array each process's block came from. Tensors are built from local buffers
whose halos hold a sentinel, so a file equal to the global array proves halos
were never written.
"""

import os
import shutil
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.io.formats import wait_for_removals
from meshrt.io import CheckpointError, from_series, open_series

zarr = pytest.importorskip("zarr")
h5py = pytest.importorskip("h5py")
xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")
pytest.importorskip("dask")

comm = MPI.COMM_WORLD
SENTINEL = 77
MPI_NPROCS = (1, 2, 4)


@pytest.fixture
def shared_dir():
    d = tempfile.mkdtemp(prefix="meshrt-series-") if comm.rank == 0 else None
    d = comm.bcast(d, root=0)
    yield d
    comm.Barrier()
    if comm.rank == 0:
        wait_for_removals()
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def meshes():
    ms = (Mesh((-1,), comm=comm), Mesh((-1, -1), ("x", "y"), comm=comm))
    yield ms
    for m in ms:
        m.free()


def global_array(shape, dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    kind = np.dtype(dtype).kind
    if kind in "iu":
        return rng.integers(0, 100, size=shape).astype(dtype)
    if kind == "b":
        return rng.random(shape) < 0.5
    if kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def tensor_of(g, sharding):
    local = np.full(sharding.local_shape(g.shape), SENTINEL, dtype=g.dtype)
    lo = [sharding.halo_widths(d)[0] for d in range(g.ndim)]
    owned = sharding.shard_slices(g.shape)
    local[tuple(slice(a, a + s.stop - s.start) for a, s in zip(lo, owned))] = g[owned]
    return DistributedTensor.from_local(local, sharding, g.shape)


def cases(m1, m2):
    """(id, sharding, 2-D global shape): uneven shards, halos, an empty shard, a replicated mesh axis."""
    n, (a, b) = comm.size, m2.shape
    return {
        "rows-uneven-halo": (Sharding(m1, [[0]], halo_sizes=[1, 1]), (3 * n + 2, 5)),
        "2d-halo-uneven": (Sharding(m2, [[0], [1]], halo_sizes=[1, 2, 0, 1]), (2 * a + 5, 3 * b + 2)),
        "empty-shard": (Sharding(m1, [[], [0]], sharded_dims_offsets=[0] + [0] + [3] * (n - 1) if n > 1 else None),
                        (4, 3)),
        "replicated-axis": (Sharding(m2, [[], [0]], halo_sizes=[1, 1]), (4, 3 * a + 1)),
    }


CASES = ["rows-uneven-halo", "2d-halo-uneven", "empty-shard", "replicated-axis"]
MATRIX = [(c, "float64") for c in CASES] + [("2d-halo-uneven", dt) for dt in ("float32", "int32", "uint8")] + [
    ("rows-uneven-halo", "complex128"), ("replicated-axis", "bool")]
SUFFIX = {"zarr": "zarr", "netcdf": "nc"}


def bump(g, k):
    """Step k's value of a field that starts as ``g`` (same dtype)."""
    return g ^ bool(k % 2) if g.dtype == bool else (g + k).astype(g.dtype)


def open_xr(path, fmt):
    return xr.open_zarr(path) if fmt == "zarr" else xr.open_dataset(path, engine="h5netcdf")


@pytest.mark.parametrize("fmt", ["zarr", "netcdf"])
@pytest.mark.parametrize("case,dtype", MATRIX)
def test_a_series_opens_in_xarray(fmt, case, dtype, meshes, shared_dir):
    sharding, shape = cases(*meshes)[case]
    g = global_array(shape, dtype, seed=len(case))
    path = os.path.join(shared_dir, f"run.{SUFFIX[fmt]}")
    u = tensor_of(g, sharding)
    w = open_series(path, {"u": u, "v": u}, dims=("y", "x"), origin=(1.0, 0.0), spacing=(0.5, 2.0),
                    attrs={"u": {"units": "m", "long_name": "height"}})
    for k in range(3):  # a new tensor each step, as a code that swaps buffers passes it
        w.write(step=10 * k, time=0.25 * k, fields={"u": tensor_of(bump(g, k), sharding)})
    w.close()
    assert w.steps == [0, 10, 20]
    if comm.rank == 0:
        with open_xr(path, fmt) as ds:
            assert ds.u.dims == ("time", "y", "x") and ds.u.dtype == g.dtype
            assert np.array_equal(ds.u.values, np.stack([bump(g, k) for k in range(3)]))
            assert np.array_equal(ds.v.values, np.stack([g] * 3))
            assert list(ds.time.values) == [0.0, 0.25, 0.5] and list(ds.step.values) == [0, 10, 20]
            assert np.array_equal(ds.y.values, 1.0 + 0.5 * np.arange(shape[0]))
            assert np.array_equal(ds.x.values, 2.0 * np.arange(shape[1]))
            assert ds.u.attrs["units"] == "m" and ds.u.attrs["long_name"] == "height"
            assert "step" in ds.coords and set(ds.data_vars) == {"u", "v"}
            if fmt == "zarr":  # one chunk per step along time, the sharding's blocks across
                assert ds.u.encoding["chunks"][0] == 1
                assert complex(ds.u.isel(time=2).sum().compute()) == pytest.approx(complex(bump(g, 2).sum()))
    other = Sharding(sharding.mesh, [[], list(range(sharding.mesh.ndim))])
    back = from_series(path, "u", step=10, sharding=other)
    assert np.array_equal(back.gather(), bump(g, 1))
    back = from_series(path, "u", sharding=sharding.mesh)  # the last step, in the sharding it was written in
    assert back.sharding == sharding and np.array_equal(back.gather(), bump(g, 2))


@pytest.mark.parametrize("fmt", ["zarr", "netcdf"])
@pytest.mark.parametrize("case,dtype", MATRIX)
def test_a_snapshot_opens_in_xarray(fmt, case, dtype, meshes, shared_dir):
    sharding, shape = cases(*meshes)[case]
    g = global_array(shape, dtype, seed=3)
    t = tensor_of(g, sharding)
    ycoord = np.linspace(-1.0, 1.0, shape[0])
    kw = dict(dims=("y", "x"), coords={"y": ycoord}, spacing=(9.0, 0.5), attrs={"units": "K"})
    path = os.path.join(shared_dir, "u.zarr" if fmt == "zarr" else "f.h5")
    for _ in range(2):  # written again: replaced, coordinates kept once
        t.to_zarr(path, **kw) if fmt == "zarr" else t.to_hdf5(path, "u", **kw)
    if comm.rank == 0:
        with open_xr(path, fmt) as ds:
            assert list(ds.data_vars) == ["u"] and ds.u.dims == ("y", "x") and ds.u.attrs["units"] == "K"
            assert np.array_equal(ds.u.values, g) and ds.u.dtype == g.dtype
            assert np.array_equal(ds.y.values, ycoord) and np.array_equal(ds.x.values, 0.5 * np.arange(shape[1]))
    back = (DistributedTensor.from_zarr(path, sharding.mesh) if fmt == "zarr"
            else DistributedTensor.from_hdf5(path, "u", sharding.mesh))
    assert np.array_equal(back.gather(), g)


def test_default_dims_and_several_fields(meshes, shared_dir):
    s = Sharding(meshes[0], [[0]])
    a, b = global_array((2 * comm.size + 1, 3)), global_array((2 * comm.size + 2,), seed=1)
    z, h = os.path.join(shared_dir, "g.zarr"), os.path.join(shared_dir, "g.h5")
    for name, g in (("a", a), ("b", b)):
        tensor_of(g, s).to_zarr(z, name=name)
        tensor_of(g, s).to_hdf5(h, name)
    if comm.rank == 0:
        for path, fmt in ((z, "zarr"), (h, "netcdf")):
            with open_xr(path, fmt) as ds:
                assert np.array_equal(ds.a.values, a) and np.array_equal(ds.b.values, b)
                assert ds.a.dims == ("dim_0", "dim_1") and ds.b.dims == ("b_dim_0",)  # dim_0 is a's length
    with pytest.raises(CheckpointError, match=r"to_zarr\(.*dims: 'dim_1' has length 3 in another field"):
        tensor_of(b, s).to_zarr(z, name="c", dims=("dim_1",))
    with pytest.raises(CheckpointError, match=r"dims: \('y',\) names 1 dims, the field has 2"):
        tensor_of(a, s).to_hdf5(h, "a", dims=("y",))
    with pytest.raises(CheckpointError, match=r"coords\['y'\]: needs a numeric 1-D array of length"):
        tensor_of(a, s).to_zarr(z, name="a", dims=("y", "x"), coords={"y": [1.0]})
    with pytest.raises(CheckpointError, match=r"attrs\['units'\]: \{\} is not a string"):
        tensor_of(a, s).to_zarr(z, name="a", attrs={"units": {}})


def test_stores_written_before_groups_still_read(meshes, shared_dir):
    """A bare Zarr array and an HDF5 dataset without dimension scales, as the earlier to_zarr/to_hdf5 wrote them."""
    s = Sharding(meshes[1], [["x"], ["y"]], halo_sizes=[1, 1, 1, 1])
    g = global_array((2 * comm.size + 3, 7), seed=5)
    z, h = os.path.join(shared_dir, "old.zarr"), os.path.join(shared_dir, "old.h5")
    if comm.rank == 0:
        saved = {"version": 1, "mesh_shape": list(s.mesh.shape), "axis_names": ["x", "y"], "sharding": str(s),
                 "periodic": [True, False]}
        arr = zarr.create_array(z, shape=g.shape, chunks=(3, 7), dtype=g.dtype, fill_value=0, compressors=None,
                                zarr_format=3, attributes={"meshrt": saved})
        arr[...] = g
        with h5py.File(h, "w") as f:
            f.create_dataset("u", data=g).attrs["meshrt"] = __import__("json").dumps(saved)
    comm.Barrier()
    back = DistributedTensor.from_zarr(z, s.mesh)
    assert back.sharding == s and back.periodic == (True, False) and np.array_equal(back.gather(), g)
    assert np.array_equal(DistributedTensor.from_hdf5(h, "u", Sharding(s.mesh, [[1]])).gather(), g)
    tensor_of(g + 1, s).to_zarr(z)  # the bare array becomes a group holding "old"
    tensor_of(g + 1, s).to_hdf5(h, "u")
    assert np.array_equal(DistributedTensor.from_zarr(z, s).gather(), g + 1)
    if comm.rank == 0:
        with xr.open_zarr(z) as ds:
            assert np.array_equal(ds.old.values, g + 1)
        with xr.open_dataset(h, engine="h5netcdf") as ds:
            assert np.array_equal(ds.u.values, g + 1)


@pytest.mark.parametrize("fmt,segment", [("zarr", None), ("netcdf", None), ("netcdf", 1)])
def test_restart_on_another_layout_and_from_an_older_step(fmt, segment, meshes, shared_dir, monkeypatch):
    import meshrt.io.series

    if segment is not None:  # a segment file per step: the virtual dataset maps many, a restart reopens them
        monkeypatch.setattr(meshrt.io.series, "_SEGMENT_BYTES", segment)
    g = global_array((2 * comm.size + 3, 5), seed=7)
    path = os.path.join(shared_dir, f"r.{SUFFIX[fmt]}")
    s1 = Sharding(meshes[0], [[0]], halo_sizes=[1, 1])
    with open_series(path, {"u": tensor_of(g, s1)}, dims=("y", "x")) as w:
        for k in range(3):
            w.write(step=k, fields={"u": tensor_of(g + k, s1)})
    s2 = Sharding(meshes[1], [["y"], ["x"]])  # another layout: zarr keeps its chunks, netcdf starts a run
    with open_series(path, {"u": tensor_of(g, s2)}, dims=("y", "x"), mode="a") as w:
        assert w.steps == [0, 1, 2]
        w.write(step=3, fields={"u": tensor_of(g + 3, s2)})
        w.write(step=4, fields={"u": tensor_of(g + 4, s2)})
        w.write(step=2, time=2.5, fields={"u": tensor_of(g + 20, s2)})  # from an older checkpoint: 2.. dropped
        w.write(step=3, fields={"u": tensor_of(g + 30, s2)})
        assert w.steps == [0, 1, 2, 3]
    if comm.rank == 0:
        with open_xr(path, fmt) as ds:
            assert list(ds.step.values) == [0, 1, 2, 3] and list(ds.time.values) == [0.0, 1.0, 2.5, 3.0]
            assert np.array_equal(ds.u.values, np.stack([g, g + 1, g + 20, g + 30]))
    assert np.array_equal(from_series(path, "u", step=1, sharding=s2).gather(), g + 1)
    assert np.array_equal(from_series(path, "u", index=-1, sharding=s1).gather(), g + 30)
    with pytest.raises(CheckpointError, match=r"holds no step 7; it holds steps \[0, 1, 2, 3\]"):
        from_series(path, "u", step=7, sharding=s1)
    with pytest.raises(CheckpointError, match=r"holds no field 'w'; it holds \['u'\]"):
        from_series(path, "w", sharding=s1)
    with pytest.raises(CheckpointError, match=r"holds fields \['u'\], not \['u', 'v'\]"):
        open_series(path, {"u": tensor_of(g, s1), "v": tensor_of(g, s1)}, dims=("y", "x"), mode="a")
    with pytest.raises(CheckpointError, match=r"field 'u' is saved with shape"):
        open_series(path, {"u": tensor_of(g[:-1], s1)}, dims=("y", "x"), mode="a")
    if segment is not None and comm.rank == 0:
        runs = sorted(os.listdir(path + ".blocks/u"))
        assert len(runs) >= 2 and all(n.endswith(".h5") for r in runs for n in os.listdir(f"{path}.blocks/u/{r}"))
        assert max(len(os.listdir(f"{path}.blocks/u/{r}")) for r in runs) > comm.size  # several segments a process


def test_bad_arguments_raise_everywhere(meshes, shared_dir):
    s = Sharding(meshes[0], [[0]])
    u = tensor_of(global_array((comm.size + 2, 3)), s)
    path = os.path.join(shared_dir, "b.zarr")
    with pytest.raises(CheckpointError, match="format: cannot tell it from the path's suffix"):
        open_series(os.path.join(shared_dir, "b.txt"), {"u": u})
    with pytest.raises(CheckpointError, match="dims: 'time' is reserved"):
        open_series(path, {"u": u}, dims=("time", "x"))
    with pytest.raises(CheckpointError, match="fields: 'step' is reserved"):
        open_series(path, {"step": u})
    with pytest.raises(CheckpointError, match=r"dims: 'x' has length .* in field 'u' but 2 in field 'v'"):
        open_series(path, {"u": u, "v": tensor_of(global_array((comm.size + 2, 2)), s)}, dims=("y", "x"))
    w = open_series(path, {"u": u}, dims=("y", "x"))
    with pytest.raises(CheckpointError, match=r"step: 1.5 is not an int"):
        w.write(step=1.5)
    if comm.size > 1:
        with pytest.raises(CheckpointError, match=r"the processes disagree"):
            w.write(step=comm.rank)
    with pytest.raises(CheckpointError, match=r"field 'u': shape .* but the series holds"):
        w.write(step=1, fields={"u": tensor_of(global_array((comm.size + 2, 4)), s)})
    w.write(step=1)
    assert w.steps == [1]


@pytest.mark.skipif(comm.size < 2, reason="a failure on one process of several")
@pytest.mark.parametrize("fmt", ["zarr", "netcdf"])
def test_a_failed_write_on_one_process_commits_nothing(fmt, meshes, shared_dir, monkeypatch):
    import meshrt.io.series

    s = Sharding(meshes[1], [["x"], ["y"]], halo_sizes=[1, 1, 1, 1])
    g = global_array((2 * comm.size + 1, 9), seed=11)
    path = os.path.join(shared_dir, f"f.{SUFFIX[fmt]}")
    w = open_series(path, {"u": tensor_of(g, s)})
    w.write(step=0)
    if comm.rank == 1:
        def broken(*args, **kwargs):
            raise OSError("disk full (simulated)")
        monkeypatch.setattr(meshrt.io.series, "_write_raw_chunks", broken)
        monkeypatch.setattr(os, "pwrite", broken)
    with pytest.raises(CheckpointError, match=r"write\(step=1\): field 'u': writing this process's block failed: "
                                              r"OSError: disk full \(simulated\) \(on process(es)? \[1"):
        w.write(step=1, fields={"u": tensor_of(g + 1, s)})
    monkeypatch.undo()
    assert w.steps == [0]
    if comm.rank == 0:
        with open_xr(path, fmt) as ds:
            assert list(ds.step.values) == [0] and np.array_equal(ds.u.values, g[None])
    w.write(step=1, fields={"u": tensor_of(g + 1, s)})
    w.close()
    assert np.array_equal(from_series(path, "u", step=1, sharding=s).gather(), g + 1)
