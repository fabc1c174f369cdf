"""What the ``shard`` ops compute on one process's values: the collectives call meshrt's
collectives with the dialect's device groups, ``update_halo`` meshrt's halo exchange, the index
queries the `Mesh` of the op's grid. Each handler takes the running program (`meshrt.mlir.interpreters.spmd`'s
`Program`: its meshes and per-program cache), the op and the values so far.

>>> import numpy as np
>>> from meshrt.mlir import parse
>>> from meshrt.mlir.interpreters.spmd import run_function
>>> m = parse('''shard.grid @g(shape = 1)
... func.func @f(%a: tensor<2xf64>) -> tensor<2xf64> {
...   %0 = shard.all_reduce %a on @g grid_axes = [0] reduction = max : tensor<2xf64> -> tensor<2xf64>
...   return %0 : tensor<2xf64>
... }''')
>>> run_function(m, "f", [np.arange(2.0)])[0]
array([0., 1.])
"""

from __future__ import annotations

import numpy as np

from ...runtime import mpi as _mpi
from ... import collectives as C
from ...errors import MLIRError
from ...halo import update_halo
from ...sharding.spec import Sharding
from ..ir import _static, memref_type
from .arith import _dtype

def _sharding(p, op, env, global_mode):
    dyn = iter([env[v] for v in op.operands])
    halos = _static(op.attributes.get("static_halo_sizes", ()), dyn)
    offsets = _static(op.attributes.get("static_sharded_dims_offsets", ()), dyn)
    mesh = p.mesh(op.attributes["grid"], op.location, abstract=global_mode)
    try:
        s = Sharding(mesh, op.attributes["split_axes"], halo_sizes=halos or None,
                     sharded_dims_offsets=offsets or None)
    except ValueError as e:
        raise MLIRError(f"{op.location}: 'shard.sharding': {e}") from None
    return [s]


def _shard(p, op, env):
    return [env[op.operands[0]]]  # un-partitioned: the global value is unchanged by a (re)sharding


def _get_sharding(p, op, env):
    """The sharding of the operand: that of the ``shard.shard`` defining it, else of the ``shard.shard``
    annotating it (a plain one before an ``annotate_for_users`` one), else fully replicated (what
    shard-partition makes of a value nothing annotates), on the module's first grid."""
    src = op.operands[0]
    users = []
    for fn in p.module.functions().values():
        for o in fn.walk():
            if o.name == "shard.shard" and src in o.results:
                return [env[o.operands[1]]]
            if o.name == "shard.shard" and o.operands and o.operands[0] is src:
                users.append(o)
    users.sort(key=lambda o: "annotate_for_users" in o.attributes)
    for o in users:
        if o.operands[1] in env:
            return [env[o.operands[1]]]
    r = p._const.get(op)
    if r is None:
        grids = list(p.module.grids())
        if not grids:
            raise MLIRError(f"{op.location}: 'shard.get_sharding' of a value nothing annotates, in a module "
                            "without a shard.grid: no grid to replicate it on")
        r = p._const[op] = [Sharding(p.mesh(grids[0], op.location, abstract=True), [])]
    return r


def _axes(op, key="grid_axes"):
    return op.attributes.get(key, ())


def _mesh(p, op):
    return p.mesh(op.attributes["grid"], op.location)


def _multi(op, key, env, first=1):
    it = iter([env[v] for v in op.operands[first:]])
    return _static(op.attributes[key], it)


def _piece_sizes(op, x, mesh, axes, axis):
    """The group's piece sizes along ``axis`` when the operand's type leaves that dim dynamic
    (shard-partition's form for an unevenly split dim), else None: meshrt's default is the
    dialect's equal pieces, which a static type guarantees."""
    if op.operands[0].type.shape[axis] is not None or not axes:
        return None
    with _mpi.internal(op.name, "exchange of piece sizes", (mesh, axes)):
        sizes = mesh.group(axes).allgather(x.shape[axis])
    return sizes if len(set(sizes)) > 1 else None


def _all_gather(p, op, env):
    x, mesh, axes, axis = env[op.operands[0]], _mesh(p, op), _axes(op), int(op.attributes["gather_axis"])
    return [C.all_gather(x, mesh, axes, axis, sizes=_piece_sizes(op, x, mesh, axes, axis))]


def _all_reduce(p, op, env):
    x = env[op.operands[0]]
    dt = _dtype(op.results[0].type)
    return [C.all_reduce(x, _mesh(p, op), _axes(op), op.attributes.get("reduction", "sum"),
                         dtype=None if dt == x.dtype else dt)]


def _all_slice(p, op, env):
    return [C.all_slice(env[op.operands[0]], _mesh(p, op), _axes(op), int(op.attributes["slice_axis"]))]


def _all_to_all(p, op, env):
    x, mesh, axes = env[op.operands[0]], _mesh(p, op), _axes(op)
    sa, ca = int(op.attributes["split_axis"]), int(op.attributes["concat_axis"])
    # A dynamic concat dim may differ across the group (an unevenly split dim, as
    # shard-partition makes at 4 processes for 10 rows); meshrt's all_to_all wants
    # equal shapes, so gather the pieces whole and keep this device's slice then.
    sizes = _piece_sizes(op, x, mesh, axes, ca)
    if sizes is not None:
        return [np.ascontiguousarray(C.all_slice(C.all_gather(x, mesh, axes, ca, sizes=sizes), mesh, axes, sa))]
    return [C.all_to_all(x, mesh, axes, sa, ca)]


def _reduce_scatter(p, op, env):
    return [C.reduce_scatter(env[op.operands[0]], _mesh(p, op), _axes(op), op.attributes.get("reduction", "sum"),
                             int(op.attributes["scatter_axis"]))]


def _broadcast(p, op, env):
    return [C.broadcast(env[op.operands[0]], _mesh(p, op), _axes(op), _multi(op, "root", env))]


def _undefined_like(op, x, dt):
    t = op.results[0].type
    shape = t.shape if t.is_static else x.shape
    return np.zeros(shape, dt)


def _gather(p, op, env):
    x, mesh, axes, axis = env[op.operands[0]], _mesh(p, op), _axes(op), int(op.attributes["gather_axis"])
    r = C.gather(x, mesh, axes, axis, _multi(op, "root", env), sizes=_piece_sizes(op, x, mesh, axes, axis))
    return [r if r is not None else _undefined_like(op, x, x.dtype)]  # non-root: undefined in the dialect


def _reduce(p, op, env):
    x = env[op.operands[0]]
    dt = _dtype(op.results[0].type)
    r = C.reduce(x, _mesh(p, op), _axes(op), op.attributes.get("reduction", "sum"), _multi(op, "root", env),
                 dtype=None if dt == x.dtype else dt)
    return [r if r is not None else _undefined_like(op, x, dt)]


def _scatter(p, op, env):
    return [C.scatter(env[op.operands[0]], _mesh(p, op), _axes(op), int(op.attributes["scatter_axis"]),
                      _multi(op, "root", env))]


def _send(p, op, env):
    x = env[op.operands[0]]
    if _axes(op):  # over no grid axes the group is the device alone: nothing moves (as MLIR folds it)
        C.send(x, _mesh(p, op), _axes(op), _multi(op, "destination", env))
    return [x]


def _recv(p, op, env):
    if not _axes(op):
        return [env[op.operands[0]]]
    if "source" not in op.attributes:
        raise MLIRError(f"{op.location}: 'shard.recv' without a source cannot run (meshrt receives from one device)")
    x = env[op.operands[0]]
    return [C.recv(x, _mesh(p, op), _axes(op), _multi(op, "source", env))]


def _shift(p, op, env):
    return [C.shift(env[op.operands[0]], _mesh(p, op), _axes(op), int(op.attributes["shift_axis"]),
                    int(op.attributes["offset"]), rotate="rotate" in op.attributes)]


def _update_halo(p, op, env):
    dest = env[op.operands[0]]
    x = np.array(dest, order="C")  # a tensor: SSA, the operand keeps its value
    halos = _multi(op, "static_halo_sizes", env)
    r = update_halo(x, _mesh(p, op), [list(a) for a in op.attributes["split_axes"]], halos)
    if memref_type(op.operands[0].type) is not None:  # a memref is updated in place; the result is it
        dest[...] = r
        return [dest]
    return [r]


def _per_program(fn):
    """For ops whose results depend only on the op and the program (index queries): compute once."""
    def run(p, op, env):
        r = p._const.get(op)
        if r is None:
            r = p._const[op] = fn(p, op, env)
        return r
    return run


@_per_program
def _process_multi_index(p, op, env):
    m = _mesh(p, op)
    axes = _axes(op, "axes") or tuple(range(m.ndim))
    return [np.int64(m.coords[a]) for a in axes]


@_per_program
def _process_linear_index(p, op, env):
    return [np.int64(_mesh(p, op).rank)]


@_per_program
def _grid_shape_op(p, op, env):
    m = _mesh(p, op)
    axes = _axes(op, "axes") or tuple(range(m.ndim))
    return [np.int64(m.shape[a]) for a in axes]


def _neighbors(p, op, env):
    m = _mesh(p, op)
    device = tuple(int(env[v]) for v in op.operands)
    down, up = m.neighbors(list(op.attributes["split_axes"]), device)
    return [np.int64(down), np.int64(up)]


def _shard_shape(p, op, env):
    seg = op.attributes["operandSegmentSizes"]
    vals = [env[v] for v in op.operands]
    dims = _static(op.attributes["dims"], iter(vals[: seg[0]]))
    s = vals[seg[0]]
    device = _static(op.attributes["device"], iter(vals[seg[0] + 1:]))
    key = (s, dims, device)
    r = p._const.get(key)
    if r is None:
        m = s.mesh
        lin = m.linear_index(device) if len(device) == m.ndim else int(device[0])
        r = p._const[key] = [np.int64(n) for n in s.local_shape(dims, lin)]  # MLIR's includes the halos
    return r


# op name -> handler(program, op, env) -> list of results (shard.sharding's takes the global mode too)
HANDLERS = {
    "shard.sharding": _sharding, "shard.shard": _shard, "shard.get_sharding": _get_sharding,
    "shard.all_gather": _all_gather, "shard.all_reduce": _all_reduce, "shard.all_slice": _all_slice,
    "shard.all_to_all": _all_to_all, "shard.reduce_scatter": _reduce_scatter, "shard.broadcast": _broadcast,
    "shard.gather": _gather, "shard.reduce": _reduce, "shard.scatter": _scatter, "shard.send": _send,
    "shard.recv": _recv, "shard.shift": _shift, "shard.update_halo": _update_halo,
    "shard.process_multi_index": _process_multi_index, "shard.process_linear_index": _process_linear_index,
    "shard.grid_shape": _grid_shape_op, "shard.neighbors_linear_indices": _neighbors,
    "shard.shard_shape": _shard_shape,
}
