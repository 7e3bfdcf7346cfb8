"""The runner: one run's loop, budget, clocks, warm-up and evaluation.

Algorithm time is CPU seconds of the run's process (:mod:`svibench.clock`,
BLAS/OpenMP limited to one thread) spent in ``init`` and ``step`` only, so load
on the machine does not move it; the wall seconds of the same intervals are
kept beside it (``wall_time``).  The clocks are stopped while the model
evaluates the posterior (at each checkpoint, and once more at the last for the
metrics a model measures only there: ``Model.evaluate_final``).  Before they start, :func:`warm_up` runs a throwaway
copy of the algorithm for one step, so compilation (numba) and first-call costs
stay out of the trajectory (``warmup_seconds``).  Randomness comes from Generators derived
from (seed, problem): the algorithm's stream and the evaluation's stream are
independent children, so evaluating more often never changes a trajectory,
and algorithms with the same seed on the same problem share their random
numbers (common random numbers make comparisons sharper).
"""
from __future__ import annotations

import copy
import math
import time
import traceback
import zlib
from dataclasses import asdict
from typing import Any, Callable

import numpy as np
import xarray as xr

from . import health
from .allocator import keep_freed_memory
from .summary import TRACKED
from .algorithm import Algorithm, Diverged
from .metrics import HOW_TO_DECLARE, Metric, table_json
from .clock import Clock, Stopwatch, one_thread
from .model import Model, evaluate_posterior
from .problem import build_model
from .reference.attach import scorer_for
from .registry import get_registry
from .spec import Budget, ProblemSpec, RunSpec, canonical_json

__all__ = ["execute", "run_seeds", "warm_up", "STATUSES", "TRACKED"]

STATUSES = ("ok", "diverged", "failed", "timeout")
#: Seed of the warm-up's generator: unrelated to every run's, and its draws are thrown away.
WARM_UP_SEED = 0x5EED


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

    def room(self, iteration: int, epoch: float, seconds: float, epoch_per_step: float, seconds_per_step: float) -> int:
        """How many steps (at least 1) reach the next checkpoint and no further, at the given rates per step."""
        if math.isinf(self._next):
            return 2**62
        return Budget(**{self.axis: self._next}).steps_within(iteration, epoch, seconds, epoch_per_step, seconds_per_step)

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

    def __init__(self, final: bool = True, score_checkpoints: bool = True) -> None:
        self.final, self.score_checkpoints = final, score_checkpoints
        self.rows: list[dict[str, float]] = []
        self.metrics: dict[str, Metric] = {}
        self.answer = ""
        self.evaluation_seconds = self.accuracy_seconds = 0.0
        self.first: dict[str, float] = {}
        self.scorer, self.reference = None, ""

    def describe(self, model: Model, problem: ProblemSpec) -> None:
        """Keep what the model's metrics mean on its data (``Model.metric_info``) and its answer, saved with the run,
        and the problem's reference posterior with its accuracy metrics if it has one (:mod:`svibench.reference`;
        a stale one raises)."""
        self.metrics, self.answer = model.metric_info(), type(model).answer
        self.scorer, self.reference = scorer_for(problem, model, self.score_checkpoints)
        if self.scorer is not None:
            self.metrics = {**self.metrics, **self.scorer.metrics}
            if not self.score_checkpoints:
                self.reference += '; scored at the last checkpoint only ([study] score_reference = "last")'

    def record(self, model: Model, alg: Algorithm, rng: np.random.Generator, iteration: int, epoch: float,
               algorithm_seconds: float, wall_seconds: float) -> None:
        """Evaluate the current posterior and add its row; raise :class:`Diverged` when the row is unhealthy
        (:func:`svibench.health.check_row`: a non-finite value, a value outside its declared range, an objective
        blown up), so that the run ends ``diverged`` with the checkpoints so far."""
        t_eval = time.perf_counter()
        posterior = alg.posterior()
        with model.checkpoint():  # the model's metrics and the scorer share what both read (model.per_checkpoint)
            values = evaluate_posterior(model, posterior, rng)
            if self.score_checkpoints:
                values.update(self._score(model, posterior))
        self.evaluation_seconds += time.perf_counter() - t_eval
        self.rows.append({"iteration": iteration, "epoch": epoch, "time": algorithm_seconds, "wall_time": wall_seconds})
        self._add(model, values)

    def finish(self, model: Model, alg: Algorithm, rng: np.random.Generator) -> None:
        """Add the last-checkpoint-only metrics to the last row, if asked: the model's (:meth:`Model.evaluate_final`)
        and the scorer's: every accuracy metric when the run is scored against its reference at the last checkpoint
        only, else those it measures there alone (the predictive KL on every test point)."""
        if not self.final:
            return
        t_eval = time.perf_counter()
        posterior = alg.posterior()
        with model.checkpoint():
            values = model.evaluate_final(posterior, rng)
            values = {**values, **self._score(model, posterior, final=self.score_checkpoints)}
        self.evaluation_seconds += time.perf_counter() - t_eval
        if values:
            self._add(model, values)

    def _score(self, model: Model, posterior: Any, final: bool = False) -> dict[str, float]:
        """The accuracy metrics of ``posterior`` against the reference (none without one), or with ``final`` those
        the scorer measures at the last checkpoint only (:meth:`~svibench.reference.attach.Scorer.final`), timed as
        scoring."""
        if self.scorer is None:
            return {}
        t_accuracy = time.perf_counter()
        values = self.scorer.final(model, posterior) if final else self.scorer(model, posterior)
        self.accuracy_seconds += time.perf_counter() - t_accuracy
        return values

    def _add(self, model: Model, values: dict[str, float]) -> None:
        """Put ``values`` in the last row; raise :class:`Diverged` when they are unhealthy."""
        unknown = set(values) - set(self.metrics)
        if unknown:
            raise ValueError(f"model {model.name!r} returned metrics it does not declare: {sorted(unknown)}; {HOW_TO_DECLARE}")
        self.rows[-1].update(values)
        for name, value in values.items():
            if np.isfinite(value):
                self.first.setdefault(name, value)
        why = health.check_row(self.metrics, self.first, values)
        if why:
            raise Diverged(f"{why} at iteration {self.rows[-1]['iteration']}")

    def ends_at(self, iteration: int) -> bool:
        return bool(self.rows) and self.rows[-1]["iteration"] == iteration


def execute(
    spec: RunSpec,
    *,
    clock: Clock = Clock(),
    on_step: Callable[[int, float, float], None] | None = None,
    warm: bool = True,
    final: bool = True,
) -> xr.Dataset:
    """Make one run and return its trajectory as an xarray Dataset (dim ``checkpoint``).

    Never raises for the run's own faults: an exception ends the run ``failed``
    with its message (hyperparameters that ``check_params`` rejects included),
    a non-finite metric ``diverged``, the wall-clock limit ``timeout``; the
    checkpoints recorded so far are kept.  ``clock`` gives the CPU clock (the
    algorithm time: budget, ``time``, ``on_step``) and the wall clock
    (``wall_time``); tests inject their own.  ``warm`` runs :func:`warm_up`
    before the clock starts; ``final`` makes the last checkpoint's :meth:`~svibench.model.Model.evaluate_final`
    (the plan's probes leave it out and estimate it).  ``on_step``, if given, is called after every step
    with (iteration, epoch, algorithm CPU seconds), outside the clock; it must
    be cheap (e.g. throttle its output).
    """
    trajectory, timing = _Trajectory(final, spec.scores_checkpoints), _Timing(clock, warm)
    status, message, tb = "ok", "", ""
    started = time.monotonic()
    try:
        status, message = _run(spec, trajectory, timing, on_step, started)
    except Diverged as exc:
        status, message = "diverged", str(exc)
    except Exception as exc:  # the run's own fault: record it, the sweep goes on
        status, message, tb = "failed", f"{type(exc).__name__}: {exc}{_where(exc)}", traceback.format_exc()
    return to_dataset(spec, trajectory.rows, trajectory.metrics, status, message, tb,
                      wall_seconds=time.monotonic() - started, evaluation_seconds=trajectory.evaluation_seconds,
                      accuracy_seconds=trajectory.accuracy_seconds,
                      answer=trajectory.answer, reference=trajectory.reference, **timing.attrs())


def warm_up(alg: Algorithm, model: Model) -> None:
    """``init`` and one ``step`` (and, if it fuses, one ``advance``) of a throwaway copy of ``alg`` (constructed,
    not initialised) on a copy of ``model``, with a generator of its own: compiles what the run will call (numba) and pays
    first-call costs before the clock starts.  Nothing the run uses is touched, so the trajectory is
    the same with or without it (the conformance check ``check_warm_up_does_not_perturb``).  The copy
    of the model shares its read-only arrays (nothing can write to them), so it costs the model's own
    state, not its data."""
    frozen = [v for v in (*model.data.train.values(), *model.data.test.values(), *vars(model).values())
              if isinstance(v, np.ndarray) and not v.flags.writeable]
    try:
        scratch = copy.deepcopy(model, {id(a): a for a in frozen})
    except Exception as exc:
        raise TypeError(f"the warm-up cannot copy model {model.name!r} ({type(exc).__name__}: {exc}); a model must "
                        "deep-copy and pickle (no locks, open files or Python generators among its attributes)") from exc
    twin = copy.deepcopy(alg)
    twin.init(scratch, np.random.default_rng(WARM_UP_SEED))
    twin.step()
    if twin.fused:
        twin.advance(2)


class _Timing:
    """A run's stopwatches, the algorithm's (``init`` and ``step``) and the warm-up's (None: no
    warm-up), and the BLAS threads in force while they ran."""

    def __init__(self, clock: Clock, warm: bool) -> None:
        self.algorithm = Stopwatch(clock)
        self.warm_up = Stopwatch(clock) if warm else None
        self.blas_threads = math.nan

    def attrs(self) -> dict[str, float]:
        """The run attributes :func:`to_dataset` records from them."""
        return {"warmup_seconds": self.warm_up.cpu if self.warm_up is not None else math.nan,
                "blas_threads": self.blas_threads}


def _run(spec: RunSpec, trajectory: _Trajectory, timing: _Timing,
         on_step: Callable[[int, float, float], None] | None, started: float) -> tuple[str, str]:
    """Validate, warm up, init and step (one BLAS thread, the allocator's thresholds fixed:
    :mod:`svibench.allocator`) until the budget or the time limit ends; (status, message) of the run."""
    entry = get_registry(spec.plugins).algorithm(spec.algorithm)
    model = build_model(spec.problem, spec.plugins)
    trajectory.describe(model, spec.problem)
    alg = entry.build(dict(spec.params))
    alg.check_params()
    keep_freed_memory()
    with one_thread() as timing.blas_threads:
        if timing.warm_up is not None:
            timing.warm_up.start()
            warm_up(alg, model)
            timing.warm_up.stop()
        return _loop(spec, trajectory, model, alg, timing.algorithm, on_step, started)


def _loop(spec: RunSpec, trajectory: _Trajectory, model: Model, alg: Algorithm, watch: Stopwatch,
          on_step: Callable[[int, float, float], None] | None, started: float) -> tuple[str, str]:
    """The timed part of a run: ``init``, then ``step`` until the budget (CPU seconds) or the time limit (wall)."""
    alg_seeds, eval_seeds = run_seeds(spec)
    schedule = _Schedule(spec)

    def evaluate(iteration: int, epoch: float) -> None:
        rng = np.random.default_rng(eval_seeds.spawn(1)[0])
        trajectory.record(model, alg, rng, iteration, epoch, watch.cpu, watch.wall)

    def finish(status: str, message: str) -> tuple[str, str]:
        trajectory.finish(model, alg, np.random.default_rng(eval_seeds.spawn(1)[0]))
        return status, message

    watch.start()
    alg.init(model, np.random.default_rng(alg_seeds))
    watch.stop()
    iteration, seen = 0, 0
    evaluate(0, 0.0)
    while True:
        n = _chunk(spec, schedule, alg, iteration, seen / model.n_train, watch.cpu)
        watch.start()
        seen += alg.advance(n) if n > 1 else alg.step()
        watch.stop()
        iteration += n
        epoch = seen / model.n_train
        done = spec.budget.exhausted(iteration, epoch, watch.cpu)
        if on_step is not None:
            on_step(iteration, epoch, watch.cpu)
        if schedule.due(iteration, epoch, watch.cpu) or done:
            evaluate(iteration, epoch)
            if not done and spec.budget.until is not None and spec.budget.until.reached(trajectory.rows):
                return finish("ok", f"converged at iteration {iteration}: {spec.budget.until.describe()}")
        if done:
            return finish("ok", "")
        if spec.timeout is not None and time.monotonic() - started > spec.timeout:
            if not trajectory.ends_at(iteration):
                evaluate(iteration, epoch)
            return finish("timeout", f"run exceeded its time limit of {spec.timeout:g} s at iteration {iteration}")


def _chunk(spec: RunSpec, schedule: _Schedule, alg: Algorithm, iteration: int, epoch: float, seconds: float) -> int:
    """Steps to take at once: 1, or for an algorithm that fuses its steps (``Algorithm.fused``) as many as
    reach the next checkpoint or the budget and no further, at the rates of the steps so far (the first is
    a single step, so a rate is known; a seconds limit may be passed by at most the rate's error)."""
    if not alg.fused or iteration == 0:
        return 1
    rates = (epoch / iteration, seconds / iteration)
    return min(spec.budget.steps_within(iteration, epoch, seconds, *rates),
               schedule.room(iteration, epoch, seconds, *rates))


def to_dataset(
    spec: RunSpec,
    rows: list[dict[str, float]],
    metrics: dict[str, Metric],
    status: str,
    message: str,
    tb: str = "",
    wall_seconds: float = float("nan"),
    evaluation_seconds: float = float("nan"),
    accuracy_seconds: float = float("nan"),
    answer: str = "",
    warmup_seconds: float = float("nan"),
    blas_threads: float = float("nan"),
    reference: str = "",
) -> xr.Dataset:
    """One run's trajectory with its identity in the attributes (the per-run file schema).

    The identity includes its structured parts (``method``, ``variant``, ``problem_base``,
    ``problem_grid``; dicts as JSON) and what its metrics mean (``metric_info``: JSON of the
    model's :meth:`~svibench.model.Model.metric_info` on its data, ``answer``), so that reports
    read them instead of parsing names.  ``wall_seconds``: the whole run, wall clock;
    ``evaluation_seconds``: evaluation, wall clock, of which ``accuracy_seconds`` scoring q against a reference
    posterior (0 without one); ``warmup_seconds``: :func:`warm_up`, CPU
    seconds (NaN: no warm-up); ``blas_threads``: the largest BLAS/OpenMP pool in force during
    the run (1 when pinned); ``reference``: the reference posterior that scored its accuracy metrics, or why
    there is none (:func:`svibench.reference.attach.scorer_for`).
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
        budget=canonical_json(spec.budget.key()),
        status=status,
        message=message,
        traceback=tb,
        wall_seconds=wall_seconds,
        evaluation_seconds=evaluation_seconds,
        accuracy_seconds=accuracy_seconds,
        metric_info=table_json(metrics),
        answer=answer,
        warmup_seconds=warmup_seconds,
        blas_threads=blas_threads,
        reference=reference,
    )
    return ds
