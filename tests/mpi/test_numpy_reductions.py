"""numpy reductions, argmax/argmin, var/std, isclose and 0-d conversions on DistributedTensors,
checked against numpy on the global array at any process count (every layout of test_tensor)."""

import math
import operator
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from mpi4py import MPI

from meshrt import DistributedTensor as DT, PerformanceWarning, Sharding, ShardingError
from test_tensor import cases, global_array

MPI_NPROCS = (1, 2, 3, 4)  # the counts; 8 oversubscribed adds a minute for no new case

comm = MPI.COMM_WORLD
DTYPES = (np.float32, np.float64, np.int64, np.bool_, np.complex128)


def values(shape, dtype, seed):
    g = global_array(shape, np.float64, seed)
    if dtype == np.bool_:
        return g > 10
    if dtype == np.complex128:
        return (g + 1j * global_array(shape, np.float64, seed + 1)).astype(dtype)
    return g.astype(dtype)


def axes_of(ndim):
    out = [None] + list(range(ndim)) + [-1]
    if ndim > 1:
        out += [(0, ndim - 1), tuple(range(ndim))]
    return out


def check(got, want, what, rtol=1e-6):
    """``got`` (scalar or tensor) equals numpy's ``want``: value, shape and dtype."""
    if isinstance(got, DT):
        assert got.global_shape == np.shape(want), (what, got.global_shape, np.shape(want))
        got_dtype, got = got.dtype, got.gather()
    else:
        assert np.ndim(got) == 0 and np.ndim(want) == 0, (what, got, want)
        got_dtype = np.asarray(got).dtype
    assert got_dtype == np.asarray(want).dtype, (what, got_dtype, np.asarray(want).dtype)
    if np.asarray(want).dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-6 * max(1.0, float(np.max(np.abs(want), initial=0))),
                                   equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


FORMS = [  # (name, dtypes it applies to, f(np_module_function_applied))
    ("sum", DTYPES, lambda a, ax, kd: np.sum(a, axis=ax, keepdims=kd)),
    ("prod", (np.float64, np.int64, np.bool_), lambda a, ax, kd: np.prod(a, axis=ax, keepdims=kd)),
    ("mean", DTYPES, lambda a, ax, kd: np.mean(a, axis=ax, keepdims=kd)),
    ("max", (np.float32, np.int64, np.bool_), lambda a, ax, kd: np.max(a, axis=ax, keepdims=kd)),
    ("min", (np.float64, np.int64), lambda a, ax, kd: np.min(a, axis=ax, keepdims=kd)),
    ("any", DTYPES, lambda a, ax, kd: np.any(a, axis=ax, keepdims=kd)),
    ("all", DTYPES, lambda a, ax, kd: np.all(a, axis=ax, keepdims=kd)),
    ("count_nonzero", (np.float64, np.bool_), lambda a, ax, kd: np.count_nonzero(a, axis=ax, keepdims=kd)),
    ("var", DTYPES, lambda a, ax, kd: np.var(a, axis=ax, keepdims=kd)),
    ("std ddof=1", (np.float64, np.float32), lambda a, ax, kd: np.std(a, axis=ax, ddof=1, keepdims=kd)),
    ("average", (np.float64,), lambda a, ax, kd: np.average(a, axis=ax, keepdims=kd)),
    ("add.reduce", (np.float64, np.int64), lambda a, ax, kd: np.add.reduce(a, axis=ax, keepdims=kd)),
    ("maximum.reduce", (np.float64,), lambda a, ax, kd: np.maximum.reduce(a, axis=ax, keepdims=kd)),
]


@pytest.mark.parametrize("form", FORMS, ids=[f[0] for f in FORMS])
def test_reductions_match_numpy(meshes, form):
    name, dtypes, f = form
    for k, (layout, s, shape) in enumerate(cases(meshes)):
        dtype = dtypes[k % len(dtypes)]
        g = values(shape, dtype, seed=k)
        t = DT.from_global(g, s)
        for ax in axes_of(len(shape)):
            for kd in (False, True):
                if name.endswith(".reduce") and ax is None:
                    continue
                want = f(g, ax, kd)
                check(f(t, ax, kd), want, f"{name} {layout} {dtype.__name__} axis={ax} keepdims={kd}",
                      rtol=1e-4 if dtype == np.float32 else 1e-9)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_extremes_with_ties_and_nans(meshes, op):
    f = getattr(np, op)
    for k, (layout, s, shape) in enumerate(cases(meshes)):
        g = np.round(global_array(shape, np.float64, seed=k) / 40)  # few distinct values: many ties
        for data in (g, g.astype(np.int64)):
            t = DT.from_global(data, s)
            check(f(t), f(data), f"{op} {layout} flat")
            for ax in range(len(shape)):
                check(f(t, axis=ax), f(data, axis=ax), f"{op} {layout} axis={ax}")
        gn = g.copy()
        gn.flat[[g.size // 2, g.size - 1]] = np.nan  # the first NaN wins, as in numpy
        check(f(DT.from_global(gn, s)), f(gn), f"{op} {layout} nan")
        check(f(DT.from_global(gn, s), axis=0), f(gn, axis=0), f"{op} {layout} nan axis 0")


def test_nan_reductions(meshes):
    for k, (layout, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, np.float64, seed=k)
        g[g < 0] = np.nan
        g[0] = np.nan  # a whole NaN slice along the other dims: nanmax gives NaN there
        t = DT.from_global(g, s)
        with np.errstate(all="ignore"):
            for fn in (np.nansum, np.nanmean, np.nanmax, np.nanmin, np.nanprod):
                for ax in axes_of(len(shape)):
                    with warnings.catch_warnings():  # (numpy's all-NaN slice warnings: the reference's own)
                        warnings.simplefilter("ignore", RuntimeWarning)
                        want = fn(g / 100 if fn is np.nanprod else g, axis=ax)
                    check(fn(t / 100 if fn is np.nanprod else t, axis=ax), want, f"{fn.__name__} {layout} {ax}")


@pytest.mark.parametrize("fn", [np.sum, np.prod, np.mean, np.any, np.all, np.var, np.std, np.nansum, np.nanmean])
def test_where_masks(meshes, fn):
    for k, (layout, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, np.float64, seed=k) / 30
        if fn in (np.nansum, np.nanmean):
            g[g > 2] = np.nan
        t = DT.from_global(g, s)
        mask = global_array(shape, np.float64, seed=k + 1) > 0
        row = mask[0] if len(shape) > 1 else mask
        for ax in axes_of(len(shape)):
            for where in (mask, DT.from_global(mask, Sharding(s.mesh, [])), row):
                with np.errstate(all="ignore"):
                    want = fn(g, axis=ax, where=mask if where is not row else row)
                    got = fn(t, axis=ax, where=where)
                check(got, want, f"{fn.__name__} where {layout} axis={ax}", rtol=1e-9)


def test_initial_and_masked_extremes(meshes):
    for k, (layout, s, shape) in enumerate(cases(meshes)):
        g = global_array(shape, np.float64, seed=k)
        t, mask = DT.from_global(g, s), g > 10
        for ax in axes_of(len(shape)):
            check(np.max(t, axis=ax, where=mask, initial=-1e9), np.max(g, axis=ax, where=mask, initial=-1e9),
                  f"max where {layout} {ax}")
            check(np.min(t, axis=ax, initial=5.0), np.min(g, axis=ax, initial=5.0), f"min initial {layout} {ax}")
            check(np.sum(t, axis=ax, initial=2.5), np.sum(g, axis=ax, initial=2.5), f"sum initial {layout} {ax}")


@pytest.mark.parametrize("ufunc", [np.add, np.multiply, np.maximum, np.minimum])
def test_accumulate_along_every_dim(meshes, ufunc):
    for k, (layout, s, shape) in enumerate(cases(meshes)):
        g = 1 + global_array(shape, np.float64, seed=k) / 1000 if ufunc is np.multiply else global_array(shape, seed=k)
        for data in (g, np.round(g).astype(np.int64)):
            t = DT.from_global(data, s)
            for ax in range(len(shape)):
                check(ufunc.accumulate(t, axis=ax), ufunc.accumulate(data, axis=ax),
                      f"{ufunc.__name__}.accumulate {layout} {data.dtype} axis={ax}", rtol=1e-12)


def test_var_of_large_offset_keeps_its_digits(meshes):
    s = Sharding(meshes["1d"], [[0]])
    rng = np.random.default_rng(3)
    g = 1e8 + rng.standard_normal(10_007)
    t = DT.from_global(g, s)
    assert abs(np.var(t) - np.var(g)) <= 1e-6 * np.var(g)
    assert abs(t.std(ddof=1) - np.std(g, ddof=1)) <= 1e-6 * np.std(g)
    outlier = rng.standard_normal(10_007)
    outlier[::997] = 1e9  # each block's first element may lie far from the mean: the exact pass takes over
    t = DT.from_global(outlier, s)
    assert abs(np.var(t) - np.var(outlier)) <= 1e-9 * np.var(outlier)
    small = DT.from_global(1e8 + np.arange(5.0), s)  # blocks of one element or none on many processes
    assert np.var(small) == np.var(1e8 + np.arange(5.0))


def test_isclose_is_elementwise(meshes):
    for layout, s, shape in cases(meshes):
        a = global_array(shape, seed=1)
        c = a + np.where(np.arange(a.size).reshape(shape) % 3 == 0, 0.5, 2.0)
        ta, tc = DT.from_global(a, s), DT.from_global(c, s)
        check(np.isclose(ta, ta), np.isclose(a, a), f"isclose {layout}")
        check(np.isclose(ta, tc, atol=1), np.isclose(a, c, atol=1), f"isclose atol {layout}")
        check(np.isclose(ta, 3.0), np.isclose(a, 3.0), f"isclose scalar {layout}")


def test_zero_d_values_convert_on_every_process(meshes):
    s = Sharding(meshes["2d"], [[0], [1]])
    g = global_array((7, 5), seed=2)
    t = DT.from_global(g, s)
    x = t[1, 1]
    assert float(x) == g[1, 1] and x.item() == g[1, 1] and complex(x) == complex(g[1, 1])
    assert bool(t[0, 0] == t[0, 0]) is True and bool(t[0, 0] != t[0, 0]) is False
    i = DT.from_global(np.arange(35).reshape(7, 5), s)
    assert int(i[3, 2]) == 17 and operator.index(i[3, 2]) == 17 and [0, 1, 2][i[0, 2]] == 2
    with pytest.raises(TypeError, match="not an integer"):
        operator.index(x)
    with pytest.raises(TypeError, match=r"shape \(7, 5\)"):
        float(t)
    with pytest.raises(TypeError, match="ambiguous"):
        bool(t)
    zero_d = DT.from_global(np.array(2.5), Sharding(meshes["2d"], []))
    assert float(zero_d) == 2.5 and zero_d.gather() == 2.5


def test_asarray_of_a_replicated_tensor_needs_no_communication(meshes):
    g = global_array((4, 3), seed=6)
    r = DT.from_global(g, Sharding(meshes["2d"], []))
    np.testing.assert_array_equal(np.asarray(r), g)
    assert np.asarray(r, dtype=np.float32).dtype == np.float32
    split = DT.from_global(g, Sharding(meshes["1d"], [[0]]))
    with pytest.warns(PerformanceWarning, match="gathers the global array"):  # (issue 53: gathered)
        np.testing.assert_array_equal(np.asarray(split), g)


def test_bad_reduction_arguments_raise_everywhere(meshes):
    t = DT.from_global(global_array((6, 5)), Sharding(meshes["1d"], [[0]]))
    with pytest.raises(ShardingError, match="axis: 2 is out of range"):
        np.sum(t, axis=2)
    with pytest.raises(ShardingError, match="repeats"):
        np.var(t, axis=(0, 0))
    with pytest.raises(ValueError, match="initial"):
        np.max(t, where=t > 0)
    with pytest.raises(TypeError, match="np.subtract.accumulate"):
        np.subtract.accumulate(t)
    with pytest.raises(ValueError, match="empty"):
        np.argmax(DT.from_global(np.zeros((0, 3)), Sharding(meshes["1d"], [[0]])))
    with pytest.raises(TypeError, match="not ordered"):
        np.argmax(t + 1j)


@settings(max_examples=12, deadline=None, derandomize=True)
@given(shape=st.lists(st.integers(0, 7), min_size=1, max_size=3), seed=st.integers(0, 2**16),
       dims=st.integers(0, 7))
def test_random_shapes_and_shardings(shape, seed, dims):
    mesh_key = {1: "1d", 2: "2d", 3: "3d"}[len(shape)]
    mesh = test_random_shapes_and_shardings.meshes[mesh_key]
    split = [[d] if dims >> d & 1 else [] for d in range(len(shape))]
    s = Sharding(mesh, split)
    g = global_array(tuple(shape), seed=seed)
    t = DT.from_global(g, s)
    for ax in axes_of(len(shape)):
        check(np.sum(t, axis=ax, keepdims=True), np.sum(g, axis=ax, keepdims=True), f"sum {shape} {ax}")
        if math.prod(g.shape[d] for d in (range(g.ndim) if ax is None else np.atleast_1d(ax))) > 1:
            check(np.var(t, axis=ax, ddof=1), np.var(g, axis=ax, ddof=1), f"var {shape} {ax}", rtol=1e-8)
        if g.size and (ax is None or isinstance(ax, int)):
            check(np.argmin(t, axis=ax), np.argmin(g, axis=ax), f"argmin {shape} {ax}")


@pytest.fixture(autouse=True)
def _bind_meshes(meshes):
    test_random_shapes_and_shardings.meshes = meshes
