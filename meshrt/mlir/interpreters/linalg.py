"""The ``linalg`` ops, on numpy arrays.

The scalar ops of a body are `meshrt.mlir.interpreters.arith`'s (`SCALAR_OPS`, one template each that
is valid both for numpy and inside a Numba kernel).  `generic` compiles a ``linalg.generic`` (or any linalg
op given as maps + iterator types + body, which is how ``linalg.map``,
``linalg.reduce`` and bodies the fast paths do not know run) into a loop nest
in the order of its iteration dims, written to a cache file and compiled with
``@njit(cache=True)``, so a new process loads the machine code instead of
compiling it again.  Kernels are cached per structural key (the generated
source), so repeated calls and equal ops never recompile.

>>> import numpy as np
>>> from meshrt.mlir import parse
>>> from meshrt.mlir.interpreters.spmd import run_function
>>> m = parse('''func.func @f(%a: tensor<4xf64>) -> tensor<4xf64> {
...   %e = tensor.empty() : tensor<4xf64>
...   %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
...        iterator_types = ["parallel"]} ins(%a : tensor<4xf64>) outs(%e : tensor<4xf64>) {
...   ^bb0(%x: f64, %o: f64):
...     %y = math.exp %x : f64
...     linalg.yield %y : f64
...   } -> tensor<4xf64>
...   return %r : tensor<4xf64>
... }''')
>>> run_function(m, "f", [np.zeros(4)])[0]
array([1., 1., 1., 1.])
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
import sys
import tempfile

import numpy as np

from ...errors import MLIRError
from ..ir import AffineBinary, AffineConst, AffineDim, AffineMap, ScalarType, TensorType

__all__ = ["SCALAR_OPS", "LINALG_OPS", "scalar_function", "generic", "run_linalg", "cache_dir"]

from .arith import (  # noqa: F401  (SCALAR_OPS, scalar_function: meshrt.mlir.linalg's names, as before)
    SCALAR_OP_NAMES, SCALAR_OPS, _dtype_of, _fill, _np_name, _template, scalar_function,
)

# -- linalg.generic -> Numba ----------------------------------------------------------------------

def cache_dir() -> str:
    """Where generated kernel sources live (``$MESHRT_CACHE_DIR/mlir``, else ``~/.cache/meshrt/mlir``)."""
    base = os.environ.get("MESHRT_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "meshrt")
    path = os.path.join(base, "mlir")
    try:
        os.makedirs(path, exist_ok=True)
        if os.access(path, os.W_OK):
            return path
    except OSError:
        pass
    path = os.path.join(tempfile.gettempdir(), f"meshrt-mlir-{os.getuid() if hasattr(os, 'getuid') else 0}")
    os.makedirs(path, exist_ok=True)
    return path


def _affine_expr(e, loops) -> str:
    if isinstance(e, AffineDim):
        return loops[e.position]
    if isinstance(e, AffineConst):
        return str(e.value)
    if isinstance(e, AffineBinary):
        a, b = _affine_expr(e.lhs, loops), _affine_expr(e.rhs, loops)
        return {"+": f"({a} + {b})", "*": f"({a} * {b})", "mod": f"({a} % {b})",
                "floordiv": f"({a} // {b})", "ceildiv": f"(-((-{a}) // {b}))"}[e.op]
    raise MLIRError(f"affine expression {e}: symbols are not supported in linalg indexing maps")


class _Kernel:
    __slots__ = ("fn", "bounds", "reads_out", "zero_d", "source")


_KERNELS: dict = {}  # generated source -> _Kernel
_OP_KERNELS: dict = {}  # id(body block) -> (block, key, _Kernel)


def check_body(block, where) -> None:
    """Raise `MLIRError` naming the first op of a linalg body the kernel compiler cannot translate."""
    for op in block.operations:
        if op.name in ("linalg.yield", "linalg.index", "arith.constant"):
            continue
        if op.regions or op.name not in SCALAR_OP_NAMES:
            raise MLIRError(f"{op.location}: unsupported op '{op.name}' in the body of {where}")


def _build(maps, iterators, block, ins, outs, captured):
    """Python source of the loop nest for one linalg op (a pure function of the op's structure)."""
    nloops = len(iterators)
    loops = [f"i{d}" for d in range(nloops)]
    n_in = len(ins)
    params = [f"x{k}" for k in range(len(ins) + len(outs))] + [f"c{k}" for k in range(len(captured))]
    params += [f"n{d}" for d in range(nloops)]
    names = {}
    for k, arg in enumerate(block.arguments):
        names[arg] = f"b{k}"
    for k, v in enumerate(captured):
        names[v] = f"c{k}"
    lines = [f"def kernel({', '.join(params)}):"]
    ind = "    "
    for d in range(nloops):
        lines.append(f"{ind}for {loops[d]} in range(n{d}):")
        ind += "    "
    idx = []
    for k, m in enumerate(maps):
        if k < n_in and not isinstance(ins[k], np.ndarray):
            idx.append(None)  # a scalar operand: read directly
            continue
        exprs = [_affine_expr(e, loops) for e in m.results]
        idx.append(f"x{k}[{', '.join(exprs) if exprs else '0'}]")
    used = _used_values(block)
    for k, arg in enumerate(block.arguments):
        if arg in used:
            lines.append(f"{ind}b{k} = {idx[k] if idx[k] is not None else f'x{k}'}")
    tmp = 0
    for op in block.operations:
        if op.name == "linalg.yield":
            for k, v in enumerate(op.operands):
                lines.append(f"{ind}{idx[n_in + k]} = {names[v]}")
            continue
        out = f"t{tmp}"
        tmp += 1
        if op.name == "linalg.index":
            lines.append(f"{ind}{out} = {loops[op.attributes['dim']]}")
        elif op.name == "arith.constant":
            val = op.attributes["value"]
            lines.append(f"{ind}{out} = {_np_name(_dtype_of(op.results[0].type))}({val!r})")
        else:
            expr = _fill(_template(op, numba=True), op, [names[v] for v in op.operands])
            dt = _dtype_of(op.results[0].type)
            lines.append(f"{ind}{out} = {expr}" if dt == np.bool_ else f"{ind}{out} = {_np_name(dt)}({expr})")
        names[op.results[0]] = out
    return "\n".join(lines) + "\n"


def _used_values(block) -> set:
    used = set()
    for op in block.operations:
        used.update(op.operands)
    return used


def _load(source: str):
    digest = hashlib.sha256(source.encode()).hexdigest()[:20]
    path = os.path.join(cache_dir(), f"k_{digest}.py")
    text = "import numpy as np\nfrom numba import njit\n\n\n@njit(cache=True, nogil=True)\n" + source
    if not os.path.exists(path):
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)  # atomic: processes racing to write the same kernel all see a whole file
    name = f"meshrt_mlir_k_{digest}"
    mod = sys.modules.get(name)
    if mod is None:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # Numba's cache looks the module up by name when it loads
        spec.loader.exec_module(mod)
    return mod.kernel


def _bounds(maps, operands, nloops, where):
    """For every loop dim, (operand index, axis) of an operand dim that it indexes directly."""
    found = [None] * nloops
    for k, (m, x) in enumerate(zip(maps, operands)):
        if not isinstance(x, np.ndarray):
            continue
        for axis, e in enumerate(m.results):
            if isinstance(e, AffineDim) and found[e.position] is None:
                found[e.position] = (k, axis)
    missing = [d for d, f in enumerate(found) if f is None]
    if missing:
        raise MLIRError(f"{where}: cannot tell the size of loop dims {missing} from the operand shapes")
    return tuple(found)


def generic(maps, iterators, block, ins, outs, captured_values, captured, where="linalg.generic"):
    """Run a linalg op given by its indexing maps, iterator types and body; returns the new outs.

    ``ins``/``outs``: numpy arrays (scalars allowed in ``ins``); ``captured_values``:
    the SSA values defined outside the body that it uses, ``captured`` their
    runtime values.
    """
    n_in = len(ins)
    ops = list(ins) + list(outs)
    entry = _OP_KERNELS.get(id(block))
    # operand element types and ranks are fixed by the IR: one kernel per body block
    if entry is None or entry[0] is not block:
        types = tuple((x.dtype, x.ndim) if isinstance(x, np.ndarray) else type(x) for x in ops)
        source = _build(maps, iterators, block, ins, outs, captured_values)
        k = _KERNELS.get(source)
        if k is None:
            k = _Kernel()
            k.source = source
            k.fn = _load(source)
            k.bounds = _bounds(maps, ops, len(iterators), where)
            used = _used_values(block)
            k.reads_out = tuple(block.arguments[n_in + j] in used for j in range(len(outs)))
            k.zero_d = any(isinstance(x, np.ndarray) and x.ndim == 0 for x in ops)
            _KERNELS[source] = k
        entry = (block, types, k)
        _OP_KERNELS[id(block)] = entry
    k = entry[2]
    results = []
    for j, o in enumerate(outs):
        results.append(np.array(o, order="C") if k.reads_out[j] else np.empty(o.shape, o.dtype))
    if k.zero_d:
        args = [x.reshape(1) if isinstance(x, np.ndarray) and x.ndim == 0 else x for x in ins]
        args += [r.reshape(1) if r.ndim == 0 else r for r in results]
    else:
        args = [*ins, *results]
    sizes = [ops[i].shape[a] for i, a in k.bounds]
    k.fn(*args, *captured, *sizes)
    return results


# -- named linalg ops ------------------------------------------------------------------------------

_ELEMENTWISE = {
    "linalg.add": np.add, "linalg.sub": np.subtract, "linalg.mul": np.multiply,
    "linalg.max": np.maximum, "linalg.min": np.minimum, "linalg.powf": np.power,
    "linalg.exp": np.exp, "linalg.log": np.log, "linalg.abs": np.abs, "linalg.ceil": np.ceil,
    "linalg.floor": np.floor, "linalg.negf": np.negative, "linalg.sqrt": np.sqrt,
    "linalg.rsqrt": lambda x: 1 / np.sqrt(x), "linalg.square": np.square, "linalg.tanh": np.tanh,
    "linalg.reciprocal": np.reciprocal, "linalg.round": lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5),
    "linalg.erf": np.vectorize(math.erf), "linalg.select": np.where,
}
_REDUCE_COMBINERS = {"arith.addf": np.add, "arith.addi": np.add, "arith.mulf": np.multiply,
                     "arith.muli": np.multiply, "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
                     "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin, "arith.maxsi": np.maximum,
                     "arith.minsi": np.minimum, "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or,
                     "arith.xori": np.bitwise_xor}

LINALG_OPS = frozenset(["linalg.generic", "linalg.fill", "linalg.matmul", "linalg.batch_matmul",
                        "linalg.transpose", "linalg.broadcast", "linalg.reduce", "linalg.map",
                        "linalg.copy", "linalg.div", "linalg.div_unsigned", *_ELEMENTWISE])


def _segments(op):
    """(ins, outs) operand values: by operandSegmentSizes, else as many outs as results."""
    seg = op.attributes.get("operandSegmentSizes")
    if seg is None:  # linalg.reduce/map/transpose/broadcast: inits last, one per result
        n = len(op.results)
        return list(op.operands[: len(op.operands) - n]), list(op.operands[len(op.operands) - n:])
    return list(op.operands[: seg[0]]), list(op.operands[seg[0]: seg[0] + seg[1]])


def _is_plain_matmul(op) -> bool:
    maps = op.attributes.get("indexing_maps")
    if maps is None:
        return True
    pos = tuple(m.dim_positions() for m in maps)
    return pos in (((0, 2), (2, 1), (0, 1)), ((0, 1, 3), (0, 3, 2), (0, 1, 2)))


def _matmul(a, b, c, dt):
    a = a if a.dtype == dt else a.astype(dt)
    b = b if b.dtype == dt else b.astype(dt)
    if not c.any():  # outs from a zero fill (the usual case): one product, no extra pass
        return np.matmul(a, b)
    return c + np.matmul(a, b)


def _single_combiner(block):
    """The numpy ufunc of a reduce body ``yield combine(in, acc)``, else None."""
    ops = block.operations
    if len(ops) != 2 or ops[1].name != "linalg.yield" or ops[1].operands != [ops[0].results[0]]:
        return None
    f = _REDUCE_COMBINERS.get(ops[0].name)
    if f is None or set(ops[0].operands) != set(block.arguments) or len(block.arguments) != 2:
        return None
    return f


def _map_of(ndim, keep):
    return AffineMap(ndim, 0, tuple(AffineDim(d) for d in keep))


_SEGMENTS: dict = {}


def prepare(op, captured_of):
    """``run(env) -> results`` for one linalg op, with everything that depends only on the op
    (operand roles, fast path, dtypes) decided once.  ``captured_of(op, env)`` gives the
    body's outside values and their runtime values."""
    name = op.name
    ins_v, outs_v = _segments(op)
    if name == "linalg.fill" and len(ins_v) == 1 and isinstance(outs_v[0].type, TensorType):
        (a,), (o,), dt = ins_v, outs_v, _dtype_of(outs_v[0].type)
        if outs_v[0].type.is_static:
            shape = outs_v[0].type.shape
            return lambda env: (np.full(shape, env[a], dt),)
        return lambda env: (np.full(env[o].shape, env[a], dt),)
    if name in ("linalg.matmul", "linalg.batch_matmul") and _is_plain_matmul(op) and len(ins_v) == 2:
        (a, b), (c,), dt = ins_v, outs_v, _dtype_of(outs_v[0].type)
        return lambda env: (_matmul(env[a], env[b], env[c], dt),)
    return lambda env: run_linalg(op, env.__getitem__, lambda o: captured_of(o, env))


def run_linalg(op, env_get, captured_of):
    """Execute a linalg op: ``env_get(value)`` reads operands; returns the result arrays."""
    name = op.name
    seg = _SEGMENTS.get(op)
    if seg is None:
        seg = _SEGMENTS[op] = _segments(op)
    ins_v, outs_v = seg
    ins = [env_get(v) for v in ins_v]
    outs = [env_get(v) for v in outs_v]
    if name == "linalg.fill":
        o = outs[0]
        return [np.full(np.shape(o), ins[0], dtype=_dtype_of(outs_v[0].type))]
    if name in ("linalg.matmul", "linalg.batch_matmul") and _is_plain_matmul(op):
        return [_matmul(ins[0], ins[1], outs[0], outs[0].dtype)]
    if name == "linalg.transpose":
        return [np.ascontiguousarray(np.transpose(ins[0], op.attributes["permutation"]))]
    if name == "linalg.broadcast":
        dims = op.attributes["dimensions"]
        shape = outs[0].shape
        src = np.expand_dims(ins[0], tuple(dims)) if dims else ins[0]
        return [np.ascontiguousarray(np.broadcast_to(src, shape))]
    if name == "linalg.copy":
        return [np.array(ins[0], dtype=outs[0].dtype)]
    if name in _ELEMENTWISE and all(isinstance(x, np.ndarray) for x in ins):
        r = _ELEMENTWISE[name](*ins)
        return [np.asarray(r, dtype=outs[0].dtype)]
    if name == "linalg.reduce":
        dims = tuple(op.attributes["dimensions"])
        block = op.regions[0].entry
        f = _single_combiner(block)
        if f is not None and len(ins) == 1:
            r = f.reduce(ins[0], axis=dims) if dims else ins[0]
            return [np.asarray(f(outs[0], r), dtype=outs[0].dtype)]
        nd = ins[0].ndim
        maps = [_map_of(nd, range(nd))] * len(ins) + [_map_of(nd, [d for d in range(nd) if d not in dims])] * len(outs)
        iters = tuple("reduction" if d in dims else "parallel" for d in range(nd))
        return _generic_body(op, maps, iters, ins, outs, captured_of)
    if name == "linalg.map":
        nd = outs[0].ndim
        block = op.regions[0].entry
        # linalg.map's body takes only the ins; give the kernel an unused out argument
        maps = [_map_of(nd, range(nd))] * (len(ins) + 1)
        return _generic_body(op, maps, ("parallel",) * nd, ins, outs, captured_of, map_body=block)
    # linalg.generic, and named ops whose body the parser gives (matmul with transposed maps, div ...)
    maps = op.attributes.get("indexing_maps")
    if maps is None:
        nd = outs[0].ndim
        maps = [_map_of(nd, range(nd))] * (len(ins) + len(outs))
    iters = op.attributes.get("iterator_types")
    if iters is None:
        iters = _iterators_from_maps(maps, len(ins))
    return _generic_body(op, maps, tuple(iters), ins, outs, captured_of)


def _iterators_from_maps(maps, n_in):
    """Named ops carry no iterator types: a loop dim absent from every output map is a reduction."""
    nd = maps[0].dims
    out_dims = {e.position for m in maps[n_in:] for e in m.results if isinstance(e, AffineDim)}
    return tuple("parallel" if d in out_dims else "reduction" for d in range(nd))


def _generic_body(op, maps, iters, ins, outs, captured_of, map_body=None):
    block = op.regions[0].entry
    values, captured = captured_of(op)
    if map_body is not None and len(map_body.arguments) == len(ins):
        block = _with_out_argument(map_body, outs)
    return generic(maps, iters, block, ins, outs, values, captured, where=f"{op.location}: '{op.name}'")


_MAP_BLOCKS: dict = {}


def _with_out_argument(block, outs):
    """linalg.map's body has no argument for the output; a kernel body needs one (unused)."""
    from ..ir import Block, Value

    b = _MAP_BLOCKS.get(id(block))
    if b is None or b[0] is not block:
        extra = [Value(f"out{k}", ScalarType("f64")) for k in range(len(outs))]
        b = (block, Block(list(block.arguments) + extra, block.operations))
        _MAP_BLOCKS[id(block)] = b
    return b[1]


def body_captures(op) -> list:
    """The values a linalg body uses that are defined outside it, in order of first use."""
    inner = set()
    for region in op.regions:
        for block in region.blocks:
            inner.update(block.arguments)
            for o in block.operations:
                inner.update(o.results)
    seen, out = set(), []
    for region in op.regions:
        for block in region.blocks:
            for o in block.operations:
                for v in o.operands:
                    if v not in inner and v not in seen:
                        seen.add(v)
                        out.append(v)
    return out

