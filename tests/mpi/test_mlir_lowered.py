"""MLIR's own lowering to the ``mpi`` dialect, run under meshrt (tests/mlir/mpi, made by
tools/lower_corpus.py with mlir-opt 22's ``--convert-shard-to-mpi --canonicalize``).

Every function of every ``NAME.mpi.mlir`` runs on a communicator the size of its grid (the first k
processes; skipped where fewer run) next to the shard-level ``NAME.partitioned.mlir`` it was lowered
from, on each process's part of random global inputs: the two equal each other on every process,
and the gathered results equal the global ``NAME.mlir`` run on whole arrays (numpy).  The
hand-written bufferized programs (``buffers.bufferized.mlir``: shard collectives on memrefs) run
with their lowering too and are checked against numpy written here.
"""

import glob
import math
import os

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import Mesh, Sharding
from meshrt.mlir import parse_file
from meshrt.mlir.dialects.memref import shaped
from meshrt.mlir.interpreters.spmd import Program, function_shardings, gather_results, local_parts
from meshrt.mlir.lowering import compare_runs
from meshrt.tensor.distributed_tensor import DistributedTensor

MPI_NPROCS = [2, 3, 4]  # every grid here has 2 or 4 devices: at 1 process all would skip
comm = MPI.COMM_WORLD
DATA = os.path.join(os.path.dirname(__file__), "..", "mlir", "mpi")
STEMS = sorted(os.path.basename(p)[: -len(".partitioned.mlir")] for p in glob.glob(os.path.join(DATA, "*.partitioned.mlir")))


def _load(name):
    return parse_file(os.path.join(DATA, name))


def _cases():
    out = []
    for stem in STEMS:
        low = _load(f"{stem}.mpi.mlir")
        for name in low.functions():
            out.append(pytest.param(stem, name, id=f"{stem}-{name}"))
    return out


def _need(module, name):
    """Processes the function's grids take (one size, or None when they differ)."""
    sizes = {math.prod(module.grids()[op.attributes["grid"].name].attributes["shape"])
             for op in module.functions()[name].walk() if "grid" in op.attributes}
    return sizes.pop() if len(sizes) == 1 else (1 if not sizes else None)


def _sub(n):
    """A communicator of the first n processes (None on the others); the caller frees it."""
    return comm.Split(0 if comm.rank < n else MPI.UNDEFINED, comm.rank)


# sizes for dynamic dims of global argument types, per function (as tests/mpi/test_mlir_exec.py)
# (an even split: the lowering of all_slice asserts one, see test_uneven_all_slice_trips_the_lowerings_assert)
DYNAMIC_DIMS = {"split_replicated_tensor_axis_dynamic": (4, 6), "move_split_dynamic_axis": (10,),
                "unshard_dynamic_axis": (6,)}


def _random(module, name, rng):
    args = []
    dyn = iter(DYNAMIC_DIMS.get(name, ()))
    for t in module.functions()[name].attributes["function_type"].type.inputs:
        t = shaped(t)  # a tensor or memref type
        dt = t.element.numpy_dtype
        a = rng.integers(-6, 7, tuple(next(dyn) if d is None else d for d in t.shape))  # small integers: exact in every float type and any order of sums
        args.append(a.astype(dt) if dt.kind != "f" else (a / 2).astype(dt))
    return args


@pytest.mark.parametrize("stem,name", _cases())
def test_lowered_equals_shard_level_and_global(stem, name):
    glob_m, part, low = _load(f"{stem}.mlir"), _load(f"{stem}.partitioned.mlir"), _load(f"{stem}.mpi.mlir")
    n = _need(glob_m, name)
    if n is None or n > comm.size:
        pytest.skip(f"@{name} needs {n} processes")
    sub = _sub(n)
    if sub == MPI.COMM_NULL:
        return
    progs = [Program(m, sub) for m in (glob_m, part, low)]
    try:
        arrays = _random(glob_m, name, np.random.default_rng(5))
        arg_s, res_s = function_shardings(progs[0], name)
        local = local_parts(arrays, arg_s)
        a, b, diff = compare_runs(progs[1], progs[2], name, local, sub)
        assert diff is None, f"@{name}: {diff}"
        got = gather_results(b, res_s, sub)
        want = progs[0].run(name, arrays)
        if sub.rank == 0:
            for g, w in zip(got, want):
                np.testing.assert_allclose(g, w, rtol=1e-6)
    finally:
        for p in progs:
            p.free()
        sub.Free()


# -- the bufferized programs, against numpy ------------------------------------------------------------

def _group_ranks(shape, axes, rank):
    """The ranks of ``rank``'s device group over grid ``axes`` (row-major linear index)."""
    coords = np.unravel_index(rank, shape)
    out = []
    for r in range(math.prod(shape)):
        c = np.unravel_index(r, shape)
        if all(c[d] == coords[d] for d in range(len(shape)) if d not in axes):
            out.append(r)
    return out


def _halo_case(sub, shape, split, halos, owned_global, dtype):
    """(input buffer with zero halos, expected buffer after update_halo) of this process."""
    mesh = Mesh(shape, comm=sub)
    try:
        s = Sharding(mesh, split, halo_sizes=halos)
        before = np.array(DistributedTensor.from_global(owned_global, s).local)
        after = local_parts([owned_global], [s])[0]
        return before, np.array(after)
    finally:
        mesh.free()


BUFFER_CASES = ["allreduce_memref", "allreduce_new_type", "allreduce_tensor_to_memref", "update_halo_memref",
                "update_halo_subview", "buffers_around"]


@pytest.mark.parametrize("name", BUFFER_CASES)
def test_bufferized_program_and_its_lowering(name):
    src, low = _load("buffers.bufferized.mlir"), _load("buffers.bufferized.mpi.mlir")
    n = _need(src, name)
    if n > comm.size:
        pytest.skip(f"@{name} needs {n} processes")
    sub = _sub(n)
    if sub == MPI.COMM_NULL:
        return
    rng = np.random.default_rng([3, sub.rank])
    progs = [Program(src, sub), Program(low, sub)]
    try:
        if name.startswith("update_halo"):
            shape, split, halos = ((2,), [[0]], [1, 2]) if name == "update_halo_memref" else ((2, 2), [[0], [1]], [1] * 4)
            gshape = (6, 5) if name == "update_halo_memref" else (8, 10)
            g = np.arange(math.prod(gshape)).reshape(gshape)
            g = g.astype(np.int64 if name == "update_halo_memref" else np.float64)
            before, after = _halo_case(sub, shape, split, halos, g, g.dtype)
            if name == "update_halo_subview":  # the halo'd block inside a ring that stays as it was
                ring = np.full((8, 9), -7.0)
                ring[1:7, 1:8] = before
                before, expected = ring, ring.copy()
                expected[1:7, 1:8] = after
            else:
                expected = after
            args = [before]
            want = [expected]
        else:
            args = _random(src, name, rng) if name != "buffers_around" else [
                rng.integers(-5, 6, (4, 4)).astype(np.float32), np.int64(sub.rank % 4)]
            everyone = sub.allgather(args[0])
            if name == "buffers_around":
                b = [x.copy() for x in everyone]
                for r, x in enumerate(b):
                    x[r % 4, 3] = x[r % 4, 0] ** 2
                total = b[0] + b[1]
                want = [total.reshape(16), np.float32(total.reshape(16)[3])]
            else:
                shape = src.grids()["g2" if name == "allreduce_memref" else "g22"].attributes["shape"]
                axes = {"allreduce_memref": [0], "allreduce_new_type": [1], "allreduce_tensor_to_memref": [0, 1]}[name]
                group = [everyone[r] for r in _group_ranks(tuple(shape), axes, sub.rank)]
                if name == "allreduce_memref":
                    want = [np.maximum.reduce(group)]
                elif name == "allreduce_new_type":
                    want = [np.sum([x.astype(np.float64) for x in group], axis=0)]
                else:
                    want = [np.sum(group, axis=0, dtype=np.int32)]
        kept = [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in args]
        a, b, diff = compare_runs(progs[0], progs[1], name, args, sub)
        assert diff is None, f"@{name}: {diff}"
        for x, k in zip(args, kept):  # compare_runs ran both on copies: the caller's buffers are as they were
            np.testing.assert_array_equal(x, k)
        for got, w in zip(b, want):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(w))
            assert np.asarray(got).dtype == np.asarray(w).dtype
    finally:
        for p in progs:
            p.free()
        sub.Free()


# -- lowered for one process each (mpi.dlti: rank and world size folded to constants) --------------------------

@pytest.mark.parametrize("name", ["update_halo_1d", "update_halo_2d"])
def test_per_process_lowerings(name):
    size = len(glob.glob(os.path.join(DATA, "halo.rank*.mpi.mlir")))
    if comm.size < size:
        pytest.skip(f"the per-process lowerings are for {size} processes")
    sub = _sub(size)
    if sub == MPI.COMM_NULL:
        return
    glob_m, part = _load("halo.mlir"), _load("halo.partitioned.mlir")
    low = _load(f"halo.rank{sub.rank}.mpi.mlir")  # this process's own program
    progs = [Program(m, sub) for m in (glob_m, part, low)]
    try:
        arrays = _random(glob_m, name, np.random.default_rng(9))
        arg_s, _ = function_shardings(progs[0], name)
        a, b, diff = compare_runs(progs[1], progs[2], name, local_parts(arrays, arg_s), sub)
        assert diff is None, f"@{name}: {diff}"
    finally:
        for p in progs:
            p.free()
        sub.Free()


def test_a_module_lowered_for_another_process_is_refused_everywhere():
    if comm.size < 2:
        pytest.skip("needs 2 processes")
    from meshrt.mlir import MLIRError

    low = _load("halo.rank1.mpi.mlir")  # every process takes rank 1's program
    prog = Program(low, comm)
    try:
        with pytest.raises(MLIRError, match=r"MPI:comm_world_rank = 1, MPI:comm_world_size = 4; it cannot run on "
                                            r"process\(es\) \["):
            prog.run("update_halo_1d", [np.zeros((4, 12), np.int64)])
    finally:
        prog.free()


def test_uneven_all_slice_trips_the_lowerings_assert():
    """shard.all_slice splits 3 rows over 2 processes unevenly (1 and 2); mlir-opt 22's lowering of it
    asserts an even split instead: the lowered program stops at its cf.assert, on every process."""
    if comm.size < 2:
        pytest.skip("needs 2 processes")
    from meshrt.mlir import MLIRError

    sub = _sub(2)
    if sub == MPI.COMM_NULL:
        return
    name = "split_replicated_tensor_axis_dynamic"
    part, low = Program(_load("resharding.n2.partitioned.mlir"), sub), Program(_load("resharding.n2.mpi.mlir"), sub)
    try:
        x = np.ones((3, 3, 5), np.float32)
        rows = sub.allgather(part.run(name, [x])[0].shape[0])  # the shard level splits 3 rows as 1 + 2
        assert sorted(rows) == [1, 2]
        with pytest.raises(MLIRError, match=r"resharding\.n2\.mpi\.mlir:\d+:\d+: 'cf\.assert' failed on process "
                                            r"\d: Slicing a tensor with axis size that is not exactly divisible"):
            low.run(name, [x])
    finally:
        part.free()
        low.free()
        sub.Free()
