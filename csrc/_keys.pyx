# cython: language_level=3
"""A hashable stand-in for a basic index key, at C speed.

    >>> from meshrt._keys import key_id
    >>> key_id((0, slice(None)))
    ((0, (None, None, None)), True)
    >>> key_id(1.5) is None
    True

Slices are unhashable before Python 3.12, and ``0 == 0.0 == False`` would
let a float or bool key hit an int key's cache entry, so only ints, ``None``,
``...`` and slices of ints or ``None`` get an id; anything else gets ``None``
(no caching: the full planner then accepts or rejects it as numpy would).
``u[0, :] = 1`` pays this on every call, so it is compiled.
"""

__all__ = ["key_id", "int_key", "ScalarWrites", "setitem", "install_setitem", "install_stored",
           "install_deferred"]


cdef inline bint _plain(object v):
    return v is None or type(v) is int


def key_id(key):
    """``(parts, is_tuple)`` naming a basic key exactly, or ``None``."""
    cdef bint is_tuple = type(key) is tuple
    cdef tuple parts = <tuple>key if is_tuple else (key,)
    cdef list out = []
    cdef object k, a, b, c
    for k in parts:
        if type(k) is slice:
            a = (<slice>k).start
            b = (<slice>k).stop
            c = (<slice>k).step
            if not (_plain(a) and _plain(b) and _plain(c)):
                return None
            out.append((a, b, c))
        elif type(k) is int or k is None or k is Ellipsis:
            out.append(k)
        else:
            return None
    return tuple(out), is_tuple


def int_key(key):
    """``key`` is a Python int or a tuple of them (not bools: one element's key).

    >>> int_key((1, 2)), int_key(3), int_key((1, slice(None))), int_key(True)
    (True, True, False, False)
    """
    if type(key) is int:
        return True
    if type(key) is not tuple:
        return False
    for k in <tuple>key:
        if type(k) is not int:
            return False
    return True


cdef inline bint _same_bound(object x, object y):
    return x is y or (type(x) is int and type(y) is int and x == y)


cdef bint _same_item(object x, object y):
    if x is y:
        return True
    if type(x) is not type(y):
        return False
    if type(x) is int:
        return x == y
    if type(x) is slice:
        return (_same_bound((<slice>x).start, (<slice>y).start)
                and _same_bound((<slice>x).stop, (<slice>y).stop)
                and _same_bound((<slice>x).step, (<slice>y).step))
    return False


cdef bint _same_key(object a, object b):
    """Equal and of the same types throughout (``0 == False`` is no match)."""
    cdef Py_ssize_t i, n
    if type(a) is not type(b):
        return False
    if type(a) is not tuple:
        return _same_item(a, b)
    n = len(<tuple>a)
    if n != len(<tuple>b):
        return False
    for i in range(n):
        if not _same_item((<tuple>a)[i], (<tuple>b)[i]):
            return False
    return True


cdef class ScalarWrites:
    """The basic keys a tensor's owned block was assigned a scalar through, with local indices.

    The local index is what this process assigns into ``array``, its owned
    block; where the key selects nothing here it is an empty selection, still
    assigned, so a value numpy refuses raises on every process alike (numpy
    checks the cast even for no elements).  ``u[0, :] = 1`` in a time loop
    then costs a lookup instead of a plan: `setitem` scans these few keys
    with exact, type-aware equality.

        >>> import numpy as np
        >>> a = np.zeros((2, 3)); w = ScalarWrites(a)
        >>> w.remember((0, slice(None)), (0, slice(0, 3)))
        >>> w.assign((0, slice(None)), 5.0), w.assign((False, slice(None)), 5.0)
        (True, False)
        >>> a[0]
        array([5., 5., 5.])
    """

    cdef list keys, indices
    cdef object array

    def __cinit__(self, array):
        self.array = array
        self.keys, self.indices = [], []

    def remember(self, key, index):
        """Record ``key`` (a basic key: `key_id` is not None) and its local index."""
        if len(self.keys) >= 64:  # a program with many distinct writes: start over rather than scan long
            self.keys, self.indices = [], []
        self.keys.append(key)
        self.indices.append(index)

    cpdef bint assign(self, key, value) except -1:
        """If ``key`` was remembered, do its write and return True."""
        cdef Py_ssize_t i
        for i in range(len(self.keys)):
            if _same_key(self.keys[i], key):
                self.array[self.indices[i]] = value
                return True
        return False


cdef object _slow_setitem = None
cdef object _stored_type = None
cdef object _deferred_write = None
cdef type _deferred_a = None
cdef type _deferred_b = None


def install_setitem(slow):
    """Make `setitem` fall back to ``slow(t, key, value)``, and return `setitem`."""
    global _slow_setitem
    _slow_setitem = slow
    return setitem


def install_stored(cls):
    """Values of type ``cls`` (`meshrt.tensor.fastpath.OwnedElement`) store themselves: `setitem` calls
    ``value.store(t, key)``."""
    global _stored_type
    _stored_type = cls


def install_deferred(types, write):
    """Values of the two ``types`` (`meshrt.tensor.lazy`'s deferred tensors) go to ``write(t, key, value)``
    first (`meshrt.tensor.lazy.setitem`: True when it wrote them, fused); where it did not, the slow path
    runs with its own deferred attempt skipped (``slow(t, key, value, True)``)."""
    global _deferred_write, _deferred_a, _deferred_b
    _deferred_a, _deferred_b = types
    _deferred_write = write


def setitem(t, key, value):
    """``t[key] = value``: a scalar write through a key seen before goes straight to the local
    block (``t._writes``, a `ScalarWrites`), the write of ``t[i, j] op= v`` to the value's `store`,
    a deferred expression to its fused write; everything else takes the slow path."""
    cdef object writes = t._writes
    cdef type tv = type(value)
    if tv is _stored_type:
        value.store(t, key)
        return
    if tv is _deferred_a or tv is _deferred_b:  # (a stencil's ``u[1:-1] = ...``: no Python frame before it)
        if not _deferred_write(t, key, value):
            _slow_setitem(t, key, value, True)
        return
    if type(writes) is ScalarWrites and (tv is float or tv is int or tv is bool or tv is complex):
        if (<ScalarWrites>writes).assign(key, value):
            return
    _slow_setitem(t, key, value)
