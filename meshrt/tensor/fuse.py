"""Fused elementwise kernels: Numba source generated per expression structure, and the same expression on the
``meshrt._fusevm`` interpreter (`program`; `runner` picks: the interpreter first, no compile).

Pure (no MPI): `kernel` turns an expression signature into one compiled loop
nest. ``meshrt.tensor.lazy`` builds the signatures, cuts the boxes they run on
(``lazy.plan_boxes``) and runs the kernels.

A signature is a nested tuple:

* ``("leaf", k, a)``: operand occurrence ``k``, read from array argument ``a``;
* ``("scalar", m)``: scalar argument ``m`` (already of its loop dtype);
* ``("ufunc", name, in_dtypes, out_dtype, *children)``;
* ``("where", out_dtype, cond, x, y)`` and ``("astype", dtype, child)``.

Every operation casts its operands to numpy's loop dtypes and its result to
numpy's result dtype, in numpy's order, with no fast-math and no contraction,
so a fused kernel gives numpy's bits:

>>> sig = ("ufunc", "add", ("float64", "float64"), "float64", ("leaf", 0, 0), ("scalar", 0))
>>> print(expression_source(sig, 2))
np.float64((np.float64(x0[i0 + q0_0, i1 + q0_1]) + np.float64(c0)))
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import time

import numpy as np

from ..runtime import warmup as _warmup

__all__ = ["UFUNCS", "Evaluator", "kernel", "program", "runner", "interpreter_on", "switch_seconds", "cache_dir",
           "expression_source", "kernel_source", "module_source",
           "scalar_dtypes"]

# ufunc name -> Python operator template over its (cast) operands. Only operations whose Numba/LLVM
# code is IEEE correctly rounded (or exact) are here, so the bits equal numpy's loops; transcendental
# functions (exp, sin, ...) use different libm implementations and stay eager.
UFUNCS = {
    "add": "({0} + {1})",
    "subtract": "({0} - {1})",
    "multiply": "({0} * {1})",
    "divide": "({0} / {1})",
    "negative": "(-{0})",
    "positive": "(+{0})",
    "square": "({0} * {0})",
    "sqrt": "np.sqrt({0})",
    "absolute": "abs({0})",
    "less": "({0} < {1})",
    "less_equal": "({0} <= {1})",
    "greater": "({0} > {1})",
    "greater_equal": "({0} >= {1})",
    "equal": "({0} == {1})",
    "not_equal": "({0} != {1})",
}
# ufuncs whose float-only loop (sqrt) or comparison result (bool) needs no integer care
FLOAT_ONLY = {"sqrt", "divide"}
COMPARISONS = {"less", "less_equal", "greater", "greater_equal", "equal", "not_equal"}


def _cast(dtype: str, code: str) -> str:
    return code if dtype == "bool" else f"np.{dtype}({code})"


def expression_source(sig, ndim: int, rows: bool = False) -> str:
    """The Python expression computing one element of ``sig`` at index ``(i0, i1, ...)``.

    ``rows``: leaf ``k`` reads its row ``r{k}`` (taken outside the innermost loop) at the last index.
    """
    kind = sig[0]
    if kind == "leaf":
        k, a = sig[1], sig[2]
        if rows:  # the row of leaf k was taken before the innermost loop, its start in b{k}
            return f"r{k}[b{k} + t]"
        return f"x{a}[" + ", ".join(f"i{d} + q{k}_{d}" for d in range(ndim)) + "]"
    if kind == "scalar":
        return f"c{sig[1]}"
    if kind == "ufunc":
        name, ins, out = sig[1], sig[2], sig[3]
        args = [_cast(dt, expression_source(c, ndim, rows)) for dt, c in zip(ins, sig[4:])]
        return _cast(out, UFUNCS[name].format(*args))
    if kind == "where":
        out, cond, x, y = sig[1:]
        return (f"({_cast(out, expression_source(x, ndim, rows))} if {expression_source(cond, ndim, rows)} "
                f"else {_cast(out, expression_source(y, ndim, rows))})")
    if kind == "astype":
        return _cast(sig[1], expression_source(sig[2], ndim, rows))
    raise ValueError(f"signature: unknown node kind {kind!r}")


def _walk(sig):
    yield sig
    if sig[0] in ("ufunc",):
        for c in sig[4:]:
            yield from _walk(c)
    elif sig[0] == "where":
        for c in sig[2:]:
            yield from _walk(c)
    elif sig[0] == "astype":
        yield from _walk(sig[2])


def kernel_source(sig, ndim: int, out_dtype: str) -> str:
    """The source of the kernel for ``sig``: a loop over boxes, each a loop nest over one box.

    The kernel's arguments: ``boxes`` (``[nbox, 2 * ndim]``: lo, hi per dim, in the
    target's global index space), ``sel`` (``[nbox, narrays]``: 1 reads the padded
    copy), ``offs`` (``[nbox, nleaf, ndim]``: global index to array index), ``out``
    and ``oo`` (its offsets), then each array and its padded copy, then the scalars.
    """
    nodes = list(_walk(sig))
    nleaf = 1 + max((n[1] for n in nodes if n[0] == "leaf"), default=-1)
    narr = 1 + max((n[2] for n in nodes if n[0] == "leaf"), default=-1)
    nsc = 1 + max((n[1] for n in nodes if n[0] == "scalar"), default=-1)
    arrays = "".join(f", a{a}, p{a}" for a in range(narr))
    scalars = "".join(f", c{m}" for m in range(nsc))
    ind = "    "
    lines = [f"def fused(boxes, sel, offs, out, oo{arrays}{scalars}):",
             f"{ind}for b in range(boxes.shape[0]):"]
    body = ind * 2
    for a in range(narr):
        lines.append(f"{body}x{a} = p{a} if sel[b, {a}] else a{a}")
    for k in range(nleaf):
        for d in range(ndim):
            lines.append(f"{body}q{k}_{d} = offs[b, {k}, {d}]")
    for d in range(ndim):
        lines.append(f"{body}o{d} = oo[{d}]")
    for d in range(ndim - 1):
        lines.append(f"{body}{ind * d}for i{d} in range(boxes[b, {2 * d}], boxes[b, {2 * d + 1}]):")
    # rows of the outer indices first: the innermost loop then reads 1-D arrays at one offset each
    pad = body + ind * (ndim - 1)
    lead = ", ".join(f"i{d} + o{d}" for d in range(ndim - 1))
    lines.append(f"{pad}ro = out[{lead}]" if ndim > 1 else f"{pad}ro = out")
    for n in nodes:
        if n[0] == "leaf":
            k, a = n[1], n[2]
            idx = ", ".join(f"i{d} + q{k}_{d}" for d in range(ndim - 1))
            lines.append(f"{pad}r{k} = x{a}[{idx}]" if ndim > 1 else f"{pad}r{k} = x{a}")
    # unsigned indices in the innermost loop: Numba then adds no negative-index wraparound, and LLVM
    # vectorizes (2.9x faster on a 7-point stencil than signed indices, measured)
    last = ndim - 1
    lines.append(f"{pad}lo = boxes[b, {2 * last}]")
    lines.append(f"{pad}bo = np.uint64(lo + o{last})")
    for n in nodes:
        if n[0] == "leaf":
            lines.append(f"{pad}b{n[1]} = np.uint64(lo + q{n[1]}_{last})")
    lines.append(f"{pad}for t in range(np.uint64(boxes[b, {2 * last + 1}] - lo)):")
    lines.append(f"{pad}{ind}ro[bo + t] = {_cast(out_dtype, expression_source(sig, ndim, True))}")
    return "\n".join(lines) + "\n"


def scalar_dtypes(sig) -> list:
    """The dtype of each scalar argument of ``sig``, in argument order.

    >>> scalar_dtypes(("ufunc", "add", ("float64", "float64"), "float64", ("leaf", 0, 0), ("scalar", 0)))
    ['float64']
    """
    out = {}

    def walk(n, dt):
        if n[0] == "scalar":
            out[n[1]] = dt
        elif n[0] == "ufunc":
            for d, c in zip(n[2], n[4:]):
                walk(c, d)
        elif n[0] == "where":
            walk(n[2], "bool")
            walk(n[3], n[1])
            walk(n[4], n[1])
        elif n[0] == "astype":
            walk(n[2], None)

    walk(sig, None)
    return [out[m] for m in sorted(out)]


def module_source(sig, ndim: int, out_dtype: str, array_dtypes) -> str:
    """The source of the module holding the kernel of ``sig`` for arrays of ``array_dtypes``.

    Its ``warm()`` calls the kernel once on empty boxes with the argument types
    the runs use, so importing it and calling ``warm()`` compiles (or loads from
    Numba's cache) exactly the one machine code the runs call: the module's
    hash names one expression structure, rank and set of dtypes.
    """
    nodes = list(_walk(sig))
    nleaf = 1 + max((n[1] for n in nodes if n[0] == "leaf"), default=-1)
    empty = "(" + "0, " * ndim + ")"
    args = [f"np.zeros((0, {2 * ndim}), np.int64)", f"np.zeros((0, {len(array_dtypes)}), np.int8)",
            f"np.zeros((0, {nleaf}, {ndim}), np.int64)", f"np.empty({empty}, '{out_dtype}')",
            f"np.zeros({ndim}, np.int64)"]
    for dt in array_dtypes:
        args += [f"np.empty({empty}, '{dt}')"] * 2
    args += [f"np.dtype('{dt}').type(0)" for dt in scalar_dtypes(sig)]
    return ("import numpy as np\nfrom numba import njit\n\n\n"
            "@njit(cache=True, error_model='numpy', boundscheck=False)\n" + kernel_source(sig, ndim, out_dtype)
            + "\n\ndef warm_args():\n    return (" + ", ".join(args) + ",)\n"
            + "\n\ndef warm():\n    fused(*warm_args())\n")


_KERNELS: dict = {}
_DIR = [None]
_LOADING = threading.RLock()  # the warm-up thread may load a kernel while this one asks for it
# kernels this process compiled, and took from the disk cache (tests and benchmarks read it)
stats = {"compiled": 0, "loaded": 0, "interpreted": 0}


def cache_dir() -> str:
    """The folder of this machine's fused kernels (made on first use).

    ``$MESHRT_FUSE_CACHE``, else ``$MESHRT_CACHE_DIR/fused``, else
    ``$XDG_CACHE_HOME/meshrt/fused`` (default ``~/.cache/meshrt/fused``); a
    per-user folder in the temporary directory when that cannot be written.
    Within it, one folder per Numba version, Python version and CPU target
    (Numba's machine code is only valid for those). Deleting the folder clears
    the cache; it is remade on the next compile.
    """
    d = _DIR[0]
    if d is not None and os.path.isdir(d):
        return d
    env = os.environ
    base = env.get("MESHRT_FUSE_CACHE") or os.path.join(
        env.get("MESHRT_CACHE_DIR") or os.path.join(
            env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "meshrt"), "fused")
    import numba
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:  # (the target is made on first use: not by two threads at once)
        magic = repr(cpu_target.target_context.codegen().magic_tuple())
    sub = (f"numba{numba.__version__}-py{sys.version_info[0]}{sys.version_info[1]}-"
           f"{hashlib.sha1(magic.encode()).hexdigest()[:12]}")
    for root in (base, os.path.join(tempfile.gettempdir(), f"meshrt-fused-{os.getuid() if hasattr(os, 'getuid') else 0}")):
        d = os.path.join(root, sub)
        try:
            os.makedirs(d, exist_ok=True)
            if os.access(d, os.W_OK):
                break
        except OSError:
            pass
    _DIR[0] = d
    return d


def _write_once(path: str, text: str) -> None:
    """Create ``path`` holding ``text``, whole or not at all; an existing file is never replaced.

    Never replaced: the source file's modification time is the stamp Numba's
    cache checks, so rewriting a kernel's source would make its cache stale.
    """
    if os.path.exists(path):
        return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, path)  # atomic, and fails where another process was first
        except FileExistsError:
            pass
        except OSError:  # a file system without hard links
            if not os.path.exists(path):
                os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def _exclusive(path: str):
    """Hold an exclusive lock on the file ``path`` (created if need be): one compiler at a time per kernel,
    across the processes of a job and across jobs. Where the file system has no locks, nothing is held
    (Numba's own cache writes are still atomic: concurrent compiles only repeat the work)."""
    try:
        import fcntl

        fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
    except (ImportError, OSError):
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass
        yield
    finally:
        os.close(fd)  # (closing releases the lock)


def _import(name: str, path: str):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # Numba's cache looks the module up by name when it loads
    try:
        spec.loader.exec_module(mod)
        if not _load_cached(mod.fused, mod.warm_args()):
            mod.warm()  # compiles (and saves), or loads through Numba's own path
    except BaseException:
        sys.modules.pop(name, None)
        raise
    compiled = sum(mod.fused.stats.cache_misses.values())
    stats["compiled" if compiled else "loaded"] += 1
    return mod


def _load_cached(disp, args) -> bool:
    """Load ``disp``'s machine code for ``args`` from Numba's disk cache: the first half of
    ``Dispatcher.compile``, without its refresh of the whole CPU target (importing every typing and
    lowering registry: 0.3-2 s, half of Numba's start-up, and only a compile needs it). Only Numba's
    runtime (NRT), which the kernel's code calls, is initialized. False where nothing was loaded (not
    cached, or a Numba whose internals differ): the caller then calls the kernel the ordinary way."""
    try:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.runtime import rtsys

        sig = tuple(disp.typeof_pyval(a) for a in args)
        with global_compiler_lock:
            if sig in disp.overloads:
                return True
            rtsys.initialize(disp.targetctx)
            cres = disp._cache._load_overload(sig, disp.targetctx)
            if cres is None:
                return False
            disp._cache_hits[sig] += 1
            if not cres.objectmode:
                disp.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            disp.add_overload(cres)
        return True
    except Exception:
        return False


def kernel(sig, ndim: int, out_dtype: str, array_dtypes):
    """The compiled kernel of ``sig`` (see `kernel_source`) for arrays of ``array_dtypes``.

    Cached in memory and on disk (see `cache_dir`): the module source (see
    `module_source`) goes to a file named by its hash, keyed by the
    expression's structure, dtypes and rank (not by tensors or values), so that
    Numba's ``cache=True`` keeps its machine code across runs; a second run of
    a program compiles nothing and loads each kernel in milliseconds.

    The first compile of a kernel on a machine happens in one process: it holds
    the kernel's lock file while compiling and then writes a ``.ok`` marker; the
    other processes of the job (and other jobs) wait on the lock, then load.
    Every file is written whole under a temporary name and linked into place.
    """
    key = (sig, ndim, out_dtype, tuple(array_dtypes))
    fn = _KERNELS.get(key)
    if fn is not None:
        return fn
    src = module_source(sig, ndim, out_dtype, tuple(array_dtypes))
    name = "meshrt_fused_" + hashlib.sha1(src.encode()).hexdigest()[:20]
    with _LOADING:
        mod = sys.modules.get(name)
        if mod is None:
            path = os.path.join(cache_dir(), name + ".py")
            _write_once(path, src)
            done = path[:-3] + ".ok"
            if os.path.exists(done):
                mod = _import(name, path)
            else:
                with _exclusive(path[:-3] + ".lock"):
                    mod = _import(name, path)  # loads, where another process compiled it while this one waited
                    _write_once(done, "")
    fn = _KERNELS[key] = mod.fused
    return fn


_PROGRAMS: dict = {}


def program(sig, ndim: int, out_dtype: str, array_dtypes):
    """The `meshrt._fusevm.Program` evaluating ``sig`` (the arguments of `kernel`'s kernel), or None where
    the interpreter has no such program: a dtype other than one float64 or float32 throughout (every
    array, scalar, operation and the result), a ``where``, or a ufunc it lacks.

    The tree becomes chains ``acc = x; acc = acc OP y; ...`` (a left operand's chain goes on with the
    right operand; where only the right one is a chain, with the reversed operation, numpy's operand
    order kept); where both operands are chains, the right one is computed into a temporary first.

    >>> sig = ("ufunc", "add", ("float64", "float64"), "float64", ("leaf", 0, 0), ("scalar", 0))
    >>> program(sig, 2, "float64", ("float64",)) is not None, program(sig, 2, "int64", ("int64",))
    (True, None)
    """
    key = (sig, ndim, out_dtype, tuple(array_dtypes))
    try:
        return _PROGRAMS[key]
    except KeyError:
        pass
    prog = _PROGRAMS[key] = _program(sig, ndim, out_dtype, tuple(array_dtypes))
    return prog


def _program(sig, ndim, out_dtype, array_dtypes):
    t = out_dtype
    if t not in ("float64", "float32") or not 1 <= ndim <= 32 or any(a != t for a in array_dtypes):
        return None
    try:
        from .. import _fusevm
    except ImportError:  # (a build without the extension: the Numba kernel does it all)
        return None
    ops = _fusevm.OPS
    nodes = list(_walk(sig))
    leaves = {n[1]: n[2] for n in nodes if n[0] == "leaf"}
    nleaf = 1 + max(leaves, default=-1)
    sc = scalar_dtypes(sig)
    if (not nleaf or sorted(leaves) != list(range(nleaf)) or any(d != t for d in sc)
            or 1 + max(leaves.values(), default=-1) != len(array_dtypes)):
        return None
    code, dsts, ntemp = [], [], [0]

    def emit(chain, dst):  # chain: [start slot, (op, slot), ...] -> rows
        code.append((ops["start"], chain[0]))
        code.extend(chain[1:])
        dsts.append(dst)

    def value(n):  # -> a slot (int), or a chain not yet emitted (list)
        kind = n[0]
        if kind == "leaf":
            return n[1]
        if kind == "scalar":
            return nleaf + n[1]
        if kind == "astype" and n[1] == t:
            return value(n[2])
        if kind != "ufunc" or any(d != t for d in n[2]) or n[3] != t:
            raise _Unsupported
        name = n[1]
        if name == "positive":
            return value(n[4])
        if name in ("negative", "square", "sqrt", "absolute"):
            a = value(n[4])
            return (a if isinstance(a, list) else [a]) + [(ops[name], 0)]
        if name not in _fusevm.BINARY:
            raise _Unsupported
        a, b = value(n[4]), value(n[5])
        if isinstance(b, list):
            if not isinstance(a, list):  # the chain of b goes on: a OP acc
                return b + [(ops["r" + name], a)]
            slot = nleaf + len(sc) + ntemp[0]  # two chains: b's into a temporary first
            ntemp[0] += 1
            emit(b, slot)
            b = slot
        return (a if isinstance(a, list) else [a]) + [(ops[name], b)]

    try:
        root = value(sig)
    except _Unsupported:
        return None
    emit(root if isinstance(root, list) else [root], -1)
    leaf_arr = np.array([leaves[k] for k in range(nleaf)], np.int64)
    return _fusevm.Program(np.array(code, np.int64).reshape(-1, 2), np.array(dsts, np.int64), ntemp[0],
                           leaf_arr, len(array_dtypes), len(sc), ndim, t)


class _Unsupported(Exception):
    pass


def interpreter_on(env=None) -> bool:
    """Whether fused expressions run on the interpreter (`program`) where it has them:
    ``MESHRT_FUSE_INTERP`` (default 1; 0: always the compiled Numba kernel).

    >>> interpreter_on({}), interpreter_on({"MESHRT_FUSE_INTERP": "0"})
    (True, False)
    """
    v = (os.environ if env is None else env).get("MESHRT_FUSE_INTERP", "1")
    if v not in ("0", "1"):
        raise ValueError(f"MESHRT_FUSE_INTERP: {v!r}; 1 (the interpreter where it can) or 0 (always Numba)")
    return v == "1"


def switch_seconds(env=None) -> float:
    """``MESHRT_FUSE_SWITCH_S``: seconds an expression runs on the interpreter before its Numba kernel is
    loaded (or compiled) on a background thread and replaces it (default 2; ``inf``: never).

    >>> switch_seconds({}), switch_seconds({"MESHRT_FUSE_SWITCH_S": "inf"})
    (2.0, inf)
    """
    v = (os.environ if env is None else env).get("MESHRT_FUSE_SWITCH_S", "2")
    try:
        x = float(v)
    except ValueError:
        x = float("nan")
    if not x >= 0:
        raise ValueError(f"MESHRT_FUSE_SWITCH_S: {v!r}; seconds >= 0 (or inf)")
    return x


class Evaluator:
    """One fused expression's evaluation: its `program` (no compile: a fresh process's first steps
    cost the loop alone), then, once it has spent `switch_seconds` in the interpreter, its Numba
    kernel (`kernel`; faster in steady state by 10-40%, measured), loaded or compiled on a thread
    (no MPI; the interpreter goes on meanwhile). Both give the same bits, so processes may switch at
    different steps. Called with the kernel's arguments."""

    __slots__ = ("key", "program", "fn", "spent", "after", "thread", "error")

    def __init__(self, key, program, after):
        self.key, self.program, self.fn = key, program, program
        self.spent, self.after, self.thread, self.error = 0.0, after, None, None

    def __call__(self, *args):
        fn = self.fn
        if fn is not self.program:
            return fn(*args)
        t0 = time.perf_counter()
        fn(*args)
        self.spent += time.perf_counter() - t0
        if self.spent >= self.after and self.thread is None:
            self.thread = threading.Thread(target=self._load, name="meshrt-fused-kernel", daemon=True)
            self.thread.start()

    def _load(self):
        try:
            self.fn = kernel(*self.key)
        except BaseException as e:  # (the interpreter stays: it gives the same results)
            self.error = f"{type(e).__name__}: {e}"


_EVALUATORS: dict = {}


def runner(sig, ndim: int, out_dtype: str, array_dtypes):
    """What evaluates ``sig`` on the fused kernel's arguments: an `Evaluator` where the interpreter has
    the expression (and `interpreter_on`), else `kernel`'s compiled kernel. One per expression structure,
    shared by every plan of it."""
    key = (sig, ndim, out_dtype, tuple(array_dtypes))
    if interpreter_on():
        ev = _EVALUATORS.get(key)
        if ev is not None:
            return ev
        p = program(*key)
        if p is not None:
            stats["interpreted"] += 1
            ev = _EVALUATORS[key] = Evaluator(key, p, switch_seconds())
            return ev
    return kernel(*key)


def preload() -> None:
    """Run on `meshrt.runtime.warmup`'s thread: load the kernel compiled last in this machine's cache (the
    program run again most likely needs it), and with it Numba's cache machinery. Where the cache is
    empty (a first run: a compile is coming), refresh Numba's CPU target instead, the compile's first
    part; a run that only loads never needs it."""
    d = cache_dir()
    try:
        oks = [e for e in os.scandir(d) if e.name.endswith(".ok")]
    except OSError:
        oks = []
    if not oks:
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target

        with global_compiler_lock:
            cpu_target.target_context.refresh()
        return
    name = max(oks, key=lambda e: e.stat().st_mtime).name[:-3]
    with _LOADING:
        if name not in sys.modules:
            _import(name, os.path.join(d, name + ".py"))


_warmup.then(preload)
