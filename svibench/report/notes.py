"""Claim notes in a report: their placeholders filled from the results and their tags made visible.

The notation and the measured-number rule are :mod:`svibench.claims.notes`'s.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import xarray as xr

from ..claims.evidence import Evidence
from ..claims.notes import DEFAULT_SPEC, segments
from ..status import is_ok
from ..results import answers, metric_info
from ..settings import ReportSettings, Target
from .tables import recorded_metrics

__all__ = ["render_note", "NoteLookup"]


@dataclass
class NoteLookup:
    """Where placeholders get their values: the results as verdicts see them (:class:`svibench.claims.Evidence`:
    the health policy applied, runs selected by structured identity) and the study's first target (None: none)."""

    ev: Evidence
    target: Target | None

    @classmethod
    def of(cls, ds: xr.Dataset, settings: ReportSettings) -> "NoteLookup":
        """The lookup for a report of ``ds`` (as :func:`svibench.results.open_results` gives it) under ``settings``:
        its first target over the recorded metrics (by default the models' answer)."""
        targets = settings.targets_for(recorded_metrics(ds), answers(ds))
        return cls(Evidence(ds, metric_info(ds)), targets[0] if targets and targets[0].metric in ds else None)

    def runs(self, label: str, problem: str | None, ok: bool = True) -> list[int]:
        """The runs of ``label`` (on ``problem``, pooled over its grid points), ok ones only by default."""
        runs = self.ev.runs
        at = (runs["label"] == label) & (runs["problem"].isin(self.ev.pool(problem)) if problem else True)
        if ok:
            at &= is_ok(runs["status"])
        return [int(r) for r in runs.index[at]]

    def value(self, match: re.Match) -> str:
        """The text a placeholder renders as."""
        kind, label, problem, field = match["kind"], match["label"], match["problem"], match["field"]
        spec = match["spec"] or DEFAULT_SPEC.get(kind, "")
        runs = self.runs(label, problem)
        if kind == "runs":
            return f"{len(runs)}/{len(self.runs(label, problem, ok=False))}"
        if not runs:
            return "no ok run"
        if kind == "ttt":
            return self._time_to_target(runs, spec)
        values = [v for v in (self.ev.value_at(r, field, "final") for r in runs) if np.isfinite(v)]
        if not values or (kind == "sd" and len(values) < 2):
            return f"{field} not recorded" if not values else "n/a (one run)"
        return format(float(np.mean(values) if kind == "final" else np.std(values, ddof=1)), spec)

    def _time_to_target(self, runs: list[int], spec: str) -> str:
        """Median CPU seconds to the target over the runs that reach it, and how many do."""
        if self.target is None:
            return "no target"
        lower = self.ev.info[self.target.metric].lower
        reached = []
        for r in runs:
            threshold = self.target.threshold(self.ev.best_final(self.ev.runs.at[r, "problem"], self.target.metric), lower)
            reach = self.ev.reach(r, self.target.metric, threshold, "time")
            if reach.reached:
                reached.append(reach.high)
        if not reached:
            return "not reached"
        text = f"{format(float(np.median(reached)), spec)} s"
        return text if len(reached) == len(runs) else f"{text} ({len(reached)}/{len(runs)} reached)"


def render_note(text: str, lookup: NoteLookup) -> str:
    """The note with its placeholders filled from ``lookup`` and its tags made visible: ``[at C: x]`` as
    "x (measured at C)", ``[paper: x]`` as "paper: x"."""
    parts = []
    for segment in segments(text):
        if segment.kind == "placeholder":
            parts.append(lookup.value(segment.match))
        elif segment.kind == "at":
            parts.append(f"{render_note(segment.text, lookup)} (measured at {segment.commit})")
        elif segment.kind == "paper":
            parts.append(f"paper: {render_note(segment.text, lookup)}")
        else:
            parts.append(segment.text)
    return "".join(parts)
