"""Every MPI call meshrt makes on its own behalf is a named operation for the watchdog.

A static scan of meshrt's source (``ast``): a call of an mpi4py communicator or file
method (``comm.Allreduce(...)``, ``mesh.comm.allgather(...)``, ``MPI.File.Open(...)``)
must sit inside ``with _mpi.internal(...)`` (which names the operation, the step and
the device group), or in `meshrt.collectives`, whose every call runs under the
compiled front's mark.  A new call outside both fails here, naming file and line.
"""

import ast
import pathlib

import pytest
from mpi4py import MPI

import meshrt

ROOT = pathlib.Path(meshrt.__file__).parent

# Where the calls need no mark: the registered collectives themselves, and the benchmark,
# whose raw mpi4py calls are the baseline it measures meshrt against.
REGISTERED = {"collectives/common.py": "the collectives' shared check: runs under its collective's mark",
              "collectives/reductions.py": "the collectives: each runs under its compiled front's mark",
              "collectives/move.py": "the collectives: each runs under its compiled front's mark",
              "collectives/p2p.py": "the collectives: each runs under its compiled front's mark",
              "bench/__init__.py": "the raw mpi4py side of each measurement",
              "bench/cases.py": "the raw mpi4py side of each measurement",
              "bench/compare.py": "the benchmark's own coordination of IMB-MPI1 and the C loop beside meshrt"}

# Methods of the communicator classes that neither communicate nor wait: queries, local
# handles, persistent point-to-point requests (created locally; started elsewhere).
_LOCAL_PREFIXES = ("Get_", "Is_", "f2py", "py2f", "from", "to")
_LOCAL = {"Abort", "Call_errhandler", "Compare", "Create_errhandler", "Create_keyval", "Delete_attr",
          "Free_keyval", "Set_attr", "Set_errhandler", "Set_name", "Attach_buffer", "Detach_buffer", "Shift",
          "Seek", "Delete", "free", "Send_init", "Recv_init", "Bsend_init", "Ssend_init", "Rsend_init",
          "Psend_init", "Precv_init"}

# Calls that share a communicator method's name but are not one: (file, receiver, method) -> why.
NOT_COMMUNICATORS = {
    ("mlir/interpreters/spmd.py", "t", "gather"): "DistributedTensor.gather, a named operation itself",
    ("mlir/interpreters/linalg.py", "f", "reduce"): "a numpy ufunc's reduce",
    ("mlir/interpreters/tosa.py", "f", "reduce"): "a numpy ufunc's reduce",
    ("mlir/interpreters/stablehlo.py", "uf", "reduce"): "a numpy ufunc's reduce",
    ("mlir/shardy/program.py", "value", "gather"): "DistributedTensor.gather, a named operation itself",
    ("mlir/shardy/program.py", "v", "gather"): "DistributedTensor.gather, a named operation itself",
    ("mlir/shardy/program.py", "x", "gather"): "DistributedTensor.gather, a named operation itself",
    ("array_api/_device.py", "x", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/array_object.py", "self", "gather"): "DistributedTensor.gather, a named operation itself",
    ("io/formats.py", "t", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/advanced_index.py", "t", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/advanced_index.py", "k", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/advanced_index.py", "value", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/distributed_tensor.py", "self", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/mixed.py", "x", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/distributed_tensor.py", "t", "gather"): "DistributedTensor.gather, a named operation itself",
    ("linalg/dense.py", "a", "gather"): "DistributedTensor.gather, a named operation itself",
    ("linalg/dense.py", "bt", "gather"): "DistributedTensor.gather, a named operation itself",
    ("linalg/numpy_linalg.py", "a", "gather"): "DistributedTensor.gather, a named operation itself",
    ("linalg/numpy_linalg.py", "t", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/mixed.py", "v", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/numpy_misc.py", "v", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/numpy_stats.py", "bins", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/numpy_stats.py", "weights", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/numpy_stats.py", "a", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/numpy_stats.py", "c", "gather"): "DistributedTensor.gather, a named operation itself",
    ("tensor/reductions.py", "ufunc", "reduce"): "a numpy ufunc's reduce",
    ("halo.py", "r", "Free"): "a persistent request's Free (local)",
    ("halo.py", "t", "Free"): "a datatype's Free (local)",
    ("io/npy.py", "t", "Free"): "a datatype's Free (local)",
    ("bench/cases.py", "r", "Free"): "a request's Free (local)",
    ("runtime/mpi.py", "MPI.Op", "Create"): "an MPI.Op made from a Python function (local)",
    ("runtime/mpi.py", "op", "Free"): "an MPI.Op's Free (local)",
    ("runtime/mpi.py", "group", "Free"): "an MPI.Group's Free (local)",
    ("runtime/mpi.py", "world", "Free"): "an MPI.Group's Free (local)",
    ("halo.py", "from_numpy_dtype(x.dtype)", "Dup"): "a datatype's Dup (local)",
}


def communicator_methods() -> set:
    names = set()
    for cls in (MPI.Comm, MPI.Intracomm, MPI.Intercomm, MPI.Topocomm, MPI.Cartcomm, MPI.Graphcomm,
                MPI.Distgraphcomm, MPI.File):
        names.update(n for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n)))
    return {n for n in names if n not in _LOCAL and not n.startswith(_LOCAL_PREFIXES)}


def _is_internal(item: ast.withitem) -> bool:
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return False
    f = call.func
    return (isinstance(f, ast.Name) and f.id == "internal") or (isinstance(f, ast.Attribute) and f.attr == "internal")


def _modules_imported(tree) -> set:
    """Names bound to modules by the file's imports (``np``, ``C``): their functions are not methods."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            out.update(a.asname or a.name for a in node.names if a.name[:1].islower() and a.name != "MPI")
    return out


def unmarked_calls(source: str, relpath: str, methods: set) -> list:
    """``(line, receiver, method)`` of each communicator-method call outside ``with internal(...)``."""
    tree = ast.parse(source)
    modules = _modules_imported(tree) - {"MPI"}
    found = []

    def visit(node, marked):
        if isinstance(node, (ast.With, ast.AsyncWith)) and any(_is_internal(i) for i in node.items):
            marked = True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods:
            receiver = ast.unparse(node.func.value)
            if not marked and receiver.split(".")[0] not in modules:
                found.append((node.lineno, receiver, node.func.attr))
        for child in ast.iter_child_nodes(node):
            visit(child, marked)

    visit(tree, False)
    return [(line, r, m) for line, r, m in found if (relpath, r, m) not in NOT_COMMUNICATORS]


def _sources():
    return sorted(p for p in ROOT.rglob("*.py") if "kernels" not in p.parts)


def test_scan_finds_an_unmarked_call():
    methods = communicator_methods()
    src = ("from mpi4py import MPI\nimport numpy as np\nfrom meshrt import _mpi\n"
           "def f(comm, mesh, x):\n"
           "    np.add.reduce(x)\n"
           "    with _mpi.internal('f', 'agreement', comm):\n"
           "        comm.Allreduce(MPI.IN_PLACE, x)\n"
           "    mesh.comm.allgather(1)\n"
           "    MPI.File.Open(comm, 'x')\n"
           "    comm.Get_size()\n")
    assert unmarked_calls(src, "x.py", methods) == [(8, "mesh.comm", "allgather"), (9, "MPI.File", "Open")]


def test_no_module_calls_a_communicator_outside_a_named_operation():
    methods = communicator_methods()
    assert {"Allreduce", "allgather", "Split", "Dup", "Barrier", "Open", "Write_all"} <= methods
    bad = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel in REGISTERED:
            continue
        for line, receiver, method in unmarked_calls(path.read_text(), rel, methods):
            bad.append(f"meshrt/{rel}:{line}: {receiver}.{method}(...)")
    assert not bad, ("MPI calls outside `with _mpi.internal(operation, step, group)` (the watchdog cannot "
                     "name them):\n" + "\n".join(bad))


@pytest.mark.parametrize("key", sorted(NOT_COMMUNICATORS))
def test_each_exemption_still_matches_a_call(key):
    rel, receiver, method = key
    tree = ast.parse((ROOT / rel).read_text())
    assert any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == method
               and ast.unparse(n.func.value) == receiver for n in ast.walk(tree)), f"stale exemption {key}"


# -- what the watchdog makes of an internal block and of a raw call (serial) -------------------
def test_an_internal_block_is_the_innermost_operation_with_its_group():
    import sys

    from meshrt import Mesh
    from meshrt.runtime import mpi as _mpi, watchdog as _watchdog

    mesh = Mesh((1,), comm=MPI.COMM_SELF)
    with _mpi.internal("DistributedTensor.zeros", "agreement", mesh):
        ops, caller = _watchdog.operations(sys._getframe(), None, _mpi.current())
    assert _mpi.current() is None
    assert caller.f_code.co_name == "test_an_internal_block_is_the_innermost_operation_with_its_group"
    assert _watchdog.describe(ops, caller).startswith(
        "DistributedTensor.zeros (agreement over mesh (1,)) at test_internal_calls.py:")
    assert _watchdog.group_of(ops[0]) == (MPI.COMM_WORLD.rank,)


def test_an_internal_block_reads_as_a_step_of_the_operation_it_names():
    import sys

    from meshrt import Mesh
    from meshrt.runtime import mpi as _mpi, watchdog as _watchdog

    mesh = Mesh((1,), comm=MPI.COMM_SELF)
    ns = {}
    # a public function of a meshrt module (its frame is an operation) holding an internal block
    exec(compile("def gather(root=None):\n"
                 "    with _mpi.internal('gather', 'gather of the blocks', (mesh, [0])):\n"
                 "        return _watchdog.operations(sys._getframe(), None, _mpi.current())\n",
                 _watchdog._PKG + "tensor/distributed_tensor.py", "exec"), {"_mpi": _mpi, "_watchdog": _watchdog, "sys": sys,
                                                         "mesh": mesh}, ns)
    ops, caller = ns["gather"](root=0)
    assert _watchdog.describe(ops, caller).startswith(
        "gather(root=0) (gather of the blocks over mesh (1,) axes (0,)) at test_internal_calls.py:")


def test_world_ranks_of_the_communicators_meshrt_knows():
    from meshrt import Mesh
    from meshrt.runtime import mpi as _mpi

    me = MPI.COMM_WORLD.rank
    assert _mpi.world_ranks(MPI.COMM_WORLD) == tuple(range(MPI.COMM_WORLD.size))
    assert _mpi.world_ranks(MPI.COMM_SELF) == (me,)
    mesh = Mesh((1, 1), comm=MPI.COMM_SELF)
    group = mesh.group([1])
    assert _mpi.world_ranks(group) == (me,) and _mpi.world_ranks((mesh, [0])) == (me,)
    own = MPI.COMM_SELF.Dup()  # the program's own communicator: meshrt cannot know it
    try:
        assert _mpi.world_ranks(own) is None
    finally:
        own.Free()
    mesh.free()
    assert _mpi.world_ranks(group) is None  # freed: its handle may be reused


class _Spy(MPI.Intracomm):
    """A communicator whose Barrier returns what the watchdog makes of its caller's frame,
    seen (as while a real Barrier blocks) during the call."""

    def Barrier(self):
        import sys

        from meshrt.runtime import watchdog as _watchdog

        frame = sys._getframe(1)
        return _watchdog.raw_call(frame), _watchdog._outside(frame)


def test_raw_call_finds_the_communicator_of_the_call_in_progress():
    comm = _Spy(MPI.COMM_WORLD)
    holder = type("Holder", (), {})()
    holder.comm = comm
    x = 1; (raw, outside) = comm.Barrier(); y = 2  # noqa: E702 - several calls on one line
    assert raw == ("comm.Barrier()", comm, "Barrier")
    raw, (state, where, group) = holder.comm.Barrier(
    )
    assert raw == ("holder.comm.Barrier( )", comm, "Barrier")
    assert state == "raw" and group == tuple(range(MPI.COMM_WORLD.size))
    assert where.startswith("a raw MPI call holder.comm.Barrier( ) on COMM_WORLD at test_internal_calls.py:")
    raw, outside = (lambda: comm)().Barrier()  # the receiver is a call: not evaluated
    assert raw is None and outside[0] == "outside" and outside[2] is None
    del x, y


def test_a_raw_call_on_a_communicator_meshrt_did_not_create_keeps_the_note():
    own = _Spy(MPI.COMM_SELF.Dup())
    try:
        raw, (state, where, group) = own.Barrier()
        assert raw == ("own.Barrier()", own, "Barrier")
        assert state == "outside" and group is None
        assert where.endswith("(in own.Barrier(), on a communicator meshrt did not create)")
    finally:
        own.Free()


@pytest.mark.parametrize("kind", ["compiled", "python"])
def test_internal_blocks_nest_and_restore_the_outer_mark(kind):
    from meshrt.runtime import mpi as _mpi

    internal, current = (_mpi.internal, _mpi.current) if kind == "compiled" else (_mpi._Internal, _mpi._current_py)
    with internal("Mesh.group", "communicator creation", None):
        outer = current()
        with pytest.raises(RuntimeError), internal("Mesh.free", "communicator free", None):
            assert current()[0] == "Mesh.free" and current() is not outer
            raise RuntimeError("the inner block fails")
        assert current() is outer
        with internal("Mesh.group", "communicator creation", None):
            assert current() == outer and current() is not outer  # a new mark per block
    assert current() is None


class _SpyRecv(MPI.Intracomm):
    def Recv(self, buf, source):
        import sys

        from meshrt.runtime import watchdog as _watchdog

        return _watchdog._outside(sys._getframe(1))


def test_a_raw_point_to_point_call_waits_for_one_peer_not_the_communicator():
    comm = _SpyRecv(MPI.COMM_WORLD)
    state, where, group = comm.Recv(None, source=0)
    assert state == "outside" and group is None
    assert where.endswith("(in comm.Recv(None, source=0), a point-to-point call)")


def test_a_point_to_point_step_waits_on_its_peers_only():
    from meshrt import Mesh
    from meshrt.runtime import mpi as _mpi

    mesh = Mesh((1,), comm=MPI.COMM_SELF)
    peers = _mpi.Peers(mesh, (0,))
    assert _mpi.world_ranks(peers) == (MPI.COMM_WORLD.rank,)
    assert _mpi.group_text(peers) == "mesh (1,) devices [0]"
