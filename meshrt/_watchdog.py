"""A per-process watchdog thread: which meshrt operation this process is blocked in.

It wakes every `POLL` seconds and looks at the innermost entry of
`meshrt._check.inside` (mpi4py releases the GIL while MPI blocks, so it runs
while the main thread waits in a collective).  An entry still there after
`BLOCKED` seconds makes the process *blocked in* that operation:

* under ``meshrt run`` (``MESHRT_JOB_DIR`` set) it writes a one-line status
  file ``rank<R>`` there (``blocked``, then ``finished`` once the script
  returns), which the launcher reads to tell a process that finished early
  while the others wait for it;
* with ``MESHRT_TIMEOUT=S``, after ``S`` seconds in one operation it prints
  ``[meshrt] rank R blocked in OP(ARGS) for S s`` and aborts the job
  (``MPI_Abort``), a second later so that the other processes print theirs.

Status file format (tab-separated, one line): ``state, time.time() since,
description``; ``state`` is ``blocked``, ``timeout`` or ``finished``.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from . import _check

__all__ = ["start", "report_finished", "rank", "timeout_seconds", "write_status"]

POLL = 0.1
BLOCKED = 0.5  # seconds in one operation before it counts as blocked

_thread = None


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


def write_status(state: str, since: float, text: str) -> None:
    """Replace this process's status file in ``MESHRT_JOB_DIR`` (atomically), if there is one."""
    job = os.environ.get("MESHRT_JOB_DIR")
    if not job:
        return
    path = os.path.join(job, f"rank{rank()}")
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(f"{state}\t{since:.3f}\t{text}\n")
        os.replace(tmp, path)
    except OSError:  # the launcher's directory is gone, or on another node: nothing to tell
        pass


def report_finished() -> None:
    """Tell the launcher this process's script has returned."""
    write_status("finished", time.time(), "")


def _describe_stack(stack) -> str:
    # outermost > ... > innermost: "DistributedTensor.sum() > all_reduce(...)"
    return " > ".join(_check.describe(e) for e in stack)


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


def _run(timeout) -> None:
    inside = _check.inside
    seen, first = None, 0.0  # the innermost entry last seen and when it was first seen
    reported = False
    while True:
        time.sleep(POLL)
        try:
            top = inside[-1]
        except IndexError:
            top = None
        now = time.time()
        if top is not seen:
            if reported:
                write_status("running", now, "")
            seen, first, reported = top, now, False
            continue
        if top is None:
            continue
        waited = now - first
        if not reported and waited >= BLOCKED:
            write_status("blocked", first, _describe_stack(list(inside)))
            reported = True
        if timeout is not None and waited >= timeout:
            what = _describe_stack(list(inside))
            write_status("timeout", first, what)
            sys.stderr.write(f"[meshrt] rank {rank()} blocked in {what} for {waited:.1f} s "
                             f"(MESHRT_TIMEOUT={timeout:g}); aborting the job\n")
            sys.stderr.flush()
            time.sleep(1.0)  # the others may be about to report too (meshrt run ends the job first)
            _abort(124)


def start() -> None:
    """Start the watchdog thread once (a daemon: it never keeps the process alive)."""
    global _thread
    if _thread is not None:
        return
    _thread = threading.Thread(target=_run, args=(timeout_seconds(),), name="meshrt-watchdog", daemon=True)
    _thread.start()
