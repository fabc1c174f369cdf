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
