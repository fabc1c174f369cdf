"""The pure parts of ``meshrt run --hosts ... --restarts N``: host lists, allocations, placement,
each MPI's spelling (meshrt.runtime.hosts) and the restart decision (meshrt.runtime.restart),
serially, from made-up inputs; plus `meshrt.io.Checkpointer` on one process."""

import numpy as np
import pytest

from meshrt.runtime.hosts import (Host, allocation_hosts, expand_nodelist, launcher_args, parse_hostfile, parse_hosts,
                                  pbs_hosts, place, slurm_hosts)
from meshrt.runtime.restart import Failure, classify, match_host, named_hosts, next_run

LOST_B = ("[meshrt] host b (ranks 2, 3) not heard from for 10.4 s (MESHRT_HEARTBEAT=10): the host or the link to "
          "it is down; ranks 0, 1 were blocked in all_reduce(...) for 10.1 s; ending the job")


@pytest.mark.parametrize("text, message", [
    ("a:2,b:-1", "--hosts: host 'b' has '-1' slots; expected a positive number"),
    ("a b:2", "--hosts: host 'a b' is not a host name"),
    (" , ", "--hosts: names no host"),
])
def test_bad_host_lists_name_the_host(text, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_hosts(text)


def test_hostfiles_of_every_mpi_and_pbs():
    assert parse_hostfile("a slots=2 max_slots=4\nb 3\n[fe80::1]:2\n") == (Host("a", 2), Host("b", 3),
                                                                            Host("[fe80::1]", 2))
    with pytest.raises(ValueError, match=r"--hostfile line 2: 'cpu=4' after host 'b'; expected slots=N or a number"):
        parse_hostfile("a\nb cpu=4\n")
    assert pbs_hosts({"PBS_NODEFILE": "/x"}, read=lambda p: "n1\nn1\nn2\n") == (Host("n1", 2), Host("n2", 1))
    with pytest.raises(ValueError, match=r"PBS_NODEFILE='/nope': cannot read it"):
        pbs_hosts({"PBS_NODEFILE": "/nope"})


def test_slurm_allocations():
    assert expand_nodelist("gpu[1,3-4]") == ["gpu1", "gpu3", "gpu4"]
    assert slurm_hosts({"SLURM_JOB_NODELIST": "n[1-2]"}) == (Host("n1", 1), Host("n2", 1))  # no counts: one each
    with pytest.raises(ValueError, match=r"names 2 hosts but SLURM_TASKS_PER_NODE='4\(x3\)' gives 3 counts"):
        slurm_hosts({"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "4(x3)"})
    found = allocation_hosts({"PBS_NODEFILE": "/f"}, read=lambda p: "x\n")
    assert found == ((Host("x", 1),), "the PBS allocation (PBS_NODEFILE)")


def test_placement_fills_hosts_in_order_and_each_mpi_spells_it():
    hosts = parse_hosts("a:2,b:2,c:2")
    assert place(hosts, 5) == (Host("a", 2), Host("b", 2), Host("c", 1))
    argv = ["python", "x.py"]
    assert launcher_args("openmpi", place(hosts, 3), argv) == ["--host", "a:2,b:1", "-n", "3", *argv]
    assert launcher_args("intel", place(hosts, 6), argv) == ["-hosts", "a,b,c", "-ppn", "2", "-n", "6", *argv]


def test_classify_reads_the_heartbeats_lines():
    proxy = "[meshrt] hydra_pmi_proxy (pids 40, 41) on host c is gone: the output of ranks 4, 5 goes nowhere"
    assert classify(113, ["noise", LOST_B, proxy]) == Failure("lost", 113, ("b", "c"), LOST_B)
    assert named_hosts(["[meshrt] rank 3 on host b never reached rank 0's heartbeat over UDP"]) == ()
    assert classify(255, ["[rank 1] Traceback"]).kind == "died"  # mpiexec's own verdict, no host named
    assert classify(3).kind == "error" and not classify(3).restartable
    # Open MPI's survivors abort on the dead peer's closed socket before the heartbeat sees it: died
    ompi = ["[vm:00000] *** An error occurred in Socket closed", "[vm:00000] *** MPI_ERRORS_ARE_FATAL"]
    assert classify(14, ompi).kind == "died" and classify(14, ompi).restartable
    assert classify(14, ["[vm:00000] *** An error occurred in MPI_Send", "invalid rank"]).kind == "error"
    assert classify(14, [LOST_B, *ompi]).kind == "lost"  # a host named wins
    assert classify(113, [LOST_B], signalled=True).kind == "signal"


def test_next_run_decisions():
    hosts = parse_hosts("a:2,b:2,c:2")
    lost_b = classify(113, [LOST_B])
    # a host lost in an earlier restart stays out; then no spare is left, and the job shrinks
    plan = next_run(Failure("lost", 113, ("c",), "x"), hosts, ("b",), 4, 1, 2)
    assert plan.restart and plan.placement == (Host("a", 2),) and plan.lost == ("b", "c")
    assert "restart 2 of 2 on a:2 (2 processes; was 4)" in plan.line
    plan = next_run(lost_b, hosts, (), 4, 0, 1, min_hosts=2)  # a and c: two hosts, enough
    assert plan.restart and plan.nprocs == 4
    plan = next_run(lost_b, parse_hosts("a:4,b:4"), (), 8, 0, 1, min_hosts=2)
    assert not plan.restart and plan.line == ("meshrt run: not restarting: without host b, 1 host remains, "
                                              "fewer than --min-hosts 2")
    # a process died, no host named: the same hosts again
    plan = next_run(classify(137), hosts, (), 6, 0, 1)
    assert plan.restart and plan.placement == hosts
    # a name the heartbeat gives that meshrt run was not given: left in, and said
    plan = next_run(Failure("lost", 113, ("zz",), "x"), hosts, (), 4, 0, 1)
    assert plan.restart and "(host zz not among --hosts: left in)" in plan.line
    assert match_host("b.cluster", ["a", "b"]) == "b"
    assert next_run(classify(1), hosts, (), 4, 0, 0).line == ""  # no --restarts: nothing to say
    assert next_run(classify(1), hosts, (), 4, 0, 1).line.startswith("meshrt run: not restarting: the script failed")


def test_checkpointer_saves_values_and_names_bad_ones(tmp_path):
    from meshrt import DistributedTensor, Mesh, Sharding
    from meshrt.io import Checkpointer, CheckpointError, resume

    s = Sharding(Mesh((-1,), ("x",)), [["x"]])
    u = DistributedTensor.from_global(np.arange(6.0), s)
    ck = Checkpointer(tmp_path / "ck", every=3)
    assert [ck.due(k) for k in (0, 1, 3)] == [True, False, True]
    rng = np.random.default_rng(7)
    ck.save(3, {"u": u}, time=np.float64(0.3), n=np.int64(5), rng=rng.bit_generator.state)
    assert not ck.due(3)  # saved already
    expect = rng.random()
    state = resume(tmp_path / "ck", s)
    assert state.step == 3 and state.values["n"] == 5 and state.values["time"] == 0.3
    rng2 = np.random.default_rng()
    rng2.bit_generator.state = state.values["rng"]
    assert rng2.random() == expect  # the RNG goes on where it was
    assert np.array_equal(state.tensors["u"].gather(), np.arange(6.0))
    with pytest.raises(CheckpointError, match=r"value 'a' is an array of shape \(2,\); save arrays as tensors"):
        ck.save(6, {"u": u}, a=np.zeros(2))
    with pytest.raises(CheckpointError, match=r"\.save: value 'f' is builtin_function_or_method <built-in function print>; "
                                              r"expected a number, string, bool, None, or a list or dict of them"):
        ck.save(6, {"u": u}, f=print)
    with pytest.raises(CheckpointError, match=r"Checkpointer: every is 0; expected a positive int"):
        Checkpointer(tmp_path, every=0)
    with pytest.raises(CheckpointError, match=r"\.save: step is 1.5; expected an int"):
        ck.save(1.5, {"u": u})
    assert resume(tmp_path / "ck", s).step == 3  # the failed saves left the checkpoint as it was
