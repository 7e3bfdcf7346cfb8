"""Whether a run had finished: the convergence rule every verdict and table reads.

A run is *unconverged* on a metric when, over the last 10% of its checkpoints, the metric still moved by more than
the tolerance (relative to its final value).
"""
from __future__ import annotations

import numpy as np
import xarray as xr

__all__ = ["unconverged", "LAST_FRACTION"]

LAST_FRACTION = 0.1


def unconverged(ds: xr.Dataset, metric: str, tolerance: float) -> np.ndarray:
    """Per run: whether ``metric`` changed by more than ``tolerance`` × |final| over the last 10% of checkpoints.

    The window starts at the checkpoint nearest 90% of the way through the run's
    finite values (at least one checkpoint back), so a run with 12 checkpoints
    compares its last value with its second to last.
    """
    out = np.zeros(ds.sizes["run"], dtype=bool)
    if metric not in ds:
        return out
    for r in range(ds.sizes["run"]):
        values = ds[metric].values[r]
        values = values[np.isfinite(values)]
        if values.size < 2:
            continue
        start = min(values.size - 2, int(round((1 - LAST_FRACTION) * (values.size - 1))))
        change = abs(values[-1] - values[start])
        out[r] = change > tolerance * max(abs(values[-1]), 1e-300)
    return out
