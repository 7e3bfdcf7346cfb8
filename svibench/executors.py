"""Executors: where runs execute.  Each yields finished runs as they complete; the
caller (the sweep) writes them, so workers never touch the results folder.

``local``
    Supervised worker processes on this machine.  The parent watches every
    worker: a worker that dies mid-run (killed, out of memory) makes that run
    retried, then recorded ``failed`` with the reason; a run that overruns its
    time limit by a grace period is killed and recorded ``timeout``; a worker
    whose parent is killed outright ends itself within a second; an
    optional address-space limit per worker turns runaway memory into a
    ``MemoryError`` inside the run.  With ``workers == 1`` runs execute in this
    process (no isolation, no overhead).
``dask``
    Dask distributed: an existing scheduler (``address``) or a ``LocalCluster``
    of single-threaded worker processes.  Runs are independent tasks
    (``pure=False``, the run id in the key, ``retries`` on lost workers); a run
    pauses the worker's profiler and undoes its allocator trimming, so it times
    as in a local worker.

Worker processes pin BLAS/OpenMP to one thread, so parallel runs do not
oversubscribe the cores (timings of parallel runs are still not serial timings:
the sweep records the number of workers in the results).
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time
import uuid
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Iterator, Sequence

import xarray as xr

from .runner import execute, to_dataset
from .spec import RunSpec

__all__ = ["run_local", "run_dask", "dask_slots", "ExecutorError", "THREAD_VARS", "pinned_threads", "TIMEOUT_GRACE"]

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
#: Seconds past a run's own time limit before its worker is killed (the runner
#: stops by itself at the limit between steps; this catches a step that hangs).
TIMEOUT_GRACE = 30.0


class ExecutorError(RuntimeError):
    """The executor cannot start (e.g. an unreachable scheduler); the message says why."""


@contextmanager
def pinned_threads(threads: int = 1):
    """Set the BLAS/OpenMP thread variables while worker processes are started."""
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


def lost_run(spec: RunSpec, reason: str) -> xr.Dataset:
    """The record of a run whose worker was lost: ``failed`` with the reason, no checkpoints."""
    return to_dataset(spec, [], (), "failed", reason)


# -- local ---------------------------------------------------------------------------------

#: Seconds between a worker's checks that its parent is still alive.
PARENT_POLL = 1.0


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker process once its parent is gone.

    A parent killed outright (SIGKILL, OOM killer) cannot shut its workers
    down; without this they would finish their runs for nobody, competing for
    the cores with the next sweep and skewing its timings.
    """
    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL)
    os._exit(1)


def _worker_main(conn: Connection, memory_limit: int | None, parent_pid: int) -> None:
    """Worker loop: receive a RunSpec, send back its Dataset; None ends the loop.

    ``parent_pid`` comes from the parent: a worker still importing when its parent
    is killed would otherwise take its new parent (init) for the real one.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and shuts us down
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    while True:
        spec = conn.recv()
        if spec is None:
            return
        conn.send(execute(spec))


@dataclass
class _Slot:
    process: multiprocessing.Process
    conn: Connection
    spec: RunSpec | None = None
    started: float = 0.0


def run_local(
    specs: Sequence[RunSpec],
    workers: int = 1,
    *,
    retries: int = 1,
    memory_limit: int | None = None,
    timeout_grace: float = TIMEOUT_GRACE,
) -> Iterator[xr.Dataset]:
    """Run ``specs`` on this machine, yielding each run's Dataset as soon as it finishes.

    Parameters
    ----------
    workers : int
        Worker processes (1: run in this process).
    retries : int
        How many times a run whose worker died is started again before it is
        recorded ``failed``.
    memory_limit : int, optional
        Address-space limit per worker process, in bytes (Linux/macOS).
    timeout_grace : float
        Seconds past a run's ``timeout`` before its worker is killed.
    """
    if workers <= 1:
        for spec in specs:
            yield execute(spec)
        return
    context = multiprocessing.get_context("spawn")
    queue = deque(specs)
    attempts: dict[str, int] = {}
    slots: list[_Slot] = []

    def start() -> _Slot:
        parent, child = context.Pipe()
        with pinned_threads(1):
            process = context.Process(target=_worker_main, args=(child, memory_limit, os.getpid()), daemon=True)
            process.start()
        child.close()
        return _Slot(process, parent)

    def dispatch(slot: _Slot) -> None:
        if slot.spec is None and queue:
            slot.spec, slot.started = queue.popleft(), time.monotonic()
            slot.conn.send(slot.spec)

    try:
        slots = [start() for _ in range(min(workers, len(queue)))]
        while queue or any(s.spec is not None for s in slots):
            for slot in slots:
                dispatch(slot)
            busy = [s for s in slots if s.spec is not None]
            ready = wait([s.conn for s in busy] + [s.process.sentinel for s in busy], timeout=1.0)
            for i, slot in enumerate(slots):
                spec = slot.spec
                if spec is None:
                    continue
                if slot.conn in ready:
                    try:
                        result = slot.conn.recv()
                    except (EOFError, OSError):
                        result = None  # died while sending; handled below as a lost worker
                    if result is not None:
                        slot.spec = None
                        dispatch(slot)  # the worker goes on while the caller writes this result
                        yield result
                        continue
                overdue = spec.timeout is not None and time.monotonic() - slot.started > spec.timeout + timeout_grace
                if slot.process.sentinel in ready or not slot.process.is_alive() or overdue:
                    if overdue:
                        slot.process.kill()
                    slot.process.join()
                    code = slot.process.exitcode
                    slots[i] = start()
                    if overdue:
                        yield to_dataset(spec, [], (), "timeout",
                                         f"killed after {spec.timeout + timeout_grace:g} s: a step did not return within the time limit")
                        continue
                    attempts[spec.run_id] = attempts.get(spec.run_id, 0) + 1
                    if attempts[spec.run_id] <= retries:
                        queue.appendleft(spec)
                    else:
                        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
                        yield lost_run(spec, f"worker process died during the run ({how}; out of memory or killed); "
                                             f"tried {attempts[spec.run_id]} time(s)")
    finally:
        for slot in slots:
            if slot.process.is_alive():
                if slot.spec is None:
                    try:
                        slot.conn.send(None)
                    except OSError:
                        pass
                    slot.process.join(timeout=2)
                if slot.process.is_alive():
                    slot.process.kill()
                    slot.process.join()
            slot.conn.close()


# -- dask ----------------------------------------------------------------------------------

#: glibc mallopt parameters, and the value svibench sets in Dask workers (128 MiB).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _MALLOC_THRESHOLD = -1, -3, 128 * 2**20


def _restore_malloc_defaults() -> bool:
    """Undo Dask's aggressive memory trimming in this worker process (glibc only).

    Dask starts workers with ``MALLOC_TRIM_THRESHOLD_=65536`` so that freed memory
    returns to the OS at once; for numpy code that allocates and frees arrays of a
    few hundred kB every step this means a page fault per allocation, and runs
    were measured ~3× slower in Dask workers than in plain processes (timings
    would be unfair across executors).  Large trim and mmap thresholds make worker
    processes allocate like ordinary ones.  Returns whether the call took effect.
    """
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        return bool(libc.mallopt(_M_TRIM_THRESHOLD, _MALLOC_THRESHOLD) and libc.mallopt(_M_MMAP_THRESHOLD, _MALLOC_THRESHOLD))
    except (OSError, AttributeError):
        return False


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


@contextmanager
def profiler_paused():
    """Pause the statistical profiler of the Dask worker this code runs in (no-op elsewhere).

    Dask samples the stack of every task thread every 10 ms from the worker's
    event loop, taking the GIL each time; a CPU-bound run was measured ~10%
    slower in a Dask worker than in a local worker because of it (GMM SVI, 8 runs
    of ~7 s: 64.9 s of algorithm time against 57.9 s with the profiler off), so
    timings would differ between executors.  The profiler restarts when the
    last run on the worker ends.
    """
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not in a Dask worker
        yield
        return
    callbacks = [worker.periodic_callbacks[name] for name in _PROFILER_CALLBACKS if name in worker.periodic_callbacks]
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


def execute_on_dask(spec: RunSpec) -> xr.Dataset:
    """The Dask task of one run: ordinary allocator settings and no profiler, then
    :func:`~svibench.runner.execute`."""
    _restore_malloc_defaults()
    with profiler_paused():
        return execute(spec)


def _distributed():
    """The ``distributed`` package, or a clear error saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ExecutorError("the dask executor needs dask.distributed: pip install 'svibench[dask]'") from None
    return distributed


def _connect(address: str, connect_timeout: float):
    client_cls = _distributed().Client
    try:
        return client_cls(address, timeout=f"{connect_timeout}s")
    except (OSError, TimeoutError) as exc:
        raise ExecutorError(f"cannot reach a Dask scheduler at {address} within {connect_timeout:g} s ({exc}); "
                            "start one with `dask scheduler` or run without --address for a local cluster") from None


def dask_slots(address: str, connect_timeout: float = 5.0) -> int:
    """How many runs the Dask cluster at ``address`` executes at once (its workers' threads).

    Raises :class:`ExecutorError` if the scheduler cannot be reached, so a sweep
    fails before any work when the address is wrong.
    """
    with _connect(address, connect_timeout) as client:
        return sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())


def run_dask(
    specs: Sequence[RunSpec],
    *,
    address: str | None = None,
    workers: int = 2,
    retries: int = 1,
    connect_timeout: float = 5.0,
) -> Iterator[xr.Dataset]:
    """Run ``specs`` as Dask tasks, yielding each run's Dataset as it completes.

    Parameters
    ----------
    address : str, optional
        A running scheduler, e.g. ``tcp://127.0.0.1:8786``.  Without one, a
        ``LocalCluster`` of ``workers`` single-threaded processes is started
        (and closed at the end).
    retries : int
        Dask retries of a task whose worker was lost; after that the run is
        recorded ``failed`` with the reason.
    """
    distributed = _distributed()
    cluster = None
    if address:
        client = _connect(address, connect_timeout)
    else:
        with pinned_threads(1):
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=None)
        client = distributed.Client(cluster)
    token = uuid.uuid4().hex[:8]
    try:
        futures = {
            client.submit(execute_on_dask, spec, key=f"svibench-run-{spec.run_id}-{token}", pure=False, retries=retries): spec
            for spec in specs
        }
        for future in distributed.as_completed(futures):
            spec = futures[future]
            try:
                yield future.result()
            except Exception as exc:  # KilledWorker and friends: the run, not the sweep, is lost
                yield lost_run(spec, f"dask task lost ({type(exc).__name__}: {exc}) after {retries} retries")
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
