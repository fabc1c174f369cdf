"""Planning cost at scale: what one process pays to plan, on simulated meshes of up to 65,536 devices.

    python bench/bench_plan.py [--meshes 16x16,64x64,256x256] [--n 8192] [--reps 5] [--reference]

No MPI: every planner runs on an `AbstractMesh` (or a stand-in for a group), as
process ``size // 2 + 3`` of the mesh would.  Each time is the minimum over
``--reps`` cold runs (every plan cache cleared first), in milliseconds:

* ``reshard <kind>``: `plan_reshard` for an n x n float tensor on a 2-D mesh
  ("x", "y"), one case per kind of plan the planner makes, plus this process's
  own part of the plan the executor needs (its exchange pieces, or its
  ``all_gather`` sizes), with the number of processes it exchanges with; two
  more rows split one dim over every device on both sides (P shards per dim,
  and for the all_to_all every process a peer: an O(P) plan by nature);
* ``io file view``: `meshrt.io.file_view`, the block a checkpoint reads/writes;
* ``spmd``: the planning an `spmd` call does besides resharding (output
  shapes from offsets);
* ``from_global/gather counts``: the per-device blocks (starts, sizes) that the
  root of `DistributedTensor.from_global(root=)` and `gather()` needs for its
  v-collective, from per-dim offsets with numpy (`tensor._block_layout`); a
  non-root process of a rooted call needs only its own count;
* ``all_gather layout`` / ``scatter layout``: collectives' counts and
  displacements for a group of every device.

``--reference`` also times the original O(P^2) planner (tests/reshard_reference.py)
on the smallest mesh for the permute case.
"""

import argparse
import functools
import math
import sys
import time
from pathlib import Path

import numpy as np

from meshrt import AbstractMesh, Sharding, reshard
from meshrt.sharding import spec as sharding_mod
from meshrt.tensor.distributed_tensor import _block_layout
from meshrt.io.npy import file_view
from meshrt.spmd import _offsets_end


def clear_caches():
    for mod in (reshard, sharding_mod):
        for obj in vars(mod).values():
            if isinstance(obj, functools._lru_cache_wrapper):
                obj.cache_clear()


def best_ms(fn, reps):
    samples = []
    for _ in range(reps):
        clear_caches()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return 1e3 * min(samples)


def reshard_cases(mesh, n):
    """One (src, dst, shape) per kind of plan; the kind is checked when run."""
    S = functools.partial(Sharding, mesh)
    nx, ny = mesh.shape
    # every block of dim 0 one row later: each destination block meets two source blocks
    shifted = [0] + [k * n // nx + 1 for k in range(1, nx)] + [n] + [k * n // ny for k in range(ny + 1)]
    return {
        "all_reduce": (S([["x"]], partial_axes=["y"], partial_type="max"), S([["x"]]), (n, n)),
        "reduce_scatter": (S([["x"]], partial_axes=["y"]), S([["x"], ["y"]]), (n, n)),
        "all_gather": (S([["x"], ["y"]]), S([["x"]]), (n, n)),
        "all_slice": (S([]), S([["x"], ["y"]]), (n, n)),
        "all_to_all": (S([["x"]]), S([[], ["x"]]), (n, n)),
        "permute": (S([["x"], ["y"]]), S([["y"], ["x"]]), (n, n)),
        "exchange": (S([["x"], ["y"]]), S([["x"], ["y"]], sharded_dims_offsets=shifted), (n, n)),
        "make_partial": (S([["x"]]), S([["x"]], partial_axes=["y"]), (n, n)),
        "update_halo": (S([["x"], ["y"]]), S([["x"], ["y"]], halo_sizes=[1, 1, 1, 1]), (n, n)),
        # one dim split over every device on both sides: offsets of P shards, every device a peer
        "all_to_all, all peers": (S([["x", "y"]]), S([[], ["x", "y"]]), (nx * ny * 4, nx * ny * 4)),
        "permute, P shards/dim": (S([["x", "y"]]), S([["y", "x"]]), (nx * ny * 4, nx * ny * 4)),
    }


def plan_and_program(src, dst, shape, device):
    """What one process computes before its first reshard moves anything; returns its peer count."""
    plan = reshard.plan_reshard(src, dst, shape)
    peers = set()
    for step in plan.steps:
        if step.op in ("all_to_all", "permute", "exchange"):
            sends, recvs, _ = reshard._exchange_program(step.before, step.after, shape, device)
            peers |= {p for p, _ in sends + recvs if p != device}
        elif step.op == "all_gather":
            peers |= set(range(len(reshard.gather_sizes(step, shape, device)) - 1))
        elif step.op in ("all_reduce", "reduce_scatter"):
            peers |= set(range(step.before.mesh.axes_size(step.mesh_axes) - 1))
    return len(peers)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--meshes", default="16x16,64x64,256x256")
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--reference", action="store_true")
    args = ap.parse_args()
    shapes = [tuple(int(v) for v in m.split("x")) for m in args.meshes.split(",")]
    meshes = [AbstractMesh(s, ("x", "y")) for s in shapes]
    rows = {}

    def row(name, mesh, ms, peers=None):
        rows.setdefault(name, {})[mesh.shape] = (ms, peers)

    n = args.n
    for mesh in meshes:
        me = mesh.size // 2 + 3
        for kind, (src, dst, shape) in reshard_cases(mesh, n).items():
            plan = reshard.plan_reshard(src, dst, shape)
            ops = [s.op for s in plan.steps]
            assert kind.split(",")[0] in ops, (kind, ops)
            peers = plan_and_program(src, dst, shape, me)
            reps = args.reps if peers < 1000 else 1
            row(f"reshard {kind}", mesh, best_ms(lambda: plan_and_program(src, dst, shape, me), reps), peers)

        s = Sharding(mesh, [["x"], ["y"]], halo_sizes=[1, 1, 1, 1])
        row("io file view", mesh, best_ms(lambda: file_view(s, (n, n), me), args.reps))
        offs = list(range(0, n, max(n // mesh.shape[0], 1)))[: mesh.shape[0]] + [n]
        so = Sharding(mesh, [["x"]], sharded_dims_offsets=offs)
        row("spmd out shape", mesh, best_ms(lambda: _offsets_end(so, 0), args.reps))

        s = Sharding(mesh, [["x"], ["y"]])
        row("from_global/gather counts", mesh, best_ms(lambda: _block_layout(s, (n, n)), args.reps))

        from meshrt.collectives import move as _collectives_move

        x = np.empty((max(n // mesh.size, 1), 4))
        sizes = [x.shape[0]] * mesh.size
        row("all_gather layout", mesh, best_ms(lambda: _collectives_move._layout(sizes, x, 0), args.reps))
        row("scatter layout", mesh, best_ms(
            lambda: (sharding_mod.split_sizes(n, mesh.size), sharding_mod.split_offsets(n, mesh.size)), args.reps))

    names = [f"{m.shape[0]}x{m.shape[1]}" for m in meshes]
    print(f"planning cost per process, ms (min of {args.reps} cold runs; 1 run where a process has"
          f" >= 1000 peers), n = {n}; (peers) = the processes this one exchanges with")
    print(f"{'planner':30s}" + "".join(f"{s:>20s}" for s in names))
    for name, by_mesh in rows.items():
        cells = []
        for m in meshes:
            ms, peers = by_mesh[m.shape]
            cells.append(f"{ms:10.3f}" + (f" ({peers:>6d})" if peers is not None else " " * 9))
        print(f"{name:30s}" + "".join(f"{c:>20s}" for c in cells))

    if args.reference:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import reshard_reference as ref

        mesh = meshes[0]
        src, dst, shape = reshard_cases(mesh, n)["permute"]
        t0 = time.perf_counter()
        old = ref.reference_plan(src, dst, shape)
        t_old = time.perf_counter() - t0
        new = best_ms(lambda: plan_and_program(src, dst, shape, mesh.size // 2 + 3), args.reps)
        assert old == reshard.plan_reshard(src, dst, shape)
        print(f"original planner, permute on {mesh.shape}: {1e3 * t_old:.0f} ms "
              f"(now {new:.2f} ms, {1e3 * t_old / new:.0f}x less)")


if __name__ == "__main__":
    main()
