cimport cython

# Augments lazy.py when setup.py compiles it (COMPILED_PY): the expression nodes become extension
# types, their fields C struct members (a node is made per deferred operation: ~1 us less each).
# The names and fields are those of the classes' __slots__ in lazy.py; keep the two in step.

cdef class _Node:
    cdef public object shape, dtype, mesh, periodic, value, size, consumed, leaves, scalars, skey, oldest

cdef class _Leaf(_Node):
    cdef public object t, kind, starts, args, drop

cdef class _Op(_Node):
    cdef public object ufunc, args, raw, ins, op, head, err

# The per-statement helpers, called from this module as C functions (no global lookup, no argument tuple:
# ~50 ns a call, 20 calls a stencil statement); from elsewhere as before.
@cython.locals(node=_Node)
cpdef _wrap(node)
cpdef bint _lazy_type(tx)
cpdef bint _errstate_fine()
cpdef bint _tensor_type(tx)
cpdef _node_of(x)
cpdef _pair_loop(ufunc, types)
@cython.locals(n=_Node, m=_Node)
cpdef _build_ufunc(ufunc, inputs)
cpdef _region(shape, key)
cpdef _int_region(shape, key)
cpdef _direct_int_region(shape, key)
cpdef _slice_region(slice k, n)  # (typed: its bounds read from the slice's struct, not by getattr)
cpdef flush(keep=*)
cpdef _refs_ok(value, path)
cpdef _probe(value, path)
cpdef _collect_fast(root, origin, drop=*)
cpdef _sig_entry(root, origin, arrays, pattern, drop)
cpdef _memo_plan(c, t, arrays, shape)
cpdef _subtree_pending(root)
cpdef _fused_write(t, origin, node, shape=*, drop=*, local_only=*)
cpdef _copy_write(t, key, leaf)
cpdef _same_region(t, key, view)
cpdef _local_write(t, origin, node, shape, drop)
cpdef _blocks_alike(s, g, o, n, sa, ga, oa, d)
cpdef _shift_stays(s, g, d, lo, hi)
cpdef _split_dims(s, nd)
cpdef _local_index(starts, rel, drop, slices)
cpdef _replicated_index(leaf, rel, drop)
cpdef _local_value(node, rel, drop)
cpdef _trim_plans()
# (``self`` typed: its fields are written as C struct members, not through Python's setattr)
@cython.locals(self=_Leaf)
cpdef _leaf(t, kind, starts, shape, args=*, drop=*)
@cython.locals(self=_Op, node=_Node)
cpdef _op(op, ufunc, args, raw, ins, dtype, shape, mesh, periodic, head=*)
