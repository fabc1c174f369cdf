"""MLIR's own lowering of a ``shard`` program to the ``mpi`` dialect, made by ``mlir-opt``, and the
side-by-side run that compares it with the ``shard``-level program (``meshrt mlir compare --lower``).

`lower_to_mpi` calls ``mlir-opt`` (22): an annotated global program is first partitioned
(``sharding-propagation``, ``shard-partition``), then ``--test-grid-all-slice-op-lowering``
(``all_slice`` as index arithmetic and ``tensor.extract_slice``: mlir-opt 22's only lowering of
it, a test pass it ships), ``--convert-shard-to-mpi`` and ``--canonicalize`` (as LLVM's own
test of the pass does).  LLVM 22 lowers ``all_reduce``,
``update_halo`` and the index ops; it leaves ``all_gather``, ``all_to_all``
... as they are, saying "failed to legalize" on stderr but still printing the module: those
ops then run as ``shard`` ops inside the lowered program, and `Lowered.unlowered` names them.

`compare_runs` runs both programs on the same processes and arguments and returns the first
value that differs (the lowest process's first differing element), or None.

>>> import numpy as np
>>> first_difference([np.array([[1, 2], [3, 4]])], [np.array([[1, 2], [3, 5]])])
(0, (1, 1), 4, 5, ' (1 of 4 differ)')
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

import numpy as np

from ..errors import MLIRError

__all__ = ["PARTITION_PIPELINE", "LOWER_FLAGS", "lower_flags", "Lowered", "lower_to_mpi", "Difference", "compare_runs",
           "first_difference"]

PARTITION_PIPELINE = "builtin.module(func.func(sharding-propagation,shard-partition))"
LOWER_FLAGS = ("--test-grid-all-slice-op-lowering", "--convert-shard-to-mpi", "--canonicalize")


def lower_flags(text: str) -> tuple:
    """`LOWER_FLAGS`, without the all_slice lowering where the program has no ``shard.all_slice``: that
    pass's greedy rewriter erases ops whose results are unused and that declare no memory effects,
    ``shard.update_halo`` of a memref among them (found by running both: the halo is never exchanged)."""
    return LOWER_FLAGS if "shard.all_slice" in text else LOWER_FLAGS[1:]


@dataclass
class Lowered:
    """The text ``mlir-opt`` made, the partitioned text it was made from, and the shard ops the
    lowering left (``[(op name, line:col)]`` from mlir-opt's "failed to legalize" diagnostics)."""

    text: str
    partitioned: str
    unlowered: list
    commands: list


def _run(exe, args, text, what):
    proc = subprocess.run([exe, *args, "-"], input=text, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise MLIRError(f"mlir-opt {' '.join(args)} failed on {what}:\n{proc.stderr.strip()}")
    return proc.stdout, proc.stderr


def function_module(module, name: str):
    """The module of ``@name`` alone: the module's other top-level ops (grids ...), attributes (dlti)
    and the functions ``@name`` calls.  LLVM 22's ``--convert-shard-to-mpi`` converts a module whole
    or not at all, so one op it cannot lower elsewhere would keep this function from being lowered."""
    from .ir import Module
    from .interpreters.spmd import _functions_reached

    keep = {id(f) for f in _functions_reached(module, name)}
    ops = [o for o in module.operations if o.name != "func.func" or id(o) in keep]
    return Module(ops, "", module.filename, dict(module.attributes))


def with_dlti(module, rank: int, size: int):
    """The module with ``mpi.dlti = #dlti.map<"MPI:comm_world_rank" = rank, "MPI:comm_world_size" = size>``:
    lowered so, the program is specialised to that process (``--canonicalize`` folds ``mpi.comm_rank``
    and ``comm_size`` to constants), as LLVM's tests of the pass do."""
    from .ir import Module, OpaqueAttr

    attrs = dict(module.attributes)
    attrs["mpi.dlti"] = OpaqueAttr(f'#dlti.map<"MPI:comm_world_rank" = {rank} : i64, '
                                   f'"MPI:comm_world_size" = {size} : i64>')
    return Module(list(module.operations), "", module.filename, attrs)


def lower_to_mpi(text: str, filename: str, exe: str, partition: bool, function: str | None = None,
                 dlti=None) -> Lowered:
    """``mlir-opt``'s ``--convert-shard-to-mpi`` lowering of the program ``text`` (partitioned
    first when ``partition``); of ``function`` alone (and its callees) when given; for the process
    ``dlti = (rank, size)`` alone when given (`with_dlti`)."""
    from .dialects import parse

    commands = []
    if partition:
        commands.append(f"mlir-opt --pass-pipeline=\"{PARTITION_PIPELINE}\"")
        text, _ = _run(exe, [f"--pass-pipeline={PARTITION_PIPELINE}"], text, filename)
    source = text
    if function is not None or dlti is not None:
        m = parse(text, filename)
        if function is not None:
            m = function_module(m, function)
            commands.append(f"(@{function} alone)")
        if dlti is not None:
            m = with_dlti(m, *dlti)
            commands.append(f"(for MPI:comm_world_rank = {dlti[0]} of {dlti[1]})")
        source = m.generic()
    flags = lower_flags(source)
    commands.append("mlir-opt " + " ".join(flags))
    out, err = _run(exe, list(flags), source, filename)
    left = [(m.group(2), m.group(1)) for m in
            re.finditer(r"<stdin>:(\d+:\d+): error: failed to legalize operation '([\w.]+)'", err)]
    return Lowered(out, text, left, commands)


@dataclass
class Difference:
    """Where the two runs first differ."""

    process: int
    result: int
    index: tuple
    expected: object
    got: object
    note: str = ""

    def __str__(self):
        at = f" at {list(self.index)}" if self.index else ""
        return (f"result {self.result}{at} on process {self.process}: shard-level {self.expected!r}, "
                f"lowered {self.got!r}{self.note}")


def first_difference(a_results, b_results, rtol=0.0, atol=0.0):
    """``(result, index, a, b, note)`` of the first element where two result lists differ, or None."""
    if len(a_results) != len(b_results):
        return (0, (), f"{len(a_results)} results", f"{len(b_results)} results", "")
    for i, (a, b) in enumerate(zip(a_results, b_results)):
        a, b = np.asarray(a), np.asarray(b)
        if a.shape != b.shape:
            return (i, (), f"shape {a.shape}", f"shape {b.shape}", "")
        if a.dtype != b.dtype:
            return (i, (), f"dtype {a.dtype}", f"dtype {b.dtype}", "")
        if a.dtype.kind in "fc":
            bad = ~np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        else:
            bad = a != b
        if np.any(bad):
            idx = tuple(int(k) for k in np.argwhere(bad)[0]) if a.ndim else ()
            return (i, idx, a[idx].item(), b[idx].item(), f" ({int(np.count_nonzero(bad))} of {a.size} differ)")
    return None


def compare_runs(shard_prog, lowered_prog, name, args, comm, rtol=0.0, atol=0.0):
    """Run ``@name`` of both programs (`meshrt.mlir.interpreters.spmd.Program` s on ``comm``) on
    copies of ``args`` (a memref argument is written through) and return ``(shard results,
    lowered results, Difference or None)``; the difference is the same on every process."""
    a = shard_prog.run(name, [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in args])
    b = lowered_prog.run(name, [np.array(x, copy=True) if isinstance(x, np.ndarray) else x for x in args])
    mine = first_difference(a, b, rtol, atol)
    from ..runtime import mpi as _mpi

    with _mpi.internal("meshrt.mlir.lowering.compare_runs", "exchange of first differences", comm):
        everyone = comm.allgather(mine)
    for rank, d in enumerate(everyone):
        if d is not None:
            return a, b, Difference(rank, *d)
    return a, b, None
