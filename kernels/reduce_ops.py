"""User reduction functions compiled to native ``MPI_User_function`` bodies.

``user_function(f, dtype)`` compiles an elementwise ``f(a, b) -> c`` with
Numba into a C callback ``void(void *in, void *inout, int *len, void *dt)``
that computes ``inout[i] = f(in[i], inout[i])``; `meshrt.runtime.mpi` turns its
address into an ``MPI.Op``.  Compiled once per (function, dtype).

>>> cf = user_function(lambda a, b: max(a, b), np.dtype("float64"))   # doctest: +SKIP
>>> cf.address > 0                                                   # doctest: +SKIP
True
"""

from __future__ import annotations

import numpy as np
from numba import carray, cfunc, njit, types
from numba.core.registry import CPUDispatcher

__all__ = ["user_function", "combine_kernel", "MPI_USER_FUNCTION"]

# MPI_User_function; the MPI_Datatype* is never read, so it is a plain pointer.
MPI_USER_FUNCTION = types.void(types.voidptr, types.voidptr, types.CPointer(types.intc), types.voidptr)

_cache: dict = {}


def _jitted(fn):
    if isinstance(fn, CPUDispatcher):
        return fn
    pyfunc = getattr(fn, "_pyfunc", None)  # a numba CFunc: recompile its Python body
    return njit(pyfunc if pyfunc is not None else fn, nogil=True)


def user_function(fn, dtype):
    """A Numba ``cfunc`` with the ``MPI_User_function`` signature applying ``fn`` elementwise.

    A ``cfunc`` that already has that signature is returned as is.
    """
    sig = getattr(fn, "_sig", None)
    if sig is not None and len(sig.args) == 4 and sig.return_type == types.void:
        return fn
    dtype = np.dtype(dtype)
    key = (fn, dtype)
    cf = _cache.get(key)
    if cf is None:
        f = _jitted(fn)
        nbtype = _numba_type(dtype)

        def body(inp, inout, n, dt):
            m = n[0]
            a = carray(inp, (m,), nbtype)
            b = carray(inout, (m,), nbtype)
            for i in range(m):
                b[i] = f(a[i], b[i])

        try:
            cf = cfunc(MPI_USER_FUNCTION, nopython=True)(body)
        except Exception as e:
            from meshrt.errors import CollectiveError

            raise CollectiveError(
                f"reduction: generic function {getattr(fn, '__name__', fn)!r} does not compile for {dtype}: {e}"
            ) from None
        _cache[key] = cf
    return cf


def combine_kernel(fn, dtype):
    """``kernel(a, b)``: ``b[:] = fn(a, b)`` elementwise, compiled (fallback path)."""
    f = _jitted(fn)

    @njit(nogil=True)
    def kernel(a, b):
        for i in range(a.shape[0]):
            b[i] = f(a[i], b[i])

    return kernel


def _numba_type(dtype: np.dtype):
    from numba.np.numpy_support import from_dtype

    try:
        return from_dtype(dtype)
    except Exception:
        from meshrt.errors import CollectiveError

        raise CollectiveError(f"reduction: generic reductions do not support {dtype}") from None
