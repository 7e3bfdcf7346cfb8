"""Final-metric tables computed from saved results (never from live runs); the text of
them (``mean ± sd``) is :mod:`svibench.report.fmt`'s, for the report and the console alike."""
from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .status import is_ok

#: Per-checkpoint variables that are not metrics: progress, CPU seconds (``time``) and wall seconds (the runner
#: records them beside every metric).
TRACKED = ("iteration", "epoch", "time", "wall_time")
#: The per-run coordinates :func:`final_values` keeps (``seed`` besides).
IDENTITY = ("problem", "problem_base", "label", "method", "algorithm", "status", "message")

__all__ = ["final_values", "final_table", "metric_names", "TRACKED"]


def metric_names(ds: xr.Dataset) -> list[str]:
    """The metric variables of a results Dataset (everything but the tracked iteration, epoch, time, wall_time)."""
    return [str(v) for v in ds.data_vars if v not in TRACKED]


def final_values(ds: xr.Dataset) -> pd.DataFrame:
    """One row per run: its identity (with the structured ``problem_base`` and ``method``) and the last recorded
    value of every tracked variable."""
    last = ds["iteration"].notnull().sum("checkpoint") - 1
    rows = []
    for r in range(ds.sizes["run"]):
        k = int(last[r])
        row = {name: str(ds[name].values[r]) for name in IDENTITY}
        row["seed"] = int(ds["seed"].values[r])
        for var in (*[v for v in TRACKED if v in ds], *metric_names(ds)):
            row[var] = float(ds[var].values[r, k]) if k >= 0 else np.nan
        rows.append(row)
    return pd.DataFrame(rows)


def final_table(ds: xr.Dataset) -> pd.DataFrame:
    """Mean and sd over seeds of the final values, per (problem, label)."""
    finals = final_values(ds)
    value_cols = ["time", *metric_names(ds)]
    grouped = finals.groupby(["problem", "label"], sort=True)
    table = grouped[value_cols].agg(["mean", "std"])
    table[("runs", "n")] = grouped.size()
    table[("runs", "ok")] = grouped["status"].apply(lambda s: int(is_ok(s).sum()))
    return table
