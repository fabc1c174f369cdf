"""setup.py compiles the hot pure-Python modules (`COMPILED_PY`) with Cython; `meshrt._compiled.fresh`
runs the source instead where the build is older than it."""

import hashlib
import importlib
import py_compile
import sys

import pytest

from meshrt._compiled import StaleBuildWarning, fresh


def test_the_deferred_expressions_module_runs_compiled():
    import meshrt.tensor
    from meshrt.tensor import lazy

    assert not lazy.__file__.endswith(".py"), f"{lazy.__file__}: not the compiled build (pip install .)"
    assert meshrt.tensor._lazy is lazy
    with open(lazy.__file__.rsplit("/", 1)[0] + "/lazy.py", "rb") as f:
        assert lazy._SOURCE_SHA256 == hashlib.sha256(f.read()).hexdigest()


def test_stale_build_runs_the_source(tmp_path, monkeypatch):
    pkg = tmp_path / "stalepkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    built = "X = 'built'\n"
    stamped = tmp_path / "stamped.py"
    stamped.write_text(built + f"_SOURCE_SHA256 = '{hashlib.sha256(built.encode()).hexdigest()}'\n")
    py_compile.compile(str(stamped), cfile=str(pkg / "mod.pyc"))  # a build without its source beside it
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        m = importlib.import_module("stalepkg.mod")
        assert m.X == "built" and fresh("stalepkg.mod") is m  # no source: the build
        (pkg / "mod.py").write_text(built)
        assert fresh("stalepkg.mod") is m  # the source it was built from: the build
        (pkg / "mod.py").write_text("X = 'edited'\n")
        with pytest.warns(StaleBuildWarning, match="stalepkg.mod"):
            s = fresh("stalepkg.mod")
        assert s.X == "edited" and sys.modules["stalepkg.mod"] is s and sys.modules["stalepkg"].mod is s
    finally:
        for name in ("stalepkg.mod", "stalepkg"):
            sys.modules.pop(name, None)


def test_the_node_declarations_match_the_slots():
    """lazy.pxd declares the fields of lazy.py's node classes (their __slots__): a slot it misses would be an
    AttributeError in the compiled build only."""
    import re
    from pathlib import Path

    from meshrt.tensor import lazy

    pxd = (Path(__file__).resolve().parents[1] / "meshrt" / "tensor" / "lazy.pxd").read_text()
    declared = {name: set(re.findall(r"\w+", fields.split("object", 1)[1]))
                for name, fields in re.findall(r"cdef class (\w+)\b.*?:\n\s+(cdef public object [^\n]+)", pxd)}
    assert set(declared) == {"_Node", "_Leaf", "_Op"}
    for name, fields in declared.items():
        assert fields == set(getattr(lazy, name).__slots__), name


def test_the_fast_paths_run_compiled_and_as_source(monkeypatch):
    """fastpath.py (the small reads, `t[i, j] op= v`, the vector dots) and ufunc.py (a 0-d value's arithmetic) are
    compiled too, fastpath's `getitem`, `array_ufunc` and operator fronts in the place of the tensor's own; run as
    source (a stale build) it finds the reading code's frame at the
    other depth: ``t[i] -= v`` is the owners' update either way, a plain read a value."""
    import importlib.util

    import numpy as np

    from meshrt import DistributedTensor, Mesh, Sharding
    from meshrt.tensor import fastpath
    from meshrt.tensor.dispatch import ABOVE

    from meshrt.tensor import ufunc

    for mod in (fastpath, ufunc):
        assert not mod.__file__.endswith(".py"), f"{mod.__file__}: not the compiled build (pip install .)"
    assert fastpath._OWN_FRAME == 0 and DistributedTensor.__getitem__ is fastpath.getitem
    assert DistributedTensor.__array_ufunc__ is fastpath.array_ufunc
    assert DistributedTensor.__iadd__.__name__ == "__iadd__" and type(DistributedTensor.__iadd__) is type(
        fastpath.getitem)  # (the compiled fronts of the operators)
    src_path = fastpath.__file__.rsplit("/", 1)[0] + "/fastpath.py"
    spec = importlib.util.spec_from_file_location("meshrt.tensor._fastpath_source", src_path)
    source = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(source)
    assert source._OWN_FRAME == 1 and source._READ_DEPTH == 2
    from meshrt._keys import install_stored

    try:
        for mod in (fastpath, source):
            monkeypatch.setattr(ABOVE, "fast", mod)
            monkeypatch.setattr(DistributedTensor, "__getitem__", mod.getitem)
            install_stored(mod.OwnedElement)  # (as `install` does; the compiled module's again below)
            t = DistributedTensor.from_global(np.arange(4.0), Sharding(Mesh((-1,)), [[0]]))
            before = mod.stats["owned_updates"]
            t[3] -= 1.0
            t[1] *= 3
            x = t[2]
            x += 1  # a value: t unchanged
            assert mod.stats["owned_updates"] - before == 2, mod.__name__
            assert t.gather().tolist() == [0.0, 3.0, 2.0, 2.0] and float(x) == 3.0
    finally:
        install_stored(fastpath.OwnedElement)
