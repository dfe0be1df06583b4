"""Freed memory kept on the process's heap for the next allocation, not handed back to the
system at every free.

glibc's malloc maps pages afresh for an allocation above a moving limit (128 KiB at first,
then the largest block freed so far) and hands the heap's free top back to the system once it
passes twice that limit. The checks' numpy temporaries came and went across those limits: a
pair's exposure fit (``curation.same_picture.pixels.fit_exposure``) holds several arrays of
1.6 MB at once, so each call mapped fresh pages that the kernel had to zero, about 1,200 page
faults a call. Both limits fixed at glibc's own ceiling for the moving one keep up to 32 MiB
free on the heap instead: the copies-only part of a build on 580 real films took 2.8 % less
CPU on average, its peak memory the same (docs/scale.md, "Freed memory kept on the heap").

Hand-written because neither Python nor a well-kept package sets malloc's parameters; with
another C library it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import platform

# mallopt's parameters (glibc's malloc.h)
M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
# glibc's ceiling for its moving mapping limit on 64-bit systems: larger blocks (a full-size
# film in floating point) are still mapped, and unmapped when freed
HEAP_LIMIT = 32 * 1024 * 1024


@functools.cache
def keep_freed_memory() -> None:
    """Fix both of malloc's limits at ``HEAP_LIMIT`` for this process and the workers it
    forks from now on (glibc's malloc only)."""
    if platform.libc_ver()[0] != "glibc":
        return
    libc = ctypes.CDLL(None)  # the C library this process already runs on
    for parameter in (M_MMAP_THRESHOLD, M_TRIM_THRESHOLD):
        libc.mallopt(parameter, HEAP_LIMIT)
