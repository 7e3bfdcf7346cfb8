"""What a metric means, declared as data: direction, kind, unit, valid range, and whether it is a fair ranking key.

Each model declares its metrics with :func:`metric_table` (``Model.metrics``), and
which one answers a study by default (``Model.answer``); a model whose fairness as
a ranking key depends on its data says so per instance (``Model.metric_info``).
Reports, rankings and verdicts read these declarations (saved with every run as
JSON, :func:`table_json`); nothing parses metric names.  :func:`check_declaration`
refuses, in one line, a model that declares plain names or leaves ``answer`` unset.

Kinds:

- ``objective``: what the algorithm optimises (ELBO-like); it has an optimum,
  so it is drawn as suboptimality and its blow-up marks a run diverged.
- ``task``: what a user of the posterior cares about (held-out likelihood,
  test loss, PSNR, perplexity).
- ``diagnostic``: a check on the run (e.g. a KL to a known posterior, a
  distance to the true topics); reported, never the study's answer.
- ``accuracy``: posterior accuracy, q against the problem's gold-standard
  reference posterior (:mod:`svibench.reference.accuracy`); added to a run's
  metrics only when its problem has a reference, never the study's answer.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, replace
from typing import Any, Mapping

__all__ = ["DERIVED", "Metric", "KINDS", "DIRECTIONS", "metric_table", "MetricError", "check_declaration", "table_json",
           "table_from_json", "HOW_TO_DECLARE", "MAX_PRIMARY", "primary_names", "with_primary"]

#: The fix every "no metadata" error names.
HOW_TO_DECLARE = ("declare `metrics = metric_table(Metric(name, direction, kind, unit, ...), ...)` and "
                  "`answer = name` (svibench.metrics)")

KINDS = ("objective", "task", "diagnostic", "accuracy")
#: Rounding slack of :meth:`Metric.valid` at a finite bound: relative, and at least absolute.
ROUNDING = 1e-9
DIRECTIONS = ("higher", "lower")
#: How many metrics a model may show by default (its ``primary`` ones).
MAX_PRIMARY = 3


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
    kind : {"objective", "task", "diagnostic", "accuracy"}
        See the module docstring.
    unit : str
        Its unit as a reader would write it ("nats", "bits per datum", "dB", "" for a ratio).
    rankable : bool
        Whether ranking algorithms on it is fair (a fit to the noisy pixels of a denoising problem is not).
    low, high : float
        The valid range: a value outside it marks the run diverged (e.g. a perplexity below 1).
    description : str
        One line for the report's table of metrics.
    primary : bool
        Shown by default (figures, the final-metrics table, the console): one of the model's ``primary`` metrics
        (at most :data:`MAX_PRIMARY`: its objective, a predictive and its task metric).  The others stay in the
        results and show with ``[report] plot`` or ``svibench report --metrics all``.
    tracked_by : str
        For a metric a model computes at the last checkpoint only (on the whole data, :meth:`Model.evaluate_final`):
        the metric that follows it at every checkpoint (on an evaluation subset).  Whether a run had converged on
        it is read from that one's trajectory; the two need not agree exactly (BPFA's windows are a sample of the
        whole image's pixels).  Empty: the metric has its own trajectory.
    """

    name: str
    direction: str
    kind: str
    unit: str = ""
    rankable: bool = True
    low: float = -math.inf
    high: float = math.inf
    description: str = ""
    primary: bool = False
    tracked_by: str = ""

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
        """Whether ``value`` is finite and inside the declared range, up to rounding (:data:`ROUNDING` of the
        bound, at least absolute: a KL computed as a difference of logs may come out at −1e-15)."""
        return (math.isfinite(value) and self.low - ROUNDING * max(1.0, abs(self.low)) <= value
                <= self.high + ROUNDING * max(1.0, abs(self.high)))

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (infinite bounds as None), as saved with each run."""
        out = asdict(self)
        out["low"] = None if math.isinf(self.low) else self.low
        out["high"] = None if math.isinf(self.high) else self.high
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Metric":
        """Inverse of :meth:`to_dict`."""
        low, high = data.get("low"), data.get("high")
        return cls(data["name"], data["direction"], data["kind"], data.get("unit", ""), bool(data.get("rankable", True)),
                   -math.inf if low is None else float(low), math.inf if high is None else float(high),
                   data.get("description", ""), bool(data.get("primary", False)), data.get("tracked_by", ""))


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


def check_declaration(model_cls: type) -> dict[str, Metric]:
    """The metric table of a model class, after checking that it is one.

    Every metric is a :class:`Metric` filed under its own name, and ``answer``
    names one of its objective or task metrics.  A model that declares plain
    names (``metrics = ("elbo", ...)``), no metrics, or no answer gets a
    :class:`MetricError` in one line that says how to declare them.
    """
    name = getattr(model_cls, "name", model_cls.__name__)
    table = getattr(model_cls, "metrics", None)
    if not isinstance(table, Mapping) or not table:
        got = f"its metrics as plain names {tuple(table)!r}" if table else "no metrics"
        raise MetricError(f"model {name!r} declares {got}; {HOW_TO_DECLARE}")
    bare = [key for key, m in table.items() if not isinstance(m, Metric) or m.name != key]
    if bare:
        raise MetricError(f"model {name!r}: metric {bare[0]!r} has no metadata (a Metric named {bare[0]!r}); {HOW_TO_DECLARE}")
    orphan = [key for key, m in table.items() if m.tracked_by and (m.tracked_by not in table or m.tracked_by == key)]
    if orphan:
        raise MetricError(f"model {name!r}: metric {orphan[0]!r} is tracked_by {table[orphan[0]].tracked_by!r}, which is "
                          "not another of its metrics; name the metric that estimates it at every checkpoint")
    answer = getattr(model_cls, "answer", "")
    answers = [key for key, m in table.items() if m.kind in ("objective", "task")]
    if answer not in answers:
        raise MetricError(f"model {name!r}: answer {answer!r} is not one of its objective or task metrics; "
                          f"set `answer` to one of {', '.join(answers) or '(none: declare one)'}")
    primary = tuple(getattr(model_cls, "primary", ()) or ())
    unknown = [p for p in primary if p not in table]
    if unknown or len(primary) > MAX_PRIMARY:
        raise MetricError(f"model {name!r}: primary {primary!r} must name at most {MAX_PRIMARY} of its metrics "
                          f"({', '.join(table)})" + (f"; {unknown[0]!r} is not one" if unknown else ""))
    return with_primary(table, primary_names(table, answer, primary))


def primary_names(table: Mapping[str, Metric], answer: str, primary: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The metrics a model shows by default: its declared ``primary``, else its first objective and its answer."""
    if primary:
        return primary
    first = next((key for key, m in table.items() if m.kind == "objective"), answer)
    return tuple(dict.fromkeys((first, answer)))


def with_primary(table: Mapping[str, Metric], names: tuple[str, ...]) -> dict[str, Metric]:
    """``table`` with ``primary`` set on ``names`` and cleared elsewhere."""
    return {key: replace(m, primary=key in names) for key, m in table.items()}


def table_json(table: Mapping[str, Metric]) -> str:
    """A metric table as JSON (a list of :meth:`Metric.to_dict`, in declaration order), as saved with each run."""
    return json.dumps([m.to_dict() for m in table.values()], sort_keys=True)


def table_from_json(text: str) -> dict[str, Metric]:
    """Inverse of :func:`table_json`."""
    return metric_table(*(Metric.from_dict(d) for d in json.loads(text)))


#: Quantities a claim may name that every run has, derived from its clock (not reported by a model): CPU seconds per
#: step, averaged from the start of the run.
DERIVED = metric_table(Metric("seconds_per_iteration", "lower", "diagnostic", "CPU s", low=0.0,
                              description="CPU seconds per step, averaged from the start of the run"))
