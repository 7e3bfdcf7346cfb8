"""Plain, picklable descriptions of problems, budgets and runs (what a worker receives)."""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from .plateau import relative_change

__all__ = ["ProblemSpec", "Budget", "Checkpoints", "RunSpec", "canonical_json", "PROBLEM_IDENTITY", "SCORE_REFERENCE"]

#: When a run is scored against its problem's reference posterior (``[study] score_reference``): at every
#: checkpoint (the report's figure of ELBO against accuracy draws each run's path through them), or at the last
#: checkpoint only (what the accuracy tables read: enough for a study whose runs report no ELBO, whose paths are
#: not drawn).
SCORE_REFERENCE = ("checkpoints", "last")


def canonical_json(obj: Any) -> str:
    """Key-sorted, ASCII JSON: the same value always gives the same string."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"))


#: The fields of a :class:`ProblemSpec` that say what is computed (its key, hence run ids and random streams).
PROBLEM_IDENTITY = ("name", "model", "dataset", "model_params", "dataset_params")


@dataclass(frozen=True)
class ProblemSpec:
    """Model + dataset + their parameters, e.g. ``gmm`` on ``gmm-synthetic``.

    ``base`` is the study's ``[[problem]]`` name before its grid is expanded
    (default: ``name``) and ``grid`` the model and dataset parameters that the
    grid varies at this point, e.g. ``{"split": 3}``: reports pool a problem's
    grid points by ``base``, never by reading ``name``.  Neither enters
    :meth:`key`, so they change no run id.
    """

    name: str
    model: str
    dataset: str
    model_params: dict[str, Any] = field(default_factory=dict)
    dataset_params: dict[str, Any] = field(default_factory=dict)
    base: str = ""
    grid: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.base:
            object.__setattr__(self, "base", self.name)

    def key(self) -> str:
        """Identity of what is computed: :data:`PROBLEM_IDENTITY` as canonical JSON."""
        return canonical_json({name: getattr(self, name) for name in PROBLEM_IDENTITY})


@dataclass(frozen=True)
class UntilConverged:
    """Stop a run once ``metric`` has levelled off: at a checkpoint, after at least ``least`` of them, where its
    relative change over the last ``window`` of the checkpoints so far is at most ``tolerance``
    (:func:`svibench.plateau.relative_change`, the window the claims' convergence test reads).  The budget's
    limits are the cap: a run that reaches one first ends there, unconverged by this rule."""

    metric: str
    tolerance: float
    window: float = 0.1
    least: int = 5

    def reached(self, rows: list[dict[str, float]]) -> bool:
        """Whether the checkpoint rows so far meet the rule."""
        if len(rows) < self.least:
            return False
        values = np.array([row.get(self.metric, np.nan) for row in rows], dtype=float)
        return relative_change(values, self.window) <= self.tolerance

    def describe(self) -> str:
        return (f"until {self.metric} changes by at most {self.tolerance:g} (relative) over the last "
                f"{self.window:.0%} of its checkpoints")


@dataclass(frozen=True)
class Budget:
    """Stop at whichever limit comes first (at least one is set), or once the run has converged by ``until``."""

    iterations: int | None = None
    epochs: float | None = None
    seconds: float | None = None
    until: UntilConverged | None = None

    def key(self) -> dict[str, Any]:
        """The budget as it enters a run's identity (``until`` only when set, so plain budgets keep their ids)."""
        out = asdict(self)
        if self.until is None:
            del out["until"]
        return out

    def exhausted(self, iteration: int, epoch: float, seconds: float) -> bool:
        return (
            (self.iterations is not None and iteration >= self.iterations)
            or (self.epochs is not None and epoch >= self.epochs)
            or (self.seconds is not None and seconds >= self.seconds)
        )

    def steps_within(self, iteration: int, epoch: float, seconds: float, epoch_per_step: float,
                     seconds_per_step: float) -> int:
        """How many more steps (at least 1) stay within every limit, at the given rates per step
        (the runner's chunk for an algorithm that fuses its steps)."""
        room = [math.ceil(self.iterations - iteration)] if self.iterations is not None else []
        for limit, now, rate in ((self.epochs, epoch, epoch_per_step), (self.seconds, seconds, seconds_per_step)):
            if limit is not None and rate > 0:
                room.append(math.ceil((limit - now) / rate))
        return int(max(1, min(room, default=1)))

    def progress_axis(self) -> tuple[str, float]:
        """The axis checkpoints are spaced on, and its end: the first limit set."""
        for axis in ("iterations", "epochs", "seconds"):
            value = getattr(self, axis)
            if value is not None:
                return axis, float(value)
        raise ValueError("empty budget")


@dataclass(frozen=True)
class Checkpoints:
    """When to evaluate: ``count`` points spaced ``log`` or ``linear`` on the budget's axis,
    or explicit ``at`` values; iteration 0 and the end are always included."""

    count: int = 20
    spacing: str = "log"
    at: tuple[float, ...] = ()

    def schedule(self, budget: Budget) -> np.ndarray:
        axis, end = budget.progress_axis()
        if self.at:
            points = np.asarray(self.at, dtype=float)
        elif self.spacing == "linear":
            points = np.linspace(0.0, end, self.count + 1)[1:]
        else:
            start = 1.0 if axis == "iterations" else end / 1000.0
            points = np.geomspace(min(start, end), end, self.count)
        if axis == "iterations":
            points = np.round(points)
        return np.unique(points[(points > 0) & (points <= end)])


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to make one run, by name (picklable, no live objects).

    ``method`` is the algorithm as a reader names it (the ``[[algorithm]]``'s
    ``method``, else its label, e.g. ``"PG-exact"``; default: ``label``) and
    ``variant`` the hyperparameters its grid varies at this run, e.g.
    ``{"kappa": 0.6}``: the label's structured parts, which reports read instead
    of parsing the label.  Neither enters :attr:`run_id`.  ``score_reference`` is one of
    :data:`SCORE_REFERENCE`; it enters :attr:`run_id` when it is not the default (a run scored at its last
    checkpoint only records less than one scored at every checkpoint).
    """

    study: str
    problem: ProblemSpec
    algorithm: str
    label: str
    params: dict[str, Any]
    seed: int
    budget: Budget
    checkpoints: Checkpoints = Checkpoints()
    timeout: float | None = None
    plugins: tuple[str, ...] = ()
    method: str = ""
    variant: dict[str, Any] = field(default_factory=dict)
    score_reference: str = SCORE_REFERENCE[0]

    def __post_init__(self) -> None:
        if not self.method:
            object.__setattr__(self, "method", self.label)

    @property
    def scores_checkpoints(self) -> bool:
        """Whether the run is scored against a reference at every checkpoint (else at its last only)."""
        return self.score_reference == SCORE_REFERENCE[0]

    @cached_property
    def run_id(self) -> str:
        """Stable identity: the same problem, algorithm, hyperparameters, seed and budget (computed once: the
        sweep reads it for every run each time it writes the manifest)."""
        ident = [self.problem.key(), self.algorithm, self.params, self.seed, self.budget.key(), asdict(self.checkpoints)]
        if not self.scores_checkpoints:
            ident.append({"score_reference": self.score_reference})
        ident = canonical_json(ident)
        return hashlib.sha1(ident.encode()).hexdigest()[:16]
