"""What each process is doing, and whether the processes agree on it.

Two things live here, both cheap enough to leave on:

* The record of the meshrt operations this process is inside (``inside``,
  innermost last).  Tensor methods, constructors and the module-level entry
  points push an entry on the way in and pop it on the way out, so that only
  the outermost one is checked (the ones it calls follow from it).
* Agreement: the processes of a communicator compare a 62-bit fingerprint of
  (operation, arguments) with one ``Allreduce`` of two int64 (MIN of ``h`` and
  of ``-h``: equal fingerprints everywhere iff ``min == max``), and only on a
  disagreement exchange the readable descriptions, so that every process
  raises the same error naming which process called what.

Creation (`DistributedTensor.zeros(...)` and the other constructors, called
from user code) always agrees on the global shape, dtype, sharding and
``periodic``; a tensor method or a checkpoint/halo entry agrees on its name
and arguments when ``MESHRT_CHECK=1`` (or `meshrt.collectives.set_check`).

>>> describe(("DistributedTensor.gather", (), {"root": 1}))
'DistributedTensor.gather(root=1)'
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import sys

import numpy as np

from . import mpi as _mpi
from ..errors import CollectiveError, ShardingError
from .. import _collfront

__all__ = ["inside", "describe", "fingerprint", "agree", "method", "creation", "entry", "instrument", "WATCH", "CHECK",
           "set_check", "mirror", "TEXT_TYPES"]

# MESHRT_CHECK: every public operation first agrees on its name and arguments across its processes.
# Read as ``check.CHECK`` at each call (`set_check` rebinds it).
CHECK = os.environ.get("MESHRT_CHECK", "0") not in ("", "0")


_mirrors: list = []  # modules that carry CHECK as an attribute of their own (`mirror`)


def set_check(flag: bool) -> bool:
    """Turn the cross-process argument check on or off; returns the previous setting."""
    global CHECK
    old, CHECK = CHECK, bool(flag)
    _collfront.set_check(CHECK)
    for module in _mirrors:
        module.CHECK = CHECK
    return old


def mirror(module) -> None:
    """Give ``module`` a ``CHECK`` attribute that `set_check` keeps equal to this one.

    (Not a module ``__getattr__``: CPython 3.11 does not specialize attribute loads on a module
    that has one, which costs each ``collectives.all_reduce`` lookup ~40 ns.)"""
    module.CHECK = CHECK
    _mirrors.append(module)

inside: list = []  # (name, args, kwargs) of the meshrt operations this process is in, innermost last

# Whether the watchdog thread runs (it reads the main thread's frames: no cost per call).
WATCH = bool(os.environ.get("MESHRT_TIMEOUT") or os.environ.get("MESHRT_JOB_DIR"))

_MASK = (1 << 62) - 1


# -- describing arguments, the same text on every process ------------------------------------
_PLAIN = (type(None), bool, int, float, complex, str)
_sharding_text: dict = {}  # Sharding -> its text: formatting one costs microseconds
# Value types described by their text (``Sharding``: meshrt.sharding registers it, a layer above this one)
TEXT_TYPES: set = set()


def _norm(v, depth=0, shapes=True):
    """A process-independent, readable text for an argument (no ids, no addresses); a local
    array's shape only if ``shapes`` (local blocks of uneven shardings differ legitimately)."""
    t = type(v)
    if t in _PLAIN or (t is tuple and all(type(x) is int for x in v)):
        return repr(v)
    if t in TEXT_TYPES:
        text = _sharding_text.get(v)
        if text is None:
            if len(_sharding_text) > 256:
                _sharding_text.clear()
            text = _sharding_text[v] = f"<{v}>"
        return text
    if isinstance(v, (np.integer, np.floating, np.bool_)):
        return repr(v.item())
    if isinstance(v, np.ndarray):
        return f"array(shape={v.shape}, dtype={v.dtype})" if shapes else f"array(ndim={v.ndim}, dtype={v.dtype})"
    if isinstance(v, np.dtype) or (isinstance(v, type) and issubclass(v, np.generic)):
        return str(np.dtype(v))
    if hasattr(v, "global_shape") and hasattr(v, "sharding"):  # a DistributedTensor
        return f"tensor(shape={v.global_shape}, dtype={v.dtype}, sharding={_norm(v.sharding)})"
    if depth < 2 and isinstance(v, (tuple, list)):
        inner = ", ".join(_norm(x, depth + 1, shapes) for x in v)
        return f"({inner},)" if isinstance(v, tuple) and len(v) == 1 else (f"({inner})" if isinstance(v, tuple)
                                                                             else f"[{inner}]")
    if depth < 2 and isinstance(v, dict):
        return "{" + ", ".join(f"{_norm(k, depth + 1)}: {_norm(x, depth + 1, shapes)}" for k, x in v.items()) + "}"
    if TEXT_TYPES and isinstance(v, tuple(TEXT_TYPES)):
        return f"<{v}>"
    if hasattr(v, "shape") and hasattr(v, "axis_names"):  # a mesh
        return f"mesh{tuple(v.shape)}"
    if callable(v):
        return "<function>"  # functions differ per process (lambdas): not compared
    return type(v).__name__


def describe(entry, shapes=True) -> str:
    """``name(arg, ..., key=value)`` for an entry of `inside` (tensors and arrays summarized)."""
    name, args, kwargs = entry
    parts = [_norm(a, 0, shapes) for a in args] + [f"{k}={_norm(v, 0, shapes)}" for k, v in kwargs.items()]
    text = ", ".join(parts)
    if len(text) > 300:
        text = text[:297] + "..."
    return f"{name}({text})"


def fingerprint(text: str) -> int:
    """A stable 62-bit fingerprint (Python's ``hash`` of a str differs per process)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little") & _MASK


def _ranks(rs) -> str:
    return f"process {rs[0]}" if len(rs) == 1 else "processes " + ", ".join(map(str, rs))


def agree(comm, text: str, what: str, error=CollectiveError, h=None, *, group=None,
          step: str = "MESHRT_CHECK agreement") -> None:
    """Raise ``error`` on every process of ``comm`` unless all passed the same ``text``.

    One ``Allreduce`` of two int64 when they agree; the message (the same
    everywhere) groups the processes by what they passed.  While it runs, the process
    is in step ``step`` of operation ``what`` over ``group`` (default ``comm``) for the
    watchdog.
    """
    if comm.Get_size() == 1:
        return
    from mpi4py import MPI

    if h is None:
        h = fingerprint(text)
    buf = np.array([h, -h], np.int64)
    with _mpi.internal(what, step, comm if group is None else group):
        comm.Allreduce(MPI.IN_PLACE, buf, MPI.MIN)
        if buf[0] == -buf[1]:
            return
        calls = comm.allgather((what, text))
    groups: dict = {}
    for r, (_, t) in enumerate(calls):
        groups.setdefault(t, []).append(r)
    detail = "; ".join(f"{_ranks(rs)}: {t}" for t, rs in groups.items())
    # the same message everywhere, though the processes may be in different operations
    head = what if len({w for w, _ in calls}) == 1 else "different operations"
    raise error(f"{head}: the processes disagree (every process must make the same call): {detail}")


# -- decorators for the entry points ----------------------------------------------------------
def method(name: str):
    """A tensor method that communicates over the tensor's mesh: recorded in `inside`, and
    with ``MESHRT_CHECK=1`` its name and arguments agreed across the mesh first."""

    def wrap(fn):
        @functools.wraps(fn)
        def call(self, *args, **kwargs):
            entry = (name, args, kwargs)
            if CHECK and not inside:  # nested operations follow from the outer one
                agree(self.mesh.comm, describe((name, (self,) + args, kwargs)), name, group=self.mesh)
            inside.append(entry)
            try:
                return fn(self, *args, **kwargs)
            finally:
                inside.pop()

        return call

    return wrap


def _internal_caller() -> bool:
    # A constructor called from inside meshrt (a ufunc's result, a reduction's, a
    # reshard's target) derives its arguments from tensors already agreed on.
    return sys._getframe(2).f_globals.get("__name__", "").startswith("meshrt.")


def _canonical(field, v):
    # Equal requests spelled differently ("f8" and np.float64, a list and a tuple) agree.
    try:
        if field == "dtype" and v is not None:
            return np.dtype(v)
        if field == "global_shape" and v is not None:
            return (int(v),) if isinstance(v, (int, np.integer)) else tuple(int(n) for n in v)
    except (TypeError, ValueError):
        pass
    return v


def creation(name: str, data=()):
    """A constructor classmethod: called from user code, the processes always agree on its
    arguments except the per-process data named in ``data`` (one small Allreduce)."""

    def wrap(fn):
        params = list(inspect.signature(fn).parameters.values())[1:]  # after cls
        names = [p.name for p in params]
        defaults = {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}
        compared = [n for n in names if n not in data]
        at = names.index("sharding")
        first_data = min([names.index(n) for n in data], default=len(names))
        texts: dict = {}  # the call's arguments (when they hash) -> (text, fingerprint)

        def text_of(args, kwargs):
            given = dict(defaults)
            given.update(zip(names, args))
            given.update(kwargs)
            shown = ", ".join(f"{n}={_norm(_canonical(n, given[n]))}" for n in compared if n in given)
            text = f"{name}({shown})"
            return text, fingerprint(text)

        @functools.wraps(fn)
        def call(cls, *args, **kwargs):
            if not inside and not _internal_caller():
                sharding = args[at] if len(args) > at else kwargs.get("sharding")
                comm = getattr(getattr(sharding, "mesh", None), "comm", None)
                if comm is not None:  # a bad sharding raises its own error in the body
                    try:
                        key = (args[:first_data], tuple(kv for kv in kwargs.items() if kv[0] not in data)
                               if kwargs else ())
                        if len(args) > first_data:  # data passed by position, then more arguments
                            key += (tuple(a for i, a in enumerate(args) if names[i] not in data),)
                        text, h = texts[key]
                    except TypeError:  # an unhashable argument (a list)
                        text, h = text_of(args, kwargs)
                    except KeyError:
                        if len(texts) > 64:
                            texts.clear()
                        text, h = texts[key] = text_of(args, kwargs)
                    agree(comm, text, f"DistributedTensor.{name}", ShardingError, h, group=sharding.mesh,
                          step="agreement")
            inside.append((f"DistributedTensor.{name}", args, kwargs))
            try:
                return fn(cls, *args, **kwargs)
            finally:
                inside.pop()

        return call

    return wrap


def entry(name: str, comm_of):
    """A module-level operation (``update_halo`` on a local array, ``save_state``...): recorded,
    and agreed on over ``comm_of(*args, **kwargs)`` under ``MESHRT_CHECK=1``."""

    def wrap(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if CHECK and not inside:
                comm = None
                try:
                    comm = comm_of(*args, **kwargs)
                except Exception:  # noqa: BLE001 - bad arguments raise their own error below
                    pass
                if comm is not None:
                    agree(comm, describe((name, args, kwargs), shapes=False), name)
            inside.append((name, args, kwargs))
            try:
                return fn(*args, **kwargs)
            finally:
                inside.pop()

        return call

    return wrap


def _comm_in(*args, **kwargs):
    """The communicator of the first mesh, sharding or tensor among the arguments (one level into
    mappings and sequences), or None."""
    for v in list(args) + list(kwargs.values()):
        for x in (list(v.values()) if isinstance(v, dict) else list(v) if isinstance(v, (list, tuple)) else [v]):
            for y in (x, getattr(x, "mesh", None), getattr(x, "sharding", None)):
                y = getattr(y, "mesh", y)
                comm = getattr(y, "comm", None)
                if comm is not None and hasattr(comm, "Allreduce"):
                    return comm
    return None


def instrument(module, names) -> None:
    """Put the module-level entry points ``names`` of ``module`` (``update_halo`` on local arrays,
    ``save_state``, ``load_state``) under `entry`, before any other module binds them by name."""
    for name in names:
        setattr(module, name, entry(name, _comm_in)(getattr(module, name)))
