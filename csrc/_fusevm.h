/* The chain kernels of meshrt._fusevm: acc = start; acc = acc OP x; ... ; dst = acc, over n elements.
 *
 * A chain's accumulator lives in vector registers for a block of elements (4 vectors of 32 bytes), the
 * operations of the chain are applied to it one after the other, and only its operands are loaded: a
 * chain of k operations costs k loads and one store per element, as a compiled loop does, where one
 * loop per operation over a buffer would cost 2k loads and k stores (3x slower in cache, measured).
 * Every operation is the IEEE operation of its dtype, in the chain's order; the "R" forms keep numpy's
 * operand order (x OP acc). Built with -ffp-contract=off: no fused multiply-add.
 */
#ifndef MESHRT_FUSEVM_H
#define MESHRT_FUSEVM_H

#include <math.h>
#include <stdint.h>
#include <string.h>

enum {
    FV_START = 0, FV_ADD, FV_SUB, FV_MUL, FV_DIV, FV_RADD, FV_RSUB, FV_RMUL, FV_RDIV,
    FV_NEG, FV_SQUARE, FV_SQRT, FV_ABS, FV_NOPS
};

#if defined(__GNUC__) && defined(__x86_64__) && defined(__linux__) && !defined(__clang__)
#define FV_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FV_CLONES
#endif

/* one element: the chains' tails, and the operations the vector loop has no form for */
#define FV_ONE(T, SFX, SQRT, FABS)                                                                 \
static inline T fv_one##SFX(int64_t op, T a, T x) {                                                \
    switch (op) {                                                                                  \
    case FV_ADD: return a + x;    case FV_SUB: return a - x;                                       \
    case FV_MUL: return a * x;    case FV_DIV: return a / x;                                       \
    case FV_RADD: return x + a;   case FV_RSUB: return x - a;                                      \
    case FV_RMUL: return x * a;   case FV_RDIV: return x / a;                                      \
    case FV_NEG: return -a;       case FV_SQUARE: return a * a;                                    \
    case FV_SQRT: return SQRT(a); case FV_ABS: return FABS(a);                                     \
    }                                                                                              \
    return a;                                                                                      \
}                                                                                                  \
/* elements i0..n-1 of a chain, one at a time */                                                   \
static inline void fv_tail##SFX(const int64_t* rows, int64_t nops, T* const* slot, const T* src,   \
                                T* dst, int64_t i0, int64_t n) {                                   \
    int64_t i, o;                                                                                  \
    for (i = i0; i < n; i++) {                                                                     \
        T a = src[i];                                                                              \
        for (o = 0; o < nops; o++) {                                                               \
            int64_t op = rows[2 * o];                                                              \
            a = fv_one##SFX(op, a, op <= FV_RDIV ? slot[rows[2 * o + 1]][i] : (T)0);               \
        }                                                                                          \
        dst[i] = a;                                                                                \
    }                                                                                              \
}

#if defined(__GNUC__) || defined(__clang__)

#define FV_DEFINE(T, SFX, SQRT, FABS)                                                              \
typedef T fv_v##SFX __attribute__((vector_size(32)));                                              \
enum { FV_W##SFX = (int)(32 / sizeof(T)), FV_B##SFX = 4 * (int)(32 / sizeof(T)) };                 \
static inline fv_v##SFX fv_ld##SFX(const T* p) { fv_v##SFX v; memcpy(&v, p, 32); return v; }       \
static inline void fv_st##SFX(T* p, fv_v##SFX v) { memcpy(p, &v, 32); }                           \
FV_ONE(T, SFX, SQRT, FABS)                                                                         \
/* rows: (op, slot) pairs after the start; slot[s]: the operand's n elements */                    \
FV_CLONES static void fv_chain##SFX(const int64_t* rows, int64_t nops, T* const* slot,             \
                                    const T* src, T* dst, int64_t n) {                             \
    const int W = FV_W##SFX;                                                                       \
    int64_t i = 0, o;                                                                              \
    for (; i + FV_B##SFX <= n; i += FV_B##SFX) {                                                   \
        fv_v##SFX a0 = fv_ld##SFX(src + i), a1 = fv_ld##SFX(src + i + W);                          \
        fv_v##SFX a2 = fv_ld##SFX(src + i + 2 * W), a3 = fv_ld##SFX(src + i + 3 * W);              \
        for (o = 0; o < nops; o++) {                                                               \
            int64_t op = rows[2 * o];                                                              \
            const T* x = slot[rows[2 * o + 1]] + i;                                                \
            fv_v##SFX x0, x1, x2, x3;                                                              \
            if (op <= FV_RDIV) {                                                                   \
                x0 = fv_ld##SFX(x); x1 = fv_ld##SFX(x + W);                                        \
                x2 = fv_ld##SFX(x + 2 * W); x3 = fv_ld##SFX(x + 3 * W);                            \
            }                                                                                      \
            switch (op) {                                                                          \
            case FV_ADD: a0 = a0 + x0; a1 = a1 + x1; a2 = a2 + x2; a3 = a3 + x3; break;            \
            case FV_SUB: a0 = a0 - x0; a1 = a1 - x1; a2 = a2 - x2; a3 = a3 - x3; break;            \
            case FV_MUL: a0 = a0 * x0; a1 = a1 * x1; a2 = a2 * x2; a3 = a3 * x3; break;            \
            case FV_DIV: a0 = a0 / x0; a1 = a1 / x1; a2 = a2 / x2; a3 = a3 / x3; break;            \
            case FV_RADD: a0 = x0 + a0; a1 = x1 + a1; a2 = x2 + a2; a3 = x3 + a3; break;           \
            case FV_RSUB: a0 = x0 - a0; a1 = x1 - a1; a2 = x2 - a2; a3 = x3 - a3; break;           \
            case FV_RMUL: a0 = x0 * a0; a1 = x1 * a1; a2 = x2 * a2; a3 = x3 * a3; break;           \
            case FV_RDIV: a0 = x0 / a0; a1 = x1 / a1; a2 = x2 / a2; a3 = x3 / a3; break;           \
            case FV_NEG: a0 = -a0; a1 = -a1; a2 = -a2; a3 = -a3; break;                            \
            case FV_SQUARE: a0 = a0 * a0; a1 = a1 * a1; a2 = a2 * a2; a3 = a3 * a3; break;         \
            default: {                                                                             \
                T t[4 * (32 / sizeof(T))];                                                         \
                int j;                                                                             \
                fv_st##SFX(t, a0); fv_st##SFX(t + W, a1);                                          \
                fv_st##SFX(t + 2 * W, a2); fv_st##SFX(t + 3 * W, a3);                              \
                for (j = 0; j < FV_B##SFX; j++) t[j] = fv_one##SFX(op, t[j], 0);                   \
                a0 = fv_ld##SFX(t); a1 = fv_ld##SFX(t + W);                                        \
                a2 = fv_ld##SFX(t + 2 * W); a3 = fv_ld##SFX(t + 3 * W);                            \
            }                                                                                      \
            }                                                                                      \
        }                                                                                          \
        fv_st##SFX(dst + i, a0); fv_st##SFX(dst + i + W, a1);                                      \
        fv_st##SFX(dst + i + 2 * W, a2); fv_st##SFX(dst + i + 3 * W, a3);                          \
    }                                                                                              \
    fv_tail##SFX(rows, nops, slot, src, dst, i, n);                                                \
}

#else  /* no vector extensions: one element at a time */

#define FV_DEFINE(T, SFX, SQRT, FABS)                                                              \
FV_ONE(T, SFX, SQRT, FABS)                                                                         \
static void fv_chain##SFX(const int64_t* rows, int64_t nops, T* const* slot,                       \
                          const T* src, T* dst, int64_t n) {                                       \
    fv_tail##SFX(rows, nops, slot, src, dst, 0, n);                                                \
}

#endif

FV_DEFINE(double, d, sqrt, fabs)
FV_DEFINE(float, f, sqrtf, fabsf)

#endif
