# C-level entry of meshrt._blockcopy, for other Cython modules:
#
#     from meshrt._blockcopy cimport copy_strided
#
# (setup.py puts a build-time copy of this file at meshrt/_blockcopy.pxd on
# Cython's include path, so the qualified cimport resolves.)

cdef int copy_strided(char* dst, const char* src, int ndim,
                      const Py_ssize_t* shape,
                      const Py_ssize_t* dst_strides,
                      const Py_ssize_t* src_strides,
                      Py_ssize_t itemsize) noexcept nogil
# Copy an N-d strided block of `itemsize`-byte elements, `ndim` <= 64,
# byte strides (negative allowed). The regions must not overlap.
# Returns 0, or -1 if ndim is out of range.
