"""The first steps of a fused numpy stencil (meshrt.tensor.lazy, meshrt.tensor.fuse) at the module's default
settings: the first evaluation fuses (no eager pass before it), a new tensor of a layout already seen reuses
the plan, and the first compile of a kernel happens in one process of the job, the others loading it."""

import numpy as np
import pytest
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Mesh, Sharding
from meshrt import halo as _halo
from meshrt.tensor import fuse as _fuse, lazy as _lazy

MPI_NPROCS = (1, 2, 3)

comm = MPI.COMM_WORLD


@pytest.fixture(scope="module")
def mesh():
    m = Mesh((-1,), ("x",))
    yield m
    m.free()


@pytest.fixture
def eager_count():
    """How many times a deferred operand was evaluated on its own (the eager replay of an expression)
    since the test began."""
    start = _lazy.stats["eager_leaves"]
    return lambda: _lazy.stats["eager_leaves"] - start


def jacobi(u):
    u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])


def jacobi_np(u, steps):
    u = u.copy()
    for _ in range(steps):
        u[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:])
    return u


def roll(u):
    return 0.5 * (np.roll(u, 1, 0) + np.roll(u, -1, 1))


@pytest.fixture(autouse=True)
def hot(monkeypatch):
    """meshrt's default (the test session sets MESHRT_FUSE_AFTER=2 for the rest of the suite); the fused
    kernel's first steps, so no small write is numpy on the blocks (at 1 process every read is local)."""
    monkeypatch.setattr(_lazy, "HOT", _lazy._hot_setting({}))
    monkeypatch.setattr(_lazy, "_LOCAL_MAX", -1)


def test_default_fuses_from_the_first_run():
    assert _lazy._hot_setting({}) == 1 and _lazy._hot_setting({"MESHRT_FUSE_AFTER": "3"}) == 3
    for bad in ("0", "-1", "x", ""):
        with pytest.raises(ValueError, match="MESHRT_FUSE_AFTER"):
            _lazy._hot_setting({"MESHRT_FUSE_AFTER": bad})


def test_first_step_fuses_no_eager_pass(mesh, eager_count):
    g = np.random.default_rng(3).random((comm.size * 5 + 3, 9))
    u = DT.from_global(g, Sharding(mesh, [["x"]]))
    before = _lazy.stats["fused_writes"]
    jacobi(u)
    assert _lazy.stats["fused_writes"] == before + 1  # the very first step ran the fused kernel
    assert eager_count() == 0  # and nothing of it eagerly
    jacobi(u)
    np.testing.assert_array_equal(u.gather(), jacobi_np(g, 2))
    r = DT.from_global(g, Sharding(mesh, [["x"]]), periodic=True)
    before = _lazy.stats["fused_new"]
    v = roll(r)
    v.local  # noqa: B018  (evaluated)
    assert _lazy.stats["fused_new"] == before + 1 and eager_count() == 0
    np.testing.assert_array_equal(v.gather(), roll(g))


def test_new_tensor_of_a_seen_layout_reuses_the_plan(mesh, eager_count):
    g = np.random.default_rng(4).random((comm.size * 4 + 5, 7))
    u = DT.from_global(g, Sharding(mesh, [["x"]], halo_sizes=[1, 1]))
    jacobi(u)
    jacobi(u)  # (the first run of a shape is planned for once; the second keeps its plan)
    plans, kernels = _lazy.stats["plans"], len(_fuse._KERNELS)
    # a new tensor, on a new but equal Sharding object, and one more on the same object
    w = DT.from_global(g * 2, Sharding(mesh, [["x"]], halo_sizes=[1, 1]))
    x = DT.from_global(g * 3, w.sharding)
    before = _lazy.stats["fused_writes"]
    jacobi(w)
    jacobi(x)
    assert _lazy.stats["plans"] == plans and len(_fuse._KERNELS) == kernels  # no planning, no kernel lookup
    assert _lazy.stats["fused_writes"] == before + 2 and eager_count() == 0
    np.testing.assert_array_equal(w.gather(), jacobi_np(g * 2, 1))
    np.testing.assert_array_equal(x.gather(), jacobi_np(g * 3, 1))
    # another layout (uneven shards) is planned anew, and still right
    offs = [0] + [min(g.shape[0], 2 + 4 * k) for k in range(1, comm.size)] + [g.shape[0]]
    y = DT.from_global(g, Sharding(mesh, [["x"]], sharded_dims_offsets=offs))
    plans, live = _lazy.stats["plans"], len(_halo._LIVE)
    jacobi(y)
    # planned anew: a small tensor split on rows, kept from its first run with no persistent request
    assert _lazy.stats["plans"] == plans + 1 and len(_halo._LIVE) == live
    np.testing.assert_array_equal(y.gather(), jacobi_np(g, 1))


def test_one_process_compiles_the_others_load(mesh, monkeypatch):
    """A kernel new to this test session (its structure depends on the process count): compiled by exactly
    one process of the job, loaded by the others, where they share one cache folder (the Numba kernels:
    the interpreter off)."""
    monkeypatch.setenv("MESHRT_FUSE_INTERP", "0")
    g = np.random.default_rng(5).random((comm.size * 3 + 4, 6))
    u = DT.from_global(g, Sharding(mesh, [["x"]]))
    compiled, loaded = _fuse.stats["compiled"], _fuse.stats["loaded"]

    def chain(x):
        e = x[:-2, :] * 0.5
        for _ in range(comm.size + 4):
            e = e + x[2:, :]
        return e

    u[1:-1, :] = chain(u)  # (a temporary: assigned fused)
    want = g.copy()
    f = g[:-2] * 0.5
    for _ in range(comm.size + 4):
        f = f + g[2:]
    want[1:-1] = f
    np.testing.assert_array_equal(u.gather(), want)
    mine = (_fuse.stats["compiled"] - compiled, _fuse.stats["loaded"] - loaded)
    assert sum(mine) == 1  # this process took the kernel once, one way or the other
    dirs = comm.allgather(_fuse.cache_dir())
    if len(set(dirs)) == 1:
        assert comm.allreduce(mine[0]) == 1, comm.allgather(mine)


@pytest.mark.parametrize("interp", ["1", "0"])
def test_interpreter_and_numba_kernel_alike(mesh, monkeypatch, interp):
    """The first steps on the interpreter (the default) and on the Numba kernel (MESHRT_FUSE_INTERP=0)
    give numpy's bits, float64 and float32, a shape of their own (a plan made under the setting)."""
    monkeypatch.setenv("MESHRT_FUSE_INTERP", interp)
    monkeypatch.setattr(_fuse, "_EVALUATORS", {})
    made = _fuse.stats["interpreted"]
    for dt in (np.float64, np.float32):
        g = np.random.default_rng(11).random((comm.size * 4 + 5 + int(interp), 9)).astype(dt)
        u = DT.from_global(g, Sharding(mesh, [["x"]]))
        v = DT.from_global(g.copy(), Sharding(mesh, [["x"]]))
        for _ in range(2):
            jacobi(u)
            v[1:-1, :] = np.sqrt(np.abs(v[2:, :] - v[:-2, :] * dt(0.5))) / dt(3)
        np.testing.assert_array_equal(u.gather(), jacobi_np(g, 2))
        w = g.copy()
        for _ in range(2):
            w[1:-1, :] = np.sqrt(np.abs(w[2:, :] - w[:-2, :] * dt(0.5))) / dt(3)
        np.testing.assert_array_equal(v.gather(), w)
    assert (_fuse.stats["interpreted"] > made) == (interp == "1")


def test_switch_to_the_numba_kernel_mid_run(mesh, monkeypatch):
    """MESHRT_FUSE_SWITCH_S=0: the Numba kernel loads on a thread after the first step, the steps go on
    meanwhile (each process switching when its thread is done), numpy's bits throughout.  (A block
    counted large: a small one stays on the interpreter's one-call path, `SmallRun`.)"""
    monkeypatch.setenv("MESHRT_FUSE_SWITCH_S", "0")
    monkeypatch.setattr(_lazy, "_SMALL", 0)
    monkeypatch.setattr(_fuse, "_EVALUATORS", {})
    g = np.random.default_rng(12).random((comm.size * 4 + 7, 10))
    u = DT.from_global(g, Sharding(mesh, [["x"]]))
    jacobi(u)
    evs = list(_fuse._EVALUATORS.values())
    assert evs and all(ev.thread is not None for ev in evs)
    for _ in range(3):
        jacobi(u)
    for ev in evs:
        ev.thread.join(300)
        assert ev.error is None and ev.fn is not ev.program
    jacobi(u)
    np.testing.assert_array_equal(u.gather(), jacobi_np(g, 5))
