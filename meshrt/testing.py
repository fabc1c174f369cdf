"""Run pytest files under mpiexec and report failures per rank.

    >>> from meshrt.testing import run_mpi_pytest
    >>> result = run_mpi_pytest("tests/mpi/test_harness.py", 4, timeout=300)
    >>> assert result.ok, result.summary()

Every rank runs pytest on the same file with the plugin ``MPIPlugin``
(loaded by ``-p meshrt.testing``) which, per test, arms a faulthandler
watchdog (``MESHRT_TEST_TIMEOUT`` seconds, default 60: a hung test dumps its
traceback and the process exits, so mpiexec ends the others), synchronises
the ranks after the test, and writes ``rank<R>.json`` into
``MESHRT_TEST_REPORT_DIR``. The launcher reads those files back.

A test file may restrict the process counts it runs at with a module-level
``MPI_NPROCS = (2, 4)``; ``mpi_nprocs_of(path)`` reads it without importing.
"""

import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

from .runtime.mpiexec import find_launcher

__all__ = ["run_mpi_pytest", "mpiexec_command", "MPIRunResult", "RankFailure", "mpi_nprocs_of",
           "default_nprocs", "MPIPlugin"]

DEFAULT_NPROCS = (1, 2, 3, 4, 8)

# Variables an outer pytest sets that would change or break the inner runs.
_DROP_ENV = ("PYTEST_CURRENT_TEST", "PYTEST_ADDOPTS", "PYTEST_PLUGINS",
             "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT",
             "PYTEST_XDIST_TESTRUNUID", "PYTEST_VERSION")


@dataclass
class RankFailure:
    """One failed test phase on one rank (``when``: setup, call, teardown or timeout)."""
    rank: int
    nodeid: str
    when: str
    longrepr: str


@dataclass
class MPIRunResult:
    """Outcome of one ``mpiexec -n nprocs python -m pytest path`` run."""
    path: str
    nprocs: int
    returncode: int
    timed_out: bool
    output: str
    failures: list = field(default_factory=list)
    reports: dict = field(default_factory=dict)  # rank -> that rank's JSON report
    command: list = field(default_factory=list)

    @property
    def ok(self):
        return self.returncode == 0 and not self.timed_out and not self.failures

    def failures_in(self, filename):
        """The failures of tests in the file called ``filename`` (a run may hold several files)."""
        return [f for f in self.failures if f.nodeid.split("::")[0].endswith(filename)]

    def passed_in(self, filename):
        """Whether rank 0 reports at least one test of ``filename`` run and none failed."""
        tests = [t for t in self.reports.get(0, {}).get("tests", ())
                 if t["nodeid"].split("::")[0].endswith(filename)]
        return bool(tests) and not self.failures_in(filename)

    def summary(self, filename=None):
        """A readable account: which test failed on which rank, and why
        (only the tests of ``filename`` if given)."""
        names = self.path if isinstance(self.path, str) else ", ".join(map(os.path.basename, self.path))
        lines = [f"{filename or os.path.basename(names)} at -n {self.nprocs}: "
                 + ("passed" if self.ok else "FAILED")]
        if self.timed_out:
            lines.append(f"mpiexec timed out (killed); command: {' '.join(self.command)}")
        elif self.returncode != 0:
            lines.append(f"mpiexec exited with code {self.returncode}")
        for f in (self.failures if filename is None else self.failures_in(filename)):
            lines.append(f"--- {f.nodeid} failed on rank {f.rank} ({f.when}) ---")
            lines.append(f.longrepr.rstrip())
        if filename is not None and not self.failures_in(filename) and not self.passed_in(filename):
            lines.append(f"no test of {filename} completed: the job ended before it ran (see the other files)")
        missing = [r for r in range(self.nprocs) if r not in self.reports]
        if missing and not self.ok:
            lines.append(f"ranks with no report (died before pytest started?): {missing}")
        if not self.ok and (filename is None or not (self.failures_in(filename) or self.passed_in(filename))):
            lines.append("--- mpiexec output (tail) ---")
            lines.append(self.output[-8000:])
        return "\n".join(lines)


def mpi_nprocs_of(path):
    """The file's ``MPI_NPROCS`` tuple, or None if it declares none (read with ast)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), filename=str(path))
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "MPI_NPROCS" for t in targets):
                value = ast.literal_eval(node.value)
                if isinstance(value, int):
                    value = (value,)
                return tuple(int(v) for v in value)
    return None


def default_nprocs():
    """Process counts from ``MESHRT_TEST_NPROCS="1,2,4"``, else (1, 2, 3, 4, 8)."""
    env = os.environ.get("MESHRT_TEST_NPROCS", "").strip()
    if not env:
        return DEFAULT_NPROCS
    return tuple(int(x) for x in env.replace(" ", "").split(",") if x)


def mpiexec_command(nprocs, argv, *, env=None, tag_output=False):
    """The command line that starts ``argv`` on ``nprocs`` processes with this Python's MPI.

    Spelled for the launcher ``meshrt.mpiexec.find_launcher`` picks: Open MPI
    gets ``--oversubscribe`` beyond the cores, ``--allow-run-as-root`` as root
    and ``-x NAME`` for the ``MESHRT_*``/``PYTHON*`` names in ``env`` (default:
    this process's environment); hydra (MPICH, Intel MPI) needs none of them.
    Tests build every ``mpiexec`` command through this, never by hand.

    >>> mpiexec_command(2, ["python", "-c", "pass"])  # doctest: +SKIP
    ['/venv/bin/mpiexec', '-n', '2', 'python', '-c', 'pass']
    """
    launcher = find_launcher()
    if launcher is None:
        raise FileNotFoundError(
            "no mpiexec found beside the MPI library mpi4py loads, next to sys.executable, on PATH "
            "or in MESHRT_MPIEXEC; install the mpich extra (pip install 'meshrt[mpich]') or an MPI")
    return launcher.command(nprocs, list(argv), env=env, tag_output=tag_output)[0]


def _inner_env(report_dir, test_timeout):
    env = {k: v for k, v in os.environ.items()
           if k not in _DROP_ENV and not k.startswith("COV_CORE_")}
    env["MESHRT_TEST_REPORT_DIR"] = report_dir
    env["PYTHONSAFEPATH"] = "1"  # the cwd must not shadow the installed meshrt
    env["PYTHONUNBUFFERED"] = "1"
    if test_timeout is not None:
        env["MESHRT_TEST_TIMEOUT"] = str(test_timeout)
    return env


def _kill_group(proc):
    # mpiexec forwards SIGTERM to its ranks; SIGKILL the group if they linger.
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            pass


def run_mpi_pytest(path, nprocs, timeout=None, *, test_timeout=None, pytest_args=()):
    """Run the pytest file ``path`` (or a list of files, in one job) on ``nprocs`` MPI processes.

    ``timeout`` bounds the whole run (default ``MESHRT_MPI_TIMEOUT`` or
    300 s); ``test_timeout`` bounds each test inside it (default
    ``MESHRT_TEST_TIMEOUT`` or 60 s). Returns an ``MPIRunResult``.
    """
    if timeout is None:
        timeout = float(os.environ.get("MESHRT_MPI_TIMEOUT", "300"))
    paths = [os.path.abspath(path)] if isinstance(path, (str, os.PathLike)) else [os.path.abspath(p) for p in path]
    path = paths[0] if len(paths) == 1 else paths
    with tempfile.TemporaryDirectory(prefix="meshrt-mpitest-") as report_dir:
        env = _inner_env(report_dir, test_timeout)
        cmd = mpiexec_command(nprocs, [sys.executable, "-m", "pytest", *paths, "-q", "-p", "no:cacheprovider",
                                       "-p", "meshrt.testing", *pytest_args], env=env, tag_output=True)
        proc = subprocess.Popen(
            cmd, cwd=os.path.dirname(paths[0]), env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            errors="replace", start_new_session=True)
        timed_out = False
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            output, _ = proc.communicate()
        result = MPIRunResult(path, nprocs, proc.returncode, timed_out, output or "",
                              command=cmd)
        _collect(result, report_dir)
    return result


def _collect(result, report_dir):
    for r in range(result.nprocs):
        fn = os.path.join(report_dir, f"rank{r}.json")
        try:
            with open(fn, encoding="utf-8") as f:
                result.reports[r] = json.load(f)
        except (OSError, ValueError):
            continue
    for r, rep in sorted(result.reports.items()):
        for t in rep.get("tests", ()):
            if t["outcome"] == "failed":
                result.failures.append(RankFailure(r, t["nodeid"], t["when"], t["longrepr"]))
        running = rep.get("running")
        if running:
            hang = ""
            try:
                with open(os.path.join(report_dir, f"timeout-rank{r}.txt"),
                          encoding="utf-8", errors="replace") as f:
                    hang = f.read()
            except OSError:
                pass
            why = ("timed out" if result.timed_out or hang.count("\n") > 1
                   else "did not finish (process died or was killed)")
            result.failures.append(RankFailure(r, running, "timeout", f"{why}\n{hang}"))


class MPIPlugin:
    """Pytest plugin run inside every rank (see the module docstring)."""

    def __init__(self, report_dir=None, timeout=None):
        from mpi4py import MPI

        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.report_dir = report_dir
        self.timeout = timeout
        self.tests = []
        self.running = None
        self._hang_file = None

    def _write(self, finished=False, exitstatus=None):
        if not self.report_dir:
            return
        data = {"rank": self.rank, "size": self.comm.Get_size(), "tests": self.tests,
                "running": self.running, "finished": finished, "exitstatus": exitstatus}
        fn = os.path.join(self.report_dir, f"rank{self.rank}.json")
        with open(fn + ".tmp", "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(fn + ".tmp", fn)

    def _arm(self, nodeid):
        import faulthandler

        if self.report_dir:
            fn = os.path.join(self.report_dir, f"timeout-rank{self.rank}.txt")
            self._hang_file = open(fn, "w", encoding="utf-8")
            self._hang_file.write(f"[rank {self.rank}] {nodeid} exceeded "
                                  f"MESHRT_TEST_TIMEOUT={self.timeout:g} s; traceback:\n")
            self._hang_file.flush()
            out = self._hang_file
        else:
            out = sys.stderr
        faulthandler.dump_traceback_later(self.timeout, exit=True, file=out)

    def _disarm(self):
        import faulthandler

        faulthandler.cancel_dump_traceback_later()
        if self._hang_file is not None:
            self._hang_file.close()
            os.unlink(self._hang_file.name)
            self._hang_file = None

    def pytest_runtest_protocol(self, item, nextitem):
        self.running = item.nodeid
        self._write()
        self._arm(item.nodeid)
        return None

    def pytest_runtest_logreport(self, report):
        if report.failed or (report.when == "call" and report.outcome != "skipped"):
            rec = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome,
                   "duration": report.duration,
                   "longrepr": f"[rank {self.rank}] " + str(report.longrepr) if report.failed else ""}
            self.tests.append(rec)
            if report.failed:
                report.sections.append(("meshrt", f"failed on rank {self.rank} of "
                                                  f"{self.comm.Get_size()}"))
                sys.stderr.write(f"[rank {self.rank}] FAILED {report.nodeid} ({report.when})\n")
                sys.stderr.flush()
        if report.when == "teardown":
            # Still under the watchdog: a rank that failed early and skipped
            # the test's communication leaves its peers blocked; the allgather
            # (or, if it deadlocks, the watchdog) ends that here, and every
            # rank learns which ranks failed.
            failed = any(t["nodeid"] == report.nodeid and t["outcome"] == "failed"
                         for t in self.tests)
            from .runtime import mpi as _mpi

            with _mpi.internal(report.nodeid, "exchange of test outcomes", self.comm):
                flags = self.comm.allgather(failed)
            bad = [r for r, f in enumerate(flags) if f]
            if bad and not failed and self.rank == 0:
                sys.stderr.write(f"[rank 0] {report.nodeid} failed on ranks {bad}\n")
            self.running = None
            self._disarm()
            self._write()

    def pytest_sessionfinish(self, session, exitstatus):
        self._write(finished=True, exitstatus=int(exitstatus))


def pytest_configure(config):
    """Register ``MPIPlugin`` once (``-p meshrt.testing`` or a conftest)."""
    if config.pluginmanager.has_plugin("meshrt-mpi"):
        return
    timeout = float(os.environ.get("MESHRT_TEST_TIMEOUT", "60"))
    report_dir = os.environ.get("MESHRT_TEST_REPORT_DIR") or None
    config.pluginmanager.register(MPIPlugin(report_dir, timeout), "meshrt-mpi")
