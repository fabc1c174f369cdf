"""Run a ``func.func`` of a parsed MLIR module on every MPI process.

Tensors are numpy arrays, one per process; scalars are numpy scalars
(``index`` is int64); ``!shard.sharding`` values are meshrt `Sharding` s.
A ``shard.grid`` becomes a `Mesh` over the communicator (``?`` axes resolved
from its size); the shard collectives call meshrt's collectives with the
dialect's device groups.  The same file runs un-partitioned too: there every
process holds whole tensors and ``shard.shard`` (a sharding annotation, or a
reshard between two annotations) leaves the global value as it is.

Before anything runs, `Program` verifies the module (`meshrt.mlir.dialects.shard.verify`)
and walks the function and every function it calls, raising `MLIRError`
(``file:line:col: unsupported op 'x.y'``) for the first op it cannot
execute, the same on every process.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%a: tensor<3xf64>) -> tensor<3xf64> {
...   %e = math.exp %a : tensor<3xf64>
...   return %e : tensor<3xf64>
... }''')
>>> [y] = run_function(m, "f", [np.zeros(3)])
>>> y
array([1., 1., 1.])
"""

from __future__ import annotations

import functools
import re

import numpy as np

from ...runtime import mpi as _mpi
from ...errors import MLIRError
from ...mesh import AbstractMesh, Mesh
from . import arith as A
from . import buffers as B
from . import linalg as L
from . import mpi as MP
from . import shard as S
from .arith import _dtype
from ..ir import (DYNAMIC, _static, AffineBinary, AffineConst, AffineDim, AffineMap, DenseElements, Module,
                  ScalarType, TensorType, memref_type)
from .tosa import TOSA_OPS, tosa_function
from ..dialects.shard import collective_result_dims, verify

__all__ = ["Program", "run_function", "check_function", "function_shardings", "is_partitioned"]

_TERMINATORS = frozenset(["func.return", "scf.yield", "scf.condition", "linalg.yield", "tensor.yield"])
_COMMUNICATING = frozenset([
    "shard.all_gather", "shard.all_reduce", "shard.all_slice", "shard.all_to_all", "shard.broadcast",
    "shard.gather", "shard.reduce", "shard.reduce_scatter", "shard.scatter", "shard.send", "shard.recv",
    "shard.shift", "shard.update_halo", "shard.process_multi_index", "shard.process_linear_index",
    "shard.neighbors_linear_indices",
])


# operand counts of the scalar ops (arith, math) the executor runs: the operands their templates name
_SCALAR_ARITY = {n: 1 + max(map(int, re.findall(r"\{(\d)\}", str(t))), default=0) for n, t in A.SCALAR_OPS.items()}
_SCALAR_ARITY.update({"arith.cmpi": 2, "arith.cmpf": 2})


def _mixed(op, key):
    return tuple(op.attributes.get(key, ()))


def _callee(op) -> str:
    c = getattr(op.attributes.get("callee"), "name", op.attributes.get("callee"))
    return c if isinstance(c, str) else str(c)  # not a symbol: named as written, found in no module


def _functions_reached(module: Module, name: str) -> list:
    funcs = module.functions()
    if name not in funcs:
        have = ", ".join(f"@{n}" for n in funcs) or "none"
        raise MLIRError(f"{module.filename}: no function @{name}; the module has {have}")
    order, todo = [], [name]
    while todo:
        n = todo.pop()
        if n in order:
            continue
        order.append(n)
        for op in funcs[n].walk():
            if op.name == "func.call":
                callee = _callee(op)
                if callee not in funcs:
                    raise MLIRError(f"{op.location}: 'func.call' calls @{callee}, which the module does not define")
                todo.append(callee)
    return [funcs[n] for n in order]


def is_partitioned(module: Module, name: str) -> bool:
    """True when the function (and its callees) holds no ``shard.shard``: per-process IR."""
    return not any(op.name == "shard.shard" for f in _functions_reached(module, name) for op in f.walk())


def check_function(module: Module, name: str) -> None:
    """Raise `MLIRError` at the first op of ``@name`` (or a callee) that cannot run."""
    for f in _functions_reached(module, name):
        if not f.regions or not f.regions[0].blocks:
            raise MLIRError(f"{f.location}: @{f.attributes.get('sym_name')} is a declaration (no body); it cannot run")
        _check_ops(f.regions[0].blocks, f.attributes.get("sym_name"))


def _check_ops(blocks, where):
    for block in blocks:
        for op in block.operations:
            if op.name == "shard.get_sharding" and len(op.operands) != 1:
                raise MLIRError(f"{op.location}: 'shard.get_sharding' takes one operand, found {len(op.operands)}")
            if (op.name not in _HANDLERS and op.name not in A.SCALAR_OP_NAMES and op.name not in L.LINALG_OPS
                    and op.name not in TOSA_OPS):
                raise MLIRError(f"{op.location}: unsupported op '{op.name}' (in @{where})")
            problem = _structure_problem(op)
            if problem:
                raise MLIRError(f"{op.location}: '{op.name}' {problem}")
            if op.name in TOSA_OPS:
                tosa_function(op)  # its attributes and element types, checked before anything runs
            if op.dialect in ("mpi", "memref", "bufferization"):
                problem = (MP.check_op if op.dialect == "mpi" else B.check_op)(op)
                if problem:
                    raise MLIRError(f"{op.location}: '{op.name}' {problem}")
            if op.name in L.LINALG_OPS:
                for r in op.regions:
                    for b in r.blocks:
                        L.check_body(b, f"'{op.name}' at {op.location}")
            elif op.name == "tensor.pad":
                for b in (b for r in op.regions for b in r.blocks):
                    for o in b.operations:
                        if o.name not in ("tensor.yield", "arith.constant"):
                            raise MLIRError(f"{o.location}: unsupported op '{o.name}' in a tensor.pad body "
                                            "(only a constant or outside value can be yielded)")
            else:
                for r in op.regions:
                    _check_ops(r.blocks, where)


def _is_int_tuple(v):
    return isinstance(v, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _structure_problem(op):
    """What the executor needs of an op's shape (operand counts, regions, attribute kinds) that the
    generic form can leave out, or None: said before the run, at the op."""
    name, a = op.name, op.attributes
    if name in A.SCALAR_OP_NAMES:
        want = _SCALAR_ARITY.get(name, 1)
        if len(op.operands) != want or len(op.results) != 1:
            return f"takes {want} operand(s) and gives 1 result, found {len(op.operands)} and {len(op.results)}"
    if name in L.LINALG_OPS:
        if len(op.regions) != 1 or not op.regions[0].blocks:
            return "needs its body region"
        maps = a.get("indexing_maps")
        if maps is not None and not (isinstance(maps, tuple) and all(isinstance(m, AffineMap) for m in maps)):
            return f"indexing_maps: expected an array of affine maps, found {maps!r}"
        iters = a.get("iterator_types")
        if iters is not None and not isinstance(iters, tuple):
            return f"iterator_types: expected an array, found {iters!r}"
        if not op.results and not op.operands:
            return "has no operands"
    if name == "tensor.pad":
        if len(op.regions) != 1 or not op.regions[0].blocks:
            return "needs its body region (the padding value)"
        for key in ("static_low", "static_high"):
            if not _is_int_tuple(a.get(key)):
                return f"{key}: expected an array of integers, found {a.get(key)!r}"
    return None


def _grid_shape(module, name, where):
    grids = module.grids()
    g = grids.get(name)
    if g is None:
        raise MLIRError(f"{where}: no shard.grid @{name} in the module")
    return tuple(-1 if s == DYNAMIC else int(s) for s in g.attributes["shape"])


class Program:
    """A checked module bound to a communicator; `run` executes a function.

    Meshes (and their group communicators) are built on first use and kept
    for later runs; `free` releases them.

    >>> prog = Program(module)                      # doctest: +SKIP
    >>> y, = prog.run("mlp", [x, w1, w2])           # doctest: +SKIP
    """

    def __init__(self, module: Module, comm=None):
        if comm is None:
            from mpi4py import MPI

            comm = MPI.COMM_WORLD
        verify(module)  # bad shard attributes: an error with the location, on every process alike
        self.module = module
        self.comm = comm
        self._meshes = {}
        self._checked = set()
        self._captures = {}
        self._plans = {}
        self._global_mode = {}
        self._const = {}
        self._mpi_comms = []  # communicators the program's mpi.comm_split made: freed after each run
        self._mpi_requests = []  # isend/irecv requests not yet waited for
        self._dlti = dlti_values(module)

    # -- meshes -------------------------------------------------------------------------------
    def mesh(self, grid, where="", abstract=False):
        """The `Mesh` of ``shard.grid @grid`` on this communicator (abstract: no processes)."""
        name = getattr(grid, "name", grid)
        key = (name, abstract)
        m = self._meshes.get(key)
        if m is None:
            shape = _grid_shape(self.module, name, where)
            if abstract:
                m = AbstractMesh(tuple(1 if s == -1 else s for s in shape), name=name)
            else:
                try:
                    m = Mesh(shape, comm=self.comm, name=name)
                except ValueError as e:
                    raise MLIRError(f"{where}: shard.grid @{name}: {e}") from None
            self._meshes[key] = m
        return m

    def free(self) -> None:
        """Free the meshes' group communicators and those the program split (collective)."""
        self.free_mpi()
        for m in self._meshes.values():
            if isinstance(m, Mesh):
                m.free()
        self._meshes.clear()

    def free_mpi(self) -> None:
        """Free the communicators the program's ``mpi.comm_split`` ops made (collective, in creation order)."""
        MP.finish_requests(self)
        comms, self._mpi_comms = self._mpi_comms, []
        for c in comms:
            with _mpi.internal("meshrt.mlir", "freeing a communicator the program split", c):
                c.Free()

    # -- running --------------------------------------------------------------------------------
    def run(self, name: str, args) -> list:
        """Run ``func.func @name`` on ``args`` (one per function argument); returns the results."""
        if name not in self._checked:
            check_function(self.module, name)
            _check_dlti(self.module, self._dlti, self.comm)
            self._checked.add(name)
        try:
            return self._call(name, list(args))
        finally:
            self.free_mpi()

    def _call(self, name, args):
        f = self.module.functions()[name]
        ftype = f.attributes["function_type"].type
        block = f.regions[0].entry
        if len(args) != len(block.arguments):
            raise MLIRError(f"{f.location}: @{name} takes {len(block.arguments)} arguments, got {len(args)}")
        vals = [_coerce(a, t, f, i) for i, (a, t) in enumerate(zip(args, ftype.inputs))]
        gm = self._global_mode.get(name)
        if gm is None:
            gm = self._global_mode[name] = not is_partitioned(self.module, name)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            return list(self._block(block, vals, {}, gm))

    def _block(self, block, args, env, global_mode=False):
        steps = self._plans.get((block, global_mode))
        if steps is None:
            steps = self._plans[(block, global_mode)] = [self._step(op, global_mode) for op in block.operations]
        for a, v in zip(block.arguments, args):
            env[a] = v
        for run, results in steps:
            if results is None:  # the terminator: its operands are the block's results
                return [env[v] for v in run]
            try:
                res = run(env)
            except MLIRError:
                raise
            except (ValueError, TypeError, IndexError, ArithmeticError) as e:  # meshrt's errors are ValueErrors
                op = block.operations[[s[0] for s in steps].index(run)]
                raise MLIRError(f"{op.location}: '{op.name}' failed on process {self.comm.rank}: "
                                f"{type(e).__name__}: {e}") from e
            for v, r in zip(results, res):
                env[v] = r
        return []

    def _step(self, op, gm):
        """``(run(env) -> results, result values)`` for one op; ``(operands, None)`` for a terminator."""
        name = op.name
        if name in _TERMINATORS:
            return op.operands, None
        h = _HANDLERS.get(name)
        if name == "shard.sharding" and not op.operands:
            cell = []  # static attributes: build the Sharding once

            def run(env):
                if not cell:
                    cell.append(S._sharding(self, op, env, gm))
                return cell[0]
        elif name in ("shard.sharding", "scf.if", "scf.for", "scf.while"):
            def run(env):
                return h(self, op, env, gm)
        elif h is not None and name in _COLLECTIVE_RESULTS and isinstance(op.operands[0].type, TensorType):
            def run(env):
                res = h(self, op, env)
                _check_collective_result(self, op, res[0])
                return res
        elif h is not None and name in _COLLECTIVE_RESULTS and op.results and memref_type(op.results[0].type):
            def run(env):  # a collective into a memref: the buffer's shape against its type
                res = h(self, op, env)
                B.check_buffer(op, res[0], op.results[0].type)
                return res
        elif h is not None:
            def run(env):
                return h(self, op, env)
        elif name in TOSA_OPS:
            fn, operands = tosa_function(op), tuple(op.operands)

            def run(env):
                return (fn(*[env[v] for v in operands]),)
        elif name in L.LINALG_OPS and B.is_buffer_op(op):
            run = B.linalg_on_buffers(op, self._captured)
        elif name in L.LINALG_OPS:
            run = L.prepare(op, self._captured)
        else:
            fn, operands = A.scalar_function(op), tuple(op.operands)
            if len(operands) == 2:
                a, b = operands

                def run(env):
                    return (fn(env[a], env[b]),)
            else:
                def run(env):
                    return (fn(*[env[v] for v in operands]),)
        return run, op.results

    def _captured(self, op, env):
        values = self._captures.get(op)
        if values is None:
            values = self._captures[op] = L.body_captures(op)
        return values, [env[v] for v in values]


def _coerce(a, t, f, i):
    where = f"{f.location}: @{f.attributes.get('sym_name')} argument {i}"
    if isinstance(t, TensorType):
        a = np.asarray(a)
        if a.ndim != t.rank or any(d is not None and d != n for d, n in zip(t.shape, a.shape)):
            raise MLIRError(f"{where}: expected {t}, got an array of shape {a.shape}")
        dt = _dtype(t)
        if a.dtype != dt:
            raise MLIRError(f"{where}: expected element type {t.element} ({dt}), got {a.dtype}")
        return a
    m = memref_type(t)
    if m is not None:  # a buffer: the caller's array itself, written through by the program
        if not isinstance(a, np.ndarray):
            raise MLIRError(f"{where}: expected a numpy array for {t}, got {type(a).__name__}")
        if a.ndim != m.rank or any(d is not None and d != n for d, n in zip(m.shape, a.shape)):
            raise MLIRError(f"{where}: expected {t}, got an array of shape {a.shape}")
        if a.dtype != _dtype(m):
            raise MLIRError(f"{where}: expected element type {m.element} ({_dtype(m)}), got {a.dtype}")
        return a
    if isinstance(t, ScalarType):
        if np.ndim(a) != 0:
            raise MLIRError(f"{where}: expected a scalar {t}, got an array of shape {np.shape(a)}")
        if not np.can_cast(np.asarray(a).dtype, _dtype(t), casting="same_kind"):
            raise MLIRError(f"{where}: expected a scalar {t} ({_dtype(t)}), got a {np.asarray(a).dtype} value")
        return _dtype(t).type(a)
    return a


_COLLECTIVE_RESULTS = frozenset(n for n in _COMMUNICATING if n not in (
    "shard.update_halo", "shard.process_multi_index", "shard.process_linear_index", "shard.neighbors_linear_indices"))


def _check_collective_result(p, op, r):
    """The dims of a collective's result against its type and the dialect's shape rule at the group
    size it ran on: a '?' in the type that the rule fixes (``tensor<3x6xi8> -> tensor<3x?xi8>``) is
    checked here, where the verifier could not know the size or left it to the run."""
    t = op.results[0].type
    if not isinstance(t, TensorType) or r is None:
        return
    _check_shape(op, r, t)
    if op.name in ("shard.gather", "shard.reduce"):
        return  # off the root the result is undefined (meshrt gives zeros)
    axes, mesh = S._axes(op), S._mesh(p, op)
    group = 1
    for a in axes:
        group *= mesh.shape[a]
    want = collective_result_dims(op, op.operands[0].type, group, uneven=True)
    for i, (w, got) in enumerate(zip(want, np.shape(r))):
        if w is not None and w != got:
            raise MLIRError(f"{op.location}: '{op.name}' result dimension {i} is {got} on process "
                            f"{p.comm.rank}; the dialect's rule gives {w} for input {op.operands[0].type} "
                            f"on a device group of {group}")


def _check_shape(op, r, t):
    if isinstance(t, TensorType):
        if r.ndim != t.rank or any(d is not None and d != n for d, n in zip(t.shape, r.shape)):
            raise MLIRError(f"{op.location}: '{op.name}' produced shape {r.shape} on this process, "
                            f"which its result type {t} does not allow")


# -- handlers: (program, op, env) -> list of results ---------------------------------------------------

def _affine_source(e) -> str:
    if isinstance(e, AffineDim):
        return f"d[{e.position}]"
    if isinstance(e, AffineConst):
        return str(e.value)
    if isinstance(e, AffineBinary):
        a, b = _affine_source(e.lhs), _affine_source(e.rhs)
        # Python's // and % floor like MLIR's floordiv/mod (whose divisor is positive)
        return {"+": f"({a} + {b})", "*": f"({a} * {b})", "mod": f"({a} % {b})",
                "floordiv": f"({a} // {b})", "ceildiv": f"(-((-{a}) // {b}))"}[e.op]
    return f"s[{e.position}]"


@functools.lru_cache(maxsize=None)
def affine_function(amap: AffineMap):
    """``f(dims, symbols) -> tuple of ints`` evaluating ``amap``, compiled once per map.

    >>> from meshrt.mlir import parse
    >>> m = parse('#m = affine_map<(d0)[s0] -> (d0 floordiv 2, s0 mod 3)>\\n"x.y"() {m = #m} : () -> ()')
    >>> affine_function(m.operations[0].attributes["m"])((7,), (-1,))
    (3, 2)
    """
    body = ", ".join(_affine_source(e) for e in amap.results)
    return eval(f"lambda d, s: ({body}{',' if len(amap.results) == 1 else ''})")  # noqa: S307 (our own text)


def _affine(p, op, env):
    amap = op.attributes["map"]
    vals = [int(env[v]) for v in op.operands]
    r = affine_function(amap)(vals[:amap.dims], vals[amap.dims:])
    if op.name == "affine.min":
        return [np.int64(min(r))]
    if op.name == "affine.max":
        return [np.int64(max(r))]
    return [np.int64(r[0])]


def _constant(p, op, env):
    v = op.attributes["value"]
    t = op.results[0].type
    if isinstance(v, DenseElements):
        return [v.array]
    return [_dtype(t).type(v)]


def _call(p, op, env):
    return p._call(_callee(op), [env[v] for v in op.operands])


def _scf_if(p, op, env, gm):
    cond = bool(env[op.operands[0]])
    region = op.regions[0] if cond else (op.regions[1] if len(op.regions) > 1 else None)
    if region is None or not region.blocks:
        return []
    return p._block(region.entry, [], env, gm)


def _scf_for(p, op, env, gm):
    lb, ub, step = (int(env[v]) for v in op.operands[:3])
    it = [env[v] for v in op.operands[3:]]
    block = op.regions[0].entry
    ivt = _dtype(block.arguments[0].type).type
    for i in range(lb, ub, step):
        it = p._block(block, [ivt(i), *it], env, gm)
    return it


def _scf_while(p, op, env, gm):
    before, after = op.regions[0].entry, op.regions[1].entry
    vals = [env[v] for v in op.operands]
    while True:
        out = p._block(before, vals, env, gm)  # ends in scf.condition(%cond, %values...)
        if not bool(out[0]):
            return out[1:]
        vals = p._block(after, out[1:], env, gm)


def _cast_through(p, op, env):
    if len(op.operands) != len(op.results):
        raise MLIRError(f"{op.location}: 'builtin.unrealized_conversion_cast' with {len(op.operands)} operands "
                        f"and {len(op.results)} results cannot run (only one-to-one casts)")
    return [env[v] for v in op.operands]


def _assert(p, op, env):
    if not bool(env[op.operands[0]]):
        raise MLIRError(f"{op.location}: 'cf.assert' failed on process {p.comm.rank}: {op.attributes.get('msg', '')}")
    return []


def _tensor_cast(p, op, env):
    x = env[op.operands[0]]
    _check_shape(op, x, op.results[0].type)
    return [x]


# tensor ------------------------------------------------------------------------------------------

def _result_shape(op, dyn):
    it = iter(dyn)
    return tuple(int(next(it)) if d is None else d for d in op.results[0].type.shape)


def _empty(p, op, env):
    # MLIR leaves its contents undefined; zeros (calloc: as cheap) make two runs of a program comparable
    t = op.results[0].type
    return [np.zeros(_result_shape(op, [env[v] for v in op.operands]) if op.operands else t.shape, _dtype(t))]


def _splat(p, op, env):
    shape = _result_shape(op, [env[v] for v in op.operands[1:]])
    return [np.full(shape, env[op.operands[0]], _dtype(op.results[0].type))]


def _from_elements(p, op, env):
    t = op.results[0].type
    return [np.array([env[v] for v in op.operands], dtype=_dtype(t)).reshape(t.shape)]


def _dim(p, op, env):
    return [np.int64(env[op.operands[0]].shape[int(env[op.operands[1]])])]


def _extract(p, op, env):
    x = env[op.operands[0]]
    return [x[tuple(int(env[v]) for v in op.operands[1:])]]


def _insert(p, op, env):
    dest = np.array(env[op.operands[1]])
    dest[tuple(int(env[v]) for v in op.operands[2:])] = env[op.operands[0]]
    return [dest]


def _slices(op, env, first):
    it = iter([env[v] for v in op.operands[first:]])
    offs = _static(op.attributes["static_offsets"], it)
    sizes = _static(op.attributes["static_sizes"], it)
    strides = _static(op.attributes["static_strides"], it)
    return tuple(slice(o, o + s * st, st) if s else slice(o, o) for o, s, st in zip(offs, sizes, strides)), sizes


def _drop_unit_dims(x, sizes, t):
    if x.ndim == t.rank:
        return x
    keep, j = [], 0
    for i, s in enumerate(sizes):
        if j < t.rank and (t.shape[j] is None or t.shape[j] == s) and not (s == 1 and x.ndim - i > t.rank - j):
            keep.append(s)
            j += 1
    return x.reshape(keep)


def _extract_slice(p, op, env):
    x = env[op.operands[0]]
    sl, sizes = _slices(op, env, 1)
    return [_drop_unit_dims(x[sl], sizes, op.results[0].type)]


def _insert_slice(p, op, env):
    src, dest = env[op.operands[0]], np.array(env[op.operands[1]])
    sl, sizes = _slices(op, env, 2)
    dest[sl] = np.reshape(src, tuple(len(range(s.start, s.stop, s.step)) for s in sl))
    return [dest]


def _pad(p, op, env):
    x = env[op.operands[0]]
    it = iter([env[v] for v in op.operands[1:]])
    low = _static(op.attributes["static_low"], it)
    high = _static(op.attributes["static_high"], it)
    body = op.regions[0].entry
    y = body.operations[-1].operands[0]
    if y in env:
        value = env[y]
    else:
        value = body.operations[[o.results[0] if o.results else None for o in body.operations].index(y)].attributes["value"]
    return [np.pad(x, list(zip(low, high)), constant_values=value)]


def _reassociated(op):
    return [tuple(g) for g in op.attributes["reassociation"]]


def _collapse(p, op, env):
    x = env[op.operands[0]]
    return [x.reshape([int(np.prod([x.shape[d] for d in g])) for g in _reassociated(op)])]


def _expand(p, op, env):
    x = env[op.operands[0]]
    it = iter([env[v] for v in op.operands[1:]])
    shape = _static(op.attributes["static_output_shape"], it)
    return [x.reshape(shape)]


def _concat(p, op, env):
    return [np.concatenate([env[v] for v in op.operands], axis=int(op.attributes["dim"]))]


_HANDLERS = {
    "arith.constant": _constant,
    "func.call": _call,
    "scf.if": _scf_if, "scf.for": _scf_for, "scf.while": _scf_while,
    "builtin.unrealized_conversion_cast": _cast_through,
    "tensor.cast": _tensor_cast, "tensor.empty": _empty, "tensor.splat": _splat,
    "tensor.from_elements": _from_elements, "tensor.dim": _dim, "tensor.extract": _extract,
    "tensor.insert": _insert, "tensor.extract_slice": _extract_slice, "tensor.insert_slice": _insert_slice,
    "tensor.pad": _pad, "tensor.collapse_shape": _collapse, "tensor.expand_shape": _expand,
    "tensor.concat": _concat,
    **S.HANDLERS,
    **B.HANDLERS,
    **MP.HANDLERS,
    "cf.assert": _assert,
    "affine.apply": _affine, "affine.min": _affine, "affine.max": _affine,
}
for _t in _TERMINATORS:
    _HANDLERS[_t] = None  # handled by the block runner; listed so the pre-pass accepts them


def run_function(module: Module, name: str, args, *, comm=None) -> list:
    """Run ``func.func @name`` of ``module`` on every process of ``comm`` (default COMM_WORLD).

    ``args``: this process's values (numpy arrays for tensors).  Returns the
    function's results on this process.  Meshes built for the run are freed
    at the end; use `Program` to run many times.
    """
    p = Program(module, comm)
    try:
        return p.run(name, args)
    finally:
        p.free()


# -- shardings of a global program's arguments and results --------------------------------------------

def function_shardings(program: Program, name: str):
    """``(args, results)``: the `Sharding` (or None: replicated) of every argument and
    result of the un-partitioned ``func.func @name``, read from its ``shard.shard`` ops.

    An argument's sharding is that of the ``shard.shard`` taking it (a plain
    one before an ``annotate_for_users`` one); a result's is that of the
    ``shard.shard`` defining the returned value.  Meshes come from ``program``.
    """
    f = program.module.functions().get(name)
    if f is None:
        _functions_reached(program.module, name)
    if not f.regions or not f.regions[0].blocks:
        raise MLIRError(f"{f.location}: @{name} is a declaration (no body); it names no shardings")
    block = f.regions[0].entry
    defs = {}
    for op in f.walk():
        for r in op.results:
            defs[r] = op

    def sharding_of(shard_op):
        s_op = defs.get(shard_op.operands[1])
        if s_op is None or s_op.name != "shard.sharding" or s_op.operands:
            raise MLIRError(f"{shard_op.location}: the sharding of a function argument or result must be "
                            "a shard.sharding with static attributes")
        return S._sharding(program, s_op, {}, False)[0]

    args = []
    for a in block.arguments:
        users = [op for op in block.operations if op.name == "shard.shard" and op.operands[0] is a]
        users.sort(key=lambda o: "annotate_for_users" in o.attributes)
        args.append(sharding_of(users[0]) if users else None)
    results = []
    for v in block.operations[-1].operands if block.operations else ():
        d = defs.get(v)
        results.append(sharding_of(d) if d is not None and d.name == "shard.shard" else None)
    return args, results


def local_parts(arrays, shardings) -> list:
    """Each process's part of every global argument: its block plus halos for a `Sharding`
    (interior halos hold the neighbours' values, boundary ones zeros), the whole array for None."""
    from ...tensor.distributed_tensor import DistributedTensor

    out = []
    for a, s in zip(arrays, shardings):
        if s is None or not isinstance(a, np.ndarray) or a.ndim == 0:
            out.append(a)
            continue
        t = DistributedTensor.from_global(a, s)
        if any(s.halo_sizes):
            t.update_halo()
        out.append(t.local)
    return out


def gather_results(results, shardings, comm, root=0) -> list:
    """The global value of every result on ``root`` (None elsewhere): sharded results are
    assembled from every process's owned block (halos dropped); others are taken from ``root``."""
    from ...tensor.distributed_tensor import DistributedTensor

    out = []
    for r, s in zip(results, shardings):
        if s is None or not isinstance(r, np.ndarray) or r.ndim == 0:
            out.append(r if comm.rank == root else None)
            continue
        shape = _global_shape(np.asarray(r), s, comm)
        t = DistributedTensor.from_local(np.ascontiguousarray(r), s, shape)
        out.append(t.gather(root=root))
    return out


def _global_shape(r, s, comm):
    """The global shape of a sharded result from every process's local shape (halos removed)."""
    owned = [n - sum(s.halo_widths(d)) for d, n in enumerate(r.shape)]
    with _mpi.internal("gather_results", "exchange of result shapes", comm):
        shapes = comm.allgather(tuple(owned))
    mesh = s.mesh
    out = []
    for d in range(r.ndim):
        axes = s.split_axes[d] if d < len(s.split_axes) else ()
        if not axes:
            out.append(owned[d])
            continue
        # sum the owned sizes along the dim over one group of the dim's split axes
        group = mesh.group_devices(axes, mesh.rank)
        out.append(sum(shapes[g][d] for g in group))
    return tuple(out)


# -- dlti: what a module says of the MPI world it was lowered for ---------------------------------------------

def dlti_values(module: Module) -> dict:
    """``{"MPI:comm_world_rank": 24, ...}``: the integer entries of the module's ``#dlti.map``
    attributes (``dlti = ...`` or ``mpi.dlti = ...``, as ``--convert-shard-to-mpi`` reads them)."""
    out = {}
    for key, v in module.attributes.items():
        if key.split(".")[-1] != "dlti" and not str(v).startswith("#dlti.map<"):
            continue
        text = str(v)
        for k, n in re.findall(r'"([^"]+)"\s*=\s*(-?\d+)(?:\s*:\s*\w+)?', text):
            out[k] = int(n)
    return out


def _check_dlti(module, dlti, comm):
    """A module lowered for one process of a world (``MPI:comm_world_rank``/``_size``) runs only there:
    every process learns where it does not hold (one allgather), and all raise the same error."""
    rank, size = dlti.get("MPI:comm_world_rank"), dlti.get("MPI:comm_world_size")
    if rank is None and size is None:
        return
    mine = (rank is not None and rank != comm.rank) or (size is not None and size != comm.size)
    with _mpi.internal("meshrt.mlir", "agreement on the module's dlti", comm):
        wrong = [r for r, bad in enumerate(comm.allgather(mine)) if bad]
    if wrong:
        said = ", ".join(f"{k} = {v}" for k, v in sorted(dlti.items()) if k in ("MPI:comm_world_rank", "MPI:comm_world_size"))
        raise MLIRError(f"{module.filename}: the module's dlti says {said}; it cannot run on process(es) "
                        f"{wrong} of a world of {comm.size} (each process needs the module lowered for it)")
