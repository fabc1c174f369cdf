"""What the ops compute on one process's values, one module per dialect, and the SPMD runner.

- `arith`: the scalar ``arith``/``math`` ops, one template each, valid for numpy and inside Numba.
- `linalg`: ``linalg``'s structured ops (``linalg.generic`` compiled with Numba, the named ops).
- `tosa`: the ``tosa`` ops on numpy arrays.
- `stablehlo`: the ``stablehlo`` ops on numpy arrays (the arithmetic of `meshrt.mlir.shardy`, run on
  shards or whole).
- `shard`: the ``shard`` ops on one process's block: the collectives, ``update_halo``, the index queries.
- `spmd`: runs a ``shard``-dialect function on every process of an MPI job (``func``, ``scf``,
  ``tensor``, ``affine`` itself; the modules above for the rest).

Above the dialects (`meshrt.mlir.dialects`, which they read), below `meshrt.mlir.shardy`.

>>> from meshrt.mlir.interpreters import stablehlo
>>> "stablehlo.add" in stablehlo.ELEMENTWISE
True
"""
