"""The first screen's answer: which algorithm is best here, and how fast.

Per pooled problem (random splits pooled unless ``split_panels``), algorithms
are ranked by their **CPU time to the study's target** (median over the
instances (problem, seed); a run that never reached it, or is not ok, counts as
never), then by their median final value.  Per instance:

- *first*: the run's reach interval (previous checkpoint, checkpoint that
  reached it] ends before every other algorithm's starts: first at the
  checkpoints' resolution;
- *tied first*: it overlaps the earliest one's: the checkpoints cannot tell
  them apart.

Final values are compared with the leader's paired by instance; a median paired
difference within the target's tolerance (e.g. 0.1% of the leader's value) is
a **tie**, said as one.  Each row shows how many runs were ok, diverged or
failed, and how many ended unconverged (†: still moving over their last 10% of
checkpoints), so an unconverged leader is seen to be one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..results import rankable_runs
from ..status import is_ok
from ..claims.evidence import Evidence, Reach
from ..settings import Target

__all__ = ["ranking", "headline", "HEADLINE_METHODS", "RANK_COLUMNS", "NEVER"]

NEVER = Reach(0.0, math.inf)
RANK_COLUMNS = ["pool", "label", "method", "time", "first", "tied", "instances", "final", "diff", "tie", "ok",
                "diverged", "other", "unconverged", "leader"]


@dataclass(frozen=True)
class _Pool:
    name: str
    problems: list[str]


def _reaches(ev: Evidence, problems: list[str], target: Target) -> dict[tuple[str, int], dict[str, Reach]]:
    """Per instance (problem, seed): each label's reach interval (:data:`NEVER` when it is not ok or not reached)."""
    lower = ev.info[target.metric].lower
    out: dict[tuple[str, int], dict[str, Reach]] = {}
    for problem in problems:
        threshold = target.threshold(ev.best_final(problem, target.metric), lower)
        for r in ev.runs.index[ev.runs["problem"] == problem]:
            rec = ev.runs.loc[r]
            reach = ev.reach(int(r), target.metric, threshold, "time") if is_ok(rec["status"]) else NEVER
            out.setdefault((problem, int(rec["seed"])), {})[rec["label"]] = reach
    return out


def _firsts(reaches: dict[tuple[str, int], dict[str, Reach]]) -> tuple[dict[str, int], dict[str, int]]:
    """Per label: on how many instances it was strictly first, and on how many tied for first."""
    first: dict[str, int] = {}
    tied: dict[str, int] = {}
    for by_label in reaches.values():
        earliest = min(r.high for r in by_label.values())
        if not math.isfinite(earliest):
            continue
        contenders = [lb for lb, r in by_label.items() if r.high == earliest or (r.reached and r.low < earliest)]
        bucket = first if len(contenders) == 1 else tied
        for lb in contenders:
            bucket[lb] = bucket.get(lb, 0) + 1
    return first, tied


def _finals(ev: Evidence, problems: list[str], metric: str) -> pd.DataFrame:
    """One row per ok run on ``problems``: problem, seed, label, final value, unconverged."""
    moving = ev.unconverged(metric)
    rows = [{"problem": rec.problem, "seed": rec.seed, "label": rec.label, "final": ev.value_at(r, metric, "final"),
             "unconverged": bool(moving[r])}
            for r, rec in zip(ev.runs.index, ev.runs.itertuples()) if rec.problem in problems and is_ok(rec.status)]
    return pd.DataFrame(rows, columns=["problem", "seed", "label", "final", "unconverged"])


def _tie(target: Target, leader_value: float) -> float:
    """The absolute tolerance of a tie on the target's metric near ``leader_value``."""
    if target.kind == "relative":
        return target.amount * abs(leader_value)
    return target.amount if target.kind == "absolute" else 0.0


def _pool_rows(ev: Evidence, pool: _Pool, target: Target) -> list[dict]:
    reaches = _reaches(ev, pool.problems, target)
    first, tied = _firsts(reaches)
    finals = _finals(ev, pool.problems, target.metric)
    signed = ev.info[target.metric].signed
    runs = ev.runs[ev.runs["problem"].isin(pool.problems)]
    rows = []
    for label, group in runs.groupby("label"):
        times = [by_label.get(label, NEVER).high for by_label in reaches.values() if label in by_label]
        mine = finals[finals["label"] == label]
        rows.append({"pool": pool.name, "label": label, "method": group["method"].iloc[0],
                     "time": float(np.median(times)) if times else math.inf, "first": first.get(label, 0),
                     "tied": tied.get(label, 0), "instances": len(times),
                     "final": float(mine["final"].median()) if len(mine) else math.nan,
                     "ok": int(is_ok(group["status"]).sum()), "diverged": int((group["status"] == "diverged").sum()),
                     "other": int((~group["status"].isin(["ok", "diverged"])).sum()),
                     "unconverged": int(mine["unconverged"].sum())})
    rows.sort(key=lambda r: (r["time"], -signed(r["final"]) if math.isfinite(r["final"]) else math.inf, r["label"]))
    _against_leader(rows, finals, target)
    return rows


def _against_leader(rows: list[dict], finals: pd.DataFrame, target: Target) -> None:
    """Each row's median paired final difference to the leader's (the first row), and whether it is a tie."""
    leader = rows[0]["label"]
    lead = finals[finals["label"] == leader].set_index(["problem", "seed"])["final"]
    for row in rows:
        mine = finals[finals["label"] == row["label"]].set_index(["problem", "seed"])["final"]
        diff = (mine - lead.reindex(mine.index)).dropna()
        row["diff"] = float(diff.median()) if len(diff) else math.nan
        row["tie"] = bool(len(diff)) and abs(row["diff"]) <= _tie(target, rows[0]["final"])
        row["leader"] = leader


def ranking(ev: Evidence, target: Target, split_panels: bool = False) -> pd.DataFrame:
    """The ranking of every pool (see the module docstring), leader first; columns :data:`RANK_COLUMNS`.  Problems
    whose model declares the target's metric no fair ranking key (:func:`svibench.results.rankable_runs`) are left
    out (:func:`.compare.unranked` names them)."""
    if target.metric not in ev.info or target.metric not in ev.ds:
        return pd.DataFrame(columns=RANK_COLUMNS)
    key = "problem" if split_panels else "problem_base"
    fair = ev.runs[rankable_runs(ev.ds, target.metric)]
    pools = [_Pool(name, sorted(set(group["problem"]))) for name, group in fair.groupby(key, sort=True)]
    rows = [row for pool in pools for row in _pool_rows(ev, pool, target)]
    return pd.DataFrame(rows, columns=RANK_COLUMNS)


#: Methods per panel of the headline figure: the best-ranked ones (every variant of every method is in section
#: Figures); more lines than this could not be told apart at the size a screen shows the figure.
HEADLINE_METHODS = 6


def headline(rank: pd.DataFrame, limit: int = HEADLINE_METHODS) -> dict[str, dict[str, str]]:
    """Per pool, the best variant of each of its ``limit`` best-ranked methods (its first row in the ranking):
    label → method, best first, for the headline figure (the full grid stays in the Figures section)."""
    out: dict[str, dict[str, str]] = {}
    for rec in rank.itertuples():
        chosen = out.setdefault(rec.pool, {})
        if rec.method not in chosen.values() and len(chosen) < limit:
            chosen[rec.label] = rec.method
    return out
