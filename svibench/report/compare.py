"""Paired comparisons: which algorithm wins, by how much, how fast, and whether it had finished.

- **Pairing.** Runs with the same problem and seed saw the same data and
  start, so they are compared as pairs; a problem that differs from others
  only in a grid parameter (e.g. ``logreg/a1a (split=3)``) is pooled under its
  base name (``logreg/a1a``) unless ``[report] split_panels = true``.
- **Ranking.** Per pooled problem: how many pairs each algorithm wins (best
  final value of the ranked metric among the algorithms run on that pair),
  and its median paired difference to the leader.
- **Performance profile** (Dolan & Moré 2002, Math. Program. 91:201): over
  the instances (problem, seed), the fraction on which an algorithm reaches
  the target within τ × the fastest algorithm's CPU time on that instance.
- **Unconverged.** A run whose metric still moved by more than the
  tolerance (relative) over its last 10% of checkpoints.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from .fmt import DASH, number
from .settings import ReportSettings

__all__ = ["TIE", "summary_line", "pool_name", "pairs", "ranking", "profile_ratios", "performance_profile", "ranking_rows", "unconverged", "TAUS", "LAST_FRACTION"]

TAUS = (1.0, 2.0, 4.0, 10.0)
LAST_FRACTION = 0.1
#: Final values within this fraction of the best (relative) tie for the win: two methods at the same optimum
#: differ only by rounding.
TIE = 1e-6


def pool_name(problem: str, split_panels: bool = False) -> str:
    """The panel/pool a problem belongs to: its base name without the grid suffix, unless split."""
    return problem if split_panels else problem.split(" (", 1)[0]


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


def pairs(ds: xr.Dataset, metric: str, split_panels: bool = False) -> pd.DataFrame:
    """Final value of ``metric`` per ok run, one row per run: run (index in ``ds``), pool, problem, seed, label, value.

    Rows with the same (problem, seed) form a pair group (the same data and start).
    """
    ok = np.flatnonzero(ds["status"].values == "ok")
    rows = []
    for r in ok:
        values = ds[metric].values[r] if metric in ds else np.array([np.nan])
        finite = np.flatnonzero(np.isfinite(values))
        problem = str(ds["problem"].values[r])
        rows.append({"run": int(r), "pool": pool_name(problem, split_panels), "problem": problem, "seed": int(ds["seed"].values[r]),
                     "label": str(ds["label"].values[r]), "value": float(values[finite[-1]]) if finite.size else np.nan})
    return pd.DataFrame(rows, columns=["run", "pool", "problem", "seed", "label", "value"])


def ranking(ds: xr.Dataset, metric: str, settings: ReportSettings) -> pd.DataFrame:
    """Per pool and algorithm: wins over the pairs, the median final value and the median paired
    difference to the pool's leader (the algorithm with most wins; ties: better median).

    Columns: pool, label, wins, median, median_diff, unconverged (runs), runs, leader; sorted by
    pool, then wins (desc), then median (best first).
    """
    lower = settings.lower_is_better(metric)
    df = pairs(ds, metric, settings.split_panels).dropna(subset=["value"])
    df["unconverged"] = unconverged(ds, metric, settings.converged_tolerance)[df["run"].to_numpy(dtype=int)]
    out = []
    for pool, group in df.groupby("pool", sort=True):
        signed = group.assign(score=-group["value"] if lower else group["value"])
        top = signed.groupby(["problem", "seed"])["score"].transform("max")
        wins = signed.loc[signed["score"] >= top - TIE * top.abs(), "label"].value_counts()
        stats = signed.groupby("label").agg(median=("value", "median"), runs=("value", "size"),
                                            score=("score", "median"), unconverged=("unconverged", "sum"))
        stats["wins"] = wins.reindex(stats.index).fillna(0).astype(int)
        stats = stats.sort_values(["wins", "score"], ascending=False)
        leader = stats.index[0]
        lead = signed[signed["label"] == leader].set_index(["problem", "seed"])["value"]
        for label, rec in stats.iterrows():
            mine = signed[signed["label"] == label].set_index(["problem", "seed"])["value"]
            diff = (mine - lead.reindex(mine.index)).dropna()
            out.append({"pool": pool, "label": label, "wins": int(rec["wins"]),
                        "median": float(rec["median"]), "median_diff": float(diff.median()) if len(diff) else np.nan,
                        "unconverged": int(rec["unconverged"]), "runs": int(rec["runs"]), "leader": leader})
    return pd.DataFrame(out)


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


def summary_line(group: pd.DataFrame, top: int | None = None) -> str:
    """One pool's ranking as one line, best first: ``A 3/5 › B 2/5 (Δ +0.1) › C 0/5 (Δ +2, † 4/5)``.

    With ``top``, only the first ``top`` algorithms, then ``› … k more`` (the first screen of a report
    must hold every problem's line; the detailed ranking lists the rest).
    """
    parts = []
    for rec in group.itertuples():
        extra = [] if rec.label == rec.leader or np.isnan(rec.median_diff) else [_delta(rec.median_diff, rec.median)]
        extra += [f"† {rec.unconverged}/{rec.runs}"] if rec.unconverged else []
        parts.append(f"{rec.label} {rec.wins}/{rec.runs}" + (f" ({', '.join(extra)})" if extra else ""))
    if top is not None and len(parts) > top:
        parts = parts[:top] + [f"… {len(parts) - top} more"]
    return " › ".join(parts)


def _delta(diff: float, value: float) -> str:
    """A paired difference as text; ``Δ ≈ 0`` within the tie tolerance."""
    return "Δ ≈ 0" if abs(diff) <= TIE * abs(value) else f"Δ {diff:+.3g}"


def ranking_rows(rank: pd.DataFrame, metric: str, lower: bool) -> list[list[str]]:
    """Table cells of :func:`ranking`."""
    rows = []
    for _, rec in rank.iterrows():
        diff = (DASH if rec["label"] == rec["leader"] or np.isnan(rec["median_diff"])
                else _delta(rec["median_diff"], rec["median"]).removeprefix("Δ "))
        flag = f"{rec['unconverged']}/{rec['runs']}" if rec["unconverged"] else ""
        rows.append([rec["pool"], rec["label"], f"{rec['wins']}/{rec['runs']}", number(rec["median"], 5), diff, flag])
    return rows
