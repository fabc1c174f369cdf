"""meshrt against mlir-opt on LLVM's own shard dialect tests: one table, rerunnable.

Give it a folder holding copies of LLVM's ``mlir/test/Dialect/Shard/*.mlir``
and ``mlir/test/Conversion/ShardToMPI/*.mlir`` (nothing is fetched)::

    python tools/shard_conformance.py /tmp/llvm-shard            # the table
    python tools/shard_conformance.py /tmp/llvm-shard --json out.json -v

Every function of every file (split at ``// -----`` and then into one module
per function: the file's grids, aliases and the function with its callees)
goes through these questions:

1. ``mlir-opt``: does ``mlir-opt`` (22) parse and verify it?  Only those count.
2. ``meshrt``: do `meshrt.mlir.parse` and `verify` accept it too?  ``printed``:
   does mlir-opt read meshrt's ``Module.generic()`` print of it as the same IR
   (mlir-opt's generic print of both texts equal)?
3. ``known``: does the executor know every op of the function (``check_function``)?
   ``global``: does the annotated global program run in meshrt's global mode (one process,
   any grid)?
4. ``runnable`` / ``ran``: partitioned with ``mlir-opt --pass-pipeline=
   builtin.module(func.func(sharding-propagation,shard-partition))`` (falling
   back to ``shard-partition`` alone when propagation refuses the function),
   on a grid of at most ``--nprocs`` processes, with arguments meshrt can make
   (tensors, ints, floats): is it run under ``mpiexec`` and do its gathered
   results equal those of the global program run un-partitioned on whole numpy
   arrays (meshrt's global mode, every op a numpy operation checked op by op
   in tests/test_mlir_conformance.py)?  Arguments are split and results
   gathered per the shardings ``sharding-propagation`` gives them.  A
   function with no ``shard.shard`` is already per-process IR: it is run as
   it is and counted under ``ran, no ref`` (it ran; nothing to compare
   with).  Results defined by reading uninitialised memory (a reduction into
   a ``tensor.empty``) are marked ``undefined``.

A chunk with ``expected-error`` that mlir-opt itself refuses is an invalid
case: meshrt must reject it, and the table says how many on the line where
mlir-opt reports its error.  (An expected error of a pass, as in
invalid_annotated.mlir, annotates valid IR: its functions count as such.)

Runs take one ``mpiexec`` per function: minutes for LLVM's files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

LOWER_FLAGS = ("--test-grid-all-slice-op-lowering", "--convert-shard-to-mpi", "--canonicalize")  # as meshrt.mlir.lowering (and LLVM's test of the pass)

PIPELINES = ("builtin.module(func.func(sharding-propagation,shard-partition))",
             "builtin.module(func.func(shard-partition))")
PROPAGATION = "builtin.module(func.func(sharding-propagation))"
HERE = os.path.dirname(os.path.abspath(__file__))

# -- splitting files into functions (pure text work) ------------------------------------------------

_COMMENT = re.compile(r"//[^\n]*")
_ITEM_START = re.compile(r"\s*(?:[#!]|%|\"|[A-Za-z_][\w$]*\.[A-Za-z_]|module\b|func\b)")
_EXPECTED = re.compile(r"//\s*expected-error\s*@([+-]\d+)?")


def chunks(text: str) -> list:
    """``[(first line number, chunk text)]``: the file split at ``// -----`` lines."""
    out, start, buf = [], 1, []
    for i, line in enumerate(text.splitlines(keepends=True), 1):
        if line.strip() == "// -----":
            out.append((start, "".join(buf)))
            start, buf = i + 1, []
        else:
            buf.append(line)
    out.append((start, "".join(buf)))
    return [(s, c) for s, c in out if c.strip()]


def _strip_comments(text: str) -> str:
    """Comments blanked (same length, newlines kept) so brackets can be counted."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while j < len(text) and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = len(text) if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def top_level_items(text: str) -> list:
    """The top-level ops of a chunk as ``(kind, name, text)``, descending into one ``module { }``.

    ``kind`` is ``"func"`` (``name`` its symbol), ``"module"`` (``text`` the header
    up to ``{``) or ``"other"`` (grids, aliases ...).
    """
    clean = _strip_comments(text)
    items, depth, start = [], 0, None
    i = 0
    while i < len(clean):
        c = clean[i]
        if start is None and not c.isspace():
            start = i
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "\n" and depth == 0 and start is not None:
            if not _ITEM_START.match(clean, i + 1) and clean[i + 1:].strip():
                i += 1
                continue  # a continuation line (``-> tensor<...> {``)
            items.append(clean[start:i])
            start = None
        i += 1
    if start is not None and clean[start:].strip():
        items.append(clean[start:])
    out = []
    # one ``module { }`` is descended into, also after top-level aliases (``#map = affine_map<...>``)
    modules = [it for it in items if it.strip().endswith("}") and _module_body_start(it.strip()) is not None]
    for it in items:
        it = it.strip()
        body = _module_body_start(it) if len(modules) == 1 and it.endswith("}") else None
        if body is not None:
            out += [("module", "", it[:body])] + top_level_items(it[body:-1])
            continue
        f = re.match(r"func\.func\s+(?:(?:private|public|nested)\s+)?@([\w$.]+|\"[^\"]*\")", it)
        out.append(("func", f.group(1), it) if f else ("other", "", it))
    return out


def _module_body_start(item: str):
    """Where the region of ``module [@name] [attributes {...}] {`` starts (after its ``{``), else None."""
    m = re.match(r"(?:builtin\.)?module\s*(?:@[\w$.]+\s*)?", item)
    if not m:
        return None
    i = m.end()
    if item.startswith("attributes", i):
        i = item.index("{", i)
        depth = 0
        for j in range(i, len(item)):
            depth += {"{": 1, "}": -1}.get(item[j], 0)
            if depth == 0:
                i = j + 1
                break
    rest = item[i:].lstrip()
    return len(item) - len(rest) + 1 if rest.startswith("{") else None


def function_modules(chunk: str) -> list:
    """``[(function name, module text)]``: each function with the chunk's other items and its callees."""
    items = top_level_items(chunk)
    header = next((t for k, _, t in items if k == "module"), None)
    others = [t for k, _, t in items if k == "other"]
    funcs = {n: t for k, n, t in items if k == "func"}
    out = []
    for name, body in funcs.items():
        keep, todo = [name], [name]
        while todo:
            for callee in re.findall(r"call\s+@([\w$.]+)", funcs[todo.pop()]):
                if callee in funcs and callee not in keep:
                    keep.append(callee)
                    todo.append(callee)
        parts = others + [funcs[n] for n in funcs if n in keep]
        text = "\n".join(parts) + "\n"
        if header is not None:
            text = header + "\n" + text + "}\n"
        out.append((name, text))
    return out


def expected_error_line(chunk: str, first_line: int):
    """The absolute line an ``expected-error`` annotation points at (the first one), else None."""
    for k, line in enumerate(chunk.splitlines(), first_line):
        m = _EXPECTED.search(line)
        if m:
            return k + int(m.group(1) or 0)
    return None


# -- mlir-opt ------------------------------------------------------------------------------------------

def mlir_opt_path(given=None):
    if given:
        return given
    sys.path.insert(0, os.path.dirname(HERE))
    from meshrt.cli import find_mlir_opt

    return find_mlir_opt()


def _run_mlir_opt(exe, text, *flags):
    with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as f:
        f.write(text)
    try:
        p = subprocess.run([exe, *flags, f.name], capture_output=True, text=True, timeout=120)
        return p.returncode == 0, p.stdout, p.stderr
    finally:
        os.unlink(f.name)


def partition(exe, text):
    """(pipeline, per-process text) of the first pipeline mlir-opt runs without error, else (None, stderr)."""
    err = ""
    for pipe in PIPELINES:
        ok, out, err = _run_mlir_opt(exe, text, f"--pass-pipeline={pipe}")
        if ok:
            return pipe, out
    return None, err.strip().splitlines()[0] if err.strip() else "mlir-opt failed"


# -- meshrt --------------------------------------------------------------------------------------------

def meshrt_accepts(text, name="<llvm>"):
    """(ok, message): meshrt's parse + verify."""
    from meshrt.mlir import MLIRError, parse, verify

    try:
        verify(parse(text, name))
        return True, ""
    except MLIRError as e:
        return False, str(e)


def printed_back(exe, text, module):
    """True when mlir-opt reads meshrt's generic print of ``module`` (parsed from ``text``) as the
    same IR as ``text``: mlir-opt's own generic prints of the two are equal (so attributes of
    dialects meshrt keeps as opaque text compare as MLIR sees them)."""
    try:
        printed = module.generic()
    except Exception:  # noqa: BLE001 (a partial sharding has no LLVM 22 text)
        return False
    ok1, want, _ = _run_mlir_opt(exe, text, "--mlir-print-op-generic")
    ok2, got, _ = _run_mlir_opt(exe, printed, "--mlir-print-op-generic")
    return ok1 and ok2 and want == got


def processes_needed(modules, fname, limit):
    """The most processes, at most ``limit``, on which every grid the function (or a callee) uses in
    any of ``modules`` resolves, with every static in-group coordinate (``root = [1, 2]``) inside its
    grid axis; None when no count fits."""
    from meshrt.errors import MeshError
    from meshrt.mesh import dims_create
    from meshrt.mlir import DYNAMIC
    from meshrt.mlir.interpreters.spmd import _functions_reached

    shapes, reach = {}, {}
    for module in modules:
        grids = module.grids()
        for f in _functions_reached(module, fname):
            for op in f.walk():
                g = getattr(op.attributes.get("grid"), "name", None)
                if g not in grids:
                    continue
                shapes[g] = tuple(-1 if s == DYNAMIC else s for s in grids[g].attributes["shape"])
                axes = op.attributes.get("grid_axes", ())
                for key in ("root", "source", "destination"):
                    for ax, c in zip(axes, op.attributes.get(key, ())):
                        if c != DYNAMIC:
                            reach[(g, ax)] = max(reach.get((g, ax), 0), c + 1)
    if not shapes:
        return 1
    for n in range(limit, 0, -1):
        try:
            resolved = {g: dims_create(n, shape) for g, shape in shapes.items()}
        except MeshError:
            continue
        if all(resolved[g][ax] >= need for (g, ax), need in reach.items()):
            return n
    return None


def reads_uninitialised(module, fname):
    """True when a reduction (linalg.reduce, or a generic with a reduction loop) accumulates into a
    ``tensor.empty`` (seen through ``shard.shard``): its result is undefined in MLIR."""
    defs = {}
    for op in module.functions()[fname].walk():
        for r in op.results:
            defs[r] = op
    for op in module.functions()[fname].walk():
        if op.name == "linalg.reduce" or (op.name == "linalg.generic"
                                          and "reduction" in op.attributes.get("iterator_types", ())):
            seg = op.attributes.get("operandSegmentSizes")
            outs = op.operands[seg[0]:] if seg else op.operands[len(op.operands) - len(op.results):]
            for v in outs:
                d = defs.get(v)
                while d is not None and d.name == "shard.shard":
                    d = defs.get(d.operands[0])
                if d is not None and d.name == "tensor.empty":
                    return True
    return False


def arguments_makeable(module, fname):
    """None when meshrt can make random arguments of every argument type, else the first one it cannot."""
    from meshrt.mlir import ScalarType
    from meshrt.mlir.dialects.memref import shaped

    for t in module.functions()[fname].attributes["function_type"].type.inputs:
        elem = shaped(t).element if shaped(t) is not None else t  # a tensor or a ranked memref
        if not isinstance(elem, ScalarType) or elem.name == "bf16":
            return str(t)
    return None


def make_arguments(module, fname, seed=0, dynamic=12):
    """Random global arguments of the function (``?`` dims take ``dynamic``; index scalars are 0)."""
    import numpy as np

    from meshrt.mlir.dialects.memref import shaped

    rng = np.random.default_rng(seed)
    args = []
    for t in module.functions()[fname].attributes["function_type"].type.inputs:
        if shaped(t) is None:
            dt = t.numpy_dtype
            args.append(dt.type(0 if t.name == "index" else 3))
            continue
        t = shaped(t)
        shape = tuple(dynamic if d is None else d for d in t.shape)
        dt = t.element.numpy_dtype
        if dt.kind == "f":
            args.append(rng.standard_normal(shape).astype(dt))
        elif dt.kind == "b":
            args.append(rng.integers(0, 2, shape).astype(dt))
        else:
            args.append(rng.integers(-50, 50, shape).astype(dt))
    return args


def run_global(module, fname):
    """``"ran"`` when the annotated global program runs in global mode in this process, else the error."""
    from mpi4py import MPI

    from meshrt.mlir.interpreters.spmd import run_function

    try:
        run_function(module, fname, make_arguments(module, fname), comm=MPI.COMM_SELF)
        return "ran"
    except Exception as e:  # noqa: BLE001
        return f"{type(e).__name__}: {e}".splitlines()[0][:300]


# -- the worker: one function under mpiexec --------------------------------------------------------------

def worker(job_path, out_path):
    """Run one job (``job.json``) on COMM_WORLD; rank 0 writes ``{"status": ..., "detail": ...}``."""
    import numpy as np
    from mpi4py import MPI

    from meshrt import Sharding
    from meshrt.mlir import parse
    from meshrt.mlir.interpreters.spmd import Program, function_shardings, gather_results, local_parts, run_function

    comm = MPI.COMM_WORLD
    with open(job_path) as f:
        job = json.load(f)
    fname = job["function"]
    try:
        g = parse(job["global"], "global.mlir")
        p = parse(job["partitioned"], "partitioned.mlir")
        args = make_arguments(g, fname)
        low = parse(job["lowered"], "lowered.mlir") if job.get("lowered") else None
        lowered = None
        if job["per_process"]:
            part = Program(p, comm)
            results = part.run(fname, args)
            part.free()
            status, detail = "ran", "per-process IR: no global reference"
            if low is not None:
                lowered = _run_lowered(low, fname, args, results, comm)
        else:
            expected = run_function(g, fname, args, comm=MPI.COMM_SELF)
            prog = Program(parse(job["shardings"], "propagated.mlir"), comm)
            arg_s, res_s = function_shardings(prog, fname)
            part = Program(p, comm)
            local = local_parts(args, arg_s)
            results = part.run(fname, local)
            got = gather_results(results, res_s, comm)
            part.free()
            if low is not None:
                lowered = _run_lowered(low, fname, local, results, comm)
            prog.free()
            status, detail = "equal", ""
            if comm.rank == 0:
                for k, (a, e) in enumerate(zip(got, expected)):
                    if isinstance(e, Sharding):
                        same = str(a) == str(e)
                    else:
                        a, e = np.asarray(a), np.asarray(e)
                        tol = 1e-3 if e.dtype in (np.float16, np.float32) else 1e-9
                        same = a.shape == e.shape and a.dtype == e.dtype and bool(
                            np.allclose(a, e, rtol=tol, atol=tol, equal_nan=True))
                    if not same:
                        status, detail = "differs", f"result {k} differs from the global run"
                        break
    except Exception as e:  # noqa: BLE001 (a table cell, not a crash)
        status, detail = "error", f"{type(e).__name__}: {e}".splitlines()[0][:300]
        if comm.size > 1:  # this process alone may have failed: say so, then end the job
            with open(f"{out_path}.rank{comm.rank}", "w") as f:
                json.dump({"status": status, "detail": f"rank {comm.rank}: {detail}"}, f)
            comm.Abort(3)
    if comm.rank == 0:
        with open(out_path, "w") as f:
            json.dump({"status": status, "detail": detail, "lowered": lowered}, f)


def _run_lowered(low, fname, local, results, comm):
    """``"equal"`` when mlir-opt's mpi lowering, run on the same local arguments, gives the partitioned
    program's results on every process; else what differs (or the error)."""
    import numpy as np

    from meshrt import Sharding
    from meshrt.mlir.interpreters.spmd import Program
    from meshrt.mlir.lowering import first_difference

    prog = Program(low, comm)
    try:
        got = prog.run(fname, [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in local])
    except Exception as e:  # noqa: BLE001 (a table cell)
        got = f"error: {type(e).__name__}: {e}".splitlines()[0][:300]
    finally:
        prog.free()
    if isinstance(got, str):
        return got
    plain = [(a, b) for a, b in zip(results, got) if not isinstance(a, Sharding)]
    d = first_difference([a for a, _ in plain], [b for _, b in plain], rtol=1e-5, atol=1e-6)
    for rank, d in enumerate(comm.allgather(d)):
        if d is not None:
            return f"differs: result {d[0]} at {list(d[1])} on process {rank}: {d[2]!r} vs {d[3]!r}"
    return "equal"


def run_job(job, nprocs, timeout=120):
    from meshrt.launch import find_mpiexec

    mpiexec = find_mpiexec()
    with tempfile.TemporaryDirectory() as d:
        jp, op = os.path.join(d, "job.json"), os.path.join(d, "out.json")
        with open(jp, "w") as f:
            json.dump(job, f)
        cmd = [mpiexec, "-n", str(nprocs), sys.executable, os.path.abspath(__file__), "--worker", jp, op]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"status": "error", "detail": f"timed out after {timeout} s"}
        for name in ["out.json"] + sorted(n for n in os.listdir(d) if n.startswith("out.json.rank")):
            try:
                with open(os.path.join(d, name)) as f:
                    return json.load(f)
            except (OSError, ValueError):
                continue
        tail = (p.stderr or p.stdout).strip().splitlines()
        return {"status": "error", "detail": tail[-1][:300] if tail else f"exit {p.returncode}"}


# -- the table ---------------------------------------------------------------------------------------------

def examine(directory, exe, nprocs=4, run=True, verbose=False):
    """One record per function (and per invalid case) of every ``.mlir`` file under ``directory``."""
    from meshrt.mlir import parse
    from meshrt.mlir.interpreters.spmd import check_function, is_partitioned

    records = []
    for fn in sorted(f for f in os.listdir(directory) if f.endswith(".mlir")):
        with open(os.path.join(directory, fn)) as f:
            text = f.read()
        for first, chunk in chunks(text):
            want_line = expected_error_line(chunk, first)
            # an expected error of a pass (partition, conversion) annotates valid IR: only a
            # chunk that mlir-opt itself refuses is an invalid case
            padded = "\n" * (first - 1) + chunk
            if want_line is not None:
                accepted, _, err = _run_mlir_opt(exe, padded)
                if not accepted:
                    ok, msg = meshrt_accepts(padded, fn)
                    at = re.match(r"[^:]*:(\d+):", msg)
                    theirs = re.search(r"\.mlir:(\d+):\d+: error", err)
                    line = int(theirs.group(1)) if theirs else want_line
                    records.append({"file": fn, "kind": "invalid", "line": line, "rejected": not ok,
                                    "on_line": bool(at) and int(at.group(1)) == line, "message": msg})
                    continue
            for name, mod_text in function_modules(chunk):
                rec = {"file": fn, "kind": "function", "function": name}
                records.append(rec)
                rec["mlir_opt"], _, err = _run_mlir_opt(exe, mod_text)
                if not rec["mlir_opt"]:
                    rec["detail"] = err.strip().splitlines()[0] if err.strip() else ""
                    continue
                rec["meshrt"], msg = meshrt_accepts(mod_text, f"{fn}@{name}")
                if not rec["meshrt"]:
                    rec["detail"] = msg
                    continue
                g = parse(mod_text)
                rec["printed"] = printed_back(exe, mod_text, g)
                try:
                    check_function(g, name)
                    rec["known"] = True
                except Exception as e:  # noqa: BLE001
                    rec["known"], rec["detail"] = False, str(e)
                if rec["known"] and not is_partitioned(g, name) and arguments_makeable(g, name) is None:
                    rec["global"] = run_global(g, name)  # global mode needs no processes: any grid
                pipe, part_text = partition(exe, mod_text)
                rec["pipeline"] = pipe
                if pipe is None:
                    rec["runnable"], rec["detail"] = False, f"mlir-opt cannot partition it: {part_text}"
                    continue
                ok, msg = meshrt_accepts(part_text, f"{fn}@{name}.partitioned")
                if not ok:
                    rec["runnable"], rec["detail"] = False, f"partitioned text refused: {msg}"
                    continue
                p = parse(part_text)
                try:
                    check_function(p, name)
                except Exception as e:  # noqa: BLE001
                    rec["runnable"], rec["detail"] = False, f"partitioned: {e}"
                    continue
                shardings_text = mod_text
                if pipe == PIPELINES[0]:  # the argument/result shardings propagation chose
                    ok, shardings_text, _ = _run_mlir_opt(exe, mod_text, f"--pass-pipeline={PROPAGATION}")
                n = processes_needed([g, p, parse(shardings_text)], name, nprocs)
                bad_arg = arguments_makeable(g, name)
                if n is None:
                    rec["runnable"], rec["detail"] = False, f"its grid needs more than {nprocs} processes"
                    continue
                if bad_arg is not None:
                    rec["runnable"], rec["detail"] = False, f"no numpy value for an argument of type {bad_arg}"
                    continue
                rec["runnable"], rec["nprocs"] = True, n
                rec["per_process"] = is_partitioned(g, name)
                rec["undefined"] = reads_uninitialised(g, name)
                # MLIR's own lowering of the partitioned program to the mpi dialect (ops LLVM 22 does
                # not lower stay shard ops): run next to it on the same processes and arguments
                flags = LOWER_FLAGS if "shard.all_slice" in part_text else LOWER_FLAGS[1:]  # as lowering.lower_flags
                ok, low_text, err = _run_mlir_opt(exe, part_text, *flags)
                rec["lowering"] = "made" if ok else f"mlir-opt: {err.strip().splitlines()[0] if err.strip() else 'failed'}"
                if ok and "failed to legalize" in err:
                    rec["unlowered"] = sorted(set(re.findall(r"failed to legalize operation '([\w.]+)'", err)))
                if run:
                    res = run_job({"function": name, "global": mod_text, "partitioned": part_text,
                                   "shardings": shardings_text, "per_process": rec["per_process"],
                                   "lowered": low_text if ok else None}, n)
                    rec["ran"], rec["detail"] = res["status"], res["detail"]
                    rec["lowered"] = res.get("lowered")
                if verbose:
                    print(f"  {fn} @{name}: {rec.get('ran', 'runnable')} {rec.get('detail', '')}", file=sys.stderr)
    return records


def _add(a, b):
    if isinstance(a, str) or isinstance(b, str):
        x = [int(v) for v in str(a or "0/0").split("/")]
        y = [int(v) for v in str(b).split("/")]
        return f"{x[0] + y[0]}/{x[1] + y[1]}"
    return a + b


def table(records) -> str:
    """The per-file table and the totals."""
    files = sorted({r["file"] for r in records})
    widths = (8, 7, 7, 6, 9, 8, 9, 11, 8)
    head = (f"{'file':40} {'mlir-opt':>8} {'meshrt':>7} {'printed':>7} {'known':>6} {'global':>9} "
            f"{'runnable':>8} {'ran=numpy':>9} {'ran, no ref':>11} {'lowered=':>8}")
    lines = [head, "-" * len(head)]
    tot = [0] * len(widths)
    for fn in files:
        fs = [r for r in records if r["file"] == fn and r["kind"] == "function" and r.get("mlir_opt")]
        glob_ = [r for r in fs if "global" in r]
        row = [len(fs), sum(1 for r in fs if r.get("meshrt")), sum(1 for r in fs if r.get("printed")),
               sum(1 for r in fs if r.get("known")),
               f"{sum(1 for r in glob_ if r['global'] == 'ran')}/{len(glob_)}",
               sum(1 for r in fs if r.get("runnable")), sum(1 for r in fs if r.get("ran") == "equal"),
               sum(1 for r in fs if r.get("ran") == "ran"), sum(1 for r in fs if r.get("lowered") == "equal")]
        inv = [r for r in records if r["file"] == fn and r["kind"] == "invalid"]
        if fs or not inv:
            lines.append(f"{fn:40} " + " ".join(f"{v:>{w}}" for v, w in zip(row, widths)))
            tot = [_add(a, b) for a, b in zip(tot, row)]
        if inv:
            rej = sum(r["rejected"] for r in inv)
            on = sum(r["on_line"] for r in inv)
            lines.append(f"{fn:40} invalid cases: {len(inv)}, meshrt rejects {rej}, "
                         f"on mlir-opt's error line {on}")
    lines.append("-" * len(head))
    lines.append(f"{'total':40} " + " ".join(f"{v:>{w}}" for v, w in zip(tot, widths)))
    lines.append("printed: meshrt's Module.generic() read back by mlir-opt to the same IR; global: annotated "
                 "functions (with shard.shard) that run in global mode / such functions; ran, no ref: per-process "
                 "IR (no shard.shard) run without an oracle; lowered=: runnable functions whose mlir-opt "
                 "--convert-shard-to-mpi lowering, run on the same processes, equals the partitioned run")
    bad = [r for r in records if r["kind"] == "function" and r.get("mlir_opt") and r.get("runnable")
           and r.get("ran") not in (None, "equal", "ran")]
    for r in records:
        if r.get("global", "ran") != "ran":
            lines.append(f"  global mode: {r['file']} @{r['function']}: {r['global']}")
    for r in records:
        if r.get("runnable") and r.get("lowered") not in (None, "equal"):
            lines.append(f"  lowered: {r['file']} @{r['function']}: {r['lowered']}")
    for r in bad:
        und = " (undefined: reduction into tensor.empty)" if r.get("undefined") else ""
        lines.append(f"  not equal: {r['file']} @{r['function']}: {r['ran']}{und}: {r.get('detail', '')}")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("directory", nargs="?", help="folder with LLVM's shard test files (*.mlir)")
    ap.add_argument("--mlir-opt", help="the mlir-opt to compare with (default: meshrt's search)")
    ap.add_argument("--nprocs", type=int, default=4, help="most processes a run may take (default 4)")
    ap.add_argument("--no-run", action="store_true", help="stop before running partitioned programs")
    ap.add_argument("--json", help="write every record here")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--worker", nargs=2, metavar=("JOB", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(*a.worker)
        return 0
    if not a.directory or not os.path.isdir(a.directory):
        ap.error(f"directory: {a.directory!r} is not a folder of .mlir files")
    exe = mlir_opt_path(a.mlir_opt)
    if exe is None:
        ap.error("no mlir-opt found: apt-get install mlir-22-tools, or give --mlir-opt")
    records = examine(a.directory, exe, a.nprocs, run=not a.no_run, verbose=a.verbose)
    print(table(records))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(records, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
