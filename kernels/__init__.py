"""Numba kernels of meshrt, installed as ``meshrt.kernels``.

Local reductions over one process's block; DistributedTensor combines their
results across the mesh.  They take any N-d array, strided views included (the
interior of a buffer with halos is reduced in place, not copied first).

    >>> import numpy as np
    >>> from meshrt.kernels import local_sum
    >>> local_sum(np.arange(12.0).reshape(3, 4)[1:, 1:3])
    30.0
"""

import numpy as np
from numba import njit

__all__ = ["local_sum", "local_max", "local_min", "local_prod", "local_sq_dev", "local_shifted_moments"]


# Each kernel walks the rows (the last axis) of an N-d array of any strides and
# keeps eight independent accumulators per row: one accumulator chains every add
# on the previous one (latency-bound); eight keep the FPU busy, which made float
# sums 2x faster than numpy's here.  Summation order therefore differs from a
# plain loop, as numpy's pairwise sum does.
@njit(cache=True, nogil=True)
def _sum(a, zero):
    acc = zero
    for idx in np.ndindex(a.shape[:-1]):
        row = a[idx]
        n = row.shape[0]
        s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = zero
        j = 0
        while j + 8 <= n:
            s0 += row[j]
            s1 += row[j + 1]
            s2 += row[j + 2]
            s3 += row[j + 3]
            s4 += row[j + 4]
            s5 += row[j + 5]
            s6 += row[j + 6]
            s7 += row[j + 7]
            j += 8
        while j < n:
            s0 += row[j]
            j += 1
        acc += ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
    return acc


@njit(cache=True, nogil=True)
def _prod(a, one):
    acc = one
    for idx in np.ndindex(a.shape[:-1]):
        row = a[idx]
        n = row.shape[0]
        p0 = p1 = p2 = p3 = one
        j = 0
        while j + 4 <= n:
            p0 *= row[j]
            p1 *= row[j + 1]
            p2 *= row[j + 2]
            p3 *= row[j + 3]
            j += 4
        while j < n:
            p0 *= row[j]
            j += 1
        acc *= (p0 * p1) * (p2 * p3)
    return acc


@njit(cache=True, nogil=True)
def _extreme_int(a, largest, first):
    """max (``largest``) or min of a non-empty integer array starting with ``first``."""
    acc = first
    for idx in np.ndindex(a.shape[:-1]):
        row = a[idx]
        m = acc
        if largest:
            for j in range(row.shape[0]):
                v = row[j]
                m = v if v > m else m
        else:
            for j in range(row.shape[0]):
                v = row[j]
                m = v if v < m else m
        acc = m
    return acc


@njit(cache=True, nogil=True)
def _extreme_float(a, largest, first):
    """max (``largest``) or min of a non-empty float array starting with ``first``;
    NaN wins, as in numpy (a flag per row keeps the hot loop free of branches)."""
    acc = first
    for idx in np.ndindex(a.shape[:-1]):
        row = a[idx]
        n = row.shape[0]
        m0 = m1 = m2 = m3 = first
        nan = False
        j = 0
        while j + 4 <= n:
            v0, v1, v2, v3 = row[j], row[j + 1], row[j + 2], row[j + 3]
            if largest:
                m0 = v0 if v0 > m0 else m0
                m1 = v1 if v1 > m1 else m1
                m2 = v2 if v2 > m2 else m2
                m3 = v3 if v3 > m3 else m3
            else:
                m0 = v0 if v0 < m0 else m0
                m1 = v1 if v1 < m1 else m1
                m2 = v2 if v2 < m2 else m2
                m3 = v3 if v3 < m3 else m3
            nan |= (v0 != v0) | (v1 != v1) | (v2 != v2) | (v3 != v3)
            j += 4
        while j < n:
            v = row[j]
            nan |= v != v
            m0 = v if (largest and v > m0) or (not largest and v < m0) else m0
            j += 1
        if nan or first != first:
            for k in range(n):
                if row[k] != row[k]:
                    return row[k]
            return first
        for m in (m0, m1, m2, m3):
            if (largest and m > acc) or (not largest and m < acc):
                acc = m
    return acc


def _array(a, name):
    if not isinstance(a, np.ndarray):
        raise ValueError(f"{name}: expected a numpy.ndarray, got {type(a).__name__}")
    if a.dtype.kind not in "biufc":
        raise ValueError(f"{name}: dtype {a.dtype} is not numeric")
    return a.reshape(1) if a.ndim == 0 else a


def local_sum(a):
    """Sum of all elements in the array's dtype (bool sums as int64)."""
    a = _array(a, "local_sum")
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    if a.size == 0:
        return a.dtype.type(0)
    return _sum(a, a.dtype.type(0))


@njit(cache=True, nogil=True, fastmath=True)  # reassociation lets LLVM vectorize the squares
def _sq_dev(a, mean, zero):
    acc = zero
    for idx in np.ndindex(a.shape[:-1]):
        row = a[idx]
        n = row.shape[0]
        s0 = s1 = s2 = s3 = zero
        j = 0
        while j + 4 <= n:
            d0 = row[j] - mean
            d1 = row[j + 1] - mean
            d2 = row[j + 2] - mean
            d3 = row[j + 3] - mean
            s0 += d0 * d0
            s1 += d1 * d1
            s2 += d2 * d2
            s3 += d3 * d3
            j += 4
        while j < n:
            d0 = row[j] - mean
            s0 += d0 * d0
            j += 1
        acc += (s0 + s1) + (s2 + s3)
    return acc


@njit(cache=True, nogil=True, fastmath=True)
def _shifted_moments(a, c, zero):
    s1 = zero
    s2 = zero
    for idx in np.ndindex(a.shape[:-1]):
        row = a[idx]
        n = row.shape[0]
        p0 = p1 = q0 = q1 = zero
        j = 0
        while j + 2 <= n:
            d0 = row[j] - c
            d1 = row[j + 1] - c
            p0 += d0
            p1 += d1
            q0 += d0 * d0
            q1 += d1 * d1
            j += 2
        if j < n:
            d0 = row[j] - c
            p0 += d0
            q0 += d0 * d0
        s1 += p0 + p1
        s2 += q0 + q1
    return s1, s2


def local_shifted_moments(a, c):
    """``(sum(x - c), sum((x - c)**2))`` of a real float array in one pass: with ``c`` near the
    mean (an element of the array, say), ``M2 = s2 - s1**2 / n`` keeps its digits.

    >>> [float(s) for s in local_shifted_moments(np.array([1.0, 2.0, 3.0]), 1.0)]
    [3.0, 5.0]
    """
    a = _array(a, "local_shifted_moments")
    if a.dtype.kind != "f":
        raise TypeError(f"local_shifted_moments: a real float array is needed, got {a.dtype}")
    if a.size == 0:
        return a.dtype.type(0), a.dtype.type(0)
    s1, s2 = _shifted_moments(a, a.dtype.type(c), a.dtype.type(0))
    return a.dtype.type(s1), a.dtype.type(s2)


def local_sq_dev(a, mean):
    """Sum of squared deviations from ``mean`` of a real float array, in one pass without a temporary.

    >>> float(local_sq_dev(np.array([1.0, 2.0, 3.0]), 2.0))
    2.0
    """
    a = _array(a, "local_sq_dev")
    if a.dtype.kind != "f":
        raise TypeError(f"local_sq_dev: a real float array is needed, got {a.dtype}")
    if a.size == 0:
        return a.dtype.type(0)
    return _sq_dev(a, a.dtype.type(mean), a.dtype.type(0))


def local_prod(a):
    """Product of all elements, in the array's dtype (1 for an empty array)."""
    a = _array(a, "local_prod")
    if a.dtype == np.bool_:
        return np.bool_(a.size == 0 or _extreme_int(a.view(np.uint8), False, np.uint8(a.flat[0])) != 0)
    if a.size == 0:
        return a.dtype.type(1)
    return _prod(a, a.dtype.type(1))


def _extremum(a, name, largest):
    a = _array(a, name)
    if a.size == 0:
        raise ValueError(f"{name}: array is empty (size 0); {name[6:]} has no identity")
    if a.dtype == np.bool_:
        a = a.view(np.uint8)
        return np.bool_(_extreme_int(a, largest, a.flat[0]))
    kernel = _extreme_float if a.dtype.kind == "f" else _extreme_int
    return kernel(a, largest, a.flat[0])


def local_max(a):
    """Largest element; NaN if any. An empty array is an error."""
    return _extremum(a, "local_max", True)


def local_min(a):
    """Smallest element; NaN if any. An empty array is an error."""
    return _extremum(a, "local_min", False)
