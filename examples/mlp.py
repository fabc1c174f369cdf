"""1-D weight-stationary MLP (the mesh-sharding RFC's example), written with `spmd`.

    meshrt run -n 4 examples/mlp.py [--batch 8 --d-model 30 --d-ff 50]

The input is split on its last dim, W1 on dim 1, W2 on dim 0, all over the one
mesh axis.  Each device: all_gather the input, multiply by its W1 columns,
relu, multiply by its W2 rows (a partial sum of the output), reduce_scatter the
output back to the input's sharding.  Checked against serial numpy; exits
non-zero on a mismatch.
"""

import argparse
import sys

import numpy as np
from mpi4py import MPI

from meshrt import Mesh, Sharding, spmd
from meshrt.collectives import all_gather, reduce_scatter
from meshrt.tensor.distributed_tensor import DistributedTensor


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--d-model", type=int, default=30)
    p.add_argument("--d-ff", type=int, default=50)
    args = p.parse_args(argv)

    mesh = Mesh((-1,), ("x",))
    x_s = Sharding(mesh, [[], ["x"]])  # input: last dim split
    w1_s = Sharding(mesh, [[], ["x"]])  # W1: dim 1 split
    w2_s = Sharding(mesh, [["x"]])  # W2: dim 0 split
    partial_s = Sharding(mesh, [], partial_axes=["x"])  # an output left as per-device partial sums

    rng = np.random.default_rng(0)  # same weights on every process
    x = rng.standard_normal((args.batch, args.d_model))
    w1 = rng.standard_normal((args.d_model, args.d_ff))
    w2 = rng.standard_normal((args.d_ff, args.d_model))

    # the input's pieces along dim 1 may be uneven (d_model % processes): say how big
    pieces = [x_s.shard_shape(x.shape, d)[1] for d in range(mesh.size)]

    @spmd(in_shardings=(x_s, w1_s, w2_s), out_shardings=x_s)
    def mlp(x, w1, w2):
        x = all_gather(x, mesh, ["x"], gather_axis=1, sizes=pieces)
        h = np.maximum(x @ w1, 0.0)
        return reduce_scatter(h @ w2, mesh, ["x"], "sum", scatter_axis=1)

    @spmd(in_shardings=(x_s, w1_s, w2_s), out_shardings=partial_s)
    def mlp_partial(x, w1, w2):
        x = all_gather(x, mesh, ["x"], gather_axis=1, sizes=pieces)
        return np.maximum(x @ w1, 0.0) @ w2

    xt = DistributedTensor.from_global(x, x_s)
    y = mlp(xt, DistributedTensor.from_global(w1, w1_s), DistributedTensor.from_global(w2, w2_s))
    y_partial = mlp_partial(xt, w1, w2)  # plain arrays are taken as global and sharded on the way in

    expected = np.maximum(x @ w1, 0.0) @ w2
    ok = np.allclose(y.gather(), expected, rtol=1e-12, atol=1e-12) and np.allclose(
        y_partial.gather(), expected, rtol=1e-12, atol=1e-12)
    ok = mesh.comm.allreduce(ok, op=MPI.LAND)
    if mesh.rank == 0:
        print(f"mlp on {mesh.size} processes: y {y.global_shape}, sharding {y.sharding}; "
              f"matches serial numpy: {ok}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
