"""Each example, run small at 2 and 4 processes through ``meshrt run``; it checks its own answer."""

import os
import subprocess
import sys

import numpy as np
import pytest

from meshrt.launch import find_mpiexec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
TIMEOUT = float(os.environ.get("MESHRT_EXAMPLE_TIMEOUT", "180"))

# (script, small arguments, lines that must appear in the output)
RUNS = [
    ("heat2d.py", ["--n", "45", "--steps", "30", "--no-progress"],
     ["heat2d: analytic check:", "OK", "heat2d: serial check: bit-for-bit identical"]),
    ("heat2d.py", ["--n", "40", "--steps", "20", "--mesh", "1d", "--no-progress", "--no-overlap"],
     ["heat2d: serial check: bit-for-bit identical"]),
    ("heat2d.py", ["--n", "33", "--steps", "25", "--init", "spots", "--no-progress"],
     ["heat2d: serial check: bit-for-bit identical"]),
    ("life.py", ["--n", "30", "--m", "27", "--steps", "25"], ["life: serial check: identical"]),
    ("heat3d.py", ["--n", "13", "--steps", "8"], ["heat3d: serial check: bit-for-bit identical"]),
    ("wave2d.py", ["--n", "37", "--steps", "20", "--bc", "neumann"], ["wave2d: serial check: bit-for-bit identical"]),
    ("acoustic2d.py", ["--nx", "29", "--ny", "22", "--steps", "25"],
     ["acoustic2d: serial check of P, Vx, Vy: bit-for-bit identical"]),
    ("show_sharding.py", [], ["rank 0: coords", "show_sharding: every sharding gathers back"]),
    ("mlp.py", ["--batch", "5", "--d-model", "13", "--d-ff", "21"], ["matches serial numpy: True"]),
    ("poisson_fft.py", ["--n", "20"], ["poisson_fft: manufactured-solution check:", "OK", "f's layout: True"]),
    ("navier_stokes2d.py", ["--n", "24", "--steps", "4"], ["navier_stokes2d: serial check:", "(<= 1e-12) OK"]),
    ("heat_implicit.py", ["--n", "37", "--steps", "3", "--variable"], ["heat_implicit: serial SciPy check:", "OK"]),
]


def run_example(script, args, nprocs):
    # The installed meshrt runs (a source tree on PYTHONPATH would shadow its compiled modules).
    env = dict(os.environ)
    for var in ("PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "meshrt.cli", "run", "-n", str(nprocs), os.path.join(EXAMPLES, script), *args]
    try:
        # not the repository root: "python -m" would import the source tree's meshrt
        proc = subprocess.run(cmd, cwd=EXAMPLES, env=env, capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        pytest.fail(f"{script} {' '.join(args)} at {nprocs} processes timed out after {TIMEOUT} s\n{out}")
    return proc


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
@pytest.mark.parametrize("nprocs", [2, 4])
@pytest.mark.parametrize("script,args,expect", RUNS, ids=[f"{r[0][:-3]}-{i}" for i, r in enumerate(RUNS)])
def test_example(script, args, expect, nprocs):
    proc = run_example(script, args, nprocs)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{script} exited {proc.returncode} at {nprocs} processes:\n{out}"
    for line in expect:
        assert line in out, f"{script}: {line!r} missing from the output:\n{out}"
    assert "MISMATCH" not in out


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
def test_example_mismatch_exits_nonzero():
    """A verification failure is a non-zero exit: an unstable r makes the analytic check fail."""
    proc = run_example("heat2d.py", ["--n", "20", "--steps", "200", "--r", "0.6", "--no-check", "--no-progress"], 2)
    assert proc.returncode != 0 and "MISMATCH" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
def test_heat3d_on_a_2x2x2_mesh():
    """The issue's correctness run: 8 processes (oversubscribed), a genuinely 3-D mesh."""
    proc = run_example("heat3d.py", ["--n", "12", "--steps", "6"], 8)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "mesh (2, 2, 2)" in out and "bit-for-bit identical" in out, out


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
def test_wave2d_paraview_output_and_zarr_restart(tmp_path):
    """--output writes a ParaView series and a Zarr restart; a run on another process count
    goes on from it and still matches the serial run of all the steps bit for bit."""
    pytest.importorskip("zarr")
    out = str(tmp_path / "out")
    proc = run_example("wave2d.py", ["--n", "30", "--steps", "12", "--output", out, "--every", "5"], 4)
    assert proc.returncode == 0 and "bit-for-bit identical" in proc.stdout, proc.stdout + proc.stderr
    pvd = open(os.path.join(out, "wave.pvd")).read()
    assert [f"wave_{k:06d}.pvti" in pvd for k in (0, 5, 10, 12)] == [True] * 4
    proc = run_example("wave2d.py", ["--restart", os.path.join(out, "restart.zarr"), "--steps", "8",
                                     "--no-progress", "--output", out], 3)
    assert proc.returncode == 0 and "wave2d: serial check: bit-for-bit identical" in proc.stdout, \
        proc.stdout + proc.stderr
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    with xr.open_dataset(os.path.join(out, "wave.nc"), engine="h5netcdf") as ds:  # one series over both runs
        assert ds.u.dims == ("time", "x", "y") and ds.u.shape == (5, 30, 30)
        assert list(ds.step.values) == [0, 5, 10, 12, 20] and ds.x.values[0] == pytest.approx(1 / 60)
        # the step both runs wrote (12, the restart's start) is the restart's, equal to the first run's
        assert np.isfinite(ds.u.values).all() and float(abs(ds.u.isel(time=0)).max()) > 0.5


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
def test_gray_scott_writes_paraview_zarr_and_a_png(tmp_path):
    zarr = pytest.importorskip("zarr")
    out, png = str(tmp_path / "gs"), str(tmp_path / "v.png")
    proc = run_example("gray_scott.py", ["--n", "36", "--steps", "40", "--every", "20", "--output", out,
                                         "--png", png, "--no-progress"], 4)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "gray_scott: serial check: bit-for-bit identical" in text, text
    group = zarr.open_group(os.path.join(out, "fields.zarr"), mode="r")
    assert group["u"].shape == group["v"].shape == (36, 36)
    series = zarr.open_group(os.path.join(out, "gs.zarr"), mode="r")
    assert series["v"].shape == (3, 36, 36) and list(series["step"][...]) == [0, 20, 40]
    assert np.array_equal(series["v"][-1], group["v"][...]) and series["v"].metadata.dimension_names == ("time", "y", "x")
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert sorted(n for n in os.listdir(out) if n.endswith(".pvti")) == [
        "gs_000000.pvti", "gs_000020.pvti", "gs_000040.pvti"]


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
def test_gray_scott_checkpoint_goes_on_at_another_process_count(tmp_path):
    """--checkpoint: a run to step 30 (checkpoints at 15 and 30), then the same command line with
    --steps 50 on 2 processes goes on from step 30; the series holds each step once and the result
    is bitwise the serial run's of all 50 steps."""
    zarr = pytest.importorskip("zarr")
    out = str(tmp_path / "gs")
    common = ["--n", "36", "--every", "10", "--output", out, "--checkpoint", os.path.join(out, "ck"),
              "--checkpoint-every", "15", "--no-progress"]
    proc = run_example("gray_scott.py", ["--steps", "30", *common], 4)
    assert proc.returncode == 0 and "resuming" not in proc.stdout, proc.stdout + proc.stderr
    proc = run_example("gray_scott.py", ["--steps", "50", *common], 2)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "gray_scott: resuming from step 30" in text, text
    assert "gray_scott: serial check: bit-for-bit identical" in text, text
    series = zarr.open_group(os.path.join(out, "gs.zarr"), mode="r")
    assert list(series["step"][...]) == [0, 10, 20, 30, 40, 50]
