"""A process killed (SIGKILL) while writing Zarr, HDF5 or VTK output leaves the previous step readable.

Serial tests: each starts a 2-process job with ``mpiexec -n 2 python -m meshrt.launch``
that writes one version of the files, then dies on rank 1 in the middle of
writing the next one; the files must still hold the first version.
"""

import os
import signal
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from meshrt.launch import find_mpiexec

zarr = pytest.importorskip("zarr")
h5py = pytest.importorskip("h5py")
MPIEXEC = find_mpiexec()
pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="no mpiexec found next to sys.executable or on PATH")

SCRIPT = """
import os, signal, sys
import numpy as np
import zarr, h5py
from meshrt import DistributedTensor, Mesh, Sharding
from meshrt.io import write_vtk

d, fmt = sys.argv[1], sys.argv[2]
s = Sharding(Mesh((-1,)), [[0]], halo_sizes=[1, 1])
old = DistributedTensor.from_global(np.arange(40.0).reshape(8, 5), s)
new = old + 1000.0
def write(t):
    t.to_zarr(os.path.join(d, "u.zarr"))
    t.to_hdf5(os.path.join(d, "u.h5"), "u")
    write_vtk(os.path.join(d, "u"), {"u": t}, step=0)
write(old)
write(old)  # two generations of HDF5 blocks exist: the killed write reuses the older one's files
if s.mesh.rank == 1:  # dies inside its own part of the next write
    def die(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)
    if fmt == "zarr":
        zarr.open_array = die
    elif fmt == "hdf5":
        h5py.File = die
    else:
        import builtins
        builtins.open = die
{"zarr": lambda: new.to_zarr(os.path.join(d, "u.zarr")),
 "hdf5": lambda: new.to_hdf5(os.path.join(d, "u.h5"), "u"),
 "vtk": lambda: write_vtk(os.path.join(d, "u"), {"u": new}, step=0)}[fmt]()
print("survived", flush=True)
"""


def read_vtk_cells(pvti):
    """The cell data of a 2-D .pvti's pieces, assembled (raw appended Float64 data)."""
    image = ET.parse(pvti).getroot().find("PImageData")
    out = np.zeros((8, 5))
    for piece in image.findall("Piece"):
        x0, x1, y0, y1, _, _ = map(int, piece.get("Extent").split())
        raw = open(os.path.join(os.path.dirname(pvti), piece.get("Source")), "rb").read()
        data = raw[raw.index(b"_", raw.index(b"<AppendedData")) + 1:]
        n = int(np.frombuffer(data[:8], "<u8")[0])
        out[x0:x1, y0:y1] = np.frombuffer(data[8:8 + n], "<f8").reshape(y1 - y0, x1 - x0).T
    return out


@pytest.mark.parametrize("fmt", ["zarr", "hdf5", "vtk"])
def test_killed_write_leaves_the_previous_files(tmp_path, fmt):
    script = tmp_path / "kill.py"
    script.write_text(textwrap.dedent(SCRIPT))
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    # cwd: "python -m" puts it first on sys.path, and a source checkout's meshrt/ would shadow the install
    proc = subprocess.Popen([MPIEXEC, "-n", "2", sys.executable, "-m", "meshrt.launch", str(script), str(tmp_path),
                             fmt], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the job did not end after rank 1 was killed:\n{out[-4000:]}")
    assert proc.returncode != 0 and "survived" not in out, out[-4000:]
    old = np.arange(40.0).reshape(8, 5)
    assert np.array_equal(zarr.open(tmp_path / "u.zarr", mode="r")["u"][...], old)
    with h5py.File(tmp_path / "u.h5", "r") as f:
        assert np.array_equal(f["u"][...], old)
    assert np.array_equal(read_vtk_cells(str(tmp_path / "u_000000.pvti")), old)
