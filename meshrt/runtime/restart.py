"""Whether ``meshrt run --restarts N`` starts a job again, and where: pure functions, no MPI.

A job ends; `classify` reads its exit status and the ``[meshrt]`` lines the heartbeat
printed (`meshrt.runtime.heartbeat`) into a `Failure`; `next_run` decides from that, the
hosts given and the limits whether to start it again and on which hosts.

What is restarted: a lost host or link (the heartbeat's exit, status 113, naming the host), a
rank whose process ended without its script finishing (killed, a crash outside Python) and a
lost ``hydra_pmi_proxy`` (both named with their host), a frozen rank (stopped, traced or stuck in
uninterruptible sleep: its host stays in the first time, and is left out if a rank freezes there
again), and a job that mpiexec ended because a process died (a status above 128 or 255, no host named, or the
MPI library's words for a lost peer on the job's output, `PEER_LOST`).  What is not: a clean exit, an
exception or ``sys.exit(code)`` in the script (restarting cannot fix it), ``MESHRT_TIMEOUT``
(status 124: a hang comes back), and a signal meshrt run itself got (Ctrl-C, the batch
system's SIGTERM).

>>> f = classify(113, ["[meshrt] host b (ranks 2, 3) not heard from for 10.4 s (MESHRT_HEARTBEAT=10): "
...                    "the host or the link to it is down; ending the job"])
>>> f.kind, f.hosts
('lost', ('b',))
>>> p = next_run(f, parse_hosts("a:2,b:2"), lost=(), nprocs=4, restarts_done=0, restarts=1)
>>> p.restart, hosts_text(p.placement), p.lost
(True, 'a:2', ('b',))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .heartbeat import EXIT_STATUS as EXIT_HEARTBEAT
from .hosts import Host, hosts_text, parse_hosts

__all__ = ["PEER_LOST", "Failure", "Plan", "classify", "named_hosts", "match_host", "next_run", "restart_count"]

EXIT_TIMEOUT = 124

_LOST = re.compile(r"host (\S+) \(ranks? [\d, ]+\) not heard from")
_ENDED = re.compile(r"ranks? [\d, ]+ on host (\S+) \(pids? [\d, ]+\)")
_PROXY = re.compile(r"hydra_pmi_proxy \(pids? [\d, ]+\) on host (\S+) is gone")
_FROZEN = re.compile(r"ranks? [\d, ]+ on host (\S+) \(pids? [\d, ]+\) frozen: ")
# The MPI library's own words for a peer that went away under a rank (Open MPI's TCP transport: the survivors
# abort with MPI_ERRORS_ARE_FATAL, often before the heartbeat has seen the dead process): a process died.
PEER_LOST = re.compile(r"An error occurred in Socket closed|Connection reset by peer|"
                       r"Communication error with rank \d+")


@dataclass(frozen=True)
class Failure:
    """How a job ended: ``kind`` is ``ok``, ``lost`` (a host, link, rank process or proxy, named in
    ``hosts``), ``frozen`` (a rank's process frozen, its host in ``hosts``), ``died`` (a process died, no host named), ``error`` (the script's own), ``timeout``
    or ``signal`` (meshrt run was signalled); ``line`` says it in words."""

    kind: str
    status: int
    hosts: tuple = ()
    line: str = ""

    @property
    def restartable(self) -> bool:
        return self.kind in ("lost", "frozen", "died")


def named_hosts(lines) -> tuple:
    """The hosts the heartbeat's lines name as lost (in order, once each); a proxy line that
    says the job runs on (``MESHRT_KEEP_ORPHANS=1``) names none.

    >>> named_hosts(["[meshrt] ranks 3 on host b (pid 71) ended without finishing the script; ending the job",
    ...              "[meshrt] hydra_pmi_proxy (pid 40) on host c is gone: the output of rank 4 goes nowhere; "
    ...              "running on (MESHRT_KEEP_ORPHANS=1)"])
    ('b',)
    """
    out: list = []
    for line in lines:
        if "[meshrt] " not in line or "never reached" in line or "never heard" in line:
            continue
        if "hydra_pmi_proxy" in line:
            found = [] if "running on" in line else _PROXY.findall(line)
        elif "ended without finishing" in line:
            found = _ENDED.findall(line)
        elif ") frozen: " in line:
            found = _FROZEN.findall(line)
        else:
            found = _LOST.findall(line)
        out += [h for h in found if h not in out]
    return tuple(out)


def classify(status: int, lines=(), signalled: bool = False) -> Failure:
    """What ended the job: its exit ``status``, the ``[meshrt]`` ``lines`` seen on its output (and
    the MPI library's lines saying a peer went away, `PEER_LOST`), and whether meshrt run itself was
    ``signalled``.

    >>> classify(1, []).kind, classify(0).kind, classify(124).kind, classify(137).kind
    ('error', 'ok', 'timeout', 'died')
    >>> classify(14, ["[vm:00000] *** An error occurred in Socket closed"]).kind
    'died'
    >>> classify(130, signalled=True).kind
    'signal'
    """
    peer_lines = [l for l in lines if "[meshrt] " not in l]
    lines = [l for l in lines if "[meshrt] " in l]
    if signalled:
        return Failure("signal", status, (), f"meshrt run was signalled (exit status {status})")
    if status == 0:
        return Failure("ok", 0)
    hosts = named_hosts(lines)
    said = next((l[l.index("[meshrt] "):].strip() for l in lines
                 if named_hosts([l])), "")
    if hosts:
        frozen = any(_FROZEN.search(l) for l in lines)
        return Failure("frozen" if frozen else "lost", status, hosts, said)
    if status == EXIT_TIMEOUT:
        return Failure("timeout", status, (), "MESHRT_TIMEOUT reached (exit status 124): a hang is not restarted")
    if status == EXIT_HEARTBEAT or status == 255 or status > 128:
        return Failure("died", status, (), f"a process of the job died (exit status {status})")
    peer = next((m.group(0) for l in peer_lines for m in [PEER_LOST.search(l)] if m), None)
    if peer is not None:
        return Failure("died", status, (), f"a process of the job died: the MPI library said \"{peer}\" "
                                           f"(exit status {status})")
    return Failure("error", status, (), f"the script failed (exit status {status}): restarting cannot fix that")


def match_host(label: str, names) -> str | None:
    """Which of ``names`` (the hosts meshrt run was given) the heartbeat's ``label`` means: the
    same name, or the same first label (``n1`` and ``n1.cluster``), or None.

    >>> match_host("n1.cluster.org", ["n0", "n1"]), match_host("n2", ["n1.cluster.org", "n2.cluster.org"])
    ('n1', 'n2.cluster.org')
    >>> match_host("x", ["n1"]) is None
    True
    """
    if label in names:
        return label
    short = label.split(".", 1)[0]
    found = [n for n in names if n.split(".", 1)[0] == short]
    return found[0] if len(found) == 1 else None


@dataclass(frozen=True)
class Plan:
    """`next_run`'s verdict: start again (``restart``) with ``placement`` (host and process count
    each), or not; ``lost`` are every host left out so far; ``line`` says what and why."""

    restart: bool
    placement: tuple = ()
    lost: tuple = ()
    line: str = ""
    froze: tuple = ()  # the hosts where a rank froze so far (a second freeze leaves the host out)

    @property
    def nprocs(self) -> int:
        return sum(h.slots for h in self.placement)


def next_run(failure: Failure, hosts, lost, nprocs: int, restarts_done: int, restarts: int,
             min_procs: int = 1, min_hosts: int = 1, froze=()) -> Plan:
    """Whether, and on what, to start the job again after ``failure``.

    ``hosts``: every host given (spares included), in order; ``lost``: the hosts left out by
    earlier restarts; ``nprocs``: the processes wanted.  A host the failure names is left out
    for good, except for a frozen rank's: its host stays in unless a rank froze there before
    (``froze``: those hosts, `Plan.froze` of the previous plan); the job restarts on the first ``nprocs`` slots of the others (fewer if they hold
    fewer, down to ``min_procs`` processes on ``min_hosts`` hosts), at most ``restarts`` times.

    >>> f = Failure("lost", 113, ("b",), "[meshrt] host b ...")
    >>> hosts = parse_hosts("a:2,b:2,c:2")
    >>> hosts_text(next_run(f, hosts, (), 4, 0, 1).placement)   # the spare c takes b's place
    'a:2,c:2'
    >>> print(next_run(f, parse_hosts("a:2,b:2"), (), 4, 0, 1, min_procs=4).line)
    meshrt run: not restarting: without host b, 2 processes remain on a:2, fewer than --min-procs 4
    >>> print(next_run(f, hosts, (), 4, 1, 1).line)
    meshrt run: not restarting: --restarts 1 used up
    >>> z = Failure("frozen", 113, ("b",), "[meshrt] rank 2 on host b (pid 9) frozen: ...")
    >>> p = next_run(z, hosts, (), 4, 0, 2)
    >>> hosts_text(p.placement), p.froze, hosts_text(next_run(z, hosts, (), 4, 1, 2, froze=p.froze).placement)
    ('a:2,b:2', ('b',), 'a:2,c:2')
    """
    if not failure.restartable:
        said = failure.kind in ("error", "timeout") and restarts > 0
        return Plan(False, (), tuple(lost), f"meshrt run: not restarting: {failure.line}" if said else "")
    if restarts_done >= restarts:
        return Plan(False, (), tuple(lost),
                    f"meshrt run: not restarting: --restarts {restarts} used up" if restarts else "")
    names = [h.name for h in hosts]
    gone = list(lost)
    unknown, kept, froze = [], [], list(froze)
    for label in failure.hosts:
        name = match_host(label, names)
        if name is None:
            unknown.append(label)
        elif failure.kind == "frozen" and name not in froze:
            froze.append(name)
            kept.append(name)
        elif name not in gone:
            gone.append(name)
    left = tuple(h for h in hosts if h.name not in gone)
    without = f"without host{'s' * (len(gone) > 1)} {', '.join(gone)}, " if gone else ""
    total = sum(h.slots for h in left)
    count = min(nprocs, total)
    placement = _fill(left, count)
    if count < min_procs or not left:
        return Plan(False, (), tuple(gone), froze=tuple(froze), line=f"meshrt run: not restarting: {without}{count} process"
                    f"{'es' * (count != 1)} remain{'s' * (count == 1)}{' on ' + hosts_text(left) if left else ''}, "
                    f"fewer than --min-procs {min_procs}")
    if len(placement) < min_hosts:
        return Plan(False, (), tuple(gone), froze=tuple(froze), line=f"meshrt run: not restarting: {without}{len(placement)} host"
                    f"{'s' * (len(placement) != 1)} remain{'s' * (len(placement) == 1)}, fewer than "
                    f"--min-hosts {min_hosts}")
    why = failure.line or f"exit status {failure.status}"
    if unknown:
        why += f" (host{'s' * (len(unknown) > 1)} {', '.join(unknown)} not among --hosts: left in)"
    if kept:
        why += (f" (host{'s' * (len(kept) > 1)} {', '.join(kept)} kept in: a first freeze there; a second "
                "leaves it out)")
    n = sum(h.slots for h in placement)
    return Plan(True, placement, tuple(gone), froze=tuple(froze), line=
                f"meshrt run: restart {restarts_done + 1} of {restarts} on {hosts_text(placement)} ({n} process"
                f"{'es' * (n != 1)}{'; was ' + str(nprocs) if n != nprocs else ''}), MESHRT_RESTART="
                f"{restarts_done + 1}, after: {why}")


def _fill(hosts, count: int) -> tuple:
    out, left = [], count
    for h in hosts:
        if left <= 0:
            break
        out.append(Host(h.name, min(h.slots, left)))
        left -= out[-1].slots
    return tuple(out)


def restart_count(env=None) -> int:
    """``MESHRT_RESTART`` as meshrt run sets it: 0 in a first run, k in the k-th restart.

    Parameters
    ----------
    env : mapping, optional
        The environment to read (default ``os.environ``).

    Returns
    -------
    int
        The restart number, 0 where unset.

    Examples
    --------
    >>> restart_count({}), restart_count({"MESHRT_RESTART": "2"})
    (0, 2)
    """
    import os

    text = (os.environ if env is None else env).get("MESHRT_RESTART", "").strip()
    return int(text) if text.isdigit() else 0
