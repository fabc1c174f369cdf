"""Numba kernels of meshrt, installed as ``meshrt.kernels``.

Local reductions over one process's contiguous buffer; DistributedTensor
combines their results across the mesh.

    >>> import numpy as np
    >>> from meshrt.kernels import local_sum
    >>> local_sum(np.arange(4.0))
    6.0
"""

import numpy as np
from numba import njit

__all__ = ["local_sum", "local_max", "local_min", "local_prod"]


# Kernels take a flat (ravelled) array; the wrappers check layout so a bad
# argument is a Python error, not a crash inside compiled code.
@njit(cache=True, nogil=True)
def _sum(a):
    acc = a.dtype.type(0) if a.size == 0 else a[0] - a[0]
    for i in range(a.size):
        acc += a[i]
    return acc


@njit(cache=True, nogil=True)
def _prod(a):
    acc = a[0] if a.size else a.dtype.type(1)
    for i in range(1, a.size):
        acc *= a[i]
    return acc


@njit(cache=True, nogil=True)
def _max(a):
    acc = a[0]
    for i in range(1, a.size):
        v = a[i]
        if v > acc or v != v:  # NaN propagates, as numpy.max
            acc = v
            if v != v:
                break
    return acc


@njit(cache=True, nogil=True)
def _min(a):
    acc = a[0]
    for i in range(1, a.size):
        v = a[i]
        if v < acc or v != v:
            acc = v
            if v != v:
                break
    return acc


def _flat(a, name):
    a = np.asarray(a)
    if not a.flags.c_contiguous:
        raise ValueError(
            f"{name}: array must be C-contiguous, got strides {a.strides} "
            f"for shape {a.shape}")
    if a.dtype.kind not in "biufc":
        raise ValueError(f"{name}: dtype {a.dtype} is not numeric")
    return a.reshape(-1)


def local_sum(a):
    """Sum of all elements (numpy's accumulator rules for small ints aside:
    the result has the array's dtype, bool sums as int64)."""
    a = _flat(a, "local_sum")
    if a.dtype == np.bool_:
        a = a.view(np.uint8).astype(np.int64)
    return _sum(a)


def local_prod(a):
    """Product of all elements, in the array's dtype (1 for an empty array)."""
    a = _flat(a, "local_prod")
    if a.dtype == np.bool_:
        return np.bool_(a.size == 0 or _min(a.view(np.uint8)) != 0)
    return _prod(a)


def local_max(a):
    """Largest element; NaN if any. An empty array is an error."""
    a = _flat(a, "local_max")
    if a.size == 0:
        raise ValueError("local_max: array is empty (size 0); max has no identity")
    if a.dtype == np.bool_:
        return np.bool_(_max(a.view(np.uint8)))
    return _max(a)


def local_min(a):
    """Smallest element; NaN if any. An empty array is an error."""
    a = _flat(a, "local_min")
    if a.size == 0:
        raise ValueError("local_min: array is empty (size 0); min has no identity")
    if a.dtype == np.bool_:
        return np.bool_(_min(a.view(np.uint8)))
    return _min(a)
