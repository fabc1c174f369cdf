"""apply_stencil, update_halos and staggered fields against a serial numpy model; any comm.size.

Every rank draws the same random cases from one seeded RNG (mesh shape,
uneven global shape, halo widths, periodic flags, boundary conditions, where,
dtype), runs the stencil on DistributedTensors and compares the gathered
result bit for bit with numpy on the global array padded by the same rules.
"""

import numpy as np
import pytest
from mpi4py import MPI
from numba import njit

from meshrt import DistributedTensor, Mesh, Sharding, ShardingError
from meshrt.halo import HaloGroupExchange
from meshrt.mesh import dims_create
from meshrt.stencil.apply import (
    Dirichlet, Neumann, apply_stencil, clear_stencil_cache, fill_ghosts, staggered, update_halos,
)

comm = MPI.COMM_WORLD


def _all_ok(ok, what):
    errors = comm.allgather(None if ok is True else f"rank {comm.rank}: {ok}")
    errors = [e for e in errors if e]
    assert not errors, f"{what}: " + "; ".join(errors[:4])


# -- kernels (plain njit on a box of local indices) and their numpy twins ----------------------

@njit(cache=True)
def star2(lo, hi, out, u, k, w, r0, r1):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            acc = w * u[i, j]
            for t in range(1, r0 + 1):
                acc = acc + (u[i - t, j] + u[i + t, j])
            for t in range(1, r1 + 1):
                acc = acc + (u[i, j - t] + u[i, j + t])
            if r0 > 0 and r1 > 0:
                acc = acc + (u[i - 1, j - 1] - u[i + 1, j + 1])  # corners
            out[i, j] = acc - k[i + min(r0, 1), j]


@njit(cache=True)
def star3(lo, hi, out, u, k, w, r0, r1, r2):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            for m in range(lo[2], hi[2]):
                acc = w * u[i, j, m]
                for t in range(1, r0 + 1):
                    acc = acc + (u[i - t, j, m] + u[i + t, j, m])
                for t in range(1, r1 + 1):
                    acc = acc + (u[i, j - t, m] + u[i, j + t, m])
                for t in range(1, r2 + 1):
                    acc = acc + (u[i, j, m - t] + u[i, j, m + t])
                if r0 > 0 and r1 > 0 and r2 > 0:
                    acc = acc + (u[i - 1, j - 1, m - 1] - u[i + 1, j + 1, m + 1])
                out[i, j, m] = acc - k[i + min(r0, 1), j, m]


def numpy_star(P, K, pads, w, radii):
    """The kernels' arithmetic on padded global arrays, in the same order."""
    nd = P.ndim

    def at(A, shift):
        return A[tuple(slice(p + s, A.shape[d] - p + s) for d, (p, s) in enumerate(zip(pads, shift)))]

    zero = [0] * nd
    acc = w * at(P, zero)
    for d, r in enumerate(radii):
        for t in range(1, r + 1):
            lo, hi = list(zero), list(zero)
            lo[d], hi[d] = -t, t
            acc = acc + (at(P, lo) + at(P, hi))
    if all(r > 0 for r in radii):
        acc = acc + (at(P, [-1] * nd) - at(P, [1] * nd))
    kshift = list(zero)
    kshift[0] = min(radii[0], 1)
    return acc - at(K, kshift)


def pad_global(G, pads, periodic, bcs):
    """Pad dim by dim (later dims win at corners): wrap, Dirichlet value or Neumann mirror."""
    P = G
    for d, p in enumerate(pads):
        if not p:
            continue
        if periodic[d]:
            P = np.concatenate([P.take(range(P.shape[d] - p, P.shape[d]), axis=d), P, P.take(range(p), axis=d)], axis=d)
            continue
        parts = []
        for side, bc in enumerate(bcs[d]):
            if isinstance(bc, Dirichlet):
                shape = list(P.shape)
                shape[d] = p
                parts.append(np.full(shape, bc.value, dtype=P.dtype))
            else:
                idx = range(p - 1, -1, -1) if side == 0 else range(P.shape[d] - 1, P.shape[d] - 1 - p, -1)
                parts.append(P.take(idx, axis=d))
        P = np.concatenate([parts[0], P, parts[1]], axis=d)
    return P


def random_case(rng, size):
    tdim = int(rng.integers(2, 4))
    mesh_ndim = int(rng.integers(1, 4))
    mesh_shape = dims_create(size, (-1,) * mesh_ndim)
    split = [[] for _ in range(tdim)]
    for a in range(mesh_ndim):
        split[int(rng.integers(0, tdim))].append(a)
    h = int(rng.integers(1, 3))
    # every dim split (on a size-1 axis too) carries halos; unsplit dims are not reached
    shape, radii = [], []
    for d in range(tdim):
        n = int(np.prod([mesh_shape[a] for a in split[d]])) if split[d] else 1
        radii.append(h if split[d] else 0)
        shape.append(n * int(rng.integers(h, h + 3)) + int(rng.integers(0, n)) if split[d] else int(rng.integers(1, 5)))
    sharded = [d for d in range(tdim) if split[d]]
    periodic = [bool(rng.random() < 0.4) for _ in range(tdim)]
    choices = [Dirichlet(float(rng.integers(-3, 4)) / 2), Neumann()]
    bcs = [(choices[int(rng.integers(0, 2))], choices[int(rng.integers(0, 2))]) for _ in range(tdim)]
    where = None
    if rng.random() < 0.3:
        where = tuple(slice(int(rng.integers(0, 2)), -int(rng.integers(0, 2)) or None) for _ in range(tdim))
    dtype = [np.float64, np.float32][int(rng.integers(0, 2))]
    return dict(split=split, mesh_ndim=mesh_ndim, halos=[h] * 2 * len(sharded), shape=tuple(shape), radii=radii,
                periodic=periodic, bcs=bcs, where=where, dtype=dtype, overlap=bool(rng.random() < 0.7))


def run_case(case, rng_seed):
    rng = np.random.default_rng(rng_seed)
    mesh = Mesh((-1,) * case["mesh_ndim"], comm=comm)
    try:
        s = Sharding(mesh, case["split"], halo_sizes=case["halos"])
        dt = case["dtype"]
        shape = case["shape"]
        G = rng.standard_normal(shape).astype(dt)
        K = rng.standard_normal(shape).astype(dt)
        O = rng.standard_normal(shape).astype(dt)
        w = dt(rng.standard_normal())
        u = DistributedTensor.from_global(G, s, periodic=case["periodic"])
        k = DistributedTensor.from_global(K, s, periodic=case["periodic"])
        out = DistributedTensor.from_global(O, s)
        kernel = star2 if len(shape) == 2 else star3
        apply_stencil(kernel, out, u, k, w, *case["radii"], reads=[u, k], boundary=case["bcs"],
                      where=case["where"], overlap=case["overlap"])
        got = out.gather()
        pads = [s.halo_widths(d)[0] for d in range(len(shape))]
        per = case["periodic"]
        ref = numpy_star(pad_global(G, pads, per, case["bcs"]), pad_global(K, pads, per, case["bcs"]), pads, w,
                         case["radii"])
        want = O.copy()
        region = tuple(slice(None) for _ in shape) if case["where"] is None else case["where"]
        want[region] = ref[region]
        if np.array_equal(got, want):
            return True
        bad = np.argwhere(got != want)[:3].tolist()
        return f"{case}: mismatch at global {bad}"
    finally:
        clear_stencil_cache()
        mesh.free()


def test_random_stencils_match_serial_numpy():
    rng = np.random.default_rng(7)
    for c in range(14):
        case = random_case(rng, comm.size)
        _all_ok(run_case(case, 100 + c), "stencil result")


@njit(cache=True)
def heat(lo, hi, v, u, r):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            c = u[i, j]
            v[i, j] = c + r * (((u[i - 1, j] + u[i + 1, j]) + (u[i, j - 1] + u[i, j + 1])) - 4.0 * c)


def test_many_steps_overlapped_equals_blocking():
    """Ping-pong buffers, 2-D mesh, uneven 23x17, periodic rows and Neumann columns."""
    mesh = Mesh((-1, -1), comm=comm)
    s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    G = np.random.default_rng(3).random((23, 17))
    results = []
    for overlap in (True, False):
        u = DistributedTensor.from_global(G, s, periodic=[True, False])
        v = DistributedTensor.zeros(G.shape, s, periodic=[True, False])
        for _ in range(6):
            apply_stencil(heat, v, u, 0.2, reads=[u], boundary=[None, Neumann()], overlap=overlap)
            u, v = v, u
        results.append(u.gather())
        u.free(), v.free()
    P = G
    for _ in range(6):
        Q = pad_global(P, [1, 1], [True, False], [None, (Neumann(), Neumann())])
        c = Q[1:-1, 1:-1]
        P = c + 0.2 * (((Q[:-2, 1:-1] + Q[2:, 1:-1]) + (Q[1:-1, :-2] + Q[1:-1, 2:])) - 4.0 * c)
    _all_ok(bool(np.array_equal(results[0], P) and np.array_equal(results[1], P)) or "mismatch", "heat")
    mesh.free()


# -- several fields in one exchange --------------------------------------------------------------

def expected_halos(G, s, periodic, sentinel, local_shape):
    owned = s.shard_slices(G.shape)
    idx, valid = [], []
    for d, sl in enumerate(owned):
        lo, hi = s.halo_widths(d)
        g = np.arange(sl.start - lo, sl.stop + hi)
        ok = (g >= 0) & (g < G.shape[d])
        if periodic[d] and s.dim_axes(d):
            ok[:] = True
        idx.append(np.where(ok, g % G.shape[d], 0))
        valid.append(ok)
    out = G[np.ix_(*idx)].copy()
    mask = np.ones(out.shape, dtype=bool)
    for d, v in enumerate(valid):
        sh = [1] * out.ndim
        sh[d] = -1
        mask &= v.reshape(sh)
    out[~mask] = sentinel
    return out


def test_update_halos_several_fields_one_message_per_neighbour():

    mesh = Mesh((-1, -1), comm=comm)
    rng = np.random.default_rng(11)
    try:
        for case in range(4):
            per = [bool(rng.random() < 0.5), bool(rng.random() < 0.5)]
            n0, n1 = [int(mesh.shape[d] * 3 + rng.integers(0, mesh.shape[d])) for d in range(2)]
            cells = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
            wide = Sharding(mesh, [[0], [1]], halo_sizes=[2, 1, 0, 2])
            fx, gx = staggered(cells, (n0, n1), [0])
            specs = [(cells, (n0, n1), np.float64), (wide, (n0, n1), np.int32), (fx, gx, np.float32)]
            ts, globals_ = [], []
            for s, g, dt in specs:
                G = (np.arange(np.prod(g)).reshape(g) + 1).astype(dt)
                t = DistributedTensor.from_global(G, s, periodic=per)
                t.local[...] = -1
                t.interior[...] = G[t.shard_slices]
                ts.append(t)
                globals_.append(G)
            odd = DistributedTensor.from_global(globals_[0], cells, periodic=[not per[0], per[1]])
            odd.local[...] = -1
            odd.interior[...] = globals_[0][odd.shard_slices]
            for _ in range(2):  # the cached exchange runs again
                update_halos(*ts, odd)
            ok = True
            for t, G in zip(ts + [odd], globals_ + [globals_[0]]):
                want = expected_halos(G, t.sharding, t.periodic, -1, t.local.shape)
                if not np.array_equal(t.local, want):
                    ok = f"case {case} {t.sharding}: halos differ at {np.argwhere(t.local != want)[:3].tolist()}"
            # coalesced: one message per neighbour direction, whatever the number of fields
            packed = HaloGroupExchange([t.local for t in ts], [t.sharding for t in ts],
                                       [t.global_shape for t in ts], [t.periodic for t in ts], coalesce=True)
            for t, G in zip(ts, globals_):
                t.local[...] = -1
                t.interior[...] = G[t.shard_slices]
            packed()
            for t, G in zip(ts, globals_):
                if ok is True and not np.array_equal(t.local, expected_halos(G, t.sharding, t.periodic, -1,
                                                                              t.local.shape)):
                    ok = f"case {case} {t.sharding}: halos differ after the coalesced exchange"
            directions = {m.direction for p in packed.plans for m in p.sends}
            if ok is True and packed.nsends != len(directions):
                ok = f"{packed.nsends} messages sent for {len(directions)} neighbour directions"
            packed.free()
            _all_ok(ok, "update_halos")
            clear_stencil_cache()
            for t in ts + [odd]:
                t.free()
    finally:
        clear_stencil_cache()
        mesh.free()


# -- staggered grid: acoustic velocity-pressure, checked against numpy ---------------------------

@njit(cache=True)
def dvx(lo, hi, vx, p, c):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            vx[i, j] = vx[i, j] - c * (p[i, j] - p[i - 1, j])


@njit(cache=True)
def dvy(lo, hi, vy, p, c):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            vy[i, j] = vy[i, j] - c * (p[i, j] - p[i, j - 1])


@njit(cache=True)
def dp(lo, hi, p, vx, vy, k):
    for i in range(lo[0], hi[0]):
        for j in range(lo[1], hi[1]):
            p[i, j] = p[i, j] - k * ((vx[i + 1, j] - vx[i, j]) + (vy[i, j + 1] - vy[i, j]))


@pytest.mark.parametrize("n0,n1", [(10, 7), (13, 12)])
def test_staggered_acoustic_matches_numpy(n0, n1):
    mesh = Mesh((-1, -1), comm=comm)
    try:
        cells = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
        sx, gx = staggered(cells, (n0, n1), [0])
        sy, gy = staggered(cells, (n0, n1), [1])
        P0 = np.random.default_rng(5).random((n0, n1))
        p = DistributedTensor.from_global(P0, cells)
        vx, vy = DistributedTensor.zeros(gx, sx), DistributedTensor.zeros(gy, sy)
        Pr, Vx, Vy = P0.copy(), np.zeros(gx), np.zeros(gy)
        for _ in range(5):
            apply_stencil(dvx, vx, p, 0.3, reads=[p], where=(slice(1, -1),))
            apply_stencil(dvy, vy, p, 0.3, reads=[p], where=(slice(None), slice(1, -1)))
            apply_stencil(dp, p, vx, vy, 0.4, reads=[vx, vy])
            Vx[1:-1] = Vx[1:-1] - 0.3 * (Pr[1:] - Pr[:-1])
            Vy[:, 1:-1] = Vy[:, 1:-1] - 0.3 * (Pr[:, 1:] - Pr[:, :-1])
            Pr = Pr - 0.4 * ((Vx[1:] - Vx[:-1]) + (Vy[:, 1:] - Vy[:, :-1]))
        same = [np.array_equal(a.gather(), b) for a, b in ((p, Pr), (vx, Vx), (vy, Vy))]
        _all_ok(all(same) or f"p, vx, vy identical: {same}", "acoustic")
        for t in (p, vx, vy):
            t.free()
    finally:
        clear_stencil_cache()
        mesh.free()


# -- bad input: the same clear error on every process ---------------------------------------------

def _raises_everywhere(fn, match):
    try:
        fn()
    except ShardingError as e:
        ok = True if match in str(e) else f"wrong message: {e}"
    else:
        ok = "no error"
    _all_ok(ok, match)


def test_bad_input_raises_on_every_process():
    mesh = Mesh((-1,), comm=comm)
    s = Sharding(mesh, [[0]], halo_sizes=[1, 1])
    u = DistributedTensor.zeros((4 * comm.size, 3), s)
    v = DistributedTensor.zeros((4 * comm.size, 3), s)
    _raises_everywhere(lambda: apply_stencil(heat, v, u, 0.1, reads=[v]), "also read through its halos")
    _raises_everywhere(lambda: apply_stencil(heat, v, u, 0.1, reads=[DistributedTensor.zeros((4 * comm.size, 3), s)]),
                       "not among the kernel's arguments")
    other = DistributedTensor.zeros((4 * comm.size, 3), Sharding(mesh, [[0]], halo_sizes=[2, 2]))
    _raises_everywhere(lambda: apply_stencil(heat, v, other, 0.1, reads=[other]), "would name different global cells")
    _raises_everywhere(lambda: apply_stencil(heat, v, u, 0.1, reads=[u], boundary="zero"), "boundary")
    _raises_everywhere(lambda: apply_stencil(heat, v, u, 0.1, reads=[u], where=(slice(0, 4, 2),)), "step 2")
    # A Neumann mirror wider than the boundary shard: the sharding rule already forbids it
    # between shards, so only a single shard can be too narrow.
    t = DistributedTensor.zeros((2, 3), Sharding(Mesh((1, -1), comm=comm), [[0]], halo_sizes=[1, 3]))
    _raises_everywhere(lambda: fill_ghosts(t, Neumann()), "mirrors 3 cells")
    for x in (u, v, other):
        x.free()
    mesh.free()
