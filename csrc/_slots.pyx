# cython: language_level=3
"""A new `DistributedTensor` with its fields written straight into its slots.

Python's ``object.__new__(cls)`` and eight ``t._local = ...`` cost ~2 us (each attribute store looks the
slot's descriptor up in the type); a loop's 0-d statement (``tr += np.tanh(a[i, i])``) makes three tensors a
turn.  `tensor` allocates the object and stores the eight fields at their slots' offsets, read once from
the class's member descriptors (`install`):

    >>> import numpy as np
    >>> from meshrt import DistributedTensor, Mesh, Sharding
    >>> s = Sharding(Mesh((-1,)), [])
    >>> x = np.asarray(2.0)
    >>> t = tensor(DistributedTensor, x, x, s, (), (), None)
    >>> type(t) is DistributedTensor, float(t), t.sharding is s
    (True, 2.0, True)
"""

__all__ = ["install", "tensor", "value_tensor", "deferred"]

cimport numpy as cnp

cnp.import_array()

cdef extern from *:
    """
    #include <structmember.h>
    /* A slot's offset in its instances: its member descriptor's (-1: not an object slot). */
    static Py_ssize_t meshrt_slot_offset(PyObject *descr) {
        PyMemberDef *m;
        if (Py_TYPE(descr) != &PyMemberDescr_Type)
            return -1;
        m = ((PyMemberDescrObject *)descr)->d_member;
        return m->type == T_OBJECT_EX && !(m->flags & READONLY) ? m->offset : -1;
    }
    /* A new instance of cls, its slots empty (what object.__new__ allocates, without its argument checks). */
    static PyObject *meshrt_alloc(PyObject *cls) {
        PyTypeObject *t = (PyTypeObject *)cls;
        return t->tp_alloc(t, 0);
    }
    /* Store v (a new reference taken) in the empty slot of o at off. */
    static void meshrt_put(PyObject *o, Py_ssize_t off, PyObject *v) {
        PyObject **p = (PyObject **)((char *)o + off);
        PyObject *old = *p;
        Py_INCREF(v);
        *p = v;
        Py_XDECREF(old);
    }
    """
    Py_ssize_t meshrt_slot_offset(object descr)
    object meshrt_alloc(object cls)
    void meshrt_put(object o, Py_ssize_t off, object v)

# the slots `tensor` writes, in its arguments' order (then _halo and _writes, None)
_FIELDS = ("_local", "_interior", "_sharding", "_global_shape", "_slices", "_periodic", "_halo", "_writes")
cdef Py_ssize_t _off[8]
cdef object _cls = None
cdef Py_ssize_t _expr_off = -1  # the installed class's ``_expr`` slot (-1: none)
cdef tuple _deferred_classes = ()  # subclasses `deferred` has checked: no slots of their own


def install(cls):
    """Make `tensor` build instances of ``cls`` (`DistributedTensor`, whose ``__slots__`` hold `_FIELDS`)."""
    global _cls, _expr_off
    offs = []
    for name in _FIELDS:
        descr = cls.__dict__.get(name)
        off = -1 if descr is None else meshrt_slot_offset(descr)
        if off < 0:
            raise TypeError(f"{cls.__name__}.{name} is not a slot of the class itself")
        offs.append(off)
    for i, off in enumerate(offs):
        _off[i] = off
    _cls = cls
    descr = cls.__dict__.get("_expr")
    _expr_off = -1 if descr is None else meshrt_slot_offset(descr)


def tensor(cls, local, interior, sharding, shape, slices, periodic):
    """``cls._fast(local, interior, sharding, shape, slices, periodic)``: every argument already valid (a
    sibling tensor's), no halo exchange or remembered writes.  Straight into the slots for the installed
    class; any other (a subclass whose fields may be properties) through its attributes."""
    return _make(cls, local, interior, sharding, shape, slices, periodic)


cdef object _make(cls, local, interior, sharding, shape, slices, periodic):
    if cls is not _cls:
        t = cls.__new__(cls)
        t._local, t._interior, t._sharding, t._global_shape = local, interior, sharding, shape
        t._slices, t._periodic, t._halo, t._writes = slices, periodic, None, None
        return t
    t = meshrt_alloc(cls)
    meshrt_put(t, _off[0], local)
    meshrt_put(t, _off[1], interior)
    meshrt_put(t, _off[2], sharding)
    meshrt_put(t, _off[3], shape)
    meshrt_put(t, _off[4], slices)
    meshrt_put(t, _off[5], periodic)
    meshrt_put(t, _off[6], None)
    meshrt_put(t, _off[7], None)
    return t


def value_tensor(cls, value, sharding, periodic):
    """``cls._fast`` of ``np.asarray(value)`` (a numpy scalar, a 0-d value's result) as a 0-d tensor of
    ``sharding``."""
    x = cnp.PyArray_FROM_O(value)
    return _make(cls, x, x, sharding, (), (), periodic)


def deferred(cls, node):
    """A new ``cls`` holding ``node`` in its ``_expr`` slot, its other fields empty: what ``t =
    object.__new__(cls); t._expr = node`` makes (~0.7 us less; a statement makes one per operation).  ``cls``
    subclasses the installed class and adds no slots (`meshrt.tensor.lazy.LazyTensor`).

    >>> from meshrt import DistributedTensor
    >>> class Deferred(DistributedTensor):
    ...     __slots__ = ()
    >>> t = deferred(Deferred, "node")
    >>> type(t) is Deferred, t._expr
    (True, 'node')
    """
    global _deferred_classes
    if cls not in _deferred_classes:
        if _cls is None or _expr_off < 0 or not issubclass(cls, _cls) or cls.__basicsize__ != _cls.__basicsize__:
            raise TypeError(f"{cls!r} is not a slot-less subclass of the installed class ({_cls!r})")
        _deferred_classes = _deferred_classes + (cls,)
    t = meshrt_alloc(cls)
    meshrt_put(t, _expr_off, node)
    return t
