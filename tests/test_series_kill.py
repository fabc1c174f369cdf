"""A time-series writer killed (SIGKILL) mid-step keeps every completed step, and a restart goes on from there.

Serial tests: each starts a 2-process job (``mpiexec -n 2 python -m meshrt.launch``)
that writes steps 0-2 of a series, then dies in step 3: rank 1 while writing
its block (``data``), or rank 0 inside the commit, after every block was
written (``commit``). xarray must open the series with every completed step
and never a partial one; a second job (``mode="a"``) then appends steps 4
and 5.
"""

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from meshrt.launch import find_mpiexec

xr = pytest.importorskip("xarray")
pytest.importorskip("zarr")
pytest.importorskip("h5netcdf")
MPIEXEC = find_mpiexec()
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec found next to sys.executable or on PATH")

SCRIPT = """
import os, signal, sys
import numpy as np
from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.io import from_series, open_series
import meshrt.io.series, meshrt.io.dataset

path, how, mode = sys.argv[1], sys.argv[2], sys.argv[3]
s = Sharding(Mesh((-1, 1)), [[0]], halo_sizes=[1, 1])
g = np.arange(7 * 5.0).reshape(7, 5)
def field(k):
    return DistributedTensor.from_global(g + k, s)
def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)
w = open_series(path, {"u": field(0)}, dims=("y", "x"), spacing=(1.0, 1.0), mode=mode)
if mode == "w":
    for k in range(3):
        w.write(step=k, time=0.5 * k, fields={"u": field(k)})
    rank = s.mesh.rank
    if how == "data" and rank == 1:  # dies before its block of step 3 is written
        meshrt.io.series._write_raw_chunks = die
        os.pwrite = die
    if how == "commit" and rank == 0:  # every block of step 3 is written; rank 0 dies committing it
        if path.endswith(".zarr"):   # after the group's zarr.json (the commit), before the members'
            real = meshrt.io.dataset.write_json
            def commit_then_die(*args):
                real(*args)
                die()
            meshrt.io.dataset.write_json = commit_then_die
        else:                        # before the new master replaces the old one
            os.replace = die
    w.write(step=3, time=1.5, fields={"u": field(3)})
    print("survived", flush=True)
else:
    for k in (4, 5):
        w.write(step=k, time=0.5 * k, fields={"u": field(k)})
    assert np.array_equal(from_series(path, "u", step=2, sharding=Sharding(s.mesh, [[], [0]])).gather(), g + 2)
    print("appended", w.steps, flush=True)
"""


def run_job(script, *args):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    proc = subprocess.Popen([MPIEXEC, "-n", "2", sys.executable, "-m", "meshrt.launch", str(script), *map(str, args)],
                            cwd=os.path.dirname(script), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the job did not end:\n{out[-4000:]}")
    return proc.returncode, out


def open_xr(path):
    return xr.open_zarr(path) if path.endswith(".zarr") else xr.open_dataset(path, engine="h5netcdf")


@pytest.mark.parametrize("how", ["data", "commit"])
@pytest.mark.parametrize("suffix", ["zarr", "nc"])
def test_killed_series_keeps_every_completed_step(tmp_path, suffix, how):
    script = tmp_path / "kill.py"
    script.write_text(textwrap.dedent(SCRIPT))
    path = str(tmp_path / f"run.{suffix}")
    rc, out = run_job(script, path, how, "w")
    assert rc != 0 and "survived" not in out, out[-4000:]
    g = np.arange(7 * 5.0).reshape(7, 5)
    # the commit is one rename: for zarr the group's zarr.json was replaced (step 3 is in), for netcdf not
    done = [0, 1, 2, 3] if (suffix, how) == ("zarr", "commit") else [0, 1, 2]
    with open_xr(path) as ds:
        assert list(ds.step.values) == done and list(ds.time.values) == [0.5 * k for k in done]
        assert np.array_equal(ds.u.values, np.stack([g + k for k in done]))
    rc, out = run_job(script, path, how, "a")
    assert rc == 0 and f"appended {done + [4, 5]}" in out, out[-4000:]
    with open_xr(path) as ds:
        assert list(ds.step.values) == done + [4, 5]
        assert np.array_equal(ds.u.values, np.stack([g + k for k in done + [4, 5]]))
