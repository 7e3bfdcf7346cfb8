"""Whether a run had finished: the convergence rule every verdict and table reads.

A run is *unconverged* on a metric when, over the last ``window`` (a fraction, 10% by default) of its
checkpoints, the metric still moved by more than both

- the tolerance, relative to its final value (``[report] converged_tolerance``, 1e-3 by default), and
- the noise of its method: 2√2 times the seed-to-seed standard deviation of the final values of the ok runs
  with the same label on the same problem.  A stochastic method that has converged still moves from checkpoint to
  checkpoint; two values with that noise differ by more than 2√2 σ about 5% of the time, so a plateau
  reached by a noisy method is not read as movement, and a run drifting by more than its noise is.

With one seed (no spread) or a deterministic method (zero spread) the rule is the tolerance alone.  The window
is :func:`svibench.plateau.window_ends`'s, the same one a study's ``until_converged`` budget stops a run by.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from ..metrics import Metric
from ..plateau import window_ends
from ..status import is_ok

__all__ = ["unconverged", "LAST_FRACTION", "NOISE_WIDTH"]

#: The default window: the last 10% of a run's checkpoints.
LAST_FRACTION = 0.1
#: How many seed-to-seed standard deviations a change over the window must exceed (2√2: two standard deviations of
#: the difference of two independent values with that spread).
NOISE_WIDTH = 2 * math.sqrt(2)


def unconverged(ds: xr.Dataset, metric: str, tolerance: float, window: float = LAST_FRACTION,
                info: Mapping[str, Metric] | None = None) -> np.ndarray:
    """Per run: whether ``metric`` changed over the last ``window`` of its checkpoints by more than
    ``tolerance`` × |final| and by more than :data:`NOISE_WIDTH` × the seed-to-seed spread of its label's final
    values on its problem (the module docstring).  A metric measured at the last checkpoint only is read from the
    metric that tracks it at every checkpoint (``Metric.tracked_by`` in ``info``)."""
    if info is not None and metric in info and info[metric].tracked_by:
        metric = info[metric].tracked_by
    out = np.zeros(ds.sizes["run"], dtype=bool)
    if metric not in ds:
        return out
    ends = [window_ends(ds[metric].values[r], window) for r in range(ds.sizes["run"])]
    ok = is_ok(ds["status"].values) if "status" in ds.coords else np.ones(len(ends), dtype=bool)
    finals = pd.DataFrame({"problem": ds["problem"].values.astype(str), "label": ds["label"].values.astype(str),
                           "final": [e[1] if e and good else np.nan for e, good in zip(ends, ok)]})
    spread = finals.groupby(["problem", "label"])["final"].transform(lambda v: v.std(ddof=1) if v.count() > 1 else 0.0)
    for r, e in enumerate(ends):
        if e is None:
            continue
        allowed = max(tolerance * max(abs(e[1]), 1e-300), NOISE_WIDTH * float(np.nan_to_num(spread.iloc[r])))
        out[r] = abs(e[1] - e[0]) > allowed
    return out
