"""A chain interpreter for fused elementwise expressions: the fused kernels' work without a compile.

``meshrt.tensor.fuse`` compiles an expression signature once (in Python) into chains, each
``acc = start; acc = acc OP x; ...`` with its operands in slots (leaves, scalars, temporaries);
`Program` runs them over exactly the arguments of the generated Numba kernel
``fused(boxes, sel, offs, out, oo, a0, p0, ..., c0, ...)``. Per box and per outer index, the innermost
run is cut into chunks of `CHUNK` elements; each chain is one C loop over a chunk (``_fusevm.h``: the
accumulator in vector registers), the GIL released, reading the operands in place where their last dim
is contiguous. Every operation is the IEEE operation of one dtype (float64 or float32), in the
expression's order, so the bits equal the Numba kernel's and numpy's.

    >>> import numpy as np
    >>> from meshrt._fusevm import Program, OPS
    >>> code = np.array([[OPS["start"], 0], [OPS["add"], 1]], np.int64)  # out = leaf0 + leaf1
    >>> p = Program(code, np.array([-1], np.int64), 0, np.array([0, 0], np.int64), 1, 0, 1, "float64")
    >>> x = np.arange(5.0); out = np.zeros(5)
    >>> p(np.array([[0, 4]], np.int64), np.zeros((1, 1), np.int8), np.array([[[0], [1]]], np.int64),
    ...   out, np.zeros(1, np.int64), x, x)
    >>> out
    array([1., 3., 5., 7., 0.])
"""

cimport cython
cimport numpy as cnp
from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free

import numpy as np

cdef extern from "_fusevm.h":
    enum:
        FV_START, FV_ADD, FV_SUB, FV_MUL, FV_DIV, FV_RADD, FV_RSUB, FV_RMUL, FV_RDIV, FV_NEG, FV_SQUARE
        FV_SQRT, FV_ABS, FV_NOPS
    void fv_chaind(const int64_t* rows, int64_t nops, double* const* slot, const double* src, double* dst,
                   int64_t n) nogil
    void fv_chainf(const int64_t* rows, int64_t nops, float* const* slot, const float* src, float* dst,
                   int64_t n) nogil

cnp.import_array()

__all__ = ["Program", "SmallRun", "CHUNK", "OPS", "cut_boxes"]

# the operations of a chain; "r" forms compute x OP acc (numpy's operand order where the chain's
# accumulator is the right operand)
OPS = {"start": FV_START, "add": FV_ADD, "subtract": FV_SUB, "multiply": FV_MUL, "divide": FV_DIV,
       "radd": FV_RADD, "rsubtract": FV_RSUB, "rmultiply": FV_RMUL, "rdivide": FV_RDIV,
       "negative": FV_NEG, "square": FV_SQUARE, "sqrt": FV_SQRT, "absolute": FV_ABS}
BINARY = frozenset(("add", "subtract", "multiply", "divide"))

# elements per chunk: a chunk of every operand and temporary stays in the L1 cache
DEF _CHUNK = 256
CHUNK = _CHUNK
DEF MAXD = 32
# slot buffers this many elements apart: not a multiple of 4 KiB (loads and stores of one chunk would
# alias in the CPU's store forwarding)
DEF _RSTRIDE = _CHUNK + 40


cdef inline void _gather(char* dst, const char* src, Py_ssize_t stride, Py_ssize_t n, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t i
    if size == 8:
        for i in range(n):
            (<double*>dst)[i] = (<const double*>(src + i * stride))[0]
    else:
        for i in range(n):
            (<float*>dst)[i] = (<const float*>(src + i * stride))[0]


cdef inline void _scatter(char* dst, Py_ssize_t stride, const char* src, Py_ssize_t n, Py_ssize_t size) noexcept nogil:
    cdef Py_ssize_t i
    if size == 8:
        for i in range(n):
            (<double*>(dst + i * stride))[0] = (<const double*>src)[i]
    else:
        for i in range(n):
            (<float*>(dst + i * stride))[0] = (<const float*>src)[i]


cdef void _run(Py_ssize_t size, const int64_t* code, Py_ssize_t nchain, const int64_t* cstart,
               const int64_t* cnops, const int64_t* cdst, Py_ssize_t nleaf, Py_ssize_t nslot,
               const int64_t* leaf_arr, Py_ssize_t ndim,
               const int64_t* boxes, Py_ssize_t nbox, const cnp.int8_t* sel, Py_ssize_t narr,
               const int64_t* offs, char* out, const Py_ssize_t* ostr, const int64_t* oo,
               char** abase, char** pbase, const Py_ssize_t* astr, const Py_ssize_t* pstr,
               char* bufs, char** slot, const char** lptr, Py_ssize_t* lstr, Py_ssize_t* idx) noexcept nogil:
    """Run the chains over every box (``bufs``: a chunk per slot, the scalars' already filled;
    ``slot``, ``lptr``, ``lstr``, ``idx``: scratch)."""
    cdef Py_ssize_t b, k, d, a, c, t, n, lo, hi, inner, ostride, o_in
    cdef Py_ssize_t last = ndim - 1
    cdef const Py_ssize_t* st
    cdef char* base
    cdef char* optr
    cdef char* dst
    cdef const int64_t* bx
    cdef bint ocontig = ostr[last] == size
    for k in range(nleaf, nslot):
        slot[k] = bufs + k * _RSTRIDE * size
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
                    for k in range(nleaf):
                        base = <char*>lptr[k]
                        for d in range(last):
                            base += idx[d] * lstr[k * MAXD + d]
                        if lstr[k * MAXD + last] == size:
                            slot[k] = base + t * size
                        else:
                            slot[k] = bufs + k * _RSTRIDE * size
                            _gather(slot[k], base + t * lstr[k * MAXD + last], lstr[k * MAXD + last], n, size)
                    for c in range(nchain):
                        if cdst[c] >= 0:
                            dst = slot[cdst[c]]
                        elif ocontig:  # the result straight into the output
                            dst = optr + o_in + t * size
                        else:
                            dst = bufs + nslot * _RSTRIDE * size  # (a buffer of its own)
                        if size == 8:
                            fv_chaind(code + 2 * (cstart[c] + 1), cnops[c], <double**>slot,
                                      <double*>slot[code[2 * cstart[c] + 1]], <double*>dst, n)
                        else:
                            fv_chainf(code + 2 * (cstart[c] + 1), cnops[c], <float**>slot,
                                      <float*>slot[code[2 * cstart[c] + 1]], <float*>dst, n)
                        if cdst[c] < 0 and not ocontig:
                            _scatter(optr + o_in + t * ostride, ostride, dst, n, size)
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


cdef struct Scratch:
    # one block: strides (out, arrays, padded copies, leaves), pointers, a chunk per slot (64-byte aligned)
    Py_ssize_t* ostr
    Py_ssize_t* astr
    Py_ssize_t* pstr
    Py_ssize_t* lstr
    char** abase
    char** pbase
    char** lptr
    char** slot
    char* bufs


cdef class Program:
    """The chains of one fused expression (see the module's docstring).

    ``code``: ``[nrows, 2]`` int64 rows: a chain is a row ``(OPS["start"], slot)`` followed by its
    ``(op, slot)`` rows (the slot is ignored for a unary op), chains in evaluation order;
    ``chain_dst[c]``: the temporary slot chain ``c`` writes, -1 for the output (the last chain).
    Slots: ``0 .. nleaf-1`` the leaves, then the ``nsc`` scalars, then ``ntemp`` temporaries.
    ``leaf_arr[k]``: the array argument leaf ``k`` reads, of ``narr`` arrays; ``ndim``; ``dtype``
    ("float64" or "float32") of every array, the output, every scalar and every operation.
    """

    cdef object code_arr, cstart_arr, cnops_arr, cdst_arr, leaf_arr_arr
    cdef Py_ssize_t nchain, nleaf, narr, nsc, nslot, ndim, size
    cdef int typenum

    def __init__(self, code, chain_dst, Py_ssize_t ntemp, leaf_arr, Py_ssize_t narr, Py_ssize_t nsc,
                 Py_ssize_t ndim, str dtype):
        c = self.code_arr = np.ascontiguousarray(code, np.int64)
        self.cdst_arr = np.ascontiguousarray(chain_dst, np.int64)
        self.leaf_arr_arr = np.ascontiguousarray(leaf_arr, np.int64)
        if c.ndim != 2 or c.shape[1] != 2 or c.shape[0] < 1 or c[0, 0] != FV_START:
            raise ValueError(f"code: expected a [n >= 1, 2] table starting a chain, got {c.tolist()}")
        if not 1 <= ndim <= MAXD:
            raise ValueError(f"ndim: expected 1..{MAXD}, got {ndim}")
        if dtype not in ("float64", "float32"):
            raise ValueError(f"dtype: expected 'float64' or 'float32', got {dtype!r}")
        self.nleaf = self.leaf_arr_arr.shape[0]
        self.nslot = self.nleaf + nsc + ntemp
        if self.leaf_arr_arr.ndim != 1 or any(not 0 <= a < narr for a in self.leaf_arr_arr.tolist()):
            raise ValueError(f"leaf_arr: expected array numbers in 0..{narr - 1}, got {leaf_arr!r}")
        starts = [i for i, (op, _) in enumerate(c.tolist()) if op == FV_START]
        for op, sl in c.tolist():
            if not 0 <= op < FV_NOPS or not 0 <= sl < max(self.nslot, 1):
                raise ValueError(f"code: bad row {(op, sl)} ({self.nslot} slots)")
        if len(starts) != self.cdst_arr.shape[0]:
            raise ValueError(f"chain_dst: expected {len(starts)} entries, got {self.cdst_arr.shape[0]}")
        dsts = self.cdst_arr.tolist()
        if dsts[-1] != -1 or any(not self.nleaf + nsc <= x < self.nslot for x in dsts[:-1]):
            raise ValueError(f"chain_dst: temporaries then -1 expected, got {dsts}")
        self.cstart_arr = np.array(starts, np.int64)
        self.cnops_arr = np.diff(np.array(starts + [c.shape[0]], np.int64)) - 1
        self.nchain = len(starts)
        self.narr, self.nsc, self.ndim = narr, nsc, ndim
        self.typenum = cnp.NPY_DOUBLE if dtype == "float64" else cnp.NPY_FLOAT
        self.size = 8 if dtype == "float64" else 4

    def __call__(self, *args):
        cdef Py_ssize_t narr = self.narr, nd = self.ndim, nl = self.nleaf, i, d, nbox
        if len(args) != 5 + 2 * narr + self.nsc:
            raise TypeError(f"fused program: expected {5 + 2 * narr + self.nsc} arguments, got {len(args)}")
        cdef cnp.ndarray boxes = _int_array(args[0], cnp.NPY_INT64, 2, "boxes")
        cdef cnp.ndarray sel = _int_array(args[1], cnp.NPY_INT8, 2, "sel")
        cdef cnp.ndarray offs = _int_array(args[2], cnp.NPY_INT64, 3, "offs")
        cdef cnp.ndarray oo = _int_array(args[4], cnp.NPY_INT64, 1, "oo")
        nbox = cnp.PyArray_DIM(boxes, 0)
        if (cnp.PyArray_DIM(boxes, 1) != 2 * nd or cnp.PyArray_DIM(sel, 0) != nbox
                or cnp.PyArray_DIM(sel, 1) != narr or cnp.PyArray_DIM(offs, 0) != nbox
                or cnp.PyArray_DIM(offs, 1) != nl or cnp.PyArray_DIM(offs, 2) != nd
                or cnp.PyArray_DIM(oo, 0) != nd):
            raise ValueError("fused program: boxes, sel, offs or oo of the wrong shape")
        cdef cnp.ndarray out = self._array(args[3], "out", True)
        cdef cnp.ndarray x
        cdef Scratch sc
        cdef char* mem = self._scratch(&sc)
        try:
            for d in range(nd):
                sc.ostr[d] = cnp.PyArray_STRIDE(out, d)
            for i in range(2 * narr):
                x = self._array(args[5 + i], "array", False)
                (sc.abase if i % 2 == 0 else sc.pbase)[i // 2] = <char*>cnp.PyArray_DATA(x)
                for d in range(nd):
                    (sc.astr if i % 2 == 0 else sc.pstr)[MAXD * (i // 2) + d] = cnp.PyArray_STRIDE(x, d)
            self._fill_scalars(sc.bufs, args[5 + 2 * narr:])
            self._go(<const int64_t*>cnp.PyArray_DATA(boxes), nbox, <const cnp.int8_t*>cnp.PyArray_DATA(sel),
                     <const int64_t*>cnp.PyArray_DATA(offs), <char*>cnp.PyArray_DATA(out),
                     <const int64_t*>cnp.PyArray_DATA(oo), &sc)
        finally:
            free(mem)

    cdef char* _scratch(self, Scratch* sc) except NULL:
        """Allocate (malloc: the caller frees) and carve the scratch block of one run."""
        cdef Py_ssize_t narr = self.narr, nl = self.nleaf
        cdef Py_ssize_t nstr = MAXD * (1 + 2 * narr + nl + 1)
        cdef Py_ssize_t nptr = 2 * narr + nl + self.nslot + 2
        cdef char* mem = <char*>malloc(sizeof(Py_ssize_t) * nstr + sizeof(char*) * nptr
                                       + self.size * _RSTRIDE * (self.nslot + 1) + 64)
        if not mem:
            raise MemoryError()
        sc.ostr = <Py_ssize_t*>mem
        sc.astr = sc.ostr + MAXD
        sc.pstr = sc.astr + MAXD * narr
        sc.lstr = sc.pstr + MAXD * narr
        sc.abase = <char**>(mem + sizeof(Py_ssize_t) * nstr)
        sc.pbase = sc.abase + narr
        sc.lptr = sc.pbase + narr
        sc.slot = sc.lptr + nl + 1
        sc.bufs = <char*>(sc.slot + self.nslot + 1)
        sc.bufs += (64 - (<size_t>sc.bufs) % 64) % 64
        return mem

    cdef int _fill_scalars(self, char* bufs, scalars) except -1:
        """Each scalar's chunk, filled once per run."""
        cdef Py_ssize_t i, d
        cdef double v
        cdef float f
        cdef double* dp
        cdef float* fp
        for i in range(self.nsc):
            v = scalars[i]  # (converted once: a Python float's value, not one conversion per lane)
            if self.size == 8:
                dp = <double*>bufs + (self.nleaf + i) * _RSTRIDE
                for d in range(_CHUNK):
                    dp[d] = v
            else:
                f = <float>v
                fp = <float*>bufs + (self.nleaf + i) * _RSTRIDE
                for d in range(_CHUNK):
                    fp[d] = f
        return 0

    cdef void _go(self, const int64_t* bx, Py_ssize_t nbox, const cnp.int8_t* sl, const int64_t* of, char* o,
                  const int64_t* oop, Scratch* sc):
        cdef const int64_t* code = <const int64_t*>cnp.PyArray_DATA(self.code_arr)
        cdef const int64_t* cstart = <const int64_t*>cnp.PyArray_DATA(self.cstart_arr)
        cdef const int64_t* cnops = <const int64_t*>cnp.PyArray_DATA(self.cnops_arr)
        cdef const int64_t* cdst = <const int64_t*>cnp.PyArray_DATA(self.cdst_arr)
        cdef const int64_t* la = <const int64_t*>cnp.PyArray_DATA(self.leaf_arr_arr)
        cdef Py_ssize_t idx[MAXD]
        with nogil:
            _run(self.size, code, self.nchain, cstart, cnops, cdst, self.nleaf, self.nslot, la, self.ndim,
                 bx, nbox, sl, self.narr, of, o, sc.ostr, oop, sc.abase, sc.pbase, sc.astr, sc.pstr, sc.bufs,
                 sc.slot, <const char**>sc.lptr, sc.lstr, idx)

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


# -- a fused write's boxes -------------------------------------------------------------------------------

cdef inline void _next_cell(Py_ssize_t* idx, const Py_ssize_t* nc, Py_ssize_t nd) noexcept:
    """The next cell of a product of ``nc[d]`` cells per dim, in ``itertools.product``'s order (last dim
    fastest): ``idx`` advanced in place."""
    cdef Py_ssize_t d = nd - 1
    while d >= 0:
        idx[d] += 1
        if idx[d] < nc[d]:
            return
        idx[d] = 0
        d -= 1


def cut_boxes(box, owned, split, pieces, leaf_array, ghost_lo, halo_lo, Py_ssize_t narr):
    """``meshrt.tensor.lazy.plan_boxes`` and the plan's packing of its boxes, in C (a stencil on a new
    shape plans its boxes on its first call: ~55k instructions as Python lists, ~12k here).

    ``box``, ``owned``, ``split``, ``pieces``: as `plan_boxes`'s (``pieces``: per leaf, per dim, its
    ``(lo, hi, shift)`` pieces); ``leaf_array``: each leaf's array number; ``ghost_lo``: per array, None
    (no ghost-padded copy) or its padded copy's low ghost width per dim; ``halo_lo``: per array, its own
    buffer's low halo per dim. Returns ``(boxes, sel, offs, npre)``: int64 ``(n, 2 * nd)`` (each box's
    ``lo, hi`` per dim), int8 ``(n, narr)`` (1: the box reads array a's padded copy, as one of a's leaves
    reads a ghost there), int64 ``(n, nleaf, nd)`` (each leaf's offset from a global index to its buffer's:
    shift - owned lo + that buffer's low halo); the ``npre`` boxes that read no ghost first, each part in
    `plan_boxes`'s order.

    >>> b, sel, offs, npre = cut_boxes(((1, 4),), ((0, 4),), (True,), [[[(0, 8, -1)]], [[(0, 8, 1)]]],
    ...                                [0, 0], [[1]], [[0]], 1)
    >>> b.tolist(), sel.tolist(), offs.tolist(), npre  # cell 3 reads 4: the padded copy (1 ghost below)
    ([[1, 3], [3, 4]], [[0], [1]], [[[-1], [1]], [[0], [2]]], 1)
    """
    cdef Py_ssize_t nd = len(box), nl = len(pieces), d, l, j, k, a, total = 0, ncell = 1, c, r, npre = 0
    cdef Py_ssize_t maxc, n, i, ipre, ipost, nsel
    cdef int64_t lo, hi, x, s
    if nd > MAXD or nd == 0:
        raise ValueError(f"cut_boxes: {nd} dims (1 to {MAXD})")
    if len(owned) != nd or len(split) != nd or len(leaf_array) != nl or len(ghost_lo) != narr or len(halo_lo) != narr:
        raise ValueError("cut_boxes: owned, split, leaf_array, ghost_lo or halo_lo of the wrong length")
    cdef int64_t blo[MAXD]
    cdef int64_t bhi[MAXD]
    cdef int64_t olo[MAXD]
    cdef int64_t ohi[MAXD]
    cdef bint sp[MAXD]
    cdef Py_ssize_t nc[MAXD]
    cdef Py_ssize_t idx[MAXD]
    for d in range(nd):
        blo[d], bhi[d] = box[d]
        olo[d], ohi[d] = owned[d]
        sp[d] = bool(split[d])
    for d in range(nd):
        if bhi[d] <= blo[d]:
            return (np.empty((0, 2 * nd), np.int64), np.empty((0, narr), np.int8),
                    np.empty((0, nl, nd), np.int64), 0)
    for l in range(nl):
        if len(pieces[l]) != nd:
            raise ValueError(f"cut_boxes: leaf {l} has pieces for {len(pieces[l])} dims, not {nd}")
        for d in range(nd):
            total += len(pieces[l][d])
    maxc = 2 + 4 * total
    # one block: the pieces (lo, hi, shift), each leaf's and dim's first piece, the cut points per dim,
    # each leaf's array, each array's low widths (its own halo, its padded copy's ghosts) and selection
    cdef int64_t* mem = <int64_t*>malloc(sizeof(int64_t) * (3 * total + nl * nd + 1 + nd * maxc + nl
                                                            + 2 * narr * nd + 2 * narr))
    if not mem:
        raise MemoryError()
    cdef int64_t* pc = mem
    cdef int64_t* first = pc + 3 * total
    cdef int64_t* cuts = first + nl * nd + 1
    cdef int64_t* la = cuts + nd * maxc
    cdef int64_t* hlo = la + nl
    cdef int64_t* glo = hlo + narr * nd
    cdef int64_t* hasg = glo + narr * nd
    cdef int64_t* selc = hasg + narr
    cdef int64_t* sh = NULL
    cdef char* gh = NULL
    cdef cnp.ndarray boxes, sel, offs
    cdef int64_t* bp
    cdef cnp.int8_t* xp
    cdef int64_t* op
    try:
        k = 0
        for l in range(nl):
            for d in range(nd):
                first[l * nd + d] = k
                for lo, hi, s in pieces[l][d]:
                    pc[3 * k], pc[3 * k + 1], pc[3 * k + 2] = lo, hi, s
                    k += 1
            la[l] = leaf_array[l]
            if not 0 <= la[l] < narr:
                raise ValueError(f"cut_boxes: leaf {l}'s array {la[l]} is not one of {narr}")
        first[nl * nd] = k
        for a in range(narr):
            hasg[a] = ghost_lo[a] is not None
            for d in range(nd):
                hlo[a * nd + d] = halo_lo[a][d]
                glo[a * nd + d] = ghost_lo[a][d] if hasg[a] else 0
        # the cut points of each dim: the box's ends, the pieces' ends, and (split) where a read crosses
        # the block's edge; sorted, each once
        for d in range(nd):
            lo, hi = blo[d], bhi[d]
            x = d * maxc
            cuts[x], cuts[x + 1] = lo, hi
            n = 2
            for l in range(nl):
                for j in range(first[l * nd + d], first[l * nd + d + 1]):
                    for i in range(4 if sp[d] else 2):
                        s = pc[3 * j + i] if i < 2 else (olo[d] if i == 2 else ohi[d]) - pc[3 * j + 2]
                        if lo < s < hi:
                            cuts[x + n] = s
                            n += 1
            c = 0  # (insertion sort, duplicates dropped)
            for i in range(n):
                s = cuts[x + i]
                j = c
                while j > 0 and cuts[x + j - 1] > s:
                    j -= 1
                if j > 0 and cuts[x + j - 1] == s:
                    continue
                r = c
                while r > j:
                    cuts[x + r] = cuts[x + r - 1]
                    r -= 1
                cuts[x + j] = s
                c += 1
            nc[d] = c - 1  # cells along d
            ncell *= nc[d]
        # per cell (itertools.product's order) and leaf: its shift per dim, whether it reads a ghost
        sh = <int64_t*>malloc(sizeof(int64_t) * max(1, ncell * nl * nd))
        gh = <char*>malloc(max(1, ncell * nl))
        if not sh or not gh:
            raise MemoryError()
        for d in range(nd):
            idx[d] = 0
        for c in range(ncell):
            nsel = 0
            for l in range(nl):
                gh[c * nl + l] = 0
                for d in range(nd):
                    lo, hi = cuts[d * maxc + idx[d]], cuts[d * maxc + idx[d] + 1]
                    j = first[l * nd + d]
                    while j < first[l * nd + d + 1] and not (pc[3 * j] <= lo and hi <= pc[3 * j + 1]):
                        j += 1
                    if j == first[l * nd + d + 1]:
                        raise ValueError(f"leaves: no piece of dim {d} covers cells [{lo}, {hi})")
                    s = pc[3 * j + 2]
                    sh[(c * nl + l) * nd + d] = s
                    if sp[d] and (lo + s < olo[d] or hi + s > ohi[d]):
                        gh[c * nl + l] = 1
                nsel += gh[c * nl + l]
            if not nsel:
                npre += 1
            _next_cell(idx, nc, nd)
        boxes = np.empty((ncell, 2 * nd), np.int64)
        sel = np.empty((ncell, narr), np.int8)
        offs = np.empty((ncell, nl, nd), np.int64)
        bp = <int64_t*>cnp.PyArray_DATA(boxes)
        xp = <cnp.int8_t*>cnp.PyArray_DATA(sel)
        op = <int64_t*>cnp.PyArray_DATA(offs)
        ipre, ipost = 0, npre
        for d in range(nd):
            idx[d] = 0
        for c in range(ncell):
            for a in range(narr):
                selc[a] = 0
            nsel = 0
            for l in range(nl):
                if gh[c * nl + l]:
                    selc[la[l]] = 1
                    nsel += 1
            if nsel:
                r, ipost = ipost, ipost + 1
            else:
                r, ipre = ipre, ipre + 1
            for d in range(nd):
                bp[r * 2 * nd + 2 * d] = cuts[d * maxc + idx[d]]
                bp[r * 2 * nd + 2 * d + 1] = cuts[d * maxc + idx[d] + 1]
            for a in range(narr):
                xp[r * narr + a] = <cnp.int8_t>selc[a]
            for l in range(nl):
                a = la[l]
                if selc[a] and not hasg[a]:
                    raise ValueError(f"cut_boxes: array {a} is read past its block but has no ghost widths")
                for d in range(nd):
                    op[(r * nl + l) * nd + d] = (sh[(c * nl + l) * nd + d] - olo[d]
                                                 + (glo[a * nd + d] if selc[a] else hlo[a * nd + d]))
            _next_cell(idx, nc, nd)
        return boxes, sel, offs, npre
    finally:
        free(mem)
        free(sh)
        free(gh)


# -- one small fused write as one call ------------------------------------------------------------------
include "_mpicall.pxi"

from libc.string cimport memcpy
from meshrt._blockcopy cimport copy_strided

cdef int _mpi_state = -1  # -1: not looked up; 1: this module's MPI table is filled; 0: mpi4py's calls
cdef object _MPI = None  # mpi4py.MPI, imported once (a new shape's first write builds a SmallRun)
cdef size_t _byte_handle = 0


cdef object _mpi4py():
    global _MPI, _byte_handle
    if _MPI is None:
        from mpi4py import MPI
        _byte_handle = <size_t>MPI._handleof(MPI.BYTE)
        _MPI = MPI
    return _MPI


def mpi_calls():
    """Whether this module calls MPI's C functions itself (`SmallRun`'s starts and plain messages): the
    same answer on every process of a job (one MPI library); False: mpi4py's calls instead."""
    global _mpi_state
    if _mpi_state < 0:
        try:
            _mpi_state = _mpicall_init()
        except Exception:
            _mpi_state = 0
    return _mpi_state == 1


cdef class SmallRun:
    """A small block's whole fused write, as one call: the operands' slabs copied into their
    ghost-padded buffers, the ghost exchanges started (MPI's ``Startall`` on their persistent
    requests) and waited for, the target copied where it is also read with a shift, then the
    `Program` over every box. `run` makes no Python object and no system call but MPI's.

    Built by ``meshrt.tensor.lazy``'s plan from the buffers of one call; `run` checks that the
    buffers it gets have the same dtype, shape and strides (the byte offsets above depend on them)
    and that no operand overlaps the target, and returns False without doing anything otherwise
    (the plan's Python path then runs). ``slabs``: ``(array number, padded view, offset view)``:
    the padded buffer's view is written from the array's same-shaped view ``offset view`` (a view
    of the array as built: its byte offset and strides are kept). ``copy``: the
    target is read with a shift: a copy of it is read. ``target``: the array number of the target, or -1
    (an operand other than the target may not overlap it). ``messages``: ``(is_recv, view, peer, tag,
    comm)`` of plain messages posted by ``MPI_Irecv``/``MPI_Isend`` each run, receives first (a plan's
    ghost exchange without persistent requests: nothing to create for a shape, nothing to free), each
    ``view`` a C-contiguous view of a padded buffer; given, MPI's C calls must be reachable
    (`ValueError` otherwise).
    """

    cdef Program prog
    cdef object keep
    cdef Py_ssize_t narr, nd, nbox, nsc, target, nslab, nreq
    cdef bint copy
    cdef char* status
    cdef char* mem  # the program's scratch block (sc), kept: strides and padded pointers fixed at build
    cdef Scratch sc
    cdef Py_ssize_t* meta  # shape, nbytes, ghost below, one block
    cdef Py_ssize_t* shape  # (narr + 1) * MAXD: each array's shape, then the target's
    cdef Py_ssize_t* nbytes  # narr + 1
    cdef bint* ghost  # narr: the array has a padded buffer (pbase fixed)
    cdef Py_ssize_t* slab  # nslab rows of 4 + 3 * MAXD: array, dst address, src offset, ndim, shape, strides
    cdef char* reqs
    cdef object req_list, py_exchanges
    cdef Py_ssize_t nmsg
    cdef Py_ssize_t* msg  # nmsg rows: is_recv, address, nbytes, peer, tag, comm handle
    cdef size_t byte_handle
    cdef char* copy_buf
    cdef const int64_t* bx
    cdef const cnp.int8_t* sl
    cdef const int64_t* of
    cdef const int64_t* oop

    def __cinit__(self):
        self.mem = NULL
        self.meta = NULL
        self.slab = NULL
        self.reqs = NULL
        self.msg = NULL

    def __init__(self, Program prog, boxes, sel, offs, oo, out, list arrays, list padded, list slabs,
                 list exchanges, Py_ssize_t target, bint copy, list messages=None):
        cdef Py_ssize_t narr = len(arrays), nd = prog.ndim, i, d, k, nl = prog.nleaf
        cdef Py_ssize_t* row
        cdef cnp.ndarray x, p
        if narr != prog.narr or len(padded) != narr:
            raise ValueError("SmallRun: the arrays or padded buffers do not match the program")
        boxes = _int_array(boxes, cnp.NPY_INT64, 2, "boxes")
        sel = _int_array(sel, cnp.NPY_INT8, 2, "sel")
        offs = _int_array(offs, cnp.NPY_INT64, 3, "offs")
        oo = _int_array(oo, cnp.NPY_INT64, 1, "oo")
        if copy and not 0 <= target < narr:
            raise ValueError(f"SmallRun: copy needs the target among the arrays (target {target})")
        self.prog, self.narr, self.nd, self.nsc, self.target, self.copy = prog, narr, nd, prog.nsc, target, copy
        self.nbox = cnp.PyArray_DIM(boxes, 0)
        if (cnp.PyArray_DIM(boxes, 1) != 2 * nd or cnp.PyArray_DIM(sel, 0) != self.nbox
                or cnp.PyArray_DIM(sel, 1) != narr or cnp.PyArray_DIM(offs, 0) != self.nbox
                or cnp.PyArray_DIM(offs, 1) != nl or cnp.PyArray_DIM(offs, 2) != nd or cnp.PyArray_DIM(oo, 0) != nd):
            raise ValueError("SmallRun: boxes, sel, offs or oo of the wrong shape")
        self.bx = <const int64_t*>cnp.PyArray_DATA(boxes)
        self.sl = <const cnp.int8_t*>cnp.PyArray_DATA(sel)
        self.of = <const int64_t*>cnp.PyArray_DATA(offs)
        self.oop = <const int64_t*>cnp.PyArray_DATA(oo)
        self.mem = prog._scratch(&self.sc)
        self.meta = <Py_ssize_t*>malloc(sizeof(Py_ssize_t) * (MAXD * (narr + 1) + (narr + 1)) + sizeof(bint) * narr)
        if not self.meta:
            raise MemoryError()
        self.shape = self.meta
        self.nbytes = self.shape + MAXD * (narr + 1)
        self.ghost = <bint*>(self.nbytes + narr + 1)
        keep = [boxes, sel, offs, oo]
        x = prog._array(out, "out", True)
        for d in range(nd):
            self.sc.ostr[d] = cnp.PyArray_STRIDE(x, d)
            self.shape[MAXD * narr + d] = cnp.PyArray_DIM(x, d)
        self.nbytes[narr] = cnp.PyArray_NBYTES(x)
        for i in range(narr):
            x = prog._array(arrays[i], "array", False)
            self.nbytes[i] = cnp.PyArray_NBYTES(x)
            for d in range(nd):
                self.sc.astr[MAXD * i + d] = cnp.PyArray_STRIDE(x, d)
                self.shape[MAXD * i + d] = cnp.PyArray_DIM(x, d)
            self.ghost[i] = padded[i] is not None
            p = prog._array(padded[i], "padded", True) if self.ghost[i] else x
            for d in range(nd):
                self.sc.pstr[MAXD * i + d] = cnp.PyArray_STRIDE(p, d)
            if self.ghost[i]:
                self.sc.pbase[i] = <char*>cnp.PyArray_DATA(p)
                keep.append(p)
        # slabs: (array number, padded destination view, the array's source view)
        self.nslab = len(slabs)
        self.slab = <Py_ssize_t*>malloc(max(1, self.nslab) * (4 + 3 * MAXD) * sizeof(Py_ssize_t))
        if not self.slab:
            raise MemoryError()
        for k, (i, dst, src) in enumerate(slabs):
            x, p = arrays[i], dst
            if cnp.PyArray_NDIM(p) != nd or src.shape != dst.shape or src.dtype != x.dtype or dst.dtype != x.dtype:
                raise ValueError(f"SmallRun: slab {k} does not match its array")
            row = self.slab + k * (4 + 3 * MAXD)
            row[0] = i
            row[1] = <Py_ssize_t>cnp.PyArray_DATA(p)
            row[2] = <Py_ssize_t>(<char*>cnp.PyArray_DATA(<cnp.ndarray>src) - <char*>cnp.PyArray_DATA(x))
            row[3] = nd
            for d in range(nd):
                row[4 + d] = cnp.PyArray_DIM(p, d)
                row[4 + MAXD + d] = cnp.PyArray_STRIDE(p, d)
                row[4 + 2 * MAXD + d] = cnp.PyArray_STRIDE(<cnp.ndarray>src, d)
            keep.append(dst)
        # exchanges: with no pack/unpack/local copies, their persistent requests started here
        mpi_calls()
        reqs, py = [], []
        for ex in exchanges:
            if _mpi_state == 1 and ex._pack is None and ex._unpack is None and ex._local is None:
                reqs += list(ex._reqs)
            else:
                py.append(ex)
        self.req_list, self.py_exchanges = reqs, tuple(py)
        messages = messages or []
        self.nmsg = len(messages)
        if self.nmsg:
            if _mpi_state != 1:
                raise ValueError("SmallRun: plain messages need MPI's C calls, which this MPI does not give")
            MPI = _mpi4py()
            self.byte_handle = _byte_handle
            self.msg = <Py_ssize_t*>malloc(self.nmsg * 6 * sizeof(Py_ssize_t))
            if not self.msg:
                raise MemoryError()
            for k, (is_recv, view, peer, tag, comm) in enumerate(messages):
                if not cnp.PyArray_Check(view) or not cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>view):
                    raise ValueError(f"SmallRun: message {k}'s buffer is not a C-contiguous array")
                if cnp.PyArray_NBYTES(<cnp.ndarray>view) > 0x7fffffff:
                    raise ValueError(f"SmallRun: message {k} is over 2 GiB")
                row = self.msg + 6 * k
                row[0] = 1 if is_recv else 0
                row[1] = <Py_ssize_t>cnp.PyArray_DATA(<cnp.ndarray>view)
                row[2] = cnp.PyArray_NBYTES(<cnp.ndarray>view)
                row[3] = peer
                row[4] = tag
                row[5] = <Py_ssize_t><size_t>MPI._handleof(comm)
                keep.append(view)
                keep.append(comm)
        self.nreq = len(reqs) + self.nmsg
        if self.nreq:
            MPI = _mpi4py()
            self.reqs = <char*>malloc(self.nreq * (8 + MESHRT_STATUS_BYTES))
            if not self.reqs:
                raise MemoryError()
            self.status = self.reqs + self.nreq * 8
            for k, r in enumerate(reqs):
                if meshrt_hs == 4:
                    (<int*>self.reqs)[k] = <int><size_t>MPI._handleof(r)
                else:
                    (<void**>self.reqs)[k] = <void*><size_t>MPI._handleof(r)
        self.copy_buf = NULL
        if copy:
            c = np.empty_like(arrays[target])
            keep.append(c)
            self.copy_buf = <char*>cnp.PyArray_DATA(<cnp.ndarray>c)
        self.keep = keep

    def __dealloc__(self):
        free(self.mem)
        free(self.meta)
        free(self.slab)
        free(self.reqs)
        free(self.msg)

    cdef bint _fits(self, cnp.ndarray x, Py_ssize_t i, bint writable):
        cdef Py_ssize_t d
        cdef Py_ssize_t* st = self.sc.ostr if i == self.narr else self.sc.astr + MAXD * i
        if (cnp.PyArray_TYPE(x) != self.prog.typenum or cnp.PyArray_NDIM(x) != self.nd
                or not cnp.PyArray_ISALIGNED(x) or writable and not cnp.PyArray_ISWRITEABLE(x)):
            return False
        for d in range(self.nd):
            if cnp.PyArray_DIM(x, d) != self.shape[MAXD * i + d] or cnp.PyArray_STRIDE(x, d) != st[d]:
                return False
        return True

    def run(self, out, tuple arrays, tuple scalars):
        """Run the write into ``out`` from ``arrays`` (the operands' buffers, in the plan's order) and
        ``scalars``; False (nothing done) where a buffer is not like the one the run was built for."""
        cdef Py_ssize_t narr = self.narr, i, k, d, err = 0
        cdef cnp.ndarray x
        cdef char* o
        cdef char* a
        cdef Py_ssize_t* row
        if len(arrays) != narr or len(scalars) != self.nsc or not cnp.PyArray_Check(out):
            return False
        x = <cnp.ndarray>out
        if not self._fits(x, narr, True):
            return False
        o = <char*>cnp.PyArray_DATA(x)
        for i in range(narr):
            if not cnp.PyArray_Check(arrays[i]):
                return False
            x = <cnp.ndarray>arrays[i]
            if not self._fits(x, i, False):
                return False
            a = <char*>cnp.PyArray_DATA(x)
            self.sc.abase[i] = a
            if i != self.target and a < o + self.nbytes[narr] and o < a + self.nbytes[i]:
                return False  # (shares memory with the target: the plan's path copies it)
        self.prog._fill_scalars(self.sc.bufs, scalars)
        for k in range(self.nslab):
            row = self.slab + k * (4 + 3 * MAXD)
            copy_strided(<char*>row[1], self.sc.abase[row[0]] + row[2], <int>row[3], row + 4, row + 4 + MAXD,
                         row + 4 + 2 * MAXD, self.prog.size)
        for ex in self.py_exchanges:
            ex.start()
        if self.nreq > self.nmsg:
            err = meshrt_startall(<int>(self.nreq - self.nmsg), <void*>self.reqs)
            if err:
                from mpi4py import MPI
                raise MPI.Exception(err)
        for k in range(self.nmsg):  # (their requests after the persistent ones; Waitall frees them)
            row = self.msg + 6 * k
            if row[0]:
                err = meshrt_irecv(<void*>row[1], <int>row[2], self.byte_handle, <int>row[3], <int>row[4],
                                   <size_t>row[5], <void*>(self.reqs + (self.nreq - self.nmsg + k) * meshrt_hs))
            else:
                err = meshrt_isend(<const void*>row[1], <int>row[2], self.byte_handle, <int>row[3], <int>row[4],
                                   <size_t>row[5], <void*>(self.reqs + (self.nreq - self.nmsg + k) * meshrt_hs))
            if err:
                from mpi4py import MPI
                raise MPI.Exception(err)
        if self.copy:
            memcpy(self.copy_buf, self.sc.abase[self.target], self.nbytes[self.target])
            self.sc.abase[self.target] = self.copy_buf
        for i in range(narr):
            if not self.ghost[i]:
                self.sc.pbase[i] = self.sc.abase[i]
        if self.nreq:
            with nogil:
                err = meshrt_waitall_n(<int>self.nreq, <void*>self.reqs, <void*>self.status)
            if err:
                from mpi4py import MPI
                raise MPI.Exception(err)
        for ex in self.py_exchanges:
            ex.wait()
        self.prog._go(self.bx, self.nbox, self.sl, self.of, o, self.oop, &self.sc)
        return True
