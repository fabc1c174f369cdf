"""The ``meshrt`` command: ``meshrt info``, ``meshrt run`` and ``meshrt bench``.

    meshrt info                      # versions; mesh when under mpiexec
    mpiexec -n 4 meshrt info --mesh 2x2
    meshrt run -n 4 script.py args   # abort the job on any uncaught error
    mpiexec -n 2 python -m meshrt bench all_reduce --sizes 8:16M   # OSU-style, vs raw mpi4py
"""

import argparse
import os
import subprocess
import sys

__all__ = ["main"]


def _version(dist, module=None):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        if module is not None:
            return getattr(module, "__version__", "unknown")
        return "0.1.0" if dist == "meshrt" else "unknown"


def _info(args):
    import mpi4py
    import numba
    import numpy
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    if comm.rank == 0:
        lib = " ".join(MPI.Get_library_version().strip().splitlines()[0].split())
        major, minor = MPI.Get_version()
        print(f"meshrt  {_version('meshrt')}")
        print(f"mpi4py  {mpi4py.__version__}")
        print(f"MPI     {lib} (MPI standard {major}.{minor})")
        print(f"numpy   {numpy.__version__}")
        print(f"numba   {numba.__version__}")
        print(f"processes: {comm.size}")
    from .mesh import Mesh

    shape = args.mesh if args.mesh else (comm.size,)
    mesh = Mesh(shape, comm=comm)
    coords = comm.gather((mesh.rank, tuple(int(c) for c in mesh.coords)), root=0)
    if comm.rank == 0:
        dims = "x".join(str(s) for s in mesh.shape)
        print(f"mesh: shape {dims} ({mesh.size} devices)")
        for rank, c in coords:
            print(f"  rank {rank}: coords {c}")
    return 0


def _run(args):
    from .launch import find_mpiexec

    if not os.path.isfile(args.script):
        print(f"meshrt run: script {args.script!r} does not exist", file=sys.stderr)
        return 2
    if args.n < 1:
        print(f"meshrt run: -n must be at least 1, got {args.n}", file=sys.stderr)
        return 2
    mpiexec = find_mpiexec()
    if mpiexec is None:
        print("meshrt run: no mpiexec found next to the Python executable, on PATH "
              "or in MESHRT_MPIEXEC; install meshrt[mpich] or an MPI",
              file=sys.stderr)
        return 2
    # Not "-m meshrt.launch": that puts the working directory first on sys.path, and
    # run from a source checkout, its meshrt/ (without compiled modules) would shadow
    # the installed one.  "-c" lets us drop that entry before importing (any Python).
    cmd = [mpiexec, "-n", str(args.n), sys.executable, "-c", _LAUNCH, args.script, *args.args]
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 130


def _bench(args):
    from .bench import main

    return main(args)


_LAUNCH = "import sys; del sys.path[0]; from meshrt.launch import main; sys.exit(main())"


def _launched_rank():
    """This process's rank from the launcher's environment (no MPI needed), 0 if none."""
    for var in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def _error_on_rank0(parser):
    # Under mpiexec every process parses the same argv: print the usage error once.
    def error(message):
        if _launched_rank() == 0:
            parser.print_usage(sys.stderr)
            sys.stderr.write(f"{parser.prog}: error: {message}\n")
        sys.exit(2)

    return error


def _mesh_shape(text):
    try:
        return tuple(int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--mesh is {text!r}; expected sizes joined by 'x', e.g. 2x2") from None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:2] == ["bench", "stencil"]:  # weak-scaling stencil driver, its own options: meshrt/stencil_bench.py
        from .stencil_bench import main as stencil_main

        return stencil_main(argv[2:])
    parser = argparse.ArgumentParser(prog="meshrt", description=__doc__.splitlines()[0])
    parser.error = _error_on_rank0(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="versions of meshrt, MPI, numpy, numba; the mesh")
    p.add_argument("--mesh", type=_mesh_shape, default=None,
                   help="mesh shape to describe, e.g. 2x2 (default: 1-D over all processes)")
    p.set_defaults(func=_info)
    p = sub.add_parser("run", help="run a script on N MPI processes")
    p.add_argument("-n", type=int, default=1, help="number of processes (default 1)")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=_run)
    p = sub.add_parser("bench", help="OSU-style benchmark of a collective, halo or reshard vs raw mpi4py",
                       description="OSU-style benchmark of OP under mpiexec: latency min/avg/max/p50/p99 "
                                   "across processes, nccl-tests bandwidths, and the ratio to the same "
                                   "operation in raw mpi4py. See meshrt/bench.py for the method. "
                                   "`meshrt bench stencil -h`: weak scaling of a stencil, T_eff.")
    from .bench import add_arguments

    add_arguments(p)
    p.error = _error_on_rank0(p)
    p.set_defaults(func=_bench)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
