"""Files: parallel ``.npy`` checkpoints with MPI-IO, Zarr v3, HDF5 + XDMF, ParaView (VTK).

``npy`` writes and reads one standard ``.npy`` file per tensor and the checkpoints of
`save_state`/`load_state`, with the helpers every format shares (agreement on a write, crash-safe
commits); ``formats`` is Zarr and HDF5 (+ XDMF); ``vtk`` writes ParaView's ``.pvti``/``.vti``.
The chunk grids of files against a sharding are pure arithmetic, in `meshrt.sharding.chunks`.

>>> save_state("ckpt", {"u": u, "v": v})                  # doctest: +SKIP
>>> loaded = load_state("ckpt", {"u": sharding})          # doctest: +SKIP
"""

from ..runtime import check as _check
from ..tensor.dispatch import ABOVE as _ABOVE
from . import npy as _npy

# every process enters a checkpoint together: MESHRT_CHECK agrees on it, the watchdog names it
_check.instrument(_npy, ("save_state", "load_state"))  # before the names below are bound
from .npy import (  # noqa: E402
    CheckpointError, FileView, Loaded, file_view, load_state, load_tensor, read_npy, save_state, save_tensor,
    write_npy, writer_of_block,
)
from . import formats  # noqa: E402
from .series import from_series, open_series  # noqa: E402
from .vtk import write_vtk  # noqa: E402
from .checkpoint import Checkpointer, Resumed, restart_count, resume  # noqa: E402

# DistributedTensor.save/load and to_zarr/... do their work here (see meshrt.tensor.dispatch.ABOVE)
_ABOVE.io, _ABOVE.formats = _npy, formats

__all__ = ["CheckpointError", "write_npy", "read_npy", "save_tensor", "load_tensor", "save_state", "load_state",
           "Loaded", "writer_of_block", "file_view", "FileView", "write_vtk", "open_series", "from_series",
           "Checkpointer", "Resumed", "resume", "restart_count"]
