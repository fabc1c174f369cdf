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


def test_new_tensors_get_their_fields_in_their_slots():
    """`meshrt._slots.tensor` writes a `DistributedTensor`'s eight fields straight into its slots: the same
    tensor as attribute stores make, references counted (a dropped tensor lets go of its block); a
    subclass (a `LazyTensor`'s fields are properties) goes through its attributes; a class without those
    slots is refused."""
    import gc

    import numpy as np

    from meshrt import DistributedTensor, Mesh, Sharding
    from meshrt._slots import install, tensor, value_tensor

    s = Sharding(Mesh((-1,)), [])
    block = np.arange(3.0)
    t = tensor(DistributedTensor, block, block[1:], s, (3,), (slice(0, 3),), (True,))
    assert type(t) is DistributedTensor
    assert (t._local is block and t._interior.base is block and t._sharding is s and t._global_shape == (3,)
            and t._slices == (slice(0, 3),) and t._periodic == (True,) and t._halo is None and t._writes is None)
    assert not hasattr(t, "_expr")  # (left empty, as object.__new__ leaves it)
    assert gc.is_tracked(t)
    refs = sys.getrefcount(block)
    del t
    assert sys.getrefcount(block) == refs - 2  # (local and interior's base: both let go)
    single = np.zeros(())
    refs = sys.getrefcount(single)
    tensor(DistributedTensor, single, single, s, (), (), None)  # made and dropped at once
    assert sys.getrefcount(single) == refs
    v = value_tensor(DistributedTensor, np.float32(2.5), s, None)
    assert v._local.shape == () and v._local.dtype == np.float32 and v._local.flags.writeable
    assert v._interior is v._local and float(v) == 2.5

    class Sub(DistributedTensor):
        __slots__ = ()
        stored = []

        @property
        def _writes(self):
            return "a property"

        @_writes.setter
        def _writes(self, value):
            Sub.stored.append(value)

    sub = tensor(Sub, block, block, s, (3,), (slice(0, 3),), None)
    assert type(sub) is Sub and sub._local is block and Sub.stored == [None] and sub._writes == "a property"

    class NoSlots:
        pass

    with pytest.raises(TypeError, match="NoSlots._local is not a slot"):
        install(NoSlots)

    # `deferred`: a slot-less subclass (`LazyTensor`) with only its expression set; any other class refused
    from meshrt._slots import deferred

    class Deferred(DistributedTensor):
        __slots__ = ()

    node = object()
    refs = sys.getrefcount(node)
    d = deferred(Deferred, node)
    assert type(d) is Deferred and d._expr is node and gc.is_tracked(d) and not hasattr(d, "_local")
    del d
    assert sys.getrefcount(node) == refs

    class WithSlot(DistributedTensor):
        __slots__ = ("extra",)

    for cls in (WithSlot, NoSlots):
        with pytest.raises(TypeError, match="not a slot-less subclass of the installed class"):
            deferred(cls, node)
