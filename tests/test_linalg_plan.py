"""The block-cyclic layout and the factorizations' cost model: pure arithmetic, on grids of up to 10^4
processes (no MPI)."""

import itertools
import time

import numpy as np
import pytest

from meshrt.linalg import model
from meshrt.linalg.blockcyclic import BlockCyclic, default_block, default_grid, local_index, numroc, owned


@pytest.mark.parametrize("n,nb,p", [(0, 3, 2), (10, 3, 3), (37, 4, 5), (64, 8, 4), (5, 10, 3), (100000, 256, 100)])
def test_numroc_partitions_the_indices(n, nb, p):
    counts = [numroc(n, nb, q, p) for q in range(p)]
    assert sum(counts) == n
    if n <= 1000:
        for q in range(p):
            idx = owned(n, nb, q, p)
            assert idx.size == counts[q]
            assert np.array_equal(local_index(idx, nb, p), np.arange(idx.size))  # local order is global order
            for g in range(0, n + 1):  # numroc(g) is where process q's part of g.. starts
                assert numroc(g, nb, q, p) == np.searchsorted(idx, g)


def test_layout_shapes_cover_the_matrix():
    lay = BlockCyclic((23, 17), (4, 3), (2, 3))
    cells = sum(lay.local_shape(c)[0] * lay.local_shape(c)[1] for c in itertools.product(range(2), range(3)))
    assert cells == 23 * 17
    assert str(lay) == "block_cyclic<23x17, block 4x3, grid 2x3>"
    assert lay.row_owner(np.arange(12)).tolist() == [0] * 4 + [1] * 4 + [0] * 4


def test_defaults():
    assert default_grid(10 ** 4) == (100, 100) and default_grid(8) == (2, 4) and default_grid(1) == (1, 1)
    assert default_block((8192, 8192), (1, 2)) == 256 and default_block((10, 10), (1, 2)) == 8
    lay = BlockCyclic.default((40000, 40000), 16 * 64)
    assert lay.grid == (32, 32) and lay.block == (256, 256)


@pytest.mark.parametrize("field,value", [("shape", (3,)), ("block", (0, 2)), ("grid", (2, -1)), ("shape", (2.0, 3))])
def test_bad_layouts_name_the_field(field, value):
    args = {"shape": (4, 4), "block": (2, 2), "grid": (1, 1)}
    args[field] = value
    with pytest.raises(ValueError, match=field):
        BlockCyclic(**args)
    with pytest.raises(ValueError, match="grid"):
        BlockCyclic.default((4, 4), 6, grid=(2, 2))


def test_owned_elsewhere_counts_by_blocks_as_a_loop_would():
    for n, nb, g in [(50, 3, (2, 3)), (37, 4, (3, 2)), (64, 8, (4, 4)), (10, 3, (2, 2)), (29, 5, (1, 3))]:
        lay = BlockCyclic((n, n), (nb, nb), g)
        for r, c in itertools.product(range(g[0]), range(g[1])):
            for g1 in range(0, n, nb):
                brute = sum(1 for j in range(g1, n) if lay.col_owner(j) == c and lay.row_owner(j) != r)
                assert model._owned_elsewhere(lay, g1, r, c) == brute


def test_cost_model_at_ten_thousand_processes_matches_scalapack():
    n, nb, grid = 100_000, 256, (100, 100)
    start = time.perf_counter()
    costs = {k: model.factorization_cost(k, n, nb, grid, (37, 61)) for k in ("cholesky", "lu", "qr")}
    assert time.perf_counter() - start < 5  # O(N/b * Pr) per process, never a loop over the 10^4 peers' data
    for k, c in costs.items():
        ratio = c.words / model.scalapack_words(k, n, grid)
        # Cholesky and QR move what ScaLAPACK does; LU gathers its panel over the process column (docs/linalg.md)
        assert (0.9 < ratio < 1.1) if k != "lu" else (1.0 < ratio < 2.0), (k, ratio)
        assert c.steps == 391 and c.messages < 40 * c.steps
    # the work is shared: each process does about 1/P of N^3/3 (Cholesky)
    assert costs["cholesky"].flops == pytest.approx(n ** 3 / 3 / 10 ** 4, rel=0.15)
    # one process row moves nothing along the columns
    one_row = model.factorization_cost("cholesky", 4096, 256, (1, 2), (0, 1))
    assert one_row.words == sum(4096 - (k + 1) * 256 for k in range(0, 16, 2)) * 256
    with pytest.raises(ValueError, match="kind"):
        model.factorization_cost("svd", 10, 2, (1, 1), (0, 0))
