"""Where the time of an 8 B ``Allreduce`` goes between IMB-MPI1 (C) and Python: each part timed.

    python bench/bench_gap.py --build              # compile bench/gap/_gapprobe.pyx for this MPI
    mpiexec -n 2 python bench/bench_gap.py [--size 8] [--rounds 60] [--iters 200]

Loops of ``iters`` calls, each after a barrier, rotated round by round; per loop the max
over processes, then the minimum over rounds, per call in us.  Each row adds one part:

    c        MPI_Allreduce from a C loop, no GIL (IMB-MPI1's loop; Cython, mpi4py's libmpi)
    +gil     the GIL released and taken back around each call (mpi4py does this)
    +buffer  both numpy arrays' buffers taken and released each call (PEP 3118)
    +dtype   the datatype looked up from the buffer format in mpi4py's table, op handle
    mpi4py   ``Allreduce(x, y, SUM)`` from a Python loop, bound method and result reused
    +attr    ``g.Allreduce(x, y, MPI.SUM)``: the attribute lookups a user writes
    +empty   ``g.Allreduce(x, np.empty(n), MPI.SUM)``: a new result (the bench's raw side)
    meshrt   ``all_reduce(x, mesh)`` (a new result), its compiled front calling MPI_Allreduce
             itself (``meshrt._collfront.set_c_calls``)
    meshrt/mpi4py  the same front calling ``comm.Allreduce`` (``set_c_calls(False)``)
    fp       MPI_Allreduce through its address in the loaded library and mpi4py's integer
             handles, GIL released per call: no mpi.h, one build for every MPI ABI
    fp+empty the same with a new result each call: what a compiled meshrt front could do

The probe is measurement only, built against the mpi.h of the MPI family mpi4py loaded
(MPICH's for MPICH and Intel MPI, which share its ABI; Open MPI's own) into
``~/.cache/meshrt/gap-probe-<abi>``; it is not part of meshrt.
"""

import argparse
import glob
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _abi():
    from mpi4py import MPI

    lib = MPI.Get_library_version()
    return "openmpi" if "Open MPI" in lib else "mpich"


def build_dir(abi):
    """Outside the repository: ``~/.cache/meshrt/gap-probe-<abi>``."""
    return os.path.join(os.path.expanduser("~"), ".cache", "meshrt", f"gap-probe-{abi}")


def build():
    """Compile the probe for the MPI mpi4py loads (headers: this venv's, else MPICH's ``--include``)."""
    import mpi4py

    abi = _abi()
    venv = os.path.dirname(os.path.dirname(sys.executable))
    inc = a.include or os.path.join(venv, "include")
    if not os.path.exists(os.path.join(inc, "mpi.h")):
        sys.exit(f"--include: no mpi.h in {inc!r}; Intel MPI's wheel has none: pass MPICH's include "
                 f"directory (same ABI)")
    lib = os.path.join(venv, "lib")
    out = build_dir(abi)
    os.makedirs(out, exist_ok=True)
    shutil.copy(os.path.join(HERE, "gap", "_gapprobe.pyx"), out)
    setup = f"""
from setuptools import setup, Extension
from Cython.Build import cythonize
setup(ext_modules=cythonize([Extension("_gapprobe", ["_gapprobe.pyx"], include_dirs=[{inc!r}, {mpi4py.get_include()!r}],
      library_dirs=[{lib!r}], libraries=["mpi"], runtime_library_dirs=[{lib!r}])], language_level=3, quiet=True),
      script_args=["build_ext", "--inplace"])
"""
    subprocess.run([sys.executable, "-c", setup], cwd=out, check=True, capture_output=True)
    print(f"built {glob.glob(os.path.join(out, '_gapprobe*.so'))[0]} ({abi} ABI, mpi.h from {inc})")


def _allreduce_address():
    """The address of MPI_Allreduce in the MPI library mpi4py loaded (as meshrt.runtime.mpi finds
    MPI_Op_create), or 0."""
    import ctypes

    with open("/proc/self/maps") as f:
        paths = sorted({line.split()[-1] for line in f if ".so" in line})
    for path in paths:
        if "mpi" in os.path.basename(path).lower() and "mpi4py" not in path:
            try:
                return ctypes.cast(ctypes.CDLL(path).MPI_Allreduce, ctypes.c_void_p).value
            except (OSError, AttributeError):
                continue
    return 0


def measure(size, rounds, iters):
    import numpy as np
    from mpi4py import MPI

    from meshrt import Mesh, all_reduce

    sys.path.insert(0, build_dir(_abi()))
    import _gapprobe as P

    comm = MPI.COMM_WORLD
    mesh = Mesh((comm.size,), comm=comm)
    g = mesh.group(None)
    count = max(1, size // 8)
    x = np.ones(count)
    y = np.empty(count)
    SUM, td = MPI.SUM, MPI._typedict
    clock = time.perf_counter

    def py_pre(k):
        Allreduce = g.Allreduce
        g.Barrier()
        t = clock()
        for _ in range(k):
            Allreduce(x, y, SUM)
        return clock() - t

    def py_attr(k):
        g.Barrier()
        t = clock()
        for _ in range(k):
            g.Allreduce(x, y, MPI.SUM)
        return clock() - t

    def py_empty(k):
        g.Barrier()
        t = clock()
        for _ in range(k):
            g.Allreduce(x, np.empty(count), MPI.SUM)
        return clock() - t

    from meshrt import _collfront

    def meshrt(k, c=True):
        _collfront.set_c_calls(c)
        g.Barrier()
        t = clock()
        for _ in range(k):
            all_reduce(x, mesh)
        t = clock() - t
        _collfront.set_c_calls(True)
        return t

    loops = {"c": lambda k: P.c_loop(g, x, y, k), "+gil": lambda k: P.gil_loop(g, x, y, k),
             "+buffer": lambda k: P.buf_loop(g, x, y, k), "+dtype": lambda k: P.dt_loop(g, x, y, td, SUM, k),
             "mpi4py": py_pre, "+attr": py_attr, "+empty": py_empty, "meshrt": meshrt,
             "meshrt/mpi4py": lambda k: meshrt(k, False)}
    addr = _allreduce_address()
    if addr:
        hs = MPI._sizeof(MPI.Comm)
        hc, hd, ho = MPI._handleof(g), MPI._handleof(MPI.DOUBLE), MPI._handleof(SUM)

        def fp(k, empty=False):
            g.Barrier()
            return P.fp_loop(addr, hs, hc, hd, ho, x, y, k, empty)

        loops["fp"] = fp
        loops["fp+empty"] = lambda k: fp(k, True)
    names = list(loops)
    best = dict.fromkeys(names, float("inf"))
    for name in names:
        loops[name](max(1, iters // 4))
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = comm.allreduce(loops[name](iters) / iters, op=MPI.MAX)
            best[name] = min(best[name], t)
    if comm.rank == 0:
        lib = MPI.Get_library_version().splitlines()[0].strip()
        print(f"# {size} B float64 Allreduce, {comm.size} processes, {lib}")
        print(f"# min over {rounds} rounds of {iters} calls (max over processes per loop), us per call")
        print(f"{'#part':<14}{'us':>9}{'added':>9}")
        prev = None
        for name in names:
            us = best[name] * 1e6
            print(f"{name:<14}{us:>9.3f}{'' if prev is None else f'{us - prev:+9.3f}':>9}")
            prev = us
    mesh.free()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", action="store_true", help="compile the probe (serially, once per MPI family)")
    p.add_argument("--include", default=None, help="--build: the directory of mpi.h (default: this venv's)")
    p.add_argument("--size", type=int, default=8, help="bytes (default 8)")
    p.add_argument("--rounds", type=int, default=60, help="rounds; the minimum is kept (default 60)")
    p.add_argument("--iters", type=int, default=200, help="calls per loop (default 200)")
    a = p.parse_args()
    if a.build:
        build()
    else:
        measure(a.size, a.rounds, a.iters)
