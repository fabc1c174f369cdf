"""Resharding on real processes: random pairs, values preserved exactly, volume at the lower bound."""

import sys
from pathlib import Path

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import Mesh, Sharding
from meshrt.reshard import _abstract, _exchange_program, execute_reshard, plan_reshard

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from reshard_cases import check_result, owned_input, random_sharding  # noqa: E402

comm = MPI.COMM_WORLD


def meshes():
    return [Mesh((-1,), comm=comm), Mesh((-1, -1), comm=comm), Mesh((-1, -1, -1), comm=comm)]


def run_case(mesh, g, src, dst):
    plan = plan_reshard(src, dst, g.shape)
    owned = owned_input(g, src, mesh.rank)
    out = execute_reshard(plan, owned, mesh)
    assert out.shape == dst.shard_shape(g.shape), str(plan)
    blocks = comm.allgather(np.ascontiguousarray(out))
    check_result(g, dst, blocks)
    return plan


@pytest.mark.parametrize("mesh_index", [0, 1, 2])
def test_random_pairs(mesh_index):
    mesh = meshes()[mesh_index]
    rng = np.random.default_rng(100 + mesh_index)  # same draws on every rank
    for case in range(25):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(x) for x in rng.integers(1, 3 * comm.size + 2, ndim))
        src = random_sharding(rng, mesh, shape)
        dst = random_sharding(rng, mesh, shape)
        dtype = [np.int64, np.int32, np.int16][case % 3]
        g = np.random.default_rng(case).integers(10, 100, shape).astype(dtype)
        plan = run_case(mesh, g, src, dst)
        if not src.is_partial:
            assert plan.elements_moved == plan.lower_bound, str(plan)
    mesh.free()


def test_exchange_sends_exactly_the_planned_volume():
    mesh = Mesh((-1,), comm=comm)
    shape = (4 * comm.size + 3, 5)
    src = Sharding(mesh, [[0]])
    dst = Sharding(mesh, [[0]], sharded_dims_offsets=[0] + [min(shape[0], 2 * k + 1) for k in range(1, comm.size)]
                   + [shape[0]])
    plan = plan_reshard(src, dst, shape)
    sends, _, _ = _exchange_program(_abstract(src), _abstract(dst), shape, mesh.rank)
    sent = sum(int(np.prod([s.stop - s.start for s in sl])) for dest, sl in sends if dest != mesh.rank)
    assert comm.allreduce(sent) == plan.elements_moved == plan.lower_bound
    g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    run_case(mesh, g, src, dst)
    mesh.free()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.uint8, np.bool_, np.float16])
def test_dtypes_through_every_movement(dtype):
    mesh = Mesh((-1, -1), comm=comm)
    shape = (2 * comm.size + 1, comm.size + 2, 3)
    g = (np.arange(np.prod(shape)) % 7).reshape(shape).astype(dtype)
    pairs = [
        ([[0]], []), ([], [[0], [1]]), ([[0]], [[], [0]]), ([[0], [1]], [[1], [0]]),
        ([[0, 1]], [[], [], [1, 0]]), ([[1]], [[0, 1]]),
    ]
    for a, b in pairs:
        run_case(mesh, g, Sharding(mesh, a), Sharding(mesh, b))
    mesh.free()


def test_out_buffer_receives_the_result():
    mesh = Mesh((-1,), comm=comm)
    shape = (3 * comm.size, 4)
    src, dst = Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]])
    g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    local = np.zeros((shape[0] + 2, 4 + 2))
    out = local[1:-1, 1:-1][:, : dst.shard_shape(shape)[1]]
    res = execute_reshard(plan_reshard(src, dst, shape), g[src.shard_slices(shape)].copy(), mesh, out=out)
    assert res is out
    np.testing.assert_array_equal(out, g[dst.shard_slices(shape)])
    mesh.free()


@pytest.mark.parametrize("mesh_index", [0, 1])
def test_zero_size_tensors_change_block_shapes(mesh_index):
    """Nothing moves, but each empty block takes the target's shape on every process (a dim of
    1 row over p devices: (1, 0, 6) on one, (0, 0, 6) on the others), with and without ``out``."""
    mesh = meshes()[mesh_index]
    rng = np.random.default_rng(7 + mesh_index)
    for case in range(15):
        shape = [int(x) for x in rng.integers(0, comm.size + 2, 3)]
        shape[int(rng.integers(0, 3))] = 0
        g = np.zeros(shape, np.int64)  # integer: every partial kind is allowed
        src, dst = random_sharding(rng, mesh, g.shape), random_sharding(rng, mesh, g.shape)
        run_case(mesh, g, src, dst)
        plan = plan_reshard(src, dst, g.shape)
        out = np.empty(dst.shard_shape(g.shape), g.dtype)
        assert execute_reshard(plan, owned_input(g, src, mesh.rank), mesh, out=out) is out


@pytest.mark.parametrize("mesh_index", [0, 1])
def test_empty_shards_on_both_sides_of_a_local_slice(mesh_index):
    """Dims of size 1 split over every process leave empty blocks on all but one, before and
    after: the local step gives each empty block the target's shape (it raised a shape error on
    the empty processes only, and the others waited)."""
    mesh = meshes()[mesh_index]
    g = np.arange(16).reshape(1, 4, 1, 2, 2)
    for src_split, dst_split in (([[], [], [0]], [[0]]), ([[0]], [[], [], [0]]), ([[], [], [0]], [[], [], [], [0]])):
        if mesh_index == 1:
            src_split, dst_split = [a + ([1] if a else []) for a in src_split], dst_split
        run_case(mesh, g, Sharding(mesh, src_split), Sharding(mesh, dst_split))
