"""Stencil planning (pure, on an AbstractMesh), staggered layouts, T_eff, and the unbuilt-checkout message."""

import doctest
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import meshrt
import meshrt.stencil.apply
from meshrt import AbstractMesh, Sharding, ShardingError
from meshrt.stencil.apply import Dirichlet, Neumann, plan_stencil, staggered, t_eff

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_docstring_examples():
    assert doctest.testmod(meshrt.stencil, optionflags=doctest.ELLIPSIS).failed == 0


def _cells(box):
    return {c for c in np.ndindex(*[hi - lo for lo, hi in box])} if box else set()


def _shifted(box):
    return {tuple(i + lo for i, (lo, _) in zip(c, box)) for c in _cells(box)}


@settings(max_examples=60, derandomize=True, deadline=None)
@given(n=st.integers(1, 4), size=st.integers(0, 3), h=st.tuples(st.integers(0, 2), st.integers(0, 2)),
       extra=st.integers(0, 3), cut=st.tuples(st.integers(0, 2), st.integers(0, 2)), data=st.data())
def test_inner_and_rims_partition_the_box(n, size, h, extra, cut, data):
    """Inner and rims cover the owned box exactly once; inner cells never reach a halo."""
    mesh = AbstractMesh((n,))
    lo, hi = h
    width = max(lo, hi, 1) + size
    s = Sharding(mesh, [[0]], halo_sizes=[lo, hi])
    shape = (n * width + extra % n if n > 1 else width, 3)
    where = (slice(cut[0], shape[0] - cut[1]),)
    dev = data.draw(st.integers(0, n - 1))
    p = plan_stencil([(s, shape, None), (s, shape, None)], 0, [1], where=where, device=dev)
    pieces = [_shifted(b) for b in p.boxes]
    union = set().union(*pieces) if pieces else set()
    assert sum(len(x) for x in pieces) == len(union)
    owned = s.shard_slices(shape, dev)[0]
    rows = range(max(owned.start, cut[0]), min(owned.stop, shape[0] - cut[1]))
    want = {(g - owned.start + lo, j) for g in rows for j in range(3)}
    assert union == want
    w = owned.stop - owned.start
    if p.inner:
        (a, b), _ = p.inner
        assert a - lo >= lo and b - 1 + hi < lo + w  # reach = halo width stays in owned cells


def test_plan_3d_rims_and_ghosts():
    mesh = AbstractMesh((2, 2, 1))
    s = Sharding(mesh, [[0], [1], [2]], halo_sizes=[1, 1, 2, 2, 1, 1])
    p = plan_stencil([(s, (8, 10, 5), (False, False, True)), (s, (8, 10, 5), (False, False, True))], 0, [1],
                     boundary=[Dirichlet(1.0), (Neumann(), None), Dirichlet(2.0)], device=0)
    assert p.box == ((1, 5), (2, 7), (1, 6))
    assert p.inner == ((2, 4), (4, 5), (2, 5))
    assert len(p.rims) == 6
    # device 0 is at the low end of dims 0 and 1; dim 2 is periodic: no ghosts there
    (d0, src0, v0), (d1, src1, v1) = p.ghosts[0]
    assert v0 == 1.0 and src0 is None and d0[0] == slice(0, 1)
    assert v1 is None and d1[1] == slice(0, 2) and src1[1] == slice(3, 1, -1)


def test_plan_errors():
    mesh = AbstractMesh((2,))
    s = Sharding(mesh, [[0]], halo_sizes=[1, 1])
    t = Sharding(mesh, [[]], halo_sizes=None)
    with pytest.raises(ShardingError, match="split along mesh axes"):
        plan_stencil([(s, (8,), None), (t, (8,), None)], 0, [1], device=0)
    with pytest.raises(ShardingError, match="boundary: dim 0 entry"):
        plan_stencil([(s, (8,), None)], 0, [], boundary=[(Neumann(),)], device=0)
    with pytest.raises(ShardingError, match="only step 1"):
        plan_stencil([(s, (8,), None)], 0, [], where=(slice(None, None, -1),), device=0)
    sx, gx = staggered(s, (8,), [0])
    plan_stencil([(s, (8,), None), (sx, gx, None)], 0, [1], device=1)  # staggered: aligned
    shifted = Sharding(mesh, [[0]], halo_sizes=[1, 1], sharded_dims_offsets=[0, 5, 9])
    with pytest.raises(ShardingError, match="different global cells"):
        plan_stencil([(s, (8,), None), (shifted, (9,), None)], 0, [1], device=0)


@pytest.mark.parametrize("n,mesh_n", [(10, 4), (7, 3), (12, 4), (5, 1)])
def test_staggered_layout_one_owner_per_face(n, mesh_n):
    mesh = AbstractMesh((mesh_n, 2))
    cells = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 1])
    faces, shape = staggered(cells, (n, 6), [0])
    assert shape == (n + 1, 6)
    owners = np.zeros(n + 1, int)
    for dev in range(mesh.size):
        c, f = cells.shard_slices((n, 6), dev)[0], faces.shard_slices(shape, dev)[0]
        assert f.start == c.start  # a shard owns the face below each of its cells
        assert f.stop == (c.stop + 1 if c.stop == n else c.stop)
        if dev % 2 == 0:
            owners[f] += 1
    assert (owners == 1).all()
    both, shape2 = staggered(cells, (n, 6), [0, 1])
    assert shape2 == (n + 1, 7)
    repl = Sharding(mesh, [])
    assert staggered(repl, (n, 6), 1) == (repl, (n, 7))


def test_t_eff():
    a = np.zeros((100, 100))
    assert t_eff(1e-3, updated=[a], read=[a, 8]) == pytest.approx((2 * 80000 + 80008) / 1e-3 / 1e9)
    with pytest.raises(ValueError):
        t_eff(0.0, updated=[a])
    with pytest.raises(TypeError):
        t_eff(1.0, read=["x"])


def test_unbuilt_checkout_import_error(tmp_path):
    """A copy of the package without its compiled parts says what to run."""
    pkg = tmp_path / "meshrt"
    shutil.copytree(os.path.dirname(meshrt.__file__), pkg,
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__", "kernels"))
    # An editable install's finder would supply the built modules by name: hide it, as in a plain checkout.
    code = ("import sys; sys.meta_path[:] = [f for f in sys.meta_path if 'ditable' not in repr(f)]; "
            "import meshrt")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, timeout=60)
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: meshrt's compiled extensions are missing"), proc.stderr
    assert "pip install -e ." in last and "ModuleNotFoundError" not in proc.stderr


def test_default_counts():
    from meshrt.stencil.bench import default_counts

    assert default_counts(1) == [1]
    assert default_counts(6) == [1, 2, 4, 6]
    assert default_counts(8) == [1, 2, 4, 8]


def test_bench_stencil_weak_scaling_driver(tmp_path):
    """`meshrt bench stencil` at 2 processes: one row per count, T_eff and efficiency, JSON."""
    import json

    from meshrt.launch import find_mpiexec
    from meshrt.testing import mpiexec_command

    if find_mpiexec() is None:
        pytest.skip("no mpiexec found")
    out = tmp_path / "s.json"
    cmd = mpiexec_command(2, [sys.executable, "-m", "meshrt.cli", "bench", "stencil", "--local", "24",
           "--steps", "2", "--reps", "1", "--json", str(out)])
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["procs"] for r in rows] == [1, 2]
    assert rows[1]["global_shape"] == [48, 24] and rows[0]["efficiency"] == 1.0
    assert all(r["t_eff_gbs"] > 0 for r in rows) and "T_eff_GB/s" in proc.stdout
    bad = subprocess.run(cmd[:8] + ["--procs", "3"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "--procs" in bad.stderr


def test_docs_examples():
    """docs/sharding.md's examples are doctests; the docs the README points to exist."""
    result = doctest.testfile(os.path.join(ROOT, "docs", "sharding.md"), module_relative=False)
    assert result.failed == 0 and result.attempted >= 5
    readme = open(os.path.join(ROOT, "README.md")).read()
    assert "shared folder" not in readme
    for name in ("sharding.md", "collectives.md", "stencil.md", "multinode.md"):
        assert f"docs/{name}" in readme and os.path.exists(os.path.join(ROOT, "docs", name))
