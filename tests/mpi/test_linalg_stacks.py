"""A stack of matrices split on its stack dims (the matrices whole on every process): ``np.linalg.*`` and the
array API's ``linalg`` functions run numpy on each process's matrices, nothing gathered or moved; results
split like the stack, equal to numpy at every process count; a singular matrix anywhere in the stack raises
``LinAlgError`` on every process alike."""

import numpy as np
import pytest
from mpi4py import MPI

import meshrt.array_api as xp
from meshrt import DistributedTensor as DT, Sharding

# (up to 4: their numpy per block is the same at 8 oversubscribed processes, where they took 45 s of CI)
MPI_NPROCS = (1, 2, 3, 4)

comm = MPI.COMM_WORLD


def _stack(rng, k, n, dtype=np.float64):
    g = rng.random((k, n, n)).astype(dtype)
    if np.dtype(dtype).kind == "c":
        g = g + 1j * rng.random((k, n, n))
    return (g @ np.conj(np.swapaxes(g, -1, -2)) + n * np.eye(n)).astype(dtype)


def _same(got, want, name):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for a, b in zip(got, want):
        assert isinstance(a, DT), name
        np.testing.assert_allclose(a.gather(), b, rtol=1e-9, atol=1e-10, err_msg=name)


def _layouts(meshes, kind, k, n):
    uneven = [0] + [min(k, 2 * i + 1) for i in range(1, comm.size)] + [k]
    if kind == "stack":  # the stack dims split: numpy per process
        return [Sharding(meshes["1d"], [[0]]), Sharding(meshes["2d"], [[0, 1]]),
                Sharding(meshes["1d"], [[0]], sharded_dims_offsets=uneven)]
    rows = [0] + [min(n, i * (n // comm.size) + 1) for i in range(1, comm.size)] + [n]  # the first block longer
    return [Sharding(meshes["1d"], [[], [0]]), Sharding(meshes["1d"], [[], [], [0]]),  # the matrices split
            Sharding(meshes["2d"], [[], [0], [1]]), Sharding(meshes["2d"], [[0], [1]]),  # (and the stack too)
            Sharding(meshes["1d"], [[], [0]], sharded_dims_offsets=rows)]


@pytest.mark.parametrize("kind", ["stack", "matrices"])
@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_stack_functions_equal_numpy_and_gather_nothing(meshes, dtype, kind):
    """Split on the stack dims: numpy on each process's matrices. Split on the matrices' dims: the
    distributed form on each matrix in turn (the stack's own mesh axes, if any, moved onto the rows).
    Either way nothing is gathered, and a result shaped like the stack is split like it."""
    rng = np.random.default_rng(12)
    k, n = (comm.size * 2 + 1, 4) if kind == "stack" else (3, 2 * comm.size + 3)
    g, b = _stack(rng, k, n, dtype), rng.random((k, n, 2)).astype(dtype)
    for s in _layouts(meshes, kind, k, n):
        X, B = DT.from_global(g, s), DT.from_global(b, s)
        xp.GATHERS.clear()
        cases = {
            "inv": (np.linalg.inv(X), np.linalg.inv(g)), "det": (np.linalg.det(X), np.linalg.det(g)),
            "slogdet": (tuple(np.linalg.slogdet(X)), tuple(np.linalg.slogdet(g))),
            "solve": (np.linalg.solve(X, B), np.linalg.solve(g, b)),
            "matrix_power": (np.linalg.matrix_power(X, 3), np.linalg.matrix_power(g, 3)),
            "cholesky": (np.linalg.cholesky(X), np.linalg.cholesky(g)),
            "eigvalsh": (np.linalg.eigvalsh(X), np.linalg.eigvalsh(g)),
            "svdvals": (np.linalg.svd(X, compute_uv=False), np.linalg.svd(g, compute_uv=False)),
            "pinv": (np.linalg.pinv(X), np.linalg.pinv(g)),
            "matrix_rank": (np.linalg.matrix_rank(X), np.linalg.matrix_rank(g)),
            "diagonal": (np.linalg.diagonal(X, offset=1), np.linalg.diagonal(g, offset=1)),
            "qr r": (abs(np.linalg.qr(X, mode="r")), abs(np.linalg.qr(g, mode="r"))),  # (rows: up to a sign)
            "xp.inv": (xp.linalg.inv(X), np.linalg.inv(g)), "xp.det": (xp.linalg.det(X), np.linalg.det(g)),
            "xp.solve": (xp.linalg.solve(X, B), np.linalg.solve(g, b)),
            "xp.cholesky": (xp.linalg.cholesky(X, upper=True), np.linalg.cholesky(g, upper=True)),
            "xp.trace": (xp.linalg.trace(X), np.linalg.trace(g)),
            "xp.matrix_norm": (xp.linalg.matrix_norm(X, ord="nuc"), np.linalg.matrix_norm(g, ord="nuc")),
            "xp.svdvals": (xp.linalg.svdvals(X), np.linalg.svdvals(g)),
            "xp.eigvalsh": (xp.linalg.eigvalsh(X), np.linalg.eigvalsh(g)),
            "xp.diagonal": (xp.linalg.diagonal(X), np.linalg.diagonal(g)),
            "xp.pinv": (xp.linalg.pinv(X), np.linalg.pinv(g)),
            "xp.matrix_rank": (xp.linalg.matrix_rank(X), np.linalg.matrix_rank(g)),
        }
        for name, (got, want) in cases.items():
            _same(got, want, name)
            first = got[0] if isinstance(got, tuple) else got
            if kind == "stack":
                assert first.sharding.dim_axes(0) == s.dim_axes(0), name  # split like the stack
            elif first.shape == X.shape and any(first.sharding.split_axes):  # (TSQR's R: replicated)
                assert first.sharding == s, name
        w, v = np.linalg.eigh(X)
        np.testing.assert_allclose(np.abs(np.einsum("kij,kij->kj", np.conj(v.gather()), np.linalg.eigh(g)[1])),
                                   1.0, rtol=1e-8)
        q, r = xp.linalg.qr(X)
        np.testing.assert_allclose(q.gather() @ r.gather(), g, rtol=1e-10, atol=1e-10)
        u, sv, vh = xp.linalg.svd(X, full_matrices=False)
        np.testing.assert_allclose((u.gather() * sv.gather()[:, None, :]) @ vh.gather(), g, atol=1e-10)
        assert not xp.GATHERS, xp.GATHERS


def test_a_singular_matrix_anywhere_raises_everywhere(meshes):
    k = comm.size * 2 + 1
    g = np.tile(np.eye(3), (k, 1, 1))
    g[k - 1] = 0.0  # on the last process only
    X = DT.from_global(g, Sharding(meshes["1d"], [[0]]))
    with pytest.raises(np.linalg.LinAlgError, match="rank"):
        np.linalg.inv(X)
    with pytest.raises(np.linalg.LinAlgError):
        xp.linalg.cholesky(X)
    np.testing.assert_array_equal(np.linalg.det(X).gather(), np.linalg.det(g))  # (no error: a zero)


def test_a_singular_split_matrix_raises_everywhere(meshes):
    """A stack split on the matrices' dims: the distributed algorithms raise on every process for the one
    singular (or not positive definite) matrix of the stack."""
    n = 2 * comm.size + 2
    g = np.tile(np.eye(n), (3, 1, 1))
    g[1, -1, -1] = 0.0
    X = DT.from_global(g, Sharding(meshes["1d"], [[], [0]]))
    with pytest.raises(np.linalg.LinAlgError, match="Singular"):
        np.linalg.inv(X)
    with pytest.raises(np.linalg.LinAlgError, match="positive definite"):
        xp.linalg.cholesky(X)
    np.testing.assert_array_equal(np.linalg.det(X).gather(), [1.0, 0.0, 1.0])


def test_explain_op_says_how_a_stack_runs(meshes):
    import meshrt

    g = np.tile(np.eye(8), (3, 1, 1))
    each = meshrt.explain_op(np.linalg.inv, DT.from_global(g, Sharding(meshes["1d"], [[], [0]])))
    assert not each.gathers and "each of the 3 matrices in turn" in str(each) and "LU" in str(each)
    local = meshrt.explain_op(np.linalg.eigh, DT.from_global(g, Sharding(meshes["1d"], [[0]])))
    assert not local.gathers and "numpy on each process's matrices" in str(local)
