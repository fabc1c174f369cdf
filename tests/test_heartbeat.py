"""The heartbeat (meshrt/runtime/heartbeat.py): its decisions serially, then small jobs on this one host.

The faults that need two hosts (a cut link, a lost proxy) are in tests/test_heartbeat_hosts.py;
here a "lost host" is a rank and its helper stopped with SIGSTOP, which needs no root.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import pytest

from meshrt.runtime import heartbeat as hb
from meshrt.launch import find_mpiexec
from meshrt.testing import mpiexec_command

needs_mpiexec = pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
KEY = bytes(range(32))  # the unit tests' job key


# -- the decisions -------------------------------------------------------------------------------
def test_deadline_from_the_environment():
    assert hb.deadline_seconds({}) == hb.DEFAULT == 10.0
    assert hb.deadline_seconds({"MESHRT_HEARTBEAT": " "}) == 10.0
    assert hb.deadline_seconds({"MESHRT_HEARTBEAT": "0"}) is None
    assert hb.deadline_seconds({"MESHRT_HEARTBEAT": "0.0"}) is None
    assert hb.deadline_seconds({"MESHRT_HEARTBEAT": "2.5"}) == 2.5
    for bad in ("abc", "-3", "0.5", "inf", "nan"):
        with pytest.raises(ValueError, match=rf"MESHRT_HEARTBEAT='{bad}': expected a number of seconds >= 1, "
                                             "or 0 to turn the heartbeat off"):
            hb.deadline_seconds({"MESHRT_HEARTBEAT": bad})


def test_interval_leaves_five_beats_per_deadline():
    assert hb.interval(10.0) == 1.0 and hb.interval(60.0) == 1.0
    assert hb.interval(2.0) == pytest.approx(0.4)


def test_who_is_silent():
    last = {1: 0.0, 2: 5.0, 3: 9.0}
    assert hb.silent(last, now=10.0, deadline=10.0) == {}  # exactly the deadline: not yet
    assert hb.silent(last, now=10.5, deadline=10.0) == {1: 10.5}
    assert hb.silent(last, now=16.0, deadline=10.0) == {1: 16.0, 2: 11.0}
    assert hb.silent({}, now=100.0, deadline=1.0) == {}
    # not heard yet: the helper may still be starting
    assert hb.silent(last, now=16.0, deadline=10.0, never={1}) == {2: 11.0}
    assert hb.silent(last, now=20.5, deadline=10.0, never={1}) == {1: 20.5, 2: 15.5, 3: 11.5}


def test_a_hosts_ranks_are_named_together():
    hosts = ["a", "a", "b", "b", "c"]
    last = {1: 9.0, 2: 0.0, 3: 4.5, 4: 5.5}
    # rank 3 missed only 5.5 s of beats, but rank 2 on its host is past the deadline: both are lost
    assert hb.lost_ranks(last, now=10.5, deadline=10.0, hosts=hosts) == {2: 10.5, 3: 6.0}
    assert hb.lost_ranks(last, now=9.0, deadline=10.0, hosts=hosts) == {}


def test_host_labels():
    table = [("n1", ["10.0.0.1", "127.0.0.1"])] * 2 + [("n2", ["10.0.0.2", "127.0.0.1"])] * 2
    assert hb.host_labels(table) == ["n1", "n1", "n2", "n2"]
    # one hostname, two network identities (namespaces, containers): named by address
    names = {"10.77.0.1": "hosta"}
    shared = [("vm", ["10.77.0.1"]), ("vm", ["10.77.0.1"]), ("vm", ["10.77.0.2"]), ("vm", ["10.77.0.2"])]
    assert hb.host_labels(shared, resolve=names.__getitem__) == ["hosta", "hosta", "10.77.0.2", "10.77.0.2"]


def test_the_lost_line_names_hosts_ranks_ages_and_what_the_survivors_do():
    hosts = ["a", "a", "b", "b", "c", "c"]
    states = {0: ("blocked", 1.0, "all_reduce(x=array(shape=(2,), dtype=float64)) at job.py:9"),
              1: ("blocked", 2.0, "all_reduce(x=array(shape=(2,), dtype=float64)) at job.py:9"),
              4: ("outside", 6.0, "job.py:12"), 5: ("finished", 7.0, "")}
    line = hb.lost_line({2: 12.3, 3: 6.0}, hosts, states, now=13.0, deadline=10.0)  # the longest silence
    assert "\n" not in line
    assert line == ("[meshrt] host b (ranks 2, 3) not heard from for 12.3 s (MESHRT_HEARTBEAT=10): the host or the "
                    "link to it is down; ranks 0, 1 were blocked in all_reduce(x=array(shape=(2,), dtype=float64)) "
                    "at job.py:9 for 12.0 s; rank 4 was at job.py:12, not in a meshrt operation for 7.0 s; "
                    "rank 5 was finished; ending the job")
    two = hb.lost_line({2: 11.0, 5: 13.0}, hosts, {}, now=13.0, deadline=10.0)
    assert two.startswith("[meshrt] host b (rank 2) not heard from for 11.0 s; host c (rank 5) not heard from for "
                          "13.0 s (MESHRT_HEARTBEAT=10)")
    many = {r: ("outside", 0.0, f"job.py:{r}") for r in range(6)}
    assert hb.lost_line({}, hosts, many, 1.0, 10.0).count(";") == 6  # 4 kinds of state, "2 more", the end


def test_ended_and_proxy_lines():
    hosts = ["a", "a", "b", "b"]
    assert hb.ended_line({3: 99}, hosts, {}, 0.0) == (
        "[meshrt] rank 3 on host b (pid 99) ended without finishing the script (killed, or a crash outside Python); "
        "ending the job")
    assert hb.proxy_line({2: 7, 3: 7}, hosts, keep=True).endswith(
        "goes nowhere and mpiexec cannot stop them; running on (MESHRT_KEEP_ORPHANS=1)")
    assert hb.ranks_text([3, 1]) == "ranks 1, 3" and hb.ranks_text([0]) == "rank 0"


def test_route_skips_another_hosts_copy_of_this_hosts_address():
    # the hub's docker0 address exists here too: on another host it would reach this host itself
    ip, src = hb._route(["172.17.0.1", "127.0.0.1"], 9, mine=["172.17.0.1", "127.0.0.1"], same_host=False)
    assert (ip, src) == ("127.0.0.1", "127.0.0.1")  # (nothing else routes: the last resort)
    ip, src = hb._route(["127.0.0.1"], 9, mine=["127.0.0.1"], same_host=True)
    assert (ip, src) == ("127.0.0.1", "127.0.0.1")


def _hub(n=4, hosts=("a", "a", "b", "b")):
    """rank 0's helper, in this process, over pipes the test holds: (helper, rank's end of the
    status pipe, rank's end of the command pipe)."""
    status_r, status_w = os.pipe()
    cmd_r, cmd_w = os.pipe()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    rank = subprocess.Popen(["sleep", "60"])  # what the helper kills should the "rank" not end when told
    cfg = {"rank": 0, "job": 7, "deadline": 2.0, "keep": False, "pid": rank.pid, "ppid": os.getppid(),
           "hosts": list(hosts), "pids": [0] * n, "peers": [["127.0.0.1", 9]] * n, "key": KEY.hex()}
    helper = hb._Helper(cfg, sock, status_r, cmd_w)
    rank.kill()
    rank.wait()
    return helper, status_w, cmd_r


def test_the_hub_notes_ranks_it_never_heard_and_ends_the_job_for_ranks_gone_silent(capfd):
    helper, status_w, cmd_r = _hub()
    helper.feed(b"s\tblocked\t%.3f\tall_reduce(...) at job.py:9\n" % (time.time() - 1.0))
    now = time.monotonic()
    helper.last = {1: now, 2: now - 13.0, 3: now - 13.0}  # 2 and 3 never heard, past deadline + STARTUP
    helper.never = {2, 3}
    helper._check()  # a firewall, not a lost host: a note, and the job goes on
    assert capfd.readouterr().err == ("[meshrt] ranks 2, 3 on host b never reached rank 0's heartbeat over UDP "
                                      "(a firewall between the hosts?): not watched; MESHRT_HEARTBEAT=0 turns the "
                                      "heartbeat off\n")
    assert helper.last == {1: now} and not helper.never
    helper.last[1] = time.monotonic() - 2.5  # heard once, then silent past the deadline
    os.close(status_w)  # the rank ends when told (here: at once)
    with pytest.raises(SystemExit):
        helper._check()
    err = capfd.readouterr().err
    assert err.startswith("[meshrt] host a (rank 1) not heard from for 2.5 s (MESHRT_HEARTBEAT=2): the host or the "
                          "link to it is down; rank 0 was blocked in all_reduce(...) at job.py:9 for 1."), err
    assert os.read(cmd_r, 100) == f"abort {hb.EXIT_STATUS}\n".encode()


def test_the_hub_ends_the_job_when_a_rank_process_ends_without_finishing(capfd):
    helper, status_w, cmd_r = _hub()
    helper.pids = [10, 11, 12, 13]
    os.close(status_w)
    with pytest.raises(SystemExit):
        helper._handle({"t": "g", "how": "lost", "dead": [3], "r": 2, "j": 7}, ("127.0.0.1", 9))
    assert capfd.readouterr().err == ("[meshrt] ranks 2, 3 on host b (pids 12, 13) ended without finishing the script "
                                      "(killed, or a crash outside Python); ending the job\n")
    assert os.read(cmd_r, 100) == f"abort {hb.EXIT_STATUS}\n".encode()
    helper, status_w, cmd_r = _hub()
    helper._handle({"t": "g", "how": "finished", "r": 2, "j": 7}, ("127.0.0.1", 9))  # a normal end
    assert 2 not in helper.last and helper.states[2][0] == "finished" and capfd.readouterr().err == ""


def test_ranks_killed_because_another_rank_aborts_are_not_blamed(capfd):
    """A rank whose script fails tells its helper ("q"), which tells the hub, before it aborts the job;
    mpiexec then kills the others, and their reports ("lost") must not end the job with an "ended without
    finishing" line (which ``meshrt run --restarts`` would restart) or abort the hub's own rank."""
    helper, status_w, cmd_r = _hub()
    helper.pids = [10, 11, 12, 13]
    helper._handle({"t": "q", "r": 1, "j": 7}, ("127.0.0.1", 9))
    helper._handle({"t": "g", "how": "quiet", "r": 1, "j": 7}, ("127.0.0.1", 9))
    helper._handle({"t": "g", "how": "lost", "dead": [3], "r": 2, "j": 7}, ("127.0.0.1", 9))
    assert helper.aborted_by == 1 and not helper.ended and capfd.readouterr().err == ""
    helper.rank_how = "lost"  # then mpiexec kills rank 0 too
    with pytest.raises(SystemExit):
        helper._leave()
    assert capfd.readouterr().err == ""
    os.set_blocking(cmd_r, False)
    with pytest.raises(BlockingIOError):
        os.read(cmd_r, 100)  # no abort asked of rank 0
    helper, status_w, cmd_r = _hub()  # rank 0's own script failed: its helper notes it to the rank at once
    helper.feed(b"q\n")
    assert os.read(cmd_r, 100) == b"noted\n"
    helper._handle({"t": "g", "how": "lost", "dead": [], "r": 3, "j": 7}, ("127.0.0.1", 9))
    assert not helper.ended and capfd.readouterr().err == ""


def test_a_spoke_passes_its_ranks_abort_to_the_hub_before_noting_it():
    hub = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    hub.bind(("127.0.0.1", 0))
    status_r, _ = os.pipe()
    cmd_r, cmd_w = os.pipe()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    cfg = {"rank": 2, "job": 7, "deadline": 2.0, "keep": False, "pid": os.getpid(), "ppid": os.getppid(),
           "hosts": ["a", "a", "b"], "pids": [0, 0, 0], "peers": [list(hub.getsockname())] * 3, "key": KEY.hex()}
    helper = hb._Helper(cfg, sock, status_r, cmd_w)
    helper.feed(b"q\n")
    assert hb.Seal(KEY, 7, 0).open(hub.recv(1000)) == {"t": "q", "j": 7, "r": 2, "d": 0, "n": 1}
    assert os.read(cmd_r, 100) == b"noted\n" and helper.rank_said == "quiet"
    hub.close()
    sock.close()


# -- jobs on this host ---------------------------------------------------------------------------
def _job(tmp_path, body, n=2, env=None, timeout=90):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    e = dict(os.environ, **(env or {}))
    t0 = time.monotonic()
    r = subprocess.run(mpiexec_command(n, [sys.executable, "-m", "meshrt.launch", str(script)]), cwd=tmp_path,
                       env=e, capture_output=True, text=True, timeout=timeout)
    return r, time.monotonic() - t0


def _gone(pids, within=5.0):
    until = time.monotonic() + within
    while time.monotonic() < until:
        if not [p for p in pids if hb._alive(p)]:
            return True
        time.sleep(0.1)
    return False


HELPER_PIDS = """
    from mpi4py import MPI
    from meshrt.runtime import heartbeat
    with open(f"helper{MPI.COMM_WORLD.rank}", "w") as f:  # (hydra's output would interleave the ranks' lines)
        f.write(str(heartbeat._helper.pid if heartbeat._helper else None))
"""


def _helpers(tmp_path):
    return [(tmp_path / f"helper{r}").read_text() for r in range(2) if (tmp_path / f"helper{r}").exists()]


@needs_mpiexec
def test_a_healthy_job_ends_cleanly_and_its_helpers_with_it(tmp_path):
    r, _ = _job(tmp_path, HELPER_PIDS + """
    import numpy as np
    from meshrt import Mesh
    from meshrt.collectives import all_reduce
    for _ in range(50):
        all_reduce(np.ones(3), Mesh((2,)), None, "sum")
    """, env={"MESHRT_HEARTBEAT": "2"})
    assert r.returncode == 0, r.stderr
    assert "[meshrt]" not in r.stderr
    pids = [int(p) for p in _helpers(tmp_path)]
    assert len(pids) == 2, r.stdout + r.stderr
    assert _gone(pids), f"heartbeat helpers left behind: {pids}"


@needs_mpiexec
def test_off_and_bad_settings(tmp_path):
    r, _ = _job(tmp_path, HELPER_PIDS, env={"MESHRT_HEARTBEAT": "0"})
    assert r.returncode == 0 and _helpers(tmp_path) == ["None", "None"], r.stdout + r.stderr
    for r in range(2):
        (tmp_path / f"helper{r}").unlink()
    r, _ = _job(tmp_path, HELPER_PIDS, env={"MESHRT_HEARTBEAT": "soon"})
    assert r.returncode != 0 and _helpers(tmp_path) == []
    assert r.stderr.count("meshrt.launch: ValueError: MESHRT_HEARTBEAT='soon': expected a number of seconds") == 2, r.stderr


@needs_mpiexec
def test_a_frozen_rank_ends_the_job_naming_it_and_what_the_other_was_blocked_in(tmp_path):
    # SIGSTOP on rank 1 and its helper: what a host that stopped answering looks like from rank 0
    r, took = _job(tmp_path, HELPER_PIDS + """
    import os, signal, time
    import numpy as np
    from meshrt import Mesh
    from meshrt.collectives import all_reduce
    from meshrt.runtime import heartbeat
    mesh = Mesh((2,))
    all_reduce(np.ones(3), mesh, None, "sum")
    if mesh.rank == 1:
        time.sleep(1.0)  # its helper has beaten by now (one never heard gets 10 s more to start)
        os.kill(heartbeat._helper.pid, signal.SIGSTOP)
        os.kill(os.getpid(), signal.SIGSTOP)
    all_reduce(np.ones(3), mesh, None, "sum")
    """, env={"MESHRT_HEARTBEAT": "2"})
    pids = [int(p) for p in _helpers(tmp_path)]
    for pid in pids:  # the stopped helper resumes, finds its rank gone and ends
        hb._alive(pid) and os.kill(pid, signal.SIGCONT)
    assert r.returncode == hb.EXIT_STATUS, r.stderr
    assert took < 15
    lines = [line for line in r.stderr.splitlines() if line.startswith("[meshrt]")]
    assert len(lines) == 1, r.stderr
    assert " (rank 1) not heard from for 2." in lines[0] and "(MESHRT_HEARTBEAT=2)" in lines[0], lines
    assert "rank 0 was blocked in all_reduce(" in lines[0] and "at job.py:" in lines[0], lines
    assert _gone(pids), f"heartbeat helpers left behind: {pids}"


@needs_mpiexec
def test_a_killed_rank_is_named_and_a_raising_one_is_left_to_its_traceback(tmp_path):
    r, took = _job(tmp_path, HELPER_PIDS + """
    import os, signal
    from mpi4py import MPI
    MPI.COMM_WORLD.Barrier()
    if MPI.COMM_WORLD.rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    MPI.COMM_WORLD.Barrier()
    """)
    assert r.returncode != 0 and took < 15
    assert f" ended without finishing the script (killed, or a crash outside Python)" in r.stderr, r.stderr
    assert "[meshrt] rank 1 on host " in r.stderr
    r, _ = _job(tmp_path, """
    from mpi4py import MPI
    if MPI.COMM_WORLD.rank == 1:
        raise RuntimeError("boom")
    MPI.COMM_WORLD.Barrier()
    """)
    assert r.returncode != 0 and "[rank 1] RuntimeError: boom" in r.stderr
    assert "[meshrt]" not in r.stderr, r.stderr


@needs_mpiexec
def test_a_silent_hub_is_named_by_the_rank_beside_it(tmp_path):
    # rank 0's helper (the hub) stops; rank 1, on the same host, names rank 0 alone, not the host
    r, took = _job(tmp_path, HELPER_PIDS + """
    import os, signal, time
    from mpi4py import MPI
    from meshrt.runtime import heartbeat
    MPI.COMM_WORLD.Barrier()
    if MPI.COMM_WORLD.rank == 0:
        time.sleep(1.0)
        os.kill(heartbeat._helper.pid, signal.SIGSTOP)
    MPI.COMM_WORLD.Barrier()
    time.sleep(30)
    """, env={"MESHRT_HEARTBEAT": "2"})
    pids = [int(p) for p in _helpers(tmp_path)]
    for pid in pids:
        hb._alive(pid) and os.kill(pid, signal.SIGCONT)
    assert r.returncode == hb.EXIT_STATUS and took < 20, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.startswith("[meshrt]")]
    assert len(lines) == 1 and " (rank 0) not heard from for 2." in lines[0], r.stderr
    assert "rank 1 was " in lines[0], lines
    assert _gone(pids), f"heartbeat helpers left behind: {pids}"
