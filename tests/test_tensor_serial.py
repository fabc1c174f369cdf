"""DistributedTensor on one process, its pure helpers, and the stencil kernels."""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpi4py import MPI

from meshrt import AbstractMesh, Mesh, PerformanceWarning, ShardingError
from meshrt.sharding import Sharding
from meshrt.tensor import DistributedTensor as DT
from meshrt.tensor.layout import _drop_dim

try:
    from meshrt.kernels.stencils import heat2d_box, heat3d_box, inner_and_rim, life_box
except ImportError:  # a source checkout
    from kernels.stencils import heat2d_box, heat3d_box, inner_and_rim, life_box


@pytest.fixture(scope="module")
def mesh():
    m = Mesh((1, 1), comm=MPI.COMM_SELF)
    yield m
    m.free()


def test_abstract_mesh_is_refused():
    s = Sharding(AbstractMesh((2, 2)), [[0]])
    for make in (lambda: DT.zeros((4, 4), s), lambda: DT.from_global(np.zeros((4, 4)), s),
                 lambda: DT.from_local(np.zeros((2, 4)), s, (4, 4))):
        with pytest.raises(ShardingError, match="AbstractMesh"):
            make()
    with pytest.raises(ShardingError, match="not a Sharding"):
        DT.zeros((4,), "[[0]]")


def test_single_process_basics(mesh):
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 2, 0, 1])
    g = np.arange(20.0).reshape(4, 5)
    t = DT.from_global(g, s)
    assert t.local.shape == (7, 6) and np.array_equal(t.interior, g) and np.all(t.local[0] == 0)
    assert np.array_equal(t.gather(), g) and np.array_equal(t.gather(root=0), g)
    assert t.sum() == g.sum() and t.mean() == g.mean() and t.max() == 19 and t.min() == 0
    assert np.array_equal(t.sum(axis=1).gather(), g.sum(axis=1))
    assert np.array_equal(t.sum(axis=-1).gather(), g.sum(axis=1))
    assert np.array_equal(np.sqrt(t).gather(), np.sqrt(g))
    r = repr(t)
    assert "shape=(4, 5)" in r and "float64" in r and "halo_sizes" in r and "[0:4, 0:5]" in r
    t.update_halo()  # no neighbours: the halos stay zero ghost cells
    assert np.all(t.local[0] == 0) and np.all(t.local[-2:] == 0)
    p = DT.from_global(g, s, periodic=True)
    p.update_halo()
    assert np.array_equal(p.local[0, :-1], g[-1]) and np.array_equal(p.local[5:7, :-1], g[:2])
    p.free()


def test_an_element_read_on_groups_of_one_process_sends_nothing(mesh, monkeypatch):
    """On a mesh whose split axes have one process each, every process holds every element: a read is its
    value (no broadcast, no collective call), a value apart from the tensor, and ``t[i, j] op= v`` still
    updates the element in place."""
    from meshrt import collectives

    def refused(*args, **kwargs):
        raise AssertionError("a broadcast over a group of one process")

    t = DT.from_global(np.arange(20.0).reshape(4, 5), Sharding(mesh, [[0], [1]]))
    monkeypatch.setattr(collectives, "broadcast", refused)
    x = t[2, 3]
    assert x.shape == () and float(x) == 13.0 and float(np.tanh(t[0, 1])) == np.tanh(1.0)
    x += 1.0
    t[1, 1] -= 2.0
    t[3, 4] /= t[1, 0]
    assert float(x) == 14.0 and float(t[2, 3]) == 13.0
    assert float(t[1, 1]) == 4.0 and float(t[3, 4]) == 19.0 / 5.0


def test_creation_options(mesh):
    s = Sharding(mesh, [[0]])
    assert DT.full((3,), s, 2).dtype == np.int64 and DT.full((3,), s, 2.0, dtype=np.float32).dtype == np.float32
    f = DT.from_function(lambda i: i * 0 + 5, (4,), s, np.int8)
    assert f.dtype == np.int8 and np.all(f.interior == 5)
    with pytest.raises(ShardingError, match="does not match global_shape"):
        DT.from_global(np.zeros(3), s, global_shape=(4,))
    with pytest.raises(ShardingError, match="Python objects"):
        DT.from_global(np.array([object()]), s)
    with pytest.raises(ShardingError, match="periodic"):
        DT.zeros((3, 3), s, periodic=(True,))
    with pytest.raises(ShardingError, match="root"):
        DT.from_global(np.zeros(3), s, root=1)
    with pytest.raises(ShardingError, match="local"):
        DT.from_local([0.0, 1.0], s, (2,))
    z = DT.zeros((3, 3), s, periodic=True)
    assert z.periodic == (True, True) and (z + 1).periodic == (True, True) and z.sum(axis=0).periodic == (True,)


def test_operators_and_misuse(mesh):
    s = Sharding(mesh, [[0]])
    t = DT.from_global(np.array([1, 2, 3]), s)
    assert (t == t).gather().all() and (-t).gather().tolist() == [-1, -2, -3]
    assert (t % 2).gather().tolist() == [1, 0, 1]
    with pytest.raises(TypeError, match="ambiguous"):
        bool(t)
    with pytest.warns(PerformanceWarning, match=r"test_tensor_serial\.py:\d+: a conversion"):
        assert np.asarray(t).tolist() == [1, 2, 3]
    with pytest.warns(PerformanceWarning, match=r"test_tensor_serial\.py:\d+: iter\(\) of a split"):
        assert list(t) == [1, 2, 3]
    with pytest.raises(TypeError, match="only elementwise"):
        np.add.at(t, [0], 1)  # (np.matmul is supported: meshrt.matmul; ufunc.outer too)
    assert np.add.outer(t, t).gather().tolist() == np.add.outer([1, 2, 3], [1, 2, 3]).tolist()
    kept = np.sum(t, keepdims=True)
    assert kept.global_shape == (1,) and kept.gather().tolist() == [6]
    assert np.sum(t, initial=1) == 7 and np.sum(t, where=np.array([True, False, True])) == 4
    with pytest.raises(TypeError, match="out= is not supported"):
        np.mean(t, out=np.empty(()))
    assert np.sum(t, dtype=np.float32) == 6.0 and np.sum(t, dtype=np.float32).dtype == np.float32
    assert len(t) == 3 and t.size == 3


def test_drop_dim_keeps_other_dims():
    m = AbstractMesh((2, 3))
    s = Sharding(m, [[0], [], [1]], halo_sizes=[1, 2, 3, 4], sharded_dims_offsets=[0, 1, 4, 0, 2, 3, 5])
    d0 = _drop_dim(s, 0, (), "sum")
    assert d0.split_axes == ((), (1,)) and d0.halo_sizes == (3, 4) and d0.sharded_dims_offsets == (0, 2, 3, 5)
    d1 = _drop_dim(s, 1, (), "sum")
    assert d1.split_axes == ((0,), (1,)) and d1.halo_sizes == s.halo_sizes
    d2 = _drop_dim(s, 2, (1,), "max")
    assert d2.split_axes == ((0,),) and d2.halo_sizes == (1, 2) and d2.sharded_dims_offsets == (0, 1, 4)
    assert d2.partial_axes == (1,) and d2.partial_type == "max"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 9)), min_size=1, max_size=3), st.integers(1, 3))
def test_inner_and_rim_partition(box, width):
    box = [(lo, lo + n) for lo, n in box]
    inner, rims = inner_and_rim(box, width)
    count = np.zeros([hi for _, hi in box], np.int32)
    for b in [inner] + rims:
        count[tuple(slice(lo, hi) for lo, hi in b)] += 1
    assert np.all(count[tuple(slice(lo, hi) for lo, hi in box)] == 1) and count.sum() == np.prod(
        [hi - lo for lo, hi in box])
    for d, (lo, hi) in enumerate(inner):
        assert hi <= lo or (lo >= box[d][0] + width and hi <= box[d][1] - width)


def test_stencil_kernels_match_numpy():
    rng = np.random.default_rng(0)
    u, v = rng.random((9, 8)), np.zeros((9, 8))
    inner, rims = inner_and_rim([(1, 8), (1, 7)], 1)
    for b in [inner] + rims:
        heat2d_box(u, v, 0.2, b)
    c = u[1:-1, 1:-1]
    assert np.array_equal(v[1:-1, 1:-1], c + 0.2 * (((u[:-2, 1:-1] + u[2:, 1:-1]) + (u[1:-1, :-2] + u[1:-1, 2:])) - 4.0 * c))
    u3, v3 = rng.random((5, 6, 7)), np.zeros((5, 6, 7))
    heat3d_box(u3, v3, 0.1, [(1, 4), (1, 5), (1, 6)])
    I, lo, hi = slice(1, -1), slice(None, -2), slice(2, None)
    c = u3[I, I, I]
    want = c + 0.1 * ((((u3[lo, I, I] + u3[hi, I, I]) + (u3[I, lo, I] + u3[I, hi, I])) + (u3[I, I, lo] + u3[I, I, hi])) - 6.0 * c)
    assert np.array_equal(v3[I, I, I], want)
    b = (rng.random((10, 11)) < 0.4).astype(np.uint8)
    out = np.zeros_like(b)
    life_box(b, out, [(1, 9), (1, 10)])
    n = sum(b[1 + di:9 + di, 1 + dj:10 + dj].astype(int) for di, dj in itertools.product((-1, 0, 1), repeat=2)
            if di or dj)
    assert np.array_equal(out[1:-1, 1:-1], ((n == 3) | ((n == 2) & (b[1:-1, 1:-1] == 1))).astype(np.uint8))
    with pytest.raises(ValueError, match="past the halo"):
        heat2d_box(u, v, 0.2, [(0, 3), (1, 2)])


def test_numpy_function_registry(mesh):
    from meshrt.tensor.distributed_tensor import _HANDLED_FUNCTIONS, implements
    t = DT.from_global(np.arange(6.0).reshape(2, 3), Sharding(mesh, [[0]]))
    assert {np.sum, np.prod, np.max, np.amax, np.min, np.amin, np.mean} <= set(_HANDLED_FUNCTIONS)
    assert np.max(t, 1).gather().tolist() == [2.0, 5.0] and np.amin(t) == 0.0 and np.mean(t, axis=0).shape == (3,)
    with pytest.raises(TypeError, match=r"np\.linalg\.tensorinv is not supported on a DistributedTensor; supported: .*np\.sum"):
        np.linalg.tensorinv(t)
    with pytest.raises(TypeError, match=r"np\.lexsort is not supported"):
        np.lexsort(t)
    assert np.sum(t, 0, None, None).gather().tolist() == [3.0, 5.0, 7.0]  # numpy's positional order
    with pytest.raises(TypeError, match="out= is not supported"):
        np.sum(t, 0, None, np.empty(3))

    real_matmul = _HANDLED_FUNCTIONS.get(np.matmul)

    @implements(np.ptp)
    def _ptp(a, axis=None):
        return a.max(axis) - a.min(axis)

    @implements(np.matmul)  # a gufunc: reaches the registry through __array_ufunc__
    def _mm(a, b, out=None):
        return "matmul handler"
    try:
        assert np.ptp(t) == 5.0
        assert np.matmul(t, t) == "matmul handler"
    finally:
        del _HANDLED_FUNCTIONS[np.ptp]
        _HANDLED_FUNCTIONS[np.matmul] = real_matmul


def test_elementwise_fast_path_matches_numpy(mesh):
    """The cached-dtype fast path gives numpy's values and dtypes (NEP 50 scalars included)."""
    rng = np.random.default_rng(0)
    for halos in (None, [1, 2]):
        s = Sharding(mesh, [[0]], halo_sizes=halos)
        for dt in (np.int8, np.int64, np.float32, np.float64, np.complex64, np.bool_):
            g = (rng.random((5, 3)) * 10).astype(dt)
            t = DT.from_global(g, s)
            for op, want in ((lambda x: x * x, g * g), (lambda x: x + 1, g + 1), (lambda x: 2.5 * x, 2.5 * g),
                             (lambda x: x - np.float32(1), g - np.float32(1)), (lambda x: -x if dt != np.bool_ else ~x,
                                                                               -g if dt != np.bool_ else ~g),
                             (lambda x: x == x, g == g), (np.sqrt, np.sqrt(g))):
                r = op(t)
                assert r.dtype == want.dtype and np.array_equal(r.gather(), want), (dt, halos, want.dtype)
                if halos:
                    assert np.all(r.local[:1] == 0) and np.all(r.local[-2:] == 0)
    tt = DT.from_global(np.arange(6.0).reshape(2, 3), Sharding(mesh, [[0]])).T  # a strided interior
    assert (tt * tt).local.flags.c_contiguous and np.array_equal((tt * 2).gather(), np.arange(6.0).reshape(2, 3).T * 2)
    with pytest.raises(TypeError, match="only elementwise"):
        np.add.reduceat(tt, [0, 1])
    assert np.array_equal(np.add.outer(tt, tt).gather(), np.add.outer(np.arange(6.0).reshape(2, 3).T,
                                                                       np.arange(6.0).reshape(2, 3).T))
    with pytest.raises(OverflowError):
        DT.from_global(np.zeros(3, np.int8), Sharding(mesh, [[0]])) + 1000


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.data())
def test_index_plan_covers_the_global_selection(data):
    """Pure planner, every device of an abstract mesh: the device's part of the positive view P (from
    its block and `local_view_slices`) is P's global array at the device's region under P's sharding,
    and the final result sharding has the result's shape."""
    from meshrt.tensor.index_plan import local_view_slices, normalize_key, plan_index
    mesh = AbstractMesh(data.draw(st.sampled_from([(1,), (3,), (2, 2), (4, 1)])))
    ndim = data.draw(st.integers(1, 3))
    shape = tuple(data.draw(st.lists(st.integers(0, 9), min_size=ndim, max_size=ndim)))
    axes = list(range(mesh.ndim))
    split = [[] for _ in range(ndim)]
    for a in axes:
        split[data.draw(st.integers(0, ndim - 1))].append(a)
    s = Sharding(mesh, split)
    key = []
    for n in shape:
        kind = data.draw(st.sampled_from(["int", "slice", "full"] if n else ["slice", "full"]))
        if kind == "int":
            key.append(data.draw(st.integers(-n, n - 1)))
        elif kind == "slice":
            b = st.one_of(st.none(), st.integers(-n - 2, n + 2))
            key.append(slice(data.draw(b), data.draw(b), data.draw(st.sampled_from([None, 1, 2, 3, -1, -2]))))
        else:
            key.append(slice(None))
    if data.draw(st.booleans()):
        key.insert(data.draw(st.integers(0, len(key))), None)
    key = tuple(key)
    g = np.arange(max(1, int(np.prod(shape)))).reshape(-1)[: int(np.prod(shape))].reshape(shape)
    items = normalize_key(key, shape)
    plan = plan_index(s, shape, items)
    assert plan.result_shape == g[key].shape
    assert plan.result_sharding.check_shape(plan.result_shape) == plan.result_shape
    # P: ints as length-1 slices, negative steps mirrored, no None
    p_key = tuple(slice(it.start, it.start + 1) if it.index is not None else
                  slice(0, 0) if it.n == 0 else
                  (slice(it.start, it.start + (it.n - 1) * it.step + 1, it.step) if it.step > 0 else
                   slice(it.start + (it.n - 1) * it.step, it.start + 1, -it.step))
                  for it in items if it is not None)
    p = g[p_key]
    assert p.shape == plan.view_shape
    for dev in range(mesh.size):
        block = g[s.shard_slices(shape, dev)]
        mine = block[local_view_slices(items, s.shard_slices(shape, dev))]
        assert np.array_equal(mine, p[plan.view_sharding.shard_slices(plan.view_shape, dev)]), (key, dev)


@pytest.mark.parametrize("mesh_shape,split,shape", [
    ((3, 2), [[1], [0]], (7, 5)),
    ((2, 2, 2), [[2, 0], [], [1]], (9, 4, 3)),
    ((256, 256), [["x"], ["y"]], (8192, 1000)),
    ((256, 256), [["y", "x"]], (100_003,)),
])
def test_block_layout_is_every_devices_shard(mesh_shape, split, shape):
    """gather/from_global's per-device counts come from per-dim arrays, not a loop over devices;
    they must be each device's shard_slices (all devices on small meshes, a sample at 65,536)."""
    from meshrt.tensor.distributed_tensor import _block_layout
    names = ("x", "y", "z")[: len(mesh_shape)]
    s = Sharding(AbstractMesh(mesh_shape, names), split)
    starts, sizes = _block_layout(s, shape)
    size = int(np.prod(mesh_shape))
    devices = range(size) if size <= 64 else np.random.default_rng(0).integers(0, size, 200)
    for d in devices:
        want = s.shard_slices(shape, int(d))
        assert [(a.start, a.stop) for a in want] == [(int(a), int(a + n)) for a, n in zip(starts[d], sizes[d])]


@pytest.mark.parametrize("mesh_shape,split,shape,equal,in_place", [
    ((4,), [["x"]], (8, 3), True, True),         # rows, even: one Allgather straight into the result
    ((4,), [["x"]], (9, 3), False, True),        # rows, uneven: Allgatherv, still in place
    ((4,), [[], ["x"]], (8, 4), True, False),    # columns: staged, then unpacked
    ((2, 2), [["x"]], (8, 3), False, True),      # replicas along y: only y == 0 sends
    ((2, 2), [["y"], ["x"]], (4, 4), True, False),
    ((2, 2), [["x", "y"]], (8, 2), True, True),  # one dim over both axes in device order
    ((2, 2), [["y", "x"]], (8, 2), True, False),  # y outermost: blocks not in device order
    ((4,), [["x"]], (2, 3), False, True),        # empty blocks
])
def test_gather_layout(mesh_shape, split, shape, equal, in_place):
    """gather()'s cached plan: who sends how many bytes, whether one Allgather fits, whether the
    blocks land in place; checked against each device's shard_slices."""
    from meshrt.tensor.distributed_tensor import _gather_layout
    names = ("x", "y")[: len(mesh_shape)]
    s = Sharding(AbstractMesh(mesh_shape, names), split)
    g = _gather_layout(s, shape, 8)
    assert (g.equal, g.in_place) == (equal, in_place)
    mesh = s.mesh
    for d in range(mesh.size):
        coords = np.unravel_index(d, mesh_shape)
        sends = all(coords[a] == 0 for a in g.rest)
        n = int(np.prod([sl.stop - sl.start for sl in s.shard_slices(shape, d)]))
        assert g.counts[d] == (8 * n if sends else 0)
    assert g.displs.tolist() == np.concatenate(([0], np.cumsum(g.counts)[:-1])).tolist()
