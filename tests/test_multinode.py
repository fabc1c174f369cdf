"""Two "hosts" on one machine: network namespaces joined by a veth pair.

MPICH's hydra starts the processes of each host through tests/netns_launcher.sh
(in place of ssh: ``ip netns exec HOST ...``); the processes talk over TCP
across the veth pair, which the test proves from the veth byte counters.
Needs root and iproute2; skipped with the reason otherwise (docs/multinode.md).
"""

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

import meshrt
from meshrt.launch import find_mpiexec

HERE = os.path.dirname(os.path.abspath(__file__))
LAUNCHER = os.path.join(HERE, "netns_launcher.sh")
PROGRAM = os.path.join(HERE, "multinode_program.py")
PER_HOST = 2
NBYTES = 4 << 20  # per all_reduce: at least this much must cross the link each way
TIMEOUT = 90
LINK = "mrtlink"  # the veth ends' name in both namespaces (netns_launcher.sh)

# Processes on the two "hosts" share one kernel, so left alone MPICH's UCX netmod
# moves inter-host data through shared memory (the veth sees only the wire-up).
# These force TCP over the veth link (not the namespaces' own loopback); both are tried.
NETMODS = {
    "ucx-tcp": {"MPIR_CVAR_CH4_NETMOD": "ucx", "UCX_TLS": "tcp,self", "UCX_NET_DEVICES": LINK},
    "ofi-tcp": {"MPIR_CVAR_CH4_NETMOD": "ofi", "FI_PROVIDER": "tcp", "FI_TCP_IFACE": LINK},
}


def _skip_reason():
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux-only (platform {sys.platform})"
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install -y iproute2)"
    if os.geteuid() != 0:
        return f"creating network namespaces needs root (running as uid {os.geteuid()})"
    mpiexec = find_mpiexec()
    if mpiexec is None:
        return "no mpiexec found next to sys.executable or on PATH"
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    if "HYDRA" not in version.upper():
        return f"the emulation drives MPICH's hydra launcher; {mpiexec} is not hydra"
    return None


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@pytest.fixture
def hosts():
    """Two fresh network namespaces ("hosts") joined by a veth pair; always removed."""
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    tag = f"{os.getpid() % 100000}"
    a, b = f"mrt{tag}a", f"mrt{tag}b"
    subprocess.run([LAUNCHER, "down", a, b], capture_output=True)
    try:
        up = subprocess.run([LAUNCHER, "up", a, b], capture_output=True, text=True)
        if up.returncode != 0:
            msg = up.stderr.strip() or up.stdout.strip()
            if "Operation not permitted" in msg or "Permission denied" in msg:
                pytest.skip(f"cannot create network namespaces here: {msg}")
            pytest.fail(f"{LAUNCHER} up {a} {b} failed ({up.returncode}): {msg}")
        yield a, b
    finally:
        subprocess.run([LAUNCHER, "down", a, b], capture_output=True)
        left = _ip("netns", "list", check=False).stdout
        assert a not in left and b not in left, f"namespaces left behind: {left}"


def _link_bytes(ns):
    def read(what):
        out = _ip("netns", "exec", ns, "cat", f"/sys/class/net/{LINK}/statistics/{what}").stdout
        return int(out)

    return read("tx_bytes"), read("rx_bytes")


@pytest.mark.parametrize("netmod", sorted(NETMODS))
def test_halo_and_all_reduce_across_two_hosts(hosts, netmod):
    a, b = hosts
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(meshrt.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env.update(NETMODS[netmod])
    cmd = ["ip", "netns", "exec", a, find_mpiexec(), "-launcher", "ssh", "-launcher-exec", LAUNCHER,
           "-hosts", f"{a}:{PER_HOST},{b}:{PER_HOST}", "-n", str(2 * PER_HOST),
           sys.executable, "-m", "meshrt.launch", PROGRAM, str(NBYTES)]
    tx0, rx0 = _link_bytes(a)
    proc = subprocess.Popen(cmd, env=env, cwd=HERE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        pytest.fail(f"the two-host job did not finish in {TIMEOUT} s:\n{out[-6000:]}")
    assert proc.returncode == 0, f"{' '.join(cmd)} failed ({proc.returncode}):\n{out[-6000:]}"
    tx1, rx1 = _link_bytes(a)
    line = next((l for l in out.splitlines() if l.startswith("MULTINODE-OK ")), None)
    assert line, out[-6000:]
    ranks = json.loads(line.split(" ", 1)[1])["ranks"]
    for r in ranks:
        host = a if r["coords"][0] == 0 else b
        assert r["interfaces"] == [LINK], f"rank {r['rank']} ran outside the namespaces: {r}"
        assert r["netns"] == host, f"rank {r['rank']} should run on host {host}: {r}"
        assert r["shared_memory_peers"] == PER_HOST, f"MPI sees {r['shared_memory_peers']} processes per node: {r}"
    sent, received = tx1 - tx0, rx1 - rx0
    print(f"{netmod}: {sent} bytes sent, {received} received over {LINK} by host {a}")
    assert sent >= NBYTES and received >= NBYTES, (
        f"only {sent} bytes sent / {received} received over the veth link for all-reduces of {NBYTES} bytes: "
        "the processes did not talk over the network"
    )
