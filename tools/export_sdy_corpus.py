"""Export the Shardy corpus of ``tests/mlir/sdy/`` with JAX (``pip install meshrt[jax]``).

Every program is lowered three times, on meshes of 1, 2 and 4 fake CPU devices (``n1.mlir``,
``n2.mlir``, ``n4.mlir``: a Shardy program's mesh must match the process count it runs on; ``n4.generic.mlir``:
the 4-device one in MLIR's generic form), with
JAX's default Shardy partitioner, exactly as ``jax.jit(f, in_shardings=..., out_shardings=...)
.lower(*args).as_text()`` prints it.  The inputs (``in0.npy`` ...) and the outputs JAX computes
(``n4.out0.npy`` ... per mesh size) are stored beside them; `tests/mpi/test_sdy_exec.py` runs each file at its
process count and compares with these.

    python tools/export_sdy_corpus.py [OUTDIR [NAME ...]]   # default: tests/mlir/sdy, every program

Run it again after a JAX upgrade; ``git diff`` then shows what changed in JAX's output.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P  # noqa: E402

try:
    shard_map = jax.shard_map
except AttributeError:  # JAX < 0.7
    from jax.experimental.shard_map import shard_map  # type: ignore

MESH_2D = {1: (1, 1), 2: (2, 1), 3: (3, 1), 4: (2, 2)}
MESH_YX = {1: (1, 1), 2: (1, 2), 3: (1, 3), 4: (2, 2)}  # "y" split first: a free axis of size > 1 at 2 and 3


def mesh_1d(n):
    return Mesh(np.array(jax.devices()[:n]), ("x",))


def mesh_2d(n):
    return Mesh(np.array(jax.devices()[:n]).reshape(MESH_2D[n]), ("x", "y"))


def mesh_yx(n):
    return Mesh(np.array(jax.devices()[:n]).reshape(MESH_YX[n]), ("x", "y"))


def _rng(seed):
    return np.random.default_rng(seed)


# -- the programs: (name, mesh maker, fn(mesh) -> (f, in_specs, out_specs), inputs) ---------------------------


def mlp(mesh):
    def f(x, w1, b1, w2):
        h = jnp.tanh(x @ w1 + b1)
        return jax.nn.relu(h @ w2)
    return f, (P("x", None), P(None, "y"), P("y"), P("y", None)), P("x", None)


def mlp_inputs():
    r = _rng(1)
    return [r.standard_normal(s).astype(np.float32) for s in ((8, 16), (16, 8), (8,), (8, 4))]


def attention(mesh):
    def f(q, k, v):
        s = (q @ k.T) / np.float32(np.sqrt(q.shape[-1]))
        return jax.nn.softmax(s, axis=-1) @ v
    return f, (P("x", None), P(None, None), P(None, None)), P("x", None)


def attention_inputs():
    r = _rng(2)
    return [r.standard_normal((8, 4)).astype(np.float32) for _ in range(3)]


def roll_stencil(mesh):
    def f(u):
        lap = jnp.roll(u, 1, 0) + jnp.roll(u, -1, 0) + jnp.roll(u, 1, 1) + jnp.roll(u, -1, 1) - 4 * u
        return u + np.float32(0.1) * lap
    return f, (P("x", "y"),), P("x", "y")


def roll_stencil_inputs():
    return [_rng(3).standard_normal((8, 8)).astype(np.float32)]


def psum_norm(mesh):
    def body(b):
        return jax.lax.psum(jnp.sum(b * b, keepdims=True), "x")
    return shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P()), (P("x"),), P()


def psum_norm_inputs():
    return [_rng(4).standard_normal((16,)).astype(np.float32)]


def halo_ppermute(mesh):
    n = mesh.shape["x"]

    def body(b):
        right = jax.lax.ppermute(b[:1], "x", [(i, (i - 1) % n) for i in range(n)])  # my right neighbour's first
        left = jax.lax.ppermute(b[-1:], "x", [(i, (i + 1) % n) for i in range(n)])  # my left neighbour's last
        ext = jnp.concatenate([left, b, right])
        new = b + np.float32(0.25) * (ext[:-2] - 2 * b + ext[2:])
        return new, jax.lax.psum(jnp.sum(jnp.abs(new - b), keepdims=True), "x")
    return shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=(P("x"), P())), (P("x"),), (P("x"), P())


def halo_ppermute_inputs():
    return [_rng(5).standard_normal((16,)).astype(np.float32)]


def collectives(mesh):
    def body(a, b, c):
        g = jax.lax.all_gather(a, "x", axis=0, tiled=True)
        s = jax.lax.psum_scatter(b, "x", scatter_dimension=0, tiled=True)
        t = jax.lax.all_to_all(c, "x", 0, 1, tiled=True)
        return g, s, t
    specs = (P("x", None), P(None, None), P(None, "x"))
    outs = (P(None, None), P("x", None), P("x", None))
    return shard_map(body, mesh=mesh, in_specs=specs, out_specs=outs, check_vma=False), specs, outs


def collectives_inputs():
    r = _rng(6)
    return [r.standard_normal((8, 4)).astype(np.float32), r.standard_normal((8, 4)).astype(np.float32),
            r.standard_normal((4, 8)).astype(np.float32)]


def reshape_constraint(mesh):
    def f(x):
        y = jax.lax.with_sharding_constraint(x.reshape(4, 24) * 2, NamedSharding(mesh, P("x", None)))
        z = jax.lax.with_sharding_constraint(y.reshape(96), NamedSharding(mesh, P("x")))
        return jnp.sin(z), y.sum(axis=1)
    return f, (P("x", "y"),), (P("x"), P(None))


def reshape_constraint_inputs():
    return [_rng(7).standard_normal((8, 12)).astype(np.float32)]


def fori(mesh):
    def f(x, w):
        return jax.lax.fori_loop(0, 5, lambda i, v: jnp.tanh(v @ w) + i.astype(np.float32), x)
    return f, (P("x", None), P(None, None)), P("x", None)


def fori_inputs():
    r = _rng(8)
    return [r.standard_normal((8, 4)).astype(np.float32), (r.standard_normal((4, 4)) / 2).astype(np.float32)]


def integer(mesh):
    def f(a, b):
        return jnp.where(a > b, a % 3, b // 4) + jnp.clip(a, -5, 5), (a * b) // jnp.maximum(jnp.abs(b), 1)
    return f, (P("x", None), P("x", None)), (P("x", None), P(None, "y"))


def integer_inputs():
    r = _rng(9)
    return [r.integers(-20, 20, (8, 6)).astype(np.int32), r.integers(-20, 20, (8, 6)).astype(np.int32)]


def reductions(mesh):
    def f(x):
        return jnp.argmax(x, axis=1), jnp.cumsum(x, axis=0), jnp.prod(x, axis=1), jnp.max(x)
    return f, (P("x", "y"),), (P("x"), P("x", None), P(None), P())


def reductions_inputs():
    return [(_rng(10).standard_normal((8, 4)) + 1).astype(np.float32)]


def uneven(mesh):
    # JAX wants arguments divisible by their shardings; the 7-row slice of a sharded 8-row one is not
    def f(x, y):
        z = jax.lax.with_sharding_constraint(jnp.exp(x[:7]) * 2 + y[None, :], NamedSharding(mesh, P("x", None)))
        return z, (z * z).sum(axis=0)
    return f, (P("x", None), P(None)), (P(None, None), P(None))


def uneven_inputs():
    r = _rng(11)
    return [r.standard_normal((8, 5)).astype(np.float32), r.standard_normal((5,)).astype(np.float32)]


def indexing(mesh):
    def f(x, idx, v):
        d = jax.lax.cond(x.sum() > 0, lambda: x * 2, lambda: x - 1)
        return x[idx], x.at[idx].add(v), jnp.sort(x, axis=0), d
    return f, (P("x", None), P(None), P(None, None)), (P(None, None), P("x", None), P(None, None), P("x", None))


def indexing_inputs():
    r = _rng(12)
    return [r.standard_normal((8, 4)).astype(np.float32), np.array([1, 3, 3, -2, 7], np.int32),
            r.standard_normal((5, 4)).astype(np.float32)]


def misc(mesh):
    def f(x, i, k):
        a = jax.lax.dynamic_slice(x, (i, 1), (3, 2))
        b = jax.lax.dynamic_update_slice(x, jnp.ones((2, 2), x.dtype), (i, i))
        c = jnp.pad(jnp.flip(x, axis=1), ((1, 2), (0, 1)), constant_values=-1.5)
        d = jax.lax.optimization_barrier(jnp.sqrt(jnp.abs(x)) + jax.lax.rsqrt(1 + x * x) + jnp.log1p(jnp.abs(x)))
        e = (k << 2) ^ (k >> 1) | jnp.right_shift(k, 3), jnp.sign(k) * jnp.abs(k) % 7
        return a, b, c, d, e[0], e[1], x.T @ x
    return f, (P("x", None), P(), P(None, "x")), (P(), P("x", None), P(), P("x", None), P(), P(None, "x"), P())


def misc_inputs():
    r = _rng(13)
    return [r.standard_normal((8, 4)).astype(np.float32), np.int32(3), r.integers(-50, 50, (4, 8)).astype(np.int32)]


def partial_manual(mesh):
    # manual over "x" only ("y" left to the compiler): JAX puts sharding_constraint ops in the body and in
    # the all_reduce regions; the body's values stay sharded over "y"
    def body(b, w):
        h = jnp.sin(b) @ w
        h = jax.lax.with_sharding_constraint(h, P(None, "y"))
        s = jax.lax.psum(h, "x")
        return h + s, jax.lax.psum(jnp.sum(h), "x")
    specs, outs = (P("x", None), P()), (P("x", None), P())
    return shard_map(body, mesh=mesh, in_specs=specs, out_specs=outs, axis_names={"x"}), specs, outs


def partial_manual_inputs():
    r = _rng(14)
    return [r.standard_normal((12, 12)).astype(np.float32), r.standard_normal((12, 12)).astype(np.float32)]


def scalar_psum(mesh):
    # a 0-d result (tensor<f32>) and a 1-element one (tensor<1xf32>) next to a field
    def body(b):
        return b * 2, jax.lax.psum(jnp.sum(b * b), "x"), jax.lax.pmax(jnp.max(b, keepdims=True), "x")
    outs = (P("x"), P(), P())
    return shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=outs), (P("x"),), outs


def scalar_psum_inputs():
    return [_rng(15).standard_normal((12,)).astype(np.float32)]


def nested_manual(mesh):
    # a shard_map manual over "x" whose body is a shard_map manual over "y"
    def inner(c):
        return jax.lax.psum(c * c, "y"), jnp.cos(c)

    def body(b):
        s, c = shard_map(inner, in_specs=P(None, "y"), out_specs=(P(), P(None, "y")), axis_names={"y"})(b)
        return jax.lax.psum(s, "x") + jax.lax.psum(jnp.sum(c), "x"), c
    outs = (P(), P("x", None))
    return (shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=outs, axis_names={"x"}),
            (P("x", "y"),), outs)


def nested_manual_inputs():
    return [_rng(16).standard_normal((12, 12)).astype(np.float32)]


def partial_collectives(mesh):
    # every StableHLO collective JAX emits, in a body manual over "x" with "y" free
    n = mesh.shape["x"]

    def body(a, b, c):
        a = jax.lax.with_sharding_constraint(a * 2, P(None, "y"))
        g = jax.lax.all_gather(a, "x", axis=0, tiled=True)
        s = jax.lax.psum_scatter(b, "x", scatter_dimension=0, tiled=True)
        t = jax.lax.all_to_all(c, "x", 0, 1, tiled=True)
        p = jax.lax.ppermute(a, "x", [(i, (i + 1) % n) for i in range(n)])
        m = jax.lax.pmax(jnp.abs(a), "x") + jax.lax.pmin(a, "x")
        return g, s, t, p + m
    specs = (P("x", None), P(None, None), P("x", None))
    outs = (P(), P("x", None), P("x", None), P("x", None))
    return (shard_map(body, mesh=mesh, in_specs=specs, out_specs=outs, axis_names={"x"}, check_vma=False),
            specs, outs)


def partial_collectives_inputs():
    r = _rng(17)
    return [r.standard_normal((12, 6)).astype(np.float32), r.standard_normal((12, 6)).astype(np.float32),
            r.standard_normal((36, 6)).astype(np.float32)]


def cond_while(mesh):
    # a lax.while_loop and a lax.cond whose carried values / branches are sharded
    def f(x, w):
        def cond(c):
            return (c[0] < 4) & (jnp.sum(c[1] * c[1]) < 1e6)

        def body(c):
            return c[0] + 1, jnp.tanh(c[1] @ w) + c[1]
        _, y = jax.lax.while_loop(cond, body, (0, x))
        z = jax.lax.cond(jnp.sum(y) > 0, lambda a: a * 2, lambda a: jnp.exp(-a), y)
        return z, jnp.max(z, axis=1)
    return f, (P("x", None), P(None, None)), (P("x", None), P("x"))


def cond_while_inputs():
    r = _rng(18)
    return [r.standard_normal((12, 6)).astype(np.float32), (r.standard_normal((6, 6)) / 3).astype(np.float32)]


def causal_attention(mesh):
    # attention with a causal mask, queries split over "x"
    def f(q, k, v):
        s = (q @ k.T) / np.float32(np.sqrt(q.shape[-1]))
        n = q.shape[0]
        mask = jnp.arange(n)[:, None] >= jnp.arange(n)[None, :]
        s = jnp.where(mask, s, -jnp.inf)
        return jax.nn.softmax(s, axis=-1) @ v
    return f, (P("x", None), P(None, None), P(None, None)), P("x", None)


def causal_attention_inputs():
    r = _rng(19)
    return [r.standard_normal((12, 4)).astype(np.float32) for _ in range(3)]


def vmap_indexing(mesh):
    # jax.vmap over indexing: gather / scatter with batching dims, the batch split over "x"
    def f(x, idx, v, jdx):
        g = jax.vmap(lambda xi, ii: xi[ii])(x, idx)
        s = jax.vmap(lambda xi, ii, vi: xi.at[ii].add(vi))(x, idx, v)
        m = jax.vmap(lambda xi, ii, vi: xi.at[ii].set(vi * 2))(x, idx, v)
        r = jax.vmap(lambda xi, ji: xi[ji], in_axes=(2, 1), out_axes=2)(x, jdx)
        return g, s, m, r
    specs = (P("x", None, "y"), P("x", None), P("x", None, "y"), P(None, None))
    outs = (P("x", None, "y"), P("x", None, "y"), P(None, "x", None), P(None, None, "y"))
    return f, specs, outs


def vmap_indexing_inputs():
    r = _rng(20)
    return [r.standard_normal((6, 6, 4)).astype(np.float32), r.integers(-6, 6, (6, 3)).astype(np.int32),
            r.standard_normal((6, 3, 4)).astype(np.float32), r.integers(0, 7, (3, 4)).astype(np.int32)]


PROGRAMS = [
    ("mlp", mesh_2d, mlp, mlp_inputs),
    ("attention", mesh_1d, attention, attention_inputs),
    ("roll_stencil", mesh_2d, roll_stencil, roll_stencil_inputs),
    ("psum_norm", mesh_1d, psum_norm, psum_norm_inputs),
    ("halo_ppermute", mesh_1d, halo_ppermute, halo_ppermute_inputs),
    ("collectives", mesh_1d, collectives, collectives_inputs),
    ("reshape_constraint", mesh_2d, reshape_constraint, reshape_constraint_inputs),
    ("fori", mesh_1d, fori, fori_inputs),
    ("integer", mesh_2d, integer, integer_inputs),
    ("reductions", mesh_2d, reductions, reductions_inputs),
    ("uneven", mesh_1d, uneven, uneven_inputs),
    ("indexing", mesh_1d, indexing, indexing_inputs),
    ("misc", mesh_1d, misc, misc_inputs),
    # issue 43: exported at 3 devices too (n3.mlir)
    ("partial_manual", mesh_2d, partial_manual, partial_manual_inputs),
    ("scalar_psum", mesh_1d, scalar_psum, scalar_psum_inputs),
    ("nested_manual", mesh_yx, nested_manual, nested_manual_inputs),
    ("partial_collectives", mesh_2d, partial_collectives, partial_collectives_inputs),
    ("cond_while", mesh_1d, cond_while, cond_while_inputs),
    ("causal_attention", mesh_1d, causal_attention, causal_attention_inputs),
    ("vmap_indexing", mesh_2d, vmap_indexing, vmap_indexing_inputs),
]
SIZES = {name: (1, 2, 3, 4) for name in ("partial_manual", "scalar_psum", "nested_manual", "partial_collectives",
                                         "cond_while", "causal_attention", "vmap_indexing")}


def _named(mesh, spec):
    if isinstance(spec, tuple):
        return tuple(NamedSharding(mesh, s) for s in spec)
    return NamedSharding(mesh, spec)


def export(outdir, only=None):
    for name, make_mesh, build, inputs in PROGRAMS:
        if only and name not in only:
            continue
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        args = inputs()
        for i, a in enumerate(args):
            np.save(os.path.join(d, f"in{i}.npy"), a)
        ref = None
        for n in SIZES.get(name, (1, 2, 4)):
            mesh = make_mesh(n)
            f, in_specs, out_specs = build(mesh)
            jf = jax.jit(f, in_shardings=_named(mesh, in_specs), out_shardings=_named(mesh, out_specs))
            with jax.set_mesh(mesh):  # partially manual shard_map bodies constrain over the mesh in context
                lowered = jf.lower(*args)
            with open(os.path.join(d, f"n{n}.mlir"), "w") as fh:
                fh.write(lowered.as_text())
            if n == 4:  # the same program in MLIR's generic form (mlir-opt --mlir-print-op-generic)
                with open(os.path.join(d, "n4.generic.mlir"), "w") as fh:
                    fh.write(lowered.compiler_ir("stablehlo").operation.get_asm(print_generic_op_form=True))
            with jax.set_mesh(mesh):
                out = jf(*args)
            out = [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]
            # per mesh size: a psum of replicated values (collectives) depends on it
            for i, o in enumerate(out):
                np.save(os.path.join(d, f"n{n}.out{i}.npy"), o)
            ref = out
        print(f"{name}: {len(args)} inputs, {len(ref)} outputs")


if __name__ == "__main__":
    export(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "mlir", "sdy"),
           set(sys.argv[2:]))
