"""The report's tables, computed from saved results only.

Every table carries the numbers behind its text (``Table.data``) so tests and
users can check them against the xarray results directly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from ..peers import INSTALL
from ..status import is_ok
from ..results import metric_info, named, rankable_runs
from ..summary import final_table, final_values, metric_names
from .fmt import DASH, mean_sd, number
from ..claims.convergence import unconverged
from ..claims.evidence import Evidence
from ..settings import Target

__all__ = ["Table", "Prose", "final_metrics", "metrics_meaning", "time_to_target", "paper_comparison", "runs_not_ok",
           "skipped_pairs", "recorded_metrics", "ok_runs"]


@dataclass
class Table:
    """Text cells for rendering, ``bold`` cells (row, column), and the numbers behind them."""

    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    bold: set[tuple[int, int]] = field(default_factory=set)
    data: pd.DataFrame = field(default_factory=pd.DataFrame)

    def numeric_columns(self) -> set[int]:
        """Columns whose every non-empty cell reads as a number (right-aligned when rendered)."""
        return {j for j in range(len(self.columns))
                if self.rows and all(_numeric(row[j]) for row in self.rows if row[j] not in ("", DASH))}


def _numeric(text: str) -> bool:
    head = text.split(" ", 1)[0].lstrip("+-")
    try:
        float(head.rstrip("%"))
        return True
    except ValueError:
        return head.split("/")[0].isdigit()


def recorded_metrics(ds: xr.Dataset) -> list[str]:
    """Metrics with at least one recorded value."""
    return [m for m in metric_names(ds) if bool(np.isfinite(ds[m].values).any())]


def ok_runs(ds: xr.Dataset) -> xr.Dataset:
    """The runs that finished with status ``ok``."""
    return ds.isel(run=np.flatnonzero(is_ok(ds["status"].values)))


def _groups(ds: xr.Dataset) -> pd.MultiIndex:
    finals = final_values(ds)
    return pd.MultiIndex.from_frame(finals[["problem", "label"]].drop_duplicates().sort_values(["problem", "label"]))


def _bold_best(rows_by_problem: dict[str, list[int]], means: list[float], column: int, lower: bool) -> set[tuple[int, int]]:
    cells = set()
    for rows in rows_by_problem.values():
        values = [(means[r], r) for r in rows if np.isfinite(means[r])]
        if len(values) > 1:
            cells.add(((min if lower else max)(values)[1], column))
    return cells


def final_metrics(ds: xr.Dataset, shown: list[str] | None = None) -> Table:
    """Final value of each ``shown`` metric (default: every recorded one) per (problem, algorithm): mean ± sd over
    the seeds whose run is ok; the best mean per problem in bold, in the direction the model declares
    (:func:`svibench.results.metric_info`)."""
    index = _groups(ds)
    ok = ok_runs(ds)
    recorded = recorded_metrics(ds)
    metrics = [m for m in (shown if shown is not None else recorded) if m in recorded]
    hidden = [m for m in recorded if m not in metrics]
    table = final_table(ok).reindex(index) if ok.sizes["run"] else pd.DataFrame(index=index)
    counts = final_values(ds).groupby(["problem", "label"]).size().reindex(index)
    variables = ["time", *metrics]
    data = pd.DataFrame(index=index)
    for var in variables:
        for stat in ("mean", "std"):
            data[f"{var}_{stat}"] = table[(var, stat)] if (var, stat) in table else np.nan
    data["runs_ok"] = table[("runs", "ok")].fillna(0).astype(int) if ("runs", "ok") in table else 0
    data["runs"] = counts.astype(int)
    rows, by_problem = [], {}
    for i, (problem, label) in enumerate(index):
        by_problem.setdefault(problem, []).append(i)
        rec = data.loc[(problem, label)]
        rows.append([problem, label, *(mean_sd(rec[f"{v}_mean"], rec[f"{v}_std"]) for v in variables),
                     f"{int(rec['runs_ok'])}/{int(rec['runs'])}"])
    info = metric_info(ds)
    bold = set()
    for j, metric in enumerate(metrics):
        bold |= _bold_best(by_problem, list(data[f"{metric}_mean"]), 3 + j, info[metric].lower)
    arrows = ["↓" if info[m].lower else "↑" for m in metrics]
    return Table(
        "Final metrics",
        ["problem", "algorithm", "CPU time (s)", *(f"{m} {a}" for m, a in zip(metrics, arrows)), "runs ok"],
        rows,
        "Value at the last checkpoint, mean ± sd over the seeds whose run finished ok; time is the algorithm's "
        "CPU seconds (init and step; evaluation and warm-up excluded). ↑ higher is better, ↓ lower is better; the best mean per problem is in bold."
        + (f" Also recorded, not shown here: {', '.join(hidden)} (the study's [report] plot, or the models' primary "
           "metrics, choose what shows; `svibench report RESULTS -o DIR --metrics all` shows every one)." if hidden else ""),
        bold,
        data,
    )


def metrics_meaning(ds: xr.Dataset) -> Table:
    """What each recorded metric means, as its model declares it (:func:`svibench.results.metric_info`): which way is
    better, kind, unit, valid range, whether it is a fair ranking key, and its description."""
    info = metric_info(ds)
    rows, records = [], []
    for name in recorded_metrics(ds):
        m = info[name]
        fair = rankable_runs(ds, name)[np.isfinite(ds[name].values).any(axis=1)]
        rankable = "yes" if fair.all() else "no" if not fair.any() else "on some problems"
        rows.append([name, "↓ lower" if m.lower else "↑ higher", m.kind, m.unit or DASH,
                     f"[{m.low:g}, {m.high:g}]" if np.isfinite([m.low, m.high]).any() else DASH, rankable, m.description])
        records.append({**m.to_dict(), "rankable": rankable})
    return Table("What the metrics mean", ["metric", "better", "kind", "unit", "valid range", "fair ranking key",
                                           "description"], rows,
                 "As each model declares them (svibench.metrics), saved with every run. Objective: what the algorithms "
                 "optimise (drawn as suboptimality); task: what a user of the posterior cares about; diagnostic: a check "
                 "on the run. A metric that is no fair ranking key (e.g. a fit to noisy observations) is not ranked.",
                 data=pd.DataFrame(records))


def reach_records(ev: Evidence, target: Target) -> pd.DataFrame:
    """One row per run: problem, label, seed, threshold, reached, and the CPU time and epoch of the first checkpoint
    that reached ``target``.

    Read from the report's one :class:`svibench.claims.Evidence`, as the ranking and the verdicts read it: the
    reference is the best final value over the problem's healthy ok runs, and a run that is not ok never reaches
    the target (:mod:`svibench.health`: a run that blew up does not win a race it could not finish).
    """
    lower = ev.info[target.metric].lower
    records = []
    for problem in sorted(set(ev.runs["problem"])):
        best = ev.best_final(problem, target.metric)
        if target.kind != "value" and not np.isfinite(best):
            continue
        threshold = target.threshold(best, lower)
        for r in ev.runs.index[ev.runs["problem"] == problem]:
            ok = is_ok(ev.runs.at[r, "status"])
            at = {axis: ev.reach(int(r), target.metric, threshold, axis).high if ok else np.inf for axis in ("time", "epoch")}
            records.append({
                "problem": problem, "label": ev.runs.at[r, "label"], "seed": int(ev.runs.at[r, "seed"]),
                "threshold": threshold, "reached": bool(np.isfinite(at["time"])),
                "time": at["time"] if np.isfinite(at["time"]) else np.nan,
                "epoch": at["epoch"] if np.isfinite(at["epoch"]) else np.nan,
            })
    return pd.DataFrame(records, columns=["problem", "label", "seed", "threshold", "reached", "time", "epoch"])


def time_to_target(ev: Evidence, target: Target) -> Table | None:
    """Algorithm CPU time and epochs at the first checkpoint that reaches ``target``, per (problem, algorithm).

    Mean ± sd over the seeds that reached it (:func:`reach_records`); every seed of the group counts in the
    denominator.
    """
    if target.metric not in ev.ds:
        return None
    lower = ev.info[target.metric].lower
    per_run = reach_records(ev, target)
    if per_run.empty:
        return None
    grouped = per_run.groupby(["problem", "label"], sort=True)
    data = pd.DataFrame({
        "threshold": grouped["threshold"].first(),
        "reached": grouped["reached"].sum().astype(int),
        "runs": grouped.size(),
        "time_mean": grouped["time"].mean(), "time_std": grouped["time"].std(),
        "epoch_mean": grouped["epoch"].mean(), "epoch_std": grouped["epoch"].std(),
    })
    rows, by_problem = [], {}
    for i, ((problem, label), rec) in enumerate(data.iterrows()):
        by_problem.setdefault(problem, []).append(i)
        rows.append([problem, label, number(rec["threshold"], 6), mean_sd(rec["time_mean"], rec["time_std"]),
                     mean_sd(rec["epoch_mean"], rec["epoch_std"]), f"{int(rec['reached'])}/{int(rec['runs'])}"])
    bold = _bold_best(by_problem, list(data["time_mean"]), 3, lower=True)
    return Table(
        f"Time to target: {target.describe()}",
        ["problem", "algorithm", f"target {target.metric}", "CPU time (s)", "epochs", "seeds reached"],
        rows,
        f"First checkpoint at which {target.metric} {'≤' if lower else '≥'} the target "
        f"({'lower' if lower else 'higher'} is better); the best final value is taken over the problem's ok runs. "
        "Mean ± sd over the seeds that reached it (resolution: the checkpoint schedule). Fastest mean in bold.",
        bold,
        data,
    )


def paper_comparison(ds: xr.Dataset, paper: list[dict[str, Any]], verdicts: dict[str, str] | None = None,
                     tolerance: float = 1e-3, window: float = 0.1) -> Table | None:
    """Published numbers next to this run's final values (ok runs, mean ± sd over seeds), each with the
    verdict of the claim it belongs to; † marks values of runs still improving at the end of their budget."""
    if not paper:
        return None
    verdicts = verdicts or {}
    finals = final_values(ds)
    ok = finals[is_ok(finals["status"])]
    rows, records, flagged = [], [], 0
    info = metric_info(ds)
    flags = {m: unconverged(ds, m, tolerance, window, info) for m in {row["metric"] for row in paper}}
    for row in paper:
        problem, wanted, metric = row["problem"], row["algorithm"], row["metric"]
        published = float(row["value"])
        paper_text = mean_sd(published, float(row.get("sd", np.nan)))
        claim = f"{row['claim']}: {verdicts.get(row['claim'], DASH)}" if row.get("claim") else ""
        # a problem base ("logreg/australian") pools its grid points, a method ("MF-SVI") its variants
        at = pd.Series(named(finals["problem"], finals["problem_base"], problem), finals.index)[ok.index]
        runs = pd.Series(named(finals["label"], finals["method"], wanted), finals.index)[ok.index]
        labels = sorted(ok.loc[at & runs, "label"].unique())
        if not labels or metric not in ok:
            why = "metric not recorded" if labels else "not in these results"
            rows.append([problem, wanted, metric, paper_text, why, DASH, DASH, claim, str(row.get("note", ""))])
            records.append({"problem": problem, "algorithm": wanted, "label": "", "metric": metric,
                            "paper": published, "mean": np.nan, "std": np.nan, "difference": np.nan})
            continue
        for label in labels:
            values = ok.loc[at & (ok["label"] == label), metric]
            still = int(flags[metric][values.index].sum()) if metric in ok else 0
            flagged += still
            mean, sd = float(values.mean()), float(values.std())
            low, high = float(values.min()), float(values.max())
            diff = mean - published
            rel = f"{100 * diff / abs(published):+.2g}%" if published != 0 and np.isfinite(diff) else DASH
            spread = f"; range {low:.4g} to {high:.4g}" if values.notna().sum() > 1 else ""
            mark = f" † {still}/{len(values)}" if still else ""
            rows.append([problem, label, metric, paper_text, f"{mean_sd(mean, sd)} (n={values.notna().sum()}{spread}){mark}",
                         number(diff, 3) if not np.isfinite(diff) else f"{diff:+.3g}", rel, claim, str(row.get("note", ""))])
            records.append({"problem": problem, "algorithm": wanted, "label": label, "metric": metric,
                            "paper": published, "mean": mean, "std": sd, "min": low, "max": high, "difference": diff,
                            "unconverged": still})
    return Table(
        "Paper vs this run",
        ["problem", "algorithm", "metric", "paper", "this run", "difference", "relative", "claim: verdict", "note"],
        rows,
        "This run: final value, mean ± sd over ok seeds (n) and its range; a paper problem pools our problems "
        "that differ only in a grid parameter (e.g. random splits). Difference = this run − paper. "
        "Scales may differ from the paper's: read the study's scale in the header; the claim's verdict says "
        "whether the comparison is meaningful."
        + (f" † k/n: k of the n runs were unconverged, still moving by more than {tolerance:g} (relative) "
           f"and their seed-to-seed noise over their last {window:.0%} of checkpoints: the budget ended before they did, so their difference is not final."
           if flagged else ""),
        data=pd.DataFrame(records),
    )


#: Why a run of the study has no readable result, by status.
MISSING_WHY = {
    "missing": "in the study but not in the results (interrupted sweep?): run the study again to resume",
    "corrupt": "its run file is unreadable (written when the process died?): run the study again, which remakes it",
}


def runs_not_ok(ds: xr.Dataset, manifest: dict[str, Any]) -> Table:
    """Failed, diverged and timed-out runs (and runs of the study missing from disk), with their messages."""
    finals = final_values(ds)
    bad = finals[finals["status"] != "ok"]
    present = set(map(str, ds["run_id"].values))
    missing = [dict(info, run_id=rid) for rid, info in manifest.get("runs", {}).items() if rid not in present]
    records = [
        {"problem": p, "label": lb, "status": s, "message": m, "seeds": sorted(g["seed"]), "count": len(g)}
        for (p, lb, s, m), g in bad.groupby(["problem", "label", "status", "message"], sort=True)
    ]
    unreadable = {name.strip()[:-3] for name in ds.attrs.get("corrupt_files", "").split(",") if name.strip()}
    for run in missing:
        run["status"] = "corrupt" if run["run_id"] in unreadable else "missing"
    for (p, lb, s), g in pd.DataFrame(missing or [], columns=["problem", "label", "seed", "status"]).groupby(
            ["problem", "label", "status"]):
        records.append({"problem": p, "label": lb, "status": s, "seeds": sorted(g["seed"]), "count": len(g),
                        "message": MISSING_WHY[s]})
    data = pd.DataFrame(records, columns=["problem", "label", "status", "message", "seeds", "count"])
    counts = data.groupby("status")["count"].sum()
    total = ds.sizes["run"] + len(missing)
    note = (f"{int(counts.sum())} of {total} runs not ok: " + ", ".join(f"{n} {s}" for s, n in counts.items())
            if len(data) else f"All {total} runs finished ok.")
    rows = [[r["problem"], r["label"], r["status"], f"{r['count']} (seeds {', '.join(map(str, r['seeds']))})", r["message"]]
            for r in records]
    return Table("Runs not ok", ["problem", "algorithm", "status", "runs", "message"], rows, note, data=data)


def skipped_pairs(manifest: dict[str, Any]) -> Table | None:
    """Algorithm–problem pairs of the study that were skipped, with the reason: incompatible by design, or a peer
    whose library is not installed (its reason gives the install command, :data:`svibench.peers.INSTALL`)."""
    skipped = manifest.get("skipped", [])
    if not skipped:
        return None
    rows = [[s.get("problem", ""), s.get("algorithm", ""), s.get("reason", "")] for s in skipped]
    note = "Pairs the registry marks incompatible: not run, by design."
    if any(INSTALL in s.get("reason", "") for s in skipped):
        note = ("Not run: pairs the registry marks incompatible (by design), and peers whose library is not installed "
                "(install it, as the reason says, and run the study again to add them).")
    return Table("Skipped pairs", ["problem", "algorithm", "reason"], rows, note, data=pd.DataFrame(skipped))


@dataclass
class Details:
    """A collapsed list under a one-line summary (every unit of a verdict's evidence)."""

    summary: str
    lines: list[str] = field(default_factory=list)


@dataclass
class Prose:
    """Paragraphs under headings: a claim's note and its evidence, rendered as text rather than a table; a paragraph
    may be a :class:`Details`."""

    title: str
    items: list[tuple[str, list[str]]] = field(default_factory=list)
