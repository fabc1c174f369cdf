"""``meshrt mlir run`` and ``meshrt mlir explain`` on Shardy programs (see `meshrt.mlir.shardy.program`).

`run_command`: every process reads its own shards of the ``.npy`` arguments (MPI-IO; a
replicated argument whole); rank 0 writes the whole results once every process has finished
(no partial output).

`explain`: the program text, each op followed by a comment with the sharding its results got and
the data it moved (bytes, summed over all processes), measured by running the program once on
zero-filled arguments of the signature's types.  Comments keep the text valid MLIR: JAX's parser
reads it as the original program.

>>> from meshrt.mlir import parse
>>> m = parse('''sdy.mesh @mesh = <["x"=1]>
... func.func @main(%a: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<4xf32> {
...   %0 = stablehlo.exponential %a : tensor<4xf32>
...   return %0 : tensor<4xf32>
... }''')
>>> print(explain(m, "main").splitlines()[2])
  %0 = stablehlo.exponential %a : tensor<4xf32>  // -> <@mesh, [{}]>
"""

from __future__ import annotations

import os
import sys

import numpy as np

from ...errors import MLIRError
from ...runtime import mpi as _mpi
from ...sharding.text import sdy_axes_text
from ...tensor.distributed_tensor import DistributedTensor
from ..ir import TensorType
from .program import SdyProgram
from ..interpreters import stablehlo as H

__all__ = ["run_command", "explain", "sdy_text"]


def sdy_text(value, mesh_name="mesh", rank=None) -> str:
    """The Shardy sharding text ``<@mesh, [{"x"}, {}]>`` of a runtime value (numpy: replicated)."""
    DT = DistributedTensor
    if hasattr(value, "src") and hasattr(value, "take"):  # a slice taken when used: its source's layout
        value = value.src
    if isinstance(value, DT):
        s = value.sharding
        dims = []
        for d in range(value.ndim):
            dims.append(sdy_axes_text(s.mesh, s.dim_axes(d) if d < len(s.split_axes) else ()))
        return f"<@{s.mesh.name}, [{', '.join(dims)}]>"
    nd = rank if rank is not None else len(getattr(value, "shape", ()))  # replicated, or a broadcast scalar
    return f"<@{mesh_name}, [{', '.join('{}' for _ in range(nd))}]>"


def explain(module, name="main", comm=None) -> str:
    """The program text with each op's result shardings and moved bytes as comments (on rank 0;
    every process must call it: it runs the program)."""
    if comm is None:
        from mpi4py import MPI

        comm = MPI.COMM_WORLD
    p = SdyProgram(module, comm)
    DT = DistributedTensor
    seen = {}
    orig_reshard, orig_gather = DT.reshard, DT.gather

    def reshard(t, sharding, *, out=None):
        from ...reshard import plan_reshard

        plan = plan_reshard(t.sharding, sharding, t.global_shape)
        p.count(" ".join(str(st) for st in plan.steps) or "local re-slice, no communication",
                plan.elements_moved * t.dtype.itemsize)
        return orig_reshard(t, sharding, out=out)

    def gather(t, root=None):
        from ...reshard import plan_reshard
        from ...sharding.spec import Sharding

        if p._op_now is not None:
            plan = plan_reshard(t.sharding, Sharding(t.mesh, []), t.global_shape)
            p.count("gather whole: " + " ".join(str(st) for st in plan.steps), plan.elements_moved * t.dtype.itemsize)
        return orig_gather(t, root)

    from ...tensor import distributed_tensor as _dt_module
    from ...tensor.reshape_plan import elements_sent

    orig_exchange = _dt_module._reshape_exchange

    def reshape_exchange(t, new, want):
        src = _dt_module._abstract_sharding(t.sharding.replace(halo_sizes=None))
        sent = elements_sent(src, t.global_shape, _dt_module._abstract_sharding(want), tuple(new), t.mesh.rank)
        p.count("reshape exchange of the runs that change owner", sent * t.dtype.itemsize, same_everywhere=False)
        return orig_exchange(t, new, want)

    try:
        _dt_module._reshape_exchange = reshape_exchange
        p.check(name)
        f = module.functions()[name]
        args = [np.zeros(t.shape, H.np_dtype(t)) if isinstance(t, TensorType) else np.zeros((), H.np_dtype(t))
                for t in f.attributes["function_type"].type.inputs]
        p.trace = {}
        DT.reshard, DT.gather = reshard, gather
        mesh_name = next(iter(p.mesh_attrs), "mesh")
        def on_result(op, res, local):
            if not local and op.results:
                seen[op] = [sdy_text(r, mesh_name, getattr(v.type, "rank", 0)) for r, v in zip(res, op.results)]
        p.on_result = on_result
        p.run(name, args)
    finally:
        DT.reshard, DT.gather = orig_reshard, orig_gather
        _dt_module._reshape_exchange = orig_exchange
        trace = p.trace or {}
        p.free()
    def key(op):
        return (str(op.location), op.name)

    own = {}
    for op, items in trace.items():
        n = sum(b for _, b, same in items if not same)
        if n:
            own[key(op)] = own.get(key(op), 0) + n
    with _mpi.internal("meshrt mlir explain", "gather of the bytes each op moved", comm):
        gathered = comm.gather(own, root=0)
    if comm.rank != 0:
        return ""
    totals = {}
    for d in gathered:
        for k, v in d.items():
            totals[k] = totals.get(k, 0) + v
    by_line = {}
    for op, items in trace.items():
        shared = [(w, b) for w, b, same in items if same]
        local = totals.get(key(op), 0)
        text = "; ".join(f"{w} [{b} B]" for w, b in shared)
        if local:
            text = (text + "; " if text else "") + f"{items[0][0] if not shared else 'manual collectives'} " \
                                                   f"[{local} B over all processes]"
        if text:
            by_line.setdefault(op.location.line, []).append(text)
    shard_line = {}
    for op, sh in seen.items():
        if sh:
            shard_line.setdefault(op.location.line, []).append(", ".join(sh))
    lines = module.source.splitlines()
    out = []
    total = 0
    for op, items in trace.items():
        total += sum(b for _, b, same in items if same)
    total += sum(totals.values())
    for i, line in enumerate(lines, 1):
        notes = []
        if i in shard_line:
            notes.append("-> " + "; ".join(shard_line[i]))
        if i in by_line:
            notes.append("moves: " + "; ".join(by_line[i]))
        out.append(line + ("  // " + " | ".join(notes) if notes else ""))
    fallback = sorted({f"{op.location} {op.name}" for op, _ in p.fallbacks})
    out.append(f"// meshrt: {comm.size} processes, {total} bytes moved in all")
    for fb in fallback:
        out.append(f"// meshrt: {fb} runs on gathered operands (no sharded implementation); its result is replicated")
    return "\n".join(out)


def run_command(module, func, arg_paths, out_dir, comm) -> int:
    """``meshrt mlir run`` of a Shardy module: 0 on success; errors found before the run are printed
    once (rank 0) and give 1 on every process; a failure while running aborts the job."""
    p = None
    try:
        p = SdyProgram(module, comm)
        p.check(func)
        arrays = p.read_args(func, arg_paths)
    except (MLIRError, OSError, ValueError) as e:
        if p is not None:
            p.free()
        if comm.rank == 0:
            print(f"meshrt mlir run: {e}", file=sys.stderr)
        return 1
    try:
        results = p.run(func, arrays, consume=True)
        outs = [p.whole(r, root=0) for r in results]
    except (MLIRError, ValueError) as e:
        print(f"[rank {comm.rank}] meshrt mlir run: {e}", file=sys.stderr)
        sys.stderr.flush()
        if comm.size > 1:
            comm.Abort(1)
        return 1
    p.free()
    if comm.rank == 0:
        os.makedirs(out_dir, exist_ok=True)
        for i, r in enumerate(outs):
            np.save(os.path.join(out_dir, f"result{i}.npy"), r)
    return 0
