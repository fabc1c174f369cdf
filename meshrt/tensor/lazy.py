"""Deferred elementwise expressions on `DistributedTensor`: numpy stencils as one fused, halo-aware pass.

Ufunc calls and operators (the IEEE-exact ones of `meshrt.tensor.fuse.UFUNCS`),
Python and numpy scalars, ``np.where``, ``astype``, ``np.roll`` and basic
slices (step 1) of tensors build an expression (a `LazyTensor`) instead of
computing.  The expression is evaluated when its value is needed:

* assigned: ``u[1:-1, 1:-1] = expr``, ``np.add(a, b, out=u)``, ``u += expr``:
  one compiled loop writes straight into ``u``;
* touched in any other way (its buffers, ``gather``, ``float``, printing, a
  reduction, any op that is not deferred): it becomes an ordinary tensor, by
  the same fused loop where every operand has one layout (``np.roll`` form),
  else by replaying the eager operations (same values, same sharding as
  without deferral);
* before any write to any tensor (``t[k] = v``, ``out=``, access to
  ``.local``/``.interior``, any numpy function that is not deferred): every
  pending expression is evaluated first, so no expression sees a later write.

Shifted slices and rolls of a tensor read its neighbours' cells through ghost
layers as wide as the widest shift (periodic for ``np.roll``), exchanged with
`HaloExchange`'s persistent requests while the kernel runs on the cells that
need no ghost, as `apply_stencil` does.  A target that is also read with a
shift is written into a second buffer that then replaces the target's (when
nothing else holds the old one) or is copied back.

Everything not covered runs eagerly exactly as before (``MESHRT_LAZY=0``
turns deferral off).  Fused kernels raise no floating-point warnings; under
``np.errstate`` with ``raise``/``call``/``log`` nothing is deferred.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> u = DistributedTensor.from_global(np.arange(16.0).reshape(4, 4), Sharding(Mesh((-1,), ("x",)), [["x"]]))
>>> e = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
>>> isinstance(e, LazyTensor)
True
>>> u[1:-1, 1:-1] = e
>>> u.gather()[1]
array([4., 5., 6., 7.])
"""

from __future__ import annotations

import bisect
import itertools
import mmap
import operator
import os
from sys import getrefcount as _getrefcount

import numpy as np

from . import fuse as _fuse
from ..runtime import check as _check, mpi as _mpi
from ..errors import ShardingError
from ..halo import HaloExchange, _OnceExchange, _plan_global, plan_halo
from .._keys import key_id as _key_id
from .._slots import deferred as _deferred
from .dispatch import _HANDLED_FUNCTIONS
from .layout import _layout, _zero_halos
from .ufunc import _ERRSTATE, _errstate_now, _errstate_ok, _errstate_seen, _fast_ufunc
from .distributed_tensor import DistributedTensor

__all__ = ["LazyTensor", "explain_fused", "ENABLED", "MAX_NODES"]


def _errstate_fine() -> bool:
    """`_errstate_ok`, answered here where numpy's error state is the one it last judged (a node is made
    after this test: a call into that module was ~0.15 us of its ~1)."""
    if _ERRSTATE is not None and _errstate_now() is _errstate_seen[0]:
        return _errstate_seen[1]
    return _errstate_ok()


def _in_errstate(err, fn, *args):
    """``fn(*args)`` under numpy's error state ``err``, a node's (`_errstate_now` when it was made): numpy on
    the blocks warns by the state of the statement that made the value, as numpy's eager value did
    (``r = a / b`` under ``np.errstate(all="ignore")``: a later use of ``r`` prints nothing)."""
    if err is None or _errstate_now() is err:
        return fn(*args)
    token = _ERRSTATE.set(err)
    try:
        return fn(*args)
    finally:
        _ERRSTATE.reset(token)

ENABLED = os.environ.get("MESHRT_LAZY", "1") != "0"
MAX_NODES = 64  # an expression past this many operations is evaluated where it stands

_SLOTS = ("_local", "_sharding", "_global_shape", "_periodic", "_interior", "_slices", "_halo", "_writes")
_D = {n: DistributedTensor.__dict__[n] for n in _SLOTS}
_DTYPES = {np.dtype(t) for t in ("float32", "float64", "int8", "int16", "int32", "int64")}
_BIG = 1 << 62
_eager = [0]  # > 0 while pending expressions are replayed eagerly: no deferral inside
_pending: dict = {}  # id(node) -> node: unevaluated copying expressions with a live LazyTensor
# how often the fused kernel ran, swapped or copied back a second buffer, built a plan, ran a small write as
# one compiled call, evaluated a sliced or rolled operand on its own (the eager replay of an expression),
# wrote a small region by numpy on the blocks (`_local_write`) (tests read them)
stats = {"fused_writes": 0, "fused_new": 0, "swaps": 0, "copies": 0, "plans": 0, "one_call": 0, "eager_leaves": 0,
         "once": 0, "local_writes": 0}


class _Eager:
    def __enter__(self):
        _eager[0] += 1

    def __exit__(self, *exc):
        _eager[0] -= 1


_EAGER = _Eager()


# -- expression nodes -----------------------------------------------------------------------------------
_forced = [0]  # how many nodes were evaluated: a tree made since then has no evaluated node


class _Node:  # (compiled: an extension type, lazy.pxd)
    # leaves, scalars: in evaluation order; skey: the structure (no tensors); oldest: _forced at the
    # making of the tree's oldest node
    __slots__ = ("shape", "dtype", "mesh", "periodic", "value", "size", "consumed", "leaves", "scalars", "skey",
                 "oldest")

    def force(self) -> DistributedTensor:
        v = self.value
        if v is None:
            _pending.pop(id(self), None)
            v = self.value = self._evaluate()
            _forced[0] += 1
        return v


class _Leaf(_Node):
    """A concrete tensor read whole (``kind`` "full"), through a basic slice, or rolled.

    A slice key may hold ints (``pn[2:, -1]``): each is a length-1 slice whose dim the value drops
    (``drop``, the dims of ``t`` it dropped; ``starts`` has one entry per dim of ``t``, ``shape`` those
    kept)."""

    __slots__ = ("t", "kind", "starts", "args", "drop")

    def _evaluate(self):
        if self.kind == "full":
            return self.t
        stats["eager_leaves"] += 1
        with _EAGER:
            if self.kind == "slice":
                return self.t[self.args]
            return _HANDLED_FUNCTIONS[np.roll](self.t, *self.args)


class _Op(_Node):
    """``ufunc(*args)``; an arg is a node or a scalar already converted to its loop dtype."""

    __slots__ = ("ufunc", "args", "raw", "ins", "op", "head", "err")

    def _evaluate(self):
        return _in_errstate(self.err, self._evaluate_now)

    def _evaluate_now(self):
        if self.op == "ufunc" and self.size == 1 and _whole_leaves(self.args):
            # one ufunc of whole tensors and scalars: numpy's own loop, no kernel or plan
            args = tuple([a.t if type(a) is _Leaf else r for a, r in zip(self.args, self.raw)])
            new = _fast_ufunc(self.ufunc, args, DistributedTensor)
            if new is not None:
                return new
            with _EAGER:
                return self.ufunc(*args)
        new = _fused_new(self)
        if new is not None:
            return new
        args = [a.force() if isinstance(a, _Node) else r for a, r in zip(self.args, self.raw)]
        with _EAGER:
            if self.op == "ufunc":
                return self.ufunc(*args)
            if self.op == "where":
                return _HANDLED_FUNCTIONS[np.where](*args)
            return args[0].astype(self.dtype)


# (factories, not ``__init__``: compiled, the node is made by its type's ``tp_new`` and filled by a C call; a
# call of the type parses its ten arguments as Python's, ~0.5 us of the 1.3 a node cost)
def _leaf(t, kind, starts, shape, args=None, drop=()):
    """The `_Leaf` of ``t`` read whole (``kind`` "full"), through a basic slice (``args`` its key), or rolled
    (``args`` the roll's shift and axis)."""
    self = _Leaf.__new__(_Leaf)
    self.t, self.kind, self.starts, self.args, self.drop = t, kind, starts, args, drop
    self.shape, self.dtype, self.mesh, self.size = shape, t._local.dtype, t._sharding._mesh, 0
    self.periodic = t._periodic if kind != "slice" else None
    self.value = None
    self.consumed = False
    # (leaves stays None: (self,) would be a reference cycle, freed only by the cyclic collector)
    # (the dtype's char, not the dtype: hashing a dtype costs ~0.1 us; the plan's key and memo compare the
    # arrays' dtypes themselves)
    self.leaves, self.scalars, self.oldest = None, (), _forced[0]
    self.skey = (kind, starts, self.dtype.char) if not drop else (kind, starts, self.dtype.char, drop)
    return self


def _op(op, ufunc, args, raw, ins, dtype, shape, mesh, periodic, head=None):
    """The `_Op` ``ufunc(*args)`` (``op`` "ufunc", "where" or "astype"); ``raw`` the operands as given;
    ``head``: `_head`'s answer, where the caller has it."""
    self = _Op.__new__(_Op)
    self.op, self.ufunc, self.args, self.raw, self.ins = op, ufunc, args, raw, ins
    self.err = _errstate_now()  # (the statement's np.errstate: `_evaluate`)
    numbered = _head(op, ufunc, ins, dtype) if head is None else head
    self.head = numbered[0]
    self.dtype, self.shape, self.mesh, self.periodic = dtype, shape, mesh, periodic
    # (the structure key holds the head's number: hashed per statement, a head's tuple cost ~0.5 us a node)
    size, leaves, scalars, skey, oldest = 1, (), (), [numbered[1]], _forced[0]
    for a in args:
        if type(a) is _Op or type(a) is _Leaf:
            node = a
            size += node.size
            leaves += node.leaves if type(a) is _Op else (node,)
            scalars += node.scalars
            skey.append(node.skey)
            if node.oldest < oldest:
                oldest = node.oldest
        else:
            scalars += (a,)
            skey.append(None)
    self.size, self.leaves, self.scalars, self.skey, self.oldest = size, leaves, scalars, tuple(skey), oldest
    self.value = None
    self.consumed = False
    return self


def _whole_leaves(args) -> bool:
    for a in args:
        if type(a) is _Leaf and (a.kind != "full" or a.value is not None and a.value is not a.t):
            return False
    return True


_HEADS: dict = {}


def _head(op, ufunc, ins, dtype):
    """The node's part of a kernel signature and a number for it, distinct per head (cached: ``dtype.name`` is
    slow)."""
    key = (op, ufunc, ins, dtype)
    h = _HEADS.get(key)
    if h is None:
        if op == "ufunc":
            h = ("ufunc", ufunc.__name__, tuple(d.name for d in ins), dtype.name)
        else:
            h = (op, dtype.name)
        h = _HEADS[key] = (h, len(_HEADS))
    return h


class LazyTensor(DistributedTensor):
    """A `DistributedTensor` whose value is a deferred elementwise expression.

    It is a `DistributedTensor` in every way: the first access to anything but
    its expression evaluates it and it becomes an ordinary tensor.  Assigned
    into a tensor (``u[...] = e``), it runs as one fused loop.

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> u = DistributedTensor.zeros((4,), Sharding(Mesh((-1,)), [[0]]))
    >>> e = u + 1.0
    >>> isinstance(e, DistributedTensor), e.gather()
    (True, array([1., 1., 1., 1.]))
    """

    __slots__ = ()

    def _materialize(self):
        node = self._expr
        value = node.force()
        for name, d in _D.items():
            d.__set__(self, d.__get__(value) if name not in ("_halo", "_writes") else None)
        self._expr = None
        self.__class__ = DistributedTensor


def _slot_property(name):
    d = _D[name]

    def get(self):
        self._materialize()
        return d.__get__(self)

    def put(self, value):
        self._materialize()
        d.__set__(self, value)

    return property(get, put)


for _name in _SLOTS:
    setattr(LazyTensor, _name, _slot_property(_name))
del _name


def _node_property(read, doc):
    """A property answered from the expression, not evaluating it (``np.linalg.norm(A[:, k])`` asks the
    view its dtype and dims first); a dropped expression asks the tensor."""
    base = DistributedTensor.__dict__[doc]

    def get(self):
        node = self._expr
        return base.__get__(self) if node is None else read(node)

    return property(get, doc=base.__doc__)


LazyTensor.shape = LazyTensor.global_shape = _node_property(lambda n: n.shape, "global_shape")
LazyTensor.dtype = _node_property(lambda n: n.dtype, "dtype")
LazyTensor.ndim = _node_property(lambda n: len(n.shape), "ndim")


class _Pending(LazyTensor):
    """A `LazyTensor` whose expression is in `_pending` (evaluated before any write while it lives), which
    it leaves when dropped.  (A basic slice's view is not pending: its `LazyTensor` has no ``__del__``,
    whose call is most of the cost of dropping one.)"""

    __slots__ = ()

    def __del__(self):
        node = self._expr
        if node is not None:
            pending: dict = _pending  # (typed: the dict's own pop, not a method call)
            pending.pop(id(node), None)


def _wrap(node) -> LazyTensor:
    if type(node) is _Leaf and node.kind != "roll":
        t = _deferred(LazyTensor, node)
    else:
        t = _deferred(_Pending, node)
        _pending[id(node)] = node
    if node.size > MAX_NODES:
        t._materialize()
    return t


# (identity tests, a C call compiled: ``tx in (LazyTensor, _Pending)`` was a sequence search, ~0.1 us)
def _lazy_type(tx) -> bool:
    return tx is LazyTensor or tx is _Pending


def _tensor_type(tx) -> bool:
    return tx is DistributedTensor or tx is LazyTensor or tx is _Pending


def _node_of(x):
    """The node of a tensor operand (None for anything else)."""
    tx = type(x)
    if _lazy_type(tx):
        n = x._expr
        if type(n) is _Leaf:
            n.t._writes = None
        return n
    if tx is DistributedTensor:
        if x._sharding._partial_axes:
            return None
        x._writes = None  # a remembered scalar write would bypass the write check (meshrt._keys)
        return _leaf(x, "full", None, x._global_shape)
    return None


# -- building ---------------------------------------------------------------------------------------------
_LOOPS: dict = {}


def _loop(ufunc, key):
    """(input loop dtypes, result dtype, kernel signature head and its number: `_head`) numpy picks for ``key``
    (dtypes; Python types for weak scalars); False where the fused kernels have no such loop."""
    ck = (ufunc, key)
    r = _LOOPS.get(ck)
    if r is None:
        try:
            res = ufunc.resolve_dtypes(key + (None,))
            ins, out = tuple(np.dtype(d) for d in res[:-1]), np.dtype(res[-1])
            ok = all(d in _DTYPES for d in ins) and (out in _DTYPES or out == np.bool_)
            if ufunc.__name__ in _fuse.FLOAT_ONLY:
                ok = ok and all(d.kind == "f" for d in ins)
            r = (ins, out, _head("ufunc", ufunc, ins, out)) if ok else False
        except Exception:
            r = False
        _LOOPS[ck] = r
    return r


def _scalar_ok(x, dt) -> bool:
    if type(x) is int and dt.kind == "i":
        info = np.iinfo(dt)
        return info.min <= x <= info.max
    return True


def ufunc_call(ufunc, inputs, out):
    """``ufunc(*inputs)`` deferred (a `LazyTensor`), or written fused into ``out``; None: run eagerly."""
    if _eager[0]:
        return None
    if out is not None:
        return _ufunc_out(ufunc, inputs, out)
    if not ENABLED:
        return None
    node = _build_ufunc(ufunc, inputs)
    return None if node is None else _wrap(node)


_FUSABLE: dict = {}  # ufunc -> whether the fused kernels have it


_PAIR_LOOPS: dict = {}  # (ufunc, operand types) -> _loop's answer, for _build_ufunc's two-operand form


def _pair_loop(ufunc, types):
    loops: dict = _PAIR_LOOPS
    loop = loops.get((ufunc, types))
    if loop is None:
        ok = ufunc.__name__ in _fuse.UFUNCS and ufunc.nin == 2
        loop = loops[(ufunc, types)] = ok and _loop(ufunc, types)
    return loop


def _build_ufunc(ufunc, inputs):
    if len(inputs) == 2:  # ``t + 1.0`` / ``0.5 * t`` / ``t + u``: the common forms, one lookup for the loop below
        x, y = inputs
        tx, ty = type(x), type(y)
        if ty is float or tx is float:
            t, s = (x, y) if ty is float else (y, x)
            if _tensor_type(type(t)):
                n = _node_of(t)
                if n is not None and n.shape and _errstate_fine():
                    loop = _pair_loop(ufunc, (n.dtype, float) if ty is float else (float, n.dtype))
                    if not loop:
                        return None
                    ins, dt, head = loop
                    args, raw = ((n, ins[1].type(s)), (n, s)) if ty is float else ((ins[0].type(s), n), (s, n))
                    return _op("ufunc", ufunc, args, raw, ins, dt, n.shape, n.mesh, n.periodic, head)
        elif _tensor_type(tx) and _tensor_type(ty) and not (
                tx is DistributedTensor and not x._global_shape or ty is DistributedTensor and not y._global_shape):
            n, m = _node_of(x), _node_of(y)
            if n is not None and m is not None and n.shape and _errstate_fine():
                if n.shape != m.shape or n.mesh is not m.mesh and n.mesh != m.mesh:
                    return None
                loop = _pair_loop(ufunc, (n.dtype, m.dtype))
                if not loop:
                    return None
                ins, dt, head = loop
                args = (n, m)  # (a tuple, the operands as given too: fewer objects to make and free)
                return _op("ufunc", ufunc, args, args, ins, dt, n.shape, n.mesh, n.periodic, head)
    ok = _FUSABLE.get(ufunc)
    if ok is None:
        ok = _FUSABLE[ufunc] = ufunc.__name__ in _fuse.UFUNCS
    if not ok or ufunc.nin != len(inputs) or not _errstate_fine():
        return None
    nodes, key = [], []
    shape = mesh = periodic = None
    meshes0 = None  # the meshes of 0-d tensors taken as their values (``A[:, j] * R[k, j]``)
    for x in inputs:
        tx = type(x)
        if tx is DistributedTensor and not x._global_shape:
            s0 = x._sharding
            if s0._partial_axes or x._local.dtype not in _DTYPES:
                return None
            v = x._local[()]  # replicated over its mesh: the same value on every process of it
            meshes0 = (meshes0 or ()) + (s0.mesh,)
            nodes.append(v)
            key.append(v.dtype)
        elif _tensor_type(tx):
            n = _node_of(x)
            if n is None:
                return None
            if shape is None:
                shape, mesh, periodic = n.shape, n.mesh, n.periodic
            elif n.shape != shape or n.mesh is not mesh and n.mesh != mesh:
                return None
            nodes.append(n)
            key.append(n.dtype)
        elif tx is float or tx is int or tx is bool:
            nodes.append(x)
            key.append(tx)
        elif isinstance(x, np.generic) and x.dtype in _DTYPES:
            nodes.append(x)
            key.append(x.dtype)
        else:
            return None
    if not shape:  # (None: no tensor; (): 0-d, eager)
        return None
    if meshes0 is not None:
        for m0 in meshes0:
            if m0 is not mesh and m0 != mesh:
                return None
    loop = _loop(ufunc, tuple(key))
    if not loop:
        return None
    ins, dt, head = loop
    args = []
    for v, d in zip(nodes, ins):
        if isinstance(v, _Node):
            args.append(v)
        elif type(v) is not int or _scalar_ok(v, d):
            args.append(d.type(v))
        else:
            return None
    return _op("ufunc", ufunc, args, nodes, ins, dt, shape, mesh, periodic, head)


def slice_leaf(v):
    """``(tensor, starts, shape, drop)`` of ``v``, a deferred basic slice ``t[a:b, ...]`` (or ``t[a:b, j]``:
    ``drop`` the dims of ``t`` its ints dropped, ``starts`` one per dim of ``t``, ``shape`` those kept) not yet
    evaluated; None for anything else (`meshrt.tensor.fastpath.matmul_1d` reads the slice's block without
    evaluating it)."""
    if not _lazy_type(type(v)):  # (a numpy array, a list: ``np.dot(A[i, :j], y)`` with y not a tensor)
        return None
    node = v._expr
    if type(node) is _Leaf and node.kind == "slice" and node.value is None:
        return node.t, node.starts, node.shape, node.drop
    return None


def getitem(t, key):
    """``t[key]`` for a basic key of step-1 slices and ints (an int: a length-1 slice whose dim is dropped):
    a deferred view (None otherwise)."""
    if _eager[0] or not ENABLED or t._sharding._partial_axes:
        return None
    r = _region(t._global_shape, key)
    if r is None:
        r = _int_region(t._global_shape, key)
        if r is None:
            return None
        starts, full, drop, shape = r
        if 0 in full or not shape:  # (all ints: one element, the fast paths' or the eager one)
            return None
        return _wrap(_leaf(t, "slice", starts, shape, key, drop))
    starts, shape = r
    if 0 in shape:
        return None
    return _wrap(_leaf(t, "slice", starts, shape, key))


_REGIONS: dict = {}


def _region(shape, key):
    """(starts, shape) of a key made only of step-1 slices and one Ellipsis; None for any other key."""
    if type(key) is slice and shape:  # ``t[a:b]``, the commonest: no key to build, no lookup
        r = _slice_region(key, shape[0])
        if r is not None:
            if len(shape) == 1:
                return (r[0],), (r[1],)
            return (r[0],) + (0,) * (len(shape) - 1), (r[1],) + shape[1:]
    elif type(key) is tuple and 0 < len(key) <= len(shape):
        if len(key) == 2 and len(shape) == 2 and type(key[0]) is slice and type(key[1]) is slice:  # a stencil's
            r = _slice_region(key[0], shape[0])
            q = _slice_region(key[1], shape[1])
            if r is not None and q is not None:
                return (r[0], q[0]), (r[1], q[1])
            return _region_cached(shape, key)
        for k in key:
            if type(k) is int:
                return None  # (`_int_region`'s: a loop's ``A[:i, j]`` is a new key each turn, not one to cache)
        starts, sizes = [], []
        for d in range(len(key)):  # (not ``zip``: a call of a builtin, ~0.3 us here)
            k = key[d]
            r = _slice_region(k, shape[d]) if type(k) is slice else None
            if r is None:
                break
            starts.append(r[0])
            sizes.append(r[1])
        else:
            rest = len(shape) - len(key)
            return tuple(starts) + (0,) * rest, tuple(sizes) + shape[len(key):]
    return _region_cached(shape, key)


def _region_cached(shape, key):
    kid = _key_id(key)
    if kid is None:
        return None
    ck = (shape, kid)
    r = _REGIONS.get(ck, _REGIONS)
    if r is not _REGIONS:
        return r
    r = None
    items = key if type(key) is tuple else (key,)
    if all(type(k) is slice or k is Ellipsis for k in items) and sum(k is Ellipsis for k in items) <= 1:
        if Ellipsis in items:
            i = items.index(Ellipsis)
            items = items[:i] + (slice(None),) * (len(shape) - len(items) + 1) + items[i + 1:]
        if len(items) <= len(shape):
            items = items + (slice(None),) * (len(shape) - len(items))
            ok = True
            starts, sizes = [], []
            for k, n in zip(items, shape):
                if not all(v is None or type(v) is int for v in (k.start, k.stop, k.step)) or k.step not in (None, 1):
                    ok = False
                    break
                a, b, _ = k.indices(n)
                starts.append(a)
                sizes.append(max(0, b - a))
            if ok:
                r = (tuple(starts), tuple(sizes))
    if len(_REGIONS) > 4096:
        _REGIONS.clear()
    _REGIONS[ck] = r
    return r


_IREGIONS: dict = {}


def _int_region(shape, key):
    """(starts, sizes, dropped dims, kept sizes) of a key of ints and step-1 slices (at least one int, in
    range; at most one Ellipsis): each int a length-1 slice whose dim is dropped, as numpy's basic indexing
    drops it.  None for any other key."""
    if type(key) is tuple and len(key) == len(shape):  # one int or slice a dim, worked out (a loop's keys are new)
        r = _direct_int_region(shape, key)
        if r is not _GENERAL:
            return r
    return _int_region_cached(shape, key)


def _int_region_cached(shape, key):
    kid = _key_id(key)
    if kid is None:
        return None
    ck = (shape, kid)
    r = _IREGIONS.get(ck, _IREGIONS)
    if r is not _IREGIONS:
        return r
    r = None
    items = key if type(key) is tuple else (key,)
    if any(type(k) is int for k in items) and all(type(k) is int or type(k) is slice or k is Ellipsis
                                                   for k in items) and sum(k is Ellipsis for k in items) <= 1:
        if Ellipsis in items:
            i = items.index(Ellipsis)
            items = items[:i] + (slice(None),) * (len(shape) - len(items) + 1) + items[i + 1:]
        if len(items) <= len(shape):  # (one int or slice a dim now)
            r = _direct_int_region(shape, items + (slice(None),) * (len(shape) - len(items)))
    if len(_IREGIONS) > 4096:
        _IREGIONS.clear()
    _IREGIONS[ck] = r
    return r


_GENERAL = object()
_DROP_1 = (1,)


def _direct_int_region(shape, key):
    """`_int_region` of a key of one int or slice per dim, without its cache (`_GENERAL`: another key)."""
    if len(shape) == 2 and type(key[1]) is int and type(key[0]) is slice:  # a column ``p[1:-1, -1]``: no lists
        k, n = key[1], shape[1]
        i = k + n if k < 0 else k
        r = _slice_region(key[0], shape[0])
        if not 0 <= i < n or r is None:
            return None
        return (r[0], i), (r[1], 1), _DROP_1, (r[1],)
    starts, sizes, drop, kept = [], [], [], []
    for d in range(len(shape)):
        k, n = key[d], shape[d]
        if type(k) is int:
            i = k + n if k < 0 else k
            if not 0 <= i < n:
                return None  # (out of range: the eager path raises numpy's IndexError)
            starts.append(i)
            sizes.append(1)
            drop.append(d)
        elif type(k) is slice:
            r = _slice_region(k, n)
            if r is None:
                return None
            starts.append(r[0])
            sizes.append(r[1])
            kept.append(r[1])
        else:
            return _GENERAL
    if not drop:
        return None
    return tuple(starts), tuple(sizes), tuple(drop), tuple(kept)


def _slice_region(k, n):
    """(start, size) of the slice ``k`` (step 1, int or None bounds) of a dim of ``n``; None otherwise."""
    a, b, step = k.start, k.stop, k.step
    if (step is None or type(step) is int and step == 1) and (a is None or type(a) is int) and (
            b is None or type(b) is int):
        # (``k.indices(n)``'s clipping, without its call and tuple: three of these a stencil statement)
        a = 0 if a is None else (max(a + n, 0) if a < 0 else min(a, n))
        b = n if b is None else (max(b + n, 0) if b < 0 else min(b, n))
        return a, (b - a if b > a else 0)
    return None


def roll(a, shift, axis=None):
    """``np.roll(a, shift, axis)`` deferred (None: run eagerly)."""
    if _eager[0] or not ENABLED or axis is None or not _tensor_type(type(a)):
        return None
    if _lazy_type(type(a)):
        a._materialize()
    if a._sharding._partial_axes:
        return None
    shifts = shift if isinstance(shift, (tuple, list)) else (shift,)
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        return None
    nd, shape = len(a._global_shape), a._global_shape
    per = [0] * nd
    try:
        for k, ax in zip(shifts, axes):
            if isinstance(ax, (bool, np.bool_)) or not -nd <= operator.index(ax) < nd:
                return None
            per[operator.index(ax) % nd] += operator.index(k)
    except TypeError:
        return None
    if any(per[d] and shape[d] == 0 for d in range(nd)):
        return None
    per = tuple(k % n if n else 0 for k, n in zip(per, shape))
    if not any(per):
        return None
    a._writes = None
    return _wrap(_leaf(a, "roll", per, shape, (shift, axis)))


def where(cond, x, y):
    """``np.where(cond, x, y)`` deferred (None: run eagerly)."""
    if _eager[0] or not ENABLED:
        return None
    parts, shape, mesh, periodic = [], None, None, None
    for v in (cond, x, y):
        if _tensor_type(type(v)):
            n = _node_of(v)
            if n is None:
                return None
            if shape is None:
                shape, mesh, periodic = n.shape, n.mesh, n.periodic
            elif n.shape != shape or n.mesh != mesh:
                return None
            parts.append(n)
        elif type(v) in (float, int, bool) or isinstance(v, np.generic) and v.dtype in _DTYPES:
            parts.append(v)
        else:
            return None
    if not isinstance(parts[0], _Node) or parts[0].dtype != np.bool_ or shape is None:
        return None
    try:
        dummies = [np.empty(0, p.dtype) if isinstance(p, _Node) else p for p in parts]
        dt = np.where(*dummies).dtype
    except Exception:
        return None
    if dt not in _DTYPES:
        return None
    args = [parts[0]]
    for p in parts[1:]:
        if isinstance(p, _Node):
            args.append(p)
        elif _scalar_ok(p, dt):
            args.append(dt.type(p))
        else:
            return None
    ins = (np.dtype(bool), dt, dt)
    return _wrap(_op("where", np.where, args, parts, ins, dt, shape, mesh, periodic))


def astype(t, dtype):
    """``t.astype(dtype)`` deferred for the exact conversions (None: run eagerly)."""
    if _eager[0] or not ENABLED:
        return None
    try:
        dt = np.dtype(dtype)
    except TypeError:
        return None
    n = _node_of(t)
    if n is None or dt not in _DTYPES and dt != np.bool_ or n.dtype not in _DTYPES and n.dtype != np.bool_:
        return None
    if n.dtype.kind == "f" and dt.kind in "ib":
        return None  # float -> int is undefined for NaN and out-of-range values in LLVM
    if isinstance(n, _Leaf) and n.kind == "full":
        return None  # the eager copy converts the halos too
    return _wrap(_op("astype", None, [n], [t], (n.dtype,), dt, n.shape, n.mesh, n.periodic))


# -- writes -------------------------------------------------------------------------------------------------
def flush(keep=None) -> None:
    """Evaluate every pending expression (but ``keep``): a write is about to happen."""
    if _pending:
        for node in list(_pending.values()):
            if node is not keep:
                node.force()


_BASELINE = {}


def _refs_ok(value, path) -> bool:
    """Whether ``value`` (a LazyTensor) is referenced only by the statement assigning it."""
    base = _BASELINE.get(path)
    if base is None:
        return False
    return _getrefcount(value) - 2 <= base  # - 2: this function's argument and getrefcount's


class _Probe:
    pass


def _calibrate():
    """How many references a temporary assigned by ``t[k] = e`` / ``t += e`` / ``np.add(t, e, out=t)`` has when
    it reaches here."""
    t = object.__new__(DistributedTensor)
    _D["_writes"].__set__(t, None)
    _D["_global_shape"].__set__(t, (1,))  # (not 0-d: the in-place operators' 0-d route would take it)
    for path in ("setitem", "ufunc", "inplace"):
        _BASELINE[path] = None
    probe = _Probe()

    def make():
        v = object.__new__(LazyTensor)
        v._expr = probe
        return v

    t[0] = make()
    t += make()
    np.add(t, make(), out=t)


def _probe(value, path) -> bool:
    if _lazy_type(type(value)) and value._expr.__class__ is _Probe:
        n = _getrefcount(value) - 2  # this frame's argument and getrefcount's
        _BASELINE[path] = n
        value._expr = None
        return True
    return False


def setitem(t, key, value) -> bool:
    """``t[key] = value``: True when written here (a fused expression), else the eager path runs."""
    if _eager[0]:
        return False
    if _lazy_type(type(value)) and _probe(value, "setitem"):
        return True
    if not ENABLED:
        return False
    if type(value) is LazyTensor and _same_region(t, key, value):  # ``A[:, j] -= v`` ends by ``A[:, j] = view``
        return True
    if _lazy_type(type(value)) and type(t) is DistributedTensor and _refs_ok(value, "setitem"):
        node = value._expr
        if isinstance(node, _Op) and node.value is None and not t._sharding._partial_axes:
            r = _region(t._global_shape, key)
            if r is not None:
                if r[1] == node.shape and node.dtype == t._local.dtype and not node.consumed:
                    if _fused_write(t, r[0], node):
                        value._expr = None
                        if type(value) is _Pending:  # (written: no longer pending, so no __del__ to call)
                            value.__class__ = LazyTensor
                        return True
            else:  # ``p[1:-1, -1] = ...``: the ints' dims length-1 slices of the write, dropped from the value
                r = _int_region(t._global_shape, key)
                if r is not None and r[3] == node.shape and node.dtype == t._local.dtype and not node.consumed:
                    if _fused_write(t, r[0], node, r[1], r[2]):
                        value._expr = None
                        return True
        elif type(node) is _Leaf and node.kind == "slice" and node.value is None and \
                node.dtype == t._local.dtype and not t._sharding._partial_axes:
            if _copy_write(t, key, node):
                value._expr = None
                return True
    flush()
    return False


def _copy_write(t, key, leaf) -> bool:
    """``t[key] = u[...]``, a view written into a region of its shape (a boundary row ``p[-1, :] = p[-2, :]``):
    numpy on the blocks where every piece is read on the process that writes it (`_local_write`), else a
    fused copy (its ghost exchange brings what is read across blocks).  False: not this case."""
    r = _region(t._global_shape, key)
    if r is not None:
        origin, shape, drop, kept = r[0], r[1], (), r[1]
    else:
        r = _int_region(t._global_shape, key)
        if r is None:
            return False
        origin, shape, drop, kept = r
    if kept != leaf.shape or 0 in shape:
        return False
    if _local_write(t, origin, leaf, shape, drop):
        return True
    copy = _op("astype", None, [leaf], [leaf], (leaf.dtype,), leaf.dtype, leaf.shape, leaf.mesh, leaf.periodic)
    return _fused_write(t, origin, copy, shape, drop)


def _same_region(t, key, view) -> bool:
    """Whether ``view`` is the unevaluated view ``t[key]`` itself (writing it there changes nothing)."""
    leaf = view._expr
    if type(leaf) is not _Leaf or leaf.kind != "slice" or leaf.t is not t or leaf.value is not None:
        return False
    if not leaf.drop:
        r = _region(t._global_shape, key)
        return r is not None and r[0] == leaf.starts and r[1] == leaf.shape
    r = _int_region(t._global_shape, key)
    return r is not None and r[0] == leaf.starts and tuple(r[2]) == tuple(leaf.drop) and r[3] == leaf.shape


def _consuming_write(t, origin, node, shape, drop, inputs, view, local_only=False) -> bool:
    """`_fused_write` of ``node``, a ufunc of ``inputs`` that only this statement holds (``view`` aside): their
    expressions leave the pending list first (else the write's flush would evaluate them on their own) and
    are dropped once written (back on the list if the write does not fuse)."""
    taken = []
    for v in inputs:
        if v is not view and _lazy_type(type(v)):
            n = v._expr
            if _pending.pop(id(n), None) is not None:
                taken.append(n)
    if _fused_write(t, origin, node, shape, drop, local_only):
        for v in inputs:
            if v is not view and _lazy_type(type(v)):
                v._expr = None
        return True
    for n in taken:
        _pending[id(n)] = n
    return False


def inplace_call(ufunc, t, value):
    """``t += value`` (``-=``, ``*=``, ``/=``): ``ufunc(t, value, out=t)`` written fused, into a view's region
    too (``A[:, j] -= v``); None: numpy's operator runs."""
    if _eager[0]:
        return None
    return _ufunc_out(ufunc, (t, value), (t,), "inplace")


def _ufunc_out(ufunc, inputs, out, path="ufunc"):
    outs = out if isinstance(out, tuple) else (out,)
    for v in inputs:
        if _lazy_type(type(v)) and _probe(v, path):
            return outs[0]
    if ENABLED and len(outs) == 1 and type(outs[0]) is DistributedTensor:
        t = outs[0]
        ok = True
        for v in inputs:
            if _lazy_type(type(v)) and not _refs_ok(v, path):
                ok = False
        node = _build_ufunc(ufunc, inputs) if ok and not t._sharding._partial_axes else None
        if node is not None and node.shape == t._global_shape and node.dtype == t._local.dtype:
            if _consuming_write(t, (0,) * len(node.shape), node, None, (), inputs, None):
                return t
    elif ENABLED and len(outs) == 1 and type(outs[0]) is LazyTensor:  # ``A[:, j] -= v``: into the view's region
        view = outs[0]
        leaf = view._expr
        if type(leaf) is _Leaf and leaf.kind == "slice" and leaf.value is None:
            t = leaf.t
            ok = not t._sharding._partial_axes
            for v in inputs:
                if v is not view and _lazy_type(type(v)) and not _refs_ok(v, path):
                    ok = False
            node = _build_ufunc(ufunc, inputs) if ok else None
            if node is not None and node.shape == leaf.shape and node.dtype == t._local.dtype:
                full = list(leaf.shape)
                for d in leaf.drop:
                    full.insert(d, 1)
                # (only where every operand is read where it is written: a loop's view is a new region each
                # turn, whose plan would be built for one run)
                if _consuming_write(t, leaf.starts, node, tuple(full), leaf.drop, inputs, view, True):
                    return view  # (still the view: Python's ``A[:, j] = view`` next is `_same_region`'s no-op)
    flush()
    return None


def touch(t=None) -> None:
    """A tensor's buffers are handed out (``.local``, ``.interior``): evaluate what is pending."""
    if _pending and not _eager[0]:
        flush()


# -- fused evaluation ---------------------------------------------------------------------------------------
_SIGS: dict = {}


def _collect_fast(root, origin, drop=()):
    """`_collect` from the lists made while building: no walk, one lookup (no node of the tree evaluated)."""
    if root.oldest != _forced[0]:
        return _collect(root, origin, drop) + (None,)
    leaves = root.leaves
    first = leaves[0].t
    for leaf in leaves:
        if leaf.t is not first:
            break
    else:  # every leaf reads one tensor (a stencil's): no dict
        arrays, pattern = [first], _ZEROS[len(leaves)] if len(leaves) < len(_ZEROS) else (0,) * len(leaves)
        return _sig_entry(root, origin, arrays, pattern, drop)
    arrays, pattern = [], []
    for leaf in leaves:  # (a scan by identity: a statement reads a few tensors; no ``id`` calls, no dict)
        t = leaf.t
        for a in range(len(arrays)):
            if arrays[a] is t:
                break
        else:
            a = len(arrays)
            arrays.append(t)
        pattern.append(a)
    return _sig_entry(root, origin, arrays, tuple(pattern), drop)


_ZEROS = tuple((0,) * n for n in range(17))


def _sig_entry(root, origin, arrays, pattern, drop):
    key = (root.skey, pattern, origin, drop)
    sigs: dict = _SIGS
    c = sigs.get(key)
    if c is None:
        sig, _, leaves, _ = _collect(root, origin, drop)
        if len(sigs) > 4096:
            sigs.clear()
        # [2]: the plan last used (`_memo_plan`); [3]: the runs `_fused_write` offered `_local_write`
        c = sigs[key] = [sig, tuple(leaves), None, 0]
    return c[0], arrays, c[1], root.scalars, c


def _memo_plan(c, t, arrays, shape):
    """The plan this expression shape last used, if ``t`` and ``arrays`` have the shardings, shapes and
    dtypes it was used with (the plan's key is made of those alone): no key to build, no lookup."""
    m = c[2]
    if m is None or m[0] != _GEN[0] or t._sharding is not m[1] or t._global_shape != m[2] or shape != m[3]:
        return None
    facts = m[4]
    if len(facts) != len(arrays):
        return None
    for i in range(len(facts)):
        a = arrays[i]
        s, g, dt, is_t = facts[i]
        if a._sharding is not s or a._global_shape != g or a._local.dtype is not dt or (a is t) != is_t:
            return None
    return m[5]


def _memo_store(c, t, arrays, shape, plan):
    c[2] = (_GEN[0], t._sharding, t._global_shape, shape,
            tuple((a._sharding, a._global_shape, a._local.dtype, a is t) for a in arrays), plan)


def _collect(root, origin, drop=()):
    """Walk ``root``: (signature, arrays, per-leaf (array, kind, data), scalars, leaf ok).  ``origin``: the
    written region's start in every dim of the target; ``drop``: the target's dims an int names (the value
    has none of them): every leaf must have dropped those dims alone, so one index space holds them all."""
    arrays, ids, leaves, scalars = [], {}, [], []

    def walk(n):
        if not isinstance(n, _Node):
            scalars.append(n)
            return ("scalar", len(scalars) - 1)
        if n.value is not None or isinstance(n, _Leaf):
            if isinstance(n, _Leaf) and (n.value is None or n.kind != "roll"):
                t, kind, data = n.t, n.kind, n.starts
                if n.drop != drop:
                    raise _NotFusable
            else:
                if drop:
                    raise _NotFusable
                v = n.force()
                if type(v) is not DistributedTensor:
                    raise _NotFusable
                t, kind, data = v, "full", None
            a = ids.get(id(t))
            if a is None:
                a = ids[id(t)] = len(arrays)
                arrays.append(t)
            if kind == "slice":
                data = tuple(s - o for s, o in zip(data, origin))
            elif kind == "full":
                kind, data = "slice", tuple(-o for o in origin)
            leaves.append((a, kind, data))
            return ("leaf", len(leaves) - 1, a)
        if n.consumed:
            raise _NotFusable
        return n.head + tuple([walk(a) for a in n.args])

    sig = walk(root)
    return sig, arrays, tuple(leaves), tuple(scalars)


class _NotFusable(Exception):
    pass


_LOCAL_MAX = 1 << 14  # a region of at most this many elements, read where it is written: numpy on the blocks
_LOCAL_RUNS = 2  # ... for an expression's first this many runs at one region (`_fused_write`)


def _local_write(t, origin, node, shape, drop) -> bool:
    """A small write whose every operand is read where the target is written (``A[:, j] -= Q[:, k] * r``,
    ``y[:, j] = a * x[:, j] + b * y[:, j - 1]``, ``x += alpha * P[1:-1, 1:-1]``: the leaves are replicated,
    or split on the target's split dims with their regions' blocks on the same processes, `_blocks_alike`):
    numpy on each process's blocks, no plan, no kernel, no message.  False: not this case (the fused write
    runs).  Decided on global facts only (the region's size, shardings, offsets), alike on every process."""
    size = 1
    for n in shape:
        size *= n
    if size > _LOCAL_MAX or node.oldest != _forced[0]:
        return False
    s, g = t._sharding, t._global_shape
    nd = len(g)
    split = _split_dims(s, nd)
    for leaf in (node.leaves if type(node) is _Op else (node,)):
        a = leaf.t
        if leaf.kind == "roll" or leaf.value is not None:
            return False
        sa = a._sharding
        if sa is not s and not any(sa._split_axes):  # replicated: read at the region's coordinates anywhere
            continue
        if len(a._global_shape) != nd:
            return False
        if leaf.kind == "slice":
            if leaf.drop != drop:
                return False
            starts = leaf.starts
        elif drop:
            return False
        else:
            starts = None
        same = sa is s or sa == s
        for d in split:  # (a whole tensor read: from 0)
            st = 0 if starts is None else starts[d]
            if same and a._global_shape[d] == g[d]:
                # a shift (``p[-1, :] = p[-2, :]``) whose pieces stay on their processes; one across
                # blocks (a stencil's) is the fused write's
                if st != origin[d] and not _shift_stays(s, g, d, min(st, origin[d]), max(st, origin[d]) + shape[d]):
                    return False
            elif not _blocks_alike(s, g, origin[d], shape[d], sa, a._global_shape, st, d):
                return False
        if not same and _split_dims(sa, nd) != split:
            return False
    # this process's part of the region, in region coordinates (empty: nothing to read or write here)
    rel = []
    for d in range(nd):
        if d in split:
            sl = t._slices[d]
            lo, hi = max(origin[d], sl.start), min(origin[d] + shape[d], sl.stop)
            if lo >= hi:
                rel = None
                break
            rel.append((lo - origin[d], hi - origin[d]))
        else:
            rel.append((0, shape[d]))
    if rel is not None:
        value = _in_errstate(node.err, _local_value, node, rel, drop) if type(node) is _Op else \
            _local_value(node, rel, drop)  # (a view: numpy's assignment copies where it overlaps the target)
    _pending.pop(id(node), None)
    node.consumed = True
    flush()  # (pending expressions read the target as it was)
    if rel is not None:
        t._interior[_local_index(origin, rel, drop, t._slices)] = value
    stats["local_writes"] += 1
    return True


_ALIKE: dict = {}  # `_blocks_alike`'s answers


def _blocks_alike(s, g, o, n, sa, ga, oa, d) -> bool:
    """Whether dim ``d``'s ``[o, o + n)`` of a tensor (sharding ``s``, shape ``g``) and ``[oa, oa + n)`` of
    another (``sa``, ``ga``) are held by the same processes piece for piece: the same mesh axes split the dim
    and the blocks' bounds, clipped to the regions, are the same (a padded ``P[1:-1]`` beside ``x`` split
    alike).  Global facts, cached: O(blocks) once per pair of regions."""
    key = (s, g, o, n, sa, ga, oa, d)
    r = _ALIKE.get(key)
    if r is None:
        r = False
        if s.dim_axes(d) == sa.dim_axes(d) and s.mesh == sa.mesh:
            t_offs = np.clip(np.asarray(s.dim_offsets(g)[d], np.int64) - o, 0, n)
            a_offs = np.clip(np.asarray(sa.dim_offsets(ga)[d], np.int64) - oa, 0, n)
            r = bool(np.array_equal(t_offs, a_offs))
        if len(_ALIKE) > 4096:
            _ALIKE.clear()
        _ALIKE[key] = r
    return r


def _shift_stays(s, g, d, lo, hi) -> bool:
    """Whether no block of dim ``d`` (shape ``g``, sharding ``s``) ends strictly inside ``(lo, hi)``: a region
    and its shift spanning ``[lo, hi)`` are then held piece for piece by the same processes.  O(1) under
    MLIR's uneven rule (the block holding cell ``lo`` found by arithmetic), a bisection of the given offsets
    otherwise: a stencil on a new shape pays no walk over the blocks."""
    nb = s.dim_split_size(d)
    if nb == 1:
        return True
    if s.sharded_dims_offsets:
        offs = s.dim_offsets(g)[d]
        return offs[bisect.bisect_right(offs, lo)] >= hi
    base, extra = divmod(g[d], nb)
    small = (nb - extra) * base  # the cells of the narrower blocks, first
    end = (lo // base + 1) * base if lo < small else small + ((lo - small) // (base + 1) + 1) * (base + 1)
    return end >= hi


_SPLIT_DIMS: dict = {}


def _split_dims(s, nd):
    r = _SPLIT_DIMS.get((s, nd))
    if r is None:
        if len(_SPLIT_DIMS) > 4096:
            _SPLIT_DIMS.clear()
        r = _SPLIT_DIMS[(s, nd)] = frozenset([d for d in range(nd) if s.dim_axes(d)])
    return r


def _local_index(starts, rel, drop, slices):
    """The index into a split tensor's owned block (its ``slices``) of this process's part ``rel`` of a region
    starting at ``starts`` (a tensor of another shape split alike holds it elsewhere in its block)."""
    idx = []
    for d in range(len(rel)):  # (a loop, not a generator: compiled, it is a C function's)
        r0, r1 = rel[d]
        a = starts[d] - slices[d].start
        idx.append(a + r0 if d in drop else slice(a + r0, a + r1))
    return tuple(idx)


def _replicated_index(leaf, rel, drop):
    """A replicated leaf's index for this process's part of the region: its kept dims, in order, at the
    region's kept dims' coordinates."""
    kept = [r for d, r in enumerate(rel) if d not in drop]
    if leaf.kind == "full":
        return tuple([slice(r0, r1) for r0, r1 in kept])
    idx, i = [], 0
    for d, a in enumerate(leaf.starts):
        if d in leaf.drop:
            idx.append(a)
        else:
            r0, r1 = kept[i]
            idx.append(slice(a + r0, a + r1))
            i += 1
    return tuple(idx)


def _local_value(node, rel, drop):
    if type(node) is _Leaf:
        t = node.t
        if not any(t._sharding._split_axes):
            return t._interior[_replicated_index(node, rel, drop)]
        return t._interior[_local_index(node.starts if node.kind == "slice" else (0,) * len(rel), rel, drop,
                                        t._slices)]
    raw = node.raw
    args = [_local_value(a, rel, drop) if type(a) is _Op or type(a) is _Leaf else raw[i]
            for i, a in enumerate(node.args)]
    if node.op == "ufunc":
        return node.ufunc(*args)
    if node.op == "where":
        return np.where(*args)
    return args[0].astype(node.dtype)


def _subtree_pending(root) -> bool:
    if len(_pending) <= 1:
        return False  # (nothing, or the root itself)
    stack = [root]
    while stack:
        n = stack.pop()
        if n is not root and id(n) in _pending:
            return True
        if isinstance(n, _Op):
            for a in n.args:
                if isinstance(a, _Node):
                    stack.append(a)
    return False


def _fused_write(t, origin, node, shape=None, drop=(), local_only=False) -> bool:
    """Evaluate ``node`` into ``t``'s region at global ``origin``, fused; False: not fusable (nothing done).
    ``shape``: the region's, one size per dim of ``t`` (default the value's); ``drop``: the dims of ``t`` the
    key's ints name (size 1 in ``shape``, absent from the value's).  ``local_only``: only by numpy on the
    blocks (`_local_write`), no plan."""
    if _subtree_pending(node) or not _errstate_fine():
        return False
    if shape is None:
        shape = node.shape
    plan = c = None
    if not local_only:
        try:
            sig, arrays, leaves, scalars, c = _collect_fast(node, origin, drop)
        except _NotFusable:
            c = arrays = None
        _trim_plans()
        # The plan this expression used last time with these tensors: `_local_write` then declined it, and
        # what it decides by (shapes, shardings, the leaves' kinds and starts) is what the memo compares.
        plan = None if c is None else _memo_plan(c, t, arrays, shape)
    if plan is None:
        # numpy on the blocks for an expression's first runs here (a loop's region is new each turn: no plan
        # for it); from the third, as it repeats, the fused plan (one pass, no temporaries: numpy's ops cost
        # ~0.5 us each before their work, so a 15-operation column statement takes 53 us so and 37 fused)
        tried = c is None or c[3] < _LOCAL_RUNS
        if tried:
            if c is not None:
                c[3] += 1
            if _local_write(t, origin, node, shape, drop):
                return True
        if local_only or arrays is None:
            return False
        # (an int's write fuses from its key's second run: a loop over the int, ``y[:, j] = ... y[:, j - 1]``,
        # makes a new key each time, whose plan would be built for one run)
        plan = _get_plan(t, origin, shape, sig, arrays, leaves, hot=2 if drop else 1)
        if plan is None:  # (no plan yet: on the blocks still, where it can be)
            return not tried and _local_write(t, origin, node, shape, drop)
        if c is not None and not plan.once:
            _memo_store(c, t, arrays, shape, plan)
    _pending.pop(id(node), None)
    node.consumed = True
    flush()
    plan.run(t, arrays, scalars, False)
    if plan.once:
        plan.shed()
    stats["fused_writes"] += 1
    return True


def _fused_new(node):
    """``node``'s value as a new tensor by the fused kernel, where every operand has one layout."""
    if _eager[0] or not ENABLED or not _errstate_fine() or _subtree_pending(node):
        return None
    origin = (0,) * len(node.shape)
    try:
        sig, arrays, leaves, scalars, _ = _collect_fast(node, origin)
    except _NotFusable:
        return None
    if not arrays:
        return None
    first = arrays[0]
    s = first._sharding
    if any(a._sharding is not s and a._sharding != s or a._global_shape != first._global_shape for a in arrays):
        return None
    region = None
    if node.shape != first._global_shape or any(kind == "slice" and any(data) for _, kind, data in leaves):
        # slices of the operands, some shifted (``4 * p[1:-1, 1:-1] - p[:-2, 1:-1] - ...``): the value is
        # written into the region of a new tensor laid out as the operands where the middle slice sits, as
        # ``out[1:-1, 1:-1] = ...`` would (the shifted reads come by the plan's ghost exchange); the value is
        # that region, a view
        origin = _middle_origin(node, first._global_shape)
        if origin is None:
            return None
        try:
            sig, arrays, leaves, scalars, _ = _collect_fast(node, origin)
        except _NotFusable:
            return None
        region = tuple(slice(o, o + n) for o, n in zip(origin, node.shape))
    layout = _layout(s, first._global_shape)
    local = _take(layout.local_shape, node.dtype)
    if layout.halos:
        _zero_halos(local, s, first._global_shape)
    target = DistributedTensor._fast(local, local[layout.index], s, first._global_shape, layout.slices,
                                     node.periodic)
    plan = _get_plan(target, origin, node.shape, sig, arrays, leaves)
    if plan is None:
        return None
    plan.run(target, arrays, scalars, new=True)
    if plan.once:
        plan.shed()
    stats["fused_new"] += 1
    if region is None:
        return target
    with _EAGER:
        return target[region]


def _middle_origin(node, shape):
    """Where the value of ``node`` (slices of tensors of global ``shape``, no ints, no rolls) sits in a new
    tensor of ``shape``: per dim the median of the slices' starts (the middle slice of a stencil, so the
    value lines up with it and needs no exchange beside it); None where a leaf is not such a slice."""
    starts = []
    for leaf in node.leaves:
        if leaf.kind != "slice" or leaf.drop or len(leaf.starts) != len(shape):
            return None
        starts.append(leaf.starts)
    origin = tuple(sorted(col)[(len(col) - 1) // 2] for col in zip(*starts))
    if any(o < 0 or o + n > m for o, n, m in zip(origin, node.shape, shape)):
        return None
    return origin


_DTYPE_NAMES: dict = {}


def _dtype_name(dt):
    """``dt.name``, cached (numpy computes it each time: ~1 us)."""
    n = _DTYPE_NAMES.get(dt)
    if n is None:
        n = _DTYPE_NAMES[dt] = dt.name
    return n


_PLANS: dict = {}
_GEN = [0]  # bumped when the plans are freed
_MAX_PLANS = 256
_SAME: dict = {}
_SMALL = 1 << 15  # local elements up to which a fused write runs as one call after the exchange


def _same_layout(a, t) -> bool:
    """One global index is one owned cell in both (same mesh, shape, split axes and shard offsets)."""
    sa, st = a._sharding, t._sharding
    if sa is st and a._global_shape == t._global_shape:
        return True
    key = (id(sa), id(st), a._global_shape, t._global_shape)
    r = _SAME.get(key)
    if r is None:
        r = (a._global_shape == t._global_shape and sa.mesh == st.mesh and not sa._partial_axes
             and all(sa.dim_axes(d) == st.dim_axes(d) for d in range(len(t._global_shape)))
             and sa.dim_offsets(a._global_shape) == st.dim_offsets(t._global_shape))
        if len(_SAME) > 1024:
            _SAME.clear()
        _SAME[key] = (r, sa, st)  # the shardings kept alive: their ids stay theirs
        return r
    return r[0]


def _hot_setting(env) -> int:
    """``MESHRT_FUSE_AFTER=N``: an expression is fused the N-th time it runs, eagerly before (default 1: from
    its first run; its kernel is compiled once per machine, then loaded from the disk cache).

    >>> _hot_setting({}), _hot_setting({"MESHRT_FUSE_AFTER": "2"})
    (1, 2)
    """
    v = env.get("MESHRT_FUSE_AFTER", "1")
    try:
        n = int(v)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"MESHRT_FUSE_AFTER: {v!r}; a whole number >= 1 (1: fuse from the first run)")
    return n


HOT = _hot_setting(os.environ)
_SEEN: dict = {}  # plan key -> (times seen, the shardings its ids name)
_ONCE: dict = {}  # plan key -> (the shardings its ids name, the plan that ran it once: its geometry, ghosts shed)
_PADDED: dict = {}  # (sharding, ghost halo sizes) -> the padded buffer's sharding
_FIRST: dict = {}  # sharding -> the first sharding seen equal to it (kept alive: its id stays its own)
_CANON: dict = {}  # id(sharding) -> (id of its first equal sharding, the sharding)


def _canon(s) -> int:
    """One id for equal shardings: a new tensor of a layout already seen (an equal but new `Sharding`
    object) reuses its plans."""
    c = _CANON.get(id(s))
    if c is None or c[1] is not s:
        if len(_CANON) > 4096:
            _CANON.clear()
        c = _CANON[id(s)] = (id(_FIRST.setdefault(s, s)), s)
    return c[0]


def _trim_plans():
    """Free every plan past `_MAX_PLANS` (at the same call on every process: the count grows only by plans
    built together, and every fused write checks it, whether or not it then finds its plan memoized)."""
    if len(_PLANS) > _MAX_PLANS:
        for p in _PLANS.values():
            if type(p) is _FusedPlan:
                p.free()
        _PLANS.clear()
        _GEN[0] += 1  # (the memos of _memo_plan name freed plans)
        _SEEN.clear()
        _ONCE.clear()
        _FIRST.clear()  # (no key names their ids any more)
        _CANON.clear()


def _get_plan(t, origin, shape, sig, arrays, leaves, force=False, hot=1):
    # Decided alike on every process (a plan is built collectively): from global facts only
    if not shape:
        return None
    for a in arrays:
        if not _same_layout(a, t):
            return None
    _trim_plans()
    key = (sig, tuple((_canon(a._sharding), a._global_shape, a._local.dtype, a is t) for a in arrays),
           tuple(leaves), _canon(t._sharding), t._global_shape, origin, shape)
    entry = _PLANS.get(key)
    if entry is None:
        keep = tuple(a._sharding for a in arrays) + (t._sharding,)  # their ids stay theirs while cached
        if not force:  # counted alike on every process: the same program makes the same keys
            seen = _SEEN.get(key, (0, keep))[0] + 1
            if seen < HOT or seen < hot:
                if len(_SEEN) > 4096:
                    _SEEN.clear()
                _SEEN[key] = (seen, keep)
                return None
            prev = _ONCE.pop(key, None)
            if prev is None:  # a first run: no ghost buffers or persistent requests until it repeats
                if len(_ONCE) > 4096:
                    _ONCE.clear()
                once = _FusedPlan.build(t, origin, shape, sig, arrays, leaves, once=True)
                if once is None or once.once:
                    _ONCE[key] = (keep, once)
                    if once is not None:
                        stats["once"] += 1
                        return once
                    prev = (keep, None)
                else:  # a small block's plan, lasting from its first run: its messages cost nothing to keep
                    prev = (keep, once)
        else:
            prev = None
        entry = None
        if prev is not None and prev[1] is not None:
            entry = prev[1] if not prev[1].once else prev[1].upgrade(t, arrays)
        if entry is None:
            entry = _FusedPlan.build(t, origin, shape, sig, arrays, leaves)
        stats["plans"] += 1
        if entry is not None:
            entry.keep = keep
        _PLANS[key] = entry if entry is not None else (False, keep)
    return entry if type(entry) is _FusedPlan else None


_NARROWEST: dict = {}


def _narrowest_block(s, shape, d) -> int:
    """The fewest cells any block of dim ``d`` holds, ``shape`` under sharding ``s``: ``size // n`` by MLIR's
    uneven rule (no offsets walked: O(1) at any process count), the least of the given offsets' otherwise."""
    if not s.sharded_dims_offsets:
        return shape[d] // s.dim_split_size(d)
    key = (s, shape, d)
    r = _NARROWEST.get(key)
    if r is None:
        offs = s.dim_offsets(shape)[d]
        r = min(b - a for a, b in zip(offs, offs[1:]))
        if len(_NARROWEST) > 4096:
            _NARROWEST.clear()
        _NARROWEST[key] = r
    return r


_FUSEVM = []


def _fusevm():
    """``meshrt._fusevm``, imported once (an import statement costs ~1 us each time it runs; only the plans
    of expressions the interpreter has need it, and a build without the extension has no such plans)."""
    if not _FUSEVM:
        from .. import _fusevm as m

        _FUSEVM.append(m)
    return _FUSEVM[0]


def plan_boxes(box, owned, split, leaves):
    """Cut ``box`` so that on each piece every leaf reads at a constant offset.

    ``box`` and ``owned``: ``((lo, hi), ...)`` per dim in global indices (the
    target cells here, the block this device owns).  ``split``: per dim, whether
    it is split (a read beyond ``owned`` there goes to a ghost cell).  ``leaves``:
    per leaf occurrence, per dim, a list of ``(lo, hi, shift)`` pieces: cells
    ``lo <= g < hi`` read global index ``g + shift`` (ghost indices past the
    domain for a periodic roll).

    Returns ``[(piece_box, shifts, ghost)]``: ``shifts[k]`` per dim for leaf
    ``k``, ``ghost[k]`` whether leaf ``k`` reads outside ``owned`` on a split dim.
    (In this compiled module: a stencil on a new shape cuts its boxes on its first call, 2.3x faster than
    as Python.)

    >>> plan_boxes(((1, 4),), ((0, 4),), (True,), [[[(0, 8, -1)]], [[(0, 8, 1)]]])  # cell 3 reads 4: a ghost
    [(((1, 3),), ((-1,), (1,)), (False, False)), (((3, 4),), ((-1,), (1,)), (False, True))]
    """
    for lo, hi in box:
        if hi <= lo:
            return []
    # (loops, no generators: a stencil on a new shape cuts its boxes on its first call)
    cuts = []
    for d, (lo, hi) in enumerate(box):
        pts = {lo, hi}
        o0, o1 = owned[d]
        sd = split[d]
        for pieces in leaves:
            for plo, phi, s in pieces[d]:
                if lo < plo < hi:
                    pts.add(plo)
                if lo < phi < hi:
                    pts.add(phi)
                if sd:
                    if lo < o0 - s < hi:
                        pts.add(o0 - s)
                    if lo < o1 - s < hi:
                        pts.add(o1 - s)
        pts = sorted(pts)
        cuts.append(list(zip(pts, pts[1:])))
    out = []
    for cell in itertools.product(*cuts):
        shifts, ghost = [], []
        for pieces in leaves:
            sh, gh = [], False
            for d, (lo, hi) in enumerate(cell):
                for plo, phi, s in pieces[d]:
                    if plo <= lo and hi <= phi:
                        break
                else:
                    raise ValueError(f"leaves: no piece of dim {d} covers cells [{lo}, {hi})")
                sh.append(s)
                if split[d] and (lo + s < owned[d][0] or hi + s > owned[d][1]):
                    gh = True
            shifts.append(tuple(sh))
            ghost.append(gh)
        out.append((cell, tuple(shifts), tuple(ghost)))
    return out


def _cut_boxes_py(box, owned, split, pieces, leaf_array, ghost_lo, halo_lo, narr):
    """`meshrt._fusevm.cut_boxes` in Python (a build without the extension; the tests' reference): the
    boxes of `plan_boxes` packed as the kernel's arrays, those that read no ghost first."""
    nd, nl = len(box), len(pieces)
    pre, post = [], []
    for cell, shifts, ghost in plan_boxes(box, owned, split, pieces):
        sel = [0] * narr
        for a, gh in zip(leaf_array, ghost):
            if gh:
                sel[a] = 1
        offs = []
        for a, sh in zip(leaf_array, shifts):
            low = ghost_lo[a] if sel[a] else halo_lo[a]
            if low is None:
                raise ValueError(f"cut_boxes: array {a} is read past its block but has no ghost widths")
            offs += [sh[d] - owned[d][0] + low[d] for d in range(nd)]
        (post if any(sel) else pre).append(([x for lo_hi in cell for x in lo_hi], sel, offs))
    b, x, o = [], [], []
    for flat, sel, offs in pre + post:  # (flat lists: numpy reads no nesting)
        b += flat
        x += sel
        o += offs
    n = len(pre) + len(post)
    return (np.array(b, np.int64).reshape(n, 2 * nd), np.array(x, np.int8).reshape(n, narr),
            np.array(o, np.int64).reshape(n, nl, nd), len(pre))


_CUTTER = []


def _cutter():
    """`meshrt._fusevm.cut_boxes`, or `_cut_boxes_py` in a build without the extension; looked up once."""
    if not _CUTTER:
        try:
            from .._fusevm import cut_boxes
        except ImportError:
            cut_boxes = _cut_boxes_py
        _CUTTER.append(cut_boxes)
    return _CUTTER[0]


class _Ghost:
    """The ghost-padded copy of one operand: its buffer, exchange, and the slabs copied in first
    (``(padded index, local index)``); ``widths``: per dim (lo, hi).  (A plain class: its constructor
    compiled with this module, where a dataclass's is generated Python.)"""

    __slots__ = ("sharding", "padded", "exchange", "slabs", "widths", "periodic")

    def __init__(self, sharding, padded, exchange, slabs, widths, periodic):
        self.sharding, self.padded, self.exchange = sharding, padded, exchange
        self.slabs, self.widths, self.periodic = slabs, widths, periodic


class _FusedPlan:
    __slots__ = ("kernel", "pre", "post", "sel_pre", "sel_post", "offs_pre", "offs_post", "oo", "ghosts",
                 "self_shift", "box", "keep", "describe_args", "_mm", "_out", "small", "all", "sel_all",
                 "offs_all", "_copy", "fast", "once", "npre")

    @classmethod
    def build(cls, t, origin, shape, sig, arrays, leaves, once=False):
        """The plan, or None (the eager path runs).  ``once``: for one run, its ghosts plain buffers updated
        by plain messages (`meshrt.halo._OnceExchange`), no persistent requests or one-call run.  Whether
        it builds depends on global facts only, so every process takes the same path; with
        ``MESHRT_CHECK=1`` the processes also agree on it (one allreduce)."""
        mesh, s = t.mesh, t._sharding
        error, plan = None, None
        try:
            plan = cls()
            plan.once = once
            plan._make(t, origin, shape, sig, arrays, leaves)
        except Exception as e:  # decided alike on every process (global facts), agreed on under MESHRT_CHECK
            error = f"{type(e).__name__}: {e}"
        if _check.CHECK:
            with _mpi.internal("fused expression", "plan agreement", mesh):
                bad = mesh.comm.allreduce(1 if error else 0)
        else:
            bad = error is not None
        if bad:
            if plan is not None:
                plan.free()
            return None
        return plan

    def _make(self, t, origin, shape, sig, arrays, leaves):
        s, g = t._sharding, t._global_shape
        nd = len(g)
        self.ghosts = [None] * len(arrays)
        self._mm = []
        owned = tuple((sl.start, sl.stop) for sl in t._slices)
        box = tuple((max(o, lo), min(o + n, hi)) for o, n, (lo, hi) in zip(origin, shape, owned))
        split = tuple(bool(s.dim_axes(d)) for d in range(nd))
        pieces = []
        widths = [[[0, 0] for _ in range(nd)] for _ in arrays]
        periodic = [[False] * nd for _ in arrays]
        self_shift = False
        for a, kind, data in leaves:
            per = []
            for d in range(nd):
                if kind == "slice":
                    k = data[d]
                    per.append([(-_BIG, _BIG, k)])
                else:
                    n, k = g[d], data[d]
                    if not k:
                        per.append([(-_BIG, _BIG, 0)])
                        continue
                    if split[d]:
                        k = k - n if k > n // 2 else k
                        per.append([(-_BIG, _BIG, -k)])
                        periodic[a][d] = True
                    else:
                        per.append([(-_BIG, k, n - k), (k, _BIG, -k)])
                for _, _, sh in per[-1]:
                    if sh and arrays[a] is t:
                        self_shift = True
                    if split[d] and sh:
                        widths[a][d][0] = max(widths[a][d][0], -sh)
                        widths[a][d][1] = max(widths[a][d][1], sh)
            pieces.append(per)
        self.self_shift = self_shift
        halo_lo = [[arr._sharding.halo_widths(d)[0] if split[d] else 0 for d in range(nd)] for arr in arrays]
        for i, arr in enumerate(arrays):
            w = widths[i]
            if any(lo or hi for lo, hi in w):
                for d in range(nd):
                    lo, hi = w[d]
                    if (lo or hi) and max(lo, hi) > _narrowest_block(arr._sharding, arr._global_shape, d):
                        # a ghost filled from the neighbour's block alone: a read past it (``p[9:] = q[:2]``
                        # on blocks of 3) is the eager path's
                        raise ShardingError(f"a read {max(lo, hi)} cells across dim {d} passes a neighbour's block")
                self.ghosts[i] = self._ghost(arr, w, periodic[i], owned)
        ghost_lo = [None if gh is None else [lo for lo, _ in gh.widths] for gh in self.ghosts]
        # every box, those before the wait (they read no ghost) first: a small plan runs them all in one
        # call after the wait, a larger one runs the first `npre` while the exchange goes on
        self.all, self.sel_all, self.offs_all, self.npre = _cutter()(
            box, owned, split, pieces, [a for a, _, _ in leaves], ghost_lo, halo_lo, len(arrays))
        self.pre = self.post = None  # (`run`'s views of them, made when it first needs them apart)
        # A small block: no overlap to win, so one kernel call over every box after the wait, and a target
        # read with a shift is read from a copy (no second buffer to install).  Local only: the messages
        # stay those of every process.
        self.small = t._local.size <= _SMALL
        self._copy = None
        t_lo = [s.halo_widths(d)[0] if split[d] else 0 for d in range(nd)]
        self.oo = np.array([t_lo[d] - owned[d][0] for d in range(nd)], np.int64)
        self.box = box
        # compiled (or loaded from the disk cache) now: a compile error falls back, on every process
        self.kernel = _fuse.runner(sig, nd, _dtype_name(t._local.dtype), tuple(_dtype_name(a._local.dtype)
                                                                              for a in arrays))
        self.describe_args = (origin, shape, [(a._local.dtype, a._global_shape, a is t) for a in arrays])
        self._out = None
        if self.once and self._lasts_plain(g):
            self.once = False
        self.fast = self._small_run(t, arrays) if self.small and not self.once else None

    def _lasts_plain(self, g) -> bool:
        """Whether this once-plan may last as it is: a small tensor (``g`` at most `_SMALL` elements, so every
        block is small) whose ghosts travel as plain messages of whole rows (ghosts in dim 0 alone, no local
        copies), which the compiled run posts itself (`meshrt._fusevm.SmallRun`).  Its plain buffers and
        messages are then all a lasting plan needs: nothing to create when the shape repeats, so its second
        run is a steady one.  Global facts only: every process keeps it alike (where a buffer of this one's
        is not C-contiguous, its runs take the Python path, with the same messages)."""
        size = 1
        for n in g:
            size *= n
        if size > _SMALL or getattr(self.kernel, "program", None) is None:
            return False
        for gh in self.ghosts:
            if gh is not None and (any(lo or hi for lo, hi in gh.widths[1:]) or gh.exchange.plan.local_copies):
                return False
        return _fusevm().mpi_calls()

    def shed(self):
        """After a once-plan's run: drop its ghost buffers (the geometry stays, for `upgrade`)."""
        for gh in self.ghosts:
            if gh is not None:
                gh.padded = gh.exchange = None
        self._out = self._copy = None

    def upgrade(self, t, arrays):
        """This once-plan made lasting, for its key's second run: ghost buffers with persistent exchanges and
        the one-call run; its geometry is kept.  None: not possible here (a full build runs)."""
        try:
            owned = tuple((sl.start, sl.stop) for sl in t._slices)
            self.once = False
            for i, gh in enumerate(self.ghosts):
                if gh is not None:
                    self.ghosts[i] = self._ghost(arrays[i], gh.widths, gh.periodic, owned)
            self.fast = self._small_run(t, arrays) if self.small else None
        except Exception:  # (decided by global facts: alike on every process)
            self.free()
            return None
        return self

    def _small_run(self, t, arrays):
        """The whole small write as one compiled call (`meshrt._fusevm.SmallRun`), where the interpreter
        has the expression and every buffer is C-contiguous; None otherwise."""
        prog = getattr(self.kernel, "program", None)
        bufs = [a._local for a in arrays]
        if prog is None or not t._local.flags.c_contiguous or not all(b.flags.c_contiguous for b in bufs):
            return None
        ghosts = self.ghosts
        target = -1
        for i, a in enumerate(arrays):
            if a is t:
                target = i
                break
        slabs = [(i, gh.padded[ip], bufs[i][ia]) for i, gh in enumerate(ghosts) if gh is not None
                 for ip, ia in gh.slabs]
        exchanges, recvs, sends = [], [], []
        for gh in ghosts:
            if gh is None:
                continue
            ex = gh.exchange
            if type(ex) is not _OnceExchange:
                exchanges.append(ex)
                continue
            # plain messages, posted by the compiled run: each box one contiguous view of the padded buffer
            if ex.plan.local_copies:
                return None
            x, comm = ex.array, ex.comm
            for m in ex.plan.recvs:  # (a view that is not C-contiguous: SmallRun refuses it, ValueError)
                recvs.append((True, x[m.recv_box], m.peer, m.recv_tag, comm))
            for m in ex.plan.sends:
                sends.append((False, x[m.send_box], m.peer, m.send_tag, comm))
        try:
            return _fusevm().SmallRun(prog, self.all, self.sel_all, self.offs_all, self.oo, t._local, bufs,
                                    [None if gh is None else gh.padded for gh in ghosts], slabs, exchanges, target,
                                    self.self_shift and target >= 0, recvs + sends)
        except ValueError:  # (a buffer it cannot take: the plan's Python path, with the same messages)
            return None

    def _ghost(self, arr, w, per, owned):
        s, g = arr._sharding, arr._global_shape
        nd = len(g)
        halos = []
        for d in s.sharded_dims:
            halos += list(w[d])
        ck = (s, tuple(halos))
        ps = _PADDED.get(ck)
        if ps is None:
            if len(_PADDED) > 1024:
                _PADDED.clear()
            ps = _PADDED[ck] = s.replace(halo_sizes=halos)
        # the padded buffer: this block (the operand is laid out as the target) and its ghosts (`ps.local_shape(g)`
        # without planning the shape's blocks again)
        local_shape = tuple([sl.stop - sl.start + lo + hi for sl, (lo, hi) in zip(arr._slices, w)])
        if self.once:  # one run: a plain buffer (only its edges are written) and plain messages
            padded = np.empty(local_shape, arr._local.dtype)
            ex = _OnceExchange(padded, ps, g, tuple(per))
        else:
            count = 1
            for n in local_shape:
                count *= n
            if count <= _SMALL:  # a few pages at most: a plain buffer (an mmap is two system calls)
                padded = np.empty(local_shape, arr._local.dtype)
            else:
                mm = mmap.mmap(-1, max(1, count * arr._local.dtype.itemsize))  # pages never touched (the middle of
                self._mm.append(mm)  # the block) are never made resident
                padded = np.frombuffer(mm, arr._local.dtype, count).reshape(local_shape)
            per = tuple(per)
            # (its plan is the once-plan's, cached: a shape's second run builds no plan and repeats no check)
            ex = HaloExchange._of_plan(padded, _plan_global(ps, g, per, ps.mesh.rank, local_shape), ps.mesh)
        # the slabs: per dim with ghosts, the block's first and last cells read across it, copied in first
        slabs = []
        full_p = full_a = None
        for d in range(nd):
            wlo, whi = w[d]
            o0, o1 = owned[d]
            n = o1 - o0
            depth = wlo + whi
            if not depth or not n:
                continue
            if full_a is None:
                a_lo = [s.halo_widths(k)[0] if s.dim_axes(k) else 0 for k in range(nd)]
                full_p = [slice(w[k][0], w[k][0] + owned[k][1] - owned[k][0]) for k in range(nd)]
                full_a = [slice(a_lo[k], a_lo[k] + owned[k][1] - owned[k][0]) for k in range(nd)]
            depth = min(depth, n)
            alo = full_a[d].start
            for lo in ((0,) if n == depth else (0, n - depth)):
                ip, ia = list(full_p), list(full_a)
                ip[d] = slice(wlo + lo, wlo + lo + depth)
                ia[d] = slice(alo + lo, alo + lo + depth)
                slabs.append((tuple(ip), tuple(ia)))
        return _Ghost(ps, padded, ex, tuple(slabs), tuple([(lo, hi) for lo, hi in w]), tuple(per))

    def _call(self, boxes, sel, offs, out, bufs, scalars):
        args = []
        for i, x in enumerate(bufs):
            gh = self.ghosts[i]
            args += (x, x if gh is None else gh.padded)
        self.kernel(boxes, sel, offs, out, self.oo, *args, *scalars)

    def run(self, t, arrays, scalars, new):
        f = self.fast
        if f is not None and f.run(t._local, tuple([a._local for a in arrays]), scalars):
            stats["one_call"] += 1
            return
        if self.small and t._local.flags.c_contiguous:
            self._run_small(t, arrays, scalars, new)
            return
        handles = []
        for i, gh in enumerate(self.ghosts):
            if gh is not None:
                for ip, ia in gh.slabs:
                    gh.padded[ip] = arrays[i]._local[ia]  # (no local name: _install counts references)
                handles.append(gh.exchange.start())
        self._run(t, arrays, scalars, new, handles)
        if (self.self_shift and not new) or not t._local.flags.c_contiguous:
            _install(t, self._out, self.box, self.oo)
        self._out = None

    def _run_small(self, t, arrays, scalars, new):
        ghosts = self.ghosts
        for i, gh in enumerate(ghosts):
            if gh is not None:
                for ip, ia in gh.slabs:
                    gh.padded[ip] = arrays[i]._local[ia]
                gh.exchange.start()
        target = t._local
        bufs = []
        for a in arrays:
            x = a._local
            if a is t:
                if self.self_shift and not new:  # read from the cells as they were before the write
                    c = self._copy
                    if c is None or c.shape != x.shape or c.dtype != x.dtype:
                        c = self._copy = np.empty_like(x)
                    c[...] = x
                    x = c
            elif not x.flags.c_contiguous:
                x = np.ascontiguousarray(x)
            elif np.may_share_memory(x, target):
                x = x.copy()
            bufs.append(x)
        for gh in ghosts:
            if gh is not None:
                gh.exchange.wait()
        if len(self.all):
            self._call(self.all, self.sel_all, self.offs_all, target, bufs, scalars)

    def _run(self, t, arrays, scalars, new, handles):
        # What only this process sees (a strided buffer, memory shared with the target) is handled here,
        # with copies: the plan, and so the messages, stay those of every process.
        target = t._local
        bufs = []
        for a in arrays:
            x = a._local
            if not x.flags.c_contiguous:
                x = np.ascontiguousarray(x)
            elif a is not t and np.may_share_memory(x, target):
                x = x.copy()
            bufs.append(x)
        second = (self.self_shift and not new) or not target.flags.c_contiguous
        out = self._out = _take(target.shape, target.dtype) if second else target
        del target
        if self.pre is None:  # (rows of the packed boxes: C-contiguous, as the kernel needs them)
            k = self.npre
            self.pre, self.sel_pre, self.offs_pre = self.all[:k], self.sel_all[:k], self.offs_all[:k]
            self.post, self.sel_post, self.offs_post = self.all[k:], self.sel_all[k:], self.offs_all[k:]
        if len(self.pre):
            self._call(self.pre, self.sel_pre, self.offs_pre, out, bufs, scalars)
        for h in handles:
            h.wait()
        if len(self.post):
            self._call(self.post, self.sel_post, self.offs_post, out, bufs, scalars)

    def free(self):
        self.fast = None
        for gh in self.ghosts or ():
            if gh is not None and gh.exchange is not None:
                gh.exchange.free()


_POOL: dict = {}  # (shape, dtype) -> buffers this module allocated, reused once nothing else holds them


def _take(shape, dtype) -> np.ndarray:
    """A buffer for a new value: one of ours that nothing references any more (a time loop's previous
    step: no allocation, no page faults), else a new one (kept, two per shape and dtype)."""
    key = (shape, dtype)
    bufs = _POOL.get(key)
    if bufs is None:
        if len(_POOL) > 8:
            _POOL.clear()
        bufs = _POOL[key] = []
    for i in range(len(bufs)):
        if _getrefcount(bufs[i]) == 2:  # the list's reference and getrefcount's argument
            return bufs[i]
    buf = np.empty(shape, dtype)
    if len(bufs) < 2:
        bufs.append(buf)
    return buf


_RESTS: dict = {}


def _rest(shape, box, oo):
    """(the target box in local indices, the slabs of the buffer around it), or None if the box is empty."""
    key = (shape, box, tuple(oo.tolist()))
    r = _RESTS.get(key, 0)
    if r == 0:
        local_box = tuple(slice(lo + o, hi + o) for (lo, hi), o in zip(box, key[2]))
        r = None
        if not any(hi <= lo for lo, hi in box):
            cur, slabs = [slice(None)] * len(shape), []
            for d, b in enumerate(local_box):
                for part in (slice(0, b.start), slice(b.stop, shape[d])):
                    if part.stop > part.start:
                        slabs.append(tuple(cur[:d]) + (part,) + tuple(cur[d + 1:]))
                cur[d] = b
            r = (local_box, tuple(slabs))
        if len(_RESTS) > 1024:
            _RESTS.clear()
        _RESTS[key] = r
    return r


def _install(t, new, box, oo):
    """``new`` (the target cells of ``box`` written) becomes ``t``'s buffer; other cells kept from the old."""
    old = t._local
    r = _rest(old.shape, box, oo)
    if r is None:
        return  # nothing of the target region here: nothing was written
    local_box, slabs = r
    for ix in slabs:  # the rest of the buffer (halos, cells outside the target region) from the old one
        new[ix] = old[ix]
    # Swap only where nothing else can see the old buffer: 4 references (the slot, the interior view's base
    # or the interior slot, ``old`` here, getrefcount's argument), and none to the interior view but its slot.
    t._writes = None
    interior = t._interior
    free = _getrefcount(interior) <= 3 if interior is not old else True  # slot, ``interior``, argument
    del interior
    pooled = any(b is old for b in _POOL.get((old.shape, old.dtype), ()))  # the pool's reference
    if old.base is None and t._halo is None and free and _getrefcount(old) <= 4 + pooled:
        layout = _layout(t._sharding, t._global_shape)
        t._local = new
        t._interior = new[layout.index]
        t._writes = None
        stats["swaps"] += 1
    else:
        old[local_box] = new[local_box]
        stats["copies"] += 1


# -- explain ----------------------------------------------------------------------------------------------
def _describe_node(n) -> str:
    if isinstance(n, _Leaf):
        if n.kind == "full":
            return "tensor"
        if n.kind == "slice":
            return f"slice{list(n.starts)}" + (f" dropping {list(n.drop)}" if n.drop else "")
        return f"roll{list(n.starts)}"
    if isinstance(n, _Op):
        name = n.ufunc.__name__ if n.op == "ufunc" else n.op
        inner = ", ".join(_describe_node(a) if isinstance(a, _Node) else repr(a.item()) for a in n.args)
        return f"{name}({inner})"
    return "?"


def explain_fused(expr, target=None, key=Ellipsis) -> str:
    """How ``target[key] = expr`` (or evaluating ``expr`` on its own) runs, as text; nothing runs.

    Shows the fused kernel's operands, the ghost widths exchanged per operand,
    the bytes this device receives per step, its boxes (before and after the
    exchange's wait: the overlap) and whether the target gets a second buffer.

    Parameters
    ----------
    expr : LazyTensor
        A deferred expression.
    target : DistributedTensor, optional
        The tensor assigned into; default a new tensor (the ``np.roll`` form).
    key : index, optional
        The assigned region of ``target``.

    Returns
    -------
    str
        The plan, or why the expression would run eagerly.

    Examples
    --------
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> u = DistributedTensor.zeros((8, 8), Sharding(Mesh((-1,), ("x",)), [["x"]]))
    >>> print(explain_fused(0.5 * (u[:-2, 1:-1] + u[2:, 1:-1]), u, (slice(1, -1), slice(1, -1))))  # doctest: +ELLIPSIS
    fused kernel: multiply(0.5, add(slice[0, 1], slice[2, 1])) -> float64 ...
    """
    if not _lazy_type(type(expr)):
        return "not a deferred expression: nothing to fuse"
    node = expr._expr
    if not isinstance(node, _Op):
        return f"{_describe_node(node)}: a view or copy, not a fused kernel"
    if target is None:
        return _explain_new(node)
    r = _region(target.global_shape, key)
    if r is not None:
        r = (r[0], r[1], (), r[1])
    else:
        r = _int_region(target.global_shape, key)
    if r is None or r[3] != node.shape or node.dtype != target.dtype:
        return "runs eagerly: the key is not of step-1 slices and ints, or the shapes or dtypes differ"
    return _explain(node, target, r[0], shape=r[1], drop=r[2])


def _explain_new(node):
    try:
        sig, arrays, leaves, scalars = _collect(node, (0,) * len(node.shape))
    except _NotFusable:
        return "runs eagerly"
    return _explain(node, arrays[0], (0,) * len(node.shape), new=True)


def _explain(node, t, origin, new=False, shape=None, drop=()):
    try:
        sig, arrays, leaves, scalars = _collect(node, origin, drop)
    except _NotFusable:
        return "runs eagerly"
    plan = _get_plan(t, origin, node.shape if shape is None else shape, sig, arrays, leaves, force=True)
    if plan is None:
        return "runs eagerly (operands not of the target's layout, or views of other tensors)"
    origin, shape, arrays = plan.describe_args
    pre, post = plan.all[:plan.npre].tolist(), plan.all[plan.npre:].tolist()
    lines = [f"fused kernel: {_describe_node(node)} -> {node.dtype} into "
             f"{'a new tensor' if new else 'the target'} region {list(origin)} + {list(shape)}; "
             f"device {t.mesh.rank}"]
    total = 0
    for i, (dtype, gshape, is_t) in enumerate(arrays):
        gh = plan.ghosts[i]
        name = "target" if is_t and not new else f"operand {i}"
        if gh is None:
            lines.append(f"  {name} {dtype} {list(gshape)}: local reads only")
            continue
        hp = plan_halo(gh.sharding, gshape, gh.periodic, device=t.mesh.rank)
        recv = sum(int(np.prod([b.stop - b.start for b in m.recv_box])) for m in hp.recvs) * dtype.itemsize
        total += recv
        ws = {d: w for d, w in enumerate(gh.widths) if any(w)}
        lines.append(f"  {name} {dtype} {list(gshape)}: ghost widths {ws} "
                     f"{'periodic ' + str([d for d, p in enumerate(gh.periodic) if p]) if any(gh.periodic) else ''}"
                     f"; {len(hp.recvs)} messages, {recv} bytes in")
    lines.append(f"  bytes received per step: {total}")
    lines.append(f"  boxes before the wait (overlap the exchange): {[_fmt(b) for b in pre]}")
    lines.append(f"  boxes after the wait (read ghosts): {[_fmt(b) for b in post]}")
    if plan.self_shift and not new:
        if plan.small:
            lines.append("  the target is read with a shift: its cells are read from a copy made before the "
                         "write (a small block: no second buffer)")
        else:
            lines.append("  the target is read with a shift: written into a second buffer that replaces its own")
    return "\n".join(lines)


def _fmt(flat):
    return "[" + ", ".join(f"{a}:{b}" for a, b in zip(flat[::2], flat[1::2])) + "]"


def array_function(func, args, kwargs):
    """``np.roll`` and ``np.where(c, x, y)`` deferred; any other numpy function first evaluates what is pending."""
    if func is np.roll and not _eager[0]:
        try:
            r = roll(*args, **kwargs)
        except TypeError:
            r = None
        if r is not None:
            return r
    elif func is np.where and len(args) == 3 and not kwargs and not _eager[0]:
        r = where(*args)
        if r is not None:
            return r
    touch()
    return None
