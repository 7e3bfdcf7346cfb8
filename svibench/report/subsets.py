"""How far an evaluation subset's estimate was from the whole set (:mod:`svibench.evaluation_subset`).

A metric that a model estimates on a seeded subset at every checkpoint is measured on the whole set at the run's last
checkpoint too (``<metric>_whole``, declared ``tracked_by = <metric>``); at that checkpoint a run holds both, so the
subset's error is read from the runs themselves, never assumed.  A run whose ``_whole`` metric is recorded at every
checkpoint evaluated no subset (the two are equal) and is left out.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..results import metric_info
from .fmt import number
from .tables import Table, ok_runs, recorded_metrics

__all__ = ["subset_errors", "subset_table"]


def subset_errors(ds: xr.Dataset) -> pd.DataFrame:
    """One row per ok run (its index among the ok runs) and subset-estimated metric: problem, metric, the subset's
    value and the whole set's at the run's last checkpoint, and their absolute and relative difference."""
    ok = ok_runs(ds)
    info = metric_info(ds) if ok.sizes["run"] else {}
    recorded = set(recorded_metrics(ok)) if ok.sizes["run"] else set()
    last = ok["iteration"].notnull().sum("checkpoint").values - 1 if ok.sizes["run"] else np.array([], int)
    rows = []
    for whole in sorted(recorded):
        estimate = info[whole].tracked_by
        if not estimate or estimate not in recorded:
            continue
        values, estimates = ok[whole].values, ok[estimate].values
        for r, k in enumerate(last):
            if k < 1 or np.isfinite(values[r, :k]).any():  # every checkpoint has it: no subset
                continue
            a, b = float(estimates[r, k]), float(values[r, k])
            if np.isfinite(a) and np.isfinite(b):
                rows.append({"run": r, "problem": str(ok["problem"].values[r]), "metric": estimate, "subset": a, "whole": b,
                             "error": abs(a - b), "relative": abs(a - b) / max(abs(b), 1e-300)})
    return pd.DataFrame(rows, columns=["run", "problem", "metric", "subset", "whole", "error", "relative"])


def subset_table(ds: xr.Dataset) -> Table | None:
    """Per problem and metric estimated on a subset: the runs, and the median and largest error of the subset's
    value against the whole set's at the last checkpoint (absolute and relative); None when no run used a subset."""
    errors = subset_errors(ds)
    if errors.empty:
        return None
    data = errors.groupby(["problem", "metric"]).agg(
        runs=("error", "size"), median_error=("error", "median"), max_error=("error", "max"),
        median_relative=("relative", "median"), max_relative=("relative", "max"))
    rows = [[problem, metric, str(int(r.runs)), number(r.median_error), number(r.max_error),
             f"{100 * r.median_relative:.2g}%", f"{100 * r.max_relative:.2g}%"]
            for (problem, metric), r in data.iterrows()]
    return Table("Evaluation subsets: the estimate against the whole set",
                 ["problem", "metric", "runs", "median |error|", "max |error|", "median relative", "max relative"],
                 rows,
                 "These metrics are estimated at every checkpoint on one seeded subset of the evaluation data (the "
                 "same for every method and seed: the model's eval_* parameter), which costs a fraction of the whole "
                 "set; at each run's last checkpoint they are measured on the whole set too (metric_whole). The "
                 "columns give how far the subset's value was from the whole set's there, over the runs that "
                 "finished ok: the error of the trajectories and of any claim that reads the metric itself.",
                 data=data.reset_index())
