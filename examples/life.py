"""Conway's Game of Life on a periodic 2-D domain (9-point stencil: corner halos matter).

    meshrt run -n 4 examples/life.py                    # 256x256, 200 generations, checked

The board is split over a 2-D mesh with one-cell halos, ``periodic=True``
wraps them around the torus; each generation exchanges halos (edges and
corners) and applies the rule with a Numba kernel.  The final board is
compared with a serial numpy run (``np.roll``); exits 1 on a mismatch.
"""

import argparse
import sys

import numpy as np

from meshrt.mesh import Mesh
from meshrt.sharding.spec import Sharding
from meshrt.tensor.distributed_tensor import DistributedTensor

try:
    from meshrt.kernels.stencils import interior_box, life_box
except ImportError:  # a source checkout: kernels/ becomes meshrt.kernels when installed
    from kernels.stencils import interior_box, life_box


def serial(board, steps):
    u = board.copy()
    for _ in range(steps):
        n = sum(np.roll(np.roll(u, di, 0), dj, 1) for di in (-1, 0, 1) for dj in (-1, 0, 1) if di or dj)
        u = ((n == 3) | ((n == 2) & (u == 1))).astype(np.uint8)
    return u


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=256, help="board side (default 256)")
    p.add_argument("--m", type=int, default=None, help="board columns (default: n)")
    p.add_argument("--steps", type=int, default=200, help="generations (default 200)")
    p.add_argument("--density", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--no-check", action="store_true", help="skip the serial comparison")
    args = p.parse_args(argv)
    shape = (args.n, args.m or args.n)

    mesh = Mesh((-1, -1))
    sharding = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    # Every process draws the same board; each keeps its own block.
    board = (np.random.default_rng(args.seed).random(shape) < args.density).astype(np.uint8)
    u = DistributedTensor.from_global(board, sharding, periodic=True)
    v = DistributedTensor.zeros(shape, sharding, np.uint8, periodic=True)
    box = interior_box(u)
    for _ in range(args.steps):
        u.update_halo()
        life_box(u.local, v.local, box)
        u, v = v, u

    alive = int(u.sum())
    ok = True
    if mesh.rank == 0:
        print(f"life: {shape[0]}x{shape[1]} torus, {args.steps} generations, mesh {mesh.shape}: {alive} alive")
    if not args.no_check:
        full = u.gather(root=0)
        same = None
        if mesh.rank == 0:
            ref = serial(board, args.steps)
            same = bool(np.array_equal(full, ref)) and alive == int(ref.sum())
            print(f"life: serial check: {'identical' if same else 'MISMATCH'} "
                  f"({int((full != ref).sum())} cells differ)")
        ok = mesh.comm.bcast(same, root=0)
    u.free()
    v.free()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
