"""The weight-stationary MLP of examples/mlp.py, written in the global view.

    meshrt run -n 4 examples/mlp_global.py [--batch 8 --d-model 30 --d-ff 50] [--explain]

Same shardings as examples/mlp.py (input split on its last dim, W1 on dim 1,
W2 on dim 0), but no collectives in the program: ``x @ w1`` finds that
gathering the small input beats moving W1 (an all_gather), the product is
split like W1, and the second matmul contracts a dim split on the same axis
in both operands, so its partial sum is reduce-scattered into the requested
``out_sharding``: the collectives examples/mlp.py writes by hand.  Checked
against serial numpy; exits non-zero on a mismatch.
"""

import argparse
import sys

import numpy as np
from mpi4py import MPI

import meshrt
from meshrt import DistributedTensor, Mesh, Sharding


def mlp(x, w1, w2, *, out_sharding=None, partial_ok=False):
    """``relu(x @ w1) @ w2`` on DistributedTensors."""
    h = np.maximum(x @ w1, 0.0)
    return meshrt.matmul(h, w2, out_sharding=out_sharding, partial_ok=partial_ok)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--d-model", type=int, default=30)
    p.add_argument("--d-ff", type=int, default=50)
    p.add_argument("--explain", action="store_true", help="print the planned collectives")
    args = p.parse_args(argv)

    mesh = Mesh((-1,), ("x",))
    x_s = Sharding(mesh, [[], ["x"]])  # input: last dim split
    w1_s = Sharding(mesh, [[], ["x"]])  # W1: dim 1 split
    w2_s = Sharding(mesh, [["x"]])  # W2: dim 0 split

    rng = np.random.default_rng(0)  # same weights on every process
    x = rng.standard_normal((args.batch, args.d_model))
    w1 = rng.standard_normal((args.d_model, args.d_ff))
    w2 = rng.standard_normal((args.d_ff, args.d_model))

    xt = DistributedTensor.from_global(x, x_s)
    w1t = DistributedTensor.from_global(w1, w1_s)
    w2t = DistributedTensor.from_global(w2, w2_s)
    if args.explain and mesh.rank == 0:
        h_spec = ((args.batch, args.d_ff), meshrt.explain_matmul(xt, w1t).final)
        print(meshrt.explain_matmul(xt, w1t))
        print(meshrt.explain_matmul(h_spec, w2t, out_sharding=x_s))

    y = mlp(xt, w1t, w2t, out_sharding=x_s)  # split like the input, as examples/mlp.py returns it
    y_partial = mlp(xt, w1t, w2t, partial_ok=True)  # per-device partial sums, no reduction

    expected = np.maximum(x @ w1, 0.0) @ w2
    ok = np.allclose(y.gather(), expected, rtol=1e-12, atol=1e-12) and np.allclose(
        y_partial.gather(), expected, rtol=1e-12, atol=1e-12)
    ok = mesh.comm.allreduce(ok, op=MPI.LAND)
    if mesh.rank == 0:
        print(f"mlp (global view) on {mesh.size} processes: y {y.global_shape}, sharding {y.sharding}; "
              f"partial {y_partial.sharding}; matches serial numpy: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
