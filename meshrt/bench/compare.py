"""``meshrt bench OP --compare imb|c`` and ``meshrt bench imb``: meshrt and raw mpi4py beside
IMB-MPI1's own number for the same call (or, without IMB-MPI1, a compiled C loop of it).

    mpiexec -n 2 meshrt bench all_reduce --compare imb --sizes 8,1K,64K,1M --repeat 5
    mpiexec -n 2 meshrt bench imb --sizes 8,1K,64K,1M          # the IMB-MPI1 collective set

Per round (``--repeat`` rounds): rank 0 runs IMB-MPI1, found beside the MPI library mpi4py
loaded (or named by ``MESHRT_IMB``, with an ``mpiexec`` beside it), as a child job of the same size through that MPI's own ``mpiexec`` (one run with every
benchmark and size of the round; an MPI process cannot host a second MPI program, so IMB-MPI1
runs in processes of its own while this job's processes sleep), then this job times, per op and
size, meshrt, raw mpi4py and the C loop (`meshrt._cfloor`: the same MPI call on fixed buffers,
the GIL released, IMB-MPI1's loop), each in its own loops in the order meshrt, raw, C, C, raw,
meshrt.  A column is the median over the rounds of its per-round average over processes.

IMB-MPI1's benchmarks for meshrt's ops (`IMB_NAMES`): all_reduce Allreduce, all_gather
Allgather, broadcast Bcast, reduce Reduce, reduce_scatter Reduce_scatter_block, all_to_all
Alltoall, gather Gather, scatter Scatter, shift Sendrecv (a periodic chain, both directions
timed as one call), send_recv PingPong (half a round trip).  IMB's message length is meshrt
bench's size, except for all_to_all and reduce_scatter, where meshrt bench's size is the whole
input (n pieces) and IMB's the piece (`imb_msglen`).  IMB-MPI1 reduces MPI_FLOAT, sum, and
moves MPI_BYTE; meshrt bench moves ``--dtype`` (default float64): the same bytes.

The parts without MPI (finding IMB-MPI1, its command and environment, parsing its output,
rows, table) come first; `run_compare` after.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

#: meshrt bench op -> IMB-MPI1 benchmark
IMB_NAMES = {"all_reduce": "Allreduce", "all_gather": "Allgather", "broadcast": "Bcast", "reduce": "Reduce",
             "reduce_scatter": "Reduce_scatter_block", "all_to_all": "Alltoall", "gather": "Gather",
             "scatter": "Scatter", "shift": "Sendrecv", "send_recv": "PingPong"}
#: ``meshrt bench imb``: IMB-MPI1's collectives and Sendrecv, in IMB's order
IMB_SET = ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "all_to_all", "gather", "scatter",
           "shift")
#: the columns a compared row adds to `meshrt.bench.FIELDS`
COMPARE_FIELDS = ("imb_latency_avg_us", "imb_repetitions", "c_latency_avg_us", "ratio_imb", "ratio_c",
                  "rounds")
# environment variables of the launcher that started this job: a child job must not see them
_LAUNCH_PREFIXES = ("PMI_", "PMIX_", "HYDRA_", "HYDI_", "OMPI_", "PRTE_", "MPI_LOCALNRANKS", "MPI_LOCALRANKID",
                    "I_MPI_HYDRA_", "MPIR_CVAR_CH4_", "SLURM_STEP", "PALS_")


def imb_msglen(op: str, size: int, n: int) -> int:
    """IMB-MPI1's message length for meshrt bench's ``size`` of ``op`` on a group of ``n``.

    >>> imb_msglen("all_reduce", 1024, 2), imb_msglen("all_to_all", 1024, 2)
    (1024, 512)
    """
    return size // n if op in ("all_to_all", "reduce_scatter") else size


def find_imb(libpath, executable=None):
    """``(IMB-MPI1, mpiexec)`` beside the MPI library at ``libpath`` (its ``../bin``, its own
    directory, or the directory of ``executable``, a venv's python), or None.

    >>> find_imb("/nonexistent/lib/libmpi.so.12") is None
    True
    """
    dirs = []
    if libpath:
        lib = os.path.dirname(os.path.realpath(libpath))
        dirs += [os.path.join(os.path.dirname(lib), "bin"), lib]
        dirs.append(os.path.join(os.path.dirname(os.path.dirname(libpath)), "bin"))
    if executable:
        dirs.append(os.path.dirname(executable))
    for d in dirs:
        imb, mpiexec = os.path.join(d, "IMB-MPI1"), os.path.join(d, "mpiexec")
        if os.access(imb, os.X_OK) and os.access(mpiexec, os.X_OK):
            return imb, mpiexec
    return None


def imb_env(environ: dict, libdir: str | None) -> dict:
    """``environ`` without this job's launcher variables (a child job would take them for its
    own), with ``libdir`` first on LD_LIBRARY_PATH (impi-rt's IMB-MPI1 finds libmpi there).

    >>> e = imb_env({"PMI_RANK": "0", "HOME": "/h", "LD_LIBRARY_PATH": "/x"}, "/v/lib")
    >>> sorted(e.items())
    [('HOME', '/h'), ('LD_LIBRARY_PATH', '/v/lib:/x')]
    """
    env = {k: v for k, v in environ.items() if not k.startswith(_LAUNCH_PREFIXES)}
    if libdir:
        old = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = libdir + (":" + old if old else "")
    return env


def imb_command(mpiexec: str, imb: str, ops, n: int, lengths_file: str, extra=()) -> list:
    """The child job: ``mpiexec -n N IMB-MPI1 BENCH... -npmin N -msglen FILE`` (IMB-MPI1's
    defaults otherwise: ``-sync 1``, root 0, its iteration policy)."""
    names = list(dict.fromkeys(IMB_NAMES[o] for o in ops))
    return [mpiexec, *extra, "-n", str(n), imb, *names, "-npmin", str(n), "-msglen", lengths_file]


def parse_imb(text: str) -> dict:
    """``{benchmark: {bytes: (repetitions, t_avg us)}}`` from IMB-MPI1's output (PingPong's
    one time column is its t; the last table where there are several: IMB runs the process
    counts in increasing order).

    >>> out = '''# Benchmarking Allreduce
    ... # #processes = 2
    ...        #bytes #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]
    ...             8         1000         0.22         0.26         0.24
    ... # Benchmarking PingPong
    ... # #processes = 2
    ...        #bytes #repetitions      t[usec]   Mbytes/sec
    ...         65536          640         5.10     12850.98
    ... '''
    >>> parse_imb(out)
    {'Allreduce': {8: (1000, 0.24)}, 'PingPong': {65536: (640, 5.1)}}
    """
    out, name, tcol = {}, None, 4
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("# Benchmarking"):
            name = s.split()[2]
            out[name] = {}
            continue
        if s.startswith("#bytes"):
            cols = s.split()
            tcol = next((i for i, c in enumerate(cols) if c.startswith("t_avg")), 2)
            continue
        f = s.split()
        if name is None or len(f) <= tcol or not f[0].isdigit() or not f[1].isdigit():
            continue
        try:
            out[name][int(f[0])] = (int(f[1]), float(f[tcol]))
        except ValueError:
            continue
    return out


def median_per_process(rounds) -> list:
    """Per process, the median over rounds of its per-call seconds (``rounds``: one list of
    per-process values per round).

    >>> median_per_process([[1.0, 4.0], [3.0, 2.0], [2.0, 9.0]])
    [2.0, 4.0]
    """
    return [statistics.median(v) for v in zip(*rounds)]


def _div(a, b):
    if a is None or b is None or not b or math.isnan(a) or math.isnan(b):
        return math.nan
    return a / b


def compare_row(base: dict, imb=None, c_times=None, rounds: int = 1) -> dict:
    """`meshrt.bench.make_row`'s ``base`` with the compared columns: IMB-MPI1's t_avg and
    repetitions (``imb``: ``(repetitions, us)`` or None), the C loop's average over processes
    (``c_times``: per-process seconds, or None), and meshrt's ratios to both.

    >>> r = compare_row({"latency_avg_us": 3.0}, (1000, 2.0), [1e-6, 3e-6], 5)
    >>> r["imb_latency_avg_us"], r["c_latency_avg_us"], r["ratio_imb"], r["ratio_c"], r["rounds"]
    (2.0, 2.0, 1.5, 1.5, 5)
    """
    row = dict(base)
    row["imb_repetitions"] = None if imb is None else int(imb[0])
    row["imb_latency_avg_us"] = math.nan if imb is None else float(imb[1])
    row["c_latency_avg_us"] = (math.nan if not c_times else float(sum(c_times) / len(c_times)) * 1e6)
    row["ratio_imb"] = _div(row.get("latency_avg_us"), row["imb_latency_avg_us"])
    row["ratio_c"] = _div(row.get("latency_avg_us"), row["c_latency_avg_us"])
    row["rounds"] = int(rounds)
    return row


# (column, row key, width); ``meshrt/IMB`` and ``meshrt/C`` are meshrt's avg over the reference's
_CMP_COLS = (("iters", "iterations", 7), ("imb_reps", "imb_repetitions", 9), ("imb_avg_us", "imb_latency_avg_us", 12),
             ("c_avg_us", "c_latency_avg_us", 11), ("raw_avg_us", "raw_latency_avg_us", 12),
             ("avg_us", "latency_avg_us", 11), ("meshrt/IMB", "ratio_imb", 11), ("meshrt/C", "ratio_c", 10),
             ("raw/C", "raw_c", 8))


def _cols(has_imb: bool):
    return [c for c in _CMP_COLS if has_imb or c[1] not in ("imb_repetitions", "imb_latency_avg_us", "ratio_imb")]


def compare_header(has_imb: bool) -> str:
    """The column line of a compared table (without IMB-MPI1: no ``imb_*`` or ``meshrt/IMB``).

    >>> compare_header(False).split()
    ['#size', 'iters', 'c_avg_us', 'raw_avg_us', 'avg_us', 'meshrt/C', 'raw/C']
    """
    return f"{'#size':<10}" + "".join(f"{name:>{w}}" for name, _, w in _cols(has_imb))


def format_compare_row(row: dict, has_imb: bool) -> str:
    """One line of a compared table.

    >>> r = compare_row({"size": 8, "iterations": 1000, "latency_avg_us": 0.7, "raw_latency_avg_us": 1.1},
    ...                 (1000, 0.25), [0.25e-6])
    >>> format_compare_row(r, True).split()
    ['8', '1000', '1000', '0.25', '0.25', '1.10', '0.70', '2.800', '2.800', '4.400']
    """
    out = f"{row['size']:<10d}"
    for _, key, w in _cols(has_imb):
        v = _div(row.get("raw_latency_avg_us"), row.get("c_latency_avg_us")) if key == "raw_c" else row.get(key)
        if v is None or (isinstance(v, float) and not math.isfinite(v)):
            out += f"{'-':>{w}}"
        elif key in ("iterations", "imb_repetitions"):
            out += f"{int(v):>{w}d}"
        else:
            out += f"{v:>{w}.{3 if key.startswith('ratio') or key == 'raw_c' else 2}f}"
    return out


# -- the run -------------------------------------------------------------------------------
def _sleep_barrier(comm, poll=0.002):
    """A barrier that sleeps while it waits: the processes of this job must leave the cores to
    IMB-MPI1's while it runs (an MPI waiting in a barrier may spin)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll)


def _unpin():
    """In the child job's launcher, before it starts: every CPU again.  This process may be
    pinned to one core by its own launcher (Intel MPI and Open MPI pin by default); a child
    inherits that, and IMB-MPI1's processes would then share the one core (ms per call)."""
    try:
        os.sched_setaffinity(0, range(os.cpu_count() or 1))
    except (AttributeError, OSError, ValueError):
        pass


def _run_imb(comm, found, ops, sizes_by_op, n, tmp, extra, timeout):
    """One IMB-MPI1 child job (rank 0 runs it, everyone waits asleep); ``{benchmark: {bytes:
    (repetitions, us)}}`` on every process, or an error message."""
    result = None
    if comm.Get_rank() == 0:
        imb, mpiexec = found
        lengths = os.path.join(tmp, "msglen")
        lens = sorted({imb_msglen(op, s, n) for op in ops for s in sizes_by_op[op]})
        with open(lengths, "w") as f:
            f.write("".join(f"{x}\n" for x in lens))
        cmd = imb_command(mpiexec, imb, ops, n, lengths, extra)
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, preexec_fn=_unpin,
                               env=imb_env(os.environ, os.path.join(os.path.dirname(os.path.dirname(imb)), "lib")))
            if p.returncode:
                result = f"{' '.join(cmd)} exited with {p.returncode}: {(p.stdout + p.stderr)[-800:]}"
            else:
                result = parse_imb(p.stdout)
        except (OSError, subprocess.TimeoutExpired) as e:
            result = f"{' '.join(cmd)}: {e}"
    _sleep_barrier(comm)
    return comm.bcast(result, root=0)


def _sides_time(sides, warmup, iters, barrier, loop, sync=True):
    """Per-call seconds of each side: side ``s`` is a Python call (timed by ``loop``) or a
    ``("c", floor)`` pair (the compiled loop, which times itself); in the order of ``sides``,
    then reversed, ``iters`` timed calls per side in all (the first calls' one-time costs
    stay out: one untimed call each first)."""
    def once(s, k):
        if isinstance(s, tuple):
            return s[1](warmup, k, sync)
        return loop(s, warmup, k, barrier)

    for s in sides:
        if not isinstance(s, tuple):
            s()
        barrier()
    first = (iters + 1) // 2
    t = [once(s, first) for s in sides]
    if iters > first:
        for i in reversed(range(len(sides))):
            t[i] += once(sides[i], iters - first)
    return [x / iters for x in t]


def run_compare(o, comm, out) -> int:
    """`meshrt.bench.run` for ``--compare`` and ``meshrt bench imb``: every op of ``o`` (one,
    or `IMB_SET`), ``o.repeat`` rounds, one table per op; rank 0 prints and writes files."""
    from mpi4py import MPI

    from .. import _cfloor
    from .. import bench as B
    from .cases import _collective_case
    from ..mesh import Mesh

    rank0 = comm.Get_rank() == 0
    mesh = Mesh(o.mesh_shape if o.mesh_shape else (comm.Get_size(),), comm=comm)
    axes = o.mesh_axes
    n = mesh.axes_size(axes)
    ops = list(IMB_SET) if o.op == "imb" else [o.op]
    lib = MPI.Get_library_version().strip().splitlines()[0].strip()
    libpath = getattr(_cfloor._mpi_library(), "_name", None)
    found = find_imb(libpath, sys.executable) if o.compare == "imb" else None
    given = os.environ.get("MESHRT_IMB")
    if o.compare == "imb" and given:
        found = (given, os.path.join(os.path.dirname(given), "mpiexec"))
        if not (os.access(found[0], os.X_OK) and os.access(found[1], os.X_OK)):
            raise B.BenchError(f"MESHRT_IMB: {given!r} is not an executable IMB-MPI1 with an mpiexec beside it")
    whole = n == comm.Get_size()
    note = None
    if o.compare == "imb" and found is None:
        note = (f"IMB-MPI1 not found beside the MPI library mpi4py loaded ({libpath or 'unknown'}): "
                f"comparing with a compiled C loop of the same call (c_avg_us)")
    elif found is not None and not whole:
        note = "IMB-MPI1 runs on all processes; --mesh-axes names a smaller group, so no IMB-MPI1 column"
        found = None
    if not _cfloor.available():
        note = (note + "; " if note else "") + "the C loop found no MPI functions: no c_avg_us column"
    loop = B.timing_loop(o.method, comm)
    emit = (lambda line: print(line, file=out, flush=True)) if rank0 else (lambda line: None)
    emit(f"# meshrt bench {o.op} --compare {o.compare}: {comm.Get_size()} processes, group size {n}, {o.dtype}"
         + (f", {o.reduction}" if set(ops) & set(B.REDUCING) else ""))
    emit(f"# {lib}; {B.thread_level_text()}")
    emit(f"# method {o.method}: {B._METHOD_TEXT[o.method]}; result {o.result}; buffers {B.ALLOC_TEXT[o.alloc]}; "
         f"median over {o.repeat} round(s) of the average over processes; order per round: IMB-MPI1, then per op "
         f"and size meshrt, raw, C, C, raw, meshrt")
    if found is not None:
        emit(f"# IMB-MPI1: {found[0]} (a child job of {n} processes through {found[1]}, run by rank 0 each round "
             f"while this job sleeps; IMB's defaults: -sync 1, root 0, MPI_FLOAT sum)")
    if note:
        emit(f"# {note}")
    cases = {}
    for op in ops:
        cases[op] = {}
        for nb in o.sizes:
            case = _collective_case(op, mesh, axes, nb, o.dtype, o.reduction, reuse=o.result == "reuse",
                                    alloc=o.alloc)
            if case.size not in cases[op]:
                cases[op][case.size] = case
            elif case.free is not None:  # a size that collapsed onto one already there
                case.free()
    times = {(op, s): [] for op in ops for s in cases[op]}
    imb_runs = []
    with tempfile.TemporaryDirectory(prefix="meshrt-imb-") as tmp:
        for _ in range(o.repeat):
            if found is not None:
                r = _run_imb(comm, found, ops, {op: list(cases[op]) for op in ops}, n, tmp, o.imb_args, o.imb_timeout)
                if isinstance(r, str):
                    emit(f"# IMB-MPI1 failed, no IMB column: {r}")
                    found = None
                else:
                    imb_runs.append(r)
            for op in ops:
                for size, case in cases[op].items():
                    warmup, iters = B.default_iterations(size, "imb" if o.method != "osu" else "osu")
                    warmup = warmup if o.warmup is None else o.warmup
                    iters = iters if o.iters is None else o.iters
                    sides = [case.meshrt, case.raw] + ([("c", case.floor)] if case.floor is not None else [])
                    t = _sides_time(sides, warmup, iters, comm.Barrier, loop, o.method != "imb-nosync")
                    t = [x * case.scale for x in t]
                    times[op, size].append((warmup, iters, comm.gather(t, root=0)))
    rows = []
    for op in ops:
        if rank0:
            emit(f"# {op}" + (f" (IMB-MPI1 {IMB_NAMES[op]}, message length "
                              f"{'size / group size' if imb_msglen(op, 2, 2) == 1 else 'size'})" if imb_runs else ""))
            emit(compare_header(bool(imb_runs)))
        for size, case in cases[op].items():
            if case.free is not None:
                case.free()
            if not rank0:
                continue
            per_round = times[op, size]
            warmup, iters = per_round[0][0], per_round[0][1]
            sides = list(zip(*[r[2] for r in per_round]))  # per process: rounds of (meshrt, raw, c)
            med = [median_per_process([[proc[r][j] for proc in sides] for r in range(len(per_round))])
                   for j in range(len(sides[0][0]))]
            base = B.make_row(op, size, n, comm.Get_size(), warmup, iters, med[0], med[1])
            imb = None
            if imb_runs:
                got = [r.get(IMB_NAMES[op], {}).get(imb_msglen(op, size, n)) for r in imb_runs]
                got = [g for g in got if g is not None]
                if got:
                    imb = (got[0][0], statistics.median(g[1] for g in got))
            row = compare_row(base, imb, med[2] if len(med) > 2 else None, o.repeat)
            rows.append(row)
            emit(format_compare_row(row, bool(imb_runs)))
    if rank0:
        meta = {"op": o.op, "ops": ops, "nprocs": comm.Get_size(), "group_size": n, "dtype": str(o.dtype),
                "reduction": o.reduction, "mpi": lib, "method": o.method, "result": o.result, "alloc": o.alloc,
                "compare": o.compare, "repeat": o.repeat, "imb": None if not imb_runs else found[0],
                "note": note}
        if o.json:
            B.write_json(o.json, meta, rows, B.FIELDS + COMPARE_FIELDS)
        if o.csv:
            B.write_csv(o.csv, rows, B.FIELDS + COMPARE_FIELDS)
        if o.plot:
            for op in ops:  # one figure per op
                path = o.plot if len(ops) == 1 else f"{os.path.splitext(o.plot)[0]}-{op}.png"
                B.plot(path, [r for r in rows if r["op"] == op],
                       f"meshrt bench {op} --compare {o.compare}: {comm.Get_size()} processes, {o.dtype}")
    mesh.free()
    return 0
