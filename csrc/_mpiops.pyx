# cython: language_level=3
"""Native MPI user-op bodies for reductions MPI lacks (float16).

Each body has the ``MPI_User_function`` signature
``void f(void *in, void *inout, int *len, MPI_Datatype *dt)``; the datatype is
never read, so it is taken as ``void *`` and this module needs no ``mpi.h``:
it builds against any MPI (or none).  `meshrt.runtime.mpi` turns the addresses into
``MPI.Op`` handles with the ``MPI_Op_create`` of the MPI library already loaded.

Half arithmetic is numpy's: widen to float32, combine, round to nearest even.

>>> sorted(addresses())
['float16:max', 'float16:min', 'float16:product', 'float16:sum']
"""

from libc.stdint cimport uint16_t, uintptr_t

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    static inline float meshrt_h2f(uint16_t h) {
        uint32_t o = ((uint32_t)(h & 0x7fffu)) << 13;
        uint32_t e = o & (0x7c00u << 13);
        float f;
        o += (uint32_t)(127 - 15) << 23;
        if (e == (0x7c00u << 13)) {
            o += (uint32_t)(128 - 16) << 23;          /* inf / nan */
            memcpy(&f, &o, 4);
        } else if (e == 0) {
            const uint32_t mu = 113u << 23; float m;  /* zero / subnormal */
            o += 1u << 23;
            memcpy(&f, &o, 4); memcpy(&m, &mu, 4);
            f -= m;
        } else {
            memcpy(&f, &o, 4);
        }
        uint32_t u; memcpy(&u, &f, 4);
        u |= ((uint32_t)(h & 0x8000u)) << 16;
        memcpy(&f, &u, 4);
        return f;
    }
    static inline uint16_t meshrt_f2h(float x) {
        uint32_t u; memcpy(&u, &x, 4);
        uint32_t sign = u & 0x80000000u;
        uint16_t o;
        u ^= sign;
        if (u >= ((uint32_t)(127 + 16) << 23)) {
            o = (u > (255u << 23)) ? 0x7e00 : 0x7c00;   /* nan : inf */
        } else if (u < (113u << 23)) {
            const uint32_t mu = ((127 - 15) + (23 - 10) + 1) << 23; float m, f;
            memcpy(&f, &u, 4); memcpy(&m, &mu, 4);
            f += m;                                     /* rounds to nearest even */
            memcpy(&u, &f, 4);
            o = (uint16_t)(u - mu);
        } else {
            uint32_t odd = (u >> 13) & 1u;
            u += ((uint32_t)(15 - 127) << 23) + 0xfffu;
            u += odd;
            o = (uint16_t)(u >> 13);
        }
        return (uint16_t)(o | (sign >> 16));
    }
    static void meshrt_f16_sum(void *in, void *io, int *len, void *dt) {
        const uint16_t *a = (const uint16_t *)in; uint16_t *b = (uint16_t *)io;
        for (int i = 0, n = *len; i < n; i++) b[i] = meshrt_f2h(meshrt_h2f(a[i]) + meshrt_h2f(b[i]));
    }
    static void meshrt_f16_prod(void *in, void *io, int *len, void *dt) {
        const uint16_t *a = (const uint16_t *)in; uint16_t *b = (uint16_t *)io;
        for (int i = 0, n = *len; i < n; i++) b[i] = meshrt_f2h(meshrt_h2f(a[i]) * meshrt_h2f(b[i]));
    }
    /* nan propagates, as numpy.maximum / numpy.minimum */
    static void meshrt_f16_max(void *in, void *io, int *len, void *dt) {
        const uint16_t *a = (const uint16_t *)in; uint16_t *b = (uint16_t *)io;
        for (int i = 0, n = *len; i < n; i++) {
            float x = meshrt_h2f(a[i]), y = meshrt_h2f(b[i]);
            if (x > y || x != x) b[i] = a[i];
        }
    }
    static void meshrt_f16_min(void *in, void *io, int *len, void *dt) {
        const uint16_t *a = (const uint16_t *)in; uint16_t *b = (uint16_t *)io;
        for (int i = 0, n = *len; i < n; i++) {
            float x = meshrt_h2f(a[i]), y = meshrt_h2f(b[i]);
            if (x < y || x != x) b[i] = a[i];
        }
    }
    """
    void meshrt_f16_sum(void *, void *, int *, void *) noexcept nogil
    void meshrt_f16_prod(void *, void *, int *, void *) noexcept nogil
    void meshrt_f16_max(void *, void *, int *, void *) noexcept nogil
    void meshrt_f16_min(void *, void *, int *, void *) noexcept nogil


def addresses():
    """``{"float16:<kind>": address}`` of the native user-op bodies."""
    return {
        "float16:sum": <uintptr_t>&meshrt_f16_sum,
        "float16:product": <uintptr_t>&meshrt_f16_prod,
        "float16:max": <uintptr_t>&meshrt_f16_max,
        "float16:min": <uintptr_t>&meshrt_f16_min,
    }
