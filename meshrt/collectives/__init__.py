"""The shard dialect's collectives on local numpy arrays (SPMD: every process calls).

Names and attribute names are the dialect's.  A device group is given by
``mesh_axes`` (None = all axes, ``()`` = a group of one); ``root``, ``source``
and ``destination`` are in-group multi-indices (an int in-group index is
accepted too; a list works like a tuple).  Sizes that do not divide follow
MLIR's uneven rule (extra elements on the trailing pieces); `all_gather` and
`gather` take the dialect's equal pieces unless given ``sizes=``.
``wait=False`` returns a `Handle`; its ``wait()`` returns the result.

Under ``mpiexec -n 4`` with ``mesh = Mesh((2, 2))``, device (0, 1):

>>> all_gather(np.array([[5, 6], [7, 8]]), mesh, [1], 1)     # doctest: +SKIP
array([[1, 2, 5, 6],
       [3, 4, 7, 8]])

Results are new arrays, except where the data is unchanged: `all_slice`
returns a view of ``x``, `broadcast` returns ``x`` itself on the root, and the
data-moving ops on a group of one return ``x``.  Every collective that returns
an array takes ``out=``, a C-contiguous array that gets the result and is
returned (`reduce` and `gather` use it on the root only).  ``average`` on int dtypes is
the floor of the mean (sum, then floor division by the group size).

``MESHRT_CHECK=1`` makes every collective first compare op, attributes,
shape and dtype across its group, and raise `CollectiveError` naming the
disagreeing in-group ranks on every process.  Without it nothing is compared
(an always-on check would cost one more collective per call): a reduction
kind that differs across the group (``sum`` here, ``max`` there) gives wrong
values silently, and unequal `all_gather` pieces without ``sizes=`` may hang.
"""

from __future__ import annotations

import sys as _sys

import numpy as np  # noqa: F401  (the examples use it)

from . import common as _common
from ..runtime import check as _settings
from .. import _collfront
from .common import _DIRECT_DTYPES, _fast, _groups, set_check
from .index_ops import mesh_shape, neighbors_linear_indices, process_linear_index, process_multi_index, shard_shape
from .move import _all_gather, _all_slice, _all_to_all, _broadcast, _gather, _scatter
from .p2p import _recv, _send, _shift
from .reductions import _all_reduce, _reduce, _reduce_scatter
from .._collfront import Handle
from ..mesh import Mesh  # noqa: F401  (the examples use it)
from ..reduction import Generic, ReductionKind

__all__ = [
    "all_gather", "all_reduce", "all_slice", "all_to_all", "broadcast", "gather", "reduce",
    "reduce_scatter", "scatter", "send", "recv", "shift",
    "process_linear_index", "process_multi_index", "mesh_shape", "neighbors_linear_indices", "shard_shape",
    "Handle", "ReductionKind", "Generic", "set_check",
]

# This file is the public front; the collectives live in modules of their own, one per kind:
#   common     groups, argument checks, result buffers and the plan cache `_fast`
#   reduce     all_reduce, reduce, reduce_scatter
#   move       all_gather, gather, broadcast, scatter, all_to_all, all_slice
#   p2p        send, recv, shift
#   index_ops  process_linear_index, process_multi_index, mesh_shape, neighbors_linear_indices, shard_shape


# ``collectives.CHECK``: the one setting, which lives in meshrt.runtime.check; `set_check` updates this copy
_settings.mirror(_sys.modules[__name__])


# -- the public names: compiled fronts over the Python implementations imported above -
# Each runs a call planned before in C (`meshrt._collfront`) and hands every other call
# to the Python implementation, which plans it and raises every error.
_PYTHON = {"all_reduce": _all_reduce, "reduce": _reduce, "reduce_scatter": _reduce_scatter, "broadcast": _broadcast,
           "all_gather": _all_gather, "gather": _gather, "scatter": _scatter, "all_to_all": _all_to_all,
           "all_slice": _all_slice, "shift": _shift, "send": _send, "recv": _recv}
_collfront.install(_fast, _groups, _DIRECT_DTYPES, _PYTHON, _settings.CHECK)
from .._collfront import (  # noqa: E402  (the fronts need the implementations above)
    all_gather, all_reduce, all_slice, all_to_all, broadcast, gather, recv, reduce, reduce_scatter, scatter, send,
    shift,
)

for _name, _impl in _PYTHON.items():
    _public = getattr(_collfront, _name)
    _public.__doc__, _public.__module__ = _impl.__doc__, __name__
del _name, _impl, _public
