"""The study's ``[report]`` table: time-to-target definitions and metric directions.

Example (in a study file)::

    [report]
    target = { metric = "elbo", relative = 0.001 }     # within 0.1% of the best final value
    # or target = [{ metric = "elbo", relative = 0.001 }, { metric = "test_mse", absolute = 0.01 }]
    # or target = { metric = "psnr", value = 30.0 }     # a fixed threshold
    lower_is_better = ["posterior_kl"]                  # overrides the naming convention
    higher_is_better = ["my_score"]
    suboptimality = ["neg_elbo"]    # objective metrics drawn as |f - f*| / |f*| (default: ELBO-type ones)
    split_panels = false            # true: one panel per grid point (e.g. random split) instead of pooling
    converged_tolerance = 1e-3      # relative change over the last 10% of checkpoints that marks a run unconverged

Direction of a metric, when the table does not name it: lower is better for
names that start with ``neg_`` or ``nll``, contain ``loss``, ``error`` or ``perplexity``
(``test_logloss_bits``, ``recon_loss``, ``test_error``), or end in ``mse``,
``rmse``, ``mae``, ``kl`` or ``nlpd``; every other metric (ELBO, held-out
log-likelihood, accuracy, PSNR, …) is higher-is-better.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..results import ResultsError

__all__ = ["ReportSettings", "Target", "ReportError", "lower_is_better_by_name"]

KNOWN_KEYS = ("target", "lower_is_better", "higher_is_better", "plot", "suboptimality", "split_panels",
              "converged_tolerance")
#: Default ``converged_tolerance``: a run whose metric moved more than this (relative) over its last 10% of
#: checkpoints is marked unconverged.
CONVERGED_TOLERANCE = 1e-3
LOWER_PREFIXES = ("neg_", "nll")
LOWER_PARTS = ("loss", "error", "perplexity")
LOWER_SUFFIXES = ("mse", "rmse", "mae", "kl", "nlpd")
TOLERANCES = ("relative", "absolute", "value")


class ReportError(ResultsError):
    """A ``[report]`` table that cannot be used; the message names the key."""


def lower_is_better_by_name(metric: str) -> bool:
    """The naming convention for metrics the ``[report]`` table does not name."""
    name = metric.lower()
    return name.startswith(LOWER_PREFIXES) or name.endswith(LOWER_SUFFIXES) or any(p in name for p in LOWER_PARTS)


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
    lower: frozenset[str] = frozenset()
    higher: frozenset[str] = frozenset()
    ignored: tuple[str, ...] = field(default=())
    plot: tuple[str, ...] = ()
    suboptimality: tuple[str, ...] | None = None
    split_panels: bool = False
    converged_tolerance: float = CONVERGED_TOLERANCE

    @classmethod
    def parse(cls, table: dict[str, Any] | None) -> "ReportSettings":
        table = dict(table or {})
        raw = table.get("target", [])
        raw = [raw] if isinstance(raw, dict) else raw
        if not isinstance(raw, list):
            raise ReportError(f"[report] target: expected a table or an array of tables, got {raw!r}")
        targets = [_target(t, i) for i, t in enumerate(raw)]
        lists = {}
        for key in ("lower_is_better", "higher_is_better"):
            value = table.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ReportError(f"[report] {key}: expected a list of metric names, got {value!r}")
            lists[key] = frozenset(value)
        both = lists["lower_is_better"] & lists["higher_is_better"]
        if both:
            raise ReportError(f"[report]: {sorted(both)} listed as both lower_is_better and higher_is_better")
        plot = table.get("plot", [])
        if not isinstance(plot, list) or not all(isinstance(v, str) for v in plot):
            raise ReportError(f"[report] plot: expected a list of metric names to draw, got {plot!r}")
        subopt = table.get("suboptimality")
        if subopt is not None and (not isinstance(subopt, list) or not all(isinstance(v, str) for v in subopt)):
            raise ReportError(f"[report] suboptimality: expected a list of objective metric names, got {subopt!r}")
        split = table.get("split_panels", False)
        if not isinstance(split, bool):
            raise ReportError(f"[report] split_panels: expected true or false, got {split!r}")
        tol = table.get("converged_tolerance", CONVERGED_TOLERANCE)
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or tol <= 0:
            raise ReportError(f"[report] converged_tolerance: expected a positive number, got {tol!r}")
        ignored = tuple(sorted(set(table) - set(KNOWN_KEYS)))
        return cls(tuple(targets), lists["lower_is_better"], lists["higher_is_better"], ignored, tuple(plot),
                   None if subopt is None else tuple(subopt), split, float(tol))

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
        if settings.ignored:
            raise ReportError(f"[report]: unknown key {settings.ignored[0]!r}; valid keys: {', '.join(KNOWN_KEYS)}")
        named = [(f"target #{i + 1} metric", t.metric) for i, t in enumerate(settings.targets)] + [
            (key, metric) for key in ("lower_is_better", "higher_is_better", "plot", "suboptimality")
            for metric in table.get(key, [])]
        for where, metric in named:
            if metric not in metrics:
                raise ReportError(f"[report] {where}: no model of the study reports {metric!r}; "
                                  f"use one of {', '.join(sorted(metrics))}")
        return settings

    def plotted(self, metrics: list[str]) -> list[str]:
        """The metrics to draw figures of, in order: ``[report] plot`` if given (tables keep every metric)."""
        return [m for m in self.plot if m in metrics] if self.plot else metrics

    def objectives(self, metrics: list[str], references: list[str]) -> list[str]:
        """Metrics drawn as suboptimality: ``[report] suboptimality``, or every ELBO-type metric and every
        metric a ``[[reference]]`` gives a best known value of."""
        if self.suboptimality is not None:
            return [m for m in metrics if m in self.suboptimality]
        return [m for m in metrics if "elbo" in m or m in references]

    def lower_is_better(self, metric: str) -> bool:
        """Whether smaller values of ``metric`` are better (explicit lists first, then names)."""
        if metric in self.lower or metric in self.higher:
            return metric in self.lower
        return lower_is_better_by_name(metric)

    def targets_for(self, metrics: list[str]) -> tuple[Target, ...]:
        """The study's targets; by default the first of ``elbo``/``heldout_loglik`` within 0.1%."""
        if self.targets:
            return self.targets
        for name in ("elbo", "heldout_loglik"):
            if name in metrics:
                return (Target(name),)
        return ()


def _target(table: Any, i: int) -> Target:
    where = f"[report] target #{i + 1}"
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
