"""BLAS threads under MPI: the cores shared out among a node's processes, set once at import.

numpy's BLAS (OpenBLAS, MKL) starts a pool of one thread per core in every
process.  Under ``mpiexec`` with k processes on a node that is k pools on the
same cores, each spinning while MPI polls: a 2048-wide float32 MLP on 2
processes took 1.30 s a step with the default pools and 0.21 s with one BLAS
thread per process.  So where the launcher says k > 1 processes share this
node (MPICH's and Intel MPI's ``MPI_LOCALNRANKS``, Open MPI's
``OMPI_COMM_WORLD_LOCAL_SIZE``, Cray PALS's ``PALS_LOCAL_SIZE``), meshrt
limits this process's BLAS pools (through ``threadpoolctl``) to its share of
the cores: the cores it is bound to, where the launcher bound it, else
cores // k, at least 1.

Nothing is changed when the user chose already (``OMP_NUM_THREADS``,
``OPENBLAS_NUM_THREADS``, ``MKL_NUM_THREADS``, ``BLIS_NUM_THREADS`` set) or
outside a multi-process launch; ``MESHRT_BLAS_THREADS=N`` sets N threads,
``MESHRT_BLAS_THREADS=keep`` leaves the pools alone.

>>> blas_threads({"MPI_LOCALNRANKS": "2"}, cores=8, bound=8)
4
>>> blas_threads({"OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, cores=8, bound=1)   # bound to one core
1
>>> blas_threads({"MPI_LOCALNRANKS": "2", "OMP_NUM_THREADS": "2"}, cores=8, bound=8) is None
True
>>> blas_threads({}, cores=8, bound=8) is None   # not under a launcher: numpy's default
True
>>> blas_threads({"MESHRT_BLAS_THREADS": "3"}, cores=8, bound=8)
3
"""

from __future__ import annotations

import os

__all__ = ["blas_threads", "limit_blas_threads", "applied"]

#: launchers' count of this job's processes on this node
LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "PALS_LOCAL_SIZE")
#: the user's own thread settings, which meshrt leaves alone
USER_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS")

#: the thread count set at import, or None (nothing changed)
applied = None
_limits = None  # threadpoolctl's handle: kept, as threadpoolctl restores the pools when it goes


def blas_threads(env, cores: int, bound: int) -> int | None:
    """The BLAS threads this process should use, or None to leave numpy's default.

    ``env``: the environment; ``cores``: the node's cores; ``bound``: the cores this
    process may run on (fewer than ``cores`` where the launcher bound it).
    Raises ValueError naming ``MESHRT_BLAS_THREADS`` and its value when that is
    neither a positive integer nor ``keep``.
    """
    given = env.get("MESHRT_BLAS_THREADS")
    if given is not None:
        if given.strip().lower() == "keep":
            return None
        try:
            n = int(given)
        except ValueError:
            n = 0
        if n < 1:
            raise ValueError(f"MESHRT_BLAS_THREADS={given!r}: expected a positive number of threads or 'keep'")
        return n
    if any(env.get(v) for v in USER_VARS):
        return None
    local = next((env[v] for v in LOCAL_SIZE_VARS if env.get(v)), None)
    try:
        k = int(local) if local is not None else 1
    except ValueError:
        return None  # a launcher's variable we cannot read: leave the default
    if k <= 1:
        return None
    if bound < cores:  # the launcher bound this process: its cores are its share
        return max(1, bound)
    return max(1, cores // k)


def limit_blas_threads() -> int | None:
    """Apply `blas_threads` to this process's BLAS pools (import time); the count set, or None."""
    global applied, _limits
    cores = os.cpu_count() or 1
    try:
        bound = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        bound = cores
    n = blas_threads(os.environ, cores, bound)
    if n is None:
        return None
    import numpy  # noqa: F401  (loads the BLAS library, which threadpoolctl finds among the loaded ones)
    from threadpoolctl import threadpool_limits

    _limits = threadpool_limits(limits=n, user_api="blas")
    applied = n
    return n
