"""The C allocator's settings for runs: a step's freed arrays stay with the process for the next step.

glibc's ``malloc`` hands a block above its mmap threshold straight back to the OS when it is freed, and
trims the heap whenever its free top grows past the trim threshold (by default twice the mmap threshold,
which starts at 128 KiB and follows the largest block freed).  An algorithm that allocates a few
megabytes of temporaries per step, frees them and allocates them again then pays a page fault for every
page of them at every step: system CPU time, on the algorithm's clock, that says nothing about the
algorithm.  Measured on BPFA at B = K = 250, D = 64 (the state of ``benchmarks/bench_bpfa.py``, median CPU ms
per step, two processes of one commit alternating, default → fixed thresholds): Gibbs-SSVI 15.8 → 11.7,
Mimno-SVI 14.3 → 9.9; the mean-field and Titsias steps, whose temporaries are smaller, within 1%.

:func:`keep_freed_memory` fixes the thresholds instead (``mallopt``): blocks up to :data:`MMAP_THRESHOLD`
come from the heap, and the heap keeps up to :data:`TRIM_THRESHOLD` of free memory.  The runner calls it
before every run, in whichever process runs it (:func:`svibench.runner.execute`), and so do the asv
benchmarks, so that both time the same allocator.  A process keeps up to :data:`TRIM_THRESHOLD` more
resident memory than it uses; arrays above :data:`MMAP_THRESHOLD` (large datasets) are still mapped and
returned at once.  Where the C library has no ``mallopt`` (not glibc), or the user set glibc's own
``MALLOC_MMAP_THRESHOLD_``/``MALLOC_TRIM_THRESHOLD_``, nothing is changed.
"""
from __future__ import annotations

import ctypes
import functools
import os

__all__ = ["keep_freed_memory", "MMAP_THRESHOLD", "TRIM_THRESHOLD"]

#: ``mallopt`` parameter numbers (glibc's ``malloc.h``).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
#: Blocks below this come from the heap (32 MiB: glibc's largest mmap threshold on 64-bit).
MMAP_THRESHOLD = 32 * 2**20
#: Free memory the heap keeps before it is trimmed.
TRIM_THRESHOLD = 256 * 2**20
#: glibc's environment variables for the same thresholds: a user's own choice wins.
ENV_VARS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


@functools.cache
def keep_freed_memory(ignore_env: bool = False) -> bool:
    """Set the allocator's thresholds once per process (see the module docstring); whether they were set.

    ``ignore_env``: set them even if glibc's variables are in the environment, for a process whose
    environment someone else chose: Dask's nanny starts its workers with ``MALLOC_TRIM_THRESHOLD_=65536``, so
    that freed memory goes back to the OS at once, which made numpy runs there ~3× slower (measured).
    """
    if not ignore_env and any(var in os.environ for var in ENV_VARS):
        return False
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
