"""The launcher of the loaded MPI, and each launcher's spelling (pure ``job_command``)."""

import os
import subprocess
import sys

import pytest

import meshrt.runtime.mpiexec as M
from meshrt.runtime.mpiexec import MPILibrary, find_launcher, job_command, loaded_mpi, vendor_of


@pytest.fixture(autouse=True)
def fresh_caches():
    M.find_launcher.cache_clear()
    yield
    M.find_launcher.cache_clear()


def test_vendor_of_library_and_launcher_texts():
    assert vendor_of("MPICH Version:      5.0.2") == "mpich"
    assert vendor_of("HYDRA build details:\n    Version: 5.0.2") == "mpich"
    assert vendor_of("Intel(R) MPI Library 2021.18.1 for Linux* OS") == "intel"
    assert vendor_of("Open MPI v5.0.11, package: Open MPI user@localhost") == "openmpi"
    assert vendor_of("mpiexec (Open MPI) 5.0.11") == "openmpi"
    assert vendor_of("something else") == "unknown"


@pytest.mark.parametrize("vendor", ["mpich", "intel"])
def test_hydra_needs_no_flags_even_oversubscribed_as_root(vendor):
    cmd, notes = job_command(vendor, "/p/mpiexec", 4, ["py", "x"], cores=2, as_root=True,
                             env={"MESHRT_TIMEOUT": "5", "I_MPI_WAIT_MODE": "0"})
    assert cmd == ["/p/mpiexec", "-n", "4", "py", "x"]
    assert notes == ["4 processes on 2 cores: oversubscribed (each gets part of a core)"]
    cmd, notes = job_command(vendor, "/p/mpiexec", 2, ["py"], cores=2, as_root=False, tag_output=True)
    assert cmd == ["/p/mpiexec", "-prepend-rank", "-n", "2", "py"] and notes == []


def test_oversubscribed_intel_mpi_waits_instead_of_spinning():
    cmd, notes = job_command("intel", "/i/mpiexec", 4, ["py"], cores=2, as_root=False, env={})
    assert cmd == ["/i/mpiexec", "-genv", "I_MPI_WAIT_MODE", "1", "-n", "4", "py"]
    assert "I_MPI_WAIT_MODE=1" in notes[1]
    cmd, _ = job_command("intel", "/i/mpiexec", 2, ["py"], cores=2, as_root=False, env={})
    assert cmd == ["/i/mpiexec", "-n", "2", "py"]


def test_open_mpi_spelling():
    env = {"MESHRT_TIMEOUT": "5", "PYTHONSAFEPATH": "1", "HOME": "/root", "NUMBA_NUM_THREADS": "1"}
    cmd, notes = job_command("openmpi", "/o/mpiexec", 4, ["py", "x"], cores=2, as_root=True, env=env)
    assert cmd == ["/o/mpiexec", "--oversubscribe", "--allow-run-as-root", "-x", "MESHRT_TIMEOUT",
                   "-x", "NUMBA_NUM_THREADS", "-x", "PYTHONSAFEPATH", "-n", "4", "py", "x"]
    assert len(notes) == 2 and "root" in notes[1]
    # Within the cores and not root: nothing but -n (HOME is not forwarded).
    cmd, notes = job_command("openmpi", "/o/mpiexec", 2, ["py"], cores=2, as_root=False, env={"HOME": "/"})
    assert cmd == ["/o/mpiexec", "-n", "2", "py"] and notes == []
    cmd, _ = job_command("openmpi", "/o/mpiexec", 1, ["py"], cores=2, as_root=False, tag_output=True)
    assert "--tag-output" in cmd


@pytest.mark.parametrize("n", [0, -1, 2.0, True, "2"])
def test_bad_process_count_is_named(n):
    with pytest.raises(ValueError, match=r"nprocs is"):
        job_command("mpich", "mpiexec", n, ["py"], cores=2, as_root=False)


def _fake_install(root, name="mpiexec"):
    (root / "lib").mkdir(parents=True)
    (root / "bin").mkdir()
    lib = root / "lib" / "libmpi.so.40"
    lib.write_bytes(b"")
    exe = root / "bin" / name
    exe.write_text("#!/bin/sh\necho 'mpiexec (Open MPI) 5.0.11'\n")
    exe.chmod(0o755)
    return str(lib), str(exe)


def test_launcher_beside_the_loaded_library_wins_over_path(tmp_path, monkeypatch):
    lib, exe = _fake_install(tmp_path / "ompi")
    _, other = _fake_install(tmp_path / "sys")
    monkeypatch.setattr(M, "loaded_mpi", lambda: MPILibrary("openmpi", "Open MPI v5.0.11", lib))
    monkeypatch.setenv("PATH", os.path.dirname(other) + os.pathsep + os.environ["PATH"])
    monkeypatch.delenv("MESHRT_MPIEXEC", raising=False)
    launcher = find_launcher()
    assert launcher.path == exe and launcher.vendor == "openmpi"
    assert any(other in note and "first on PATH" in note for note in launcher.notes)


def test_a_launcher_of_another_mpi_is_named(tmp_path, monkeypatch):
    _, exe = _fake_install(tmp_path / "ompi")  # its --version says Open MPI
    monkeypatch.setattr(M, "loaded_mpi", lambda: MPILibrary("mpich", "MPICH Version: 5", None))
    monkeypatch.setenv("MESHRT_MPIEXEC", exe)
    launcher = find_launcher()
    assert launcher.path == exe and launcher.vendor == "openmpi"
    assert "mpi4py loads mpich" in launcher.notes[0]


def test_meshrt_mpiexec_that_is_not_an_executable(monkeypatch):
    monkeypatch.setenv("MESHRT_MPIEXEC", "/no/such/mpiexec")
    with pytest.raises(FileNotFoundError, match="MESHRT_MPIEXEC is '/no/such/mpiexec'"):
        find_launcher()


def test_this_pythons_launcher_belongs_to_its_mpi(monkeypatch):
    monkeypatch.delenv("MESHRT_MPIEXEC", raising=False)
    lib = loaded_mpi()
    if lib is None:
        pytest.skip("mpi4py loads no MPI here")
    launcher = find_launcher()
    assert launcher is not None and launcher.vendor == lib.vendor != "unknown"
    out = subprocess.run([launcher.path, "--version"], capture_output=True, text=True, timeout=60)
    assert vendor_of(out.stdout + out.stderr) == lib.vendor
    print(f"{lib.vendor}: {lib.version} ({lib.path}) -> {launcher.path}")


def test_meshrt_run_and_info_name_the_launcher(tmp_path, monkeypatch):
    monkeypatch.delenv("MESHRT_MPIEXEC", raising=False)
    if find_launcher() is None:
        pytest.skip("no mpiexec")
    script = tmp_path / "hello.py"
    script.write_text("from mpi4py import MPI\nopen(f'hello{MPI.COMM_WORLD.rank}', 'w').close()\n")
    n = (os.cpu_count() or 1) + 1
    r = subprocess.run([sys.executable, "-m", "meshrt.cli", "run", "-n", str(n), str(script)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.name for p in tmp_path.glob("hello[0-9]*")) == sorted(f"hello{i}" for i in range(n))
    assert f"{n} processes on {os.cpu_count()} cores: oversubscribed" in r.stderr
    info = subprocess.run([sys.executable, "-m", "meshrt.cli", "info"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert info.returncode == 0, info.stderr
    assert f"launcher: {find_launcher().path} [" in info.stdout
