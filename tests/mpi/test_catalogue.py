"""A catalogue of invalid inputs across the API: each raises its clear error, the same on
every process, and nothing hangs (the harness's per-test watchdog would report a hang)."""

import os
import tempfile

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import (
    AbstractMesh, CollectiveError, DistributedTensor, Mesh, MeshError, Sharding, ShardingError, all_gather,
    all_reduce, all_to_all, broadcast, explain_reshard, gather, load_state, plan_halo, reduce, reduce_scatter,
    scatter, shift, spmd, update_halo,
)
from meshrt.collectives import set_check

comm = MPI.COMM_WORLD
P = comm.size
MESH = Mesh((-1,), ("x",), comm=comm)
MESH2 = Mesh((-1, 1), comm=comm)
ROWS = Sharding(MESH, [["x"]])
X = np.arange(2.0 * P * 3).reshape(2 * P, 3)
T = DistributedTensor.from_global(X, ROWS)


def _from_local_wrong_on_last_rank():
    local = np.zeros((2, 3)) if comm.rank != P - 1 else np.zeros((5, 3))
    return DistributedTensor.from_local(local, ROWS, (2 * P, 3))


def _shape_mismatch_under_check():
    old = set_check(True)
    try:
        return all_reduce(np.zeros(comm.rank + 1 if P > 1 else 0), MESH, ["x"])
    finally:
        set_check(old)


def _foreign_npy():
    path = os.path.join(tempfile.gettempdir(), f"meshrt-catalogue-{os.getppid()}.npy")
    if comm.rank == 0:
        with open(path, "wb") as f:
            f.write(b"this is not a numpy file at all, just text" * 4)
    comm.Barrier()
    try:
        return DistributedTensor.load(path, ROWS)
    finally:
        comm.Barrier()
        if comm.rank == 0:
            os.remove(path)


def _bad_spmd_output():
    @spmd(in_shardings=(ROWS,), out_shardings=ROWS, out_shapes=[(2 * P, 3)])
    def f(x):
        return x[:1] if comm.rank == 0 else x

    return f(T)


def _checked(fn):
    """Run ``fn`` with MESHRT_CHECK on (as `set_check(True)` does for the whole program)."""
    def call():
        old = set_check(True)
        try:
            return fn()
        finally:
            set_check(old)

    return call


def _sum_on_first_only():
    if comm.rank == 0:
        T.sum()  # the others skip it: they go on to gather
    return T.gather()


def _save_paths_differ():
    path = os.path.join(tempfile.gettempdir(), f"meshrt-catalogue-{os.getppid()}-{comm.rank}.npy")
    return T.save(path)


def _halo_widths_differ():
    local = np.zeros((4, 3))
    return update_halo(local, MESH, [["x"]], [1, 1] if comm.rank else [1, 0])


def _load_state_names_differ():
    return load_state(os.path.join(tempfile.gettempdir(), f"meshrt-nothing-{os.getppid()}"),
                      {"u" if comm.rank else "v": ROWS})


ONE = P == 1  # a single process agrees with itself: the call must succeed (or fail alike)
DISAGREE = "the processes disagree"
CASES = [
    # meshes
    ("mesh size", lambda: Mesh((P + 1,), comm=comm), MeshError, f"needs exactly {P + 1} processes"),
    ("mesh names", lambda: Mesh((-1,), ("x", "y"), comm=comm), MeshError, "axis_names: .* has 2 names"),
    ("mesh text", lambda: Mesh.parse("mesh.grid @m", comm=comm), MeshError, "cannot parse"),
    ("mesh dynamic abstract", lambda: AbstractMesh((-1,)), MeshError, "has a dynamic axis"),
    ("group axis", lambda: MESH.group([3]), MeshError, "mesh_axes: mesh axis: 3 is out of range"),
    ("group name", lambda: MESH.group(["q"]), MeshError, "unknown name 'q'"),
    # shardings
    ("axis twice", lambda: Sharding(MESH, [["x"], ["x"]]), ShardingError, "is used twice"),
    ("halo count", lambda: Sharding(MESH, [[0]], halo_sizes=[1]), ShardingError, "halo_sizes: .* expected 2"),
    ("halo negative", lambda: Sharding(MESH, [[0]], halo_sizes=[1, -2]), ShardingError, "entry 1 is -2"),
    ("offsets start", lambda: Sharding(MESH, [[0]], sharded_dims_offsets=[1] + [2] * P), ShardingError,
     "starts at 1, not 0"),
    ("offsets end", lambda: Sharding(MESH, [[0]], sharded_dims_offsets=list(range(P + 1))).shard_shape((P + 5,)),
     ShardingError, f"end at {P}, but the tensor's dim 0 has size {P + 5}"),
    ("generic partial", lambda: Sharding(MESH, [], partial_axes=[0], partial_type="generic"), ShardingError,
     "'generic' is not allowed"),
    ("partial also split", lambda: Sharding(MESH, [[0]], partial_axes=[0]), ShardingError, "also used to split"),
    ("sharding text", lambda: Sharding.parse("shard.sharding @m split_axes = [[0]", MESH), ShardingError,
     "at column"),
    ("too many split dims", lambda: Sharding(MESH, [[], [0]]).shard_shape((4,)), ShardingError,
     "splits 2 dims, but the tensor has only 1"),
    ("halo not int", lambda: Sharding(MESH, [[0]], halo_sizes=[1, "a"]), ShardingError, "'a' is not an integer"),
    # collectives
    ("non-array", lambda: all_reduce([1.0, 2.0], MESH, ["x"]), CollectiveError, "x must be a numpy.ndarray"),
    ("bitwise on float", lambda: all_reduce(X, MESH, ["x"], "bitwise_and"), CollectiveError,
     "bitwise_and is not defined for float64"),
    ("unknown kind", lambda: all_reduce(X, MESH, ["x"], "median"), CollectiveError, "unknown kind 'median'"),
    ("complex max", lambda: all_reduce(X.astype(complex), MESH, ["x"], "max"), CollectiveError,
     "complex numbers are not ordered"),
    ("negative gather axis", lambda: all_gather(X, MESH, ["x"], -1), CollectiveError, "gather_axis=-1 is out of range"),
    ("gather axis too big", lambda: all_gather(X, MESH, ["x"], 5), CollectiveError, "gather_axis=5 is out of range"),
    ("root outside group", lambda: broadcast(X, MESH, ["x"], root=(P,)), MeshError, r"root: \(%d,\) is outside" % P),
    ("gather root", lambda: gather(X, MESH, ["x"], 0, root=P), MeshError, f"root: {P} is outside"),
    ("scatter axis", lambda: scatter(X, MESH, ["x"], scatter_axis=3, root=0), CollectiveError,
     "scatter_axis=3 is out of range"),
    ("shift axis", lambda: shift(X, MESH2, [0], shift_axis=1, offset=1), CollectiveError, "is not one of mesh_axes"),
    ("all_to_all axis", lambda: all_to_all(X, MESH, ["x"], split_axis=2, concat_axis=0), CollectiveError,
     "split_axis=2 is out of range"),
    ("reduce root", lambda: reduce(X, MESH, ["x"], "sum", root=-1), MeshError, "root: -1 is outside"),
    ("abstract mesh", lambda: all_reduce(X, AbstractMesh((P,)), [0]), CollectiveError,
     "communication needs a Mesh bound to a communicator"),
    ("wrong mesh axis", lambda: all_reduce(X, MESH, [4]), MeshError, "mesh axis: 4 is out of range"),
    ("float axis", lambda: reduce_scatter(X, MESH, ["x"], "sum", scatter_axis=1.5), CollectiveError,
     "scatter_axis must be an int"),
    ("bad out", lambda: all_reduce(X, MESH, ["x"], out=np.empty(1)), CollectiveError, "out has shape"),
    ("bad sizes", lambda: all_gather(X, MESH, ["x"], 0, sizes=[-1] * P), CollectiveError,
     "non-negative sizes" if P > 1 else None),  # a group of one moves nothing and reads no sizes
    ("disagreeing shapes", _shape_mismatch_under_check, CollectiveError,
     "disagree across the device group" if P > 1 else None),
    # halos
    ("halo non-array", lambda: update_halo([1.0], MESH, [[0]], [1, 1]), CollectiveError, "is not a numpy array"),
    ("halo periodic", lambda: plan_halo(Sharding(MESH, [[0]], halo_sizes=[1, 1]), (2 * P, 3), periodic=[True] * 5),
     ShardingError, "periodic: .* has 5 entries"),
    ("halo sharding", lambda: plan_halo("rows", (4,)), ShardingError, "is not a Sharding"),
    # tensors
    ("global shape", lambda: DistributedTensor.from_global(X, ROWS, global_shape=(1, 1)), ShardingError,
     "does not match global_shape"),
    ("tensor root", lambda: DistributedTensor.from_global(X, ROWS, root=P + 3), ShardingError,
     f"root: {P + 3} is not a device"),
    ("local on one rank", _from_local_wrong_on_last_rank, ShardingError, rf"on device \[{P - 1}\]"),
    ("abstract tensor", lambda: DistributedTensor.zeros((4,), Sharding(AbstractMesh((P,)), [[0]])), ShardingError,
     "is an AbstractMesh"),
    ("shapes that do not broadcast", lambda: T + DistributedTensor.from_global(X[:, :2], Sharding(MESH, [])),
     ShardingError, "could not be broadcast together"),
    ("reduction axis", lambda: T.sum(axis=5), ShardingError, "axis: 5 is out of range"),
    ("keep_partial", lambda: T.sum(keep_partial=True), ShardingError, "keep_partial: needs axis=k"),
    ("reshard mesh", lambda: T.reshard(Sharding(MESH2, [[0]])), ShardingError, "is not this tensor's mesh"),
    ("explain meshes", lambda: explain_reshard(ROWS, Sharding(AbstractMesh((P, 2)), [[0]]), (4, 4)), ShardingError,
     "differ"),
    ("periodic length", lambda: DistributedTensor.zeros((2 * P, 3), ROWS, periodic=[True] * 3), ShardingError,
     "periodic: .* has 3 entries"),
    # spmd and checkpoints
    ("spmd sharding", lambda: spmd(in_shardings=("rows",), out_shardings=ROWS), ShardingError, "entry 0 is 'rows'"),
    ("spmd output", _bad_spmd_output, ShardingError, "output 0: local: shape"),
    ("foreign checkpoint", _foreign_npy, ValueError, "npy|numpy|magic"),
    # creation agrees on global shape, dtype and sharding across the processes (always on)
    ("zeros shape per rank", lambda: DistributedTensor.zeros((8 + comm.rank, 8), ROWS), ShardingError,
     None if ONE else r"DistributedTensor.zeros: the processes disagree .* process 0: zeros\(global_shape=\(8, 8\)"),
    ("empty dtype per rank", lambda: DistributedTensor.empty((8, 8), ROWS, np.float32 if comm.rank else "f8"),
     ShardingError, None if ONE else "DistributedTensor.empty: .*dtype=float32"),
    ("full sharding per rank", lambda: DistributedTensor.full((8, 8), ROWS if comm.rank else Sharding(MESH, []), 1.0),
     ShardingError, None if ONE else "DistributedTensor.full: .*split_axes"),
    ("from_function shape", lambda: DistributedTensor.from_function(lambda i: i, (4 * P - comm.rank,), ROWS),
     ShardingError, None if ONE else "DistributedTensor.from_function: " + DISAGREE),
    ("from_global root sharding", lambda: DistributedTensor.from_global(
        X, ROWS if comm.rank else Sharding(MESH, []), root=0), ShardingError,
     None if ONE else "DistributedTensor.from_global: " + DISAGREE),
    ("from_local global shape", lambda: DistributedTensor.from_local(np.zeros((2, 3)), ROWS, (2 * P + comm.rank, 3)),
     ShardingError, None if ONE else "DistributedTensor.from_local: " + DISAGREE),
    ("periodic per rank", lambda: DistributedTensor.zeros((2 * P, 3), ROWS, periodic=comm.rank == 0), ShardingError,
     None if ONE else "periodic="),
    # MESHRT_CHECK=1: every tensor method and module entry agrees on name and arguments first
    ("sum vs max", _checked(lambda: T.max() if comm.rank % 2 else T.sum()), CollectiveError,
     None if ONE else r"different operations: the processes disagree .*process(es)? 0[, 0-9]*: DistributedTensor.sum\("),
    ("sum on rank 0 only", _checked(_sum_on_first_only), CollectiveError,
     None if ONE else r"different operations: .*process(es)? 1[, 0-9]*: DistributedTensor.gather\("),
    ("gather roots differ", _checked(lambda: T.gather(root=0 if comm.rank == 0 else P - 1)), CollectiveError,
     None if ONE else "DistributedTensor.gather: .*root=0.*root=%d" % (P - 1)),
    ("reshard targets differ", _checked(lambda: T.reshard(ROWS if comm.rank else Sharding(MESH, []))),
     CollectiveError, None if ONE else "DistributedTensor.reshard: " + DISAGREE),
    ("halo vs sum", _checked(lambda: T.update_halo() if comm.rank else T.sum()), CollectiveError,
     None if ONE else "different operations: " + DISAGREE),
    ("save paths differ", _checked(_save_paths_differ), CollectiveError,
     None if ONE else "DistributedTensor.save: " + DISAGREE),
    ("update_halo widths differ", _checked(_halo_widths_differ), CollectiveError,
     None if ONE else r"update_halo: .*\[1, 0\]"),
    ("load_state names differ", _checked(_load_state_names_differ), ValueError,
     "load_state: " + DISAGREE if not ONE else "manifest|does not exist|no checkpoint"),
]


def test_catalogue_is_large():
    assert len(CASES) >= 40


@pytest.mark.parametrize("name, call, error, match", CASES, ids=[c[0] for c in CASES])
def test_invalid_input(name, call, error, match):
    if match is None:
        call()
        return
    try:
        call()
        outcome = ("no error", "")
    except Exception as e:  # compared across processes below
        outcome = (type(e).__name__, str(e))
        assert isinstance(e, error), f"{name}: expected {error.__name__}, got {outcome}"
        import re

        assert re.search(match, str(e)), f"{name}: message {str(e)!r} does not match {match!r}"
    everyone = comm.allgather(outcome)
    assert all(o == everyone[0] for o in everyone), f"{name}: processes disagree: {everyone}"
    assert outcome[0] != "no error", f"{name}: nothing was raised"
