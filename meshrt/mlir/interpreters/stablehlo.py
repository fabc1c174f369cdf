"""StableHLO op semantics on whole numpy arrays (one process's values).

`local_function(op)` gives ``fn(*arrays) -> tuple of arrays`` for an op without regions, with
StableHLO's rules where numpy's differ: integer ``divide`` truncates toward zero and
``remainder`` takes the dividend's sign (C's ``/`` and ``%``), ``compare`` follows
``comparison_direction``/``compare_type``, ``convert`` of a float to an integer truncates
toward zero, ``maximum``/``minimum`` propagate NaN, shifts by the bit width or more give 0
(or the sign for an arithmetic shift).  Ops with regions (``reduce``, ``reduce_window``,
``while``, ``case``/``if``, ``sort``) are run by `meshrt.mlir.shardy.program`, which calls
`reduce_with`, `reduce_window_with` and `sort_with` here with their region as a function.

>>> from meshrt.mlir import parse
>>> m = parse('''func.func @f(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
...   %0 = stablehlo.remainder %a, %b : tensor<3xi32>
...   return %0 : tensor<3xi32>
... }''')
>>> op = m.functions()["f"].regions[0].entry.operations[0]
>>> local_function(op)(np.array([-7, 7, -7], np.int32), np.array([3, -3, -3], np.int32))[0]
array([-1,  1, -1], dtype=int32)
"""

from __future__ import annotations

import numpy as np

from ...errors import MLIRError
from ..ir import DenseElements, ScalarType, TensorType

__all__ = ["local_function", "LOCAL_OPS", "REGION_OPS", "np_dtype", "reduce_with", "reduce_window_with",
           "simple_reduction", "ELEMENTWISE", "pad_array", "window_params",
           "merge_sort_perm", "stable_sort_perm", "key_order"]


def np_dtype(t) -> np.dtype:
    e = t.element if isinstance(t, TensorType) else t
    if isinstance(e, ScalarType):
        if e.name == "bf16":
            raise MLIRError(f"element type {e}: numpy has no bfloat16")
        return np.dtype(e.numpy_dtype)
    raise MLIRError(f"type {t}: no numpy dtype")


def _is_int(x):
    return x.dtype.kind in "iu"


def _divide(a, b):
    if not _is_int(np.asarray(a)):
        return np.divide(a, b)
    a, b = np.asarray(a), np.asarray(b)
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe)
    q = np.where((a < 0) != (safe < 0), -q, q).astype(np.result_type(a, b))
    return np.where(b == 0, -1, q).astype(np.result_type(a, b))  # XLA: x / 0 = -1 for integers


def _remainder(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if not _is_int(a):
        return np.fmod(a, b)
    safe = np.where(b == 0, 1, b)
    return np.where(b == 0, a, np.fmod(a, safe)).astype(np.result_type(a, b))


def _shift(kind):
    def fn(a, b):
        a, b = np.asarray(a), np.asarray(b)
        bits = a.dtype.itemsize * 8
        big = (b < 0) | (b >= bits)
        bb = np.where(big, 0, b).astype(a.dtype)
        if kind == "left":
            return np.where(big, 0, np.left_shift(a, bb)).astype(a.dtype)
        if kind == "arith":
            return np.where(big, np.where(a < 0, -1, 0), np.right_shift(a, bb)).astype(a.dtype)
        ua = a.view(np.dtype(f"u{a.dtype.itemsize}")) if a.dtype.kind == "i" else a
        r = np.right_shift(ua, bb.astype(ua.dtype))
        return np.where(big, 0, r.view(a.dtype) if a.dtype.kind == "i" else r).astype(a.dtype)
    return fn


def _logical(fn_bool, fn_int):
    def fn(a, b):
        a, b = np.asarray(a), np.asarray(b)
        return fn_bool(a, b) if a.dtype == bool else fn_int(a, b)
    return fn


def _not(a):
    a = np.asarray(a)
    return np.logical_not(a) if a.dtype == bool else np.invert(a)


def _round_afz(a):
    return np.where(a >= 0, np.floor(a + 0.5), np.ceil(a - 0.5)).astype(a.dtype)


def _logistic(a):
    return (1 / (1 + np.exp(-a))).astype(a.dtype)


def _rsqrt(a):
    return (1 / np.sqrt(a)).astype(a.dtype)


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def _popcnt(a):
    """The set bits of each integer's bit pattern: 8 for an ``i8`` -1 (numpy's ``bitwise_count`` counts
    those of ``abs(x)``, 1), counted per byte from a table."""
    a = np.asarray(a)
    per_byte = _BYTE_BITS[np.ascontiguousarray(a).view(np.uint8).reshape(a.shape + (a.dtype.itemsize,))]
    return per_byte.sum(axis=-1, dtype=np.int64).astype(a.dtype)


ELEMENTWISE = {
    "stablehlo.abs": np.abs, "stablehlo.cbrt": np.cbrt, "stablehlo.ceil": np.ceil, "stablehlo.cosine": np.cos,
    "stablehlo.exponential": np.exp, "stablehlo.exponential_minus_one": np.expm1, "stablehlo.floor": np.floor,
    "stablehlo.is_finite": np.isfinite, "stablehlo.log": np.log, "stablehlo.log_plus_one": np.log1p,
    "stablehlo.logistic": _logistic, "stablehlo.negate": np.negative, "stablehlo.not": _not,
    "stablehlo.round_nearest_afz": _round_afz, "stablehlo.round_nearest_even": np.rint,
    "stablehlo.rsqrt": _rsqrt, "stablehlo.sign": np.sign, "stablehlo.sine": np.sin, "stablehlo.sqrt": np.sqrt,
    "stablehlo.tan": np.tan, "stablehlo.tanh": np.tanh, "stablehlo.popcnt": _popcnt,
    "stablehlo.add": np.add, "stablehlo.subtract": np.subtract, "stablehlo.multiply": np.multiply,
    "stablehlo.divide": _divide, "stablehlo.remainder": _remainder, "stablehlo.maximum": np.maximum,
    "stablehlo.minimum": np.minimum, "stablehlo.power": np.power, "stablehlo.atan2": np.arctan2,
    "stablehlo.and": _logical(np.logical_and, np.bitwise_and), "stablehlo.or": _logical(np.logical_or, np.bitwise_or),
    "stablehlo.xor": _logical(np.logical_xor, np.bitwise_xor), "stablehlo.shift_left": _shift("left"),
    "stablehlo.shift_right_arithmetic": _shift("arith"), "stablehlo.shift_right_logical": _shift("logical"),
}

_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
            "LE": np.less_equal, "LT": np.less}


def _direction(op):
    d = op.attributes.get("comparison_direction")
    d = str(d)
    for k in _COMPARE:  # '#stablehlo<comparison_direction GT>' in the generic form
        if d == k or d.endswith(f" {k}>") or d.endswith(f"{k}"):
            return k
    raise MLIRError(f"{op.location}: 'stablehlo.compare' has no comparison_direction I know ({d!r})")


def _compare_type(op):
    t = str(op.attributes.get("compare_type", ""))
    for k in ("TOTALORDER", "FLOAT", "UNSIGNED", "SIGNED"):
        if k in t:
            return k
    return None


def _compare(op):
    fn = _COMPARE[_direction(op)]
    kind = _compare_type(op)

    def run(a, b):
        a, b = np.asarray(a), np.asarray(b)
        if kind == "UNSIGNED" and a.dtype.kind == "i":
            u = np.dtype(f"u{a.dtype.itemsize}")
            a, b = a.view(u), b.view(u)
        if kind == "TOTALORDER" and a.dtype.kind == "f":
            a, b = _total_order_key(a), _total_order_key(b)
        return (np.asarray(fn(a, b)),)
    return run


def _total_order_key(x):
    """An integer that orders floats as IEEE's totalOrder does (-NaN < -inf < ... < -0 < +0 < ... < NaN)."""
    i = np.dtype(f"i{x.dtype.itemsize}")
    bits = x.view(i)
    return np.where(bits < 0, bits ^ np.iinfo(i).max, bits)


def _convert(op):
    dt = np_dtype(op.results[0].type)

    def run(a):
        a = np.asarray(a)
        if dt == bool:
            return (a != 0,)
        if dt.kind in "iu" and a.dtype.kind == "f":
            info = np.iinfo(dt)
            t = np.trunc(a.astype(np.float64))
            hi, lo = t >= 2.0 ** (8 * dt.itemsize - (dt.kind == "i")), t < float(info.min)
            safe = np.where(hi | lo | np.isnan(t), 0, t).astype(dt)
            # XLA saturates out-of-range values and gives 0 for NaN
            return (np.where(hi, info.max, np.where(lo, info.min, safe)).astype(dt),)
        return (a.astype(dt),)
    return run


def _attr_ints(op, key, default=None):
    v = op.attributes.get(key, default)
    if v is None:
        raise MLIRError(f"{op.location}: '{op.name}' needs the attribute {key}")
    if isinstance(v, DenseElements):
        return tuple(int(x) for x in v.array.reshape(-1))
    return tuple(int(x) for x in v)


def _broadcast_in_dim(op):
    t = op.results[0].type
    dims = _attr_ints(op, "broadcast_dimensions")

    def run(a):
        a = np.asarray(a)
        shape = [1] * t.rank
        for i, d in enumerate(dims):
            shape[d] = a.shape[i]
        # operand dims in result order: dims may be unsorted
        order = np.argsort(dims)
        b = np.transpose(a, order) if a.ndim > 1 else a
        return (np.broadcast_to(b.reshape(shape), t.shape),)
    return run


def _reshape(op):
    shape = op.results[0].type.shape
    return lambda a: (np.reshape(a, shape),)


def _transpose(op):
    perm = _attr_ints(op, "permutation")
    return lambda a: (np.transpose(a, perm),)


def _slice(op):
    sl = tuple(slice(s, l, st) for s, l, st in zip(_attr_ints(op, "start_indices"), _attr_ints(op, "limit_indices"),
                                                  _attr_ints(op, "strides")))
    return lambda a: (np.asarray(a)[sl],)


def _reverse(op):
    dims = _attr_ints(op, "dimensions")
    return lambda a: (np.flip(np.asarray(a), axis=dims) if dims else np.asarray(a),)


def _concatenate(op):
    dim = int(op.attributes["dimension"])
    return lambda *xs: (np.concatenate(xs, axis=dim),)


def _iota(op):
    t = op.results[0].type
    dim = int(op.attributes["iota_dimension"])
    dt = np_dtype(t)

    def run():
        shape = [1] * t.rank
        shape[dim] = t.shape[dim]
        return (np.broadcast_to(np.arange(t.shape[dim], dtype=dt).reshape(shape), t.shape),)
    return run


def _constant(op):
    v = op.attributes["value"]
    if not isinstance(v, DenseElements):
        raise MLIRError(f"{op.location}: '{op.name}' needs a dense value")
    arr = v.array
    return lambda: (arr,)


def _select(op):
    return lambda p, a, b: (np.where(p, a, b),)


def _clamp(op):
    return lambda lo, x, hi: (np.minimum(np.maximum(x, lo), hi).astype(np.asarray(x).dtype),)


def pad_array(a, v, low, high, interior):
    """StableHLO ``pad`` of a whole array: ``interior`` values ``v`` between elements, then ``low``/``high``
    at the edges (negative: cropped).

    >>> pad_array(np.array([1, 2, 3]), 0, (-1,), (2,), (1,))
    array([0, 2, 0, 3, 0, 0])
    """
    a = np.asarray(a)
    full = [(n - 1) * (k + 1) + 1 if n else 0 for n, k in zip(a.shape, interior)]
    out_shape = [max(0, lo + n + hi) for lo, n, hi in zip(low, full, high)]
    body = np.full(full, v, a.dtype)
    body[tuple(slice(None, None, k + 1) for k in interior)] = a
    out = np.full(out_shape, v, a.dtype)
    src, dst = [], []
    for lo, n, hi in zip(low, full, high):
        s0, s1 = max(0, -lo), n - max(0, -hi)
        d0 = max(0, lo)
        src.append(slice(s0, s1))
        dst.append(slice(d0, d0 + max(0, s1 - s0)))
    out[tuple(dst)] = body[tuple(src)]
    return out


def _pad(op):
    low, high = _attr_ints(op, "edge_padding_low"), _attr_ints(op, "edge_padding_high")
    interior = _attr_ints(op, "interior_padding")
    return lambda a, v: (pad_array(a, v, low, high, interior),)


def _dynamic_slice(op):
    sizes = _attr_ints(op, "slice_sizes")

    def run(a, *idx):
        a = np.asarray(a)
        starts = [min(max(int(i), 0), n - s) for i, n, s in zip(idx, a.shape, sizes)]  # clamped, as specified
        return (a[tuple(slice(s, s + k) for s, k in zip(starts, sizes))],)
    return run


def _dynamic_update_slice(op):
    def run(a, u, *idx):
        a, u = np.array(a), np.asarray(u)
        starts = [min(max(int(i), 0), n - s) for i, n, s in zip(idx, a.shape, u.shape)]
        a[tuple(slice(s, s + k) for s, k in zip(starts, u.shape))] = u
        return (a,)
    return run


def _dot_numbers(op):
    """(lhs batch, rhs batch, lhs contracting, rhs contracting): from the pretty form's attributes or
    the generic form's ``#stablehlo.dot<...>``."""
    import re

    keys = ("lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
            "rhs_contracting_dimensions")
    nums = op.attributes.get("dot_dimension_numbers")
    if nums is None:
        return tuple(_attr_ints(op, k, ()) for k in keys)
    found = dict(re.findall(r"(\w+)\s*=\s*\[([\d,\s]*)\]", str(nums)))
    return tuple(tuple(int(x) for x in found.get(k, "").replace(",", " ").split()) for k in keys)


def dot_general_subscripts(op) -> str:
    """The ``np.einsum`` subscripts of a dot_general: result dims are batch, lhs free, rhs free."""
    a, b = op.operands[0].type, op.operands[1].type
    lb, rb, lc, rc = _dot_numbers(op)
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ls, rs = [None] * a.rank, [None] * b.rank
    out = []
    for i, j in zip(lb, rb):
        c = next(letters)
        ls[i] = rs[j] = c
        out.append(c)
    for i, j in zip(lc, rc):
        c = next(letters)
        ls[i] = rs[j] = c
    for k in range(a.rank):
        if ls[k] is None:
            ls[k] = next(letters)
            out.append(ls[k])
    for k in range(b.rank):
        if rs[k] is None:
            rs[k] = next(letters)
            out.append(rs[k])
    return f"{''.join(ls)},{''.join(rs)}->{''.join(out)}"


def _dot_general(op):
    sub = dot_general_subscripts(op)
    dt = np_dtype(op.results[0].type)
    return lambda a, b: (np.einsum(sub, a, b).astype(dt, copy=False),)


def _optimization_barrier(op):
    return lambda *xs: tuple(xs)


def _elementwise(op):
    fn = ELEMENTWISE[op.name]
    dt = np_dtype(op.results[0].type)

    def run(*xs):
        r = np.asarray(fn(*xs))
        return (r if r.dtype == dt else r.astype(dt),)
    return run


_BUILDERS = {
    "stablehlo.compare": _compare, "stablehlo.convert": _convert, "stablehlo.broadcast_in_dim": _broadcast_in_dim,
    "stablehlo.reshape": _reshape, "stablehlo.transpose": _transpose, "stablehlo.slice": _slice,
    "stablehlo.concatenate": _concatenate, "stablehlo.reverse": _reverse, "stablehlo.iota": _iota, "stablehlo.constant": _constant,
    "sdy.constant": _constant, "stablehlo.select": _select, "stablehlo.clamp": _clamp, "stablehlo.pad": _pad,
    "stablehlo.dynamic_slice": _dynamic_slice, "stablehlo.dynamic_update_slice": _dynamic_update_slice,
    "stablehlo.dot_general": _dot_general, "stablehlo.optimization_barrier": _optimization_barrier,
}
for _n in ELEMENTWISE:
    _BUILDERS[_n] = _elementwise

LOCAL_OPS = frozenset(_BUILDERS)
REGION_OPS = frozenset(["stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.while", "stablehlo.case",
                        "stablehlo.if", "stablehlo.sort"])


def local_function(op):
    """``fn(*arrays) -> tuple`` computing ``op`` (no regions) on whole arrays."""
    b = _BUILDERS.get(op.name)
    if b is None:
        raise MLIRError(f"{op.location}: unsupported op '{op.name}'")
    return b(op)


# -- ops with a region body ----------------------------------------------------------------------------

_SIMPLE = {"stablehlo.add": "sum", "stablehlo.multiply": "prod", "stablehlo.maximum": "max",
           "stablehlo.minimum": "min", "stablehlo.and": "all", "stablehlo.or": "any"}


def simple_reduction(region):
    """'sum', 'prod', 'max', 'min', 'all' or 'any' when the body combines its two arguments with
    that one op and returns it (one operand), maybe through ``sdy.sharding_constraint`` ops (what JAX
    puts in a partially manual body's collectives: a no-op on scalars); else None."""
    block = region.entry
    ops = list(block.operations)
    if len(block.arguments) != 2 or len(ops) < 2:
        return None
    op, ret = ops[0], ops[-1]
    if ret.name not in ("stablehlo.return",) or op.name not in _SIMPLE or len(ret.operands) != 1:
        return None
    if set(op.operands) != set(block.arguments):
        return None
    v = op.results[0]
    for c in ops[1:-1]:
        if c.name != "sdy.sharding_constraint" or c.operands[0] is not v:
            return None
        v = c.results[0]
    return _SIMPLE[op.name] if ret.operands[0] is v else None


_NP_REDUCE = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum,
              "all": np.logical_and, "any": np.logical_or}


def reduce_with(inputs, inits, dims, body, kind=None):
    """StableHLO ``reduce``: fold ``body(accs..., xs...) -> accs`` over ``dims`` of every input,
    vectorized over the kept dims; ``kind`` (from `simple_reduction`) takes numpy's reduction."""
    dims = tuple(sorted(dims))
    if kind is not None:
        x, init = np.asarray(inputs[0]), np.asarray(inits[0])
        uf = _NP_REDUCE[kind]
        if x.dtype == bool and kind in ("max", "min"):
            uf = np.logical_or if kind == "max" else np.logical_and
        r = uf.reduce(x, axis=dims) if x.size else np.broadcast_to(init, [n for i, n in enumerate(x.shape)
                                                                           if i not in dims])
        return [np.asarray(uf(r, init)).astype(x.dtype)]
    xs = [np.asarray(x) for x in inputs]
    keep = [d for d in range(xs[0].ndim) if d not in dims]
    moved = [np.moveaxis(x, dims, range(len(keep), x.ndim)) for x in xs]
    kept_shape = moved[0].shape[:len(keep)]
    flat = [m.reshape(kept_shape + (-1,)) for m in moved]
    accs = [np.broadcast_to(np.asarray(i), kept_shape).copy() for i in inits]
    for k in range(flat[0].shape[-1]):
        accs = [np.asarray(a) for a in body(*accs, *[f[..., k] for f in flat])]
    return accs


def window_params(op, rank):
    """``(window_dimensions, window_strides, base_dilations, window_dilations, padding)`` of a
    ``reduce_window``, defaults filled in (padding: ``rank`` (low, high) pairs)."""
    wd = _attr_ints(op, "window_dimensions")
    ws = _attr_ints(op, "window_strides", (1,) * rank)
    bd = _attr_ints(op, "base_dilations", (1,) * rank)
    wdl = _attr_ints(op, "window_dilations", (1,) * rank)
    pad = op.attributes.get("padding")
    pad = np.asarray(pad.array).reshape(rank, 2) if isinstance(pad, DenseElements) else np.zeros((rank, 2), int)
    return wd, ws, bd, wdl, tuple((int(a), int(b)) for a, b in pad)


def reduce_window_with(op, inputs, inits, body, kind=None, out_shape=None):
    """StableHLO ``reduce_window``: dilate by ``base_dilations`` and pad with the init values, then
    fold the body over every window element (``window_dilations`` apart), vectorized over the output
    positions; ``out_shape`` (default: the op's result type) lets a caller run it on a block."""
    rank = np.asarray(inputs[0]).ndim
    wd, ws, bd, wdl, pad = window_params(op, rank)
    padded = [pad_array(x, np.asarray(i), [p[0] for p in pad], [p[1] for p in pad], [b - 1 for b in bd])
              for x, i in zip(inputs, inits)]
    out_shape = op.results[0].type.shape if out_shape is None else tuple(out_shape)
    accs = [np.full(out_shape, np.asarray(i), np.asarray(x).dtype) for x, i in zip(inputs, inits)]
    if 0 in out_shape:
        return accs
    for offset in np.ndindex(*wd):
        sl = tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, n, s in zip(offset, wdl, out_shape, ws))
        vals = [p[sl] for p in padded]
        if kind is not None:
            accs = [np.asarray(_NP_REDUCE[kind](accs[0], vals[0])).astype(accs[0].dtype)]
        else:
            accs = [np.asarray(a) for a in body(*accs, *vals)]
    return accs


def check_region_op(op):
    """Errors for the attribute values the region ops here do not implement (before any run)."""
    if op.name == "stablehlo.reduce_window":
        rank = op.operands[0].type.rank
        for key in ("window_dimensions", "window_strides", "base_dilations", "window_dilations"):
            if key in op.attributes and len(_attr_ints(op, key)) != rank:
                raise MLIRError(f"{op.location}: 'stablehlo.reduce_window' {key} must have rank {rank}")
        for key in ("window_dimensions", "window_strides", "base_dilations", "window_dilations"):
            if key in op.attributes and any(int(x) < 1 for x in _attr_ints(op, key)):
                raise MLIRError(f"{op.location}: 'stablehlo.reduce_window' {key} must be positive, got "
                                f"{list(_attr_ints(op, key))}")


# -- gather, scatter, sort --------------------------------------------------------------------------------

BATCHING_KEYS = ("operand_batching_dims", "start_indices_batching_dims", "input_batching_dims",
                 "scatter_indices_batching_dims")


def _numbers(op, attr, keys):
    """The fields of ``#stablehlo.gather<...>`` / ``#stablehlo.scatter<...>`` as tuples of ints
    (the batching dims' fields too, ``()`` where absent)."""
    import re

    text = str(op.attributes.get(attr, ""))
    out = {}
    for k in tuple(keys) + BATCHING_KEYS:
        m = re.search(rf"\b{k}\s*=\s*\[([\d,\s]*)\]", text)
        if m:
            out[k] = tuple(int(x) for x in m.group(1).replace(",", " ").split())
        else:
            m = re.search(rf"\b{k}\s*=\s*(\d+)", text)
            out[k] = int(m.group(1)) if m else ()
    return out


def batch_positions(op, indices_rank, ivd, indices_batching):
    """Per indices batching dim, its position among the batch dims (the indices' dims but
    ``index_vector_dim``), which are the result's (gather) or updates' (scatter) batch dims in order."""
    others = [d for d in range(indices_rank) if d != ivd]
    for d in indices_batching:
        if d not in others:
            raise MLIRError(f"{op.location}: '{op.name}': indices batching dim {d} is the index vector dim or not a "
                            f"dim of rank-{indices_rank} indices")
    return tuple(others.index(d) for d in indices_batching)


def _fold_batching(op, indices, ivd, index_map, operand_batching, indices_batching):
    """Batching dims as index-mapped dims: each index vector gets, per indices batching dim, its own
    position along that dim (the operand batching dim then picks the same row, as ``vmap`` means).
    Returns (index vectors: batch + (k,), index map)."""
    vec = _index_vectors(indices, ivd)
    if not operand_batching:
        return vec, tuple(index_map)
    if len(operand_batching) != len(indices_batching):
        raise MLIRError(f"{op.location}: '{op.name}': {len(operand_batching)} operand batching dims for "
                        f"{len(indices_batching)} indices batching dims")
    bl = vec.shape[:-1]
    cols = []
    for j in batch_positions(op, np.ndim(indices), ivd, indices_batching):
        shape = [1] * len(bl)
        shape[j] = bl[j]
        cols.append(np.broadcast_to(np.arange(bl[j], dtype=np.int64).reshape(shape), bl))
    vec = np.concatenate([vec.astype(np.int64, copy=False), np.stack(cols, axis=-1)], axis=-1)
    return vec, tuple(index_map) + tuple(operand_batching)


def _index_vectors(idx, ivd):
    """The start-index vectors of ``idx`` (index_vector_dim ``ivd``): shape batch + (k,)."""
    idx = np.asarray(idx)
    if ivd == idx.ndim:
        return idx[..., None]
    return np.moveaxis(idx, ivd, -1)


def gather(op, operand, indices):
    """StableHLO ``gather``: each batch position takes a clamped slice (an operand batching dim at
    the position's own coordinate along its indices batching dim)."""
    n = _numbers(op, "dimension_numbers", ("offset_dims", "collapsed_slice_dims", "start_index_map",
                                            "index_vector_dim"))
    sizes = _attr_ints(op, "slice_sizes")
    operand = np.asarray(operand)
    out_t = op.results[0].type
    out = np.empty(out_t.shape, operand.dtype)
    vec, index_map = _fold_batching(op, indices, n["index_vector_dim"], n["start_index_map"],
                                    n["operand_batching_dims"], n["start_indices_batching_dims"])
    collapsed = set(n["collapsed_slice_dims"]) | set(n["operand_batching_dims"])
    batch_dims = [d for d in range(out_t.rank) if d not in n["offset_dims"]]
    for b in np.ndindex(*vec.shape[:-1]):
        start = [0] * operand.ndim
        for k, d in enumerate(index_map):
            start[d] = min(max(int(vec[b][k]), 0), operand.shape[d] - sizes[d])
        block = operand[tuple(slice(s, s + z) for s, z in zip(start, sizes))]
        block = block.reshape([z for d, z in enumerate(sizes) if d not in collapsed])
        where = [slice(None)] * out_t.rank
        for d, i in zip(batch_dims, b):
            where[d] = i
        out[tuple(where)] = block
    return out


def scatter(op, operand, indices, updates, combine):
    """StableHLO ``scatter`` of one operand (`scatter_many` with one)."""
    return scatter_many(op, [operand], indices, [updates], lambda a, b: [combine(a[0], b[0])])[0]


def scatter_many(op, operands, indices, updates, combine):
    """StableHLO ``scatter`` of N operands with N updates, applied in order by
    ``combine(olds, news) -> results`` (lists of N arrays); windows that do not fit in the operand
    are skipped, as the specification says; an input batching dim is written at the update's own
    coordinate along its indices batching dim."""
    n = _numbers(op, "scatter_dimension_numbers", ("update_window_dims", "inserted_window_dims",
                                                    "scatter_dims_to_operand_dims", "index_vector_dim"))
    outs = [np.array(o) for o in operands]
    updates = [np.asarray(u) for u in updates]
    out = outs[0]
    vec, index_map = _fold_batching(op, indices, n["index_vector_dim"], n["scatter_dims_to_operand_dims"],
                                    n["input_batching_dims"], n["scatter_indices_batching_dims"])
    inserted = set(n["inserted_window_dims"]) | set(n["input_batching_dims"])
    scatter_dims = [d for d in range(updates[0].ndim) if d not in n["update_window_dims"]]
    window_operand_dims = [d for d in range(out.ndim) if d not in inserted]
    for b in np.ndindex(*vec.shape[:-1]):
        start = [0] * out.ndim
        for k, d in enumerate(index_map):
            start[d] = int(vec[b][k])
        sel = [slice(None)] * updates[0].ndim
        for d, i in zip(scatter_dims, b):
            sel[d] = i
        upd = [u[tuple(sel)] for u in updates]
        size = [1] * out.ndim
        for d, z in zip(window_operand_dims, upd[0].shape):
            size[d] = z
        if any(s < 0 or s + z > dim for s, z, dim in zip(start, size, out.shape)):
            continue
        region = tuple(slice(s, s + z) for s, z in zip(start, size))
        res = combine([o[region] for o in outs], [u.reshape(size) for u in upd])
        for o, r in zip(outs, res):
            o[region] = np.asarray(r).astype(o.dtype)
    return outs


def merge_sort_perm(cols, less):
    """The stable sorting permutation of each row of ``cols`` (arrays of one shape ``(R, n)``, sorted
    together) under ``less(a_cols, b_cols) -> bool array``, called on vectors only: a bottom-up merge
    sort whose every merge places each element by a vectorized binary search in the other run.

    >>> merge_sort_perm([np.array([[3, 1, 2, 1]])], lambda a, b: a[0] < b[0])
    array([[1, 3, 2, 0]])
    """
    rows, n = cols[0].shape
    perm = np.broadcast_to(np.arange(n), (rows, n)).copy()
    p = np.arange(n)
    w = 1
    while w < n:
        base = (p // (2 * w)) * (2 * w)
        t = p - base
        left = t < w
        other_start = np.where(left, base + w, base)
        other_len = np.where(left, np.clip(n - base - w, 0, w), w)
        cur = [np.take_along_axis(c, perm, 1) for c in cols]
        # a left element goes after the right run's elements strictly before it, a right element after
        # the left run's elements not after it: stable
        lo = np.zeros((rows, n), np.int64)
        hi = np.broadcast_to(other_len, (rows, n)).astype(np.int64)
        for _ in range(int(w).bit_length()):
            mid = (lo + hi) // 2
            q = np.minimum(other_start + mid, n - 1)
            other = [np.take_along_axis(c, q, 1) for c in cur]
            a = [np.where(left, o, e) for o, e in zip(other, cur)]
            b = [np.where(left, e, o) for o, e in zip(other, cur)]
            res = np.broadcast_to(np.asarray(less(a, b), bool), (rows, n))
            before = np.where(left, res, ~res)
            active = lo < hi
            lo = np.where(active & before, mid + 1, lo)
            hi = np.where(active & ~before, mid, hi)
        new = np.empty_like(perm)
        np.put_along_axis(new, base + np.where(left, t, t - w) + lo, perm, 1)
        perm = new
        w *= 2
    return perm


def _order_keys(x, how):
    """An integer array that orders ``x`` as ``how`` says (see `key_order`)."""
    x = np.asarray(x)
    if how in ("total", "total_canonical"):
        if how == "total_canonical":  # JAX's comparator: -0 is 0, every NaN the positive quiet NaN
            x = np.where(x == 0, np.zeros((), x.dtype), x)
            x = np.where(np.isnan(x), np.asarray(np.nan, x.dtype), x)
        return _total_order_key(np.ascontiguousarray(x)).astype(np.int64)
    if how == "unsigned":
        return x.view(np.dtype(f"u{x.dtype.itemsize}")).astype(np.uint64)
    return x.astype(np.int64)


def _probe_values(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.array([0.0, -0.0, 1.0, -1.0, 2.5, -2.5, np.inf, -np.inf, 1e-30, -3.0], dtype)
    if dtype.kind == "b":
        return np.array([False, True])
    info = np.iinfo(dtype)
    return np.array([0, 1, -1 if dtype.kind == "i" else 2, info.max, info.min, 7, 3, info.max - 1], dtype)


def key_order(dtypes, less):
    """Guess the key order ``less`` sorts by: ``[(operand, how, descending)]``, lexicographic in operand
    order, from the comparator's answers on probe values (each operand varied alone); None when no
    candidate fits.  A guess only: `stable_sort_perm` checks it on the data it sorts.

    >>> key_order([np.dtype("int32")], lambda a, b: a[0] > b[0])
    [(0, 'signed', True)]
    """
    keys = []
    if any(np.dtype(dt).kind not in "fiub" for dt in dtypes):
        return None
    for j, dt in enumerate(dtypes):
        dt = np.dtype(dt)
        v = _probe_values(dt)
        n = len(v)
        base = [np.broadcast_to(_probe_values(d)[:1], (n, n)) for d in dtypes]
        a, b = list(base), list(base)
        a[j], b[j] = np.broadcast_to(v[:, None], (n, n)), np.broadcast_to(v[None, :], (n, n))
        got = np.broadcast_to(np.asarray(less(a, b), bool), (n, n))
        if not got.any():
            continue  # not a key (with the others equal)
        hows = ("total_canonical", "total") if dt.kind == "f" else ("signed", "unsigned") if dt.kind in "iu" else \
            ("signed",)
        for how in hows:
            k = _order_keys(v, how)
            if np.array_equal(got, k[:, None] < k[None, :]):
                keys.append((j, how, False))
                break
            if np.array_equal(got, k[:, None] > k[None, :]):
                keys.append((j, how, True))
                break
        else:
            return None
    return keys or None


def stable_sort_perm(cols, less):
    """The stable sorting permutation of each row of ``cols`` (``(R, n)`` arrays sorted together) under
    the comparator ``less(a_cols, b_cols)``: numpy's stable sort on the keys `key_order` guesses, kept
    only when the comparator agrees on every adjacent pair of the result (strictly before where the
    keys differ, tied where they are equal, which makes it the comparator's own stable order); else
    `merge_sort_perm`.

    >>> stable_sort_perm([np.array([[3, 1, 2, 1]])], lambda a, b: a[0] < b[0])
    array([[1, 3, 2, 0]])
    """
    rows, n = cols[0].shape
    keys = key_order([c.dtype for c in cols], less) if n > 1 else None
    if keys is None:
        return merge_sort_perm(cols, less)
    ks = []
    for j, how, desc in keys:
        k = _order_keys(cols[j], how)
        ks.append(~k if desc else k)
    perm = np.lexsort(ks[::-1], axis=-1) if len(ks) > 1 else np.argsort(ks[0], axis=-1, kind="stable")
    s = [np.take_along_axis(c, perm, 1) for c in cols]
    sk = [np.take_along_axis(k, perm, 1) for k in ks]
    a, b = [x[:, :-1] for x in s], [x[:, 1:] for x in s]
    equal = np.ones((rows, n - 1), bool)
    for k in sk:
        equal &= k[:, :-1] == k[:, 1:]
    before = np.broadcast_to(np.asarray(less(a, b), bool), equal.shape)
    after = np.broadcast_to(np.asarray(less(b, a), bool), equal.shape)
    if np.all(np.where(equal, ~before & ~after, before)):
        return perm
    return merge_sort_perm(cols, less)


def sort_with(op, inputs, less):
    """StableHLO ``sort`` along ``dimension`` with the comparator ``less(a_l, a_r, b_l, b_r, ...)``,
    evaluated on vectors (`stable_sort_perm`); stable (ties keep their order)."""
    dim = int(op.attributes.get("dimension", -1))
    xs = [np.moveaxis(np.asarray(x), dim, -1) for x in inputs]
    shape = xs[0].shape
    flat = [x.reshape(-1, shape[-1]) for x in xs]

    def pairs(a, b):
        args = []
        for x, y in zip(a, b):
            args += [x, y]
        return less(*args)

    perm = stable_sort_perm(flat, pairs)
    return [np.moveaxis(np.take_along_axis(f, perm, 1).reshape(shape), -1, dim) for f in flat]
