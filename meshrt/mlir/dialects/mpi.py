"""The ``mpi`` dialect as ``mlir-opt --convert-shard-to-mpi`` (LLVM 22) prints it: the custom form
of each op, and its enums (``MPI_SUM`` ... kept as MLIR keeps them: ``op = 3``; error classes by
name).  What the ops do is in `meshrt.mlir.interpreters.mpi`.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%m: memref<4xf32>) {
...   %c = mpi.comm_world : !mpi.comm
...   %e, %r = mpi.comm_rank(%c) : !mpi.retval, i32
...   mpi.allreduce(%m, %m, MPI_MAX, %c) : memref<4xf32>, memref<4xf32>
...   return
... }''')
>>> [(o.name, o.attributes) for o in m.functions()["f"].regions[0].entry.operations][2]
('mpi.allreduce', {'op': 1})
"""

from __future__ import annotations

from ..ir import OpaqueType, ScalarType
from ..syntax.printer import ATTRIBUTE_KINDS, _typed_int
from ..syntax.reader import _custom, _normalizer, _op

__all__ = ["REDUCE_OPS", "ERROR_CLASSES", "COMM", "RETVAL", "REQUEST"]

COMM, RETVAL, REQUEST = OpaqueType("!mpi.comm"), OpaqueType("!mpi.retval"), OpaqueType("!mpi.request")
_I32 = ScalarType("i32")

REDUCE_OPS = ("MPI_OP_NULL", "MPI_MAX", "MPI_MIN", "MPI_SUM", "MPI_PROD", "MPI_LAND", "MPI_BAND", "MPI_LOR",
              "MPI_BOR", "MPI_LXOR", "MPI_BXOR", "MPI_MINLOC", "MPI_MAXLOC", "MPI_REPLACE")
"""``#mpi.opclass`` by its number (``op = 3`` is ``MPI_SUM``), as MLIR numbers them."""

ERROR_CLASSES = (
    "MPI_SUCCESS MPI_ERR_ACCESS MPI_ERR_AMODE MPI_ERR_ARG MPI_ERR_ASSERT MPI_ERR_BAD_FILE MPI_ERR_BASE "
    "MPI_ERR_BUFFER MPI_ERR_COMM MPI_ERR_CONVERSION MPI_ERR_COUNT MPI_ERR_DIMS MPI_ERR_DISP "
    "MPI_ERR_DUP_DATAREP MPI_ERR_ERRHANDLER MPI_ERR_FILE MPI_ERR_FILE_EXISTS MPI_ERR_FILE_IN_USE MPI_ERR_GROUP "
    "MPI_ERR_INFO MPI_ERR_INFO_KEY MPI_ERR_INFO_NOKEY MPI_ERR_INFO_VALUE MPI_ERR_IN_STATUS MPI_ERR_INTERN "
    "MPI_ERR_IO MPI_ERR_KEYVAL MPI_ERR_LOCKTYPE MPI_ERR_NAME MPI_ERR_NO_MEM MPI_ERR_NO_SPACE "
    "MPI_ERR_NO_SUCH_FILE MPI_ERR_NOT_SAME MPI_ERR_OP MPI_ERR_OTHER MPI_ERR_PENDING MPI_ERR_PORT "
    "MPI_ERR_PROC_ABORTED MPI_ERR_QUOTA MPI_ERR_RANK MPI_ERR_READ_ONLY MPI_ERR_REQUEST MPI_ERR_RMA_ATTACH "
    "MPI_ERR_RMA_CONFLICT MPI_ERR_RMA_FLAVOR MPI_ERR_RMA_RANGE MPI_ERR_RMA_SHARED MPI_ERR_RMA_SYNC "
    "MPI_ERR_ROOT MPI_ERR_SERVICE MPI_ERR_SESSION MPI_ERR_SIZE MPI_ERR_SPAWN MPI_ERR_TAG MPI_ERR_TOPOLOGY "
    "MPI_ERR_TRUNCATE MPI_ERR_TYPE MPI_ERR_UNKNOWN MPI_ERR_UNSUPPORTED_DATAREP MPI_ERR_UNSUPPORTED_OPERATION "
    "MPI_ERR_VALUE_TOO_LARGE MPI_ERR_WIN MPI_ERR_LASTCODE").split()
"""The error classes ``mpi.retval_check`` names (``#mpi.errclass<MPI_ERR_RANK>``)."""


def _operands(p):
    p.expect("(")
    names = p.value_names()
    p.expect(")")
    return names


def _types_until_arrow(p):
    types = [p.type()]
    while p.accept(","):
        types.append(p.type())
    return types


def _arrow_results(p):
    return _types_until_arrow(p) if p.accept("->") else []


@_custom("mpi.comm_world", "mpi.init", "mpi.finalize")
def _nullary(p, name, pos, nres):
    attrs = p.opt_attr_dict({})
    results = _types_until_arrow(p) if p.accept(":") else []
    return _op(name, [], results, attrs)


@_custom("mpi.comm_rank", "mpi.comm_size", "mpi.comm_split")
def _comm_query(p, name, pos, nres):
    names = _operands(p)
    attrs = p.opt_attr_dict({})
    p.expect(":")
    results = _types_until_arrow(p)
    return _op(name, p.resolve(names, [COMM] + [_I32] * (len(names) - 1)), results, attrs)


@_custom("mpi.send", "mpi.recv", "mpi.isend", "mpi.irecv")
def _point_to_point(p, name, pos, nres):
    names = _operands(p)  # (buffer, tag, rank, comm)
    attrs = p.opt_attr_dict({})
    p.expect(":")
    types = _types_until_arrow(p)
    results = _arrow_results(p)
    if len(names) != 4 or len(types) != 3:
        p.error(f"'{name}' takes (buffer, tag, rank, comm) : buffer type, i32, i32", pos)
    return _op(name, p.resolve(names, types + [COMM]), results, attrs)


@_custom("mpi.allreduce")
def _allreduce(p, name, pos, nres):
    p.expect("(")
    a = p.value_name()
    p.expect(",")
    b = p.value_name()
    p.expect(",")
    kind = p.ident("an MPI reduction (MPI_SUM ...)")
    if kind not in REDUCE_OPS:
        p.error(f"'mpi.allreduce': unknown reduction {kind}; expected one of {', '.join(REDUCE_OPS)}", pos)
    p.expect(",")
    c = p.value_name()
    p.expect(")")
    attrs = p.opt_attr_dict({"op": REDUCE_OPS.index(kind)})
    p.expect(":")
    types = _types_until_arrow(p)
    results = _arrow_results(p)
    if len(types) != 2:
        p.error("'mpi.allreduce' takes the types of its send and receive buffers", pos)
    return _op(name, p.resolve([a, b, c], types + [COMM]), results, attrs)


@_custom("mpi.barrier")
def _barrier(p, name, pos, nres):
    names = _operands(p)
    attrs = p.opt_attr_dict({})
    return _op(name, p.resolve(names, [COMM] * len(names)), _arrow_results(p), attrs)


@_custom("mpi.wait")
def _wait(p, name, pos, nres):
    names = _operands(p)
    attrs = p.opt_attr_dict({})
    p.expect(":")
    types = _types_until_arrow(p)
    return _op(name, p.resolve(names, types), _arrow_results(p), attrs)


@_custom("mpi.error_class")
def _error_class(p, name, pos, nres):
    v = p.value_name()
    attrs = p.opt_attr_dict({})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([v], [t]), [RETVAL], attrs)


@_custom("mpi.retval_check")
def _retval_check(p, name, pos, nres):
    v = p.value_name()
    p.expect("=")
    p.expect("<")
    cls = p.ident("an MPI error class")
    if cls not in ERROR_CLASSES:
        p.error(f"'mpi.retval_check': unknown error class {cls}", pos)
    p.expect(">")
    attrs = p.opt_attr_dict({"errclass": cls})
    p.expect(":")
    t = p.type()
    return _op(name, p.resolve([v], [RETVAL]), [t], attrs)


def _errclass_text(v, op):
    return f"#mpi.errclass<{v}>"


@_normalizer("mpi.retval_check")
def _normalize_errclass(p, op, pos):
    """The generic form's ``#mpi.errclass<X>`` (an opaque attribute) as the name ``X``."""
    v = op.attributes.get("errclass")
    text = str(v) if v is not None else ""
    if text.startswith("#mpi.errclass<") and text.endswith(">"):
        op.attributes["errclass"] = text[len("#mpi.errclass<"):-1].strip()


ATTRIBUTE_KINDS["mpi.*"] = {"op": _typed_int("i32"), "errclass": _errclass_text}
