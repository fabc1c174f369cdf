# cython: language_level=3, boundscheck=False, wraparound=False
"""Compiled fronts of the collectives in `meshrt.collectives`.

A call whose (op, mesh, mesh_axes, attributes, shape, dtype) the Python
implementation has already validated and planned finds that plan in
``collectives._fast`` and goes straight to the MPI call; anything else (a
first call, ``MESHRT_CHECK``, a dtype that travels as bytes, an axis other
than 0, a group of one, an ``out`` that does not fit...) runs the Python
implementation, which raises every error.  The fast path is the same work
done in C: about 0.2 us per call instead of about 1 us, which is what
separated ``all_reduce(x, mesh)`` from ``comm.Allreduce`` at 8 B.  The MPI
call itself is the MPI library's function (``MPI_Allreduce``, ``MPI_Iallgather``,
``MPI_Sendrecv``, ...) called from here, without mpi4py's ~0.4 us of per-call
Python-object work; ``wait=False`` returns a `Handle` whose requests are
completed from C too.  mpi4py's buffer methods are the fallback
(`set_c_calls`, ``MESHRT_C_CALLS=0``; docs/benchmarks.md).

A compiled function has no Python frame, so each front publishes the
operation it is in (`current`) for the ``MESHRT_TIMEOUT`` watchdog.

    >>> import numpy as np
    >>> from mpi4py import MPI
    >>> h = done(np.ones(2)); h.test(), h.wait()
    (True, array([1., 1.]))
    >>> current() is None
    True
"""

cimport numpy as cnp
from cpython.long cimport PyLong_FromVoidPtr
from cpython.object cimport PyObject, Py_TYPE

import os
import types

import numpy as np
from mpi4py import MPI

cnp.import_array()

include "_mpicall.pxi"

__all__ = ["Group", "Handle", "done", "current", "hits", "hot_hits", "set_check", "set_c_calls", "c_calls", "c_hits", "exchange", "install", "internal",
           "current_internal"]

cdef type ndarray = np.ndarray
cdef object _Waitall = MPI.Request.Waitall
cdef object _Testall = MPI.Request.Testall
cdef type _Intracomm = MPI.Intracomm


cdef class Group:
    """A device group of a mesh (cached per ``(mesh, mesh_axes)``): its communicator,
    this device's in-group rank, roots resolved to in-group ranks, and a cache for
    what its collectives derive from shapes.  ``live`` is the mesh's communicator
    cache, which `Mesh.free` replaces: a group whose ``live`` is not the mesh's is
    stale."""

    cdef public object mesh_ref, live, axes, comm, roots, cache
    cdef public int size, rank
    cdef size_t handle  # the communicator's MPI handle, for the C calls (`_c_comm`; 0: not read yet)


cdef class Handle:
    """A collective in flight; ``wait()`` completes it and returns its result.

    Holds the buffers MPI is using until then.
    """

    cdef object _reqs, _result, _post, _keep
    cdef bint _done
    cdef int _nc  # requests of the compiled path, in _creq (mpi4py's are in _reqs)
    cdef unsigned long long _creq[2]  # MPI_Request handles, packed as _mpicall.h stores them

    def __init__(self, reqs, result, post=None, keep=None):
        self._reqs, self._result, self._post, self._keep, self._done = reqs, result, post, keep, False

    def wait(self):
        """Complete the operation and return its result (at once if already done)."""
        global _current
        cdef int err = 0
        if self._done:
            return self._result
        prev = _current
        _current = _WAIT
        try:
            if self._nc:
                with nogil:
                    err = meshrt_waitall(self._nc, <void *>self._creq)
                if err:
                    raise MPI.Exception(err)
                self._nc = 0
            elif type(self._reqs) is list:
                _Waitall(self._reqs)
            else:
                self._reqs.Wait()
        finally:
            _current = prev
        if self._post is not None:
            self._result = self._post(self._result)
        self._done, self._keep, self._post = True, None, None
        return self._result

    def test(self):
        """Whether the operation has finished (then ``wait()`` returns at once)."""
        cdef int flag = 0, err
        if self._done:
            return True
        if self._nc:
            err = meshrt_testall(self._nc, <void *>self._creq, &flag)
            if err:
                raise MPI.Exception(err)
            if flag:
                self._nc = 0
                if self._post is not None:
                    self._result = self._post(self._result)
                self._done, self._keep, self._post = True, None, None
            return bool(flag)
        return _Testall(self._reqs if type(self._reqs) is list else [self._reqs])

    def __repr__(self):
        return f"<meshrt.Handle {'done' if self._done else 'in flight'}>"


def done(result):
    """A `Handle` that has finished, holding ``result``."""
    cdef Handle h = Handle.__new__(Handle)
    h._result, h._done = result, True
    return h


cdef inline Handle _handle(reqs, result, keep):
    cdef Handle h = Handle.__new__(Handle)
    h._reqs, h._result, h._keep = reqs, result, keep
    return h


# -- what the watchdog reads ------------------------------------------------------------
# ``_current`` is ``((name, argument names), value, ...)`` for the compiled operation the
# main thread is in, else None.  A new tuple per call: the watchdog tells calls apart by
# identity, as it does frames.  Set and read with the GIL held (mpi4py drops it only
# inside the MPI call), so the watchdog never sees it half made.
cdef object _current = None
cdef tuple _WAIT = (("Handle.wait", ()),)
cdef tuple _ALL_REDUCE = ("all_reduce", ("x", "mesh", "mesh_axes", "reduction"))
cdef tuple _REDUCE = ("reduce", ("x", "mesh", "mesh_axes", "reduction", "root"))
cdef tuple _REDUCE_SCATTER = ("reduce_scatter", ("x", "mesh", "mesh_axes", "reduction", "scatter_axis"))
cdef tuple _BROADCAST = ("broadcast", ("x", "mesh", "mesh_axes", "root"))
cdef tuple _ALL_GATHER = ("all_gather", ("x", "mesh", "mesh_axes", "gather_axis", "sizes"))
cdef tuple _GATHER = ("gather", ("x", "mesh", "mesh_axes", "gather_axis", "root", "sizes"))
cdef tuple _SCATTER = ("scatter", ("x", "mesh", "mesh_axes", "scatter_axis", "root"))
cdef tuple _ALL_TO_ALL = ("all_to_all", ("x", "mesh", "mesh_axes", "split_axis", "concat_axis"))
cdef tuple _SHIFT = ("shift", ("x", "mesh", "mesh_axes", "shift_axis", "offset", "rotate"))
cdef tuple _SEND = ("send", ("x", "mesh", "mesh_axes", "destination"))
cdef tuple _RECV = ("recv", ("like", "mesh", "mesh_axes", "source"))


cdef unsigned long long _hits = 0


def hits():
    """How many calls took a compiled fast path (for tests that must exercise it)."""
    return _hits


def current():
    """``((name, argument names), value, ...)`` of the compiled collective this process is in, or None."""
    mark = _hot_current()
    return _current if mark is None else mark


# ``_internal`` is ``(operation, step, group)`` of the `internal` block the main thread is in
# (meshrt's own MPI calls outside the collectives), else None; a new tuple per block, as above.
cdef object _internal = None


cdef class internal:
    """``with internal(op, step, group):`` around an MPI call meshrt makes on its own behalf
    (see `meshrt.runtime.mpi.internal`); compiled, as it sits on paths such as a repeated gather."""

    cdef readonly tuple mark
    cdef object prev

    def __cinit__(self, op, step, group):
        self.mark = (op, step, group)

    def __enter__(self):
        global _internal
        self.prev = _internal
        _internal = self.mark
        return self

    def __exit__(self, exc_type, exc, tb):
        global _internal
        _internal = self.prev
        return False


def current_internal():
    """``(operation, step, group)`` of the `internal` block this process is in, or None."""
    return _internal


# -- the Python side's tables, shared (`install`) -------------------------------------
cdef dict _fast = {}
cdef dict _groups = {}
cdef object _direct = frozenset()
cdef bint _check = False
cdef object _slow_all_reduce, _slow_reduce, _slow_reduce_scatter, _slow_broadcast, _slow_all_gather
cdef object _slow_gather, _slow_scatter, _slow_all_to_all, _slow_all_slice, _slow_shift, _slow_send
cdef object _slow_recv
TAG = 0x3E5  # point-to-point messages' default tag (_collectives_p2p.py uses it too)
cdef int _TAG = TAG


def install(fast, groups, direct, slow, check):
    """Share `meshrt.collectives`' plan cache ``fast``, group cache ``groups`` and the set of
    dtypes mpi4py takes bare; ``slow`` maps each op's name to its Python implementation."""
    global _fast, _groups, _direct, _check
    global _slow_all_reduce, _slow_reduce, _slow_reduce_scatter, _slow_broadcast, _slow_all_gather
    global _slow_gather, _slow_scatter, _slow_all_to_all, _slow_all_slice, _slow_shift, _slow_send, _slow_recv
    _fast, _groups, _direct, _check = fast, groups, direct, check
    _hot_switch()
    _slow_all_reduce, _slow_reduce = slow["all_reduce"], slow["reduce"]
    _slow_reduce_scatter, _slow_broadcast = slow["reduce_scatter"], slow["broadcast"]
    _slow_all_gather, _slow_gather, _slow_scatter = slow["all_gather"], slow["gather"], slow["scatter"]
    _slow_all_to_all, _slow_all_slice, _slow_shift = slow["all_to_all"], slow["all_slice"], slow["shift"]
    _slow_send, _slow_recv = slow["send"], slow["recv"]


def set_check(bint flag):
    """``MESHRT_CHECK``: when on, every call takes the Python path (which checks)."""
    global _check
    _check = flag
    _hot_switch()


# -- helpers ----------------------------------------------------------------------------
cdef object _MISS = object()  # a fast path's "not mine": take the Python path


cdef inline object _entry(object key, object mesh):
    """The validated entry for ``key`` if its group is still the mesh's, else None."""
    cdef object e
    try:
        e = _fast.get(key)
    except TypeError:  # an unhashable attribute: never cached
        return None
    if e is None:
        return None
    try:
        if (<Group>(<tuple>e)[0]).live is not mesh._groups:
            return None
    except AttributeError:
        return None
    return e


cdef class _Last:
    """One op's last call that found its plan: the arguments its plan key holds (lists as
    tuples), the array's dtype and shape, the mesh's group cache, and the plan.  A loop
    repeating a call then matches by identity instead of building and hashing a key."""

    cdef object entry, live, k0, k1, k2, k3, descr, shape


cdef inline object _canon(object v):
    return tuple(v) if type(v) is list else v


cdef inline bint _same(object given, PyObject *cached):
    """``given`` is ``cached``, or a list holding ``cached``'s items (the same objects).  ``cached``
    is borrowed: callers pass a record's field, which as an object would cost a reference count."""
    cdef Py_ssize_t i, n
    if <PyObject *>given == cached:
        return True
    if type(given) is not list or type(<object>cached) is not tuple:
        return False
    n = len(<list>given)
    if n != len(<tuple>cached):
        return False
    for i in range(n):
        if (<list>given)[i] is not (<tuple>cached)[i]:
            return False
    return True


cdef inline bint _same_shape(cnp.ndarray x, object shape):
    cdef Py_ssize_t i, nd = cnp.PyArray_NDIM(x)
    if nd != len(<tuple>shape):
        return False
    for i in range(nd):
        if cnp.PyArray_DIM(x, <int>i) != <cnp.npy_intp>(<tuple>shape)[i]:
            return False
    return True


cdef object _recall(_Last last, object mesh, object k0, object k1, object k2, object k3, object descr,
                    cnp.ndarray x, bint shaped):
    """``last``'s plan if this call repeats it, else None."""
    if last.entry is None or descr is not last.descr:
        return None
    if not (_same(k0, <PyObject *>last.k0) and _same(k1, <PyObject *>last.k1) and _same(k2, <PyObject *>last.k2)
            and _same(k3, <PyObject *>last.k3)):
        return None
    if shaped and not _same_shape(x, last.shape):
        return None
    try:
        if mesh._groups is not last.live:  # another mesh, or this one freed since
            return None
    except AttributeError:
        return None
    return last.entry


cdef inline void _note(_Last last, object e, object k0, object k1, object k2, object k3, object descr, object shape):
    last.entry, last.live, last.descr, last.shape = e, (<Group>(<tuple>e)[0]).live, descr, shape
    last.k0, last.k1, last.k2, last.k3 = _canon(k0), _canon(k1), _canon(k2), _canon(k3)


cdef _Last _LAST_ALL_REDUCE = _Last(), _LAST_REDUCE = _Last(), _LAST_REDUCE_SCATTER = _Last()
cdef _Last _LAST_BROADCAST = _Last(), _LAST_ALL_GATHER = _Last(), _LAST_GATHER = _Last(), _LAST_SCATTER = _Last()
cdef _Last _LAST_ALL_TO_ALL = _Last(), _LAST_SHIFT = _Last()


cdef inline object _like(cnp.ndarray x):
    """A new C-ordered array of ``x``'s shape and (builtin) dtype."""
    return cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x), cnp.PyArray_TYPE(x))


cdef object _new(tuple shape, int typenum):
    cdef cnp.npy_intp dims[64]  # numpy's NPY_MAXDIMS: a planned shape never has more
    cdef Py_ssize_t i, nd = len(shape)
    if nd > 64:
        return np.empty(shape, cnp.PyArray_DescrFromType(typenum))
    for i in range(nd):
        dims[i] = shape[i]
    return cnp.PyArray_SimpleNew(<int>nd, dims, typenum)


cdef bint _fits(object out, tuple shape, int typenum):
    """``out`` can take a result of ``shape`` and builtin ``typenum`` as it is."""
    cdef cnp.ndarray o
    cdef Py_ssize_t i, nd = len(shape)
    if type(out) is not ndarray:
        return False
    o = <cnp.ndarray>out
    if cnp.PyArray_NDIM(o) != nd or cnp.PyArray_TYPE(o) != typenum:
        return False
    if not cnp.PyArray_IS_C_CONTIGUOUS(o) or not cnp.PyArray_ISWRITEABLE(o):
        return False
    for i in range(nd):
        if cnp.PyArray_DIM(o, <int>i) != <cnp.npy_intp>shape[i]:
            return False
    return True


cdef inline bint _apart(object out, cnp.ndarray x):
    """C-contiguous ``out`` and ``x`` share no byte (MPI forbids receiving into the send buffer)."""
    cdef char *o = <char *>cnp.PyArray_DATA(<cnp.ndarray>out)
    cdef char *a = <char *>cnp.PyArray_DATA(x)
    return o + cnp.PyArray_NBYTES(<cnp.ndarray>out) <= a or a + cnp.PyArray_NBYTES(x) <= o


cdef inline object _result_buffer(object out, tuple shape, int typenum, cnp.ndarray x):
    """A new C-ordered array of ``shape`` and builtin ``typenum``, ``out`` if it can take the result as
    it is and does not overlap the send buffer ``x``, else _MISS (the Python path then checks ``out``
    and says why, or receives apart and copies)."""
    if out is None:
        return _new(shape, typenum)
    return out if _fits(out, shape, typenum) and _apart(out, x) else _MISS


cdef inline object _send_buffer(cnp.ndarray x, object same, int typenum):
    """``x`` itself, or ``x`` cast to the reduction's dtype (``dtype=``) as a new C-ordered array."""
    return x if same is True else cnp.PyArray_Cast(x, typenum)


cdef inline object _new_of(cnp.ndarray x, int typenum):
    """A new C-ordered array of ``x``'s shape and the builtin ``typenum``."""
    return cnp.PyArray_SimpleNew(cnp.PyArray_NDIM(x), cnp.PyArray_DIMS(x), typenum)


cdef inline object _average(object res, int avg, int n):
    """``average``: the sum divided by the group size in place (floor division on ints, as numpy)."""
    if avg == 1:
        res /= n
    elif avg == 2:
        res //= n
    return res


cdef inline bint _plain(cnp.ndarray x):
    return cnp.PyArray_IS_C_CONTIGUOUS(x)


cdef inline object _shape(cnp.ndarray x):
    return (<object>x).shape


cdef inline object _dtype(cnp.ndarray x):
    return <object>cnp.PyArray_DESCR(x)


cdef inline object _sizes_key(object sizes):
    """``sizes`` as the Python side keys it, or _MISS where it does not cache."""
    cdef type t = type(sizes)
    if t is list:
        return tuple(sizes)
    if sizes is None or t is int or t is tuple:
        return sizes
    return _MISS


# -- the MPI C calls of planned collectives ---------------------------------------------
# mpi4py's ``comm.Allreduce(x, y, op)`` costs ~0.4 us of Python-object work per call above the
# C call it makes (bench/bench_gap.py), the largest part of an 8 B collective's cost over
# IMB-MPI1.  A planned call already knows its datatype, op and peers, so the front calls
# the MPI function itself (``MPI_Allreduce``, ``MPI_Iallgather``, ``MPI_Sendrecv``, ...).
# Without mpi.h: one build serves every MPI the loaded mpi4py does (MPICH's ABI, Intel MPI's
# too, has 32-bit int handles, Open MPI's pointers), so the functions' addresses come from the
# library mpi4py loaded and the handles from mpi4py (_mpicall.h).
cdef bint _c_calls = True
cdef bint _c_found = False  # _mpicall_init ran and found every function
cdef bint _c_tried = False
cdef unsigned long long _c_count = 0
cdef dict _dt_handles = {}  # type number -> MPI datatype handle (0: none: mpi4py's path)
cdef dict _op_handles = {}  # id(op) -> (op, handle)
cdef object _Request = MPI.Request


def _find_mpi_function(name):
    """The address of ``name`` in the MPI library mpi4py loaded, or 0."""
    import ctypes

    lib = _mpi_library()
    try:
        return 0 if lib is None else ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
    except AttributeError:
        return 0


def set_c_calls(bint flag):
    """Whether planned collectives call the MPI library's functions themselves (default) or
    go through mpi4py's methods; returns whether the C calls are on and available.
    ``MESHRT_C_CALLS=0`` in the environment turns them off at import.

    >>> set_c_calls(True) in (True, False)
    True
    """
    global _c_calls, _c_found, _c_tried
    _c_calls = flag
    if flag and not _c_tried:
        _c_tried = True
        _c_found = _mpicall_init() == 1
    _hot_switch()
    return _c_calls and _c_found


def c_calls():
    """The switch `set_c_calls` sets (``MESHRT_C_CALLS`` at import)."""
    return _c_calls


def c_hits():
    """How many calls went to the MPI library directly (`set_c_calls`)."""
    return _c_count


cdef size_t _dt_handle(int typenum):
    h = _dt_handles.get(typenum)
    if h is None:
        t = MPI._typedict.get(cnp.PyArray_DescrFromType(typenum).char)
        h = _dt_handles[typenum] = 0 if t is None else MPI._handleof(t)
    return <size_t>h


cdef size_t _op_handle(object op):
    e = _op_handles.get(id(op))
    if e is None or (<tuple>e)[0] is not op:
        if len(_op_handles) > 256:  # user ops made and dropped: start over
            _op_handles.clear()
        e = _op_handles[id(op)] = (op, MPI._handleof(op))
    return <size_t>(<tuple>e)[1]


cdef inline size_t _c_comm(Group g):
    """The group's communicator handle if the C path may take this call, else 0 (mpi4py's path).
    A group whose comm is not mpi4py's own ``Intracomm`` (e.g. wrapped to count calls) keeps
    mpi4py's path."""
    if not _c_calls or not _c_found or type(g.comm) is not _Intracomm:
        return 0
    if g.handle == 0:
        g.handle = <size_t>MPI._handleof(g.comm)
    return g.handle


cdef inline bint _count_ok(cnp.npy_intp n):
    return n <= 0x7FFFFFFF


cdef inline int _done_c(int err) except -1:
    global _c_count
    if err:
        raise MPI.Exception(err)
    _c_count += 1
    return 0


cdef inline Handle _c_handle(result, keep, int nreq, unsigned long long *reqs):
    """A `Handle` of ``nreq`` requests the compiled path started."""
    cdef Handle h = Handle.__new__(Handle)
    h._result, h._keep, h._nc = result, keep, nreq
    h._creq[0], h._creq[1] = reqs[0], reqs[1]
    return h


cdef enum:
    _RD_ALLREDUCE, _RD_REDUCE, _RD_REDUCE_SCATTER_BLOCK, _RD_REDUCE_SCATTER


cdef object _c_reduction(int kind, Group g, cnp.ndarray send, object res, object op, int typenum, int root,
                         object counts, bint wait):
    """MPI_Allreduce, MPI_Reduce (to in-group ``root``; ``res`` None elsewhere), MPI_Reduce_scatter_block
    or MPI_Reduce_scatter (``counts``: a C int array of each member's element count), or their I- forms,
    of C-ordered ``send`` into ``res`` in the builtin type ``typenum``: True, or a `Handle`; None
    where the C path cannot (mpi4py's path then)."""
    cdef size_t c = _c_comm(g), dt, o
    cdef int err, n
    cdef unsigned long long req[2]
    cdef const void *s = cnp.PyArray_DATA(send)
    cdef void *r = NULL if res is None else cnp.PyArray_DATA(<cnp.ndarray>res)
    cdef const int *rc = NULL
    if counts is not None:
        rc = _ints(counts)
    if c == 0 or not _count_ok(cnp.PyArray_SIZE(send)):
        return None
    dt = _dt_handle(typenum)
    if dt == 0:
        return None
    o = _op_handle(op)
    # the block form counts the piece each member keeps; the others the whole array
    n = <int>(cnp.PyArray_SIZE(<cnp.ndarray>res) if kind == _RD_REDUCE_SCATTER_BLOCK else cnp.PyArray_SIZE(send))
    if wait:
        with nogil:
            if kind == _RD_ALLREDUCE:
                err = meshrt_allreduce(s, r, n, dt, o, c)
            elif kind == _RD_REDUCE:
                err = meshrt_reduce(s, r, n, dt, o, root, c)
            elif kind == _RD_REDUCE_SCATTER_BLOCK:
                err = meshrt_reduce_scatter_block(s, r, n, dt, o, c)
            else:
                err = meshrt_reduce_scatter(s, r, rc, dt, o, c)
        _done_c(err)
        return True
    req[0] = req[1] = 0
    if kind == _RD_ALLREDUCE:
        err = meshrt_iallreduce(s, r, n, dt, o, c, <void *>req)
    elif kind == _RD_REDUCE:
        err = meshrt_ireduce(s, r, n, dt, o, root, c, <void *>req)
    elif kind == _RD_REDUCE_SCATTER_BLOCK:
        err = meshrt_ireduce_scatter_block(s, r, n, dt, o, c, <void *>req)
    else:
        err = meshrt_ireduce_scatter(s, r, rc, dt, o, c, <void *>req)
    _done_c(err)
    return _c_handle(res, send if counts is None else (send, counts), 1, req)


cdef object _c_bcast(Group g, cnp.ndarray buf, int root, bint wait):
    """MPI_Bcast (MPI_Ibcast) of ``buf`` from in-group ``root``: True, a `Handle`, or None."""
    cdef cnp.npy_intp count = cnp.PyArray_SIZE(buf)
    cdef size_t c = _c_comm(g), dt
    cdef int err
    cdef unsigned long long req[2]
    cdef void *b = cnp.PyArray_DATA(buf)
    if c == 0 or not _count_ok(count):
        return None
    dt = _dt_handle(cnp.PyArray_TYPE(buf))
    if dt == 0:
        return None
    if wait:
        with nogil:
            err = meshrt_bcast(b, <int>count, dt, root, c)
        _done_c(err)
        return True
    req[0] = req[1] = 0
    _done_c(meshrt_ibcast(b, <int>count, dt, root, c, <void *>req))
    return _c_handle(buf, None, 1, req)


cdef enum:
    _MV_ALLGATHER, _MV_GATHER, _MV_SCATTER, _MV_ALLTOALL


cdef object _c_move(int kind, Group g, object send, object recv, cnp.npy_intp piece, int root, bint wait):
    """MPI_Allgather, MPI_Gather, MPI_Scatter or MPI_Alltoall (or their I- forms) of pieces of
    ``piece`` elements (``send`` None off the root of a scatter, ``recv`` None off the root of a
    gather): True, a `Handle`, or None."""
    cdef size_t c = _c_comm(g), dt
    cdef int err, n
    cdef unsigned long long req[2]
    cdef cnp.ndarray a = <cnp.ndarray>(recv if send is None else send)
    cdef const void *s = NULL if send is None else cnp.PyArray_DATA(<cnp.ndarray>send)
    cdef void *r = NULL if recv is None else cnp.PyArray_DATA(<cnp.ndarray>recv)
    if c == 0 or not _count_ok(piece * g.size):
        return None
    dt = _dt_handle(cnp.PyArray_TYPE(a))
    if dt == 0:
        return None
    n = <int>piece
    req[0] = req[1] = 0
    if wait:
        with nogil:
            if kind == _MV_ALLGATHER:
                err = meshrt_allgather(s, n, r, n, dt, c)
            elif kind == _MV_GATHER:
                err = meshrt_gather(s, n, r, n, dt, root, c)
            elif kind == _MV_SCATTER:
                err = meshrt_scatter(s, n, r, n, dt, root, c)
            else:
                err = meshrt_alltoall(s, n, r, n, dt, c)
        _done_c(err)
        return True
    if kind == _MV_ALLGATHER:
        err = meshrt_iallgather(s, n, r, n, dt, c, <void *>req)
    elif kind == _MV_GATHER:
        err = meshrt_igather(s, n, r, n, dt, root, c, <void *>req)
    elif kind == _MV_SCATTER:
        err = meshrt_iscatter(s, n, r, n, dt, root, c, <void *>req)
    else:
        err = meshrt_ialltoall(s, n, r, n, dt, c, <void *>req)
    _done_c(err)
    return _c_handle(recv, send, 1, req)


cdef object _c_sendrecv(Group g, cnp.ndarray x, cnp.ndarray res, int dst, int src, int tag, bint wait):
    """MPI_Sendrecv of ``x`` to ``dst`` into ``res`` from ``src`` (MPI_Isend + MPI_Irecv):
    True, a `Handle`, or None."""
    cdef cnp.npy_intp count = cnp.PyArray_SIZE(x)
    cdef size_t c = _c_comm(g), dt
    cdef int err
    cdef unsigned long long req[2]
    cdef const void *s = cnp.PyArray_DATA(x)
    cdef void *r = cnp.PyArray_DATA(res)
    if c == 0 or not _count_ok(count):
        return None
    dt = _dt_handle(cnp.PyArray_TYPE(x))
    if dt == 0:
        return None
    if wait:
        with nogil:
            err = meshrt_sendrecv(s, <int>count, dst, tag, r, <int>count, src, tag, dt, c)
        _done_c(err)
        return True
    req[0] = req[1] = 0
    err = meshrt_isend(s, <int>count, dt, dst, tag, c, <void *>req)
    if err == 0:
        err = meshrt_irecv(r, <int>count, dt, src, tag, c, <void *>(<char *>req + meshrt_hs))
    _done_c(err)
    return _c_handle(res, x, 2, req)


cdef object _c_p2p(Group g, cnp.ndarray buf, int peer, int tag, bint sending, bint wait):
    """MPI_Send / MPI_Recv of ``buf`` (MPI_Isend / MPI_Irecv): True, a `Handle`, or None."""
    cdef cnp.npy_intp count = cnp.PyArray_SIZE(buf)
    cdef size_t c = _c_comm(g), dt
    cdef int err
    cdef unsigned long long req[2]
    cdef void *b = cnp.PyArray_DATA(buf)
    if c == 0 or not _count_ok(count):
        return None
    dt = _dt_handle(cnp.PyArray_TYPE(buf))
    if dt == 0:
        return None
    if wait:
        with nogil:
            if sending:
                err = meshrt_send(b, <int>count, dt, peer, tag, c)
            else:
                err = meshrt_recv(b, <int>count, dt, peer, tag, c)
        _done_c(err)
        return True
    req[0] = req[1] = 0
    if sending:
        err = meshrt_isend(b, <int>count, dt, peer, tag, c, <void *>req)
    else:
        err = meshrt_irecv(b, <int>count, dt, peer, tag, c, <void *>req)
    _done_c(err)
    return _c_handle(None if sending else buf, buf if sending else None, 1, req)



# -- unequal pieces: MPI_Allgatherv, MPI_Gatherv, MPI_Scatterv, MPI_Alltoallv of bytes ----
cdef dict _v_arrays = {}  # id(layout) -> (layout, int32 arrays of its counts and displacements)
cdef size_t _byte_handle = 0


cdef inline bint _v_ready():
    """The C path can take a v-collective now (on, found, and MPI.BYTE's handle known)."""
    global _byte_handle
    if not _c_calls or not _c_found:
        return False
    if _byte_handle == 0:
        _byte_handle = <size_t>MPI._handleof(MPI.BYTE)
    return True


cdef tuple _v_of(tuple layout, tuple lists):
    """``lists`` (counts and displacements of ``layout``, a planned tuple that holds them) as C int
    arrays, made once per layout; None where one does not fit an int."""
    e = _v_arrays.get(id(layout))
    if e is not None and (<tuple>e)[0] is layout:
        return <tuple>(<tuple>e)[1]
    arrs = []
    for v in lists:
        if max(v) > 0x7FFFFFFF:
            return None
        arrs.append(np.ascontiguousarray(v, dtype=np.intc))
    if len(_v_arrays) > 256:  # layouts made and dropped: start over
        _v_arrays.clear()
    _v_arrays[id(layout)] = (layout, tuple(arrs))
    return tuple(arrs)


cdef inline const int *_ints(object a):
    return <const int *>cnp.PyArray_DATA(<cnp.ndarray>a)


cdef enum:
    _VM_ALLGATHERV, _VM_GATHERV, _VM_SCATTERV, _VM_ALLTOALLV


cdef object _c_vmove(int kind, Group g, object send, object recv, tuple a, cnp.npy_intp mine, int root, bint wait):
    """MPI_Allgatherv, MPI_Gatherv, MPI_Scatterv or MPI_Alltoallv (or their I- forms) of bytes.
    ``a`` (from `_v_of`) holds the byte counts and displacements: the receive side's for the
    gathers, the send side's for scatter, send then receive for all_to_all; ``mine`` is this
    member's own byte count (what a gather sends, what a scatter receives); ``send`` is None off a
    scatter's root, ``recv`` None off a gather's.  True, a `Handle`, or None (a None ``a``, or
    the C path off)."""
    cdef size_t c = _c_comm(g), b
    cdef int err, n
    cdef unsigned long long req[2]
    if c == 0 or a is None or not _v_ready() or not _count_ok(mine):
        return None
    b, n = _byte_handle, <int>mine
    cdef const void *s = NULL if send is None else cnp.PyArray_DATA(<cnp.ndarray>send)
    cdef void *r = NULL if recv is None else cnp.PyArray_DATA(<cnp.ndarray>recv)
    cdef const int *c0 = _ints(a[0])
    cdef const int *d0 = _ints(a[1])
    cdef const int *c1 = NULL
    cdef const int *d1 = NULL
    if kind == _VM_ALLTOALLV:
        c1, d1 = _ints(a[2]), _ints(a[3])
    if wait:
        with nogil:
            if kind == _VM_ALLGATHERV:
                err = meshrt_allgatherv(s, n, r, c0, d0, b, c)
            elif kind == _VM_GATHERV:
                err = meshrt_gatherv(s, n, r, c0, d0, b, root, c)
            elif kind == _VM_SCATTERV:
                err = meshrt_scatterv(s, c0, d0, r, n, b, root, c)
            else:
                err = meshrt_alltoallv(s, c0, d0, r, c1, d1, b, c)
        _done_c(err)
        return True
    req[0] = req[1] = 0
    if kind == _VM_ALLGATHERV:
        err = meshrt_iallgatherv(s, n, r, c0, d0, b, c, <void *>req)
    elif kind == _VM_GATHERV:
        err = meshrt_igatherv(s, n, r, c0, d0, b, root, c, <void *>req)
    elif kind == _VM_SCATTERV:
        err = meshrt_iscatterv(s, c0, d0, r, n, b, root, c, <void *>req)
    else:
        err = meshrt_ialltoallv(s, c0, d0, r, c1, d1, b, c, <void *>req)
    _done_c(err)
    return _c_handle(recv, (send, a), 1, req)


# -- point-to-point exchanges (reshard's permute and exchange steps) ---------------------
def exchange(comm, list recvs, list sends, int tag):
    """Post a receive of bytes into each C-contiguous array of ``recvs`` (``(array, source)``)
    and a send of each of ``sends`` (``(array, destination)``) on ``comm``, then wait for all,
    from C with the GIL released while waiting; False (nothing posted) where the C calls are off
    or unavailable: the caller then takes mpi4py's path.

    >>> exchange(MPI.COMM_SELF, [], [], 0) in (True, False)
    True
    """
    global _c_count
    cdef Py_ssize_t n = len(recvs) + len(sends), i = 0
    cdef size_t c, byte
    cdef int err = 0, nbytes
    cdef cnp.ndarray a, reqs, st
    cdef char *rp
    if not _c_calls or not _c_found or type(comm) is not _Intracomm:
        return False
    for e in recvs + sends:
        a = <cnp.ndarray>(<tuple>e)[0]
        if not cnp.PyArray_IS_C_CONTIGUOUS(a) or cnp.PyArray_NBYTES(a) > 0x7FFFFFFF:
            return False
    if n == 0:
        return True
    c = <size_t>MPI._handleof(comm)
    byte = <size_t>MPI._handleof(MPI.BYTE)
    reqs = np.zeros(n * meshrt_hs, np.uint8)
    st = np.empty(n * MESHRT_STATUS_BYTES, np.uint8)
    rp = <char *>cnp.PyArray_DATA(reqs)
    for e in recvs:
        a = <cnp.ndarray>(<tuple>e)[0]
        err = meshrt_irecv(cnp.PyArray_DATA(a), <int>cnp.PyArray_NBYTES(a), byte, <int>(<tuple>e)[1], tag, c,
                           rp + i * meshrt_hs)
        if err:
            raise MPI.Exception(err)
        i += 1
    for e in sends:
        a = <cnp.ndarray>(<tuple>e)[0]
        err = meshrt_isend(cnp.PyArray_DATA(a), <int>cnp.PyArray_NBYTES(a), byte, <int>(<tuple>e)[1], tag, c,
                           rp + i * meshrt_hs)
        if err:
            raise MPI.Exception(err)
        i += 1
    cdef int ni = <int>n
    cdef void *stp = cnp.PyArray_DATA(st)
    with nogil:
        err = meshrt_waitall_n(ni, <void *>rp, stp)
    if err:
        raise MPI.Exception(err)
    _c_count += 1
    return True


set_c_calls(os.environ.get("MESHRT_C_CALLS", "1") not in ("0", "", "false", "False", "no"))


# -- the hot path: a loop repeating one blocking call ------------------------------------
# A planned blocking call that the MPI library took directly leaves, per op, all that its
# C call needs in a `_Hot`: the arguments it matched (as `_Last`), x's shape, the result's
# shape and type, the MPI handles and counts.  The next call that matches it by identity
# goes straight to the MPI call: no plan tuple to unpack, no dict of handles, no shape tuple,
# no mark tuple.  At 8 B that work was ~0.2 us of CPU per call (perf, one process), and
# between two processes it costs more than its CPU time (docs/benchmarks.md).
cdef enum:
    _H_ALLREDUCE, _H_REDUCE, _H_REDUCE_SCATTER, _H_BCAST, _H_ALLGATHER, _H_GATHER, _H_SCATTER, _H_ALLTOALL, _H_SHIFT

cdef enum:
    _HOT_MAXDIM = 8  # a call of more dims takes the regular path


cdef class _Hot:
    """One op's last blocking call that went straight to MPI: what it matched and what its C call needs."""

    cdef bint ready, gets, is_root
    cdef int kind, nd, rnd, rtype, avg, size, root, dst, src, count
    cdef object live, mesh_ref, k0, k1, k2, k3, descr, comm_obj
    cdef type mesh_type
    cdef Py_ssize_t groups_at  # the offset of mesh_type's ``_groups`` slot, -1: read it as an attribute
    cdef Group g
    cdef tuple head, args  # the watchdog's mark: (name, argument names), and the values after x and mesh
    cdef cnp.npy_intp dims[8]
    cdef cnp.npy_intp rdims[8]
    cdef cnp.npy_intp xbytes, rbytes  # x's and the result's sizes in bytes (what a match fixes)
    cdef size_t comm, dt, op


cdef extern from "Python.h":
    ctypedef struct PyInterpreterState:
        pass
    ctypedef struct PyThreadState:
        pass
    PyInterpreterState *PyInterpreterState_Get()
    PyThreadState *PyInterpreterState_ThreadHead(PyInterpreterState *)
    PyThreadState *PyThreadState_Next(PyThreadState *)


cdef extern from "Python.h":
    ctypedef struct PyMemberDef:
        int type
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef *d_member
    int T_OBJECT_EX


cdef dict _groups_slots = {}  # a Mesh type -> the offset of its ``_groups`` slot (-1: not a plain slot)
cdef type _MemberDescriptor = types.MemberDescriptorType


cdef Py_ssize_t _groups_slot(type t):
    """Where ``_groups`` lives in objects of type ``t`` (a ``__slots__`` member), or -1."""
    o = _groups_slots.get(t)
    if o is None:
        d = getattr(t, "_groups", None)
        o = -1
        if type(d) is _MemberDescriptor and (<PyMemberDescrObject *>d).d_member.type == T_OBJECT_EX:
            o = (<PyMemberDescrObject *>d).d_member.offset
        _groups_slots[t] = o
    return <Py_ssize_t>o


cdef inline bint _alone():
    """This is the interpreter's only thread, so no thread can want the GIL while an MPI call holds
    it.  (Signal handlers run in this thread after the call either way.)"""
    cdef PyThreadState *t = PyInterpreterState_ThreadHead(PyInterpreterState_Get())
    return t != NULL and PyThreadState_Next(t) == NULL


cdef _Hot _HOT_ALL_REDUCE = _Hot(), _HOT_REDUCE = _Hot(), _HOT_REDUCE_SCATTER = _Hot(), _HOT_BROADCAST = _Hot()
cdef _Hot _HOT_ALL_GATHER = _Hot(), _HOT_GATHER = _Hot(), _HOT_SCATTER = _Hot(), _HOT_ALL_TO_ALL = _Hot()
cdef _Hot _HOT_SHIFT = _Hot()
cdef bint _hot_on = True  # the C calls on and found, MESHRT_CHECK off (`_hot_switch`)
# The hot call this process is in (the watchdog's mark) and its x, borrowed: h is one of the
# _HOT_* above and x is held by the caller for the whole call; and a count of calls.
cdef PyObject *_hot_now = NULL
cdef PyObject *_hot_x = NULL
cdef unsigned long long _hot_seq = 0  # also: how many calls took the hot path (`hot_hits`)
cdef object _hot_mark = None
cdef unsigned long long _hot_mark_seq = 0


def hot_hits():
    """How many calls took the hot path (a repeat of the op's last blocking call, straight to MPI)."""
    return _hot_seq


cdef void _hot_switch():
    global _hot_on
    _hot_on = _c_calls and _c_found and not _check


cdef bint _hot_set(_Hot h, int kind, tuple head, Group g, object mesh, cnp.ndarray x, object k0, object k1,
                   object k2, object k3, tuple args, object rshape, int rtype, int typenum, object op):
    """Fill ``h`` from a call that has just gone to MPI; False (``h`` left unready) where the call cannot be hot.
    ``rshape`` is the result's shape (None: no result here); ``typenum`` the type MPI moves."""
    cdef Py_ssize_t i, nd = cnp.PyArray_NDIM(x)
    h.ready = False
    if not _hot_on or nd > _HOT_MAXDIM or (rshape is not None and len(<tuple>rshape) > _HOT_MAXDIM):
        return False
    h.kind, h.head, h.args, h.nd, h.descr = kind, head, args, <int>nd, _dtype(x)
    for i in range(nd):
        h.dims[i] = cnp.PyArray_DIM(x, <int>i)
    h.gets = rshape is not None
    h.rnd = 0 if rshape is None else <int>len(<tuple>rshape)
    h.xbytes, h.rbytes = cnp.PyArray_NBYTES(x), cnp.PyArray_DescrFromType(rtype).itemsize
    for i in range(h.rnd):
        h.rdims[i] = (<tuple>rshape)[i]
        h.rbytes *= h.rdims[i]
    h.rtype, h.size, h.avg = rtype, g.size, 0
    h.root, h.dst, h.src, h.count, h.is_root = 0, -1, -1, 0, False  # the caller sets those its op uses
    h.comm, h.dt, h.op = g.handle, _dt_handle(typenum), 0 if op is None else _op_handle(op)
    h.live, h.mesh_ref, h.g, h.comm_obj = g.live, g.mesh_ref, g, g.comm
    h.mesh_type = type(mesh)
    h.groups_at = _groups_slot(h.mesh_type)
    h.k0, h.k1, h.k2, h.k3 = _canon(k0), _canon(k1), _canon(k2), _canon(k3)
    return True


cdef inline bint _hot_match(_Hot h, object x, object mesh, object k0, object k1, object k2, object k3) noexcept:
    """The call ``(x, mesh, k0..k3)`` repeats ``h``'s.  (The array is read through casts, and the
    cached values as borrowed pointers: this runs on every call.)"""
    cdef int i
    if not h.ready or not _hot_on or type(x) is not ndarray:
        return False
    if (<PyObject *>cnp.PyArray_DESCR(<cnp.ndarray>x) != <PyObject *>h.descr or cnp.PyArray_NDIM(<cnp.ndarray>x) != h.nd
            or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>x)):
        return False
    for i in range(h.nd):
        if cnp.PyArray_DIM(<cnp.ndarray>x, i) != h.dims[i]:
            return False
    if not (_same(k0, <PyObject *>h.k0) and _same(k1, <PyObject *>h.k1) and _same(k2, <PyObject *>h.k2)
            and _same(k3, <PyObject *>h.k3)):
        return False
    if <PyObject *>h.g.comm != <PyObject *>h.comm_obj:  # the group's communicator replaced (e.g. wrapped to count calls)
        return False
    # Another mesh, or this one freed since (`Mesh.free` replaces ``_groups``), is not.  The slot
    # is read where it lies: an attribute lookup is ~20 ns of CPython's widest code per call.
    if <PyObject *>Py_TYPE(mesh) != <PyObject *>h.mesh_type:
        return False
    if h.groups_at >= 0:
        return (<PyObject **>((<char *><PyObject *>mesh) + h.groups_at))[0] == <PyObject *>h.live
    try:
        return mesh._groups is h.live
    except Exception:  # no such attribute, or one that raises: not the call h holds
        return False


cdef inline bint _hot_fits(_Hot h, object out):
    """``out`` can take ``h``'s result as it is."""
    cdef cnp.ndarray o
    cdef int i
    if type(out) is not ndarray:
        return False
    o = <cnp.ndarray>out
    if cnp.PyArray_NDIM(o) != h.rnd or cnp.PyArray_TYPE(o) != h.rtype:
        return False
    if not cnp.PyArray_IS_C_CONTIGUOUS(o) or not cnp.PyArray_ISWRITEABLE(o):
        return False
    for i in range(h.rnd):
        if cnp.PyArray_DIM(o, i) != h.rdims[i]:
            return False
    return True


cdef inline bint _hot_apart(_Hot h, const void *r, const void *s):
    """A result of ``h``'s size at ``r`` and an ``x`` of its size at ``s`` share no byte (`_apart`
    with the sizes a match fixes)."""
    return <const char *>r + h.rbytes <= <const char *>s or <const char *>s + h.xbytes <= <const char *>r


cdef inline int _hot_call(int kind, const void *s, void *r, int n, size_t dt, size_t op, int root, bint is_root,
                          int dst, int src, size_t c) noexcept nogil:
    if kind == _H_ALLREDUCE:
        return meshrt_allreduce(s, r, n, dt, op, c)
    if kind == _H_REDUCE:
        return meshrt_reduce(s, r, n, dt, op, root, c)
    if kind == _H_REDUCE_SCATTER:
        return meshrt_reduce_scatter_block(s, r, n, dt, op, c)
    if kind == _H_BCAST:
        return meshrt_bcast(r if r != NULL else <void *>s, n, dt, root, c)
    if kind == _H_ALLGATHER:
        return meshrt_allgather(s, n, r, n, dt, c)
    if kind == _H_GATHER:
        return meshrt_gather(s, n, r, n, dt, root, c)
    if kind == _H_SCATTER:
        return meshrt_scatter(s if is_root else NULL, n, r, n, dt, root, c)
    if kind == _H_ALLTOALL:
        return meshrt_alltoall(s, n, r, n, dt, c)
    return meshrt_sendrecv(s, n, dst, _TAG, r, n, src, _TAG, dt, c)


cdef object _hot_run(_Hot h, cnp.ndarray x, object out):
    """``h``'s call on ``x``, into ``out`` (or a new array): its result, or _MISS where ``out`` does
    not fit (the regular path then says why)."""
    global _hot_now, _hot_x, _hot_seq, _hits, _c_count, _hot_mark
    cdef object res = None
    cdef const void *s = cnp.PyArray_DATA(x)
    cdef void *r = NULL
    cdef int err = 0, kind = h.kind, n = h.count, root = h.root
    cdef size_t c = h.comm, dt = h.dt, op = h.op
    if h.gets:
        if out is None:
            res = cnp.PyArray_SimpleNew(h.rnd, h.rdims, h.rtype)
        elif _hot_fits(h, out) and _hot_apart(h, cnp.PyArray_DATA(<cnp.ndarray>out), s):
            res = out
        else:
            return _MISS
        r = cnp.PyArray_DATA(<cnp.ndarray>res)
    elif kind == _H_BCAST and out is not None and out is not x:  # the root's result is x; out= gets a copy
        return _MISS
    _hot_now, _hot_x = <PyObject *>h, <PyObject *>x
    _hot_seq += 1
    if _alone():  # releasing the GIL would cost ~50 ns and serve no thread
        err = _hot_call(kind, s, r, n, dt, op, root, h.is_root, h.dst, h.src, c)
    else:
        with nogil:
            err = _hot_call(kind, s, r, n, dt, op, root, h.is_root, h.dst, h.src, c)
    _hot_now = _hot_x = NULL
    if _hot_mark is not None:  # the watchdog read this call's mark: let go of its x
        _hot_mark = None
    if err:
        raise MPI.Exception(err)
    _hits += 1
    _c_count += 1
    if kind == _H_BCAST and not h.gets:
        return x
    if h.avg and res is not None:
        return _average(res, h.avg, h.size)
    return res


cdef object _hot_current():
    """The watchdog's mark of the hot call this process is in (one tuple per call), or None."""
    global _hot_mark, _hot_mark_seq
    if _hot_now == NULL:
        return None
    cdef _Hot h = <_Hot>_hot_now
    if _hot_mark is None or _hot_mark_seq != _hot_seq:
        _hot_mark = (h.head, <object>_hot_x, h.mesh_ref()) + h.args
        _hot_mark_seq = _hot_seq
    return _hot_mark


_hot_switch()


# -- reductions -------------------------------------------------------------------------
cdef object _all_reduce(cnp.ndarray x, mesh, mesh_axes, reduction, dtype, out, wait):
    e = _recall(_LAST_ALL_REDUCE, mesh, mesh_axes, reduction, dtype, None, _dtype(x), x, False)
    if e is None:
        e = _entry(("all_reduce", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), reduction,
                    _dtype(x), dtype), mesh)
        if e is None:
            return _MISS
        _note(_LAST_ALL_REDUCE, e, mesh_axes, reduction, dtype, None, _dtype(x), None)
    cdef Group g = <Group>(<tuple>e)[0]
    # (g, plan, same, (op, result type number, average))
    f = (<tuple>e)[3]
    if f is None or g.size == 1 or not _plain(x):
        return _MISS
    cdef int typenum = (<tuple>f)[1], avg = (<tuple>f)[2]
    if avg and not wait:
        return _MISS
    if out is None:
        res = _new_of(x, typenum)
    elif _fits(out, _shape(x), typenum) and _apart(out, x):
        res = out
    else:
        return _MISS
    send = _send_buffer(x, (<tuple>e)[2], typenum)
    h = _c_reduction(_RD_ALLREDUCE, g, <cnp.ndarray>send, res, (<tuple>f)[0], typenum, 0, None, wait)
    if wait:
        if h is None:
            g.comm.Allreduce(send, res, (<tuple>f)[0])
        elif send is x and _hot_set(_HOT_ALL_REDUCE, _H_ALLREDUCE, _ALL_REDUCE, g, mesh, x, mesh_axes, reduction,
                                    dtype, None, (mesh_axes, reduction), _shape(x), typenum, typenum, (<tuple>f)[0]):
            _HOT_ALL_REDUCE.count, _HOT_ALL_REDUCE.avg = <int>cnp.PyArray_SIZE(x), avg
            _HOT_ALL_REDUCE.ready = True
        return _average(res, avg, g.size)
    if h is not None:
        return h
    return _handle(g.comm.Iallreduce(send, res, (<tuple>f)[0]), res, send)


def all_reduce(x, mesh, mesh_axes=None, reduction="sum", dtype=None, *, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_ALL_REDUCE, x, mesh, mesh_axes, reduction, dtype, None):
        r = _hot_run(_HOT_ALL_REDUCE, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_ALL_REDUCE, x, mesh, mesh_axes, reduction)
    try:
        if not _check and type(x) is ndarray:
            r = _all_reduce(<cnp.ndarray>x, mesh, mesh_axes, reduction, dtype, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_all_reduce(x, mesh, mesh_axes, reduction, dtype, out=out, wait=wait)
    finally:
        _current = prev


cdef object _reduce(cnp.ndarray x, mesh, mesh_axes, reduction, root, dtype, out, wait):
    e = _recall(_LAST_REDUCE, mesh, mesh_axes, reduction, root, dtype, _dtype(x), x, False)
    if e is None:
        e = _entry(("reduce", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), reduction,
                    _canon(root), _dtype(x), dtype), mesh)
        if e is None:
            return _MISS
        _note(_LAST_REDUCE, e, mesh_axes, reduction, root, dtype, _dtype(x), None)
    cdef Group g = <Group>(<tuple>e)[0]
    # (g, plan, same, root, (op, result type number, average))
    r = (<tuple>e)[3]
    f = (<tuple>e)[4]
    if f is None or g.size == 1 or not _plain(x):
        return _MISS
    cdef int typenum = (<tuple>f)[1], avg = (<tuple>f)[2]
    if avg and not wait:
        return _MISS
    res = _result_buffer(out, _shape(x), typenum, x) if g.rank == r else None
    if res is _MISS:
        return _MISS
    send = _send_buffer(x, (<tuple>e)[2], typenum)
    h = _c_reduction(_RD_REDUCE, g, <cnp.ndarray>send, res, (<tuple>f)[0], typenum, r, None, wait)
    if wait:
        if h is None:
            g.comm.Reduce(send, res, (<tuple>f)[0], r)
        elif send is x and _hot_set(_HOT_REDUCE, _H_REDUCE, _REDUCE, g, mesh, x, mesh_axes, reduction, root, dtype,
                                    (mesh_axes, reduction, root), None if res is None else _shape(x), typenum, typenum,
                                    (<tuple>f)[0]):
            _HOT_REDUCE.count, _HOT_REDUCE.avg, _HOT_REDUCE.root = <int>cnp.PyArray_SIZE(x), avg, r
            _HOT_REDUCE.ready = True
        return None if res is None else _average(res, avg, g.size)
    if h is not None:
        return h
    return _handle(g.comm.Ireduce(send, res, (<tuple>f)[0], r), res, send)


def reduce(x, mesh, mesh_axes=None, reduction="sum", root=0, dtype=None, *, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_REDUCE, x, mesh, mesh_axes, reduction, root, dtype):
        r = _hot_run(_HOT_REDUCE, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_REDUCE, x, mesh, mesh_axes, reduction, root)
    try:
        if not _check and type(x) is ndarray:
            r = _reduce(<cnp.ndarray>x, mesh, mesh_axes, reduction, root, dtype, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_reduce(x, mesh, mesh_axes, reduction, root, dtype, out=out, wait=wait)
    finally:
        _current = prev


cdef object _reduce_scatter(cnp.ndarray x, mesh, mesh_axes, reduction, scatter_axis, dtype, out, wait):
    if type(scatter_axis) is not int:
        return _MISS
    e = _recall(_LAST_REDUCE_SCATTER, mesh, mesh_axes, reduction, scatter_axis, dtype, _dtype(x), x, True)
    if e is None:
        e = _entry(("reduce_scatter", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), _shape(x),
                    _dtype(x), scatter_axis, reduction, dtype), mesh)
        if e is None:
            return _MISS
        _note(_LAST_REDUCE_SCATTER, e, mesh_axes, reduction, scatter_axis, dtype, _dtype(x), _shape(x))
    cdef Group g = <Group>(<tuple>e)[0]
    # (g, plan, same, axis, rshape, oshape, counts, (op, result type number, average))
    f = (<tuple>e)[7]
    if f is None or (<tuple>e)[3] != 0 or g.size == 1 or not _plain(x):
        return _MISS
    cdef int typenum = (<tuple>f)[1], avg = (<tuple>f)[2]
    if avg and not wait:
        return _MISS
    counts = (<tuple>e)[6]  # uneven pieces: each member's element count, for MPI_Reduce_scatter
    ca = None
    if counts is not None:
        if not _v_ready():
            return _MISS
        a = _v_of(<tuple>e, (counts,))
        if a is None:
            return _MISS
        ca = a[0]
    rshape = <tuple>(<tuple>e)[4]
    if out is None:
        res = _new(rshape, typenum)
    elif _fits(out, rshape, typenum) and _apart(out, x):
        res = out
    else:
        return _MISS
    send = _send_buffer(x, (<tuple>e)[2], typenum)
    op = (<tuple>f)[0]
    h = _c_reduction(_RD_REDUCE_SCATTER_BLOCK if ca is None else _RD_REDUCE_SCATTER, g, <cnp.ndarray>send, res, op,
                     typenum, 0, ca, wait)
    if wait:
        if h is None:
            if ca is None:
                g.comm.Reduce_scatter_block(send, res, op)
            else:
                g.comm.Reduce_scatter(send, res, counts, op)
        elif ca is None and send is x and _hot_set(
                _HOT_REDUCE_SCATTER, _H_REDUCE_SCATTER, _REDUCE_SCATTER, g, mesh, x, mesh_axes, reduction, scatter_axis,
                dtype, (mesh_axes, reduction, scatter_axis), rshape, typenum, typenum, op):
            _HOT_REDUCE_SCATTER.count, _HOT_REDUCE_SCATTER.avg = <int>cnp.PyArray_SIZE(<cnp.ndarray>res), avg
            _HOT_REDUCE_SCATTER.ready = True
        return _average(res, avg, g.size)
    if h is not None:
        return h
    if ca is None:
        return _handle(g.comm.Ireduce_scatter_block(send, res, op), res, send)
    return _handle(g.comm.Ireduce_scatter(send, res, counts, op), res, send)


def reduce_scatter(x, mesh, mesh_axes=None, reduction="sum", scatter_axis=0, dtype=None, *, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_REDUCE_SCATTER, x, mesh, mesh_axes, reduction, scatter_axis, dtype):
        r = _hot_run(_HOT_REDUCE_SCATTER, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_REDUCE_SCATTER, x, mesh, mesh_axes, reduction, scatter_axis)
    try:
        if not _check and type(x) is ndarray:
            r = _reduce_scatter(<cnp.ndarray>x, mesh, mesh_axes, reduction, scatter_axis, dtype, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_reduce_scatter(x, mesh, mesh_axes, reduction, scatter_axis, dtype, out=out, wait=wait)
    finally:
        _current = prev


# -- data movement ----------------------------------------------------------------------
cdef object _broadcast(cnp.ndarray x, mesh, mesh_axes, root, out, wait):
    e = _recall(_LAST_BROADCAST, mesh, mesh_axes, root, None, None, _dtype(x), x, False)
    if e is None:
        e = _entry(("broadcast", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), _canon(root), _dtype(x)),
                   mesh)
        if e is None:
            return _MISS
        _note(_LAST_BROADCAST, e, mesh_axes, root, None, None, _dtype(x), None)
    cdef Group g = <Group>(<tuple>e)[0]
    # (g, r, direct)
    r = (<tuple>e)[1]
    if (<tuple>e)[2] is not True or g.size == 1:
        return _MISS
    if g.rank == r:
        if not _plain(x) or (out is not None and out is not x):  # out= on the root: the Python path copies x
            return _MISS
        buf = x
    else:
        buf = _result_buffer(out, _shape(x), cnp.PyArray_TYPE(x), x)
        if buf is _MISS:
            return _MISS
    h = _c_bcast(g, <cnp.ndarray>buf, r, wait)
    if h is not None:
        if wait and _hot_set(_HOT_BROADCAST, _H_BCAST, _BROADCAST, g, mesh, x, mesh_axes, root, None, None,
                             (mesh_axes, root), None if g.rank == r else _shape(x), cnp.PyArray_TYPE(x),
                             cnp.PyArray_TYPE(x), None):
            _HOT_BROADCAST.count, _HOT_BROADCAST.root = <int>cnp.PyArray_SIZE(x), r
            _HOT_BROADCAST.is_root = g.rank == r
            _HOT_BROADCAST.ready = True
        return buf if wait else h
    if wait:
        g.comm.Bcast(buf, r)
        return buf
    return _handle(g.comm.Ibcast(buf, r), buf, None)


def broadcast(x, mesh, mesh_axes=None, root=0, *, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_BROADCAST, x, mesh, mesh_axes, root, None, None):
        r = _hot_run(_HOT_BROADCAST, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_BROADCAST, x, mesh, mesh_axes, root)
    try:
        if not _check and type(x) is ndarray:
            r = _broadcast(<cnp.ndarray>x, mesh, mesh_axes, root, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_broadcast(x, mesh, mesh_axes, root, out=out, wait=wait)
    finally:
        _current = prev


cdef object _gather_layout(_Last last, str op, cnp.ndarray x, mesh, mesh_axes, gather_axis, root, sizes):
    """The cached entry ``(g, r, layout)`` of an axis-0 gather of equal pieces of a bare dtype, or of
    unequal pieces of any dtype (they travel as bytes) while the C calls are on; else None."""
    if type(gather_axis) is not int:
        return None
    e = _recall(last, mesh, mesh_axes, gather_axis, root, sizes, _dtype(x), x, True)
    if e is None:
        skey = _sizes_key(sizes)
        if skey is _MISS:
            return None
        e = _entry((op, PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), _shape(x), _dtype(x), gather_axis,
                    _canon(root), skey), mesh)
        if e is None:
            return None
        _note(last, e, mesh_axes, gather_axis, root, sizes, _dtype(x), _shape(x))
    # layout: (axis, counts, displs, equal, shape, oshape, direct)
    layout = <tuple>(<tuple>e)[2]
    if layout[0] != 0 or not _plain(x):
        return None
    if layout[3] is True and layout[6] is True:
        return e
    if layout[3] is not True and _v_ready():
        return e
    return None


cdef object _all_gather(cnp.ndarray x, mesh, mesh_axes, gather_axis, sizes, out, wait):
    e = _gather_layout(_LAST_ALL_GATHER, "all_gather", x, mesh, mesh_axes, gather_axis, None, sizes)
    if e is None:
        return _MISS
    cdef Group g = <Group>(<tuple>e)[0]
    shape = <tuple>(<tuple>(<tuple>e)[2])[4]
    if (<tuple>(<tuple>e)[2])[3] is not True:  # unequal pieces: MPI_Allgatherv of bytes, any byte order
        if out is None:
            buf = np.empty(shape, _dtype(x))
        elif _fits(out, shape, cnp.PyArray_TYPE(x)) and (<cnp.ndarray>out).dtype == _dtype(x) and _apart(out, x):
            buf = out
        else:
            return _MISS
        layout = <tuple>(<tuple>e)[2]
        h = _c_vmove(_VM_ALLGATHERV, g, x, buf, _v_of(layout, (layout[1], layout[2])), cnp.PyArray_NBYTES(x), 0,
                     wait)
        if h is None:
            return _MISS
        return buf if wait else h
    if out is None:
        buf = _new(shape, cnp.PyArray_TYPE(x))
    elif _fits(out, shape, cnp.PyArray_TYPE(x)) and _apart(out, x):
        buf = out
    else:
        return _MISS
    h = _c_move(_MV_ALLGATHER, g, x, <cnp.ndarray>buf, cnp.PyArray_SIZE(x), 0, wait)
    if h is not None:
        if wait and _hot_set(_HOT_ALL_GATHER, _H_ALLGATHER, _ALL_GATHER, g, mesh, x, mesh_axes, gather_axis, None,
                             sizes, (mesh_axes, gather_axis, sizes), shape, cnp.PyArray_TYPE(x), cnp.PyArray_TYPE(x),
                             None):
            _HOT_ALL_GATHER.count = <int>cnp.PyArray_SIZE(x)
            _HOT_ALL_GATHER.ready = True
        return buf if wait else h
    if wait:
        g.comm.Allgather(x, buf)
        return buf
    return _handle(g.comm.Iallgather(x, buf), buf, x)


def all_gather(x, mesh, mesh_axes=None, gather_axis=0, *, sizes=None, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_ALL_GATHER, x, mesh, mesh_axes, gather_axis, None, sizes):
        r = _hot_run(_HOT_ALL_GATHER, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_ALL_GATHER, x, mesh, mesh_axes, gather_axis, sizes)
    try:
        if not _check and type(x) is ndarray:
            r = _all_gather(<cnp.ndarray>x, mesh, mesh_axes, gather_axis, sizes, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_all_gather(x, mesh, mesh_axes, gather_axis, sizes=sizes, out=out, wait=wait)
    finally:
        _current = prev


cdef object _gather(cnp.ndarray x, mesh, mesh_axes, gather_axis, root, sizes, out, wait):
    e = _gather_layout(_LAST_GATHER, "gather", x, mesh, mesh_axes, gather_axis, root, sizes)
    if e is None:
        return _MISS
    cdef Group g = <Group>(<tuple>e)[0]
    r = (<tuple>e)[1]
    layout = <tuple>(<tuple>e)[2]
    if layout[3] is not True:  # unequal pieces: MPI_Gatherv of bytes, any byte order
        if out is not None:
            return _MISS
        buf = np.empty(<tuple>layout[4], _dtype(x)) if g.rank == r else None
        h = _c_vmove(_VM_GATHERV, g, x, buf, _v_of(layout, (layout[1], layout[2])), cnp.PyArray_NBYTES(x), r, wait)
        if h is None:
            return _MISS
        return buf if wait else h
    buf = _result_buffer(out, <tuple>layout[4], cnp.PyArray_TYPE(x), x) if g.rank == r else None
    if buf is _MISS:
        return _MISS
    h = _c_move(_MV_GATHER, g, x, buf, cnp.PyArray_SIZE(x), r, wait)
    if h is not None:
        if wait and _hot_set(_HOT_GATHER, _H_GATHER, _GATHER, g, mesh, x, mesh_axes, gather_axis, root, sizes,
                             (mesh_axes, gather_axis, root, sizes), None if buf is None else layout[4],
                             cnp.PyArray_TYPE(x), cnp.PyArray_TYPE(x), None):
            _HOT_GATHER.count, _HOT_GATHER.root = <int>cnp.PyArray_SIZE(x), r
            _HOT_GATHER.ready = True
        return buf if wait else h
    if wait:
        g.comm.Gather(x, buf, r)
        return buf
    return _handle(g.comm.Igather(x, buf, r), buf, x)


def gather(x, mesh, mesh_axes=None, gather_axis=0, root=0, *, sizes=None, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_GATHER, x, mesh, mesh_axes, gather_axis, root, sizes):
        r = _hot_run(_HOT_GATHER, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_GATHER, x, mesh, mesh_axes, gather_axis, root, sizes)
    try:
        if not _check and type(x) is ndarray:
            r = _gather(<cnp.ndarray>x, mesh, mesh_axes, gather_axis, root, sizes, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_gather(x, mesh, mesh_axes, gather_axis, root, sizes=sizes, out=out, wait=wait)
    finally:
        _current = prev


cdef object _scatter(cnp.ndarray x, mesh, mesh_axes, scatter_axis, root, out, wait):
    if type(scatter_axis) is not int:
        return _MISS
    e = _recall(_LAST_SCATTER, mesh, mesh_axes, scatter_axis, root, None, _dtype(x), x, True)
    if e is None:
        e = _entry(("scatter", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), _shape(x), _dtype(x),
                    scatter_axis, _canon(root)), mesh)
        if e is None:
            return _MISS
        _note(_LAST_SCATTER, e, mesh_axes, scatter_axis, root, None, _dtype(x), _shape(x))
    cdef Group g = <Group>(<tuple>e)[0]
    r = (<tuple>e)[1]
    # layout: (axis, bshape, count, counts, displs, direct); counts and displs in bytes, None when equal
    layout = <tuple>(<tuple>e)[2]
    if layout is None or layout[0] != 0:
        return _MISS
    if g.rank == r:
        if not _plain(x):
            return _MISS
        send = x
    else:
        send = None
    if layout[3] is not None:  # uneven pieces: MPI_Scatterv of bytes, any byte order
        if out is not None:
            return _MISS
        buf = np.empty(<tuple>layout[1], _dtype(x))
        h = _c_vmove(_VM_SCATTERV, g, send, buf, _v_of(layout, (layout[3], layout[4])),
                     cnp.PyArray_NBYTES(<cnp.ndarray>buf), r, wait)
        if h is None:
            return _MISS
        return buf if wait else h
    if layout[5] is not True:
        return _MISS
    buf = _result_buffer(out, <tuple>layout[1], cnp.PyArray_TYPE(x), x)
    if buf is _MISS:
        return _MISS
    h = _c_move(_MV_SCATTER, g, send, <cnp.ndarray>buf, cnp.PyArray_SIZE(<cnp.ndarray>buf), r, wait)
    if h is not None:
        if wait and _hot_set(_HOT_SCATTER, _H_SCATTER, _SCATTER, g, mesh, x, mesh_axes, scatter_axis, root, None,
                             (mesh_axes, scatter_axis, root), layout[1], cnp.PyArray_TYPE(x), cnp.PyArray_TYPE(x),
                             None):
            _HOT_SCATTER.count, _HOT_SCATTER.root = <int>cnp.PyArray_SIZE(<cnp.ndarray>buf), r
            _HOT_SCATTER.is_root = g.rank == r
            _HOT_SCATTER.ready = True
        return buf if wait else h
    if wait:
        g.comm.Scatter(send, buf, r)
        return buf
    return _handle(g.comm.Iscatter(send, buf, r), buf, send)


def scatter(x, mesh, mesh_axes=None, scatter_axis=0, root=0, *, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_SCATTER, x, mesh, mesh_axes, scatter_axis, root, None):
        r = _hot_run(_HOT_SCATTER, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_SCATTER, x, mesh, mesh_axes, scatter_axis, root)
    try:
        if not _check and type(x) is ndarray:
            r = _scatter(<cnp.ndarray>x, mesh, mesh_axes, scatter_axis, root, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_scatter(x, mesh, mesh_axes, scatter_axis, root, out=out, wait=wait)
    finally:
        _current = prev


cdef object _all_to_all(cnp.ndarray x, mesh, mesh_axes, split_axis, concat_axis, out, wait):
    if type(split_axis) is not int or type(concat_axis) is not int:
        return _MISS
    e = _recall(_LAST_ALL_TO_ALL, mesh, mesh_axes, split_axis, concat_axis, None, _dtype(x), x, True)
    if e is None:
        e = _entry(("all_to_all", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), _shape(x), _dtype(x),
                    split_axis, concat_axis), mesh)
        if e is None:
            return _MISS
        _note(_LAST_ALL_TO_ALL, e, mesh_axes, split_axis, concat_axis, None, _dtype(x), _shape(x))
    cdef Group g = <Group>(<tuple>e)[0]
    # layout: (sa, ca, bshape, bview, count, v, direct)
    layout = <tuple>(<tuple>e)[1]
    if layout is None or layout[0] != 0 or layout[1] != 0 or not _plain(x):
        return _MISS
    if layout[5] is not None:  # uneven pieces: MPI_Alltoallv of bytes, any byte order
        if out is not None:
            return _MISS
        buf = np.empty(<tuple>layout[2], _dtype(x))
        v = <tuple>layout[5]  # ((send counts, displs), (receive counts, displs))
        a = _v_of(layout, ((<tuple>v[0])[0], (<tuple>v[0])[1], (<tuple>v[1])[0], (<tuple>v[1])[1]))
        h = _c_vmove(_VM_ALLTOALLV, g, x, buf, a, 0, 0, wait)
        if h is None:
            return _MISS
        return buf if wait else h
    if layout[6] is not True:
        return _MISS
    buf = _result_buffer(out, <tuple>layout[2], cnp.PyArray_TYPE(x), x)
    if buf is _MISS:
        return _MISS
    h = _c_move(_MV_ALLTOALL, g, x, <cnp.ndarray>buf, cnp.PyArray_SIZE(x) // g.size, 0, wait)
    if h is not None:
        if wait and _hot_set(_HOT_ALL_TO_ALL, _H_ALLTOALL, _ALL_TO_ALL, g, mesh, x, mesh_axes, split_axis, concat_axis,
                             None, (mesh_axes, split_axis, concat_axis), layout[2], cnp.PyArray_TYPE(x),
                             cnp.PyArray_TYPE(x), None):
            _HOT_ALL_TO_ALL.count = <int>(cnp.PyArray_SIZE(x) // g.size)
            _HOT_ALL_TO_ALL.ready = True
        return buf if wait else h
    if wait:
        g.comm.Alltoall(x, buf)
        return buf
    return _handle(g.comm.Ialltoall(x, buf), buf, x)


def all_to_all(x, mesh, mesh_axes=None, split_axis=0, concat_axis=0, *, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_ALL_TO_ALL, x, mesh, mesh_axes, split_axis, concat_axis, None):
        r = _hot_run(_HOT_ALL_TO_ALL, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_ALL_TO_ALL, x, mesh, mesh_axes, split_axis, concat_axis)
    try:
        if not _check and type(x) is ndarray:
            r = _all_to_all(<cnp.ndarray>x, mesh, mesh_axes, split_axis, concat_axis, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_all_to_all(x, mesh, mesh_axes, split_axis, concat_axis, out=out, wait=wait)
    finally:
        _current = prev


cdef _Last _LAST_ALL_SLICE = _Last()  # entry: (weak reference to the mesh, index to apply)


def all_slice(x, mesh, mesh_axes=None, slice_axis=0):
    # no communication, so nothing for the watchdog; the plan: (weak reference to the mesh, index)
    global _hits
    cdef _Last last = _LAST_ALL_SLICE
    if type(x) is ndarray and type(slice_axis) is int:
        if (last.entry is not None and slice_axis is last.k1 and _same(mesh_axes, <PyObject *>last.k0)
                and _same_shape(<cnp.ndarray>x, last.shape) and (<tuple>last.entry)[0]() is mesh):
            _hits += 1
            return x[(<tuple>last.entry)[1]]
        try:
            e = _fast.get(("all_slice", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), _shape(x),
                           slice_axis))
        except TypeError:
            e = None
        if e is not None and (<tuple>e)[0]() is mesh:
            index = (<tuple>e)[1]
            if slice_axis == 0:  # x[a:b] is x[a:b, :, ...], and numpy takes one slice faster than a tuple
                index = (<tuple>index)[0]
            last.entry, last.k0, last.k1, last.shape = ((<tuple>e)[0], index), _canon(mesh_axes), slice_axis, _shape(x)
            _hits += 1
            return x[index]
    return _slow_all_slice(x, mesh, mesh_axes, slice_axis)


cdef object _shift(cnp.ndarray x, mesh, mesh_axes, shift_axis, offset, rotate, out, wait):
    e = _recall(_LAST_SHIFT, mesh, mesh_axes, shift_axis, offset, rotate, _dtype(x), x, False)
    if e is None:
        e = _entry(("shift", PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes), shift_axis, offset, rotate,
                    _dtype(x)), mesh)
        if e is None:
            return _MISS
        _note(_LAST_SHIFT, e, mesh_axes, shift_axis, offset, rotate, _dtype(x), None)
    cdef Group g = <Group>(<tuple>e)[0]
    # (g, src, dst, rotate, direct, case): case 0 is a send and a receive
    if (<tuple>e)[5] != 0 or (<tuple>e)[4] is not True or not _plain(x):
        return _MISS
    src, dst = (<tuple>e)[1], (<tuple>e)[2]
    res = _result_buffer(out, _shape(x), cnp.PyArray_TYPE(x), x)
    if res is _MISS:
        return _MISS
    h = _c_sendrecv(g, x, <cnp.ndarray>res, dst, src, _TAG, wait)
    if h is not None:
        if wait and _hot_set(_HOT_SHIFT, _H_SHIFT, _SHIFT, g, mesh, x, mesh_axes, shift_axis, offset, rotate,
                             (mesh_axes, shift_axis, offset, rotate), _shape(x), cnp.PyArray_TYPE(x),
                             cnp.PyArray_TYPE(x), None):
            _HOT_SHIFT.count, _HOT_SHIFT.dst, _HOT_SHIFT.src = <int>cnp.PyArray_SIZE(x), dst, src
            _HOT_SHIFT.ready = True
        return res if wait else h
    if wait:
        g.comm.Sendrecv(x, dst, _TAG, res, src, _TAG)
        return res
    return _handle([g.comm.Isend(x, dst, _TAG), g.comm.Irecv(res, src, _TAG)], res, x)


def shift(x, mesh, mesh_axes=None, shift_axis=0, offset=1, rotate=False, *, out=None, wait=True):
    global _current, _hits
    if wait is True and _hot_match(_HOT_SHIFT, x, mesh, mesh_axes, shift_axis, offset, rotate):
        r = _hot_run(_HOT_SHIFT, <cnp.ndarray>x, out)
        if r is not _MISS:
            return r
    prev = _current
    _current = (_SHIFT, x, mesh, mesh_axes, shift_axis, offset, rotate)
    try:
        if not _check and type(x) is ndarray:
            r = _shift(<cnp.ndarray>x, mesh, mesh_axes, shift_axis, offset, rotate, out, wait)
            if r is not _MISS:
                _hits += 1
                return r
        return _slow_shift(x, mesh, mesh_axes, shift_axis, offset, rotate, out=out, wait=wait)
    finally:
        _current = prev


# -- point to point ---------------------------------------------------------------------
cdef _Last _LAST_SEND = _Last(), _LAST_RECV = _Last()


cdef object _peer(_Last last, mesh, mesh_axes, peer, descr):
    """``(group, in-group rank of peer)`` if both were resolved before and ``descr`` travels
    bare, else None."""
    e = _recall(last, mesh, mesh_axes, peer, None, None, descr, None, False)
    if e is not None:
        return e
    if descr not in _direct:
        return None
    try:
        g = _groups.get((PyLong_FromVoidPtr(<void *>mesh), _canon(mesh_axes)))
        if g is None or (<Group>g).live is not mesh._groups or (<Group>g).mesh_ref() is not mesh:
            return None
        k = (<Group>g).roots.get(_canon(peer))
    except (TypeError, AttributeError):
        return None
    if k is None:
        return None
    e = (g, k)
    _note(last, e, mesh_axes, peer, None, None, descr, None)
    return e


def send(x, mesh, mesh_axes=None, destination=0, *, tag=_TAG, wait=True):
    global _current, _hits
    prev = _current
    _current = (_SEND, x, mesh, mesh_axes, destination)
    try:
        if not _check and type(x) is ndarray and _plain(<cnp.ndarray>x):
            p = _peer(_LAST_SEND, mesh, mesh_axes, destination, _dtype(x))
            if p is not None:
                _hits += 1
                h = _c_p2p(<Group>(<tuple>p)[0], <cnp.ndarray>x, (<tuple>p)[1], tag, True, wait)
                if h is not None:
                    return None if wait else h
                g = (<Group>(<tuple>p)[0]).comm
                if wait:
                    g.Send(x, (<tuple>p)[1], tag)
                    return None
                return _handle(g.Isend(x, (<tuple>p)[1], tag), None, x)
        return _slow_send(x, mesh, mesh_axes, destination, tag=tag, wait=wait)
    finally:
        _current = prev


def recv(like, mesh, mesh_axes=None, source=0, *, tag=_TAG, wait=True):
    global _current, _hits
    prev = _current
    _current = (_RECV, like, mesh, mesh_axes, source)
    try:
        if not _check and type(like) is ndarray:
            p = _peer(_LAST_RECV, mesh, mesh_axes, source, _dtype(like))
            if p is not None:
                buf = _like(<cnp.ndarray>like)
                _hits += 1
                h = _c_p2p(<Group>(<tuple>p)[0], <cnp.ndarray>buf, (<tuple>p)[1], tag, False, wait)
                if h is not None:
                    return buf if wait else h
                g = (<Group>(<tuple>p)[0]).comm
                if wait:
                    g.Recv(buf, (<tuple>p)[1], tag)
                    return buf
                return _handle(g.Irecv(buf, (<tuple>p)[1], tag), buf, None)
        return _slow_recv(like, mesh, mesh_axes, source, tag=tag, wait=wait)
    finally:
        _current = prev
