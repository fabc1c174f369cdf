"""`meshrt run -n 4` when things go wrong: signals, a rank that finishes early, a hang under
MESHRT_TIMEOUT.  Each case must end within 30 s with a clear message and leave no process
of the job behind (found by a marker argument every rank's command line carries)."""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import mpiexec_command

pytestmark = pytest.mark.skipif(find_mpiexec() is None or not os.path.isdir("/proc"),
                                reason="needs mpiexec and /proc")

N = 4


def _survivors(marker):
    """Processes whose command line holds ``marker`` (read from /proc, no ps needed)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat", "rb") as f:
                zombie = f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
        except OSError:
            continue
        if marker in cmd and not zombie:
            found.append(f"{pid}: {cmd}")
    return found


def _assert_no_survivors(marker):
    deadline = time.monotonic() + 3
    while _survivors(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _survivors(marker), f"processes left behind: {_survivors(marker)}"


def _start(tmp_path, body, marker, **env):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.Popen(
        [sys.executable, "-m", "meshrt.cli", "run", "-n", str(N), str(script), marker, str(tmp_path)],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, **env))


def _start_plain(tmp_path, body, marker, **env):
    """``body`` as job.py under plain ``mpiexec -n N`` (no ``meshrt run``)."""
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    return subprocess.Popen(mpiexec_command(N, [sys.executable, str(script), marker]), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ, **env))


def _finish(proc, limit):
    t0 = time.monotonic()
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"meshrt run did not end within {limit} s:\n{err}")
    return proc.returncode, out, err, time.monotonic() - t0


# Every rank waits in a collective except rank 0, which sleeps: nothing ends by itself.
BLOCKED = """
    import os, sys, time
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    comm.Barrier()
    open(os.path.join(sys.argv[2], f"ready{comm.rank}"), "w").close()
    if comm.rank == 0:
        time.sleep(120)
    comm.Barrier()
"""


def _wait_ready(proc, tmp_path, limit=25):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if all((tmp_path / f"ready{r}").exists() for r in range(N)):
            return
        if proc.poll() is not None:
            pytest.fail(f"the job ended early: {proc.communicate()}")
        time.sleep(0.1)
    proc.kill()
    pytest.fail("the ranks did not start")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1],
                         ids=lambda s: s.name)
def test_signal_ends_the_whole_job(tmp_path, sig):
    marker = f"meshrt-signal-{sig.name}-{os.getpid()}"
    proc = _start(tmp_path, BLOCKED, marker, MESHRT_KILL_GRACE="2")
    _wait_ready(proc, tmp_path)
    proc.send_signal(sig)
    rc, _, err, elapsed = _finish(proc, 30)
    assert rc == 128 + sig, err
    assert elapsed < 10, f"{elapsed:.1f} s after {sig.name}"
    assert f"got {sig.name}" in err
    _assert_no_survivors(marker)


EARLY = """
    import sys
    import numpy as np
    from meshrt import DistributedTensor, Mesh, Sharding, all_reduce
    mesh = Mesh((-1,))
    t = DistributedTensor.zeros((8, 8), Sharding(mesh, [[0]]))
    if mesh.rank == 3:
        sys.exit(0)
    print("total", all_reduce(t.interior, mesh))
"""


def test_rank_finishing_early_ends_the_job(tmp_path):
    marker = f"meshrt-early-{os.getpid()}"
    proc = _start(tmp_path, EARLY, marker, MESHRT_EXIT_GRACE="1", MESHRT_KILL_GRACE="2")
    rc, out, err, _ = _finish(proc, 30)
    assert rc == 1, err
    assert "process 3 finished (the script returned) while processes 0, 1, 2 are blocked" in err
    for r in range(3):
        assert f"rank {r}: blocked in all_reduce(x=array(shape=(2, 8), dtype=float64), mesh=mesh(4,)" in err, err
        assert "at job.py:9 for " in err
    assert "rank 3: finished" in err
    assert "total" not in out
    _assert_no_survivors(marker)


def test_late_rank_outside_meshrt_is_not_killed(tmp_path):
    # Ranks 1-3 finish first while rank 0 computes (not in a meshrt operation): a normal end.
    marker = f"meshrt-late-{os.getpid()}"
    body = """
        import time
        from meshrt import DistributedTensor, Mesh, Sharding
        mesh = Mesh((-1,))
        t = DistributedTensor.zeros((8, 8), Sharding(mesh, [[0]]))
        t.gather()
        if mesh.rank == 0:
            time.sleep(3)
            print("rank 0 done")
    """
    proc = _start(tmp_path, body, marker, MESHRT_EXIT_GRACE="0.5")
    rc, out, err, _ = _finish(proc, 30)
    assert rc == 0, err
    assert "rank 0 done" in out
    assert re.search(r"finished \d+ s ago; still waiting for process 0 ", err), err  # after 4 x MESHRT_EXIT_GRACE
    assert "rank 0: not in a meshrt operation, at job.py:8 for " in err
    _assert_no_survivors(marker)


def test_timeout_reports_every_rank_and_aborts(tmp_path):
    # A deliberate mismatch: rank 0 never joins the reduction the others wait in.
    marker = f"meshrt-timeout-{os.getpid()}"
    body = """
        import time
        from meshrt import DistributedTensor, Mesh, Sharding
        mesh = Mesh((-1,))
        t = DistributedTensor.zeros((8, 8), Sharding(mesh, [[0]]))
        if mesh.rank == 0:
            time.sleep(120)
        t.gather()
    """
    proc = _start(tmp_path, body, marker, MESHRT_TIMEOUT="3", MESHRT_KILL_GRACE="2")
    rc, _, err, _ = _finish(proc, 30)
    assert rc == 124, err
    # each rank prints its own line on reaching the limit; meshrt run prints everyone's state
    gather = "DistributedTensor.gather() (gather of the blocks over mesh (4,)) at job.py:8"
    assert any(f"[meshrt] rank {r} blocked in {gather} for 3." in err for r in (1, 2, 3)), err
    for r in (1, 2, 3):
        assert f"  rank {r}: blocked in {gather} for " in err, err
    assert "  rank 0: not in a meshrt operation, at job.py:7 for " in err
    _assert_no_survivors(marker)


def test_timeout_under_plain_mpiexec(tmp_path):
    # Without meshrt run each rank's watchdog prints its own line and calls MPI_Abort.
    marker = f"meshrt-plain-timeout-{os.getpid()}"
    proc = _start_plain(tmp_path, """
        import time
        from meshrt import DistributedTensor, Mesh, Sharding
        mesh = Mesh((-1,))
        t = DistributedTensor.zeros((8, 8), Sharding(mesh, [[0]]))
        if mesh.rank != 1:
            t.gather(root=0)
        time.sleep(120)
    """, marker, MESHRT_TIMEOUT="3")
    rc, out, err, _ = _finish(proc, 30)
    assert rc == 124, (out, err)
    assert re.search(r"\[meshrt\] rank 0 blocked in DistributedTensor.gather\(root=0\) \(gather of the blocks "
                     r"over mesh \(4,\)\) at job.py:7 for 3\.\d s "
                     r"\(MESHRT_TIMEOUT=3\); aborting the job", err), err
    _assert_no_survivors(marker)


@pytest.mark.parametrize("before", [1, 2], ids=["front", "hot"])
def test_timeout_names_a_compiled_collective(tmp_path, before):
    # After one all_reduce the next runs the compiled front, after two the hot path (neither has
    # a Python frame): the watchdog still names it, with its arguments and the script's line.
    marker = f"meshrt-compiled-timeout-{os.getpid()}"
    proc = _start_plain(tmp_path, f"""
        import time
        import numpy as np
        from meshrt import Mesh, all_reduce
        mesh = Mesh((-1,))
        x = np.ones(4)
        for _ in range({before}):
            all_reduce(x, mesh)
        if mesh.rank != 1:
            all_reduce(x, mesh)
        time.sleep(120)
    """, marker, MESHRT_TIMEOUT="3")
    rc, out, err, _ = _finish(proc, 30)
    assert rc == 124, (out, err)
    assert re.search(r"\[meshrt\] rank [023] blocked in all_reduce\(x=array\(shape=\(4,\), dtype=float64\), "
                     r"mesh=mesh\(4,\), reduction='sum'\) at job.py:10 for 3\.\d s", err), err
    _assert_no_survivors(marker)


# -- the catalogue of jobs that must not hang: a rank returns while others wait for it ----------
# Each job runs at 4 processes under meshrt run; every rank first writes its pid.  Asserted:
# a non-zero exit within 20 s, a message naming the ranks and what each was doing, and no
# process of the job left (by pid, and by the marker on the command line).
PIDS = """
    import os, sys; from mpi4py import MPI
    open(os.path.join(sys.argv[2], f"pid{MPI.COMM_WORLD.rank}"), "w").write(str(os.getpid()))
"""

EXIT_BEFORE_CREATION = PIDS + """
    import numpy as np
    from meshrt import DistributedTensor, Mesh, Sharding
    mesh = Mesh((2, 2))
    if mesh.rank == 3:
        sys.exit(0)
    t = DistributedTensor.zeros((8, 8), Sharding(mesh, [[0]]))
"""

CHECK_SUM_ALONE = PIDS + """
    from meshrt import CollectiveError, DistributedTensor, Mesh, Sharding
    mesh = Mesh((-1,))
    t = DistributedTensor.zeros((8, 8), Sharding(mesh, [[0]]))

    def attempt(call):
        try:
            return call()
        except CollectiveError as e:
            print(f"rank {mesh.rank}: {e}")

    if mesh.rank == 0:
        attempt(t.sum)
    attempt(t.gather)
"""

RAW_BARRIER = PIDS + """
    from mpi4py import MPI
    import meshrt
    comm = MPI.COMM_WORLD
    if comm.rank == 3:
        sys.exit(0)
    comm.Barrier()
"""

RAW_GROUP_BARRIER = PIDS + """
    from meshrt import Mesh
    mesh = Mesh((2, 2))
    column = mesh.group([0])  # ranks 0, 2 and ranks 1, 3
    if mesh.rank == 3:
        sys.exit(0)
    column.Barrier()  # rank 1 waits for rank 3 forever; ranks 0 and 2 go on and finish
"""

ZEROS = "DistributedTensor.zeros (agreement over mesh (2, 2)) at job.py:10"
HANGS = [
    # (id, job, environment, exit status, what the message must say)
    ("exit before creation", EXIT_BEFORE_CREATION, {}, 1,
     ["process 3 finished (the script returned) while processes 0, 1, 2 are blocked"]
     + [f"rank {r}: blocked in {ZEROS} for " for r in range(3)] + ["rank 3: finished"]),
    ("exit before creation, MESHRT_CHECK=1", EXIT_BEFORE_CREATION, {"MESHRT_CHECK": "1"}, 1,
     ["process 3 finished (the script returned) while processes 0, 1, 2 are blocked"]
     + [f"rank {r}: blocked in {ZEROS} for " for r in range(3)]),
    ("exit before creation, MESHRT_TIMEOUT", EXIT_BEFORE_CREATION, {"MESHRT_TIMEOUT": "3", "MESHRT_EXIT_GRACE": "60"},
     124, [f"blocked in {ZEROS} for 3.", "MESHRT_TIMEOUT reached"]
     + [f"rank {r}: blocked in {ZEROS} for " for r in range(3)]),
    ("check: sum on rank 0 alone", CHECK_SUM_ALONE, {"MESHRT_CHECK": "1"}, 1,
     ["processes 1, 2, 3 finished (the script returned) while process 0 is blocked",
      "rank 0: blocked in DistributedTensor.gather (MESHRT_CHECK agreement over mesh (4,)) at job.py:11 for "]
     + [f"rank {r}: finished" for r in (1, 2, 3)]),
    ("raw barrier on COMM_WORLD", RAW_BARRIER, {}, 1,
     ["process 3 finished (the script returned) while processes 0, 1, 2 are blocked"]
     + [f"rank {r}: blocked in a raw MPI call comm.Barrier() on COMM_WORLD at job.py:10 for " for r in range(3)]),
    ("raw barrier on a mesh's group", RAW_GROUP_BARRIER, {}, 1,
     ["processes 0, 2, 3 finished (the script returned) while process 1 is blocked in calls that need process 3",
      "rank 1: blocked in a raw MPI call column.Barrier() on a communicator of 2 processes at job.py:10 for "]),
]


def _pids_gone(tmp_path):
    pids = [int((tmp_path / f"pid{r}").read_text()) for r in range(N) if (tmp_path / f"pid{r}").exists()]
    assert len(pids) == N, f"only {len(pids)} ranks wrote their pid"
    deadline = time.monotonic() + 3
    alive = pids
    while alive and time.monotonic() < deadline:
        alive = [p for p in pids if os.path.exists(f"/proc/{p}") and
                 open(f"/proc/{p}/stat", "rb").read().rsplit(b")", 1)[1].split()[0] != b"Z"]
        time.sleep(0.1)
    assert not alive, f"ranks still running: pids {alive}"


@pytest.mark.parametrize("name, body, env, status, says", HANGS, ids=[h[0] for h in HANGS])
def test_a_rank_that_returns_never_hangs_the_job(tmp_path, name, body, env, status, says):
    marker = f"meshrt-hang-{abs(hash(name))}-{os.getpid()}"
    proc = _start(tmp_path, body, marker, **{"MESHRT_EXIT_GRACE": "1", "MESHRT_KILL_GRACE": "2", **env})
    rc, _, err, elapsed = _finish(proc, 40)
    assert rc == status, err
    assert elapsed < 20, f"{name}: ended after {elapsed:.1f} s\n{err}"
    for text in says:
        assert text in err, f"{name}: {text!r} not in\n{err}"
    _pids_gone(tmp_path)
    _assert_no_survivors(marker)
