# cython: language_level=3
"""N-d strided block copy: the runtime's pack/unpack/slicing loop.

    >>> import numpy as np
    >>> from meshrt._blockcopy import copy_block, extract, insert
    >>> a = np.arange(12.0).reshape(3, 4)
    >>> extract(a, (slice(None), slice(0, 1)))[:, 0]
    array([0., 4., 8.])

The copy works on raw bytes (itemsize and byte strides), so it is the same
code for every dtype. Source and destination memory must not overlap; if
they do, the result is undefined (use ``np.copyto`` with a temporary).
"""

cimport cython
cimport numpy as cnp
from libc.string cimport memcpy

import numpy as np

cnp.import_array()

__all__ = ["copy_block", "extract", "insert"]

cdef enum:
    MAXDIMS = 64

cdef extern from *:
    """
    #include <string.h>
    /* memcpy with a constant size compiles to plain loads and stores and is
       safe for the unaligned pointers numpy views can have. (Software
       prefetch for page-sized strides was measured: no gain, NTA hints
       lose 30%.) */
    #define MESHRT_LOOP(SZ)                                              \
        for (i = 0; i < n; i++) { memcpy(d, s, SZ); d += ds; s += ss; }  \
        return;
    static inline void meshrt_loop1(char *d, const char *s, Py_ssize_t n,
                                    Py_ssize_t ds, Py_ssize_t ss,
                                    Py_ssize_t itemsize)
    {
        Py_ssize_t i;
        switch (itemsize) {
        case 1: MESHRT_LOOP(1)
        case 2: MESHRT_LOOP(2)
        case 4: MESHRT_LOOP(4)
        case 8: MESHRT_LOOP(8)
        case 16: MESHRT_LOOP(16)
        case 24: MESHRT_LOOP(24)
        case 32: MESHRT_LOOP(32)
        default: MESHRT_LOOP(itemsize)
        }
    }
    """
    void meshrt_loop1(char* d, const char* s, Py_ssize_t n, Py_ssize_t ds,
                      Py_ssize_t ss, Py_ssize_t itemsize) noexcept nogil

cdef enum:
    # Contiguous rows up to this many bytes are copied as one wide element
    # of a strided loop rather than by a libc memcpy call per row, whose
    # fixed cost dominates short runs.
    SHORT_RUN = 64


@cython.boundscheck(False)
@cython.wraparound(False)
cdef int copy_strided(char* dst, const char* src, int ndim,
                      const Py_ssize_t* shape,
                      const Py_ssize_t* dst_strides,
                      const Py_ssize_t* src_strides,
                      Py_ssize_t itemsize) noexcept nogil:
    cdef Py_ssize_t n[MAXDIMS]
    cdef Py_ssize_t ds[MAXDIMS]
    cdef Py_ssize_t ss[MAXDIMS]
    cdef Py_ssize_t idx[MAXDIMS]
    cdef Py_ssize_t tn, tds, tss
    cdef int i, j, nd = 0, outer
    cdef char* d = dst
    cdef const char* s = src

    if ndim < 0 or ndim > MAXDIMS:
        return -1
    if itemsize <= 0:
        return 0
    # Normalize: drop length-1 dims, stop on empty, and turn dims that run
    # backwards in both arrays forwards (the copy order is free).
    for i in range(ndim):
        if shape[i] == 0:
            return 0
        if shape[i] == 1:
            continue
        tds = dst_strides[i]
        tss = src_strides[i]
        if tds < 0 and tss < 0:
            d += (shape[i] - 1) * tds
            s += (shape[i] - 1) * tss
            tds = -tds
            tss = -tss
        n[nd] = shape[i]
        ds[nd] = tds
        ss[nd] = tss
        nd += 1
    # Order dims by decreasing destination stride (stable insertion sort),
    # so writes walk memory forwards and contiguous dims become adjacent.
    for i in range(1, nd):
        tn = n[i]
        tds = ds[i]
        tss = ss[i]
        j = i - 1
        while j >= 0 and (ds[j] if ds[j] >= 0 else -ds[j]) < (tds if tds >= 0 else -tds):
            n[j + 1] = n[j]
            ds[j + 1] = ds[j]
            ss[j + 1] = ss[j]
            j -= 1
        n[j + 1] = tn
        ds[j + 1] = tds
        ss[j + 1] = tss
    # Merge dim i into dim i+1 where both arrays step over it as one run.
    j = 0
    for i in range(1, nd):
        if ds[j] == n[i] * ds[i] and ss[j] == n[i] * ss[i]:
            n[i] *= n[j]
        else:
            j += 1
        n[j] = n[i]
        ds[j] = ds[i]
        ss[j] = ss[i]
    nd = j + 1 if nd > 0 else 0

    if nd == 0:
        memcpy(d, s, itemsize)
        return 0

    # The innermost dim is either one contiguous run in both arrays
    # (memcpy) or a strided element loop.
    cdef bint run = ds[nd - 1] == itemsize and ss[nd - 1] == itemsize
    cdef Py_ssize_t runbytes = n[nd - 1] * itemsize
    cdef Py_ssize_t inner_n = n[nd - 1]
    cdef Py_ssize_t inner_ds = ds[nd - 1]
    cdef Py_ssize_t inner_ss = ss[nd - 1]
    if run and runbytes <= SHORT_RUN and nd >= 2:
        inner_n = n[nd - 2]
        inner_ds = ds[nd - 2]
        inner_ss = ss[nd - 2]
        itemsize = runbytes
        nd -= 1
        run = False
    outer = nd - 1
    for i in range(outer):
        idx[i] = 0
    while True:
        if run:
            memcpy(d, s, runbytes)
        else:
            meshrt_loop1(d, s, inner_n, inner_ds, inner_ss, itemsize)
        # Odometer over the outer dims, last fastest.
        i = outer - 1
        while i >= 0:
            idx[i] += 1
            d += ds[i]
            s += ss[i]
            if idx[i] < n[i]:
                break
            d -= n[i] * ds[i]
            s -= n[i] * ss[i]
            idx[i] = 0
            i -= 1
        if i < 0:
            return 0


cdef inline int _check(object dst, object src) except -1:
    cdef cnp.ndarray d = <cnp.ndarray>dst
    cdef cnp.ndarray s = <cnp.ndarray>src
    cdef int nd = cnp.PyArray_NDIM(d)
    cdef int i
    if <object>cnp.PyArray_DESCR(d) is not <object>cnp.PyArray_DESCR(s):
        if dst.dtype != src.dtype:
            raise ValueError(
                f"copy_block: dtype of dst is {dst.dtype} but dtype of src is "
                f"{src.dtype}; they must be identical")
    if dst.dtype.hasobject:
        raise ValueError(
            f"copy_block: dtype {dst.dtype} holds Python objects; only "
            f"plain-data dtypes can be copied")
    if nd != cnp.PyArray_NDIM(s):
        raise ValueError(
            f"copy_block: shape of dst is {dst.shape} but shape of src is "
            f"{src.shape}; they must be identical")
    for i in range(nd):
        if cnp.PyArray_DIMS(d)[i] != cnp.PyArray_DIMS(s)[i]:
            raise ValueError(
                f"copy_block: shape of dst is {dst.shape} but shape of src is "
                f"{src.shape}; they must be identical")
    if not cnp.PyArray_ISWRITEABLE(d):
        raise ValueError(
            f"copy_block: dst (shape {dst.shape}, dtype {dst.dtype}) is not "
            f"writeable")
    return 0


def copy_block(dst, src):
    """Copy ``src`` into ``dst`` (numpy arrays of one shape and dtype).

    Any strides, negative included, and any number of dims. The two arrays
    must not share memory (overlap gives undefined results).

        >>> a = np.zeros((4, 4)); copy_block(a[:, :1], np.ones((4, 1)))
    """
    if type(dst) is not np.ndarray and not isinstance(dst, np.ndarray):
        raise ValueError(f"copy_block: dst must be a numpy.ndarray, got {type(dst).__name__}")
    if type(src) is not np.ndarray and not isinstance(src, np.ndarray):
        raise ValueError(f"copy_block: src must be a numpy.ndarray, got {type(src).__name__}")
    cdef cnp.ndarray d = <cnp.ndarray>dst
    cdef cnp.ndarray s = <cnp.ndarray>src
    _check(dst, src)
    cdef char* dp = <char*>cnp.PyArray_DATA(d)
    cdef const char* sp = <const char*>cnp.PyArray_DATA(s)
    cdef int nd = cnp.PyArray_NDIM(d)
    cdef const Py_ssize_t* shape = <const Py_ssize_t*>cnp.PyArray_DIMS(d)
    cdef const Py_ssize_t* dst_strides = <const Py_ssize_t*>cnp.PyArray_STRIDES(d)
    cdef const Py_ssize_t* src_strides = <const Py_ssize_t*>cnp.PyArray_STRIDES(s)
    cdef Py_ssize_t itemsize = cnp.PyArray_ITEMSIZE(d)
    cdef int rc
    with nogil:
        rc = copy_strided(dp, sp, nd, shape, dst_strides, src_strides, itemsize)
    if rc != 0:
        raise ValueError(f"copy_block: ndim is {nd}, at most {MAXDIMS} is supported")


def _check_slices(arr, slices, fname):
    if not isinstance(slices, tuple):
        slices = (slices,)
    for k, sl in enumerate(slices):
        if not isinstance(sl, slice):
            raise ValueError(
                f"{fname}: slices[{k}] is {sl!r}; only basic slices are allowed")
    if len(slices) > arr.ndim:
        raise ValueError(
            f"{fname}: {len(slices)} slices given for an array of ndim "
            f"{arr.ndim}")
    return slices


def extract(global_arr, slices, out=None):
    """Copy ``global_arr[slices]`` into a new C-contiguous array, or ``out``.

        >>> extract(np.arange(10), (slice(8, 2, -2),))
        array([8, 6, 4])
    """
    slices = _check_slices(global_arr, slices, "extract")
    # the trailing Ellipsis keeps a 0-d result an array view, not a scalar
    view = global_arr[slices + (Ellipsis,)]
    if out is None:
        out = np.empty(view.shape, dtype=view.dtype)
    copy_block(out, view)
    return out


def insert(global_arr, slices, block):
    """Write ``block`` into ``global_arr[slices]``.

        >>> a = np.zeros(6); insert(a, (slice(1, None, 2),), np.ones(3)); a
        array([0., 1., 0., 1., 0., 1.])
    """
    slices = _check_slices(global_arr, slices, "insert")
    copy_block(global_arr[slices + (Ellipsis,)], block)
