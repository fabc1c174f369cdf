# cython: language_level=3
"""A fixed table of N-d block copies run in one nogil call: halo pack/unpack.

    >>> import numpy as np
    >>> from meshrt._halo import CopyTable
    >>> a = np.arange(12.0).reshape(3, 4); buf = np.empty((3, 1))
    >>> t = CopyTable([(buf, a[:, 1:2])]); t.run(); buf[:, 0]
    array([1., 5., 9.])

The table stores raw pointers and byte strides, so it keeps references to
the arrays it was built from; a halo exchange builds one table per direction
of copy (pack, unpack, local) once and runs it on every update, so the hot
path is one Python call per table instead of one per face.
"""

cimport cython
from cpython.mem cimport PyMem_Malloc, PyMem_Free
cimport numpy as cnp

from meshrt._blockcopy cimport copy_strided

import numpy as np

cnp.import_array()

__all__ = ["CopyTable"]

# Row layout: dst, src, ndim, itemsize, shape[nd], dst_strides[nd], src_strides[nd]
cdef enum:
    HEAD = 4


cdef class CopyTable:
    """Copies ``dst <- src`` for every ``(dst, src)`` pair, in order.

    Every pair must have one shape and dtype; regions must not overlap.
    """

    cdef Py_ssize_t* rows
    cdef Py_ssize_t n
    cdef Py_ssize_t width
    cdef Py_ssize_t nbytes
    cdef object keep

    def __cinit__(self, pairs):
        cdef cnp.ndarray d, s
        cdef Py_ssize_t i, j, nd, maxnd = 0
        cdef Py_ssize_t* row
        pairs = [(dst, src) for dst, src in pairs]
        for k, (dst, src) in enumerate(pairs):
            if not isinstance(dst, np.ndarray) or not isinstance(src, np.ndarray):
                raise ValueError(f"CopyTable: pair {k} is not two numpy arrays")
            if dst.shape != src.shape or dst.dtype != src.dtype:
                raise ValueError(
                    f"CopyTable: pair {k} has dst {dst.shape} {dst.dtype} but src "
                    f"{src.shape} {src.dtype}; they must be identical")
            if dst.dtype.hasobject:
                raise ValueError(f"CopyTable: dtype {dst.dtype} holds Python objects")
            if not dst.flags.writeable:
                raise ValueError(f"CopyTable: pair {k}: dst is not writeable")
            maxnd = max(maxnd, dst.ndim)
        self.n = len(pairs)
        self.width = HEAD + 3 * maxnd
        self.nbytes = 0
        self.keep = pairs
        self.rows = <Py_ssize_t*>PyMem_Malloc(max(1, self.n * self.width) * sizeof(Py_ssize_t))
        if self.rows == NULL:
            raise MemoryError()
        for i in range(self.n):
            d = <cnp.ndarray>pairs[i][0]
            s = <cnp.ndarray>pairs[i][1]
            nd = cnp.PyArray_NDIM(d)
            row = self.rows + i * self.width
            row[0] = <Py_ssize_t>cnp.PyArray_DATA(d)
            row[1] = <Py_ssize_t>cnp.PyArray_DATA(s)
            row[2] = nd
            row[3] = cnp.PyArray_ITEMSIZE(d)
            for j in range(nd):
                row[HEAD + j] = cnp.PyArray_DIMS(d)[j]
                row[HEAD + nd + j] = cnp.PyArray_STRIDES(d)[j]
                row[HEAD + 2 * nd + j] = cnp.PyArray_STRIDES(s)[j]
            self.nbytes += d.nbytes

    def __dealloc__(self):
        PyMem_Free(self.rows)

    def __len__(self):
        return self.n

    @property
    def nbytes(self):
        """Bytes moved by one `run`."""
        return self.nbytes

    @cython.boundscheck(False)
    @cython.wraparound(False)
    def run(self):
        """Run every copy of the table (GIL released)."""
        cdef Py_ssize_t i, nd
        cdef Py_ssize_t* row
        with nogil:
            for i in range(self.n):
                row = self.rows + i * self.width
                nd = row[2]
                copy_strided(<char*>row[0], <const char*>row[1], <int>nd,
                             row + HEAD, row + HEAD + nd, row + HEAD + 2 * nd, row[3])
