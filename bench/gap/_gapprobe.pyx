# cython: language_level=3, boundscheck=False, wraparound=False
"""Measurement only: the parts of an 8 B ``comm.Allreduce`` from Python, each timed in a loop.

Built against the mpi.h of the MPI family mpi4py loaded (see ``bench_gap.py``); not part
of meshrt.  Every function returns the seconds of ``iters`` calls after a barrier.
"""

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_ANY_CONTIGUOUS, PyBUF_FORMAT
from cpython.bytes cimport PyBytes_FromString
from mpi4py cimport MPI
from mpi4py cimport libmpi


def c_loop(MPI.Comm comm, double[::1] x, double[::1] y, int iters):
    """The MPI call alone, in a C loop without the GIL (what IMB-MPI1 does)."""
    cdef libmpi.MPI_Comm c = comm.ob_mpi
    cdef int i, n = <int>x.shape[0]
    cdef double t
    cdef double *px = &x[0]
    cdef double *py = &y[0]
    with nogil:
        libmpi.MPI_Barrier(c)
        t = libmpi.MPI_Wtime()
        for i in range(iters):
            libmpi.MPI_Allreduce(px, py, n, libmpi.MPI_DOUBLE, libmpi.MPI_SUM, c)
        t = libmpi.MPI_Wtime() - t
    return t


def gil_loop(MPI.Comm comm, double[::1] x, double[::1] y, int iters):
    """+ the GIL released and taken back around each call (as mpi4py does)."""
    cdef libmpi.MPI_Comm c = comm.ob_mpi
    cdef int i, n = <int>x.shape[0]
    cdef double t
    cdef double *px = &x[0]
    cdef double *py = &y[0]
    libmpi.MPI_Barrier(c)
    t = libmpi.MPI_Wtime()
    for i in range(iters):
        with nogil:
            libmpi.MPI_Allreduce(px, py, n, libmpi.MPI_DOUBLE, libmpi.MPI_SUM, c)
    return libmpi.MPI_Wtime() - t


def buf_loop(MPI.Comm comm, object x, object y, int iters):
    """+ both numpy buffers taken (PEP 3118, with format) and released each call."""
    cdef libmpi.MPI_Comm c = comm.ob_mpi
    cdef int i
    cdef double t
    cdef Py_buffer bx, by
    libmpi.MPI_Barrier(c)
    t = libmpi.MPI_Wtime()
    for i in range(iters):
        PyObject_GetBuffer(x, &bx, PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT)
        PyObject_GetBuffer(y, &by, PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT)
        with nogil:
            libmpi.MPI_Allreduce(bx.buf, by.buf, <int>(bx.len // 8), libmpi.MPI_DOUBLE, libmpi.MPI_SUM, c)
        PyBuffer_Release(&by)
        PyBuffer_Release(&bx)
    return libmpi.MPI_Wtime() - t


def dt_loop(MPI.Comm comm, object x, object y, dict typedict, MPI.Op op, int iters):
    """+ the datatype looked up from the buffer's format in mpi4py's table, and the op's handle."""
    cdef libmpi.MPI_Comm c = comm.ob_mpi
    cdef int i
    cdef double t
    cdef Py_buffer bx, by
    cdef libmpi.MPI_Datatype dt
    cdef libmpi.MPI_Op o
    libmpi.MPI_Barrier(c)
    t = libmpi.MPI_Wtime()
    for i in range(iters):
        PyObject_GetBuffer(x, &bx, PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT)
        PyObject_GetBuffer(y, &by, PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT)
        dt = (<MPI.Datatype>typedict[bx.format.decode()]).ob_mpi
        o = op.ob_mpi
        with nogil:
            libmpi.MPI_Allreduce(bx.buf, by.buf, <int>(bx.len // 8), dt, o, c)
        PyBuffer_Release(&by)
        PyBuffer_Release(&bx)
    return libmpi.MPI_Wtime() - t


def wtime():
    return libmpi.MPI_Wtime()


# An ABI-neutral call: MPI_Allreduce's address from the loaded library (ctypes), handles as
# integers from mpi4py; MPICH's ABI (Intel MPI too) has int handles, Open MPI's pointers.
ctypedef int (*allreduce_int_t)(const void *, void *, int, int, int, int) nogil
ctypedef int (*allreduce_ptr_t)(const void *, void *, int, void *, void *, void *) nogil


def fp_loop(size_t address, int handle_size, size_t comm, size_t dt, size_t op, object x, object y,
            int iters, bint per_call_empty=False):
    """MPI_Allreduce through its address, no mpi.h: the GIL released around each call, the
    data pointers taken from the arrays each call (``per_call_empty``: a new ``y`` each call)."""
    import numpy as np
    cdef int i, n = x.size
    cdef double t = 0
    cdef double[::1] vx = x
    cdef double[::1] vy
    cdef allreduce_int_t fi = <allreduce_int_t><void *>address
    cdef allreduce_ptr_t fp = <allreduce_ptr_t><void *>address
    cdef int ic = <int>comm, idt = <int>dt, iop = <int>op
    cdef void *pc = <void *>comm
    cdef void *pdt = <void *>dt
    cdef void *pop = <void *>op
    empty = np.empty
    t = wtime()
    for i in range(iters):
        if per_call_empty:
            y = empty(n)
        vy = y
        if handle_size == 4:
            with nogil:
                fi(&vx[0], &vy[0], n, idt, iop, ic)
        else:
            with nogil:
                fp(&vx[0], &vy[0], n, pdt, pop, pc)
    return wtime() - t
