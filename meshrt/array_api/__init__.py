"""`meshrt.array_api`: the Python array API standard (2024.12) on `DistributedTensor`.

``x.__array_namespace__()`` of any tensor returns this module, so libraries written against the standard
(scikit-learn with ``array_api_dispatch=True``, SciPy with ``SCIPY_ARRAY_API=1``, array-api-compat,
array-api-extra) run on sharded data unchanged. The standard's ``device`` is meshrt's placement: ``x.device``
is the tensor's `Mesh`; creation functions take ``device=`` a `Mesh` (dim 0 split over all its axes) or a
`Sharding`; without one they use `default_device` (every process of ``MPI.COMM_WORLD`` on one axis, dim 0
split), which `set_default_device` changes. ``asarray(a)`` with the same global numpy array on every process
keeps each process's block. Every call is SPMD: all processes make it, with equal scalars.

>>> import meshrt.array_api as xp
>>> x = xp.asarray([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
>>> x.__array_namespace__() is xp, x.shape, float(xp.mean(x))
(True, (3, 2), 3.5)
"""

from __future__ import annotations

import builtins as _builtins
import sys as _sys

import numpy as _np

from ..tensor.dispatch import ABOVE as _ABOVE
from . import _device  # noqa: F401  (to_device reads its rules through ABOVE)
from ._device import GATHERS, default_device, set_default_device
from ._funcs import *  # noqa: F401,F403
from ._funcs import ELEMENTWISE as _ELEMENTWISE
from . import _funcs  # noqa: E402  (decide and CASES, for explain)
from . import fft, linalg  # noqa: F401

globals().update(_ELEMENTWISE)

__array_api_version__ = "2024.12"

e, inf, nan, pi, newaxis = _np.e, _np.inf, _np.nan, _np.pi, None
bool = _np.bool_  # noqa: A001
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float32, float64, complex64, complex128 = _np.float32, _np.float64, _np.complex64, _np.complex128


class _Info:
    """What `__array_namespace_info__` reports: meshrt's devices are meshes; data-dependent shapes are
    supported (results with uneven blocks); boolean indexing is supported."""

    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return default_device()

    def devices(self):
        return [default_device()]

    def default_dtypes(self, *, device=None):
        return {"real floating": float64, "complex floating": complex128, "integral": int64, "indexing": int64}

    def dtypes(self, *, device=None, kind=None):
        all_ = {"bool": bool, "int8": int8, "int16": int16, "int32": int32, "int64": int64, "uint8": uint8,
                "uint16": uint16, "uint32": uint32, "uint64": uint64, "float32": float32, "float64": float64,
                "complex64": complex64, "complex128": complex128}
        if kind is None:
            return {k: _np.dtype(v) for k, v in all_.items()}
        return {k: _np.dtype(v) for k, v in all_.items() if _np.isdtype(_np.dtype(v), kind)}


def __array_namespace_info__():
    """The standard's inspection object (devices, default dtypes, capabilities)."""
    return _Info()




class NamespacePlan:
    """What a namespace function does with its operands, as `explain_op` prints it.

    ``gathers`` is True when meshrt has no distributed algorithm for this call (the split operands are
    allgathered and numpy runs on the global arrays); ``how`` says which algorithm or why it gathers.
    """

    __slots__ = ("name", "gathers", "how")

    def __init__(self, name, gathers, how):
        self.name, self.gathers, self.how = name, gathers, how

    def __repr__(self):
        return f"NamespacePlan({self.name!r}, gathers={self.gathers}, how={self.how!r})"

    def __str__(self):
        return f"meshrt.array_api.{self.name}: {'gathers the split operands' if self.gathers else 'distributed'}" \
               f" ({self.how})"


# function name -> (always gathers a split operand?, how); the names missing here run meshrt's distributed
# form of numpy's function on the tensors (ufuncs, reductions, contractions, layout ops, scans)
_HOW = {
    "sort": "1-D split on dim 0: a sample sort (local sorts, splitters from samples, alltoallv, local merges, "
            "back to x's blocks); more dims: the sorted dim's mesh axes move to another dim (an all-to-all)",
    "searchsorted": "x1 split: each process counts its block's elements below each value, one allreduce; "
                    "x1 replicated: each process searches for its block of x2",
    "unique_values": "each process's distinct values (counts, first indices) allgathered and merged; the data "
                     "stay, inverse indices computed where the elements are",
    "nonzero": "each process's own nonzero indices; 1-D results with uneven blocks (an allgather of the counts)",
    "count_nonzero": "a distributed sum of x != 0",
    "linalg.solve": "LU with partial pivoting on the 2-D block-cyclic layout (meshrt.linalg.dense), then two "
                    "triangular solves; the solution split like x2",
    "linalg.inv": "LU with partial pivoting on the 2-D block-cyclic layout, the identity solved for",
    "linalg.det": "LU with partial pivoting on the 2-D block-cyclic layout; the diagonal allgathered",
    "linalg.slogdet": "LU with partial pivoting on the 2-D block-cyclic layout; the diagonal allgathered",
    "linalg.cholesky": "right-looking blocked Cholesky on the 2-D block-cyclic layout (meshrt.linalg.dense)",
    "linalg.matrix_power": "repeated squaring by SUMMA products on the 2-D block-cyclic layout",
    "linalg.eigh": "Householder reduction to real tridiagonal form on the 2-D block-cyclic layout (panels, "
                   "the trailing update one rank-2k GEMM), its eigenvalues on every process, its eigenvectors "
                   "by each process column for its own columns (bisection, inverse iteration), "
                   "back-transformation by the reflectors; eigenvectors split like x",
    "linalg.eigvalsh": "Householder reduction to real tridiagonal form on the 2-D block-cyclic layout, the "
                       "eigenvalues of the tridiagonal (replicated)",
    "linalg.pinv": "one-sided block Jacobi SVD on a column split (meshrt.linalg.svd), then V S^+ U^H by "
                   "SUMMA on the 2-D block-cyclic layout",
    "linalg.matrix_rank": "the singular values by one-sided block Jacobi sweeps on a column split "
                          "(meshrt.linalg.svd)",
    "linalg.cross": "operands of one shape, the vectors' axis not split: each process on its blocks (the "
                    "second resharded to the first's layout)",
    "linalg.diagonal": "a 2-D tensor: each process takes the diagonal elements it owns, one allreduce over the "
                       "other dim's mesh axes; the result split like the rows",
    "linalg.trace": "a 2-D tensor: each process sums the diagonal elements it owns, one allreduce",
    "linalg.outer": "split like x1 along rows, x2 allgathered (1-D)",
    "linalg.matrix_norm": "a 2-D tensor: 'fro', 1, inf (and negatives) as reductions; 2, -2, 'nuc' from the "
                          "singular values (meshrt.linalg.svd)",
}


_DISTRIBUTED_HOW = {k: v for k, v in _HOW.items() if isinstance(v, str)}
_DISTRIBUTED_HOW.update({"argsort": _HOW["sort"], "unique_counts": _HOW["unique_values"],
                         "unique_inverse": _HOW["unique_values"], "unique_all": _HOW["unique_values"]})


def explain(func, *operands, **kwargs):
    """The `NamespacePlan` of ``func(*operands)`` (``explain_op(xp.linalg.svd, x)`` calls it)."""
    name = func.__name__
    if func.__module__.endswith(".linalg"):
        name = "linalg." + name
    elif func.__module__.endswith(".fft"):
        name = "fft." + name
    split = [o for o in operands if hasattr(o, "sharding") and (_builtins.any(o.sharding.split_axes) or o.sharding.is_partial)]
    if name in ("linalg.qr", "linalg.svd", "linalg.svdvals"):
        x = operands[0]
        tall = linalg._row_split(x)
        full = kwargs.get("full_matrices", True) if name == "linalg.svd" else False
        if kwargs.get("mode", "reduced") == "complete":
            full = True
        if tall and not full and x.shape[1] * x.sharding.dim_split_size(0) <= x.shape[0]:
            return NamespacePlan(name, False, "TSQR: local QR of each row block, the small R factors allgathered "
                                              "and factored again; rows never move")
        if name == "linalg.qr" and split:
            return NamespacePlan(name, False, "blocked Householder QR on the 2-D block-cyclic layout "
                                              "(meshrt.linalg.dense)")
        if split and x.ndim == 2:
            return NamespacePlan(name, False, "one-sided block Jacobi on a column split (meshrt.linalg.svd): "
                                              "two column blocks per process, rotated pairwise and passed "
                                              "round a ring; U split on columns, Vh on rows")
        return NamespacePlan(name, (len(split) > 0), "not a tall matrix split on rows only, or full/complete "
                                                "factors asked: gathered")
    if name in ("cumulative_sum", "cumulative_prod"):
        return NamespacePlan(name, False, "a scan: local scans, an exclusive scan of the block totals")
    if name in _funcs.CASES or name in _DISTRIBUTED_HOW:
        why = _funcs.decide(name, *operands, **kwargs)
        if why:
            return NamespacePlan(name, True, why)
        return NamespacePlan(name, False, _DISTRIBUTED_HOW.get(name, "meshrt's distributed form")
                             if split else "every operand is replicated: computed locally, nothing moves")
    gathers, how = _HOW.get(name, (False, "meshrt's distributed form of numpy's function on the tensors "
                                          "(collectives planned per op; see explain_op(np.<ufunc>, ...))"))
    return NamespacePlan(name, gathers and (len(split) > 0), how if split or not gathers else
                         "every operand is replicated: computed locally, nothing moves")


def _register_explainers():
    from ..tensor.dispatch import EXPLAINERS

    for mod in (globals(), vars(linalg), vars(fft)):
        for n, f in list(mod.items()):
            if callable(f) and not n.startswith("_") and getattr(f, "__module__", "").startswith(__name__) \
                    and not isinstance(f, type):
                EXPLAINERS[f] = (lambda f: lambda *ops, **kw: explain(f, *ops, **kw))(f)


_register_explainers()
_ABOVE.array_api = _sys.modules[__name__]  # DistributedTensor.__array_namespace__ returns this module

from ._funcs import __all__ as _core

__all__ = sorted(set(_core) | set(_ELEMENTWISE) | {
    "e", "inf", "nan", "pi", "newaxis", "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64", "float32", "float64", "complex64", "complex128", "linalg", "fft", "__array_namespace_info__",
    "default_device", "set_default_device", "explain", "NamespacePlan"}) + ["__array_api_version__"]
