"""What every executor shares: its error, thread pinning, lost runs and progress reporting."""
from __future__ import annotations

import time
from typing import Callable, Iterator, Protocol, Sequence

import xarray as xr

from ..clock import THREAD_VARS, pinned_threads
from ..errors import UserError
from ..progress import RunEvent
from ..runner import to_dataset
from ..spec import RunSpec

__all__ = ["Executor", "ExecutorError", "OnProgress", "StepReporter", "finished", "ignore", "lost_run", "pinned_threads",
           "THREAD_VARS", "TIMEOUT_GRACE"]

#: Seconds past a run's own time limit before its worker is killed (the runner
#: stops by itself at the limit between steps; this catches a step that hangs).
TIMEOUT_GRACE = 30.0
#: Seconds between two progress reports from within a run.
STEP_INTERVAL = 0.25

OnProgress = Callable[[RunEvent], None]


class Executor(Protocol):
    """Runs ``specs`` and yields each run's Dataset as it finishes, reporting to ``on_progress``."""

    def __call__(self, specs: Sequence[RunSpec], *, on_progress: OnProgress | None = None) -> Iterator[xr.Dataset]: ...


class ExecutorError(UserError, RuntimeError):
    """The executor cannot start (e.g. an unreachable scheduler); the message says why."""


def ignore(event: RunEvent) -> None:
    """The ``on_progress`` of a caller that does not follow progress."""


def lost_run(spec: RunSpec, reason: str) -> xr.Dataset:
    """The record of a run whose worker was lost: ``failed`` with the reason, no checkpoints."""
    return to_dataset(spec, [], {}, "failed", reason)


def finished(ds: xr.Dataset, on_progress: OnProgress) -> xr.Dataset:
    """Report the end of the run ``ds`` (its status) and return it."""
    on_progress(RunEvent(str(ds.attrs["run_id"]), status=str(ds.attrs["status"])))
    return ds


class StepReporter:
    """The runner's ``on_step`` hook: forwards a :class:`RunEvent` to ``send`` at most every ``interval`` s, the
    first ``interval`` s after it is made, so a run shorter than that reports only its end.

    It runs outside the run's clock (the runner calls it between steps), and
    costs a clock read per step between reports.  A report at a run's first step said little the end would not
    say soon after, and in a sweep of short runs on Dask it was a message worker → scheduler → client per run:
    about 1 ms of the parent's CPU each, taken from the workers on a machine with a core per worker (issue 33).
    """

    def __init__(self, run_id: str, send: OnProgress, interval: float = STEP_INTERVAL) -> None:
        self.run_id, self.send, self.interval = run_id, send, interval
        self.next_report = time.monotonic() + interval

    def __call__(self, iteration: int, epoch: float, seconds: float) -> None:
        now = time.monotonic()
        if now >= self.next_report:
            self.next_report = now + self.interval
            self.send(RunEvent(self.run_id, iteration, float(epoch), float(seconds)))
