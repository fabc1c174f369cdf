"""meshrt run's early-finish rule (`meshrt.launch.early_finish`), serially, from made-up states."""

from meshrt.launch import _read_status, early_finish, status_table

ZEROS = "DistributedTensor.zeros (agreement over mesh (2, 2)) at job.py:6"
ALL = (0, 1, 2, 3)


def test_a_rank_waiting_on_a_finished_rank_ends_the_job_after_the_grace():
    st = {0: ("blocked", 10.0, ZEROS, ALL), 1: ("blocked", 10.2, ZEROS, ALL), 2: ("running", 0.0, "", None),
          3: ("finished", 10.5, "", None)}
    assert early_finish(st, 4, 12.0, 5.0) is None  # not yet: 1.5 s since rank 3 finished
    kind, text = early_finish(st, 4, 15.6, 5.0)
    assert kind == "end"
    # rank 2 has not reported yet (computing, or not yet seen blocked): it is not named as blocked
    assert text.startswith("process 3 finished (the script returned) while processes 0, 1 are blocked in calls "
                           "that need process 3, which can never complete:\n")
    assert f"  rank 0: blocked in {ZEROS} for 5.6 s\n" in text
    assert "  rank 2: running, not in a meshrt operation\n" in text
    assert "  rank 3: finished\n" in text and text.endswith("meshrt run: ending the job\n")


def test_the_grace_counts_from_the_later_of_block_and_finish():
    st = {0: ("blocked", 20.0, ZEROS, ALL), 1: ("finished", 10.0, "", None)}
    assert early_finish(st, 2, 24.0, 5.0) is None  # blocked 4 s ago, though rank 1 finished 14 s ago
    assert early_finish(st, 2, 25.0, 5.0)[0] == "end"


def test_a_call_whose_group_holds_no_finished_rank_is_left_alone():
    # ranks 0 and 1 reduce over their own pair; rank 3 finished, rank 2 computes
    st = {0: ("blocked", 0.0, "all_reduce(...)", (0, 1)), 1: ("blocked", 0.0, "all_reduce(...)", (0, 1)),
          2: ("outside", 0.0, "job.py:9", None), 3: ("finished", 0.0, "", None)}
    assert early_finish(st, 4, 6.0, 5.0) is None
    kind, text = early_finish(st, 4, 21.0, 5.0)  # after 4x the grace: one note, the job goes on
    assert kind == "note" and "still waiting for processes 0, 1, 2" in text


def test_a_raw_call_on_a_known_communicator_counts_an_unknown_one_does_not():
    raw = "a raw MPI call comm.Barrier() on COMM_WORLD at job.py:7"
    st = {0: ("raw", 0.0, raw, (0, 1)), 1: ("finished", 0.0, "", None)}
    kind, text = early_finish(st, 2, 5.0, 5.0)
    assert kind == "end" and f"  rank 0: blocked in {raw} for 5.0 s\n" in text
    unknown = {0: ("outside", 0.0, "job.py:7 (in sub.Barrier(), on a communicator meshrt did not create)", None),
               1: ("finished", 0.0, "", None)}
    assert early_finish(unknown, 2, 5.0, 5.0) is None
    kind, text = early_finish(unknown, 2, 20.0, 5.0)
    assert kind == "note" and "rank 0: not in a meshrt operation, at job.py:7 (in sub.Barrier()" in text


def test_every_other_rank_in_a_meshrt_operation_of_unknown_group_ends_the_job():
    # frames only (a halo exchange's wait): the group is unknown, but nobody is left to come
    st = {0: ("blocked", 1.0, "HaloExchange.wait()", None), 1: ("blocked", 2.0, "HaloExchange.wait()", None),
          2: ("finished", 3.0, "", None)}
    assert early_finish(st, 3, 7.5, 5.0) is None
    kind, text = early_finish(st, 3, 8.0, 5.0)
    assert kind == "end" and "while processes 0, 1 are blocked in meshrt operations that need every process" in text


def test_nothing_to_do_before_any_rank_finishes_or_once_all_have():
    st = {0: ("blocked", 0.0, ZEROS, (0, 1)), 1: ("outside", 0.0, "job.py:3", None)}
    assert early_finish(st, 2, 100.0, 1.0) is None
    done = {0: ("finished", 0.0, "", None), 1: ("finished", 0.0, "", None)}
    assert early_finish(done, 2, 100.0, 1.0) is None


def test_several_finished_ranks_are_named():
    st = {0: ("blocked", 0.0, "DistributedTensor.gather() (MESHRT_CHECK agreement over mesh (4,))", ALL),
          **{r: ("finished", 1.0, "", None) for r in (1, 2, 3)}}
    kind, text = early_finish(st, 4, 7.0, 5.0)
    assert text.startswith("processes 1, 2, 3 finished (the script returned) while process 0 is blocked in calls "
                           "that need processes 1, 2, 3")


def test_status_table_and_files(tmp_path):
    (tmp_path / "rank0").write_text(f"blocked\t10.000\t{ZEROS}\t0,1,2,3\n")
    (tmp_path / "rank1").write_text("outside\t11.000\tjob.py:4\n")  # a line without the group
    (tmp_path / "rank2").write_text("finished\t12.000\t\t\n")
    (tmp_path / "rank3.tmp").write_text("garbage")
    st = _read_status(str(tmp_path))
    assert st == {0: ("blocked", 10.0, ZEROS, ALL), 1: ("outside", 11.0, "job.py:4", None),
                  2: ("finished", 12.0, "", None)}
    assert status_table(st, 4, 13.0) == (f"  rank 0: blocked in {ZEROS} for 3.0 s\n"
                                         "  rank 1: not in a meshrt operation, at job.py:4 for 2.0 s\n"
                                         "  rank 2: finished\n"
                                         "  rank 3: running, not in a meshrt operation\n")


def test_an_mpiexec_that_waits_on_after_the_heartbeat_ended_the_job_is_ended(monkeypatch, capfd):
    # as hydra can, waiting for a proxy on a host it cannot reach: the heartbeat's line came, the process stays
    import time

    from meshrt import launch

    monkeypatch.setenv("MESHRT_KILL_GRACE", "0.5")
    line = "[meshrt] host b (ranks 2, 3) not heard from for 10.2 s (MESHRT_HEARTBEAT=10): the host or the link " \
           "to it is down; ending the job"
    t0 = time.monotonic()
    job = launch._Job(["sh", "-c", f"echo '{line}' >&2; sleep 60"], 4, scan=True)
    assert job.run() == 113
    took = time.monotonic() - t0
    err = capfd.readouterr().err
    assert line in err and job.lines == [line]
    assert "meshrt run: mpiexec has not ended " in err and " s after the heartbeat ended the job (it waits for a host it" \
        " cannot reach); ending it" in err, err
    assert 6 <= took < 15, took
