"""Run health: one policy for which runs, and which checkpoints of a run, count.

A checkpoint is *healthy* when every metric it records is finite and inside its
declared valid range (:class:`svibench.metrics.Metric` ``low``/``high``), and no
objective metric has **blown up**: become worse than its first recorded value
by more than ``BLOWUP`` × max(|first value|, 1), e.g. a negative ELBO that
starts at 240 nats and reaches 2,650 or more.  No sound optimiser ends up
eleven times further from the optimum than where it started; a run that does is
reported ``diverged``, never ``ok``.

The runner applies :func:`check_row` at every checkpoint and ends a run
``diverged`` at the first unhealthy one.  Reports and verdicts apply the same
policy again to what is on disk (:func:`apply`, right after the results are
opened), so results written before a rule existed are judged by it too, and
every consumer (ranking, means, time to target, performance profiles,
verdicts) selects runs with one selector, :func:`is_ok`, after :func:`apply`.
"""
from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import xarray as xr

from .metrics import Metric
from .status import is_ok
from .results import metric_info, open_results

__all__ = ["BLOWUP", "check_row", "recorded", "healthy_until", "statuses", "apply", "open_judged"]

#: How many times its initial distance from zero (at least 1) an objective may worsen before the run counts as
#: blown up.
BLOWUP = 10.0


def _blown_up(metric: Metric, first: float, value: float) -> bool:
    return metric.signed(value) < metric.signed(first) - BLOWUP * max(abs(first), 1.0)


def check_row(info: Mapping[str, Metric], first: Mapping[str, float], values: Mapping[str, float]) -> str | None:
    """Why a checkpoint's ``values`` are unhealthy, or None.

    ``first`` holds each metric's first finite value in the run (the reference of the blow-up rule); a metric
    without metadata in ``info`` is only checked for being finite.
    """
    for name, value in values.items():
        metric = info.get(name)
        if not math.isfinite(value):
            return f"non-finite {name}"
        if metric is None:
            continue
        if not metric.valid(value):
            return f"{name} = {value:.6g} outside its valid range [{metric.low:g}, {metric.high:g}]"
        start = first.get(name, value)
        if metric.kind == "objective" and math.isfinite(start) and _blown_up(metric, start, value):
            return (f"{name} blew up: {value:.6g}, worse than its initial {start:.6g} by more than "
                    f"{BLOWUP:g} × max(|initial|, 1)")
    return None


def _run_rows(ds: xr.Dataset, r: int, metrics: list[str]) -> tuple[dict[str, float], list[dict[str, float]]]:
    """A run's checkpoints as dicts of its recorded (non-NaN) metric values, and each metric's first finite value."""
    values = {m: ds[m].values[r] for m in metrics}
    rows = [{m: float(v[k]) for m, v in values.items() if not np.isnan(v[k])} for k in range(ds.sizes["checkpoint"])]
    first = {}
    for m, v in values.items():
        finite = v[np.isfinite(v)]
        if finite.size:
            first[m] = float(finite[0])
    return first, rows


def recorded(ds: xr.Dataset) -> np.ndarray:
    """Per run: how many checkpoints it recorded (the rest of the ``checkpoint`` axis pads shorter runs)."""
    return (~np.isnan(ds["iteration"].values)).sum(axis=1)


def _diagnose(ds: xr.Dataset, info: Mapping[str, Metric]) -> list[tuple[int, str | None]]:
    """Per run: (number of leading healthy checkpoints, why the next one is unhealthy or None)."""
    metrics = [m for m in info if m in ds]
    counts = recorded(ds)
    out = []
    for r in range(ds.sizes["run"]):
        first, rows = _run_rows(ds, r, metrics)
        n, why = 0, None
        while n < counts[r] and (why := check_row(info, first, rows[n])) is None:
            n += 1
        out.append((n, why))
    return out


def healthy_until(ds: xr.Dataset, info: Mapping[str, Metric]) -> np.ndarray:
    """Per run: the number of leading healthy checkpoints; every checkpoint from the first unhealthy one on is
    ignored (by time to target, for instance)."""
    return np.array([n for n, _ in _diagnose(ds, info)], dtype=int)


def apply(ds: xr.Dataset, info: Mapping[str, Metric]) -> xr.Dataset:
    """``ds`` judged by the policy: an ``ok`` run with an unhealthy checkpoint becomes ``diverged`` (its message says
    why and where), and every metric value from a run's first unhealthy checkpoint on is masked (NaN), so that
    every table, figure and ranking that selects runs with :func:`is_ok` and reads the values uses this policy."""
    out = ds.copy(deep=True)
    status, message = out["status"].values.astype(object), out["message"].values.astype(object)
    counts = recorded(ds)
    for r, (n, why) in enumerate(_diagnose(ds, info)):
        if n < counts[r]:
            if is_ok(status[r]):
                status[r] = "diverged"
                message[r] = f"{why} at iteration {int(ds['iteration'].values[r, n])} (svibench.health)"
            for m in info:
                if m in out:
                    out[m].values[r, n:] = np.nan
    return out.assign_coords(status=("run", status.astype(str)), message=("run", message.astype(str)))


def statuses(ds: xr.Dataset, info: Mapping[str, Metric]) -> np.ndarray:
    """Per run: its status on disk, except that an ``ok`` run with an unhealthy checkpoint is ``diverged``."""
    status = ds["status"].values.astype(object).copy()
    status[is_ok(status) & (healthy_until(ds, info) < recorded(ds))] = "diverged"
    return status.astype(str)


def open_judged(path, *, skip_corrupt: bool = False) -> xr.Dataset:
    """:func:`svibench.results.open_results` with this policy applied (:func:`apply`): what every report and the
    console's table read, so that they count the same runs."""
    ds = open_results(path, skip_corrupt=skip_corrupt)
    return apply(ds, metric_info(ds))
