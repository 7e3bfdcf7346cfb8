"""Executors: where runs execute.  Each yields finished runs as they complete; the
caller (the sweep) writes them, so workers never touch the results folder.

Every executor takes ``on_progress``, a callable it calls with a
:class:`~svibench.progress.RunEvent` within each run (iteration, epoch,
algorithm CPU seconds; at most every few tenths of a second) and once when the
run ends (its status), so a single long run shows its progress wherever it
executes.

``local`` (:mod:`.local`)
    Supervised worker processes on this machine (or this process with one worker).
``dask`` (:mod:`.dask`, and :mod:`.dask_worker` for what runs in its workers)
    Dask distributed: an existing scheduler or a ``LocalCluster``.

Worker processes pin BLAS/OpenMP to one thread, so parallel runs do not
oversubscribe the cores, and the runner limits the pools to one thread in any
process (algorithm time is CPU time, which counts every thread; see
:mod:`svibench.clock`).  CPU time barely moves with the load, but parallel runs
still share caches and memory bandwidth: the sweep records the number of workers
in the results.
"""
from .base import THREAD_VARS, TIMEOUT_GRACE, Executor, ExecutorError, pinned_threads
from .dask import dask_slots, require_distributed, run_dask
from .local import run_local

__all__ = ["run_local", "run_dask", "dask_slots", "require_distributed", "Executor", "ExecutorError", "THREAD_VARS",
           "pinned_threads", "TIMEOUT_GRACE"]
