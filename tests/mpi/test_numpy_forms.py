"""The everyday numpy forms of a ported diagnostics/update script, each run on DistributedTensors
and on the numpy arrays they stand for, compared on the gathered result (issue 20's check).

Each form is ``f(np_namespace_args) -> value`` written once: ``a``, ``b`` (split differently), ``r``
(replicated), ``s`` (square), ``v``/``w`` (1-D) are tensors in the distributed run and numpy arrays in
the reference run; ``A`` is always numpy.  Shapes are uneven on the 2-D mesh (6x5 and 37x23).
"""

import operator

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Mesh, Sharding

MPI_NPROCS = (1, 2, 4)
comm = MPI.COMM_WORLD

FORMS = {
    # elementwise, mixed operands and broadcasting
    "a + b": lambda a, b, r, s, v, w, A: a + b, "a - r": lambda a, b, r, s, v, w, A: a - r,
    "a * A": lambda a, b, r, s, v, w, A: a * A, "a + A[0]": lambda a, b, r, s, v, w, A: a + A[0],
    "a * A[:, 2:3]": lambda a, b, r, s, v, w, A: a * A[:, 2:3], "A - a": lambda a, b, r, s, v, w, A: A - a,
    "a ** 2": lambda a, b, r, s, v, w, A: a ** 2, "-a": lambda a, b, r, s, v, w, A: -a,
    "abs(a)": lambda a, b, r, s, v, w, A: abs(a), "a / (b + 100)": lambda a, b, r, s, v, w, A: a / (b + 100),
    "a // 3": lambda a, b, r, s, v, w, A: a // 3, "a % 7": lambda a, b, r, s, v, w, A: a % 7,
    "np.exp(a / 100)": lambda a, b, r, s, v, w, A: np.exp(a / 100), "np.sqrt(abs(a))": lambda a, b, r, s, v, w, A: np.sqrt(abs(a)),
    "np.maximum(a, b)": lambda a, b, r, s, v, w, A: np.maximum(a, b), "np.minimum(a, 0)": lambda a, b, r, s, v, w, A: np.minimum(a, 0),
    "np.hypot(a, b)": lambda a, b, r, s, v, w, A: np.hypot(a, b), "np.arctan2(a, b)": lambda a, b, r, s, v, w, A: np.arctan2(a, b),
    "a > b": lambda a, b, r, s, v, w, A: a > b, "(a > 0) & (b < 0)": lambda a, b, r, s, v, w, A: (a > 0) & (b < 0),
    "np.isclose(a, a)": lambda a, b, r, s, v, w, A: np.isclose(a, a),
    "np.isclose(a, b, atol=1)": lambda a, b, r, s, v, w, A: np.isclose(a, b, atol=1),
    "np.where(a > 0, a, b)": lambda a, b, r, s, v, w, A: np.where(a > 0, a, b),
    "np.clip(a, -5, 5)": lambda a, b, r, s, v, w, A: np.clip(a, -5, 5),
    "a.astype(np.float32)": lambda a, b, r, s, v, w, A: a.astype(np.float32),
    "np.sign(a)": lambda a, b, r, s, v, w, A: np.sign(a), "np.floor(a)": lambda a, b, r, s, v, w, A: np.floor(a),
    "np.isnan(a)": lambda a, b, r, s, v, w, A: np.isnan(a), "a.T": lambda a, b, r, s, v, w, A: a.T,
    "a[1:-1, ::2]": lambda a, b, r, s, v, w, A: a[1:-1, ::2], "a[::-1]": lambda a, b, r, s, v, w, A: a[::-1],
    "a.reshape(-1)": lambda a, b, r, s, v, w, A: a.reshape(-1),
    "np.concatenate([a, b])": lambda a, b, r, s, v, w, A: np.concatenate([a, b]),
    "np.stack([a, b])": lambda a, b, r, s, v, w, A: np.stack([a, b]),
    "np.broadcast_to(v, (3,) + v.shape)": lambda a, b, r, s, v, w, A: np.broadcast_to(v, (3,) + v.shape),
    # 0-d values
    "float(a[1, 1])": lambda a, b, r, s, v, w, A: float(a[1, 1]), "a[1, 1].item()": lambda a, b, r, s, v, w, A: a[1, 1].item(),
    "bool(a[0, 0] == a[0, 0])": lambda a, b, r, s, v, w, A: bool(a[0, 0] == a[0, 0]),
    "int(a[2, 3] > 0)": lambda a, b, r, s, v, w, A: int(a[2, 3] > 0),
    "complex(a[0, 1])": lambda a, b, r, s, v, w, A: complex(a[0, 1]),
    "np.asarray(r)": lambda a, b, r, s, v, w, A: np.asarray(r),
    # reductions
    "np.sum(a)": lambda a, b, r, s, v, w, A: np.sum(a), "a.sum(axis=0)": lambda a, b, r, s, v, w, A: a.sum(axis=0),
    "np.sum(a, axis=(0, 1))": lambda a, b, r, s, v, w, A: np.sum(a, axis=(0, 1)),
    "np.sum(a, axis=1, keepdims=True)": lambda a, b, r, s, v, w, A: np.sum(a, axis=1, keepdims=True),
    # the method forms with numpy's keywords
    "a.max(axis=0, keepdims=True)": lambda a, b, r, s, v, w, A: a.max(axis=0, keepdims=True),
    "b.min(axis=1, keepdims=True)": lambda a, b, r, s, v, w, A: b.min(axis=1, keepdims=True),
    "a.sum(axis=(0, 1), keepdims=True)": lambda a, b, r, s, v, w, A: a.sum(axis=(0, 1), keepdims=True),
    "a.mean(axis=0, keepdims=True)": lambda a, b, r, s, v, w, A: a.mean(axis=0, keepdims=True),
    "a.prod(axis=1, keepdims=True)": lambda a, b, r, s, v, w, A: (a / 80).prod(axis=1, keepdims=True),
    "a.sum(axis=1, initial=3.0)": lambda a, b, r, s, v, w, A: a.sum(axis=1, initial=3.0),
    "np.mean(a)": lambda a, b, r, s, v, w, A: np.mean(a), "a.mean(axis=1)": lambda a, b, r, s, v, w, A: a.mean(axis=1),
    "np.mean(a, axis=(0, 1), keepdims=True)": lambda a, b, r, s, v, w, A: np.mean(a, axis=(0, 1), keepdims=True),
    "np.max(a)": lambda a, b, r, s, v, w, A: np.max(a), "np.min(a, axis=0)": lambda a, b, r, s, v, w, A: np.min(a, axis=0),
    "np.prod(a / 50 + 1)": lambda a, b, r, s, v, w, A: np.prod(a / 50 + 1),
    "np.any(a > 60)": lambda a, b, r, s, v, w, A: np.any(a > 60), "np.all(a > -100)": lambda a, b, r, s, v, w, A: np.all(a > -100),
    "np.any(a > 0, axis=0)": lambda a, b, r, s, v, w, A: np.any(a > 0, axis=0),
    "np.std(a)": lambda a, b, r, s, v, w, A: np.std(a), "np.var(a, ddof=1)": lambda a, b, r, s, v, w, A: np.var(a, ddof=1),
    "np.std(a, axis=0)": lambda a, b, r, s, v, w, A: np.std(a, axis=0),
    "np.argmax(a)": lambda a, b, r, s, v, w, A: np.argmax(a), "np.argmin(a)": lambda a, b, r, s, v, w, A: np.argmin(a),
    "np.argmax(a, axis=0)": lambda a, b, r, s, v, w, A: np.argmax(a, axis=0),
    "np.argmin(a, axis=1)": lambda a, b, r, s, v, w, A: np.argmin(a, axis=1),
    "np.nanmax(a)": lambda a, b, r, s, v, w, A: np.nanmax(a), "np.nansum(a)": lambda a, b, r, s, v, w, A: np.nansum(a),
    "np.nanmean(a, axis=0)": lambda a, b, r, s, v, w, A: np.nanmean(a, axis=0),
    "np.count_nonzero(a > 0)": lambda a, b, r, s, v, w, A: np.count_nonzero(a > 0),
    "np.average(a)": lambda a, b, r, s, v, w, A: np.average(a),
    "np.average(a, weights=abs(b))": lambda a, b, r, s, v, w, A: np.average(a, weights=abs(b)),
    "np.add.reduce(a)": lambda a, b, r, s, v, w, A: np.add.reduce(a),
    "np.maximum.reduce(a, axis=1)": lambda a, b, r, s, v, w, A: np.maximum.reduce(a, axis=1),
    "np.add.accumulate(a)": lambda a, b, r, s, v, w, A: np.add.accumulate(a),
    "np.cumsum(a, axis=1)": lambda a, b, r, s, v, w, A: np.cumsum(a, axis=1),
    "np.linalg.norm(a)": lambda a, b, r, s, v, w, A: np.linalg.norm(a),
    "np.allclose(a, a)": lambda a, b, r, s, v, w, A: np.allclose(a, a),
    "np.array_equal(a, b)": lambda a, b, r, s, v, w, A: np.array_equal(a, b),
    # shifts and differences
    "np.roll(a, 1, axis=0)": lambda a, b, r, s, v, w, A: np.roll(a, 1, axis=0),
    "np.roll(a, -2, axis=1)": lambda a, b, r, s, v, w, A: np.roll(a, -2, axis=1),
    "np.roll(a, 3)": lambda a, b, r, s, v, w, A: np.roll(a, 3),
    "np.diff(a, axis=0)": lambda a, b, r, s, v, w, A: np.diff(a, axis=0),
    "np.diff(a, n=2)": lambda a, b, r, s, v, w, A: np.diff(a, n=2),
    "np.gradient(a)": lambda a, b, r, s, v, w, A: np.gradient(a),
    "np.gradient(a, 0.1, edge_order=2)": lambda a, b, r, s, v, w, A: np.gradient(a, 0.1, edge_order=2),
    "np.flip(a)": lambda a, b, r, s, v, w, A: np.flip(a), "np.flip(a, axis=1)": lambda a, b, r, s, v, w, A: np.flip(a, axis=1),
    "np.pad(a, 1)": lambda a, b, r, s, v, w, A: np.pad(a, 1),
    "np.pad(a, 1, mode='edge')": lambda a, b, r, s, v, w, A: np.pad(a, 1, mode="edge"),
    "np.pad(a, 2, mode='wrap')": lambda a, b, r, s, v, w, A: np.pad(a, 2, mode="wrap"),
    "np.pad(a, 1, mode='reflect')": lambda a, b, r, s, v, w, A: np.pad(a, 1, mode="reflect"),
    # products and small linear algebra
    "np.vdot(v, w)": lambda a, b, r, s, v, w, A: np.vdot(v, w), "np.inner(v, w)": lambda a, b, r, s, v, w, A: np.inner(v, w),
    "np.outer(v, w)": lambda a, b, r, s, v, w, A: np.outer(v, w), "np.dot(v, w)": lambda a, b, r, s, v, w, A: np.dot(v, w),
    "np.inner(a, b)": lambda a, b, r, s, v, w, A: np.inner(a, b), "np.inner(a, v)": lambda a, b, r, s, v, w, A: np.inner(a, v),
    "np.inner(s, a)": lambda a, b, r, s, v, w, A: np.inner(s, a),
    "np.multiply.outer(a, v)": lambda a, b, r, s, v, w, A: np.multiply.outer(a, v),
    "np.subtract.outer(v, w)": lambda a, b, r, s, v, w, A: np.subtract.outer(v, w),
    "np.add.outer(A[0], b)": lambda a, b, r, s, v, w, A: np.add.outer(A[0], b),
    "np.maximum.outer(b, 0.5)": lambda a, b, r, s, v, w, A: np.maximum.outer(b, 0.5),
    "np.less.outer(w, a)": lambda a, b, r, s, v, w, A: np.less.outer(w, a),
    "np.trace(s)": lambda a, b, r, s, v, w, A: np.trace(s), "s @ v": lambda a, b, r, s, v, w, A: s @ v,
    "a @ a.T": lambda a, b, r, s, v, w, A: a @ a.T,
    "np.linalg.solve(s, v)": lambda a, b, r, s, v, w, A: np.linalg.solve(s, v),
    "np.linalg.inv(s)": lambda a, b, r, s, v, w, A: np.linalg.inv(s),
    "np.linalg.det(s)": lambda a, b, r, s, v, w, A: np.linalg.det(s),
    "np.linalg.eigh(s + s.T)[0]": lambda a, b, r, s, v, w, A: np.linalg.eigh(s + s.T)[0],
    "np.where(a > 0)": lambda a, b, r, s, v, w, A: np.where(a > 0)[1],
    "np.nonzero(a > 50)": lambda a, b, r, s, v, w, A: np.nonzero(a > 50)[0],
    "np.argwhere(a > 50)": lambda a, b, r, s, v, w, A: np.argwhere(a > 50),
    "np.sort(a, axis=1)": lambda a, b, r, s, v, w, A: np.sort(a, axis=1),
    "np.argsort(a, axis=1)": lambda a, b, r, s, v, w, A: np.argsort(a, axis=1, kind="stable"),
    "np.zeros_like(a)": lambda a, b, r, s, v, w, A: np.zeros_like(a),
    "np.full_like(a, 2)": lambda a, b, r, s, v, w, A: np.full_like(a, 2),
    "np.copy(a)": lambda a, b, r, s, v, w, A: np.copy(a),
    "len(a)": lambda a, b, r, s, v, w, A: len(a), "a.shape": lambda a, b, r, s, v, w, A: a.shape,
    "operator.index(a[0, 0] > 0)": lambda a, b, r, s, v, w, A: operator.index((a[0, 0] > 0).astype(np.int64)),
}


def _value(x):
    if isinstance(x, DT):
        return x.gather()
    if isinstance(x, tuple) and x and isinstance(x[0], DT):
        return tuple(y.gather() for y in x)
    return x


ERRORS = {
    # (form, exception type, words of the message): raised alike on every process
    "a.max(axis=0, keepdims=True, keep_partial=True)": (
        lambda a, v: a.max(axis=0, keepdims=True, keep_partial=True), TypeError, "keep_partial"),
    "a.max(out=...)": (lambda a, v: a.max(axis=0, out=a), TypeError, "out="),
    "np.inner(a, v[:-1])": (lambda a, v: np.inner(a, v[:-1]), ValueError, "not aligned"),
    "np.negative.outer(a, v)": (lambda a, v: np.negative.outer(a, v), (TypeError, ValueError), "outer"),
    "np.add.outer(a, v, where=False)": (lambda a, v: np.add.outer(a, v, where=False), TypeError, "where"),
    "np.subtract.reduce(a)": (lambda a, v: np.subtract.reduce(a), TypeError, "supported"),
}


@pytest.mark.parametrize("form", list(ERRORS))
def test_form_error_names_the_problem(grids, form):
    fn, exc, words = ERRORS[form]
    a = DT.from_global(np.arange(30.0).reshape(6, 5), Sharding(grids, [[0], [1]]))
    v = DT.from_global(np.arange(5.0), Sharding(grids, [[0]]))
    with pytest.raises(exc) as info:
        fn(a, v)
    assert words in str(info.value), (form, str(info.value))
    assert comm.allreduce(1) == comm.size  # every process raised and is here: no hang


@pytest.fixture(scope="module")
def grids():
    mesh = Mesh((-1, -1), comm=comm)
    yield mesh
    mesh.free()


@pytest.mark.parametrize("shape", [(6, 5), (37, 23)])
@pytest.mark.parametrize("form", list(FORMS))
def test_form_matches_numpy(grids, shape, form):
    mesh = grids
    rng = np.random.default_rng(7)
    A, B = rng.uniform(-80, 80, shape), rng.uniform(-80, 80, shape)
    S = rng.standard_normal((shape[1], shape[1])) + shape[1] * np.eye(shape[1])
    V, W = rng.standard_normal(shape[1]), rng.standard_normal(shape[1])
    split, other = Sharding(mesh, [[0], [1]]), Sharding(mesh, [[1], [0]], halo_sizes=[1, 1, 1, 1])
    ts = (DT.from_global(A, split), DT.from_global(B, other), DT.from_global(A, Sharding(mesh, [])),
          DT.from_global(S, split), DT.from_global(V, Sharding(mesh, [[0]])), DT.from_global(W, Sharding(mesh, [[1]])))
    got = _value(FORMS[form](*ts, A))
    want = FORMS[form](A, B, A, S, V, W, A)
    if isinstance(want, tuple) and not isinstance(got, tuple):
        got = tuple(got) if isinstance(got, list) else got
    if isinstance(want, (list, tuple)) and any(isinstance(x, np.ndarray) for x in want):
        assert len(got) == len(want), form
        for g, x in zip(got, want):
            np.testing.assert_allclose(_value(g), x, rtol=1e-9, atol=1e-9, err_msg=form)
        return
    assert type(got) is type(want) or isinstance(got, (np.ndarray, np.generic)), (form, type(got), type(want))
    assert np.shape(got) == np.shape(want) and np.asarray(got).dtype == np.asarray(want).dtype, \
        (form, np.shape(got), np.shape(want), np.asarray(got).dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9, err_msg=form)


def test_there_are_more_than_a_hundred_forms():
    assert len(FORMS) >= 105, len(FORMS)


def test_blockwise_forms_of_halo_and_partial_tensors():
    """The forms that keep each block (``np.round``, ``np.real``, ``np.triu``, a histogram, ``np.cross``) on a
    tensor with halos or partial values: their result's sharding drops the halos and the partial axes (it
    made every mesh axis partial before, which the split axes refuse)."""
    mesh = Mesh((-1,))
    g = np.random.default_rng(8).random((comm.size * 2 + 3, 3)) * 10
    for t in (DT.from_global(g, Sharding(mesh, [[0]], halo_sizes=[1, 1])),
              DT.from_global(g, Sharding(mesh, [])).reshard(Sharding(mesh, [], partial_axes=[0]))):
        np.testing.assert_array_equal(np.round(t, 1).gather(), np.round(g, 1))
        np.testing.assert_array_equal(np.real(t).gather(), g)
        np.testing.assert_array_equal(np.triu(t).gather(), np.triu(g))
        np.testing.assert_array_equal(np.histogram(t, bins=4)[0], np.histogram(g, bins=4)[0])
        np.testing.assert_allclose(np.cross(t, t * 2.0).gather(), np.cross(g, g * 2.0), atol=1e-12)
    mesh.free()
