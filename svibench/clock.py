"""The run's clocks, and what keeps the CPU clock honest.

Algorithm time is the CPU time of the run's process (``time.process_time``):
what a step costs, whatever else runs on the machine.  Wall time
(``time.perf_counter``) of the same intervals is kept beside it, as the record
of what the run felt like on that machine.  CPU time counts every thread of the
process, so BLAS/OpenMP pools are limited to one thread while a run's clock
runs (multi-threaded BLAS would make CPU time exceed wall time and depend on
the number of cores): worker processes are started with the thread variables
set (:func:`pinned_threads`), and the runner itself limits the pools already
loaded (:func:`one_thread`, through threadpoolctl).
"""
from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

from threadpoolctl import ThreadpoolController

__all__ = ["Clock", "Stopwatch", "THREAD_VARS", "pinned_threads", "one_thread", "thread_pools"]

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


@dataclass(frozen=True)
class Clock:
    """The two clocks a run reads: ``cpu`` (algorithm time, compared) and ``wall`` (kept in the results)."""

    cpu: Callable[[], float] = time.process_time
    wall: Callable[[], float] = time.perf_counter


class Stopwatch:
    """Adds up the CPU and wall seconds of the intervals between :meth:`start` and :meth:`stop`."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.cpu = self.wall = 0.0
        self._cpu0 = self._wall0 = 0.0

    def start(self) -> None:
        self._cpu0, self._wall0 = self.clock.cpu(), self.clock.wall()

    def stop(self) -> None:
        wall, cpu = self.clock.wall(), self.clock.cpu()
        self.cpu += cpu - self._cpu0
        self.wall += wall - self._wall0


@contextmanager
def pinned_threads(threads: int = 1) -> Iterator[None]:
    """Set the BLAS/OpenMP thread variables while worker processes are started (they read them at load)."""
    saved = {k: os.environ.get(k) for k in THREAD_VARS}
    os.environ.update({k: str(threads) for k in THREAD_VARS})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


_pools: dict = {}


def thread_pools() -> ThreadpoolController:
    """threadpoolctl's controller of the BLAS/OpenMP pools loaded in this process, made again only when a module
    has been imported since the last one (a library is loaded by an import).  Making one scans every loaded
    library, ~1.6–2 ms; a run made two, 3–4 ms of CPU, ~3% of a short run (issue 33)."""
    modules = len(sys.modules)
    if _pools.get("modules") != modules:
        _pools.update(modules=modules, controller=ThreadpoolController())
    return _pools["controller"]


@contextmanager
def one_thread() -> Iterator[int]:
    """Limit every BLAS/OpenMP pool loaded in this process to one thread, and the variables to 1 for
    libraries loaded meanwhile; yields the largest pool size then in force (1 unless a library
    refuses); restores both at exit."""
    pools = thread_pools()
    with pinned_threads(1), pools.limit(limits=1):
        yield max((pool["num_threads"] for pool in pools.info()), default=1)
