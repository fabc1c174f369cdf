"""meshrt.runtime.mpich: MPICH's device-level collectives off at meshrt's import, unless the user chose, MPI has
started already, or ``MESHRT_DEVICE_COLLECTIVES=keep``."""

import os
import subprocess
import sys

import pytest

from meshrt.runtime.mpich import VARIABLE, device_collectives


@pytest.mark.parametrize("env,started,want", [
    ({}, False, "none"),
    ({VARIABLE: "all"}, False, None),  # the user's choice stands
    ({VARIABLE: ""}, False, None),
    ({}, True, None),  # MPI started: its settings are read
    ({"MESHRT_DEVICE_COLLECTIVES": "keep"}, False, None),
    ({"MESHRT_DEVICE_COLLECTIVES": " KEEP "}, False, None),
    ({"MESHRT_DEVICE_COLLECTIVES": ""}, False, "none"),
])
def test_device_collectives(env, started, want):
    assert device_collectives(env, started) == want


def test_bad_setting_names_the_variable():
    with pytest.raises(ValueError, match="MESHRT_DEVICE_COLLECTIVES='off': expected 'keep'"):
        device_collectives({"MESHRT_DEVICE_COLLECTIVES": "off"}, False)


@pytest.mark.parametrize("code,extra,want", [
    ("import meshrt", {}, "none"),
    ("from mpi4py import MPI; import meshrt", {}, "-"),  # MPI first: nothing changed
    ("import meshrt", {VARIABLE: "all"}, "all"),
    ("import meshrt", {"MESHRT_DEVICE_COLLECTIVES": "keep"}, "-"),
])
def test_set_at_import_before_mpi_starts(code, extra, want):
    env = {k: v for k, v in os.environ.items() if k not in (VARIABLE, "MESHRT_DEVICE_COLLECTIVES")}
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", f"{code}; import os; print(os.environ.get({VARIABLE!r}, '-'))"],
                         env=env, capture_output=True, text=True, timeout=120, check=True).stdout
    assert out.split()[-1] == want
