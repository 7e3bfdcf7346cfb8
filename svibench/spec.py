"""Plain, picklable descriptions of problems, budgets and runs (what a worker receives)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["ProblemSpec", "Budget", "Checkpoints", "RunSpec", "canonical_json"]


def canonical_json(obj: Any) -> str:
    """Key-sorted, ASCII JSON: the same value always gives the same string."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=True, separators=(",", ":"))


@dataclass(frozen=True)
class ProblemSpec:
    """Model + dataset + their parameters, e.g. ``gmm`` on ``gmm-synthetic``."""

    name: str
    model: str
    dataset: str
    model_params: dict[str, Any] = field(default_factory=dict)
    dataset_params: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        return canonical_json(asdict(self))


@dataclass(frozen=True)
class Budget:
    """Stop at whichever limit comes first (at least one is set)."""

    iterations: int | None = None
    epochs: float | None = None
    seconds: float | None = None

    def exhausted(self, iteration: int, epoch: float, seconds: float) -> bool:
        return (
            (self.iterations is not None and iteration >= self.iterations)
            or (self.epochs is not None and epoch >= self.epochs)
            or (self.seconds is not None and seconds >= self.seconds)
        )

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
    """Everything a worker needs to make one run, by name (picklable, no live objects)."""

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

    @property
    def run_id(self) -> str:
        """Stable identity: the same problem, algorithm, hyperparameters, seed and budget."""
        ident = canonical_json(
            [self.problem.key(), self.algorithm, self.params, self.seed, asdict(self.budget), asdict(self.checkpoints)]
        )
        return hashlib.sha1(ident.encode()).hexdigest()[:16]
