"""Run a script on every MPI process, aborting the job on an uncaught error.

    mpiexec -n 4 python -m meshrt.launch script.py [args...]

Without this, one process dying while the others wait in a collective hangs
the job; here the failing process prints ``[rank R]`` and its traceback, then
calls ``MPI.COMM_WORLD.Abort(1)`` so mpiexec ends every process at once.
"""

import os
import shutil
import sys

__all__ = ["find_mpiexec", "run_script", "main"]


def find_mpiexec():
    """Path of the mpiexec to use, or None.

    Order: next to ``sys.executable`` (the mpich wheel installs it in the
    venv's bin), then ``PATH``, then the environment variable ``MESHRT_MPIEXEC``.
    """
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found:
        return found
    env = os.environ.get("MESHRT_MPIEXEC")
    if env and shutil.which(env):
        return shutil.which(env)
    return None


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
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit as e:
        # A non-zero exit on some processes only would leave the others
        # waiting in their next collective: end the job with that code.
        if e.code not in (None, 0):
            from mpi4py import MPI

            sys.stdout.flush()
            sys.stderr.flush()
            MPI.COMM_WORLD.Abort(e.code if isinstance(e.code, int) else 1)
        raise
    except BaseException:
        from mpi4py import MPI

        rank = MPI.COMM_WORLD.Get_rank()
        text = traceback.format_exc()
        sys.stdout.flush()
        sys.stderr.write("".join(f"[rank {rank}] {line}\n" for line in text.splitlines()))
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


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
    return 0


if __name__ == "__main__":
    sys.exit(main())
