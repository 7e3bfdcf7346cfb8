"""Whether a trajectory has levelled off: the one reading of "the last window of a run" that the runner's
until-converged stop (:class:`svibench.spec.UntilConverged`) and the claims' convergence test
(:mod:`svibench.claims.convergence`) share."""
from __future__ import annotations

import numpy as np

__all__ = ["window_ends", "relative_change"]


def window_ends(values: np.ndarray, window: float) -> tuple[float, float] | None:
    """(value at the window's start, final value) of one run's finite values, or None with fewer than two.

    The window starts at the checkpoint nearest ``1 - window`` of the way through the values (at least one
    checkpoint back), so a run with 12 checkpoints and ``window = 0.1`` compares its last value with its second to
    last."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size < 2:
        return None
    start = min(values.size - 2, int(round((1 - window) * (values.size - 1))))
    return float(values[start]), float(values[-1])


def relative_change(values: np.ndarray, window: float) -> float:
    """|final − value at the window's start| / |final| (:func:`window_ends`); infinite with fewer than two finite
    values."""
    ends = window_ends(values, window)
    if ends is None:
        return float("inf")
    return abs(ends[1] - ends[0]) / max(abs(ends[1]), 1e-300)
