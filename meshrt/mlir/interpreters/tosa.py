"""The ``tosa`` ops the shard tests use, as whole-array numpy operations.

Each entry of `TOSA_OPS` takes the op and returns ``fn(*operand values) ->
result``, with everything that depends only on the op (axes, permutation,
clamp bounds, zero points' roles) read once.  Semantics are TOSA's
(https://www.mlplatform.org/tosa/tosa_spec.html) on numpy arrays:

- elementwise ops broadcast dims of size 1 (TOSA requires equal ranks);
  integer results wrap to the result type, as the hardware types do;
- ``tosa.negate``/``tosa.matmul`` take their zero points as operands
  (TOSA 1.0, as LLVM 22 prints them): ``negate(x) = -(x - zp_in) + zp_out``,
  ``matmul(a, b) = (a - zp_a) @ (b - zp_b)``;
- ``tosa.mul``'s ``shift`` operand rounds an integer product right by
  ``shift`` bits (``(a * b + 2**(shift-1)) >> shift``);
- ``nan_mode = "IGNORE"`` on ``clamp``/``maximum``/``minimum``/``reduce_max``
  picks the non-NaN operand (numpy's ``fmax``/``fmin``), ``"PROPAGATE"``
  (the default) returns NaN;
- ``reduce_sum``/``reduce_max`` keep the reduced axis with size 1;
- ``exp log tanh sigmoid rsqrt`` are defined on floats only (an integer
  operand is an error naming the op, not a silent cast).

>>> import numpy as np
>>> from meshrt.mlir import parse
>>> from meshrt.mlir.interpreters.spmd import run_function
>>> m = parse('''func.func @f(%a: tensor<2x3xf32>) -> tensor<1x3xf32> {
...   %0 = tosa.sigmoid %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
...   %1 = tosa.reduce_sum %0 {axis = 0 : i32} : (tensor<2x3xf32>) -> tensor<1x3xf32>
...   return %1 : tensor<1x3xf32>
... }''')
>>> run_function(m, "f", [np.zeros((2, 3), np.float32)])[0]
array([[1., 1., 1.]], dtype=float32)
"""

from __future__ import annotations

import numpy as np

from ...errors import MLIRError
from ..ir import _NUMPY, DenseElements, OpaqueType, ScalarType, TensorType

__all__ = ["TOSA_OPS", "tosa_function"]


def _dtype(t) -> np.dtype:
    return (t.element if isinstance(t, TensorType) else t).numpy_dtype


def _wrap(r, dt):
    """The result in the op's result type (numpy promotes int8 + int8 to int8 but abs(bool) ...)."""
    r = np.asarray(r)
    return r if r.dtype == dt else r.astype(dt)


def _ignore_nan(op) -> bool:
    return "IGNORE" in str(op.attributes.get("nan_mode", "PROPAGATE"))


def _float(op, name):
    dt = _dtype(op.results[0].type)
    if dt.kind != "f":
        raise MLIRError(f"{op.location}: '{op.name}' on element type {op.results[0].type.element}: "
                        f"{name} is defined on floats only")
    return dt


def _unary(ufunc, floats_only=False):
    def make(op):
        dt = _float(op, op.name) if floats_only else _dtype(op.results[0].type)
        return lambda x: _wrap(ufunc(x), dt)
    return make


def _binary(ufunc_for):
    def make(op):
        dt = _dtype(op.results[0].type)
        f = ufunc_for(op)
        return lambda a, b: _wrap(f(a, b), dt)
    return make


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _mul(op):
    dt = _dtype(op.results[0].type)
    if len(op.operands) < 3 or dt.kind == "f":
        return lambda a, b, *shift: _wrap(np.multiply(a, b), dt)

    def mul(a, b, shift):
        s = int(np.asarray(shift).reshape(-1)[0])
        p = a.astype(np.int64) * b.astype(np.int64)
        if s > 0:
            p = (p + (1 << (s - 1))) >> s
        return _wrap(p, dt)
    return mul


def _negate(op):
    dt = _dtype(op.results[0].type)

    def negate(x, zp_in=None, zp_out=None):
        if zp_in is None:
            return _wrap(np.negative(x), dt)
        zi, zo = np.asarray(zp_in).reshape(-1)[0], np.asarray(zp_out).reshape(-1)[0]
        if dt.kind == "f":
            return _wrap(-(x - zi) + zo, dt)
        r = -(x.astype(np.int64) - int(zi)) + int(zo)
        info = np.iinfo(dt)
        return _wrap(np.clip(r, info.min, info.max), dt)  # TOSA saturates an integer negate
    return negate


def _clamp(op):
    dt = _dtype(op.results[0].type)
    lo, hi = op.attributes.get("min_val"), op.attributes.get("max_val")
    if lo is None or hi is None:
        raise MLIRError(f"{op.location}: 'tosa.clamp' needs min_val and max_val attributes")
    for key, v in (("min_val", lo), ("max_val", hi)):
        if not isinstance(v, (int, float)):
            raise MLIRError(f"{op.location}: 'tosa.clamp' {key}: expected a number, found {v!r}")
    try:
        lo, hi = dt.type(lo), dt.type(hi)
    except OverflowError:  # numpy's test of whether a Python number fits the type
        raise MLIRError(f"{op.location}: 'tosa.clamp' bounds [{lo}, {hi}] do not fit its element type {dt}") from None
    if dt.kind == "f" and _ignore_nan(op):
        return lambda x: _wrap(np.where(np.isnan(x), lo, np.clip(x, lo, hi)), dt)
    return lambda x: _wrap(np.clip(x, lo, hi), dt)


def _axis(op):
    axis = op.attributes.get("axis")
    rank = op.operands[0].type.rank
    if not isinstance(axis, int) or not 0 <= axis < rank:
        raise MLIRError(f"{op.location}: '{op.name}' axis: {axis!r} is out of bounds [0, {rank}) "
                        f"for operand type {op.operands[0].type}")
    return axis


def _reduce(kind):
    def make(op):
        dt = _dtype(op.results[0].type)
        axis = _axis(op)
        if kind == "sum":
            return lambda x: _wrap(np.sum(x, axis=axis, keepdims=True, dtype=dt), dt)
        f = np.fmax if (dt.kind == "f" and _ignore_nan(op)) else np.maximum
        return lambda x: _wrap(f.reduce(x, axis=axis, keepdims=True), dt)
    return make


def _const_values(op):
    v = op.attributes.get("values", op.attributes.get("value"))
    if not isinstance(v, DenseElements):
        raise MLIRError(f"{op.location}: '{op.name}' needs a dense 'values' attribute, got {v!r}")
    return v.array


def _const(op):
    a = _const_values(op)
    return lambda: a


def _const_shape(op):
    a = np.asarray(_const_values(op), dtype=np.int64)
    return lambda: a


def _reshape(op):
    t = op.results[0].type
    if t.is_static:
        shape = t.shape
        return lambda x, *new_shape: np.reshape(x, shape)
    attr = op.attributes.get("new_shape")

    def reshape(x, *new_shape):
        target = [int(d) for d in (np.asarray(new_shape[0]) if new_shape else attr)]
        return np.reshape(x, [-1 if d == -1 else d for d in target])
    return reshape


def _transpose(op):
    perms = op.attributes.get("perms")
    if perms is not None and not (isinstance(perms, tuple) and all(isinstance(p, int) for p in perms)):
        raise MLIRError(f"{op.location}: 'tosa.transpose' perms: expected an array of integers, found {perms!r}")
    if perms is not None:
        perms = tuple(int(p) for p in perms)
        return lambda x, *rest: np.ascontiguousarray(np.transpose(x, perms))
    return lambda x, p: np.ascontiguousarray(np.transpose(x, tuple(int(v) for v in np.asarray(p))))


def _matmul(op):
    dt = _dtype(op.results[0].type)

    def matmul(a, b, zp_a=None, zp_b=None):
        if zp_a is not None:
            za, zb = np.asarray(zp_a).reshape(-1)[0], np.asarray(zp_b).reshape(-1)[0]
            if za or zb:
                a = a.astype(dt) - dt.type(za)
                b = b.astype(dt) - dt.type(zb)
        return _wrap(np.matmul(a.astype(dt, copy=False), b.astype(dt, copy=False)), dt)
    return matmul


def _maxmin(which):
    def for_op(op):
        if _ignore_nan(op):
            return np.fmax if which == "max" else np.fmin
        return np.maximum if which == "max" else np.minimum
    return _binary(for_op)


TOSA_OPS = {
    "tosa.abs": _unary(np.abs),
    "tosa.add": _binary(lambda op: np.add),
    "tosa.sub": _binary(lambda op: np.subtract),
    "tosa.mul": _mul,
    "tosa.negate": _negate,
    "tosa.exp": _unary(np.exp, floats_only=True),
    "tosa.log": _unary(np.log, floats_only=True),
    "tosa.tanh": _unary(np.tanh, floats_only=True),
    "tosa.sigmoid": _unary(_sigmoid, floats_only=True),
    "tosa.rsqrt": _unary(lambda x: 1 / np.sqrt(x), floats_only=True),
    "tosa.clamp": _clamp,
    "tosa.maximum": _maxmin("max"),
    "tosa.minimum": _maxmin("min"),
    "tosa.reduce_sum": _reduce("sum"),
    "tosa.reduce_max": _reduce("max"),
    "tosa.reshape": _reshape,
    "tosa.transpose": _transpose,
    "tosa.const": _const,
    "tosa.const_shape": _const_shape,
    "tosa.matmul": _matmul,
}


# how many operands each op takes (the zero points and shapes of TOSA 1.0 are operands); others: 1
_OPERANDS = {
    "tosa.add": (2,), "tosa.sub": (2,), "tosa.mul": (2, 3), "tosa.negate": (1, 3), "tosa.maximum": (2,),
    "tosa.minimum": (2,), "tosa.reshape": (1, 2), "tosa.transpose": (1, 2), "tosa.const": (0,),
    "tosa.const_shape": (0,), "tosa.matmul": (2, 4),
}


def _signature_problem(op):
    """What is wrong with the op's operand and result types for its function, or None: one result,
    tensors of numpy's integer and float types (and ``!tosa.shape`` values), as many operands as it takes."""
    counts = _OPERANDS.get(op.name, (1,))
    if len(op.operands) not in counts:
        return f"takes {' or '.join(map(str, counts))} operands, found {len(op.operands)}"
    if len(op.results) != 1:
        return f"gives one result, found {len(op.results)}"
    for what, t in [("operand", v.type) for v in op.operands] + [("result", r.type) for r in op.results]:
        shape = isinstance(t, OpaqueType) and str(t).startswith("!tosa.shape")
        if not shape and not (isinstance(t, TensorType) and isinstance(t.element, ScalarType)
                              and t.element.name in _NUMPY):
            return f"{what} type {t}: expected a tensor of integers or floats"
    if op.name == "tosa.const_shape" or op.name == "tosa.transpose" and len(op.operands) == 2:
        return None
    if not isinstance(op.results[0].type, TensorType):
        return f"result type {op.results[0].type}: expected a tensor of integers or floats"
    if op.name not in ("tosa.const",) and not isinstance(op.operands[0].type, TensorType):
        return f"operand type {op.operands[0].type}: expected a tensor of integers or floats"
    return None


def tosa_function(op):
    """``fn(*operand values) -> result`` for one tosa op (`MLIRError` for an op outside `TOSA_OPS`)."""
    make = TOSA_OPS.get(op.name)
    if make is None:
        raise MLIRError(f"{op.location}: unsupported op '{op.name}'")
    problem = _signature_problem(op)
    if problem:
        raise MLIRError(f"{op.location}: '{op.name}' {problem}")
    return make(op)
