"""Paired comparisons' building blocks: pools, final values per run, which runs are unranked, the performance profile,
and whether a run had finished.

- **Pairing.** Runs with the same problem and seed saw the same data and
  start, so they are compared as pairs; the grid points of a ``[[problem]]``
  (e.g. its random splits) are pooled under the problem base each run records
  (``problem_base``, e.g. ``logreg/a1a``) unless ``[report] split_panels = true``.
- **Ranking** (:mod:`.rank`) leaves out runs whose model declares the ranked
  metric no fair ranking key on their data
  (:func:`svibench.results.rankable_runs`); :func:`unranked` names their pools.
- **Performance profile** (Dolan & Moré 2002, Math. Program. 91:201): over
  the instances (problem, seed), the fraction on which an algorithm reaches
  the target within τ × the fastest algorithm's CPU time on that instance.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..results import rankable_runs
from ..status import is_ok

__all__ = ["pools", "pairs", "unranked", "profile_ratios", "performance_profile", "TAUS"]

TAUS = (1.0, 2.0, 4.0, 10.0)


def pools(ds: xr.Dataset, split_panels: bool = False) -> np.ndarray:
    """Per run, the panel/pool it belongs to: its problem base (the ``[[problem]]`` before grid expansion),
    or its problem itself when split."""
    return ds["problem" if split_panels else "problem_base"].values.astype(str)


def pairs(ds: xr.Dataset, metric: str, split_panels: bool = False) -> pd.DataFrame:
    """Final value of ``metric`` per ok run, one row per run: run (index in ``ds``), pool, problem, seed, label, value.

    Rows with the same (problem, seed) form a pair group (the same data and start).
    """
    ok = np.flatnonzero(is_ok(ds["status"].values))
    pool = pools(ds, split_panels)
    rows = []
    for r in ok:
        values = ds[metric].values[r] if metric in ds else np.array([np.nan])
        finite = np.flatnonzero(np.isfinite(values))
        problem = str(ds["problem"].values[r])
        rows.append({"run": int(r), "pool": str(pool[r]), "problem": problem, "seed": int(ds["seed"].values[r]),
                     "label": str(ds["label"].values[r]), "value": float(values[finite[-1]]) if finite.size else np.nan})
    return pd.DataFrame(rows, columns=["run", "pool", "problem", "seed", "label", "value"])


def unranked(ds: xr.Dataset, metric: str, split_panels: bool = False) -> dict[str, list[str]]:
    """Pool → its problems with an ok run whose model declares ``metric`` no fair ranking key on its data (e.g.
    ``psnr_fit`` on a denoising problem: a fit to the noisy pixels): the runs :func:`.rank.ranking` leaves out."""
    ok = is_ok(ds["status"].values)
    reported = np.isfinite(ds[metric].values).any(axis=1) if metric in ds else np.zeros_like(ok)
    left_out = ok & reported & ~rankable_runs(ds, metric)
    out: dict[str, list[str]] = {}
    for pool, problem in sorted(set(zip(pools(ds, split_panels)[left_out], ds["problem"].values[left_out].astype(str)))):
        out.setdefault(str(pool), []).append(str(problem))
    return out


def profile_ratios(reach: pd.DataFrame) -> pd.DataFrame:
    """Performance ratios r = t / min_a t per instance (problem, seed) and algorithm (columns).

    ``reach`` has one row per run: problem, seed, label, time (NaN when the run
    never reached the target).  A run that never reached it has ratio inf, and
    an instance no algorithm solved counts against every algorithm (all inf).
    """
    times = reach.pivot_table(index=["problem", "seed"], columns="label", values="time", aggfunc="first", dropna=False)
    times = times.reindex(columns=sorted(reach["label"].unique()))
    return times.div(times.min(axis=1, skipna=True), axis=0).fillna(np.inf)


def performance_profile(ratios: pd.DataFrame, taus: tuple[float, ...] = TAUS) -> pd.DataFrame:
    """ρ_a(τ): the fraction of instances on which algorithm a is within τ × the fastest time
    (Dolan & Moré 2002).  One row per algorithm, one column per τ, and ``solved`` (τ → ∞)."""
    columns = {tau: (ratios <= tau * (1 + 1e-12)).mean(axis=0) for tau in taus}
    columns["solved"] = np.isfinite(ratios).mean(axis=0)
    return pd.DataFrame(columns, index=ratios.columns).rename_axis("label")
