"""A one-line progress bar on stderr, silent when stderr is not a terminal."""
from __future__ import annotations

import sys
import time

__all__ = ["Progress"]


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
