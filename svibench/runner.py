"""The runner: one run's loop, budget, clock and evaluation.

Algorithm time counts ``init`` and ``step`` only; the clock is stopped while
the model evaluates the posterior.  Randomness comes from Generators derived
from (seed, problem): the algorithm's stream and the evaluation's stream are
independent children, so evaluating more often never changes a trajectory,
and algorithms with the same seed on the same problem share their random
numbers (common random numbers make comparisons sharper).
"""
from __future__ import annotations

import json
import math
import time
import traceback
import zlib
from dataclasses import asdict
from functools import lru_cache
from typing import Any, Callable

import numpy as np
import xarray as xr

from .algorithm import Diverged
from .model import Model
from .registry import get_registry
from .spec import ProblemSpec, RunSpec, canonical_json

__all__ = ["execute", "build_model", "run_seeds", "STATUSES"]

STATUSES = ("ok", "diverged", "failed", "timeout")
TRACKED = ("iteration", "epoch", "time")


@lru_cache(maxsize=8)
def _build_model_cached(key: str, plugins: tuple[str, ...]) -> Model:
    spec = ProblemSpec(**json.loads(key))
    return build_model(spec, plugins, cache=False)


def build_model(spec: ProblemSpec, plugins: tuple[str, ...] = (), *, cache: bool = True) -> Model:
    """Load the dataset and bind the model to it (cached per process: runs share data)."""
    if cache:
        return _build_model_cached(spec.key(), plugins)
    registry = get_registry(plugins)
    data = registry.dataset(spec.dataset).loader(**spec.dataset_params)
    return registry.model(spec.model)(data, **spec.model_params)


def run_seeds(spec: RunSpec) -> tuple[np.random.SeedSequence, np.random.SeedSequence]:
    """(algorithm, evaluation) seed sequences of a run, derived from its seed and problem."""
    root = np.random.SeedSequence(spec.seed, spawn_key=(zlib.crc32(spec.problem.key().encode()),))
    alg, ev = root.spawn(2)
    return alg, ev


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def execute(
    spec: RunSpec,
    *,
    clock: Callable[[], float] = time.perf_counter,
    on_step: Callable[[int, float, float], None] | None = None,
) -> xr.Dataset:
    """Make one run and return its trajectory as an xarray Dataset (dim ``checkpoint``).

    Never raises for the run's own faults: an exception ends the run ``failed``
    with its message, a non-finite metric ``diverged``, the wall-clock limit
    ``timeout``; the checkpoints recorded so far are kept.  ``on_step``, if
    given, is called after every step with (iteration, epoch, algorithm
    seconds), outside the clock; it must be cheap (e.g. throttle its output).
    """
    rows: list[dict[str, float]] = []
    status, message, tb = "ok", "", ""
    algorithm_seconds = evaluation_seconds = 0.0
    started = time.monotonic()
    metrics: tuple[str, ...] = ()
    try:
        registry = get_registry(spec.plugins)
        entry = registry.algorithm(spec.algorithm)
        model = build_model(spec.problem, spec.plugins)
        metrics = type(model).metrics
        alg = entry.build(dict(spec.params))
        alg_seeds, eval_seeds = run_seeds(spec)
        axis, _ = spec.budget.progress_axis()
        schedule = iter(spec.checkpoints.schedule(spec.budget))
        next_point = next(schedule, math.inf)

        def evaluate(iteration: int, epoch: float) -> None:
            nonlocal evaluation_seconds
            t_eval = time.perf_counter()
            values = model.evaluate(alg.posterior(), np.random.default_rng(eval_seeds.spawn(1)[0]))
            evaluation_seconds += time.perf_counter() - t_eval
            unknown = set(values) - set(metrics)
            if unknown:
                raise ValueError(f"{type(model).__name__}.evaluate returned metrics not in its `metrics`: {sorted(unknown)}")
            rows.append({"iteration": iteration, "epoch": epoch, "time": algorithm_seconds, **values})
            bad = [k for k, v in values.items() if not np.isfinite(v)]
            if bad:
                raise Diverged(f"non-finite {', '.join(bad)} at iteration {iteration}")

        t0 = clock()
        alg.init(model, np.random.default_rng(alg_seeds))
        algorithm_seconds += clock() - t0
        iteration, seen = 0, 0
        evaluate(0, 0.0)
        while True:
            t0 = clock()
            seen += alg.step()
            algorithm_seconds += clock() - t0
            iteration += 1
            epoch = seen / model.n_train
            progress = {"iterations": iteration, "epochs": epoch, "seconds": algorithm_seconds}[axis]
            done = spec.budget.exhausted(iteration, epoch, algorithm_seconds)
            if on_step is not None:
                on_step(iteration, epoch, algorithm_seconds)
            if progress >= next_point or done:
                while next_point <= progress:
                    next_point = next(schedule, math.inf)
                evaluate(iteration, epoch)
            if done:
                break
            if spec.timeout is not None and time.monotonic() - started > spec.timeout:
                if not rows or rows[-1]["iteration"] != iteration:
                    evaluate(iteration, epoch)
                status, message = "timeout", f"run exceeded its time limit of {spec.timeout:g} s at iteration {iteration}"
                break
    except Diverged as exc:
        status, message = "diverged", str(exc)
    except Exception as exc:  # the run's own fault: record it, the sweep goes on
        status, message, tb = "failed", f"{type(exc).__name__}: {exc}{_where(exc)}", traceback.format_exc()
    return to_dataset(spec, rows, metrics, status, message, tb, wall_seconds=time.monotonic() - started,
                      evaluation_seconds=evaluation_seconds)


def to_dataset(
    spec: RunSpec,
    rows: list[dict[str, float]],
    metrics: tuple[str, ...],
    status: str,
    message: str,
    tb: str = "",
    wall_seconds: float = float("nan"),
    evaluation_seconds: float = float("nan"),
) -> xr.Dataset:
    """One run's trajectory with its identity in the attributes (the per-run file schema)."""
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
        params=canonical_json(spec.params),
        seed=spec.seed,
        budget=canonical_json(asdict(spec.budget)),
        status=status,
        message=message,
        traceback=tb,
        wall_seconds=wall_seconds,
        evaluation_seconds=evaluation_seconds,
    )
    return ds
