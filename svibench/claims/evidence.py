"""What a verdict may look at: the runs on disk, judged by the one health policy, and the runs the study planned.

Runs are selected by their structured identity (``method``, ``label``,
``problem_base``, ``problem``, ``seed`` coordinates of the results), never by
parsing names.  A *unit* is one (problem, seed): the same data and the same
start for every algorithm, so the algorithms' values on a unit are paired.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd
import xarray as xr

from .. import health
from ..metrics import DERIVED, Metric
from ..status import is_ok
from .schema import Claim
from .convergence import unconverged
from ..settings import TIMING_NOISE, Target

__all__ = ["Evidence", "Reach", "DEFAULT_TIE", "AXIS_VARIABLE", "JUDGED"]

#: Relative tolerance under which two values tie when neither the claim nor the study's target gives one.
DEFAULT_TIE = 1e-3
#: The results variable a claim's axis reads: CPU seconds, data passes, or (a [[paper]] row's ``iteration``) steps.
AXIS_VARIABLE = {"time": "time", "epoch": "epoch", "iteration": "iteration"}
#: The statuses a verdict judges: a run that ended ok, and one that diverged (a result about its method, which fails
#: the units it is in); any other status (not run, crashed, timed out) is missing data.
JUDGED = ("ok", "diverged")



@dataclass(frozen=True)
class Reach:
    """When a run first reached a target on an axis: somewhere in (``low``, ``high``]; ``high`` is inf when it never
    did within its budget, and ``low`` is then the budget it spent."""

    low: float
    high: float

    @property
    def reached(self) -> bool:
        return math.isfinite(self.high)


@dataclass
class Evidence:
    """The results a claim is judged on.

    Parameters
    ----------
    ds : xarray.Dataset
        Every run on disk (any status), as :func:`svibench.results.open_results` gives them.
    info : mapping
        Metric metadata (direction, kind, valid range) by name.
    planned : list of dict
        The study's runs (the manifest's ``runs`` values: problem, problem_base, method, label, seed, status),
        so that a run that never reached the disk still counts as missing.
    paper : list of dict
        The study's ``[[paper]]`` rows.
    targets : tuple of Target
        The study's ``[report]`` targets (a faster claim's default, and the default tie tolerance).
    converged_tolerance, converged_window : float
        The convergence rule's tolerance and window (:func:`svibench.claims.convergence.unconverged`).
    authors : mapping
        Problem name → the trajectories of the paper's own code on it (:mod:`svibench.authors_code`), for the
        ``digits`` rule of value claims.
    timing_noise : float
        The factor by which two makings of one run can differ in CPU time (``[report] timing_noise``, default
        :data:`svibench.settings.TIMING_NOISE`): a faster or as-fast unit on CPU time that a difference this large
        could flip is undecided.
    """

    ds: xr.Dataset
    info: Mapping[str, Metric]
    planned: list[dict[str, Any]] = field(default_factory=list)
    paper: list[dict[str, Any]] = field(default_factory=list)
    targets: tuple[Target, ...] = ()
    converged_tolerance: float = 1e-3
    converged_window: float = 0.1
    authors: Mapping[str, Any] = field(default_factory=dict)
    timing_noise: float = TIMING_NOISE

    def __post_init__(self) -> None:
        self.info = {**DERIVED, **self.info}
        ds = self.ds
        self.status = health.statuses(ds, self.info)
        self.healthy = health.healthy_until(ds, self.info)
        self.runs = pd.DataFrame({name: ds[name].values.astype(str) for name in
                                  ("problem", "problem_base", "method", "label")})
        self.runs["seed"] = ds["seed"].values.astype(int)
        self.runs["status"] = self.status
        variants = ds["variant"].values if "variant" in ds.coords else [""] * ds.sizes["run"]
        self.runs["variant"] = [json.loads(v or "{}") for v in variants]
        self._unconverged: dict[str, np.ndarray] = {}
        if not self.planned:
            self.planned = self.runs.drop(columns="variant").to_dict("records")

    # -- selection
    def labels(self, claim: Claim, name: str) -> list[str]:
        """The run labels ``name`` selects: the claim's declared variants of a method, else all its variants, or
        the one label ``name`` is."""
        if name in claim.variants:
            return list(claim.variants[name])
        return self.labels_of(name)

    def labels_of(self, name: str) -> list[str]:
        """Every variant (run label) of the method ``name``, or the one label ``name`` is."""
        of_method = sorted(set(self.runs.loc[self.runs["method"] == name, "label"]))
        return of_method or [name]

    def pools(self, claim: Claim) -> dict[str, list[str]]:
        """The claim's problems (default: every problem base) → the exact problems each pools (e.g. its splits)."""
        return {p: self.pool(p) for p in claim.problems or sorted(set(self.runs["problem_base"]))}

    def pool(self, name: str) -> list[str]:
        """The exact problems ``name`` pools: itself, or every grid point of the ``[[problem]]`` it names."""
        runs = self.runs
        return sorted(set(runs.loc[(runs["problem_base"] == name) | (runs["problem"] == name), "problem"]))

    def base_of(self, problem: str) -> str:
        """The problem base (the ``[[problem]]`` before grid expansion) of the exact problem ``problem``."""
        at = self.runs.loc[self.runs["problem"] == problem, "problem_base"]
        return str(at.iloc[0]) if len(at) else problem

    def missing(self, labels: list[str], problems: list[str]) -> list[str]:
        """The planned runs of ``labels`` on ``problems`` that a verdict cannot judge, as text: absent, crashed or
        timed out (a diverged run is judged, :data:`JUDGED`)."""
        on_disk = {(r.problem, r.label, r.seed): r.status for r in self.runs.itertuples()}
        out = []
        for run in self.planned:
            if run["label"] in labels and run["problem"] in problems:
                status = on_disk.get((run["problem"], run["label"], int(run["seed"])), "missing")
                if status not in JUDGED:
                    out.append(f"{run['label']} seed {run['seed']} on {run['problem']} ({status})")
        return out

    def run(self, problem: str, label: str, seed: int, judged: bool = False) -> int | None:
        """The index of the ok run (with ``judged``: ok or diverged) of ``label`` with ``seed`` on ``problem``, or
        None."""
        at = self.runs.index[(self.runs["problem"] == problem) & (self.runs["label"] == label)
                             & (self.runs["seed"] == seed) & self._selected(judged)]
        return int(at[0]) if len(at) else None

    def seeds(self, problem: str, labels: list[str], judged: bool = False) -> list[int]:
        """The seeds on which every one of ``labels`` has an ok run (with ``judged``: ok or diverged) on ``problem``:
        the paired units."""
        ok = self.runs[(self.runs["problem"] == problem) & self._selected(judged)]
        sets = [set(ok.loc[ok["label"] == lb, "seed"]) for lb in labels]
        return sorted(set.intersection(*sets)) if sets else []

    def diverged(self, r: int) -> bool:
        """Whether run ``r`` diverged (:mod:`svibench.health`)."""
        return self.runs.at[r, "status"] == "diverged"

    def _selected(self, judged: bool) -> pd.Series:
        return self.runs["status"].isin(JUDGED) if judged else is_ok(self.runs["status"])

    # -- values
    def trajectory(self, r: int, metric: str, axis: str) -> tuple[np.ndarray, np.ndarray]:
        """A run's healthy checkpoints: (progress on ``axis``, ``metric``); progress is the checkpoint index for
        axis ``final``."""
        n = self.healthy[r]
        if metric in DERIVED:
            with np.errstate(divide="ignore", invalid="ignore"):
                values = self.ds["time"].values[r, :n] / self.ds["iteration"].values[r, :n]
        else:
            values = self.ds[metric].values[r, :n] if metric in self.ds else np.full(n, np.nan)
        progress = self.ds[AXIS_VARIABLE[axis]].values[r, :n] if axis in AXIS_VARIABLE else np.arange(n, dtype=float)
        return progress, values

    def value_at(self, r: int, metric: str, axis: str, budget: float = math.inf) -> float:
        """``metric`` at the last healthy checkpoint at or before ``budget`` on ``axis`` (NaN if none)."""
        progress, values = self.trajectory(r, metric, axis)
        keep = np.flatnonzero((progress <= budget * (1 + 1e-12)) & np.isfinite(values))
        return float(values[keep[-1]]) if keep.size else math.nan

    def value_at_iteration(self, r: int, metric: str, iteration: int) -> float:
        """``metric`` at the healthy checkpoint taken after exactly ``iteration`` steps (NaN if there is none)."""
        progress, values = self.trajectory(r, metric, "iteration")
        at = np.flatnonzero(progress == iteration)
        return float(values[at[0]]) if at.size else math.nan

    def spent(self, r: int, axis: str) -> float:
        """How far a run got on ``axis`` (its last healthy checkpoint)."""
        n = self.healthy[r]
        return float(self.ds[AXIS_VARIABLE[axis]].values[r, n - 1]) if n else 0.0

    def reach(self, r: int, metric: str, threshold: float, axis: str) -> Reach:
        """When run ``r`` first reached ``threshold`` of ``metric`` (in its better direction) on ``axis``."""
        progress, values = self.trajectory(r, metric, axis)
        signed = self.info[metric].signed
        with np.errstate(invalid="ignore"):
            hit = np.flatnonzero(signed(values) >= signed(threshold))
        if not hit.size:
            return Reach(float(progress[-1]) if progress.size else 0.0, math.inf)
        k = int(hit[0])
        return Reach(float(progress[k - 1]) if k else 0.0, float(progress[k]))

    def best_final(self, problem: str, metric: str, labels: list[str] | None = None) -> float:
        """The best final value of ``metric`` over the healthy ok runs on ``problem``: of ``labels``, or of every
        algorithm."""
        at = (self.runs["problem"] == problem) & is_ok(self.runs["status"])
        rows = self.runs.index[at & self.runs["label"].isin(labels) if labels is not None else at]
        values = [self.value_at(int(r), metric, "final") for r in rows]
        values = [v for v in values if math.isfinite(v)]
        if not values:
            return math.nan
        return (min if self.info[metric].lower else max)(values)

    def unconverged(self, metric: str) -> np.ndarray:
        """Per run: whether ``metric`` still moved over its last checkpoints (the report's † rule,
        :func:`svibench.claims.convergence.unconverged`)."""
        if metric not in self._unconverged:  # every unit of every claim asks: computed once per metric
            self._unconverged[metric] = unconverged(self.ds, metric, self.converged_tolerance, self.converged_window,
                                                     self.info)
        return self._unconverged[metric]

    # -- tolerances
    def target(self, claim: Claim) -> Target | None:
        """A faster claim's target: its own, else the study's on the claim's metric."""
        return claim.target or next((t for t in self.targets if t.metric == claim.metric), None)

    def tie(self, claim: Claim, a: float, b: float) -> float:
        """The absolute tolerance under which values ``a`` and ``b`` of the claim's metric tie: the claim's ``tie``
        (relative), else the study's target on that metric or on the metric that tracks it (``Metric.tracked_by``:
        the same quantity, estimated at every checkpoint), relative or absolute, else :data:`DEFAULT_TIE`."""
        scale = max(abs(a), abs(b))
        if claim.tie is not None:
            return claim.tie * scale
        tracker = self.info[claim.metric].tracked_by if claim.metric in self.info else ""
        on = [t for t in self.targets if t.kind != "value"]
        target = next((t for name in (claim.metric, tracker) for t in on if name and t.metric == name), None)
        if target is None:
            return DEFAULT_TIE * scale
        return target.amount * scale if target.kind == "relative" else target.amount
