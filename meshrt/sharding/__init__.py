"""Shardings: which mesh axes split which tensor dims, with partials, halos and uneven offsets.

``spec`` is the `Sharding` value and its shard arithmetic; ``text`` reads and writes its text forms
(MLIR ``shard.sharding``, Shardy ``#sdy.sharding<...>``) and draws `Sharding.visualize`'s picture;
``chunks`` lays the chunk grids of Zarr/HDF5 files against a sharding.  All of it is pure: no MPI.

>>> from meshrt.mesh import AbstractMesh
>>> Sharding(AbstractMesh((2, 2)), [[0], [1]]).shard_shape((6, 5), device=3)
(3, 3)
"""

from .spec import REDUCTION_KINDS, Sharding, split_offsets, split_sizes

__all__ = ["Sharding", "REDUCTION_KINDS", "split_sizes", "split_offsets"]
