"""What the ``memref`` and ``bufferization`` ops compute: a memref is a numpy array, and every op
that MLIR defines as a view of a buffer (``subview``, ``cast``, ``collapse_shape``,
``expand_shape``, ``to_buffer ... read_only``) is a numpy view of it, so a write through one is
seen through the others (``memref.copy`` into a subview writes the buffer).  Tensors stay values:
``bufferization.to_tensor`` copies the buffer, ``to_buffer`` (writable) copies the tensor.
``memref.alloc``/``alloca`` give zeros (MLIR leaves them uninitialised); ``dealloc`` marks
nothing.  Linalg ops on memrefs (no results) write their outs in place: `linalg_on_buffers`.

>>> import numpy as np
>>> from meshrt.mlir import parse
>>> from meshrt.mlir.interpreters.spmd import run_function
>>> m = parse('''func.func @f(%m: memref<4xf64>, %v: f64) {
...   %s = memref.subview %m[1] [2] [1] : memref<4xf64> to memref<2xf64, strided<[1], offset: 1>>
...   linalg.fill ins(%v : f64) outs(%s : memref<2xf64, strided<[1], offset: 1>>)
...   return
... }''')
>>> x = np.zeros(4)
>>> run_function(m, "f", [x, 7.0]) == [] and x.tolist()
[0.0, 7.0, 7.0, 0.0]
"""

from __future__ import annotations

import numpy as np

from ...errors import MLIRError
from ..ir import _static, memref_type
from ..dialects.memref import strided_layout
from . import linalg as L
from .arith import _dtype

__all__ = ["HANDLERS", "linalg_on_buffers", "check_buffer", "check_op", "is_buffer_op"]


def _mt(op, t):
    m = memref_type(t)
    if m is None:
        raise MLIRError(f"{op.location}: '{op.name}' needs a ranked memref of a numeric element, found {t}")
    return m


def check_buffer(op, x, t, what="result"):
    """A buffer's shape (and strides where the layout is static) against its memref type."""
    m = memref_type(t)
    if m is None or not isinstance(x, np.ndarray):
        return
    if x.ndim != m.rank or any(d is not None and d != n for d, n in zip(m.shape, x.shape)):
        raise MLIRError(f"{op.location}: '{op.name}' {what} has shape {x.shape} on this process, "
                        f"which its type {t} does not allow")
    layout = strided_layout(m)
    if layout is not None and x.itemsize:
        got = [s // x.itemsize for s in x.strides]
        for d, (want, g, n) in enumerate(zip(layout[1], got, x.shape)):
            if want is not None and n > 1 and want != g:
                raise MLIRError(f"{op.location}: '{op.name}' {what} has stride {g} in dim {d} on this process, "
                                f"where its type {t} says {want}")


def _alloc(p, op, env):
    m = _mt(op, op.results[0].type)
    dyn = iter(int(env[v]) for v in op.operands[: op.attributes.get("operandSegmentSizes", (len(op.operands),))[0]])
    shape = tuple(next(dyn) if d is None else d for d in m.shape)
    if any(n < 0 for n in shape):
        raise MLIRError(f"{op.location}: '{op.name}' of negative size {shape}")
    return [np.zeros(shape, _dtype(m))]


def _dealloc(p, op, env):
    return []


def _subview(p, op, env):
    x = env[op.operands[0]]
    it = iter([env[v] for v in op.operands[1:]])
    offs = _static(op.attributes["static_offsets"], it)
    sizes = _static(op.attributes["static_sizes"], it)
    strides = _static(op.attributes["static_strides"], it)
    for d, (o, s, st, n) in enumerate(zip(offs, sizes, strides, x.shape)):
        if o < 0 or s < 0 or st < 1 or (s and o + (s - 1) * st >= n):
            raise MLIRError(f"{op.location}: 'memref.subview' dim {d}: offset {o}, size {s}, stride {st} "
                            f"run outside the source's {n} elements (on this process)")
    rt = _mt(op, op.results[0].type)
    drop = _dropped_dims(sizes, rt.shape)
    index = tuple(o if d in drop else slice(o, o + s * st, st) if s else slice(o, o)
                  for d, (o, s, st) in enumerate(zip(offs, sizes, strides)))
    r = x[index]  # basic indexing: a view
    check_buffer(op, r, op.results[0].type)
    return [r]


def _dropped_dims(sizes, result_shape):
    """The unit dims a rank-reducing subview drops: sizes matched to the result's dims from the left,
    a size-1 dim dropped where the result has fewer dims left than the sizes."""
    drop, j = set(), 0
    for i, s in enumerate(sizes):
        left_sizes, left_result = len(sizes) - i, len(result_shape) - j
        if s == 1 and left_sizes > left_result and (j >= len(result_shape) or result_shape[j] != 1
                                                    or left_sizes - 1 >= left_result):
            drop.add(i)
            continue
        j += 1
    return drop


def _copy(p, op, env):
    src, dst = env[op.operands[0]], env[op.operands[1]]
    if src.shape != dst.shape:
        raise MLIRError(f"{op.location}: 'memref.copy' from shape {src.shape} to shape {dst.shape}")
    np.copyto(dst, src, casting="unsafe")
    return []


def _load(p, op, env):
    x = env[op.operands[0]]
    return [x[tuple(int(env[v]) for v in op.operands[1:])]]


def _store(p, op, env):
    x = env[op.operands[1]]
    x[tuple(int(env[v]) for v in op.operands[2:])] = env[op.operands[0]]
    return []


def _cast(p, op, env):
    x = env[op.operands[0]]
    check_buffer(op, x, op.results[0].type)
    return [x]


def _view_reshape(op, x, shape):
    y = x.view()
    try:
        y.shape = shape  # raises instead of copying: a memref reshape is a view
    except AttributeError:
        raise MLIRError(f"{op.location}: '{op.name}' cannot view a buffer of shape {x.shape} and strides "
                        f"{x.strides} as shape {tuple(shape)} without copying") from None
    return y


def _collapse(p, op, env):
    x = env[op.operands[0]]
    groups = [tuple(g) for g in op.attributes["reassociation"]]
    shape = [int(np.prod([x.shape[d] for d in g])) for g in groups]
    return [_view_reshape(op, x, shape)]


def _expand(p, op, env):
    x = env[op.operands[0]]
    it = iter([env[v] for v in op.operands[1:]])
    return [_view_reshape(op, x, _static(op.attributes["static_output_shape"], it))]


def _dim(p, op, env):
    return [np.int64(env[op.operands[0]].shape[int(env[op.operands[1]])])]


def _to_tensor(p, op, env):
    return [np.array(env[op.operands[0]], order="C")]  # a tensor is a value: later writes to the buffer do not change it


def _to_buffer(p, op, env):
    x = env[op.operands[0]]
    if "read_only" in op.attributes:
        y = x.view()
        y.flags.writeable = False  # a write through it fails (MLIR: undefined)
        return [y]
    return [np.array(x, order="C")]


def _alloc_tensor(p, op, env):
    t = op.results[0].type
    seg = op.attributes.get("operandSegmentSizes", (len(op.operands), 0, 0))
    if seg[1]:
        return [np.array(env[op.operands[seg[0]]], order="C")]
    dyn = iter(int(env[v]) for v in op.operands[: seg[0]])
    return [np.zeros(tuple(next(dyn) if d is None else d for d in t.shape), _dtype(t))]


def _materialize(p, op, env):
    src, dst = env[op.operands[0]], env[op.operands[1]]
    if op.results:  # tensor destination: the result is the source's value
        return [np.array(src, order="C", dtype=dst.dtype)]
    np.copyto(dst, src, casting="unsafe")
    return []


def _ints(v):
    return isinstance(v, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


_OPERANDS = {"memref.dealloc": 1, "memref.copy": 2, "memref.cast": 1, "memref.dim": 2,
             "memref.collapse_shape": 1, "bufferization.to_tensor": 1, "bufferization.to_buffer": 1,
             "bufferization.materialize_in_destination": 2}


def check_op(op):
    """What a memref/bufferization op needs that the generic form can leave out (None: fine)."""
    want = _OPERANDS.get(op.name)
    if want is not None and len(op.operands) != want:
        return f"takes {want} operand(s), found {len(op.operands)}"
    a = op.attributes
    if op.name in ("memref.alloc", "memref.alloca", "memref.subview", "memref.cast", "memref.collapse_shape",
                   "memref.expand_shape", "bufferization.to_buffer"):
        if len(op.results) != 1 or memref_type(op.results[0].type) is None:
            return "gives one ranked memref of numbers"
    if op.name in ("memref.subview", "memref.load", "memref.store", "memref.copy", "memref.collapse_shape",
                   "memref.expand_shape", "memref.dim", "bufferization.to_tensor"):
        i = 1 if op.name == "memref.store" else 0
        if len(op.operands) <= i or memref_type(op.operands[i].type) is None:
            return "needs a ranked memref of numbers"
    if op.name == "memref.subview" and not all(_ints(a.get(k)) for k in ("static_offsets", "static_sizes",
                                                                              "static_strides")):
        return "needs static_offsets, static_sizes and static_strides (arrays of integers)"
    if op.name in ("memref.collapse_shape", "memref.expand_shape") and not (
            isinstance(a.get("reassociation"), tuple) and all(_ints(g) for g in a["reassociation"])):
        return "needs its reassociation (an array of arrays of integers)"
    if op.name == "memref.expand_shape" and not _ints(a.get("static_output_shape")):
        return "needs static_output_shape (an array of integers)"
    return None


HANDLERS = {
    "memref.alloc": _alloc, "memref.alloca": _alloc, "memref.dealloc": _dealloc, "memref.subview": _subview,
    "memref.copy": _copy, "memref.load": _load, "memref.store": _store, "memref.cast": _cast,
    "memref.collapse_shape": _collapse, "memref.expand_shape": _expand, "memref.dim": _dim,
    "bufferization.to_tensor": _to_tensor, "bufferization.to_buffer": _to_buffer,
    "bufferization.alloc_tensor": _alloc_tensor, "bufferization.materialize_in_destination": _materialize,
}


# -- linalg on memrefs ------------------------------------------------------------------------------------

def _buffer_segments(op):
    seg = op.attributes.get("operandSegmentSizes")
    if seg is not None:
        return list(op.operands[: seg[0]]), list(op.operands[seg[0]: seg[0] + seg[1]])
    n = len(op.operands) // 2 if op.name == "linalg.reduce" else 1  # reduce: N ins, N inits; else one init
    return list(op.operands[: len(op.operands) - n]), list(op.operands[len(op.operands) - n:])


def linalg_on_buffers(op, captured_of):
    """``run(env) -> []`` for a linalg op on memrefs: computed as on tensors, written into its outs."""
    ins_v, outs_v = _buffer_segments(op)
    L._SEGMENTS[op] = (ins_v, outs_v)

    def run(env):
        res = L.run_linalg(op, env.__getitem__, lambda o: captured_of(o, env))
        for v, r in zip(outs_v, res):
            out = env[v]
            np.copyto(out, np.reshape(r, out.shape), casting="unsafe")
        return []
    return run


def is_buffer_op(op) -> bool:
    """A linalg op in its memref form: no results, some operand a memref."""
    return not op.results and any(memref_type(v.type) is not None for v in op.operands)


