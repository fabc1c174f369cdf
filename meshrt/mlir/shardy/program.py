"""Run Shardy programs (StableHLO + ``sdy``, as ``jax.jit(...).lower(...).as_text()`` prints
them) on MPI processes, each holding its shards.

The global program runs in *global view*: a value is a `DistributedTensor` laid out per its
sharding, or a numpy array every process holds whole (replicated).  Arguments are split per
their ``sdy.sharding``; ``sdy.sharding_constraint``, ``sdy.reshard``, the sdy collectives, a
result's ``sdy.sharding`` attribute and the function results move data to the sharding they
name (meshrt's reshard planner moves the minimum), and so does every value that
`meshrt.mlir.shardy.propagation` gives a sharding.  Ops compute on the shards through the
DistributedTensor operations (elementwise on the local blocks, ``dot_general`` through
meshrt's einsum planner, ``reduce`` locally then across the mesh axes, ``reshape``,
``transpose``, ``slice``, ``concatenate``, ``reverse``, cumsum and argmax with their own
plans; ``pad``, the dynamic slices, ``reduce_window`` and ``sort`` in `meshrt.mlir.shardy.window`);
an op without a sharded implementation runs on the gathered operands and gives a
replicated result (``meshrt mlir explain`` lists these).  Each value is freed after its last use.
``sdy.manual_computation`` bodies run on the local blocks where every axis is manual, and in
global view over the free axes of a partially manual one (on the sub-mesh of the processes that
share this one's manual coordinates; nested ones add their manual axes); their StableHLO
collectives map replica groups and ``source_target_pairs`` of device ids onto MPI communicators,
built once per group set and cached (`SdyProgram.free` releases them).

>>> from meshrt.mlir import parse
>>> m = parse('''sdy.mesh @mesh = <["x"=1]>
... func.func @main(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<4xf32> {
...   %0 = stablehlo.exponential %a : tensor<4xf32>
...   return %0 : tensor<4xf32>
... }''')
>>> y, = SdyProgram(m).run_global("main", [np.zeros(4, np.float32)])
>>> y
array([1., 1., 1., 1.], dtype=float32)
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ...errors import MLIRError
from ...runtime import mpi as _mpi
from ...mesh import Mesh
from ...sharding.spec import Sharding
from ...tensor.distributed_tensor import DistributedTensor
from ..interpreters import stablehlo as H
from . import window as _window
from ..dialects.sdy import (  # noqa: F401  (verify_sdy and _arg_sharding: meshrt.mlir.sdy's names, as before)
    _SDY_COLLECTIVES, _arg_sharding, _where, meshes, sharding_attr, shardings_attr, verify_sdy,
)
from ..dialects.sdy_attrs import TensorSharding, parse_axis_list
from ..ir import DenseElements, Module, TensorType
from ..dialects.shard import verify

__all__ = ["SdyProgram", "is_sdy", "verify_sdy", "run_sdy"]

_HLO_COLLECTIVES = frozenset(["stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
                              "stablehlo.all_to_all", "stablehlo.collective_permute"])
_TERMINATORS = frozenset(["func.return", "stablehlo.return", "sdy.return"])
_PASS_THROUGH = frozenset(["sdy.propagation_barrier", "sdy.data_flow_edge", "stablehlo.optimization_barrier"])
_GLOBAL_ONLY = frozenset(["sdy.sharding_constraint", "sdy.reshard", "sdy.manual_computation", *_SDY_COLLECTIVES])
_CONTROL = frozenset(["func.call", "stablehlo.while", "stablehlo.reduce", "stablehlo.reduce_window",
                      "stablehlo.gather", "stablehlo.scatter", "stablehlo.sort",
                      "stablehlo.partition_id", "stablehlo.replica_id", "sdy.named_computation", "sdy.sharding_group",
                      "stablehlo.case", "stablehlo.if", *_PASS_THROUGH])


def is_sdy(module: Module) -> bool:
    """True when the module holds an ``sdy.mesh`` or any ``sdy``/``stablehlo`` op."""
    return any(op.dialect in ("sdy", "stablehlo") for op in module.walk())


# -- execution -----------------------------------------------------------------------------------------

class _Splat:
    """A scalar broadcast to a shape (``broadcast_in_dim`` of a rank-0 value): kept as the scalar."""

    __slots__ = ("value", "shape")

    def __init__(self, value, shape):
        self.value, self.shape = np.asarray(value), tuple(shape)

    @property
    def dtype(self):
        return self.value.dtype

    def full(self):
        return np.broadcast_to(self.value, self.shape)


class _LazySlice:
    """A unit-stride ``stablehlo.slice`` of a sharded value, taken only when used: a ``concatenate``
    of the two halves of a dim swapped (how ``jnp.roll`` lowers) becomes meshrt's distributed roll,
    which moves the rolled-over rows only."""

    __slots__ = ("src", "starts", "limits")

    def __init__(self, src, starts, limits):
        self.src, self.starts, self.limits = src, tuple(starts), tuple(limits)

    def take(self):
        return self.src[tuple(slice(a, b) for a, b in zip(self.starts, self.limits))]


class _Deferred:
    """An elementwise result (or a roll) on the shards kept as meshrt's deferred expression (a
    `LazyTensor`) with its layout known without evaluating it: a chain of ``add``, ``multiply``,
    ... and rolls (how ``jnp.roll`` stencils lower) then runs as one fused, halo-reading pass
    when a value is first used by anything else, as the same numpy code on DistributedTensors
    does (`meshrt.tensor.lazy`)."""

    __slots__ = ("value", "sharding", "global_shape", "dtype")

    def __init__(self, value, sharding, global_shape, dtype):
        self.value, self.sharding, self.global_shape, self.dtype = value, sharding, tuple(global_shape), dtype

    def take(self):
        return self.value


#: StableHLO ops that are numpy's ufunc exactly (divide: floats only), deferred on the shards
_DEFERRED_UFUNCS = {"stablehlo.add": np.add, "stablehlo.subtract": np.subtract, "stablehlo.multiply": np.multiply,
                    "stablehlo.negate": np.negative, "stablehlo.divide": np.divide}


def _roll_of(vals, dim):
    """The shift when ``concatenate(vals, dim)`` is ``roll(src, shift, dim)`` of one source, else None."""
    if len(vals) != 2 or not all(isinstance(v, _LazySlice) for v in vals) or vals[0].src is not vals[1].src:
        return None
    a, b = vals
    shape = a.src.global_shape
    for d, n in enumerate(shape):
        if d != dim and not (a.starts[d] == b.starts[d] == 0 and a.limits[d] == b.limits[d] == n):
            return None
    n = shape[dim]
    if a.limits[dim] == n and b.starts[dim] == 0 and b.limits[dim] == a.starts[dim]:
        return n - a.starts[dim]
    return None


def _cumulative_axis(op, shape):
    """The dim of a ``reduce_window`` that is a running sum (how ``jnp.cumsum`` lowers: an add body,
    window n along one dim of size n, padding (n-1, 0) there, unit strides, no dilations), else None."""
    if H.simple_reduction(op.regions[0]) != "sum":
        return None
    rank = len(shape)
    wd = H._attr_ints(op, "window_dimensions")
    if any(int(x) != 1 for key in ("window_strides", "base_dilations", "window_dilations")
           for x in H._attr_ints(op, key, (1,) * rank)):
        return None
    pad = op.attributes.get("padding")
    pad = np.asarray(pad.array).reshape(rank, 2) if isinstance(pad, DenseElements) else np.zeros((rank, 2), int)
    dims = [d for d in range(rank) if wd[d] != 1 or pad[d].any()]
    if len(dims) != 1:
        return None
    d = dims[0]
    return d if wd[d] == shape[d] and tuple(pad[d]) == (shape[d] - 1, 0) else None


class SdyProgram:
    """A verified Shardy module bound to a communicator.

    ``run_global(name, arrays)``: the global arrays (the same on every process; each takes its
    shards) -> the global results on every process.  ``run(name, arrays)`` returns the values
    as they are laid out (`DistributedTensor` or replicated numpy arrays).
    """

    def __init__(self, module: Module, comm=None):
        if comm is None:
            from mpi4py import MPI

            comm = MPI.COMM_WORLD
        verify(module)
        verify_sdy(module)
        self.module = module
        self.comm = comm
        self.mesh_attrs = meshes(module)
        for name, m in self.mesh_attrs.items():
            if m.size != comm.size and not (m.device_ids is not None and len(m.device_ids) == 1):
                raise MLIRError(f"{module.filename}: mesh @{name} {m} has {m.size} devices, but the program runs on "
                                f"{comm.size} processes; export it for a mesh of {comm.size} devices")
            if m.device_ids is not None and sorted(m.device_ids) != list(range(m.size)):
                raise MLIRError(f"{module.filename}: mesh @{name}: device_ids {list(m.device_ids)} are not a "
                                f"permutation of 0..{m.size - 1}")
        self._meshes = {}
        self._sub_axes = {}   # sdy text -> Sharding on a refined mesh
        self._shardings = {}  # (sdy text, manual axes) -> Sharding (`sharding`)
        self._users = None    # value -> the ops that read it (`_elementwise_users_only`)
        self._propagated = {}  # function -> {Value: TensorSharding} (meshrt.mlir.shardy.propagation)
        self._checked_argmax = {}
        self._dead = {}
        self._defining = {r: op for op in module.walk() for r in op.results}
        self._prop = {}
        self._comms = {}
        self._checked = set()
        self.fallbacks = []   # (op, why): ops run on gathered data
        self.trace = None     # explain: {op: [(what, bytes, same on every process)]}
        self.on_result = None  # explain: called (op, results, local) after each op
        self._op_now = None
        # the mesh axes the enclosing manual computations are manual over: inside a partially manual
        # body, values are local over these and global over the rest (a sub-mesh of the free axes)
        self._ctx = frozenset()
        self._submeshes = {}  # (mesh name, manual axes) -> (Mesh of the free axes, its communicator)

    # -- meshes and communicators --------------------------------------------------------------------
    def mesh(self, name) -> Mesh:
        """The mesh @name as meshrt's `Mesh`; inside a partially manual body, the mesh of its free axes
        whose communicator holds the processes that share this one's coordinates on the manual axes."""
        if self._ctx:
            return self._submesh(name, self._ctx)
        m = self._meshes.get(name)
        if m is None:
            attr = self.mesh_attrs[name]
            shape = tuple(s for _, s in attr.axes) or (1,)
            names = tuple(n for n, _ in attr.axes) or ("_",)
            m = self._meshes[name] = Mesh(shape, names, comm=self.comm, name=name)
        return m

    def _submesh(self, name, manual) -> Mesh:
        key = (name, manual)
        got = self._submeshes.get(key)
        if got is None:
            attr = self.mesh_attrs[name]
            axes = list(attr.axes) or [("_", 1)]
            coords = np.unravel_index(self.comm.rank, tuple(s for _, s in axes))
            color = key_ = 0
            for (n, s), c in zip(axes, coords):
                if n in manual:
                    color = color * s + int(c)
                else:
                    key_ = key_ * s + int(c)
            with _mpi.internal("sdy.manual_computation", "split of the communicator over the manual axes", self.comm):
                sub = self.comm.Split(color, key_)
            free = [(n, s) for n, s in axes if n not in manual]
            m = Mesh(tuple(s for _, s in free) or (1,), tuple(n for n, _ in free) or ("_",), comm=sub, name=name)
            got = self._submeshes[key] = (m, sub)
        return got[0]

    def device_of_rank(self, rank):
        for m in self.mesh_attrs.values():
            if m.device_ids is not None and len(m.device_ids) == self.comm.size:
                return m.device_ids[rank]
        return rank

    def rank_of_device(self, dev):
        for m in self.mesh_attrs.values():
            if m.device_ids is not None and len(m.device_ids) == self.comm.size:
                return list(m.device_ids).index(dev)
        return dev

    def group_comm(self, groups):
        """The communicator of this process's replica group (device ids); cached per group set."""
        key = tuple(tuple(g) for g in groups)
        c = self._comms.get(key)
        if c is None:
            me = self.device_of_rank(self.comm.rank)
            color, pos = 0, self.comm.rank
            if key:
                for gi, g in enumerate(key):
                    if me in g:
                        color, pos = gi, g.index(me)
                        break
                else:
                    raise MLIRError(f"device {me} is in no replica group of {[list(g) for g in key]}")
            with _mpi.internal("sdy replica groups", "split of the communicator", self.comm):
                c = self._comms[key] = self.comm.Split(color, pos)
        return c

    def free(self):
        """Free the cached communicators and meshes (collective)."""
        for c in self._comms.values():
            with _mpi.internal("sdy replica groups", "free of a communicator", c):
                c.Free()
        self._comms.clear()
        for m in self._meshes.values():
            m.free()
        self._meshes.clear()
        for sh in self._sub_axes.values():
            sh.mesh.free()
        self._sub_axes.clear()
        for m, c in self._submeshes.values():
            m.free()
            with _mpi.internal("sdy.manual_computation", "free of a communicator", c):
                c.Free()
        self._submeshes.clear()
        self._shardings.clear()

    def count(self, what, nbytes, same_everywhere=True):
        """Explain's record of the data an op moves: ``nbytes`` in all (``same_everywhere``: every process
        computes the same total, from the plans) or sent by this process (summed over processes later)."""
        if self.trace is not None and self._op_now is not None:
            self.trace.setdefault(self._op_now, []).append((what, int(nbytes), same_everywhere))

    # -- shardings -------------------------------------------------------------------------------------
    def sharding(self, ts: TensorSharding, manual_only=None) -> Sharding | None:
        """meshrt's `Sharding` of ``ts`` (unreduced axes dropped: global values are whole); None when it
        splits nothing.  One object per distinct sharding, so that the plans meshrt caches by
        sharding (fused elementwise passes, reshards) are found again on the next run."""
        key = (str(ts), None if manual_only is None else tuple(sorted(manual_only)), self._ctx)
        try:
            return self._shardings[key]
        except KeyError:
            s = self._shardings[key] = self._make_sharding(ts, manual_only)
            return s

    def _make_sharding(self, ts: TensorSharding, manual_only=None) -> Sharding | None:
        dims = []
        for d in ts.dims:  # axes the enclosing manual computations are manual over are local here
            dims.append([a for a in d.axes if (manual_only is None or a.name in manual_only)
                         and a.name not in self._ctx])
        mesh = self.mesh(ts.mesh)
        if any(a.pre is not None for axes in dims for a in axes):
            # sub-axes: meshrt refines the mesh (same communicator, same device order) and splits along its parts
            text = f"#sdy.sharding<@{ts.mesh}, [" + ", ".join(
                "{" + ", ".join(str(a) for a in axes) + "}" for axes in dims) + "]>"
            s = self._sub_axes.get((text, self._ctx))
            if s is None:
                s = self._sub_axes[(text, self._ctx)] = Sharding.parse(text, mesh)
            return s if any(s.split_axes) else None
        sizes = self.mesh_attrs[ts.mesh].sizes()
        split = [[mesh.axis_names.index(a.name) for a in axes if sizes[a.name] > 1] for axes in dims]
        if not any(split):
            return None
        return Sharding(mesh, split)

    def to_sharding(self, value, ts: TensorSharding | None, op=None, manual_only=None):
        """``value`` laid out per ``ts`` (None or replicated: a numpy array on every process)."""
        DT = DistributedTensor
        if isinstance(value, _Splat):
            value = value.full()
        elif isinstance(value, _Deferred):
            value = value.take()
        s = None if ts is None else self.sharding(ts, manual_only)
        if s is None:
            if isinstance(value, DT):
                return value.gather()
            return np.asarray(value)
        if isinstance(value, DT):
            if value.sharding == s:
                return value
            return value.reshard(s)
        value = np.asarray(value)
        if value.ndim == 0:
            return value
        return DT.from_global(value, s)

    # -- running -----------------------------------------------------------------------------------------
    def check(self, name):
        """Raise `MLIRError` (file:line:col, the op) for the first op of ``@name`` or its callees that
        cannot run; nothing communicates."""
        if name in self._checked:
            return
        funcs = self.module.functions()
        if name not in funcs:
            raise MLIRError(f"{self.module.filename}: no function @{name}; the module has "
                            f"{', '.join('@' + n for n in funcs) or 'none'}")
        todo, seen = [name], set()
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            for op in funcs[n].walk():
                if op is funcs[n]:
                    continue
                known = (op.name in H.LOCAL_OPS or op.name in _CONTROL or op.name in _GLOBAL_ONLY
                         or op.name in _TERMINATORS or op.name in _HLO_COLLECTIVES)
                if not known:
                    raise MLIRError(f"{op.location}: unsupported op '{op.name}' (in @{n})")
                if op.name == "stablehlo.reduce_window":
                    H.check_region_op(op)
                if op.name in ("stablehlo.gather", "stablehlo.scatter"):
                    from .index import check_index_op

                    check_index_op(op)
                if op.name == "func.call":
                    callee = getattr(op.attributes.get("callee"), "name", None)
                    if callee not in funcs:
                        raise MLIRError(f"{op.location}: 'func.call' calls @{callee}, which the module does not "
                                        "define")
                    todo.append(callee)
                for t in [v.type for v in op.results] + [v.type for v in op.operands]:
                    if isinstance(t, TensorType):
                        H.np_dtype(t)
        self._checked.add(name)

    def check_args(self, name, arrays) -> list:
        """The arguments checked against ``@name``'s signature (`MLIRError` naming the argument, its
        shape or dtype); nothing communicates."""
        self.check(name)
        f = self.module.functions()[name]
        ftype = f.attributes["function_type"].type
        if len(arrays) != len(ftype.inputs):
            raise MLIRError(f"{f.location}: @{name} takes {len(ftype.inputs)} arguments, got {len(arrays)}")
        vals = []
        for i, (a, t) in enumerate(zip(arrays, ftype.inputs)):
            a = np.asarray(a) if not hasattr(a, "shape") else a
            where = f"{f.location}: @{name} argument {i}"
            if isinstance(t, TensorType):
                if tuple(a.shape) != tuple(t.shape):
                    raise MLIRError(f"{where}: expected {t}, got an array of shape {tuple(a.shape)}")
                if np.dtype(a.dtype) != H.np_dtype(t):
                    raise MLIRError(f"{where}: expected element type {t.element} ({H.np_dtype(t)}), got {a.dtype}")
            vals.append(a)
        return vals

    def read_args(self, name, paths) -> list:
        """``@name``'s arguments read from ``.npy`` files, each process reading only its shards
        (MPI-IO, `meshrt.io.npy.read_npy`) of an argument the signature's ``sdy.sharding`` splits:
        no process maps or holds a whole split argument.  Shapes and dtypes are checked against
        the signature from the files' headers first (`MLIRError` naming the argument), before any
        communication.  The result is what `run` takes."""
        from ...io.npy import _read_header, read_npy

        headers = [_read_header(p) for p in paths]
        self.check_args(name, [SimpleNamespace(shape=shape, dtype=dtype) for shape, dtype, *_ in headers])
        f = self.module.functions()[name]
        DT = DistributedTensor
        out = []
        for i, path in enumerate(paths):
            ts = _arg_sharding(f, i)
            s = None if ts is None else self.sharding(ts)
            out.append(np.load(path) if s is None else read_npy(path, s, factory=DT.from_local))
        return out

    def run(self, name, arrays, *, consume=False) -> list:
        """Run ``@name`` on global arrays; results laid out per their ``sdy.sharding``.
        ``consume=True`` empties the list ``arrays`` as the run starts, so that each argument
        is freed after its last use (what `read_args` read, say) rather than held to the end."""
        vals = self.check_args(name, arrays)
        f = self.module.functions()[name]
        # every process checked the same arrays: from here on communication is safe
        vals = [self.to_sharding(a, _arg_sharding(f, i), f) for i, a in enumerate(vals)]
        if consume:
            arrays.clear()
        if name not in self._propagated:
            from .propagation import propagate

            self._propagated[name] = propagate(self.module, name)
        self._prop = self._propagated[name]
        with np.errstate(all="ignore"):
            out = self._call(name, vals, local=False, consume=True)
        self._op_now = f.regions[0].entry.operations[-1]  # explain: the results' moves belong to the return
        try:
            return [self.to_sharding(v, _arg_sharding(f, i, "res_attrs"), f) for i, v in enumerate(out)]
        finally:
            self._op_now = None

    def run_global(self, name, arrays) -> list:
        """`run`, then every result gathered whole on every process."""
        return [self.whole(v) for v in self.run(name, arrays)]

    def whole(self, v, root=None):
        DT = DistributedTensor
        if isinstance(v, _Deferred):
            v = v.take()
        if isinstance(v, DT):
            return v.gather(root)
        if isinstance(v, _Splat):
            v = v.full()
        return np.asarray(v) if root is None or self.comm.rank == root else None

    def _call(self, name, args, local, consume=False):
        f = self.module.functions()[name]
        return self._block(f.regions[0].entry, args, local, consume=consume)

    def _dead_after(self, block):
        """Per op of ``block``: the values defined in the block whose last use it is (freed after it runs,
        so that a process holds only the live values)."""
        d = self._dead.get(block)
        if d is None:
            here = set(block.arguments) | {r for op in block.operations for r in op.results}
            last = {}
            for i, op in enumerate(block.operations):
                for x in op.walk():
                    for v in x.operands:
                        if v in here:
                            last[v] = i
            d = [[] for _ in block.operations]
            for v, i in last.items():
                d[i].append(v)
            for i, op in enumerate(block.operations):
                d[i] += [r for r in op.results if r not in last]
            self._dead[block] = d
        return d

    def _block(self, block, args, local, env=None, consume=False):
        env = {} if env is None else env
        for a, v in zip(block.arguments, args):
            env[a] = v
        if consume:  # the caller's list lets go of the arguments: dead values are freed as the block runs
            args.clear()
        dead = self._dead_after(block)
        for i, op in enumerate(block.operations):
            if op.name in _TERMINATORS:
                return [env[v].take() if isinstance(env[v], _LazySlice) else env[v] for v in op.operands]
            outer, self._op_now = self._op_now, op
            try:
                vals = [env[v] for v in op.operands]
                if op.name != "stablehlo.concatenate":
                    keep = _Deferred if op.name in _DEFERRED_UFUNCS and not local else ()
                    vals = [v.take() if isinstance(v, (_LazySlice, _Deferred)) and not isinstance(v, keep) else v
                            for v in vals]
                res = self._op(op, vals, local, env)
            except MLIRError:
                raise
            except (ValueError, TypeError, IndexError) as e:
                raise MLIRError(f"{op.location}: '{op.name}' failed on process {self.comm.rank}: "
                                f"{type(e).__name__}: {e}") from e
            finally:
                self._op_now = outer
            if not local and op.name not in _GLOBAL_ONLY:
                per_value = op.attributes.get("sdy.sharding")
                if per_value is not None:
                    ss = shardings_attr(op, "sdy.sharding")
                    res = [self.to_sharding(r, s, op) for r, s in zip(res, ss)]
                elif self._prop:  # the propagated sharding, where the pass gave one
                    outer, self._op_now = self._op_now, op
                    try:
                        res = [r if v not in self._prop or _unconstrained(self._prop[v])
                               else self._deferred_to(r, self._prop[v].without_unreduced(), op) if isinstance(r, _Deferred)
                               else self.to_sharding(r, self._prop[v].without_unreduced(), op)
                               if isinstance(r, DistributedTensor) or (isinstance(r, np.ndarray) and r.ndim)
                               else r for v, r in zip(op.results, res)]
                    finally:
                        self._op_now = outer
            if self.on_result is not None:
                self.on_result(op, res, local)
            for v, r in zip(op.results, res):
                env[v] = r
            res = vals = None
            for v in dead[i]:
                env.pop(v, None)
        return []

    # -- one op ------------------------------------------------------------------------------------------
    def _op(self, op, vals, local, env):
        name = op.name
        if name == "func.call":
            # the callee's values take the shardings propagation gave them at this call site
            outer = self._prop
            self._prop = getattr(outer, "calls", {}).get(op, {})
            try:
                return self._call(op.attributes["callee"].name, vals, local, consume=True)
            finally:
                self._prop = outer
        if name in _PASS_THROUGH or name == "sdy.named_computation":
            if name == "sdy.named_computation":
                return self._block(op.regions[0].entry, vals, local, dict(env))
            return vals
        if name == "sdy.sharding_group":
            return []
        if name == "stablehlo.while":
            return self._while(op, vals, local, env)
        if name in ("stablehlo.case", "stablehlo.if"):
            i = int(self.whole(vals[0]))
            if name == "stablehlo.if":
                region = op.regions[0] if i else op.regions[1]
            else:
                region = op.regions[i if 0 <= i < len(op.regions) else len(op.regions) - 1]
            return self._block(region.entry, [], local, dict(env))
        if name in ("stablehlo.partition_id", "stablehlo.replica_id"):
            dev = self.device_of_rank(self.comm.rank) if name == "stablehlo.partition_id" else 0
            return [np.asarray(dev, H.np_dtype(op.results[0].type))]
        if local:
            return self._local_op(op, vals, env)
        return self._global_op(op, vals, env)

    def _region_fn(self, region, local, env):
        def fn(*xs):
            return self._block(region.entry, list(xs), local, dict(env))
        return fn

    def _while(self, op, vals, local, env):
        cond, body = op.regions
        while True:
            c = self._block(cond.entry, vals, local, dict(env))[0]
            if not bool(self.whole(c)):
                return vals
            vals = self._block(body.entry, vals, local, dict(env))

    # -- per-process (manual) ops -----------------------------------------------------------------------
    def _local_op(self, op, vals, env):
        name = op.name
        vals = [v.full() if isinstance(v, _Splat) else v for v in vals]
        if name in H.LOCAL_OPS:
            return list(H.local_function(op)(*vals))
        if name == "stablehlo.reduce":
            n = len(vals) // 2
            kind = H.simple_reduction(op.regions[0]) if n == 1 else None
            return H.reduce_with(vals[:n], vals[n:], H._attr_ints(op, "dimensions"),
                                 self._region_fn(op.regions[0], True, env), kind)
        if name == "stablehlo.reduce_window":
            n = len(vals) // 2
            kind = H.simple_reduction(op.regions[0]) if n == 1 else None
            return H.reduce_window_with(op, vals[:n], vals[n:], self._region_fn(op.regions[0], True, env), kind)
        if name in _HLO_COLLECTIVES:
            return self._hlo_collective(op, vals, env)
        if name == "stablehlo.gather":
            return [H.gather(op, *vals)]
        if name == "stablehlo.scatter":
            n = (len(vals) - 1) // 2
            fn = self._region_fn(op.regions[0], True, env)
            return H.scatter_many(op, vals[:n], vals[n], vals[n + 1:], lambda a, b: fn(*a, *b))
        if name == "stablehlo.sort":
            fn = self._region_fn(op.regions[0], True, env)
            return H.sort_with(op, vals, lambda *xs: fn(*xs)[0])
        if name in ("sdy.sharding_constraint", "sdy.reshard"):
            # per-process values (a manual body over every axis of size > 1, a collective's region on
            # scalars): there is no free axis left to lay the value out over
            return vals
        if name == "sdy.manual_computation":  # manual over further axes, all of size 1 here: the same blocks
            return self._block(op.regions[0].entry, vals, True, dict(env))
        raise MLIRError(f"{op.location}: '{name}' cannot run inside a manual computation")

    def _groups(self, op):
        g = op.attributes.get("replica_groups")
        if isinstance(g, DenseElements):
            arr = np.asarray(g.array)
            if arr.size == 0:
                return ()
            return tuple(tuple(int(x) for x in row if x >= 0) for row in arr.reshape(arr.shape[0], -1))
        return ()

    def _hlo_collective(self, op, vals, env):
        from mpi4py import MPI

        name = op.name
        if name == "stablehlo.collective_permute":
            pairs = np.asarray(op.attributes["source_target_pairs"].array).reshape(-1, 2)
            me = self.device_of_rank(self.comm.rank)
            x = _contiguous(vals[0])
            out = np.zeros_like(x)
            dst = [int(t) for s, t in pairs if s == me]
            src = [int(s) for s, t in pairs if t == me]
            self.count(f"collective_permute of {len(pairs)} pairs", x.nbytes * sum(d != me for d in dst),
                       same_everywhere=False)
            with _mpi.internal("stablehlo.collective_permute", "send and receive", self.comm):
                reqs = [self.comm.Isend(x, dest=self.rank_of_device(d), tag=77) for d in dst]
                if src:
                    self.comm.Recv(out, source=self.rank_of_device(src[0]), tag=77)
                MPI.Request.Waitall(reqs)
            return [out]
        comm = self.group_comm(self._groups(op))
        k = comm.size
        if self.trace is not None:
            sent = sum(np.asarray(v).nbytes for v in vals)
            sent = {"stablehlo.all_gather": (k - 1) * sent, "stablehlo.all_to_all": (k - 1) * sent // max(k, 1),
                    "stablehlo.all_reduce": 2 * (k - 1) * sent // max(k, 1),
                    "stablehlo.reduce_scatter": (k - 1) * sent // max(k, 1)}[name]
            self.count(f"{name[10:]} over groups of {k} devices", sent, same_everywhere=False)
        if name == "stablehlo.all_gather":
            dim = int(op.attributes["all_gather_dim"])
            outs = []
            for x in vals:
                x = _contiguous(x)
                buf = np.empty((k,) + x.shape, x.dtype)
                with _mpi.internal("stablehlo.all_gather", "allgather", comm):
                    comm.Allgather(x, buf)
                outs.append(np.concatenate(list(buf), axis=dim))
            return outs
        if name == "stablehlo.all_to_all":
            sd, cd = int(op.attributes["split_dimension"]), int(op.attributes["concat_dimension"])
            outs = []
            for x in vals:
                parts = np.stack(np.split(np.asarray(x), k, axis=sd))
                recv = np.empty_like(parts)
                with _mpi.internal("stablehlo.all_to_all", "alltoall", comm):
                    comm.Alltoall(np.ascontiguousarray(parts), recv)
                outs.append(np.concatenate(list(recv), axis=cd))
            return outs
        kind = H.simple_reduction(op.regions[0])
        if name == "stablehlo.all_reduce":
            return [self._allreduce(comm, x, kind, op, env) for x in vals]
        if name == "stablehlo.reduce_scatter":
            dim = int(op.attributes["scatter_dimension"])
            x = np.asarray(vals[0])
            total = self._allreduce(comm, x, kind, op, env)
            n = x.shape[dim] // k
            return [np.ascontiguousarray(np.take(total, range(comm.rank * n, (comm.rank + 1) * n), axis=dim))]
        raise MLIRError(f"{op.location}: unsupported op '{name}'")

    def _hlo_collective_sharded(self, op, vals, env):
        """A StableHLO collective inside a partially manual body: its replica groups span the manual
        axes only, so the processes of a group hold the same blocks over the free axes; the
        collective runs on the blocks, with the dims it gathers, splits or concatenates made whole
        over the free axes first."""
        DT = DistributedTensor
        a = op.attributes
        dims = {int(a[k]) for k in ("all_gather_dim", "split_dimension", "concat_dimension", "scatter_dimension")
                if k in a}
        vals = [v.full() if isinstance(v, _Splat) else v.take() if isinstance(v, (_Deferred, _LazySlice)) else v
                for v in vals]
        layouts, blocks = [], []
        for v in vals:
            if isinstance(v, DT):
                s = v.sharding
                if any(s.dim_axes(d) for d in dims if d < v.ndim):
                    s = Sharding(s.mesh, [[] if d in dims else list(s.dim_axes(d)) for d in range(v.ndim)])
                    v = v.reshard(s) if any(s.split_axes) else v.gather()
            layouts.append(v.sharding if isinstance(v, DT) else None)
            blocks.append(v.interior if isinstance(v, DT) else np.asarray(v))
        res = self._hlo_collective(op, blocks, env)
        return [r if s is None else DT(_contiguous(r), s, rv.type.shape)
                for r, s, rv in zip(res, layouts, op.results)]

    def _allreduce(self, comm, x, kind, op, env):
        from mpi4py import MPI

        x = _contiguous(x)
        if kind is not None and x.dtype != bool:
            mop = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}.get(kind)
            if mop is not None and not (kind in ("max", "min") and x.dtype.kind == "f" and np.isnan(x).any()):
                out = np.empty_like(x)
                with _mpi.internal("stablehlo.all_reduce", "allreduce", comm):
                    comm.Allreduce(x, out, op=mop)
                return out
        # any other body (or NaN under max/min): gather the group's values and fold them in group order
        buf = np.empty((comm.size,) + x.shape, x.dtype)
        with _mpi.internal("stablehlo.all_reduce", "allgather of the group's values", comm):
            comm.Allgather(x, buf)
        fn = self._region_fn(op.regions[0], True, env)
        acc = buf[0]
        for y in buf[1:]:
            acc = np.asarray(fn(acc, y)[0])
        return acc

    # -- global-view ops -----------------------------------------------------------------------------------
    def _global_op(self, op, vals, env):
        DT = DistributedTensor
        name = op.name
        if name in ("sdy.sharding_constraint", "sdy.reshard"):
            ts = sharding_attr(op, "sharding")
            if name == "sdy.sharding_constraint" and _unconstrained(ts):
                return [vals[0]]  # every dim open and unsplit ({?}): the value may stay as it is laid out
            return [self.to_sharding(vals[0], ts, op)]
        if name in _SDY_COLLECTIVES:
            # in global view every sdy collective keeps the value and changes its layout to out_sharding
            return [self.to_sharding(vals[0], sharding_attr(op, "out_sharding").without_unreduced(), op)]
        if name == "sdy.manual_computation":
            return self._manual(op, vals, env)
        if name in _HLO_COLLECTIVES and self._ctx:
            return self._hlo_collective_sharded(op, vals, env)
        if name in _HLO_COLLECTIVES:
            groups = self._groups(op)
            if self.comm.size > 1 and (not groups or any(len(g) > 1 for g in groups)):
                raise MLIRError(f"{op.location}: '{name}' outside an sdy.manual_computation over a group of more "
                                "than one device: a global program has no per-device values to exchange")
            # JAX inlines a shard_map body on a 1-device mesh: a collective over single-device groups is the identity
            return [self.whole(v) for v in vals]
        if (name == "stablehlo.broadcast_in_dim" and not isinstance(vals[0], (DT, _Splat)) and np.ndim(vals[0]) == 0
                and self._elementwise_users_only(op.results[0])):
            # a scalar broadcast that only elementwise ops read stays a scalar (not a block of copies)
            return [_Splat(vals[0], op.results[0].type.shape)]
        if not any(isinstance(v, (DT, _Splat, _LazySlice, _Deferred)) for v in vals):
            return self._local_op(op, vals, env)
        t = op.results[0].type if op.results else None
        if name in H.ELEMENTWISE or name in ("stablehlo.compare", "stablehlo.select", "stablehlo.convert",
                                            "stablehlo.clamp"):
            return self._elementwise(op, vals)
        if name == "stablehlo.broadcast_in_dim":
            x = vals[0]
            if isinstance(x, _Splat) or (not isinstance(x, DT) and np.ndim(x) == 0):
                return [_Splat(x.value if isinstance(x, _Splat) else x, t.shape)]
            return [self._broadcast(op, x)]
        if name == "stablehlo.reshape" and isinstance(vals[0], DT):
            # straight to the result's sharding: one exchange of what changes owner, never a gather
            return [vals[0].reshape(t.shape, sharding=self._result_sharding(op))]
        if name == "stablehlo.transpose" and isinstance(vals[0], DT):
            return [vals[0].transpose(*H._attr_ints(op, "permutation"))]
        if name == "stablehlo.slice" and isinstance(vals[0], DT):
            starts, limits = H._attr_ints(op, "start_indices"), H._attr_ints(op, "limit_indices")
            strides = H._attr_ints(op, "strides")
            if all(c == 1 for c in strides):
                return [_LazySlice(vals[0], starts, limits)]
            return [vals[0][tuple(slice(a, b, c) for a, b, c in zip(starts, limits, strides))]]
        if name == "stablehlo.reverse" and isinstance(vals[0], DT):
            dims = H._attr_ints(op, "dimensions")
            return [np.flip(vals[0], axis=dims) if dims else vals[0]]
        if name == "stablehlo.concatenate":
            dim = int(op.attributes["dimension"])
            shift = _roll_of(vals, dim)
            if shift is not None:
                src = vals[0].src
                r = np.roll(src, shift, axis=dim)
                return [_Deferred(r, src.sharding, src.global_shape, src.dtype) if self._defers(r) else r]
            vals = [v.take() if isinstance(v, (_LazySlice, _Deferred)) else v for v in vals]
            if not any(isinstance(v, (DT, _Splat)) for v in vals):
                return self._local_op(op, vals, env)
            return [np.concatenate([self._as_dt(v, vals) for v in vals], axis=dim)]
        if name == "stablehlo.dot_general":
            a, b = (self._as_dt(v, vals) for v in vals)
            sub = H.dot_general_subscripts(op)
            if self.trace is not None:
                from ...linalg.matmul import explain_einsum

                plan = explain_einsum(sub, (a.global_shape, a.sharding), (b.global_shape, b.sharding))
                steps = "; ".join(str(st) for _, st in plan.collectives()) or "no communication"
                self.count(f"einsum {sub!r}: {steps}",
                           plan.elements_moved * a.dtype.itemsize)
            r = np.einsum(sub, a, b)
            dt = H.np_dtype(t)
            return [r if r.dtype == dt else r.astype(dt)]
        if name in ("stablehlo.gather", "stablehlo.scatter"):
            from .index import run_index_op  # each process answers for the rows it owns

            r = run_index_op(self, op, vals, env, _Splat)
            if r is not None:
                return r
        if name == "stablehlo.reduce" and len(vals) == 2 and isinstance(vals[0], DT):
            kind = H.simple_reduction(op.regions[0])
            if kind is not None:
                x, init = vals
                dims = H._attr_ints(op, "dimensions")
                axes = sorted({a for d in dims for a in x.sharding.dim_axes(d)})
                r = getattr(x, kind)(axis=dims if len(dims) != x.ndim else None)
                if axes:  # what a ring all-reduce of each process's partial result sends, over all processes
                    k = int(np.prod([x.mesh.shape[a] for a in axes]))
                    n = r.interior.size if isinstance(r, DT) else np.size(r)
                    self.count(f"all_reduce({kind}) over mesh axes {[x.mesh.axis_names[a] for a in axes]} "
                               f"of {n} elements per process", self.comm.size * 2 * (k - 1) * n * x.dtype.itemsize // k)
                r = self._elementwise_fn(H._NP_REDUCE[kind], [r, np.asarray(init)], H.np_dtype(t))
                return [r]
        if (name == "stablehlo.reduce" and len(vals) == 4 and isinstance(vals[0], DT)
                and len(H._attr_ints(op, "dimensions")) == 1 and self._is_argmax(op, env)
                and np.all(np.asarray(self.whole(vals[2])) == -np.inf) and np.all(np.asarray(self.whole(vals[3])) == 0)):
            # jnp.argmax: (values, iota) folded by max with the lower index on ties -> DistributedTensor.argmax
            x, axis = vals[0], H._attr_ints(op, "dimensions")[0]
            idx = x.argmax(axis=axis)
            t0, t1 = (H.np_dtype(r.type) for r in op.results)
            return [self._elementwise_fn(lambda a: a, [x.max(axis=axis)], t0),
                    self._elementwise_fn(lambda a: a, [idx], t1)]
        if name == "stablehlo.reduce" and any(isinstance(v, DT) for v in vals[:len(vals) // 2]):
            return self._reduce_on_shards(op, vals, env)
        if name == "stablehlo.reduce_window" and len(vals) == 2 and isinstance(vals[0], DT):
            axis = _cumulative_axis(op, vals[0].global_shape)
            if axis is not None and np.all(np.asarray(self.whole(vals[1])) == 0):
                # jnp.cumsum: a prefix sum along one (maybe split) dim, in the operand's type (as StableHLO)
                return [vals[0].cumsum(axis=axis, dtype=vals[0].dtype)]
        if name in _window.SHARDED_OPS:  # pad, dynamic_(update_)slice, reduce_window, sort on the shards
            res = _window.run_global(self, op, vals, env)
            if res is not None:
                return res
        # no sharded implementation: run on the gathered operands; the result is replicated
        self.fallbacks.append((op, "computed on gathered operands"))
        return self._local_op(op, [self.whole(v) for v in vals], env)

    def _reduce_on_shards(self, op, vals, env):
        """``reduce`` with any body on split operands: each process folds its blocks over the
        reduced dims (from their first element, so the initial values enter once), the groups
        across the reduced dims' mesh axes gather the folds (one per process, the size of its
        result block) and fold them in shard order, then with the initial values.  StableHLO
        leaves the order of a reduction's combinations to the implementation; this one folds each
        block in order, then the blocks in order."""
        from ... import collectives

        DT = DistributedTensor
        n = len(vals) // 2
        xs, inits = vals[:n], [np.asarray(self.whole(v)) for v in vals[n:]]
        ref = next(v for v in xs if isinstance(v, DT))
        xs = [v if isinstance(v, DT) and v.sharding == ref.sharding else self._as_dt(self.whole(v), [ref]).reshard(
            ref.sharding) for v in xs]
        dims = tuple(sorted(H._attr_ints(op, "dimensions")))
        body = self._region_fn(op.regions[0], True, env)
        keep = [d for d in range(ref.ndim) if d not in dims]
        blocks = [np.moveaxis(x.interior, dims, range(len(keep), ref.ndim)) for x in xs]
        kept = blocks[0].shape[:len(keep)]
        flat = [b.reshape(kept + (-1,)) for b in blocks]
        have = flat[0].shape[-1] > 0
        accs = [f[..., 0] for f in flat] if have else [np.zeros(kept, f.dtype) for f in flat]
        for k in range(1, flat[0].shape[-1]):
            accs = [np.asarray(a) for a in body(*accs, *[f[..., k] for f in flat])]
        axes = [a for d in dims for a in ref.sharding.dim_axes(d)]
        if axes:  # fold the group's partial results in shard order
            with _mpi.internal("stablehlo.reduce", "all_gather of partial results", self.comm):
                flags = collectives.all_gather(np.array([have], np.int8), ref.mesh, axes, 0)
                parts = [collectives.all_gather(np.array(a)[None], ref.mesh, axes, 0) for a in accs]
            k = len(flags)  # each process receives the k - 1 other partial results of its group
            self.count(f"all_gather of partial reduce results over mesh axes "
                       f"{[ref.mesh.axis_names[a] for a in axes]}",
                       sum(p.nbytes for p in parts) * (k - 1) // k * self.comm.size)
            have, accs = False, None
            for j in range(len(flags)):
                if flags[j]:
                    accs = [p[j] for p in parts] if not have else [np.asarray(a) for a in body(*accs, *[p[j] for p in parts])]
                    have = True
        dts = [H.np_dtype(r.type) for r in op.results]
        if have:
            out = [np.asarray(a) for a in body(*[np.broadcast_to(i, kept) for i in inits], *accs)]
        else:
            out = [np.broadcast_to(i, kept) for i in inits]
        out = [np.array(o, dtype=dt) for o, dt in zip(out, dts)]  # a copy in C order (0-d stays 0-d)
        if not keep:
            return out
        s = Sharding(ref.mesh, [list(ref.sharding.dim_axes(d)) for d in keep])
        shape = tuple(ref.global_shape[d] for d in keep)
        return [DT(o, s, shape) if any(s.split_axes) else o for o in out]

    def _result_sharding(self, op) -> Sharding | None:
        """The sharding ``op``'s first result gets after it runs (its ``sdy.sharding``, else the
        propagated one); None where it is replicated or unknown."""
        if op.attributes.get("sdy.sharding") is not None:
            ts = shardings_attr(op, "sdy.sharding")[0]
        else:
            ts = self._prop.get(op.results[0])
        return None if ts is None else self.sharding(ts.without_unreduced())

    def _is_argmax(self, op, env):
        """Whether a two-operand ``reduce`` is numpy's argmax (NaN counts as the largest, ties go to the
        lower index) over an ``iota`` of the reduced dim, with -inf / 0 as initial values: its body is
        tried on probes rather than matched as text."""
        key = ("argmax", op)
        if key in self._checked:
            return self._checked_argmax[op]
        (dim,) = H._attr_ints(op, "dimensions")
        iota = self._defining.get(op.operands[1]) if hasattr(self, "_defining") else None
        ok = (iota is not None and iota.name == "stablehlo.iota" and int(iota.attributes["iota_dimension"]) == dim
              and op.operands[0].type.element.is_float)
        if ok:
            fn = self._region_fn(op.regions[0], True, env)
            probes = np.array([[2, 5, 5, 1], [1, np.nan, 3, np.nan], [-np.inf, -np.inf, 0, 0]])
            dt = H.np_dtype(op.operands[0].type)
            it = H.np_dtype(op.operands[1].type)
            init = (np.asarray(-np.inf, dt), np.asarray(0, it))
            try:
                got = H.reduce_with([probes.astype(dt), np.broadcast_to(np.arange(4, dtype=it), (3, 4))], init, (1,),
                                    fn)
                ok = (np.array_equal(got[1], np.argmax(probes, axis=1))
                      and np.array_equal(got[0], np.max(probes, axis=1), equal_nan=True))
            except (MLIRError, ValueError, TypeError, IndexError):
                ok = False
        self._checked.add(key)
        self._checked_argmax[op] = ok
        return ok

    def _as_dt(self, v, vals):
        DT = DistributedTensor
        if isinstance(v, DT):
            return v
        if isinstance(v, _Splat):
            v = v.full()
        ref = next(x for x in vals if isinstance(x, DT))
        return DT.from_global(np.ascontiguousarray(v), Sharding(ref.mesh, [[] for _ in range(np.ndim(v))]))

    def _elementwise_users_only(self, value) -> bool:
        """Whether every op that reads ``value`` is elementwise (each takes a `_Splat` as it is)."""
        if self._users is None:
            self._users = {}
            for o in self.module.walk():
                for v in o.operands:
                    self._users.setdefault(v, []).append(o)
        users = self._users.get(value, ())
        return bool(users) and all(o.name in H.ELEMENTWISE or o.name in _DEFERRED_UFUNCS for o in users)

    def _defers(self, r):
        """Whether ``r`` is a deferred expression to keep as one (not under ``explain``, which
        counts each op's moves as it runs)."""
        from ...tensor.lazy import LazyTensor

        return isinstance(r, LazyTensor) and self.on_result is None and self.trace is None

    def _deferred_to(self, r, ts, op):
        """A `_Deferred` result where ``ts`` is the layout it has, else evaluated and moved there."""
        return r if self.sharding(ts) == r.sharding else self.to_sharding(r.take(), ts, op)

    def _deferred_elementwise(self, op, vals):
        """``op`` as a deferred numpy ufunc (`_Deferred`) when it is one of `_DEFERRED_UFUNCS` on
        operands of one layout and the result's dtype, or scalars; else None."""
        DT = DistributedTensor
        uf = _DEFERRED_UFUNCS.get(op.name)
        dt = H.np_dtype(op.results[0].type)
        if uf is None or (uf is np.divide and dt.kind != "f"):
            return None
        layout, args = None, []
        for v in vals:
            if isinstance(v, _Splat) and v.value.ndim == 0 and v.dtype == dt:
                args.append(v.value[()])
                continue
            if isinstance(v, _Deferred):
                here = (v.sharding, v.global_shape, v.dtype)
                args.append(v.value)
            elif type(v) is DT:
                here = (v.sharding, tuple(v.global_shape), v.dtype)
                args.append(v)
            else:
                return None
            if here[2] != dt or (layout is not None and here[:2] != layout[:2]):
                return None
            layout = here
        if layout is None:
            return None
        r = uf(*args)
        return _Deferred(r, layout[0], layout[1], dt) if self._defers(r) else r

    def _elementwise(self, op, vals):
        r = self._deferred_elementwise(op, vals)
        if r is not None:
            return [r]
        vals = [v.take() if isinstance(v, _Deferred) else v for v in vals]
        fn = H.local_function(op)
        return [self._elementwise_fn(lambda *xs: fn(*xs)[0], vals, H.np_dtype(op.results[0].type))]

    def _elementwise_fn(self, fn, vals, dtype):
        DT = DistributedTensor
        ref = next((v for v in vals if isinstance(v, DT)), None)
        if ref is None:  # splats and replicated arrays only
            shape = next((v.shape for v in vals if isinstance(v, _Splat)), None)
            xs = [v.value if isinstance(v, _Splat) else v for v in vals]
            r = np.asarray(fn(*xs)).astype(dtype, copy=False)
            return _Splat(r, shape) if r.ndim == 0 and shape is not None else r
        blocks = []
        for v in vals:
            if isinstance(v, DT):
                if v.sharding != ref.sharding:
                    v = v.reshard(ref.sharding)
                blocks.append(v.interior)
            elif isinstance(v, _Splat):
                blocks.append(v.value)
            elif np.ndim(v) == 0:
                blocks.append(np.asarray(v))
            else:
                blocks.append(np.asarray(v)[ref.shard_slices])
        r = np.ascontiguousarray(np.asarray(fn(*blocks)).astype(dtype, copy=False))
        if r.shape != ref.interior.shape:
            r = np.ascontiguousarray(np.broadcast_to(r, ref.interior.shape))
        return DT(r, ref.sharding, ref.global_shape)

    def _broadcast(self, op, x):
        """``broadcast_in_dim`` of a sharded operand: its split dims stay split in the result."""
        DT = DistributedTensor
        t = op.results[0].type
        dims = H._attr_ints(op, "broadcast_dimensions")
        if not isinstance(x, DT):
            return H.local_function(op)(np.asarray(x))[0]
        s = x.sharding
        split = [[] for _ in range(t.rank)]
        keep = []
        for i, d in enumerate(dims):
            axes = list(s.dim_axes(i)) if i < len(s.split_axes) else []
            if axes and x.global_shape[i] == t.shape[d]:
                split[d] = axes
                keep.append(i)
        if any(s.dim_axes(i) for i in range(x.ndim) if i not in keep and i < len(s.split_axes)):
            return H.local_function(op)(x.gather())[0]
        if not any(split):
            return H.local_function(op)(x.interior)[0]
        out_s = Sharding(s.mesh, split)
        local_shape = out_s.shard_shape(t.shape)
        block = x.interior
        shape = [1] * t.rank
        for i, d in enumerate(dims):
            shape[d] = block.shape[i]
        order = np.argsort(dims)
        b = np.transpose(block, order) if block.ndim > 1 else block
        r = np.ascontiguousarray(np.broadcast_to(b.reshape(shape), local_shape))
        return DT(r, out_s, t.shape)

    def _manual(self, op, vals, env):
        """``sdy.manual_computation``: the body runs on values local over the manual axes (with those of
        the enclosing manual computations) and, where free axes are left, in global view over them on
        the sub-mesh of this process's coordinates on the manual axes; else per process on its blocks."""
        DT = DistributedTensor
        ins, outs = shardings_attr(op, "in_shardings"), shardings_attr(op, "out_shardings")
        inner = parse_axis_list(str(op.attributes.get("manual_axes", "{}")), _where(op))
        outer_ctx = self._ctx
        ctx = outer_ctx | frozenset(inner)
        mesh_name = (ins or outs)[0].mesh if (ins or outs) else next(iter(self.mesh_attrs))
        sizes = self.mesh_attrs[mesh_name].sizes()
        local = all(n in ctx or s == 1 for n, s in sizes.items())
        body = op.regions[0].entry
        args = []
        for i, (v, s, a) in enumerate(zip(vals, ins, body.arguments)):
            v = self.to_sharding(v, s, op)
            blk = v.interior if isinstance(v, DT) else np.asarray(v)
            if not local:
                self._ctx = ctx
                try:
                    sh = self.sharding(s)
                finally:
                    self._ctx = outer_ctx
                if sh is not None:
                    blk = DT(blk, sh, a.type.shape)
            if tuple(blk.shape) != tuple(a.type.shape) and not (isinstance(blk, DT) and
                                                                tuple(blk.global_shape) == tuple(a.type.shape)):
                raise MLIRError(f"{_where(op)}: operand {i}: the local block has shape {blk.shape}, the body wants "
                                f"{a.type}")
            args.append(blk)
        self._ctx = ctx
        try:
            res = self._block(body, args, local, dict(env))
            if not local:  # the body's results as its out_shardings say over the free axes, then their blocks
                res = [self.to_sharding(r, s, op) for r, s in zip(res, outs)]
                res = [r.interior if isinstance(r, DT) else r for r in res]
        finally:
            self._ctx = outer_ctx
        out = []
        for r, s, rv in zip(res, outs, op.results):
            sh = self.sharding(s)
            r = _contiguous(self.whole(r) if isinstance(r, (_Splat, _Deferred)) else r)
            out.append(r if sh is None else DT(r, sh, rv.type.shape))
        return out


def _unconstrained(ts: TensorSharding) -> bool:
    """Whether every dim of ``ts`` is open and unsplit (``[{?}, {?}]``): a value may keep its layout."""
    return all(not d.closed and not d.axes for d in ts.dims)


def _contiguous(x):
    """``x`` as a C-contiguous array of its own rank (``np.ascontiguousarray`` makes a 0-d array 1-d)."""
    x = np.asarray(x)
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def run_sdy(module, name, arrays, comm=None, root=None) -> list:
    """Run ``@name`` of a Shardy module on global ``arrays``; the whole results on ``root`` (None: every
    process).  Meshes and communicators built for the run are freed at the end."""
    p = SdyProgram(module, comm)
    try:
        return [p.whole(v, root) for v in p.run(name, arrays)]
    finally:
        p.free()
