"""A per-process watchdog thread: which meshrt operation this process is blocked in.

It wakes every `POLL` seconds and looks at the main thread's Python frames
(mpi4py releases the GIL while MPI blocks, so it runs while the main thread
waits in a collective): the frames of meshrt's public functions and methods
(``all_reduce``, ``DistributedTensor.sum``, ``HaloExchange.__call__``...) are
the operations it is in, and reading them costs the main thread nothing.  The
collectives are compiled and have no frame; they publish the call they are
in (`meshrt._collfront.current`) instead.  The innermost operation still
running after `BLOCKED` seconds makes the process *blocked in* it:

* under ``meshrt run`` (``MESHRT_JOB_DIR`` set) it writes a one-line status
  file ``rank<R>`` there (``blocked``, then ``finished`` once the script
  returns), which the launcher reads to tell a process that finished early
  while the others wait for it;
* with ``MESHRT_TIMEOUT=S``, after ``S`` seconds in one operation it prints
  ``[meshrt] rank R blocked in OP(ARGS) for S s`` and aborts the job
  (``MPI_Abort``), a second later so that the other processes print theirs.

The MPI calls meshrt makes on its own behalf (agreements, checks, communicator
creation...) run inside `meshrt._mpi.internal`, whose mark names the operation,
the step and the device group: ``DistributedTensor.zeros (agreement over mesh
(2, 2))``.  Outside meshrt, a main thread that stays inside one call of an
mpi4py communicator method (``comm.Barrier()``: found from the frame's current
instruction and its source, only once it has been there `BLOCKED` seconds) is
in a *raw* MPI call.

Status file format (tab-separated, one line): ``state, time.time() since,
description, group``; ``state`` is ``blocked`` (in a meshrt operation), ``raw``
(in a raw mpi4py call on a communicator whose processes meshrt knows),
``outside`` (on one line of the program, outside meshrt: computing or in a raw
MPI call on a communicator meshrt does not know), ``running``, ``timeout`` or
``finished``; ``group`` lists the ``COMM_WORLD`` ranks the blocking call needs
(``0,1,2,3``), empty where unknown.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import os
import re
import sys
import threading
import time
import types

from . import check as _check, mpi as _mpi

__all__ = ["start", "report_finished", "rank", "timeout_seconds", "write_status", "operations", "describe",
           "group_of", "raw_call"]

POLL = 0.25
BLOCKED = 0.5  # seconds in one operation before it counts as blocked

_thread = None
_finished = False  # the script has returned: the status file says so, and nothing overwrites it
try:
    from .._collfront import current as _current
except ImportError:  # an unbuilt checkout: meshrt's import says so
    _current = None


def rank() -> int:
    """This process's rank from the launcher's environment, or from MPI if it is running."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    try:
        from mpi4py import MPI

        if MPI.Is_initialized():
            return MPI.COMM_WORLD.Get_rank()
    except ImportError:
        pass
    return 0


def timeout_seconds():
    """``MESHRT_TIMEOUT`` as seconds, None if unset or 0; a bad value raises ValueError."""
    text = os.environ.get("MESHRT_TIMEOUT", "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"MESHRT_TIMEOUT={text!r}: expected a number of seconds") from None
    if value < 0:
        raise ValueError(f"MESHRT_TIMEOUT={text!r}: expected a number of seconds >= 0")
    return value or None


def write_status(state: str, since: float, text: str, group=None) -> None:
    """Replace this process's status file in ``MESHRT_JOB_DIR`` (atomically), if there is one;
    ``group``: the ``COMM_WORLD`` ranks the call needs, if known."""
    job = os.environ.get("MESHRT_JOB_DIR")
    if not job:
        return
    path = os.path.join(job, f"rank{rank()}")
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as f:
            ranks = "" if group is None else ",".join(map(str, group))
            f.write(f"{state}\t{since:.3f}\t{text}\t{ranks}\n")
        os.replace(tmp, path)
    except OSError:  # the launcher's directory is gone, or on another node: nothing to tell
        pass


def report_finished() -> None:
    """Tell the launcher this process's script has returned (the watchdog writes no more)."""
    global _finished
    _finished = True
    write_status("finished", time.time(), "")


_PKG = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NOT_OPS = {_PKG + name for name in ("_check.py", "_watchdog.py", "launch.py", "cli.py", "testing.py", "bench.py")}


def _is_op(code) -> bool:
    if not code.co_filename.startswith(_PKG) or code.co_filename in _NOT_OPS:
        return False
    last = code.co_name
    return not last.startswith("_") or last == "__call__"


# the files of the collectives' Python implementations (`meshrt.collectives` makes the public names)
_COLLECTIVES = {_PKG + name for name in ("_collectives_reduce.py", "_collectives_move.py", "_collectives_p2p.py")}


def operations(frame, mark=None, inner=None) -> tuple:
    """(the meshrt operations the thread at ``frame`` is in, innermost first; the frame of the
    code that called the outermost, or None).

    An operation is the frame of a public meshrt function or method, or ``mark``, the
    compiled collective `meshrt._collfront.current` says the thread is in (a compiled
    function has no frame).  The mark sits just outside the frame of its Python
    implementation (``_all_reduce`` for ``all_reduce``) when that is running, else it is
    the innermost operation.  ``inner``, the mark of the `meshrt._mpi.internal` block the
    thread is in, is the innermost (`describe` shows it as a step of the frame it names).
    """
    ops, f = [], frame
    slow = None if mark is None else "_" + mark[0][0]
    placed = False
    last = None  # the outermost frame visited inside meshrt's operations
    while f is not None:
        code = f.f_code
        if _is_op(code):
            ops.append(f)
            last = f
        elif slow is not None and code.co_name == slow and code.co_filename in _COLLECTIVES:
            ops.append(mark)
            placed, last = True, f
        f = f.f_back
    if mark is not None and not placed:  # the fast path: the mark is the innermost operation
        ops.insert(0, mark)
    if inner is not None:
        ops.insert(0, inner)
    if not ops:
        return ops, None
    f = frame if last is None else last.f_back
    while f is not None and f.f_code.co_filename.startswith(_PKG):
        f = f.f_back
    return ops, f


def _arguments(frame) -> tuple:
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    values = frame.f_locals  # a snapshot; read once per report, never per call
    return {n: values[n] for n in names if n not in ("self", "cls") and values.get(n) is not None}


def _describe_op(op) -> str:
    if type(op) is tuple and type(op[0]) is str:  # an internal block's mark: (operation, step, group)
        return f"{op[0]} ({op[1]} over {_mpi.group_text(op[2])})"
    if type(op) is tuple:  # a compiled operation's mark: ((name, argument names), value, ...)
        (name, names), values = op[0], op[1:]
        return _check.describe((name, (), {n: v for n, v in zip(names, values) if v is not None}))
    return _check.describe((op.f_code.co_qualname, (), _arguments(op)))


def describe(ops, caller) -> str:
    """``DistributedTensor.sum(...) > all_reduce(x=array(...), ...) at script.py:12``; an internal
    block's step follows the operation it belongs to: ``DistributedTensor.gather() (gather of the
    blocks over mesh (4,))``."""
    parts = [_describe_op(op) for op in ops]
    inner = ops[0] if ops and type(ops[0]) is tuple and type(ops[0][0]) is str else None
    if inner is not None and len(ops) > 1 and type(ops[1]) is not tuple and ops[1].f_code.co_qualname == inner[0]:
        parts[:2] = [f"{parts[1]} ({inner[1]} over {_mpi.group_text(inner[2])})"]
    text = " > ".join(reversed(parts))
    if caller is not None:
        text += f" at {os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
    return text


def group_of(op):
    """The ``COMM_WORLD`` ranks the operation ``op`` (an entry of `operations`) waits on, or
    None: known for internal blocks and compiled collectives, not for a frame."""
    if type(op) is not tuple:
        return None
    try:
        if type(op[0]) is str:
            return _mpi.world_ranks(op[2])
        (name, names), values = op[0], op[1:]
        if len(names) > 2 and names[1] == "mesh":
            return _mpi.world_ranks((values[1], values[2]))
    except Exception:  # noqa: BLE001 - arguments the call itself is about to reject
        pass
    return None


def _lookup(node, frame):
    # A Name or a chain of attributes, read without running user code: module attributes,
    # instance attributes, and meshrt's own properties (``mesh.comm``) only.
    if isinstance(node, ast.Name):
        for space in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if node.id in space:
                return space[node.id]
        raise LookupError(node.id)
    if isinstance(node, ast.Attribute):
        obj = _lookup(node.value, frame)
        if isinstance(obj, types.ModuleType):
            return vars(obj)[node.attr]
        value = inspect.getattr_static(obj, node.attr)
        if isinstance(value, property) and getattr(value.fget, "__module__", "").startswith("meshrt."):
            return value.fget(obj)
        if hasattr(type(value), "__get__") and not isinstance(value, _mpi.MPI.Comm):
            raise LookupError(node.attr)  # a descriptor: reading it could run anything
        return value
    raise LookupError(type(node).__name__)


_CALLS = {"CALL", "CALL_FUNCTION_EX", "CALL_KW", "CALL_FUNCTION", "CALL_METHOD", "CALL_FUNCTION_KW"}


def raw_call(frame):
    """``(source, communicator, method name)`` when the thread at ``frame`` is inside a call of
    an mpi4py communicator's method made by that frame's code (``comm.Barrier()``), else None.

    The frame's current instruction is the call; its source span, parsed, gives the
    receiver, which is read only if it is a name or a chain of attributes.
    """
    import dis

    code, i = frame.f_code, frame.f_lasti
    while 0 < i < len(code.co_code) and dis.opname[code.co_code[i]] == "CACHE":  # a call into Python code
        i -= 2
    if not 0 <= i < len(code.co_code) or dis.opname[code.co_code[i]] not in _CALLS:
        return None
    try:
        pos = next(p for k, p in enumerate(code.co_positions()) if k == i // 2)
        if None in pos:
            return None
        line0, line1, col0, col1 = pos
        lines = [linecache.getline(code.co_filename, n).encode() for n in range(line0, line1 + 1)]
        if not lines[0]:
            return None
        lines[-1] = lines[-1][:col1]
        lines[0] = lines[0][col0:]
        text = b"".join(lines).decode()
        call = ast.parse(text, mode="eval").body
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)):
            return None
        comm = _lookup(call.func.value, frame)
    except (LookupError, SyntaxError, StopIteration, ValueError, TypeError, AttributeError, KeyError):
        return None
    if not isinstance(comm, _mpi.MPI.Comm):
        return None
    return " ".join(text.split()), comm, call.func.attr


_POINT_TO_POINT = re.compile(r"(?i)send|recv|probe|^neighbor|^ineighbor")


def _outside(frame) -> tuple:
    """(state, description, group) of a main thread outside meshrt operations at ``frame``."""
    where = f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"
    raw = raw_call(frame)
    if raw is None:
        return "outside", where, None
    text, comm, method = raw
    if _POINT_TO_POINT.search(method):  # it waits for some processes of the communicator, not all
        return "outside", f"{where} (in {text}, a point-to-point call)", None
    group = _mpi.world_ranks(comm)
    if group is None:
        return "outside", f"{where} (in {text}, on a communicator meshrt did not create)", None
    return "raw", f"a raw MPI call {text} on {_mpi.group_text(comm)} at {where}", group


def _abort(code: int) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        from mpi4py import MPI

        if MPI.Is_initialized() and not MPI.Is_finalized():
            MPI.COMM_WORLD.Abort(code)
    except ImportError:
        pass
    os._exit(code)


def _run(timeout, main_id) -> None:
    seen, first = None, 0.0  # where the main thread was last seen, and since when
    reported = False
    while True:
        time.sleep(POLL)
        frame = sys._current_frames().get(main_id)
        if frame is None or _finished:  # the main thread has ended, or its script returned
            return
        ops, caller = operations(frame, _current() if _current is not None else None, _mpi.current())
        # Inside an operation: the innermost one's frame or mark (an object kept here is never
        # reused for another call).  Outside: the line the program is at (a raw MPI call, or computing).
        where = (ops[0], None) if ops else (frame, frame.f_lineno)
        now = time.time()
        if seen is None or where[0] is not seen[0] or where[1] != seen[1]:
            if reported and not _finished:
                write_status("running", now, "")
            seen, first, reported = where, now, False
            continue
        waited = now - first
        if not reported and waited >= BLOCKED and not _finished:
            if ops:
                write_status("blocked", first, describe(ops, caller), group_of(ops[0]))
            else:
                state, text, group = _outside(frame)
                write_status(state, first, text, group)
            reported = True
        if ops and timeout is not None and waited >= timeout:
            what = describe(ops, caller)
            write_status("timeout", first, what, group_of(ops[0]))
            sys.stderr.write(f"[meshrt] rank {rank()} blocked in {what} for {waited:.1f} s "
                             f"(MESHRT_TIMEOUT={timeout:g}); aborting the job\n")
            sys.stderr.flush()
            time.sleep(1.0)  # the others may be about to report too (meshrt run ends the job first)
            _abort(124)
        del frame, ops, caller


def start() -> None:
    """Start the watchdog thread once (a daemon: it never keeps the process alive)."""
    global _thread
    if _thread is not None:
        return
    _thread = threading.Thread(target=_run, args=(timeout_seconds(), threading.main_thread().ident),
                               name="meshrt-watchdog", daemon=True)
    _thread.start()
