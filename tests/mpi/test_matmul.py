"""matmul / dot / tensordot / einsum on DistributedTensors, valid at any process count.

Oracle: numpy on the global arrays (built identically on every rank), compared with
the gathered result.  Every call also checks that the collectives that ran are the
ones `explain` lists (a recording hook on meshrt.collectives).
"""

import contextlib
import importlib.util
import math
import os

import numpy as np
import pytest
from mpi4py import MPI

import meshrt
from meshrt import Mesh, ShardingError, collectives, reshard
from meshrt.linalg.matmul import RING_CHUNK_ELEMENTS, explain_einsum, explain_matmul
from meshrt.sharding import Sharding
from meshrt.tensor import DistributedTensor as DT

comm = MPI.COMM_WORLD
N = comm.size
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RECORDED = ("all_gather", "all_reduce", "reduce_scatter", "all_to_all")


@pytest.fixture(scope="module")
def meshes():
    ms = {"1d": Mesh((-1,), ("x",), comm=comm), "2d": Mesh((-1, -1), ("x", "y"), comm=comm)}
    yield ms
    for m in ms.values():
        m.free()


@contextlib.contextmanager
def recording(*modules):
    """Record (op, mesh axes, local input shape, axis attrs) of every collective call
    through meshrt.collectives (and the given modules' imported names), skipping groups
    of one device (they move nothing)."""
    calls, saved = [], []

    def wrap(name, fn):
        def rec(x, mesh, mesh_axes=None, *args, **kwargs):
            axes = mesh.axes(mesh_axes)
            if mesh.axes_size(axes) > 1:
                attrs = {k: v for k, v in kwargs.items() if k in ("gather_axis", "scatter_axis", "split_axis",
                                                                  "concat_axis")}
                if args and name in ("all_gather",):
                    attrs["gather_axis"] = args[0]
                if len(args) > 1 and name == "reduce_scatter":
                    attrs["scatter_axis"] = args[1]
                calls.append((name, tuple(sorted(axes)), tuple(np.shape(x)), tuple(sorted(attrs.items()))))
            return fn(x, mesh, mesh_axes, *args, **kwargs)
        return rec

    for mod in (collectives,) + modules:
        for name in RECORDED + ("shift",):  # shift: an all_gather run as a ring (ContractionPlan.ring)
            if hasattr(mod, name):
                saved.append((mod, name, getattr(mod, name)))
    for mod, name, fn in saved:
        setattr(mod, name, wrap(name, fn))
    exchange = reshard._exchange

    def rec_exchange(step, x, *args):  # all_to_all, permute and exchange steps run point-to-point
        calls.append((step.op, step.mesh_axes, tuple(x.shape), ()))
        return exchange(step, x, *args)
    reshard._exchange = rec_exchange
    saved.append((reshard, "_exchange", exchange))
    try:
        yield calls
    finally:
        for mod, name, fn in saved:
            setattr(mod, name, fn)


def planned(plan):
    """The communicating steps a plan lists (collectives on groups larger than one)."""
    mesh = plan.result.mesh
    out = []
    for stage, st in plan.collectives():
        if plan.ring is not None and stage == f"operand {plan.ring[0]}" and st.op == "all_gather":
            # the gather runs as a ring of shifts: n - 1 steps, each piece passed on in chunks
            piece = math.prod(st.before.shard_shape(plan.shapes[plan.ring[0]], mesh.rank))
            chunks = -(-piece // RING_CHUNK_ELEMENTS)
            out += ["shift"] * ((mesh.shape[plan.ring[2]] - 1) * chunks)
        elif st.op in ("permute", "exchange") or (st.op in RECORDED and mesh.axes_size(st.mesh_axes) > 1):
            out.append(st.op)
    return out


def check(result, expected, dtype):
    got = result.gather()
    assert got.shape == np.shape(expected)
    if np.dtype(dtype).kind in "iu":
        assert np.array_equal(got, expected)
    else:
        tol = 1e-4 if np.dtype(dtype) == np.float32 else 1e-10
        np.testing.assert_allclose(got, expected, rtol=tol, atol=tol)


def data(shape, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(-5, 6, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def run_matmul(A, B, sa, sb, **kw):
    a, b = DT.from_global(A, sa), DT.from_global(B, sb)
    plan = explain_matmul(a, b, **kw)
    with recording() as calls:
        c = meshrt.matmul(a, b, **kw)
    assert [name for name, *_ in calls] == planned(plan), str(plan)
    assert c.sharding == plan.final
    return c, plan


def test_row_split_times_replicated_moves_nothing(meshes):
    m = meshes["1d"]
    A, B = data((2 * N + 3, 7), np.float64, 1), data((7, 5), np.float64, 2)
    c, plan = run_matmul(A, B, Sharding(m, [["x"]]), Sharding(m, []))
    check(c, A @ B, np.float64)
    assert plan.collectives() == [] and c.sharding == Sharding(m, [["x"]])


def test_replicated_times_column_split_moves_nothing(meshes):
    m = meshes["1d"]
    A, B = data((4, 6), np.int64, 3), data((6, 3 * N + 1), np.int64, 4)
    c, plan = run_matmul(A, B, Sharding(m, []), Sharding(m, [[], ["x"]]))
    check(c, A @ B, np.int64)
    assert plan.collectives() == [] and c.sharding == Sharding(m, [[], ["x"]])


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
def test_contracting_dim_split_in_both_is_partial_then_reduced(meshes, dtype):
    m = meshes["1d"]
    A, B = data((5, 2 * N + 1), dtype, 5), data((2 * N + 1, 4), dtype, 6)
    sa, sb = Sharding(m, [[], ["x"]]), Sharding(m, [["x"]])
    c, plan = run_matmul(A, B, sa, sb)
    check(c, A @ B, dtype)
    assert plan.result.partial_axes == (0,) and c.sharding == Sharding(m, [])
    assert [st.op for _, st in plan.collectives()] == ["all_reduce"]
    p, plan = run_matmul(A, B, sa, sb, partial_ok=True)
    assert p.sharding == Sharding(m, [], partial_axes=["x"]) and plan.collectives() == []
    check(p, A @ B, dtype)
    r, plan = run_matmul(A, B, sa, sb, out_sharding=Sharding(m, [["x"]]))
    assert [st.op for _, st in plan.collectives()] == ["reduce_scatter"]
    check(r, A @ B, dtype)


def test_incompatible_operands_reshard_the_cheaper_one(meshes):
    m = meshes["1d"]
    rows, cols = Sharding(m, [["x"]]), Sharding(m, [[], ["x"]])
    # a is big, b small: b is gathered, a stays
    A, B = data((4 * N + 2, 9), np.float64, 7), data((9, 3), np.float64, 8)
    c, plan = run_matmul(A, B, rows, cols)
    check(c, A @ B, np.float64)
    assert plan.operand_reshards[0] is None and (N == 1 or plan.operand_reshards[1] is not None)
    # now a is the small one
    A, B = data((2, 9), np.float64, 9), data((9, 6 * N + 1), np.float64, 10)
    c, plan = run_matmul(A, B, rows, cols)
    check(c, A @ B, np.float64)
    assert N == 1 or plan.operand_reshards[1] is None


def test_two_dim_mesh(meshes):
    m = meshes["2d"]
    px, py = m.shape
    A, B = data((2 * px + 1, 3 * py + 2), np.float64, 11), data((3 * py + 2, 2 * py + 3), np.float64, 12)
    # rows on x, contraction on y in both: result rows on x, partial over y
    c, plan = run_matmul(A, B, Sharding(m, [["x"], ["y"]]), Sharding(m, [["y"]]))
    check(c, A @ B, np.float64)
    assert plan.result == Sharding(m, [["x"]], partial_axes=["y"]) and c.sharding == Sharding(m, [["x"]])
    # 2-D block result with no communication
    c, plan = run_matmul(A, B, Sharding(m, [["x"]]), Sharding(m, [[], ["y"]]))
    check(c, A @ B, np.float64)
    assert plan.collectives() == [] and c.sharding == Sharding(m, [["x"], ["y"]])
    # a dim on both axes, contraction on both
    c, plan = run_matmul(A, B, Sharding(m, [[], ["x", "y"]]), Sharding(m, [["x", "y"]]),
                         out_sharding=Sharding(m, [["y"], ["x"]]))
    check(c, A @ B, np.float64)


def test_batched_matmul_with_batch_dim_split(meshes):
    m = meshes["1d"]
    A, B = data((N + 2, 3, 4), np.float64, 13), data((N + 2, 4, 5), np.float64, 14)
    c, plan = run_matmul(A, B, Sharding(m, [["x"]]), Sharding(m, [["x"]]))
    check(c, A @ B, np.float64)
    assert plan.collectives() == [] and c.sharding == Sharding(m, [["x"]])
    c, plan = run_matmul(A, B, Sharding(m, [["x"]]), Sharding(m, []))  # b sliced locally
    check(c, A @ B, np.float64)
    assert [st.op for _, st in plan.collectives()] == ["all_slice"] and plan.elements_moved == 0
    # broadcast batch dims: (1, 3, 4) @ (n, 4, 5) and (4, 5) @ (n, 5, 2)
    A1 = data((1, 3, 4), np.float64, 15)
    c, _ = run_matmul(A1, B, Sharding(m, []), Sharding(m, [["x"]]))
    check(c, A1 @ B, np.float64)
    W = data((3, 4), np.int64, 16)
    c, _ = run_matmul(W, B.astype(np.int64), Sharding(m, [["x"]]), Sharding(m, [["x"]]))
    check(c, W @ B.astype(np.int64), np.int64)


def test_vectors(meshes):
    m = meshes["1d"]
    v, M = data((2 * N + 3,), np.float64, 17), data((2 * N + 3, 4), np.float64, 18)
    rows = Sharding(m, [["x"]])
    c, _ = run_matmul(v, M, rows, rows)
    check(c, v @ M, np.float64)
    c, _ = run_matmul(M.T.copy(), v, Sharding(m, [[], ["x"]]), rows)
    check(c, M.T @ v, np.float64)
    c, plan = run_matmul(v, v, rows, rows)
    assert c.global_shape == () and [st.op for _, st in plan.collectives()] == ["all_reduce"]
    check(c, v @ v, np.float64)
    check(np.dot(DT.from_global(v, rows), DT.from_global(v, rows)), np.dot(v, v), np.float64)


def test_uneven_offsets_and_halos(meshes):
    m = meshes["1d"]
    k = 3 * N + 2
    offs = [0] + [3 * i + 1 for i in range(1, N)] + [k]
    A, B = data((5, k), np.float64, 19), data((k, 4), np.float64, 20)
    sa = Sharding(m, [[], ["x"]], sharded_dims_offsets=offs)
    sb = Sharding(m, [["x"]], halo_sizes=[1, 1])
    c, _ = run_matmul(A, B, sa, sb)
    check(c, A @ B, np.float64)


def test_partial_operand_stays_partial(meshes):
    m = meshes["2d"]
    A, B = data((4, 6), np.float64, 21), data((6, 2 * m.shape[1] + 1), np.float64, 22)
    a = DT.from_global(A, Sharding(m, [])).reshard(Sharding(m, [], partial_axes=["x"]))
    b = DT.from_global(B, Sharding(m, [[], ["y"]]))
    plan = explain_matmul(a, b, partial_ok=True)
    assert plan.result == Sharding(m, [[], ["y"]], partial_axes=["x"]) and plan.collectives() == []
    check(meshrt.matmul(a, b, partial_ok=True), A @ B, np.float64)
    check(a @ b, A @ B, np.float64)
    # b touching the partial axis: a is reduced first
    b = DT.from_global(B, Sharding(m, [[], ["x"]]))
    check(a @ b, A @ B, np.float64)
    # a max-partial operand is never multiplied as is (max of products is not the product of maxes)
    a_max = DT.from_global(A, Sharding(m, [])).reshard(Sharding(m, [], partial_axes=["x"], partial_type="max"))
    assert not explain_matmul(a_max, b, partial_ok=True).targets[0].is_partial
    check(a_max @ b, A @ B, np.float64)


def test_mixed_numpy_operand_is_the_global_array(meshes):
    m = meshes["1d"]
    A, B = data((2 * N + 1, 3), np.float64, 23), data((3, 4), np.float64, 24)
    a = DT.from_global(A, Sharding(m, [["x"]]))
    check(a @ B, A @ B, np.float64)
    check(np.matmul(a, B), A @ B, np.float64)
    check(B.T @ DT.from_global(A.T.copy(), Sharding(m, [[], ["x"]])), B.T @ A.T, np.float64)
    if N > 1:  # a local block passed by one process: an error everywhere, not a hang
        with pytest.raises(ShardingError, match="every process must pass the same"):
            a @ (B if comm.rank else B[:, :2])


EINSUMS = [
    ("ij,jk->ik", [(5, 7), (7, 3)]),
    ("ij,kj->ik", [(5, 7), (3, 7)]),
    ("bij,bjk->bik", [(3, 4, 5), (3, 5, 2)]),
    ("ij,ij->ij", [(6, 5), (6, 5)]),
    ("ij,ij->", [(6, 5), (6, 5)]),
    ("i,j->ij", [(5,), (4,)]),
    ("ij,jk", [(5, 7), (7, 3)]),
    ("ij->ji", [(6, 5)]),
    ("ij->i", [(6, 5)]),
    ("ijk->kj", [(3, 6, 5)]),
    ("ij->", [(6, 5)]),
]


@pytest.mark.parametrize("subscripts,shapes", EINSUMS)
def test_einsum_forms(meshes, subscripts, shapes):
    m = meshes["2d"]
    arrays = [data(tuple(n + N for n in s), np.float64, 30 + i) for i, s in enumerate(shapes)]
    for split in ([["x"]], [[], ["y"]], [["y"], ["x"]]):
        tensors = [DT.from_global(x, Sharding(m, split[: x.ndim])) for x in arrays]
        plan = explain_einsum(subscripts, *tensors)
        with recording() as calls:
            got = np.einsum(subscripts, *tensors)
        assert [name for name, *_ in calls] == planned(plan)
        check(got, np.einsum(subscripts, *arrays), np.float64)


def test_tensordot_and_dot(meshes):
    m = meshes["2d"]
    A, B = data((3, 4, 5), np.float64, 40), data((5, 4, 2 + N), np.float64, 41)
    a, b = DT.from_global(A, Sharding(m, [["x"], ["y"]])), DT.from_global(B, Sharding(m, [[], ["y"], ["x"]]))
    check(np.tensordot(a, b, axes=([1, 2], [1, 0])), np.tensordot(A, B, axes=([1, 2], [1, 0])), np.float64)
    check(meshrt.tensordot(a, b, axes=1), np.tensordot(A, B, axes=1), np.float64)
    check(np.tensordot(a, b, 0), np.tensordot(A, B, 0), np.float64)
    C = data((2, 5, 1 + N), np.float64, 42)
    check(np.dot(a, DT.from_global(C, Sharding(m, [["y"], ["x"]]))), np.dot(A, C), np.float64)
    check(meshrt.dot(a, DT.from_global(C[0, :, 0].copy(), Sharding(m, [["x"]]))), np.dot(A, C[0, :, 0]), np.float64)
    check(np.dot(a, 2.0), A * 2.0, np.float64)


def test_errors_raise_on_every_process(meshes):
    m = meshes["1d"]
    a = DT.from_global(np.ones((4, 3)), Sharding(m, [["x"]]))
    b = DT.from_global(np.ones((4, 3)), Sharding(m, []))
    with pytest.raises(ValueError, match="do not match in the contracted dim"):
        a @ b
    w = DT.from_global(np.ones((3, 2)), Sharding(m, []))
    for bad, ops, match in (("...ij,jk", (a, w), "ellipsis"), ("ii->i", (b,), "repeats a label"),
                            ("ij,jk,kl", (a, w), "3 operand terms"), ("ij,jk,kl", (a, w, w), "one or two"),
                            ("ij,jk->iq", (a, w), "in no operand"), ("ij,jk", (a, b), "has size")):
        with pytest.raises(ValueError, match=match) as e:
            meshrt.einsum(bad, *ops)
        assert repr(bad) in str(e.value)
    with pytest.raises(TypeError, match="unsupported arguments"):
        np.matmul(a, w, out=np.empty((4, 2)))
    with pytest.raises(ValueError, match="out_sharding or partial_ok"):
        meshrt.matmul(a, w, out_sharding=Sharding(m, []), partial_ok=True)
    with pytest.raises(ShardingError):
        meshrt.matmul(a, w, out_sharding=Sharding(m, [[], [], ["x"]]))


SPLITS_1D = [[], [["x"]], [[], ["x"]]]
SPLITS_2D = [[], [["x"]], [[], ["y"]], [["y"], ["x"]], [["x", "y"]], [[], ["y", "x"]]]


def random_cases(count, seed=0):
    """The same pseudo-random cases on every rank (hypothesis would shrink a failure on
    the failing rank alone, and the ranks' collectives would no longer match)."""
    rng = np.random.default_rng(seed)
    for _ in range(count):
        m, k, n = (int(x) for x in rng.integers(1, 10, size=3))
        two_d = bool(rng.integers(2))
        splits = SPLITS_2D if two_d else SPLITS_1D
        i, j = (int(x) for x in rng.integers(len(splits), size=2))
        o = int(rng.integers(len(splits) + 2))
        yield m, k, n, two_d, splits[i], splits[j], (splits[o] if o < len(splits) else o - len(splits)), \
            [np.float32, np.float64, np.int64][int(rng.integers(3))]


@pytest.mark.parametrize("case", list(random_cases(24)), ids=str)
def test_random_matmuls_match_numpy(meshes, case):
    m, k, n, two_d, split_a, split_b, out, dtype = case
    mesh = meshes["2d" if two_d else "1d"]
    A, B = data((m, k), dtype, m * 100 + k), data((k, n), dtype, n * 100 + k)
    kw = {"out_sharding": Sharding(mesh, out)} if isinstance(out, list) else {"partial_ok": bool(out)}
    c, plan = run_matmul(A, B, Sharding(mesh, split_a), Sharding(mesh, split_b), **kw)
    check(c, A @ B, dtype)


def _load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", os.path.join(ROOT, "examples", f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("sizes", [("8", "30", "50"), ("5", "13", "21")])
def test_global_view_mlp_runs_the_same_collectives_as_the_spmd_one(sizes):
    args = ["--batch", sizes[0], "--d-model", sizes[1], "--d-ff", sizes[2]]
    spmd_mlp, global_mlp = _load_example("mlp"), _load_example("mlp_global")
    with recording(spmd_mlp) as by_hand:
        assert spmd_mlp.main(args) == 0
    with recording() as planned_calls:
        assert global_mlp.main(args) == 0
    assert planned_calls == by_hand
    if N > 1:
        # y: all_gather + reduce_scatter; y_partial: all_gather; its gather() all-reduces the partial sums
        assert [c[0] for c in by_hand] == ["all_gather", "reduce_scatter", "all_gather", "all_reduce"]


def test_transposed_views_as_operands(meshes):
    m = meshes["1d"]
    A, B = data((2 * N + 3, 5), np.float64, 50), data((2 * N + 3, 3), np.float64, 51)
    a, b = DT.from_global(A, Sharding(m, [["x"]])), DT.from_global(B, Sharding(m, [[], ["x"]]))
    check(a.T @ a, A.T @ A, np.float64)  # strided interiors, contraction split in both
    check(b.T @ a, B.T @ A, np.float64)
    check(np.einsum("ij,ik->jk", a, DT.from_global(B, Sharding(m, [["x"]]))), A.T @ B, np.float64)


@pytest.mark.parametrize("subscripts,split_a,split_b", [
    ("ij,jk->ik", [["x"]], [[], ["x"]]),   # the gathered label is a result dim: pieces fill result slices
    ("ij,jk->ik", [["x"]], [["x"]]),       # the gathered label is contracted: pieces' products are summed
    ("bij,bjk->bik", [[], ["x"]], [[], [], ["x"]]),
])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_large_gather_runs_as_a_ring_of_shifts(meshes, subscripts, split_a, split_b, dtype):
    """An all_gather of at least RING_MIN_ELEMENTS feeding a contraction runs as a ring: N-1 steps,
    each multiplying one piece then passing it on in chunks: the same result as numpy, and the plan
    says so."""
    if N > 4:
        pytest.skip("oversubscribed: the ring runs at 2, 3 and 4 processes (1152x576 operands)")
    mesh = meshes["1d"]
    inputs, _ = subscripts.split("->")
    dims = {"i": 1152, "j": 576, "k": 576, "b": 2}  # equal pieces on 2, 3, 4, 6, 8; the larger operand stays
    shapes = [tuple(dims[ch] for ch in lab) for lab in inputs.split(",")]
    A, B = data(shapes[0], dtype, 1), data(shapes[1], dtype, 2)
    a, b = DT.from_global(A, Sharding(mesh, split_a)), DT.from_global(B, Sharding(mesh, split_b))
    plan = explain_einsum(subscripts, a, b)
    assert (plan.ring is not None) == (N > 1), str(plan)
    if N > 1:
        assert "as a ring" in str(plan)
    with recording() as calls:
        c = np.einsum(subscripts, a, b)
    assert [name for name, *_ in calls] == planned(plan), str(plan)
    shifts = [np.prod(shape) for name, _, shape, _ in calls if name == "shift"]
    piece = np.prod(a.interior.shape if plan.ring and plan.ring[0] == 0 else b.interior.shape)
    # N - 1 steps, each passing the piece on in chunks of at most RING_CHUNK_ELEMENTS (one buffer goes round)
    assert sum(shifts) == (N - 1) * piece and all(n <= RING_CHUNK_ELEMENTS for n in shifts), (shifts, piece)
    check(c, np.einsum(subscripts, A, B), dtype)
