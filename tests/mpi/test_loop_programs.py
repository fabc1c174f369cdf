"""Loop programs as numpy users write them (issue 53; `meshrt.bench.loops`): a triangular solve, Cholesky
and LU by rows and by slices, Gram-Schmidt, Levinson-Durbin, a CRC-16 scalar loop, a trace by index, a row
recurrence and conjugate gradient iterations, run unchanged on tensors split on dim 0, equal numpy's results
at any process count (small sizes; `bench/bench_loops.py` times them).
"""

import bisect

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Mesh, Sharding
from meshrt.bench.loops import PROGRAMS, cholesky_rows, lu_rows

MPI_NPROCS = (1, 2, 3, 4)
comm = MPI.COMM_WORLD


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_loop_program_equals_numpy(name, meshes):
    p = PROGRAMS[name]
    g = p.make(p.small, np.random.default_rng(53))
    want = p.run(**{k: v.copy() if isinstance(v, np.ndarray) else v for k, v in g.items()})
    s = Sharding(meshes["1d"], [[0]])
    got = p.run(**{k: DT.from_global(v, s) if k in p.split else v for k, v in g.items()})
    for a, b in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
        a = a.gather() if isinstance(a, DT) else a
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=name)
        everyone = comm.allgather(np.asarray(a))
        assert all(np.array_equal(x, everyone[0]) for x in everyone), name


def test_dots_with_a_numpy_operand(meshes):
    """A row, a view or a vector of a tensor times a plain numpy vector (``A[i, :j] @ y[:j]``,
    ``np.dot(x, y)``, an update ``A[i, j] -= A[i, :j] @ y[:j]``): numpy's values, alike on every process
    (the numpy operand is no deferred slice of a tensor: it is read as the value it is)."""
    rng = np.random.default_rng(11)
    g = rng.random((comm.size * 2 + 3, 5))
    y = rng.random(5)
    v = rng.random(comm.size * 3 + 1)
    w = rng.random(v.size)
    A = DT.from_global(g, Sharding(meshes["1d"], [[0]]))
    a = g.copy()
    for i in range(g.shape[0]):
        for j in range(1, 5):
            assert float(A[i, :j] @ y[:j]) == pytest.approx(a[i, :j] @ y[:j], rel=1e-13)
            assert float(np.dot(A[i, :j], y[:j])) == pytest.approx(np.dot(a[i, :j], y[:j]), rel=1e-13)
            A[i, j] -= A[i, :j] @ y[:j]
            a[i, j] -= a[i, :j] @ y[:j]
    np.testing.assert_allclose(A.gather(), a, rtol=1e-13)
    x = DT.from_global(v, Sharding(meshes["1d"], [[0]]))
    for got, want in ((np.dot(x, w), np.dot(v, w)), (x @ w, v @ w), (np.dot(x[1:], w[1:]), np.dot(v[1:], w[1:]))):
        assert float(got) == pytest.approx(want, rel=1e-13)
    assert len(set(comm.allgather(float(np.dot(x, w))))) == 1


def test_pieces_vector_products_and_element_writes(meshes):
    """The cheap routes the loops take (`meshrt.tensor.fastpath`): an element's owner by arithmetic (reads
    and writes at every index, negative ones too), ``A[i, :j]``/``A[i]`` from the owner, ``x @ y`` and
    ``np.dot`` of vectors laid out alike or not (views, flips, replicated), each equal to numpy."""
    rng = np.random.default_rng(7)
    g = rng.random((comm.size * 3 + 2, 6))
    v = rng.random(comm.size * 4 + 3)
    for s2 in (Sharding(meshes["1d"], [[0]]), Sharding(meshes["2d"], [[0], [1]]), Sharding(meshes["2d"], [[1]])):
        A = DT.from_global(g, s2)
        for i in range(-g.shape[0], g.shape[0]):
            assert float(A[i, i % 6 - 6]) == g[i, i % 6 - 6]
        a = g.copy()
        for i in range(g.shape[0]):
            A[i, (i * 5) % 6] = float(i)
            A[-i - 1, 1] = np.float64(i) * 0.5
            a[i, (i * 5) % 6] = float(i)
            a[-i - 1, 1] = i * 0.5
            A[i, 2] = A[i, 3]  # a 0-d tensor as the value
            a[i, 2] = a[i, 3]
        np.testing.assert_array_equal(A.gather(), a)
        if not any(s2.split_axes[1:] if len(s2.split_axes) > 1 else ()):
            for i in range(g.shape[0]):
                np.testing.assert_array_equal(A[i, :i % 6].gather(), a[i, :i % 6])
                np.testing.assert_array_equal(A[i].gather(), a[i])
    x = DT.from_global(v, Sharding(meshes["1d"], [[0]]))
    r = DT.from_global(v, Sharding(meshes["1d"], []))
    for k in range(1, len(v) + 1):
        np.testing.assert_allclose(float(x[:k] @ r[:k]), v[:k] @ v[:k])
        np.testing.assert_allclose(float(r[len(v) - k:] @ x[:k]), v[len(v) - k:] @ v[:k])
        np.testing.assert_allclose(float(np.dot(np.flip(x[:k]), x[:k])), np.dot(np.flip(v[:k]), v[:k]))
        np.testing.assert_allclose(float(x[1:k + 1] @ x[:k]) if k < len(v) else 0.0,
                                   v[1:k + 1] @ v[:k] if k < len(v) else 0.0)
    np.testing.assert_allclose(float(x @ x), v @ v)


def test_element_values_and_their_arithmetic(meshes):
    """``t[i, j]`` is a value, as numpy's: arithmetic on it (0-d tensors and scalars, by the 0-d route
    `meshrt.tensor.ufunc._scalar_ufunc`) equals numpy's scalars, in place too, and leaves ``t`` alone."""
    rng = np.random.default_rng(11)
    for dtype in (np.float64, np.float32, np.int64, np.complex128):
        g = (rng.random((comm.size + 3, 4)) * 10).astype(dtype)
        for s in (Sharding(meshes["1d"], [[0]]), Sharding(meshes["2d"], [[0], [1]])):
            A = DT.from_global(g, s)
            for i in range(g.shape[0]):
                x, y = A[i, i % 4], A[-i - 1, 1]
                x += 2  # a value: A unchanged
                want_x = g[i, i % 4] + dtype(2)
                for got, want in ((x, want_x), (x * y, want_x * g[-i - 1, 1]), (1.5 - x, 1.5 - want_x),
                                  (np.sqrt(x), np.sqrt(want_x)), (x > y, want_x > g[-i - 1, 1]),
                                  (-x / 3, -want_x / 3), (x ** 2, want_x ** 2)):
                    assert isinstance(got, DT) and got.shape == ()
                    assert got.dtype == np.asarray(want).dtype, (dtype, got.dtype, np.asarray(want).dtype)
                    np.testing.assert_allclose(np.asarray(got.gather()), want, rtol=1e-6)
            np.testing.assert_array_equal(A.gather(), g)
    # 0-d tensors of different shardings (one per mesh) still combine the general way
    a = DT.from_global(np.arange(4.0), Sharding(meshes["1d"], [[0]]))[1]
    b = DT.from_global(np.arange(4.0), Sharding(meshes["2d"], [[0]]))[2]
    assert float(a + 1.0) == 2.0 and float(b * 2) == 4.0


def _same_value(got, want):
    """``got`` a 0-d tensor holding ``want`` (a numpy value) bit for bit, with its dtype."""
    assert isinstance(got, DT) and got.shape == (), type(got)
    v = np.asarray(got.gather())
    assert v.dtype == np.asarray(want).dtype, (v.dtype, np.asarray(want).dtype)
    assert v.tobytes() == np.asarray(want).tobytes(), (v, want)


def test_element_arithmetic_is_numpys_bit_for_bit(meshes):
    """The 0-d route computes real floating values on numpy's scalars (its scalar arithmetic for the
    operators, `ufunc._SCALAR_OPS`), complex ones by the ufunc: the same bits and dtypes as numpy's ufuncs on
    0-d arrays, with Python and numpy operands of other kinds on either side, in place too (a result of
    another dtype cast as ``out=`` casts, same_kind; a refused cast raises numpy's error)."""
    s = Sharding(meshes["1d"], [[0]])
    rng = np.random.default_rng(5)
    binary = (np.add, np.subtract, np.multiply, np.true_divide, np.less, np.less_equal, np.greater,
              np.greater_equal, np.equal, np.not_equal, np.power)
    unary = (np.negative, np.positive, np.absolute, np.tanh, np.sqrt)
    others = (2, 0.1, 1.5j, True, np.float32(0.3), np.float64(0.7), np.int16(3), np.complex64(1 - 2j))
    n = comm.size * 2 + 1
    for dtype in (np.float32, np.float64, np.float16, np.complex64, np.complex128):
        g = (rng.random(n) * 3 + 0.5).astype(dtype)
        if np.iscomplexobj(g):
            g = g + (1j * rng.random(n)).astype(dtype)
        t = DT.from_global(g, s)
        for i in (0, n - 1):
            x, want, j = t[i], np.asarray(g[i]), (i + 1) % n
            for u in unary:
                _same_value(u(x), u(want))
            for op in binary:
                for o in others + (t[j],):
                    w = np.asarray(g[j]) if isinstance(o, DT) else o
                    _same_value(op(x, o), op(want, w))
                    _same_value(op(o, x), op(w, want))
            for o in others:
                y, w = t[i], np.asarray(g[i]).copy()
                try:
                    np.subtract(w, o, out=w, casting="same_kind")
                except TypeError as e:
                    with pytest.raises(TypeError, match=str(e)[:30]):
                        y -= o
                else:
                    y -= o
                    _same_value(y, w)
        np.testing.assert_array_equal(t.gather(), g)  # values: t unchanged


def test_augmented_element_updates_of_other_dtypes(meshes):
    """``t[i, j] op= v`` on float32, float16 and complex tensors, with values of other kinds: the owners' update
    (numpy's scalar arithmetic where it keeps the dtype, else the ufunc casting same_kind) equals numpy's
    in-place ufunc on the element, bit for bit."""
    from meshrt.tensor import fastpath

    n = comm.size * 2 + 1
    rng = np.random.default_rng(8)
    for dtype in (np.float32, np.float16, np.complex64, np.complex128):
        g = (rng.random((n, 3)) + 1).astype(dtype)
        t = DT.from_global(g, Sharding(meshes["2d"], [[0], [1]]))
        before = fastpath.stats["owned_updates"]
        for i in range(n):
            for v in (0.1, np.float64(0.3), np.float32(1.7), 3, t[(i + 2) % n, 1]):
                w = np.asarray(g[(i + 2) % n, 1]) if isinstance(v, DT) else v
                e = g[i:i + 1, i % 3]
                for uf in (np.add, np.subtract, np.multiply, np.true_divide):
                    uf(e, w, out=e, casting="same_kind")
                t[i, i % 3] += v
                t[i, i % 3] -= v
                t[i, i % 3] *= v
                t[i, i % 3] /= v
        got = t.gather()
        assert got.dtype == g.dtype and got.tobytes() == g.tobytes(), dtype
        assert fastpath.stats["owned_updates"] - before == n * 5 * 4


def test_in_place_statements_on_views_and_small_regions(meshes):
    """``A[:, j] -= Q[:, k] * r``, ``v = A[2:5, 1]; v *= 2`` and ``t += e`` write the base tensor's region (a view
    stays a view of it, as numpy's), numpy on the blocks where every operand is read where it is written
    (`meshrt.tensor.lazy._local_write`), the fused or eager way otherwise (shifts across blocks); each equals
    numpy at every layout, and asking a deferred view its shape or dtype does not evaluate it."""
    from meshrt.tensor import lazy

    rng = np.random.default_rng(5)
    for s in (Sharding(meshes["1d"], [[0]]), Sharding(meshes["2d"], [[0], [1]]), Sharding(meshes["2d"], [[1]]),
              Sharding(meshes["1d"], [])):
        g, h = rng.random((comm.size * 2 + 3, 7)), rng.random((comm.size * 2 + 3, 7))
        A, Q = DT.from_global(g, s), DT.from_global(h, s)
        a, q = g.copy(), h.copy()
        before = lazy.stats["local_writes"]
        for k in range(3):
            r = A[k, k]
            for j in range(k + 1, 7):
                A[:, j] -= Q[:, k] * r
                a[:, j] -= q[:, k] * a[k, k]
            v = A[2:5, k]
            v *= 2.0
            a[2:5, k] *= 2.0
            np.testing.assert_allclose(v.gather(), a[2:5, k])
            A[1:, k] += A[:-1, k] * 0.5  # a shift along dim 0 (across blocks where dim 0 is split)
            a[1:, k] += a[:-1, k] * 0.5
            A += Q * 0.25
            a += q * 0.25
            w = A[:, 3]
            assert w.shape == (g.shape[0],) and w.dtype == np.float64 and w.ndim == 1
        np.testing.assert_allclose(A.gather(), a, rtol=1e-13)
        assert lazy.stats["local_writes"] > before


def test_small_vector_flips_are_replicated_and_combine_in_place(meshes):
    """``np.flip`` of a small split vector (or of a deferred slice of one) is one allgather, reversed on every
    process (`meshrt.tensor.fastpath.replicated_vector`), whatever the split (both axes of a 2-D mesh: the
    blocks in the group's order); combined with split views in place, equal to numpy."""
    rng = np.random.default_rng(9)
    v = rng.random(comm.size * 3 + 4)
    for s in (Sharding(meshes["1d"], [[0]]), Sharding(meshes["2d"], [[0, 1]]), Sharding(meshes["2d"], [[1, 0]]),
              Sharding(meshes["2d"], [[1]])):
        y = DT.from_global(v, s)
        w = v.copy()
        for k in range(1, len(v)):
            f = np.flip(y[:k])
            np.testing.assert_array_equal(f.gather(), np.flip(w[:k]))
            assert not any(f.sharding.split_axes)
            np.testing.assert_allclose(float(np.dot(np.flip(y[k:]), y[:len(v) - k])),
                                       np.dot(np.flip(w[k:]), w[:len(v) - k]))
            y[:k] += 0.25 * np.flip(y[:k])
            w[:k] += 0.25 * np.flip(w[:k])
        np.testing.assert_allclose(y.gather(), w, rtol=1e-13)
        np.testing.assert_array_equal(np.flip(y).gather(), np.flip(y.gather()))
        w = y.gather()
        for i in range(-len(v), len(v)):  # elements by their owner's arithmetic, the dim split over 1 or 2 axes
            assert float(y[i]) == w[i]


def test_small_writes_from_tensors_of_other_shapes_split_alike(meshes):
    """``x += alpha * P[1:-1, 1:-1]`` with ``P`` the padded (n + 2)^2 copy of an n^2 ``x``, and the reverse
    ``P[1:-1, 1:-1] = r + c * P[1:-1, 1:-1]``: numpy on the blocks wherever the regions' blocks sit on the
    same processes (`meshrt.tensor.lazy._blocks_alike`), the general way elsewhere; equal to numpy at every
    process count and layout, uneven blocks included."""
    from meshrt.tensor import lazy

    rng = np.random.default_rng(21)
    n = 2 * comm.size + 2
    mesh = meshes["1d"]
    for ps, xs in ((Sharding(mesh, [[0]]), Sharding(mesh, [[0]])),
                   (Sharding(mesh, [[0]], sharded_dims_offsets=[0] + [1 + 2 * k for k in range(1, comm.size)]
                             + [n + 2]), Sharding(mesh, [[0]])),
                   (Sharding(mesh, [[], [0]]), Sharding(mesh, [[], [0]]))):
        p, x, r = np.pad(rng.random((n, n)), 1), rng.random((n, n)), rng.random((n, n))
        P, X, R = DT.from_global(p, ps), DT.from_global(x, xs), DT.from_global(r, xs)
        before = lazy.stats["local_writes"]
        for it in range(3):
            X += 0.5 * P[1:-1, 1:-1]
            x += 0.5 * p[1:-1, 1:-1]
            P[1:-1, 1:-1] = R + 0.25 * P[1:-1, 1:-1]
            p[1:-1, 1:-1] = r + 0.25 * p[1:-1, 1:-1]
        np.testing.assert_allclose(X.gather(), x, rtol=1e-13)
        np.testing.assert_allclose(P.gather(), p, rtol=1e-13)
        if comm.size == 1:
            assert lazy.stats["local_writes"] - before == 6


def _numpy_updates(a, b, c):
    """The updates `test_augmented_element_updates_equal_numpy` runs, on numpy arrays or tensors alike."""
    n = a.shape[0]
    for i in range(n):
        for j in range(i):
            a[i, j] -= a[i, :j] @ a[j, :j]  # a 0-d tensor from elsewhere
            a[i, j] /= a[j, j]  # an element of another row
            a[-i - 1, j] *= 0.5
            a[i, -j - 1] += np.float32(0.25)  # a numpy scalar
            a[i, j] += 1  # a Python int
        b[i] -= float(i)
        b[i] //= 0.5  # (not one of + - * /: broadcast, then the tensor's operator)
        b[-i - 1] += b[i]
        c[i, i % c.shape[1]] += 3
        c[i, 0] *= True
    return a, b, c


def test_augmented_element_updates_equal_numpy(meshes):
    """``t[i, j] op= v`` on a split tensor (`meshrt.tensor.fastpath.OwnedElement`): the element's owners update
    it and nothing is broadcast for ``+ - * /`` with a scalar or a replicated 0-d value; other operators and
    values take the plain read.  1-, 2- and 3-d layouts, float64 and int64, equal numpy's."""
    from meshrt.tensor import fastpath

    rng = np.random.default_rng(11)
    n = comm.size * 2 + 3
    g = rng.random((n, n)) + np.eye(n) * n
    gb = rng.random(n)
    gc = rng.integers(-50, 50, (n, 5))
    want = _numpy_updates(g.copy(), gb.copy(), gc.copy())
    layouts = [(meshes["1d"], [[0]]), (meshes["1d"], [[], [0]]), (meshes["2d"], [[0], [1]]),
               (meshes["2d"], [[1, 0]]), (meshes["3d"], [[0, 2], [1]])]
    for mesh, split in layouts:
        s2, s1 = Sharding(mesh, split), Sharding(mesh, split[:1])
        before = dict(fastpath.stats)
        got = _numpy_updates(DT.from_global(g, s2), DT.from_global(gb, s1), DT.from_global(gc, s2))
        # (a's row dot products sum in another order where its columns are split: equal to rounding)
        np.testing.assert_allclose(got[0].gather(), want[0], rtol=1e-13, err_msg=str(split))
        np.testing.assert_array_equal(got[1].gather(), want[1], err_msg=str(split))
        np.testing.assert_array_equal(got[2].gather(), want[2], err_msg=str(split))
        updates = fastpath.stats["owned_updates"] - before["owned_updates"]
        fallbacks = fastpath.stats["owned_fallbacks"] - before["owned_fallbacks"]
        b_split = bool(split[0])  # (an unsplit tensor's element is read where it is: no OwnedElement)
        assert updates == 5 * n * (n - 1) // 2 + 2 * n + 2 * n * b_split, (split, updates)
        assert fallbacks == n * b_split, (split, fallbacks)  # b[i] //= 0.5


def test_augmented_element_update_errors_alike(meshes):
    """A cast numpy refuses in place (an int tensor's element ``-= 0.5``) raises numpy's error on every
    process, the owner's and the others'; under ``np.errstate(all="raise")`` the update reads the element
    first (an owner-only raise would split the processes): a division by zero raises everywhere."""
    from meshrt.tensor import fastpath

    s = Sharding(meshes["1d"], [[0]])
    t = DT.from_global(np.arange(comm.size * 3), s)
    for k in (0, comm.size * 3 - 1):
        with pytest.raises(TypeError, match="Cannot cast ufunc 'subtract'"):
            t[k] -= 0.5
        with pytest.raises(OverflowError):
            DT.from_global(np.zeros(comm.size * 2, np.int8), s)[k % (comm.size * 2)] += 1000
    np.testing.assert_array_equal(t.gather(), np.arange(comm.size * 3))
    f = DT.from_global(np.ones(comm.size * 2), s)
    before = fastpath.stats["owned_updates"]
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            f[comm.size * 2 - 1] /= 0.0
        f[0] += 1.0
    assert fastpath.stats["owned_updates"] == before
    assert float(f[0]) == 2.0


def test_augmented_update_site_detection():
    """Only the read of ``t[k] op= v`` is an augmented one (`fastpath._augmented_read`): not a plain read, a
    read used as a key, or a read inside an augmented assignment's value."""
    import sys

    from meshrt.tensor import fastpath

    seen = []

    class Probe:
        def __getitem__(self, key):
            seen.append(fastpath._augmented_read(sys._getframe(1)))
            return 1

        def __setitem__(self, key, value):
            pass

    p, q = Probe(), Probe()
    p[0] += 1
    x = p[0]
    q[p[0]] += x
    p[1, 2] -= p[3]
    p[0:2] += 1
    expected = [True, False, False, True, True, False, True]
    if fastpath._SIGNATURE is None:  # another CPython: never taken
        expected = [False] * len(expected)
    assert seen == expected


def test_writes_through_a_row_reach_the_tensor(meshes):
    """``A[i][j] = x``, ``A[i][j] += x`` and a function filling ``A[k, :, :]``'s diagonal (scikit-learn's
    ``_add_to_diagonal``) write into ``A``, as through numpy's views: the owner's row is a view of its block."""
    s = Sharding(meshes["1d"], [[0]])
    n = comm.size * 2 + 1
    A = DT.from_global(np.zeros((n, 4)), s)
    C = DT.from_global(np.zeros((n, 3, 3)), s)
    want, cw = np.zeros((n, 4)), np.zeros((n, 3, 3))
    for i in range(n):
        A[i][i % 4] = i + 1.0
        A[i][0] += 0.5
        want[i][i % 4] = i + 1.0
        want[i][0] += 0.5
        piece = C[i, :, :]
        for d in range(3):
            piece[d, d] = float(d + i)
            cw[i, d, d] = d + i
    np.testing.assert_array_equal(A.gather(), want)
    np.testing.assert_array_equal(C.gather(), cw)


def test_element_reads_leave_nothing_for_the_garbage_collector(meshes):
    """A loop reading elements at new indices keeps what it learned (`fastpath._READS`) in ints alone, which the
    garbage collector stops tracking: its full collections (which walk every tracked object) do not grow with
    the loop (they once made a CRC loop 1.5x slower after other programs had run)."""
    import gc

    from meshrt.tensor import fastpath

    t = DT.from_global(np.arange(comm.size * 500.0).reshape(-1, 5), Sharding(meshes["2d"], [[0], [1]]))
    total = sum(float(t[i, i % 5]) for i in range(t.shape[0]))
    assert total == sum(i * 5 + i % 5 for i in range(t.shape[0]))
    gc.collect()
    gc.collect()  # (a tuple is left once what it holds is: nested ones go a collection at a time)
    assert fastpath._READS and not any(gc.is_tracked(k) or gc.is_tracked(v) for k, v in fastpath._READS.items())


def test_owned_element_stored_elsewhere_is_a_plain_read(meshes):
    """An `OwnedElement` not updated, or stored to another element, is the plain read's value there (one
    broadcast, on every process alike): never a write on some processes only."""
    from meshrt.tensor import fastpath

    n = comm.size * 3
    t = DT.from_global(np.arange(float(n)), Sharding(meshes["1d"], [[0]]))
    last = n - 1
    entry = fastpath.element_owner(t, (last,))
    t[0] = fastpath.OwnedElement(t, (last,), entry)  # another key: the element's value, read
    e = fastpath.OwnedElement(t, (1,), fastpath.element_owner(t, (1,)))
    t[(1,)] = e  # not updated: the element's own value
    e2 = fastpath.OwnedElement(t, tuple([2]), fastpath.element_owner(t, (2,)))
    e2 -= 0.5
    t[(2,)] = e2  # updated: the owners write it (an equal key stands for the read's own)
    want = np.arange(float(n))
    want[0], want[2] = last, 1.5
    np.testing.assert_array_equal(t.gather(), want)


def test_small_vector_flip_agrees_under_check(meshes, monkeypatch):
    """``np.flip(y[:k])`` of a small vector is one allgather of the blocks: plain MPI normally, the collectives'
    own (their agreement on the pieces) under ``MESHRT_CHECK``, equal to numpy either way."""
    from meshrt import collectives
    from meshrt.runtime import check
    from meshrt.tensor import fastpath

    y = DT.from_global(np.arange(comm.size * 3 + 2.0), Sharding(meshes["1d"], [[0]]))
    calls = []
    gather = collectives.all_gather
    monkeypatch.setattr(collectives, "all_gather", lambda *a, **k: calls.append(1) or gather(*a, **k))
    for checked in (False, True):
        monkeypatch.setattr(check, "CHECK", checked)
        for k in range(1, y.shape[0] + 1):
            whole, _ = fastpath.replicated_vector(y[:k])
            np.testing.assert_array_equal(whole, np.arange(float(k)))
            np.testing.assert_array_equal(np.flip(y[:k]).gather(), np.arange(float(k))[::-1])
        assert (len(calls) > 0) == checked, (checked, len(calls))


def _forward_solve(L, x):
    for i in range(len(x)):
        x[i] -= L[i, :i] @ x[:i]
        x[i] /= L[i, i]
    return x


def _forward_solve_stored(L, b, x):
    for i in range(len(x)):
        x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    return x


def _shifted_solve_stored(L, b, x, y):
    n = len(x)
    for i in range(n):  # (the row's dot stored into an element held elsewhere: broadcast at the store)
        y[(i + 1) % n] = (b[i] - L[i, :i] @ x[:i]) * 0.5
    return y


def test_row_dot_into_an_element_at_its_owners(meshes):
    """``A[i, j] -= A[i, :j] @ A[:j, j]`` (LU by rows), ``... @ A[j, :j]`` (Cholesky by rows) and
    ``x[i] -= L[i, :i] @ x[:i]`` (a triangular solve), and ``x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]``
    (the dot through scalar arithmetic into a plain store): the row is not broadcast; the other operand's parts go
    to the row's owners, who compute the dot and update the element (`fastpath.DeferredRow`): on even and
    uneven blocks (one of a single row), on a 2-d mesh whose other axis replicates, in three dtypes, equal
    numpy to rounding and the same on every process."""
    from meshrt.tensor import fastpath

    rng = np.random.default_rng(5)
    n = comm.size * 3 + 4
    g = rng.random((n, n)) + np.eye(n) * n
    spd = g @ g.T + np.eye(n) * n
    b = rng.random(n)
    offs = [0] + [min(n, 1 + 3 * k) for k in range(comm.size - 1)] + [n]
    twin = Mesh((-1,))  # (equal to meshes["1d"], another object: the vectors on it, the matrix on that one)
    layouts = [(meshes["1d"], [[0]], None, None), (meshes["1d"], [[0]], offs, None),
               (meshes["2d"], [[0]], None, None), (meshes["2d"], [[1]], None, None), (meshes["1d"], [[0]], offs, twin)]
    for mesh, split, o, vector_mesh in layouts:
        for dt in (np.float64, np.complex128, np.float32):
            s = Sharding(mesh, split, sharded_dims_offsets=o)
            s1 = Sharding(vector_mesh or mesh, split, sharded_dims_offsets=o)
            a, c, v = (g * (1 + 0.5j) if dt is np.complex128 else g).astype(dt), spd.astype(dt), b.astype(dt)
            before, stored = fastpath.stats["targeted_dots"], fastpath.stats["owned_stores"]
            got = [lu_rows(DT.from_global(a, s)), cholesky_rows(DT.from_global(c, s)),
                   _forward_solve(DT.from_global(np.tril(a), s), DT.from_global(v, s1)),
                   _forward_solve_stored(DT.from_global(np.tril(a), s), DT.from_global(v, s1),
                                         DT.from_global(np.zeros(n, dt), s1)),
                   _shifted_solve_stored(DT.from_global(np.tril(a), s), DT.from_global(v, s1),
                                         DT.from_global(v[::-1].copy(), s1), DT.from_global(np.zeros(n, dt), s1))]
            # every statement's dot was taken at the element's owners: n * n, n * (n + 1) / 2, n, n and n of them
            assert fastpath.stats["targeted_dots"] - before == n * n + n * (n + 1) // 2 + 3 * n, (split, o, dt)
            # the stored values written by the rows' owners: all n of the solve's, and of the shifted store's
            # those whose element is held with row i (the others broadcast at the store)
            blocks = s1.dim_offsets((n,))[0]
            owner = [bisect.bisect_right(blocks, k) - 1 for k in range(n)]
            held = sum(owner[i] == owner[(i + 1) % n] for i in range(n))
            assert fastpath.stats["owned_stores"] - stored == n + held, (split, o, dt, held)
            want = [lu_rows(a.copy()), cholesky_rows(c.copy()), _forward_solve(np.tril(a), v.copy()),
                    _forward_solve_stored(np.tril(a), v.copy(), np.zeros(n, dt)),
                    _shifted_solve_stored(np.tril(a), v.copy(), v[::-1].copy(), np.zeros(n, dt))]
            tol = 2e-5 if dt is np.float32 else 1e-12
            for x, w, what in zip(got, want, ("lu", "cholesky", "solve", "stored solve", "shifted store")):
                x = x.gather()
                assert x.dtype == w.dtype, (what, x.dtype, w.dtype)
                np.testing.assert_allclose(x, w, rtol=tol, err_msg=f"{what} {split} {o} {dt}")
                everyone = comm.allgather(x)
                assert all(np.array_equal(y, everyone[0]) for y in everyone), what
    twin.free()


def test_row_dot_used_otherwise_is_the_broadcast_rows(meshes):
    """The dot of a row and a column not going straight into an element held where the row is (a plain
    assignment, a scaled dot) is the broadcast row's, no targeted dot; into another row's element or another
    tensor's, it is targeted only where their owners are the row's.  numpy's values in every case."""
    from meshrt.tensor import fastpath

    rng = np.random.default_rng(6)
    n = comm.size * 3 + 2
    g = rng.random((n, n))
    for s in (Sharding(meshes["1d"], [[0]]), Sharding(meshes["2d"], [[0]])):
        A, B = DT.from_global(g, s), DT.from_global(g, s)
        a, bb = g.copy(), g.copy()
        sums, want_sums = [], []
        for X, Y, out in ((A, B, sums), (a, bb, want_sums)):
            for i in range(n):
                j = (i * 3) % n
                before = fastpath.stats["targeted_dots"]
                out.append(complex(X[i, :j] @ X[:j, j]))
                X[i, j] -= 2.0 * (X[i, :j] @ X[:j, j])
                X[i, j] -= X[i, :j] @ X[:j, j] * 0.5
                assert fastpath.stats["targeted_dots"] == before
                X[(i + 1) % n, j] -= X[i, :j] @ X[:j, j]
                Y[i, j] -= X[i, :j] @ X[:j, j]
        np.testing.assert_allclose(sums, want_sums, rtol=1e-13)
        np.testing.assert_allclose(A.gather(), a, rtol=1e-13)
        np.testing.assert_allclose(B.gather(), bb, rtol=1e-13)


def test_row_dot_site_detection():
    """Which reads are operands of a dot into an in-place operator (`fastpath._matmul_role`): the left one
    where the right is a subscript of loads and index arithmetic and an in-place operator takes the product,
    the right one where ``@`` comes next; and the reads whose values only go through ``+ - * /`` into a
    subscript's store (4: deferred views, not broadcast); no other read."""
    import sys

    from meshrt.tensor import fastpath

    seen = []

    class Probe:
        def __getitem__(self, key):
            f = sys._getframe(1)
            seen.append(fastpath._matmul_role(f.f_code, f.f_lasti)[0] if fastpath._DIS is not None else 0)
            return self

        def __matmul__(self, other):
            return 1.0

        def __isub__(self, other):
            return self

        __iadd__ = __isub__

        def __sub__(self, other):
            return self

        __truediv__ = __rsub__ = __mul__ = __sub__

        def __abs__(self):
            return self

        def __setitem__(self, key, value):
            pass

        def __index__(self):
            return 0

    p, j = Probe(), 3
    p[0, 1] -= p[0, :j] @ p[:j, 1]  # the element (0), the row (1), the column (2)
    p[0, 1] -= p[0, :j + 1] @ p[-j:, j - 1]
    x = p[0, :j] @ p[:j, 1]  # a plain assignment: only the right operand is next to its @
    p[0, 1] -= p[0, :j] @ p[:j, 1] * 2.0  # the product scaled
    p[0, 1] -= p[0, :j] @ p[:abs(j), 1]  # a call in the right operand's key
    p[0, 1] += p[p[0, 0], :j] @ p[:j, 1]  # a read in the row's key: not an operand
    p[0] = (p[1] - p[0, :j] @ p[:j, 1]) / p[1, 1]  # through scalar arithmetic into a store
    p[0] = p[0, :j] @ p[:j, 1]
    x = p[1] - p[0, :j] @ p[:j, 1]  # into a name
    p[0] = abs(p[0, :j] @ p[:j, 1])  # into a call
    p[0] = -(p[0, :j] @ p[:j, 1])  # negated
    p[p[0, :j] @ p[:j, 1]] = 1.0  # a key
    p[j % 2 - 1] = p[0, :j] @ p[:j, 1] * 2.0  # index arithmetic in the store's key
    p[-1, :] = p[-2, :]  # no @: a read only stored (4)
    p[0] = p[1] * 2.0 - p[j]
    x = p[1]  # into a name
    p[0] = abs(p[1])  # into a call
    p[p[0, 0]] = 1.0  # a key
    expected = [0, 1, 2, 0, 1, 2, 0, 2, 0, 0, 2, 0, 0, 2, 0, 0, 1, 2,
                4, 3, 2, 4, 3, 2, 0, 0, 2, 0, 2, 0, 2, 0, 2, 3, 2,
                4, 4, 4, 0, 0, 0]
    if fastpath._DIS is None:
        expected = [0] * len(expected)
    assert seen == expected, str(seen)
