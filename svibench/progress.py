"""One-line progress bars on stderr, silent when stderr is not a terminal.

:class:`Progress` counts a sweep's runs; :class:`RunProgress` follows one long
run through its budget (used when a sweep has a single run, see
:func:`run_with_progress`).
"""
from __future__ import annotations

import sys
import time
from typing import Iterator, Sequence

import xarray as xr

from .spec import RunSpec

__all__ = ["Progress", "RunProgress", "run_with_progress"]


class Progress:
    """Runs done / total, elapsed, ETA and failures so far."""

    def __init__(self, total: int, *, enabled: bool | None = None, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total, self.done, self.failed = total, 0, 0
        self.started = time.monotonic()

    def update(self, status: str) -> None:
        self.done += 1
        self.failed += status != "ok"
        if not self.enabled:
            return
        elapsed = time.monotonic() - self.started
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        self.stream.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} runs"
            f"  {elapsed:6.1f}s elapsed  ETA {eta:6.1f}s  not ok: {self.failed}"
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


class RunProgress:
    """Budget used by one run (the largest fraction over its limits), iteration, epoch, algorithm time.

    Called by the runner after every step; redraws at most every ``interval``
    seconds of wall-clock so it costs a clock read per step.
    """

    def __init__(self, spec: RunSpec, *, enabled: bool | None = None, stream=None, interval: float = 0.25) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.budget, self.interval = spec.budget, interval
        self.name = f"{spec.label} on {spec.problem.name} (seed {spec.seed})"
        self.next_draw = 0.0
        self.last: tuple[int, float, float] | None = None

    def fraction(self, iteration: int, epoch: float, seconds: float) -> float:
        limits = ((iteration, self.budget.iterations), (epoch, self.budget.epochs), (seconds, self.budget.seconds))
        return min(1.0, max(value / limit for value, limit in limits if limit))

    def __call__(self, iteration: int, epoch: float, seconds: float) -> None:
        self.last = (iteration, epoch, seconds)
        if not self.enabled:
            return
        now = time.monotonic()
        if now >= self.next_draw:
            self.next_draw = now + self.interval
            self._draw()

    def _draw(self) -> None:
        if self.last is None:
            return
        iteration, epoch, seconds = self.last
        done = self.fraction(iteration, epoch, seconds)
        width = 30
        filled = int(width * done)
        self.stream.write(
            f"\r{self.name}: [{'#' * filled}{'.' * (width - filled)}] {100 * done:5.1f}%"
            f"  iteration {iteration}  epoch {epoch:.3g}  {seconds:.1f}s algorithm time"
        )
        self.stream.flush()

    def close(self) -> None:
        """Draw the final state and end the line."""
        if self.enabled and self.last is not None:
            self._draw()
            self.stream.write("\n")
            self.stream.flush()


def run_with_progress(specs: Sequence[RunSpec], *, stream=None) -> Iterator[xr.Dataset]:
    """An executor that makes ``specs`` one after another in this process, each with a :class:`RunProgress`."""
    from .runner import execute

    for spec in specs:
        bar = RunProgress(spec, stream=stream)
        try:
            yield execute(spec, on_step=bar)
        finally:
            bar.close()
