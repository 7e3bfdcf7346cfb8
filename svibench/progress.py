"""A one-line progress bar on stderr, silent when stderr is not a terminal.

Executors report :class:`RunEvent` s to an ``on_progress`` callback: one within
a run every few tenths of a second (iteration, epoch, algorithm CPU seconds) and one
when it ends (its status).  :class:`Progress` is that callback for the command
line: runs done / total, with the budget already used by the runs in flight
counted in, elapsed time, ETA and runs not ok; a sweep of one run also shows
its iteration, epoch and algorithm time (CPU seconds).  It draws at once, before any run has
reported.
"""
from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Sequence

from .spec import Budget, RunSpec

__all__ = ["Progress", "RunEvent", "budget_fraction"]

WIDTH = 30
#: Fraction of the sweep done before an ETA is shown (extrapolating from less is noise).
ETA_AFTER = 0.01


@dataclass(frozen=True)
class RunEvent:
    """Progress of one run: within it (``status`` None) or at its end (``status`` set)."""

    run_id: str
    iteration: int = 0
    epoch: float = 0.0
    seconds: float = 0.0
    status: str | None = None


def budget_fraction(budget: Budget, iteration: int, epoch: float, seconds: float) -> float:
    """How much of ``budget`` a run has used: the largest fraction over its limits, at most 1."""
    limits = ((iteration, budget.iterations), (epoch, budget.epochs), (seconds, budget.seconds))
    return min(1.0, max(value / limit for value, limit in limits if limit))


class Progress:
    """The ``on_progress`` callback that draws the bar (thread-safe: Dask reports from its own thread)."""

    def __init__(self, specs: Sequence[RunSpec], *, enabled: bool | None = None, stream=None,
                 interval: float = 0.25) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.budgets = {spec.run_id: spec.budget for spec in specs}
        self.total, self.done, self.failed = len(self.budgets), 0, 0
        self.single = f"{specs[0].label} on {specs[0].problem.name} (seed {specs[0].seed})" if len(specs) == 1 else ""
        self.running: dict[str, float] = {}
        self.ended: set[str] = set()
        self.last: RunEvent | None = None
        self.interval, self.next_draw = interval, 0.0
        self.started = time.monotonic()
        self.lock = threading.Lock()
        if self.total:
            self._draw()

    def __call__(self, event: RunEvent) -> None:
        with self.lock:
            if event.run_id in self.ended or event.run_id not in self.budgets:
                return  # a late report of a run that has ended (Dask events are asynchronous)
            if event.status is None:
                self.running[event.run_id] = budget_fraction(self.budgets[event.run_id], event.iteration,
                                                             event.epoch, event.seconds)
                self.last = event
                if time.monotonic() < self.next_draw:
                    return
            else:
                self.ended.add(event.run_id)
                self.running.pop(event.run_id, None)
                self.done += 1
                self.failed += event.status != "ok"
            self._draw()

    def fraction(self) -> float:
        """Runs done plus the budget used by the runs in flight, as a fraction of all runs."""
        return (self.done + sum(self.running.values())) / max(self.total, 1)

    def line(self) -> str:
        elapsed = time.monotonic() - self.started
        done = self.fraction()
        eta = f"{elapsed / done * (1 - done):6.1f}s" if done >= ETA_AFTER else "     ?"
        filled = int(WIDTH * done)
        text = (f"[{'#' * filled}{'.' * (WIDTH - filled)}] {self.done}/{self.total} runs  {100 * done:5.1f}%"
                f"  {elapsed:6.1f}s elapsed  ETA {eta}  not ok: {self.failed}")
        if self.single and self.last is not None:
            text += (f"  {self.single}: iteration {self.last.iteration}  epoch {self.last.epoch:.3g}"
                     f"  {self.last.seconds:.1f}s algorithm CPU time")
        return text

    def _draw(self) -> None:
        self.next_draw = time.monotonic() + self.interval
        if not self.enabled:
            return
        self.stream.write("\r" + self.line() + ("\n" if self.done == self.total else ""))
        self.stream.flush()
