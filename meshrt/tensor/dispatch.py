"""The tables a `DistributedTensor` dispatches through to code in modules above its class.

``implements`` fills ``_HANDLED_FUNCTIONS`` (numpy function -> handler) for ``__array_function__``
and the ``__array_ufunc__`` of gufuncs such as ``np.matmul``; `ABOVE` names the modules that hold a
few methods' work (reductions, files, ufuncs over mixed operands). Those modules import
``distributed_tensor.py``, so it cannot import them: the package fronts that own them
(``meshrt/tensor/__init__.py``, ``meshrt/io/__init__.py``) fill `ABOVE`, and importing any part of
meshrt runs both first.
"""

from __future__ import annotations

from types import SimpleNamespace

# The modules above the class that hold some DistributedTensor methods' work, and who sets them:
#   npreduce: meshrt.tensor.numpy_reductions (var, std, argmax/argmin, any/all, multi-axis reductions,
#             ufunc.reduce/accumulate) -- set by meshrt/tensor/__init__.py
#   mixed:    meshrt.tensor.mixed (ufuncs over tensors of different shardings, or over numpy arrays) -- the same
#   io:       meshrt.io.npy (save, load: .npy files with MPI-IO) -- set by meshrt/io/__init__.py
#   formats:  meshrt.io.formats (to_zarr, from_zarr, to_hdf5, from_hdf5) -- the same
#   lazy:     meshrt.tensor.lazy (deferred elementwise expressions, fused evaluation) -- set by meshrt/tensor/__init__.py
#   advidx:   meshrt.tensor.advanced_index (index arrays and masks in t[key], t[key] = v) -- the same
#   fast:     meshrt.tensor.fastpath (t[i, j] of one element as one broadcast, cached) -- the same
#   array_api: meshrt.array_api (the namespace __array_namespace__ returns) -- set by meshrt/array_api/__init__.py
ABOVE = SimpleNamespace(npreduce=None, mixed=None, io=None, formats=None, lazy=None, advidx=None, fast=None,
                        array_api=None)


# numpy function -> its handler, called with the function's own arguments (see `implements`).
_HANDLED_FUNCTIONS = {}

# numpy function -> what `explain_op(func, *args)` prints for a function that is not elementwise (np.fft.*),
# filled by the module that implements it
EXPLAINERS = {}


def implements(*numpy_functions):
    """Register the decorated function as the DistributedTensor version of ``numpy_functions``.

    ``__array_function__`` calls it with numpy's arguments; any numpy function
    not registered raises TypeError naming the supported ones.  A ufunc
    registered here (``np.matmul`` is a gufunc, not an array function) is
    called from ``__array_ufunc__`` the same way, ``out=`` passed on if given.

    >>> @implements(np.copy)                                           # doctest: +SKIP
    ... def _copy(a, order="K", subok=False):
    ...     return a.copy()
    """
    def register(handler):
        for f in numpy_functions:
            _HANDLED_FUNCTIONS[f] = handler
        return handler
    return register


def _np_name(func) -> str:
    module = getattr(func, "__module__", None) or "numpy"
    sub = module.split(".", 1)[1] if module.startswith("numpy.") and not module.startswith("numpy._") else ""
    return f"np.{sub + '.' if sub else ''}{getattr(func, '__name__', func)}"
