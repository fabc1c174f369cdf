"""Shardy sub-axis shardings (``{"x":(1)2}``) reshard to and from full-axis ones on the same Mesh.

A sub-axis sharding lives on a refinement of the mesh (axis "x" split into
"x:(1)p" and "x:(p)q"); every result is checked against the numpy global array.
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.reshard import execute_reshard, plan_reshard

MPI_NPROCS = (1, 2, 4, 8)
comm = MPI.COMM_WORLD


def factorizations(n):
    return [(p, n // p) for p in range(1, n + 1) if n % p == 0]


def sdy(mesh, dims):
    return Sharding.parse("#sdy.sharding<@mesh, [" + ", ".join("{" + d + "}" for d in dims) + "]>", mesh)


def cases(mesh):
    """(src, dst) pairs: sub-axis <-> full-axis, and sub-axis <-> other sub-axes."""
    out = []
    for p, q in factorizations(mesh.shape[0]):
        major, minor = f'"x":(1){p}', f'"x":({p}){q}'
        split = sdy(mesh, [major, minor])   # dim 0 on the major part of x, dim 1 on the minor part
        swapped = sdy(mesh, [minor, major])
        minor_only = sdy(mesh, ["", minor])
        for full in (Sharding(mesh, [["x"]]), Sharding(mesh, [[], ["x"]]), Sharding(mesh, [])):
            out += [(split, full), (full, split), (full, minor_only), (minor_only, full)]
        out += [(split, swapped), (swapped, minor_only)]
        if mesh.ndim > 1:
            out += [(sdy(mesh, [minor + ', "y"', major]), Sharding(mesh, [["y"], ["x"]])),
                    (Sharding(mesh, [["y", "x"]]), sdy(mesh, ['"y", ' + major, minor]))]
    return out


@pytest.mark.parametrize("mesh_shape, dtype", [((-1,), np.float64), ((-1, 1), np.int32)])
def test_sub_axes_round_trip_values(mesh_shape, dtype):
    mesh = Mesh(mesh_shape, ("x", "y")[: len(mesh_shape)], comm=comm)
    shape = (2 * comm.size + 1, comm.size + 3)
    g = (np.arange(np.prod(shape)) * 7 % 101).reshape(shape).astype(dtype)
    for src, dst in cases(mesh):
        t = DistributedTensor.from_global(g, src)
        out = t.reshard(dst)
        assert out.sharding == dst
        np.testing.assert_array_equal(out.interior, g[dst.shard_slices(shape)], err_msg=f"{src} -> {dst}")
        plan = plan_reshard(src, dst, shape)
        assert plan.elements_moved == plan.lower_bound, str(plan)
        # the executor on the user's mesh, straight from the owned block
        block = execute_reshard(plan, np.ascontiguousarray(g[src.shard_slices(shape)]), mesh)
        np.testing.assert_array_equal(block, g[dst.shard_slices(shape)])
    mesh.free()


def test_sub_axis_partial_and_halos():
    mesh = Mesh((-1,), ("x",), comm=comm)
    n = comm.size
    p, q = factorizations(n)[len(factorizations(n)) // 2]
    shape = (3 * n, 5)
    g = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    # unreduced (partial sum) over the minor sub-axis -> split over all of x, with halos
    src = Sharding.parse(f'#sdy.sharding<@mesh, [{{"x":(1){p}}}], unreduced={{"x":({p}){q}}}>', mesh)
    dst = Sharding(mesh, [["x"]], halo_sizes=[1, 1])
    part = g[src.shard_slices(shape)].copy()
    if src.is_partial and src.mesh.in_group_index(src.mesh.coords, src.partial_axes) != 0:
        part[...] = 0  # one device of each partial group holds the value, the others zeros
    t = DistributedTensor.from_local(part, src, shape)
    out = t.reshard(dst)
    np.testing.assert_array_equal(out.gather(), g)
    start, stop = out.shard_slices[0].start, out.shard_slices[0].stop
    if start > 0:  # the halos were filled from the neighbours
        np.testing.assert_array_equal(out.local[0], g[start - 1])
    if stop < shape[0]:
        np.testing.assert_array_equal(out.local[-1], g[stop])
    mesh.free()


def test_unrelated_meshes_still_refused():
    a = Mesh((-1,), ("x",), comm=comm)
    b = Mesh((-1,), ("z",), comm=comm)
    t = DistributedTensor.zeros((4,), Sharding(a, [[0]]))
    with pytest.raises(Exception, match="is not this tensor's mesh"):
        t.reshard(Sharding(b, [[0]]))
    a.free()
    b.free()


def test_crossing_sub_axes_bind_a_common_refinement():
    """"x":(1)p on one side and "x":(1)q on the other need a mesh finer than both."""
    mesh = Mesh((-1,), ("x",), comm=comm)
    n = comm.size
    if n % 8:
        pytest.skip("needs an axis of 8 to cut at 2 on one side and at 4 on the other")
    shape = (n + 1, 2 * n)
    g = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    a = sdy(mesh, ['"x":(1)2', f'"x":(2){n // 2}'])
    b = sdy(mesh, [f'"x":(4){n // 4}', '"x":(1)4'])
    for src, dst in ((a, b), (b, a)):
        out = DistributedTensor.from_global(g, src).reshard(dst)
        np.testing.assert_array_equal(out.interior, g[dst.shard_slices(shape)], err_msg=f"{src} -> {dst}")
    mesh.free()


def test_executor_binds_a_plan_on_another_mesh_to_the_same_processes():
    """A plan made on an AbstractMesh of the same devices runs on any Mesh of them (one Mesh made, then reused)."""
    from meshrt import AbstractMesh
    from meshrt.reshard import _BOUND

    mesh = Mesh((-1,), ("x",), comm=comm)
    n = comm.size
    p = 2 if n % 2 == 0 else 1
    fine = AbstractMesh((p, n // p), ("x:(1)2", "x:(2)2") if p == 2 else ("x", "y"))
    shape = (2 * n + 1, n + 2)
    g = np.arange(np.prod(shape), dtype=np.int64).reshape(shape)
    src, dst = Sharding(fine, [[0], [1]]), Sharding(fine, [[1, 0]])
    plan = plan_reshard(src, dst, shape)
    for _ in range(2):
        out = execute_reshard(plan, g[src.shard_slices(shape, mesh.rank)].copy(), mesh)
        np.testing.assert_array_equal(out, g[dst.shard_slices(shape, mesh.rank)])
    bound = _BOUND.get(mesh, {})
    assert list(bound) == ([] if fine == mesh.abstract() else [fine])
    for m in bound.values():
        m.free()
    mesh.free()
