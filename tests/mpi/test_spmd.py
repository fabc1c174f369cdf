"""DistributedTensor.reshard and @spmd on real processes, against numpy on the global array."""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding, ShardingError, all_gather, all_reduce, spmd

comm = MPI.COMM_WORLD


def halo_cells_match(t, g):
    """Every halo cell that lies inside the global array equals the global value."""
    idx = np.indices(t.local.shape)
    pos = []
    for d in range(g.ndim):
        lo = t.sharding.halo_widths(d)[0]
        pos.append(idx[d] - lo + t.shard_slices[d].start)
    inside = np.all([(p >= 0) & (p < n) for p, n in zip(pos, g.shape)], axis=0)
    np.testing.assert_array_equal(t.local[inside], g[tuple(p[inside] for p in pos)])


@pytest.mark.parametrize("mesh_shape", [(-1,), (-1, -1), (-1, -1, -1)])
def test_reshard_tensors_random_pairs(mesh_shape):
    mesh = Mesh(mesh_shape, comm=comm)
    rng = np.random.default_rng(7 + len(mesh_shape))
    shape = (2 * comm.size + 3, 2 * comm.size + 4, 3)
    g = rng.integers(0, 1000, shape).astype(np.float64)
    layouts = [
        Sharding(mesh, []), Sharding(mesh, [[0]]), Sharding(mesh, [[], list(range(mesh.ndim))]),
        Sharding(mesh, [[mesh.ndim - 1], [], [0]] if mesh.ndim > 1 else [[], [], [0]]),
        Sharding(mesh, [[0]], halo_sizes=[1, 1]),
        Sharding(mesh, [[], [0]], halo_sizes=[1, 2]),
        Sharding(mesh, [[0]], sharded_dims_offsets=[0] + [min(shape[0], k + 1) for k in range(1, mesh.shape[0])]
                 + [shape[0]]),
    ]
    for src in layouts:
        t = DistributedTensor.from_global(g, src)
        for dst in layouts:
            u = t.reshard(dst)
            assert u.sharding == dst and u.local.shape == dst.local_shape(shape)
            np.testing.assert_array_equal(u.interior, g[dst.shard_slices(shape)])
            halo_cells_match(u, g)
    mesh.free()


def test_reshard_partial_and_to_partial():
    mesh = Mesh((-1, -1), comm=comm)
    shape = (comm.size + 2, 5)
    g = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    full = DistributedTensor.from_global(g, Sharding(mesh, [[0]]))
    for kind in ("sum", "max", "min", "product"):
        p = full.reshard(Sharding(mesh, [[0]], partial_axes=[1], partial_type=kind))
        np.testing.assert_array_equal(p.gather(), g)
        back = p.reshard(Sharding(mesh, [[], [1, 0]]))
        np.testing.assert_array_equal(back.gather(), g)
        assert not back.sharding.is_partial
    mesh.free()


def test_reshard_to_other_mesh_is_an_error_everywhere():
    a, b = Mesh((-1,), comm=comm), Mesh((-1, 1), comm=comm)
    t = DistributedTensor.zeros((4,), Sharding(a, [[0]]))
    with pytest.raises(ShardingError, match="is not this tensor's mesh"):
        t.reshard(Sharding(b, [[0]]))
    a.free()
    b.free()


def test_spmd_reshards_inputs_and_wraps_outputs():
    mesh = Mesh((-1,), ("x",), comm=comm)
    rows, cols = Sharding(mesh, [["x"]]), Sharding(mesh, [[], ["x"]])
    g = np.arange(3.0 * (comm.size + 1) * 4).reshape(3 * (comm.size + 1), 4)

    @spmd(in_shardings=(cols,), out_shardings=Sharding(mesh, [], partial_axes=["x"]))
    def column_sums(x):
        return x.sum(axis=0, keepdims=True).repeat(1, axis=0).sum(axis=1)

    t = DistributedTensor.from_global(g, rows)  # resharded to columns on the way in
    total = column_sums(t)
    assert total.sharding.is_partial and total.global_shape == (1,)
    np.testing.assert_allclose(total.gather(), [g.sum()])

    pieces = [rows.shard_shape(g.shape, d)[0] for d in range(comm.size)]  # uneven: all_gather needs sizes=

    @spmd(in_shardings=(rows, None), out_shardings=(rows, Sharding(mesh, [])))
    def scale_and_gather(x, factor):
        return x * factor, all_gather(x, mesh, ["x"], 0, sizes=pieces)

    scaled, gathered = scale_and_gather(g, 3.0)  # a numpy array is the global array
    np.testing.assert_array_equal(scaled.gather(), 3 * g)
    np.testing.assert_array_equal(gathered.interior, g)

    @spmd(in_shardings=rows, out_shardings=Sharding(mesh, []), out_shapes=(1,))
    def count(x):
        return all_reduce(np.array([x.shape[0]]), mesh, ["x"])

    assert count(t).interior.tolist() == [g.shape[0]]
    mesh.free()


def test_spmd_errors_raise_on_every_process():
    mesh = Mesh((-1,), comm=comm)
    rows = Sharding(mesh, [[0]])
    t = DistributedTensor.zeros((2 * comm.size, 2), rows)

    @spmd(in_shardings=(rows,), out_shardings=rows, out_shapes=(2 * comm.size, 2))
    def bad_shape(x):
        return x[:1] if mesh.rank == comm.size - 1 else x

    with pytest.raises(ShardingError, match=r"bad_shape: output 0: local: shape"):
        bad_shape(t)
    with pytest.raises(ShardingError, match="called with 2 positional arguments, but in_shardings has 1"):
        bad_shape(t, t)
    with pytest.raises(ShardingError, match="in_shardings: entry 0 is 'rows'"):
        spmd(in_shardings=("rows",), out_shardings=rows)
    mesh.free()


def test_reshard_into_out_allocates_nothing_new():
    mesh = Mesh((-1,), comm=comm)
    shape = (2 * comm.size + 1, 3)
    g = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    cases = [(Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]])), (Sharding(mesh, [[0]]), Sharding(mesh, [])),
             (Sharding(mesh, [], partial_axes=[0]), Sharding(mesh, [[0]]))]
    for src, dst in cases:
        t = DistributedTensor.from_global(g, src) if not src.is_partial else DistributedTensor.from_local(
            (g / comm.size).astype(np.float32) if comm.rank else g - (comm.size - 1) * (g / comm.size).astype(
                np.float32), src, shape)
        out = DistributedTensor.zeros(shape, dst, np.float32)
        buf = out.local
        res = t.reshard(dst, out=out)
        assert res is out and res.local is buf
        np.testing.assert_allclose(out.gather(), g, rtol=1e-6)
    with pytest.raises(ShardingError, match="out: expected a DistributedTensor with sharding"):
        DistributedTensor.from_global(g, cases[0][0]).reshard(cases[0][1], out=DistributedTensor.zeros(shape, cases[0][1]))
    mesh.free()


def test_collectives_write_into_out():
    from meshrt import CollectiveError, reduce_scatter

    mesh = Mesh((-1,), comm=comm)
    x = np.arange(4 * comm.size * 3, dtype=np.float64).reshape(4 * comm.size, 3)
    out = np.empty_like(x)
    assert all_reduce(x, mesh, [0], out=out) is out
    np.testing.assert_array_equal(out, x * comm.size)
    piece = np.empty((4, 3))
    assert reduce_scatter(x, mesh, [0], "sum", 0, out=piece) is piece
    np.testing.assert_array_equal(piece, x[4 * comm.rank: 4 * comm.rank + 4] * comm.size)
    col = np.empty((4 * comm.size, 3 * comm.size))
    assert all_gather(x, mesh, [0], 1, out=col) is col
    np.testing.assert_array_equal(col, np.concatenate([x] * comm.size, axis=1))
    with pytest.raises(CollectiveError, match=r"all_reduce: out has shape \(1,\) and dtype float64, but the result"):
        all_reduce(x, mesh, [0], out=np.empty(1))
    mesh.free()
