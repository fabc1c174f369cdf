"""The per-operation fast paths of small, common operations: a read of one element (``t[i]``,
``t[i, j]``) as one broadcast from its owner, and the dot product of two 1-D tensors of one sharding
(``np.dot(a, a)``) as one local dot and one allreduce.

Each keeps what its general path planned the first time (the owner, the local index, the result's
sharding), keyed by the operands' shardings and shapes, so a loop pays a dictionary lookup, the numpy
call and the one MPI call, not a plan.  Anything else (partial tensors, mixed shardings, views with
flips, new dims) goes the general way.

>>> from meshrt import DistributedTensor, Mesh, Sharding
>>> a = DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]]))
>>> float(a[2]), float(np.dot(a, a))
(2.0, 14.0)
"""

from __future__ import annotations

import bisect
import dis
import itertools
import operator
import sys
import types

import numpy as np
import numpy.lib.mixins  # noqa: F401  (operator_method: numpy's operators)
from mpi4py import MPI

from .. import collectives
from ..runtime import check as _check, mpi as _mpi
from ..sharding.spec import Sharding, _dim_offsets
from .dispatch import ABOVE
from .distributed_tensor import DistributedTensor
from .._slots import tensor as _new_tensor
from .index_exec import _index_plan
from .ufunc import _SCALAR_OPS, _SCALARS, _errstate_ok, _scalar_ufunc

_DOTS: dict = {}  # (sharding, shape, dtype a, dtype b) -> (split axes, result sharding, result dtype)
_LAYOUTS: dict = {}  # (sharding, shape) -> (per dim (offsets, axes, sizes) or None, the 0-d result's sharding,
# a number for `_READS`); or False
_READS: dict = {}  # (layout's number, key) -> (local index or None, bcast axes, bcast root): ints alone, which the
# garbage collector stops tracking (a loop over new indices adds no work to its collections)
_NUMBERS = itertools.count()
# numpy's functions a loop's statement calls, bound once (a compiled module looks ``np.dot`` up each time)
_dot, _empty, _contiguous = np.dot, np.empty, np.ascontiguousarray
_LIMIT = 4096


def read_element(t: DistributedTensor, key, depth=None):
    """``t[key]`` for a key of ints naming one element (None: not this case, the general path runs).
    ``depth``: the reading code's frame is ``sys._getframe(depth)`` seen from this function as Python source
    (compiled, neither it nor `getitem` has a frame: `getitem` passes `_READ_DEPTH`); the read may be that of
    ``t[key] op= v`` (an `OwnedElement`)."""
    lay = _layout_of(t)
    if lay is False:
        return None
    e = _entry(t, key, lay)
    if e is None:
        return None
    idx, axes, root = e
    if not axes:  # a value, as numpy's t[i, j]: ``x = t[i, j]; x += 1`` leaves t alone
        return _value(t._interior[idx].copy(), lay[1], ())
    if depth is not None and _SIGNATURE is not None:
        f = _getframe(depth - 1 + _OWN_FRAME)
        code, at = f.f_code, f.f_lasti
        last = _LAST_SITE
        if code is last[0] and at == last[1]:  # (a loop's read: the same site as the last one)
            aug = last[2]
        else:
            aug = _SITES.get((id(code), at))
            if aug is None:
                aug = _augmented_read(f)
            last[0], last[1], last[2] = code, at, aug
        if aug and _errstate_ok():
            e = _OWNED_LAST[0] = OwnedElement(t, key, (idx, axes, root, lay[1]))
            _OWNED_LAST[1] = code
            return e
    if lay[3]:  # (a broadcast over groups of one process: the value)
        return _value(t._interior[idx].copy(), lay[1], ())
    return _broadcast_element(t, idx, axes, root, lay[1])


def _entry(t, key, lay):
    """`element_owner`'s ``(local index or None, broadcast axes, root)`` for ``key`` (an int or a tuple of
    them) on ``t`` of `_layout_of` ``lay``, from `_READS` or kept there; None: not one element in range."""
    e = _READS.get((lay[2], key))
    if e is not None:
        return e
    k = key if type(key) is tuple else (key,)
    if len(k) != len(t._global_shape):
        return None
    e = element_owner(t, k, lay)
    if e is None:
        return None
    if len(_READS) > _LIMIT:
        _READS.clear()
    e = _READS[(lay[2], key)] = e[:3]
    return e


_NOTHING = [(slice(0, 0),) * n for n in range(33)]  # an empty selection: numpy still checks the value's cast


def write_element(t, key, value) -> bool:
    """``t[key] = value`` for ``key`` an int or a tuple of ints naming one element and ``value`` a Python
    scalar: its owners write it, no plan, no message (elsewhere numpy checks the cast on an empty selection,
    so a refused value raises alike everywhere).  False: not this case."""
    lay = _layout_of(t)
    e = _entry(t, key, lay) if lay is not False else None
    if e is None:
        return False
    idx = e[0]
    t._interior[idx if idx is not None else _NOTHING[len(t._global_shape)]] = value
    return True


def getitem(t, key):
    """`DistributedTensor.__getitem__` (`install` puts it in the class's own's place; compiled, a read pays no
    Python frame of its own): one element, one owner's piece or a deferred view here, the rest by
    `DistributedTensor._getitem_eager`."""
    tk = type(key)
    if type(t) is DistributedTensor:
        # the key's ints and slices counted here (a call per test was ~0.3 us: a stencil statement has five keys)
        ints = slices = 0
        if tk is tuple:
            for k in key:
                if type(k) is int:
                    ints += 1
                elif type(k) is slice:
                    slices += 1
                else:
                    ints = -1
                    break
        if tk is int or tk is tuple and ints >= 0 and not slices:
            one = read_element(t, key, _READ_DEPTH)
            if one is not None:
                return one
            if len(t._global_shape) > 1:  # ``A[i]``: a row from its owner
                one = read_piece(t, key if tk is tuple else (key,), _READ_DEPTH)
                if one is not None:
                    return one
        elif ints > 0:  # ints and slices: ``A[i, :j]``
            one = read_piece(t, key, _READ_DEPTH)  # ``A[i, :j]``: the owner's piece, one broadcast, no plan
            if one is not None:
                return one
        if _lazy_getitem is not None:
            one = _lazy_getitem(t, key)  # a step-1 slice: a deferred view (meshrt.tensor.lazy)
            if one is not None:
                return one
    return t._getitem_eager(key)


def array_ufunc(self, ufunc, method, *inputs, out=None, **kwargs):
    """`DistributedTensor.__array_ufunc__` (`install` puts it in the class's own's place; compiled): a 0-d
    value's ``np.tanh(x)``, ``np.add(x, 1.0)`` by numpy on the values (`ufunc._scalar_ufunc`; a deferred
    `LazyTensor` is never 0-d), the rest by the class's own ``__array_ufunc__``."""
    if type(self) is DistributedTensor and not self._global_shape and method == "__call__" and not kwargs:
        if out is not None and ABOVE.lazy is not None:
            ABOVE.lazy.touch()
        r = _scalar_ufunc(ufunc, inputs, out, DistributedTensor)
        if r is not None:
            return r
    return _GENERAL["__array_ufunc__"](self, ufunc, method, *inputs, out=out, **kwargs)


def operator_method(name, ufunc, symbol, kind="plain"):
    """The tensor's operator ``name``: ``t + x`` (``kind`` "plain"), ``x + t`` ("reflected") and ``t += x``
    ("inplace").  A 0-d tensor's by numpy on the values (`ufunc._scalar_ufunc`); else straight to the deferred
    or fused form (`meshrt.tensor.lazy.ufunc_call` / `inplace_call`: what ``__array_ufunc__`` would reach
    through numpy's dispatch; in place, into ``t`` or into the region of a view ``A[:, j]``); anything else
    takes numpy's operator (``NDArrayOperatorsMixin``), so results are those of ``ufunc(t, x)``
    (``ufunc(t, x, out=(t,))`` in place).  Compiled, a statement's operators pay no Python frame."""
    mixin = getattr(np.lib.mixins.NDArrayOperatorsMixin, name)
    inplace = kind == "inplace"
    reflected = kind == "reflected"

    def op(self, other):
        args = (other, self) if reflected else (self, other)
        if type(self) is DistributedTensor and not self._global_shape:  # 0-d: numpy on the values
            if inplace and ABOVE.lazy is not None:
                ABOVE.lazy.touch()
            r = _scalar_ufunc(ufunc, args, (self,) if inplace else None, DistributedTensor)
            if r is not None:
                return r
        if _lazy_ufunc_call is not None:
            r = _lazy_inplace_call(ufunc, self, other) if inplace else _lazy_ufunc_call(ufunc, args, None)
            if r is not None:
                return r
        return mixin(self, other)

    op.__name__ = op.__qualname__ = name
    written = {"plain": f"t {symbol} x", "reflected": f"x {symbol} t", "inplace": f"t {symbol}= x"}[kind]
    op.__doc__ = f"``{written}``: ``np.{ufunc.__name__}``" + (" into ``t``." if inplace else ".")
    return op


def power_method(inplace=False):
    """The tensor's ``t ** x`` (``t **= x``), as numpy's arrays take it: an int 2 is ``np.square``, and on a
    float or complex tensor a float 0.5 ``np.sqrt`` and an int -1 ``np.reciprocal`` (numpy's own shortcuts,
    so the bits are its; square and sqrt fuse into a deferred expression); any other exponent
    ``np.power``."""
    name = "__ipow__" if inplace else "__pow__"
    mixin = getattr(np.lib.mixins.NDArrayOperatorsMixin, name)

    def op(self, other):
        to = type(other)
        if to is int and other == 2:
            fast = np.square
        elif (to is float and other == 0.5 or to is int and other == -1) and self.dtype.kind in "fc":
            fast = np.sqrt if to is float else np.reciprocal
        else:
            return mixin(self, other)
        return fast(self, out=self) if inplace else fast(self)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``t {'**=' if inplace else '**'} x``: numpy's arrays' (``np.square`` for ``x == 2``)."
    return op


_GENERAL: dict = {}  # the class's own methods the fronts fall back on, as `install` found them
# meshrt.tensor.lazy's entries, bound by `install` (``ABOVE.lazy.ufunc_call`` looked up per operation: ~0.1 us)
_lazy_ufunc_call = _lazy_inplace_call = _lazy_getitem = None


def install() -> None:
    """Put this module's fronts in `DistributedTensor` (``meshrt.tensor`` calls it once): `getitem` for
    ``__getitem__``, `array_ufunc` for ``__array_ufunc__``, `operator_method` s for the arithmetic and
    comparison operators, and `OwnedElement` as the value the compiled ``__setitem__`` lets store itself."""
    from .._keys import install_stored

    global _lazy_ufunc_call, _lazy_inplace_call, _lazy_getitem
    if ABOVE.lazy is not None:
        _lazy_ufunc_call, _lazy_inplace_call, _lazy_getitem = (ABOVE.lazy.ufunc_call, ABOVE.lazy.inplace_call,
                                                               ABOVE.lazy.getitem)
    for name in ("__getitem__", "__array_ufunc__"):
        _GENERAL.setdefault(name, DistributedTensor.__dict__[name])
    getitem.__doc__ = _GENERAL["__getitem__"].__doc__
    DistributedTensor.__getitem__ = getitem
    DistributedTensor.__array_ufunc__ = array_ufunc
    for name, ufunc, sym in (("add", np.add, "+"), ("sub", np.subtract, "-"), ("mul", np.multiply, "*"),
                             ("truediv", np.true_divide, "/")):
        setattr(DistributedTensor, f"__{name}__", operator_method(f"__{name}__", ufunc, sym))
        setattr(DistributedTensor, f"__r{name}__", operator_method(f"__r{name}__", ufunc, sym, "reflected"))
        setattr(DistributedTensor, f"__i{name}__", operator_method(f"__i{name}__", ufunc, sym, "inplace"))
    for name, ufunc, sym in (("lt", np.less, "<"), ("le", np.less_equal, "<="), ("gt", np.greater, ">"),
                             ("ge", np.greater_equal, ">=")):  # (no reflected forms: Python swaps them)
        setattr(DistributedTensor, f"__{name}__", operator_method(f"__{name}__", ufunc, sym))
    DistributedTensor.__pow__ = power_method()
    DistributedTensor.__ipow__ = power_method(inplace=True)
    install_stored(OwnedElement)


def _broadcast_element(t, idx, axes, root, rs) -> DistributedTensor:
    """The element at local index ``idx`` (None: not held here) as a 0-d tensor of sharding ``rs``, on every
    process of the group over ``axes``: one broadcast from ``root``."""
    x = t._interior[idx].copy() if idx is not None else _empty((), t._local.dtype)
    return _value(collectives.broadcast(x, t._sharding._mesh, axes, root), rs, ())


_getframe = sys._getframe


def _value(block, sharding, shape, slices=()) -> DistributedTensor:
    """A new tensor of ``block`` (no halos, not periodic): `DistributedTensor._fast`'s work without a call to a
    Python classmethod (a read or a dot makes one per call)."""
    return _new_tensor(DistributedTensor, block, block, sharding, shape, slices, None)


stats = {"owned_updates": 0, "owned_fallbacks": 0, "vector_dots": 0, "targeted_dots": 0,
         "owned_stores": 0}  # (tests read them)


def _augmented_signature():
    """``(BINARY_SUBSCR, COPY 2 COPY 2, CACHE)`` as bytes of this CPython's code (None where it differs: 3.10,
    3.14)."""
    op = dis.opmap
    if sys.version_info < (3, 11) or not {"BINARY_SUBSCR", "COPY", "CACHE"} <= op.keys():
        return None
    return op["BINARY_SUBSCR"], bytes((op["COPY"], 2, op["COPY"], 2)), op["CACHE"]


_SIGNATURE = _augmented_signature()
# 1 as Python source; 0 compiled (a compiled function has no frame of its own)
_OWN_FRAME = int(type(_augmented_signature) is types.FunctionType)
_READ_DEPTH = 1 + _OWN_FRAME  # `getitem`'s frames between `read_element` and the reading code
_SITES: dict = {}  # (id of a code object, offset) -> whether the instruction there is an augmented assignment's read
_CODES: dict = {}  # id -> the code object of `_SITES` keys


def _augmented_read(frame) -> bool:
    """Whether ``frame`` is reading ``t[k]`` for ``t[k] op= v``: CPython compiles that (alone) to ``COPY 2;
    COPY 2; BINARY_SUBSCR``, the value's only use ``op`` and its result's ``t[k] = ...`` (same ``t``, same
    ``k``).  One lookup per call; the code is read once per site."""
    code, at = frame.f_code, frame.f_lasti
    r = _SITES.get((id(code), at))  # (a code object's own hash reads all of it: its id, the object kept below)
    if r is None:
        b, i = code.co_code, at
        if _SIGNATURE is not None:
            while i > 0 and b[i] == _SIGNATURE[2]:  # (an instruction's inline caches: the frame may point into them)
                i -= 2
        r = _SIGNATURE is not None and i >= 4 and b[i] == _SIGNATURE[0] and b[i - 4:i] == _SIGNATURE[1]
        if len(_SITES) > _LIMIT:
            _SITES.clear()
            _CODES.clear()
        _SITES[(id(code), at)] = r
        _CODES[id(code)] = code  # (alive while its id is a key: no other code object takes the id)
    return r


_CAST_OK: set = set()


class OwnedElement:
    """The read of ``t[i, j] op= v`` on a split tensor: the value goes only through ``op`` and back to
    ``t[i, j]``, so the element's owners compute and write it and no process broadcasts it (a loop's
    ``A[i, j] -= A[i, :j] @ A[j, :j]``, ``A[i, j] /= A[j, j]``).

    Python reads ``t[i, j]`` (`read_element` returns this), evaluates ``v``, calls ``op`` here and stores
    its result back (`DistributedTensor.__setitem__` calls `store`).  ``v`` a Python or numpy scalar or a
    0-d tensor replicated on the mesh, ``op`` one of ``+ - * /``: on the owners, numpy's in-place ``op`` on
    the element (``casting="same_kind"``, as a 0-d tensor's); elsewhere the same call on a stand-in, for
    its casting errors alone (raised alike on every process).  Anything else (a vector, ``//=``, a lazy
    value) broadcasts the element first, as a plain read does, and runs the tensor's operator: the same
    decision on every process, from the operands' types.  (Taken only where no floating-point error
    raises, `_errstate_ok`: an owner-only raise would split the processes.)

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> a = DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]]))
    >>> a[3] -= 1.0
    >>> a.gather()
    array([0., 1., 2., 2.])
    """

    __slots__ = ("t", "key", "entry", "value", "done")

    def __init__(self, t, key, entry):
        self.t, self.key, self.entry, self.value, self.done = t, key, entry, None, False

    def _materialize(self) -> DistributedTensor:
        """The element as a plain read gives it: one broadcast from its owner."""
        stats["owned_fallbacks"] += 1
        return _broadcast_element(self.t, *self.entry)

    def _update(self, ufunc, v, fallback):
        tv = type(v)
        if tv is OwnerValue:  # (``A[i, j] -= A[i, :j] @ A[:j, j]``: the dot's value is on this element's owners)
            if (v.value is None) != (self.entry[0] is None):
                raise RuntimeError(f"{type(self).__name__}: a dot's value held by other processes than the element's")
            v = v.value if v.value is not None else v.dtype.type(0)  # (elsewhere: its dtype, for the cast check)
            tv = type(v)
        if tv is DistributedTensor:
            if v._global_shape or v._sharding != self.entry[3]:
                return fallback(self._materialize(), v)
            val = v._local
        elif tv in _SCALARS or isinstance(v, np.generic):
            val = v
        else:
            return fallback(self._materialize(), v)
        if ABOVE.lazy is not None:
            ABOVE.lazy.touch()  # (as a 0-d tensor's in-place operator)
        idx = self.entry[0]
        if idx is not None:
            x = self.t._interior[idx]
            if x.dtype.kind == "f":  # numpy's scalar arithmetic (as `ufunc._scalar_ufunc`'s), where it keeps the dtype
                r = _SCALAR_OPS[ufunc](x[()], val[()] if tv is DistributedTensor else val)
                if getattr(r, "dtype", None) == x.dtype:
                    self.value = r
                    self.done = True
                    stats["owned_updates"] += 1
                    return self
            x = x.copy()
            ufunc(x, val, out=x, casting="same_kind")
            self.value = x  # (the owners' element; ``done`` below on every process)
        else:
            dt = self.t._local.dtype
            ck = (ufunc, dt, tv, v if tv is int else getattr(v, "dtype", None))
            if ck not in _CAST_OK:
                with np.errstate(all="ignore"):
                    ufunc(np.ones((), dt), val, out=np.ones((), dt), casting="same_kind")
                if len(_CAST_OK) > _LIMIT:
                    _CAST_OK.clear()
                _CAST_OK.add(ck)
        self.done = True
        stats["owned_updates"] += 1
        return self

    def __iadd__(self, v):
        return self._update(np.add, v, operator.iadd)

    def __isub__(self, v):
        return self._update(np.subtract, v, operator.isub)

    def __imul__(self, v):
        return self._update(np.multiply, v, operator.imul)

    def __itruediv__(self, v):
        return self._update(np.true_divide, v, operator.itruediv)

    def store(self, t, key) -> None:
        """``t[key] = self``: the owners write the updated element (not updated, or another target: the plain
        read's value, broadcast, then written; decided alike on every process)."""
        if _OWNED_LAST[0] is self:
            _OWNED_LAST[0] = _OWNED_LAST[1] = None
        if self.done and t is self.t and key == self.key:
            if self.value is not None:
                t._interior[self.entry[0]] = self.value
            return
        t[key] = self._materialize()


def _fallback(name):
    def inplace(self, v):
        return getattr(operator, name)(self._materialize(), v)

    inplace.__name__ = f"__{name}__"
    return inplace


for _name in ("ifloordiv", "imod", "ipow", "imatmul", "iand", "ior", "ixor", "ilshift", "irshift"):
    setattr(OwnedElement, f"__{_name}__", _fallback(_name))
del _name


# -- ``A[i, j] -= A[i, :j] @ A[:j, j]``: the dot where the element is ---------------------------------------
_OWNED_LAST = [None, None]  # the last `OwnedElement` read, and the code object reading it
_LAST_DEFERRED = [None, -1, None]  # the last left `DeferredRow`: the code object, the offset of its ``@``, it
_TAG_DOT = 30211  # (the p2p messages of a targeted dot, on the group of the rows' mesh axis)


def _bytecode_tables():
    """``(matmul, in-place ops, {opname: pops})`` for `_matmul_role` (None where this CPython's bytecode is
    not 3.11's or 3.12's form)."""
    ops = getattr(dis, "_nb_ops", None)
    if ops is None or sys.version_info >= (3, 13) or _SIGNATURE is None:
        return None
    names = [n for n, _ in ops]
    if "NB_MATRIX_MULTIPLY" not in names:
        return None
    inplace = frozenset(i for i, n in enumerate(names) if n.startswith("NB_INPLACE_"))
    # what may come between a row's read and the right operand's subscript: loads, an index's arithmetic
    pops = {"LOAD_FAST": 0, "LOAD_NAME": 0, "LOAD_GLOBAL": 0, "LOAD_CONST": 0, "LOAD_DEREF": 0, "NOP": 0,
            "EXTENDED_ARG": 0, "UNARY_NEGATIVE": 1, "BINARY_OP": 2}
    arithmetic = frozenset(names.index(n) for n in ("NB_ADD", "NB_SUBTRACT", "NB_MULTIPLY", "NB_TRUE_DIVIDE"))
    return names.index("NB_MATRIX_MULTIPLY"), inplace, pops, arithmetic


_DIS = _bytecode_tables()
_ROLES: dict = {}  # (id of a code object, offset) -> `_matmul_role`'s answer
_INSTRUCTIONS: dict = {}  # id of a code object -> (the code, its instructions, their offsets)


def _matmul_role(code, at):
    """What the value a ``BINARY_SUBSCR`` at offset ``at`` of ``code`` reads is for: ``(1, offset of the @)``
    the left operand of an ``@`` whose right one is a subscript of loads and index arithmetic alone, and whose
    value goes into an in-place operator (``A[i, j] -= A[i, :j] @ A[:j, j]``); ``(3, offset of the @)`` the
    same, whose value goes through ``+ - * /`` only into a subscript's store (``x[i] = (b[i] - L[i, :i] @
    x[:i]) / L[i, i]``, `_flows_to_store`); ``(2, offset of the @)`` the right operand of an ``@`` next;
    ``(4, -1)`` no ``@``, the value goes through ``+ - * /`` only into a subscript's store (``p[-1, :] =
    p[-2, :]``); ``(0, -1)`` anything else.  The code is read once per site."""
    ck = (id(code), at)
    r = _ROLES.get(ck)
    if r is not None:
        return r
    e = _INSTRUCTIONS.get(id(code))
    if e is None or e[0] is not code:
        ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
        if len(_INSTRUCTIONS) > _LIMIT:
            _INSTRUCTIONS.clear()
            _ROLES.clear()
        e = _INSTRUCTIONS[id(code)] = (code, ins, [i.offset for i in ins])
    _, ins, offsets = e
    r = (0, -1)
    k = bisect.bisect_right(offsets, at) - 1
    mm, inplace, pops, _ = _DIS
    if 0 <= k < len(ins) - 1 and ins[k].opname == "BINARY_SUBSCR":
        nxt = ins[k + 1]
        if nxt.opname == "BINARY_OP" and nxt.arg == mm:
            r = (2, nxt.offset)
        else:
            depth = 0  # values pushed above ours; an instruction taking more would take ours
            for m in range(k + 1, len(ins)):
                x = ins[m]
                if x.opname == "BINARY_SUBSCR":
                    if depth == 2 and m + 2 < len(ins) and ins[m + 1].opname == "BINARY_OP" and ins[m + 1].arg == mm:
                        if ins[m + 2].opname == "BINARY_OP" and ins[m + 2].arg in inplace:
                            r = (1, ins[m + 1].offset)
                        elif _flows_to_store(ins, m + 2):
                            r = (3, ins[m + 1].offset)
                    break
                n = x.arg if x.opname in ("BUILD_SLICE", "BUILD_TUPLE") else pops.get(x.opname)
                if n is None or n > depth or x.opname == "BINARY_OP" and (x.arg == mm or x.arg in inplace):
                    break
                depth += dis.stack_effect(x.opcode, x.arg)
            if r[0] == 0 and _flows_to_store(ins, k + 1):
                r = (4, -1)
    if len(_ROLES) > _LIMIT:
        _ROLES.clear()
    _ROLES[ck] = r
    return r


def _flows_to_store(ins, m) -> bool:
    """Whether the value on top of the stack before instruction ``m`` goes only through ``+ - * /`` (with
    anything computed above it from loads and subscripts) into the value of a ``STORE_SUBSCR``."""
    _, _, pops, arithmetic = _DIS
    depth = 0  # values above ours
    for x in ins[m:]:
        op = x.opname
        if op == "STORE_SUBSCR":
            return depth == 2  # (key and container above: ours is the value stored)
        if op == "BINARY_OP":
            if depth < 2 and x.arg not in arithmetic:  # (it takes ours: only + - * / keep it the owners')
                return False
            depth = max(depth - 1, 0)  # (at depth 0 or 1 the result is ours)
            continue
        if op == "BINARY_SUBSCR":
            if depth < 2:
                return False
            depth -= 1
            continue
        n = x.arg if op in ("BUILD_SLICE", "BUILD_TUPLE") else pops.get(op)
        if n is None or n > depth:
            return False
        depth += dis.stack_effect(x.opcode, x.arg)
    return False


def _deferred_row(t, key, idx, owned, axes, root, rs, out_shape, code, role, at):
    """`read_piece`'s row ``t[i, a:b]`` as a `DeferredRow` where the reading code (``code``; ``role, at``: the
    read's `_matmul_role` there) only multiplies it by ``@`` into an in-place operator (the left operand; or
    the right one of a left `DeferredRow`'s ``@``); None otherwise (it is broadcast)."""
    if len(t._global_shape) != 2 or type(key[0]) is not int or type(key[1]) is not slice or key[1].step not in (None, 1):
        return None
    last = _LAST_DEFERRED
    if role == 0 or role == 2 and (last[0] is not code or last[1] != at or last[2] is None or last[2].used):
        return None
    d = DeferredRow(t, t._interior[tuple(idx)] if owned else None, axes, root, rs, out_shape, code)
    if role != 2:
        _LAST_DEFERRED[0], _LAST_DEFERRED[1], _LAST_DEFERRED[2] = code, at, d
        d.stored = role == 3
    return d


class DeferredRow:
    """A row ``A[i, a:b]`` of a tensor split on rows, read only to be an operand of the ``@`` in
    ``A[i, j] op= A[i, :j] @ A[:j, j]`` (or ``@ A[j, :j]``, or into ``x[i] op=`` of a vector split as the
    rows): not broadcast.  Its ``@`` sends the other operand's parts to the row's owners, who compute the
    dot, and returns it as an `OwnerValue` for the element's `OwnedElement`, which those owners hold (one
    message from each other owner of the column's blocks, none back; a broadcast and an allreduce before).
    Where what follows is not that (an element held elsewhere, a value used otherwise), the row is
    broadcast first as a plain read does and ``@`` runs as usual: decided alike on every process, from the
    code's instructions and the operands' layouts.

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> A = DistributedTensor.from_global(np.arange(9.0).reshape(3, 3), Sharding(Mesh((-1,)), [[0]]))
    >>> before = stats["targeted_dots"]
    >>> A[2, 2] -= A[2, :2] @ A[:2, 2]  # 8 - (6 * 2 + 7 * 5), at row 2's owners
    >>> float(A[2, 2]), stats["targeted_dots"] - before
    (-39.0, 1)
    """

    __slots__ = ("t", "block", "axes", "root", "rs", "shape", "code", "used", "stored")
    __array_ufunc__ = None  # (numpy defers to this class's operators)

    def __init__(self, t, block, axes, root, rs, shape, code):
        self.t, self.block, self.axes, self.root, self.rs, self.shape = t, block, axes, root, rs, shape
        self.code, self.used, self.stored = code, False, False

    def _materialize(self) -> DistributedTensor:
        """The row as `read_piece` reads it: one broadcast from its owners."""
        x = np.ascontiguousarray(self.block) if self.block is not None else np.empty(self.shape, self.t._local.dtype)
        block = collectives.broadcast(x, self.t._sharding._mesh, self.axes, (self.root,))
        return _value(block, self.rs, self.shape, tuple([slice(0, n) for n in self.shape]))

    def __matmul__(self, other):
        self.used = True
        if _LAST_DEFERRED[2] is self:
            _LAST_DEFERRED[0], _LAST_DEFERRED[1], _LAST_DEFERRED[2] = None, -1, None
        r = _targeted_dot(self, other)
        if r is not None:
            return r
        a = self._materialize()
        return a @ (other._materialize() if type(other) is DeferredRow else other)

    def __rmatmul__(self, other):
        self.used = True
        return other @ self._materialize()


class OwnerValue:
    """The value of a `DeferredRow`'s dot, held by the row's owners (``value``; None elsewhere, with the
    ``dtype`` it has there): the next operation is the in-place operator of the element's `OwnedElement`,
    which takes it where it is, or (``chain``: `_matmul_role`'s 3) ``+ - * /`` with replicated scalars, done
    by the owners, and then a store (`store`).  (Anything else broadcasts it from the owners first.)

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> s = Sharding(Mesh((-1,)), [[0]])
    >>> L = DistributedTensor.from_global(np.array([[2.0, 0.0], [1.0, 4.0]]), s)
    >>> x, b = DistributedTensor.zeros((2,), s), DistributedTensor.from_global(np.array([2.0, 9.0]), s)
    >>> for i in range(2):
    ...     x[i] = (b[i] - L[i, :i] @ x[:i]) / L[i, i]
    >>> x.gather().tolist()
    [1.0, 2.0]
    """

    __slots__ = ("value", "dtype", "mesh", "axes", "root", "chain")
    __array_ufunc__ = None

    def __init__(self, value, dtype, mesh, axes, root, chain=False):
        self.value, self.dtype, self.mesh, self.axes, self.root = value, dtype, mesh, axes, root
        self.chain = chain

    def _materialize(self) -> DistributedTensor:
        x = np.asarray(self.value, self.dtype).copy() if self.value is not None else np.empty((), self.dtype)
        return _value(collectives.broadcast(x, self.mesh, self.axes, self.root), _replicated(self.mesh), ())

    def _with(self, ufunc, other, reflected):
        """``self op other`` (``other op self``) at the owners, for a replicated scalar ``other``; None:
        not that."""
        if not self.chain:
            return None
        to = type(other)
        if to is DistributedTensor:
            if other._global_shape or other._sharding._split_axes or other._sharding._partial_axes \
                    or not _same_mesh(other._sharding._mesh, self.mesh):
                return None
            other = other._interior[()]
        elif to not in _SCALARS and not isinstance(other, np.generic):
            return None
        dt = np.result_type(self.dtype, other)
        if dt.kind not in "fc":
            return None
        v = None
        if self.value is not None:
            v = _SCALAR_OPS[ufunc](other, self.value) if reflected else _SCALAR_OPS[ufunc](self.value, other)
        return OwnerValue(v, dt, self.mesh, self.axes, self.root, True)

    def store(self, t, key) -> None:
        """``t[key] = self``: the owners write it where they hold the element (a tensor split as the row,
        no halos), else it is broadcast and written as a plain value (decided alike on every process)."""
        k = key if type(key) is tuple else (key,)
        entry = None
        if len(k) == len(t._global_shape) and all(type(i) is int or isinstance(i, np.integer) for i in k):
            entry = element_owner(t, k)
        if entry is not None and entry[1] == self.axes and entry[2] == self.root \
                and _same_mesh(t._sharding._mesh, self.mesh) and (self.dtype.kind != "c" or t.dtype.kind == "c"):
            if ABOVE.lazy is not None:
                ABOVE.lazy.touch()  # (deferred expressions that read ``t`` take its value before the write)
            if entry[0] is not None:
                t._interior[entry[0]] = self.value
            stats["owned_stores"] += 1
            return
        t[key] = self._materialize()


def _owner_operator(name, ufunc):
    def op(self, other):
        r = self._with(ufunc, other, False)
        return r if r is not None else getattr(operator, name)(self._materialize(), other)

    def rop(self, other):
        r = self._with(ufunc, other, True)
        return r if r is not None else getattr(operator, name)(other, self._materialize())

    op.__name__, rop.__name__ = f"__{name}__", f"__r{name}__"
    return op, rop


for _name, _ufunc in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("truediv", np.true_divide)):
    _op, _rop = _owner_operator(_name, _ufunc)
    setattr(OwnerValue, f"__{_name}__", _op)
    setattr(OwnerValue, f"__r{_name}__", _rop)
OwnerValue.__float__ = lambda self: float(self._materialize())
del _name, _ufunc, _op, _rop


_RESULT_TYPES: dict = {}


def _result_type(a, b):
    r = _RESULT_TYPES.get((a, b))
    if r is None:
        r = _RESULT_TYPES[(a, b)] = np.result_type(a, b)
    return r


def _p2p(comm, recvs, sends, step):
    """Receive each ``(array, source)`` of ``recvs`` and send each ``(array, destination)`` of ``sends`` (C-contiguous
    arrays) on ``comm``, and wait: from C where it can (`meshrt._collfront.exchange`), else by mpi4py.  ``step``:
    what moves, for the watchdog."""
    with _mpi.internal("A[i, j] -= A[i, :j] @ A[:j, j]", step, comm):
        if _EXCHANGE is not None and _EXCHANGE(comm, recvs, sends, _TAG_DOT):
            return
        reqs = [comm.Irecv(x, p, _TAG_DOT) for x, p in recvs] + [comm.Isend(x, p, _TAG_DOT) for x, p in sends]
        MPI.Request.Waitall(reqs)


try:
    from .._collfront import exchange as _EXCHANGE
except ImportError:  # (not built: mpi4py's calls)
    _EXCHANGE = None


def _targeted_dot(row, other):
    """`DeferredRow.__matmul__`'s dot at the row's owners, as an `OwnerValue`; None: not this case (the
    pending `OwnedElement`, read by the same code, is not held where the row is, or ``other`` is not a row
    or a vector split on the same mesh axis), decided alike on every process."""
    e, code = _OWNED_LAST
    t = row.t
    if not _errstate_ok():
        return None
    # (the element's owners are the row's: the same mesh axis splits both, at the same coordinate; a
    # stored value's target is known at its store, which broadcasts it where it is held elsewhere)
    if not row.stored and (e is None or e.done or code is not row.code or e.entry[1] != row.axes
                           or e.entry[2] != (row.root,) or not _same_mesh(e.t._sharding._mesh, t._sharding._mesh)):
        return None
    s = t._sharding
    mesh = s._mesh
    axis = row.axes[0]
    n = row.shape[0]
    comm = mesh._groups.get((axis,)) or mesh.group((axis,))  # (the cached group without a Python call)
    me = mesh._coords[axis]
    holder = row.root
    if type(other) is DeferredRow:
        if not _same_mesh(other.t._sharding._mesh, mesh) or other.axes != row.axes or other.shape != row.shape:
            return None
        dt = _result_type(t._local.dtype, other.t._local.dtype)
        src = other.root
        r = None
        if me == holder:
            if src == holder:
                y = other.block
            else:
                y = _empty(n, other.t._local.dtype)
                _p2p(comm, [(y, src)], [], "the other row to the element's owners")
            r = _dot(row.block, y)
        elif me == src:
            _p2p(comm, [], [(_contiguous(other.block), holder)], "the other row to the element's owners")
    else:
        v = _vector(other)
        if v is None:
            return None
        x, _, axes, where, vn, vmesh = v
        if vn != n or not _same_mesh(vmesh, mesh) or tuple(axes) != row.axes:
            return None
        dt = _result_type(t._local.dtype, x.dtype)
        offs = _offsets(where[0], where[1], where[2])  # (the column's blocks on the mesh axis, in its tensor)
        a = where[3]
        r = None
        if me == holder and len(x) == n:  # (the whole column is here: read in place, as numpy reads it)
            r = _dot(row.block, x)
        elif me == holder:
            y = _empty(n, x.dtype)
            recvs = []
            first = max(bisect.bisect_right(offs, a) - 1, 0)
            for b in range(first, len(offs) - 1):
                lo, hi = min(max(offs[b] - a, 0), n), min(max(offs[b + 1] - a, 0), n)
                if offs[b] >= a + n:
                    break
                if hi <= lo:
                    continue
                if b == holder:
                    y[lo:hi] = x
                else:
                    recvs.append((y[lo:hi], b))
            _p2p(comm, recvs, [], "the column's parts to the element's owners")
            r = _dot(row.block, y)
        elif min(max(offs[me + 1] - a, 0), n) > min(max(offs[me] - a, 0), n):
            _p2p(comm, [], [(_contiguous(x), holder)], "the column's parts to the element's owners")
    stats["targeted_dots"] += 1
    if r is not None and not isinstance(r, np.generic):
        r = dt.type(r)
    return OwnerValue(r, dt, mesh, row.axes, (holder,), row.stored)


_BY_ID: dict = {}  # (id of a sharding, shape) -> (the sharding, `_element_layout`): no Python-level hash call
_LAST_SITE = [None, -1, False]  # the last read's code object, offset, and whether it was an augmented one


def _layout_of(t):
    """`_element_layout` of ``t``, found by its sharding's id (the entry keeps the sharding: the id is not
    reused while the entry lasts)."""
    s = t._sharding
    ck = (id(s), t._global_shape)
    e = _BY_ID.get(ck)
    if e is not None and e[0] is s:
        return e[1]
    lay = _element_layout(t)
    if len(_BY_ID) > _LIMIT:
        _BY_ID.clear()
    _BY_ID[ck] = (s, lay)
    return lay


def _element_layout(t: DistributedTensor):
    """Per (sharding, shape): per dim ``(offsets, mesh axes, their sizes)`` (None where not split), the 0-d
    result's sharding, a number, and whether the split axes all have one process (False: a partial tensor or
    an empty one, not this case)."""
    ck = (t._sharding, t._global_shape)
    e = _LAYOUTS.get(ck)
    if e is None:
        s, shape = ck
        e = False
        if not s._partial_axes and all(shape):
            # (a tensor's shape was checked when it was made: its offsets without the check again)
            offs, sizes = _dim_offsets(s, shape), s._mesh.shape
            dims = []  # (loops, not generators: a loop over new shapes makes one layout each)
            alone = True  # every split axis has one process: every process holds every element
            for d in range(len(shape)):
                axes = s.dim_axes(d)
                dims.append((offs[d], axes, tuple([sizes[a] for a in axes])) if axes else None)
                for a in axes:
                    if sizes[a] != 1:
                        alone = False
            # (the 0-d result: replicated, halos or not)
            e = (tuple(dims), _replicated(s._mesh), next(_NUMBERS), alone)
        if len(_LAYOUTS) > _LIMIT:
            _LAYOUTS.clear()
        _LAYOUTS[ck] = e
    return e


def element_owner(t: DistributedTensor, key: tuple, lay=None):
    """``(local index or None, broadcast axes, broadcast root, result sharding)`` for the element ``t[key]``
    (a tuple of ints, one per dim), by arithmetic on the sharding's offsets: no plan.  None: an index out
    of range or a tensor this does not cover (the general path raises or runs).  ``lay``: ``t``'s
    `_element_layout` where the caller has it."""
    if lay is None:
        lay = _element_layout(t)
    if lay is False:
        return None
    dims, rs = lay[0], lay[1]
    shape, slices = t._global_shape, t._slices
    coords = t._sharding._mesh._coords
    idx, root = [], None
    owned = True
    for d, i in enumerate(key):
        n = shape[d]
        if i < 0:
            i += n
        if not 0 <= i < n:
            return None
        info = dims[d]
        if info is not None:
            if root is None:
                root = {}
            owned = _place(i, *info, coords, root) and owned
        idx.append(i - slices[d].start)
    if root is None:
        return tuple(idx) + (Ellipsis,), (), (), rs
    if len(root) == 1:
        (a, c), = root.items()
        return (tuple(idx) + (Ellipsis,) if owned else None, (a,), (c,), rs)
    axes = tuple(sorted(root))
    return (tuple(idx) + (Ellipsis,) if owned else None, axes, tuple(root[a] for a in axes), rs)


def _place(i, offs, axes, sizes, coords, root) -> bool:
    """Index ``i`` of a dim split over mesh ``axes`` (of ``sizes``) in blocks at ``offs``: its owners'
    coordinates on those axes go into ``root``; whether this process (``coords``) is one of them."""
    k = bisect.bisect_right(offs, i) - 1
    if len(axes) == 1:  # (the common case: one mesh axis splits the dim)
        root[axes[0]] = k
        return coords[axes[0]] == k
    owned = True
    for a, size in zip(reversed(axes), reversed(sizes)):  # k over the dim's axes, last fastest
        k, c = divmod(k, size)
        root[a] = c
        owned = owned and coords[a] == c
    return owned


_PIECES: dict = {}  # (sharding, shape, which dims are ints) -> `_piece_recipe`, or False
_WHOLE = [(slice(None),) * n for n in range(33)]


def _piece_recipe(t, ints):
    """For keys with ints at ``ints`` (and slices elsewhere): ``(int dims, sliced dims, the result's
    sharding, the mesh axes that split the int dims, in order)``, each int dim ``(d, block offsets or None,
    its axes, their sizes)``; False: not a case of `read_piece`."""
    s, shape = t._sharding, t._global_shape
    # (no split dim is sliced: `read_piece` has returned before asking otherwise)
    if not (not s._partial_axes and all(shape) and any(ints) and not all(ints)):
        return False
    plan = _index_plan(t, tuple(0 if i else slice(None) for i in ints))[0]
    lay = _element_layout(t)
    if plan.flip_dims or plan.new_dims or lay is False:
        return False
    dims = lay[0]
    int_dims = tuple((d,) + (dims[d] if dims[d] is not None else (None, (), ())) for d, i in enumerate(ints) if i)
    axes = tuple(sorted(a for _, _, ax, _ in int_dims for a in ax))
    return int_dims, tuple(d for d, i in enumerate(ints) if not i), plan.result_sharding, axes


def read_piece(t: DistributedTensor, key: tuple, depth=None):
    """``t[key]`` for a key of ints and positive-step slices (one per dim; missing trailing dims whole)
    where no mesh axis splits a sliced dim: a row ``A[i, :j]``, ``A[i]``.  The owner's piece, one
    broadcast over the axes that split the int dims; the owner found by arithmetic, no index plan.
    ``depth``: as `read_element`'s; a row read only to be an operand of ``@`` into ``A[i, j] op= ...`` is
    a `DeferredRow` (no broadcast: `DeferredRow.__matmul__`).  None: not this case (the general path
    runs)."""
    shape = t._global_shape
    nd = len(shape)
    if len(key) < nd:
        key = key + _WHOLE[nd - len(key)]
    elif len(key) > nd:
        return None
    s = t._sharding
    split = s._split_axes
    for d in range(len(split)):
        if split[d] and type(key[d]) is not int:  # a split dim sliced (``p[1:-1, 0]``, rows split): not a piece
            return None
    ints = (type(key[0]) is int, type(key[1]) is int) if nd == 2 else tuple(type(k) is int for k in key)
    ck = (s, shape, ints)
    r = _PIECES.get(ck)
    if r is None:
        r = _piece_recipe(t, ints)
        if len(_PIECES) > _LIMIT:
            _PIECES.clear()
        _PIECES[ck] = r
    if r is False:
        return None
    int_dims, sliced, rs, axes = r
    idx = list(key)
    slices = t._slices
    coords = s._mesh._coords
    root = {}
    owned = True
    for d, offs, dax, sizes in int_dims:
        k = key[d]
        n = shape[d]
        if k < 0:
            k += n
        if not 0 <= k < n:
            return None
        if offs is not None:
            owned = _place(k, offs, dax, sizes, coords, root) and owned
        idx[d] = k - slices[d].start
    out_shape = []
    for d in sliced:
        k = key[d]
        if not (_plain(k.start) and _plain(k.stop) and _plain(k.step)):
            return None
        a, b, step = k.indices(shape[d])
        if step <= 0:
            return None
        out_shape.append(len(range(a, b, step)) if step != 1 else (b - a if b > a else 0))
    out_shape = tuple(out_shape)
    if not axes:
        block = t._interior[tuple(idx)]
    else:
        if depth is not None and _DIS is not None:
            f = _getframe(depth - 1 + 2 * _OWN_FRAME)
            code = f.f_code
            role, at = _matmul_role(code, f.f_lasti)
            if role == 4 and _lazy_getitem is not None:
                # only stored (``p[-1, :] = p[-2, :]``): a deferred view, written where it is held
                # (`meshrt.tensor.lazy.setitem`), not broadcast first
                d = _lazy_getitem(t, key)
                if d is not None:
                    return d
            elif role and len(int_dims) == 1 and len(axes) == 1 and len(out_shape) == 1:
                d = _deferred_row(t, key, idx, owned, axes, root[axes[0]], rs, out_shape, code, role, at)
                if d is not None:
                    return d
        # (the owners' piece is a view of their block, as numpy's ``A[i]``: ``A[i][j] = x`` writes through)
        x = _contiguous(t._interior[tuple(idx)]) if owned else _empty(out_shape, t._local.dtype)
        block = collectives.broadcast(x, s._mesh, axes, tuple([root[a] for a in axes]))
    return _value(block, rs, out_shape, tuple([slice(0, n) for n in out_shape]))


def _plain(v) -> bool:
    return v is None or type(v) is int


_OFFSETS: dict = {}  # (sharding, shape, dim) -> the dim's block offsets
_REPLICATED: dict = {}  # mesh -> a replicated sharding on it (of a 0-d value, a small vector)


def _same_mesh(a, b) -> bool:
    """Whether two meshes are the same device grid: equal meshes are distinct objects when one came from a
    cache keyed by value (`_replicated`), from an earlier mesh equal to this one."""
    return a is b or a == b


def _replicated(mesh) -> Sharding:
    """The replicated sharding on ``mesh`` (one object per mesh, kept; an equal mesh made later, as a new
    test module's or a freed one's successor, takes the place, so results carry the caller's mesh)."""
    rs = _REPLICATED.get(mesh)
    if rs is None or rs._mesh is not mesh:
        rs = _REPLICATED[mesh] = Sharding(mesh, [])
    return rs


def _offsets(s, shape, d=0):
    ck = (s, shape, d)
    o = _OFFSETS.get(ck)
    if o is None:
        if len(_OFFSETS) > _LIMIT:
            _OFFSETS.clear()
        o = _OFFSETS[ck] = tuple(s.dim_offsets(shape)[d])
    return o


def _vector(v):
    """``(local part, its start in the vector, split axes, where its blocks are, length, mesh)`` of a 1-D
    tensor or of a deferred step-1 slice of one (read in place: its block's part in the slice); None: not a
    vector this handles.  Where the blocks are: ``(sharding, global shape, dim, start)`` of the slice, which
    `_block_offsets` turns into every block's offsets in the vector (O(blocks), where needed only)."""
    if type(v) is DistributedTensor:
        s = v._sharding
        if len(v._global_shape) != 1 or s._partial_axes:
            return None
        axes = s._split_axes[0] if s._split_axes else ()
        return v._interior, v._slices[0].start, axes, (s, v._global_shape, 0, 0), v._global_shape[0], s._mesh
    r = ABOVE.lazy.slice_leaf(v) if ABOVE.lazy is not None else None
    if r is None:
        return None
    t, starts, shape, drop = r
    s = t._sharding
    if type(t) is not DistributedTensor or len(shape) != 1 or s._partial_axes:
        return None
    d = 0
    if drop:  # ``A[:j, j]``: a column; its ints on dims no mesh axis splits (else the general path runs)
        split = s._split_axes
        for x in drop:
            if x < len(split) and split[x]:
                return None
        while d in drop:  # (the one dim kept)
            d += 1
    a, n, own = starts[d], shape[0], t._slices[d]
    lo, hi = max(own.start, a), min(own.stop, a + n)
    hi = max(lo, hi)
    axes = s._split_axes[d] if len(s._split_axes) > d else ()
    where = (s, t._global_shape, d, a)
    if drop:
        sl = t._slices
        idx = [starts[x] - sl[x].start for x in range(len(starts))]
        idx[d] = slice(lo - own.start, hi - own.start)
        return t._interior[tuple(idx)], lo - a, axes, where, n, s._mesh
    return t._interior[lo - own.start:hi - own.start], lo - a, axes, where, n, s._mesh


def _block_offsets(where, n):
    """Every block's offsets in a vector of length ``n`` that starts at ``start`` on dim ``d`` of a tensor
    (``where``: `_vector`'s), clipped to it."""
    s, shape, d, a = where
    return tuple([min(max(o - a, 0), n) for o in _offsets(s, shape, d)])


SMALL_VECTOR = 1 << 14  # a vector of at most this many elements is replicated where that spares a plan


def replicated_vector(v, limit=SMALL_VECTOR):
    """``(whole, mesh)``: the whole of ``v`` (a 1-D tensor or a deferred step-1 slice of one, at most ``limit``
    elements) as a numpy array on every process of its mesh: one allgather of the blocks' parts over its split
    axes, no plan (a loop's ``np.flip(y[:k])`` is a new shape each turn).  None: not this case.  Decided from
    global facts (the length, the split), alike on every process.

    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> y = DistributedTensor.from_global(np.arange(6.0), Sharding(Mesh((-1,)), [[0]]))
    >>> replicated_vector(y[1:4])[0]
    array([1., 2., 3.])
    """
    r = _vector(v)
    if r is None or r[4] > limit:
        return None
    x, _, axes, where, n, mesh = r
    if not axes:
        return x, mesh
    offs = _block_offsets(where, n)
    if _check.CHECK:  # (the collectives' agreement on the pieces, as every other collective gets it)
        sizes = [offs[i + 1] - offs[i] for i in range(len(offs) - 1)]
        return collectives.all_gather(np.ascontiguousarray(x), mesh, tuple(axes), 0, sizes=sizes), mesh
    b = x.itemsize
    counts = [(offs[i + 1] - offs[i]) * b for i in range(len(offs) - 1)]
    whole = np.empty(n, x.dtype)
    comm = mesh.group(tuple(axes))
    # (one MPI call: the collectives' own checks and per-shape cache cost more than it, on a new shape each turn)
    with _mpi.internal("replicated_vector", "the blocks' allgather", comm):
        comm.Allgatherv([np.ascontiguousarray(x).view(np.uint8), MPI.BYTE],
                        [whole.view(np.uint8), (counts, [o * b for o in offs[:-1]]), MPI.BYTE])
    return whole, mesh


def replicated_tensor(whole, mesh) -> DistributedTensor:
    """``whole`` (the same array on every process of ``mesh``) as a replicated tensor, without checks."""
    rs = _replicated(mesh)
    return _value(whole, rs, whole.shape, tuple([slice(0, n) for n in whole.shape]))


def matmul_1d(a, b):
    """``a @ b`` of two vectors (tensors or deferred slices of them), one of them replicated or both with
    their blocks at the same places: one local dot (a replicated one sliced to the other's block) and one
    allreduce over the split axes, no plan.  Decided from global facts (the blocks' offsets), alike on every
    process.  None: not this case (the general path runs)."""
    va = _vector(a)
    if va is None:
        return None
    vb = _vector(b)
    if vb is None or va[4] != vb[4] or va[5] is not vb[5]:
        return None
    (xa, oa, axa, wa, n, mesh), (xb, ob, axb, wb, _, _) = va, vb
    if not axa:
        x, y, axes = xa[ob:ob + len(xb)], xb, axb
    elif not axb:
        x, y, axes = xa, xb[oa:oa + len(xa)], axa
    elif axa == axb and (wa == wb or _block_offsets(wa, n) == _block_offsets(wb, n)):  # (``Q[:, k] @ A[:, j]``:
        x, y, axes = xa, xb, axa  # the same rows of tensors split alike, no offsets to compare)
    else:
        return None
    rs = _replicated(mesh)
    r = np.dot(x, y)
    if isinstance(r, np.generic):  # (a numpy scalar of the result's dtype)
        local = np.asarray(r)
    else:
        local = np.empty((), np.result_type(x.dtype, y.dtype))
        local[()] = r
    if axes:
        local = collectives.all_reduce(local, mesh, axes if type(axes) is tuple else tuple(axes), reduction="sum")
    stats["vector_dots"] += 1
    return _value(local, rs, ())


def dot_1d(a, b, general):
    """``np.dot(a, b)`` of two 1-D tensors of one sharding (None: not this case); ``general`` is
    `meshrt.tensor.matmul.dot`, run the first time (it imports this module: passed, not imported)."""
    if type(a) is not DistributedTensor or type(b) is not DistributedTensor:
        return None
    s = a._sharding
    ck = (s, a._global_shape, a._local.dtype, b._sharding, b._global_shape, b._local.dtype)
    e = _DOTS.get(ck)
    if e is None:
        if len(a._global_shape) != 1 or s != b._sharding or a._global_shape != b._global_shape or s._partial_axes:
            return None
        r = general(a, b)  # the general path once: its result's sharding and dtype are kept
        if r._sharding._partial_axes or r._global_shape != ():
            return r
        if len(_DOTS) > _LIMIT:
            _DOTS.clear()
        _DOTS[ck] = (tuple(x for axes in s.split_axes for x in axes), r._sharding, r._local.dtype)
        return r
    axes, rs, dt = e
    local = np.empty((), dt)
    local[()] = np.dot(a._interior, b._interior)
    if axes:
        local = collectives.all_reduce(local, s._mesh, axes, reduction="sum")
    stats["vector_dots"] += 1
    return _value(local, rs, ())
