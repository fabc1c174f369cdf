"""The heartbeat against a frozen rank and against forged datagrams (meshrt/runtime/heartbeat.py).

A frozen rank: its process stopped (SIGSTOP: state T), traced, or in uninterruptible sleep (D)
with no progress, while its helper, a separate process, beats on.  SIGSTOP is real here; the D
state is *emulated*: a real hung mount needs a server to hang, so the job points
``MESHRT_HEARTBEAT_PROC`` at a directory laid over /proc in which the rank's own files say D
and never change (the rank itself sleeps in an ordinary interruptible sleep meanwhile).

The datagrams: HMAC-SHA256 under the job's key and a sequence number per sender; the protocol
serially here, forged and replayed datagrams sent into a running job on emulated hosts in
tests/test_heartbeat_hosts.py.
"""

import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from meshrt.launch import find_mpiexec
from meshrt.runtime import heartbeat as hb
from meshrt.runtime.hosts import hosts_text, parse_hosts
from meshrt.runtime.restart import classify, named_hosts, next_run
from meshrt.testing import mpiexec_command
from test_restart_hosts import three_hosts  # noqa: F401  (the fixture)

needs_mpiexec = pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")
HERE = os.path.dirname(os.path.abspath(__file__))
WAVE = os.path.join(os.path.dirname(HERE), "examples", "wave2d.py")
KEY = bytes(range(32))


# -- the protocol ---------------------------------------------------------------------------------
def test_forged_replayed_and_copied_datagrams_are_dropped_and_counted():
    a, hub = hb.Seal(KEY, job=5, rank=1), hb.Seal(KEY, job=5, rank=0)
    first, second = a.wrap({"t": "b"}, 0), a.wrap({"t": "b"}, 0)
    assert hub.open(first, ("10.0.0.2", 1))["n"] == 1 and hub.open(second)["n"] == 2
    assert hub.open(second, ("10.0.0.9", 7)) is None  # copied: the same datagram again
    assert hub.open(first, ("10.0.0.9", 7)) is None  # an old sequence number
    assert (hub.forged, hub.replayed) == (0, 2)
    wrong = hb.Seal(os.urandom(32), job=5, rank=1)
    forged = [wrong.wrap({"t": "e", "c": 113}, 0),  # a wrong key
              second[:-1] + bytes([second[-1] ^ 1]),  # a flipped bit in the tag
              second.replace(b'"t":"b"', b'"t":"e"'),  # the body changed, the tag kept
              b'{"t":"e","j":5,"r":0}',  # the old clear-text format
              b"", b"x" * 31, os.urandom(200)]
    assert all(hub.open(d, ("10.0.0.9", 7)) is None for d in forged)
    assert (hub.forged, hub.replayed, hub.sources) == (len(forged), 2, {"10.0.0.9"})
    other_job = hb.Seal(KEY, job=6, rank=1).wrap({"t": "b"}, 0)  # the same key, another job (a reused key)
    assert hub.open(other_job) is None and hub.replayed == 3
    # a valid one meant for another helper (rank 2), copied to this one: though new from its sender
    assert hub.open(hb.Seal(KEY, job=5, rank=3).wrap({"t": "b"}, 2)) is None and hub.replayed == 4
    assert hub.open(a.wrap({"t": "b"}, 0))["n"] == 3  # the sender's next one is taken
    assert hb.rejected_text(hub.forged, hub.replayed, hub.sources) == (
        "11 heartbeat datagrams rejected and dropped (7 failed authentication, 4 replayed; from 10.0.0.9)")


def test_the_hub_adds_the_others_counts_to_its_end_line(capfd):
    from test_heartbeat import _hub

    helper, status_w, cmd_r = _hub()
    helper.seal.open(b"junk", ("10.0.0.9", 1))
    helper._handle({"t": "b", "r": 1, "j": 7, "n": 1, "x": [2, 1, ["10.0.0.8"]]}, ("127.0.0.1", 9))
    os.close(status_w)
    with pytest.raises(SystemExit):
        helper._handle({"t": "f", "f": ["D", 10.2], "r": 2, "j": 7, "n": 1}, ("127.0.0.1", 9))
    err = capfd.readouterr().err
    assert err == ("[meshrt] rank 2 on host b (pid 0) frozen: in uninterruptible sleep (state D: a hung mount or "
                   "device?) with no progress for 10.2 s (MESHRT_HEARTBEAT=2); 4 heartbeat datagrams rejected and "
                   "dropped (3 failed authentication, 1 replayed; from 10.0.0.8, 10.0.0.9); ending the job\n"), err


def test_the_key_from_the_environment():
    assert hb.key_from_env({}) is None
    assert hb.key_from_env({hb.KEY_ENV: KEY.hex()}) == KEY
    assert hb.key_from_env({hb.KEY_ENV: " " + KEY.hex().upper() + "\n"}) == KEY
    secret = "zz" + KEY.hex()[2:]
    for bad, said in ((secret, "got 64 characters"), (KEY.hex()[:-2], "got 62 characters"), ("", "got 0 characters (empty)"),
                      (KEY.hex() + "00", "got 66 characters")):
        with pytest.raises(ValueError, match=r"MESHRT_HEARTBEAT_KEY: expected 64 hexadecimal digits") as e:
            hb.key_from_env({hb.KEY_ENV: bad})
        assert said in str(e.value) and (not bad or bad not in str(e.value))  # the value is never repeated


# -- the freeze decision --------------------------------------------------------------------------
def test_a_busy_or_progressing_process_is_never_frozen():
    f = hb.Freeze(10.0)
    for t in range(100):  # 100 s running (R), or sleeping interruptibly (S) in an MPI call, no progress
        assert f.update(("R" if t % 2 else "S", (1, 1)), float(t)) is None
    for t in range(100, 200):  # swapping: D, but each second a few more faults and switches
        assert f.update(("D", (5, t)), float(t)) is None
    assert f.update(None, 200.0) is None  # unreadable (gone)
    for t in range(201, 211):
        assert f.update(("D", (5, 5)), float(t)) is None  # 9 s: not yet
    assert f.update(("D", (5, 5)), 211.5) == ("D", 10.5)
    g = hb.Freeze(10.0)  # T turning into t (a debugger attached to a stopped process) starts over
    g.update(("T", (1,)), 0.0)
    assert g.update(("t", (1,)), 8.0) is None and g.update(("t", (1,)), 18.5) == ("t", 10.5)


def test_proc_sample_sees_a_stopped_process_and_an_overlay(tmp_path):
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.2)
        state, progress = hb.proc_sample(p.pid)
        assert state in "RS" and len(progress) >= 4
        os.kill(p.pid, signal.SIGSTOP)
        time.sleep(0.2)
        assert hb.proc_sample(p.pid) == hb.proc_sample(p.pid) and hb.proc_sample(p.pid)[0] == "T"
        _fake_d(tmp_path, p.pid)
        assert hb.proc_sample(p.pid, str(tmp_path))[0] == "D"
        assert hb.proc_sample(os.getpid(), str(tmp_path))[0] in "RS"  # no overlay for it: the real /proc
    finally:
        p.kill()
        p.wait()
    assert hb.proc_sample(p.pid) is None


def _fake_d(overlay, pid):
    """``overlay/PID/task/PID/stat``: the real one with the state D (no status or io file: no progress)."""
    with open(f"/proc/{pid}/task/{pid}/stat") as f:
        stat = f.read()
    cut = stat.rfind(")") + 2
    d = os.path.join(str(overlay), str(pid), "task", str(pid))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "stat.tmp"), "w") as f:
        f.write(stat[:cut] + "D" + stat[cut + 1:])
    os.replace(os.path.join(d, "stat.tmp"), os.path.join(d, "stat"))


def test_a_frozen_line_restarts_with_the_host_kept_in_the_first_time():
    line = hb.frozen_line({2: ("T", 10.6)}, ["a", "a", "b", "b"], [10, 11, 12, 13],
                          {0: ("blocked", 1.0, "all_reduce(...) at job.py:9")}, now=12.0, deadline=10.0)
    assert line == ("[meshrt] rank 2 on host b (pid 12) frozen: stopped (state T: SIGSTOP or job control) with no "
                    "progress for 10.6 s (MESHRT_HEARTBEAT=10); rank 0 was blocked in all_reduce(...) at job.py:9 "
                    "for 11.0 s; ending the job")
    assert named_hosts([line]) == ("b",)
    f = classify(113, ["noise", line])
    assert (f.kind, f.hosts, f.restartable, f.line) == ("frozen", ("b",), True, line)
    hosts = parse_hosts("a:2,b:2,c:2")
    first = next_run(f, hosts, (), 4, 0, 3)
    assert first.restart and hosts_text(first.placement) == "a:2,b:2" and first.froze == ("b",)
    assert first.line.endswith("(host b kept in: a first freeze there; a second leaves it out)")
    second = next_run(f, hosts, first.lost, 4, 1, 3, froze=first.froze)
    assert second.restart and hosts_text(second.placement) == "a:2,c:2" and second.lost == ("b",)


# -- jobs on this host ----------------------------------------------------------------------------
def _job(tmp_path, body, n=2, env=None, timeout=90):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(body))
    e = dict(os.environ, **(env or {}))
    e.pop("MESHRT_HEARTBEAT", None)  # the default deadline, 10 s
    e.pop(hb.KEY_ENV, None)
    e.update(env or {})
    proc = subprocess.Popen(mpiexec_command(n, [sys.executable, "-m", "meshrt.launch", str(script)]), cwd=tmp_path,
                            env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"the job did not end in {timeout} s:\n{err[-3000:]}")
    return proc.returncode, out, err, time.time()


PIDS = """
    import os, time
    from mpi4py import MPI
    from meshrt.runtime import heartbeat
    with open(f"pids{MPI.COMM_WORLD.rank}", "w") as f:
        f.write(f"{os.getpid()} {heartbeat._helper.pid}")
"""


def _pids(tmp_path, n=2):
    return [int(p) for r in range(n) for p in (tmp_path / f"pids{r}").read_text().split()]


def _gone(pids, within=5.0):
    until = time.monotonic() + within
    while time.monotonic() < until:
        left = [p for p in pids if hb._alive(p)]
        if not left:
            return []
        time.sleep(0.1)
    for p in left:
        os.kill(p, signal.SIGKILL)
    return left


@needs_mpiexec
@pytest.mark.parametrize("stopped", [1, 0])  # a spoke's helper tells the hub; the hub's own rank
def test_a_stopped_rank_ends_the_job_within_20_s_under_the_defaults(tmp_path, stopped):
    other = 1 - stopped
    rc, out, err, ended = _job(tmp_path, PIDS + f"""
    import signal
    import numpy as np
    from meshrt import Mesh
    from meshrt.collectives import all_reduce
    mesh = Mesh((2,))
    all_reduce(np.ones(3), mesh, None, "sum")
    if mesh.rank == {stopped}:
        with open("stopped", "w") as f:
            f.write(repr(time.time()))
        os.kill(os.getpid(), signal.SIGSTOP)  # its helper beats on: only the freeze check can tell
    all_reduce(np.ones(3), mesh, None, "sum")
    """)
    took = ended - float((tmp_path / "stopped").read_text())
    pids = _pids(tmp_path)
    lines = [l for l in err.splitlines() if l.startswith("[meshrt]")]
    print(f"stopped rank: rc {rc}, ended {took:.1f} s after SIGSTOP: {lines}")
    assert rc == hb.EXIT_STATUS, err
    assert took < 20, f"the job ended {took:.1f} s after the SIGSTOP"
    assert len(lines) == 1, err
    assert re.match(rf"\[meshrt\] rank {stopped} on host \S+ \(pid {pids[2 * stopped]}\) frozen: stopped \(state T: "
                    rf"SIGSTOP or job control\) with no progress for 1\d\.\d s \(MESHRT_HEARTBEAT=10\); rank {other} was "
                    r"blocked in "
                    r"all_reduce\(.*\) at job\.py:\d+ for \d+\.\d s; ending the job$", lines[0]), lines
    assert _gone(pids) == [], "processes left behind"


@needs_mpiexec
def test_an_emulated_d_state_ends_the_job_within_20_s(tmp_path):
    overlay = tmp_path / "proc"
    rc, out, err, ended = _job(tmp_path, PIDS + f"""
    import numpy as np
    from meshrt import Mesh
    from meshrt.collectives import all_reduce
    from test_heartbeat_frozen import _fake_d
    mesh = Mesh((2,))
    all_reduce(np.ones(3), mesh, None, "sum")
    if mesh.rank == 1:
        with open("stopped", "w") as f:
            f.write(repr(time.time()))
        _fake_d({str(overlay)!r}, os.getpid())  # what its helper reads says D, unchanging, from now on
        time.sleep(60)
    all_reduce(np.ones(3), mesh, None, "sum")
    """, env={hb.PROC_ENV: str(overlay), "PYTHONPATH": os.pathsep.join([HERE, os.environ.get("PYTHONPATH", "")])})
    took = ended - float((tmp_path / "stopped").read_text())
    pids = _pids(tmp_path)
    lines = [l for l in err.splitlines() if l.startswith("[meshrt]")]
    print(f"emulated D: rc {rc}, ended {took:.1f} s after: {lines}")
    assert rc == hb.EXIT_STATUS and took < 20, (took, err)
    assert len(lines) == 1 and "rank 1 on host " in lines[0] and f"(pid {pids[2]}) frozen: in uninterruptible " \
        "sleep (state D: a hung mount or device?) with no progress for 1" in lines[0], lines
    assert "rank 0 was blocked in all_reduce(" in lines[0], lines
    assert _gone(pids) == [], "processes left behind"


@needs_mpiexec
def test_a_bad_key_is_a_clear_error_and_a_good_one_is_never_printed(tmp_path):
    secret = "g" * 64
    rc, out, err, _ = _job(tmp_path, "from mpi4py import MPI\n", env={hb.KEY_ENV: secret})
    assert rc != 0 and err.count("meshrt.launch: ValueError: MESHRT_HEARTBEAT_KEY: expected 64 hexadecimal digits") == 2, err
    assert secret not in err + out
    script = tmp_path / "job.py"
    r = subprocess.run([sys.executable, "-m", "meshrt.cli", "run", "-n", "2", str(script)], cwd=tmp_path,
                       env=dict(os.environ, **{hb.KEY_ENV: "12345"}), capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stderr.startswith("meshrt run: MESHRT_HEARTBEAT_KEY: expected 64 hexadecimal "
                                                     "digits"), r.stderr
    assert "12345" not in r.stderr
    # meshrt run hands each run a key in the environment; the ranks take it out of theirs
    script.write_text("import os\nfrom mpi4py import MPI\nprint('KEY', os.environ.get('MESHRT_HEARTBEAT_KEY'))\n"
                      "print('HANDED', b'MESHRT_HEARTBEAT_KEY=' in open('/proc/self/environ', 'rb').read())\n")
    r = subprocess.run([sys.executable, "-m", "meshrt.cli", "run", "-n", "2", str(script)], cwd=tmp_path,
                       env={k: v for k, v in os.environ.items() if k != hb.KEY_ENV}, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and r.stdout.count("KEY None") == 2 and "[meshrt]" not in r.stderr, r.stdout + r.stderr
    assert r.stdout.count("HANDED True") == 2, r.stdout


# -- meshrt run --restarts 1 ----------------------------------------------------------------------
def _children(pid):
    out = []
    for p in os.listdir("/proc"):
        if p.isdigit() and hb._ppid(int(p)) == pid:
            out.append(int(p))
    return out


def _wave_ranks(tmp_path):
    out = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if b"wave2d.py" in cmd and str(tmp_path).encode() in cmd and b"meshrt.cli" not in cmd \
                and b"mpiexec" not in cmd and b"heartbeat.py" not in cmd and b"hydra" not in cmd:
            out.append(int(p))
    return sorted(out)


@needs_mpiexec
@pytest.mark.parametrize("how", ["SIGSTOP", "emulated D"])
def test_a_frozen_rank_is_restarted_and_the_result_is_the_unfaulted_runs(tmp_path, how):
    STEPS = 60  # 6 s of steps unfaulted: the freeze comes at the first checkpoint (step 10)
    out_dir, overlay = tmp_path / "out", tmp_path / "proc"
    env = {k: v for k, v in os.environ.items() if k not in ("MESHRT_HEARTBEAT", "MESHRT_RESTART", hb.KEY_ENV)}
    env[hb.PROC_ENV] = str(overlay)
    env["MESHRT_HEARTBEAT"] = "3"  # (the default's 10 s are the tests above: here the restart is what counts)
    cmd = [sys.executable, "-m", "meshrt.cli", "run", "-n", "2", "--restarts", "1", WAVE, "--n", "48", "--steps",
           str(STEPS), "--output", str(out_dir), "--every", "10", "--checkpoint", str(out_dir / "ck"),
           "--checkpoint-every", "10", "--delay", "0.1", "--no-progress"]
    proc = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        manifest = out_dir / "ck" / "manifest.json"
        until = time.monotonic() + 60
        while not manifest.exists() and time.monotonic() < until and proc.poll() is None:
            time.sleep(0.1)
        ranks = _wave_ranks(tmp_path)
        assert manifest.exists() and len(ranks) == 2, ranks
        if how == "emulated D":
            _fake_d(overlay, ranks[1])  # its helper reads D from now on; SIGSTOP holds the real process still
        os.kill(ranks[1], signal.SIGSTOP)
        out, _ = proc.communicate(timeout=150)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    state = "T" if how == "SIGSTOP" else "D"
    lines = [l for l in out.splitlines() if l.startswith(("[meshrt]", "meshrt run:"))]
    print(f"{how}: {lines}")
    assert proc.returncode == 0, out[-4000:]
    assert re.search(rf"\[meshrt\] rank \d on host \S+ \(pid {ranks[1]}\) frozen: .*\(state {state}\b", out), out[-3000:]
    assert "meshrt run: restart 1 of 1 on this host (2 processes), MESHRT_RESTART=1, after: [meshrt] rank" in out, out
    assert re.search(r"wave2d: resuming from step (\d+)", out), out[-3000:]
    assert "wave2d: serial check: bit-for-bit identical" in out, out[-3000:]
    h5py = pytest.importorskip("h5py")
    sys.path.insert(0, os.path.dirname(WAVE))
    try:
        import wave2d
    finally:
        sys.path.pop(0)
    with h5py.File(out_dir / "wave.nc", "r") as f:
        steps, u = list(f["step"][...]), f["u"][...]
    assert steps == list(range(0, STEPS + 1, 10)), steps
    for k, step in enumerate(steps):
        assert np.array_equal(u[k], wave2d.serial(48, step, 0.25, "dirichlet")), f"step {step} differs"
    assert _gone(ranks) == []


# -- forged and replayed datagrams from a third (emulated) host ---------------------------------------
CAPTURE = r"""
import json, socket, struct, sys, time
ports, until, out = set(json.loads(sys.argv[1])), time.monotonic() + float(sys.argv[2]), []
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(0x0003))
s.bind((sys.argv[3], 0))
s.settimeout(0.2)
while time.monotonic() < until:
    try:
        frame = s.recv(65536)
    except socket.timeout:
        continue
    if frame[12:14] != b"\x08\x00" or frame[23] != 17:  # IPv4, UDP
        continue
    ip = frame[14:]
    udp = ip[(ip[0] & 15) * 4:]
    if struct.unpack("!H", udp[2:4])[0] in ports:
        out.append(udp[8:].hex())
print(json.dumps(out))
"""

FORGE = r"""
import hashlib, hmac, json, os, socket, sys
targets, captured = json.loads(sys.argv[1]), [bytes.fromhex(h) for h in json.loads(sys.argv[2])]
s, sent = socket.socket(socket.AF_INET, socket.SOCK_DGRAM), 0
body = json.loads(captured[-1][:-32])  # the job id and a rank, read off the wire
for ip, port in targets:
    forged = []
    for t in ("e", "b", "f"):  # "end the job", "I am alive", "I am frozen", under a key of our own
        b = json.dumps(dict(body, t=t, c=113, n=body["n"] + 10**6, f=["T", 99.0])).encode()
        forged.append(b + hmac.new(os.urandom(32), b, hashlib.sha256).digest())
    forged.append(json.dumps(dict(body, t="e", c=113)).encode())  # the old clear-text form
    forged.append(captured[-1][:-33] + b" " + captured[-1][-33:])  # a valid one, altered
    for d in forged + captured[-3:] + captured[:2]:  # then copies of valid ones: recent and old sequence numbers
        s.sendto(d, (ip, port))
        sent += 1
print(json.dumps({"sent": sent, "forged": 5 * len(targets), "replayed": 5 * len(targets)}))
"""


def _udp_ports(ns, pids):
    """The UDP ports the processes ``pids`` in network namespace ``ns`` have bound."""
    out = subprocess.run(["ip", "netns", "exec", ns, "ss", "-uanpH"], capture_output=True, text=True).stdout
    return [int(line.split()[3].rsplit(":", 1)[1]) for line in out.splitlines()
            if any(f"pid={p}," in line for p in pids)]


def test_forged_and_replayed_datagrams_from_a_third_host_change_nothing(three_hosts):
    """Hosts A and B run a job (2 ranks each); host C, on the same switch, reads heartbeat datagrams
    off A's link (as anyone on the network could) and sends every helper forged ones (its own key:
    "end the job", "alive", "frozen"; the old clear-text form; a valid one altered) and copies of
    valid ones (recent and old sequence numbers).  The job finishes; the count is reported."""
    import json

    from test_heartbeat_hosts import Job, _meshrt_lines
    from test_multinode import LINK, NETMODS

    a, b, c = three_hosts
    job = Job((a, b), "loop", 12, heartbeat=None, env=NETMODS["ofi-tcp"])  # (UCX takes no bridge)
    job.wait_started()
    targets = []
    for ns, ip in ((a, "10.77.0.1"), (b, "10.77.0.2")):
        ports = _udp_ports(ns, job.processes(ns, "helper"))
        assert len(ports) == 2, (ns, ports, job.out[-2000:])
        targets += [(ip, p) for p in ports]
    cap = subprocess.run(["ip", "netns", "exec", a, sys.executable, "-c", CAPTURE,
                          json.dumps([p for _, p in targets]), "2.5", LINK], capture_output=True, text=True, timeout=30)
    captured = json.loads(cap.stdout or "[]")
    assert len(captured) >= 5, (cap.stderr, captured)
    sent = subprocess.run(["ip", "netns", "exec", c, sys.executable, "-c", FORGE, json.dumps(targets),
                           json.dumps(captured)], capture_output=True, text=True, timeout=30)
    counts = json.loads(sent.stdout)
    rc, took = job.finish(60)
    lines = _meshrt_lines(job.out)
    print(f"sent {counts}; rc {rc}; {lines}")
    assert rc == 0 and "HEARTBEAT-PROGRAM-OK" in job.out, job.out[-3000:]
    assert lines == [f"[meshrt] {counts['sent']} heartbeat datagrams rejected and dropped ({counts['forged']} failed "
                     f"authentication, {counts['replayed']} replayed; from 10.77.0.3); the job was not affected"], \
        job.out[-3000:]
    job.assert_empty()
