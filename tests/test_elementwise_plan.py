"""The elementwise sharding rule (meshrt.tensor.elementwise.plan_elementwise): pure, on AbstractMeshes."""

import time

import pytest

from meshrt import AbstractMesh, Sharding, ShardingError
from meshrt.tensor.elementwise import Operand, aligned_sharding, lifted_sharding, plan_elementwise


def actions(plan):
    return [a.action for a in plan.actions]


def test_same_sharding_and_scalars_move_nothing():
    m = AbstractMesh((2, 3))
    s = Sharding(m, [[0], [1]])
    plan = plan_elementwise([Operand.tensor(s, (8, 9)), Operand("scalar"), Operand.tensor(s, (8, 9))])
    assert actions(plan) == ["local", "scalar", "local"] and plan.elements_moved == 0
    assert plan.result_shape == (8, 9) and plan.result_sharding == s


def test_numpy_and_replicated_operands_are_sliced_with_broadcasting():
    m = AbstractMesh((2, 2))
    s = Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    rep = Sharding(m, [])
    plan = plan_elementwise([Operand.tensor(s, (6, 5)), Operand.array((5,)), Operand.array((6, 1)),
                             Operand.tensor(rep, (1, 5))])
    assert actions(plan) == ["local", "slice", "slice", "slice"] and plan.elements_moved == 0


def test_the_cheaper_result_sharding_wins_and_ties_go_first():
    m = AbstractMesh((4,))
    rows, cols = Sharding(m, [[0]]), Sharding(m, [[], [0]])
    a, b = Operand.tensor(rows, (8, 8)), Operand.tensor(cols, (8, 8))
    assert plan_elementwise([a, b]).result_sharding == rows  # a tie: the first operand's
    assert plan_elementwise([b, a]).result_sharding == cols
    # a third operand laid out like b makes b's sharding cheaper
    plan = plan_elementwise([a, b, b])
    assert plan.result_sharding == cols and actions(plan) == ["reshard", "local", "local"]
    assert plan.elements_moved == 8 * 8 * 3 // 4  # each device lacks 3/4 of its new block


def test_out_keeps_the_target_sharding_and_shape():
    m = AbstractMesh((2,))
    rows, cols = Sharding(m, [[0]]), Sharding(m, [[], [0]])
    plan = plan_elementwise([Operand.tensor(rows, (4, 6)), Operand.array((6,))], cols, out_shape=(4, 6))
    assert plan.result_sharding == cols and actions(plan) == ["reshard", "slice"]
    plan = plan_elementwise([Operand.array((6,))], cols, out_shape=(4, 6))  # broadcast to out's shape
    assert plan.result_shape == (4, 6)
    with pytest.raises(ShardingError, match=r"out has global shape \(4, 1\)"):
        plan_elementwise([Operand.tensor(rows, (4, 6))], cols, out_shape=(4, 1))


def test_aligned_sharding_follows_numpy_alignment_and_uneven_offsets():
    m = AbstractMesh((2, 3))
    s = Sharding(m, [[0], [1]], sharded_dims_offsets=[0, 1, 4, 0, 2, 3, 5])
    assert aligned_sharding(s, (4, 5), (5,)) == Sharding(m, [[1]], sharded_dims_offsets=[0, 2, 3, 5])
    assert aligned_sharding(s, (4, 5), (4, 1)) == Sharding(m, [[0]], sharded_dims_offsets=[0, 1, 4])
    assert aligned_sharding(s, (4, 5), (1, 1)) == Sharding(m, [])


def test_shapes_that_do_not_broadcast_and_tensors_without_the_full_shape():
    m = AbstractMesh((2,))
    s = Sharding(m, [[0]])
    with pytest.raises(ShardingError, match=r"could not be broadcast together with global shapes \(4, 3\) \(4,\)"):
        plan_elementwise([Operand.tensor(s, (4, 3)), Operand.array((4,))])


def test_a_shape_no_operand_has_takes_the_cheapest_lifted_proposal():
    m = AbstractMesh((2,))
    col, row, rep = Sharding(m, [[0]]), Sharding(m, [[], [0]]), Sharding(m, [])
    # x[:, None] - x[None, :]: each proposes its own split; a tie goes to the first (equal sizes)
    plan = plan_elementwise([Operand.tensor(col, (9, 1)), Operand.tensor(row, (1, 9))])
    assert plan.result_shape == (9, 9) and plan.result_sharding == col
    assert actions(plan) == ["local", "reshard"] and plan.actions[1].target == rep
    assert plan_elementwise([Operand.tensor(row, (1, 9)), Operand.tensor(col, (9, 1))]).result_sharding == row
    # a replicated small operand beside a split one: the split one's layout, nothing moves
    plan = plan_elementwise([Operand.tensor(rep, (1, 9)), Operand.tensor(col, (9, 1))])
    assert plan.result_sharding == col and plan.elements_moved == 0 and actions(plan) == ["local", "local"]
    # 5-D windows (8, 2, 2, 3, 1) * (1, 2, 2, 3, 16), both split: replicating the smaller one is cheaper
    last = Sharding(m, [[], [], [], [], [0]])
    plan = plan_elementwise([Operand.tensor(col, (8, 2, 2, 3, 1)), Operand.tensor(last, (1, 2, 2, 3, 16))])
    assert plan.result_shape == (8, 2, 2, 3, 16) and plan.result_sharding == last
    assert actions(plan) == ["reshard", "local"] and plan.elements_moved == 96  # (col's proposal: 192)
    # uneven offsets survive the lift; halos do not
    uneven = Sharding(m, [[0]], sharded_dims_offsets=[0, 2, 9], halo_sizes=[1, 1])
    assert lifted_sharding(uneven, (9, 1), (3, 9, 4)) == Sharding(m, [[], [0]], sharded_dims_offsets=[0, 2, 9])
    assert lifted_sharding(row, (1, 9), (9, 9)) == row and lifted_sharding(col, (9, 1), (1, 9)) == rep


def test_planning_at_65536_devices_is_cheap():
    m = AbstractMesh((256, 256))
    a = Operand.tensor(Sharding(m, [[0], [1]]), (1 << 16, 1 << 16))
    b = Operand.tensor(Sharding(m, [[1], [0]]), (1 << 16, 1 << 16))
    t0 = time.perf_counter()
    plan = plan_elementwise([a, b, Operand.array((1 << 16,))])
    assert time.perf_counter() - t0 < 2.0
    assert actions(plan) == ["local", "reshard", "slice"] and plan.elements_moved > 0
