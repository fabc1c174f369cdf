"""IMB-MPI1 next to ``meshrt bench --method imb`` (raw mpi4py and meshrt) on the same MPI, many runs.

    python bench/bench_vs_imb.py --op all_reduce --sizes 8,1024,65536,1048576 --runs 7
    python bench/bench_vs_imb.py --no-imb --mpiexec-args="--allow-run-as-root --oversubscribe"  # Open MPI

Runs ``mpiexec -n 2 IMB-MPI1 Allreduce -npmin 2 -msglen FILE`` and ``mpiexec -n 2
python -m meshrt bench all_reduce --method imb --json F`` alternately ``--runs`` times
(``mpiexec`` and ``IMB-MPI1`` from the directory of this Python, i.e. the venv whose MPI
mpi4py loads; Intel MPI's ``impi-rt`` wheel ships ``IMB-MPI1``).  Per size it prints the
minimum and the median over runs of IMB's t_avg, of the raw side's avg and of meshrt's
avg: on a machine shared with other jobs single runs scatter by 10x (an MPI that
busy-polls loses its core), the minimum is the run least disturbed.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

IMB_NAMES = {"all_reduce": "Allreduce", "all_gather": "Allgather", "broadcast": "Bcast", "reduce": "Reduce",
             "all_to_all": "Alltoall", "gather": "Gather", "scatter": "Scatter",
             "reduce_scatter": "Reduce_scatter_block"}


def imb_times(cmd, sizes, tmp):
    """``{size: t_avg us}`` from one IMB-MPI1 run (its table: bytes, repetitions, t_min, t_max, t_avg)."""
    lengths = os.path.join(tmp, "lengths")
    with open(lengths, "w") as f:
        f.write("".join(f"{s}\n" for s in sizes))
    r = subprocess.run(cmd + ["-msglen", lengths], capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    out = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
        if m and int(m.group(1)) in sizes:
            out[int(m.group(1))] = float(m.group(5))
    return out


def bench_times(cmd, tmp):
    """``{size: (raw avg us, meshrt avg us or None)}`` from one ``meshrt bench --json`` run."""
    path = os.path.join(tmp, "bench.json")
    r = subprocess.run(cmd + ["--json", path], capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")
    with open(path) as f:
        rows = json.load(f)["results"]
    return {x["size"]: (x["raw_latency_avg_us"], x["latency_avg_us"]) for x in rows}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--op", default="all_reduce", help="a collective IMB-MPI1 has (default all_reduce)")
    p.add_argument("--sizes", default="8,1024,65536,1048576", help="bytes, comma-separated")
    p.add_argument("--runs", type=int, default=5, help="runs of each tool (default 5)")
    p.add_argument("-n", type=int, default=2, help="processes (default 2)")
    p.add_argument("--no-imb", action="store_true", help="meshrt bench only (an MPI without IMB-MPI1)")
    p.add_argument("--no-meshrt", action="store_true", help="pass --no-meshrt to meshrt bench")
    p.add_argument("--mpiexec-args", default="", help="extra mpiexec arguments, e.g. Open MPI's as root")
    a = p.parse_args(argv)
    if a.op not in IMB_NAMES:
        p.error(f"--op: {a.op!r} has no IMB-MPI1 benchmark here; choose one of {', '.join(IMB_NAMES)}")
    sizes = [int(s) for s in a.sizes.split(",")]
    bindir = os.path.dirname(sys.executable)
    mpiexec = [os.path.join(bindir, "mpiexec"), *a.mpiexec_args.split(), "-n", str(a.n)]
    imb = mpiexec + [os.path.join(bindir, "IMB-MPI1"), IMB_NAMES[a.op], "-npmin", str(a.n)]
    bench = mpiexec + [sys.executable, "-m", "meshrt", "bench", a.op, "--method", "imb", "--no-progress",
                       "--sizes", ",".join(map(str, sizes))] + (["--no-meshrt"] if a.no_meshrt else [])
    env_lib = os.path.join(os.path.dirname(bindir), "lib")  # impi-rt's IMB-MPI1 finds libmpi here
    os.environ["LD_LIBRARY_PATH"] = env_lib + (":" + os.environ["LD_LIBRARY_PATH"]
                                               if os.environ.get("LD_LIBRARY_PATH") else "")
    got = {"imb": {s: [] for s in sizes}, "raw": {s: [] for s in sizes}, "meshrt": {s: [] for s in sizes}}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(a.runs):
            if not a.no_imb:
                for s, t in imb_times(imb, sizes, tmp).items():
                    got["imb"][s].append(t)
            for s, (raw, m) in bench_times(bench, tmp).items():
                got["raw"][s].append(raw)
                if m is not None:
                    got["meshrt"][s].append(m)
    lib = subprocess.run([sys.executable, "-c", "from mpi4py import MPI; print(MPI.Get_library_version())"],
                         capture_output=True, text=True).stdout.splitlines()[0].strip()
    print(f"# {a.op}, {a.n} processes, {lib}; {a.runs} runs each, IMB's method "
          f"(IMB-MPI1 t_avg; meshrt bench --method imb avg over processes); min / median over runs, us")
    cols = [c for c in ("imb", "raw", "meshrt") if any(got[c][s] for s in sizes)]
    print(f"{'#size':<10}" + "".join(f"{c + '_min':>12}{c + '_med':>12}" for c in cols)
          + ("" if "imb" not in cols else f"{'raw-imb_min':>13}{'raw/imb_min':>13}")
          + ("" if "meshrt" not in cols else f"{'meshrt-raw':>12}"))
    for s in sizes:
        line = f"{s:<10}"
        for c in cols:
            v = got[c][s]
            line += f"{min(v):>12.2f}{statistics.median(v):>12.2f}" if v else f"{'-':>12}{'-':>12}"
        if "imb" in cols and got["imb"][s]:
            line += f"{min(got['raw'][s]) - min(got['imb'][s]):>13.2f}{min(got['raw'][s]) / min(got['imb'][s]):>13.2f}"
        if "meshrt" in cols:
            line += f"{min(got['meshrt'][s]) - min(got['raw'][s]):>12.2f}"
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
