"""The runner: one run's loop, budget, clock and evaluation.

Algorithm time counts ``init`` and ``step`` only; the clock is stopped while
the model evaluates the posterior.  Randomness comes from Generators derived
from (seed, problem): the algorithm's stream and the evaluation's stream are
independent children, so evaluating more often never changes a trajectory,
and algorithms with the same seed on the same problem share their random
numbers (common random numbers make comparisons sharper).
"""
from __future__ import annotations

import math
import time
import traceback
import zlib
from dataclasses import asdict
from typing import Callable

import numpy as np
import xarray as xr

from . import health
from .algorithm import Algorithm, Diverged
from .metrics import HOW_TO_DECLARE, Metric, table_json
from .model import Model, evaluate_posterior
from .problem import build_model
from .registry import get_registry
from .spec import RunSpec, canonical_json

__all__ = ["execute", "run_seeds", "STATUSES"]

STATUSES = ("ok", "diverged", "failed", "timeout")
TRACKED = ("iteration", "epoch", "time")


def run_seeds(spec: RunSpec) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """(algorithm, evaluation) seed sequences of a run, derived from its seed and problem."""
    root = np.random.SeedSequence(spec.seed, spawn_key=(zlib.crc32(spec.problem.key().encode()),))
    alg, ev = root.spawn(2)
    return alg, ev


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


class _Schedule:
    """When to evaluate: the spec's checkpoints along its budget's progress axis."""

    def __init__(self, spec: RunSpec) -> None:
        self.axis, _ = spec.budget.progress_axis()
        self._points = iter(spec.checkpoints.schedule(spec.budget))
        self._next = next(self._points, math.inf)

    def due(self, iteration: int, epoch: float, seconds: float) -> bool:
        """Whether a checkpoint has been reached; moves past every checkpoint reached."""
        progress = {"iterations": iteration, "epochs": epoch, "seconds": seconds}[self.axis]
        if progress < self._next:
            return False
        while self._next <= progress:
            self._next = next(self._points, math.inf)
        return True


class _Trajectory:
    """A run's checkpoint rows: the posterior evaluated, with the algorithm's clock stopped."""

    def __init__(self) -> None:
        self.rows: list[dict[str, float]] = []
        self.metrics: dict[str, Metric] = {}
        self.answer = ""
        self.evaluation_seconds = 0.0
        self.first: dict[str, float] = {}

    def describe(self, model: Model) -> None:
        """Keep what the model's metrics mean on its data (``Model.metric_info``) and its answer, saved with the run."""
        self.metrics, self.answer = model.metric_info(), type(model).answer

    def record(self, model: Model, alg: Algorithm, rng: np.random.Generator, iteration: int, epoch: float,
               algorithm_seconds: float) -> None:
        """Evaluate the current posterior and add its row; raise :class:`Diverged` when the row is unhealthy
        (:func:`svibench.health.check_row`: a non-finite value, a value outside its declared range, an objective
        blown up), so that the run ends ``diverged`` with the checkpoints so far."""
        t_eval = time.perf_counter()
        values = evaluate_posterior(model, alg.posterior(), rng)
        self.evaluation_seconds += time.perf_counter() - t_eval
        unknown = set(values) - set(self.metrics)
        if unknown:
            raise ValueError(f"model {model.name!r} returned metrics it does not declare: {sorted(unknown)}; {HOW_TO_DECLARE}")
        self.rows.append({"iteration": iteration, "epoch": epoch, "time": algorithm_seconds, **values})
        for name, value in values.items():
            if np.isfinite(value):
                self.first.setdefault(name, value)
        why = health.check_row(self.metrics, self.first, values)
        if why:
            raise Diverged(f"{why} at iteration {iteration}")

    def ends_at(self, iteration: int) -> bool:
        return bool(self.rows) and self.rows[-1]["iteration"] == iteration


def execute(
    spec: RunSpec,
    *,
    clock: Callable[[], float] = time.perf_counter,
    on_step: Callable[[int, float, float], None] | None = None,
) -> xr.Dataset:
    """Make one run and return its trajectory as an xarray Dataset (dim ``checkpoint``).

    Never raises for the run's own faults: an exception ends the run ``failed``
    with its message (hyperparameters that ``check_params`` rejects included),
    a non-finite metric ``diverged``, the wall-clock limit ``timeout``; the
    checkpoints recorded so far are kept.  ``on_step``, if given, is called
    after every step with (iteration, epoch, algorithm seconds), outside the
    clock; it must be cheap (e.g. throttle its output).
    """
    trajectory = _Trajectory()
    status, message, tb = "ok", "", ""
    started = time.monotonic()
    try:
        status, message = _run(spec, trajectory, clock, on_step, started)
    except Diverged as exc:
        status, message = "diverged", str(exc)
    except Exception as exc:  # the run's own fault: record it, the sweep goes on
        status, message, tb = "failed", f"{type(exc).__name__}: {exc}{_where(exc)}", traceback.format_exc()
    return to_dataset(spec, trajectory.rows, trajectory.metrics, status, message, tb,
                      wall_seconds=time.monotonic() - started, evaluation_seconds=trajectory.evaluation_seconds,
                      answer=trajectory.answer)


def _run(spec: RunSpec, trajectory: _Trajectory, clock: Callable[[], float],
         on_step: Callable[[int, float, float], None] | None, started: float) -> tuple[str, str]:
    """Validate, init and step until the budget or the time limit ends; (status, message) of the run."""
    entry = get_registry(spec.plugins).algorithm(spec.algorithm)
    model = build_model(spec.problem, spec.plugins)
    trajectory.describe(model)
    alg = entry.build(dict(spec.params))
    alg.check_params()
    alg_seeds, eval_seeds = run_seeds(spec)
    schedule = _Schedule(spec)
    seconds = 0.0

    def evaluate(iteration: int, epoch: float) -> None:
        trajectory.record(model, alg, np.random.default_rng(eval_seeds.spawn(1)[0]), iteration, epoch, seconds)

    t0 = clock()
    alg.init(model, np.random.default_rng(alg_seeds))
    seconds += clock() - t0
    iteration, seen = 0, 0
    evaluate(0, 0.0)
    while True:
        t0 = clock()
        seen += alg.step()
        seconds += clock() - t0
        iteration += 1
        epoch = seen / model.n_train
        done = spec.budget.exhausted(iteration, epoch, seconds)
        if on_step is not None:
            on_step(iteration, epoch, seconds)
        if schedule.due(iteration, epoch, seconds) or done:
            evaluate(iteration, epoch)
        if done:
            return "ok", ""
        if spec.timeout is not None and time.monotonic() - started > spec.timeout:
            if not trajectory.ends_at(iteration):
                evaluate(iteration, epoch)
            return "timeout", f"run exceeded its time limit of {spec.timeout:g} s at iteration {iteration}"


def to_dataset(
    spec: RunSpec,
    rows: list[dict[str, float]],
    metrics: dict[str, Metric],
    status: str,
    message: str,
    tb: str = "",
    wall_seconds: float = float("nan"),
    evaluation_seconds: float = float("nan"),
    answer: str = "",
) -> xr.Dataset:
    """One run's trajectory with its identity in the attributes (the per-run file schema).

    The identity includes its structured parts (``method``, ``variant``, ``problem_base``,
    ``problem_grid``; dicts as JSON) and what its metrics mean (``metric_info``: JSON of the
    model's :meth:`~svibench.model.Model.metric_info` on its data, ``answer``), so that reports
    read them instead of parsing names.
    """
    names = list(TRACKED) + [m for m in metrics if m not in TRACKED]
    names += sorted({k for row in rows for k in row} - set(names))
    data = {
        name: ("checkpoint", np.array([row.get(name, np.nan) for row in rows], dtype=float)) for name in names
    }
    ds = xr.Dataset(data, coords={"checkpoint": np.arange(len(rows))})
    ds.attrs.update(
        run_id=spec.run_id,
        study=spec.study,
        problem=spec.problem.name,
        model=spec.problem.model,
        dataset=spec.problem.dataset,
        problem_spec=spec.problem.key(),
        algorithm=spec.algorithm,
        label=spec.label,
        method=spec.method,
        variant=canonical_json(spec.variant),
        problem_base=spec.problem.base,
        problem_grid=canonical_json(spec.problem.grid),
        params=canonical_json(spec.params),
        seed=spec.seed,
        budget=canonical_json(asdict(spec.budget)),
        status=status,
        message=message,
        traceback=tb,
        wall_seconds=wall_seconds,
        evaluation_seconds=evaluation_seconds,
        metric_info=table_json(metrics),
        answer=answer,
    )
    return ds
