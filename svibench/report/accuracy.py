"""The report's posterior-accuracy section: how close each algorithm's q is to the problem's reference posterior,
beside its ELBO (issue 30; the metrics are :mod:`svibench.reference.accuracy`'s, recorded at every checkpoint of a
run whose problem has a reference).

Two tables and a figure, from the results only:

* the final accuracy metrics per (problem, algorithm), median over the ok runs, the best per problem in bold;
* per problem, which method's q is closest to the reference (smallest median standardised mean error,
  :data:`CLOSEST_BY`) and which reaches the best ELBO, and whether they are the same method;
* "ELBO against posterior accuracy": one panel per problem, each run's path through its checkpoints from
  (ELBO suboptimality, mean error) at the start to a dot at its end.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr
from matplotlib.figure import Figure

from ..metrics import Metric
from .compare import pairs
from .figures import ReportFigure, _compact_png, _grid_figure, _legend, best_known, suboptimality
from .fmt import DASH, number
from .tables import Table

__all__ = ["accuracy_metrics", "accuracy_table", "closest_table", "accuracy_figure", "references_table", "CLOSEST_BY",
           "ELBO"]

#: The metric "closest to the reference" is judged by: RMS over the latent coordinates of |E_q − E_ref| / sd_ref.
CLOSEST_BY = "ref_mean_error"
#: The objective the accuracy is set beside.
ELBO = "elbo"
#: Differences in :data:`CLOSEST_BY` up to this are ties: the references' Monte Carlo error of a standardised mean
#: is up to about 0.02 sds per coordinate (their sidecars' ``mcse.mean_over_sd``), so an exact q scores ~0.01.
MEAN_ERROR_TIE = 0.05
#: Relative differences in the ELBO up to this are ties (the studies' targets are 1e-3 or 1e-2).
ELBO_TIE = 1e-3
#: ELBO suboptimality below this is drawn at it (at the optimum, for the figure's purpose).
X_FLOOR = 1e-6


def accuracy_metrics(info: dict[str, Metric]) -> list[str]:
    """The recorded metrics of kind ``accuracy``, :data:`CLOSEST_BY` first."""
    names = [m for m, i in info.items() if i.kind == "accuracy"]
    return sorted(names, key=lambda m: (m != CLOSEST_BY, names.index(m)))


def _medians(ok: xr.Dataset, metrics: list[str]) -> pd.DataFrame:
    """Median final value of each metric per (problem, label), over ok runs; only problems with a reference."""
    frames = [pairs(ok, m, split_panels=True).set_index(["run", "problem", "label"])["value"].rename(m) for m in metrics]
    finals = pd.concat(frames, axis=1).reset_index()
    finals = finals[finals["problem"].isin(finals.loc[finals[metrics[0]].notna(), "problem"])]
    return finals.groupby(["problem", "label"], sort=True)[metrics].median()


def accuracy_table(ok: xr.Dataset, info: dict[str, Metric]) -> Table | None:
    """Final accuracy metrics and the ELBO per (problem, algorithm), median over ok runs; the best per problem in bold."""
    metrics = accuracy_metrics(info)
    if not metrics or not ok.sizes["run"]:
        return None
    shown = [*([ELBO] if ELBO in info else []), *metrics]
    data = _medians(ok, [metrics[0], *[m for m in shown if m != metrics[0]]])[shown]
    if data.empty:
        return None
    rows, bold = [], set()
    for (problem, label), rec in data.iterrows():
        rows.append([problem, label, *(number(v) if np.isfinite(v) else DASH for v in rec)])
    for j, metric in enumerate(shown):
        lower, column = info[metric].lower, data[metric]
        for problem in data.index.get_level_values("problem").unique():
            values = column.loc[problem].dropna()
            if info[metric].rankable and len(values) > 1:
                best = values.idxmin() if lower else values.idxmax()
                bold.add((list(data.index).index((problem, best)), 2 + j))
    arrows = {m: ("↓" if info[m].lower else "↑") if info[m].rankable else "(signed)" for m in shown}
    return Table("Posterior accuracy against the reference", ["problem", "algorithm", *(f"{m} {arrows[m]}" for m in shown)],
                 rows, "Final values, median over the ok runs of each algorithm, on the problems that have a reference "
                 "posterior (svibench reference). " + "; ".join(f"{m}: {info[m].description}" for m in metrics)
                 + ". Best per problem in bold; a signed metric is not ranked.",
                 bold, data)


def _leaders(values: pd.Series, lower: bool, tie: float) -> list[str]:
    """Every label within ``tie`` of the best value (a tie is never a win: all of them lead)."""
    values = values.dropna()
    if values.empty:
        return []
    best = values.min() if lower else values.max()
    return sorted(label for label, v in values.items() if abs(v - best) <= tie)


def best_elbo(values: pd.Series) -> list[str]:
    """The labels whose ELBO is within :data:`ELBO_TIE` of the best, relative to the best (not to the worst)."""
    top = values.max()
    return _leaders(values, False, ELBO_TIE * abs(top) if np.isfinite(top) else 0.0)


def closest_table(ok: xr.Dataset, info: dict[str, Metric]) -> Table | None:
    """Per problem with a reference: the methods whose q is closest to it (:data:`CLOSEST_BY`, ties within
    :data:`MEAN_ERROR_TIE`), those with the best ELBO (ties within :data:`ELBO_TIE` relative), and whether the two
    sets share a method (— : no method recorded an ELBO, e.g. BPFA's sampled locals and its sampler)."""
    if CLOSEST_BY not in info or not ok.sizes["run"]:
        return None
    has_elbo = ELBO in info
    data = _medians(ok, [CLOSEST_BY, *([ELBO] if has_elbo else [])])
    rows, records = [], []
    for problem in data.index.get_level_values("problem").unique():
        sub = data.loc[problem]
        closest = _leaders(sub[CLOSEST_BY], True, MEAN_ERROR_TIE)
        best = best_elbo(sub[ELBO]) if has_elbo else []
        agree = bool(set(closest) & set(best))
        rows.append([problem, ", ".join(closest), number(sub[CLOSEST_BY].min()), ", ".join(best) or DASH,
                     number(sub[ELBO].max()) if best else DASH, ("yes" if agree else "no") if best else DASH])
        records.append({"problem": problem, "closest": closest, "best_elbo": best, "agree": agree})
    return Table("Closest to the reference, and the ELBO's winners",
                 ["problem", "closest q", CLOSEST_BY, "best ELBO", "best elbo", "a method in both"],
                 rows, f"Closest: every method whose median final {CLOSEST_BY} (RMS of the mean's error in reference "
                 f"standard deviations) is within {MEAN_ERROR_TIE:g} of the smallest, about the references' own Monte "
                 f"Carlo error (an exact q scores ~0.01); best ELBO: every method whose median final elbo is within "
                 f"{ELBO_TIE:g} (relative) of the largest. Ties are listed, never broken.",
                 data=pd.DataFrame(records))


def references_table(ds: xr.Dataset) -> Table | None:
    """Per problem, the reference its runs were scored against (and whether it passed its diagnostics), or the
    command that computes one: what each run recorded (``reference``, :mod:`svibench.reference.attach`)."""
    if "reference" not in ds.coords:
        return None
    runs = pd.DataFrame({"problem": ds["problem"].values.astype(str), "reference": ds["reference"].values.astype(str),
                         "share": _accuracy_share(ds)})
    runs = runs[runs["reference"] != ""]
    if runs.empty:
        return None
    notes = runs.drop_duplicates("problem").set_index("problem")[["reference"]].sort_index()
    notes["share"] = runs.groupby("problem")["share"].median()
    rows = [[p, r, DASH if np.isnan(s) else f"{s:.1%}"] for p, (r, s) in notes.iterrows()]
    return Table("Reference posteriors", ["problem", "reference", "scoring's share of wall time"], rows,
                 "The reference each problem's runs were scored against, as the runs recorded it; one that failed the "
                 "diagnostics floor (split-R̂ < 1.01, bulk and tail ESS ≥ 400) was stored only with --force and says so. "
                 "Scoring's share: the wall time spent scoring q against the reference at the checkpoints (off the "
                 "algorithm's clock) over the run's wall time, median over the problem's runs (— : runs recorded "
                 "before it was timed).",
                 data=notes.reset_index())


def _accuracy_share(ds: xr.Dataset) -> np.ndarray:
    """Per run, ``accuracy_seconds / wall_seconds`` (NaN where a run did not record them)."""
    if "accuracy_seconds" not in ds.coords or "wall_seconds" not in ds.coords:
        return np.full(ds.sizes["run"], np.nan)
    return ds["accuracy_seconds"].values.astype(float) / ds["wall_seconds"].values.astype(float)


def accuracy_figure(ok: xr.Dataset, info: dict[str, Metric], colours: dict, *, dpi: int = 100) -> ReportFigure | None:
    """ELBO suboptimality against :data:`CLOSEST_BY`, every run's checkpoints as a path, one panel per problem."""
    if CLOSEST_BY not in info or ELBO not in info or not ok.sizes["run"]:
        return None
    has = np.isfinite(ok[CLOSEST_BY].values).any(axis=1)
    ok = ok.isel(run=np.flatnonzero(has))
    if not ok.sizes["run"]:
        return None
    sub = suboptimality(ok, ELBO, best_known(ok, ELBO, info[ELBO].lower, {}))
    problems = sorted(set(ok["problem"].values.astype(str)))
    fig, axes = _grid_figure(len(problems))
    used: set[str] = set()
    for ax, problem in zip(axes, problems):
        for r in np.flatnonzero(ok["problem"].values.astype(str) == problem):
            x, y = np.maximum(sub[ELBO].values[r], X_FLOOR), ok[CLOSEST_BY].values[r]
            keep = np.isfinite(x) & np.isfinite(y) & (y > 0)
            if not keep.any():
                continue
            label = str(ok["label"].values[r])
            used.add(label)
            ax.plot(x[keep], y[keep], color=colours[label], alpha=0.5, linewidth=1)
            ax.plot(x[keep][-1], y[keep][-1], "o", color=colours[label], markersize=6)
        ax.set(xscale="log", yscale="log", title=problem, xlabel="|f − f*| / |f*| (elbo)", ylabel=CLOSEST_BY)
        ax.title.set_fontsize(10)
        ax.grid(True, alpha=0.3)
    _legend(fig, colours, used)
    return ReportFigure("elbo-vs-accuracy", "ELBO against posterior accuracy",
                        f"Each ok run's checkpoints as a path, its last as a dot: x the ELBO's suboptimality (f*: the best "
                        f"ELBO any run reached on the instance; below {X_FLOOR:g} drawn at {X_FLOOR:g}), y {CLOSEST_BY}, the RMS error of q's mean in reference "
                        "standard deviations. Bottom left is best on both; a method far right yet low is accurate "
                        "despite its ELBO.", _compact_png(fig, dpi).getvalue())
