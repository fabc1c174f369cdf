"""A liveness heartbeat between the processes of a job, outside MPI: a lost host, link or
``hydra_pmi_proxy`` ends the whole job with one line naming the host and the ranks.

``python -m meshrt.launch`` (and so ``meshrt run``) starts it on every rank of a job of two or
more processes unless ``MESHRT_HEARTBEAT=0``.  Each rank starts a *helper*: a small separate
Python process (this file run as a script, standard library only) that owns a UDP socket.
The helper of rank 0 is the hub: every other helper sends it a datagram every
``interval(deadline)`` seconds (1 s by default) and it answers each.  Being a process of its
own, a helper beats while its rank blocks in MPI, computes in numpy or in a kernel that holds
the GIL for minutes: slow is never taken for dead.

* The hub hears nothing from a rank for ``MESHRT_HEARTBEAT`` seconds (default 10): it prints
  one line naming the silent host(s) and ranks, how long ago each was last heard and what
  the others are blocked in, then makes rank 0 call ``MPI_Abort`` (exit status 113,
  ``EHOSTUNREACH``) and tells the other helpers to end their ranks too.
* A helper hears nothing from the hub for that long: the hub's host is lost to it; it prints
  the same kind of line (once per host), ends its rank and, once that is gone, the
  ``hydra_pmi_proxy`` that started it, which mpiexec can no longer reach.
* A rank's process ends without its script finishing (killed, or crashed outside Python): its
  helper sees the pipe from it close and tells the hub, which names it and ends the job.
* A rank's ``hydra_pmi_proxy`` is gone (its parent changed): the rank's output goes nowhere and
  mpiexec can no longer stop it; the job ends unless ``MESHRT_KEEP_ORPHANS=1``, where one line
  says so and the job runs on.
* A rank's process is frozen: its main thread stopped (``T``: SIGSTOP), traced (``t``: a debugger)
  or in uninterruptible sleep (``D``: a hung mount) with no progress (CPU time, page faults,
  context switches, I/O: `proc_sample`) for more than ``MESHRT_HEARTBEAT`` seconds (`Freeze`).
  Its helper tells the hub, which names the rank, host, pid, state and for how long, and what
  the others were blocked in (`frozen_line`), and ends the job; the frozen rank is killed (it
  cannot act on an abort).  Busy is never frozen: computing is ``R``, waiting in MPI ``R`` or
  ``S``, swapping is ``D`` *with* progress.

Every datagram is JSON sealed with HMAC-SHA256 under the job's key (`Seal`): ``MESHRT_HEARTBEAT_KEY``
(64 hex digits), which ``meshrt run`` makes with ``os.urandom`` for each run and hands to the ranks
in the environment only (each rank takes it out of its ``os.environ``); started by mpiexec without
it, rank 0 makes one and passes it over MPI.  It names sender, receiver and the sender's sequence
number; a datagram that fails the check (a wrong key, altered, replayed, copied to another
helper) is dropped and counted, and the count is added to the line that ends the job, or said in
a line of its own at the end of a job that finished.

The rank writes its watchdog state (`meshrt.runtime.watchdog.write_status`) to its helper through a
pipe, and reads one command back (``abort CODE``) in a thread blocked on another pipe: a
thread, because the main thread may be blocked in an MPI call (mpi4py releases the GIL there);
if the rank does not end within `KILL_GRACE` seconds (a kernel holding the GIL), its helper
kills it.  The decisions are the pure functions below (`silent`, `lost_line`, ...).

>>> silent({1: 3.0, 2: 9.5}, now=14.0, deadline=10.0)
{1: 11.0}
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import select
import signal
import socket
import sys
import threading
import time

__all__ = ["DEFAULT", "EXIT_STATUS", "KILL_GRACE", "KEY_ENV", "deadline_seconds", "interval", "silent", "lost_ranks",
           "ranks_text", "host_labels", "lost_line", "ended_line", "frozen_line", "proxy_line", "unreached_line",
           "rejected_text", "with_rejected", "key_from_env", "Seal", "proc_sample", "Freeze", "start", "leaving"]

DEFAULT = 10.0  # seconds of silence before a host counts as lost (MESHRT_HEARTBEAT)
EXIT_STATUS = 113  # EHOSTUNREACH: the exit status of a job the heartbeat ended
KILL_GRACE = 3.0  # seconds a rank told to abort has before its helper kills it
STARTUP = 10.0  # extra seconds before a helper never heard at all counts as lost (slow starts)
_WAITING = ("blocked", "timeout", "raw")
KEY_ENV = "MESHRT_HEARTBEAT_KEY"  # the job's HMAC key, 64 hex digits (meshrt run sets a fresh one per run)
PROC_ENV = "MESHRT_HEARTBEAT_PROC"  # a directory laid over /proc for the freeze check (tests emulate D there)
TAG = 32  # bytes of HMAC-SHA256 at the end of each datagram
FROZEN_STATES = {"T": "stopped (state T: SIGSTOP or job control)",
                 "t": "stopped by a debugger or tracer (state t)",
                 "D": "in uninterruptible sleep (state D: a hung mount or device?)"}


# -- the decisions, pure ------------------------------------------------------------------------
def deadline_seconds(env=None):
    """``MESHRT_HEARTBEAT`` in seconds: `DEFAULT` when unset, None when ``0`` (off).

    >>> deadline_seconds({}), deadline_seconds({"MESHRT_HEARTBEAT": "0"}), deadline_seconds({"MESHRT_HEARTBEAT": "4"})
    (10.0, None, 4.0)
    """
    env = os.environ if env is None else env
    text = env.get("MESHRT_HEARTBEAT", "").strip()
    if not text:
        return DEFAULT
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if value == 0:
        return None
    if not 1.0 <= value < float("inf"):
        raise ValueError(f"MESHRT_HEARTBEAT={text!r}: expected a number of seconds >= 1, or 0 to turn the "
                         "heartbeat off")
    return value


def interval(deadline: float) -> float:
    """Seconds between two beats: a fifth of the deadline, at most 1 s (so a host is declared
    lost only after at least five beats in a row went missing).

    >>> interval(10.0), interval(3.0)
    (1.0, 0.6)
    """
    return min(1.0, deadline / 5)


def silent(last_heard: dict, now: float, deadline: float, never=(), startup: float = STARTUP) -> dict:
    """``{rank: seconds since last heard}`` of the ranks not heard for more than ``deadline``;
    for the ranks in ``never`` (not heard yet: ``last_heard`` holds the start), ``deadline +
    startup`` (a helper may take that long to start on a loaded machine).

    >>> silent({1: 0.0, 2: 0.0}, now=12.0, deadline=10.0, never={2}, startup=5.0)
    {1: 12.0}
    """
    return {r: now - t for r, t in last_heard.items() if now - t > deadline + (startup if r in never else 0.0)}


def lost_ranks(last_heard: dict, now: float, deadline: float, hosts, never=()) -> dict:
    """`silent`, plus the ranks on the same hosts silent for half the deadline: a host's ranks
    go quiet together, and are named together.

    >>> lost_ranks({1: 0.0, 2: 4.0, 3: 9.0}, now=10.5, deadline=10.0, hosts=["a", "a", "b", "b"])
    {1: 10.5}
    >>> lost_ranks({1: 0.0, 2: 4.0, 3: 9.0}, now=10.5, deadline=10.0, hosts=["a", "b", "b", "a"])
    {1: 10.5, 2: 6.5}
    """
    gone = silent(last_heard, now, deadline, never)
    lost_hosts = {hosts[r] for r in gone}
    for r, t in last_heard.items():
        if r not in gone and hosts[r] in lost_hosts and now - t > deadline / 2:
            gone[r] = now - t
    return gone


def ranks_text(ranks) -> str:
    """``rank 3`` or ``ranks 2, 3``."""
    rs = sorted(ranks)
    return f"rank {rs[0]}" if len(rs) == 1 else "ranks " + ", ".join(map(str, rs))


def host_labels(table, resolve=None) -> list:
    """The name of each rank's host, from ``table`` (per rank: ``(hostname, addresses)``).

    The hostname, unless ranks with different addresses share it (containers, network
    namespaces): then the name ``resolve`` (default `socket.gethostbyaddr`) gives the
    first address, or the address itself.

    >>> host_labels([("n1", ["10.0.0.1"]), ("n1", ["10.0.0.1"]), ("n2", ["10.0.0.2"])])
    ['n1', 'n1', 'n2']
    >>> host_labels([("c", ["10.0.0.1"]), ("c", ["10.0.0.2"])], resolve=lambda ip: {"10.0.0.2": "b"}[ip])
    ['10.0.0.1', 'b']
    """
    if resolve is None:
        def resolve(ip):
            return socket.gethostbyaddr(ip)[0]
    seen: dict = {}
    for name, addrs in table:
        seen.setdefault(name, set()).add(tuple(addrs))
    labels, cache = [], {}
    for name, addrs in table:
        if len(seen[name]) == 1 or not addrs:
            labels.append(name)
            continue
        if addrs[0] not in cache:
            try:
                cache[addrs[0]] = resolve(addrs[0])
            except (OSError, KeyError):
                cache[addrs[0]] = addrs[0]
        labels.append(cache[addrs[0]])
    return labels


def _by_host(ranks, hosts) -> dict:
    out: dict = {}
    for r in sorted(ranks):
        out.setdefault(hosts[r], []).append(r)
    return out


def _doing(states: dict, now: float) -> str:
    """What the ranks in ``states`` (rank -> (state, since, text)) are doing, grouped."""
    groups: dict = {}
    for r, (state, since, text) in sorted(states.items()):
        if state in _WAITING:
            what = f"blocked in {text}"
        elif state == "outside":
            what = f"at {text}, not in a meshrt operation"
        elif state == "finished":
            what = "finished"
        else:
            what = "running, not in a meshrt operation"
        groups.setdefault(what, []).append((r, now - since))
    parts = []
    for what, members in list(groups.items())[:4]:
        longest = max(age for _, age in members)
        verb = "was" if len(members) == 1 else "were"
        when = "" if what == "finished" else f" for {longest:.1f} s"
        parts.append(f"{ranks_text([r for r, _ in members])} {verb} {what}{when}")
    if len(groups) > 4:
        parts.append(f"{len(groups) - 4} more kinds of state")
    return "; ".join(parts)


def lost_line(gone: dict, hosts, states: dict, now: float, deadline: float) -> str:
    """The one line printed when ranks went silent: ``gone`` is ``{rank: seconds since last
    heard}``, ``hosts`` each rank's host, ``states`` the survivors' ``(state, since, text)``.

    >>> print(lost_line({2: 10.4, 3: 10.5}, ["a", "a", "b", "b"],
    ...                 {0: ("blocked", 0.5, "all_reduce(...) at job.py:9"), 1: ("blocked", 0.2, "all_reduce(...) at job.py:9")},
    ...                 now=11.0, deadline=10.0))
    [meshrt] host b (ranks 2, 3) not heard from for 10.5 s (MESHRT_HEARTBEAT=10): the host or the link to it is down; ranks 0, 1 were blocked in all_reduce(...) at job.py:9 for 10.8 s; ending the job
    """
    parts = []
    for host, rs in _by_host(gone, hosts).items():
        parts.append(f"host {host} ({ranks_text(rs)}) not heard from for {max(gone[r] for r in rs):.1f} s")
    text = "[meshrt] " + "; ".join(parts) + f" (MESHRT_HEARTBEAT={deadline:g}): the host or the link to it is down"
    doing = _doing(states, now)
    return text + (f"; {doing}" if doing else "") + "; ending the job"


def ended_line(ended: dict, hosts, states: dict, now: float) -> str:
    """The line for ranks whose process ended before their script did: ``ended`` is
    ``{rank: pid}``.

    >>> ended_line({2: 71, 3: 72}, ["a", "a", "b", "b"], {}, 0.0)
    '[meshrt] ranks 2, 3 on host b (pids 71, 72) ended without finishing the script (killed, or a crash outside Python); ending the job'
    """
    parts = []
    for host, rs in _by_host(ended, hosts).items():
        pids = ", ".join(str(ended[r]) for r in rs)
        parts.append(f"{ranks_text(rs)} on host {host} (pid{'s' if len(rs) > 1 else ''} {pids})")
    doing = _doing(states, now)
    return ("[meshrt] " + "; ".join(parts) + " ended without finishing the script (killed, or a crash outside "
            "Python)" + (f"; {doing}" if doing else "") + "; ending the job")


def proxy_line(lost: dict, hosts, keep: bool) -> str:
    """The line for ranks whose ``hydra_pmi_proxy`` is gone: ``lost`` is ``{rank: proxy pid}``.

    >>> proxy_line({2: 40, 3: 40}, ["a", "a", "b", "b"], keep=False)
    '[meshrt] hydra_pmi_proxy (pid 40) on host b is gone: the output of ranks 2, 3 goes nowhere and mpiexec cannot stop them; ending the job (MESHRT_KEEP_ORPHANS=1 lets it run on)'
    """
    parts = []
    for host, rs in _by_host(lost, hosts).items():
        pids = sorted({lost[r] for r in rs})
        parts.append(f"hydra_pmi_proxy (pid{'s' if len(pids) > 1 else ''} {', '.join(map(str, pids))}) on host "
                     f"{host} is gone: the output of {ranks_text(rs)} goes nowhere and mpiexec cannot stop them")
    tail = ("; running on (MESHRT_KEEP_ORPHANS=1)" if keep
            else "; ending the job (MESHRT_KEEP_ORPHANS=1 lets it run on)")
    return "[meshrt] " + "; ".join(parts) + tail


def unreached_line(ranks, hosts, hub: bool) -> str:
    """The note for ranks whose helpers never exchanged a datagram with the hub (``hub``: said by
    the hub, about them; else by them, about the hub): a firewall, most likely, since MPI reached
    them.  They are not watched, and the job goes on.

    >>> unreached_line([3], ["a", "a", "b", "b"], hub=True)
    "[meshrt] rank 3 on host b never reached rank 0's heartbeat over UDP (a firewall between the hosts?): not watched; MESHRT_HEARTBEAT=0 turns the heartbeat off"
    """
    where = "; ".join(f"{ranks_text(rs)} on host {h}" for h, rs in _by_host(ranks, hosts).items())
    verb = "never reached rank 0's heartbeat" if hub else "never heard from rank 0's heartbeat"
    return (f"[meshrt] {where} {verb} over UDP (a firewall between the hosts?): not watched; "
            "MESHRT_HEARTBEAT=0 turns the heartbeat off")


def frozen_line(frozen: dict, hosts, pids, states: dict, now: float, deadline: float) -> str:
    """The line for a rank whose process is frozen: ``frozen`` is ``{rank: (state letter, seconds
    without progress)}``, ``pids`` each rank's pid, ``states`` the other ranks' ``(state, since, text)``.

    >>> print(frozen_line({1: ("T", 10.4)}, ["a", "b"], [70, 71], {0: ("blocked", 0.5, "all_reduce(...) at job.py:9")},
    ...                   now=11.0, deadline=10.0))
    [meshrt] rank 1 on host b (pid 71) frozen: stopped (state T: SIGSTOP or job control) with no progress for 10.4 s (MESHRT_HEARTBEAT=10); rank 0 was blocked in all_reduce(...) at job.py:9 for 10.5 s; ending the job
    """
    parts = []
    for r, (state, secs) in sorted(frozen.items()):
        parts.append(f"rank {r} on host {hosts[r]} (pid {pids[r]}) frozen: {FROZEN_STATES.get(state, 'state ' + state)} "
                     f"with no progress for {secs:.1f} s")
    doing = _doing({r: s for r, s in states.items() if r not in frozen}, now)
    return ("[meshrt] " + "; ".join(parts) + f" (MESHRT_HEARTBEAT={deadline:g})" + (f"; {doing}" if doing else "")
            + "; ending the job")


def rejected_text(forged: int, replayed: int, sources=()) -> str:
    """What the heartbeat dropped, in words ('' when nothing).

    >>> rejected_text(3, 1, ["10.0.0.9"])
    '4 heartbeat datagrams rejected and dropped (3 failed authentication, 1 replayed; from 10.0.0.9)'
    >>> rejected_text(0, 0)
    ''
    """
    n = forged + replayed
    if not n:
        return ""
    src = f"; from {', '.join(sorted(sources))}" if sources else ""
    return (f"{n} heartbeat datagram{'s' * (n != 1)} rejected and dropped ({forged} failed authentication, "
            f"{replayed} replayed{src})")


def with_rejected(line: str, text: str) -> str:
    """``line`` with ``text`` (`rejected_text`) put before its closing ``; ending the job``.

    >>> with_rejected("[meshrt] host b ...; ending the job", "2 heartbeat datagrams rejected")
    '[meshrt] host b ...; 2 heartbeat datagrams rejected; ending the job'
    """
    if not text:
        return line
    end = "; ending the job"
    return line[:-len(end)] + f"; {text}{end}" if line.endswith(end) else f"{line}; {text}"


def key_from_env(env=None):
    """The job's heartbeat key from ``MESHRT_HEARTBEAT_KEY`` (64 hexadecimal digits), None when unset.
    A malformed value is a ValueError that says what is wrong without repeating the value.

    >>> key_from_env({}) is None, len(key_from_env({KEY_ENV: "ab" * 32}))
    (True, 32)
    """
    env = os.environ if env is None else env
    text = env.get(KEY_ENV)
    if text is None:
        return None
    text = text.strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != 32 or len(text) != 64:
        raise ValueError(f"{KEY_ENV}: expected 64 hexadecimal digits (a 32-byte key, as meshrt run makes one for "
                         f"each job), got {len(text)} characters{'' if len(text) else ' (empty)'}; unset it and "
                         "meshrt run makes a fresh key")
    return key


class Seal:
    """Authenticated heartbeat datagrams: a JSON body carrying the job id ``j``, the sender's rank ``r``,
    the receiver's ``d`` and the sender's sequence number ``n`` (1, 2, ...), then its HMAC-SHA256
    under the job's key.  `open` drops (returning None) and counts what fails the check: ``forged``
    (short, a wrong tag, malformed) and ``replayed`` (a sequence number not above the last taken
    from that sender, one meant for another helper, or another job's).

    >>> a, b = Seal(b"k" * 32, job=7, rank=1), Seal(b"k" * 32, job=7, rank=0)
    >>> d = a.wrap({"t": "b"}, to=0)
    >>> b.open(d)["t"], b.open(d), b.replayed, b.open(Seal(b"x" * 32, 7, 1).wrap({"t": "e"}, 0)), b.forged
    ('b', None, 1, None, 1)
    """

    def __init__(self, key: bytes, job: int, rank: int):
        self.key, self.job, self.rank = key, job, rank
        self.seq = 0
        self.seen: dict = {}  # sender rank -> the last sequence number taken from it
        self.forged = self.replayed = 0
        self.sources: set = set()  # where the rejected ones came from (a few)

    def wrap(self, msg: dict, to: int) -> bytes:
        """``msg`` sealed for the helper of rank ``to``."""
        self.seq += 1
        body = json.dumps(dict(msg, j=self.job, r=self.rank, d=to, n=self.seq), separators=(",", ":")).encode()
        return body + hmac.new(self.key, body, hashlib.sha256).digest()

    def _drop(self, kind: str, addr):
        setattr(self, kind, getattr(self, kind) + 1)
        if addr is not None and len(self.sources) < 4:
            self.sources.add(str(addr[0]))
        return None

    def open(self, data: bytes, addr=None):
        body, tag = data[:-TAG], data[-TAG:]
        if len(data) <= TAG or not hmac.compare_digest(tag, hmac.new(self.key, body, hashlib.sha256).digest()):
            return self._drop("forged", addr)
        try:
            msg = json.loads(body)
            r, n = msg["r"], msg["n"]
            if type(r) is not int or type(n) is not int:
                raise ValueError
        except (ValueError, TypeError, KeyError):
            return self._drop("forged", addr)
        if msg.get("j") != self.job or msg.get("d") != self.rank or n <= self.seen.get(r, 0):
            return self._drop("replayed", addr)
        self.seen[r] = n
        return msg


def proc_sample(pid: int, overlay=None):
    """``(state, progress)`` of process ``pid``'s main thread from ``/proc/PID/task/PID/``: its state
    letter and a tuple that changes whenever it makes progress (CPU time, page faults, context
    switches, I/O); None if unreadable.  With ``overlay`` (a directory) and ``overlay/PID`` in it,
    the files are read there instead (tests emulate a D state so).

    >>> proc_sample(os.getpid())[0] in "RS"
    True
    """
    root = "/proc"
    if overlay and os.path.isdir(os.path.join(overlay, str(pid))):
        root = overlay
    task = os.path.join(root, str(pid), "task", str(pid))
    try:
        with open(os.path.join(task, "stat"), "rb") as f:
            stat = f.read()
        fields = stat[stat.rfind(b")") + 2:].split()
        state = fields[0].decode()
        progress = [int(fields[11]) + int(fields[12]), int(fields[7]) + int(fields[9])]  # utime+stime, faults
    except (OSError, ValueError, IndexError):
        return None
    for name, keys in (("status", (b"voluntary_ctxt_switches", b"nonvoluntary_ctxt_switches")),
                       ("io", (b"rchar", b"wchar", b"syscr", b"syscw"))):
        try:
            with open(os.path.join(task, name), "rb") as f:
                progress += [int(line.split()[1]) for line in f if line.split(b":")[0] in keys]
        except (OSError, ValueError, IndexError):
            pass
    return state, tuple(progress)


class Freeze:
    """Whether a process is frozen: in state T, t or D with no progress (`proc_sample`) for more than
    ``limit`` seconds.  A busy process (running, sleeping in a call, or in D but making progress, as
    when it swaps) never is.

    >>> f = Freeze(10.0)
    >>> f.update(("T", (5, 1)), 0.0), f.update(("T", (5, 1)), 9.0), f.update(("T", (5, 1)), 10.5)
    (None, None, ('T', 10.5))
    >>> f.update(("D", (6, 1)), 11.0), f.update(("D", (7, 1)), 30.0), f.update(("R", (7, 1)), 50.0)
    (None, None, None)
    """

    def __init__(self, limit: float):
        self.limit = limit
        self.last = None
        self.since = None

    def update(self, sample, now: float):
        """Take a sample at ``now``: ``(state, seconds)`` once frozen past the limit, else None."""
        last, self.last = self.last, sample
        if sample is None or sample[0] not in FROZEN_STATES:
            self.since = None
            return None
        if self.since is None or last is None or last != sample:
            self.since = now
            return None
        return (sample[0], now - self.since) if now - self.since > self.limit else None


# -- the helper process -------------------------------------------------------------------------
def _ppid(pid: int):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rfind(b")") + 2:].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return stat[stat.rfind(b")") + 2:].split()[0] != b"Z"  # a zombie has ended
    except OSError:
        return not os.path.isdir("/proc")


def _dying(pid: int) -> bool:
    """Whether process ``pid`` has ended or is ending: gone, a zombie, exiting, or a SIGKILL pending."""
    if not _alive(pid):
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        if int(stat[stat.rfind(b")") + 2:].split()[6]) & 0x4:  # PF_EXITING
            return True
        with open(f"/proc/{pid}/status") as f:
            pending = [int(line.split()[1], 16) for line in f if line.startswith(("SigPnd:", "ShdPnd:"))]
        return any(p & (1 << (signal.SIGKILL - 1)) for p in pending)
    except (OSError, ValueError, IndexError):
        return False


class _Helper:
    """One rank's heartbeat: the hub's (rank 0) or a spoke's; `run` returns when it is done."""

    def __init__(self, cfg: dict, sock, status_fd: int, cmd_fd: int):
        self.cfg, self.sock, self.status_fd, self.cmd_fd = cfg, sock, status_fd, cmd_fd
        self.rank, self.job, self.deadline = cfg["rank"], cfg["job"], cfg["deadline"]
        self.hosts, self.pids, self.peers = cfg["hosts"], cfg["pids"], [tuple(p) for p in cfg["peers"]]
        self.hub = self.rank == 0
        self.every = interval(self.deadline)
        now = time.monotonic()
        others = range(1, len(self.pids)) if self.hub else [0]
        self.last = {r: now for r in others}
        self.never = set(others)  # not heard yet: slow to start, not lost, until STARTUP more seconds
        self.states: dict = {}  # rank -> (state, since in this process's monotonic clock, text)
        self.mine = None  # this rank's state: (state, time.time() since, text)
        self.buf = b""
        self.rank_how = None  # None while the rank runs; then "finished", "quiet" or "lost"
        self.rank_said = None  # "finished" or "quiet" once the rank said so
        self.ended: dict = {}  # rank -> pid of ranks that ended without finishing (hub)
        self.aborted_by = None  # the rank whose script failed and aborts the job itself, once one said so (hub)
        self.proxies: dict = {}  # rank -> pid of the lost proxy (hub)
        self.noted_proxies = False
        self.acked = False
        self.proxy = cfg["ppid"] if _comm(cfg["ppid"]).startswith("hydra_pmi_prox") else None
        self.seal = Seal(bytes.fromhex(cfg["key"]), self.job, self.rank)
        self.peer_rejected: dict = {}  # rank -> [forged, replayed, sources] its helper rejected (hub)
        self.freeze = Freeze(self.deadline)
        self.frozen = None  # (state, seconds) once this rank's process is frozen

    # -- sending
    def _send(self, msg: dict, addr, to: int = 0) -> None:
        if not self.hub and (self.seal.forged or self.seal.replayed):
            msg["x"] = [self.seal.forged, self.seal.replayed, sorted(self.seal.sources)]
        try:
            self.sock.sendto(self.seal.wrap(msg, to), addr)
        except OSError:  # the link is down, no route: the silence will tell
            pass

    def _beat(self) -> None:
        if self.hub:
            for r in self.last:
                self._send({"t": "b"}, self.peers[r], r)
        else:
            state = None
            if self.mine is not None:
                state = [self.mine[0], time.time() - self.mine[1], self.mine[2]]
            self._send({"t": "b", "s": state}, self.peers[0])

    # -- receiving
    def _receive(self) -> None:
        while True:
            try:
                data, addr = self.sock.recvfrom(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            msg = self.seal.open(data, addr)
            if msg is not None:
                self._handle(msg, addr)

    def _handle(self, msg: dict, addr) -> None:
        r, kind, now = msg["r"], msg.get("t"), time.monotonic()
        if self.hub:
            if isinstance(msg.get("x"), list) and len(msg["x"]) == 3:
                self.peer_rejected[r] = msg["x"]
            if r not in self.last:
                if kind == "g":  # its rank is gone and we already know: say so again
                    self._send({"t": "a"}, addr, r)
                return
            self.last[r] = now
            self.never.discard(r)
            if kind == "q":  # its script failed: it aborts the job, and mpiexec kills the others next
                if self.aborted_by is None:
                    self.aborted_by = r
            elif kind == "b" and msg.get("s"):
                state, age, text = msg["s"]
                self.states[r] = (state, now - age, text)
            elif kind == "g":
                self._send({"t": "a"}, addr, r)
                del self.last[r]
                if msg.get("how") == "finished":
                    self.states[r] = ("finished", now, "")
                else:
                    self.states.pop(r, None)
                if msg.get("how") == "lost" and not self._aborting():  # (killed by mpiexec for the abort: no blame)
                    for d in [r] + [d for d in msg.get("dead", ()) if d in self.last]:
                        self.ended[d] = self.pids[d]
                        self.last.pop(d, None)
                    # at once: hydra ends the job within milliseconds of a rank's death
                    now = time.monotonic()
                    self._end(ended_line(self.ended, self.hosts, self._my_states(now), now), EXIT_STATUS, notify=True)
            elif kind == "f" and 0 <= r < len(self.pids):  # its rank's process is frozen
                state, secs = msg.get("f", ("?", 0.0))
                now = time.monotonic()  # (r stays in self.last: its helper is told to end, and kills it)
                states = {q: st for q, st in self._my_states(now).items() if q != r}
                line = frozen_line({r: (str(state), float(secs))}, self.hosts, self.pids, states, now, self.deadline)
                self._end(line, EXIT_STATUS, notify=True)
            elif kind == "p":
                for o in [r] + [o for o in msg.get("orphans", ()) if 0 <= o < len(self.pids)]:
                    self.proxies[o] = msg.get("pid")
        elif r == 0:
            self.last[0] = now
            self.never.discard(0)
            if kind == "e":
                self._end(None, msg.get("c", EXIT_STATUS), notify=False)
            elif kind == "a":
                self.acked = True

    def _aborting(self) -> bool:
        return self.aborted_by is not None or self.rank_said == "quiet"

    # -- the rank's pipe
    def _read_rank(self) -> None:
        try:
            data = os.read(self.status_fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.rank_how = self.rank_said or "lost"
            return
        self.feed(data)

    def feed(self, data: bytes) -> None:
        """Take the lines the rank wrote: ``s<TAB>state<TAB>since<TAB>text`` or ``q`` (it aborts by itself)."""
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            word, _, rest = line.decode(errors="replace").partition("\t")
            if word == "s":
                state, since, text = rest.split("\t", 2)
                self.mine = (state, float(since), text)
                if state == "finished":
                    self.rank_said = "finished"
            elif word == "q":
                # The rank's script failed: it printed why and aborts the job once this is noted. The hub
                # hears it first, so that ranks mpiexec then kills are not taken for lost (a job that
                # `meshrt run --restarts` would restart).
                self.rank_said = "quiet"
                if not self.hub:
                    for _ in range(2):  # (a datagram can be lost; the hub takes the first)
                        self._send({"t": "q"}, self.peers[0])
                try:
                    os.write(self.cmd_fd, b"noted\n")
                except OSError:
                    pass

    # -- decisions
    def _my_states(self, now: float) -> dict:
        """The survivors' states in this process's monotonic clock."""
        out = dict(self.states) if self.hub else {}
        if self.mine is not None:
            out[self.rank] = (self.mine[0], now - (time.time() - self.mine[1]), self.mine[2])
        return out

    def _rejected(self) -> str:
        """`rejected_text` of every datagram this helper (and, the hub, every other) dropped."""
        forged, replayed, sources = self.seal.forged, self.seal.replayed, set(self.seal.sources)
        for f, rp, src in self.peer_rejected.values():
            forged, replayed, sources = forged + int(f), replayed + int(rp), sources | set(map(str, src))
        return rejected_text(forged, replayed, sources)

    def _check_frozen(self, now: float) -> None:
        """Whether this rank's process is frozen (`Freeze`): the hub names it and ends the job; a
        spoke tells the hub (each beat, until the hub ends the job)."""
        if self.rank_how is not None:
            return
        if self.frozen is None:
            self.frozen = self.freeze.update(proc_sample(self.cfg["pid"], self.cfg.get("proc")), now)
            if self.frozen is None:
                return
        if self.hub:
            states = {r: st for r, st in self._my_states(now).items() if r != 0}
            self._end(frozen_line({0: self.frozen}, self.hosts, self.pids, states, now, self.deadline), EXIT_STATUS,
                      notify=True)
        else:
            for _ in range(2):  # (a datagram can be lost)
                self._send({"t": "f", "f": [self.frozen[0], round(self.frozen[1], 1)]}, self.peers[0])

    def _check(self) -> None:
        now = time.monotonic()
        self._check_frozen(now)
        if self.proxy is not None and self.rank_how is None and _ppid(self.cfg["pid"]) not in (self.proxy, None):
            # the other ranks the proxy started (hydra: one per host) lost it too
            mine = self.hosts[self.rank]
            orphans = [r for r, h in enumerate(self.hosts) if h == mine and r != self.rank
                       and _ppid(self.pids[r]) not in (self.proxy, None)]
            if self.hub:
                for o in [0] + orphans:
                    self.proxies.setdefault(o, self.proxy)
            else:
                self._send({"t": "p", "pid": self.proxy, "orphans": orphans}, self.peers[0])
        # Never heard at all, though MPI reached them at the start: UDP does not get through
        # (a firewall). Say so once and leave them unwatched rather than end a healthy job.
        unreached = [r for r in silent(self.last, now, self.deadline, self.never) if r in self.never]
        if unreached:
            mine = self.hosts[self.rank]
            if self.hub or min(r for r, h in enumerate(self.hosts) if h == mine and r != 0) == self.rank:
                self._say(unreached_line(unreached if self.hub else [self.rank], self.hosts, self.hub))
            for r in unreached:
                del self.last[r]
                self.never.discard(r)
        if not self.hub:
            gone = silent(self.last, now, self.deadline, self.never)
            if gone and self.rank_how is None:
                mine = self.hosts[self.rank]
                # the hub's host, or (seen from that host) the hub's process
                lost = {r: gone[0] for r, h in enumerate(self.hosts) if h == self.hosts[0] and (r == 0 or h != mine)}
                printer = min(r for r, h in enumerate(self.hosts) if h == mine and r not in lost) == self.rank
                line = lost_line(lost, self.hosts, self._my_states(now), now, self.deadline)
                self._end(line if printer else None, EXIT_STATUS, notify=False, lost_hub=True)
            return
        if self.proxies:
            keep = self.cfg["keep"]
            if not keep:
                self._end(proxy_line(self.proxies, self.hosts, keep), EXIT_STATUS, notify=True)
            elif not self.noted_proxies:
                self.noted_proxies = True
                self._say(proxy_line(self.proxies, self.hosts, keep))
        gone = lost_ranks(self.last, now, self.deadline, self.hosts, self.never)
        if gone:
            states = {r: s for r, s in self._my_states(now).items() if r not in gone}
            self._end(lost_line(gone, self.hosts, states, now, self.deadline), EXIT_STATUS, notify=True)

    def _say(self, line: str) -> None:
        try:
            os.write(2, (line + "\n").encode())
        except OSError:  # the output goes nowhere (the proxy is gone)
            pass

    def _end(self, line, code: int, notify: bool, lost_hub: bool = False) -> None:
        """Print ``line`` (if any), end the whole job as far as this helper can, and exit."""
        if line:
            self._say(with_rejected(line, self._rejected()))
        if notify:  # the hub: every helper still heard ends its rank
            for _ in range(3):
                for r in list(self.last):
                    self._send({"t": "e", "c": code}, self.peers[r], r)
                time.sleep(0.02)
        pid = self.cfg["pid"]
        if self.rank_how is None and self.frozen is not None:
            # It cannot act on an abort. The other ranks' abort (status 113) makes mpiexec kill it; should
            # that not come (mpiexec cannot reach this host), kill it here.
            until = time.monotonic() + KILL_GRACE
            while _alive(pid) and time.monotonic() < until:
                time.sleep(0.1)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        elif self.rank_how is None:
            try:
                os.write(self.cmd_fd, f"abort {code}\n".encode())
            except OSError:
                pass
            until = time.monotonic() + KILL_GRACE
            while self.rank_how is None and time.monotonic() < until:
                ready, _, _ = select.select([self.status_fd], [], [], 0.1)
                if ready:
                    self._read_rank()
            if self.rank_how is None:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        if (lost_hub or self.proxies) and self.proxy is not None:
            # mpiexec cannot reach this host's proxy (or it is gone): end it here, or it stays
            until = time.monotonic() + KILL_GRACE
            while _alive(self.proxy) and time.monotonic() < until:
                time.sleep(0.1)
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if _alive(self.proxy) and _comm(self.proxy).startswith("hydra_pmi_prox"):
                    try:
                        os.kill(self.proxy, sig)
                    except OSError:
                        pass
                    time.sleep(0.5)
        raise SystemExit(0)

    def _leave(self) -> None:
        """The rank's process has ended: tell the hub how (until it acknowledges), then exit."""
        if self.hub:
            if self.rank_how == "lost" and not self._aborting():
                # mpiexec kills every rank once one dies: if another was reported dead just
                # now, that one is the news (`_handle` names it and ends), not rank 0
                until = time.monotonic() + 0.3
                while time.monotonic() < until:
                    if select.select([self.sock], [], [], max(0.0, until - time.monotonic()))[0]:
                        self._receive()
                if not self._aborting():
                    self.ended[0] = self.cfg["pid"]
            if self._aborting():  # a rank printed why and aborted the job: nothing to add but the count
                text = self._rejected()
                if text:
                    self._say(f"[meshrt] {text}")
                raise SystemExit(0)
            if self.ended:
                now = time.monotonic()
                self._end(ended_line(self.ended, self.hosts, self._my_states(now), now), EXIT_STATUS, notify=True)
            return  # finished: stay the hub until the others are done
        self.acked = False
        # the ranks of this host that died with this one (a node's ranks are often killed together)
        mine = self.hosts[self.rank]
        dead = [r for r, h in enumerate(self.hosts)
                if h == mine and r != self.rank and r != 0 and _dying(self.pids[r])]
        until = time.monotonic() + 2.0
        while not self.acked and time.monotonic() < until:
            self._send({"t": "g", "how": self.rank_how, "dead": dead if self.rank_how == "lost" else []},
                       self.peers[0])
            ready, _, _ = select.select([self.sock], [], [], 0.1)
            if ready:
                self._receive()
        raise SystemExit(0)

    def run(self) -> None:
        next_beat = time.monotonic()
        os.set_blocking(self.status_fd, False)
        while True:
            now = time.monotonic()
            if now >= next_beat:
                self._beat()
                self._check()
                next_beat = now + self.every
            watch = [self.sock] + ([self.status_fd] if self.rank_how is None else [])
            ready, _, _ = select.select(watch, [], [], max(0.0, next_beat - time.monotonic()))
            if self.sock in ready:
                self._receive()
            if self.status_fd in ready:
                self._read_rank()
                if self.rank_how is not None:
                    self._leave()
            if self.hub and self.rank_how is not None and not self.last:
                text = self._rejected()  # rank 0 finished and every other rank has gone
                if text:
                    self._say(f"[meshrt] {text}; the job was not affected")
                return


def _helper_main(argv) -> int:
    sock_fd, status_fd, cmd_fd = (int(a) for a in argv)
    # The rank decides what a signal means (meshrt run passes them to every process of the job);
    # its helper ends when the rank has ended.
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE, signal.SIGTERM, signal.SIGUSR1, signal.SIGUSR2):
        signal.signal(sig, signal.SIG_IGN)
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(status_fd, 65536)
        if not chunk:
            return 0
        line += chunk
    first, _, rest = line.partition(b"\n")
    sock = socket.socket(fileno=sock_fd)
    sock.setblocking(False)
    helper = _Helper(json.loads(first), sock, status_fd, cmd_fd)
    helper.feed(rest)
    try:
        helper.run()
    except SystemExit:
        pass
    return 0


# -- the rank's side ----------------------------------------------------------------------------
_status_w = None  # the pipe to this rank's helper
_helper = None  # its Popen (kept, so that its exit status is collected)
_noted = threading.Event()  # set when the helper has passed this rank's "aborting" on


def _addresses() -> list:
    """This host's IPv4 addresses, loopback last (Linux: one per interface)."""
    out = []
    try:
        import fcntl
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            for _, name in socket.if_nameindex():
                try:
                    raw = fcntl.ioctl(s.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))  # SIOCGIFADDR
                except OSError:
                    continue
                out.append(socket.inet_ntoa(raw[20:24]))
    except (ImportError, OSError, AttributeError):
        pass
    if not out:
        try:
            out = socket.gethostbyname_ex(socket.gethostname())[2]
        except OSError:
            out = []
    out = sorted(set(out), key=lambda a: (a.startswith("127."), out.index(a)))
    return out or ["127.0.0.1"]


def _route(candidates, port: int, mine, same_host: bool):
    """(hub address, this rank's source address): the first of the hub's ``candidates`` this
    host routes to and that is not an address of this host (unless both are the same host)."""
    for ip in candidates:
        if ip in mine and not same_host:
            continue  # another host's docker0 or loopback address: here it is this host's own
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((ip, port))
                return ip, s.getsockname()[0]
        except OSError:
            continue
    return candidates[-1], "127.0.0.1"


def _status_hook(state: str, since: float, text: str, group=None) -> None:
    if _status_w is None:
        return
    if state == "abort":  # the watchdog aborts the job (MESHRT_TIMEOUT): it said why
        leaving()
        return
    line = f"s\t{state}\t{since:.3f}\t{' '.join(text.split())}\n".encode()
    try:
        os.write(_status_w, line)
    except (BlockingIOError, OSError):  # a full pipe or no helper: the next state will tell
        pass


def leaving(wait: float = 0.5) -> None:
    """Tell the helper this rank is about to abort the job by itself (it printed why), and wait up to
    ``wait`` seconds for the helper to pass that on (to rank 0's helper), before the abort makes mpiexec
    kill the other ranks: their helpers' reports must not come first."""
    if _status_w is not None:
        _noted.clear()
        try:
            os.write(_status_w, b"q\n")
        except OSError:
            return
        if wait and _helper is not None and _helper.poll() is None:
            _noted.wait(wait)


def _listen(fd: int) -> None:
    from . import watchdog as _watchdog

    data = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            return
        if not chunk:
            _noted.set()
            return  # the helper is gone
        data += chunk
        *lines, data = data.split(b"\n")
        for line in lines:
            word, _, code = line.decode().partition(" ")
            if word == "noted":
                _noted.set()
            elif word == "abort":  # the helper ends the job: it knows why, so no waiting for its note
                leaving(wait=0)
                _watchdog._abort(int(code or EXIT_STATUS))


def start(deadline=None) -> bool:
    """Start this rank's heartbeat helper (collective over ``COMM_WORLD``: every rank calls it).

    Returns False (nothing started) for a job of one process.  ``deadline`` defaults to
    `deadline_seconds`.
    """
    global _status_w, _helper
    import subprocess

    from mpi4py import MPI

    from . import mpi as _mpi, watchdog as _watchdog

    world = MPI.COMM_WORLD
    if world.Get_size() < 2 or _status_w is not None:
        return False
    deadline = deadline_seconds() if deadline is None else deadline
    key = key_from_env()  # (a malformed one raises here, on every rank alike, before any collective)
    os.environ.pop(KEY_ENV, None)  # not passed on to the helper or to what the script starts
    keep = os.environ.get("MESHRT_KEEP_ORPHANS", "").strip() not in ("", "0")
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", 0))
    mine = _addresses()
    me = (socket.gethostname(), mine)
    with _mpi.internal("meshrt.launch", "heartbeat setup", world):
        # The key comes from the launcher (meshrt run); started by mpiexec directly, rank 0 makes one
        # and hands it to the others over MPI.
        job, hub_addrs, hub_port, hub_host, made = world.bcast(
            (int.from_bytes(os.urandom(8), "little") >> 2, mine, sock.getsockname()[1], me,
             os.urandom(32) if key is None else None) if world.Get_rank() == 0 else None, root=0)
        key = made if made is not None else key
        hub_ip, src = _route(hub_addrs, hub_port, mine, tuple(hub_host) == me)
        check = None if key is None else hmac.new(key, b"meshrt heartbeat key", hashlib.sha256).hexdigest()[:16]
        table = world.allgather((me, src, sock.getsockname()[1], os.getpid(), check))
    if len({t[4] for t in table}) != 1:
        sock.close()
        raise ValueError(f"{KEY_ENV}: the processes of the job were not all handed the same key (set on some "
                         "hosts only, or differently?); unset it and meshrt run makes one for the job")
    rank = world.Get_rank()
    peers = [(s, p) for _, s, p, _, _ in table]
    peers[0] = (hub_ip, hub_port) if rank else ("127.0.0.1", hub_port)
    cfg = {"rank": rank, "job": job, "deadline": deadline, "keep": keep, "pid": os.getpid(), "ppid": os.getppid(),
           "hosts": host_labels([t[0] for t in table]), "pids": [t[3] for t in table], "peers": peers,
           "key": key.hex(), "proc": os.environ.get(PROC_ENV) or None}
    status_r, status_w = os.pipe()
    cmd_r, cmd_w = os.pipe()
    fds = (sock.fileno(), status_r, cmd_w)
    # its own session: hydra kills a rank's process group, and the helper has to outlive the rank
    _helper = subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__), *map(str, fds)],
                               pass_fds=fds, stdin=subprocess.DEVNULL, start_new_session=True)
    os.close(status_r)
    os.close(cmd_w)
    sock.close()
    os.write(status_w, json.dumps(cfg).encode() + b"\n")
    os.set_blocking(status_w, False)
    _status_w = status_w
    _watchdog.status_hook = _status_hook
    threading.Thread(target=_listen, args=(cmd_r,), name="meshrt-heartbeat", daemon=True).start()
    return True


if __name__ == "__main__":
    sys.exit(_helper_main(sys.argv[1:]))
