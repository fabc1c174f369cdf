"""Parallel .npy checkpoints (meshrt.io), valid at any process count.

Every test writes from local buffers whose halos hold a sentinel, then
checks on rank 0 that the file is byte-for-byte what ``numpy.save`` writes for
the global array (so halos were never written), and reads it back into the
same and into other shardings.
"""

import io
import json
import os
import shutil
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import Mesh, Sharding
from meshrt.io.npy import (
    CheckpointError, Loaded, load_state, load_tensor, read_npy, save_state, save_tensor, write_npy, writer_of_block,
)

comm = MPI.COMM_WORLD
SENTINEL = 77


@pytest.fixture
def shared_dir():
    """A directory every rank sees (rank 0 makes it)."""
    d = tempfile.mkdtemp(prefix="meshrt-io-") if comm.rank == 0 else None
    d = comm.bcast(d, root=0)
    yield d
    comm.Barrier()
    if comm.rank == 0:
        shutil.rmtree(d, ignore_errors=True)


def global_array(shape, dtype="float64", seed=0):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return rng.random(shape) > 0.5
    if dtype.kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype.newbyteorder("="),
                            ).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def interior_index(sharding, shape):
    owned = sharding.shard_shape(shape)
    return tuple(slice(sharding.halo_widths(d)[0], sharding.halo_widths(d)[0] + n) for d, n in enumerate(owned))


def local_of(g, sharding, fill=SENTINEL):
    """This process's local buffer of ``g``: owned block, halos set to ``fill``."""
    local = np.full(sharding.local_shape(g.shape), fill, dtype=g.dtype)
    local[interior_index(sharding, g.shape)] = g[sharding.shard_slices(g.shape)]
    return local


def check_loaded(loaded, g, sharding):
    local, s, shape = loaded
    assert s == sharding and shape == g.shape
    assert local.dtype == g.dtype and local.shape == sharding.local_shape(g.shape)
    assert local.flags.c_contiguous
    inner = interior_index(sharding, g.shape)
    assert np.array_equal(local[inner], g[sharding.shard_slices(g.shape)])
    halo_mask = np.ones(local.shape, bool)
    halo_mask[inner] = False
    assert not local[halo_mask].any(), "halos of a loaded buffer are zero"


def check_file(path, g):
    if comm.rank == 0:
        expect = io.BytesIO()
        np.save(expect, g)
        with open(path, "rb") as f:
            got = f.read()
        assert got == expect.getvalue(), "the file is not what numpy.save writes for the global array"
        back = np.load(path)
        assert back.dtype == g.dtype and back.shape == g.shape and back.tobytes() == g.tobytes()
        leftovers = [n for n in os.listdir(os.path.dirname(path)) if ".tmp-" in n]
        assert not leftovers, leftovers


def offsets_for(n, total_min=1, zero_first=False):
    """Offsets of ``n`` uneven shards (widths 1, 2, ...; the first empty if asked)."""
    widths = [k if zero_first else k + total_min for k in range(n)]
    out = [0]
    for w in widths:
        out.append(out[-1] + w)
    return out


def shardings(mesh1, mesh2, mesh3):
    """(id, sharding, global shape) cases valid for any process count."""
    n = comm.size
    a, b = mesh2.shape
    o1 = offsets_for(n)
    o2a, o2b = offsets_for(a), offsets_for(b, zero_first=b > 1)
    return [
        ("1d", Sharding(mesh1, [[0]]), (13,)),
        ("1d-halo", Sharding(mesh1, [[0]], halo_sizes=[1, 1]), (2 * n + 3,)),
        ("1d-offsets-halo", Sharding(mesh1, [[0]], halo_sizes=[1, 1], sharded_dims_offsets=o1), (o1[-1],)),
        ("2d", Sharding(mesh2, [[0], [1]]), (11, 7)),
        ("2d-halo-uneven", Sharding(mesh2, [[0], [1]], halo_sizes=[1, 2, 0, 1]), (2 * a + 1, 2 * b + 3)),
        ("2d-offsets-empty-shard", Sharding(mesh2, [[0], [1]], sharded_dims_offsets=o2a + o2b), (o2a[-1], o2b[-1])),
        ("2d-two-axes-one-dim", Sharding(mesh2, [[1, 0]]), (17, 3)),
        ("2d-replicated-axis", Sharding(mesh2, [[], [0]], halo_sizes=[1, 1]), (4, 3 * a + 1)),
        ("3d", Sharding(mesh3, [[0], [1], [2]], halo_sizes=[1, 1, 1, 1, 1, 1]), (5, 6, 7)),
        ("3d-transposed", Sharding(mesh3, [[2], [], [0, 1]]), (4, 3, 9)),
        ("replicated", Sharding(mesh2, []), (3, 4)),
        ("scalar", Sharding(mesh1, []), ()),
        ("empty", Sharding(mesh1, [[0]]), (0, 3)),
        ("fewer-rows-than-devices", Sharding(mesh1, [[0]]), (1, 2)),
    ]


@pytest.fixture(scope="module")
def meshes():
    ms = (Mesh((-1,), comm=comm), Mesh((-1, -1), comm=comm), Mesh((-1, -1, -1), comm=comm))
    yield ms
    for m in ms:
        m.free()


CASE_IDS = [c[0] for c in shardings(*(Mesh(s, comm=comm) for s in ((-1,), (-1, -1), (-1, -1, -1))))]


@pytest.mark.parametrize("case", CASE_IDS)
def test_round_trip_same_sharding(case, meshes, shared_dir):
    _, sharding, shape = next(c for c in shardings(*meshes) if c[0] == case)
    g = global_array(shape)
    path = os.path.join(shared_dir, "a.npy")
    write_npy(path, local_of(g, sharding), sharding, shape)
    check_file(path, g)
    check_loaded(read_npy(path, sharding), g, sharding)
    check_loaded(read_npy(path, sharding, global_shape=shape), g, sharding)


@pytest.mark.parametrize("case", CASE_IDS)
def test_read_into_every_other_sharding(case, meshes, shared_dir):
    cases = shardings(*meshes)
    _, sharding, shape = next(c for c in cases if c[0] == case)
    g = global_array(shape, seed=1)
    path = os.path.join(shared_dir, "b.npy")
    write_npy(path, local_of(g, sharding), sharding, shape)
    for other_id, other, _ in cases:
        try:
            other.check_shape(shape)
        except ValueError:
            continue  # e.g. offsets or halos made for another shape
        check_loaded(read_npy(path, other), g, other)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int16", "complex128", "bool", "uint8",
                                   ">i4", "<f2", "complex64", "int64"])
def test_dtypes_bit_exact(dtype, meshes, shared_dir):
    mesh2 = meshes[1]
    a, b = mesh2.shape
    sharding = Sharding(mesh2, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    shape = (2 * a + 1, 3 * b)
    g = global_array(shape, dtype)
    if g.dtype.kind == "f":
        g.reshape(-1)[:3] = [np.nan, -0.0, np.inf]  # bit patterns, not just values
    path = os.path.join(shared_dir, "d.npy")
    write_npy(path, local_of(g, sharding, fill=1), sharding, shape)
    check_file(path, g)
    loaded = read_npy(path, Sharding(mesh2, [[1], [0]]))
    assert loaded.local.dtype == g.dtype
    assert loaded.local.tobytes() == np.ascontiguousarray(g[loaded.sharding.shard_slices(shape)]).tobytes()


def test_owned_block_alone_is_accepted(meshes, shared_dir):
    sharding = Sharding(meshes[0], [[0]], halo_sizes=[1, 1])
    g = global_array((3 * comm.size,))
    path = os.path.join(shared_dir, "o.npy")
    write_npy(path, g[sharding.shard_slices(g.shape)].copy(), sharding, g.shape)
    check_file(path, g)


def test_only_one_device_per_block_writes(meshes):
    mesh2 = meshes[1]
    sharding = Sharding(mesh2, [[], [0]])
    writers = comm.allgather(writer_of_block(sharding))
    assert sum(writers) == mesh2.shape[0]
    assert all(w == (mesh2.multi_index(r)[1] == 0) for r, w in enumerate(writers))


def test_numpy_written_files_c_and_fortran(meshes, shared_dir):
    g = global_array((7, 5, 3), seed=3)
    paths = [os.path.join(shared_dir, n) for n in ("c.npy", "f.npy")]
    if comm.rank == 0:
        np.save(paths[0], g)
        np.save(paths[1], np.asfortranarray(g))
        with open(paths[1], "rb") as f:
            assert b"'fortran_order': True" in f.read(128)
    comm.Barrier()
    for path in paths:
        for sharding in (Sharding(meshes[2], [[0], [1], [2]], halo_sizes=[1, 0, 0, 1, 1, 1]),
                         Sharding(meshes[1], [[1], [], [0]]), Sharding(meshes[0], [])):
            check_loaded(read_npy(path, sharding), g, sharding)


def test_overwrite_keeps_no_temporaries(meshes, shared_dir):
    sharding = Sharding(meshes[0], [[0]])
    path = os.path.join(shared_dir, "w.npy")
    if comm.rank == 0:
        open(path + ".tmp-deadbeef", "wb").close()  # a crashed save's leftover
    for seed in range(3):
        g = global_array((10,), seed=seed)
        write_npy(path, local_of(g, sharding), sharding, g.shape)
        check_file(path, g)


def test_tensor_delegates(meshes, shared_dir):
    class FakeTensor:
        def __init__(self, local, sharding, global_shape):
            self.local, self.sharding, self.global_shape = local, sharding, tuple(global_shape)
            self.dtype = local.dtype
            self.interior = local[interior_index(sharding, global_shape)]

    sharding = Sharding(meshes[1], [[0], [1]], halo_sizes=[1, 1, 1, 1])
    g = global_array((2 * meshes[1].shape[0], 2 * meshes[1].shape[1]), "int16")
    t = FakeTensor(local_of(g, sharding), sharding, g.shape)
    path = os.path.join(shared_dir, "t.npy")
    save_tensor(path, t)
    check_file(path, g)
    other = Sharding(meshes[0], [[0]])
    u = load_tensor(path, other, factory=FakeTensor)
    assert isinstance(u, FakeTensor) and u.sharding == other and u.global_shape == g.shape
    assert np.array_equal(u.interior, g[other.shard_slices(g.shape)])


def test_distributed_tensor_save_and_load(meshes, shared_dir):
    from meshrt import DistributedTensor

    src = Sharding(meshes[1], [[0], [1]], halo_sizes=[1, 1, 1, 1])
    g = global_array((2 * meshes[1].shape[0] + 1, 2 * meshes[0].size + 1), "float64")
    t = DistributedTensor.from_global(g, src)
    path = os.path.join(shared_dir, "dt.npy")
    t.save(path)
    check_file(path, g)
    u = DistributedTensor.load(path, Sharding(meshes[0], [[], [0]], halo_sizes=[1, 1]), periodic=True)
    assert u.periodic == (True, True) and np.array_equal(u.gather(), g)
    u.update_halo()
    assert np.array_equal(u.interior, g[u.shard_slices])


# -- errors: the same clear error on every process, never a hang --------------------------------
def _write_on_root(path, data: bytes):
    if comm.rank == 0:
        with open(path, "wb") as f:
            f.write(data)
    comm.Barrier()


def npy_bytes(a, **kw):
    buf = io.BytesIO()
    np.save(buf, a, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("name,data,match", [
    ("truncated", npy_bytes(np.arange(100.0))[:-8], "truncated"),
    ("header-only", npy_bytes(np.arange(100.0))[:128], "truncated"),
    ("foreign", b"just some text, not numpy at all\n" * 10, "not a .npy file"),
    ("empty", b"", "not a .npy file"),
    ("damaged-header", b"\x93NUMPY\x01\x00\x10\x00{'descr': <<<}\n", "damaged"),
    ("objects", npy_bytes(np.array([1, "a", None], dtype=object), allow_pickle=True), "Python objects"),
    ("npz", b"PK\x03\x04" + b"\0" * 100, "not a .npy file"),
])
def test_bad_files_raise_everywhere(name, data, match, meshes, shared_dir):
    path = os.path.join(shared_dir, name + ".npy")
    _write_on_root(path, data)
    with pytest.raises(CheckpointError, match=match):
        read_npy(path, Sharding(meshes[0], [[0]]))


def test_missing_file_and_wrong_shape(meshes, shared_dir):
    s = Sharding(meshes[0], [[0]])
    with pytest.raises(CheckpointError, match="no such file"):
        read_npy(os.path.join(shared_dir, "nope.npy"), s)
    path = os.path.join(shared_dir, "s.npy")
    _write_on_root(path, npy_bytes(np.zeros((4, 6))))
    with pytest.raises(CheckpointError, match=r"holds shape \(4, 6\)"):
        read_npy(path, s, global_shape=(6, 4))
    with pytest.raises(CheckpointError, match="does not fit"):
        read_npy(path, Sharding(meshes[0], [[0]], sharded_dims_offsets=offsets_for(comm.size, 2)))


def test_partial_refused(meshes, shared_dir):
    s = Sharding(meshes[0], [], partial_axes=[0])
    with pytest.raises(CheckpointError, match="partial.*reshard"):
        write_npy(os.path.join(shared_dir, "p.npy"), np.zeros(3), s, (3,))
    assert not os.path.exists(os.path.join(shared_dir, "p.npy"))


def test_bad_local_on_one_process(meshes, shared_dir):
    s = Sharding(meshes[0], [[0]])
    shape = (2 * comm.size,)
    local = np.zeros(3 if comm.rank == 0 else 2)
    with pytest.raises(CheckpointError, match=r"process(es)? \[0\]|local: shape" ):
        write_npy(os.path.join(shared_dir, "x.npy"), local, s, shape)
    local = np.zeros(2, dtype="float32" if comm.rank == 0 else "float64")
    if comm.size > 1:
        with pytest.raises(CheckpointError, match="disagree"):
            write_npy(os.path.join(shared_dir, "x.npy"), local, s, shape)
    with pytest.raises(CheckpointError, match="Python objects"):
        write_npy(os.path.join(shared_dir, "x.npy"), np.zeros(2, object), s, shape)
    with pytest.raises(CheckpointError, match="does not exist"):
        write_npy(os.path.join(shared_dir, "no", "dir", "x.npy"), np.zeros(2), s, shape)
    assert not any(".tmp-" in n for n in os.listdir(shared_dir))


def test_abstract_mesh_refused():
    from meshrt import AbstractMesh

    with pytest.raises(CheckpointError, match="AbstractMesh"):
        read_npy("x.npy", Sharding(AbstractMesh((2,)), [[0]]))


# -- several tensors: state directories -------------------------------------------------------
def test_state_round_trip_and_replacement(meshes, shared_dir):
    mesh1, mesh2, mesh3 = meshes
    su = Sharding(mesh2, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    sv = Sharding(mesh3, [[2], [0]])
    d = os.path.join(shared_dir, "state")
    for step in (1, 2, 3):
        u = global_array((2 * mesh2.shape[0] + 1, 2 * mesh2.shape[1]), seed=step)
        v = global_array((5, 3 * mesh3.shape[0]), "complex64", seed=step)
        save_state(d, {"u": (local_of(u, su), su, u.shape), "v": (local_of(v, sv), sv, v.shape)},
                   metadata={"step": step, "t": 0.5 * step})
        if comm.rank == 0:
            with open(os.path.join(d, "manifest.json")) as f:
                manifest = json.load(f)
            assert manifest["metadata"] == {"step": step, "t": 0.5 * step}
            assert manifest["tensors"]["u"]["sharding"] == str(su)
            assert manifest["tensors"]["v"]["dtype"] == "<c8"
            assert sorted(os.listdir(d)) == sorted(["manifest.json", manifest["generation"]])
            assert np.array_equal(np.load(os.path.join(d, manifest["tensors"]["u"]["file"])), u)
        comm.Barrier()
        other = Sharding(mesh1, [[0]])
        tensors, meta = load_state(d, other)
        assert meta["step"] == step and sorted(tensors) == ["u", "v"]
        check_loaded(tensors["u"], u, other)
        check_loaded(tensors["v"], v, other)
        only, _ = load_state(d, {"v": sv})
        assert list(only) == ["v"] and isinstance(only["v"], Loaded)
        check_loaded(only["v"], v, sv)


def test_state_errors(meshes, shared_dir):
    s = Sharding(meshes[0], [[0]])
    with pytest.raises(CheckpointError, match="no manifest.json"):
        load_state(shared_dir, s)
    with pytest.raises(CheckpointError, match="not a safe file name"):
        save_state(os.path.join(shared_dir, "st"), {"../evil": (np.zeros(1), s, (comm.size,))})
    with pytest.raises(CheckpointError, match="JSON"):
        save_state(os.path.join(shared_dir, "st"), {"a": (np.zeros(1), s, (comm.size,))}, metadata={"x": object()})
    save_state(os.path.join(shared_dir, "st"), {"a": (np.zeros(1), s, (comm.size,))})
    with pytest.raises(CheckpointError, match=r"no tensor\(s\) \['b'\]"):
        load_state(os.path.join(shared_dir, "st"), {"b": s})


def test_state_keeps_periodic_flags(meshes, shared_dir):
    from meshrt import DistributedTensor

    mesh = meshes[1]
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    shape = (2 * mesh.shape[0] + 1, 3 * mesh.shape[1])
    g = global_array(shape, seed=5)
    u = DistributedTensor.from_global(g, s, periodic=[True, False])
    v = DistributedTensor.from_global(g, s)
    w = (local_of(g, s), s, shape, True)
    d = os.path.join(shared_dir, "state-periodic")
    save_state(d, {"u": u, "v": v, "w": w})
    if comm.rank == 0:
        with open(os.path.join(d, "manifest.json")) as f:
            tensors = json.load(f)["tensors"]
        assert [tensors[k]["periodic"] for k in "uvw"] == [[True, False], None, [True, True]]
    loaded, _ = load_state(d, s, factory=DistributedTensor.from_local)
    assert [loaded[k].periodic for k in "uvw"] == [(True, False), None, (True, True)]
    loaded["u"].update_halo()  # periodic along dim 0: the first row's low halo is the last row
    if loaded["u"].shard_slices[0].start == 0:
        cols = loaded["u"].shard_slices[1]
        np.testing.assert_array_equal(loaded["u"].local[0, 1:-1], g[-1, cols])
    plain, _ = load_state(d, s)
    assert isinstance(plain["u"], Loaded) and plain["u"].periodic == (True, False) and plain["v"].periodic is None
    local, sharding, shape_back = plain["w"]
    assert sharding == s and shape_back == shape
    with pytest.raises(CheckpointError, match="periodic"):
        save_state(d, {"u": (local_of(g, s), s, shape, [True])})


def test_state_names_must_agree(meshes, shared_dir):
    s = Sharding(meshes[0], [[0]])
    name = "a" if comm.rank == 0 or comm.size == 1 else "b"
    if comm.size == 1:
        save_state(os.path.join(shared_dir, "names"), {name: (np.zeros(1), s, (1,))})
        return
    with pytest.raises(CheckpointError, match="processes pass different tensor names"):
        save_state(os.path.join(shared_dir, "names"), {name: (np.zeros(1), s, (comm.size,))})
