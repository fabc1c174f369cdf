"""The heartbeat (meshrt/runtime/heartbeat.py) on two emulated hosts: faults injected into a running job.

Two network namespaces A and B joined by a veth pair (tests/netns_launcher.sh, as in
tests/test_multinode.py), 2 ranks each, TCP over the link, `tests/heartbeat_program.py` running
halo exchanges and all-reduces.  Each test breaks something while the job runs and asserts the
exit status, how long the job took to end, the line meshrt printed, and that no process is
left in either namespace.  Needs root and iproute2 (``tc`` for the lossy link); skipped with the
reason otherwise.
"""

import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import meshrt
from meshrt.runtime.heartbeat import EXIT_STATUS
from meshrt.launch import find_mpiexec
from test_multinode import LAUNCHER, LINK, NETMODS, PER_HOST, hosts  # noqa: F401  (hosts: the fixture)

HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "heartbeat_program.py")
SHORT = "3"  # MESHRT_HEARTBEAT where the default deadline is not what a test checks


class Job:
    """`heartbeat_program.py` on hosts A and B, its output collected as it comes."""

    def __init__(self, hosts, *args, heartbeat=SHORT, env=None):
        self.a, self.b = hosts
        e = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(meshrt.__file__)))
        e["PYTHONPATH"] = os.pathsep.join([root, e.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        e.update(NETMODS["ucx-tcp"])
        e.pop("MESHRT_HEARTBEAT", None)
        if heartbeat is not None:
            e["MESHRT_HEARTBEAT"] = heartbeat
        e.update(env or {})
        cmd = ["ip", "netns", "exec", self.a, find_mpiexec(), "-launcher", "ssh", "-launcher-exec", LAUNCHER,
               "-hosts", f"{self.a}:{PER_HOST},{self.b}:{PER_HOST}", "-n", str(2 * PER_HOST),
               sys.executable, "-m", "meshrt.launch", PROGRAM, *map(str, args)]
        self.lines, self.started = [], threading.Event()
        self.state = str(args[2]) if len(args) > 2 else None
        self.proc = subprocess.Popen(cmd, env=e, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)
            if line.startswith("STARTED"):
                self.started.set()

    @property
    def out(self) -> str:
        return "".join(self.lines)

    def wait_started(self, timeout=90):
        if not self.started.wait(timeout):
            self.kill()
            pytest.fail(f"the job did not start in {timeout} s:\n{self.out[-4000:]}")
        time.sleep(1.0)  # a few rounds in: every process is inside the loop
        # and the first checkpoint committed (a process's first save_state can take longer than that second
        # on a loaded machine, and the tests read the last committed checkpoint back)
        deadline = time.monotonic() + timeout
        while self.state and not os.path.exists(os.path.join(self.state, "manifest.json")):
            if time.monotonic() > deadline:
                self.kill()
                pytest.fail(f"the job committed no checkpoint in {timeout} s:\n{self.out[-4000:]}")
            time.sleep(0.05)

    def finish(self, timeout):
        """(exit status, seconds it took from now)."""
        t0 = time.monotonic()
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"the job did not end in {timeout} s:\n{self.out[-4000:]}")
        self.reader.join(10)
        return rc, time.monotonic() - t0

    def kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        for ns in (self.a, self.b):
            for pid in _pids(ns):
                _kill(pid)
        self.proc.wait()
        self.reader.join(10)

    def processes(self, ns, role):
        """pids in namespace ``ns`` of ``role``: rank, helper or proxy."""
        out = []
        for pid in _pids(ns):
            cmd = _cmdline(pid)
            if ((role == "rank" and "heartbeat_program.py" in cmd and "meshrt.launch" in cmd)
                    or (role == "helper" and cmd.endswith(tuple(f"heartbeat.py {x}" for x in "0123456789")) is False
                        and "heartbeat.py" in cmd and " -I -S " in f" {cmd} ")
                    or (role == "proxy" and "hydra_pmi_proxy" in cmd)):
                out.append(pid)
        return out

    def assert_empty(self, within=10.0):
        """Both namespaces hold no process (waiting up to ``within`` seconds for them to go)."""
        until = time.monotonic() + within
        while time.monotonic() < until:
            left = {ns: _pids(ns) for ns in (self.a, self.b)}
            if not any(left.values()):
                return
            time.sleep(0.2)
        text = {ns: [(p, _cmdline(p)[:120]) for p in ps] for ns, ps in left.items()}
        self.kill()
        pytest.fail(f"processes left behind {within} s after the job ended: {text}")


def _pids(ns):
    out = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out if os.path.exists(f"/proc/{p}") and not _zombie(int(p))]


def _zombie(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rfind(b")") + 2:].split()[0] == b"Z"
    except OSError:
        return True


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


def _kill(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def _meshrt_lines(out):
    return [line for line in out.splitlines() if line.startswith("[meshrt] ")]


def _checkpoint_readable(path):
    """The last checkpoint the job committed loads, whole and consistent."""
    from meshrt import Mesh, Sharding, load_state

    tensors, meta = load_state(path, Sharding(Mesh((1, 1)), [[0], [1]]))
    x = tensors["x"]
    assert x.global_shape == (8, 8 * 2 * PER_HOST) and meta["rounds"] >= 1
    assert np.all(x.local == meta["rounds"]), "the checkpoint mixes two generations"


def test_killed_ranks_are_named(hosts, tmp_path):
    job = Job(hosts, "loop", 60, tmp_path / "state")
    job.wait_started()
    ranks = job.processes(job.b, "rank")
    assert len(ranks) == PER_HOST, (ranks, job.out)
    for pid in ranks:
        _kill(pid)
    rc, took = job.finish(30)
    lines = _meshrt_lines(job.out)
    print(f"killed ranks: rc {rc} after {took:.1f} s: {lines}")
    assert rc != 0, job.out[-3000:]
    assert took < 5, f"the job took {took:.1f} s to end after its ranks on B were killed"
    assert any(f"ranks 2, 3 on host {job.b} (pids {ranks[0]}, {ranks[1]})" in l or
               f"ranks 2, 3 on host {job.b} (pids {ranks[1]}, {ranks[0]})" in l for l in lines), job.out[-3000:]
    assert "ended without finishing the script" in job.out
    job.assert_empty()
    _checkpoint_readable(tmp_path / "state")


def test_killed_proxy_ends_the_job_and_is_named(hosts):
    job = Job(hosts, "loop", 60)
    job.wait_started()
    proxies = job.processes(job.b, "proxy")
    assert len(proxies) == 1, (proxies, job.out)
    _kill(proxies[0])
    rc, took = job.finish(30)
    print(f"killed proxy: rc {rc} after {took:.1f} s: {_meshrt_lines(job.out)}")
    # 255: mpiexec, aborting the job, can trip on the control connection of the dead proxy itself
    assert rc in (EXIT_STATUS, 255), f"exit status {rc}:\n{job.out[-3000:]}"
    assert took < 6, f"the job took {took:.1f} s to end after B's hydra_pmi_proxy was killed"
    assert f"[meshrt] hydra_pmi_proxy (pid {proxies[0]}) on host {job.b} is gone: the output of ranks 2, 3 goes " \
           "nowhere" in job.out, job.out[-3000:]
    job.assert_empty()


def test_partition_ends_the_job_in_20_s_with_the_default_deadline(hosts, tmp_path):
    job = Job(hosts, "loop", 120, tmp_path / "state", heartbeat=None)
    job.wait_started()
    subprocess.run(["ip", "-n", job.b, "link", "set", LINK, "down"], check=True)
    rc, took = job.finish(60)
    lines = _meshrt_lines(job.out)
    print(f"partition: rc {rc} after {took:.1f} s: {lines}")
    assert rc == EXIT_STATUS, f"exit status {rc}:\n{job.out[-3000:]}"
    assert took <= 20, f"the partitioned job took {took:.1f} s to end"
    assert len(lines) == 1, job.out[-3000:]
    line = lines[0]
    assert line.startswith(f"[meshrt] host {job.b} (ranks 2, 3) not heard from for 1"), line
    assert "(MESHRT_HEARTBEAT=10): the host or the link to it is down; ranks 0, 1 were blocked in " in line, line
    # where the loop was: a collective, or a checkpoint being written (one every second)
    assert "all_reduce(" in line or "update_halo(" in line or "save_state(" in line, line
    job.assert_empty()
    _checkpoint_readable(tmp_path / "state")


def _drop_everything(ns):
    """Make ``ns``'s end of the link drop every packet it sends: ``tc netem loss 100%``, or where the
    kernel lacks netem, a ``pfifo`` queue of length 0 (it drops every packet just the same)."""
    for qdisc in (["netem", "loss", "100%"], ["pfifo", "limit", "0"]):
        r = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", LINK, "root", *qdisc],
                           capture_output=True, text=True)
        if r.returncode == 0:
            return " ".join(qdisc)
    return f"neither netem nor pfifo: {r.stderr.strip()}"


def test_a_link_that_drops_everything_for_less_than_the_deadline_is_survived(hosts):
    if shutil.which("tc") is None:
        pytest.skip("iproute2's `tc` is not installed")
    job = Job(hosts, "loop", 10, heartbeat="6")
    job.wait_started()
    how = [_drop_everything(ns) for ns in hosts]
    if any(h.startswith("neither") for h in how):
        job.kill()
        pytest.skip(f"tc cannot drop packets here: {how}")
    dropping = time.monotonic()
    time.sleep(4.0)
    for ns in hosts:
        subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", LINK, "root"], check=True)
    print(f"the link dropped every packet ({how[0]}) for {time.monotonic() - dropping:.1f} s")
    rc, took = job.finish(60)
    assert rc == 0, f"exit status {rc} after 4 s of 100% loss (MESHRT_HEARTBEAT=6):\n{job.out[-3000:]}"
    assert "HEARTBEAT-PROGRAM-OK" in job.out and not _meshrt_lines(job.out), job.out[-3000:]
    job.assert_empty()


def test_30_s_of_compute_without_mpi_is_survived(hosts):
    # rank 3 holds the GIL for a second at a time for 30 s; the others wait in an all_reduce
    job = Job(hosts, "compute", 30)
    job.wait_started()
    rc, took = job.finish(90)
    assert rc == 0, f"exit status {rc}:\n{job.out[-3000:]}"
    assert "HEARTBEAT-PROGRAM-OK" in job.out and not _meshrt_lines(job.out), job.out[-3000:]
    job.assert_empty()


def test_a_killed_proxy_with_keep_orphans_is_noted_and_the_job_runs_on(hosts):
    job = Job(hosts, "loop", 6, env={"MESHRT_KEEP_ORPHANS": "1"})
    job.wait_started()
    proxies = job.processes(job.b, "proxy")
    _kill(proxies[0])
    rc, took = job.finish(60)
    print(f"killed proxy, kept: rc {rc} after {took:.1f} s: {_meshrt_lines(job.out)}")
    assert "HEARTBEAT-PROGRAM-OK" in job.out, job.out[-3000:]  # the program ran to its end
    assert rc in (0, 255), job.out[-3000:]  # 255: mpiexec's own verdict on the proxy it lost
    assert _meshrt_lines(job.out) == [
        f"[meshrt] hydra_pmi_proxy (pid {proxies[0]}) on host {job.b} is gone: the output of ranks 2, 3 goes "
        "nowhere and mpiexec cannot stop them; running on (MESHRT_KEEP_ORPHANS=1)"], job.out[-3000:]
    job.assert_empty()
