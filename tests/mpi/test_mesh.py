"""Mesh on a real communicator: dynamic shapes, device-group communicators, errors on every rank."""

import itertools

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import Mesh, MeshError, Sharding
from meshrt.mesh import dims_create

comm = MPI.COMM_WORLD


def mesh_shapes(n):
    """A few static and dynamic meshes of ``n`` processes, 1-D to 3-D."""
    shapes = [(-1,), (n,), (-1, -1), (-1, -1, -1), (1, -1), (-1, 1, -1)]
    for a in range(1, n + 1):
        if n % a == 0:
            shapes.append((a, n // a))
    return shapes


@pytest.mark.parametrize("shape", mesh_shapes(comm.size))
def test_coords_rank_and_groups(shape):
    with Mesh(shape, comm=comm) as mesh:
        assert mesh.size == comm.size and mesh.rank == comm.rank
        assert mesh.shape == dims_create(comm.size, tuple(-1 if s == -1 else s for s in shape))
        assert mesh.linear_index(mesh.coords) == comm.rank
        all_coords = comm.allgather(mesh.coords)
        assert all_coords == [mesh.multi_index(r) for r in range(comm.size)]
        for r in range(0, mesh.ndim + 1):
            for axes in itertools.permutations(range(mesh.ndim), r):
                group = mesh.group(axes)
                assert group is mesh.group(list(axes)), "group communicators are cached per axes tuple"
                assert group.Get_size() == mesh.axes_size(axes)
                assert group.Get_rank() == mesh.in_group_index(mesh.coords, axes)
                members = group.allgather(comm.rank)
                assert tuple(members) == mesh.group_devices(axes, mesh.coords)


def test_group_free_and_recreate():
    mesh = Mesh((-1,), comm=comm)
    g = mesh.group([0])
    assert g.allreduce(1) == comm.size
    mesh.free()
    assert g == MPI.COMM_NULL
    assert mesh.group([0]).allreduce(1) == comm.size
    mesh.free()


def test_neighbors_match_cart_shift():
    mesh = Mesh((-1, -1), comm=comm)
    cart = comm.Create_cart(mesh.shape, periods=[False] * mesh.ndim, reorder=False)
    try:
        for axis in range(mesh.ndim):
            src, dst = cart.Shift(axis, 1)
            expect = tuple(-1 if p == MPI.PROC_NULL else p for p in (src, dst))
            assert mesh.neighbors([axis]) == expect
    finally:
        cart.Free()
        mesh.free()


def test_size_mismatch_raises_on_every_process():
    with pytest.raises(MeshError, match=f"needs exactly {comm.size + 1} processes, but the communicator has {comm.size}"):
        Mesh((comm.size + 1,), comm=comm)
    with pytest.raises(MeshError, match=f"needs a multiple of {comm.size + 1} processes"):
        Mesh((comm.size + 1, -1), comm=comm)
    # every process raised: nobody is left waiting
    assert comm.allreduce(1) == comm.size


def test_parse_on_communicator():
    mesh = Mesh.parse("mesh.mesh @m(shape = ?x1)", comm=comm)
    assert mesh.shape == (comm.size, 1) and mesh.name == "m"
    mesh2 = Mesh.parse('sdy.mesh @m = <["x"=%d]>' % comm.size, comm=comm)
    assert mesh2.axis_names == ("x",)
    assert mesh.group(["x"] if False else [0]).Get_size() == comm.size
    mesh.free()


def test_sharding_defaults_to_this_process():
    mesh = Mesh((-1,), comm=comm)
    s = Sharding(mesh, [[0]], halo_sizes=[1, 1])
    shape = (3 * comm.size + 1, 2)
    sl = s.shard_slices(shape)
    assert sl == s.shard_slices(shape, comm.rank)
    counts = comm.allgather(sl[0].stop - sl[0].start)
    assert sum(counts) == shape[0]
    assert s.local_shape(shape)[0] == counts[comm.rank] + 2
    owned = np.zeros(shape[0], int)
    owned[sl[0]] = 1
    total = np.empty_like(owned)
    comm.Allreduce(owned, total)
    assert (total == 1).all()
