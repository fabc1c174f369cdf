"""Sharded ``stablehlo.gather`` and ``stablehlo.scatter`` in Shardy programs (meshrt/mlir/_sdy_index.py):
hand-written programs in the forms JAX emits for ``x[idx]``, ``x[:, idx]``, ``x[i, j]``, batched
dynamic slices and ``x.at[idx].add/multiply/min/max/set``, with the operand split on the indexed
dim, another dim or both, indices and updates replicated or split, results replicated or split;
compared with plain numpy loops at 1-4 processes.  No split operand is ever gathered whole, and
neither op falls back to gathered operands."""

import os

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor
from meshrt.errors import MLIRError
from meshrt.mlir import parse, parse_file
from meshrt.mlir.shardy.program import SdyProgram

MPI_NPROCS = (1, 2, 4)  # the counts for Shardy programs; the shapes split unevenly at 2 and 4 too

comm = MPI.COMM_WORLD
N = comm.size
MESH = {1: (1, 1), 2: (2, 1), 3: (3, 1), 4: (2, 2)}[N]
CORPUS = os.path.join(os.path.dirname(__file__), "..", "mlir", "sdy")


def _mesh():
    return f'sdy.mesh @mesh = <["x"={MESH[0]}, "y"={MESH[1]}]>'


def _sh(dims):
    return f"#sdy.sharding<@mesh, {_dims(dims)}>"


def _t(shape, el):
    return "tensor<" + "".join(f"{n}x" for n in shape) + el + ">"


def _dims(dims):
    return "[" + ", ".join("{" + ", ".join(f'"{a}"' for a in d) + "}" for d in dims) + "]"


def _ints(xs):
    return "[" + ", ".join(map(str, xs)) + "]"


def _dn(kind, **fields):
    body = ", ".join(f"{k} = {_ints(v)}" for k, v in fields.items() if k != "index_vector_dim" and len(v))
    return f"#stablehlo.{kind}<{body}, index_vector_dim = {fields['index_vector_dim']}>"


def gather_program(xshape, ishape, oshape, el, dims, sizes, xs, is_, os_, on_op=False):
    tx, ti, to = _t(xshape, el), _t(ishape, "i32"), _t(oshape, el)
    attr = f" {{sdy.sharding = #sdy.sharding_per_value<[<@mesh, {_dims(os_)}>]>}}" if on_op else ""
    res = "" if on_op else f" {{sdy.sharding = {_sh(os_)}}}"
    return f"""{_mesh()}
func.func public @main(%x: {tx} {{sdy.sharding = {_sh(xs)}}}, %i: {ti} {{sdy.sharding = {_sh(is_)}}}) -> ({to}{res}) {{
  %0 = "stablehlo.gather"(%x, %i) <{{dimension_numbers = {_dn("gather", **dims)}, indices_are_sorted = false, slice_sizes = array<i64: {", ".join(map(str, sizes))}>}}>{attr} : ({tx}, {ti}) -> {to}
  return %0 : {to}
}}
"""


BODIES = {
    "add": "%s = stablehlo.add %a, %b : {t}\n      stablehlo.return %s : {t}",
    "multiply": "%s = stablehlo.multiply %a, %b : {t}\n      stablehlo.return %s : {t}",
    "max": "%s = stablehlo.maximum %a, %b : {t}\n      stablehlo.return %s : {t}",
    "min": "%s = stablehlo.minimum %a, %b : {t}\n      stablehlo.return %s : {t}",
    "set": "stablehlo.return %b : {t}",
    # bodies meshrt does not recognise: applied in rounds, in the updates' order
    "subtract": "%s = stablehlo.subtract %a, %b : {t}\n      stablehlo.return %s : {t}",
    "mean": "%c = stablehlo.constant dense<2.000000e+00> : {t}\n      %s = stablehlo.add %a, %b : {t}\n"
            "      %d = stablehlo.divide %s, %c : {t}\n      stablehlo.return %d : {t}",
}
COMBINE = {"add": np.add, "multiply": np.multiply, "max": np.maximum, "min": np.minimum,
           "set": lambda a, b: b, "subtract": np.subtract, "mean": lambda a, b: (a + b) / np.float32(2)}


def scatter_program(xshape, ishape, ushape, el, dims, body, xs, is_, us, os_=None, splat_operand=False):
    tx, ti, tu = _t(xshape, el), _t(ishape, "i32"), _t(ushape, el)
    scalar = _t((), el)
    os_ = xs if os_ is None else os_
    if splat_operand:
        zero = "0.000000e+00" if el == "f32" else "0"
        head = f"%i: {ti} {{sdy.sharding = {_sh(is_)}}}, %u: {tu} {{sdy.sharding = {_sh(us)}}}"
        pre = (f"  %z = stablehlo.constant dense<{zero}> : {scalar}\n"
               f"  %x = stablehlo.broadcast_in_dim %z, dims = [] : ({scalar}) -> {tx}\n")
    else:
        head = (f"%x: {tx} {{sdy.sharding = {_sh(xs)}}}, %i: {ti} {{sdy.sharding = {_sh(is_)}}}, "
                f"%u: {tu} {{sdy.sharding = {_sh(us)}}}")
        pre = ""
    return f"""{_mesh()}
func.func public @main({head}) -> ({tx} {{sdy.sharding = {_sh(os_)}}}) {{
{pre}  %0 = "stablehlo.scatter"(%x, %i, %u) <{{indices_are_sorted = false, scatter_dimension_numbers = {_dn("scatter", **dims)}, unique_indices = false}}> ({{
    ^bb0(%a: {scalar}, %b: {scalar}):
      {BODIES[body].format(t=scalar)}
    }}) : ({tx}, {ti}, {tu}) -> {tx}
  return %0 : {tx}
}}
"""


class _Watch:
    """Records the global shapes of every DistributedTensor gathered whole or resharded."""

    def __enter__(self):
        self.gathered, self.resharded = [], []
        self._g, self._r = DistributedTensor.gather, DistributedTensor.reshard
        watch = self

        def gather(t, root=None):
            watch.gathered.append(tuple(t.global_shape))
            return watch._g(t, root)

        def reshard(t, sharding, *, out=None):
            watch.resharded.append(tuple(t.global_shape))
            return watch._r(t, sharding, out=out)

        DistributedTensor.gather, DistributedTensor.reshard = gather, reshard
        return self

    def __exit__(self, *exc):
        DistributedTensor.gather, DistributedTensor.reshard = self._g, self._r


def run(text, args, split_shapes):
    """Run ``@main`` on every process; the whole results.  Fails when a tensor of one of
    ``split_shapes`` (the split operands) was gathered whole or resharded, or an op fell back."""
    p = SdyProgram(parse(text), comm)
    try:
        with _Watch() as w:
            res = p.run("main", args)
        assert p.fallbacks == [], [(str(op.location), op.name) for op, _ in p.fallbacks]
        for s in split_shapes:
            assert s not in w.gathered, f"a split operand of shape {s} was gathered whole"
            assert s not in w.resharded, f"a split operand of shape {s} was resharded"
        return [p.whole(r) for r in res]
    finally:
        p.free()


def _compare(got, want, what):
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got.shape, got.dtype, want.shape, want.dtype)
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def _data(shape, el, seed):
    rng = np.random.default_rng(seed)
    if el == "f32":
        return rng.standard_normal(shape).astype(np.float32)
    return rng.integers(-20, 20, shape).astype(np.int32)


# -- gather ---------------------------------------------------------------------------------------------

ROWS = dict(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1)
X_SPLITS = [[["x"], []], [[], ["x"]], [["x"], ["y"]], [["x", "y"], []], [["y"], ["x"]], [[], []]]
I_SPLITS = [[[], []], [["x"], []], [["y"], []]]
O_SPLITS = [[[], []], [["x"], []], [[], ["x"]], [["y"], ["x"]]]
IDX = np.array([3, 9, 3, -4, 12, 0, 7], np.int32)  # duplicates, below and above range (clamped)


@pytest.mark.parametrize("xs", X_SPLITS)
@pytest.mark.parametrize("is_", I_SPLITS)
@pytest.mark.parametrize("os_", O_SPLITS)
def test_gather_rows_x_idx(xs, is_, os_):
    _gather_rows(("f32", "i32")[(X_SPLITS.index(xs) + O_SPLITS.index(os_)) % 2], xs, is_, os_)


def _gather_rows(el, xs, is_, os_):
    """``x[idx]``: one row per index (10 rows: uneven over 3 and 4 processes), clamped."""
    x = _data((10, 6), el, 1)
    text = gather_program((10, 6), (7, 1), (7, 6), el, ROWS, (1, 6), xs, is_, os_)
    (y,) = run(text, [x, IDX[:, None]], [(10, 6)] if any(xs) else [])
    _compare(y, x[np.clip(IDX, 0, 9)], "x[idx]")


def test_gather_sharding_attribute_on_the_op():
    x = _data((10, 6), "f32", 2)
    text = gather_program((10, 6), (7, 1), (7, 6), "f32", ROWS, (1, 6), [["x"], []], [[], []], [["x"], ["y"]],
                          on_op=True)
    (y,) = run(text, [x, IDX[:, None]], [(10, 6)])
    _compare(y, x[np.clip(IDX, 0, 9)], "x[idx] with sdy.sharding on the gather")


@pytest.mark.parametrize("xs", [[[], ["x"]], [["y"], ["x"]], [["x"], ["y"]]])
@pytest.mark.parametrize("is_", [[[], []], [["x"], []], [["y"], []]])
@pytest.mark.parametrize("os_", [[[], []], [["y"], ["x"]], [[], ["x"]]])
def test_gather_columns_x_colon_idx(xs, is_, os_):
    """``x[:, idx]``: result (5, 4) = offset dim 0, batch dim 1 (the indices' dim 0)."""
    x = _data((5, 9), "f32", 3)
    idx = np.array([8, 1, 1, 11], np.int32)
    dims = dict(offset_dims=[0], collapsed_slice_dims=[1], start_index_map=[1], index_vector_dim=1)
    text = gather_program((5, 9), (4, 1), (5, 4), "f32", dims, (5, 1), xs, is_, os_)
    (y,) = run(text, [x, idx[:, None]], [(5, 9)])
    _compare(y, x[:, np.clip(idx, 0, 8)], "x[:, idx]")


@pytest.mark.parametrize("xs", [[["x"], ["y"], []], [["x", "y"], [], []], [[], ["x"], ["y"]], [["y"], [], ["x"]]])
@pytest.mark.parametrize("is_", [[[], []], [["x"], []]])
@pytest.mark.parametrize("os_", [[[], []], [["x"], []], [[], ["y"]]])
def test_gather_two_leading_dims(xs, is_, os_):
    """``x[i, j]`` on a 3-D operand: index vectors of two, both dims collapsed."""
    x = _data((6, 5, 4), "i32", 4)
    ij = np.array([[5, 4], [0, 0], [2, 9], [-1, 3], [5, 4], [3, 1], [1, 2]], np.int32)
    dims = dict(offset_dims=[1], collapsed_slice_dims=[0, 1], start_index_map=[0, 1], index_vector_dim=1)
    text = gather_program((6, 5, 4), (7, 2), (7, 4), "i32", dims, (1, 1, 4), xs, is_, os_)
    (y,) = run(text, [x, ij], [(6, 5, 4)])
    _compare(y, x[np.clip(ij[:, 0], 0, 5), np.clip(ij[:, 1], 0, 4)], "x[i, j]")


@pytest.mark.parametrize("xs", [[["x"], ["y"]], [["y"], ["x"]], [["x", "y"], []], [[], []]])
@pytest.mark.parametrize("is_", [[[], []], [["x"], []]])
@pytest.mark.parametrize("os_", [[[], [], []], [["x"], [], []], [[], ["y"], ["x"]]])
def test_gather_dynamic_slices(xs, is_, os_):
    """A batch of 3x4 windows (vmap of ``lax.dynamic_slice``): starts clamped so the window fits."""
    x = _data((9, 8), "f32", 5)
    starts = np.array([[0, 0], [7, 6], [-2, 3], [4, 1], [4, 1]], np.int32)
    dims = dict(offset_dims=[1, 2], start_index_map=[0, 1], index_vector_dim=1)
    text = gather_program((9, 8), (5, 2), (5, 3, 4), "f32", dims, (3, 4), xs, is_, os_)
    (y,) = run(text, [x, starts], [(9, 8)] if any(xs) else [])
    want = np.stack([x[a:a + 3, b:b + 4] for a, b in zip(np.clip(starts[:, 0], 0, 6), np.clip(starts[:, 1], 0, 4))])
    _compare(y, want, "dynamic slices")


@pytest.mark.parametrize("is_", [[[], [], []], [["x"], ["y"], []], [[], ["x"], []]])
@pytest.mark.parametrize("os_", [[[], [], []], [["x"], [], ["y"]], [[], ["x"], []]])
def test_gather_two_dim_indices(is_, os_):
    """``x[idx]`` with a 2-D index array (batch dims 0 and 1; index_vector_dim 2)."""
    x = _data((10, 6), "f32", 6)
    idx = np.array([[1, 9, 9], [0, -3, 5]], np.int32)
    dims = dict(offset_dims=[2], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=2)
    text = gather_program((10, 6), (2, 3, 1), (2, 3, 6), "f32", dims, (1, 6), [["x"], ["y"]], is_, os_)
    (y,) = run(text, [x, idx[..., None]], [(10, 6)])
    _compare(y, x[np.clip(idx, 0, 9)], "x[idx2d]")


def test_gather_implicit_index_vector_dim():
    """index_vector_dim equal to the indices' rank: each index is a vector of one."""
    x = _data((10, 6), "f32", 7)
    dims = dict(offset_dims=[1], collapsed_slice_dims=[0], start_index_map=[0], index_vector_dim=1)
    text = gather_program((10, 6), (7,), (7, 6), "f32", dims, (1, 6), [["x"], []], [["y"]], [["y"], []])
    (y,) = run(text, [x, IDX], [(10, 6)])
    _compare(y, x[np.clip(IDX, 0, 9)], "implicit index vector")


def test_gather_bad_window_size_fails_alike():
    text = gather_program((10, 6), (7, 1), (7, 6), "f32", ROWS, (2, 6), [["x"], []], [[], []], [[], []])
    with pytest.raises(MLIRError, match="collapsed dim 0 has window size 2, not 1"):
        SdyProgram(parse(text), comm).run("main", [_data((10, 6), "f32", 0), IDX[:, None]])
    comm.Barrier()


# -- scatter --------------------------------------------------------------------------------------------

AT_ROWS = dict(update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0], index_vector_dim=1)


def _scatter_rows_ref(x, idx, v, body):
    out = x.copy()
    for k, i in enumerate(idx):
        if 0 <= i < x.shape[0]:
            out[i] = COMBINE[body](out[i], v[k])
    return out


SCATTER_XS = [[["x"], []], [[], ["x"]], [["x"], ["y"]], [["y"], ["x"]], [["x", "y"], []]]
SCATTER_IU = [([[], []], [[], []]), ([["x"], []], [[], []]), ([[], []], [["x"], []]), ([["y"], []], [["x"], []]),
              ([[], []], [[], ["y"]]), ([["x"], []], [["x"], ["y"]])]


@pytest.mark.parametrize("el", ["f32", "i32"])
@pytest.mark.parametrize("xs", SCATTER_XS)
@pytest.mark.parametrize("is_,us", SCATTER_IU)
def test_scatter_rows_at_idx_add(el, xs, is_, us):
    """``x.at[idx].add(v)``: out-of-range rows (-4, 12) are skipped, duplicates combined in order;
    the result keeps the operand's sharding."""
    _scatter_rows("add", el, xs, is_, us)


@pytest.mark.parametrize("body", sorted(BODIES))
@pytest.mark.parametrize("xs,is_,us", [(SCATTER_XS[2], *SCATTER_IU[0]), (SCATTER_XS[3], *SCATTER_IU[5]),
                                       (SCATTER_XS[4], *SCATTER_IU[3])])
def test_scatter_rows_every_body(body, xs, is_, us):
    """``.multiply/.min/.max/.set`` and bodies meshrt does not recognise, float32 and int32."""
    _scatter_rows(body, "f32", xs, is_, us)
    if body != "mean":  # its constant is a float
        _scatter_rows(body, "i32", xs, is_, us)


def _scatter_rows(body, el, xs, is_, us):
    x = _data((10, 6), el, 8)
    v = _data((7, 6), el, 9)
    text = scatter_program((10, 6), (7, 1), (7, 6), el, AT_ROWS, body, xs, is_, us)
    split = [(10, 6)] + ([(7, 6)] if any(us) else [])
    (y,) = run(text, [x, IDX[:, None], v], split)
    _compare(y, _scatter_rows_ref(x, IDX, v, body), f"x.at[idx].{body}(v)")


def test_scatter_set_with_duplicates_takes_the_last_everywhere():
    x = np.zeros((10, 6), np.float32)
    idx = np.array([2, 2, 2, 5, 5, 2, 9], np.int32)
    v = np.arange(42, dtype=np.float32).reshape(7, 6)
    text = scatter_program((10, 6), (7, 1), (7, 6), "f32", AT_ROWS, "set", [["x"], ["y"]], [["x"], []], [["x"], []])
    (y,) = run(text, [x, idx[:, None], v], [(10, 6), (7, 6)])
    _compare(y, _scatter_rows_ref(x, idx, v, "set"), "set with duplicates")
    rows = comm.allgather(y[2].tobytes())
    assert all(r == rows[0] for r in rows)


@pytest.mark.parametrize("xs", [[[], ["x"]], [["y"], ["x"]]])
@pytest.mark.parametrize("us", [[[], []], [["y"], ["x"]], [[], ["x"]]])
def test_scatter_columns_at_colon_idx(xs, us):
    """``x.at[:, idx].set(v)``: updates (5, 4) = window dim 0, scatter dim 1."""
    x = _data((5, 9), "f32", 10)
    idx = np.array([8, 1, 9, -1], np.int32)
    v = _data((5, 4), "f32", 11)
    dims = dict(update_window_dims=[0], inserted_window_dims=[1], scatter_dims_to_operand_dims=[1],
                index_vector_dim=1)
    text = scatter_program((5, 9), (4, 1), (5, 4), "f32", dims, "set", xs, [[], []], us)
    (y,) = run(text, [x, idx[:, None], v], [(5, 9)] + ([(5, 4)] if any(us) else []))
    want = x.copy()
    for k, i in enumerate(idx):
        if 0 <= i < 9:
            want[:, i] = v[:, k]
    _compare(y, want, "x.at[:, idx].set(v)")


@pytest.mark.parametrize("xs", [[["x"], ["y"], []], [[], ["x"], ["y"]], [["x", "y"], [], []]])
@pytest.mark.parametrize("is_,us", [([[], []], [[], []]), ([["x"], []], [["x"], []]), ([[], []], [[], ["y"]])])
def test_scatter_two_leading_dims(xs, is_, us):
    """``x.at[i, j].add(v)`` on a 3-D operand."""
    x = _data((6, 5, 4), "i32", 12)
    ij = np.array([[5, 4], [0, 0], [2, 9], [-1, 3], [5, 4], [3, 1], [1, 2]], np.int32)
    v = _data((7, 4), "i32", 13)
    dims = dict(update_window_dims=[1], inserted_window_dims=[0, 1], scatter_dims_to_operand_dims=[0, 1],
                index_vector_dim=1)
    text = scatter_program((6, 5, 4), (7, 2), (7, 4), "i32", dims, "add", xs, is_, us)
    (y,) = run(text, [x, ij, v], [(6, 5, 4)] + ([(7, 4)] if any(us) else []))
    want = x.copy()
    for k, (i, j) in enumerate(ij):
        if 0 <= i < 6 and 0 <= j < 5:
            want[i, j] += v[k]
    _compare(y, want, "x.at[i, j].add(v)")


@pytest.mark.parametrize("body", ["add", "set"])
@pytest.mark.parametrize("xs", [[["x"], ["y"]], [["y"], ["x"]], [["x", "y"], []]])
@pytest.mark.parametrize("us", [[[], [], []], [["x"], [], []], [[], ["y"], ["x"]]])
def test_scatter_windows(body, xs, us):
    """Batched ``dynamic_update_slice``-like windows of 3x4; a window that does not fit is skipped
    whole (StableHLO's rule), overlapping windows combine in order."""
    x = _data((9, 8), "f32", 14)
    starts = np.array([[0, 0], [6, 4], [7, 0], [-1, 2], [5, 3], [0, 5]], np.int32)
    v = _data((6, 3, 4), "f32", 15)
    dims = dict(update_window_dims=[1, 2], scatter_dims_to_operand_dims=[0, 1], index_vector_dim=1)
    text = scatter_program((9, 8), (6, 2), (6, 3, 4), "f32", dims, body, xs, [[], []], us)
    (y,) = run(text, [x, starts, v], [(9, 8)] + ([(6, 3, 4)] if any(us) else []))
    want = x.copy()
    for k, (a, b) in enumerate(starts):
        if 0 <= a <= 6 and 0 <= b <= 4:
            want[a:a + 3, b:b + 4] = COMBINE[body](want[a:a + 3, b:b + 4], v[k])
    _compare(y, want, f"windows {body}")


@pytest.mark.parametrize("os_,us", [([["x"], []], [[], []]), ([["x"], ["y"]], [["y"], []]), ([[], []], [["x"], []])])
def test_scatter_into_zeros(os_, us):
    """``jnp.zeros(...).at[idx].add(v)`` (a segment sum): the broadcast zeros are laid out as the
    result is wanted, each process filling its own block."""
    idx = np.array([3, 3, 0, 9, 3, 12, 9], np.int32)
    v = _data((7, 6), "f32", 16)
    text = scatter_program((10, 6), (7, 1), (7, 6), "f32", AT_ROWS, "add", None, [[], []], us, os_=os_,
                           splat_operand=True)
    (y,) = run(text, [idx[:, None], v], [(7, 6)] if any(us) else [])
    _compare(y, _scatter_rows_ref(np.zeros((10, 6), np.float32), idx, v, "add"), "segment sum")


# -- the JAX corpus ---------------------------------------------------------------------------------------

@pytest.mark.skipif(N == 3, reason="the corpus is exported for 1, 2 and 4 devices")
def test_corpus_indexing_runs_gather_and_scatter_sharded():
    d = os.path.join(CORPUS, "indexing")
    ins = [np.load(os.path.join(d, f"in{k}.npy")) for k in range(3)]
    p = SdyProgram(parse_file(os.path.join(d, f"n{N}.mlir")), comm)
    try:
        res = [p.whole(r) for r in p.run("main", ins)]
        assert not [op.name for op, _ in p.fallbacks if op.name in ("stablehlo.gather", "stablehlo.scatter")]
    finally:
        p.free()
    for k in (0, 1):
        _compare(res[k], np.load(os.path.join(d, f"n{N}.out{k}.npy")), f"indexing result {k}")


def test_gather_windows_covering_the_operand_with_split_indices():
    """Windows as large as the operand (no dim picked by an index): every lookup asks each owner
    for its whole block; the requests still count the lookups."""
    x = _data((5, 2), "f32", 17)
    starts = np.array([[-1, 4], [5, 0], [3, 6], [-2, 0], [2, 3]], np.int32)
    dims = dict(offset_dims=[0, 2], start_index_map=[0, 1], index_vector_dim=1)
    text = gather_program((5, 2), (5, 2), (5, 5, 2), "f32", dims, (5, 2), [["x"], []], [["x"], []], [[], [], []])
    (y,) = run(text, [x, starts], [(5, 2)])
    _compare(y, np.broadcast_to(x[:, None, :], (5, 5, 2)), "whole windows")


# -- random dimension numbers, against the single-process StableHLO semantics -------------------------

def _random_case(rng):
    rank = int(rng.integers(2, 4))
    shape = tuple(int(rng.integers(4, 8)) for _ in range(rank))
    k = int(rng.integers(1, rank + 1))
    index_map = sorted(rng.choice(rank, k, replace=False).tolist())
    nb = int(rng.integers(1, 3))
    batch = tuple(int(rng.integers(4, 6)) for _ in range(nb))
    return shape, index_map, batch


def _random_split(rng, rank):
    used, out = set(), []
    for _ in range(rank):
        opts = [a for a in ([], ["x"], ["y"], ["x", "y"], ["y", "x"]) if not used & set(a)]
        c = opts[rng.integers(len(opts))]
        used |= set(c)
        out.append(list(c))
    return out


def _interleave(batch, window, window_dims):
    it = iter(batch)
    return tuple(window[window_dims.index(d)] if d in window_dims else next(it)
                 for d in range(len(batch) + len(window)))


@pytest.mark.parametrize("seed", range(8))
def test_random_dimension_numbers_equal_stablehlo(seed):
    from meshrt.mlir.interpreters import stablehlo as H

    rng = np.random.default_rng(seed)
    shape, index_map, batch = _random_case(rng)
    ishape = batch + (len(index_map),)
    el = ("f32", "i32")[seed % 2]
    x = _data(shape, el, seed)
    # gather: random window sizes, some size-1 dims of the index map collapsed
    sizes = [int(rng.integers(1, n + 1)) for n in shape]
    collapsed = [d for d in index_map if sizes[d] == 1 and rng.random() < 0.7]
    nc = [d for d in range(len(shape)) if d not in collapsed]
    offset = sorted(rng.choice(len(batch) + len(nc), len(nc), replace=False).tolist())
    oshape = _interleave(batch, [sizes[d] for d in nc], offset)
    dims = dict(offset_dims=offset, collapsed_slice_dims=collapsed, start_index_map=index_map,
                index_vector_dim=len(batch))
    idx = rng.integers(-3, max(shape) + 3, ishape).astype(np.int32)
    text = gather_program(shape, ishape, oshape, el, dims, sizes, _random_split(rng, len(shape)),
                          _random_split(rng, len(ishape)), _random_split(rng, len(oshape)))
    (y,) = run(text, [x, idx], [shape] if shape != oshape else [])
    op = next(o for o in parse(text).walk() if o.name == "stablehlo.gather")
    _compare(y, H.gather(op, x, idx), f"gather {dims} {sizes}")
    # scatter: random update windows, some dims of the index map inserted
    inserted = [d for d in index_map if rng.random() < 0.5]
    nc = [d for d in range(len(shape)) if d not in inserted]
    uwd = sorted(rng.choice(len(batch) + len(nc), len(nc), replace=False).tolist())
    ushape = _interleave(batch, [int(rng.integers(1, shape[d] + 1)) for d in nc], uwd)
    body = sorted(BODIES)[seed % len(BODIES)] if el == "f32" else ("add", "set", "max", "min")[seed % 4]
    dims = dict(update_window_dims=uwd, inserted_window_dims=inserted, scatter_dims_to_operand_dims=index_map,
                index_vector_dim=len(batch))
    v = _data(ushape, el, seed + 100)
    idx = rng.integers(-2, max(shape) + 1, ishape).astype(np.int32)
    text = scatter_program(shape, ishape, ushape, el, dims, body, _random_split(rng, len(shape)),
                           _random_split(rng, len(ishape)), _random_split(rng, len(ushape)))
    (y,) = run(text, [x, idx, v], [shape] if shape != ishape else [])
    op = next(o for o in parse(text).walk() if o.name == "stablehlo.scatter")
    _compare(y, H.scatter(op, x, idx, v, COMBINE[body]), f"scatter {dims} {body}")


SPLATS = """{mesh}
func.func public @main(%x: tensor<10x6xf32> {{sdy.sharding = {xs}}}) -> (tensor<2x6xf32>, tensor<2x6xf32>) {{
  %c = stablehlo.constant dense<3> : tensor<i32>
  %i = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2x1xi32>
  %0 = "stablehlo.gather"(%x, %i) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}}> : (tensor<10x6xf32>, tensor<2x1xi32>) -> tensor<2x6xf32>
  %z = stablehlo.constant dense<2.500000e+00> : tensor<f32>
  %b = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<10x6xf32>
  %1 = "stablehlo.gather"(%b, %i) <{{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 6>}}> : (tensor<10x6xf32>, tensor<2x1xi32>) -> tensor<2x6xf32>
  return %0, %1 : tensor<2x6xf32>, tensor<2x6xf32>
}}
"""


@pytest.mark.parametrize("xs", [[[], []], [["x"], ["y"]]])
def test_gather_with_broadcast_scalars(xs):
    """Broadcast-scalar indices (``x[jnp.full(2, 3)]``) and a broadcast-scalar operand."""
    x = _data((10, 6), "f32", 18)
    y, z = run(SPLATS.format(mesh=_mesh(), xs=_sh(xs)), [x], [(10, 6)] if any(xs) else [])
    _compare(y, x[[3, 3]], "broadcast indices")
    _compare(z, np.full((2, 6), 2.5, np.float32), "broadcast operand")


# -- batching dims (jax.vmap over indexing) and scatter of several operands ------------------------------

# vmap of x[idx] / x.at[idx].add(v) over x's dim 0 with the indices' batch dim at position ``ib`` (0 or 1)
def _vmap_dims(kind, ib):
    if kind == "gather":
        return dict(offset_dims=[2], collapsed_slice_dims=[1], operand_batching_dims=[0],
                    start_indices_batching_dims=[ib], start_index_map=[1], index_vector_dim=2)
    return dict(update_window_dims=[2], inserted_window_dims=[1], input_batching_dims=[0],
                scatter_indices_batching_dims=[ib], scatter_dims_to_operand_dims=[1], index_vector_dim=2)


VM_IDX = np.array([[1, 5, -2], [0, 0, 4], [6, 3, 3], [2, 5, 5], [4, -1, 1], [3, 2, 0]], np.int32)  # (B=6, K=3)


@pytest.mark.parametrize("ib", [0, 1])
@pytest.mark.parametrize("xs,is_,os_", [([["x"], [], ["y"]], [["x"], [], []], [["x"], [], ["y"]]),
                                        ([["x"], [], []], [[], [], []], [[], [], []]),
                                        ([["x"], ["y"], []], [["y"], [], []], [["x"], [], []]),
                                        ([[], ["x"], ["y"]], [[], ["x"], []], [[], ["x"], ["y"]]),
                                        ([["x", "y"], [], []], [["x"], [], []], [["y"], [], []])])
def test_vmap_gather_with_batching_dims(ib, xs, is_, os_):
    """``jax.vmap(lambda xi, ii: xi[ii])``: row b of the result picks from row b of the operand;
    the batching dim split or not, indices split or not, the batch dim of the indices first or
    second; out-of-range starts clamp."""
    x = _data((6, 7, 4), "f32", 30)
    idx = VM_IDX if ib == 0 else np.ascontiguousarray(VM_IDX.T)
    ishape, oshape = idx.shape + (1,), idx.shape + (4,)
    is3 = is_ if ib == 0 else [is_[1], is_[0], []]
    text = gather_program((6, 7, 4), ishape, oshape, "f32", _vmap_dims("gather", ib), (1, 1, 4), xs, is3,
                          os_ if ib == 0 else [os_[1], os_[0], os_[2]])
    (y,) = run(text, [x, idx[..., None]], [(6, 7, 4)])
    want = np.stack([x[b, np.clip(VM_IDX[b], 0, 6)] for b in range(6)])
    _compare(y, want if ib == 0 else want.transpose(1, 0, 2), "vmap gather")


@pytest.mark.parametrize("body", ["add", "set", "subtract"])
@pytest.mark.parametrize("xs,is_,us", [([["x"], [], ["y"]], [["x"], []], [["x"], [], ["y"]]),
                                       ([["x"], [], []], [[], []], [[], [], []]),
                                       ([[], ["x"], []], [[], []], [["x"], [], ["y"]]),
                                       ([["y"], ["x"], []], [["x"], []], [["x"], [], []])])
def test_vmap_scatter_with_batching_dims(body, xs, is_, us):
    """``jax.vmap(lambda xi, ii, vi: xi.at[ii].add(vi))``: update (b, k) lands in row b of the
    operand; out-of-range rows skipped; the result keeps the operand's sharding."""
    x = _data((6, 7, 4), "f32", 31)
    v = _data((6, 3, 4), "f32", 32)
    text = scatter_program((6, 7, 4), (6, 3, 1), (6, 3, 4), "f32", _vmap_dims("scatter", 0), body, xs,
                           is_ + [[]], us)
    (y,) = run(text, [x, VM_IDX[..., None], v], [(6, 7, 4)] + ([(6, 3, 4)] if any(us) else []))
    want = x.copy()
    for b in range(6):
        for k, i in enumerate(VM_IDX[b]):
            if 0 <= i < 7:
                want[b, i] = COMBINE[body](want[b, i], v[b, k])
    _compare(y, want, f"vmap scatter {body}")


def _argmin_scatter_program(xs, is_, us):
    """A two-operand scatter whose body keeps the (value, index) pair with the smaller value."""
    tx, ti, tu, tiu = _t((9, 4), "f32"), _t((5, 1), "i32"), _t((5, 4), "f32"), _t((5, 4), "i32")
    txi = _t((9, 4), "i32")
    dims = _dn("scatter", update_window_dims=[1], inserted_window_dims=[0], scatter_dims_to_operand_dims=[0],
               index_vector_dim=1)
    f, i = _t((), "f32"), _t((), "i32")
    return f"""{_mesh()}
func.func public @main(%x: {tx} {{sdy.sharding = {_sh(xs)}}}, %xi: {txi} {{sdy.sharding = {_sh(xs)}}}, %i: {ti} {{sdy.sharding = {_sh(is_)}}}, %u: {tu} {{sdy.sharding = {_sh(us)}}}, %ui: {tiu} {{sdy.sharding = {_sh(us)}}}) -> ({tx} {{sdy.sharding = {_sh(xs)}}}, {txi} {{sdy.sharding = {_sh(xs)}}}) {{
  %0:2 = "stablehlo.scatter"(%x, %xi, %i, %u, %ui) <{{indices_are_sorted = false, scatter_dimension_numbers = {dims}, unique_indices = false}}> ({{
    ^bb0(%a: {f}, %ai: {i}, %b: {f}, %bi: {i}):
      %k = stablehlo.compare LT, %b, %a, FLOAT : ({f}, {f}) -> tensor<i1>
      %r = stablehlo.select %k, %b, %a : tensor<i1>, {f}
      %ri = stablehlo.select %k, %bi, %ai : tensor<i1>, {i}
      stablehlo.return %r, %ri : {f}, {i}
    }}) : ({tx}, {txi}, {ti}, {tu}, {tiu}) -> ({tx}, {txi})
  return %0#0, %0#1 : {tx}, {txi}
}}
"""


@pytest.mark.parametrize("xs,is_,us", [([["x"], ["y"]], [[], []], [[], []]), ([["x"], []], [["x"], []], [["x"], ["y"]]),
                                       ([[], ["x"]], [[], []], [["y"], []]), ([[], []], [[], []], [["x"], []])])
def test_scatter_of_two_operands_on_the_shards(xs, is_, us):
    """A scatter of (values, indices) pairs with a body coupling them (the argmin of each row's
    candidates, ties to the earlier update): each owner applies the pairs in the updates' order."""
    x = _data((9, 4), "f32", 33)
    xi = np.full((9, 4), -1, np.int32)
    idx = np.array([2, 7, 2, 11, 2], np.int32)
    u = _data((5, 4), "f32", 34)
    u[2] = u[0]  # a tie: the earlier update's index stays
    ui = np.arange(20, dtype=np.int32).reshape(5, 4)
    y, yi = run(_argmin_scatter_program(xs, is_, us), [x, xi, idx[:, None], u, ui],
                [(9, 4)] + ([(5, 4)] if any(us) else []))
    want, wanti = x.copy(), xi.copy()
    for k, r in enumerate(idx):
        if 0 <= r < 9:
            k_ = u[k] < want[r]
            want[r] = np.where(k_, u[k], want[r])
            wanti[r] = np.where(k_, ui[k], wanti[r])
    _compare(y, want, "argmin values")
    _compare(yi, wanti, "argmin indices")


def test_corpus_vmap_indexing_runs_on_the_shards():
    """The JAX-exported ``vmap`` of indexing: every gather and scatter with batching dims runs on the
    shards (no op falls back to gathered operands), equal to JAX."""
    d = os.path.join(CORPUS, "vmap_indexing")
    ins = [np.load(os.path.join(d, f"in{k}.npy")) for k in range(4)]
    p = SdyProgram(parse_file(os.path.join(d, f"n{N}.mlir")), comm)
    try:
        res = [p.whole(r) for r in p.run("main", ins)]
        assert p.fallbacks == [], [(str(op.location), op.name) for op, _ in p.fallbacks]
    finally:
        p.free()
    for k in range(4):
        _compare(res[k], np.load(os.path.join(d, f"n{N}.out{k}.npy")), f"vmap_indexing result {k}")
