"""The MLIR corpus (tests/mlir/corpus) run partitioned on real processes.

Every function of every ``NAME.partitioned.mlir`` runs on a communicator the
size of its grid (all processes for a ``?`` grid, the first k for a static
one; a grid that does not fit the process count is skipped) with each
process's part of random global inputs, and the gathered results are compared
with the un-partitioned ``NAME.mlir`` run serially on the whole arrays, and,
for the main programs, with numpy directly.  The results of update_halo are
compared halos included, wherever a halo cell lies inside the global array.
"""

import math
import os

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import Sharding
from meshrt.mlir import DYNAMIC, parse_file
from meshrt.mlir.interpreters.spmd import Program, function_shardings, gather_results, local_parts, run_function

comm = MPI.COMM_WORLD
CORPUS = os.path.join(os.path.dirname(__file__), "..", "mlir", "corpus")
STEMS = ("mlp", "mlp2d", "elementwise", "reductions", "halo", "resharding", "stencil", "tosa")

# sizes for dynamic dims of global argument types, per function
DYNAMIC_DIMS = {
    "split_replicated_tensor_axis_dynamic": (3, 5),  # 3 rows: empty shards from 4 processes on
    "move_split_dynamic_axis": (10,),
    "unshard_dynamic_axis": (6,),
}
STEPS = 3  # time steps of the stencil


def relu_mlp(x, w1, w2):
    return np.maximum(x @ w1, 0) @ w2


def heat(x, steps):
    u = x.copy()
    for _ in range(int(steps)):
        u[1:-1] = u[1:-1] + 0.25 * (u[:-2] + u[2:] - 2 * u[1:-1])
    return u


def tosa_chain(x, y, zp):
    t = np.log(np.exp(np.abs(1 / (1 + np.exp(-x)) + np.tanh(y))))
    c = np.clip(2 * zp[0] - t, -1.5, 0.0)
    m = np.maximum(c, t)
    return np.minimum(m - c, m)


NUMPY_ORACLE = {  # independent of the interpreter
    "mlp": relu_mlp, "mlp2d": relu_mlp, "heat": heat,
    "reduce_0d": lambda a: a.sum(dtype=np.int32), "reduce_1d": lambda a: a.sum(axis=1, dtype=np.int32),
    "row_sums": lambda a: a.sum(axis=1), "col_max": lambda a: a.max(axis=0),
    "generic_chain": lambda a, b: np.exp(np.where(np.tanh(a) * b - 2 > a, np.tanh(a) * b - 2, a)),
    "matmul_k_split": lambda a, b: a @ b, "tosa_chain": tosa_chain,
}


def _cases():
    out = []
    for stem in STEMS:
        g = parse_file(os.path.join(CORPUS, f"{stem}.mlir"))
        p = parse_file(os.path.join(CORPUS, f"{stem}.partitioned.mlir"))
        for name in p.functions():
            out.append(pytest.param(g, p, name, id=f"{stem}-{name}"))
    return out


def _grid_fits(modules, fn_name, size):
    """How many processes the function's grids take at ``size`` processes (0: does not fit)."""
    used = {(m, op.attributes["grid"].name) for m in modules for op in m.functions()[fn_name].walk()
            if "grid" in op.attributes}
    need = 1
    for module, name in used:
        shape = module.grids()[name].attributes["shape"]
        fixed = math.prod(s for s in shape if s != DYNAMIC)
        if DYNAMIC in shape:
            n = size - size % fixed
        else:
            n = fixed
        if n == 0 or n > size or (need > 1 and n != need):
            return 0
        need = n
    return need if used else size


def _random_args(module, name, rng):
    f = module.functions()[name]
    ftype = f.attributes["function_type"].type
    dyn = iter(DYNAMIC_DIMS.get(name, ()))
    args = []
    for t in ftype.inputs:
        if not hasattr(t, "shape"):
            args.append(t.numpy_dtype.type(STEPS))
            continue
        shape = tuple(next(dyn) if d is None else d for d in t.shape)
        dt = t.element.numpy_dtype
        if dt.kind == "f":
            a = rng.standard_normal(shape).astype(dt)
            if name == "incomplete_sharding":
                a = np.abs(a)
        else:
            a = rng.integers(-50, 50, shape).astype(dt)
        args.append(a)
    return args


def _check_halos(local, s, g):
    """Every cell of ``local`` (owned block plus halos) that lies inside the global array equals it."""
    sl = s.shard_slices(g.shape)
    idx = np.indices(local.shape)
    pos = [idx[d] - s.halo_widths(d)[0] + sl[d].start for d in range(g.ndim)]
    inside = np.all([(q >= 0) & (q < n) for q, n in zip(pos, g.shape)], axis=0)
    np.testing.assert_array_equal(local[inside], g[tuple(q[inside] for q in pos)])


@pytest.mark.parametrize("global_module, part_module, name", _cases())
def test_partitioned_matches_global(global_module, part_module, name):
    n = _grid_fits((global_module, part_module), name, comm.size)
    if n == 0:
        pytest.skip(f"the grid of @{name} does not fit {comm.size} processes")
    sub = comm.Split(0 if comm.rank < n else MPI.UNDEFINED, comm.rank)
    if sub == MPI.COMM_NULL:
        return
    try:
        rng = np.random.default_rng(sum(map(ord, name)))
        args = _random_args(global_module, name, rng)
        expected = run_function(global_module, name, args, comm=MPI.COMM_SELF)
        if name in NUMPY_ORACLE:
            direct = NUMPY_ORACLE[name](*args)
            np.testing.assert_allclose(expected[0], direct, rtol=1e-5, atol=1e-5)
        prog = Program(global_module, sub)
        try:
            arg_s, res_s = function_shardings(prog, name)
            part = Program(part_module, sub)
            try:
                results = part.run(name, local_parts(args, arg_s))
                got = gather_results(results, res_s, sub)
                for r, s, e in zip(results, res_s, expected):
                    if s is not None and any(s.halo_sizes) and name.startswith("update_halo"):
                        _check_halos(r, s, e)
            finally:
                part.free()
        finally:
            prog.free()
        if sub.rank == 0:
            for g, e in zip(got, expected):
                if isinstance(e, Sharding):  # a !shard.sharding result: the same text on any mesh
                    assert str(g) == str(e) and g.mesh.size == n
                    continue
                assert np.shape(g) == np.shape(e)
                assert np.asarray(g).dtype == np.asarray(e).dtype
                tol = 1e-4 if np.asarray(e).dtype in (np.float32, np.float16) else 1e-10
                np.testing.assert_allclose(g, e, rtol=tol, atol=tol)
    finally:
        sub.Free()
