"""meshrt: sharded tensor programs over MPI with the semantics of MLIR's shard dialect.

>>> from meshrt import AbstractMesh, Sharding
>>> Sharding(AbstractMesh((2, 2)), [[0], [1]]).shard_shape((6, 5), device=3)
(3, 3)
"""

import importlib as _importlib
import importlib.util as _util
import os as _os
import sys as _sys

if _util.find_spec(__name__ + "._blockcopy") is None:  # like numpy: say what to run, not a bare module name
    raise ImportError(
        f"meshrt's compiled extensions are missing ({__name__}._blockcopy was not found in "
        f"{_os.path.dirname(__file__)}). You are probably importing meshrt from a source checkout that was not "
        "built: run `pip install -e .` (or `python setup.py build_ext --inplace`) in the repository root, or, "
        "with an installed meshrt, run Python from outside the source tree so the installed package is imported.")

from .runtime import malloc as _malloc  # noqa: F401  (glibc: keep large buffers in the heap; MESHRT_MALLOC=0 opts out)
from .runtime import mpich as _mpich

_mpich.configure()  # before MPI starts: MPICH's generic collectives (MESHRT_DEVICE_COLLECTIVES=keep opts out)
from .runtime import threads as _threads

_threads.limit_blas_threads()  # under mpiexec: the node's cores shared out among its processes' BLAS pools

from .errors import CollectiveError, MeshError, PerformanceWarning, ShardingError
from .mesh import AbstractMesh, Mesh
from .reduction import Generic, ReductionKind
from .sharding import Sharding
from .runtime import check as _check
from . import halo as _halo

_check.instrument(_halo, ("update_halo",))  # before the names below are bound
if _check.WATCH:
    from .runtime import watchdog as _watchdog

    _watchdog.start()
from .collectives import (
    all_gather, all_reduce, all_slice, all_to_all, broadcast, gather, mesh_shape, neighbors_linear_indices,
    process_linear_index, process_multi_index, recv, reduce, reduce_scatter, scatter, send, shard_shape, shift,
)
from .halo import HaloExchange, plan_halo, update_halo
from .reshard import explain_reshard, plan_reshard
from .tensor import DistributedTensor, explain_fused, explain_op
# binds meshrt.matmul to the function (the module is meshrt.linalg.matmul)
from .linalg import dot, einsum, explain_einsum, explain_matmul, matmul, tensordot
from . import linalg  # noqa: F401  (meshrt.linalg: contractions, TSQR, np.linalg on tensors)
from .stencil import Dirichlet, Neumann, apply_stencil, fill_ghosts, staggered, t_eff, update_halos
from .io import CheckpointError, load_state, save_state
from . import io  # noqa: F401  (meshrt.io: the file formats; wires DistributedTensor's file methods)
from .spmd import spmd
from . import array_api  # noqa: F401  (meshrt.array_api: the array API standard; x.__array_namespace__())
from . import fft  # noqa: F401  (meshrt.fft: numpy's FFT functions on DistributedTensors)

# Module paths from before the package had a folder per concept, kept for users' imports
# (``from meshrt.formats import ...``, ``import meshrt.chunks``): each names the module's new home.
_MOVED = {"formats": "io.formats", "vtk": "io.vtk", "chunks": "sharding.chunks", "matmul": "linalg.matmul",
          "stencil_bench": "stencil.bench", "mpiexec": "runtime.mpiexec", "tensor.matmul": "linalg.matmul"}
for _old, _new in _MOVED.items():
    _sys.modules[f"{__name__}.{_old}"] = _importlib.import_module(f"{__name__}.{_new}")
    if "." not in _old:
        globals().setdefault(_old, _sys.modules[f"{__name__}.{_old}"])  # meshrt.matmul stays the function
del _old, _new
# meshrt.tensor's names from before meshrt.linalg (``from meshrt.tensor import matmul``: the function)
for _name in ("matmul", "dot", "tensordot", "einsum", "explain_matmul", "explain_einsum"):
    setattr(_sys.modules[f"{__name__}.tensor"], _name, globals()[_name])
del _name

try:
    from importlib.metadata import version as _version

    __version__ = _version("meshrt")
except Exception:  # running from a source tree that is not installed
    __version__ = "0.1.0"

__all__ = [
    "AbstractMesh", "Mesh", "Sharding", "ReductionKind", "Generic", "DistributedTensor", "spmd",
    "MeshError", "ShardingError", "CollectiveError", "PerformanceWarning",
    "all_gather", "all_reduce", "all_slice", "all_to_all", "broadcast", "gather", "reduce", "reduce_scatter",
    "scatter", "send", "recv", "shift", "update_halo", "process_linear_index", "process_multi_index",
    "mesh_shape", "neighbors_linear_indices", "shard_shape",
    "HaloExchange", "plan_halo", "apply_stencil", "update_halos", "fill_ghosts", "Dirichlet", "Neumann",
    "staggered", "t_eff", "explain_op", "explain_fused", "explain_reshard", "plan_reshard", "CheckpointError",
    "save_state", "load_state",
    "matmul", "dot", "tensordot", "einsum", "explain_matmul", "explain_einsum",
]
