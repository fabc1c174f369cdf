# Augments lazy.py when setup.py compiles it (COMPILED_PY): the expression nodes become extension
# types, their fields C struct members (a node is made per deferred operation: ~1 us less each).
# The names and fields are those of the classes' __slots__ in lazy.py; keep the two in step.

cdef class _Node:
    cdef public object shape, dtype, mesh, periodic, value, size, consumed, leaves, scalars, skey, oldest

cdef class _Leaf(_Node):
    cdef public object t, kind, starts, args, drop

cdef class _Op(_Node):
    cdef public object ufunc, args, raw, ins, op, head
