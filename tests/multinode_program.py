"""A halo exchange and all-reduces on a 2 x (P/2) mesh, mesh axis 0 = the host.

Run by tests/test_multinode.py on two emulated hosts (network namespaces);
runs anywhere with an even process count:

    mpiexec -n 4 python -m meshrt.launch tests/multinode_program.py [NBYTES]

Checks its results on every process and, on rank 0, prints one line
``MULTINODE-OK {json}`` naming the network interfaces each rank saw.
"""

import json
import os
import sys

import numpy as np
from mpi4py import MPI

from meshrt import Mesh, Sharding
from meshrt.collectives import all_reduce
from meshrt.halo import update_halo

comm = MPI.COMM_WORLD
nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 22
if comm.size % 2:
    raise SystemExit(f"multinode_program: needs an even process count, got {comm.size}")
mesh = Mesh((2, -1))

# Halo exchange, periodic in both dims: the halos along mesh axis 0 come from the other host.
s = Sharding(mesh, [[0], [1]], halo_sizes=[2, 1, 1, 2])
shape = (2 * 40 + 3, mesh.shape[1] * 24 + 5)
g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
local = np.full(s.local_shape(shape), -1.0)
lo = [s.halo_widths(d)[0] for d in range(2)]
sl = s.shard_slices(shape)
owned = tuple(slice(h, h + x.stop - x.start) for h, x in zip(lo, sl))
local[owned] = g[sl]
update_halo(local, mesh, s.split_axes, s.halo_sizes, periodic=True)
rows = np.arange(sl[0].start - lo[0], sl[0].start - lo[0] + local.shape[0]) % shape[0]
cols = np.arange(sl[1].start - lo[1], sl[1].start - lo[1] + local.shape[1]) % shape[1]
assert np.array_equal(local, g[np.ix_(rows, cols)]), f"rank {comm.rank}: halos (corners included) are wrong"

# All-reduces: over the whole mesh, and over mesh axis 0 alone (pairs of processes on the two hosts).
n = max(1, nbytes // 8)
x = np.full(n, comm.rank + 1.0)
total = all_reduce(x, mesh, None, "sum")
assert np.all(total == comm.size * (comm.size + 1) / 2), f"rank {comm.rank}: wrong all_reduce"
pair = all_reduce(x, mesh, [0], "sum")
partner = mesh.linear_index(((1 - mesh.coords[0]), mesh.coords[1]))
assert np.all(pair == comm.rank + partner + 2), f"rank {comm.rank}: wrong all_reduce over mesh axis 0"
ints = all_reduce(np.array([comm.rank], np.int64), mesh, None, "max")
assert ints[0] == comm.size - 1

try:  # the network namespace this process runs in (the emulated host), if any
    import subprocess

    netns = subprocess.run(["ip", "netns", "identify", str(os.getpid())], capture_output=True,
                           text=True, timeout=10).stdout.strip() or None
except (OSError, subprocess.SubprocessError):
    netns = None
interfaces = sorted(n for n in os.listdir("/sys/class/net") if n != "lo") if os.path.isdir("/sys/class/net") else []
seen = comm.gather({"rank": comm.rank, "coords": list(mesh.coords), "interfaces": interfaces, "netns": netns,
                    "shared_memory_peers": comm.Split_type(MPI.COMM_TYPE_SHARED).Get_size()}, root=0)
if comm.rank == 0:
    print("MULTINODE-OK " + json.dumps({"ranks": seen, "mesh": list(mesh.shape)}), flush=True)
