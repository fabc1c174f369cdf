"""No false alarm from the heartbeat's freeze check: ranks that are busy for a long time, never frozen.

    meshrt run -n 2 bench/bench_heartbeat_busy.py [--minutes 10] [--low 30] [--high 60]

Under the default settings (``MESHRT_HEARTBEAT`` unset: 10 s), for ``--minutes``: in each round one
rank (in turn) makes one numpy call that holds the GIL for ``--low`` to ``--high`` seconds (a
matrix product of ``dtype=object`` floats: numpy's loop calls the float type's C functions and
never releases the GIL), while the others wait for it in an ``all_reduce`` as long (a long
collective); then every rank takes part in an ``all_reduce`` of 64 MB.  A thread ticking every
0.1 s measures how long the GIL was really held.  Rank 0 prints one line per round and a summary;
the job must end with status 0 and no ``[meshrt]`` line.
"""

import argparse
import threading
import time

import numpy as np

from meshrt import Mesh
from meshrt.collectives import all_reduce

p = argparse.ArgumentParser()
p.add_argument("--minutes", type=float, default=10.0)
p.add_argument("--low", type=float, default=30.0)
p.add_argument("--high", type=float, default=60.0)
args = p.parse_args()

mesh = Mesh((-1,))
rank, size = mesh.rank, mesh.size
gaps = []  # the ticker's longest gap since the last reset: the longest the GIL was held
tick = [time.monotonic()]


def ticker():
    while True:
        time.sleep(0.1)
        now = time.monotonic()
        gaps.append(now - tick[0])
        tick[0] = now


threading.Thread(target=ticker, daemon=True).start()


PER = [None]  # seconds per multiply-add at the size of the last call (a small product's is too optimistic)


def gil_call(seconds: float) -> float:
    """One numpy call holding the GIL for about ``seconds``: an object-dtype matrix product."""
    if PER[0] is None:
        a = np.random.default_rng(0).random((300, 300)).astype(object)
        t = time.perf_counter()
        a @ a
        PER[0] = (time.perf_counter() - t) / 300 ** 3
    n = int(round((seconds / PER[0]) ** (1 / 3)))
    b = np.random.default_rng(1).random((n, n)).astype(object)
    t = time.perf_counter()
    b @ b
    took = time.perf_counter() - t
    PER[0] = took / n ** 3
    return took


rng = np.random.default_rng(42)
t0 = time.monotonic()
rounds, longest_gil, longest_wait, big = 0, 0.0, 0.0, np.ones(8 << 20)
while time.monotonic() - t0 < args.minutes * 60:
    target = float(rng.uniform(args.low, args.high))  # the same on every rank (same seed)
    worker = rounds % size
    gaps.clear()
    t = time.monotonic()
    took = gil_call(target) if rank == worker else 0.0
    # the others are blocked in this collective while the worker computes
    took, = all_reduce(np.array([took]), mesh, None, "max")
    waited = time.monotonic() - t
    held = max(gaps, default=0.0)
    held, = all_reduce(np.array([held]), mesh, None, "max")
    t = time.monotonic()
    all_reduce(big, mesh, None, "sum")  # 64 MB
    coll = time.monotonic() - t
    rounds += 1
    longest_gil, longest_wait = max(longest_gil, held), max(longest_wait, waited)
    if rank == 0:
        print(f"round {rounds}: rank {worker} held the GIL {held:.1f} s in one numpy call ({took:.1f} s), the "
              f"others waited {waited:.1f} s in all_reduce; a 64 MB all_reduce took {coll:.2f} s", flush=True)
if rank == 0:
    print(f"BUSY-OK {rounds} rounds in {(time.monotonic() - t0) / 60:.1f} min; longest GIL hold {longest_gil:.1f} s; "
          f"longest wait in a collective {longest_wait:.1f} s", flush=True)
