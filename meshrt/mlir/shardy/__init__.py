"""StableHLO + ``sdy`` (Shardy) programs run in the global view, on `meshrt.DistributedTensor`.

- `program`: `SdyProgram` and `run_sdy`: each op of a function on the sharded values.
- `propagation`: the shardings of the values the program does not annotate.
- `window`: ``pad``, the dynamic slices, ``reduce_window`` and ``sort`` on the shards.
- `index`: ``gather`` and ``scatter`` on the shards.
- `cli`: what ``meshrt mlir run`` and ``meshrt mlir explain`` do with a Shardy program.

The top of `meshrt.mlir`: it reads the dialects and computes with `meshrt.mlir.interpreters`.

>>> from meshrt.mlir.shardy import program
>>> program.run_sdy.__name__
'run_sdy'
"""
