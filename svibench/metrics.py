"""What a metric means, declared as data: direction, kind, unit, valid range, and whether it is a fair ranking key.

Each model declares its metrics with :func:`metric_table` (``Model.metrics``), and
which one answers a study by default (``Model.answer``).  Reports, rankings and
verdicts read these declarations (saved with every run); nothing parses metric
names.

Kinds:

- ``objective``: what the algorithm optimises (ELBO-like); it has an optimum,
  so it is drawn as suboptimality and its blow-up marks a run diverged.
- ``task``: what a user of the posterior cares about (held-out likelihood,
  test loss, PSNR, perplexity).
- ``diagnostic``: a check on the run (e.g. a KL to a known posterior, a
  distance to the true topics); reported, never the study's answer.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

__all__ = ["Metric", "KINDS", "DIRECTIONS", "metric_table", "MetricError"]

KINDS = ("objective", "task", "diagnostic")
DIRECTIONS = ("higher", "lower")


class MetricError(ValueError):
    """A metric declared without its metadata, or with metadata that cannot be used."""


@dataclass(frozen=True)
class Metric:
    """One metric's meaning.

    Parameters
    ----------
    name : str
        The key the model's ``evaluate`` returns.
    direction : {"higher", "lower"}
        Which way is better.
    kind : {"objective", "task", "diagnostic"}
        See the module docstring.
    unit : str
        Its unit as a reader would write it ("nats", "bits per datum", "dB", "" for a ratio).
    rankable : bool
        Whether ranking algorithms on it is fair (a fit to the noisy pixels of a denoising problem is not).
    low, high : float
        The valid range: a value outside it marks the run diverged (e.g. a perplexity below 1).
    description : str
        One line for ``svibench describe`` and the report.
    """

    name: str
    direction: str
    kind: str
    unit: str = ""
    rankable: bool = True
    low: float = -math.inf
    high: float = math.inf
    description: str = ""

    def __post_init__(self) -> None:
        if self.direction not in DIRECTIONS:
            raise MetricError(f"metric {self.name!r}: direction must be one of {', '.join(DIRECTIONS)}, got {self.direction!r}")
        if self.kind not in KINDS:
            raise MetricError(f"metric {self.name!r}: kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if not self.low < self.high:
            raise MetricError(f"metric {self.name!r}: valid range [{self.low}, {self.high}] is empty")

    @property
    def lower(self) -> bool:
        """Whether smaller values are better."""
        return self.direction == "lower"

    def signed(self, value: float) -> float:
        """``value`` with the sign that makes higher better."""
        return -value if self.lower else value

    def valid(self, value: float) -> bool:
        """Whether ``value`` is finite and inside the declared range."""
        return math.isfinite(value) and self.low <= value <= self.high

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (infinite bounds as None), as saved with each run."""
        out = asdict(self)
        out["low"] = None if math.isinf(self.low) else self.low
        out["high"] = None if math.isinf(self.high) else self.high
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Metric":
        low, high = data.get("low"), data.get("high")
        return cls(data["name"], data["direction"], data["kind"], data.get("unit", ""), bool(data.get("rankable", True)),
                   -math.inf if low is None else float(low), math.inf if high is None else float(high),
                   data.get("description", ""))


def metric_table(*metrics: Metric) -> dict[str, Metric]:
    """A model's ``metrics``: name → :class:`Metric`, in declaration order (iterating gives the names)."""
    table: dict[str, Metric] = {}
    for m in metrics:
        if not isinstance(m, Metric):
            raise MetricError(f"metric {m!r} has no metadata: declare it as svibench.metrics.Metric(name, direction, kind, unit)")
        if m.name in table:
            raise MetricError(f"metric {m.name!r} is declared twice")
        table[m.name] = m
    return table
