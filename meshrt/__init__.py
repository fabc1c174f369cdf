"""meshrt: sharded tensor programs over MPI with the semantics of MLIR's shard dialect.

>>> from meshrt import AbstractMesh, Sharding
>>> Sharding(AbstractMesh((2, 2)), [[0], [1]]).shard_shape((6, 5), device=3)
(3, 3)
"""

import importlib.util as _util
import os as _os

if _util.find_spec(__name__ + "._blockcopy") is None:  # like numpy: say what to run, not a bare module name
    raise ImportError(
        f"meshrt's compiled extensions are missing ({__name__}._blockcopy was not found in "
        f"{_os.path.dirname(__file__)}). You are probably importing meshrt from a source checkout that was not "
        "built: run `pip install -e .` (or `python setup.py build_ext --inplace`) in the repository root, or, "
        "with an installed meshrt, run Python from outside the source tree so the installed package is imported.")

from .runtime import malloc as _malloc  # noqa: F401  (glibc: keep large buffers in the heap; MESHRT_MALLOC=0 opts out)

from .errors import CollectiveError, MeshError, ShardingError
from .mesh import AbstractMesh, Mesh
from .reduction import Generic, ReductionKind
from .sharding.spec import Sharding
from .runtime import check as _check
from . import halo as _halo
from .io import npy as _io
from .io.vtk import write_vtk as _write_vtk

# meshrt.io.write_vtk: ParaView output lives in vtk.py, which builds on io.py's helpers (so io.py cannot import it)
_io.write_vtk = _write_vtk
_io.__all__.append("write_vtk")
_check.instrument(_halo, _io)  # before the names below are bound
if _check.WATCH:
    from .runtime import watchdog as _watchdog

    _watchdog.start()
from .collectives import (
    all_gather, all_reduce, all_slice, all_to_all, broadcast, gather, mesh_shape, neighbors_linear_indices,
    process_linear_index, process_multi_index, recv, reduce, reduce_scatter, scatter, send, shard_shape, shift,
)
from .halo import HaloExchange, plan_halo, update_halo
from .reshard import explain_reshard, plan_reshard
from .tensor.distributed_tensor import DistributedTensor
from .tensor import numpy_reductions as _npreduce, numpy_shifts as _npshift, numpy_functions as _tensor_numpy  # noqa: F401  (register np.var, np.roll, np.where, ... for DistributedTensor)
from .tensor import mixed as _tensor_mixed
from .io import formats
from .tensor.dispatch import ABOVE as _ABOVE

# the DistributedTensor methods whose work lives in modules above tensor.py (see meshrt._tensor_dispatch)
_ABOVE.npreduce, _ABOVE.formats, _ABOVE.mixed = _npreduce, formats, _tensor_mixed
from .tensor.elementwise import explain_op
# binds meshrt.matmul to the function; the module stays importable as meshrt.matmul (sys.modules)
from .tensor.matmul import dot, einsum, explain_einsum, explain_matmul, matmul, tensordot
from .io.npy import CheckpointError, load_state, save_state
from .spmd import spmd
from .stencil.apply import Dirichlet, Neumann, apply_stencil, fill_ghosts, staggered, t_eff, update_halos

try:
    from importlib.metadata import version as _version

    __version__ = _version("meshrt")
except Exception:  # running from a source tree that is not installed
    __version__ = "0.1.0"

__all__ = [
    "AbstractMesh", "Mesh", "Sharding", "ReductionKind", "Generic", "DistributedTensor", "spmd",
    "MeshError", "ShardingError", "CollectiveError",
    "all_gather", "all_reduce", "all_slice", "all_to_all", "broadcast", "gather", "reduce", "reduce_scatter",
    "scatter", "send", "recv", "shift", "update_halo", "process_linear_index", "process_multi_index",
    "mesh_shape", "neighbors_linear_indices", "shard_shape",
    "HaloExchange", "plan_halo", "apply_stencil", "update_halos", "fill_ghosts", "Dirichlet", "Neumann",
    "staggered", "t_eff", "explain_op", "explain_reshard", "plan_reshard", "CheckpointError", "save_state", "load_state",
    "matmul", "dot", "tensordot", "einsum", "explain_matmul", "explain_einsum",
]
