# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""A register interpreter for fused elementwise expressions: the fused kernels' work without a compile.

``meshrt.tensor.fuse`` compiles an expression signature into a short register
program once (in Python); `Program` runs it over exactly the arguments of the
generated Numba kernel ``fused(boxes, sel, offs, out, oo, a0, p0, ..., c0, ...)``.
Per box and per outer index, the innermost run is cut into chunks of `CHUNK`
elements; each instruction is one tight C loop over a chunk (the GIL released),
reading the operands in place where their last dim is contiguous. Every
operation is the IEEE operation of one dtype (float64 or float32), in the
expression's order, so the bits equal the Numba kernel's and numpy's.

    >>> import numpy as np
    >>> from meshrt._fusevm import Program
    >>> code = np.array([[0, 0, 0, 0], [0, 1, 1, 0], [2, 2, 0, 1]], np.int64)  # r2 = leaf0 + leaf1
    >>> p = Program(code, 3, np.array([0, 0], np.int64), 1, 0, 1, "float64")
    >>> x = np.arange(5.0); out = np.zeros(5)
    >>> p(np.array([[0, 4]], np.int64), np.zeros((1, 1), np.int8), np.array([[[0], [1]]], np.int64),
    ...   out, np.zeros(1, np.int64), x, x)
    >>> out
    array([1., 3., 5., 7., 0.])
"""

cimport cython
cimport numpy as cnp
from cython cimport floating
from libc.math cimport sqrt, sqrtf, fabs, fabsf
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

import numpy as np

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define FUSEVM_PREFETCH(p, rw) __builtin_prefetch((p), (rw), 3)
    #else
    #define FUSEVM_PREFETCH(p, rw) ((void)0)
    #endif
    """
    void FUSEVM_PREFETCH(const void* p, int rw) nogil

cnp.import_array()

__all__ = ["Program", "CHUNK", "OPS"]

# opcodes: (dst, a, b) operands are register numbers; LEAF's a is the leaf, SCALAR's the scalar argument
cdef enum:
    LEAF = 0
    SCALAR = 1
    ADD = 2
    SUB = 3
    MUL = 4
    DIV = 5
    NEG = 6
    SQUARE = 7
    SQRT = 8
    ABS = 9

OPS = {"leaf": LEAF, "scalar": SCALAR, "add": ADD, "subtract": SUB, "multiply": MUL, "divide": DIV,
       "negative": NEG, "square": SQUARE, "sqrt": SQRT, "absolute": ABS}

# elements per chunk: every temporary register of a chunk stays in the L1 cache
DEF _CHUNK = 512
CHUNK = _CHUNK
DEF MAXD = 32
# registers this many elements apart: not a multiple of 4 KiB, so a chunk's loads and stores do not
# alias in the CPU's store forwarding (4K aliasing: 2-3x slower on a 4-operand stencil, measured)
DEF _RSTRIDE = _CHUNK + 40


cdef inline void _gather(floating* dst, const char* src, Py_ssize_t stride, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        dst[i] = (<const floating*>(src + i * stride))[0]


cdef inline void _scatter(char* dst, Py_ssize_t stride, const floating* src, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(n):
        (<floating*>(dst + i * stride))[0] = src[i]


cdef void _op(int code, floating* d, const floating* a, const floating* b, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i
    if code == ADD:
        for i in range(n):
            d[i] = a[i] + b[i]
    elif code == SUB:
        for i in range(n):
            d[i] = a[i] - b[i]
    elif code == MUL:
        for i in range(n):
            d[i] = a[i] * b[i]
    elif code == DIV:
        for i in range(n):
            d[i] = a[i] / b[i]
    elif code == NEG:
        for i in range(n):
            d[i] = -a[i]
    elif code == SQUARE:
        for i in range(n):
            d[i] = a[i] * a[i]
    elif code == SQRT:
        if floating is double:
            for i in range(n):
                d[i] = sqrt(a[i])
        else:
            for i in range(n):
                d[i] = sqrtf(a[i])
    elif code == ABS:
        if floating is double:
            for i in range(n):
                d[i] = fabs(a[i])
        else:
            for i in range(n):
                d[i] = fabsf(a[i])


cdef void _run(floating* dummy, const cnp.int64_t* code, Py_ssize_t ninstr, Py_ssize_t nreg,
               const cnp.int64_t* leaf_arr, Py_ssize_t nleaf, Py_ssize_t ndim,
               const cnp.int64_t* boxes, Py_ssize_t nbox, const cnp.int8_t* sel, Py_ssize_t narr,
               const cnp.int64_t* offs, char* out, const Py_ssize_t* ostr, const cnp.int64_t* oo,
               char** abase, char** pbase, const Py_ssize_t* astr, const Py_ssize_t* pstr,
               const floating* scal, floating* bufs, floating** reg, const char** lptr,
               Py_ssize_t* lstr, Py_ssize_t* idx) noexcept nogil:
    """Run the program over every box (``bufs``: ``nreg`` chunks; ``reg``, ``lptr``, ``lstr``, ``idx``: scratch)."""
    cdef Py_ssize_t b, k, d, a, i, j, t, n, m, lo, hi, inner, ostride, o_in
    cdef Py_ssize_t last = ndim - 1
    cdef const Py_ssize_t* st
    cdef char* base
    cdef char* optr
    cdef const cnp.int64_t* bx
    cdef const cnp.int64_t* ins
    cdef bint ocontig = ostr[last] == sizeof(floating)
    cdef int op
    cdef floating* dst
    # scalars: broadcast once into their registers (constant over the whole call)
    for i in range(ninstr):
        ins = code + 4 * i
        if ins[0] == SCALAR:
            dst = bufs + ins[1] * _RSTRIDE
            for j in range(_CHUNK):
                dst[j] = scal[ins[2]]
    for b in range(nbox):
        bx = boxes + b * 2 * ndim
        for d in range(ndim):
            if bx[2 * d + 1] <= bx[2 * d]:
                break
        else:
            # each leaf's address at the box's first cell and its strides (its array or the padded copy)
            for k in range(nleaf):
                a = leaf_arr[k]
                if sel[b * narr + a]:
                    base, st = pbase[a], pstr + a * MAXD
                else:
                    base, st = abase[a], astr + a * MAXD
                for d in range(ndim):
                    base += (bx[2 * d] + offs[(b * nleaf + k) * ndim + d]) * st[d]
                    lstr[k * MAXD + d] = st[d]
                lptr[k] = base
            optr = out
            for d in range(ndim):
                optr += (bx[2 * d] + oo[d]) * ostr[d]
            for d in range(last):
                idx[d] = 0
            lo, hi = bx[2 * last], bx[2 * last + 1]
            inner = hi - lo
            ostride = ostr[last]
            while True:
                # one row: the innermost run, chunk by chunk
                o_in = 0
                for d in range(last):
                    o_in += idx[d] * ostr[d]
                t = 0
                while t < inner:
                    n = inner - t if inner - t < _CHUNK else _CHUNK
                    # the next chunk of every operand and of the output asked for now: each instruction's
                    # loop streams one operand, which alone leaves the memory bus idle most of the time
                    # (2x slower than the Numba kernel's one loop over all operands, measured)
                    m = inner - t - n if inner - t - n < _CHUNK else _CHUNK
                    if m > 0:
                        for k in range(nleaf):
                            if lstr[k * MAXD + last] == sizeof(floating):
                                base = <char*>lptr[k]
                                for d in range(last):
                                    base += idx[d] * lstr[k * MAXD + d]
                                base += (t + n) * sizeof(floating)
                                for j in range(0, m * sizeof(floating), 64):
                                    FUSEVM_PREFETCH(base + j, 0)
                        if ocontig:
                            base = optr + o_in + (t + n) * sizeof(floating)
                            for j in range(0, m * sizeof(floating), 64):
                                FUSEVM_PREFETCH(base + j, 1)
                    for i in range(ninstr):
                        ins = code + 4 * i
                        op = ins[0]
                        if op == LEAF:
                            k = ins[2]
                            base = <char*>lptr[k]
                            for d in range(last):
                                base += idx[d] * lstr[k * MAXD + d]
                            if lstr[k * MAXD + last] == sizeof(floating):
                                reg[ins[1]] = <floating*>base + t
                            else:
                                reg[ins[1]] = bufs + ins[1] * _RSTRIDE
                                _gather(reg[ins[1]], base + t * lstr[k * MAXD + last],
                                        lstr[k * MAXD + last], n)
                        elif op == SCALAR:
                            reg[ins[1]] = bufs + ins[1] * _RSTRIDE
                        else:
                            if i == ninstr - 1 and ocontig:  # the result straight into the output
                                dst = <floating*>(optr + o_in) + t
                            else:
                                dst = bufs + ins[1] * _RSTRIDE
                            _op(op, dst, reg[ins[2]], reg[ins[3]], n)
                            reg[ins[1]] = dst
                    dst = reg[code[4 * (ninstr - 1) + 1]]
                    if not (ocontig and code[4 * (ninstr - 1)] > SCALAR):
                        _scatter(optr + o_in + t * ostride, ostride, dst, n)
                    t += n
                # the next outer index (an odometer over the box's outer dims)
                d = last - 1
                while d >= 0:
                    idx[d] += 1
                    if idx[d] < bx[2 * d + 1] - bx[2 * d]:
                        break
                    idx[d] = 0
                    d -= 1
                if d < 0:
                    break


cdef class Program:
    """A compiled register program for one fused expression (see the module's docstring).

    ``code``: ``[ninstr, 4]`` int64 rows ``(op, dst, a, b)`` in evaluation order, the last one computing
    the result; ``nreg`` registers; ``leaf_arr[k]``: the array argument leaf ``k`` reads; ``narr`` arrays
    and ``nsc`` scalar arguments; ``ndim``; ``dtype`` ("float64" or "float32") of every array, the
    output, every scalar and every operation.
    """

    cdef object code_arr, leaf_arr_arr
    cdef const cnp.int64_t* code
    cdef const cnp.int64_t* leaf_arr
    cdef Py_ssize_t ninstr, nreg, nleaf, narr, nsc, ndim
    cdef int typenum
    cdef Py_ssize_t itemsize

    def __init__(self, code, Py_ssize_t nreg, leaf_arr, Py_ssize_t narr, Py_ssize_t nsc, Py_ssize_t ndim,
                 str dtype):
        self.code_arr = np.ascontiguousarray(code, np.int64)
        self.leaf_arr_arr = np.ascontiguousarray(leaf_arr, np.int64)
        if self.code_arr.ndim != 2 or self.code_arr.shape[1] != 4 or self.code_arr.shape[0] < 1:
            raise ValueError(f"code: expected a [n >= 1, 4] table, got shape {self.code_arr.shape}")
        if not 1 <= ndim <= MAXD:
            raise ValueError(f"ndim: expected 1..{MAXD}, got {ndim}")
        if dtype not in ("float64", "float32"):
            raise ValueError(f"dtype: expected 'float64' or 'float32', got {dtype!r}")
        c = self.code_arr
        for row in c.tolist():
            if not 0 <= row[0] <= ABS or not 0 <= row[1] < nreg:
                raise ValueError(f"code: bad instruction {row}")
            if row[0] == LEAF and not 0 <= row[2] < self.leaf_arr_arr.shape[0]:
                raise ValueError(f"code: leaf {row[2]} out of range")
            if row[0] == SCALAR and not 0 <= row[2] < nsc:
                raise ValueError(f"code: scalar {row[2]} out of range")
            if row[0] > SCALAR and not (0 <= row[2] < nreg and 0 <= row[3] < nreg):
                raise ValueError(f"code: bad instruction {row}")
        self.code = <const cnp.int64_t*>cnp.PyArray_DATA(self.code_arr)
        self.leaf_arr = <const cnp.int64_t*>cnp.PyArray_DATA(self.leaf_arr_arr)
        self.ninstr, self.nreg = c.shape[0], nreg
        self.nleaf = self.leaf_arr_arr.shape[0]
        self.narr, self.nsc, self.ndim = narr, nsc, ndim
        self.typenum = cnp.NPY_DOUBLE if dtype == "float64" else cnp.NPY_FLOAT
        self.itemsize = 8 if dtype == "float64" else 4

    def __call__(self, *args):
        cdef Py_ssize_t narr = self.narr, nd = self.ndim, i, d, nbox
        if len(args) != 5 + 2 * narr + self.nsc:
            raise TypeError(f"fused program: expected {5 + 2 * narr + self.nsc} arguments, got {len(args)}")
        cdef cnp.ndarray boxes = _int_array(args[0], cnp.NPY_INT64, 2, "boxes")
        cdef cnp.ndarray sel = _int_array(args[1], cnp.NPY_INT8, 2, "sel")
        cdef cnp.ndarray offs = _int_array(args[2], cnp.NPY_INT64, 3, "offs")
        cdef cnp.ndarray oo = _int_array(args[4], cnp.NPY_INT64, 1, "oo")
        nbox = cnp.PyArray_DIM(boxes, 0)
        if (cnp.PyArray_DIM(boxes, 1) != 2 * nd or cnp.PyArray_DIM(sel, 0) != nbox
                or cnp.PyArray_DIM(sel, 1) != narr or cnp.PyArray_DIM(offs, 0) != nbox
                or cnp.PyArray_DIM(offs, 1) != self.nleaf or cnp.PyArray_DIM(offs, 2) != nd
                or cnp.PyArray_DIM(oo, 0) != nd):
            raise ValueError("fused program: boxes, sel, offs or oo of the wrong shape")
        cdef cnp.ndarray out = self._array(args[3], "out", True)
        cdef Py_ssize_t* strides = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * MAXD * (2 * narr + 1 + self.nleaf + 1))
        cdef char** ptrs = <char**>malloc(sizeof(char*) * (2 * narr + self.nleaf + self.nreg + 1))
        cdef char* scal = <char*>malloc(self.itemsize * (self.nsc + 1))
        cdef char* bufs = <char*>malloc(self.itemsize * _RSTRIDE * self.nreg + 64)
        cdef cnp.ndarray x
        if not (strides and ptrs and scal and bufs):
            free(strides); free(ptrs); free(scal); free(bufs)
            raise MemoryError()
        try:
            for d in range(nd):
                strides[d] = cnp.PyArray_STRIDE(out, d)
            for i in range(2 * narr):
                x = self._array(args[5 + i], "array", False)
                ptrs[i] = <char*>cnp.PyArray_DATA(x)
                for d in range(nd):
                    strides[MAXD * (1 + i) + d] = cnp.PyArray_STRIDE(x, d)
            for i in range(self.nsc):
                v = args[5 + 2 * narr + i]
                if self.typenum == cnp.NPY_DOUBLE:
                    (<double*>scal)[i] = <double>v
                else:
                    (<float*>scal)[i] = <float>v
            # arrays at even argument positions, padded copies at odd ones: split into two tables
            self._go(boxes, nbox, sel, offs, out, strides, oo, ptrs, scal, bufs)
        finally:
            free(strides); free(ptrs); free(scal); free(bufs)

    cdef _go(self, cnp.ndarray boxes, Py_ssize_t nbox, cnp.ndarray sel, cnp.ndarray offs, cnp.ndarray out,
             Py_ssize_t* strides, cnp.ndarray oo, char** ptrs, char* scal, char* bufs):
        cdef Py_ssize_t narr = self.narr, i, d, nl = self.nleaf
        cdef Py_ssize_t* pstr = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * MAXD * (narr + nl + 1) + 8)
        cdef char** abase = <char**>malloc(sizeof(char*) * (2 * narr + 1))
        cdef char** lptr = <char**>malloc(sizeof(char*) * (nl + 1))
        cdef void** reg = <void**>malloc(sizeof(void*) * (self.nreg + 1))
        cdef Py_ssize_t* lstr = pstr + MAXD * narr
        cdef Py_ssize_t idx[MAXD]
        cdef Py_ssize_t* ast2 = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * MAXD * (narr + 1))
        cdef char* o = <char*>cnp.PyArray_DATA(out)
        cdef const cnp.int64_t* bx = <const cnp.int64_t*>cnp.PyArray_DATA(boxes)
        cdef const cnp.int8_t* sl = <const cnp.int8_t*>cnp.PyArray_DATA(sel)
        cdef const cnp.int64_t* of = <const cnp.int64_t*>cnp.PyArray_DATA(offs)
        cdef const cnp.int64_t* oop = <const cnp.int64_t*>cnp.PyArray_DATA(oo)
        if not (pstr and abase and lptr and reg and ast2):
            free(pstr); free(abase); free(lptr); free(reg); free(ast2)
            raise MemoryError()
        for i in range(narr):
            abase[i] = ptrs[2 * i]
            abase[narr + i] = ptrs[2 * i + 1]
            for d in range(self.ndim):
                ast2[MAXD * i + d] = strides[MAXD * (1 + 2 * i) + d]
                pstr[MAXD * i + d] = strides[MAXD * (2 + 2 * i) + d]
        try:
            with nogil:
                if self.typenum == cnp.NPY_DOUBLE:
                    _run(<double*>NULL, self.code, self.ninstr, self.nreg, self.leaf_arr, nl, self.ndim,
                         bx, nbox, sl, narr, of, o, strides, oop, abase, abase + narr, ast2, pstr,
                         <const double*>scal, <double*>bufs, <double**>reg, <const char**>lptr, lstr, idx)
                else:
                    _run(<float*>NULL, self.code, self.ninstr, self.nreg, self.leaf_arr, nl, self.ndim,
                         bx, nbox, sl, narr, of, o, strides, oop, abase, abase + narr, ast2, pstr,
                         <const float*>scal, <float*>bufs, <float**>reg, <const char**>lptr, lstr, idx)
        finally:
            free(pstr); free(abase); free(lptr); free(reg); free(ast2)

    cdef cnp.ndarray _array(self, object x, str what, bint writable):
        if not cnp.PyArray_Check(x):
            raise TypeError(f"fused program: {what} must be a numpy array, got {type(x).__name__}")
        cdef cnp.ndarray a = <cnp.ndarray>x
        if cnp.PyArray_TYPE(a) != self.typenum or cnp.PyArray_NDIM(a) != self.ndim:
            raise TypeError(f"fused program: {what} must be {self.ndim}-d "
                            f"{'float64' if self.typenum == cnp.NPY_DOUBLE else 'float32'}, "
                            f"got {a.ndim}-d {a.dtype}")
        if writable and not cnp.PyArray_ISWRITEABLE(a):
            raise ValueError(f"fused program: {what} is read-only")
        if not cnp.PyArray_ISALIGNED(a):
            raise ValueError(f"fused program: {what} is not aligned")
        return a


cdef cnp.ndarray _int_array(object x, int typenum, int ndim, str what):
    if (not cnp.PyArray_Check(x) or cnp.PyArray_TYPE(<cnp.ndarray>x) != typenum
            or cnp.PyArray_NDIM(<cnp.ndarray>x) != ndim or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>x)):
        raise TypeError(f"fused program: {what} must be a C-contiguous {ndim}-d "
                        f"{'int64' if typenum == cnp.NPY_INT64 else 'int8'} array")
    return <cnp.ndarray>x
