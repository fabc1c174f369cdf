"""The core functions of the array API standard (2024.12) on `DistributedTensor`.

Each function first tries meshrt's own distributed form (numpy's function called on the tensors: ufuncs,
reductions, contractions, layout ops, scans, index arrays, each planned with collectives); a case meshrt has
no distributed algorithm for gathers the operands (an allgather; nothing moves for replicated tensors),
runs numpy's array API namespace on the global arrays, identically on every process, and keeps each
process's block of the result. `GATHERS` records every function that gathered and why, for ``explain_op``.

>>> import meshrt.array_api as xp
>>> x = xp.asarray([3.0, 1.0, 2.0])
>>> float(xp.sum(x * 2)), xp.sort(x).shape
(12.0, (3,))
"""

from __future__ import annotations

import builtins
import math
import operator
from collections import namedtuple

import numpy as np

from ..runtime import mpi as _mpi
from ..tensor.dispatch import implements
from ..tensor.distributed_tensor import DistributedTensor
from . import _sorting
from ._device import GATHERS, from_numpy, is_replicated, local, mesh_of, sharding_for, wrap, replicated

T = DistributedTensor


def _is_t(x):
    return isinstance(x, T)


def _mesh(*args, device=None):
    if device is not None:
        return device.mesh if hasattr(device, "split_axes") else device
    return mesh_of(*args)


def _gathered(name, fn, args, kwargs, why, replicate=None):
    """numpy's ``fn`` on the operands' global arrays, every process alike; the result kept as blocks."""
    if builtins.any(_is_t(a) and not is_replicated(a) and a.size for a in _flat(args)):
        case = CASES.get(name)
        GATHERS.setdefault(name, why or (case if isinstance(case, str) else ""))
    mesh = mesh_of(*args, *kwargs.values())
    if replicate is None:
        replicate = builtins.all(is_replicated(a) for a in _flat(args) if _is_t(a)) and builtins.any(_is_t(a) for a in _flat(args))
    r = fn(*local(tuple(args)), **{k: local(v) for k, v in kwargs.items()})
    return wrap(r, mesh, replicate=replicate)


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from _flat(a)
        else:
            yield a


def _split(a):
    return _is_t(a) and not is_replicated(a)


def _where_case(*operands):
    shape = np.broadcast_shapes(*[a.shape for a in operands if _is_t(a)])
    if builtins.any(_split(a) and a.shape != shape for a in operands):
        return "a split operand broadcast to a larger shape (meshrt's where does not broadcast between tensors)"
    return None


def _halo_or_partial(x):
    s = x.sharding
    return "a tensor with halos or partial values" if s.is_partial or builtins.any(s.halo_sizes) else None


def _take_case(x, indices, axis):
    if np.ndim(indices) != 1:
        return f"indices of {np.ndim(indices)} dims (take's are 1-d)"
    return None


def _take_along_case(x, indices, axis):
    if not _is_t(x) or not _is_t(indices) or indices.ndim != x.ndim or not -x.ndim <= axis < x.ndim:
        return "indices that are not a tensor of x's rank"
    axis %= x.ndim
    s = x.sharding
    if s.dim_axes(axis):
        return "along a split axis (no distributed take_along_axis)"
    if _halo_or_partial(x):
        return _halo_or_partial(x)
    if builtins.any(indices.shape[d] != x.shape[d] for d in range(x.ndim) if d != axis):
        return "indices broadcast against x"
    return None


def _sort_case(x, **kw):
    return "a tensor of partial values" if x.sharding.is_partial else None


def _searchsorted_case(x1, x2=None, sorter=None, **kw):
    if sorter is not None:
        return "a sorter= array (x1 read through it)"
    if not is_replicated(x1) and not _sorting.sortable_split(x1):
        return "x1 with halos or partial values"
    return None


def _unique_case(x, **kw):
    return "a tensor with halos or partial values" if _split_group(x) is None else None


# What each namespace function does with a split operand, decided from the operands before anything runs:
# name -> the reason the call gathers (a string), or a function of the operands giving the reason or None
# (None: meshrt's distributed form runs, and an error inside it is raised, never answered by gathering).
# The functions missing here always have a distributed form (elementwise, reductions, contractions, layout
# ops, scans). explain_op and docs/array_api.md read this table.
CASES = {
    "where": _where_case,
    "broadcast_to": lambda x, shape=None, **kw: None if shape is None or tuple(shape) == x.shape else
    "broadcast_to a larger shape (a broadcast copy of the data has no distributed form)",
    "tile": lambda x, *a, **kw: _halo_or_partial(x),
    "repeat": lambda x, repeats=None, **kw: "repeats per element (a data-dependent length per element)"
    if _is_t(repeats) or np.ndim(repeats) != 0 else _halo_or_partial(x),
    "take": lambda x, indices, axis=None, **kw: _take_case(x, indices, axis),
    "take_along_axis": lambda x, indices, axis=-1, **kw: _take_along_case(x, indices, axis),
    "meshgrid": "built from the global 1-D arrays",
    "unstack": "slices of the global array",
    "diff": lambda x, prepend=None, append=None, **kw: None if prepend is None and append is None else
    "prepend=/append= (the concatenation has no distributed form here)",
    "sort": _sort_case, "argsort": _sort_case,
    "searchsorted": _searchsorted_case,
    "unique_values": _unique_case, "unique_counts": _unique_case, "unique_inverse": _unique_case,
    "unique_all": _unique_case,
    "linalg.cross": lambda x1, x2, axis=-1, **kw: _cross_case(x1, x2, axis),
}


def _cross_case(x1, x2, axis):
    """Why ``linalg.cross(x1, x2, axis=axis)`` gathers, or None: each process crosses its blocks."""
    if not (_is_t(x1) and _is_t(x2)) or x1.shape != x2.shape:
        return "operands of two shapes (broadcast)"
    if not (x1.ndim and -x1.ndim <= axis < x1.ndim and x1.shape[axis] == 3):
        return None  # (numpy's own error, raised by the distributed form)
    if x1.sharding.dim_axes(axis % x1.ndim):
        return "the vectors' axis is split"
    return None


def decide(name, *operands, **kwargs):
    """Why ``name(*operands, **kwargs)`` gathers its split operands, or None when it does not (no operand is
    split, or meshrt has a distributed form for these shardings)."""
    if not builtins.any(_split(a) for a in _flat(operands)):
        return None
    case = CASES.get(name)
    if case is None or isinstance(case, str):
        return case
    return case(*operands, **kwargs)


def _call(name, fn, args, kwargs=None, gathers=None):
    """``fn`` on the tensors (meshrt's distributed form); ``gathers`` is the reason this case has none
    (None: it has one, and an error inside it is raised, never answered by gathering)."""
    kwargs = kwargs or {}
    if gathers is None and builtins.any(_is_t(a) and not is_replicated(a) for a in _flat(args)):
        return wrap(fn(*args, **kwargs), mesh_of(*args))
    return _gathered(name, fn, args, kwargs, gathers or "")


def _need_array(name, x):
    if not _is_t(x):
        raise TypeError(f"{name}: x must be an array of this namespace (a DistributedTensor), got {type(x).__name__}")


# -- elementwise -------------------------------------------------------------------------------------------
def _elementwise_call(name, ufunc, args):
    if not builtins.any(_is_t(a) for a in args):
        raise TypeError(f"{name}: expected an array of this namespace, got "
                        f"{', '.join(type(a).__name__ for a in args)}")
    for a in args:
        if not (_is_t(a) or isinstance(a, (bool, int, float, complex))):
            raise TypeError(f"{name}: expected an array or a Python scalar, got {type(a).__name__}")
    if builtins.all(_is_t(a) and is_replicated(a) or not _is_t(a) for a in args):
        return _gathered(name, ufunc, args, {}, "")
    return _call(name, ufunc, args)


def _elementwise(name, ufunc, nin):
    params = "x, /" if nin == 1 else "x1, x2, /"
    ns = {"_run": _elementwise_call, "_u": ufunc}
    exec(f"def {name}({params}):\n    return _run({name!r}, _u, ({params[:-3]},))\n", ns)
    f = ns[name]
    f.__module__ = __name__
    f.__doc__ = f"The standard's ``{name}``: ``np.{ufunc.__name__}`` elementwise on the tensors' blocks."
    return f


_UNARY = ("abs acos acosh asin asinh atan atanh bitwise_invert ceil conj cos cosh exp floor imag isfinite "
          "isinf isnan log log1p log2 log10 logical_not negative positive real reciprocal sign signbit sin sinh "
          "square sqrt tan tanh trunc").split()
_BINARY = ("add atan2 bitwise_and bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor copysign divide "
           "equal greater greater_equal hypot less less_equal logaddexp logical_and logical_or "
           "logical_xor maximum minimum multiply nextafter not_equal pow remainder subtract").split()
ELEMENTWISE = {}
for _n in _UNARY:
    ELEMENTWISE[_n] = _elementwise(_n, getattr(np, _n), 1)
for _n in _BINARY:
    ELEMENTWISE[_n] = _elementwise(_n, getattr(np, _n), 2)


def _floor_divide(x1, x2):
    # numpy's floor_divide gives nan for inf // finite and -1 for finite // inf of the other sign; the standard
    # asks for +-inf and -0 there
    q = np.floor_divide(x1, x2)
    if q.dtype.kind != "f":
        return q
    q = np.where(np.isinf(x1) & np.isfinite(x2) & (x2 != 0), np.divide(x1, x2), q)
    other = np.isfinite(x1) & (x1 != 0) & np.isinf(x2) & (np.signbit(x1) != np.signbit(x2))
    return np.where(other, np.asarray(-0.0, dtype=q.dtype), q)


_floor_divide.__name__ = "floor_divide"


def floor_divide(x1, x2, /):
    """The standard's ``floor_divide`` (``np.floor_divide`` with the standard's results for infinities)."""
    return _elementwise_call("floor_divide", _floor_divide, (x1, x2))


def _expm1(x):
    # numpy's complex expm1 misses the standard's infinities and NaNs; real inputs are numpy's own
    r = np.expm1(x)
    if r.dtype.kind != "c":
        return r
    re, im = np.real(x), np.imag(x)
    bad_im = np.isinf(im) | np.isnan(im)
    r = np.where((re == np.inf) & (im == 0), x, r)
    r = np.where((re == -np.inf) & bad_im, -1 + 0j, r)
    r = np.where((re == np.inf) & bad_im, complex(np.inf, np.nan), r)
    return np.where(np.isnan(re) & (im == 0), x, r)


_expm1.__name__ = "expm1"


def expm1(x, /):
    """The standard's ``expm1`` (``np.expm1``; complex infinities and NaNs as the standard gives them)."""
    return _elementwise_call("expm1", _expm1, (x,))


def round(x, /):  # noqa: A001
    """Round half to even (``np.round``)."""
    _need_array("round", x)
    return _call("round", np.round, (x,))


def clip(x, /, min=None, max=None):  # noqa: A002
    """Clamp each element to ``[min, max]`` (scalars or arrays); the result has ``x``'s dtype."""
    _need_array("clip", x)
    if min is None and max is None:
        return x.copy() if hasattr(x, "copy") else x
    dt = x.dtype

    def run(x, lo, hi):
        r = x
        if lo is not None:
            r = np.maximum(r, lo) if not isinstance(lo, (int, float)) or dt.kind in "fc" or _fits(lo, dt) else r
        if hi is not None:
            r = np.minimum(r, hi) if not isinstance(hi, (int, float)) or dt.kind in "fc" or _fits(hi, dt) else r
        if r is x:
            r = np.positive(x) if dt != np.bool_ else np.logical_and(x, True)
        return r.astype(dt) if r.dtype != dt else r
    args = (x, min, max)
    return _call("clip", run, args)


def _fits(v, dt):
    if dt.kind == "b":
        return isinstance(v, bool)
    info = np.iinfo(dt)
    return info.min <= v <= info.max


# -- creation ----------------------------------------------------------------------------------------------
def _dtype(dtype, default):
    return np.dtype(default if dtype is None else dtype)


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(operator.index(n) for n in shape)


def _new(shape, dtype, device, fill):
    shape = _shape(shape)
    s = sharding_for(len(shape), device)
    if fill is None:
        return T.empty(shape, s, dtype)
    if fill == 0:
        return T.zeros(shape, s, dtype)
    return T.full(shape, s, fill, dtype)


def empty(shape, *, dtype=None, device=None):
    """An uninitialized array of ``shape`` (default float64) on ``device`` (default: dim 0 split)."""
    return _new(shape, _dtype(dtype, np.float64), device, None)


def zeros(shape, *, dtype=None, device=None):
    """Zeros of ``shape`` (default float64) on ``device``."""
    return _new(shape, _dtype(dtype, np.float64), device, 0)


def ones(shape, *, dtype=None, device=None):
    """Ones of ``shape`` (default float64) on ``device``."""
    return _new(shape, _dtype(dtype, np.float64), device, 1)


def _fill_dtype(fill_value, dtype):
    if dtype is not None:
        return np.dtype(dtype)
    if isinstance(fill_value, bool):
        return np.dtype(np.bool_)
    if isinstance(fill_value, int):
        return np.dtype(np.int64)
    if isinstance(fill_value, float):
        return np.dtype(np.float64)
    if isinstance(fill_value, complex):
        return np.dtype(np.complex128)
    if _is_t(fill_value):
        return fill_value.dtype
    raise TypeError(f"fill_value: expected a Python bool, int, float or complex, got {type(fill_value).__name__}")


def full(shape, fill_value, *, dtype=None, device=None):
    """``shape`` filled with ``fill_value``; the dtype defaults to the value's kind (bool, int64, float64,
    complex128)."""
    dt = _fill_dtype(fill_value, dtype)
    if _is_t(fill_value):
        fill_value = fill_value.item()
    shape = _shape(shape)
    v = np.array(fill_value, dtype=dt) if not (dt.kind in "iu" and isinstance(fill_value, float)) else fill_value
    return T.full(shape, sharding_for(len(shape), device), v, dt)


def _like_device(x, device):
    if device is not None:
        return device
    s = x.sharding
    if not s.is_partial and not s.halo_sizes:
        return s
    return x.mesh


def empty_like(x, /, *, dtype=None, device=None):
    """An uninitialized array like ``x`` (its shape, dtype and placement unless given)."""
    _need_array("empty_like", x)
    return _new(x.shape, _dtype(dtype, x.dtype), _like_device(x, device), None)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros like ``x``."""
    _need_array("zeros_like", x)
    return _new(x.shape, _dtype(dtype, x.dtype), _like_device(x, device), 0)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones like ``x``."""
    _need_array("ones_like", x)
    return _new(x.shape, _dtype(dtype, x.dtype), _like_device(x, device), 1)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` in an array like ``x``."""
    _need_array("full_like", x)
    _fill_dtype(fill_value, np.float64)  # the type check
    dt = _dtype(dtype, x.dtype)
    if _is_t(fill_value):
        fill_value = fill_value.item()
    if dt.kind in "iu" and isinstance(fill_value, float):
        v = fill_value
    elif dt.kind == "b":
        v = np.bool_(fill_value)
    else:
        v = np.array(fill_value).astype(dt) if dt.kind in "fc" or isinstance(fill_value, (bool, int)) else fill_value
    return T.full(x.shape, sharding_for(x.ndim, _like_device(x, device)), v, dt)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An array from ``obj``: a tensor (converted, copied or resharded as asked), or a global numpy array,
    buffer, nested sequence or scalar that every process passes alike: each process keeps its block
    (no communication)."""
    if _is_t(obj):
        x = obj
        if dtype is not None and np.dtype(dtype) != x.dtype:
            if copy is False:
                raise ValueError(f"asarray(copy=False): the array is {x.dtype}, {np.dtype(dtype)} needs a copy")
            x = x.astype(dtype)
            copy = False
        if device is not None:
            s = sharding_for(x.ndim, device)
            if s != x.sharding:
                if copy is False:
                    raise ValueError("asarray(copy=False): moving to another device needs a copy")
                return x.reshard(s)
        return x.copy() if copy else x
    if isinstance(obj, (list, tuple)) and builtins.any(_is_t(v) for v in _flat(obj)):
        obj = local(obj)
    if copy is False and not isinstance(obj, (np.ndarray, np.generic)) and not hasattr(obj, "__buffer__") \
            and not hasattr(obj, "__array_interface__"):
        raise ValueError("asarray(copy=False): a Python sequence or scalar always needs a copy")
    if dtype is None and not isinstance(obj, (np.ndarray, np.generic)) and not hasattr(obj, "__array__"):
        a = _from_python(obj)
    else:
        a = np.asarray(obj, dtype=dtype)
        if isinstance(obj, memoryview) or hasattr(obj, "__buffer__") and not isinstance(obj, (np.ndarray, np.generic)):
            a = np.asarray(obj, dtype=dtype)
    if dtype is not None and a.dtype != np.dtype(dtype):
        a = a.astype(dtype)
    return from_numpy(a, sharding_for(a.ndim, device))


def _from_python(obj):
    flat = list(_flat([obj])) if isinstance(obj, (list, tuple)) else [obj]
    if flat and builtins.all(isinstance(v, bool) for v in flat):
        return np.asarray(obj, dtype=np.bool_)
    if flat and builtins.all(isinstance(v, (bool, int)) and not isinstance(v, np.generic) for v in flat):
        return np.asarray(obj, dtype=np.int64)
    if flat and builtins.any(isinstance(v, complex) for v in flat):
        return np.asarray(obj, dtype=np.complex128)
    if flat and builtins.all(isinstance(v, (bool, int, float)) for v in flat):
        return np.asarray(obj, dtype=np.float64)
    return np.asarray(obj)


def from_dlpack(x, /, *, device=None, copy=None):
    """An array from a DLPack producer: a tensor as it is (or copied); any other producer is read as a
    global array every process passes alike."""
    if _is_t(x):
        return asarray(x, device=device, copy=copy)
    return asarray(np.from_dlpack(x, copy=copy), device=device)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """``[start, stop)`` by ``step`` (numpy's rules for the length), each process building its block."""
    r = np.arange(start, stop, step, dtype=dtype)
    if dtype is None and r.dtype.kind == "i":
        r = r.astype(np.int64)
    return from_numpy(r, sharding_for(1, device))


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    """``num`` evenly spaced values from ``start`` to ``stop``."""
    if dtype is None:
        dtype = np.complex128 if isinstance(start, complex) or isinstance(stop, complex) else np.float64
    r = np.linspace(start, stop, num, dtype=dtype, endpoint=endpoint)
    return from_numpy(r, sharding_for(1, device))


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """Ones on the ``k``-th diagonal."""
    r = np.eye(n_rows, n_cols, k=k, dtype=_dtype(dtype, np.float64))
    return from_numpy(r, sharding_for(2, device))


def meshgrid(*arrays, indexing="xy"):
    """Coordinate matrices from 1-D arrays."""
    for a in arrays:
        _need_array("meshgrid", a)
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing: expected 'xy' or 'ij', got {indexing!r}")
    return list(_gathered("meshgrid", np.meshgrid, arrays, {"indexing": indexing}, "built from the global 1-D arrays"))


def tril(x, /, *, k=0):
    """The lower triangle of the last two dims."""
    _need_array("tril", x)
    return _call("tril", np.tril, (x,), {"k": k})


def triu(x, /, *, k=0):
    """The upper triangle of the last two dims."""
    _need_array("triu", x)
    return _call("triu", np.triu, (x,), {"k": k})


# -- data types --------------------------------------------------------------------------------------------
def astype(x, dtype, /, *, copy=True, device=None):
    """``x`` converted to ``dtype`` (a copy unless ``copy=False`` and nothing changes)."""
    _need_array("astype", x)
    dt = np.dtype(dtype)
    r = x if (dt == x.dtype and not copy) else x.astype(dt) if dt != x.dtype else x.copy()
    return asarray(r, device=device) if device is not None else r


def _dt(v):
    return v.dtype if _is_t(v) else v


def can_cast(from_, to, /):
    """Whether ``from_`` (a dtype or array) casts to ``to`` by the standard's promotion rules."""
    f, t = np.dtype(_dt(from_)), np.dtype(to)
    if f == t:
        return True
    if f.kind == "b":
        return True if t.kind == "b" else True
    return bool(np.can_cast(f, t, casting="safe")) and not (f.kind in "iu" and t.kind in "fc")


def result_type(*arrays_and_dtypes):
    """The standard's type promotion of arrays, dtypes and Python scalars."""
    vals = [_dt(v) for v in arrays_and_dtypes]
    if not vals:
        raise ValueError("result_type: at least one array or dtype is required")
    if builtins.all(isinstance(v, (bool, int, float, complex)) for v in vals):
        raise ValueError("result_type: at least one array or dtype is required")
    return np.result_type(*vals)


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind`` (a dtype, a kind name, or a tuple of them)."""
    return np.isdtype(dtype, kind)


_finfo = namedtuple("finfo_object", "bits eps max min smallest_normal dtype")
_iinfo = namedtuple("iinfo_object", "bits max min dtype")


def finfo(type, /):  # noqa: A002
    """Machine limits of a floating dtype (or an array's), as Python floats."""
    f = np.finfo(_dt(type))
    return _finfo(int(f.bits), float(f.eps), float(f.max), float(f.min), float(f.smallest_normal), f.dtype)


def iinfo(type, /):  # noqa: A002
    """Machine limits of an integer dtype (or an array's), as Python ints."""
    f = np.iinfo(_dt(type))
    return _iinfo(int(f.bits), int(f.max), int(f.min), f.dtype)


# -- linear algebra in the main namespace ------------------------------------------------------------------
def matmul(x1, x2, /):
    """Matrix product (meshrt's contraction planner)."""
    _need_array("matmul", x1), _need_array("matmul", x2)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul: 0-d arrays are not allowed")
    return _call("matmul", np.matmul, (x1, x2))


def matrix_transpose(x, /):
    """The transpose of the last two dims."""
    _need_array("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: x must have at least 2 dims, got shape {x.shape}")
    return _call("matrix_transpose", lambda a: np.swapaxes(a, -1, -2), (x,))


def tensordot(x1, x2, /, *, axes=2):
    """Contraction over ``axes`` (meshrt's planner)."""
    _need_array("tensordot", x1), _need_array("tensordot", x2)
    return _call("tensordot", np.tensordot, (x1, x2), {"axes": axes})


def vecdot(x1, x2, /, *, axis=-1):
    """``builtins.sum(conj(x1) * x2, axis)`` after broadcasting."""
    _need_array("vecdot", x1), _need_array("vecdot", x2)
    if x1.shape[axis] != x2.shape[axis] if (x1.ndim and x2.ndim) else True:
        raise ValueError(f"vecdot: the contracted dims differ: shapes {x1.shape}, {x2.shape}, axis={axis}")
    nd = builtins.max(x1.ndim, x2.ndim)
    if not -nd <= axis < nd or not (-builtins.min(x1.ndim, x2.ndim) <= axis):
        raise ValueError(f"vecdot: axis {axis} out of range for shapes {x1.shape}, {x2.shape}")

    def run(a, b):
        prod = (np.conj(a) if a.dtype.kind == "c" else a) * b
        return np.sum(prod, axis=axis, dtype=prod.dtype)
    return _call("vecdot", run, (x1, x2))


# -- manipulation ------------------------------------------------------------------------------------------
def _fn(name, npfn, doc, check=None):
    def f(x, /, *args, **kwargs):
        _need_array(name, x)
        return _call(name, npfn, (x, *args), kwargs)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = doc
    return f


def broadcast_arrays(*arrays):
    """The arrays broadcast to one shape."""
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    return [broadcast_to(a, shape) for a in arrays]


def broadcast_to(x, /, shape):
    """``x`` broadcast to ``shape``."""
    _need_array("broadcast_to", x)
    shape = _shape(shape)
    np.broadcast_shapes(x.shape, shape)
    if tuple(np.broadcast_shapes(x.shape, shape)) != shape:
        raise ValueError(f"broadcast_to: shape {x.shape} does not broadcast to {shape}")
    if shape == x.shape:
        return _call("broadcast_to", lambda a: a.copy(), (x,))
    return _call("broadcast_to", lambda a: np.array(np.broadcast_to(a, shape)), (x,),
                 gathers=decide("broadcast_to", x, shape))


def concat(arrays, /, *, axis=0):
    """Join arrays along ``axis`` (None: flattened first)."""
    arrays = list(arrays)
    for a in arrays:
        _need_array("concat", a)
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    return _call("concat", lambda *a: np.concat(a, axis=axis), tuple(arrays))


def stack(arrays, /, *, axis=0):
    """Join arrays along a new ``axis``."""
    arrays = list(arrays)
    for a in arrays:
        _need_array("stack", a)
    return _call("stack", lambda *a: np.stack(a, axis=axis), tuple(arrays))


def unstack(x, /, *, axis=0):
    """The slices of ``x`` along ``axis``, as a tuple."""
    _need_array("unstack", x)
    if x.ndim == 0:
        raise ValueError("unstack: x must have at least one dim")
    return tuple(_gathered("unstack", np.unstack, (x,), {"axis": axis}, "slices of the global array"))


def reshape(x, /, shape, *, copy=None):
    """``x`` with a new shape (meshrt's reshape plan; copy=False raises where a copy is needed)."""
    _need_array("reshape", x)
    shape = _shape(shape)
    if copy is False and shape != x.shape:
        raise ValueError("reshape(copy=False): a reshape of a DistributedTensor always builds a new tensor")
    r = _call("reshape", lambda a: np.reshape(a, shape), (x,))
    return r.copy() if copy and r is x else r


def expand_dims(x, /, axis=0):
    """``x`` with a new length-1 dim at ``axis``."""
    _need_array("expand_dims", x)
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(f"expand_dims: axis {axis} out of range for {x.ndim + 1} dims")
    return _call("expand_dims", lambda a: np.expand_dims(a, axis), (x,))


def squeeze(x, /, axis):
    """``x`` without the length-1 dims ``axis``."""
    _need_array("squeeze", x)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if not -x.ndim <= a < x.ndim:
            raise IndexError(f"squeeze: axis {a} out of range for {x.ndim} dims")
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: dim {a} has length {x.shape[a]}, not 1")
    return _call("squeeze", lambda a: np.squeeze(a, axis), (x,))


def permute_dims(x, /, axes):
    """``x`` with its dims permuted."""
    _need_array("permute_dims", x)
    return _call("permute_dims", lambda a: np.transpose(a, axes), (x,))


def flip(x, /, *, axis=None):
    """``x`` reversed along ``axis`` (None: all)."""
    _need_array("flip", x)
    return _call("flip", lambda a: np.flip(a, axis), (x,))


def moveaxis(x, source, destination, /):
    """``x`` with dims moved from ``source`` to ``destination``."""
    _need_array("moveaxis", x)
    return _call("moveaxis", lambda a: np.moveaxis(a, source, destination), (x,))


def roll(x, /, shift, *, axis=None):
    """``x`` rolled by ``shift`` along ``axis`` (None: flattened)."""
    _need_array("roll", x)
    return _call("roll", lambda a: np.roll(a, shift, axis), (x,))


def tile(x, repetitions, /):
    """``x`` repeated per dim: copies joined by `concat` along each dim (a split dim's copies are moved
    where the result's blocks are; nothing is gathered).

    >>> import meshrt.array_api as xp
    >>> xp.tile(xp.asarray([1, 2]), (2, 2)).gather().tolist()
    [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    _need_array("tile", x)
    reps = tuple(operator.index(r) for r in repetitions)
    if builtins.any(r < 0 for r in reps):
        raise ValueError(f"tile: repetitions must not be negative, got {reps}")
    why = decide("tile", x)
    if why is not None or not _split(x):
        return _call("tile", lambda a: np.tile(a, reps), (x,), gathers=why)
    y = reshape(x, (1,) * (len(reps) - x.ndim) + x.shape) if len(reps) > x.ndim else x
    reps = (1,) * (y.ndim - len(reps)) + reps
    for d, r in enumerate(reps):
        if r == 0:
            y = y[(slice(None),) * d + (slice(0, 0),)]
        elif r > 1:
            y = concat([y] * r, axis=d)
    return y if y is not x else x.copy()


def repeat(x, repeats, /, *, axis=None):
    """Each element repeated ``repeats`` times. An int: each process repeats its own block (along a split
    dim the result's blocks are uneven, ``repeats`` times the input's); an array of counts per element
    gathers (a data-dependent length per element).

    >>> import meshrt.array_api as xp
    >>> xp.repeat(xp.asarray([1, 2, 3]), 2).gather().tolist()
    [1, 1, 2, 2, 3, 3]
    """
    _need_array("repeat", x)
    why = decide("repeat", x, repeats)
    if why is not None or not _split(x):
        return _gathered("repeat", lambda a, r: np.repeat(a, r, axis=axis), (x, repeats), {}, why or "")
    r = operator.index(repeats)
    if r < 0:
        raise ValueError(f"repeat: repeats must not be negative, got {r}")
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"repeat: axis {axis} is out of bounds for a {x.ndim}-d array")
    axis %= x.ndim
    s = x.sharding
    if s.dim_axes(axis):
        offs = s.dim_offsets(x.shape)
        s = s.replace(sharded_dims_offsets=[o * r if d == axis else o for d in s.sharded_dims for o in offs[d]])
    shape = x.shape[:axis] + (x.shape[axis] * r,) + x.shape[axis + 1:]
    return T.from_local(np.ascontiguousarray(np.repeat(x.local, r, axis=axis)), s, shape)


# -- indexing ------------------------------------------------------------------------------------------------
def take(x, indices, /, *, axis=None):
    """Elements of ``x`` at integer ``indices`` (1-d) along ``axis``: ``x[..., indices, ...]``, each process
    fetching only the elements its block of the result needs (no gather of ``x``).

    >>> import meshrt.array_api as xp
    >>> xp.take(xp.asarray([[1, 2], [3, 4], [5, 6]]), xp.asarray([2, 0]), axis=0).gather().tolist()
    [[5, 6], [1, 2]]
    """
    _need_array("take", x)
    if axis is None and x.ndim != 1:
        raise ValueError(f"take: axis is required for a {x.ndim}-d array")
    axis = 0 if axis is None else axis
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"take: axis {axis} is out of bounds for a {x.ndim}-d array")
    why = decide("take", x, indices, axis=axis)
    if why is None and builtins.any(_split(a) for a in (x, indices)):
        if not np.issubdtype(indices.dtype if hasattr(indices, "dtype") else np.asarray(indices).dtype, np.integer):
            raise IndexError("take: indices must be integers")
        return x[(slice(None),) * (axis % x.ndim) + (indices,)]
    return _gathered("take", lambda a, i: np.take(a, i, axis=axis), (x, indices), {}, why or "")


def take_along_axis(x, indices, /, *, axis=-1):
    """Elements of ``x`` at ``indices`` (same rank) along ``axis``. Along a dim that is whole on every
    process, with ``indices`` shaped like ``x`` in the other dims (``argsort``'s output, say): each process
    takes from its own block (``indices`` moved to ``x``'s layout first where it differs)."""
    _need_array("take_along_axis", x)
    why = decide("take_along_axis", x, indices, axis=axis)
    if why is None and _split(x):
        if not np.issubdtype(indices.dtype, np.integer):
            raise IndexError("take_along_axis: indices must be integers")
        s = x.sharding
        ind = indices if indices.sharding == s else indices.to_device(s)
        block = np.take_along_axis(x.local, ind.local, axis=axis)
        return T.from_local(np.ascontiguousarray(block), s, indices.shape)
    return _gathered("take_along_axis", lambda a, i: np.take_along_axis(a, i, axis=axis), (x, indices), {},
                     why or "")


# -- searching, sorting, sets ------------------------------------------------------------------------------
def argmax(x, /, *, axis=None, keepdims=False):
    """Index of the first maximum."""
    _need_array("argmax", x)
    return _call("argmax", lambda a: np.argmax(a, axis=axis, keepdims=keepdims), (x,))


def argmin(x, /, *, axis=None, keepdims=False):
    """Index of the first minimum."""
    _need_array("argmin", x)
    return _call("argmin", lambda a: np.argmin(a, axis=axis, keepdims=keepdims), (x,))


def count_nonzero(x, /, *, axis=None, keepdims=False):
    """The number of non-zero elements (a distributed sum of ``x != 0``)."""
    _need_array("count_nonzero", x)
    if isinstance(axis, list):
        axis = tuple(axis)
    return sum(astype(ELEMENTWISE["not_equal"](x, 0), np.int64), axis=axis, keepdims=keepdims)


def nonzero(x, /):
    """The indices of the non-zero elements, one array per dim; of a split tensor, each process's own
    (offset to global indices), 1-D with uneven blocks over the split dims' mesh axes."""
    _need_array("nonzero", x)
    if x.ndim == 0:
        raise ValueError("nonzero: x must have at least one dim")
    if is_replicated(x):
        return tuple(_gathered("nonzero", np.nonzero, (x,), {}, ""))
    return _sorting.nonzero_split(x)


def _plain_sharding(t):
    s = t.sharding
    if s.is_partial or s.halo_sizes:
        return sharding_for(t.ndim, t.mesh)
    return s


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    """Where ``x2``'s values go in the sorted 1-D ``x1``. A split ``x1`` never moves: each process counts its
    block's elements below each value and one allreduce adds the counts (``x2``'s values are read on every
    process); the result has ``x2``'s placement."""
    _need_array("searchsorted", x1)
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if x1.ndim != 1:
        raise ValueError(f"searchsorted: x1 must be 1-D, got shape {x1.shape}")
    if sorter is None and _sorting.sortable_split(x1):
        values = local(x2)
        counts = _sorting.searchsorted_split(x1, np.asarray(values), side)
        if _is_t(x2):
            return from_numpy(counts, replicated(0, x2.mesh) if is_replicated(x2) else _plain_sharding(x2))
        return wrap(counts, x1.mesh)
    if sorter is None and is_replicated(x1) and _is_t(x2) and not is_replicated(x2):
        out = DistributedTensor.empty(x2.shape, _plain_sharding(x2), np.int64)
        out.interior[...] = np.searchsorted(x1.interior, x2.reshard(out.sharding).interior
                                            if x2.sharding != out.sharding else x2.interior, side=side)
        return out
    why = decide("searchsorted", x1, x2, sorter=sorter)
    return _gathered("searchsorted", lambda a, v, s: np.searchsorted(a, v, side=side, sorter=s),
                     (x1, x2, sorter), {}, why)


_ONE_ARGUMENT = object()


def where(condition, x1=_ONE_ARGUMENT, x2=_ONE_ARGUMENT, /):
    """``x1`` where ``condition``, else ``x2`` (arrays or Python scalars).  ``where(condition)`` alone is
    `nonzero`, as numpy's (scikit-learn's ``roc_curve`` calls it so)."""
    _need_array("where", condition)
    if x1 is _ONE_ARGUMENT and x2 is _ONE_ARGUMENT:
        return nonzero(condition)
    if x1 is _ONE_ARGUMENT or x2 is _ONE_ARGUMENT:
        raise TypeError("where: give both x1 and x2, or neither (then it is nonzero(condition))")
    args = [condition, x1, x2]
    shape = np.broadcast_shapes(*[a.shape for a in args if _is_t(a)])
    for i, a in enumerate(args):
        if _is_t(a) and a.shape != shape and is_replicated(a):
            args[i] = a.interior  # the same numpy array on every process: broadcast locally
    return _call("where", np.where, tuple(args), gathers=decide("where", *args))


def _argsort_np(a, axis, descending, stable):
    if not descending:
        return np.argsort(a, axis=axis, kind="stable" if stable else None)
    n = a.shape[axis]
    r = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
    return n - 1 - r


def _sort_np(a, axis, descending, stable):
    r = np.sort(a, axis=axis, kind="stable" if stable else None)
    return np.flip(r, axis) if descending else r


def _sort_split(name, x, axis, descending, indices):
    """sort/argsort of a tensor not replicated: a sample sort along a split dim 0 of a 1-D tensor; of more
    dims, meshrt's np.sort (the sorted dim's mesh axes move to another dim, an all-to-all, and back) with
    flips for ``descending``."""
    ax = np.lib.array_utils.normalize_axis_index(axis, x.ndim)
    why = decide(name, x)
    if why:
        return _gathered(name, lambda a: (_argsort_np if indices else _sort_np)(a, ax, descending, True),
                         (x,), {}, why)
    if _sorting.sortable_split(x):
        return _sorting.sample_sort(x, descending=descending, want_indices=indices)
    if not indices:
        r = np.sort(x, axis=ax, kind="stable")
        return np.flip(r, axis=ax) if descending else r
    if not descending:
        return np.argsort(x, axis=ax, kind="stable")
    r = np.flip(np.argsort(np.flip(x, axis=ax), axis=ax, kind="stable"), axis=ax)
    return (x.shape[ax] - 1) - r


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    """Indices that sort ``x`` along ``axis`` (always stable); a split axis is sorted in place (see `sort`)."""
    _need_array("argsort", x)
    if x.ndim == 0 or is_replicated(x):
        return _gathered("argsort", lambda a: _argsort_np(a, axis, descending, stable), (x,), {}, "")
    return _sort_split("argsort", x, axis, descending, True)


def sort(x, /, *, axis=-1, descending=False, stable=True):
    """``x`` sorted along ``axis`` (always stable; NaNs last, first when descending). Along dim 0 of a split
    1-D tensor, a sample sort (local sorts, splitters from samples, alltoallv, local merges, and back to ``x``'s
    blocks): the result has ``x``'s placement and no process holds more than its share at the end."""
    _need_array("sort", x)
    if x.ndim == 0 or is_replicated(x):
        return _gathered("sort", lambda a: _sort_np(a, axis, descending, stable), (x,), {}, "")
    return _sort_split("sort", x, axis, descending, False)


def _split_group(x):
    """The communicator of the processes holding distinct blocks of ``x`` (None: not a plain split tensor)."""
    s = x.sharding
    if s.is_partial or s.halo_sizes or not builtins.any(s.split_axes):
        return None
    return x.mesh.group(tuple(sorted(a for axes in s.split_axes for a in axes)))


_SETS = np.lib._arraysetops_impl


def _unique(name, x, want_index, want_inverse):
    """(values, counts, first indices, inverse) of ``x``: of a split tensor, merged from each process's
    distinct values (no gather), the inverse indices sharded like ``x``; else numpy's on the array."""
    group = _split_group(x)
    if group is None:
        def run(a):
            r = np.unique(a.ravel(), equal_nan=False, return_index=True, return_inverse=True, return_counts=True)
            return r[0], r[3], r[1], r[2].reshape(a.shape)
        return _gathered(name, run, (x,), {}, decide(name, x) or "")
    u, c, i, inv = _sorting.unique_split(x, group, want_index=want_index, want_inverse=want_inverse)
    m = x.mesh
    return (wrap(u, m), wrap(c, m), wrap(i, m) if i is not None else None,
            DistributedTensor(inv, x.sharding, x.shape) if inv is not None else None)


def unique_values(x, /):
    """The distinct values, sorted (NaNs each distinct); of a split tensor, from each process's distinct
    values (no gather)."""
    _need_array("unique_values", x)
    return _unique("unique_values", x, False, False)[0]


def unique_counts(x, /):
    """The distinct values and their counts; of a split tensor, merged from each process's (no gather)."""
    _need_array("unique_counts", x)
    u, c, _, _ = _unique("unique_counts", x, False, False)
    return _SETS.UniqueCountsResult(u, c)


def unique_inverse(x, /):
    """The distinct values and each element's index into them (``inverse_indices`` placed like ``x``)."""
    _need_array("unique_inverse", x)
    u, _, _, inv = _unique("unique_inverse", x, False, True)
    return _SETS.UniqueInverseResult(u, inv)


def unique_all(x, /):
    """The distinct values, first (row-major) indices, inverse indices (placed like ``x``) and counts."""
    _need_array("unique_all", x)
    u, c, i, inv = _unique("unique_all", x, True, True)
    return _SETS.UniqueAllResult(u, i, inv, c)


@implements(np.unique)
def _np_unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *, equal_nan=True,
               sorted=True):
    """``np.unique`` of a tensor (``axis=None``): `unique_all`'s merge of each process's distinct values, so a
    split tensor is not gathered; NaNs collapse to one unless ``equal_nan=False``, as numpy's.  The values,
    first indices and counts are replicated, the inverse indices placed like ``ar``."""
    if axis is not None:
        raise TypeError("np.unique on a DistributedTensor: axis= is not supported (only axis=None)")
    if not isinstance(ar, DistributedTensor):
        raise TypeError(f"np.unique: ar must be a DistributedTensor here, got {type(ar).__name__}")
    u, c, i, inv = _unique("np.unique", ar, return_index, return_inverse)
    if equal_nan and ar.dtype.kind in "fc":
        uu = local(u)
        nan = np.flatnonzero(np.isnan(uu))
        if nan.size > 1:  # sorted: the NaNs are last, one per NaN element; numpy keeps the first
            k, m = int(nan[0]), u.mesh
            u = wrap(uu[:k + 1], m)
            c = wrap(np.append(local(c)[:k], local(c)[k:].sum()), m)
            if i is not None:
                i = wrap(np.append(local(i)[:k], local(i)[k:].min()), m)
            if inv is not None:
                inv = np.minimum(inv, k)
    out = [u]
    if return_index:
        out.append(i)
    if return_inverse:
        out.append(inv)
    if return_counts:
        out.append(c)
    return out[0] if len(out) == 1 else tuple(out)


# -- statistics and utilities --------------------------------------------------------------------------------
def _reduction(name, npfn, has_dtype):
    def run(x, axis, keepdims, **kw):
        _need_array(name, x)
        if isinstance(axis, list):
            axis = tuple(axis)
        kwargs = dict(axis=axis, keepdims=keepdims, **kw)
        if not kw.get("dtype", 1):
            kw.pop("dtype")
        if kw.get("dtype") is not None and x.size:
            x = astype(x, kw["dtype"])  # then meshrt's reduction in that dtype
            kwargs.pop("dtype")
        if x.size == 0:
            return _gathered(name, lambda a: np.asarray(npfn(a, **kwargs)), (x,), {}, "")
        return _call(name, lambda a: npfn(a, **kwargs), (x,))
    ns = {"_run": run}
    if has_dtype:
        src = (f"def {name}(x, /, *, axis=None, dtype=None, keepdims=False):\n"
               f"    return _run(x, axis, keepdims, dtype=dtype)\n")
    else:
        src = f"def {name}(x, /, *, axis=None, keepdims=False):\n    return _run(x, axis, keepdims)\n"
    exec(src, ns)
    f = ns[name]
    f.__module__ = __name__
    f.__doc__ = f"The standard's ``{name}`` over ``axis`` (None: all), as meshrt's distributed reduction."
    return f


sum = _reduction("sum", np.sum, True)  # noqa: A001
prod = _reduction("prod", np.prod, True)
max = _reduction("max", np.max, False)  # noqa: A001
min = _reduction("min", np.min, False)  # noqa: A001
mean = _reduction("mean", np.mean, False)
all = _reduction("all", np.all, False)  # noqa: A001
any = _reduction("any", np.any, False)  # noqa: A001


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    """Variance with ``correction`` degrees of freedom removed."""
    _need_array("var", x)
    if isinstance(axis, list):
        axis = tuple(axis)
    if x.size == 0:
        return _gathered("var", lambda a: np.asarray(np.var(a, axis=axis, ddof=correction, keepdims=keepdims)),
                         (x,), {}, "")
    return _call("var", lambda a: np.var(a, axis=axis, ddof=correction, keepdims=keepdims), (x,))


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    """Standard deviation with ``correction`` degrees of freedom removed."""
    _need_array("std", x)
    if isinstance(axis, list):
        axis = tuple(axis)
    if x.size == 0:
        return _gathered("std", lambda a: np.asarray(np.std(a, axis=axis, ddof=correction, keepdims=keepdims)),
                         (x,), {}, "")
    return _call("std", lambda a: np.std(a, axis=axis, ddof=correction, keepdims=keepdims), (x,))


def _cumulative(name, npcum, npfn):
    def f(x, /, *, axis=None, dtype=None, include_initial=False):
        _need_array(name, x)
        if axis is None:
            if x.ndim != 1:
                raise ValueError(f"{name}: axis is required for a {x.ndim}-d array")
            axis = 0
        if not -x.ndim <= axis < x.ndim:
            raise ValueError(f"{name}: axis {axis} out of range for {x.ndim} dims")
        kwargs = dict(axis=axis, dtype=dtype, include_initial=include_initial)
        if x.dtype == np.bool_ and x.size:
            x, dtype = astype(x, np.int64 if dtype is None else dtype), None  # the standard's default integer
            kwargs["dtype"] = None
        if x.size == 0:
            return _gathered(name, lambda a: npfn(a, **kwargs), (x,), {}, "")
        r = _call(name, lambda a: npcum(a, axis=axis, dtype=dtype), (x,))
        if not include_initial:
            return r
        shape = list(x.shape)
        shape[axis] = 1
        first = full(tuple(shape), 0 if name == "cumulative_sum" else 1, dtype=r.dtype,
                     device=r.sharding if not r.sharding.is_partial else r.mesh)
        return concat([first, r], axis=axis)
    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"The standard's ``{name}``: a scan along ``axis`` (split axes: local scans plus an exscan)."
    return f


cumulative_sum = _cumulative("cumulative_sum", np.cumsum, np.cumulative_sum)
cumulative_prod = _cumulative("cumulative_prod", np.cumprod, np.cumulative_prod)


def diff(x, /, *order, axis=-1, n=1, prepend=None, append=None):
    """The ``n``-th discrete difference along ``axis``: of a split tensor, differences of shifted slices
    (a halo exchange, no gather).  ``n`` may also come second positionally, as numpy takes it
    (scikit-learn's ``roc_curve`` calls ``xp.diff(fps, 2)``)."""
    _need_array("diff", x)
    if len(order) > 1:
        raise TypeError(f"diff() takes at most 2 positional arguments ({1 + len(order)} given)")
    if order:
        n = order[0]
    kw = {k: v for k, v in (("prepend", prepend), ("append", append)) if v is not None}
    return _call("diff", lambda a, **k: np.diff(a, n=n, axis=axis, **k), (x,), kw,
                 decide("diff", x, prepend=prepend, append=append))


__all__ = sorted(n for n, f in list(globals().items())
                 if callable(f) and not n.startswith("_") and getattr(f, "__module__", None) == __name__
                 and not isinstance(f, type) and n not in ("T",))
