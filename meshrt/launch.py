"""Run a script on every MPI process, aborting the job on an uncaught error.

    mpiexec -n 4 python -m meshrt.launch script.py [args...]

Without this, one process dying while the others wait in a collective hangs
the job; here the failing process prints ``[rank R]`` and its traceback, then
calls ``MPI.COMM_WORLD.Abort(1)`` so mpiexec ends every process at once.  In a
job of two or more processes it also starts the heartbeat (`meshrt.runtime.heartbeat`), which
ends the job when a host, link, rank or ``hydra_pmi_proxy`` is lost (``MESHRT_HEARTBEAT``).
"""

import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

__all__ = ["find_mpiexec", "run_script", "run_job", "run_restarting", "main", "early_finish", "status_table"]

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)


def find_mpiexec():
    """Path of the mpiexec to use, or None: the launcher of the MPI mpi4py loads.

    See ``meshrt.runtime.mpiexec.find_launcher`` for the order (``MESHRT_MPIEXEC``,
    beside the loaded ``libmpi``, next to ``sys.executable``, ``PATH``).
    """
    from .runtime.mpiexec import find_launcher

    launcher = find_launcher()
    return None if launcher is None else launcher.path


def run_script(path, args=()):
    """Run ``path`` as ``__main__`` with ``sys.argv = [path, *args]``.

    An uncaught exception prints ``[rank R] Traceback ...`` and aborts the
    whole MPI job; ``SystemExit`` passes through (a clean exit stays clean).
    """
    import runpy
    import traceback

    if not os.path.isfile(path):
        raise FileNotFoundError(f"meshrt.launch: script {path!r} does not exist")
    sys.argv = [path, *args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    if isinstance(sys.stdout, io.TextIOWrapper) and not sys.stdout.isatty():
        # whole lines, one write each (even under PYTHONUNBUFFERED, where print writes each of its
        # arguments apart): mpiexec forwards what arrives, so the ranks' lines would interleave mid-line
        sys.stdout.reconfigure(line_buffering=True, write_through=False)
    from .runtime import check as _check, watchdog as _watchdog, heartbeat

    if heartbeat.deadline_seconds() is not None and heartbeat.start():
        _watchdog.start()  # it tells the heartbeat's helper what this process is blocked in
    elif _check.WATCH:
        _watchdog.start()
    os.environ.pop(heartbeat.KEY_ENV, None)  # (heartbeat off, or one process: not needed, not passed on either)
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        # A non-zero exit on some processes only would leave the others
        # waiting in their next collective: end the job with that code.
        if e.code not in (None, 0):
            from mpi4py import MPI

            sys.stdout.flush()
            sys.stderr.flush()
            _before_abort()
            MPI.COMM_WORLD.Abort(e.code if isinstance(e.code, int) else 1)
        _watchdog.report_finished()
        raise
    except KeyboardInterrupt:  # SIGINT forwarded by meshrt run: where it was, in one line
        tb = traceback.extract_tb(sys.exc_info()[2])
        where = f" at {tb[-1].filename}:{tb[-1].lineno} in {tb[-1].name}" if tb else ""
        heartbeat.leaving()
        sys.stdout.flush()
        sys.stderr.write(f"[rank {_watchdog.rank()}] interrupted{where}\n")
        sys.stderr.flush()
        os._exit(130)
    except BaseException:
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        text = traceback.format_exc()
        sys.stdout.flush()
        sys.stderr.write("".join(f"[rank {rank}] {line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        _before_abort()
        MPI.COMM_WORLD.Abort(1)
    else:
        _watchdog.report_finished()


def _before_abort(drain: float = 0.1) -> None:
    """What a rank does between printing why it fails and ``MPI_Abort``: tell the heartbeat's helper
    (`heartbeat.leaving`), then give mpiexec's proxy a moment to pass the printed lines on. The abort
    makes mpiexec kill every proxy, and a proxy killed before it read its rank's stderr pipe loses
    the traceback (seen about once in a hundred runs on a loaded machine)."""
    from .runtime import heartbeat

    start = time.monotonic()
    heartbeat.leaving()
    left = drain - (time.monotonic() - start)
    if left > 0:
        time.sleep(left)


# -- meshrt run: the job's supervisor ----------------------------------------------------------
def _env_seconds(name: str, default: float) -> float:
    text = os.environ.get(name, "")
    try:
        return float(text) if text.strip() else default
    except ValueError:
        raise ValueError(f"{name}={text!r}: expected a number of seconds") from None


def _set_subreaper() -> None:
    # mpiexec (hydra) starts its proxies and the ranks each in a session of their own,
    # so no process group holds the job.  As a child subreaper, the ranks that lose
    # their parent are reparented to us instead of to init: the job stays our subtree.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass


def _die_with_parent() -> None:
    # In mpiexec, before exec: should meshrt run itself be killed (SIGKILL cannot be
    # passed on), mpiexec gets SIGTERM, on which hydra ends the whole job.
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _children_table() -> dict:
    """parent pid -> child pids, from /proc (empty where there is no /proc)."""
    table: dict = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] == b"Z":  # a zombie is reaped below, not signalled
            continue
        table.setdefault(int(fields[1]), []).append(int(name))
    return table


def _descendants(pid: int) -> list:
    table, out, todo = _children_table(), [], [pid]
    while todo:
        for child in table.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def _signal_job(sig) -> int:
    """Send ``sig`` to every descendant of this process (mpiexec, its proxies, the ranks)."""
    pids = _descendants(os.getpid())
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass
    return len(pids)


def _reap() -> None:
    # Reparented ranks become our children: collect their exit status.
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _read_status(job_dir: str) -> dict:
    """rank -> (state, since, description, group) from the ranks' status files (``group``: the
    ``COMM_WORLD`` ranks the blocking call needs, a tuple, or None where unknown)."""
    out = {}
    try:
        names = os.listdir(job_dir)
    except OSError:
        return out
    for name in names:
        if not (name.startswith("rank") and name[4:].isdigit()):
            continue
        try:
            with open(os.path.join(job_dir, name)) as f:
                state, since, text, *rest = f.read().rstrip("\n").split("\t", 3)
            group = tuple(int(r) for r in rest[0].split(",")) if rest and rest[0] else None
            out[int(name[4:])] = (state, float(since), text, group)
        except (OSError, ValueError):
            continue
    return out


def _ranks(rs) -> str:
    rs = sorted(rs)
    return f"process {rs[0]}" if len(rs) == 1 else "processes " + ", ".join(map(str, rs))


_WAITING = ("blocked", "timeout", "raw")  # states of a rank that sits in one call that needs others


def early_finish(status: dict, nprocs: int, now: float, grace: float):
    """What to do about ranks whose script returned while others have not: ``None`` (nothing
    yet), ``("end", message)`` or ``("note", message)`` (the job goes on).

    ``status``: rank -> (state, since, description, group), as the ranks' watchdogs report.
    The job ends once, for ``grace`` seconds, some rank has been blocked in a call (a meshrt
    operation, or a raw collective call on a communicator meshrt knows) whose group holds a
    finished rank: that call can never complete (the message names every rank in such a
    call).  It ends too when every unfinished rank has been blocked in meshrt operations for
    ``grace`` seconds (their groups unknown).  After ``4 * grace`` with neither, a note says
    where the others are.

    >>> st = {0: ("blocked", 10.0, "all_reduce(...) at job.py:9", (0, 1)),
    ...       1: ("finished", 11.0, "", None)}
    >>> early_finish(st, 2, 12.0, 5.0) is None, early_finish(st, 2, 16.0, 5.0)[0]
    (True, 'end')
    """
    finished = {r: v[1] for r, v in status.items() if v[0] == "finished"}
    if not finished or len(finished) == nprocs:
        return None
    rest = [r for r in range(nprocs) if r not in finished]
    doomed, needed, due = [], set(), False  # ranks in a call that needs a finished rank
    for r in rest:
        state, since, _, group = status.get(r, ("running", now, "", None))
        gone = [f for f in group or () if f in finished]
        if state in _WAITING and gone:
            doomed.append(r)
            needed.update(gone)
            due = due or now - max([since] + [finished[f] for f in gone]) >= grace
    if due:
        verb = "is" if len(doomed) == 1 else "are"
        return "end", (f"{_ranks(finished)} finished (the script returned) while {_ranks(doomed)} {verb} blocked in "
                       f"calls that need {_ranks(needed)}, which can never complete:\n"
                       + status_table(status, nprocs, now) + "meshrt run: ending the job\n")
    last_finish = max(finished.values())
    blocked = [r for r in rest if r in status and status[r][0] in ("blocked", "timeout")]
    if len(blocked) == len(rest):
        if now - max(last_finish, max(status[r][1] for r in rest)) >= grace:
            return "end", (f"{_ranks(finished)} finished (the script returned) while {_ranks(rest)} "
                           f"{'is' if len(rest) == 1 else 'are'} blocked in meshrt operations that need every "
                           f"process:\n" + status_table(status, nprocs, now) + "meshrt run: ending the job\n")
    elif now - last_finish >= 4 * grace:
        return "note", (f"{_ranks(finished)} finished {now - last_finish:.0f} s ago; still waiting for "
                        f"{_ranks(rest)} (computing, or blocked in a raw MPI call; Ctrl-C ends the job):\n"
                        + status_table(status, nprocs, now))
    return None


def status_table(status: dict, nprocs: int, now: float) -> str:
    """One line per rank: finished, blocked in what for how long, or where it is.

    >>> st = {0: ("outside", 9.0, "job.py:7", None), 1: ("finished", 9.5, "", None)}
    >>> print(status_table(st, 2, 10.0), end="")
      rank 0: not in a meshrt operation, at job.py:7 for 1.0 s
      rank 1: finished
    """
    lines = []
    for r in range(nprocs):
        state, since, text, _ = status.get(r, ("running", now, "", None))
        if state == "finished":
            lines.append(f"  rank {r}: finished")
        elif state in _WAITING:
            lines.append(f"  rank {r}: blocked in {text} for {now - since:.1f} s")
        elif state == "outside":
            lines.append(f"  rank {r}: not in a meshrt operation, at {text} for {now - since:.1f} s")
        else:
            lines.append(f"  rank {r}: running, not in a meshrt operation")
    return "\n".join(lines) + "\n"


class _Job:
    """One mpiexec run under supervision: signals forwarded, early exits and timeouts diagnosed."""

    def __init__(self, cmd, nprocs: int, env=None, scan: bool = False):
        self.cmd, self.nprocs, self.extra_env, self.scan = cmd, nprocs, dict(env or {}), scan
        self.lines: list = []  # the "[meshrt] " lines of the job's stderr (with scan)
        self.heard = None  # when a line of the heartbeat ending the job came
        self.grace = _env_seconds("MESHRT_KILL_GRACE", 3.0)
        self.exit_grace = _env_seconds("MESHRT_EXIT_GRACE", 5.0)
        self.signals: list = []
        self.said_timeout = self.said_waiting = False

    def _on_signal(self, signum, frame):
        self.signals.append(signum)

    def run(self) -> int:
        _set_subreaper()
        job_dir = self.job_dir = tempfile.mkdtemp(prefix="meshrt-job-")
        env = dict(os.environ, MESHRT_JOB_DIR=job_dir, **self.extra_env)
        from .runtime.heartbeat import KEY_ENV

        if not env.get(KEY_ENV):  # the heartbeat's key: a fresh one for each run, in the environment only
            env[KEY_ENV] = os.urandom(32).hex()
        old = {s: signal.signal(s, self._on_signal) for s in FORWARDED}
        reader = None
        try:
            self.proc = subprocess.Popen(self.cmd, env=env, start_new_session=True, preexec_fn=_die_with_parent,
                                         stderr=subprocess.PIPE if self.scan else None)
            if self.scan:
                reader = threading.Thread(target=self._pass_stderr, daemon=True)
                reader.start()
            return self._supervise(job_dir)
        finally:
            if _descendants(os.getpid()):
                self._end(signal.SIGKILL, grace=0)
            if reader is not None:
                reader.join(2.0)  # a process outside our reach may hold the pipe open: do not wait for it
            for s, h in old.items():
                signal.signal(s, h)
            shutil.rmtree(job_dir, ignore_errors=True)

    def _pass_stderr(self) -> None:
        # The job's stderr goes on to ours line by line; the heartbeat's lines are kept, for
        # the restart decision (which host it named), and the MPI library's lines saying a peer went away.
        from .runtime.restart import PEER_LOST

        out = getattr(sys.stderr, "buffer", None)
        for line in iter(self.proc.stderr.readline, b""):
            if b"[meshrt] " in line or PEER_LOST.search(line.decode(errors="replace")):
                self.lines.append(line.decode(errors="replace").rstrip("\n"))
            try:
                if out is not None:
                    out.write(line)
                    out.flush()
                else:
                    sys.stderr.write(line.decode(errors="replace"))
                    sys.stderr.flush()
            except (OSError, ValueError):
                pass

    def _supervise(self, job_dir) -> int:
        while True:
            try:
                return self.proc.wait(timeout=0.1)
            except subprocess.TimeoutExpired:
                pass
            if self.signals:
                sig = self.signals[0]
                name = signal.Signals(sig).name
                sys.stderr.write(f"meshrt run: got {name}; passing it to the job and ending it\n")
                sys.stderr.flush()
                self._end(sig, self.grace)
                return 128 + sig
            verdict = self._diagnose(_read_status(job_dir))
            if verdict is not None:
                return verdict
            verdict = self._after_heartbeat()
            if verdict is not None:
                return verdict

    def _after_heartbeat(self):
        """The heartbeat ended the job (its line came) but mpiexec goes on waiting, as it can for a
        host it cannot reach: end it ourselves (status 113) once the ranks had their time to go."""
        from .runtime.heartbeat import EXIT_STATUS, KILL_GRACE
        from .runtime.restart import named_hosts

        if not self.scan or not named_hosts(self.lines):
            return None
        if self.heard is None:
            self.heard = time.monotonic()
        waited = time.monotonic() - self.heard
        if waited < self.grace + 2 * KILL_GRACE:
            return None
        sys.stderr.write(f"meshrt run: mpiexec has not ended {waited:.0f} s after the heartbeat ended the job "
                         "(it waits for a host it cannot reach); ending it\n")
        sys.stderr.flush()
        self._end(signal.SIGTERM, self.grace)
        return EXIT_STATUS

    def _end(self, sig, grace: float) -> None:
        """``sig`` to the whole job, then SIGKILL to whatever is left after ``grace`` seconds
        (at once on a second signal)."""
        seen = len(self.signals)
        _signal_job(sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and len(self.signals) == seen:
            if self._gone():
                return
            time.sleep(0.05)
        while not self._gone():
            _signal_job(signal.SIGKILL)
            time.sleep(0.05)

    def _gone(self) -> bool:
        # mpiexec's own status is collected by Popen first; then reparented ranks' (as
        # their subreaper), which a blanket waitpid would otherwise have taken from Popen.
        if self.proc.poll() is None:
            return False
        _reap()
        return not _descendants(os.getpid())

    def _diagnose(self, status: dict):
        """End the job (returning its exit status) when a rank timed out, or when some ranks
        finished while others wait for them (`early_finish`)."""
        now = time.time()
        timed_out = [r for r, v in status.items() if v[0] == "timeout"]
        if timed_out and not self.said_timeout:
            self.said_timeout = True
            time.sleep(0.5)  # the other ranks' watchdogs may be about to report too
            sys.stderr.write("meshrt run: MESHRT_TIMEOUT reached; what every process was doing:\n"
                             + self._table(_read_status(self.job_dir) or status, now))
            sys.stderr.flush()
            self._end(signal.SIGTERM, self.grace)
            return 124
        verdict = early_finish(status, self.nprocs, now, self.exit_grace)
        if verdict is None:
            return None
        kind, message = verdict
        if kind == "end":
            sys.stderr.write("meshrt run: " + message)
            sys.stderr.flush()
            self._end(signal.SIGTERM, self.grace)
            return 1
        if not self.said_waiting:
            self.said_waiting = True
            sys.stderr.write("meshrt run: " + message)
            sys.stderr.flush()
        return None

    def _table(self, status: dict, now: float) -> str:
        return status_table(status, self.nprocs, now)


def run_job(cmd, nprocs: int) -> int:
    """Run ``cmd`` (an mpiexec command line of ``nprocs`` ranks started through this module)
    and return its exit status, supervising it:

    * SIGINT, SIGTERM, SIGHUP and SIGUSR1 are passed to every process of the job
      (mpiexec, its proxies, the ranks); whatever is left after ``MESHRT_KILL_GRACE``
      seconds (default 3) is killed; the status is 128 + the signal's number;
    * a rank whose script returned while another has been blocked, for
      ``MESHRT_EXIT_GRACE`` seconds (default 5), in a call that needs it (a meshrt
      operation, or a raw mpi4py call on ``COMM_WORLD`` or a communicator meshrt made), or
      while all the others have been blocked in meshrt operations that long, ends the job
      with a table of what each rank is doing (status 1; see `early_finish`);
    * a rank that reached ``MESHRT_TIMEOUT`` makes it print what every rank was doing
      and end the job (status 124).
    """
    return _Job(cmd, nprocs).run()


def run_restarting(command, hosts, nprocs: int, restarts: int, min_procs: int = 1, min_hosts: int = 1,
                   placement=None) -> int:
    """`run_job`, started again up to ``restarts`` times when a host, link or process is lost
    (`meshrt.runtime.restart`): ``command(placement)`` is the mpiexec command line for a
    placement (hosts and process counts; None to run on this host only); ``hosts`` are every host given,
    spares included (None: this host only), ``placement`` the first run's.  The k-th restart's
    processes see ``MESHRT_RESTART=k``.  Returns the last run's exit status.
    """
    from .runtime.restart import classify, next_run

    lost: tuple = ()
    froze: tuple = ()  # hosts where a rank froze: kept in the first time
    done = 0
    while True:
        job = _Job(command(placement), sum(h.slots for h in placement) if placement else nprocs,
                   env={"MESHRT_RESTART": str(done)}, scan=restarts > 0)
        status = job.run()
        if restarts == 0:
            return status
        failure = classify(status, job.lines, signalled=bool(job.signals))
        if hosts is None:  # this host only: what died restarts here again, no host is left out
            from dataclasses import replace

            from .runtime.hosts import Host

            if failure.kind in ("lost", "frozen"):
                failure = replace(failure, kind="died", hosts=())
            plan = next_run(failure, (Host("localhost", nprocs),), lost, nprocs, done, restarts, min_procs, min_hosts)
            plan = replace(plan, placement=None, line=plan.line.replace(f" on localhost:{nprocs} (", " on this host ("))
        else:
            plan = next_run(failure, hosts, lost, nprocs, done, restarts, min_procs, min_hosts, froze)
            froze = plan.froze
        if plan.line:
            sys.stderr.write(plan.line + "\n")
            sys.stderr.flush()
        if not plan.restart:
            return status
        lost, placement, done = plan.lost, plan.placement, done + 1


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m meshrt.launch script.py [args...]", file=sys.stderr)
        return 2
    try:
        run_script(argv[0], argv[1:])
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    except ValueError as e:  # a bad MESHRT_* setting, before the script starts
        # one write, so that the processes' lines do not interleave in mpiexec's stderr
        sys.stderr.write(f"meshrt.launch: ValueError: {e}\n")
        sys.stderr.flush()
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
