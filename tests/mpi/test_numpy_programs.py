"""Small numpy programs of the kinds people run (stencils, a cavity and a channel flow, dense kernels, a
network layer, n-body, histograms), each written once in plain numpy and run unchanged twice: on numpy
arrays, and on DistributedTensors split on dim 0 over all processes (uneven at 3).  The gathered results
must equal numpy's (to a different summation order).  Issue 48's idioms: broadcasting to a shape no
operand has, index arrays and masks that are tensors, 0-d tensors as values, numpy functions in passing.
"""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Mesh, Sharding, ShardingError

MPI_NPROCS = (1, 2, 3)
comm = MPI.COMM_WORLD


# -- the programs: plain numpy, nothing meshrt-specific -------------------------------------------------
def jacobi(u, steps=6):
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def hdiff(u):
    """A weather-model horizontal diffusion: laplacian, fluxes limited with np.where, update."""
    lap = 4.0 * u[1:-1, 1:-1] - (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2])
    flx = lap[1:, 1:-1] - lap[:-1, 1:-1]
    flx = np.where(flx * (u[2:-1, 2:-2] - u[1:-2, 2:-2]) > 0, 0.0, flx)
    fly = lap[1:-1, 1:] - lap[1:-1, :-1]
    fly = np.where(fly * (u[2:-2, 2:-1] - u[2:-2, 1:-2]) > 0, 0.0, fly)
    out = u.copy()
    out[2:-2, 2:-2] = u[2:-2, 2:-2] - 0.1 * (flx[1:, :] - flx[:-1, :] + fly[:, 1:] - fly[:, :-1])
    return out


def cavity(u, v, p, nt=3, nit=6):
    ny, nx = u.shape
    dx, dy, rho, nu, dt = 2 / (nx - 1), 2 / (ny - 1), 1.0, 0.1, 0.001
    b = np.zeros_like(u)
    for _ in range(nt):
        un, vn = u.copy(), v.copy()
        b[1:-1, 1:-1] = rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, :-2]) / (2 * dx) + (v[2:, 1:-1] - v[:-2, 1:-1]) / (2 * dy))
                               - ((u[1:-1, 2:] - u[1:-1, :-2]) / (2 * dx)) ** 2
                               - 2 * ((u[2:, 1:-1] - u[:-2, 1:-1]) / (2 * dy) * (v[1:-1, 2:] - v[1:-1, :-2]) / (2 * dx))
                               - ((v[2:, 1:-1] - v[:-2, 1:-1]) / (2 * dy)) ** 2)
        for _ in range(nit):
            pn = p.copy()
            p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, :-2]) * dy ** 2 + (pn[2:, 1:-1] + pn[:-2, 1:-1]) * dx ** 2)
                             / (2 * (dx ** 2 + dy ** 2)) - dx ** 2 * dy ** 2 / (2 * (dx ** 2 + dy ** 2)) * b[1:-1, 1:-1])
            p[:, -1] = p[:, -2]
            p[0, :] = p[1, :]
            p[:, 0] = p[:, 1]
            p[-1, :] = 0
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx * (un[1:-1, 1:-1] - un[1:-1, :-2])
                         - vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[:-2, 1:-1])
                         - dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, :-2])
                         + nu * (dt / dx ** 2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, :-2])
                                 + dt / dy ** 2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[:-2, 1:-1])))
        v[1:-1, 1:-1] = (vn[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx * (vn[1:-1, 1:-1] - vn[1:-1, :-2])
                         - vn[1:-1, 1:-1] * dt / dy * (vn[1:-1, 1:-1] - vn[:-2, 1:-1])
                         - dt / (2 * rho * dy) * (p[2:, 1:-1] - p[:-2, 1:-1]))
        u[0, :], u[:, 0], u[:, -1], u[-1, :] = 0, 0, 0, 1
        v[0, :], v[-1, :], v[:, 0], v[:, -1] = 0, 0, 0, 0
    return u, v, p


def channel(u, v, p):
    """A channel flow whose loop stops on a residual computed from reductions (0-d values in Python)."""
    dx = dy = 0.1
    dt, rho, nu, F = 0.001, 1.0, 0.1, 1.0
    udiff, it = 1.0, 0
    while udiff > 1e-9 and it < 4:
        un, vn = u.copy(), v.copy()
        p[1:-1, -1] = 0.5 * (p[1:-1, 0] + p[1:-1, -2])
        u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx * (un[1:-1, 1:-1] - un[1:-1, :-2])
                         - vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[:-2, 1:-1])
                         - dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, :-2])
                         + nu * dt / dx ** 2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, :-2]) + F * dt)
        u[1:-1, -1] = un[1:-1, -1] - un[1:-1, -1] * dt / dx * (un[1:-1, -1] - un[1:-1, -2])
        u[0, :], u[-1, :] = 0, 0
        v[0, :], v[-1, :] = 0, 0
        u[:, 0] = u[:, 1].max()  # a 0-d tensor assigned to a column
        udiff = (np.sum(u) - np.sum(un)) / np.sum(u)
        it += 1
    return u, v, p, np.array(it)


def dense_kernels(A, B, C, x):
    """gemm, atax, syrk, a Cholesky factor of a made-SPD matrix, covariance and correlation."""
    C = 1.5 * (A @ B) + 1.2 * C
    y = A.T @ (A @ x)
    S = A @ A.T + A.shape[0] * np.eye(A.shape[0])
    L = np.linalg.cholesky(S)
    return C, y, L, np.cov(A), np.corrcoef(A.T), np.cov(A, rowvar=False, bias=True)


def layer(x, W, bias):
    """dense + relu + layer norm + softmax, with the keepdims reductions written as numpy functions."""
    h = np.maximum(x @ W + bias, 0.0)
    h = (h - np.mean(h, axis=-1, keepdims=True)) / np.sqrt(h.var(axis=-1, keepdims=True) + 1e-5)
    e = np.exp(h - np.max(h, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def nbody(pos, vel, mass, steps=3):
    G, soft, dt = 1.0, 0.1, 0.01
    for _ in range(steps):
        x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
        dx, dy, dz = x.T - x, y.T - y, z.T - z  # (1, n) - (n, 1): a shape no operand has
        inv_r3 = (dx ** 2 + dy ** 2 + dz ** 2 + soft ** 2) ** (-1.5)
        acc = np.hstack((G * (dx * inv_r3) @ mass, G * (dy * inv_r3) @ mass, G * (dz * inv_r3) @ mass))
        vel += acc * dt
        pos += vel * dt
    return pos, vel


def pairwise(x):
    d = x[:, None, :] - x[None, :, :]
    return np.sqrt((d ** 2).sum(axis=-1)), np.abs(x[:, 0][:, None] - x[:, 0][None, :])


def conv_windows(a, w):
    """A 5-D window product (8, 2, 2, 3, 1) * (1, 2, 2, 3, 16) reduced over the window."""
    return (a[:, :, :, :, None] * w).sum(axis=(1, 2, 3))


def histograms(x, y):
    h, e = np.histogram(x, bins=10, range=(0.0, 1.0))
    h2, e2 = np.histogram(x, bins=7)
    hd, _ = np.histogram(x, bins=np.array([0.0, 0.1, 0.5, 0.55, 1.0]), density=True)
    hw, _ = np.histogram(x, bins=5, weights=y)
    ha, ea = np.histogram(x, bins="auto")
    H = np.histogram2d(x, y, bins=5, range=[[0, 1], [0, 1]])[0]
    H2, xe, ye = np.histogram2d(x, y, bins=(3, 4), density=True)
    idx = (x * 10).astype(np.int64)
    return (h, e, h2, e2, hd, hw, ha, ea, H, H2, xe, ye, np.bincount(idx), np.bincount(idx, weights=y, minlength=14))


def masks_and_indices(x, A, idx):
    """Masks and index arrays that are themselves arrays of the program (tensors in the distributed run)."""
    big = x[x > 0.5]
    picked = x[idx]
    x2 = x.copy()
    x2[x2 > 0.7] = 0.0
    x2[idx] = -1.0
    x2[np.array([0, 2])] = x2[5]  # a 0-d value
    cols = A[:, np.array([2, 0, 1])]
    rows = A[A[:, 0] > 0.3]
    i = np.argmax(x)  # a 0-d integer as an index
    A2 = A.copy()
    A2[0, :] = A2[2, 3]  # a 0-d tensor assigned to a row
    A2[1:3, :] = A2[4, :]  # a row broadcast to two
    A2[A2 < 0.2] = A2.sum() / A2.size
    return big, picked, x2, cols, rows, x[i], A2, A * A[3, 3] + A[1, 1]


def in_passing(A, v):
    """numpy functions and ndarray methods that programs call on their arrays in passing."""
    r = np.ravel(A)
    with np.errstate(invalid="ignore"):
        logs = np.log(A - 0.5)
    out = [np.shape(A), np.ndim(A), np.size(A), np.size(A, 1), np.iscomplexobj(A), np.isrealobj(A),
           np.result_type(A, np.float32), r, A.ravel(), A.flatten(), np.squeeze(A[:, 1:2]), np.expand_dims(v, 1),
           np.round(A * 10, 1), np.nan_to_num(logs), np.triu(A), np.tril(A, -1), np.ptp(A), np.ptp(A, axis=0),
           np.cumprod(v / 2 + 0.75), np.trapezoid(v), np.trapezoid(A, dx=0.5, axis=0), np.diag(v), np.diag(v, 2),
           np.diag(v, -1), np.diag(A[:4, :4]), np.diag(A, 1), A.item(3), A.item(1, 2), A.tolist(), A.T.dot(v)]
    B = A.copy()
    B.fill(2.0)
    z = np.real(v) + np.imag(v) + v.real + v.conj()
    arr = np.linspace(0.0, 1.0, v.shape[0])
    arr2 = arr.copy()
    arr2 += v  # a numpy target: the global result on every process
    return out + [B, z, np.add(arr, v) + np.multiply(v, arr), arr2, np.vstack([v, v]), np.column_stack([v, v])]


def gramschmidt(A):
    """Scalar steps: 1-D dots and 0-d values written into single elements."""
    m, n = A.shape
    Q = np.zeros_like(A); R = np.zeros((n, n), dtype=A.dtype)
    for k in range(n):
        nrm = np.dot(A[:, k], A[:, k])
        R[k, k] = np.sqrt(nrm)
        Q[:, k] = A[:, k] / R[k, k]
        for j in range(k + 1, n):
            R[k, j] = np.dot(Q[:, k], A[:, j])
            A[:, j] -= Q[:, k] * R[k, j]
    return Q, R

def trisolv(L, b):
    """A recurrence: each step reads the rows solved before it."""
    x = np.zeros_like(b)
    for i in range(x.shape[0]):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x

def lu(A):
    """An LU factorization, element by element."""
    N = A.shape[0]
    for i in range(N):
        for j in range(i):
            A[i, j] -= A[i, :j] @ A[:j, j]
            A[i, j] /= A[j, j]
        for j in range(i, N):
            A[i, j] -= A[i, :i] @ A[:i, j]
    return A

def floyd(path):
    """Shortest paths: a column and a row broadcast against each other."""
    for k in range(path.shape[0]):
        path[:] = np.minimum(path[:], path[:, k][:, None] + path[k, :][None, :])
    return path

def nbody_energy(pos, vel, mass):
    """Energies with a masked reciprocal and np.triu."""
    KE = 0.5 * np.sum(np.sum(mass * vel ** 2))
    x, y, z = pos[:, 0:1], pos[:, 1:2], pos[:, 2:3]
    dx = x.T - x; dy = y.T - y; dz = z.T - z
    inv_r = np.sqrt(dx ** 2 + dy ** 2 + dz ** 2)
    inv_r[inv_r > 0] = 1.0 / inv_r[inv_r > 0]
    PE = np.sum(np.sum(np.triu(-(mass * mass.T) * inv_r, 1)))
    vel -= np.mean(mass * vel, 0) / np.mean(mass)
    return KE, PE, vel

def conv2d(inp, weights):
    """A convolution layer: 5-D window products into a numpy output array."""
    K = weights.shape[0]
    H_out = inp.shape[1] - K + 1
    W_out = inp.shape[2] - K + 1
    out = np.empty((inp.shape[0], H_out, W_out, weights.shape[3]), dtype=inp.dtype)
    for i in range(H_out):
        for j in range(W_out):
            out[:, i, j] = np.sum(inp[:, i:i + K, j:j + K, :, np.newaxis] * weights[np.newaxis, :, :, :], axis=(1, 2, 3))
    return out

# -- running them twice ------------------------------------------------------------------------------------
ROWS = [None]


def rows():
    if ROWS[0] is None:
        ROWS[0] = Sharding(Mesh((-1,)), [[0]])
    return ROWS[0]


def tensors(*arrays):
    return [DT.from_global(a, rows()) if isinstance(a, np.ndarray) else a for a in arrays]


def as_numpy(x):
    if isinstance(x, (tuple, list)):
        return [as_numpy(y) for y in x]
    return x.gather() if isinstance(x, DT) else x


def assert_equal_tree(got, want, path="result"):
    if isinstance(want, (tuple, list)) and not isinstance(got, np.ndarray):
        assert len(got) == len(want), path
        for i, (g, w) in enumerate(zip(got, want)):
            assert_equal_tree(g, w, f"{path}[{i}]")
        return
    if isinstance(want, np.dtype):
        assert got == want, f"{path}: {got} != {want}"
        return
    g, w = np.asarray(got), np.asarray(want)
    assert g.shape == w.shape, f"{path}: shape {g.shape}, numpy's {w.shape}"
    assert np.allclose(g, w, rtol=1e-10, atol=1e-12, equal_nan=True), f"{path}: {g} != {w}"


def run_both(program, *arrays, numpy_args=()):
    want = program(*[a.copy() for a in arrays], *numpy_args)
    got = program(*tensors(*[a.copy() for a in arrays]), *numpy_args)
    assert_equal_tree(as_numpy(got), want)
    return got


rng = np.random.default_rng(48)


def test_stencils():
    run_both(jacobi, rng.random((17, 13)))
    run_both(hdiff, rng.random((16, 11)))


def test_cavity_flow():
    run_both(cavity, np.zeros((21, 21)), np.zeros((21, 21)), np.zeros((21, 21)))


def test_channel_flow():
    run_both(channel, rng.random((13, 11)), rng.random((13, 11)), rng.random((13, 11)))


def test_dense_kernels():
    run_both(dense_kernels, rng.random((7, 5)), rng.random((5, 6)), rng.random((7, 6)), rng.random(5))


def test_scalar_step_kernels():
    spd = rng.random((6, 6))
    run_both(gramschmidt, rng.random((7, 5)))
    run_both(trisolv, np.tril(rng.random((6, 6))) + np.eye(6), rng.random(6))
    run_both(lu, spd @ spd.T + 6 * np.eye(6))
    run_both(floyd, rng.random((6, 6)))
    run_both(nbody_energy, rng.random((9, 3)), rng.random((9, 3)), rng.random((9, 1)))


def test_conv_layer():
    run_both(conv2d, rng.random((2, 6, 6, 3)), rng.random((3, 3, 3, 4)))


def test_layer():
    run_both(layer, rng.random((10, 6)) - 0.3, rng.random((6, 5)), rng.random(5))


def test_nbody_and_pairwise():
    run_both(nbody, rng.random((11, 3)), rng.random((11, 3)) * 0.1, rng.random((11, 1)))
    run_both(pairwise, rng.random((9, 3)))
    run_both(conv_windows, rng.random((8, 2, 2, 3)), rng.random((1, 2, 2, 3, 16)))


def test_histograms():
    got = run_both(histograms, rng.random(101), rng.random(101))
    assert all(isinstance(g, np.ndarray) for g in got)  # counts come back as numpy's, the same everywhere
    assert comm.allgather(got[0].tolist()) == [got[0].tolist()] * comm.size


def test_masks_and_index_arrays():
    x, A = rng.random(21), rng.random((6, 5))
    run_both(masks_and_indices, x, A, np.array([3, 1, 20, 7, 7, 0]))  # idx a tensor in the distributed run
    run_both(masks_and_indices, x, A, numpy_args=(np.array([-1, 4]),))  # and a numpy array


def test_mask_selection_is_local_and_uneven():
    x = rng.random(23)
    t = DT.from_global(x, rows())
    sel = t[t > 0.5]
    mine = x[t.shard_slices[0]]
    assert np.array_equal(sel.interior, mine[mine > 0.5])  # each process kept its own elements
    assert np.array_equal(sel.gather(), x[x > 0.5])


def test_partial_0d_tensors_as_operands_values_and_indices():
    g = np.arange(12.0).reshape(6, 2)
    A = DT.from_global(g, rows())
    p = DT.from_global(g.ravel(), rows()).sum(axis=0, keep_partial=True)  # 0-d, partial over the split axis
    assert p.shape == () and p.sharding.is_partial
    total = g.sum()
    assert np.allclose((A * p).gather(), g * total) and np.allclose((p + A).gather(), g + total)
    B = A.copy()
    B[0, :] = p
    B[B > 50] = p
    want = g.copy()
    want[0, :] = total
    want[want > 50] = total
    assert np.array_equal(B.gather(), want)
    i = DT.from_global(np.arange(6), rows())[2]  # a 0-d integer tensor as an index
    assert np.array_equal(A[i].gather(), g[2]) and np.array_equal(A[i, i - 1].gather(), g[2, 1])


def test_functions_in_passing():
    run_both(in_passing, rng.random((6, 5)) + 0.1, rng.random(6))


def test_broadcast_plan_is_explained():
    from meshrt import explain_op

    x = DT.from_global(rng.random(9), rows())
    text = str(explain_op(np.subtract, x[:, None], x[None, :]))
    assert "elementwise result (9, 9)" in text and "operand 0: tensor (9, 1)" in text
    assert "operand 1: tensor (1, 9) <shard.sharding @mesh split_axes = [[], [0]]>: resharded to " \
           "<shard.sharding @mesh split_axes = [[]]>" in text  # the smaller row made whole, x[:, None] kept
    assert text.endswith("elements moved between processes: 0") == (comm.size == 1)


def test_errors_raise_on_every_process():
    x = DT.from_global(rng.random(12), rows())
    with pytest.raises(ValueError, match="no negative elements"):
        np.bincount((x * 10).astype(np.int64) - 30)
    with pytest.raises(ValueError, match="autodetected range of .* is not finite"), np.errstate(divide="ignore"):
        np.histogram(x / (x - x), bins=3)
    with pytest.raises(IndexError, match="out of bounds"):
        x[np.array([0, 12])]
    with pytest.raises(ValueError, match="shape mismatch|cannot be broadcast|could not broadcast|NumPy boolean"):
        x[x > 0.5] = np.ones(100)
    with pytest.raises(ShardingError, match="cannot be assigned to a selection"):
        x[:4] = DT.from_global(np.ones(3), rows())
    with pytest.raises(TypeError, match="np.median is not supported on a DistributedTensor"):
        np.median(x)


def test_element_reads_and_1d_dots_by_their_fast_paths():
    from meshrt.tensor import fastpath

    m2 = Mesh((-1, -1))
    g = rng.random((7, 5))
    dots = fastpath.stats["vector_dots"]
    try:
        for s in (Sharding(m2, [[0]]), Sharding(m2, [[1], [0]]), Sharding(m2, [[0, 1]]), Sharding(m2, []),
                  Sharding(m2, [[0]], halo_sizes=[1, 1])):
            t = DT.from_global(g, s)
            for _ in range(2):  # the second read of each key by the kept plan
                for i, j in ((0, 0), (6, 4), (-1, -2), (3, 1)):
                    e = t[i, j]
                    assert e.shape == () and float(e) == g[i, j] and not any(e.sharding.split_axes)
            t[3, 1] = -5.0  # a write after the plan is kept is read back
            assert float(t[3, 1]) == -5.0 and int(t[3, 1] < 0) == 1
            v = t.reshape(-1)
            w = DT.from_global(g.ravel()[::-1].copy(), v.sharding)
            gv = t.gather().ravel()
            for _ in range(3):
                assert np.isclose(float(np.dot(v, w)), np.dot(gv, g.ravel()[::-1]))
        # (matmul_1d, dot_1d: no plan; counted, as their caches need not fill: vectors split alike compare
        # where their blocks are)
        assert fastpath.stats["vector_dots"] >= dots + 15, "1-D dots went the general way"
        assert fastpath._READS, "element reads went the general way"
    finally:
        m2.free()
