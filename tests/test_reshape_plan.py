"""The reshape planner (meshrt.tensor.reshape_plan), run for every device of small abstract meshes
against numpy, and for a few devices of a 10^4-device mesh for its cost."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from meshrt.mesh import AbstractMesh
from meshrt.sharding.spec import Sharding
from meshrt.tensor.reshape_plan import flat_runs, is_local, reshape_pieces, run_indices

MESHES = [(1,), (2,), (3,), (4,), (2, 2), (2, 3)]


def _refactor(draw, size):
    """A random shape of ``size`` elements (1 to 3 dims)."""
    dims = []
    rest = size
    for _ in range(draw(st.integers(0, 2))):
        divs = [d for d in range(1, rest + 1) if rest % d == 0]
        d = draw(st.sampled_from(divs))
        dims.append(d)
        rest //= d
    dims.append(rest)
    return tuple(draw(st.permutations(dims)))


def _sharding(draw, mesh, shape):
    split = [[] for _ in shape]
    for a in draw(st.permutations(range(mesh.ndim))):
        d = draw(st.integers(-1, len(shape) - 1))
        if d >= 0:
            split[d].append(a)
    offsets = None
    if draw(st.booleans()) and any(split):  # uneven, explicit shard offsets (zero-width shards too)
        offsets = []
        for axes, n in zip(split, shape):
            if axes:
                k = math.prod(mesh.shape[a] for a in axes)
                cuts = sorted(draw(st.lists(st.integers(0, n), min_size=k - 1, max_size=k - 1)))
                offsets += [0, *cuts, n]
    return Sharding(mesh, split, sharded_dims_offsets=offsets)


@st.composite
def cases(draw):
    mesh = AbstractMesh(draw(st.sampled_from(MESHES)))
    size = draw(st.sampled_from([1, 6, 12, 24, 30, 36, 60, 96]))
    old, new = _refactor(draw, size), _refactor(draw, size)
    return mesh, old, _sharding(draw, mesh, old), new, _sharding(draw, mesh, new)


def _simulate(mesh, old, src, new, dst):
    """Every device's destination block after running the plans; and the elements moved."""
    g = np.arange(math.prod(old)).reshape(old)
    blocks = [np.ascontiguousarray(g[src.shard_slices(old, r)]) for r in range(mesh.size)]
    plans = [reshape_pieces(src, old, dst, new, r) for r in range(mesh.size)]
    moved = 0
    out = []
    for r in range(mesh.size):
        block = np.full(dst.shard_shape(new, r), -1)
        for source, offs, lens in plans[r][1]:
            (_, s_offs, s_lens), = [p for p in plans[source][0] if p[0] == r]
            msg = blocks[source].ravel()[run_indices(s_offs, s_lens)]
            assert msg.size == lens.sum()
            block.ravel()[run_indices(offs, lens)] = msg
            moved += msg.size if source != r else 0
        out.append(block)
        # every send has its receive
        for dest, _, _ in plans[r][0]:
            assert any(p[0] == r for p in plans[dest][1])
    return g.reshape(new), out, moved


@settings(max_examples=300, deadline=None, derandomize=True)
@given(cases())
def test_plan_equals_numpy_and_moves_only_what_changes_owner(case):
    mesh, old, src, new, dst = case
    want, blocks, moved = _simulate(mesh, old, src, new, dst)
    lacking = 0
    for r in range(mesh.size):
        np.testing.assert_array_equal(blocks[r], want[dst.shard_slices(new, r)])
        have = set(np.arange(want.size).reshape(old)[src.shard_slices(old, r)].ravel().tolist())
        need = set(want[dst.shard_slices(new, r)].ravel().tolist())
        lacking += len(need - have)
        # local: the destination block is the source block's elements in the same order
        same = np.array_equal(np.arange(want.size).reshape(old)[src.shard_slices(old, r)].ravel(),
                              want[dst.shard_slices(new, r)].ravel())
        sends_out = any(dest != r for dest, _, _ in reshape_pieces(src, old, dst, new, r)[0])
        assert is_local(src, old, dst, new, r) == (same and not sends_out)
    assert moved == lacking


def test_flat_runs_of_a_column_block():
    starts, length = flat_runs(((0, 3), (2, 4)), (3, 5))
    assert starts.tolist() == [2, 7, 12] and length == 2


def test_corpus_reshape_moves_half_of_each_block():
    mesh = AbstractMesh((2, 2), ("x", "y"))
    src, dst = Sharding(mesh, [["x"], ["y"]]), Sharding(mesh, [["x"]])
    _, _, moved = _simulate(mesh, (8, 12), src, (4, 24), dst)
    assert moved == 4 * 24


def test_split_and_merge_are_local():
    mesh = AbstractMesh((2, 2), ("x", "y"))
    cases = [
        (Sharding(mesh, [["x"]]), (96,), Sharding(mesh, [["x"]]), (4, 24)),
        (Sharding(mesh, [["x"]]), (4, 24), Sharding(mesh, [["x"]]), (96,)),
        (Sharding(mesh, [["x"], ["y"]]), (2, 12), Sharding(mesh, [["x", "y"]]), (24,)),
        (Sharding(mesh, [["x", "y"]]), (24,), Sharding(mesh, [["x"], ["y"]]), (2, 12)),
    ]
    for src, old, dst, new in cases:
        assert all(is_local(src, old, dst, new, r) for r in range(4)), (src, old, dst, new)


@pytest.mark.parametrize("old,src_axes,new,dst_axes", [
    ((1000, 1000), [["x"], ["y"]], (1000000,), [["x", "y"]]),
    ((1000000,), [["x", "y"]], (1000, 1000), [["x"], ["y"]]),
    ((1000, 1000), [["x"], ["y"]], (100, 10000), [["x"], ["y"]]),
    ((400, 250), [["x", "y"]], (100000,), [["y", "x"]]),
])
def test_planning_on_ten_thousand_devices_touches_only_peers(old, src_axes, new, dst_axes):
    mesh = AbstractMesh((100, 100), ("x", "y"))
    src, dst = Sharding(mesh, src_axes), Sharding(mesh, dst_axes)
    for r in (0, 4321, 9999):
        sends, recvs = reshape_pieces(src, old, dst, new, r)
        block = math.prod(src.shard_shape(old, r))
        assert sum(int(n.sum()) for _, _, n in sends) == block
        assert sum(int(n.sum()) for _, _, n in recvs) == math.prod(dst.shard_shape(new, r))
        assert len(sends) <= 100 and len(recvs) <= 100


@pytest.mark.parametrize("offs,lens", [([3], [5]), ([0, 6, 12], [4, 4, 4]), ([0, 5, 12], [4, 4, 4]),
                                       ([1, 9], [3, 5])])
def test_runs_are_taken_and_put_as_views_or_by_index(offs, lens):
    from meshrt.tensor.distributed_tensor import _put_runs, _runs_view, _take_runs

    offs, lens = np.array(offs), np.array(lens)
    flat = np.arange(20.0)
    idx = run_indices(offs, lens)
    np.testing.assert_array_equal(_take_runs(flat, offs, lens), flat[idx])
    out = np.zeros(20)
    _put_runs(out, offs, lens, flat[idx] + 1)
    want = np.zeros(20)
    want[idx] = flat[idx] + 1
    np.testing.assert_array_equal(out, want)
    # evenly spaced runs of one length are a view, no index array
    assert (_runs_view(flat, offs, lens) is not None) == (len(set(lens)) == 1 and len(set(np.diff(offs))) <= 1)
