"""``meshrt bench``: OSU-style benchmarks of meshrt against the same operation in raw mpi4py.

    mpiexec -n 4 python -m meshrt bench all_reduce --mesh 2x2 --mesh-axes 1 --sizes 8:16M
    mpiexec -n 2 python -m meshrt bench halo --shape 4096x4096 --split 0
    mpiexec -n 2 python -m meshrt bench reshard --shape 4096x4096 --from "[[0]]" --to "[[], [0]]"

Method, as the OSU Micro-Benchmarks:

* Per size, one untimed first call, ``warmup`` untimed iterations, then
  ``iters`` timed ones (OSU's defaults: 100 and 1000 up to 8 KiB, 10 and 100
  above).  The first call absorbs one-time costs (Numba compilation, plans,
  group communicators) even with ``--warmup 0``.
* Each side -- the meshrt call, and the same operation written directly
  with mpi4py buffer methods on the same inputs and group communicator --
  runs in its own loop: ``warmup`` untimed calls, then ``iters`` timed ones,
  each followed by a barrier that is *not* timed (OSU times each call between
  barriers and excludes them).  The two loops run twice, in the order
  meshrt, raw, raw, meshrt, so slow drift (other jobs on the machine) hits
  both sides alike; interleaving the two sides call by call instead would
  make each evict the other's buffers from the cache and time that too.
  ``iters`` is the number of timed calls per side in all (both loops).
* Each process averages its own call times; rank 0 gathers the averages and
  reports their min/avg/max and p50/p99 (linear interpolation) across
  processes, for both sides.  ``ratio`` = meshrt avg / raw avg.

That is ``--method osu`` (the default).  ``--method imb`` is IMB-MPI1's as
its current releases run by default (``-sync 1``): each call timed alone with
an untimed barrier after it (OSU's timing), root 0, IMB's iterations (1000,
cut to 40 MiB moved per loop: 40 at 1 MiB), and one result array reused by
every call (``--result reuse``: IMB receives into one buffer; meshrt through
``out=`` where the op takes it), inputs and results in ``MPI_Alloc_mem``
memory as IMB's (``--alloc mpi``; Intel MPI's lies on 2 MiB pages, which its
large copies run faster on); the per-process mean per call, then
min/avg/max across processes are IMB's t_min/t_avg/t_max.  ``--method
imb-nosync`` is IMB's ``-sync 0`` (and IMB-MPI1 before 2019): one barrier, then
a loop of calls timed as a whole.  The same meshrt, raw, raw, meshrt order.
``--no-meshrt`` times the raw side alone and its table shows only that side,
so it reads next to ``IMB-MPI1 Allreduce -npmin 2`` (or OSU's
``osu_allreduce``) on the same MPI::

    mpiexec -n 2 meshrt bench all_reduce --method imb --no-meshrt --sizes 8,1K,64K,1M

``--compare imb`` puts IMB-MPI1's own t_avg beside meshrt and raw in one table
(and ``meshrt bench imb`` does it for IMB's whole collective set), ``--compare
c`` a compiled C loop of the same call: meshrt/bench/compare.py.

Bandwidth, as nccl-tests: ``algbw = S / t`` with ``t`` the avg latency and
``S`` the larger of one process's send and receive buffers (nccl-tests'
"size"), and ``busbw = algbw * factor`` (`BUSBW`), GB/s = 1e9 bytes/s (and
MB/s = 1e6 bytes/s beside it, for small messages).  The
``size`` column is the OSU message size: the bytes one process contributes.

========================  =====================  ==================  ===========
op                        size (per process)     S                   factor
========================  =====================  ==================  ===========
all_reduce                x                      size                2(n-1)/n
all_gather, gather        each piece             n * size            (n-1)/n
reduce_scatter            x (n pieces)           size                (n-1)/n
all_to_all                x (n pieces)           size                (n-1)/n
scatter                   each piece             n * size            (n-1)/n
broadcast, reduce         x                      size                1
shift, send_recv          the message            size                1
all_slice                 x (no communication)   size                1
halo                      bytes sent per update  size                1
reshard                   bytes sent to others   size                1
========================  =====================  ==================  ===========

``n`` is the group size; for ``halo`` and ``reshard`` the size is the largest
over the processes, set by ``--shape`` (``--sizes`` is rejected there).
gather/scatter use nccl-tests' (n-1)/n (their root moves n-1 pieces).
``send_recv`` is a ping-pong between in-group ranks 2j and 2j+1
(an odd last rank idles); its latency is half the round trip, as OSU's
``osu_latency``.  ``halo`` splits each ``--split`` dim (halo width 1, not
periodic): one dim over all of ``--mesh-axes``, several dims over one axis
each, in order.  ``shift`` moves one place along the last of ``--mesh-axes``
with ``rotate``; rooted ops use in-group root 0.  meshrt is called in its
default form (``all_reduce(x, mesh, axes, reduction)``, ``all_gather(x, mesh,
axes, 0)``: a new result each call).

The raw references do the same job the way a user of mpi4py would: a new
result array each call (``out = np.empty(count); comm.Allreduce(x, out,
MPI.SUM)`` and friends on ``mesh.group(axes)``), bare arrays (mpi4py finds the
datatype) and mpi4py's predefined op (for bool and float16, which MPI cannot
reduce natively, meshrt's own op and datatype); ``average`` is SUM then a numpy
divide.  Nothing else runs per call: each raw case is within a few percent of an
inline loop of the same mpi4py call (``bench/bench_baseline.py``, checked by
``tests/test_bench.py``).  ``halo``: persistent ``Send_init``/``Recv_init``
requests from the same halo plan, sending contiguous boxes in place and
packing the others with numpy.  ``reshard``: numpy packing into one buffer,
one ``Alltoallv``, numpy unpacking.

The parts without MPI (size parsing, defaults, bandwidth, statistics, table,
JSON, CSV, plot) come first; the cases and the timing loop (`run`) after.
"""

from __future__ import annotations

import ast
import csv
import json
import math
import os
import re
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from .cases import BenchError, _collective_case, _halo_case, _reshard_case  # noqa: F401  (_collective_case: bench/bench_baseline.py)

__all__ = [
    "OPS", "COLLECTIVES", "BUSBW", "BenchError", "BenchOptions", "parse_size", "parse_sizes", "format_size",
    "default_iterations", "busbw_factor", "transfer_bytes", "summarize", "make_row", "table_header",
    "format_row", "write_json", "write_csv", "plot", "add_arguments", "check_options", "run", "main",
]

COLLECTIVES = ("all_reduce", "all_gather", "all_slice", "all_to_all", "broadcast", "gather", "reduce",
               "reduce_scatter", "scatter", "send_recv", "shift")
OPS = COLLECTIVES + ("halo", "reshard")
_ALIASES = {"send": "send_recv", "recv": "send_recv", "update_halo": "halo"}
REDUCING = ("all_reduce", "reduce", "reduce_scatter")

#: busbw = algbw * BUSBW[op](n), n the group size (nccl-tests' factors).
BUSBW = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "scatter": lambda n: (n - 1) / n,
}

LARGE_MESSAGE = 8192  # OSU's boundary between small and large messages
IMB_OVERALL_VOL = 40 << 20  # IMB-MPI1's cap on the bytes one timed loop moves (iterations = min(1000, vol/size))
METHODS = ("osu", "imb", "imb-nosync")
COMPARES = ("imb", "c")
RESULTS = ("new", "reuse")
#: ``--alloc``: where the fixed buffers lie (numpy arrays, or MPI_Alloc_mem as IMB-MPI1's)
ALLOCS = ("numpy", "mpi")
#: ``--alloc`` in a table's header
ALLOC_TEXT = {"numpy": "numpy arrays", "mpi": "from MPI_Alloc_mem, as IMB-MPI1's"}
FIELDS = ("op", "size", "bytes", "nprocs", "group_size", "warmup", "iterations",
          "latency_min_us", "latency_avg_us", "latency_max_us", "latency_p50_us", "latency_p99_us",
          "algbw_MBps", "algbw_GBps", "busbw_GBps",
          "raw_latency_min_us", "raw_latency_avg_us", "raw_latency_max_us", "raw_latency_p50_us",
          "raw_latency_p99_us", "raw_algbw_MBps", "raw_algbw_GBps", "raw_busbw_GBps", "ratio", "validation")


# -- sizes, iterations, bandwidth ----------------------------------------------------------
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)(I?B)?\s*$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """Bytes in ``text``: an int with an optional binary suffix K, M, G (KiB/KB too).

    >>> parse_size("16M"), parse_size("8"), parse_size("1KiB")
    (16777216, 8, 1024)
    """
    m = _SIZE.match(str(text))
    if not m:
        raise BenchError(f"--sizes: {text!r} is not a size; expected bytes such as 8, 64K, 1M or 1G")
    value = int(m.group(1)) * _UNITS[m.group(2).upper()]
    if value <= 0:
        raise BenchError(f"--sizes: {text!r} is {value} bytes; sizes must be at least 1 byte")
    return value


def parse_sizes(text: str) -> list:
    """Message sizes: ``LO:HI`` gives LO, 2*LO, 4*LO, ... up to HI (OSU's ``-m``);
    one size or a comma-separated list gives those sizes.

    >>> parse_sizes("8:64"), parse_sizes("1M"), parse_sizes("1K,8")
    ([8, 16, 32, 64], [1048576], [1024, 8])
    """
    text = str(text).strip()
    if ":" in text:
        parts = text.split(":")
        if len(parts) != 2:
            raise BenchError(f"--sizes: {text!r} has {len(parts) - 1} ':'; expected LO:HI such as 8:16M")
        lo, hi = parse_size(parts[0]), parse_size(parts[1])
        if lo > hi:
            raise BenchError(f"--sizes: {text!r} starts above its end ({lo} > {hi} bytes)")
        out = []
        while lo <= hi:
            out.append(lo)
            lo *= 2
        return out
    return [parse_size(s) for s in text.split(",")]


def format_size(nbytes: int) -> str:
    """``1048576`` -> ``'1M'``; exact binary multiples only, else plain bytes."""
    for unit in ("G", "M", "K"):
        if nbytes >= _UNITS[unit] and nbytes % _UNITS[unit] == 0:
            return f"{nbytes // _UNITS[unit]}{unit}"
    return str(nbytes)


def default_iterations(nbytes: int, method: str = "osu") -> tuple:
    """``(warmup, iters)``: OSU's (100, 1000) up to 8 KiB, (10, 100) above; under ``imb``,
    IMB-MPI1's 1000 iterations cut to at most 40 MiB per loop (the same warm-up as OSU's).

    >>> default_iterations(8), default_iterations(1 << 20), default_iterations(1 << 20, "imb")
    ((100, 1000), (10, 100), (10, 40))
    """
    warmup, iters = (100, 1000) if nbytes <= LARGE_MESSAGE else (10, 100)
    if method in ("imb", "imb-nosync"):
        iters = max(1, min(1000, IMB_OVERALL_VOL // max(1, nbytes)))
    return warmup, iters


def busbw_factor(op: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor of ``op`` on a group of ``n`` (1 where none is defined)."""
    f = BUSBW.get(op)
    return 1.0 if f is None else float(f(n))


def transfer_bytes(op: str, size: int, n: int) -> int:
    """nccl-tests' ``S`` for ``op``: the larger of one process's send and receive buffers."""
    return size * n if op in ("all_gather", "gather", "scatter") else size


# -- statistics and rows ------------------------------------------------------------------
def summarize(values) -> dict:
    """min/avg/max and p50/p99 of per-process values (seconds in, microseconds out)."""
    a = np.asarray(values, dtype=np.float64) * 1e6
    if a.size == 0:
        return {k: math.nan for k in ("min", "avg", "max", "p50", "p99")}
    return {"min": float(a.min()), "avg": float(a.mean()), "max": float(a.max()),
            "p50": float(np.percentile(a, 50)), "p99": float(np.percentile(a, 99))}


def _div(a: float, b: float) -> float:
    """``a / b`` with 0/0 -> nan and x/0 -> inf, never an exception."""
    if b == 0 or not math.isfinite(b):
        if b == 0:
            return math.nan if a == 0 or math.isnan(a) else math.inf
        return math.nan
    return a / b


def make_row(op: str, size: int, n: int, nprocs: int, warmup: int, iters: int,
             meshrt_times, raw_times, validation=None) -> dict:
    """One result row from the per-process average latencies (seconds) of both sides
    (``meshrt_times=None``: the raw side alone, meshrt's fields nan)."""
    s = transfer_bytes(op, size, n)
    factor = busbw_factor(op, n)
    m, r = summarize([] if meshrt_times is None else meshrt_times), summarize(raw_times)
    row = {"op": op, "size": int(size), "bytes": int(s), "nprocs": int(nprocs), "group_size": int(n),
           "warmup": int(warmup), "iterations": int(iters)}
    for side, st in (("latency", m), ("raw_latency", r)):
        for k in ("min", "avg", "max", "p50", "p99"):
            row[f"{side}_{k}_us"] = st[k]
    # bytes per microsecond = 1e6 B/s; / 1e3 -> GB/s
    algbw = _div(s, m["avg"]) / 1e3
    raw_algbw = _div(s, r["avg"]) / 1e3
    row["algbw_MBps"] = algbw * 1e3
    row["algbw_GBps"] = algbw
    row["busbw_GBps"] = algbw * factor if factor else 0.0
    row["raw_algbw_MBps"] = raw_algbw * 1e3
    row["raw_algbw_GBps"] = raw_algbw
    row["raw_busbw_GBps"] = raw_algbw * factor if factor else 0.0
    row["ratio"] = _div(m["avg"], r["avg"])
    row["validation"] = None if validation is None else ("PASS" if validation else "FAIL")
    return row


# (column name, row key, width): names without spaces, so ``split()`` and awk read the table
_COLS = (("iters", "iterations", 7), ("avg_us", "latency_avg_us", 11), ("min_us", "latency_min_us", 11),
         ("max_us", "latency_max_us", 11), ("p50_us", "latency_p50_us", 11), ("p99_us", "latency_p99_us", 11),
         ("algbw_MBps", "algbw_MBps", 12), ("algbw_GBps", "algbw_GBps", 12), ("busbw_GBps", "busbw_GBps", 12),
         ("raw_avg_us", "raw_latency_avg_us", 12), ("raw_algbw_GBps", "raw_algbw_GBps", 16),
         ("ratio", "ratio", 8))
# --no-meshrt: the same columns, of the raw side (IMB's t_min/t_avg/t_max are min_us/avg_us/max_us)
_RAW_COLS = tuple((name, key if key == "iterations" else "raw_" + key, w) for name, key, w in _COLS[:9])


def table_header(validate: bool = False, raw_only: bool = False) -> str:
    """The column line, OSU style: ``# size  iters  avg_us  min_us ...  ratio`` (``avg_us``
    etc. are meshrt's, ``raw_*`` the plain mpi4py code's; ``raw_only``: the raw side's, no
    ``raw_*`` or ratio columns)."""
    cols = _RAW_COLS if raw_only else _COLS
    line = f"{'#size':<10}" + "".join(f"{name:>{w}}" for name, _, w in cols)
    return line + ("  check" if validate else "")


def _num(v, w, digits):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return f"{'-':>{w}}"
    if isinstance(v, float) and math.isinf(v):
        return f"{'inf':>{w}}"
    return f"{v:>{w}.{digits}f}"


def format_row(row: dict, validate: bool = False, raw_only: bool = False) -> str:
    """One table line for ``row`` (a `make_row` dict)."""
    out = f"{row['size']:<10d}"
    for _, key, w in (_RAW_COLS if raw_only else _COLS):
        if key == "iterations":
            out += f"{row[key]:>{w}d}"
        else:
            out += _num(row[key], w, 3 if key == "ratio" else 2)
    if validate:
        out += f"  {row['validation'] or '-'}"
    return out


def _finite(v):
    return v if not isinstance(v, float) or math.isfinite(v) else None


def write_json(path: str, meta: dict, rows: list, fields=FIELDS) -> None:
    """``{"meta": {...}, "results": [row, ...]}``; nan/inf become ``null`` (valid JSON)."""
    doc = {"meta": meta, "results": [{k: _finite(r[k]) for k in fields} for r in rows]}
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, allow_nan=False)
        f.write("\n")


def write_csv(path: str, rows: list, fields=FIELDS) -> None:
    """One header line (`FIELDS`), one line per row; nan/inf are written as empty cells."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(fields)
        for r in rows:
            w.writerow(["" if _finite(r[k]) is None else r[k] for k in fields])


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plot(path: str, rows: list, title: str = "") -> None:
    """Latency and bandwidth against size, log-log, meshrt and raw mpi4py, in two subplots."""
    from matplotlib.figure import Figure

    size = np.array([r["size"] for r in rows], dtype=np.float64)

    def col(key):
        v = np.array([np.nan if _finite(r.get(key)) is None else r[key] for r in rows], dtype=np.float64)
        v[v <= 0] = np.nan  # nothing to draw on a log axis
        return v

    use_bus = any((r["busbw_GBps"] or 0) > 0 for r in rows)
    bw = "busbw" if use_bus else "algbw"
    fig = Figure(figsize=(11, 4.2), layout="constrained")
    ax1, ax2 = fig.subplots(1, 2)
    ax1.plot(size, col("latency_avg_us"), "o-", label="meshrt")
    ax1.fill_between(size, col("latency_min_us"), col("latency_max_us"), alpha=0.2,
                     label="meshrt min-max across processes")
    ax1.plot(size, col("raw_latency_avg_us"), "s--", label="raw mpi4py")
    for key, style, label in (("imb_latency_avg_us", "^:", "IMB-MPI1 t_avg"), ("c_latency_avg_us", "v:", "C loop")):
        if any(_finite(r.get(key)) is not None for r in rows):  # (--compare)
            ax1.plot(size, col(key), style, label=label)
    ax1.set_ylabel("latency (us), avg over processes")
    ax2.plot(size, col(f"{bw}_GBps"), "o-", label="meshrt")
    ax2.plot(size, col(f"raw_{bw}_GBps"), "s--", label="raw mpi4py")
    ax2.set_ylabel(f"{bw} (GB/s)")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size per process (bytes)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    if title:
        fig.suptitle(title)
    fig.savefig(path, dpi=100)


# -- options ---------------------------------------------------------------------------------
def add_arguments(p) -> None:
    """The ``meshrt bench`` arguments on an argparse parser (values checked by `check_options`)."""
    p.add_argument("op", metavar="OP", help="a collective (" + ", ".join(COLLECTIVES) + "), halo, reshard, or imb "
                                            "(IMB-MPI1's collective set, each compared with IMB-MPI1)")
    p.add_argument("--mesh", default=None, help="mesh shape, e.g. 2x2 or 2x? (default: 1-D over all processes)")
    p.add_argument("--mesh-axes", default=None,
                   help="mesh axes of the device group, e.g. 0,1 (default: all); halo: one per split dim")
    p.add_argument("--sizes", default=None,
                   help="bytes per process: LO:HI in powers of two, one size (1M) or a list (default 8:16M); "
                        "not for halo/reshard (--shape sets their size)")
    p.add_argument("--dtype", default="float64", help="numpy dtype of the elements (default float64)")
    p.add_argument("--reduction", default="sum",
                   help="sum, max, min, product, average, bitwise_and/or/xor (default sum)")
    p.add_argument("--iters", default=None,
                   help="timed iterations per size (default osu: 1000, 100 above 8K; imb: 1000, at most 40 MiB "
                        "per process in all)")
    p.add_argument("--warmup", default=None, help="untimed iterations per size (default OSU's: 100, 10 above 8K)")
    p.add_argument("--method", default="osu",
                   help="osu: a barrier after every call, each call timed (default); imb: IMB-MPI1's (its default "
                        "-sync 1: the same timing, IMB's iterations, results reused); imb-nosync: IMB's -sync 0, "
                        "a barrier then one timed loop of calls")
    p.add_argument("--compare", default=None, metavar="imb|c",
                   help="imb: IMB-MPI1's own t_avg beside meshrt and raw (IMB-MPI1 from beside the MPI mpi4py "
                        "loads, run each round as a child job), and the C loop; c: the C loop of the same call only")
    p.add_argument("--repeat", default=None, help="--compare: rounds, each column the median over them (default 1)")
    p.add_argument("--result", default=None, metavar="new|reuse",
                   help="new: a new result array each call; reuse: one reused (meshrt through out= where the op "
                        "takes it), as IMB-MPI1 (default: reuse under --method imb*, else new)")
    p.add_argument("--alloc", default=None, metavar="numpy|mpi",
                   help="where the inputs and reused results lie: numpy arrays, or memory from MPI_Alloc_mem, "
                        "as IMB-MPI1 allocates (Intel MPI's lies on 2 MiB pages; default: mpi under --method "
                        "imb*, else numpy)")
    p.add_argument("--imb-args", default="", help="--compare imb: extra arguments of the child mpiexec")
    p.add_argument("--no-meshrt", action="store_true",
                   help="time the raw mpi4py side only (to compare with OSU or IMB-MPI1 on the same MPI)")
    p.add_argument("--validate", action="store_true", help="check results against a numpy model (PASS/FAIL)")
    p.add_argument("--json", default=None, metavar="F", help="write results as JSON to F")
    p.add_argument("--csv", default=None, metavar="F", help="write results as CSV to F")
    p.add_argument("--plot", default=None, metavar="F.png", help="plot latency and bandwidth vs size to F.png")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--shape", default="4096x4096", help="halo/reshard: global tensor shape (default 4096x4096)")
    p.add_argument("--split", default="0", help="halo: tensor dims split over the mesh, e.g. 0 or 0,1 (default 0)")
    p.add_argument("--from", dest="src", default="[[0]]", help='reshard: source split_axes (default "[[0]]")')
    p.add_argument("--to", dest="dst", default="[[], [0]]", help='reshard: target split_axes (default "[[], [0]]")')


@dataclass
class BenchOptions:
    """Checked options; everything here is the same on every process."""

    op: str
    mesh_shape: tuple | None = None
    mesh_axes: tuple | None = None
    sizes: list = field(default_factory=list)
    dtype: np.dtype = np.dtype(np.float64)
    reduction: str = "sum"
    method: str = "osu"
    compare: str | None = None
    repeat: int = 1
    result: str = "new"
    alloc: str = "numpy"
    imb_args: tuple = ()
    imb_timeout: float = 600.0
    meshrt: bool = True
    iters: int | None = None
    warmup: int | None = None
    validate: bool = False
    json: str | None = None
    csv: str | None = None
    plot: str | None = None
    progress: bool = True
    shape: tuple = (4096, 4096)
    split: tuple = (0,)
    src: tuple = ((0,),)
    dst: tuple = ((), (0,))


def _count(text, name):
    if text is None:
        return None
    try:
        v = int(str(text).strip())
    except ValueError:
        raise BenchError(f"--{name}: {text!r} is not an integer") from None
    if v < 0 or (name == "iters" and v == 0):
        least = 1 if name == "iters" else 0
        raise BenchError(f"--{name}: {v}; it must be at least {least}")
    return v


def _ints(text, name, what):
    try:
        out = tuple(int(s) for s in str(text).replace(" ", "").split(",") if s != "")
    except ValueError:
        raise BenchError(f"--{name}: {text!r}; expected {what}") from None
    if not out:
        raise BenchError(f"--{name}: {text!r} is empty; expected {what}")
    return out


def _shape(text):
    try:
        shape = tuple(int(s) for s in str(text).lower().split("x"))
    except ValueError:
        raise BenchError(f"--shape: {text!r}; expected sizes joined by 'x', e.g. 4096x4096") from None
    if any(s <= 0 for s in shape):
        raise BenchError(f"--shape: {text!r}; every size must be positive")
    return shape


def _split_axes(text, name):
    try:
        v = ast.literal_eval(str(text))
    except (ValueError, SyntaxError):
        v = None
    ok = isinstance(v, (list, tuple)) and all(
        isinstance(d, (list, tuple)) and all(isinstance(a, (int, str)) and not isinstance(a, bool) for a in d)
        for d in v)
    if not ok:
        raise BenchError(f"--{name}: {text!r}; expected split_axes as a list of lists of mesh axes, "
                         f"e.g. \"[[0]]\" or \"[[], [0]]\"")
    return tuple(tuple(d) for d in v)


def _check_compare(args, o) -> None:
    """``--compare``, ``--repeat``, ``--result``, ``--alloc``, ``--imb-args`` and OP ``imb``
    (meshrt/bench/compare.py)."""
    import shlex

    o.compare = getattr(args, "compare", None)
    if o.op == "imb" and o.compare is None:
        o.compare = "imb"
    if o.compare is not None and o.compare not in COMPARES:
        raise BenchError(f"--compare: {o.compare!r}; choose one of {', '.join(COMPARES)}")
    if o.compare is not None:
        if o.op in ("halo", "reshard", "all_slice"):
            raise BenchError(f"--compare: {o.op} has no single MPI call to compare with; use a collective")
        if not o.meshrt:
            raise BenchError("--compare: not with --no-meshrt (the compared table has meshrt's column)")
    repeat = getattr(args, "repeat", None)
    if repeat is not None and o.compare is None:
        raise BenchError("--repeat: only with --compare (or OP imb)")
    o.repeat = 1 if repeat is None else _count(repeat, "repeat")
    if o.repeat == 0:
        raise BenchError("--repeat: 0; it must be at least 1")
    result = getattr(args, "result", None)
    o.result = ("reuse" if o.method != "osu" else "new") if result is None else result
    if o.result not in RESULTS:
        raise BenchError(f"--result: {o.result!r}; choose one of {', '.join(RESULTS)}")
    alloc = getattr(args, "alloc", None)
    o.alloc = ("mpi" if o.method != "osu" else "numpy") if alloc is None else alloc
    if o.alloc not in ALLOCS:
        raise BenchError(f"--alloc: {o.alloc!r}; choose one of {', '.join(ALLOCS)}")
    try:
        o.imb_args = tuple(shlex.split(getattr(args, "imb_args", "") or ""))
    except ValueError as e:
        raise BenchError(f"--imb-args: {args.imb_args!r}: {e}") from None


def check_options(args) -> BenchOptions:
    """Validate the parsed arguments without MPI (same result on every process)."""
    from ..mesh import parse_shape
    from ..errors import MeshError

    op = _ALIASES.get(args.op, args.op)
    if op not in OPS and op != "imb":
        raise BenchError(f"OP: {args.op!r} is not a benchmark; choose one of {', '.join(OPS)} or imb")
    o = BenchOptions(op=op)
    if args.mesh is not None:
        try:
            o.mesh_shape = parse_shape(args.mesh)
        except MeshError as e:
            raise BenchError(f"--mesh: {args.mesh!r}: {e}") from None
    ndim = len(o.mesh_shape) if o.mesh_shape else 1
    if args.mesh_axes is not None:
        if op == "reshard":
            raise BenchError("--mesh-axes: not used by reshard; --from and --to name the mesh axes")
        axes = _ints(args.mesh_axes, "mesh-axes", "mesh axes joined by ',', e.g. 0,1")
        for a in axes:
            if not 0 <= a < ndim:
                raise BenchError(f"--mesh-axes: axis {a} is out of range for a mesh of rank {ndim} "
                                 f"(0 <= axis < {ndim})")
        if len(set(axes)) != len(axes):
            raise BenchError(f"--mesh-axes: {args.mesh_axes!r} names an axis twice")
        o.mesh_axes = axes
    if op in ("halo", "reshard") and args.sizes is not None:
        raise BenchError(f"--sizes: not used by {op}; its message size follows from --shape (and --split, "
                         f"--from, --to)")
    o.sizes = parse_sizes("8:16M" if args.sizes is None else args.sizes)
    try:
        o.dtype = np.dtype(args.dtype)
    except (TypeError, ValueError, SyntaxError):  # numpy reads "a,b" as a record, "," as Python syntax
        raise BenchError(f"--dtype: {args.dtype!r} is not a numpy dtype") from None
    if o.dtype.kind not in "biufc" or not o.dtype.isnative:
        raise BenchError(f"--dtype: {o.dtype}; expected a native bool, int, uint, float or complex type")
    o.reduction = str(args.reduction)
    if op in REDUCING or op == "imb":
        from ..errors import CollectiveError
        from ..reduction import ReductionKind

        names = [k.value for k in ReductionKind if k is not ReductionKind.generic]
        if o.reduction not in names:
            raise BenchError(f"--reduction: {o.reduction!r}; choose one of {', '.join(names)} "
                             f"(generic needs a function and is not available here)")
        from ..runtime.mpi import reduce_plan

        try:
            reduce_plan(o.reduction, o.dtype)
        except CollectiveError as e:
            raise BenchError(f"--reduction/--dtype: {e}") from None
    o.method = str(getattr(args, "method", "osu"))
    if o.method not in METHODS:
        raise BenchError(f"--method: {o.method!r} is not a method; choose one of {', '.join(METHODS)}")
    o.meshrt = not getattr(args, "no_meshrt", False)
    _check_compare(args, o)
    o.iters = _count(args.iters, "iters")
    o.warmup = _count(args.warmup, "warmup")
    o.validate = bool(args.validate)
    o.json, o.csv, o.plot = args.json, args.csv, args.plot
    for name, path in (("json", o.json), ("csv", o.csv), ("plot", o.plot)):
        # found now, not after a long sweep
        if path is not None and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise BenchError(f"--{name}: {path!r}: directory {os.path.dirname(os.path.abspath(path))!r} "
                             f"does not exist")
    if o.plot is not None and not have_matplotlib():
        raise BenchError("--plot: needs matplotlib, which is not installed (pip install matplotlib)")
    o.progress = not args.no_progress
    if op in ("halo", "reshard"):
        o.shape = _shape(args.shape)
    if op == "halo":
        o.split = _ints(args.split, "split", "tensor dims joined by ',', e.g. 0 or 0,1")
        for d in o.split:
            if not 0 <= d < len(o.shape):
                raise BenchError(f"--split: dim {d} is out of range for a tensor of rank {len(o.shape)}")
        if len(set(o.split)) != len(o.split):
            raise BenchError(f"--split: {args.split!r} names a dim twice")
    if op == "reshard":
        o.src = _split_axes(args.src, "from")
        o.dst = _split_axes(args.dst, "to")
    return o


# -- the timing loop and the run -------------------------------------------------------------

def _loop(fn, warmup, iters, barrier, clock=time.perf_counter):
    """Total seconds of ``iters`` timed calls of ``fn`` after ``warmup`` untimed ones; a barrier
    (untimed) after every call."""
    for _ in range(warmup):
        fn()
        barrier()
    total = 0.0
    for _ in range(iters):
        t0 = clock()
        fn()
        total += clock() - t0
        barrier()
    return total


def _imb_loop(fn, warmup, iters, barrier, clock=time.perf_counter):
    """Seconds of one loop of ``iters`` calls of ``fn``, timed as a whole after ``warmup``
    untimed calls and a barrier (IMB-MPI1's method: no barrier between the timed calls)."""
    for _ in range(warmup):
        fn()
    barrier()
    t0 = clock()
    for _ in range(iters):
        fn()
    return clock() - t0


def thread_level_text() -> str:
    """The MPI thread level this process runs at, as the tables' header says it: MPICH takes a lock
    around every call at ``multiple`` (mpi4py's default), which IMB-MPI1 (``single``) does not."""
    from mpi4py import MPI

    names = {MPI.THREAD_SINGLE: "single", MPI.THREAD_FUNNELED: "funneled", MPI.THREAD_SERIALIZED: "serialized",
             MPI.THREAD_MULTIPLE: "multiple"}
    return f"thread level {names.get(MPI.Query_thread(), MPI.Query_thread())} (MPI4PY_RC_THREAD_LEVEL sets it)"


def timing_loop(method: str, comm):
    """The loop that times a Python side under ``method``: compiled where it can be
    (`meshrt._cfloor.time_calls`: the clock read in C right around each call and the barriers on
    ``comm`` from C, as IMB-MPI1 and the C loop time theirs, so a column holds the call and not
    ~0.05 us of the timing loop's own Python), else `_loop` (`_imb_loop` for ``imb-nosync``)."""
    from mpi4py import MPI

    from .. import _cfloor

    sync = method != "imb-nosync"
    if not _cfloor.available() or not isinstance(comm, MPI.Comm):
        return _loop if sync else _imb_loop
    return lambda fn, warmup, iters, barrier: _cfloor.time_calls(fn, comm, warmup, iters, sync)


def _time(fm, fr, warmup, iters, barrier, loop=_loop):
    """Per-call mean seconds of ``fm`` and ``fr``: each in its own loops, in the order
    fm, fr, fr, fm (``iters`` timed calls per side in all, split over its two loops).
    ``fm=None`` times ``fr`` alone (meshrt's time is then None); ``loop`` is `_loop` (OSU)
    or `_imb_loop` (IMB)."""
    sides = (fm, fr) if fm is not None else (fr,)
    for f in sides:  # the first calls' one-time costs stay out even with warmup 0
        f()
        barrier()
    first = (iters + 1) // 2
    t = [loop(f, warmup, first, barrier) for f in sides]
    if iters > first:
        for i in reversed(range(len(sides))):
            t[i] += loop(sides[i], warmup, iters - first, barrier)
    return (None if fm is None else t[0] / iters), t[-1] / iters


_METHOD_TEXT = {
    "osu": "OSU's: per-process mean over timed calls, each call timed alone with an untimed barrier after it; "
           "min/avg/max/p50/p99 across processes",
    "imb": "IMB-MPI1's defaults (-sync 1): each call timed alone with an untimed barrier after it, IMB's iterations, "
           "per-process mean; min/avg/max (IMB's t_min/t_avg/t_max) and p50/p99 across processes",
    "imb-nosync": "IMB-MPI1's -sync 0: a barrier, then one timed loop of calls (no barriers between them), "
                  "per-process mean; min/avg/max (IMB's t_min/t_avg/t_max) and p50/p99 across processes",
}


def _progress(total, desc, enabled):
    if not enabled or total < 2:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    # disable=None: a bar on a terminal only, so logs and pipes stay clean
    return tqdm(total=total, desc=desc, unit="size", file=sys.stderr, leave=False, disable=None)


def run(o: BenchOptions, comm=None, out=None, compare=None) -> int:
    """Run the benchmark of ``o`` on every process of ``comm``; rank 0 prints and writes files.

    Returns the exit status (1 if a ``--validate`` check failed), the same on every process.
    Raises `BenchError` (on every process alike) for options that only MPI can check.
    ``compare`` runs ``--compare`` and OP ``imb`` (`meshrt.bench.compare.run_compare`, which
    the command passes: it sits above this module).
    """
    from mpi4py import MPI

    from ..errors import CollectiveError, MeshError, ShardingError
    from ..mesh import Mesh

    comm = MPI.COMM_WORLD if comm is None else comm
    out = sys.stdout if out is None else out
    root = comm.Get_rank() == 0
    if o.compare is not None:
        if compare is None:
            raise BenchError("--compare / OP imb: run(..., compare=meshrt.bench.compare.run_compare) runs them")
        try:
            Mesh(o.mesh_shape if o.mesh_shape else (comm.Get_size(),), comm=comm).free()
        except MeshError as e:
            raise BenchError(f"--mesh: {e} (the mesh must cover all {comm.Get_size()} processes)") from None
        return compare(o, comm, out)
    try:
        mesh = Mesh(o.mesh_shape if o.mesh_shape else (comm.Get_size(),), comm=comm)
    except MeshError as e:
        raise BenchError(f"--mesh: {e} (the mesh must cover all {comm.Get_size()} processes)") from None
    axes = o.mesh_axes
    n = mesh.axes_size(axes)
    if o.op in COLLECTIVES:
        sizes = o.sizes
        cases = (lambda nb: _collective_case(o.op, mesh, axes, nb, o.dtype, o.reduction, reuse=o.result == "reuse",
                                             alloc=o.alloc))
    else:
        sizes = [None]
        try:
            case0 = _halo_case(mesh, axes, o) if o.op == "halo" else _reshard_case(mesh, o)
        except (ShardingError, MeshError, CollectiveError) as e:
            raise BenchError(f"{o.op}: {e}") from None
        cases = (lambda nb: case0)
        n = mesh.size if o.op == "reshard" else n
    lib = MPI.Get_library_version().strip().splitlines()[0].strip()
    dims = "x".join(map(str, mesh.shape))
    meta = {"op": o.op, "nprocs": comm.Get_size(), "mesh": list(mesh.shape),
            "mesh_axes": list(mesh.axes(axes)), "group_size": n, "dtype": str(o.dtype),
            "reduction": o.reduction if o.op in REDUCING else None, "mpi": lib,
            "method": o.method, "meshrt": o.meshrt, "result": o.result, "alloc": o.alloc,
            "method_detail": _METHOD_TEXT[o.method] + ("; raw mpi4py only" if not o.meshrt else
                                                       "; meshrt and raw mpi4py each in its own loops, order "
                                                       "meshrt, raw, raw, meshrt"),
            "bandwidth": "nccl-tests: algbw = bytes / avg latency, busbw = algbw * factor(op, group_size)"}
    if o.op in ("halo", "reshard"):
        meta["shape"] = list(o.shape)
    bar = _progress(len(sizes), o.op, o.progress and root)

    def emit(line):
        if bar is not None:
            bar.write(line, file=out)
        else:
            print(line, file=out, flush=True)

    if root:
        what = f", {o.reduction}" if o.op in REDUCING else ""
        emit(f"# meshrt bench {o.op}: {comm.Get_size()} processes, mesh {dims}, mesh_axes "
             f"{','.join(map(str, mesh.axes(axes)))}, group size {n}, {o.dtype}{what}")
        emit(f"# {lib}; {thread_level_text()}")
        emit(f"# method {o.method}: {_METHOD_TEXT[o.method]}; result {o.result}; buffers {ALLOC_TEXT[o.alloc]}" + (
            "" if not o.meshrt else "; each side in its own loops (meshrt, raw, raw, meshrt)"))
        each = "a new result each call" if o.result == "new" else "one result reused by every call"
        if o.meshrt:
            emit(f"# avg_us..busbw_GBps: meshrt; raw_*: plain mpi4py + numpy doing the same job ({each}, same "
                 f"communicator); ratio = avg_us / raw_avg_us; bandwidth as nccl-tests")
        else:
            emit(f"# --no-meshrt: every column is plain mpi4py + numpy ({each}); bandwidth as nccl-tests")
    rows, failed, done = [], False, set()
    loop = timing_loop(o.method, comm)
    header = False
    try:
        for nb in sizes:
            case = cases(nb)
            if case.size in done and nb is not None:  # sizes below one element collapse
                if case.free is not None:
                    case.free()
                if bar is not None:
                    bar.update(1)
                continue
            done.add(case.size)
            if root and case.label:
                emit(f"# {case.label}")
            if root and not header:
                emit(table_header(o.validate, not o.meshrt))
                header = True
            warmup, iters = default_iterations(case.size, o.method)
            warmup = warmup if o.warmup is None else o.warmup
            iters = iters if o.iters is None else o.iters
            tm, tr = _time(case.meshrt if o.meshrt else None, case.raw, warmup, iters, comm.Barrier, loop)
            ok = None
            if o.validate:
                fm, fr = case.check_calls or (case.meshrt, case.raw)
                a = fm() if o.meshrt else None
                if isinstance(a, np.ndarray):  # under --result reuse both sides receive into one array
                    a = a.copy()
                comm.Barrier()
                b = fr()
                ok = comm.allreduce(bool(case.check(a if o.meshrt else b, b)), op=MPI.LAND)
                failed = failed or not ok
            times = comm.gather((None if tm is None else tm * case.scale, tr * case.scale), root=0)
            if case.free is not None:
                case.free()
            if root:
                row = make_row(o.op, case.size, n, comm.Get_size(), warmup, iters,
                               None if tm is None else [t[0] for t in times], [t[1] for t in times], ok)
                rows.append(row)
                emit(format_row(row, o.validate, not o.meshrt))
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    if root:
        if o.json:
            write_json(o.json, meta, rows)
        if o.csv:
            write_csv(o.csv, rows)
        if o.plot:
            plot(o.plot, rows, f"meshrt bench {o.op}: {comm.Get_size()} processes, mesh {dims}, {o.dtype}")
        if o.validate:
            print(f"# validation: {'FAIL' if failed else 'PASS'}", file=out, flush=True)
    mesh.free()
    return 1 if failed else 0


def main(args, compare=None) -> int:
    """``meshrt bench`` from parsed arguments: bad options print one message (rank 0) and give 2
    (``compare``: as `run`'s)."""
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    try:
        o = check_options(args)
        return run(o, comm, compare=compare)
    except BenchError as e:
        if comm.Get_rank() == 0:
            print(f"meshrt bench: error: {e}", file=sys.stderr, flush=True)
        return 2
    except Exception:
        if comm.Get_size() == 1:
            raise
        # The others may be waiting in a collective for this process: end the whole job.
        import traceback

        text = traceback.format_exc()
        sys.stdout.flush()
        sys.stderr.write("".join(f"[rank {comm.Get_rank()}] {line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        comm.Abort(1)
        raise
