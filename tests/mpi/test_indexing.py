"""Basic indexing of a DistributedTensor against numpy on the global array, at any process count.

Keys are drawn from seeded generators (the same on every rank, so every rank
runs the same collectives); results are compared after ``gather()``, which is
the same on every rank, so a wrong answer fails everywhere instead of hanging.
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import ShardingError
from meshrt.sharding import Sharding
from meshrt.tensor import DistributedTensor as DT

comm = MPI.COMM_WORLD
N = comm.size
DTYPES = [np.float64, np.int32, np.float32, np.complex128, np.bool_]


def cases(meshes):
    """(name, sharding, global shape): replicated, split, two axes on one dim, halos, uneven offsets."""
    m1, m2 = meshes["1d"], meshes["2d"]
    a, b = m2.shape
    offs = [0] + [min(2 + 3 * k, 3 * N + 3) for k in range(1, N)] + [3 * N + 4]
    return [
        ("replicated", Sharding(m2, []), (5, 6)),
        ("rows", Sharding(m1, [[0]]), (2 * N + 3, 5)),
        ("cols halo", Sharding(m1, [[], [0]], halo_sizes=[1, 2]), (3, 2 * N + 5)),
        ("2d halo", Sharding(m2, [[0], [1]], halo_sizes=[1, 1, 2, 1]), (2 * a + 5, 2 * b + 3)),
        ("2d swapped 3d", Sharding(m2, [[1], [], [0]]), (2 * b + 1, 3, 2 * a + 2)),
        ("dim on two axes", Sharding(m2, [[0, 1]], halo_sizes=[1, 1]), (2 * N + 1, 3)),
        ("offsets", Sharding(m1, [[0]], sharded_dims_offsets=offs), (offs[-1], 4)),
        ("tiny", Sharding(m1, [[0]]), (max(1, N - 1), 2)),
    ]


def global_array(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.random(shape) * 100 - 30).astype(dtype)


def random_key(rng, shape):
    """A basic-indexing key: per dim an int, a slice (any bounds, any step) or ``:``; some None and ``...``."""
    key = []
    for n in shape:
        r = rng.random()
        if r < 0.25 and n:
            key.append(int(rng.integers(-n, n)))
        elif r < 0.85:
            bound = lambda: None if rng.random() < 0.3 else int(rng.integers(-n - 2, n + 3))  # noqa: E731
            step = [None, 1, 2, 3, -1, -2, -3][rng.integers(7)]
            key.append(slice(bound(), bound(), step))
        else:
            key.append(slice(None))
    if rng.random() < 0.3:
        key.insert(int(rng.integers(len(key) + 1)), None)
    if rng.random() < 0.3 and key:
        i = int(rng.integers(len(key)))
        j = int(rng.integers(i, len(key) + 1))
        if all(k is not None for k in key[i:j]):
            key[i:j] = [Ellipsis]
    if len(key) == 1 and rng.random() < 0.5:
        return key[0]
    return tuple(key)


def test_getitem_random_keys(meshes):
    rng = np.random.default_rng(11)
    for name, s, shape in cases(meshes):
        for dtype in DTYPES:
            g = global_array(shape, dtype, seed=len(name))
            t = DT.from_global(g, s)
            for _ in range(6):
                key = random_key(rng, shape)
                r = t[key]
                want = g[key]
                got = r.gather()
                assert got.dtype == want.dtype and got.shape == want.shape, (name, key)
                assert np.array_equal(got, want), (name, dtype, key, r.sharding)


def test_slice_is_a_view_with_offsets(meshes):
    m = meshes["1d"]
    n = 4 * N + 3
    g = np.arange(n * 6.0).reshape(n, 6)
    t = DT.from_global(g, Sharding(m, [[0]], halo_sizes=[1, 1]))
    v = t[1:-1, ::2]
    assert np.shares_memory(v.interior, t.local) or v.interior.size == 0
    offs = v.sharding.sharded_dims_offsets or tuple(v.sharding.dim_offsets(v.shape)[0])
    assert offs[0] == 0 and offs[-1] == n - 2 and v.sharding.halo_sizes == ()
    # every process's part is the global rows it owned, minus the first and last row
    own = t.shard_slices[0]
    assert v.shard_slices[0] == slice(max(own.start, 1) - 1, min(own.stop, n - 1) - 1)
    assert np.array_equal(v.gather(), g[1:-1, ::2])
    v2 = v[::3, 1:]  # a view of a view: still no data moved
    assert np.shares_memory(v2.interior, t.local) or v2.interior.size == 0
    assert np.array_equal(v2.gather(), g[1:-1, ::2][::3, 1:])
    assert np.allclose((v2 * 2 + 1).gather(), g[1:-1, ::2][::3, 1:] * 2 + 1)


def test_int_index_replicates_over_the_split_axes(meshes):
    m = meshes["2d"]
    a, b = m.shape
    g = global_array((2 * a + 3, 2 * b + 1), np.float64, 3)
    t = DT.from_global(g, Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1]))
    row = t[2 * a + 2]
    assert row.sharding.split_axes == ((1,),) and row.shape == (2 * b + 1,)
    assert np.array_equal(row.interior, g[2 * a + 2][row.shard_slices])  # local check: every replica holds it
    col = t[:, -1]
    assert col.sharding.split_axes == ((0,),) and np.array_equal(col.gather(), g[:, -1])
    x = t[1, 2]
    assert x.shape == () and x.sharding.split_axes == () and x.interior[()] == g[1, 2]


def test_setitem_random(meshes):
    rng = np.random.default_rng(5)
    for name, s, shape in cases(meshes):
        m1 = s.mesh
        for dtype in (np.float64, np.int32):
            g = global_array(shape, dtype, seed=1)
            t = DT.from_global(g, s)
            for i in range(6):
                key = random_key(rng, shape)
                rshape = g[key].shape
                kind = i % 3
                if kind == 0:
                    value = float(rng.integers(-9, 9))
                elif kind == 1:
                    value = global_array(rshape, np.float64, seed=i)
                    if len(rshape) and 0 not in rshape and rng.random() < 0.5:
                        value = value[(0,) * (len(rshape) - 1)]  # broadcast along the leading dims
                else:
                    halos = [1, 1] if len(rshape) and rshape[0] >= 2 * N else None
                    vs = Sharding(m1, [[0]] if len(rshape) else [], halo_sizes=halos)
                    if len(rshape) and rshape[0] and rng.random() < 0.5:
                        vs = Sharding(m1, [[]] * (len(rshape) - 1) + [[0]]) if len(rshape) > 1 else vs
                    value = DT.from_global(global_array(rshape, dtype, seed=i), vs)
                g[key] = value.gather() if isinstance(value, DT) else value
                t[key] = value
                assert np.array_equal(t.gather(), g), (name, dtype, key, kind)


def test_repeated_scalar_writes_match_numpy(meshes):
    # A scalar write through a key seen before skips planning (the tensor remembers its local index):
    # repeat a few keys in random order, with every scalar type, as a boundary-condition loop does.
    rng = np.random.default_rng(11)
    for name, s, shape in cases(meshes):
        for dtype in (np.float64, np.int32, np.complex128):
            g = global_array(shape, dtype, seed=2)
            t = DT.from_global(g, s)
            keys = [random_key(rng, shape) for _ in range(4)]
            for i in range(24):
                key = keys[rng.integers(len(keys))]
                value = [float(i) + 0.5, i, bool(i % 2), complex(i, -i)][i % 4 if dtype == np.complex128 else i % 3]
                g[key] = value
                t[key] = value
            assert np.array_equal(t.gather(), g), (name, dtype, keys)
    # more distinct keys than the tensor remembers, then the first ones again
    t = DT.from_global(np.zeros((3 * N + 2, 70)), Sharding(meshes["1d"], [[0]]))
    g = np.zeros((3 * N + 2, 70))
    for rounds in range(2):
        for j in range(70):
            t[1, j] = g[1, j] = j + 100 * rounds
            t[:, j:j + 1] = g[:, j:j + 1] = -j
    assert np.array_equal(t.gather(), g)


def test_remembered_write_keys_are_exact(meshes):
    # 0 == 0.0 == False, but only the int is a valid key here: a remembered t[0, :] must not take the others
    t = DT.from_global(np.zeros((2 * N, 3)), Sharding(meshes["1d"], [[0]]))
    for _ in range(2):
        t[0, :] = 1.0
    with pytest.raises(TypeError, match="bool"):
        t[False, :] = 2.0
    with pytest.raises(TypeError, match="supported: ints, slices"):
        t[0.0, :] = 2.0
    with pytest.raises(TypeError, match="slice indices must be integers"):
        t[0, 0.0:] = 2.0
    t[np.int64(0), :] = 3.0  # a numpy int means what the int means
    with pytest.raises(TypeError, match="cannot be stored"):
        t[0, :] = "x"
    # values numpy refuses raise on every process, also where the remembered key selects nothing
    with pytest.raises(TypeError, match="complex"):
        t[0, :] = 1j
    small = DT.from_global(np.zeros((2 * N, 3), np.int8), Sharding(meshes["1d"], [[0]]))
    small[-1, 1:] = 5
    with pytest.raises(OverflowError, match="out of bounds for int8"):
        small[-1, 1:] = 300
    expect = np.zeros((2 * N, 3))
    expect[0] = 3.0
    assert np.array_equal(t.gather(), expect)


def test_setitem_boundary_condition_and_aliasing(meshes):
    m = meshes["2d"]
    a, b = m.shape
    n = 2 * a + 4
    g = global_array((n, n), np.float64, 7)
    u = DT.from_global(g, Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1]))
    u[0, :] = 1.0
    u[:, -1] = np.arange(n)
    g[0, :] = 1.0
    g[:, -1] = np.arange(n)
    u[1:] = u[:-1]  # overlapping source and target: numpy reads before it writes
    g[1:] = g[:-1].copy()
    u[::-1, 1] = u[:, 2]
    g[::-1, 1] = g[:, 2].copy()
    assert np.array_equal(u.gather(), g)
    # halos are stale until update_halo: then they agree with the new values
    u.update_halo()
    lo = [u.sharding.halo_widths(d)[0] for d in range(2)]
    sl = u.shard_slices
    if sl[0].start > 0:
        assert np.array_equal(u.local[0, lo[1]:lo[1] + sl[1].stop - sl[1].start], g[sl[0].start - 1, sl[1]])


def test_errors_are_clear_and_everywhere(meshes):
    m = meshes["1d"]
    t = DT.from_global(np.arange(24.0).reshape(4, 6), Sharding(m, [[]] + [[0]] if N <= 6 else [[]]))
    g = np.arange(24.0).reshape(4, 6)  # index arrays and masks work (tests/mpi/test_numpy_programs.py)
    assert np.array_equal(t[np.array([True, False, True, False])].gather(), g[np.array([True, False, True, False])])
    assert np.array_equal(t[[0, 2]].gather(), g[[0, 2]])
    assert np.array_equal(t[t > 3].gather(), g[g > 3])
    with pytest.raises(TypeError, match="supported: ints, slices"):
        t[1.5]
    assert np.array_equal(t[1].gather(), np.arange(6.0, 12.0))  # cached: True must not hit 1's plan
    with pytest.raises(TypeError, match="bool"):
        t[True]
    assert np.array_equal(t[np.int64(1), np.int8(2):].gather(), np.arange(8.0, 12.0))
    with pytest.raises(IndexError, match="out of bounds for axis 1 with size 6"):
        t[0, 6]
    with pytest.raises(IndexError, match="too many indices"):
        t[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        t[..., ...]
    with pytest.raises(ValueError, match=r"broadcast input array from shape \(4,\) into shape \(6,\)"):
        t[0] = np.ones(4)
    with pytest.raises(ShardingError, match=r"global shape \(3,\) cannot be assigned to a selection of shape \(6,\)"):
        t[0] = DT.zeros((3,), Sharding(m, []))
    p = DT.zeros((4, 6), Sharding(m, [], partial_axes=[0]))
    with pytest.raises(ShardingError, match="partial"):
        p[0] = 1.0
    with pytest.raises(TypeError, match="cannot be stored"):
        t[0] = "abc"


def test_partial_tensors_index_and_stay_partial(meshes):
    m = meshes["2d"]
    g = global_array((7, 5), np.float64, 9)
    t = DT.from_global(g, Sharding(m, [[1]]))
    p = t.reshard(Sharding(m, [[1]], partial_axes=[0]))
    for key in (3, (slice(None, None, -1), 2), (None, slice(1, 5, 2)), (-1, -1)):
        r = p[key]
        assert r.sharding.partial_axes == (0,) and np.allclose(r.gather(), g[key]), key
