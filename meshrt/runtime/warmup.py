"""Numba's start-up on a background thread, begun when a process makes its first `Mesh`.

A process's first Numba kernel pays for Numba itself before any kernel code:
importing it and making its CPU target take 0.4-1 s on an idle core (several
seconds on a loaded one), while loading a cached kernel after that takes
milliseconds. A program that makes a `Mesh` is about to run tensor code, so
`start` (called by ``Mesh.__init__``) does that start-up on a daemon thread,
overlapped with the program's own set-up (building and scattering its arrays),
and then runs the tasks registered with `then` (``meshrt.tensor.fuse`` loads
the fused kernel compiled last, which also warms Numba's cache loader, or on an
empty cache prepares Numba's compiler). A kernel asked for before the thread is
done waits for the part still running (Python's import lock and Numba's
compiler lock), never for more than without the thread.

The thread makes no MPI call. ``MESHRT_WARMUP=0`` turns it off (then the
first kernel pays the start-up, as before), ``MESHRT_WARMUP=1`` on; by default it
runs only where fused expressions go to Numba from the start
(``MESHRT_FUSE_INTERP=0``, see `enabled`).

>>> import meshrt.runtime.warmup as w
>>> w.then(lambda: None)   # a task for the thread, run after Numba's start-up
"""

from __future__ import annotations

import os
import threading

__all__ = ["enabled", "start", "then", "wait"]

_TASKS: list = []
_THREAD = [None]
# what the thread did: "ok", or the exception that stopped it (tests read it; never raised)
result: dict = {}


def then(task) -> None:
    """Run ``task()`` on the warm-up thread after Numba's start-up (exceptions are recorded, not raised)."""
    _TASKS.append(task)


def enabled(env=None) -> bool:
    """``MESHRT_WARMUP``: 1 on, 0 off; unset: on only where fused expressions do not run on the
    interpreter first (``MESHRT_FUSE_INTERP=0``). With the interpreter a program's first steps need no
    Numba, and a Numba start-up beside them only takes a core and the GIL from them (their first step
    3-30x slower on a loaded 2-core machine, measured).

    >>> enabled({}), enabled({"MESHRT_FUSE_INTERP": "0"}), enabled({"MESHRT_WARMUP": "1"})
    (False, True, True)
    """
    env = os.environ if env is None else env
    v = env.get("MESHRT_WARMUP")
    if v is None:
        return env.get("MESHRT_FUSE_INTERP", "1") == "0"
    return v != "0"


def start() -> None:
    """Begin the warm-up once per process (where `enabled`)."""
    if _THREAD[0] is not None or not enabled():
        return
    t = _THREAD[0] = threading.Thread(target=_run, name="meshrt-numba-warmup", daemon=True)
    t.start()


def wait(timeout=None) -> bool:
    """Wait for the warm-up thread (if started); whether it has finished."""
    t = _THREAD[0]
    if t is not None:
        t.join(timeout)
        return not t.is_alive()
    return True


def _run():
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target

        with global_compiler_lock:
            cpu_target.target_context  # noqa: B018  (made: its code generator, LLVM's JIT)
        for task in _TASKS:
            task()
        result["status"] = "ok"
    except BaseException as e:  # a warm-up that fails costs only its own time: the kernel's call redoes it
        result["status"] = f"{type(e).__name__}: {e}"
