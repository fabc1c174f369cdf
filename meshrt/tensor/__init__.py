"""`DistributedTensor` and everything that is only its implementation.

Lowest first: ``dispatch`` (the tables methods dispatch through), ``layout`` (what a sharding and a
shape mean for this process's buffer), ``index_plan`` (numpy keys planned as per-shard slices); then
the parts of the class with a concept of their own (``reductions``, ``files``, ``index_exec``,
``ufunc``); ``distributed_tensor``, the class; the numpy functions registered for it
(``numpy_functions``, ``numpy_reductions``, ``numpy_shifts``; contractions and ``np.linalg`` are
`meshrt.linalg`'s, one layer up), the
sharding rule of elementwise ops over mixed operands (``elementwise``, ``mixed``); deferred
elementwise expressions evaluated as one compiled loop with halo reads (``lazy``, on ``fuse``,
which generates the loop's source).

>>> from meshrt import Mesh, Sharding                                  # doctest: +SKIP
>>> t = DistributedTensor.from_global(np.arange(8.0), Sharding(Mesh((-1,)), [[0]]))  # doctest: +SKIP
>>> float((2 * t).sum())                                               # doctest: +SKIP
56.0
"""

import numpy as np  # noqa: F401  (the example uses it)

from .dispatch import ABOVE as _ABOVE, implements
from .distributed_tensor import DistributedTensor
from .._compiled import fresh as _fresh
from .._keys import install_deferred as _install_deferred

# (compiled by setup.py, each; its source where the build is stale; fastpath before numpy_shifts imports it)
_fast = _fresh("meshrt.tensor.fastpath")
# registering np.where, np.var, np.roll, ... for DistributedTensor happens at their import
from . import advanced_index as _advidx, mixed as _mixed, numpy_functions, numpy_reductions, numpy_shifts, numpy_stats, numpy_misc  # noqa: F401
from . import fft as _fft  # noqa: F401  (np.fft.* on DistributedTensor)
from .elementwise import explain_op

_lazy = _fresh("meshrt.tensor.lazy")
explain_fused = _lazy.explain_fused

# the DistributedTensor methods whose work lives in the modules above the class (see dispatch.ABOVE)
_ABOVE.npreduce, _ABOVE.mixed, _ABOVE.lazy, _ABOVE.advidx = numpy_reductions, _mixed, _lazy, _advidx
_ABOVE.fast = _fast
_fast.install()  # (its compiled fronts for t[key], a 0-d value's arithmetic, the operators)
_install_deferred((_lazy.LazyTensor, _lazy._Pending), _lazy.setitem)  # (before the calibration: its path)
_lazy._calibrate()

# (matmul, dot, tensordot, einsum, explain_matmul, explain_einsum: meshrt/__init__.py binds them here too,
# from meshrt.linalg, for imports from before the move)
__all__ = ["DistributedTensor", "implements", "explain_op", "explain_fused"]
