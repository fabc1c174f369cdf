"""What the ops compute on one process's values, one module per dialect, and the SPMD runner.

- `linalg`: the ``arith``/``math`` scalar semantics and ``linalg``'s structured ops (a body run per element).
- `tosa`: the ``tosa`` ops on numpy arrays.
- `stablehlo`: the ``stablehlo`` ops on numpy arrays (the global view's arithmetic, run on shards or whole).
- `spmd`: runs a ``shard``-dialect function on every process of an MPI job (``func``, ``scf``, ``cf``,
  ``tensor``, the shard collectives), calling the modules above for the rest.

Above the dialects (`meshrt.mlir.dialects`, which they read), below `meshrt.mlir.shardy`.

>>> from meshrt.mlir.interpreters import stablehlo
>>> "stablehlo.add" in stablehlo.ELEMENTWISE
True
"""
