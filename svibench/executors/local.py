"""The local executor: supervised worker processes on this machine.

The parent watches every worker: a worker that dies mid-run (killed, out of
memory) makes that run retried, then recorded ``failed`` with the reason; a run
that overruns its time limit by a grace period is killed and recorded
``timeout``; a worker whose parent is killed outright ends itself within a
second; an optional address-space limit per worker turns runaway memory into a
``MemoryError`` inside the run.  Workers send their progress within a run over
the same pipe as the result.  With ``workers == 1`` runs execute in this process
(no isolation, no overhead).

Workers are forked from this process where that is safe (:func:`start_method`): they start with its imports and
registry instead of paying ~1.2 s of CPU each to import them again, which in a study of short runs was most of
what a second worker cost (issue 33).
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Iterator, Sequence

import xarray as xr

from ..progress import RunEvent
from ..runner import execute, to_dataset
from ..spec import RunSpec
from .base import TIMEOUT_GRACE, OnProgress, StepReporter, finished, ignore, lost_run, pinned_threads

__all__ = ["run_local", "start_method"]

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


def start_method(memory_limit: int | None) -> str:
    """``fork`` on Linux when this process runs a single thread (a fork copies only the calling thread, so a lock
    another thread holds would stay held in the worker) and no address-space limit is asked (a forked worker's
    address space starts with this process's, which the limit would count); else ``spawn``."""
    if sys.platform.startswith("linux") and memory_limit is None and threading.active_count() == 1:
        return "fork"
    return "spawn"


def _worker_main(conn: Connection, memory_limit: int | None, parent_pid: int) -> None:
    """Worker loop: receive a RunSpec, send back its progress events then its Dataset; None ends the loop.

    ``parent_pid`` comes from the parent: a worker still importing when its parent
    is killed would otherwise take its new parent (init) for the real one.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and shuts us down
    threading.Thread(target=_exit_with_parent, args=(parent_pid,), daemon=True).start()
    if memory_limit:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
    try:
        while True:
            spec = conn.recv()
            if spec is None:
                return
            conn.send(execute(spec, on_step=StepReporter(spec.run_id, conn.send)))
    except (EOFError, BrokenPipeError):  # the parent went away: nothing to report to
        os._exit(1)
    except BaseException as exc:  # noqa: BLE001 -- e.g. MemoryError sending a run's results under --memory-limit
        # A run's own errors are recorded by execute(); this is the worker failing around it.  One line, no
        # traceback: the parent records the run as lost with the reason ("worker process died ...").
        print(f"svibench worker {os.getpid()}: {type(exc).__name__}: {exc}"[:300], file=sys.stderr, flush=True)
        os._exit(1)


@dataclass
class _Slot:
    process: multiprocessing.Process
    conn: Connection
    spec: RunSpec | None = None
    started: float = 0.0


class _Pool:
    """Worker processes that each make one run at a time, and the queue of runs still to make."""

    def __init__(self, specs: Sequence[RunSpec], workers: int, retries: int, memory_limit: int | None,
                 timeout_grace: float, on_progress: OnProgress) -> None:
        self.context = multiprocessing.get_context(start_method(memory_limit))
        self.queue = deque(specs)
        self.retries, self.memory_limit, self.grace, self.on_progress = retries, memory_limit, timeout_grace, on_progress
        self.attempts: dict[str, int] = {}
        self.slots: list[_Slot] = []

    def open(self, workers: int) -> None:
        """Start the worker processes (one by one, so :meth:`close` ends those started if one fails)."""
        for _ in range(min(workers, len(self.queue))):
            self.slots.append(self._start())

    def _start(self) -> _Slot:
        parent, child = self.context.Pipe()
        with pinned_threads(1):
            process = self.context.Process(target=_worker_main, args=(child, self.memory_limit, os.getpid()), daemon=True)
            process.start()
        child.close()
        return _Slot(process, parent)

    def _dispatch(self, slot: _Slot) -> None:
        if slot.spec is None and self.queue:
            slot.spec, slot.started = self.queue.popleft(), time.monotonic()
            slot.conn.send(slot.spec)

    def busy(self) -> bool:
        return bool(self.queue) or any(s.spec is not None for s in self.slots)

    def round(self) -> Iterator[xr.Dataset]:
        """Hand out runs, wait up to a second, and yield the runs that ended meanwhile."""
        for slot in self.slots:
            self._dispatch(slot)
        busy = [s for s in self.slots if s.spec is not None]
        ready = wait([s.conn for s in busy] + [s.process.sentinel for s in busy], timeout=1.0)
        for i, slot in enumerate(self.slots):
            if slot.spec is None:
                continue
            result = self._receive(slot) if slot.conn in ready else None
            if result is not None:
                slot.spec = None
                self._dispatch(slot)  # the worker goes on while the caller writes this result
                yield result
                continue
            overdue = slot.spec.timeout is not None and time.monotonic() - slot.started > slot.spec.timeout + self.grace
            if slot.process.sentinel in ready or not slot.process.is_alive() or overdue:
                lost = self._replace(i, overdue)
                if lost is not None:
                    yield lost

    def _receive(self, slot: _Slot) -> xr.Dataset | None:
        """Forward the worker's progress events; return its finished run, if it sent one."""
        try:
            while slot.conn.poll():
                message = slot.conn.recv()
                if not isinstance(message, RunEvent):
                    return message
                self.on_progress(message)
        except (EOFError, OSError):
            pass  # died while sending; handled by the caller as a lost worker
        return None

    def _replace(self, i: int, overdue: bool) -> xr.Dataset | None:
        """Start a new worker in place of a dead or overdue one; the record of its run, unless retried."""
        slot = self.slots[i]
        spec = slot.spec
        if overdue:
            slot.process.kill()
        slot.process.join()
        code = slot.process.exitcode
        slot.conn.close()
        self.slots[i] = self._start()
        if overdue:
            return to_dataset(spec, [], {}, "timeout",
                              f"killed after {spec.timeout + self.grace:g} s: a step did not return within the time limit")
        self.attempts[spec.run_id] = self.attempts.get(spec.run_id, 0) + 1
        if self.attempts[spec.run_id] <= self.retries:
            self.queue.appendleft(spec)
            return None
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        return lost_run(spec, f"worker process died during the run ({how}; out of memory or killed); "
                              f"tried {self.attempts[spec.run_id]} time(s)")

    def close(self) -> None:
        """End every worker: politely if idle, by force if busy or deaf."""
        for slot in self.slots:
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


def run_local(
    specs: Sequence[RunSpec],
    workers: int = 1,
    *,
    retries: int = 1,
    memory_limit: int | None = None,
    timeout_grace: float = TIMEOUT_GRACE,
    on_progress: OnProgress | None = None,
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
    on_progress : callable, optional
        Called with a :class:`~svibench.progress.RunEvent` within each run and at its end.
    """
    on_progress = on_progress or ignore
    workers = min(workers, len(specs))  # never a process without a run to make
    if workers <= 1:
        for spec in specs:
            yield finished(execute(spec, on_step=StepReporter(spec.run_id, on_progress)), on_progress)
        return
    pool = _Pool(specs, workers, retries, memory_limit, timeout_grace, on_progress)
    try:
        pool.open(workers)
        while pool.busy():
            for ds in pool.round():
                yield finished(ds, on_progress)
    finally:
        pool.close()
