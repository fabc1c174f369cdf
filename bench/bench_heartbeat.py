"""Cost of the heartbeat (meshrt/runtime/heartbeat.py): all_reduce latency at 8 B with it on and off in one
run, and the CPU its helper process and the rank's watchdog thread use.

    MESHRT_HEARTBEAT=60 mpiexec -n 2 python -m meshrt.launch bench/bench_heartbeat.py [BLOCKS] [ITERS] [same]

Needs the heartbeat on, with a long deadline.  Times BLOCKS blocks (default 16) of ITERS (default 40000)
``all_reduce`` calls of one float64 each, alternating blocks with every rank's helper running and
stopped (SIGSTOP: it then uses no CPU and sends nothing; the long deadline keeps a pause from being
taken for a lost host), and prints the medians per call, their ratio, and the CPU
seconds per wall second of the helper and of the watchdog thread over the whole run.  With
``same``, the helpers are never stopped: the "on/off" ratio is then the noise of the machine.
Keep blocks long (seconds): a helper resumed by SIGCONT beats at once, so short blocks see more
beats per second than a running job does.
"""

import os
import signal
import statistics
import sys
import threading
import time

import numpy as np
from mpi4py import MPI

from meshrt import Mesh
from meshrt.runtime import heartbeat
from meshrt.collectives import all_reduce

comm = MPI.COMM_WORLD
blocks = int(sys.argv[1]) if len(sys.argv) > 1 else 16
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 40000
same = len(sys.argv) > 3 and sys.argv[3] == "same"  # an A/A run: the helpers never stop (the noise)
if heartbeat._helper is None:
    raise SystemExit("bench_heartbeat: run it under python -m meshrt.launch, heartbeat on (MESHRT_HEARTBEAT unset)")
if heartbeat.deadline_seconds() < 60:
    raise SystemExit("bench_heartbeat: run it with MESHRT_HEARTBEAT=60 (or more): its helpers stop for seconds")
helper = heartbeat._helper.pid


def cpu_seconds(path):
    """CPU time of a process or thread (``/proc/.../schedstat``: nanoseconds, not clock ticks)."""
    with open(path) as f:
        return int(f.read().split()[0]) / 1e9


watchdog = next((t.native_id for t in threading.enumerate() if t.name == "meshrt-watchdog"), None)
mesh = Mesh((comm.size,))
x = np.ones(1)
for _ in range(500):
    all_reduce(x, mesh, None, "sum")
times = {"on": [], "off": []}
t0 = time.monotonic()
helper0 = cpu_seconds(f"/proc/{helper}/schedstat")
watch0 = cpu_seconds(f"/proc/self/task/{watchdog}/schedstat") if watchdog else 0.0
on_wall = 0.0
for b in range(blocks):
    state = "on" if (b // 2 + b) % 2 == 0 else "off"  # on off off on on off off ...: no drift favours one
    if not same:
        os.kill(helper, signal.SIGCONT if state == "on" else signal.SIGSTOP)
    comm.Barrier()
    start = time.perf_counter()
    for _ in range(iters):
        all_reduce(x, mesh, None, "sum")
    took = time.perf_counter() - start
    times[state].append(took / iters)
    if state == "on":
        on_wall += took
os.kill(helper, signal.SIGCONT)
wall = time.monotonic() - t0
helper_cpu = cpu_seconds(f"/proc/{helper}/schedstat") - helper0
watch_cpu = (cpu_seconds(f"/proc/self/task/{watchdog}/schedstat") - watch0) if watchdog else float("nan")
rows = comm.gather((statistics.median(times["on"]), statistics.median(times["off"]),
                    helper_cpu / (wall if same else on_wall),
                    watch_cpu / wall), root=0)
if comm.rank == 0:
    for r, (on, off, hcpu, wcpu) in enumerate(rows):
        print(f"rank {r}: all_reduce 8 B median {on * 1e6:.2f} us/call heartbeat on, {off * 1e6:.2f} us off "
              f"(on/off {on / off:.3f}); helper CPU {100 * hcpu:.3f} % of its running time, watchdog thread "
              f"{100 * wcpu:.3f} %")
    print(f"{blocks} blocks of {iters} calls, {wall:.1f} s")
