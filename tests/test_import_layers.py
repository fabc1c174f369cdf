"""meshrt's import graph against the layer order in docs/architecture.md.

Every ``import`` and ``from ... import`` in ``meshrt/`` (and ``kernels/``, installed as
``meshrt.kernels``), at module level or inside a function, read with ``ast`` and resolved
(relative imports included), must go to a module of the same layer or a lower one; no modules
may import each other in a circle; and every module must be listed in the docs' Layers block,
so a new module forces the page to say where it belongs.
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


# -- the checker itself, on made-up modules ------------------------------------------------------


def test_find_cycle_reports_the_circle():
    assert find_cycle({"a": {"b": 1}, "b": {"c": 1}, "c": {"a": 1}, "d": {"a": 1}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b": 1}, "b": {}, "c": {"a": 1, "b": 1}}) is None


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
