"""Shardy programs exported from JAX, run by meshrt, against the same computation written by
hand with meshrt's global view; and the bytes meshrt moves against the collectives in XLA's
compiled HLO for the same programs.  Needs JAX (``pip install meshrt[jax]``).

    mpiexec -n 2 python bench/bench_sdy.py [--width 2048 --grid 4096 --rounds 5]
    python bench/bench_sdy.py --bytes            # serial: the moved-bytes table (4 fake devices)
    mpiexec -n 2 python bench/bench_sdy.py --memory   # peak RSS of the exported MLP per process

Timing: the exported MLP (``--width`` wide, batch = width, float32, x sharded by rows, w1 by
columns, w2 by rows on a mesh of all processes) and the ``jnp.roll`` 5-point stencil on a
``--grid``² float32 field (rows sharded), each against the hand-written global-view program;
per program the time per call (max over processes, median of rounds that alternate the order)
and the ratio, plus the peak resident memory per process over 1/P of the program's global
arrays (arguments and result).

``--bytes``: per corpus program at 4 devices, the bytes ``meshrt mlir explain`` reports moved
(summed over processes) and what XLA's collectives move (each device's received bytes, summed:
all-gather (k-1)/k of its result, all-reduce 2(k-1)/k of its operand, reduce-scatter and
all-to-all (k-1)/k of the operand, collective-permute its operand per pair).
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def export(n, width, grid):
    """(mlp text, stencil text) lowered by JAX for a mesh of ``n`` devices."""
    os.environ.setdefault("XLA_FLAGS", f"--xla_force_host_platform_device_count={max(n, 4)}")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()[:n]), ("x",))

    def mlp(x, w1, w2):
        return jax.nn.relu(jnp.tanh(x @ w1) @ w2)

    def stencil(u):
        lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
        return u + np.float32(0.1) * lap

    ns = lambda *s: NamedSharding(mesh, P(*s))  # noqa: E731
    a = jax.ShapeDtypeStruct((width, width), np.float32)
    t1 = jax.jit(mlp, in_shardings=(ns("x", None), ns(None, "x"), ns("x", None)),
                 out_shardings=ns("x", None)).lower(a, a, a).as_text()
    g = jax.ShapeDtypeStruct((grid, grid), np.float32)
    t2 = jax.jit(stencil, in_shardings=ns("x", None), out_shardings=ns("x", None)).lower(g).as_text()
    return t1, t2


def _peak_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _status_mib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise KeyError(field)


def _reset_peak_mib():
    """Reset this process's peak RSS to its RSS now (Linux: ``5`` to ``/proc/self/clear_refs``) and
    return that RSS: what came before (making the input files) stays out of the peak."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return _status_mib("VmRSS")


def timing(args):
    from mpi4py import MPI

    from meshrt import DistributedTensor, Mesh, Sharding
    from meshrt.mlir import parse
    from meshrt.mlir.shardy.program import SdyProgram

    comm = MPI.COMM_WORLD
    texts = export(comm.size, args.width, args.grid) if comm.rank == 0 else None
    t_mlp, t_st = comm.bcast(texts, root=0)
    mesh = Mesh((comm.size,), ("x",), comm=comm)
    rows, cols = Sharding(mesh, [[0]]), Sharding(mesh, [[], [0]])
    rng = np.random.default_rng(0)
    w = args.width
    x, w1, w2 = ((rng.standard_normal((w, w)) / np.sqrt(w)).astype(np.float32) for _ in range(3))
    u = rng.standard_normal((args.grid, args.grid)).astype(np.float32)

    def hand_mlp(xt, w1t, w2t):
        return np.maximum(np.tanh(xt @ w1t) @ w2t, np.float32(0))

    def hand_stencil(ut):
        lap = np.roll(ut, 1, 0) + np.roll(ut, -1, 0) + np.roll(ut, 1, 1) + np.roll(ut, -1, 1) - 4 * ut
        return ut + np.float32(0.1) * lap

    def evaluated(t):  # a deferred (lazy) result is computed when first touched: time that too
        t.interior
        return t

    cases = []
    p_mlp = SdyProgram(parse(t_mlp), comm)
    xt, w1t, w2t = (DistributedTensor.from_global(a, s) for a, s in ((x, rows), (w1, cols), (w2, rows)))
    cases.append(("MLP", lambda: p_mlp.run("main", [xt, w1t, w2t]), lambda: evaluated(hand_mlp(xt, w1t, w2t)), 4 * w * w * 4))
    p_st = SdyProgram(parse(t_st), comm)
    ut = DistributedTensor.from_global(u, rows)
    cases.append(("roll stencil", lambda: p_st.run("main", [ut]), lambda: evaluated(hand_stencil(ut)), 2 * u.nbytes))
    np.testing.assert_allclose(p_mlp.whole(p_mlp.run("main", [x, w1, w2])[0]), hand_mlp(xt, w1t, w2t).gather(),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p_st.whole(p_st.run("main", [u])[0]), hand_stencil(ut).gather(), rtol=1e-5, atol=1e-6)
    rows_out = []
    for name, mine, hand, nbytes in cases:
        t_m, t_h = [], []
        for r in range(args.rounds):
            for which, fn, acc in ((0, mine, t_m), (1, hand, t_h))[:: 1 if r % 2 == 0 else -1]:
                comm.Barrier()
                t0 = time.perf_counter()
                fn()
                acc.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
        rows_out.append((name, np.median(t_m), np.median(t_h), nbytes))
    peak = comm.allreduce(_peak_mib(), op=MPI.MAX)
    if comm.rank == 0:
        print(f"{comm.size} processes, width {args.width}, grid {args.grid}, float32 (shared machine)")
        print(f"{'program':14} {'meshrt (exported)':>18} {'hand-written':>13} {'ratio':>6}")
        for name, a, b, nbytes in rows_out:
            print(f"{name:14} {a * 1e3:15.2f} ms {b * 1e3:10.2f} ms {a / b:6.2f}")
        glob_mib = sum(n for *_, n in rows_out) / 2**20
        print(f"peak RSS per process {peak:.0f} MiB; 1/P of the global arrays of both programs "
              f"{glob_mib / comm.size:.0f} MiB (the interpreter, numpy and MPI included)")
    p_mlp.free()
    p_st.free()


_XLA_OP = re.compile(r"= (\w+)\[([\d,]*)\][^ ]* (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
                     r"(?:-start)?\(([^)]*)\)(.*)$")
_XLA_TUPLE = re.compile(r"= \(([^)]*)\) (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)"
                        r"(?:-start)?\([^)]*\)(.*)$")
_SIZES = {"f32": 4, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "pred": 1, "bf16": 2, "f16": 2}


def xla_bytes(hlo: str, ndev: int) -> int:
    """Bytes XLA's collectives move (received, summed over the devices) in compiled HLO text."""
    total = 0
    for line in hlo.splitlines():
        m = _XLA_OP.search(line)
        t = _XLA_TUPLE.search(line)
        if m:
            dtype, dims, kind, operands, rest = m.groups()
            n = _SIZES.get(dtype, 4) * int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
        elif t:  # a tuple result (XLA's all-to-all of k pieces): the pieces' bytes together
            parts, kind, rest = t.groups()
            n = sum(_SIZES.get(dt, 4) * int(np.prod([int(d) for d in dims.split(",") if d] or [1]))
                    for dt, dims in re.findall(r"(\w+)\[([\d,]*)\]", parts))
        else:
            continue
        g = re.search(r"replica_groups=\{\{([\d,]*)\}", rest)
        k = len(g.group(1).split(",")) if g else ndev
        g2 = re.search(r"replica_groups=\[(\d+),(\d+)\]", rest)  # iota form [groups,size]
        if g2:
            k = int(g2.group(2))
        if kind == "all-gather":
            total += ndev * n * (k - 1) // k
        elif kind == "all-reduce":
            total += ndev * 2 * n * (k - 1) // k
        elif kind == "reduce-scatter":
            total += ndev * n * (k - 1)  # n is the scattered result: the operand is k n
        elif kind == "all-to-all":
            total += ndev * n * (k - 1) // k
        else:
            pairs = re.search(r"source_target_pairs=\{(.*?)\}\}?", rest)
            npairs = len(re.findall(r"\{(\d+),(\d+)\}", rest))
            self_pairs = len([1 for a, b in re.findall(r"\{(\d+),(\d+)\}", rest) if a == b])
            total += n * (npairs - self_pairs) if pairs else 0
    return total


def bytes_table():
    os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import jax

    import export_sdy_corpus as E

    print(f"{'program':20} {'meshrt explain':>15} {'XLA compiled HLO':>17}")
    for name, make_mesh, build, inputs in E.PROGRAMS:
        mesh = make_mesh(4)
        f, i, o = build(mesh)
        jf = jax.jit(f, in_shardings=E._named(mesh, i), out_shardings=E._named(mesh, o))
        hlo = jf.lower(*inputs()).compile().as_text()
        xb = xla_bytes(hlo, 4)
        path = os.path.join(ROOT, "tests", "mlir", "sdy", name, "n4.mlir")
        r = subprocess.run([sys.executable, "-m", "meshrt.cli", "mlir", "explain", "-n", "4", path],
                           capture_output=True, text=True, timeout=300)
        m = re.search(r"// meshrt: 4 processes, (\d+) bytes moved in all", r.stdout)
        mb = m.group(1) if m else f"error: {r.stderr.strip()[-80:]}"
        print(f"{name:20} {mb:>15} {xb:>17}")


def memory(args):
    """Peak RSS per process of the exported MLP run from argument files (each process reads its
    shards only, `SdyProgram.read_args`), above the RSS after imports and a run of the same program
    on small arrays, and the peak of Python's traced allocations (tracemalloc), against 1/P of the
    global arrays."""
    import tempfile

    from mpi4py import MPI

    from meshrt.mlir import parse
    from meshrt.mlir.shardy.program import SdyProgram

    import tracemalloc

    comm = MPI.COMM_WORLD
    w = args.width
    small = 512  # wide enough for the ring matmul (`meshrt.linalg.matmul.RING_MIN_ELEMENTS`)
    texts = (export(comm.size, w, 8)[0], export(comm.size, small, 8)[0]) if comm.rank == 0 else None
    text, warm_text = comm.bcast(texts, root=0)
    d = comm.bcast(tempfile.mkdtemp() if comm.rank == 0 else None, root=0)
    if comm.rank == 0:
        rng = np.random.default_rng(0)
        for i in range(3):
            np.save(os.path.join(d, f"a{i}.npy"), (rng.standard_normal((w, w)) / np.sqrt(w)).astype(np.float32))
            np.save(os.path.join(d, f"s{i}.npy"), np.ones((small, small), np.float32))
    comm.Barrier()
    # the same program on small arrays first: the modules meshrt imports when first used (Numba, llvmlite,
    # SciPy: ~95 MiB of RSS) and the compiled kernels stay out of the measurement, which is of the arrays
    warm = SdyProgram(parse(warm_text), comm)
    warm.run("main", warm.read_args("main", [os.path.join(d, f"s{i}.npy") for i in range(3)]), consume=True)
    warm.free()
    from meshrt.runtime import warmup

    warmup.wait()  # Numba's start-up thread (`meshrt.runtime.warmup`) done before the peak is reset
    p = SdyProgram(parse(text), comm)
    base = _reset_peak_mib()
    tracemalloc.start()
    arrays = p.read_args("main", [os.path.join(d, f"a{i}.npy") for i in range(3)])
    y = p.run("main", arrays, consume=True)[0]
    traced = comm.allreduce(tracemalloc.get_traced_memory()[1] / 2**20, op=MPI.MAX)
    tracemalloc.stop()
    grown = comm.allreduce(_status_mib("VmHWM") - base, op=MPI.MAX)
    share = 4 * w * w * 4 / comm.size / 2**20  # x, w1, w2 and the result
    if comm.rank == 0:
        print(f"MLP {w}x{w} float32 on {comm.size} processes: peak RSS growth during the run {grown:.0f} MiB "
              f"(largest over processes), ratio {grown / share:.2f}; tracemalloc peak {traced:.1f} MiB, ratio "
              f"{traced / share:.2f}; 1/P of the global arrays (3 arguments + result) {share:.0f} MiB")
    del y
    p.free()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=2048)
    ap.add_argument("--grid", type=int, default=4096)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--bytes", action="store_true", help="the moved-bytes table against XLA (serial)")
    ap.add_argument("--memory", action="store_true", help="peak memory of the exported MLP (under mpiexec)")
    a = ap.parse_args()
    bytes_table() if a.bytes else memory(a) if a.memory else timing(a)
