"""Which hosts a job runs on, and how each MPI's launcher is told: pure functions, no MPI.

``meshrt run --hosts a:4,b:4`` (or ``--hostfile F``, or inside a Slurm or PBS allocation its
hosts) names hosts and their slots; `place` puts ``n`` processes on them in order (the hosts
left over are spares); `launcher_args` spells the placement for MPICH's hydra, Intel MPI's
or Open MPI.

>>> hosts = parse_hosts("a:2,b:2,c:2")
>>> used = place(hosts, 4)
>>> used
(Host(name='a', slots=2), Host(name='b', slots=2))
>>> launcher_args("mpich", used, ["x.py"]), launcher_args("openmpi", used, ["x.py"])
(['-hosts', 'a:2,b:2', '-n', '4', 'x.py'], ['--host', 'a:2,b:2', '-n', '4', 'x.py'])
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

__all__ = ["Host", "parse_hosts", "parse_hostfile", "expand_nodelist", "slurm_hosts", "pbs_hosts",
           "allocation_hosts", "place", "launcher_args", "hosts_text"]

_NAME = re.compile(r"[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\]")  # a host name, an IPv4 address or [IPv6]


@dataclass(frozen=True)
class Host:
    """A host and how many processes it takes (its slots)."""

    name: str
    slots: int

    def __str__(self):
        return f"{self.name}:{self.slots}"


def hosts_text(hosts) -> str:
    """``a:2,b:2``: the spelling `parse_hosts` reads.

    >>> hosts_text((Host("a", 2), Host("b", 1)))
    'a:2,b:1'
    """
    return ",".join(map(str, hosts))


def _host(name: str, slots, where: str) -> Host:
    if not _NAME.fullmatch(name):
        raise ValueError(f"{where}: host {name!r} is not a host name")
    try:
        n = int(slots)
    except (TypeError, ValueError):
        n = 0
    if n < 1:
        raise ValueError(f"{where}: host {name!r} has {slots!r} slots; expected a positive number")
    return Host(name, n)


def _merge(hosts, where: str) -> tuple:
    """One entry per host, in first-seen order (a host named twice adds its slots)."""
    out: dict = {}
    for h in hosts:
        out[h.name] = out.get(h.name, 0) + h.slots
    if not out:
        raise ValueError(f"{where}: names no host")
    return tuple(Host(n, s) for n, s in out.items())


def parse_hosts(text: str, where: str = "--hosts") -> tuple:
    """``a:4,b:4`` (``a`` alone is one slot) -> hosts in that order.

    >>> parse_hosts("n1:4, n2")
    (Host(name='n1', slots=4), Host(name='n2', slots=1))
    >>> parse_hosts("n1:0")
    Traceback (most recent call last):
    ...
    ValueError: --hosts: host 'n1' has '0' slots; expected a positive number
    """
    hosts = []
    for item in str(text).split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, slots = item.rpartition(":") if not item.endswith("]") else (item, "", "")
        if not sep:
            name, slots = item, 1
        hosts.append(_host(name.strip(), slots, where))
    return _merge(hosts, where)


def parse_hostfile(text: str, where: str = "--hostfile") -> tuple:
    """The hosts of a hostfile: one per line as ``host``, ``host:N``, ``host slots=N`` (Open MPI) or
    ``host N``; ``#`` starts a comment; a host on several lines (a PBS node file) adds up.

    >>> parse_hostfile("# two nodes\\nn1 slots=2\\nn2:3\\nn3\\nn3\\n")
    (Host(name='n1', slots=2), Host(name='n2', slots=3), Host(name='n3', slots=2))
    """
    hosts = []
    for number, line in enumerate(str(text).splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        here = f"{where} line {number}"
        first, rest = words[0], words[1:]
        slots = 1
        if ":" in first and not first.endswith("]"):
            first, slots = first.rsplit(":", 1)
        for w in rest:
            key, eq, value = w.partition("=")
            if eq and key == "slots":
                slots = value
            elif not eq and w.isdigit():
                slots = w
            elif not (eq and key in ("max_slots", "max-slots")):  # Open MPI's cap: not a slot count
                raise ValueError(f"{here}: {w!r} after host {first!r}; expected slots=N or a number")
        hosts.append(_host(first, slots, here))
    return _merge(hosts, where)


def expand_nodelist(text: str) -> list:
    """A Slurm node list (``SLURM_JOB_NODELIST``) written out.

    >>> expand_nodelist("node[01-03,07],gpu5,rack[1-2]-n[1-2]")
    ['node01', 'node02', 'node03', 'node07', 'gpu5', 'rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']
    """
    items, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    out = []
    for item in (s.strip() for s in items):
        if item:
            out.extend(_expand_one(item))
    return out


def _expand_one(item: str) -> list:
    m = re.search(r"\[([^\]]*)\]", item)
    if not m:
        return [item]
    head, tail = item[:m.start()], item[m.end():]
    out = []
    for part in m.group(1).split(","):
        lo, dash, hi = part.partition("-")
        if dash:
            width = len(lo)
            numbers = [str(k).zfill(width) for k in range(int(lo), int(hi) + 1)]
        else:
            numbers = [lo]
        for number in numbers:
            out.extend(_expand_one(head + number + tail))
    return out


def _tasks_per_node(text: str) -> list:
    """``2(x3),1`` -> [2, 2, 2, 1] (``SLURM_TASKS_PER_NODE``)."""
    out = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", part)
        if not m:
            raise ValueError(f"SLURM_TASKS_PER_NODE={text!r}: expected counts such as 2(x3),1")
        out += [int(m.group(1))] * int(m.group(2) or 1)
    return out


def slurm_hosts(env) -> tuple | None:
    """The hosts of the Slurm allocation in ``env`` (``SLURM_JOB_NODELIST`` with
    ``SLURM_TASKS_PER_NODE`` as slots), or None outside one.

    >>> slurm_hosts({"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_TASKS_PER_NODE": "4(x2),2"})
    (Host(name='n1', slots=4), Host(name='n2', slots=4), Host(name='n3', slots=2))
    """
    nodes = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodes:
        return None
    names = expand_nodelist(nodes)
    per = env.get("SLURM_TASKS_PER_NODE") or env.get("SLURM_JOB_CPUS_PER_NODE")
    counts = _tasks_per_node(per) if per else [1] * len(names)
    if len(counts) != len(names):
        raise ValueError(f"SLURM_JOB_NODELIST={nodes!r} names {len(names)} hosts but SLURM_TASKS_PER_NODE="
                         f"{per!r} gives {len(counts)} counts")
    return _merge([_host(n, c, "SLURM_JOB_NODELIST") for n, c in zip(names, counts)], "SLURM_JOB_NODELIST")


def pbs_hosts(env, read=None) -> tuple | None:
    """The hosts of the PBS/Torque allocation (``PBS_NODEFILE``: one line per slot), or None."""
    path = env.get("PBS_NODEFILE")
    if not path:
        return None
    if read is None:
        def read(p):
            with open(p) as f:
                return f.read()
    try:
        text = read(path)
    except OSError as e:
        raise ValueError(f"PBS_NODEFILE={path!r}: cannot read it ({e.strerror or e})") from None
    return parse_hostfile(text, f"PBS_NODEFILE {path}")


def allocation_hosts(env=None, read=None):
    """``(hosts, source)`` of the batch allocation this runs in (Slurm, then PBS), or None.

    >>> allocation_hosts({"SLURM_JOB_NODELIST": "a,b", "SLURM_TASKS_PER_NODE": "2(x2)"})
    ((Host(name='a', slots=2), Host(name='b', slots=2)), 'the Slurm allocation (SLURM_JOB_NODELIST)')
    >>> allocation_hosts({}) is None
    True
    """
    env = os.environ if env is None else env
    hosts = slurm_hosts(env)
    if hosts:
        return hosts, "the Slurm allocation (SLURM_JOB_NODELIST)"
    hosts = pbs_hosts(env, read)
    if hosts:
        return hosts, "the PBS allocation (PBS_NODEFILE)"
    return None


def place(hosts, nprocs: int, where: str = "--hosts") -> tuple:
    """The first ``nprocs`` slots of ``hosts``, host by host: the hosts used and how many
    processes each runs.  More processes than slots is an error.

    >>> place(parse_hosts("a:2,b:2"), 3)
    (Host(name='a', slots=2), Host(name='b', slots=1))
    >>> place(parse_hosts("a:2,b:2"), 5)
    Traceback (most recent call last):
    ...
    ValueError: -n 5: --hosts a:2,b:2 give 4 slots; name more hosts or slots (host:N)
    """
    total = sum(h.slots for h in hosts)
    if nprocs > total:
        raise ValueError(f"-n {nprocs}: {where} {hosts_text(hosts)} give {total} slot{'s' * (total != 1)}; "
                         "name more hosts or slots (host:N)")
    out, left = [], nprocs
    for h in hosts:
        if left <= 0:
            break
        take = min(h.slots, left)
        out.append(Host(h.name, take))
        left -= take
    return tuple(out)


def launcher_args(vendor: str, placement, argv) -> list:
    """The launcher's arguments after its global options for running ``argv`` on exactly
    ``placement`` (host and process count each): hydra's ``-hosts a:2,b:1`` (MPICH) or Open
    MPI's ``--host a:2,b:1``, then ``-n N argv``.  Intel MPI's hydra takes no counts in
    ``-hosts``: ``-hosts a,b -ppn N`` where every host runs N, else one argument set per host
    (``-host a -n 2 argv : -host b -n 1 argv``, one ``COMM_WORLD`` all the same).

    >>> launcher_args("mpich", (Host("a", 2), Host("b", 1)), ["x.py"])
    ['-hosts', 'a:2,b:1', '-n', '3', 'x.py']
    >>> launcher_args("intel", (Host("a", 2), Host("b", 2)), ["x.py"])
    ['-hosts', 'a,b', '-ppn', '2', '-n', '4', 'x.py']
    >>> launcher_args("intel", (Host("a", 2), Host("b", 1)), ["x.py"])
    ['-host', 'a', '-n', '2', 'x.py', ':', '-host', 'b', '-n', '1', 'x.py']
    """
    total = str(sum(h.slots for h in placement))
    if vendor == "openmpi":
        return ["--host", hosts_text(placement), "-n", total, *argv]
    if vendor != "intel":
        return ["-hosts", hosts_text(placement), "-n", total, *argv]
    if len({h.slots for h in placement}) == 1:
        return ["-hosts", ",".join(h.name for h in placement), "-ppn", str(placement[0].slots), "-n", total, *argv]
    out: list = []
    for h in placement:
        out += [":"] * bool(out) + ["-host", h.name, "-n", str(h.slots), *argv]
    return out
