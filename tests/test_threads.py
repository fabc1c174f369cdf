"""meshrt.runtime.threads: under mpiexec, the node's cores are shared out among the processes' BLAS pools."""

import json
import os
import subprocess
import sys

import pytest

from meshrt.launch import find_mpiexec
from meshrt.runtime.threads import blas_threads


@pytest.mark.parametrize("env,cores,bound,want", [
    ({"MPI_LOCALNRANKS": "2"}, 8, 8, 4),
    ({"MPI_LOCALNRANKS": "3"}, 2, 2, 1),                      # more processes than cores: one thread each
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, 16, 2, 2),          # bound by the launcher: its own cores
    ({"PALS_LOCAL_SIZE": "2"}, 8, 8, 4),
    ({"MPI_LOCALNRANKS": "1"}, 8, 8, None),                   # alone on the node
    ({}, 8, 8, None),                                         # not under a launcher
    ({"MPI_LOCALNRANKS": "2", "OPENBLAS_NUM_THREADS": "8"}, 8, 8, None),  # the user's choice stands
    ({"MPI_LOCALNRANKS": "2", "OMP_NUM_THREADS": "1"}, 8, 8, None),
    ({"MPI_LOCALNRANKS": "2", "MESHRT_BLAS_THREADS": "keep"}, 8, 8, None),
    ({"MPI_LOCALNRANKS": "2", "MESHRT_BLAS_THREADS": "3"}, 8, 8, 3),
    ({"MPI_LOCALNRANKS": "x2"}, 8, 8, None),                  # unreadable launcher variable: default
])
def test_blas_threads_per_process(env, cores, bound, want):
    assert blas_threads(env, cores, bound) == want


@pytest.mark.parametrize("value", ["0", "-2", "many", ""])
def test_bad_meshrt_blas_threads_names_the_variable(value):
    with pytest.raises(ValueError, match=f"MESHRT_BLAS_THREADS={value!r}: expected a positive number"):
        blas_threads({"MESHRT_BLAS_THREADS": value}, 8, 8)


# each process writes its own file: two ranks printing at once can share one line of mpiexec's forwarded output
_PROBE = ("import json, os, meshrt, threadpoolctl; from meshrt.runtime import threads; "
          "open(f'probe-{os.getpid()}.json', 'w').write(json.dumps([threads.applied, "
          "[p['num_threads'] for p in threadpoolctl.threadpool_info() if p['user_api'] == 'blas']]))")


def _probe(cmd, tmp_path, env):
    for old in tmp_path.glob("probe-*.json"):
        old.unlink()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return [json.loads(f.read_text()) for f in sorted(tmp_path.glob("probe-*.json"))]


def _clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in
           ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "MESHRT_BLAS_THREADS")}
    env.update(extra)
    return env


@pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec")
def test_two_processes_on_this_node_share_its_cores(tmp_path):
    cores = os.cpu_count()
    bound = len(os.sched_getaffinity(0))
    want = blas_threads({"MPI_LOCALNRANKS": "2"}, cores, bound)
    probes = _probe([find_mpiexec(), "-n", "2", sys.executable, "-c", _PROBE], tmp_path, _clean_env())
    assert len(probes) == 2, probes
    for applied, pools in probes:
        assert applied == want and all(n == want for n in pools), (probes, want)
    # MESHRT_BLAS_THREADS=keep: numpy's own pools, as in a process started without mpiexec
    [alone] = _probe([sys.executable, "-c", _PROBE], tmp_path, _clean_env())
    assert alone[0] is None
    probes = _probe([find_mpiexec(), "-n", "2", sys.executable, "-c", _PROBE], tmp_path,
                    _clean_env(MESHRT_BLAS_THREADS="keep"))
    assert probes == [alone, alone]
