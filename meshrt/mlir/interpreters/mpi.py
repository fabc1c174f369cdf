"""What the ``mpi`` dialect's ops do, on mpi4py: ``!mpi.comm`` is an ``MPI.Comm`` (``comm_world`` the
program's communicator, ``comm_split`` a real ``MPI_Comm_split`` whose result the program frees
after the run), ``!mpi.request`` a pending ``Isend``/``Irecv``, ``!mpi.retval`` an MPI error code.

Error semantics as MLIR's: an op that has a ``!mpi.retval`` result gives the MPI error code of
the call (``MPI_SUCCESS``, 0, when it worked; ``mpi.error_class`` and ``mpi.retval_check``
read it); an op without one stops the run with an `MLIRError` at the op naming MPI's error
(MPI's default handler would abort).  ``mpi.init``/``mpi.finalize`` do nothing: meshrt's MPI
layer owns initialisation.  Buffers are numpy arrays (memrefs, `meshrt.mlir.interpreters.buffers`);
a non-contiguous one (a subview) travels through a contiguous copy, written back on receipt.

>>> import numpy as np
>>> from meshrt.mlir import parse
>>> from meshrt.mlir.interpreters.spmd import run_function
>>> m = parse('''func.func @f(%m: memref<2xf32>) -> (i32, i1) {
...   %w = mpi.comm_world : !mpi.comm
...   %e, %rank = mpi.comm_rank(%w) : !mpi.retval, i32
...   %bad = arith.constant 99 : i32
...   %e2 = mpi.send(%m, %rank, %bad, %w) : memref<2xf32>, i32, i32 -> !mpi.retval
...   %is_rank_error = mpi.retval_check %e2 = <MPI_ERR_RANK> : i1
...   return %rank, %is_rank_error : i32, i1
... }''')
>>> [int(x) for x in run_function(m, "f", [np.zeros(2, np.float32)])]
[0, 1]
"""

from __future__ import annotations

import numpy as np
from mpi4py import MPI

from ...errors import MLIRError
from ...runtime import mpi as _mpi
from ..dialects.mpi import ERROR_CLASSES, REDUCE_OPS

__all__ = ["HANDLERS", "check_op", "Request", "finish_requests"]

_OPS = {"MPI_MAX": MPI.MAX, "MPI_MIN": MPI.MIN, "MPI_SUM": MPI.SUM, "MPI_PROD": MPI.PROD, "MPI_LAND": MPI.LAND,
        "MPI_BAND": MPI.BAND, "MPI_LOR": MPI.LOR, "MPI_BOR": MPI.BOR, "MPI_LXOR": MPI.LXOR, "MPI_BXOR": MPI.BXOR}


def _class_code(name):
    """The MPI error class of an ``#mpi.errclass`` name (``MPI_ERR_RANK`` -> ``MPI.ERR_RANK``), or None."""
    return 0 if name == "MPI_SUCCESS" else getattr(MPI, name[len("MPI_"):], None)


# operands of each op (the generic form may give any): (count, index of the communicator or None)
_OPERANDS = {"mpi.init": (0, None), "mpi.finalize": (0, None), "mpi.comm_world": (0, None),
             "mpi.comm_rank": (1, 0), "mpi.comm_size": (1, 0), "mpi.comm_split": (3, 0), "mpi.send": (4, 3),
             "mpi.recv": (4, 3), "mpi.isend": (4, 3), "mpi.irecv": (4, 3), "mpi.wait": (1, None),
             "mpi.allreduce": (3, 2), "mpi.barrier": (1, 0), "mpi.error_class": (1, None),
             "mpi.retval_check": (1, None)}
_BUFFERS = {"mpi.send": (0,), "mpi.recv": (0,), "mpi.isend": (0,), "mpi.irecv": (0,), "mpi.allreduce": (0, 1)}


def check_op(op):
    """What an mpi op needs that the IR could leave out, said before the run (None: fine)."""
    from ..ir import memref_type

    want, comm = _OPERANDS.get(op.name, (None, None))
    if want is not None and len(op.operands) != want:
        return f"takes {want} operand(s), found {len(op.operands)}"
    if comm is not None and str(op.operands[comm].type) != "!mpi.comm":
        return f"operand {comm} must be a !mpi.comm, found {op.operands[comm].type}"
    for i in _BUFFERS.get(op.name, ()):
        if memref_type(op.operands[i].type) is None:
            return f"operand {i} must be a ranked memref of numbers, found {op.operands[i].type}"
    if op.name in ("mpi.comm_rank", "mpi.comm_size") and not 1 <= len(op.results) <= 2:
        return f"gives ([!mpi.retval,] i32), found {len(op.results)} results"
    if op.name == "mpi.allreduce":
        k = op.attributes.get("op")
        if not isinstance(k, int) or not 0 <= k < len(REDUCE_OPS):
            return f"op: expected an MPI reduction, found {k!r}"
        if REDUCE_OPS[k] not in _OPS:
            return f"reduction {REDUCE_OPS[k]} is not run by meshrt (one of {', '.join(_OPS)})"
    if op.name == "mpi.retval_check" and op.attributes.get("errclass") not in ERROR_CLASSES:
        return f"errclass: unknown MPI error class {op.attributes.get('errclass')!r}"
    return None


class Request:
    """A pending nonblocking operation and the buffers it owns until ``mpi.wait``."""

    __slots__ = ("req", "tmp", "dest")

    def __init__(self, req, tmp, dest):
        self.req, self.tmp, self.dest = req, tmp, dest


def _retval_count(op):
    return sum(1 for r in op.results if str(r.type) == "!mpi.retval")


def _outcome(op, fn, values=()):
    """Run ``fn()`` (an MPI call); the op's results: its retval (the MPI error code) first when it has
    one, then ``values`` (or what ``fn`` returns)."""
    try:
        got = fn()
        code = 0
    except MPI.Exception as e:
        if not _retval_count(op):
            raise MLIRError(f"{op.location}: '{op.name}' failed: MPI error {e.Get_error_class()} "
                            f"({e.Get_error_string().strip()})") from None
        got, code = None, e.Get_error_code()
    rest = list(values) if got is None else list(got)
    if _retval_count(op):
        return [np.int32(code)] + rest
    return rest


def _comm(p, op, env, i):
    c = env[op.operands[i]]
    if not isinstance(c, MPI.Comm):
        raise MLIRError(f"{op.location}: '{op.name}' operand {i} is not a communicator")
    return c


def _int(env, v):
    return int(env[v])


def _contiguous(x):
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _buf(x):
    return [x, _mpi.mpi_datatype(x.dtype)]


def _init(p, op, env):
    return [np.int32(0)] * len(op.results)


def _comm_world(p, op, env):
    return [p.comm]


def _comm_rank(p, op, env):
    c = _comm(p, op, env, 0)
    return _outcome(op, lambda: [np.int32(c.Get_rank())], [np.int32(-1)])


def _comm_size(p, op, env):
    c = _comm(p, op, env, 0)
    return _outcome(op, lambda: [np.int32(c.Get_size())], [np.int32(0)])


def _comm_split(p, op, env):
    c = _comm(p, op, env, 0)
    color, key = _int(env, op.operands[1]), _int(env, op.operands[2])

    def split():
        with _mpi.internal(f"{op.name} at {op.location}", "split", c):
            new = c.Split(color if color >= 0 else MPI.UNDEFINED, key)
        if new != MPI.COMM_NULL:
            p._mpi_comms.append(new)  # freed after the run (Program.free_mpi)
        return [new]
    return _outcome(op, split, [MPI.COMM_NULL])


def _send(p, op, env):
    x, tag, dest, c = env[op.operands[0]], _int(env, op.operands[1]), _int(env, op.operands[2]), _comm(p, op, env, 3)

    def send():
        with _mpi.internal(f"{op.name} at {op.location}", f"to {dest}", c):
            c.Send(_buf(_contiguous(x)), dest, tag)
        return []
    return _outcome(op, send)


def _recv(p, op, env):
    x, tag, src, c = env[op.operands[0]], _int(env, op.operands[1]), _int(env, op.operands[2]), _comm(p, op, env, 3)

    def recv():
        tmp = _contiguous(x)
        with _mpi.internal(f"{op.name} at {op.location}", f"from {src}", c):
            c.Recv(_buf(tmp), src, tag)
        if tmp is not x:
            x[...] = tmp
        return []
    return _outcome(op, recv)


def _isend(p, op, env):
    x, tag, dest, c = env[op.operands[0]], _int(env, op.operands[1]), _int(env, op.operands[2]), _comm(p, op, env, 3)

    def isend():
        tmp = _contiguous(x)
        with _mpi.internal(f"{op.name} at {op.location}", f"to {dest}", c):
            r = Request(c.Isend(_buf(tmp), dest, tag), tmp, None)
        p._mpi_requests.append(r)
        return [r]
    return _outcome(op, isend, [None])


def _irecv(p, op, env):
    x, tag, src, c = env[op.operands[0]], _int(env, op.operands[1]), _int(env, op.operands[2]), _comm(p, op, env, 3)

    def irecv():
        tmp = _contiguous(x)
        with _mpi.internal(f"{op.name} at {op.location}", f"from {src}", c):
            r = Request(c.Irecv(_buf(tmp), src, tag), tmp, x if tmp is not x else None)
        p._mpi_requests.append(r)
        return [r]
    return _outcome(op, irecv, [None])


def _wait(p, op, env):
    r = env[op.operands[0]]
    if not isinstance(r, Request):
        raise MLIRError(f"{op.location}: 'mpi.wait' of a request that no isend/irecv made")

    def wait():
        with _mpi.internal(f"{op.name} at {op.location}", "wait", None):
            r.req.Wait()
        if r.dest is not None:
            r.dest[...] = r.tmp
        if r in p._mpi_requests:
            p._mpi_requests.remove(r)
        return []
    return _outcome(op, wait)


def finish_requests(p):
    """Requests the run started and never waited for: a receive that can still be cancelled is, the
    rest are completed (MPI must not be left holding the program's buffers).  Returns how many."""
    pending, p._mpi_requests = p._mpi_requests, []
    for r in pending:
        if not r.req.Test():
            r.req.Cancel()
            r.req.Wait()
    return len(pending)


def _allreduce(p, op, env):
    send, recv, c = env[op.operands[0]], env[op.operands[1]], _comm(p, op, env, 2)
    mop = _OPS[REDUCE_OPS[op.attributes["op"]]]

    def allreduce():
        if send.shape != recv.shape or send.dtype != recv.dtype:
            raise MLIRError(f"{op.location}: 'mpi.allreduce' send buffer {send.dtype}{list(send.shape)} and "
                            f"receive buffer {recv.dtype}{list(recv.shape)} differ")
        tmp = _contiguous(recv)
        with _mpi.internal(f"{op.name} at {op.location}", "allreduce", c):
            if send is recv or (send.__array_interface__["data"][0] == recv.__array_interface__["data"][0]
                                and send.strides == recv.strides):
                if tmp is not recv:
                    tmp[...] = send
                c.Allreduce(MPI.IN_PLACE, _buf(tmp), mop)
            else:
                c.Allreduce(_buf(_contiguous(send)), _buf(tmp), mop)
        if tmp is not recv:
            recv[...] = tmp
        return []
    return _outcome(op, allreduce)


def _barrier(p, op, env):
    c = _comm(p, op, env, 0)

    def barrier():
        with _mpi.internal(f"{op.name} at {op.location}", "barrier", c):
            c.Barrier()
        return []
    return _outcome(op, barrier)


def _error_class(p, op, env):
    code = int(env[op.operands[0]])
    return [np.int32(MPI.Get_error_class(code) if code else 0)]


def _retval_check(p, op, env):
    code = int(env[op.operands[0]])
    cls = MPI.Get_error_class(code) if code else 0
    want = _class_code(op.attributes["errclass"])
    return [np.bool_(want is not None and cls == want)]


HANDLERS = {
    "mpi.init": _init, "mpi.finalize": _init, "mpi.comm_world": _comm_world, "mpi.comm_rank": _comm_rank,
    "mpi.comm_size": _comm_size, "mpi.comm_split": _comm_split, "mpi.send": _send, "mpi.recv": _recv,
    "mpi.isend": _isend, "mpi.irecv": _irecv, "mpi.wait": _wait, "mpi.allreduce": _allreduce,
    "mpi.barrier": _barrier, "mpi.error_class": _error_class, "mpi.retval_check": _retval_check,
}
