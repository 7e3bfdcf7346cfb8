"""The study's ``[report]`` table: time-to-target definitions, figures and pooling.

Example (in a study file)::

    [report]
    target = { metric = "elbo", relative = 0.001 }     # within 0.1% of the best final value
    # or target = [{ metric = "elbo", relative = 0.001 }, { metric = "test_mse", absolute = 0.01 }]
    # or target = { metric = "psnr", value = 30.0 }     # a fixed threshold
    plot = ["elbo", "heldout_loglik"]                   # the metrics to draw (default: all)
    suboptimality = ["neg_elbo"]    # metrics drawn as |f - f*| / |f*| (default: the objective ones)
    split_panels = false            # true: one panel per grid point (e.g. random split) instead of pooling
    converged_tolerance = 1e-3      # relative change over the window that marks a run unconverged (beyond its noise)
    converged_window = 0.1          # the window: this fraction of a run's last checkpoints (svibench.claims.convergence)
    timing_noise = 1.8              # how far apart two makings of one run can be in CPU time, as a factor ≥ 1: a
                                    # faster or as-fast unit on CPU time that it could flip is undecided
                                    # (svibench.settings.TIMING_NOISE, measured on the machine of the reports)

What a metric means — which way is better, whether it is an objective, a task
metric or a diagnostic, whether it is a fair ranking key — is declared by the
model that reports it (:mod:`svibench.metrics`) and saved with every run; the
report reads it from the results (:func:`svibench.results.metric_info`).  A
study cannot override it: ``lower_is_better`` / ``higher_is_better`` are
refused at load.  Without a ``target``, the models' declared ``answer`` is the
target.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from .metrics import Metric
from .results import ResultsError

__all__ = ["ReportSettings", "Target", "ReportError", "parse_target", "TIMING_NOISE"]

KNOWN_KEYS = ("target", "plot", "suboptimality", "split_panels", "converged_tolerance", "converged_window",
              "timing_noise", "authors")
#: Keys of earlier versions that this one refuses, and why.
REFUSED_KEYS = {key: "which way is better is declared by the model that reports a metric (svibench.metrics.Metric), "
                     "not by the study; remove this key" for key in ("lower_is_better", "higher_is_better")}
#: Default ``converged_tolerance``: a run whose metric moved more than this (relative) over its last 10% of
#: checkpoints is marked unconverged.
CONVERGED_TOLERANCE = 1e-3
#: Default ``converged_window``: the fraction of a run's last checkpoints that rule looks at
#: (:mod:`svibench.claims.convergence`, which also allows for the seed-to-seed noise).
CONVERGED_WINDOW = 0.1
#: Default ``timing_noise``: how far apart two CPU times of one run can be when it is made twice on one machine, as
#: a factor.  Measured on the 2-core machine the reports are made on, quiet, one BLAS thread: 8 makings each of S&K-FG
#: and of CVI on colon-cancer (split 0) took up to 1.71 and 1.57 times as long as one another at one checkpoint
#: (about 30 ms of CPU), and 1.76 and 1.53 times at their last (1.2-2.0 s).  A ratio of two runs' times is known to
#: within this factor either way (:mod:`svibench.claims`).
TIMING_NOISE = 1.8
TOLERANCES = ("relative", "absolute", "value")


class ReportError(ResultsError):
    """A ``[report]`` table that cannot be used; the message names the key."""


@dataclass(frozen=True)
class Target:
    """Reach ``metric`` within ``relative`` (fraction of |best|) or ``absolute`` of the best
    final value of the problem's runs, or reach a fixed ``value``."""

    metric: str
    kind: str = "relative"
    amount: float = 0.001

    def describe(self) -> str:
        if self.kind == "value":
            return f"{self.metric} reaches {self.amount:g}"
        span = f"{self.amount * 100:g}%" if self.kind == "relative" else f"{self.amount:g}"
        return f"{self.metric} within {span} of the best final value"

    def threshold(self, best: float, lower: bool) -> float:
        """The value a run must reach, given the problem's best final value."""
        if self.kind == "value":
            return self.amount
        gap = self.amount * abs(best) if self.kind == "relative" else self.amount
        return best + gap if lower else best - gap


@dataclass(frozen=True)
class ReportSettings:
    """Parsed ``[report]`` table; ``ignored`` lists keys this version does not know."""

    targets: tuple[Target, ...] = ()
    ignored: tuple[str, ...] = field(default=())
    plot: tuple[str, ...] = ()
    suboptimality: tuple[str, ...] | None = None
    split_panels: bool = False
    converged_tolerance: float = CONVERGED_TOLERANCE
    converged_window: float = CONVERGED_WINDOW
    timing_noise: float = TIMING_NOISE
    #: Show every recorded metric (``svibench report --metrics all``), not the default view (:meth:`shown`).
    show_all: bool = False
    #: Metrics the study's claims and targets are judged on: shown by default beside the primary ones, so a
    #: verdict's metric always has its figures (BPFA's claims judge ``mse``, not a primary metric).
    claimed: tuple[str, ...] = ()

    @classmethod
    def parse(cls, table: dict[str, Any] | None) -> "ReportSettings":
        table = dict(table or {})
        raw = table.get("target", [])
        raw = [raw] if isinstance(raw, dict) else raw
        if not isinstance(raw, list):
            raise ReportError(f"[report] target: expected a table or an array of tables, got {raw!r}")
        targets = [parse_target(t, f"[report] target #{i + 1}") for i, t in enumerate(raw)]
        plot = table.get("plot", [])
        if not isinstance(plot, list) or not all(isinstance(v, str) for v in plot):
            raise ReportError(f"[report] plot: expected a list of metric names to draw, got {plot!r}")
        subopt = table.get("suboptimality")
        if subopt is not None and (not isinstance(subopt, list) or not all(isinstance(v, str) for v in subopt)):
            raise ReportError(f"[report] suboptimality: expected a list of objective metric names, got {subopt!r}")
        split = table.get("split_panels", False)
        if not isinstance(split, bool):
            raise ReportError(f"[report] split_panels: expected true or false, got {split!r}")
        if not isinstance(table.get("authors", ""), str):
            raise ReportError(f"[report] authors: expected the path of a folder of the authors' trajectories, got "
                              f"{table['authors']!r}")
        tol = table.get("converged_tolerance", CONVERGED_TOLERANCE)
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or tol <= 0:
            raise ReportError(f"[report] converged_tolerance: expected a positive number, got {tol!r}")
        window = table.get("converged_window", CONVERGED_WINDOW)
        if isinstance(window, bool) or not isinstance(window, (int, float)) or not 0 < window < 1:
            raise ReportError(f"[report] converged_window: expected a fraction of the checkpoints in (0, 1), got {window!r}")
        noise = table.get("timing_noise", TIMING_NOISE)
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 1 <= noise < float("inf"):
            raise ReportError(f"[report] timing_noise: expected a factor ≥ 1 (1: CPU times known exactly), got {noise!r}")
        ignored = tuple(sorted(set(table) - set(KNOWN_KEYS)))
        return cls(tuple(targets), ignored, tuple(plot), None if subopt is None else tuple(subopt), split, float(tol),
                   float(window), float(noise))

    @classmethod
    def check(cls, table: dict[str, Any], metrics: set[str]) -> "ReportSettings":
        """Parse a study's ``[report]`` table strictly, when the study is loaded.

        Unlike :meth:`parse` (which reads the table saved with results, possibly
        by another svibench version, and lists unknown keys as ``ignored``), an
        unknown key is an error, and so is a metric name that none of the
        study's models reports (``metrics``): a typo must not surface hours
        later, after the sweep.
        """
        settings = cls.parse(table)
        for key in settings.ignored:
            if key in REFUSED_KEYS:
                raise ReportError(f"[report] {key}: {REFUSED_KEYS[key]}")
        if settings.ignored:
            raise ReportError(f"[report]: unknown key {settings.ignored[0]!r}; valid keys: {', '.join(KNOWN_KEYS)}")
        named = [(f"target #{i + 1} metric", t.metric) for i, t in enumerate(settings.targets)] + [
            (key, metric) for key in ("plot", "suboptimality") for metric in table.get(key, [])]
        for where, metric in named:
            if metric not in metrics:
                raise ReportError(f"[report] {where}: no model of the study reports {metric!r}; "
                                  f"use one of {', '.join(sorted(metrics))}")
        return settings

    def shown(self, info: Mapping[str, Metric]) -> list[str]:
        """The metrics the figures, the final-metrics table and the console show, in order, of the recorded ones
        (``info``): every one with :attr:`show_all`, else ``[report] plot`` if given, else the models' primary
        metrics (:attr:`svibench.metrics.Metric.primary`; every one for results saved before that flag) and the
        :attr:`claimed` ones."""
        if self.show_all:
            return list(info)
        if self.plot:
            return [m for m in self.plot if m in info]
        return [m for m, i in info.items() if i.primary or m in self.claimed] or list(info)

    def objectives(self, metrics: list[str], references: list[str], info: Mapping[str, Metric]) -> list[str]:
        """Metrics drawn as suboptimality: ``[report] suboptimality``, or every metric its model declares an
        objective (``info``: :func:`svibench.results.metric_info`) and every metric a ``[[reference]]`` gives
        a best known value of."""
        if self.suboptimality is not None:
            return [m for m in metrics if m in self.suboptimality]
        return [m for m in metrics if info[m].kind == "objective" or m in references]

    def targets_for(self, metrics: list[str], answers: list[str]) -> tuple[Target, ...]:
        """The study's targets; by default each of the models' declared ``answers`` that the results record,
        within 0.1% (:func:`svibench.results.answers`)."""
        if self.targets:
            return self.targets
        return tuple(Target(name) for name in answers if name in metrics)


def parse_target(table: Any, where: str) -> Target:
    """A target table ``{metric = ..., relative|absolute|value = ...}``, checked (``where`` names it in errors)."""
    if not isinstance(table, dict) or not isinstance(table.get("metric"), str):
        raise ReportError(f"{where}: expected a table with a metric name, e.g. {{metric = \"elbo\", relative = 0.001}}; got {table!r}")
    unknown = set(table) - {"metric", *TOLERANCES}
    given = [k for k in TOLERANCES if k in table]
    if unknown or len(given) > 1:
        raise ReportError(f"{where}: give `metric` and one of {', '.join(TOLERANCES)}; got keys {sorted(table)}")
    kind = given[0] if given else "relative"
    amount = table.get(kind, 0.001)
    if isinstance(amount, bool) or not isinstance(amount, (int, float)) or (kind != "value" and amount < 0):
        raise ReportError(f"{where} {kind}: expected a {'number' if kind == 'value' else 'non-negative number'}, got {amount!r}")
    return Target(table["metric"], kind, float(amount))
