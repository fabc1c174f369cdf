"""meshrt info and meshrt run, as a user types them."""

import os
import re
import subprocess
import sys
import textwrap
import time

import pytest

from meshrt.launch import find_mpiexec
from meshrt.testing import mpiexec_command

needs_mpiexec = pytest.mark.skipif(find_mpiexec() is None, reason="no mpiexec found")


def _meshrt(*args, cwd, timeout=60):
    # python -m meshrt.cli runs the same main() as the console script.
    return subprocess.run([sys.executable, "-m", "meshrt.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_info_serial(tmp_path):
    r = _meshrt("info", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    for word in ("meshrt", "mpi4py", "MPI", "numpy", "numba", "processes: 1"):
        assert word in r.stdout


@needs_mpiexec
def test_info_two_processes_with_mesh(tmp_path):
    r = subprocess.run(mpiexec_command(2, [sys.executable, "-m", "meshrt.cli",
                        "info", "--mesh", "2x1"]), cwd=tmp_path, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "processes: 2" in r.stdout
    assert "rank 1: coords (1, 0)" in r.stdout
    assert r.stdout.count("numpy") == 1  # printed by rank 0 only


def _script(tmp_path, body):
    p = tmp_path / "script.py"
    p.write_text(textwrap.dedent(body))
    return str(p)


def _intel_mpi() -> bool:
    from mpi4py import MPI
    return "Intel" in MPI.Get_library_version()


@needs_mpiexec
@pytest.mark.skipif(_intel_mpi(), reason="Intel MPI's mpiexec forwards a rank's output in chunks that may end "
                                         "mid-line, whole lines written or not")
def test_run_keeps_the_ranks_lines_whole_even_unbuffered(tmp_path):
    # print writes each argument apart when unbuffered; mpiexec forwards each write as it comes
    script = _script(tmp_path, """
        from mpi4py import MPI
        for i in range(3000):
            print("line", i, "of rank", MPI.COMM_WORLD.rank)
    """)
    r = subprocess.run([sys.executable, "-m", "meshrt.cli", "run", "-n", "2", script], cwd=tmp_path,
                       env=dict(os.environ, PYTHONUNBUFFERED="1"), capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    broken = [line for line in lines if not re.fullmatch(r"line \d+ of rank [01]", line)]
    assert len(lines) == 6000 and broken == [], broken[:5]


@needs_mpiexec
def test_run_aborts_when_one_rank_raises(tmp_path):
    script = _script(tmp_path, """
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        if comm.rank == 1:
            raise RuntimeError("boom on rank one")
        comm.Barrier()  # rank 0 would wait here forever
    """)
    t0 = time.monotonic()
    r = _meshrt("run", "-n", "2", script, cwd=tmp_path, timeout=60)
    assert time.monotonic() - t0 < 15
    assert r.returncode != 0
    assert "[rank 1] Traceback" in r.stderr
    assert "RuntimeError: boom on rank one" in r.stderr


@needs_mpiexec
def test_run_good_script_and_args(tmp_path):
    script = _script(tmp_path, """
        import sys
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        total = comm.allreduce(comm.rank)
        if comm.rank == 0:
            print("args", sys.argv[1:], "total", total, "name", __name__)
    """)
    r = _meshrt("run", "-n", "2", script, "--flag", "x", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "args ['--flag', 'x'] total 1 name __main__" in r.stdout


@needs_mpiexec
def test_run_default_one_process_exit_code(tmp_path):
    script = _script(tmp_path, "import sys; sys.exit(3)\n")
    assert _meshrt("run", script, cwd=tmp_path).returncode == 3


def test_run_missing_script(tmp_path):
    r = _meshrt("run", "-n", "2", "nope.py", cwd=tmp_path)
    assert r.returncode == 2
    assert "script 'nope.py' does not exist" in r.stderr


def _alive_with_marker(marker):
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


@needs_mpiexec
def test_run_ends_promptly_when_a_process_is_killed(tmp_path):
    marker = f"meshrt-kill-test-{os.getpid()}"
    script = _script(tmp_path, """
        import os, signal, time
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        comm.Barrier()
        if comm.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        comm.Barrier()  # the others wait here for a process that is gone
        time.sleep(60)
    """)
    t0 = time.monotonic()
    r = _meshrt("run", "-n", "3", script, marker, cwd=tmp_path, timeout=60)
    elapsed = time.monotonic() - t0
    assert r.returncode != 0
    assert elapsed < 10, f"meshrt run took {elapsed:.1f} s to end after a SIGKILL"
    deadline = time.monotonic() + 5
    while _alive_with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive_with_marker(marker), "processes left behind after the job ended"


# -- across hosts and restarts (the emulated-host runs: tests/test_restart_hosts.py) ---------------
def _dry(*args, cwd):
    r = _meshrt("run", "--dry-run", *args, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip().splitlines()[-1].split()  # the last line: an MPI library may print warnings first


@needs_mpiexec
def test_run_dry_run_spells_the_hosts_for_this_mpi(tmp_path):
    from meshrt.runtime.mpiexec import find_launcher

    script = _script(tmp_path, "print('hi')\n")
    vendor = find_launcher().vendor
    words = _dry("--hosts", "n1:2,n2:2,n3:2", "-n", "4", script, "--x", cwd=tmp_path)
    flag = "--host" if vendor == "openmpi" else "-hosts"

    def placed(words):  # the hosts and counts, as this MPI's launcher was told them
        if vendor != "intel":
            return words[words.index(flag) + 1]
        if "-ppn" in words:  # Intel MPI's hydra takes no counts in -hosts
            return ",".join(f"{h}:{words[words.index('-ppn') + 1]}" for h in words[words.index(flag) + 1].split(","))
        return ",".join(f"{words[i + 1]}:{words[i + 3]}" for i, w in enumerate(words) if w == "-host")

    assert placed(words) == "n1:2,n2:2", words  # n3 is a spare: not in the first run
    assert words[words.index("-n") + 1] in ("4", "2") and words[-2:] == [script, "--x"], words
    assert words[0] == find_mpiexec()
    (tmp_path / "hosts").write_text("# the nodes\nn1 slots=3\nn2:1\n")
    words = _dry("--hostfile", str(tmp_path / "hosts"), script, cwd=tmp_path)  # -n: every slot
    assert placed(words) == "n1:3,n2:1" and words.count(script) == (2 if vendor == "intel" else 1), words
    if vendor != "intel":
        assert words[words.index("-n") + 1] == "4", words
    env = dict(os.environ, SLURM_JOB_NODELIST="c[07-08]", SLURM_TASKS_PER_NODE="2(x2)")
    r = subprocess.run([sys.executable, "-m", "meshrt.cli", "run", "--dry-run", script], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=60)
    words = r.stdout.strip().splitlines()[-1].split()
    assert placed(words) == "c07:2,c08:2", r.stdout + r.stderr
    assert "hosts from the Slurm allocation" in r.stderr
    if vendor == "openmpi" and os.geteuid() == 0:
        assert "--allow-run-as-root" in words
    # the script's own options stay the script's, prefixes of meshrt run's included
    words = _dry("-n", "1", script, "--m", "3", "--hosts", "x", "--restarts", "2", cwd=tmp_path)
    assert words[-7:] == [script, "--m", "3", "--hosts", "x", "--restarts", "2"] and flag not in words[:-7], words


@pytest.mark.parametrize("args, message", [
    (["--hosts", "a:2", "-n", "3"], "-n 3: --hosts a:2 give 2 slots; name more hosts or slots (host:N)"),
    (["--hosts", "a:x"], "--hosts: host 'a' has 'x' slots; expected a positive number"),
    (["--hosts", "a", "--hostfile", "f"], "--hosts and --hostfile: give one of them"),
    (["--hostfile", "nope"], "--hostfile nope: cannot read it"),
    (["--restarts", "-1"], "--restarts must be at least 0, got -1"),
    (["-n", "2", "--min-procs", "3"], "--min-procs 3 is more than the 2 processes of the job"),
])
def test_run_host_and_restart_errors_name_the_option(tmp_path, args, message):
    script = _script(tmp_path, "print('hi')\n")
    r = _meshrt("run", "--dry-run", *args, script, cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr, r.stderr


@needs_mpiexec
@pytest.mark.parametrize("who", ["every rank", "rank 1"])
def test_run_does_not_restart_an_exception_in_the_script(tmp_path, who):
    # "rank 1": rank 0 waits in a collective and the launcher kills it when rank 1 aborts; its helper's
    # report must not be taken for a lost process (rank 1's abort reaches rank 0's helper first)
    script = _script(tmp_path, f"""
        import os, sys
        from mpi4py import MPI
        sys.stdout.write(f"run {{os.environ['MESHRT_RESTART']}}\\n")  # one write: the ranks' lines do not interleave
        sys.stdout.flush()
        MPI.COMM_WORLD.Barrier()
        if {who == "every rank"} or MPI.COMM_WORLD.rank == 1:
            raise ValueError("a bug restarting cannot fix")
        MPI.COMM_WORLD.Barrier()
    """)
    r = _meshrt("run", "-n", "2", "--restarts", "2", script, cwd=tmp_path, timeout=90)
    assert r.returncode == 1, r.stderr
    assert "run 0" in r.stdout and "run 1" not in r.stdout, r.stdout  # one run, not restarted
    assert "ValueError: a bug restarting cannot fix" in r.stderr and "Traceback" in r.stderr
    assert "meshrt run: not restarting: the script failed (exit status 1)" in r.stderr, r.stderr
    assert "meshrt run: restart" not in r.stderr


@needs_mpiexec
def test_run_restarts_after_a_killed_process_until_restarts_are_used_up(tmp_path):
    script = _script(tmp_path, """
        import os, signal
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        # a file per process and run: two ranks printing at once can share a line of mpiexec's output
        open(f"run-{os.environ['MESHRT_RESTART']}-{comm.rank}", "w").close()
        comm.Barrier()
        if comm.rank == 1 and os.environ["MESHRT_RESTART"] != "2":
            os.kill(os.getpid(), signal.SIGKILL)
        comm.Barrier()
        open(f"finished-{os.environ['MESHRT_RESTART']}-{comm.rank}", "w").close()
    """)

    def ran():
        return sorted(f.name for f in tmp_path.iterdir() if f.name.startswith(("run-", "finished-")))

    r = _meshrt("run", "-n", "2", "--restarts", "1", script, cwd=tmp_path, timeout=120)
    lines = [l for l in r.stderr.splitlines() if l.startswith("meshrt run: ") and "note:" not in l]
    assert len(lines) == 2, r.stderr
    assert lines[0].startswith("meshrt run: restart 1 of 1 on this host (2 processes), MESHRT_RESTART=1, after: "), lines
    assert lines[1] == "meshrt run: not restarting: --restarts 1 used up", lines
    assert ran() == ["run-0-0", "run-0-1", "run-1-0", "run-1-1"], (ran(), r.stdout)
    assert r.returncode != 0
    last = [l for l in r.stderr.splitlines() if "[meshrt] " in l and "meshrt run:" not in l]  # Open MPI may indent
    # the heartbeat named the dead process; the status is its 113, or mpiexec's own (the signal) if faster
    assert len(last) == 2 and "rank 1 on host" in last[-1] and r.returncode in (113, 9, 137, 255), r.stderr
    # with one more restart the third run finishes
    r = _meshrt("run", "-n", "2", "--restarts", "2", script, cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and {"finished-2-0", "finished-2-1"} <= set(ran()), (ran(), r.stdout + r.stderr)


def _netns_env(vendor, launcher, link):
    """How each MPI's launcher starts processes in the emulated hosts (network namespaces, in
    place of ssh; tests/netns_launcher.sh) and keeps its traffic on their link."""
    if vendor == "openmpi":
        # both namespaces share one hostname, so Open MPI takes them for one node: no shared-memory collectives;
        # and their 2 cores: no binding to cores
        return {"PRTE_MCA_plm_ssh_agent": launcher, "PRTE_MCA_hwloc_default_binding_policy": "none", "OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self",
                "OMPI_MCA_btl_tcp_if_include": link, "PRTE_MCA_oob_tcp_if_include": link, "OMPI_MCA_coll": "^sm,han"}
    if vendor == "intel":
        return {"I_MPI_HYDRA_BOOTSTRAP": "ssh", "I_MPI_HYDRA_BOOTSTRAP_EXEC": launcher, "I_MPI_HYDRA_IFACE": link,
                "FI_PROVIDER": "tcp", "FI_TCP_IFACE": link}
    return {"HYDRA_LAUNCHER": "ssh", "HYDRA_LAUNCHER_EXEC": launcher, "MPIR_CVAR_CH4_NETMOD": "ofi",
            "FI_PROVIDER": "tcp", "FI_TCP_IFACE": link}


@needs_mpiexec
def test_run_hosts_across_two_emulated_hosts(tmp_path):
    """``meshrt run --hosts A:1,B:3`` under this MPI: each rank on the host it was placed on; with
    ``--restarts 1``, a rank on B killed: the job runs again on A."""
    import json
    import re
    import shutil

    from meshrt.runtime.mpiexec import find_launcher

    if not sys.platform.startswith("linux") or shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("emulated hosts need Linux network namespaces, iproute2's `ip` and root")
    here = os.path.dirname(os.path.abspath(__file__))
    launcher, link = os.path.join(here, "netns_launcher.sh"), "mrtlink"
    a, b = f"mrc{os.getpid() % 100000}a", f"mrc{os.getpid() % 100000}b"
    subprocess.run([launcher, "down", a, b], capture_output=True)
    up = subprocess.run([launcher, "up", a, b], capture_output=True, text=True)
    try:
        if up.returncode != 0:
            pytest.skip(f"cannot create network namespaces here: {up.stderr.strip()}")
        import meshrt

        env = dict(os.environ, **_netns_env(find_launcher().vendor, launcher, link))
        root = os.path.dirname(os.path.dirname(os.path.abspath(meshrt.__file__)))
        env["PYTHONPATH"] = os.pathsep.join([root, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        r = subprocess.run(["ip", "netns", "exec", a, sys.executable, "-m", "meshrt.cli", "run", "--hosts",
                            f"{a}:1,{b}:3", os.path.join(here, "multinode_program.py"), "65536"], env=env,
                           cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
        line = next((l for l in r.stdout.splitlines() if l.startswith("MULTINODE-OK ")), None)
        assert r.returncode == 0 and line, r.stdout[-3000:] + r.stderr[-3000:]
        ranks = json.loads(line.split(" ", 1)[1])["ranks"]
        assert [x["netns"] for x in sorted(ranks, key=lambda x: x["rank"])] == [a, b, b, b], ranks
        assert all(x["interfaces"] == [link] for x in ranks), ranks
        # a rank on B killed: the job restarts on what is left, A (one slot: one process)
        script = _script(tmp_path, """
            import os, signal, subprocess
            from mpi4py import MPI
            comm = MPI.COMM_WORLD
            ns = subprocess.run(["ip", "netns", "identify", str(os.getpid())], capture_output=True, text=True)
            print("RUN", os.environ["MESHRT_RESTART"], comm.rank, comm.size, ns.stdout.strip(), flush=True)
            comm.Barrier()
            if comm.rank == comm.size - 1 and os.environ["MESHRT_RESTART"] == "0":
                os.kill(os.getpid(), signal.SIGKILL)
            comm.Barrier()
        """)
        r = subprocess.run(["ip", "netns", "exec", a, sys.executable, "-m", "meshrt.cli", "run", "--hosts",
                            f"{a}:1,{b}:3", "--restarts", "1", script], env=dict(env, MESHRT_HEARTBEAT="3"),
                           cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out[-4000:]
        # (hydra ends the other ranks of a host whose rank died: they are named too)
        assert re.search(rf"meshrt run: restart 1 of 1 on {a}:1 \(1 process; was 4\), MESHRT_RESTART=1, after: "
                         rf"\[meshrt\] ranks? [\d, ]*3 on host {b} \(pids? ", out), out[-4000:]
        assert f"RUN 1 0 1 {a}" in r.stdout and "RUN 1 1" not in r.stdout, r.stdout
    finally:
        subprocess.run([launcher, "down", a, b], capture_output=True)
