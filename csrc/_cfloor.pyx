# cython: language_level=3, boundscheck=False, wraparound=False
"""The C floor of ``meshrt bench``: a compiled loop of one MPI call on fixed buffers, as
IMB-MPI1 runs it (``meshrt bench OP --compare c``, and where no IMB-MPI1 is found).

The call goes through the address of the MPI function in the library mpi4py loaded with
mpi4py's handles (``_mpicall.h``, as the collectives' compiled path), so one build serves
every MPI ABI and needs no ``mpi.h``; the GIL is released for the whole loop, the clock is
``clock_gettime(CLOCK_MONOTONIC)``.  ``sync``: each call timed alone with an untimed barrier
after it (IMB-MPI1's default ``-sync 1``, OSU's method); else a barrier, then the loop timed
as a whole (IMB's ``-sync 0``).

    >>> available() in (True, False)
    True
    >>> sorted(KINDS)[:3]
    ['all_gather', 'all_reduce', 'all_to_all']
"""

cimport numpy as cnp

cdef extern from "<time.h>" nogil:
    ctypedef long time_t
    cdef struct timespec:
        time_t tv_sec
        long tv_nsec
    int clock_gettime(int clk, timespec *t)
    int CLOCK_MONOTONIC

from mpi4py import MPI

cnp.import_array()

include "_mpicall.pxi"

__all__ = ["available", "run", "KINDS"]

#: the calls `run` times (meshrt bench's op names)
KINDS = {"all_reduce": 0, "reduce": 1, "reduce_scatter": 2, "broadcast": 3, "all_gather": 4, "gather": 5,
         "scatter": 6, "all_to_all": 7, "shift": 8, "send_recv": 9}

cdef int _found = -1


def available():
    """Whether the MPI library's functions were found (mpi4py loaded, handles of a known ABI)."""
    global _found
    if _found < 0:
        _found = _mpicall_init()
    return _found == 1


cdef inline double _now() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return t.tv_sec + 1e-9 * t.tv_nsec


cdef int _call(int kind, const void *s, void *r, int n, size_t dt, size_t op, int root, int dst, int src,
               size_t c) noexcept nogil:
    cdef int err
    if kind == 0:
        return meshrt_allreduce(s, r, n, dt, op, c)
    if kind == 1:
        return meshrt_reduce(s, r, n, dt, op, root, c)
    if kind == 2:
        return meshrt_reduce_scatter_block(s, r, n, dt, op, c)
    if kind == 3:
        return meshrt_bcast(<void *>s, n, dt, root, c)
    if kind == 4:
        return meshrt_allgather(s, n, r, n, dt, c)
    if kind == 5:
        return meshrt_gather(s, n, r, n, dt, root, c)
    if kind == 6:
        return meshrt_scatter(s, n, r, n, dt, root, c)
    if kind == 7:
        return meshrt_alltoall(s, n, r, n, dt, c)
    if kind == 8:
        return meshrt_sendrecv(s, n, dst, 0x7B3, r, n, src, 0x7B3, dt, c)
    # 9: one round trip with dst (root != 0: this side sends first); dst < 0 idles
    if dst < 0:
        return 0
    if root:
        err = meshrt_send(s, n, dt, dst, 0x7B4, c)
        return err if err else meshrt_recv(r, n, dt, dst, 0x7B4, c)
    err = meshrt_recv(r, n, dt, dst, 0x7B4, c)
    return err if err else meshrt_send(s, n, dt, dst, 0x7B4, c)


cdef inline void *_data(object a):
    return NULL if a is None else cnp.PyArray_DATA(<cnp.ndarray>a)


def run(str op, comm, send, recv, size_t datatype, size_t reduce_op, long count, int root=0, int dst=-1,
        int src=-1, int warmup=0, int iters=1, bint sync=True):
    """Seconds of ``iters`` timed calls of ``op`` on ``comm`` after ``warmup`` untimed ones
    (this process's total; divide by ``iters``).

    ``send``/``recv`` are C-contiguous numpy arrays or None (MPI's NULL: a gather's receive
    buffer off the root), reused by every call; ``datatype``/``reduce_op`` are mpi4py handles
    (``MPI._handleof``), ``count`` the count the call takes (the piece, for the gathers,
    scatter, all_to_all and reduce_scatter).  ``broadcast`` sends from ``send`` on the root
    and receives into it elsewhere; ``shift`` sends to ``dst`` and receives from ``src``;
    ``send_recv`` is a round trip with ``dst`` (``root`` != 0: this side sends first).
    """
    cdef int kind = KINDS[op]
    cdef size_t c = <size_t>MPI._handleof(comm)
    cdef const void *s = _data(send)
    cdef void *r = _data(recv)
    cdef int n = <int>count, err = 0, i
    cdef double total = 0.0, t0
    if not available():
        raise RuntimeError("the MPI library's functions were not found (meshrt._cfloor.available() is False)")
    if count < 0 or count > 0x7FFFFFFF:
        raise ValueError(f"count: {count} does not fit MPI's int")
    with nogil:
        for i in range(warmup):
            err = _call(kind, s, r, n, datatype, reduce_op, root, dst, src, c)
            if err:
                break
            err = meshrt_barrier(c)
            if err:
                break
        if not err and sync:
            for i in range(iters):
                t0 = _now()
                err = _call(kind, s, r, n, datatype, reduce_op, root, dst, src, c)
                total += _now() - t0
                if err:
                    break
                err = meshrt_barrier(c)
                if err:
                    break
        elif not err:
            err = meshrt_barrier(c)
            t0 = _now()
            for i in range(iters):
                err = _call(kind, s, r, n, datatype, reduce_op, root, dst, src, c)
                if err:
                    break
            total = _now() - t0
    if err:
        raise MPI.Exception(err)
    return total


def time_calls(fn, comm, int warmup=0, int iters=1, bint sync=True):
    """Seconds of ``iters`` timed calls of the Python callable ``fn`` after ``warmup`` untimed
    ones, timed as `run` times the MPI call itself: the clock read in C right around each call
    (``sync``), or around the whole loop after a barrier; the barriers on ``comm`` from C too.
    So a Python call's column carries the call, not the timing loop's own Python work.

        >>> from mpi4py import MPI
        >>> time_calls(lambda: None, MPI.COMM_SELF, 1, 3) >= 0
        True
    """
    cdef size_t c = <size_t>MPI._handleof(comm)
    cdef int err = 0, i
    cdef double total = 0.0, t0
    if not available():
        raise RuntimeError("the MPI library's functions were not found (meshrt._cfloor.available() is False)")
    for i in range(warmup):
        fn()
        with nogil:
            err = meshrt_barrier(c)
        if err:
            raise MPI.Exception(err)
    if sync:
        for i in range(iters):
            t0 = _now()
            fn()
            total += _now() - t0
            with nogil:
                err = meshrt_barrier(c)
            if err:
                raise MPI.Exception(err)
        return total
    with nogil:
        err = meshrt_barrier(c)
    if err:
        raise MPI.Exception(err)
    t0 = _now()
    for i in range(iters):
        fn()
    return _now() - t0
