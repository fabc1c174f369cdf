"""The partitioned MLP (tests/mlir/corpus/mlp.partitioned.mlir) run by meshrt's MLIR
interpreter against the same program written by hand with meshrt collectives and numpy.

    mpiexec -n 2 python bench/bench_mlir.py [--batch 256 --width 1024 --rounds 5]
    pytest bench/bench_mlir.py --benchmark-only      # serial: the per-op cost, pytest-benchmark

The corpus program (batch 8, widths 32/64) is scaled to ``--batch`` x ``--width``
(both layers ``--width`` wide) by rewriting its tensor shapes; with mlir-opt
installed, the scaled global program is partitioned again and must give the
same text.  Per size: the time per call of each side (max over processes,
median of rounds that alternate the order), their ratio, and the interpreter's
overhead per op ((interpreted - hand-written) / ops executed), measured on a
tiny MLP on a mesh of one process, where arithmetic and collectives cost nothing.
"""

import argparse
import os
import re
import sys
import time

import numpy as np
from mpi4py import MPI

from meshrt import Mesh
from meshrt.collectives import all_gather, all_reduce, all_slice
from meshrt.mlir import parse
from meshrt.mlir.interpreters.spmd import Program

comm = MPI.COMM_WORLD
CORPUS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "mlir", "corpus")


def scaled(text, batch, d, f):
    """The corpus MLP text with batch 8 -> batch, 32 -> d, 64 -> f in every shape."""
    table = {"8": str(batch), "32": str(d), "64": str(f)}

    def dims(m):
        parts = m.group(1).split("x")
        return "tensor<" + "x".join(table.get(p, p) for p in parts[:-1]) + "x" + parts[-1] + ">"

    text = re.sub(r"tensor<([^>]*)>", dims, text)
    return re.sub(r"dims = \[([^\]]*)\]",
                  lambda m: "dims = [" + ", ".join(table.get(p.strip(), p.strip()) for p in m.group(1).split(",")) + "]",
                  text)


def hand_written(mesh):
    def mlp(x, w1, w2):
        x = all_gather(x, mesh, (0,), 1)
        h = np.maximum(x @ w1, 0.0)
        return all_slice(all_reduce(h @ w2, mesh, (0,)), mesh, (0,), 1)
    return mlp


def timed(fn, iters):
    comm.Barrier()
    t = time.perf_counter()
    for _ in range(iters):
        fn()
    return comm.allreduce((time.perf_counter() - t) / iters, op=MPI.MAX)


def compare(interp, hand, iters, rounds):
    interp(), hand()  # warm-up: kernels, group communicators
    ti, th = [], []
    for r in range(rounds):
        pair = [(interp, ti), (hand, th)]
        for fn, out in (pair if r % 2 == 0 else pair[::-1]):
            out.append(timed(fn, iters))
    return float(np.median(ti)), float(np.median(th))


def run(batch, width, rounds, check_text=True, iters=None, on=None):
    with open(os.path.join(CORPUS, "mlp.partitioned.mlir")) as fh:
        part_text = scaled(fh.read(), batch, width, width)
    if check_text and comm.rank == 0:
        _check_against_mlir_opt(part_text, batch, width)
    on = comm if on is None else on
    module = parse(part_text, "mlp.partitioned.mlir (scaled)")
    prog = Program(module, on)
    mesh = Mesh((-1,), comm=on)
    rng = np.random.default_rng(0)
    n, r = on.size, on.rank
    x = rng.standard_normal((batch, width))[:, r * width // n:(r + 1) * width // n].copy()
    w1 = rng.standard_normal((width, width))[:, r * width // n:(r + 1) * width // n].copy()
    w2 = rng.standard_normal((width, width))[r * width // n:(r + 1) * width // n].copy()
    hand = hand_written(mesh)
    [y] = prog.run("mlp", [x, w1, w2])
    np.testing.assert_allclose(y, hand(x, w1, w2), rtol=1e-10, atol=1e-10)
    nops = sum(1 for op in module.functions()["mlp"].walk() if op.name != "func.func")
    flops = 4 * batch * width * width / n
    if iters is None:
        iters = max(1, min(200, int(2e8 / max(flops, 1))))
    ti, th = compare(lambda: prog.run("mlp", [x, w1, w2]), lambda: hand(x, w1, w2), iters, rounds)
    prog.free()
    mesh.free()
    return ti, th, nops


def _check_against_mlir_opt(part_text, batch, width):
    from meshrt.cli import find_mlir_opt, mlir_partition

    if find_mlir_opt() is None:
        return
    import tempfile

    with open(os.path.join(CORPUS, "mlp.mlir")) as fh:
        glob = scaled(fh.read(), batch, width, width)
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as tmp:
        tmp.write(glob)
    try:
        body = "".join(line for line in part_text.splitlines(keepends=True) if not line.startswith("//"))
        assert mlir_partition(tmp.name) == body, "the scaled corpus text is not what mlir-opt makes"
    finally:
        os.unlink(tmp.name)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--width", type=int, default=1024)
    p.add_argument("--rounds", type=int, default=5)
    a = p.parse_args(argv)
    ti, th, nops = run(a.batch, a.width, a.rounds)
    # on one process per mesh the collectives are no-ops: what is left is the interpreter
    small_i, small_h, _ = run(2, 2, a.rounds, check_text=False, iters=50, on=MPI.COMM_SELF)
    if comm.rank == 0:
        print(f"MLP batch {a.batch}, layers {a.width} wide, {comm.size} processes, {nops} ops:")
        print(f"  interpreted {ti * 1e3:9.3f} ms   hand-written {th * 1e3:9.3f} ms   ratio {ti / th:5.3f}")
        print(f"tiny MLP (batch 2, width 2, a mesh of 1): interpreted {small_i * 1e6:8.1f} us, "
              f"hand-written {small_h * 1e6:8.1f} us")
        print(f"  interpreter overhead per op: {(small_i - small_h) / nops * 1e6:6.2f} us")
    return 0


# -- pytest-benchmark (serial, a mesh of one: collectives are no-ops) ---------------------------------

def _tiny(width):
    with open(os.path.join(CORPUS, "mlp.partitioned.mlir")) as fh:
        module = parse(scaled(fh.read(), 2, width, width), "mlp.partitioned.mlir (scaled)")
    rng = np.random.default_rng(0)
    args = [rng.standard_normal(s) for s in ((2, width), (width, width), (width, width))]
    return module, args


def _bench_pair(benchmark, width, interpreted):
    module, args = _tiny(width)
    prog, mesh = Program(module, MPI.COMM_SELF), Mesh((-1,), comm=MPI.COMM_SELF)
    hand = hand_written(mesh)
    [y] = prog.run("mlp", args)
    np.testing.assert_allclose(y, hand(*args), rtol=1e-12)  # also compiles the kernels, untimed
    nops = sum(1 for op in module.functions()["mlp"].walk() if op.name != "func.func")
    benchmark.extra_info["ops"] = nops
    if interpreted:
        benchmark(prog.run, "mlp", args)
    else:
        benchmark(hand, *args)
    prog.free()
    mesh.free()


def test_tiny_mlp_interpreted(benchmark):
    """Subtract the hand-written row's time and divide by ``extra_info['ops']``: the cost per op."""
    benchmark.group = "tiny MLP (batch 2, width 2)"
    _bench_pair(benchmark, 2, True)


def test_tiny_mlp_hand_written(benchmark):
    benchmark.group = "tiny MLP (batch 2, width 2)"
    _bench_pair(benchmark, 2, False)


if __name__ == "__main__":
    sys.exit(main())
