"""MPICH's device-level collectives off by default: set once at import, before MPI starts.

MPICH's ch4 device brings its own collective algorithms (shared-memory ones on a node) and by
default prefers them to MPICH's generic ones, built on point-to-point messages.  For the small
messages of a loop's statements they are the slower: measured with MPICH 5.0.2 from PyPI on this
project's 2-core machine, 2 processes, best of 3 x 20,000 calls:

==============================  ===============  ====================================
call                            device (default)  ``MPIR_CVAR_DEVICE_COLLECTIVES=none``
==============================  ===============  ====================================
8-byte ``MPI_Bcast`` from rank 1     2.95 us          1.43 us
8-byte ``MPI_Bcast`` from rank 0     1.48 us          1.40 us
8-byte ``MPI_Allreduce``             2.11 us          2.09 us
16 MiB ``MPI_Bcast``                 1043 us           658 us
16 MiB ``MPI_Allreduce``             2960 us          2792 us
16 MiB ``MPI_Allgather``             2092 us          2240 us
==============================  ===============  ====================================

An element read (``float(a[i])``, one broadcast from its owner, any rank) went from 3.9 to 2.3 us,
and the loop programs of ``bench/bench_loops.py`` from 9.3x to 8.5x numpy (geometric mean).  So
meshrt sets ``MPIR_CVAR_DEVICE_COLLECTIVES=none`` when it is imported in a process of a job whose
processes are all on this node (Hydra's ``MPI_LOCALNRANKS`` equal to ``PMI_SIZE``), unless:

* the variable is set already (the user's choice stands);
* ``mpi4py.MPI`` is imported already (MPI has started and read its settings: nothing is changed);
* ``MESHRT_DEVICE_COLLECTIVES=keep``.

Across nodes MPICH's defaults stay: there the generic collectives left a job hung after a network link
dropped everything for a few seconds (``tests/test_heartbeat_hosts.py``), where the device ones
recover.  Each process decides for itself, so a program started by ``mpiexec`` gets it where it
imports meshrt before ``mpi4py.MPI`` (``python -m meshrt.launch``, ``meshrt run`` do).  Other MPIs
ignore the variable.  ``applied`` says what was done.

>>> one_node = {"PMI_SIZE": "4", "MPI_LOCALNRANKS": "4"}
>>> device_collectives(one_node, mpi_started=False)
'none'
>>> device_collectives({"PMI_SIZE": "4", "MPI_LOCALNRANKS": "2"}, mpi_started=False) is None   # two nodes
True
>>> device_collectives({}, mpi_started=False) is None   # not under a launcher
True
>>> device_collectives({**one_node, "MPIR_CVAR_DEVICE_COLLECTIVES": "all"}, mpi_started=False) is None
True
>>> device_collectives(one_node, mpi_started=True) is None
True
>>> device_collectives({**one_node, "MESHRT_DEVICE_COLLECTIVES": "keep"}, mpi_started=False) is None
True
"""

from __future__ import annotations

import os
import sys

__all__ = ["device_collectives", "configure", "applied", "VARIABLE"]

VARIABLE = "MPIR_CVAR_DEVICE_COLLECTIVES"

#: the value set at import, or None (nothing changed)
applied = None


def device_collectives(env, mpi_started: bool) -> str | None:
    """The value to give ``MPIR_CVAR_DEVICE_COLLECTIVES``, or None to leave it.  Raises ValueError naming
    ``MESHRT_DEVICE_COLLECTIVES`` and its value when that is neither ``keep`` nor unset/empty."""
    given = env.get("MESHRT_DEVICE_COLLECTIVES", "").strip().lower()
    if given not in ("", "keep"):
        raise ValueError(f"MESHRT_DEVICE_COLLECTIVES={given!r}: expected 'keep' (leave MPICH's default) or unset")
    if given == "keep" or VARIABLE in env or mpi_started:
        return None
    size, local = env.get("PMI_SIZE", "").strip(), env.get("MPI_LOCALNRANKS", "").strip()
    if not size or size != local:  # (not under Hydra, or a job across nodes)
        return None
    return "none"


def configure() -> str | None:
    """Apply `device_collectives` to this process's environment (at meshrt's import)."""
    global applied
    value = device_collectives(os.environ, "mpi4py.MPI" in sys.modules)
    if value is not None:
        os.environ[VARIABLE] = value
        applied = value
    return applied
