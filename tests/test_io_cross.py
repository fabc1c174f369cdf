"""Checkpoints across separate MPI jobs: written on P processes, read on Q; and
saves killed midway, which must leave the previous file whole.

Serial tests: each starts small scripts with ``mpiexec -n P python -m meshrt.launch``.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import mpiexec_command

MPIEXEC = find_mpiexec()
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec found next to sys.executable or on PATH")
TIMEOUT = 120

COMMON = """
import os, sys
import numpy as np
from mpi4py import MPI
from meshrt import Mesh, Sharding
from meshrt import io as mio

comm = MPI.COMM_WORLD
SHAPE = (13, 10, 3)

def global_array(seed, shape=SHAPE):
    return np.random.default_rng(seed).standard_normal(shape)

def local_of(g, s):
    local = np.full(s.local_shape(g.shape), 77, dtype=g.dtype)
    inner = tuple(slice(s.halo_widths(d)[0], s.halo_widths(d)[0] + n) for d, n in enumerate(s.shard_shape(g.shape)))
    local[inner] = g[s.shard_slices(g.shape)]
    return local, inner
"""

WRITER = COMMON + """
path, state = sys.argv[1], sys.argv[2]
mesh = Mesh((-1, -1))
s = Sharding(mesh, [[0], [1]], halo_sizes=[1, 1, 1, 0])
g = global_array(comm.size)
mio.write_npy(path, local_of(g, s)[0], s, g.shape)
h = global_array(100 + comm.size, (comm.size + 4,)).astype("float32")
s1 = Sharding(Mesh((-1,)), [[0]], halo_sizes=[1, 1])
mio.save_state(state, {"g": (local_of(g, s)[0], s, g.shape), "h": (local_of(h, s1)[0], s1, h.shape)},
               metadata={"writers": comm.size})
"""

READER = COMMON + """
path, state, writers = sys.argv[1], sys.argv[2], int(sys.argv[3])
g = global_array(writers)
for mesh_shape, split, halos in [((-1,), [[0]], [2, 1]), ((-1, -1), [[1], [0]], [1, 1, 1, 1]),
                                 ((-1,), [[], [], [0]], None), ((-1, -1), [], None)]:
    s = Sharding(Mesh(mesh_shape), split, halo_sizes=halos)
    local, sh, shape = mio.read_npy(path, s)
    assert shape == g.shape, (shape, g.shape)
    expect, inner = local_of(g, s)
    assert np.array_equal(local[inner], expect[inner]), f"rank {comm.rank}: wrong block under {s}"
s = Sharding(Mesh((-1,)), [[0]])
tensors, meta = mio.load_state(state, s)
assert meta == {"writers": writers}, meta
assert np.array_equal(tensors["g"].local, g[s.shard_slices(g.shape)])
h = global_array(100 + writers, (writers + 4,)).astype("float32")
assert tensors["h"].local.dtype == np.float32 and np.array_equal(tensors["h"].local, h[s.shard_slices(h.shape)])
if comm.rank == 0:
    print("READ-OK", writers, comm.size)
"""

# Saves `new` over `path` (which holds `old`) and dies at a chosen point.
CRASHER = COMMON + """
import signal, threading, time
path, how = sys.argv[1], sys.argv[2]
mesh = Mesh((-1,))
s = Sharding(mesh, [[0]], halo_sizes=[1, 1])
new = global_array(2, (3_000_000,))            # 24 MB: a write that takes a while
if how == "before-rename":
    real_replace = os.replace
    def dying_replace(src, dst):               # the temp file is complete, the rename never happens
        if ".tmp-" in src and dst == path:
            os._exit(9)
        real_replace(src, dst)
    os.replace = dying_replace
elif how == "mid-write" and comm.rank == comm.size - 1:
    directory, base = os.path.split(path)
    def kill_when_temp_appears():               # SIGKILL this process while the data is being written
        while not any(n.startswith(base + ".tmp-") for n in os.listdir(directory)):
            time.sleep(0.0005)
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=kill_when_temp_appears, daemon=True).start()
elif how == "state-before-commit":
    real_replace = os.replace
    def dying_replace(src, dst):
        if dst.endswith("manifest.json"):
            os._exit(9)
        real_replace(src, dst)
    os.replace = dying_replace
if how.startswith("state"):
    mio.save_state(path, {"x": (local_of(new, s)[0], s, new.shape)}, metadata={"version": "new"})
elif how == "loop":                            # saves until killed from outside
    for i in range(10**6):
        mio.write_npy(path, local_of(global_array(10 + i % 2, new.shape), s)[0], s, new.shape)
        if comm.rank == 0:
            print("saved", i, flush=True)
else:
    mio.write_npy(path, local_of(new, s)[0], s, new.shape)
print("survived", comm.rank, flush=True)
"""


def _env():
    env = dict(os.environ)
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


def _start(tmp_path, script, nprocs, *args):
    fn = tmp_path / f"script_{abs(hash(script))}.py"
    fn.write_text(textwrap.dedent(script))
    cmd = mpiexec_command(nprocs, [sys.executable, "-m", "meshrt.launch", str(fn), *map(str, args)])
    # cwd: "python -m" puts it first on sys.path, and a source checkout's meshrt/ would shadow the install
    return subprocess.Popen(cmd, env=_env(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def _finish(proc, timeout=TIMEOUT):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"mpiexec did not finish in {timeout} s (killed):\n{out[-4000:]}")
    return proc.returncode, out


def _run(tmp_path, script, nprocs, *args):
    rc, out = _finish(_start(tmp_path, script, nprocs, *args))
    assert rc == 0, f"mpiexec -n {nprocs} failed ({rc}):\n{out[-6000:]}"
    return out


def _no_orphans(tmp_path):
    """No process still runs one of this test's scripts."""
    deadline = time.time() + 10
    while time.time() < deadline:
        left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True).stdout.split()
        if not left:
            return
        time.sleep(0.2)
    pytest.fail(f"processes of the killed job are still running: {left}")


@pytest.mark.parametrize("p,q", [(1, 4), (4, 1), (2, 3), (3, 2), (3, 4), (4, 2)])
def test_written_on_p_read_on_q(tmp_path, p, q):
    path, state = tmp_path / "g.npy", tmp_path / "state"
    _run(tmp_path, WRITER, p, path, state)
    g = np.random.default_rng(p).standard_normal((13, 10, 3))
    assert np.array_equal(np.load(path), g)
    out = _run(tmp_path, READER, q, path, state, p)
    assert f"READ-OK {p} {q}" in out


def _old_file(path):
    old = np.arange(1000.0)
    np.save(path, old)
    return old


def _check_intact(path, old):
    back = np.load(path)
    assert back.shape == old.shape and np.array_equal(back, old), "the previous checkpoint was damaged"


@pytest.mark.parametrize("how", ["before-rename", "mid-write"])
def test_killed_save_leaves_old_file(tmp_path, how):
    path = tmp_path / "ckpt.npy"
    old = _old_file(path)
    rc, out = _finish(_start(tmp_path, CRASHER, 3, path, how))
    assert rc != 0 and "survived" not in out, out[-4000:]
    _check_intact(path, old)
    leftovers = [n for n in os.listdir(tmp_path) if n.startswith("ckpt.npy.tmp-")]
    assert len(leftovers) == 1, os.listdir(tmp_path)
    _no_orphans(tmp_path)
    # A later save ignores and then removes the leftover.
    _run(tmp_path, CRASHER, 2, path, "normal")
    assert np.array_equal(np.load(path), np.random.default_rng(2).standard_normal(3_000_000))
    assert not [n for n in os.listdir(tmp_path) if ".tmp-" in n]


def test_sigkill_of_the_whole_job_during_repeated_saves(tmp_path):
    path = tmp_path / "ckpt.npy"
    old = _old_file(path)
    proc = _start(tmp_path, CRASHER, 3, path, "loop")
    # Kill once the first save is under way (its temp file exists).
    deadline = time.time() + 60
    while not any(".tmp-" in n for n in os.listdir(tmp_path)):
        assert proc.poll() is None and time.time() < deadline, "the saving job ended early"
        time.sleep(0.002)
    time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    _no_orphans(tmp_path)
    back = np.load(path)
    versions = [old] + [np.random.default_rng(10 + k).standard_normal(3_000_000) for k in (0, 1)]
    assert any(back.shape == v.shape and np.array_equal(back, v) for v in versions), \
        "after a SIGKILL the file is neither the old checkpoint nor a complete new one"


def test_killed_state_save_leaves_old_state(tmp_path):
    state = tmp_path / "state"
    _run(tmp_path, WRITER, 2, tmp_path / "w.npy", state)
    before = sorted(os.listdir(state))
    rc, out = _finish(_start(tmp_path, CRASHER, 2, state, "state-before-commit"))
    assert rc != 0 and "survived" not in out, out[-4000:]
    _no_orphans(tmp_path)
    out = _run(tmp_path, READER, 3, tmp_path / "w.npy", state, 2)  # the old state, whole
    assert "READ-OK 2 3" in out
    assert set(before) < set(os.listdir(state)), "the half-written generation is left beside the old one"
    _run(tmp_path, CRASHER, 2, state, "state")
    assert len(os.listdir(state)) == 2, os.listdir(state)  # manifest + the new generation only
