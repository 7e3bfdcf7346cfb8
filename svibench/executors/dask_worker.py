"""What runs inside a Dask worker for :mod:`svibench.executors.dask`: the tasks (a run, a chunk of runs),
the pause of the worker's profiler while a run executes, and the worker's warm-up preload.

A run pauses the worker's profiler and undoes its allocator trimming, so it times as in a local worker;
its progress travels as Dask events (``Worker.log_event``).  A chunk makes its runs one after the other and
returns them together, starting none after :data:`CHUNK_SECONDS`.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from dataclasses import asdict
from typing import Sequence

import xarray as xr

from ..allocator import keep_freed_memory
from ..runner import execute
from ..spec import RunSpec
from .base import StepReporter

__all__ = ["CHUNK_SECONDS", "execute_on_dask", "execute_chunk", "profiler_paused", "dask_setup"]

#: Seconds after which a chunk of runs starts no other run and returns those it made (the rest go in a new chunk):
#: how long a finished run may wait in its worker before it reaches the client and the disk, besides the runs of
#: that chunk still running.
CHUNK_SECONDS = 1.0
#: Dask worker callbacks paused while a run executes (:func:`profiler_paused`).
_PROFILER_CALLBACKS = ("profile", "profile-cycle")
_paused = {"runs": 0}
_paused_lock = threading.Lock()


def _on_loop(worker, fn) -> None:
    """Run ``fn`` on the worker's event loop and wait for it (at most 5 s)."""
    done = threading.Event()

    def call():
        try:
            fn()
        finally:
            done.set()

    worker.loop.add_callback(call)
    done.wait(5.0)


def _current_worker():
    """The Dask worker this code runs in, or None."""
    try:
        from distributed import get_worker

        return get_worker()
    except (ImportError, ValueError):
        return None


@contextmanager
def profiler_paused():
    """Pause the statistical profiler of the Dask worker this code runs in (no-op elsewhere).

    Dask samples the stack of every task thread every 10 ms from the worker's
    event loop, taking the GIL each time; a CPU-bound run was measured ~10%
    slower in a Dask worker than in a local worker because of it (GMM SVI, 8 runs
    of ~7 s: 64.9 s of algorithm time against 57.9 s with the profiler off), so
    timings would differ between executors.  The profiler restarts when the
    last run on the worker ends.  A worker without a profiler (``dask.local_cluster``'s) has nothing to pause.
    """
    worker = _current_worker()
    callbacks = [worker.periodic_callbacks[name] for name in _PROFILER_CALLBACKS
                 if name in worker.periodic_callbacks] if worker is not None else []
    if not callbacks:
        yield
        return
    with _paused_lock:
        _paused["runs"] += 1
        if _paused["runs"] == 1:
            _on_loop(worker, lambda: [pc.stop() for pc in callbacks])
    try:
        yield
    finally:
        with _paused_lock:
            _paused["runs"] -= 1
            if _paused["runs"] == 0:
                _on_loop(worker, lambda: [pc.start() for pc in callbacks])


def execute_on_dask(spec: RunSpec, topic: str | None = None) -> xr.Dataset:
    """The Dask task of one run: the runner's allocator settings, whatever Dask's nanny put in the environment
    (:func:`svibench.allocator.keep_freed_memory`), and no profiler, then :func:`~svibench.runner.execute`, logging
    its progress as events of ``topic``."""
    keep_freed_memory(ignore_env=True)
    worker = _current_worker()
    on_step = None
    if topic is not None and worker is not None:
        on_step = StepReporter(spec.run_id, lambda event: worker.log_event(topic, asdict(event)))
    with profiler_paused():
        return execute(spec, on_step=on_step)


def execute_chunk(specs: Sequence[RunSpec], topic: str | None = None,
                  seconds: float = CHUNK_SECONDS) -> tuple[list[xr.Dataset], list[RunSpec]]:
    """The Dask task of a chunk of runs: :func:`execute_on_dask` of each in order, starting none once ``seconds`` have
    passed since the first started; returns the finished runs and those not started."""
    start, done = time.monotonic(), []
    for i, spec in enumerate(specs):
        if done and time.monotonic() - start >= seconds:
            return done, list(specs[i:])
        done.append(execute_on_dask(spec, topic))
    return done, []


def dask_setup(worker) -> None:
    """Dask's preload hook (``dask.local_cluster``): pay, as the worker starts, what any run pays once per process.

    That is the registry (built-in algorithms and models imported), xarray's first Dataset (with dask installed
    it imports ``dask.array`` to recognise dask arrays) and threadpoolctl's first scan of the loaded libraries.
    In a fresh worker they made the first run ~0.5 s longer than the next (measured on the short runs of issue 33):
    a fixed cost in a sweep's wall clock on 1 worker as on 2, which with 48 runs of ~0.15 s alone would keep 2
    workers under ~1.85× of 1.
    """
    import numpy as np

    from ..clock import one_thread
    from ..registry import get_registry

    get_registry()
    xr.Dataset({"warm_up": ("checkpoint", np.zeros(1))})
    with one_thread():
        pass
