"""Elementwise ops between tensors of different shardings, replicated tensors, numpy arrays and
scalars, with numpy broadcasting on the global shapes: checked against numpy at any process count."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Sharding, ShardingError, collectives, explain_op
from test_tensor import cases, global_array

MPI_NPROCS = (1, 2, 3, 4)  # the counts; 8 oversubscribed adds a minute for no new case

comm = MPI.COMM_WORLD


def check(t, want, what):
    assert isinstance(t, DT), what
    assert t.global_shape == want.shape and t.dtype == want.dtype, (what, t.global_shape, t.dtype, want.dtype)
    np.testing.assert_array_equal(t.gather(), want, err_msg=what)


def other_shardings(s, shape):
    """A replicated sharding, and one that splits differently, of the same mesh and rank."""
    m = s.mesh
    nd = len(shape)
    flipped = [[] for _ in range(nd)]
    flipped[-1 if s.dim_axes(nd - 1) == () else 0] = list(range(m.ndim))
    return [Sharding(m, []), Sharding(m, flipped)]


def test_mixed_shardings_numpy_operands_and_broadcasting(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        g, h = global_array(shape, seed=k), global_array(shape, seed=k + 50)
        a = DT.from_global(g, s)
        for s2 in other_shardings(s, shape):
            b = DT.from_global(h, s2)
            check(a + b, g + h, f"{name}: a + b <{s2}>")
            check(b * a, h * g, f"{name}: b * a <{s2}>")
        check(a + h, g + h, f"{name}: a + numpy")
        check(h - a, h - g, f"{name}: numpy - a")
        check(a + h[0], g + h[0], f"{name}: a + numpy row")
        if len(shape) > 1:
            col = h[:, 1:2]
            check(a * col, g * col, f"{name}: a * numpy column")
            rrow = DT.from_global(h[0], Sharding(s.mesh, []))
            check(a - rrow, g - rrow.gather(), f"{name}: a - replicated row")
            srow = DT.from_global(h[0], Sharding(s.mesh, [list(range(s.mesh.ndim))]))
            check(np.maximum(a, srow), np.maximum(g, h[0]), f"{name}: maximum(a, split row)")
        check(np.add(a, h > 0), g + (h > 0), f"{name}: dtype promotion")


def test_in_place_forms_keep_the_target_sharding(meshes):
    for k, (name, s, shape) in enumerate(cases(meshes)):
        g, h = global_array(shape, seed=k), global_array(shape, seed=k + 9)
        for s2 in other_shardings(s, shape):
            a, b = DT.from_global(g, s), DT.from_global(h, s2)
            before = a
            a += b
            assert a is before and a.sharding == s, name
            check(a, g + h, f"{name}: += <{s2}>")
            out = DT.zeros(shape, s2)
            r = np.multiply(DT.from_global(g, s), h, out=out)
            assert r is out and out.sharding == s2
            check(out, g * h, f"{name}: out= <{s2}>")


def test_explain_op_says_what_moves(meshes):
    m = meshes["1d"]
    rows, cols = Sharding(m, [[0]]), Sharding(m, [[], [0]])
    shape = (2 * m.size + 1, 2 * m.size + 3)
    a, b = DT.zeros(shape, rows), DT.zeros(shape, cols)
    plan = explain_op(np.add, a, b)
    text = str(plan)
    assert "operand 0" in text and "elements moved between processes" in text
    if m.size > 1:
        assert [x.action for x in plan.actions] == ["local", "reshard"] and plan.elements_moved > 0
    plan = explain_op(np.add, a, np.ones(shape[1]))
    assert [x.action for x in plan.actions] == ["local", "slice"] and plan.elements_moved == 0
    assert explain_op(np.add, a, 1.0, out=b).result_sharding == cols


def test_check_mode_catches_numpy_operands_that_differ_between_processes(meshes):
    s = Sharding(meshes["1d"], [[0]])
    a = DT.zeros((2 * comm.size, 3), s)
    old = collectives.set_check(True)
    try:
        check(a + np.arange(3.0), np.zeros((2 * comm.size, 3)) + np.arange(3.0), "same everywhere")
        if comm.size > 1:
            with pytest.raises(ShardingError, match="disagree"):
                a + np.full(3, float(comm.rank))
    finally:
        collectives.set_check(old)


@settings(max_examples=15, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), seed=st.integers(0, 999),
       split=st.integers(0, 7), bsplit=st.integers(0, 7), drop=st.integers(0, 3), ones=st.integers(0, 7))
def test_random_broadcast_pairs(shape, seed, split, bsplit, drop, ones):
    meshes = test_random_broadcast_pairs.meshes
    mesh = meshes[{1: "1d", 2: "2d", 3: "3d"}[len(shape)]]
    shape = tuple(shape)
    bshape = tuple(1 if ones >> d & 1 else n for d, n in enumerate(shape))[min(drop, len(shape) - 1):]
    sa = Sharding(mesh, [[d] if split >> d & 1 else [] for d in range(len(shape))])
    off = len(shape) - len(bshape)
    sb = Sharding(mesh, [[off + d] if bsplit >> d & 1 else [] for d in range(len(bshape))])
    g, h = global_array(shape, seed=seed), global_array(bshape, seed=seed + 1)
    a, b = DT.from_global(g, sa), DT.from_global(h, sb)
    check(a + b, g + h, f"{shape} <{sa}> + {bshape} <{sb}>")
    check(a * h, g * h, f"{shape} <{sa}> * numpy {bshape}")


@pytest.fixture(autouse=True)
def _bind_meshes(meshes):
    test_random_broadcast_pairs.meshes = meshes
