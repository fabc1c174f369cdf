"""The planning half of meshrt/mlir/_sdy_index.py (pure functions, no MPI): index forms, lookups,
routes to owners, the combiners of scatter bodies."""

import numpy as np
import pytest

from meshrt import AbstractMesh, Sharding
from meshrt.errors import MLIRError
from meshrt.mlir import parse
from meshrt.mlir.shardy.index import apply_updates, combiner_kind, gather_form, lookups, route, scatter_form


def _op(text, name):
    return next(op for op in parse(text).walk() if op.name == name)


GATHER = """func.func @f(%x: tensor<9x8xf32>, %i: tensor<5x2xi32>) -> tensor<5x3x8xf32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1, 2], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 3, 8>}> : (tensor<9x8xf32>, tensor<5x2xi32>) -> tensor<5x3x8xf32>
  return %0 : tensor<5x3x8xf32>
}"""

SCATTER = """func.func @f(%x: tensor<9x8xf32>, %i: tensor<4x1xi32>, %u: tensor<4x2x8xf32>) -> tensor<9x8xf32> {
  %0 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<9x8xf32>, tensor<4x1xi32>, tensor<4x2x8xf32>) -> tensor<9x8xf32>
  return %0 : tensor<9x8xf32>
}"""


def test_gather_window_dims_are_points_or_boxes():
    """A window narrower than its dim is a point dim (expanded); one as wide as the dim is a box,
    whatever the index says (the start clamps to 0)."""
    f = gather_form(_op(GATHER, "stablehlo.gather"), (9, 8), (5, 2))
    assert (f.point, f.box, f.nc, f.win_dims, f.batch_dims) == ((0,), (1,), (0, 1), (1, 2), (0,))
    vec = np.array([[8, 5], [-1, 0], [4, 1]])
    coords, keys, valid = lookups(f, vec, (2,), (5,), [(1, 3), (0, 8)])   # window rows 1..2 only
    assert coords[:, 0].tolist() == [7, 8, 1, 2, 5, 6]   # starts clamped to 6 and 0, plus 1 and 2
    assert keys.tolist() == [2, 2, 3, 3, 4, 4] and valid.all()


def test_scatter_skips_windows_that_do_not_fit():
    f = scatter_form(_op(SCATTER, "stablehlo.scatter"), (9, 8), (4, 1), (4, 2, 8))
    assert (f.point, f.box) == ((0,), (1,))
    coords, keys, valid = lookups(f, np.array([[7], [8], [-1], [0]]), (0,), (4,), [(0, 2), (0, 8)])
    assert valid.tolist() == [True, True, False, False, False, False, True, True]
    assert coords[valid, 0].tolist() == [7, 8, 0, 1]


def test_window_size_errors_name_the_dim():
    bad = GATHER.replace("array<i64: 3, 8>", "array<i64: 3, 9>")
    with pytest.raises(MLIRError, match=r"window size 9 of operand dim 1 is not in \[0, 8\]"):
        gather_form(_op(bad, "stablehlo.gather"), (9, 8), (5, 2))


def test_route_uneven_and_empty_shards():
    """Offsets (0, 4, 4, 9): the empty third shard owns nothing; rows go to the shard holding them,
    the box to every shard of a split box dim it crosses."""
    mesh = AbstractMesh((4,), ("x",))
    f = gather_form(_op(GATHER, "stablehlo.gather"), (9, 8), (5, 2))
    s = Sharding(mesh, [[0]], sharded_dims_offsets=[0, 4, 4, 9, 9])
    r = route(f, s, np.array([[3], [4], [8], [0]]), [(0, 8)], (1,), (4,))
    assert {k: v[0].tolist() for k, v in r.items()} == {0: [0, 3], 2: [1, 2]}
    cols = Sharding(mesh, [[], [0]])
    r = route(f, cols, np.array([[3], [4]]), [(1, 5)], (1,), (4,))   # columns 1..4 of 2-column shards
    assert {k: v[1] for k, v in r.items()} == {0: ((1, 2),), 1: ((2, 4),), 2: ((4, 5),)}


def test_route_scatter_replicas_and_designated_senders():
    """Updates split on "y", operand on "x": a holder sends only the rows whose owner shares its
    x coord, to every y replica of that owner."""
    mesh = AbstractMesh((2, 2), ("x", "y"))
    f = scatter_form(_op(SCATTER, "stablehlo.scatter"), (9, 8), (4, 1), (4, 2, 8))
    s = Sharding(mesh, [[0]])
    r = route(f, s, np.array([[0], [7]]), [(0, 8)], (1, 0), (2, 2), free_axes=(1,), require=(0,))
    assert {k: v[0].tolist() for k, v in r.items()} == {2: [1], 3: [1]}


def test_combiners():
    text = SCATTER
    assert combiner_kind(_op(text, "stablehlo.scatter").regions[0]) == "set"
    keep = text.replace("stablehlo.return %b", "stablehlo.return %a")
    assert combiner_kind(_op(keep, "stablehlo.scatter").regions[0]) == "keep"
    sub = text.replace("    stablehlo.return %b : tensor<f32>",
                       "    %s = stablehlo.subtract %a, %b : tensor<f32>\n    stablehlo.return %s : tensor<f32>")
    assert combiner_kind(_op(sub, "stablehlo.scatter").regions[0]) is None
    flat = np.array([10, 10], np.int32)
    apply_updates(flat, np.array([0, 0, 1]), np.array([1, 0, 0]), np.array([1, 2, 3]), None, np.subtract)
    assert flat.tolist() == [7, 7]
    flat = np.array([1.0, 1.0])
    with np.errstate(invalid="ignore"):   # as a program runs
        apply_updates(flat, np.array([1, 1]), np.array([0, 1]), np.array([np.nan, 5.0]), "max")
    assert np.isnan(flat[1]) and flat[0] == 1.0   # NaN propagates as stablehlo.maximum does


VMAP_GATHER = """func.func @f(%x: tensor<4x6x3xf32>, %i: tensor<5x4x1xi32>) -> tensor<5x4x3xf32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [1], start_index_map = [1], index_vector_dim = 2>, slice_sizes = array<i64: 1, 1, 3>}> : (tensor<4x6x3xf32>, tensor<5x4x1xi32>) -> tensor<5x4x3xf32>
  return %0 : tensor<5x4x3xf32>
}"""


def test_batching_dims_are_points_at_the_lookups_own_batch_position():
    """``jax.vmap`` over ``x[idx]``: operand dim 0 follows the indices' dim 1 (result batch dim 1);
    each lookup's coord on it is its global position there, from the block's first position."""
    f = gather_form(_op(VMAP_GATHER, "stablehlo.gather"), (4, 6, 3), (5, 4, 1))
    assert f.batching == ((0, 1),) and f.point == (0, 1) and f.box == (2,) and f.batch_dims == (0, 1)
    vec = np.array([[[5], [0]], [[9], [2]]])   # batch block rows 3..4, cols 2..3 of a (5, 4) batch space
    coords, keys, _ = lookups(f, vec, (3, 2), (5, 4), [(0, 3)])
    assert coords.tolist() == [[2, 5], [3, 0], [2, 5], [3, 2]]   # [batching coord, clamped row]
    assert keys.tolist() == [14, 15, 18, 19]


SCATTER2 = """func.func @f(%x: tensor<9x8xf32>, %i: tensor<4x1xi32>, %u: tensor<4x2x8xf32>) -> tensor<9x8xf32> {
  %0:2 = "stablehlo.scatter"(%x, %x, %i, %u, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1, 2], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
    stablehlo.return %c, %d : tensor<f32>, tensor<f32>
  }) : (tensor<9x8xf32>, tensor<9x8xf32>, tensor<4x1xi32>, tensor<4x2x8xf32>, tensor<4x2x8xf32>) -> (tensor<9x8xf32>, tensor<9x8xf32>)
  return %0#0 : tensor<9x8xf32>
}"""


def test_batched_gather_and_two_operand_scatter_serial():
    """The serial interpreter's gather with batching dims and scatter of two operands (a body
    coupling them), against numpy loops."""
    from meshrt.mlir.interpreters import stablehlo as H

    x = np.arange(72, dtype=np.float32).reshape(4, 6, 3)
    idx = np.array([[1, 5, -3, 9], [0, 2, 2, 4], [3, 3, 1, 0], [5, 4, 0, 1], [2, 2, 2, 2]])[..., None]
    got = H.gather(_op(VMAP_GATHER, "stablehlo.gather"), x, idx)
    want = np.stack([np.stack([x[b, np.clip(idx[k, b, 0], 0, 5)] for b in range(4)]) for k in range(5)])
    np.testing.assert_array_equal(got, want)
    op = _op(SCATTER2, "stablehlo.scatter")
    a, b = np.zeros((9, 8), np.float32), np.ones((9, 8), np.float32)
    u = np.arange(64, dtype=np.float32).reshape(4, 2, 8)
    ra, rb = H.scatter_many(op, [a, b], np.array([[7], [0], [8], [1]]), [u, -u], lambda o, n: [o[0] + n[0], o[1] * n[1]])
    wa, wb = a.copy(), b.copy()
    for k, r in enumerate([7, 0, 8, 1]):
        if r + 2 <= 9:
            wa[r:r + 2] += u[k]
            wb[r:r + 2] *= -u[k]
    np.testing.assert_array_equal(ra, wa)
    np.testing.assert_array_equal(rb, wb)


@pytest.mark.parametrize("old,new,msg", [
    ("start_indices_batching_dims = [1]", "start_indices_batching_dims = [0]",
     r"operand batching dim 0 has size 4, its indices batching dim 0 has size 5"),
    ("start_indices_batching_dims = [1]", "start_indices_batching_dims = [2]",
     r"indices batching dim 2 is the index vector dim"),
    ("operand_batching_dims = [0]", "operand_batching_dims = [0, 2]", r"2 operand batching dims for 1 indices"),
])
def test_batching_dim_errors_name_the_dims(old, new, msg):
    with pytest.raises(MLIRError, match=msg):
        gather_form(_op(VMAP_GATHER.replace(old, new), "stablehlo.gather"), (4, 6, 3), (5, 4, 1))
