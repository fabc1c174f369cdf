"""The reshard planner, with no MPI: step choice, volumes, a whole-mesh numpy
simulation of every plan checked against the global array, the same plans as the
original O(P^2) planner (tests/reshard_reference.py), and 65,536-device plans."""

import numpy as np
import pytest
import reshard_reference as ref
from hypothesis import given, settings, strategies as st

from meshrt import AbstractMesh, Sharding, ShardingError
from meshrt.mesh import dims_create
from meshrt.reshard import (
    _local_slice, exchange_recvs, exchange_sends, explain_reshard, gather_sizes, lower_bound, partial_keeper,
    plan_reshard,
)
from meshrt.sharding.spec import split_offsets
from reshard_cases import check_result, identity, owned_input, random_sharding, reduce_blocks


def simulate(plan, blocks):
    """Run ``plan`` for every device of an AbstractMesh at once, on numpy blocks."""
    mesh, shape = plan.steps[0].before.mesh if plan.steps else plan.src.mesh, plan.global_shape
    for step in plan.steps:
        attrs = dict(step.attrs)
        new = []
        for d in range(mesh.size):
            if step.op in ("all_reduce", "reduce_scatter"):
                group = mesh.group_devices(step.mesh_axes, d)
                red = reduce_blocks(attrs["reduction"], [blocks[g] for g in group])
                if step.op == "all_reduce":
                    new.append(red)
                    continue
                ax = attrs["scatter_axis"]
                k = mesh.in_group_index(d, step.mesh_axes)
                offs = split_offsets(red.shape[ax], len(group))
                new.append(np.take(red, range(offs[k], offs[k + 1]), axis=ax))
            elif step.op == "all_gather":
                group = mesh.group_devices(step.mesh_axes, d)
                new.append(np.concatenate([blocks[g] for g in group], axis=attrs["gather_axis"]))
            elif step.op == "all_slice":
                new.append(_local_slice(step, blocks[d], shape, d))
            elif step.op in ("all_to_all", "permute", "exchange"):
                out = np.full(step.after.shard_shape(shape, d), -999, blocks[d].dtype)
                need = step.after.shard_slices(shape, d)
                for src, box in exchange_recvs(step.before, step.after, shape, d):
                    have = step.before.shard_slices(shape, src)
                    out[tuple(slice(b0 - n.start, b1 - n.start) for (b0, b1), n in zip(box, need))] = blocks[src][
                        tuple(slice(b0 - h.start, b1 - h.start) for (b0, b1), h in zip(box, have))]
                new.append(out)
            elif step.op == "make_partial":
                keep = partial_keeper(attrs["kind"], mesh.multi_index(d), step.mesh_axes)
                new.append(blocks[d] if keep else np.full_like(blocks[d], identity(attrs["kind"], blocks[d].dtype)))
            elif step.op == "update_halo":
                new.append(blocks[d])
            else:
                raise AssertionError(step.op)
        blocks = new
    return blocks


MESHES = [(1,), (3,), (4,), (2, 2), (2, 3), (3, 1, 2), (2, 2, 2)]


@pytest.mark.parametrize("mshape", MESHES)
def test_random_pairs_simulated(mshape):
    rng = np.random.default_rng(sum(mshape) * 31 + len(mshape))
    mesh = AbstractMesh(mshape)
    for _ in range(60):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(x) for x in rng.integers(1, 9, ndim))
        src = random_sharding(rng, mesh, shape)
        dst = random_sharding(rng, mesh, shape)
        g = np.random.default_rng(1).integers(10, 100, shape).astype(np.int64)
        blocks = [owned_input(g, src, d) for d in range(mesh.size)]
        plan = plan_reshard(src, dst, shape)
        out = simulate(plan, blocks)
        check_result(g, dst, out)
        if not src.is_partial:
            assert plan.elements_moved == plan.lower_bound == lower_bound(src, dst, shape), str(plan)


@pytest.mark.parametrize(
    "src, dst, ops, moved",
    [
        (([[0]],), ([],), ["all_gather"], 8 * 48),
        (([],), ([[0], [1]],), ["all_slice"], 0),
        (([[0]],), ([[], [0]],), ["all_to_all"], 8 * 12),
        (([[0], [1]],), ([[1], [0]],), ["exchange"], None),  # axes of unequal size: not a permutation
        (([[0]], dict(partial_axes=[1])), ([[0, 1]],), ["reduce_scatter"], None),
        (([[0]], dict(partial_axes=[1], partial_type="max")), ([[0]],), ["all_reduce"], None),
        (([[0]],), ([[0]], dict(sharded_dims_offsets=[0, 1, 3, 8, 8])), ["exchange"], None),
        (([[0]],), ([[0]], dict(halo_sizes=[1, 1])), ["update_halo"], 0),
        (([[0]],), ([[0]], dict(partial_axes=[1])), ["make_partial"], 0),
        (([[0]],), ([[0]],), [], 0),
    ],
)
def test_step_choice(src, dst, ops, moved):
    mesh = AbstractMesh((4, 2))

    def make(spec):
        return Sharding(mesh, spec[0], **(spec[1] if len(spec) > 1 else {}))

    plan = plan_reshard(make(src), make(dst), (8, 8))
    assert [s.op for s in plan.steps] == ops, str(plan)
    if moved is not None:
        assert plan.elements_moved == moved


def test_permutation_swaps_equal_axes_without_gather():
    mesh = AbstractMesh((2, 2))
    plan = plan_reshard(Sharding(mesh, [[0], [1]]), Sharding(mesh, [[1], [0]]), (6, 6))
    assert [s.op for s in plan.steps] == ["permute"]
    assert plan.elements_moved == 2 * 9 == plan.lower_bound  # the two off-diagonal devices swap


def test_explain_prints_groups_and_volume_on_abstract_mesh():
    mesh = AbstractMesh((2, 2), ("x", "y"))
    text = str(explain_reshard(Sharding(mesh, [["x"]], partial_axes=["y"]), Sharding(mesh, [["x", "y"]]), (8, 2)))
    assert "reduce_scatter(mesh_axes=[1], reduction=sum, scatter_axis=0)" in text
    assert "elements moved between processes" in text


def test_plans_are_cached_and_pure():
    mesh = AbstractMesh((3,))
    a, b = Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]])
    assert plan_reshard(a, b, (5, 7)) is plan_reshard(a, b, [5, 7])


def test_reshard_errors():
    with pytest.raises(ShardingError, match="source mesh .* and destination mesh .* differ"):
        plan_reshard(Sharding(AbstractMesh((2,)), [[0]]), Sharding(AbstractMesh((3,)), [[0]]), (6,))
    with pytest.raises(ShardingError, match="splits 2 dims, but the tensor has only 1"):
        plan_reshard(Sharding(AbstractMesh((2, 1)), [[0]]), Sharding(AbstractMesh((2, 1)), [[0], [1]]), (6,))
    with pytest.raises(ShardingError, match="expected two Shardings"):
        plan_reshard("x", Sharding(AbstractMesh((2,)), [[0]]), (6,))


# -- the scalable planner against the original O(P^2) one ---------------------------------


def assert_same_as_reference(src, dst, shape):
    shape = tuple(shape)
    plan, old = plan_reshard(src, dst, shape), ref.reference_plan(src, dst, shape)
    assert plan == old, f"new:\n{plan}\nreference:\n{old}"
    for step in plan.steps:
        if step.op in ("all_to_all", "permute", "exchange"):
            for d in range(src.mesh.size):
                assert exchange_recvs(step.before, step.after, shape, d) == ref.exchange_recvs(
                    step.before, step.after, shape, d), (str(plan), d)
                assert exchange_sends(step.before, step.after, shape, d) == ref.exchange_sends(
                    step.before, step.after, shape, d), (str(plan), d)
        if step.op == "all_gather":
            d = dict(step.attrs)["gather_axis"]
            for dev in range(src.mesh.size):
                group = src.mesh.group_devices(step.mesh_axes, dev)
                assert gather_sizes(step, shape, dev) == tuple(step.before.shard_shape(shape, g)[d] for g in group)
    if not src.is_partial:
        assert lower_bound(src, dst, shape) == ref.lower_bound(src, dst, shape)


@pytest.mark.parametrize("mshape", MESHES)
def test_same_plans_as_reference_serial_cases(mshape):
    """The draws of test_random_pairs_simulated, planned both ways."""
    rng = np.random.default_rng(sum(mshape) * 31 + len(mshape))
    mesh = AbstractMesh(mshape)
    for _ in range(60):
        ndim = int(rng.integers(1, 4))
        shape = tuple(int(x) for x in rng.integers(1, 9, ndim))
        assert_same_as_reference(random_sharding(rng, mesh, shape), random_sharding(rng, mesh, shape), shape)


@pytest.mark.parametrize("nprocs", [1, 2, 3, 4, 8])
def test_same_plans_as_reference_mpi_cases(nprocs):
    """The draws of tests/mpi/test_reshard.py::test_random_pairs at every process count the suite runs."""
    for mesh_index in range(3):
        mesh = AbstractMesh(dims_create(nprocs, (-1,) * (mesh_index + 1)))
        rng = np.random.default_rng(100 + mesh_index)
        for _ in range(25):
            ndim = int(rng.integers(1, 4))
            shape = tuple(int(x) for x in rng.integers(1, 3 * nprocs + 2, ndim))
            assert_same_as_reference(random_sharding(rng, mesh, shape), random_sharding(rng, mesh, shape), shape)


@pytest.mark.parametrize("spec", [
    ((4, 2), (8, 8), ([[0]],), ([],)), ((4, 2), (8, 8), ([[0]],), ([[], [0]],)),
    ((4, 2), (8, 8), ([[0], [1]],), ([[1], [0]],)), ((2, 2), (6, 6), ([[0], [1]],), ([[1], [0]],)),
    ((4, 2), (8, 8), ([[0]],), ([[0]], dict(sharded_dims_offsets=[0, 1, 3, 8, 8]))),
    ((4, 2), (8, 8), ([[0]], dict(partial_axes=[1])), ([[0, 1]],)),
    ((2, 3, 2), (5, 0, 7), ([[0], [1]],), ([[2], [], [0, 1]],)),
    ((2, 2), (), ([],), ([], dict(partial_axes=[0, 1]))),
    ((3, 4), (7, 9), ([[1, 0]],), ([[], [0, 1]],)),
])
def test_same_plans_as_reference_named_cases(spec):
    mshape, shape, a, b = spec
    mesh = AbstractMesh(mshape)
    src = Sharding(mesh, a[0], **(a[1] if len(a) > 1 else {}))
    dst = Sharding(mesh, b[0], **(b[1] if len(b) > 1 else {}))
    assert_same_as_reference(src, dst, shape)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(mshape=st.lists(st.integers(1, 4), min_size=1, max_size=3).filter(lambda m: np.prod(m) <= 16),
       shape=st.lists(st.integers(0, 11), min_size=0, max_size=3), seed=st.integers(0, 2 ** 32 - 1))
def test_same_plans_as_reference_hypothesis(mshape, shape, seed):
    rng = np.random.default_rng(seed)
    mesh = AbstractMesh(tuple(mshape))
    shape = tuple(shape)
    if not shape:  # a 0-d tensor: only replicated and partial shardings
        src = Sharding(mesh, [], partial_axes=[a for a in range(mesh.ndim) if rng.random() < 0.3])
        dst = Sharding(mesh, [], partial_axes=[a for a in range(mesh.ndim) if rng.random() < 0.3])
    else:
        src, dst = random_sharding(rng, mesh, shape), random_sharding(rng, mesh, shape)
    assert_same_as_reference(src, dst, shape)


def test_plans_on_65536_devices_have_closed_form_totals():
    """256 x 256 simulated devices, an 8192^2 tensor: every total against arithmetic by hand,
    and a few processes' own pieces (what each plans for itself) against each other."""
    mesh = AbstractMesh((256, 256), ("x", "y"))
    P, n, b = mesh.size, 8192, 32  # b: block side along one mesh axis
    rows_cols, cols_rows = Sharding(mesh, [["x"], ["y"]]), Sharding(mesh, [["y"], ["x"]])

    plan = plan_reshard(rows_cols, cols_rows, (n, n))
    assert [s.op for s in plan.steps] == ["permute"]
    assert plan.elements_moved == plan.lower_bound == (P - 256) * b * b  # the diagonal keeps its block
    step = plan.steps[0]
    for d in (0, 1, 257, P // 2 + 3, P - 1):
        x, y = mesh.multi_index(d)
        assert exchange_recvs(step.before, step.after, (n, n), d) == (
            (mesh.linear_index((y, x)), ((y * b, y * b + b), (x * b, x * b + b))),)

    plan = plan_reshard(rows_cols, Sharding(mesh, [["x"]]), (n, n))
    assert [s.op for s in plan.steps] == ["all_gather"] and plan.elements_moved == P * b * (n - b)
    assert gather_sizes(plan.steps[0], (n, n), 12345) == (b,) * 256

    plan = plan_reshard(Sharding(mesh, [["x"]]), Sharding(mesh, [[], ["x"]]), (n, n))
    assert [s.op for s in plan.steps] == ["all_to_all"] and plan.elements_moved == P * (n * b - b * b)

    plan = plan_reshard(Sharding(mesh, [["x"]], partial_axes=["y"]), rows_cols, (n, n))
    assert [s.op for s in plan.steps] == ["reduce_scatter"]
    assert plan.elements_moved == 256 * n * n * 255 // 256  # each device's x-block, all but 1/256 scattered away

    # dim 0's destination blocks one row later: each takes one row from the next device along x
    offs = [0] + [k * b + 1 for k in range(1, 256)] + [n] + [k * b for k in range(257)]
    shifted = Sharding(mesh, [["x"], ["y"]], sharded_dims_offsets=offs)
    plan = plan_reshard(rows_cols, shifted, (n, n))
    assert [s.op for s in plan.steps] == ["exchange"]
    assert plan.elements_moved == plan.lower_bound == n * n - 256 * b * (b + 255 * (b - 1))
    step = plan.steps[0]
    for d in (0, 255, 256 * 100 + 7, P - 257, P - 1):
        x, y = mesh.multi_index(d)
        recvs = exchange_recvs(step.before, step.after, (n, n), d)
        assert [src for src, _ in recvs] == ([d] if x == 255 else [d, d + 256])
        for src, box in recvs:
            assert (d, box) in exchange_sends(step.before, step.after, (n, n), src)


@pytest.mark.parametrize("mshape, names, a, b", [
    ((8,), ("x",), ['"x":(1)2', '"x":(2)4'], ['"x":(4)2', '"x":(1)4']),  # cuts at 2 and at 4: a finer mesh
    ((8,), ("x",), ['"x":(1)2', '"x":(2)4'], ['"x"']),
    ((4, 3), ("x", "y"), ['"x":(2)2, "y"', '"x":(1)2'], ['"y"', '"x"']),
    ((2, 1, 4), ("x", "z", "y"), ['"y":(1)2', '"x"'], ['"y":(2)2, "z"', '"y":(1)2']),
])
def test_sub_axis_shardings_reshard_to_each_other(mshape, names, a, b):
    mesh = AbstractMesh(mshape, names)

    def parse(dims):
        return Sharding.parse("#sdy.sharding<@mesh, [" + ", ".join("{" + d + "}" for d in dims) + "]>", mesh)

    shape = (9, 7)
    g = np.arange(63, dtype=np.int64).reshape(shape)
    for src, dst in ((parse(a), parse(b)), (parse(b), parse(a)), (parse(a), Sharding(mesh, [[], [0]]))):
        plan = plan_reshard(src, dst, shape)
        check_result(g, dst, simulate(plan, [owned_input(g, src, d) for d in range(mesh.size)]))
        assert plan.elements_moved == plan.lower_bound, str(plan)
    with pytest.raises(ShardingError, match="not sub-axis refinements of one mesh"):
        plan_reshard(parse(a), Sharding(AbstractMesh(mshape, [n + "2" for n in names]), []), shape)
