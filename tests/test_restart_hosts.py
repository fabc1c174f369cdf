"""``meshrt run --hosts ... --restarts N`` on emulated hosts: a host lost mid-run, the job restarted on
the hosts left, resumed from its last checkpoint, its result and series those of an unfaulted run.

The hosts are network namespaces joined by veth links, processes talking TCP over them
(tests/netns_launcher.sh, as tests/test_multinode.py and tests/test_heartbeat_hosts.py use), and
hydra starting each host's processes through that script in place of ssh
(``HYDRA_LAUNCHER_EXEC``).  The job is examples/wave2d.py with ``--checkpoint``, slowed down with
``--delay`` so that there is a run to interrupt.  A link is cut by making both of its ends drop
every packet (``tc qdisc ... pfifo limit 0``: the interfaces stay up, as a switch port's would
when the far side is gone).  Needs root, iproute2 and MPICH's hydra; skipped with the reason
otherwise.
"""

import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import meshrt
from test_heartbeat_hosts import _cmdline, _kill, _pids
from test_multinode import LAUNCHER, LINK, NETMODS, _skip_reason, hosts  # noqa: F401  (hosts: the fixture)

HERE = os.path.dirname(os.path.abspath(__file__))
WAVE = os.path.join(os.path.dirname(HERE), "examples", "wave2d.py")
N, STEPS, EVERY, CKPT = 48, 100, 10, 20  # grid, last step, series output and checkpoint intervals


class Run:
    """``meshrt run`` started in the first host's namespace, its output lines timed as they come."""

    def __init__(self, hosts, spec, tmp_path, *extra, heartbeat="3", restarts=1, netmod="ucx-tcp"):
        self.hosts, self.out_dir = hosts, str(tmp_path / "out")
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.abspath(meshrt.__file__)))
        env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        env.update(NETMODS[netmod], HYDRA_LAUNCHER="ssh", HYDRA_LAUNCHER_EXEC=LAUNCHER,
                   MESHRT_HEARTBEAT=heartbeat)
        for name in ("MESHRT_RESTART", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "PBS_NODEFILE"):
            env.pop(name, None)
        cmd = ["ip", "netns", "exec", hosts[0], sys.executable, "-m", "meshrt.cli", "run", "--hosts", spec,
               *extra, "--restarts", str(restarts), WAVE, "--n", str(N), "--steps", str(STEPS),
               "--output", self.out_dir, "--every", str(EVERY), "--checkpoint", os.path.join(self.out_dir, "ck"),
               "--checkpoint-every", str(CKPT), "--delay", "0.05", "--no-progress"]
        self.lines = []  # (monotonic time, line)
        self.proc = subprocess.Popen(cmd, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append((time.monotonic(), line.rstrip("\n")))

    @property
    def out(self):
        return "\n".join(l for _, l in self.lines)

    def when(self, prefix):
        """When the first line starting with ``prefix`` came, or None."""
        return next((t for t, l in self.lines if l.startswith(prefix)), None)

    def wait_checkpoint(self, step=CKPT, timeout=90):
        """Until the job committed its checkpoint of ``step`` (or a later one)."""
        manifest = os.path.join(self.out_dir, "ck", "manifest.json")
        until = time.monotonic() + timeout
        while time.monotonic() < until:
            try:
                with open(manifest) as f:
                    m = re.search(r'"meshrt.step": (\d+)', f.read())
                if m and int(m.group(1)) >= step:
                    return int(m.group(1))
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        self.kill()
        pytest.fail(f"no checkpoint of step {step} in {timeout} s:\n{self.out[-4000:]}")

    def processes(self, ns, role):
        out = []
        for pid in _pids(ns):
            cmd = _cmdline(pid)
            if (role == "rank" and "wave2d.py" in cmd and "meshrt.launch" in cmd
                    or role == "proxy" and "hydra_pmi_proxy" in cmd):
                out.append(pid)
        return out

    def finish(self, timeout=150):
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"meshrt run did not end in {timeout} s:\n{self.out[-4000:]}")
        self.reader.join(10)
        return rc

    def kill(self):
        try:
            os.killpg(self.proc.pid, 9)
        except ProcessLookupError:
            pass
        for ns in self.hosts:
            for pid in _pids(ns):
                _kill(pid)
        self.proc.wait()

    def assert_empty(self, within=15.0):
        until = time.monotonic() + within
        while time.monotonic() < until:
            left = {ns: _pids(ns) for ns in self.hosts}
            if not any(left.values()):
                return
            time.sleep(0.2)
        text = {ns: [(p, _cmdline(p)[:100]) for p in ps] for ns, ps in left.items()}
        self.kill()
        pytest.fail(f"processes left behind {within} s after the job ended: {text}")


@pytest.fixture
def three_hosts():
    """Three namespaces on one switch (netns_launcher.sh up A B C: a bridge in A); always removed."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    names = [f"mrt{os.getpid() % 100000}{x}" for x in "abc"]
    subprocess.run([LAUNCHER, "down", *names], capture_output=True)
    try:
        up = subprocess.run([LAUNCHER, "up", *names], capture_output=True, text=True)
        if up.returncode != 0:
            msg = up.stderr.strip() or up.stdout.strip()
            if "Operation not permitted" in msg or "Permission denied" in msg or "bridge" in msg:
                pytest.skip(f"cannot create three bridged network namespaces here: {msg}")
            pytest.fail(f"{LAUNCHER} up {' '.join(names)} failed ({up.returncode}): {msg}")
        yield tuple(names)
    finally:
        subprocess.run([LAUNCHER, "down", *names], capture_output=True)


def _cut(ns, dev=LINK):
    """``ns``'s ``dev`` drops every packet it sends (the interface stays up)."""
    subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", dev, "root", "pfifo", "limit", "0"],
                   check=True, capture_output=True)


def _serial(steps):
    sys.path.insert(0, os.path.dirname(WAVE))
    try:
        import wave2d
    finally:
        sys.path.pop(0)
    return wave2d.serial(N, steps, 0.25, "dirichlet")


def _check_result(run, rc, restarted_on, nprocs, was):
    """Exit 0, one restart on ``restarted_on`` (``nprocs`` processes), resumed from a checkpoint,
    the final field bitwise the serial (= unfaulted) run's, and the series: each step once, each
    equal to the serial run's at that step."""
    out = run.out
    assert rc == 0, f"exit status {rc}:\n{out[-5000:]}"
    restarts = [l for _, l in run.lines if l.startswith("meshrt run: restart")]
    assert len(restarts) == 1, out[-5000:]
    assert restarts[0].startswith(f"meshrt run: restart 1 of 1 on {restarted_on} ({nprocs} processes"
                                  f"{'; was ' + str(was) if was != nprocs else ''}), MESHRT_RESTART=1, after: [meshrt] "), restarts
    m = re.search(r"wave2d: resuming from step (\d+) \(.*MESHRT_RESTART=1, (\d+) processes\)", out)
    assert m and int(m.group(1)) >= CKPT and int(m.group(2)) == nprocs, out[-5000:]
    assert "wave2d: serial check: bit-for-bit identical" in out, out[-5000:]
    h5py = pytest.importorskip("h5py")
    with h5py.File(os.path.join(run.out_dir, "wave.nc"), "r") as f:
        steps, u = list(f["step"][...]), f["u"][...]
    assert steps == list(range(0, STEPS + 1, EVERY)), steps  # each step exactly once, in order
    for k, step in enumerate(steps):
        assert np.array_equal(u[k], _serial(step)), f"the series' step {step} differs from the unfaulted run's"
    return int(m.group(1))


def test_cut_link_restarts_on_the_host_left_within_15_s(hosts, tmp_path):
    a, b = hosts
    run = Run(hosts, f"{a}:2,{b}:2", tmp_path, heartbeat="10")  # the default deadline
    run.wait_checkpoint()
    cut = time.monotonic()
    _cut(a)
    _cut(b)
    rc = run.finish()
    restart_at = run.when("meshrt run: restart")
    print(f"cut link: restart decided {restart_at - cut:.1f} s after the cut, resumed "
          f"{run.when('wave2d: resuming') - cut:.1f} s after it")
    step = _check_result(run, rc, f"{a}:2", 2, 4)
    assert f"[meshrt] host {b} (ranks 2, 3) not heard from" in run.out
    assert restart_at - cut <= 15, f"the restart came {restart_at - cut:.1f} s after the cut"
    run.assert_empty()
    print(f"resumed from step {step}")


def test_killed_rank_on_b_restarts_on_a(hosts, tmp_path):
    a, b = hosts
    run = Run(hosts, f"{a}:2,{b}:2", tmp_path)
    run.wait_checkpoint()
    ranks = run.processes(b, "rank")
    assert len(ranks) == 2, (ranks, run.out[-3000:])
    _kill(ranks[-1])
    rc = run.finish()
    _check_result(run, rc, f"{a}:2", 2, 4)
    # the launcher may end the killed rank's neighbour on the same host too: then both are named in one line
    assert re.search(rf"\[meshrt\] ranks? [23](, [23])? on host {b} \(pids? ([0-9]+, )?{ranks[-1]}(, [0-9]+)?\) "
                     "ended without finishing", run.out), \
        run.out[-3000:]
    run.assert_empty()


def test_killed_hydra_proxy_on_b_restarts_on_a(hosts, tmp_path):
    a, b = hosts
    run = Run(hosts, f"{a}:2,{b}:2", tmp_path)
    run.wait_checkpoint()
    proxies = run.processes(b, "proxy")
    assert len(proxies) == 1, (proxies, run.out[-3000:])
    _kill(proxies[0])
    rc = run.finish()
    _check_result(run, rc, f"{a}:2", 2, 4)
    assert f"hydra_pmi_proxy (pid {proxies[0]}) on host {b} is gone" in run.out, run.out[-3000:]
    run.assert_empty()


def test_a_spare_host_takes_the_lost_ones_place(three_hosts, tmp_path):
    a, b, c = three_hosts
    # UCX takes no bridge for a TCP device (the switch is one, in a): libfabric's tcp does
    run = Run(three_hosts, f"{a}:2,{b}:2,{c}:2", tmp_path, "-n", "4", netmod="ofi-tcp")
    run.wait_checkpoint()
    assert run.processes(c, "rank") == [], "the spare host runs processes before it is needed"
    _cut(b)
    _cut(a, "mrtp2")  # the switch's port to b
    rc = run.finish()
    _check_result(run, rc, f"{a}:2,{c}:2", 4, 4)
    assert f"[meshrt] host {b} (ranks 2, 3) not heard from" in run.out, run.out[-3000:]
    run.assert_empty()


def test_a_frozen_rank_on_b_restarts_with_b_kept_in(hosts, tmp_path):
    import signal

    a, b = hosts
    run = Run(hosts, f"{a}:2,{b}:2", tmp_path)
    run.wait_checkpoint()
    ranks = run.processes(b, "rank")
    assert len(ranks) == 2, (ranks, run.out[-3000:])
    os.kill(ranks[-1], signal.SIGSTOP)  # its helper beats on; the freeze check names it
    rc = run.finish()
    _check_result(run, rc, f"{a}:2,{b}:2", 4, 4)  # a first freeze: the host stays in
    assert re.search(rf"\[meshrt\] rank [23] on host {b} \(pid {ranks[-1]}\) frozen: stopped \(state T", run.out), \
        run.out[-3000:]
    assert f"(host {b} kept in: a first freeze there; a second leaves it out)" in run.out, run.out[-3000:]
    run.assert_empty()
