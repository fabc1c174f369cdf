"""Keep large numpy buffers in the heap: glibc malloc thresholds, set once at import.

By default glibc serves every block of 128 KiB or more with its own ``mmap``
and hands it back with ``munmap`` when freed (and trims the heap top past
128 KiB, then a dynamic threshold).  A program that makes a fresh result array
each call -- ``y = all_reduce(x, mesh)`` -- then page-faults every page of
every result: about 1 ms per MiB-sized call here, more than the communication.
With the thresholds below, freed blocks stay in the heap and the next array of
that size reuses the same, already mapped pages.

* ``M_MMAP_THRESHOLD = 256 MiB``: blocks below it come from the heap.  Larger
  ones are still mapped and unmapped on their own, so a one-off huge temporary
  (a gathered global array) does not stay resident after it is freed; a 256 MiB
  message takes tens of milliseconds to move, so its page faults are a small
  share of that call.
* ``M_TRIM_THRESHOLD = 1 GiB``: the heap gives memory back to the OS only when
  more than 1 GiB is free at its top -- four buffers at the mmap threshold,
  room for a send buffer, a result and temporaries of that size to be freed
  and made again without a trim.

The cost is memory: a process keeps up to its heap's high-water mark resident
(bounded by what it really used at once, plus at most 1 GiB of free heap top),
where it would have returned freed large blocks.  Opt out with
``MESHRT_MALLOC=0``; nothing is changed either when the C library is not glibc
or when the user set glibc's own knobs (``MALLOC_MMAP_THRESHOLD_``,
``MALLOC_TRIM_THRESHOLD_``, ``MALLOC_TOP_PAD_``, ``MALLOC_MMAP_MAX_``, or
``glibc.malloc.*`` in ``GLIBC_TUNABLES``).

>>> from meshrt import _malloc
>>> sorted(_malloc.applied) if _malloc.applied else _malloc.reason   # doctest: +SKIP
['M_MMAP_THRESHOLD', 'M_TRIM_THRESHOLD']
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["configure", "applied", "reason", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

M_TRIM_THRESHOLD = -1  # mallopt parameter numbers, from glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 256 << 20
TRIM_THRESHOLD = 1 << 30
# glibc before 2.35 refuses mmap thresholds above HEAP_MAX_SIZE / 2 (32 MiB on 64-bit)
_MMAP_FALLBACK = 32 << 20
_GLIBC_ENV = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")

applied: dict = {}  # parameter name -> value set, empty when nothing was set
reason: str = "not configured yet"


def _glibc_version():
    """glibc's version string, or None under another C library."""
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")  # "glibc 2.36"
    except (AttributeError, ValueError, OSError):
        return None
    return text.split()[-1] if text and text.startswith("glibc") else None


def configure(environ=os.environ) -> dict:
    """Set the thresholds unless opted out or already chosen by the user; returns `applied`."""
    global reason
    if environ.get("MESHRT_MALLOC", "1").strip() in ("0", "", "off", "no", "false"):
        reason = "MESHRT_MALLOC=0"
        return applied
    user = [k for k in _GLIBC_ENV if k in environ]
    if "glibc.malloc." in environ.get("GLIBC_TUNABLES", ""):
        user.append("GLIBC_TUNABLES")
    if user:
        reason = f"left to the user's {', '.join(user)}"
        return applied
    if _glibc_version() is None:
        reason = "the C library is not glibc"
        return applied
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        reason = "mallopt not found"
        return applied
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # the trim threshold first: setting either one also turns glibc's dynamic thresholds off
    if mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD):
        applied["M_TRIM_THRESHOLD"] = TRIM_THRESHOLD
    for value in (MMAP_THRESHOLD, _MMAP_FALLBACK):
        if mallopt(M_MMAP_THRESHOLD, value):
            applied["M_MMAP_THRESHOLD"] = value
            break
    reason = "applied" if applied else "mallopt refused the thresholds"
    return applied


configure()
