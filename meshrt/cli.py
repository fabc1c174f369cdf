"""The ``meshrt`` command: ``meshrt info``, ``meshrt run``, ``meshrt bench`` and ``meshrt mlir``.

    meshrt info                      # versions; mesh when under mpiexec
    mpiexec -n 4 meshrt info --mesh 2x2
    meshrt run -n 4 script.py args   # abort the job on any uncaught error
    mpiexec -n 2 python -m meshrt bench all_reduce --sizes 8:16M   # OSU-style, vs raw mpi4py
"""

import argparse
import subprocess
import os
import re
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
        lib = " ".join(MPI.Get_library_version().replace("\0", "").strip().splitlines()[0].split())
        major, minor = MPI.Get_version()
        print(f"meshrt  {_version('meshrt')}")
        print(f"mpi4py  {mpi4py.__version__}")
        print(f"MPI     {lib} (MPI standard {major}.{minor})")
        print(f"numpy   {numpy.__version__}")
        print(f"numba   {numba.__version__}")
        print(f"processes: {comm.size}")
        print(f"launcher: {_launcher_line()}")
    from .mesh import Mesh

    from .errors import MeshError

    shape = args.mesh if args.mesh else (comm.size,)
    try:
        mesh = Mesh(shape, comm=comm)
    except MeshError as e:  # the same on every process
        if comm.rank == 0:
            print(f"meshrt info: --mesh {'x'.join(map(str, shape))}: {e}", file=sys.stderr)
        return 2
    from .runtime import mpi as _mpi

    with _mpi.internal("meshrt info", "gather of the coordinates", mesh):
        coords = comm.gather((mesh.rank, tuple(int(c) for c in mesh.coords)), root=0)
    if comm.rank == 0:
        dims = "x".join(str(s) for s in mesh.shape)
        print(f"mesh: shape {dims} ({mesh.size} devices)")
        for rank, c in coords:
            print(f"  rank {rank}: coords {c}")
    return 0


def _launcher_line() -> str:
    from .runtime.mpiexec import find_launcher

    try:
        launcher = find_launcher()
    except FileNotFoundError as e:
        return str(e)
    if launcher is None:
        return "none found (meshrt run needs one: install meshrt[mpich] or an MPI)"
    return launcher.describe() + "".join(f"\n  note: {n}" for n in launcher.notes)


def _run_hosts(args):
    """``(hosts, where)`` from --hosts, --hostfile or the batch allocation; ``(None, None)`` for
    this host only.  A ValueError names the option and what is wrong."""
    from .runtime.hosts import allocation_hosts, parse_hostfile, parse_hosts

    if args.hosts is not None and args.hostfile is not None:
        raise ValueError("--hosts and --hostfile: give one of them")
    if args.hosts is not None:
        return parse_hosts(args.hosts), "--hosts"
    if args.hostfile is not None:
        try:
            with open(args.hostfile) as f:
                text = f.read()
        except OSError as e:
            raise ValueError(f"--hostfile {args.hostfile}: cannot read it ({e.strerror or e})") from None
        return parse_hostfile(text, f"--hostfile {args.hostfile}"), f"--hostfile {args.hostfile}"
    if os.environ.get("MESHRT_IGNORE_ALLOCATION", "").strip() not in ("", "0"):
        return None, None
    found = allocation_hosts()
    return found if found else (None, None)


def _run(args):
    import shlex

    from .launch import run_restarting
    from .runtime.hosts import place

    if not os.path.isfile(args.script):
        print(f"meshrt run: script {args.script!r} does not exist", file=sys.stderr)
        return 2
    for name in ("n", "restarts", "min_procs", "min_hosts"):
        value, least = getattr(args, name), 0 if name == "restarts" else 1
        if value is not None and value < least:
            option = "-n" if name == "n" else "--" + name.replace("_", "-")
            print(f"meshrt run: {option} must be at least {least}, got {value}", file=sys.stderr)
            return 2
    try:
        hosts, where = _run_hosts(args)
        nprocs = args.n if args.n is not None else (sum(h.slots for h in hosts) if hosts else 1)
        placement = place(hosts, nprocs, where) if hosts else None
    except ValueError as e:
        print(f"meshrt run: {e}", file=sys.stderr)
        return 2
    if args.min_procs is not None and args.min_procs > nprocs:
        print(f"meshrt run: --min-procs {args.min_procs} is more than the {nprocs} processes of the job",
              file=sys.stderr)
        return 2
    try:
        launcher = _find_launcher()
    except FileNotFoundError as e:  # MESHRT_MPIEXEC names no executable
        print(f"meshrt run: {e}", file=sys.stderr)
        return 2
    if launcher is None:
        print("meshrt run: no mpiexec found beside the MPI library mpi4py loads, next to the Python "
              "executable, on PATH or in MESHRT_MPIEXEC; install meshrt[mpich] or an MPI",
              file=sys.stderr)
        return 2
    # Not "-m meshrt.launch": that puts the working directory first on sys.path, and
    # run from a source checkout, its meshrt/ (without compiled modules) would shadow
    # the installed one.  "-c" lets us drop that entry before importing (any Python).
    from .runtime.heartbeat import KEY_ENV, key_from_env

    try:
        key_from_env()  # one the user set: checked here (without ever printing it); else each run makes one
    except ValueError as e:
        print(f"meshrt run: {e}", file=sys.stderr)
        return 2
    argv = [sys.executable, "-c", _LAUNCH, args.script, *args.args]
    # Open MPI forwards the names given with -x (the values stay in the environment)
    env = dict(os.environ, **({"MESHRT_RESTART": "0"} if args.restarts else {}), **{KEY_ENV: ""})

    def command(where_to):
        n = sum(h.slots for h in where_to) if where_to else nprocs
        cmd, notes = launcher.command(n, argv, hosts=where_to, env=env)
        for note in notes:
            print(f"meshrt run: note: {note}", file=sys.stderr)
        return cmd

    for note in launcher.notes:
        print(f"meshrt run: note: {note}", file=sys.stderr)
    if where is not None and not where.startswith("--"):  # from the batch allocation: say so
        print(f"meshrt run: note: hosts from {where}: {','.join(map(str, hosts))}", file=sys.stderr)
    if args.dry_run:
        print(shlex.join(command(placement)))
        return 0
    try:
        return run_restarting(command, hosts, nprocs, args.restarts, args.min_procs or 1, args.min_hosts or 1,
                              placement=placement)
    except ValueError as e:  # MESHRT_KILL_GRACE / MESHRT_EXIT_GRACE not a number
        print(f"meshrt run: {e}", file=sys.stderr)
        return 2


def _find_launcher():
    from .runtime.mpiexec import find_launcher

    return find_launcher()


def _bench(args):
    from .bench.compare import run_compare
    from .bench import main

    return main(args, compare=run_compare)


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
    if argv[:2] == ["bench", "stencil"]:  # weak-scaling stencil driver, its own options: meshrt/stencil/bench.py
        from .stencil.bench import main as stencil_main

        return stencil_main(argv[2:])
    parser = argparse.ArgumentParser(prog="meshrt", description=__doc__.splitlines()[0].replace("``", ""))
    parser.error = _error_on_rank0(parser)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="versions of meshrt, MPI, numpy, numba; the mesh")
    p.add_argument("--mesh", type=_mesh_shape, default=None,
                   help="mesh shape to describe, e.g. 2x2 (default: 1-D over all processes)")
    p.set_defaults(func=_info)
    # allow_abbrev=False: the script's own options (--m, --host) are never taken for prefixes of ours
    p = sub.add_parser("run", help="run a script on N MPI processes, on this host or across hosts", allow_abbrev=False,
                       description="Run a script on N MPI processes; an uncaught error ends the whole job. "
                                   "Across hosts: --hosts or --hostfile (inside a Slurm or PBS allocation, its "
                                   "hosts by default), spelled for the MPI's own launcher. --restarts N starts "
                                   "the job again when a host, link or process is lost (docs/failures.md).")
    p.add_argument("-n", type=int, default=None,
                   help="number of processes (default: every slot of the hosts, or 1 on this host)")
    p.add_argument("--hosts", metavar="H:N,...", help="hosts and their slots, e.g. a:4,b:4 (filled in order; "
                   "hosts beyond -n are spares for --restarts)")
    p.add_argument("--hostfile", metavar="FILE", help="hosts one per line: host, host:N or host slots=N")
    p.add_argument("--dry-run", action="store_true", help="print the launcher command and exit")
    p.add_argument("--restarts", type=int, default=0, metavar="N",
                   help="start the job again up to N times when a host, link or process is lost (not on an "
                        "error in the script); the program resumes from its checkpoint (meshrt.io.Checkpointer)")
    p.add_argument("--min-procs", type=int, default=None, metavar="M",
                   help="with --restarts: restart only with at least M processes (default 1)")
    p.add_argument("--min-hosts", type=int, default=None, metavar="H",
                   help="with --restarts: restart only on at least H hosts (default 1)")
    p.add_argument("script")
    p.add_argument("args", nargs=argparse.REMAINDER)
    p.set_defaults(func=_run)
    p = sub.add_parser("bench", help="OSU-style benchmark of a collective, halo or reshard vs raw mpi4py",
                       description="OSU-style benchmark of OP under mpiexec: latency min/avg/max/p50/p99 "
                                   "across processes, nccl-tests bandwidths, and the ratio to the same "
                                   "operation in raw mpi4py. See meshrt/bench/__init__.py for the method. "
                                   "`meshrt bench stencil -h`: weak scaling of a stencil, T_eff.")
    from .bench import add_arguments

    add_arguments(p)
    p.error = _error_on_rank0(p)
    p.set_defaults(func=_bench)
    _mlir_add_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


# -- meshrt mlir partition / run ---------------------------------------------------------------------
MLIR_PIPELINE = "builtin.module(func.func(sharding-propagation,shard-partition))"
MLIR_PACKAGE = "mlir-22-tools"


def find_mlir_opt():
    """``mlir-opt``: $MESHRT_MLIR_OPT if set, else on PATH, else the newest /usr/lib/llvm-*/bin one."""
    import glob
    import shutil

    env = os.environ.get("MESHRT_MLIR_OPT")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    found = shutil.which("mlir-opt")
    if found:
        return found
    def version(path):
        v = path.split("llvm-")[-1].split("/")[0]
        return int(v) if v.isdigit() else 0
    cands = sorted(glob.glob("/usr/lib/llvm-*/bin/mlir-opt"), key=version, reverse=True)
    return cands[0] if cands else None


def mlir_partition(path):
    """The per-process text mlir-opt's sharding-propagation + shard-partition make of ``path``.

    Raises `RuntimeError` naming the Debian package when mlir-opt is missing,
    and with mlir-opt's message when it fails.
    """
    exe = find_mlir_opt()
    if exe is None:
        where = f"MESHRT_MLIR_OPT={os.environ['MESHRT_MLIR_OPT']!r} is not an executable" \
            if os.environ.get("MESHRT_MLIR_OPT") else "no mlir-opt on PATH or in /usr/lib/llvm-*/bin"
        raise RuntimeError(f"{where}; install it with `apt-get install {MLIR_PACKAGE}` (Debian/Ubuntu) "
                           "or point MESHRT_MLIR_OPT at one")
    proc = subprocess.run([exe, f"--pass-pipeline={MLIR_PIPELINE}", path], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"mlir-opt failed on {path}:\n{proc.stderr.strip()}")
    return proc.stdout


def _mlir_partition_cmd(args):
    try:
        text = mlir_partition(args.file)
    except RuntimeError as e:
        print(f"meshrt mlir partition: {e}", file=sys.stderr)
        return 2
    if args.output:
        try:
            with open(args.output, "w") as f:
                f.write(text)
        except OSError as e:
            print(f"meshrt mlir partition: -o {args.output}: cannot write it ({e.strerror})", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


_MLIR_WORKER = "import sys; del sys.path[0]; from meshrt.cli import _mlir_worker; sys.exit(_mlir_worker(sys.argv[1:]))"


def _mlir_worker(argv):
    """``meshrt mlir run`` inside a process of ``meshrt mlir run -n N``: a crash aborts the job."""
    try:
        return main(argv)
    except BaseException as e:
        if isinstance(e, SystemExit) and e.code in (None, 0):
            raise
        import traceback

        from mpi4py import MPI

        text = traceback.format_exc()
        rank = MPI.COMM_WORLD.Get_rank()
        sys.stderr.write("".join(f"[rank {rank}] {line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(e.code if isinstance(e, SystemExit) and isinstance(e.code, int) else 1)


def _mlir_launch(args):
    from .runtime.mpiexec import find_launcher

    if args.n < 1:
        print(f"meshrt mlir run: -n must be at least 1, got {args.n}", file=sys.stderr)
        return 2
    launcher = find_launcher()
    if launcher is None:
        print("meshrt mlir run: no mpiexec found beside the MPI library mpi4py loads, next to the "
              "Python executable, on PATH or in MESHRT_MPIEXEC; install meshrt[mpich] or an MPI",
              file=sys.stderr)
        return 2
    inner = ["mlir", "run", args.file, "--func", args.function, "--out", args.out, "--args", *args.args]
    if args.shardings_from:
        inner += ["--shardings-from", args.shardings_from]
    try:
        return subprocess.call(launcher.command(args.n, [sys.executable, "-c", _MLIR_WORKER, *inner])[0])
    except KeyboardInterrupt:
        return 130


def _mlir_run_cmd(args):
    if args.n is not None:
        return _mlir_launch(args)
    import numpy as np
    from mpi4py import MPI

    from .errors import MLIRError
    from .mlir.interpreters.spmd import Program, check_function, function_shardings, gather_results, is_partitioned, local_parts

    comm = MPI.COMM_WORLD
    try:
        # every process reads the same files and IR, so up to the run all of them fail alike
        module = _parse_program(args.file)
        from .mlir.shardy.program import is_sdy

        if is_sdy(module):  # StableHLO + Shardy (JAX's export): global arrays split per their sdy.sharding
            from .mlir.shardy.cli import run_command

            return run_command(module, args.function, args.args, args.out, comm)
        prog = Program(module, comm)
        check_function(module, args.function)
        arrays = [_load_arg(a, i) for i, a in enumerate(args.args)]
        partitioned = is_partitioned(module, args.function)
        if partitioned and args.shardings_from:
            arg_s, res_s = function_shardings(Program(_parse_program(args.shardings_from, "--shardings-from"), comm),
                                              args.function)
        else:
            arg_s, res_s = [None] * len(arrays), None
            if partitioned and comm.size > 1:
                _whole_arrays_fit(module, args.function, arrays)
        local = local_parts(arrays, arg_s)
    except (MLIRError, OSError, ValueError) as e:
        if comm.rank == 0:
            print(f"meshrt mlir run: {e}", file=sys.stderr)
        return 1
    try:
        results = prog.run(args.function, local)
        outs = gather_results(results, res_s or [None] * len(results), comm)
    except (MLIRError, ValueError) as e:
        # a failure while running may be this process's alone: end the job instead of a hang
        print(f"[rank {comm.rank}] meshrt mlir run: {e}", file=sys.stderr)
        sys.stderr.flush()
        if comm.size > 1:
            comm.Abort(1)
        return 1
    if comm.rank == 0:
        try:
            os.makedirs(args.out, exist_ok=True)
            for i, r in enumerate(outs):
                np.save(os.path.join(args.out, f"result{i}.npy"), r)
        except OSError as e:
            print(f"meshrt mlir run: --out {args.out}: cannot write the results there ({e.strerror})", file=sys.stderr)
            return 1
    return 0


def _random_args(module, name, rng):
    """Arguments for ``@name`` from its types: random integers in [-4, 4] (exact in every float
    type), whole scalars; an argument of a dynamic size cannot be made and raises `MLIRError`."""
    import numpy as np

    from .errors import MLIRError
    from .mlir.dialects.memref import shaped
    from .mlir.ir import ScalarType

    f = module.functions().get(name)
    if f is None:
        raise MLIRError(f"{module.filename}: no function @{name}")
    out = []
    for i, t in enumerate(f.attributes["function_type"].type.inputs):
        st = shaped(t)
        if st is not None:
            if any(d is None for d in st.shape):
                raise MLIRError(f"{module.filename}: @{name} argument {i} has the dynamic type {t}; "
                                "give the arguments with --args")
            dt = st.element.numpy_dtype
            out.append(rng.integers(-4, 5, size=st.shape).astype(dt) if dt != np.bool_
                       else rng.integers(0, 2, size=st.shape).astype(bool))
        elif isinstance(t, ScalarType):
            out.append(t.numpy_dtype.type(rng.integers(1, 4)))
        else:
            raise MLIRError(f"{module.filename}: @{name} argument {i} of type {t} cannot be made; give --args")
    return out


def _mlir_compare_cmd(args):
    """``meshrt mlir compare PROGRAM --lower``: the shard-level program and mlir-opt's lowering of it
    to the mpi dialect, run side by side on the same processes; the first value that differs."""
    if args.n is not None:
        from .runtime.mpiexec import find_launcher

        launcher = find_launcher()
        if launcher is None:
            print("meshrt mlir compare: no mpiexec found; install meshrt[mpich] or an MPI", file=sys.stderr)
            return 2
        inner = ["mlir", "compare", args.file, "--func", args.function, "--rtol", str(args.rtol),
                 "--atol", str(args.atol), "--seed", str(args.seed)]
        inner += ["--lower"] if args.lower else []
        inner += ["--per-process"] if args.per_process else []
        inner += ["--lowered", args.lowered] if args.lowered else []
        inner += ["--keep", args.keep] if args.keep else []
        inner += ["--shardings-from", args.shardings_from] if args.shardings_from else []
        inner += ["--args", *args.args] if args.args else []
        return subprocess.call(launcher.command(args.n, [sys.executable, "-c", _MLIR_WORKER, *inner])[0])
    import numpy as np
    from mpi4py import MPI

    from .errors import MLIRError
    from .mlir import parse
    from .mlir.interpreters.spmd import Program, check_function, function_shardings, gather_results, \
        is_partitioned, local_parts
    from .mlir.lowering import compare_runs, first_difference, lower_to_mpi
    from .runtime import mpi as _mpi

    comm = MPI.COMM_WORLD

    def say(text, err=False):
        if comm.rank == 0:
            print(text, file=sys.stderr if err else sys.stdout)
            sys.stdout.flush()

    if args.lower == bool(args.lowered):
        say("meshrt mlir compare: give --lower (mlir-opt lowers PROGRAM) or --lowered FILE (its lowering)", True)
        return 2
    if args.per_process and not args.lower:
        say("meshrt mlir compare: --per-process goes with --lower", True)
        return 2
    try:
        module = _parse_program(args.file)
        check_function(module, args.function)
        annotated = not is_partitioned(module, args.function)
        # the lowering: made once (rank 0 calls mlir-opt), the same text (or error) everywhere
        lowered = None
        if args.lower:
            made = None
            if comm.rank == 0:
                exe = find_mlir_opt()
                try:
                    if exe is None:
                        raise MLIRError(f"no mlir-opt on PATH or in /usr/lib/llvm-*/bin; install it with "
                                        f"`apt-get install {MLIR_PACKAGE}` or give --lowered FILE")
                    ranks = range(comm.size) if args.per_process else [None]
                    made = [lower_to_mpi(module.source, args.file, exe, partition=annotated, function=args.function,
                                         dlti=None if r is None else (r, comm.size)) for r in ranks]
                except MLIRError as e:
                    made = str(e)
            with _mpi.internal("meshrt mlir compare", "the lowering, from rank 0", comm):
                failed = comm.bcast(made if isinstance(made, str) else None, root=0)
                if failed is None and args.per_process:  # each its own lowering (mpi.dlti: its rank, world size)
                    lowered = comm.scatter(made, root=0)
                elif failed is None:
                    lowered = comm.bcast(made, root=0)[0]
            if failed is not None:
                raise MLIRError(failed)
            shard_text, shard_name = (lowered.partitioned, f"{args.file} (partitioned by mlir-opt)") if annotated \
                else (module.source, args.file)
            low_name = f"{args.file} (lowered by mlir-opt" + (f" for process {comm.rank})" if args.per_process else ")")
            if args.keep:
                if comm.rank == 0:
                    os.makedirs(args.keep, exist_ok=True)
                    stem = os.path.splitext(os.path.basename(args.file))[0]
                    if annotated:
                        shard_name = os.path.join(args.keep, f"{stem}.partitioned.mlir")
                        with open(shard_name, "w") as f:
                            f.write(lowered.partitioned)
                with _mpi.internal("meshrt mlir compare", "the kept file names", comm):
                    shard_name = comm.bcast(shard_name, root=0)
                stem = os.path.splitext(os.path.basename(args.file))[0]
                low_name = os.path.join(args.keep, f"{stem}.rank{comm.rank}.mpi.mlir" if args.per_process
                                        else f"{stem}.mpi.mlir")
                if args.per_process or comm.rank == 0:
                    with open(low_name, "w") as f:
                        f.write(lowered.text)
            low_module = parse(lowered.text, low_name)
            shard_module = parse(shard_text, shard_name) if annotated else module
        else:
            if annotated:
                raise MLIRError(f"{args.file}: @{args.function} is annotated (shard.shard): give its partitioned "
                                "form with --lowered's, or use --lower")
            low_module, shard_module = _parse_program(args.lowered, "--lowered"), module
        shard_prog, low_prog = Program(shard_module, comm), Program(low_module, comm)
        check_function(shard_module, args.function)
        check_function(low_module, args.function)
        # the arguments: global arrays split per the annotated program's shardings, or local ones
        global_prog = Program(module, comm) if annotated else None
        arg_s = res_s = None
        if annotated:
            arg_s, res_s = function_shardings(global_prog, args.function)
        elif args.shardings_from:
            global_prog = Program(_parse_program(args.shardings_from, "--shardings-from"), comm)
            arg_s, res_s = function_shardings(global_prog, args.function)
        if args.args:
            arrays = [_load_arg(a, i) for i, a in enumerate(args.args)]
        elif global_prog is not None:  # global arrays, split per the global program's shardings
            arrays = _random_args(global_prog.module, args.function, np.random.default_rng(args.seed))
        else:  # per-process IR without shardings: each process its own random arguments
            arrays = _random_args(shard_module, args.function, np.random.default_rng([args.seed, comm.rank]))
        local = local_parts(arrays, arg_s) if arg_s is not None else arrays
    except (MLIRError, OSError, ValueError) as e:
        say(f"meshrt mlir compare: {e}", True)
        return 1
    if lowered is not None:
        steps = " | ".join(lowered.commands)
        if args.per_process:
            steps = re.sub(r"\(for MPI:comm_world_rank = \d+ of (\d+)\)", r"(for each of the \1 processes: mpi.dlti)", steps)
        say("lowering: " + steps)
        left = sorted({op.name for op in low_module.walk() if op.dialect == "shard" and op.name != "shard.grid"})
        if lowered.unlowered:
            names = sorted({n for n, _ in lowered.unlowered})
            say(f"note: mlir-opt cannot lower {', '.join(names)} (\"failed to legalize\") and then lowers nothing "
                f"(the pass converts the module whole or not at all): {', '.join(left)} run as shard ops")
        elif left:
            say(f"note: the lowering keeps {', '.join(left)}; they run as shard ops")
    try:
        a, b, diff = compare_runs(shard_prog, low_prog, args.function, local, comm, args.rtol, args.atol)
        ref_diff = None
        if global_prog is not None:  # both against the global program run on whole arrays (numpy)
            ga = gather_results(a, res_s, comm)
            gb = gather_results(b, res_s, comm)
            ref = global_prog.run(args.function, arrays)
            if comm.rank == 0:
                ref_diff = first_difference(ref, ga, args.rtol, args.atol) or first_difference(ref, gb, args.rtol, args.atol)
            with _mpi.internal("meshrt mlir compare", "the global run's verdict", comm):
                ref_diff = comm.bcast(ref_diff, root=0)
    except (MLIRError, ValueError) as e:
        print(f"[rank {comm.rank}] meshrt mlir compare: {e}", file=sys.stderr)
        sys.stderr.flush()
        if comm.size > 1:
            comm.Abort(1)
        return 1
    finally:
        for p in (shard_prog, low_prog) + ((global_prog,) if global_prog is not None else ()):
            p.free()
    if diff is not None:
        say(f"first difference: {diff}")
        return 1
    if ref_diff is not None:
        i, idx, x, y, note = ref_diff
        say(f"the two runs agree, but differ from the global program run on whole arrays: result {i} at "
            f"{list(idx)}: global {x!r}, partitioned {y!r}{note}")
        return 1
    n = len(a)
    say(f"same: {n} result(s) of @{args.function} equal on {comm.size} process(es)"
        + (" and equal the global program run on whole arrays" if global_prog is not None else ""))
    return 0


def _mlir_explain_cmd(args):
    if args.n is None and not any(v in os.environ for v in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")):
        # not under mpiexec: start as many processes as the program's mesh has devices
        try:
            from .mlir import parse_file
            from .mlir.dialects.sdy import meshes

            sizes = {m.size for m in meshes(parse_file(args.file)).values()}
        except (OSError, ValueError) as e:
            print(f"meshrt mlir explain: {e}", file=sys.stderr)
            return 1
        if sizes and max(sizes) > 1:
            args.n = max(sizes)
    if args.n is not None:
        from .runtime.mpiexec import find_launcher

        launcher = find_launcher()
        if launcher is None:
            print("meshrt mlir explain: no mpiexec found; install meshrt[mpich] or an MPI", file=sys.stderr)
            return 2
        inner = ["mlir", "explain", args.file, "--func", args.function]
        return subprocess.call(launcher.command(args.n, [sys.executable, "-c", _MLIR_WORKER, *inner])[0])
    from mpi4py import MPI

    from .errors import MLIRError
    from .mlir import parse_file
    from .mlir.shardy.cli import explain

    comm = MPI.COMM_WORLD
    try:
        text = explain(parse_file(args.file), args.function, comm)
    except (MLIRError, OSError, ValueError) as e:
        if comm.rank == 0:
            print(f"meshrt mlir explain: {e}", file=sys.stderr)
        return 1
    if comm.rank == 0:
        print(text)
    return 0


def _parse_program(path, option=None):
    """The module of an ``.mlir`` file; an `MLIRError` naming the file (and ``option``) if it cannot be read."""
    from .errors import MLIRError
    from .mlir import parse_file

    try:
        return parse_file(path)
    except OSError as e:
        raise MLIRError(f"{option + ' ' if option else ''}{path}: cannot read it ({e.strerror or e})") from None


def _load_arg(path, i):
    """``--args`` file ``i``: one array from a ``.npy`` file, or an `MLIRError` naming the file."""
    import numpy as np

    from .errors import MLIRError

    import tokenize

    try:
        a = np.load(path, allow_pickle=False)
    except (OSError, ValueError, SyntaxError, EOFError, tokenize.TokenError) as e:  # numpy reads the header as Python
        raise MLIRError(f"--args {path}: argument {i} is not a readable .npy file ({e})") from None
    if not isinstance(a, np.ndarray):  # np.load opened a .npz archive
        a.close()
        raise MLIRError(f"--args {path}: argument {i} is a .npz archive; expected one .npy file per argument")
    return a


def _whole_arrays_fit(module, name, arrays):
    """A partitioned function takes per-process parts: whole arrays fit only replicated arguments."""
    from .errors import MLIRError

    f = module.functions().get(name)
    if f is None:
        return
    for i, (t, a) in enumerate(zip(f.attributes["function_type"].type.inputs, arrays)):
        shape = getattr(t, "shape", None)
        if shape is not None and any(d is None for d in shape):
            raise MLIRError(f"{module.filename}: @{name} is partitioned and argument {i} has the per-process "
                            f"type {t}; give the global program with --shardings-from so that each process "
                            f"takes its part of the global {a.shape} array")


def _mlir_add_parser(sub):
    p = sub.add_parser("mlir", help="partition (mlir-opt) and run MLIR programs of the shard dialect")
    msub = p.add_subparsers(dest="mlir_command", required=True)
    q = msub.add_parser("partition", help=f"per-process IR from mlir-opt --pass-pipeline={MLIR_PIPELINE!r}")
    q.add_argument("file")
    q.add_argument("-o", "--output", help="write here instead of stdout")
    q.set_defaults(func=_mlir_partition_cmd)
    q = msub.add_parser("run", help="run a func.func on every process (under mpiexec / meshrt run)",
                        description="Arguments are global arrays (.npy). A partitioned program takes each "
                                    "process's part per the argument shardings of the global program given "
                                    "with --shardings-from; an un-partitioned one takes them whole. Rank 0 "
                                    "writes the (gathered) results as DIR/result<i>.npy.")
    q.add_argument("-n", type=int, default=None,
                   help="start N processes with mpiexec (default: run in this process, e.g. under mpiexec)")
    q.add_argument("file")
    q.add_argument("--func", dest="function", required=True, help="name of the func.func to run")
    q.add_argument("--args", nargs="*", default=[], help=".npy files, one per function argument")
    q.add_argument("--out", required=True, help="directory for result<i>.npy")
    q.add_argument("--shardings-from", metavar="GLOBAL.mlir",
                   help="the un-partitioned program, for the argument and result shardings")
    q.set_defaults(func=_mlir_run_cmd)
    q = msub.add_parser("compare", help="run a shard-level program and its mpi-dialect lowering (mlir-opt "
                                        "--convert-shard-to-mpi) side by side; report the first differing value",
                        description="PROGRAM: an annotated global program (partitioned by mlir-opt first, and "
                                    "both runs also checked against it run on whole arrays) or a partitioned one. "
                                    "Without --args, arguments are random small integers made from the types "
                                    "(--seed). Exit status 0: equal; 1: a difference or an error.")
    q.add_argument("-n", type=int, default=None, help="start N processes with mpiexec")
    q.add_argument("file")
    q.add_argument("--lower", action="store_true", help="make the lowering with mlir-opt")
    q.add_argument("--lowered", metavar="FILE", help="the lowering, already made")
    q.add_argument("--per-process", action="store_true",
                   help="with --lower: lower once per process, for it alone (mpi.dlti MPI:comm_world_rank and "
                        "_size: mlir-opt folds them to constants), as LLVM's tests of the pass do")
    q.add_argument("--func", dest="function", required=True, help="name of the func.func to run")
    q.add_argument("--args", nargs="*", default=[], help=".npy files, one per argument (global arrays)")
    q.add_argument("--shardings-from", metavar="GLOBAL.mlir", help="the un-partitioned program, for shardings")
    q.add_argument("--keep", metavar="DIR", help="write the partitioned and lowered texts there (their "
                                                 "file:line:col are what errors name)")
    q.add_argument("--rtol", type=float, default=1e-6, help="relative tolerance for floats (default 1e-6)")
    q.add_argument("--atol", type=float, default=0.0, help="absolute tolerance for floats (default 0)")
    q.add_argument("--seed", type=int, default=0, help="seed of the random arguments")
    q.set_defaults(func=_mlir_compare_cmd)
    q = msub.add_parser("explain", help="a Shardy program with the sharding of every value and the bytes each "
                                        "op moves (runs it once on zeros)")
    q.add_argument("-n", type=int, default=None,
                   help="start N processes with mpiexec (default: as many as the mesh has devices, or the "
                        "processes of the mpiexec it runs under)")
    q.add_argument("file")
    q.add_argument("--func", dest="function", default="main", help="name of the func.func (default main)")
    q.set_defaults(func=_mlir_explain_cmd)
    for x in (p, *msub.choices.values()):
        x.error = _error_on_rank0(x)


if __name__ == "__main__":
    sys.exit(main())
