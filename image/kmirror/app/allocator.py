"""The C allocator's settings for a stream process: large buffers are reused, not mapped anew.

A stream's large buffers live for milliseconds: a fetch response (megabytes), the records
taken out of it, a merged batch, a produce request. glibc's malloc hands each allocation above
its mmap threshold (128 KiB, raised only as far as the largest block freed so far) fresh pages
from the kernel and gives them back on free, so every such buffer faults in its pages, zeroed,
one by one as the copy first touches them. On 4 MB fetch responses that was three quarters of
the CPU time of receiving them (1.95 ns per byte against 0.50 with the settings below; the same
at 1 MB, more with them at 500 KB: ``python -m scripts.bench.receive``, docs/benchmarks.md,
Session 24, where the whole copy gained on every workload).

``settle_allocator`` keeps blocks up to ``MMAP_THRESHOLD`` in the heap, and lets up to
``TRIM_THRESHOLD`` of free memory stay at its top, so the next response reuses pages that are
already there. The price is memory kept after a peak (at most the trim threshold above what is
in use), well inside the chart's limit. Without glibc (musl, another libc) nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

# mallopt(3) parameters (malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# Larger blocks (a fetch response of 32 MiB or more) still get pages of their own.
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20


def settle_allocator() -> bool:
    """Apply the settings above to this process (see the module's text). True if applied."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        mallopt = libc.mallopt
    except (OSError, AttributeError, TypeError):
        log.debug("no mallopt in the C library (%s): allocator settings left as they are", name)
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    applied = bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
    if not applied:
        log.debug("mallopt refused the allocator settings: left as they are")
    return applied
