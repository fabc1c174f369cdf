"""meshrt.runtime.mpich: MPICH's device-level collectives off at meshrt's import in a job on one node, unless the
user chose, MPI has started already, or ``MESHRT_DEVICE_COLLECTIVES=keep``."""

import os
import subprocess
import sys

import pytest

from meshrt.launch import find_mpiexec
from meshrt.runtime.mpich import VARIABLE, device_collectives


ONE_NODE = {"PMI_SIZE": "3", "MPI_LOCALNRANKS": "3"}


@pytest.mark.parametrize("env,started,want", [
    (ONE_NODE, False, "none"),
    ({"PMI_SIZE": "4", "MPI_LOCALNRANKS": "2"}, False, None),  # across nodes: MPICH's defaults
    ({}, False, None),  # not under a launcher (a parent of jobs that may span nodes)
    ({"PMI_SIZE": "2"}, False, None),
    ({**ONE_NODE, VARIABLE: "all"}, False, None),  # the user's choice stands
    ({**ONE_NODE, VARIABLE: ""}, False, None),
    (ONE_NODE, True, None),  # MPI started: its settings are read
    ({**ONE_NODE, "MESHRT_DEVICE_COLLECTIVES": "keep"}, False, None),
    ({**ONE_NODE, "MESHRT_DEVICE_COLLECTIVES": " KEEP "}, False, None),
    ({**ONE_NODE, "MESHRT_DEVICE_COLLECTIVES": ""}, False, "none"),
])
def test_device_collectives(env, started, want):
    assert device_collectives(env, started) == want


def test_bad_setting_names_the_variable():
    with pytest.raises(ValueError, match="MESHRT_DEVICE_COLLECTIVES='off': expected 'keep'"):
        device_collectives({"MESHRT_DEVICE_COLLECTIVES": "off"}, False)


@pytest.mark.parametrize("code,extra,want", [
    ("import meshrt", {}, "-"),  # not under a launcher
    ("import meshrt", ONE_NODE, "none"),
    ("import meshrt", {**ONE_NODE, VARIABLE: "all"}, "all"),
    ("import meshrt", {**ONE_NODE, "MESHRT_DEVICE_COLLECTIVES": "keep"}, "-"),
])
def test_set_at_import_before_mpi_starts(code, extra, want, tmp_path):
    env = {k: v for k, v in os.environ.items()
           if k not in (VARIABLE, "MESHRT_DEVICE_COLLECTIVES", "PMI_SIZE", "MPI_LOCALNRANKS")}
    env.update(extra)
    # (run outside the checkout: there ``import meshrt`` would find the source tree, not the installed package)
    out = subprocess.run([sys.executable, "-c", f"{code}; import os; print(os.environ.get({VARIABLE!r}, '-'))"],
                         env=env, capture_output=True, text=True, timeout=120, check=True, cwd=tmp_path).stdout
    assert out.split()[-1] == want


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
@pytest.mark.parametrize("code,want", [
    ("import meshrt", "none"),
    ("from mpi4py import MPI; import meshrt", "-"),  # MPI started first: its settings are read, nothing changes
])
def test_under_mpiexec(code, want, tmp_path):
    """Under the launcher (one node): set at meshrt's import, unless mpi4py started MPI before it."""
    env = {k: v for k, v in os.environ.items() if k not in (VARIABLE, "MESHRT_DEVICE_COLLECTIVES")}
    prog = f"{code}; import os; print(os.environ.get({VARIABLE!r}, '-'))"
    out = subprocess.run([find_mpiexec(), "-n", "1", sys.executable, "-c", prog], env=env, capture_output=True,
                         text=True, timeout=120, check=True, cwd=tmp_path).stdout
    assert out.split()[-1] == want
