"""Print the mesh of this run, every rank's coordinates, and pictures of a few shardings.

    meshrt run -n 4 examples/show_sharding.py
    meshrt run -n 6 examples/show_sharding.py --shape 12x10

Each rank also checks that a tensor built from the global array gathers back
to it under every sharding shown (exit 1 otherwise).
"""

import argparse
import sys

import numpy as np

from meshrt.mesh import Mesh
from meshrt.sharding.spec import Sharding
from meshrt.tensor.distributed_tensor import DistributedTensor


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shape", default="8x8", help="global tensor shape, e.g. 8x8 (default)")
    args = p.parse_args(argv)
    shape = tuple(int(x) for x in args.shape.lower().split("x"))

    mesh = Mesh((-1, -1), ("x", "y"))
    comm = mesh.comm
    coords = comm.gather(mesh.coords, root=0)
    if mesh.rank == 0:
        print(f"{mesh}  ({mesh.size} processes, shape {mesh.shape})")
        for r, c in enumerate(coords):
            print(f"  rank {r}: coords {c}")
    shardings = [
        Sharding(mesh, [["x"]]),
        Sharding(mesh, [["x"], ["y"]]),
        Sharding(mesh, [["y"], ["x"]], halo_sizes=[1, 1, 1, 1]),
        Sharding(mesh, [["x", "y"]]),
        Sharding(mesh, [[], ["y"]], partial_axes=["x"]),
    ]
    g = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    ok = True
    for s in shardings:
        if mesh.rank == 0:
            print()
            print(s.visualize(shape))
        t = DistributedTensor.from_global(g, s)
        if s.is_partial:  # keep the value g: one replica holds it, the others hold zeros
            t.interior[...] *= mesh.coords[s.partial_axes[0]] == 0
        ok &= bool(np.array_equal(t.gather(), g))
    ok = all(comm.allgather(ok))
    if mesh.rank == 0:
        print("\nshow_sharding: every sharding gathers back to the global array" if ok else
              "\nshow_sharding: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
