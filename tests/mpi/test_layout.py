"""Layout and numpy-function ops on a DistributedTensor against numpy on the global array.

Cases come from seeded generators, identical on every rank; results are
compared after ``gather()`` (the same everywhere), so a failure fails on
every rank instead of hanging.
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import ShardingError
from meshrt.sharding import Sharding
from meshrt.tensor import DistributedTensor as DT

comm = MPI.COMM_WORLD
N = comm.size


def cases(meshes):
    """3-d tensors: replicated, one split dim, two, a dim on two axes, halos, uneven offsets."""
    m1, m2 = meshes["1d"], meshes["2d"]
    a, b = m2.shape
    offs = [0] + [min(1 + 2 * k, 2 * N + 1) for k in range(1, N)] + [2 * N + 2]
    return [
        ("replicated", Sharding(m2, []), (4, 3, 2)),
        ("rows", Sharding(m1, [[0]]), (2 * N + 1, 3, 2)),
        ("2d halo", Sharding(m2, [[0], [], [1]], halo_sizes=[1, 1, 1, 0]), (2 * a + 1, 3, 2 * b + 2)),
        ("two axes middle", Sharding(m2, [[], [1, 0]]), (2, 2 * N + 3, 3)),
        ("offsets", Sharding(m1, [[], [], [0]], sharded_dims_offsets=offs), (3, 2, offs[-1])),
    ]


def g_of(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.random(shape) * 20 - 5
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.random(shape)
    return x.astype(dtype)


def check(t, want, what):
    got = t.gather()
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, want.shape, got.dtype, want.dtype)
    if want.dtype.kind == "f" or want.dtype.kind == "c":
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6), what
    else:
        assert np.array_equal(got, want), what


def random_reshape(rng, shape):
    """A shape of the same size: the prime factors of every dim regrouped at random."""
    factors = []
    for n in shape:
        k = 2
        while n > 1:
            while n % k == 0:
                factors.append(k)
                n //= k
            k += 1
    out = []
    for f in factors:
        if out and rng.random() < 0.5:
            out[-1] *= f
        else:
            out.append(f)
    while rng.random() < 0.3:
        out.insert(int(rng.integers(len(out) + 1)), 1)
    return tuple(out) or (1,)


def test_permutations_move_no_data(meshes):
    rng = np.random.default_rng(1)
    for name, s, shape in cases(meshes):
        g = g_of(shape, np.float64)
        t = DT.from_global(g, s)
        assert np.shares_memory(t.T.local, t.local)
        assert tuple(t.T.sharding.dim_axes(d) for d in range(3)) == tuple(s.dim_axes(d) for d in (2, 1, 0))
        check(t.T, g.T, (name, "T"))
        perm = tuple(rng.permutation(3))
        check(t.transpose(perm), g.transpose(perm), (name, perm))
        check(np.transpose(t, perm), g.transpose(perm), (name, perm))
        check(np.moveaxis(t, 0, -1), np.moveaxis(g, 0, -1), name)
        check(np.moveaxis(t, [0, 1], [2, 0]), np.moveaxis(g, [0, 1], [2, 0]), name)
        check(np.swapaxes(t, 0, 2), np.swapaxes(g, 0, 2), name)
        # halos follow their dims: an update on the transposed view fills the same cells
        tt = t.T
        tt.update_halo()
        t2 = DT.from_global(g, s)
        t2.update_halo()
        assert np.array_equal(tt.local, t2.local.T)


def test_reshape(meshes):
    rng = np.random.default_rng(2)
    for name, s, shape in cases(meshes):
        for dtype in (np.float64, np.int16):
            g = g_of(shape, dtype)
            t = DT.from_global(g, s)
            for _ in range(4):
                new = random_reshape(rng, shape)
                check(t.reshape(new), g.reshape(new), (name, new))
            check(np.reshape(t, (-1,)), g.reshape(-1), name)
    # a row split stays local when rows stay whole: a view of the owned block
    m = meshes["1d"]
    t = DT.from_global(np.arange(4.0 * N * 6).reshape(4 * N, 6), Sharding(m, [[0]]))
    r = t.reshape(2 * N, 12)
    assert np.shares_memory(r.interior, t.interior) and r.sharding.split_axes == ((0,),)
    check(r, np.arange(4.0 * N * 6).reshape(2 * N, 12), "rows")
    with pytest.raises(ValueError, match="cannot reshape"):
        t.reshape(5, -1)


def _random_sharding(rng, mesh, shape, halos=False):
    split = [[] for _ in shape]
    for a in rng.permutation(mesh.ndim):
        d = int(rng.integers(-1, len(shape)))
        if d >= 0:
            split[d].append(int(a))
    offsets = None
    if rng.random() < 0.3 and any(split):  # uneven shard boundaries, zero-width shards too
        offsets = []
        for axes, n in zip(split, shape):
            if axes:
                k = int(np.prod([mesh.shape[a] for a in axes]))
                offsets += [0, *sorted(int(c) for c in rng.integers(0, n + 1, k - 1)), n]
    nsplit = sum(1 for axes in split if axes)
    wide = all(n >= np.prod([mesh.shape[a] for a in axes]) for axes, n in zip(split, shape) if axes)
    halo_sizes = [1, 0] * nsplit if halos and nsplit and offsets is None and wide else None
    return Sharding(mesh, split, sharded_dims_offsets=offsets, halo_sizes=halo_sizes)


def test_reshape_to_a_given_sharding_never_gathers(meshes, monkeypatch):
    """Random shapes and shardings (1-d and 2-d meshes, uneven, source halos): the result has the
    sharding asked for, equals numpy, and comes from one exchange of the runs that change owner
    (no reshard, so no gather), each element sent once to each process that lacks it."""
    from meshrt.tensor.reshape_plan import elements_sent

    rng = np.random.default_rng(29)
    resharded = []
    monkeypatch.setattr(DT, "reshard", lambda *a, **k: resharded.append(a) or (_ for _ in ()).throw(AssertionError))
    for i in range(40 if N <= 4 else 12):  # oversubscribed (8 on 2 cores): fewer cases, the same kinds
        mesh = meshes["1d" if i % 2 else "2d"]
        size = int(rng.choice([6, 12, 24, 30, 36, 60]))
        old = random_reshape(rng, (size,))
        new = random_reshape(rng, (size,))
        src = _random_sharding(rng, mesh, old, halos=i % 3 == 0)
        dst = _random_sharding(rng, mesh, new)
        g = g_of(old, np.float32, i)
        t = DT.from_global(g, src)
        r = t.reshape(new, sharding=dst)
        assert r.sharding == dst, (old, src, new, dst)
        assert np.array_equal(r.interior, g.reshape(new)[dst.shard_slices(new)]), (old, src, new, dst)
        # what moved: the elements each process lacks, no more
        flat = np.arange(size).reshape(old)
        have = set(flat[src.shard_slices(old)].ravel().tolist())
        need = set(flat.reshape(new)[dst.shard_slices(new)].ravel().tolist())
        lacking = comm.allreduce(len(need - have))
        sent = comm.allreduce(elements_sent(src.replace(halo_sizes=None, mesh=mesh.abstract()), old,
                                            dst.replace(mesh=mesh.abstract()), new, comm.rank))
        assert sent == lacking, (old, src, new, dst, sent, lacking)
    assert not resharded


def test_reshape_split_and_merge_stay_views(meshes):
    """A split dim split into (split, whole) dims, or merged with whole trailing dims, keeps its axes
    on the major dim and moves nothing: the result shares the block's memory."""
    m = meshes["2d"]
    a, b = m.shape
    g = np.arange(4.0 * a * b * 6).reshape(4 * a * b, 6)
    t = DT.from_global(g.reshape(-1), Sharding(m, [[0, 1]]))
    r = t.reshape(4 * a * b, 6)
    assert r.sharding.dim_axes(0) == (0, 1) and np.shares_memory(r.interior, t.interior)
    check(r, g, "split")
    back = r.reshape(-1)
    assert back.sharding.dim_axes(0) == (0, 1) and np.shares_memory(back.interior, t.interior)
    # a split major dim merged with a split minor one, the major split whole: one dim on both axes
    u = DT.from_global(np.arange(a * 6.0 * b).reshape(a, 6 * b), Sharding(m, [[0], [1]]))
    merged = u.reshape(-1, sharding=Sharding(m, [[0, 1]]))
    assert np.shares_memory(merged.interior, u.interior)
    check(merged, np.arange(a * 6.0 * b), "merge")
    with pytest.raises(TypeError, match="sharding: "):
        t.reshape(-1, sharding="x")
    # a sharding that does not fit the new shape: the same error on every process, before any message
    with pytest.raises(ShardingError, match="splits 2 dims, but the tensor has only 1"):
        u.reshape(-1, sharding=Sharding(m, [[0], [1]]))


def test_concatenate_and_stack(meshes):
    rng = np.random.default_rng(3)
    for name, s, shape in cases(meshes):
        g = g_of(shape, np.float64)
        t = DT.from_global(g, s)
        for axis in range(3):
            k = int(rng.integers(0, shape[axis] + 1))
            part = (slice(None),) * axis + (slice(0, k),)
            h = g_of(shape, np.float32, 1)
            u = DT.from_global(h, s)
            check(np.concatenate([t, u[part], t], axis=axis), np.concatenate([g, h[part], g], axis=axis), (name, axis))
            check(np.stack([t, u], axis=axis), np.stack([g, h], axis=axis), (name, axis))
        check(np.stack([t, t], axis=-1), np.stack([g, g], axis=-1), name)
    with pytest.raises(ValueError, match="must match"):
        np.concatenate([t, t.T], axis=0)


def test_elementwise_functions(meshes):
    for i, (name, s, shape) in enumerate(cases(meshes)):
        for dtype in [(np.float64, np.int32, np.complex128)[i % 3]]:
            g, h = g_of(shape, dtype, 0), g_of(shape, dtype, 1)
            t, u = DT.from_global(g, s), DT.from_global(h, s)
            check(abs(t), abs(g), name)
            check(np.abs(t), np.abs(g), name)
            check(np.where(abs(t) > abs(u), t, u), np.where(abs(g) > abs(h), g, h), name)
            check(np.where(abs(t) > 2, t, 0), np.where(abs(g) > 2, g, 0), name)
            if dtype != np.complex128:
                check(np.clip(t, 0, 7), np.clip(g, 0, 7), name)
                check(np.clip(t, u, None), np.clip(g, h, None), name)
            check(t.astype(np.float32) if dtype != np.complex128 else t.astype(np.complex64),
                  g.astype(np.float32) if dtype != np.complex128 else g.astype(np.complex64), name)
            c = np.copy(t)
            c[...] = 0
            check(t, g, (name, "copy is a copy"))
            check(np.zeros_like(t), np.zeros_like(g), name)
            check(np.ones_like(t, dtype=np.int8), np.ones_like(g, dtype=np.int8), name)
            check(np.full_like(t, 3), np.full_like(g, 3), name)
            assert np.empty_like(t).sharding == t.sharding
            assert np.allclose(t, DT.from_global(g + 1e-12, s)) and not np.allclose(t, u)
            assert np.array_equal(t, t.copy()) and not np.array_equal(t, u)
            assert not np.array_equal(t, t.T) or shape == shape[::-1]
            # a different sharding of the same values is resharded, not refused
            other = DT.from_global(g, Sharding(s.mesh, [[0]] if shape[0] >= N else []))
            assert np.array_equal(t, other)


def test_norm_and_cumsum(meshes):
    for i, (name, s, shape) in enumerate(cases(meshes)):
        for dtype in [(np.float64, np.int32, np.complex128)[(i + 1) % 3]]:
            g = g_of(shape, dtype)
            t = DT.from_global(g, s)
            assert np.isclose(np.linalg.norm(t), np.linalg.norm(g)), name
            for axis in range(3):
                for ord_ in (None, 1, 2, np.inf, -np.inf, 0, 3)[axis::2]:
                    check(np.linalg.norm(t, ord_, axis), np.linalg.norm(g, ord_, axis), (name, axis, ord_))
                check(np.cumsum(t, axis=axis), np.cumsum(g, axis=axis), (name, axis))
            check(np.cumsum(t), np.cumsum(g), name)
            v = t.reshape(-1)
            for ord_ in (None, 1, np.inf, 0.5):
                assert np.isclose(np.linalg.norm(v, ord_), np.linalg.norm(g.reshape(-1), ord_)), (name, ord_)
    with pytest.raises(TypeError, match="ord="):
        np.linalg.norm(t, 2)


def test_views_feed_every_op(meshes):
    m = meshes["2d"]
    a, b = m.shape
    g = g_of((2 * a + 5, 3 * b + 4), np.float64)
    t = DT.from_global(g, Sharding(m, [[0], [1]], halo_sizes=[1, 1, 1, 1]))
    v, w = t[1:-1, ::2], g[1:-1, ::2]
    check(v.T, w.T, "T")
    check(np.cumsum(v, axis=0), np.cumsum(w, axis=0), "cumsum")
    check(v.reshape(-1), w.reshape(-1), "reshape")
    check(np.concatenate([v, v], axis=1), np.concatenate([w, w], axis=1), "cat")
    assert np.isclose(np.linalg.norm(v), np.linalg.norm(w))
    assert v.sum() == pytest.approx(w.sum()) and v.max() == w.max()
    check(v.sum(axis=0), w.sum(axis=0), "sum axis")
    assert np.allclose(v, DT.from_global(w, Sharding(m, [[0], [1]])))


def test_unsupported_functions_name_themselves(meshes):
    t = DT.zeros((4, 4), Sharding(meshes["1d"], [[0]] if N <= 4 else []))
    for fn, name in ((np.lexsort, "np.lexsort"), (np.linalg.tensorinv, "np.linalg.tensorinv"), (np.linalg.eig, "np.linalg.eig")):
        with pytest.raises(TypeError, match=rf"{name} is not supported on a DistributedTensor; supported: .*np\.where"):
            fn(t)
    with pytest.raises(TypeError, match="needs both x and y"):
        np.where(t > 0, t)
    with pytest.raises(ShardingError, match="numpy array"):
        np.where(t > 0, t, np.ones((4, 4)))
