"""meshrt's import graph against the layer order in docs/architecture.md.

Every ``import`` and ``from ... import`` in ``meshrt/`` (and ``kernels/``, installed as
``meshrt.kernels``), at module level or inside a function, read with ``ast`` and resolved
(relative imports included), must go to a module of the same layer or a lower one; no modules
may import each other in a circle; and every module must be listed in the docs' Layers block,
so a new module forces the page to say where it belongs.

The folders are layers too: a folder of ``meshrt/`` (``tensor/``, ``io/``, ...) holds a run of
consecutive lines of the Layers block that no other part of the package shares, so no import goes
upwards between folders and no folders import each other in a circle.
"""

import ast
import pathlib
import re

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
ARCHITECTURE = REPO / "docs" / "architecture.md"
# package -> its source directory (setup.py's package_dir: meshrt.kernels lives in kernels/)
SOURCES = {"meshrt": REPO / "meshrt", "meshrt.kernels": REPO / "kernels"}
COMPILED = REPO / "csrc"  # meshrt.<name> built from csrc/<name>.pyx: compiled leaves, no Python imports


def modules() -> dict:
    """``{dotted name: (path, is_package)}`` of every Python module of meshrt."""
    out = {}
    for package, root in SOURCES.items():
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if any(p.startswith((".", "__pycache__")) for p in parts):
                continue
            is_package = parts[-1] == "__init__"
            name = ".".join([package] + (parts[:-1] if is_package else parts))
            out[name] = (path, is_package)
    return out


def _compiled(name: str) -> bool:
    head, _, leaf = name.rpartition(".")
    return head == "meshrt" and (COMPILED / f"{leaf}.pyx").exists()


def imports(name: str, path: pathlib.Path, is_package: bool, known) -> list:
    """``[(imported module, line)]``: the meshrt modules ``name`` imports, anywhere in the file.

    ``from pkg import x`` names the submodule ``pkg.x`` when there is one, else ``pkg``."""
    package = name if is_package else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in known or _compiled(f"{mod}.{a.name}") else mod
                       for a in node.names]
        else:
            continue
        for t in targets:
            if t.split(".")[0] != "meshrt" or _compiled(t):
                continue
            while t not in known and "." in t:  # `import meshrt.mlir.ir as x` -> meshrt.mlir.ir; an attribute -> its module
                t = t.rpartition(".")[0]
            if t != name:
                out.append((t, node.lineno))
    return out


def graph() -> dict:
    """``{module: {imported module: first line}}``."""
    known = modules()
    edges = {}
    for name, (path, is_package) in known.items():
        edges[name] = {}
        for target, line in imports(name, path, is_package, known):
            edges[name].setdefault(target, line)
    return edges


def layers(text: str) -> dict:
    """``{module: layer index}`` from the fenced block under the ``## Layers`` heading (0 = lowest)."""
    m = re.search(r"^## Layers\s*$.*?^```[a-z]*\n(.*?)^```", text, re.M | re.S)
    assert m, f"{ARCHITECTURE}: no fenced block under a '## Layers' heading"
    out = {}
    for i, line in enumerate(ln for ln in m.group(1).splitlines() if ln.strip()):
        for short in line.split():
            name = "meshrt" if short == "__init__" else f"meshrt.{short}"
            assert name not in out, f"{ARCHITECTURE}: {short} is listed twice in the Layers block"
            out[name] = i
    return out


def inside(name: str, package: str) -> bool:
    return name == package or name.startswith(package + ".")


def unit(name: str, package: str = "meshrt") -> str:
    """The part of ``package`` a module of it belongs to: its folder (``tensor`` for ``meshrt.tensor.layout``
    and for the folder's ``__init__``; ``syntax`` for ``meshrt.mlir.syntax.reader`` in ``meshrt.mlir``), or
    the module itself (``mesh``, ``__init__``: the package's own)."""
    return "__init__" if name == package else name[len(package) + 1:].split(".")[0]


def folders(known: dict, package: str = "meshrt") -> set:
    """The units of ``package`` that are folders (packages with modules of their own)."""
    depth = package.count(".") + 2
    return {unit(m, package) for m in known if inside(m, package) and m.count(".") >= depth}


def packages_with_folders(known: dict) -> list:
    """``meshrt`` and every folder of it that has folders of its own (``meshrt.mlir``): each is laid
    out in layers the same way, its folders below or above each other."""
    return [p for p in sorted(known) if known[p][1] and folders(known, p)]


def unit_graph(edges: dict, package: str = "meshrt") -> dict:
    """``{unit: {imported unit: (module, imported module, line)}}``, imports between different units
    of ``package``."""
    out = {}
    for a, targets in edges.items():
        if not inside(a, package):
            continue
        for b, line in targets.items():
            if not inside(b, package):
                continue
            ua, ub = unit(a, package), unit(b, package)
            if ua != ub:
                out.setdefault(ua, {}).setdefault(ub, (a, b, line))
            out.setdefault(ub, {})
    return out


def folder_runs(order: dict, folder_units: set, package: str = "meshrt") -> list:
    """Problems with the Layers block's folders of ``package``: a folder whose modules are not on
    consecutive lines, or a line of a folder's run that another unit shares."""
    problems = []
    lines = {}
    order = {name: i for name, i in order.items() if inside(name, package)}
    for name, i in order.items():
        lines.setdefault(i, set()).add(unit(name, package))
    prefix = "" if package == "meshrt" else package[len("meshrt."):].replace(".", "/") + "/"
    for f in sorted(folder_units):
        mine = sorted(i for name, i in order.items() if unit(name, package) == f)
        if not mine:
            continue
        gap = [i for i in range(mine[0], mine[-1] + 1) if f not in lines.get(i, ())]
        shared = sorted({u for i in mine for u in lines[i] if u != f})
        if gap:
            problems.append(f"{prefix}{f}/: its modules are not on consecutive lines (line {gap[0] + 1} of the block "
                            f"is not {f}'s)")
        if shared:
            problems.append(f"{prefix}{f}/: its lines also hold {shared}")
    return problems


def find_cycle(edges: dict):
    """One import circle as ``[a, b, ..., a]``, or None."""
    state, stack = {}, []

    def visit(v):
        state[v] = "open"
        stack.append(v)
        for w in sorted(edges[v]):
            if state.get(w) == "open":
                return stack[stack.index(w):] + [w]
            if w not in state:
                found = visit(w)
                if found:
                    return found
        stack.pop()
        state[v] = "done"
        return None

    for v in sorted(edges):
        if v not in state:
            found = visit(v)
            if found:
                return found
    return None


def _short(name: str) -> str:
    return "__init__" if name == "meshrt" else name[len("meshrt."):]


def _where(name: str, known: dict) -> str:
    return str(known[name][0].relative_to(REPO))


def test_there_is_no_import_circle():
    edges, known = graph(), modules()
    cycle = find_cycle(edges)
    assert cycle is None, "import circle: " + " -> ".join(_short(m) for m in cycle) + "\n" + "\n".join(
        f"  {_where(a, known)}:{edges[a][b]} imports {_short(b)}" for a, b in zip(cycle, cycle[1:]))


def test_every_module_is_in_a_layer():
    order, known = layers(ARCHITECTURE.read_text()), modules()
    missing = sorted(_short(m) for m in known if m not in order)
    stale = sorted(_short(m) for m in order if m not in known)
    assert not missing, f"modules missing from the Layers block of {ARCHITECTURE.relative_to(REPO)}: {missing}"
    assert not stale, f"the Layers block of {ARCHITECTURE.relative_to(REPO)} lists modules that do not exist: {stale}"


def test_imports_go_to_the_same_layer_or_below():
    order, known, edges = layers(ARCHITECTURE.read_text()), modules(), graph()
    bad = [f"{_where(a, known)}:{line}: {_short(a)} (layer {order[a]}) imports {_short(b)} (layer {order[b]})"
           for a in sorted(edges) if a in order for b, line in sorted(edges[a].items())
           if b in order and order[b] > order[a]]
    assert not bad, "imports from a lower layer to a higher one (docs/architecture.md):\n" + "\n".join(bad)


def test_folders_are_layers():
    order, known = layers(ARCHITECTURE.read_text()), modules()
    problems = [p for package in packages_with_folders(known) for p in folder_runs(order, folders(known, package), package)]
    assert not problems, f"the Layers block of {ARCHITECTURE.relative_to(REPO)}:\n" + "\n".join(problems)


def test_there_is_no_import_circle_between_folders():
    edges, known = graph(), modules()
    for package in packages_with_folders(known):
        units = unit_graph(edges, package)
        cycle = find_cycle({u: dict.fromkeys(t, 1) for u, t in units.items()})
        assert cycle is None, f"folders of {package} import each other in a circle: " + " -> ".join(cycle) + "\n" + \
            "\n".join(f"  {_where(units[a][b][0], known)}:{units[a][b][2]} imports {_short(units[a][b][1])}"
                      for a, b in zip(cycle, cycle[1:]))


def test_the_mlir_folders_are_layers_in_order():
    """syntax below dialects below interpreters below shardy (the data model, ir, below them all)."""
    order, known = layers(ARCHITECTURE.read_text()), modules()
    runs = {f: [i for m, i in order.items() if inside(m, f"meshrt.mlir.{f}")]
            for f in ("syntax", "dialects", "interpreters", "shardy")}
    assert all(runs.values()), {f: r for f, r in runs.items() if not r}
    assert order["meshrt.mlir.ir"] < min(runs["syntax"])
    assert max(runs["syntax"]) < min(runs["dialects"]) and max(runs["dialects"]) < min(runs["interpreters"])
    assert max(runs["interpreters"]) < min(runs["shardy"])


def test_old_module_paths_still_import():
    import importlib

    import meshrt

    for old, new in meshrt._MOVED.items():
        assert importlib.import_module(f"meshrt.{old}") is importlib.import_module(f"meshrt.{new}"), old
    assert callable(meshrt.matmul) and meshrt.formats is importlib.import_module("meshrt.io.formats")


def test_linalg_paths_from_before_the_linalg_folder(tmp_path):
    """tensor/matmul.py and array_api/linalg.py's TSQR moved to meshrt/linalg/: the old imports still work, in a
    fresh process that imports the old path first."""
    import subprocess
    import sys

    code = ("from meshrt.tensor.matmul import plan_contraction, ContractionPlan; import meshrt.tensor.matmul; "
            "import sys; m = sys.modules['meshrt.tensor.matmul']; "
            "from meshrt.tensor import matmul, einsum, explain_matmul; import meshrt, meshrt.linalg.matmul as lm; "
            "lm = sys.modules['meshrt.linalg.matmul']; "
            "assert m is lm and matmul is meshrt.matmul is lm.matmul and einsum is lm.einsum; "
            "assert plan_contraction is lm.plan_contraction; "
            "from meshrt.array_api import linalg as L; from meshrt.linalg import tall; "
            "assert L.tsqr is tall.tsqr and meshrt.linalg.tsqr is tall.tsqr")
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True, timeout=120, cwd=str(tmp_path))


def test_old_mlir_module_paths_still_import(tmp_path):
    """Every module of meshrt/mlir from before it was laid out by dialect imports under its old name as the
    same module (so patching one patches the other), and is an attribute of meshrt.mlir once imported."""
    import importlib
    import subprocess
    import sys

    import meshrt.mlir

    old = ["_lexer", "_types_attributes", "_reader", "printer", "parser", "verify", "_sdy_attrs", "linalg", "tosa",
           "stablehlo", "execute", "sdy", "sdy_propagate", "_sdy_window", "_sdy_index", "sdy_cli"]
    old += [f"_forms_{d}" for d in ("arith", "cf", "linalg", "scf", "sdy", "shard", "stablehlo", "tensor")]
    assert sorted(meshrt.mlir._MOVED) == sorted(old)
    for name in old:
        module = importlib.import_module(f"meshrt.mlir.{name}")
        new = importlib.import_module(f"meshrt.mlir.{meshrt.mlir._MOVED[name]}")
        assert module is new and module.__spec__.name == new.__name__, name
        assert name == "verify" or getattr(meshrt.mlir, name) is new, name
    assert callable(meshrt.mlir.verify)  # the function, as before, not the module
    assert sorted(meshrt.mlir.__all__) == sorted([  # the names meshrt.mlir exported before, no more, no fewer
        "MLIRError", "DYNAMIC", "UNIT", "AffineBinary", "AffineConst", "AffineDim", "AffineMap", "AffineSymbol",
        "Block", "DenseElements", "FunctionType", "Location", "Module", "OpaqueAttr", "OpaqueType", "Operation",
        "Region", "ScalarType", "SymbolRef", "TensorType", "TypeAttr", "UnitAttr", "Value",
        "parse", "parse_file", "verify"])
    assert all(hasattr(meshrt.mlir, n) for n in meshrt.mlir.__all__)
    from meshrt.mlir.sdy import SdyProgram
    from meshrt.mlir.shardy.program import SdyProgram as New
    assert SdyProgram is New
    # in a fresh process, without meshrt.mlir imported first, and with warnings as errors
    code = ("import meshrt.mlir.execute as e, meshrt.mlir.sdy_cli as c; from meshrt.mlir import stablehlo as h; "
            "import meshrt.mlir; assert e.__name__ == 'meshrt.mlir.interpreters.spmd' and c.explain "
            "and h is meshrt.mlir.stablehlo and callable(meshrt.mlir.verify)")
    # cwd outside the source tree: `python -c` puts the cwd first on sys.path (an installed meshrt must win)
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True, timeout=120, cwd=str(tmp_path))


# -- the checker itself, on made-up modules ------------------------------------------------------


def test_find_cycle_reports_the_circle():
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1, "b": 1}}) is None


def test_folder_runs_reports_split_and_shared_folders():
    order = {"meshrt.t.a": 0, "meshrt.mesh": 1, "meshrt.t.b": 2, "meshrt.io.x": 3, "meshrt.halo": 3}
    assert folder_runs(order, {"t", "io"}) == [
        "io/: its lines also hold ['halo']", "t/: its modules are not on consecutive lines (line 2 of the block is not t's)"]
    assert folder_runs({"meshrt.t.a": 0, "meshrt.t": 1, "meshrt.mesh": 2}, {"t"}) == []


def test_unit_graph_joins_the_modules_of_a_folder():
    edges = {"meshrt.t.a": {"meshrt.t.b": 3, "meshrt.mesh": 4}, "meshrt.t.b": {}, "meshrt.mesh": {"meshrt.t": 9},
             "meshrt.t": {}}
    units = unit_graph(edges)
    assert units["t"] == {"mesh": ("meshrt.t.a", "meshrt.mesh", 4)} and units["mesh"] == {"t": ("meshrt.mesh", "meshrt.t", 9)}
    assert find_cycle({u: dict.fromkeys(t, 1) for u, t in units.items()}) == ["mesh", "t", "mesh"]


def test_layers_block_is_read_from_the_fenced_block():
    text = "# x\n\n## Layers\n\nprose\n\n```text\nerrors\n\nmesh sharding\n__init__\n```\n"
    assert layers(text) == {"meshrt.errors": 0, "meshrt.mesh": 1, "meshrt.sharding": 1, "meshrt": 2}


def test_function_level_and_relative_imports_count(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("from .errors import E\nfrom . import mesh, _blockcopy\n"
                   "def f():\n    from .mlir import ir\n    import meshrt.tensor\n    import numpy\n")
    known = {"meshrt.errors": 0, "meshrt.mesh": 0, "meshrt.mlir": 0, "meshrt.mlir.ir": 0, "meshrt.tensor": 0}
    got = imports("meshrt.sharding", src, False, known)
    assert got == [("meshrt.errors", 1), ("meshrt.mesh", 2), ("meshrt.mlir.ir", 4), ("meshrt.tensor", 5)]


@pytest.mark.parametrize("name", ["meshrt", "meshrt.mlir"])
def test_package_inits_resolve_relative_imports_inside_the_package(tmp_path, name):
    src = tmp_path / "__init__.py"
    src.write_text("from .ir import Module\n")
    assert imports(name, src, True, {f"{name}.ir": 0}) == [(f"{name}.ir", 1)]
