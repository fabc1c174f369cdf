"""The job tests/test_heartbeat_hosts.py breaks: halo exchanges and all-reduces on a 2 x (P/2) mesh.

    mpiexec -n 4 python -m meshrt.launch tests/heartbeat_program.py loop SECONDS [STATE_DIR]
    mpiexec -n 4 python -m meshrt.launch tests/heartbeat_program.py compute SECONDS

``loop``: rounds of `update_halo` and `all_reduce` for SECONDS (rank 0's clock decides, so
every rank runs the same rounds), saving a checkpoint (`save_state`) to STATE_DIR every
second; ``compute``: the last rank computes for SECONDS without calling MPI, in calls that
hold the GIL for seconds each, while the others wait in an `all_reduce`.  Rank 0 prints
``STARTED`` once the loop runs and ``HEARTBEAT-PROGRAM-OK rounds`` at the end.
"""

import sys
import time

import numpy as np
from mpi4py import MPI

from meshrt import DistributedTensor, Mesh, Sharding, save_state
from meshrt.collectives import all_reduce
from meshrt.halo import update_halo

comm = MPI.COMM_WORLD
mode, seconds = sys.argv[1], float(sys.argv[2])
state_dir = sys.argv[3] if len(sys.argv) > 3 else None
mesh = Mesh((2, -1))
s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
local = np.full(s.local_shape((16, 8 * mesh.shape[1])), float(comm.rank))
t0 = time.time()
if comm.rank == 0:
    print("STARTED", flush=True)
rounds = 0
if mode == "loop":
    saved = 0.0
    while True:
        update_halo(local, mesh, s.split_axes, s.halo_sizes, periodic=True)
        now = time.time()
        done, save = (now - t0 > seconds, state_dir and now - saved > 1.0) if comm.rank == 0 else (0, 0)
        total, stop, save = all_reduce(np.array([comm.rank + 1.0, done, save], float), mesh, None, "max")
        assert total == comm.size
        rounds += 1
        if save:
            t = DistributedTensor.full((8, 8 * comm.size), Sharding(mesh, [[0], [1]]), float(rounds))
            save_state(state_dir, {"x": t}, {"rounds": rounds})
            saved = now
        if stop:
            break
        time.sleep(0.02)
elif mode == "compute":
    if comm.rank == comm.size - 1:
        while time.time() - t0 < seconds:
            sum(range(5 * 10**7))  # one C call: holds the GIL throughout (about a second)
    total = all_reduce(np.array([1.0]), mesh, None, "sum")
    assert total[0] == comm.size
    rounds = 1
else:
    raise SystemExit(f"heartbeat_program: mode {mode!r}: expected loop or compute")
if comm.rank == 0:
    print(f"HEARTBEAT-PROGRAM-OK {rounds} rounds in {time.time() - t0:.1f} s", flush=True)
