"""The elementwise ufunc call on `DistributedTensor` operands, apart from the call itself: the fast path
for operands of one sharding and scalars (`_fast_ufunc`), the operand checks (`_mixed_operands`,
`_check_same`, `_check_partial_ufunc`) and the result dtypes numpy will pick (`_result_dtypes`).

``DistributedTensor.__array_ufunc__`` (``distributed_tensor.py``) calls them and passes its own class as
``tensor_type``: this module is below ``distributed_tensor.py`` and cannot import it.
"""

from __future__ import annotations

import operator

import numpy as np

from .._slots import tensor as _new_tensor, value_tensor as _value_tensor
from ..errors import ShardingError
from ..sharding.spec import Sharding
from .layout import _layout


_SCALARS = (float, int, complex, bool)
_UFUNC_DTYPES: dict = {}


def _fast_ufunc(ufunc, inputs, tensor_type):
    """``r * r``, ``r + 1.0``, ``-r``: tensors of one sharding (not partial) and Python or numpy scalars, or
    0-d tensors on the same mesh (``r * x[i]``: the element's value, replicated, as its numpy scalar).

    Returns None where it does not apply (the general path then checks and
    explains).  The result dtype numpy will pick is cached per (ufunc,
    operand types), so the result is computed straight into a new local buffer.
    """
    t = meshes0 = None
    args = []
    key = [ufunc]
    for x in inputs:
        tx = type(x)
        if tx is tensor_type and not x._global_shape and len(inputs) > 1:  # a 0-d value: its numpy scalar
            if x._sharding._partial_axes:
                return None
            v = x._local[()]
            meshes0 = (meshes0 or ()) + (x._sharding.mesh,)
            args.append(v)
            key.append(v.dtype)
        elif tx is tensor_type:
            if t is None:
                t = x
            elif x._sharding is not t._sharding and x._sharding != t._sharding or x._global_shape != t._global_shape:
                return None
            args.append(x._interior)
            key.append(x._interior.dtype)
        elif tx in _SCALARS:
            args.append(x)
            key.append(tx)
        elif isinstance(x, np.generic):
            args.append(x)
            key.append(x.dtype)
        else:
            return None
    if t is None or ufunc.nout != 1 or ufunc.signature is not None or t._sharding._partial_axes:
        return None
    if meshes0 is not None and any(m is not t._sharding.mesh and m != t._sharding.mesh for m in meshes0):
        return None
    if not t._sharding._halo_sizes and t._global_shape:  # no halos: numpy's own result is the new buffer
        out = ufunc(*args)
        if not out.flags.c_contiguous:  # (a transposed view's operands give an F-ordered result)
            out = np.ascontiguousarray(out)
        return _new_tensor(tensor_type, out, out, t._sharding, t._global_shape, t._slices, t._periodic)
    key = tuple(key)
    dt = _UFUNC_DTYPES.get(key)
    if dt is None:
        try:
            dt = ufunc.resolve_dtypes(tuple(k for k in key[1:]) + (None,))[-1]
        except Exception:
            return None
        _UFUNC_DTYPES[key] = dt
    layout = _layout(t._sharding, t._global_shape)
    if layout.halos:
        local = np.zeros(layout.local_shape, dt)
        interior = local[layout.index]
    else:
        local = interior = np.empty(layout.local_shape, dt)
    ufunc(*args, out=interior)
    return _new_tensor(tensor_type, local, interior, t._sharding, t._global_shape, layout.slices, t._periodic)


# numpy's scalar arithmetic on real floating values (its operators on numpy scalars: ~0.04 us, where the ufunc
# on 0-d arrays takes ~0.25 us): the same results bit for bit, casts and error state (complex values differ in
# the last bit from the ufunc's loops: they keep the ufunc)
_SCALAR_OPS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
               np.true_divide: operator.truediv, np.negative: operator.neg, np.positive: operator.pos,
               np.absolute: operator.abs, np.less: operator.lt, np.less_equal: operator.le, np.greater: operator.gt,
               np.greater_equal: operator.ge, np.equal: operator.eq, np.not_equal: operator.ne}


def _scalar_ufunc(ufunc, inputs, out, tensor_type):
    """``x + 1.0``, ``np.tanh(x)``, ``tr += x`` on 0-d tensors (not partial) of one sharding and scalars: numpy
    on the values, no plan and no layout (a loop's ``tr += np.tanh(a[i, i])`` is three of these a turn).
    Real floating values go through numpy's scalars (its scalar arithmetic for the operators).

    ``out``: None, or a 1-tuple of such a 0-d tensor, written in place.  Returns None where it does not apply
    (the general path runs).

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> x = DistributedTensor.from_global(np.arange(3.0), Sharding(Mesh((-1,)), [[0]]))[2]
    >>> y = _scalar_ufunc(np.add, (x, 1.0), None, DistributedTensor)
    >>> y.shape, float(y), float(x)
    ((), 3.0, 2.0)
    """
    # (each attribute read of a compiled function costs ~40 ns: a statement's few are read once)
    t = s0 = None
    vals = []
    real = True
    for x in inputs:
        tx = type(x)
        if tx is tensor_type:
            s = x._sharding
            if x._global_shape:
                return None
            if s0 is None:
                if s._partial_axes:
                    return None
                t, s0 = x, s
            elif s is not s0 and s != s0:
                return None
            v = x._local
            r = v[()]
            if type(r) in _REAL_TYPES:  # (its numpy scalar: numpy's scalar arithmetic)
                v = r
            else:
                real = False
            vals.append(v)
        elif tx in _SCALARS or isinstance(x, np.generic):
            vals.append(x)
            if tx is complex or tx not in _SCALARS and type(x) not in _REAL_TYPES and x.dtype.kind == "c":
                real = False
        else:
            return None
    if t is None:
        return None
    op = _scalar_op(ufunc) if real else None
    if op is None:
        plain = _plain_known(ufunc)
        if not (plain if plain is not None else _plain_ufunc(ufunc)):
            return None
    if out is not None:
        o = out[0] if type(out) is tuple and len(out) == 1 else None
        if type(o) is not tensor_type or o._global_shape or (o._sharding is not s0 and o._sharding != s0):
            return None
        if op is not None:
            r = op(*vals)
            if getattr(r, "dtype", None) == o._local.dtype:  # (else numpy's cast rules, by the ufunc below)
                o._local[()] = r
                return o
        ufunc(*vals, out=o._local, casting="same_kind")
        return o
    if op is not None:
        r = op(vals[0], vals[1]) if len(vals) == 2 else op(vals[0])
    else:
        r = ufunc(*vals)
    return _value_tensor(tensor_type, r, s0, t._periodic)


_REAL_TYPES = frozenset((np.float64, np.float32, np.float16, np.longdouble))
_PLAIN: dict = {}  # ufunc -> one output and no core dims (`_plain_ufunc`)
# (bound once: a compiled module's ``d.get(k)`` looks the method up on every call)
_scalar_op, _plain_known = _SCALAR_OPS.get, _PLAIN.get


def _plain_ufunc(ufunc) -> bool:
    """Whether ``ufunc`` has one output and elementwise loops (no gufunc signature), kept in `_PLAIN`."""
    if len(_PLAIN) > 1024:  # (``np.frompyfunc`` makes a new ufunc each call)
        _PLAIN.clear()
    r = _PLAIN[ufunc] = ufunc.nout == 1 and ufunc.signature is None
    return r


def _describe(role, i):
    return f"{role} {i}" if role != "where" else "where="


def _mixed_operands(inputs, outs, tensor_type) -> bool:
    """Whether an elementwise call needs the sharding rule: numpy arrays, or tensors of different
    shardings or shapes (including ``out=``)."""
    first = None
    for x in (*inputs, *outs):
        if isinstance(x, tensor_type):
            if first is None:
                first = x
            elif x._sharding != first._sharding or x._global_shape != first._global_shape:
                return True
        elif isinstance(x, np.ndarray) and x.ndim > 0:
            return True
    return False


def _check_same(name, ref, other):
    (r_role, r_i, a), (o_role, o_i, b) = ref, other
    if a._sharding != b._sharding:
        raise ShardingError(
            f"{name}: {_describe(r_role, r_i)} has sharding <{a._sharding}>, {_describe(o_role, o_i)} has "
            f"<{b._sharding}>: reshard one of them first"
        )
    if a._global_shape != b._global_shape:
        raise ShardingError(
            f"{name}: {_describe(r_role, r_i)} has global shape {a._global_shape}, {_describe(o_role, o_i)} has "
            f"{b._global_shape}; elementwise operations need one shape (no broadcasting between tensors)"
        )


def _check_partial_ufunc(ufunc, inputs, s: Sharding, tensor_type):
    """Allow only ufuncs that keep "value = partial_type over the partial axes" true.

    sum: negation, scaling by a scalar (``t * c``, ``t / c``), and adding or
    subtracting two partial tensors.  max/min: adding or subtracting a scalar
    (``t + c``, ``t - c``) and scaling by a positive scalar.  Everything else
    needs the full values: gather() (or reshard, later) first.
    """
    kinds = ["t" if isinstance(x, tensor_type) else "c" for x in inputs]
    scalars = [x for x in inputs if not isinstance(x, tensor_type)]
    ok = False
    if s.partial_type == "sum":
        if ufunc in (np.negative, np.positive):
            ok = True
        elif ufunc is np.multiply and sorted(kinds) == ["c", "t"]:
            ok = True
        elif ufunc is np.divide and kinds == ["t", "c"]:
            ok = True
        elif ufunc in (np.add, np.subtract) and kinds == ["t", "t"]:
            ok = True
    elif s.partial_type in ("max", "min"):
        if ufunc in (np.add, np.subtract) and kinds == ["t", "c"] or ufunc is np.add and kinds == ["c", "t"]:
            ok = True
        elif ufunc is np.multiply and sorted(kinds) == ["c", "t"] and np.all(np.asarray(scalars[0]) > 0):
            ok = True
        elif (ufunc is np.maximum if s.partial_type == "max" else ufunc is np.minimum) and kinds == ["t", "t"]:
            ok = True
    if not ok:
        raise ShardingError(
            f"{ufunc.__name__}: the operands include a partial tensor ({s.partial_type} over mesh axes "
            f"{list(s.partial_axes)}); {ufunc.__name__} of the partial values is not the partial value of the "
            "result: gather() it (or reshard it to a non-partial sharding) first"
        )


def _result_dtypes(ufunc, args, kwargs):
    """The output dtypes numpy will pick, so results can be written straight into new buffers."""
    if kwargs.keys() - {"casting", "order"}:
        return None
    dts = []
    for x in args:
        if isinstance(x, np.ndarray) and x.ndim > 0:
            dts.append(x.dtype)
        elif isinstance(x, bool):
            dts.append(np.dtype(bool))
        elif isinstance(x, (int, float, complex)) and not isinstance(x, np.generic):
            dts.append(type(x))
        else:
            dts.append(np.asarray(x).dtype)
    try:
        res = ufunc.resolve_dtypes(tuple(dts) + (None,) * ufunc.nout)
    except Exception:
        return None
    return res[ufunc.nin:]


try:  # numpy 2 keeps np.errstate in a context variable: its value changes only with the settings
    from numpy._core._ufunc_config import _extobj_contextvar as _ERRSTATE
except ImportError:  # pragma: no cover
    _ERRSTATE = None
_errstate_seen = [None, False]
# numpy's error state now (bound once: a method lookup per call less; `meshrt.tensor.lazy` keeps it per node)
_errstate_now = _ERRSTATE.get if _ERRSTATE is not None else type(None)


def _errstate_ok() -> bool:
    """No floating-point error of the current ``np.errstate`` raises, calls or logs: a computation that runs on
    some processes only, or fused (no warnings), may be taken (`meshrt.tensor.lazy`, `meshrt.tensor.fastpath`)."""
    if _ERRSTATE is not None:
        cur = _errstate_now()
        if cur is _errstate_seen[0]:
            return _errstate_seen[1]
    e = np.geterr()
    ok = all(e[k] in ("ignore", "warn") for k in ("divide", "over", "under", "invalid"))
    if _ERRSTATE is not None:
        _errstate_seen[:] = [cur, ok]
    return ok
