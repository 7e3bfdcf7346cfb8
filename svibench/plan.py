"""What regenerating studies will cost, known before any run (``svibench regenerate --plan``, ``svibench run --plan``).

A study's runs are the sweep's own (:attr:`~svibench.study.Study.runs`, the expansion ``run_study`` executes).
They are grouped by algorithm point and problem, since the seeds of a group cost the same, and each group's
CPU seconds per run are estimated as::

    warm-up + init + steps × (CPU s per step) + evaluations × (CPU s per evaluation) + the last evaluation's extra

``steps`` is the fewest steps that exhaust the run's budget (its iterations, its epochs over the epochs a step
covers, its seconds over the seconds a step takes).  The algorithm's part (init and steps) stops at the budget's
seconds, and the whole run at its time limit.  ``evaluations`` counts the checkpoints the run reaches, with
iteration 0; the last one's extra is what a model measures only there (``Model.evaluate_final``, e.g. BPFA's
whole image where its checkpoints read pixel windows), estimated as ``Model.final_evaluation_ratio`` evaluations (the
probe does not make it: on a paper-scale image it costs more than the probe).  The rates come from a timed first checkpoint, a *probe*: the runner itself
(:func:`svibench.runner.execute`, warm-up included) on the group's algorithm and problem, with a budget of at most
:data:`PROBE_STEPS` steps or :data:`PROBE_SECONDS` CPU seconds and two checkpoints, on the probing process's CPU
clock.  On N workers the probes run in N processes at once (:func:`plan_studies`), as the runs would.
A run whose seconds limit binds is its own estimate: only its warm-up, init and evaluations come from the probe.

Two things keep a plan of the paper scales short.  Groups that differ only in a dataset's split or seed
(:data:`SAME_COST`: which rows, not how many), or in what its ``cost_params`` leaves out (``@dataset``: the
image-patches' image, but for its side), share one probe, made on the first of them.  And a problem whose
dataset declares its size (``@dataset(..., size=...)``) and has many more rows than
:data:`~svibench.reduced_problem.PROBE_ROWS` is not probed whole: two reduced problems are, and a stated scaling
law carries their timings to the whole (:func:`reduced_probe`, :mod:`svibench.reduced_problem`; the group's line
in the plan gives the law).  Such an estimate carries the reduced problems' cost per row to the whole, which can
differ from the whole problem's own (caches, the work per row as a fit converges).

Each estimate is split into :data:`PARTS`: stepping (init and steps), evaluation, scoring against a reference,
and compilation (the warm-up); writing the run files and the report is not estimated (``regenerate`` prints the
time of each).  ``regenerate --plan`` holds each study's estimate against what the runs of its committed report
cost (:func:`svibench.regenerate.against_committed`).

A probe depends on the code, the machine and its group only, so ``regenerate --plan`` and ``run --plan`` keep
each one (:mod:`svibench.probe_cache`): a second plan by the same code on the same machine probes nothing.

Nothing is written but the probes' cache.  Loading each problem's data (once per worker) and starting the workers
are not counted.  The wall clock on N workers replays the sweep's order (:func:`wall_seconds`).
"""
from __future__ import annotations

import heapq
import math
import multiprocessing
import time
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Callable, Iterator, Sequence

import numpy as np

from . import probe_cache, reduced_problem
from .executors.local import start_method
from .problem import build_model
from .registry import get_registry
from .runner import execute
from .spec import SCORE_REFERENCE, Budget, Checkpoints, RunSpec, canonical_json
from .study import Study

__all__ = ["Probe", "GroupPlan", "StudyPlan", "PARTS", "probe", "run_parts", "run_seconds", "evaluations", "plan_study",
           "plan_studies", "wall_seconds", "format_study", "format_parts", "format_total", "PROBE_STEPS",
           "PROBE_SECONDS"]

#: A probe's budget: at most this many steps ...
PROBE_STEPS = 1000
#: ... or this many CPU seconds of the algorithm, or the run's own budget, whichever comes first (at least one step).
#: 0.25 s instead of 1 s cut the default-scale plan of the six studies with regenerated runs from 470-500 to
#: 300-320 s of CPU; each study's estimate stayed within 0.97-1.14 of its runs' CPU (with 1 s: 0.97-1.21) (issue 33).
PROBE_SECONDS = 0.25


@dataclass(frozen=True)
class Probe:
    """CPU seconds of a probe's parts: ``warm_up``, ``init``, one step, one evaluation (with the run's fixed
    overhead), the epochs one step covers, the steps timed, whether the probe ended ``diverged`` (its run, on
    the same seed, would end there too; the estimate is then an upper bound), and the last evaluation's extra
    (``Model.evaluate_final``)."""

    warm_up: float
    init: float
    per_step: float
    per_evaluation: float
    epochs_per_step: float
    steps: int
    diverged: bool = False
    final_evaluation: float = 0.0
    #: Of ``per_evaluation``, the part spent scoring against a reference posterior (:mod:`svibench.reference`).
    per_scoring: float = 0.0
    #: The fraction of the rows of the larger reduced problem the probe was made on (1: the whole problem), and the
    #: exponent of each part's scaling law (:func:`reduced_probe`).
    reduced: float = 1.0
    exponents: dict[str, float] = field(default_factory=dict)


def probe(spec: RunSpec) -> Probe:
    """Time the first steps of ``spec``'s algorithm on its problem (see the module docstring), or on two reduced
    problems carried to it by the scaling law (:func:`reduced_probe`) if its dataset declares its size and the problem
    is large; raises RuntimeError with the run's message if the probe does not end ``ok`` with a step timed."""
    f = reduced_problem.fraction(spec.problem, spec.plugins)
    if f is not None:
        try:
            return reduced_probe(spec, f)
        except Exception:  # a reduced problem the model or the algorithm refuses (a batch above its rows): probe whole
            pass
    return _probe(spec)


def _probe(spec: RunSpec) -> Probe:
    ratio = build_model(spec.problem, spec.plugins).final_evaluation_ratio()  # its data loads once per worker: not
    # part of a run's cost
    own = spec.budget
    steps = min(own.iterations or PROBE_STEPS, PROBE_STEPS)
    short = replace(spec, budget=Budget(steps, own.epochs, min(own.seconds or PROBE_SECONDS, PROBE_SECONDS)),
                    checkpoints=Checkpoints(at=(steps,)), timeout=None,
                    score_reference=SCORE_REFERENCE[0])  # one checkpoint's scoring is timed, however often the run scores
    cpu = time.process_time()
    ds = execute(short, final=False)
    cpu = time.process_time() - cpu
    if ds.attrs["status"] not in ("ok", "diverged") or ds.sizes["checkpoint"] < 2:
        raise RuntimeError(f"the probe ended {ds.attrs['status']}: {ds.attrs['message']}")
    done, init, algorithm = int(ds["iteration"][-1]), float(ds["time"][0]), float(ds["time"][-1])
    warm = float(ds.attrs["warmup_seconds"])
    per_evaluation = max(0.0, cpu - warm - algorithm) / ds.sizes["checkpoint"]
    per_scoring = min(per_evaluation, float(ds.attrs.get("accuracy_seconds", 0.0)) / ds.sizes["checkpoint"])
    return Probe(warm, init, (algorithm - init) / done, per_evaluation, float(ds["epoch"][-1]) / done, done,
                 ds.attrs["status"] == "diverged", ratio * per_evaluation, per_scoring)


#: The parts of a probe that the scaling law carries from a reduced problem to the whole one.
SCALED = ("init", "per_step", "per_evaluation", "final_evaluation", "per_scoring")


def reduced_probe(spec: RunSpec, f: float) -> Probe:
    """``spec``'s probe on the whole problem, from probes of the problem reduced to ``f`` and a quarter of that
    (:mod:`svibench.reduced_problem`): each of :data:`SCALED` carried to the whole as constant or linear in the rows,
    as the two tell; the epochs a step covers as constant or falling as 1/rows (a minibatch covers fewer epochs of
    more rows); the warm-up, which is compilation plus an init and a step, by the growth of the init and the step.
    Scoring against a reference is measured only where the reduced problem has one (a reference belongs to a
    problem)."""
    smaller, at_f = (_probe(replace(spec, problem=reduced_problem.reduce(spec.problem, x, spec.plugins)))
                     for x in (f * reduced_problem.SMALLER, f))
    exponents = {k: reduced_problem.exponent(getattr(smaller, k), getattr(at_f, k)) for k in SCALED}
    exponents["epochs_per_step"] = reduced_problem.exponent(smaller.epochs_per_step, at_f.epochs_per_step, -1.0)
    whole = {k: reduced_problem.extrapolate(getattr(at_f, k), f, b) for k, b in exponents.items()}
    growth = whole["init"] + whole["per_step"] - at_f.init - at_f.per_step
    return replace(at_f, **whole, warm_up=at_f.warm_up + max(0.0, growth), diverged=smaller.diverged or at_f.diverged,
                   reduced=f, exponents=exponents)


def evaluations(spec: RunSpec, steps: int, p: Probe) -> int:
    """How many times the runner evaluates run ``spec`` that stops after ``steps`` steps at ``p``'s rates: at
    iteration 0, after each step at which a checkpoint falls due (several may fall in one step), and at the end
    unless a checkpoint falls due at its last step."""
    axis, _ = spec.budget.progress_axis()
    points = spec.checkpoints.schedule(spec.budget)
    if axis == "epochs":
        points = points / p.epochs_per_step if p.epochs_per_step else np.full(len(points), np.inf)
    elif axis == "seconds":
        points = (points - p.init) / p.per_step if p.per_step else np.full(len(points), np.inf)
    due = {int(k) for k in np.ceil(points - 1e-9) if k <= steps}  # the step at which each checkpoint is reached
    return 1 + len(due) + int(steps not in due)


#: The parts of a run's CPU time that a plan estimates, in the order they are printed.
PARTS = ("stepping", "evaluation", "scoring", "compilation")


def run_parts(spec: RunSpec, p: Probe) -> tuple[dict[str, float], bool]:
    """The estimated CPU seconds of run ``spec`` from its group's probe, split into :data:`PARTS` (stepping: init
    and steps; evaluation: the checkpoints' and the last one's extra, scoring excluded; scoring: against a
    reference, at every checkpoint or at the last (``score_reference``); compilation: the warm-up), and whether its
    seconds limit binds.  A run's time limit scales every part alike."""
    budget = spec.budget
    limits = [budget.iterations, budget.epochs / p.epochs_per_step if budget.epochs and p.epochs_per_step else None,
              max(0.0, budget.seconds - p.init) / p.per_step if budget.seconds and p.per_step else None]
    steps = max(1, math.ceil(min(x for x in limits if x is not None)))
    algorithm = p.init + steps * p.per_step
    binds = budget.seconds is not None and algorithm >= budget.seconds
    n = evaluations(spec, steps, p)
    parts = {"stepping": min(algorithm, budget.seconds) if binds else algorithm,
             "evaluation": n * (p.per_evaluation - p.per_scoring) + p.final_evaluation,
             "scoring": (n if spec.scores_checkpoints else 1) * p.per_scoring, "compilation": p.warm_up}
    total = sum(parts.values())
    if spec.timeout is not None and total > spec.timeout:
        parts = {k: v * spec.timeout / total for k, v in parts.items()}
    return parts, binds


def run_seconds(spec: RunSpec, p: Probe) -> tuple[float, bool]:
    """The estimated CPU seconds of run ``spec`` from its group's probe (:func:`run_parts` summed), and whether its
    seconds limit binds."""
    parts, binds = run_parts(spec, p)
    return sum(parts.values()), binds


@dataclass(frozen=True)
class GroupPlan:
    """The runs of one algorithm point on one problem (its seeds): the estimate per run, or why there is none."""

    label: str
    problem: str
    runs: list[RunSpec]
    seconds: float
    how: str
    #: ``seconds`` split into :data:`PARTS` (empty when not estimated).
    parts: dict[str, float] = field(default_factory=dict)

    @property
    def total(self) -> float:
        return self.seconds * len(self.runs)


@dataclass(frozen=True)
class StudyPlan:
    """A study's groups of runs, in the sweep's order."""

    study: Study
    groups: list[GroupPlan]

    @property
    def runs(self) -> int:
        return sum(len(g.runs) for g in self.groups)

    @property
    def seconds(self) -> float:
        """Estimated CPU seconds of the runs that have an estimate."""
        return sum(g.total for g in self.groups if not math.isnan(g.seconds))

    @property
    def parts(self) -> dict[str, float]:
        """:attr:`seconds` split into :data:`PARTS`."""
        return {k: sum(g.parts.get(k, 0.0) * len(g.runs) for g in self.groups) for k in PARTS}


def _group(runs: list[RunSpec], measured: tuple[Probe, str, RunSpec] | Exception) -> GroupPlan:
    """The plan of a group from the probe of its cost class (:func:`_measured`), or why there is none."""
    first = runs[0]
    try:
        if isinstance(measured, Exception):
            raise measured
        p, source, probed = measured
        parts, binds = run_parts(first, p)
    except Exception as exc:  # data unavailable, a probe that fails: say so, estimate the rest
        return _unestimated(runs, exc)
    how = "seconds budget" if binds else f"{source}: {p.steps} step(s) at {p.per_step:.3g} s"
    how += f", evaluation {p.per_evaluation:.3g} s"
    how += f" (the last +{p.final_evaluation:.3g} s)" if p.final_evaluation else ""
    if p.reduced < 1:
        e = p.exponents
        how += (f"; from the rows × {p.reduced:.3g} and a quarter of that, step ∝ rows^{e['per_step']:.0f}, "
                f"evaluation ∝ rows^{e['per_evaluation']:.0f}")
    how += f"; probed on {probed.problem.name}" if probed.problem.name != first.problem.name else ""
    how += "; the probe diverged: the runs may end early" if p.diverged else ""
    how += f"; {source}" if binds and source != "probe" else ""
    return GroupPlan(first.label, first.problem.name, runs, sum(parts.values()), how, parts)


def _unestimated(runs: list[RunSpec], why: object) -> GroupPlan:
    return GroupPlan(runs[0].label, runs[0].problem.name, runs, math.nan, f"not estimated: {why}")


#: The models this process has probed.  A process's first probe of a model pays first-call costs (imports,
#: compilation) that a worker pays once, not at every evaluation of every run: it is made twice, the first dropped.
_PRIMED: set[str] = set()


def _measured(first: RunSpec, measure: Callable[[RunSpec], Probe], cache: bool = False) -> tuple[Probe, str, RunSpec]:
    """``measure`` of ``first`` made in this process after priming it for the run's model (:data:`_PRIMED`), with
    where it came from; with ``cache``, the probe stored for this code, machine and group if there is one
    (:mod:`svibench.probe_cache`), else stored after.  Raises what the probe raises."""
    stored = _stored(first) if cache else None
    if stored is not None:
        return stored
    if first.problem.model not in _PRIMED:
        _PRIMED.add(first.problem.model)
        try:
            measure(first)
        except Exception:  # the probe below fails alike and says why
            pass
    p = measure(first)
    if cache:
        probe_cache.write(first, asdict(p))
    return p, "probe", first


def _stored(first: RunSpec) -> tuple[Probe, str, RunSpec] | None:
    """The probe the cache holds for ``first``'s group, as :func:`_measured` gives it, or None."""
    stored = probe_cache.read(first)
    return None if stored is None else (Probe(**stored), "probe from the cache", first)


def _measured_or_why(first: RunSpec, measure: Callable[[RunSpec], Probe],
                     cache: bool) -> tuple[Probe, str, RunSpec] | Exception:
    """:func:`_measured`, or the exception it raised (so that a worker hands back why, as a value)."""
    try:
        return _measured(first, measure, cache)
    except Exception as exc:
        return exc


#: Dataset parameters that choose which rows a problem has, not how many: groups that differ only in them (and in
#: nothing else) cost the same, and share one probe, unless the dataset says what its cost depends on
#: (``@dataset(..., cost_params=...)``).
SAME_COST = ("split", "seed")


def _cost_class(run: RunSpec) -> str:
    """What a probe of ``run`` depends on: the dataset's ``cost_params`` of its parameters, or every parameter but
    :data:`SAME_COST`, and everything else of the group."""
    problem = run.problem
    info = get_registry(tuple(run.plugins)).dataset(problem.dataset)
    if info.cost_params is None:
        data = {k: v for k, v in problem.dataset_params.items() if k not in SAME_COST}
    else:
        data = info.cost_params(info.with_defaults(problem.dataset_params))
    return canonical_json([run.algorithm, run.params, problem.model, problem.model_params, problem.dataset, data,
                           run.budget.key(), run.timeout, list(run.plugins)])


def _groups(study: Study) -> list[list[RunSpec]]:
    """``study``'s runs by algorithm point and problem (a group's seeds cost the same), in the sweep's order."""
    groups: dict[tuple[str, str, str], list[RunSpec]] = {}
    for run in study.runs:
        groups.setdefault((run.algorithm, canonical_json(run.params), run.problem.key()), []).append(run)
    return list(groups.values())


def plan_study(study: Study, measure: Callable[[RunSpec], Probe] = probe, cache: bool = False) -> StudyPlan:
    """Group ``study``'s runs (algorithm point × problem; seeds together) and estimate each group with ``measure``
    of its cost class's first run (:data:`SAME_COST`), or its stored probe with ``cache``, in this process."""
    measured: dict[str, tuple[Probe, str, RunSpec] | Exception] = {}
    groups = []
    for runs in _groups(study):
        key = _cost_class(runs[0])
        if key not in measured:
            measured[key] = _measured_or_why(runs[0], measure, cache)
        groups.append(_group(runs, measured[key]))
    return StudyPlan(study, groups)


def plan_studies(studies: Sequence[Study], workers: int = 1, measure: Callable[[RunSpec], Probe] = probe,
                 cache: bool = False) -> Iterator[StudyPlan]:
    """Each study's :func:`plan_study`, in order, as it is ready.  With ``workers`` > 1 the cost classes are probed
    in that many processes at once (each primed for itself), as the sweep would run them, so the plan's wall clock
    falls with the workers; ``measure`` must then pickle (a module's function).  A group whose process failed is
    not estimated, and says so.  With ``cache``, a group probed before by the same code on this machine takes its
    stored probe (:mod:`svibench.probe_cache`)."""
    if workers <= 1:
        yield from (plan_study(study, measure, cache) for study in studies)
        return
    pool: ProcessPoolExecutor | None = None
    known: dict[str, Future | tuple[Probe, str, RunSpec]] = {}  # by cost class

    def submit(first: RunSpec) -> Future | tuple[Probe, str, RunSpec]:
        nonlocal pool
        key = _cost_class(first)
        if key not in known:
            stored = _stored(first) if cache else None
            if stored is not None:  # no worker is started for what the cache holds
                known[key] = stored
            else:
                pool = pool or ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(start_method(None)))
                known[key] = pool.submit(_measured_or_why, first, measure, cache)
        return known[key]

    try:
        pending = [(study, [(runs, submit(runs[0])) for runs in _groups(study)]) for study in studies]
        for study, groups in pending:
            yield StudyPlan(study, [_group(runs, _result(future)) for runs, future in groups])
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _result(future: Future | tuple[Probe, str, RunSpec]) -> tuple[Probe, str, RunSpec] | Exception:
    if not isinstance(future, Future):
        return future
    try:
        return future.result()
    except Exception as exc:  # its process died (out of memory, killed: the pool is broken) or could not take the task
        return RuntimeError(f"its worker process failed ({type(exc).__name__}: {exc})")


def wall_seconds(plans: Sequence[StudyPlan], workers: int) -> float:
    """Estimated wall seconds of the studies on ``workers`` workers, as the sweep runs them: one study after
    another, each study's runs handed out in order to whichever of its ``min(workers, runs)`` workers is free first
    (runs without an estimate count zero)."""
    total = 0.0
    for plan in plans:
        order = {run.run_id: g.seconds for g in plan.groups for run in g.runs}
        free = [0.0] * max(1, min(workers, len(order)))
        for run in plan.study.runs:
            heapq.heappush(free, heapq.heappop(free) + np.nan_to_num(order[run.run_id]))
        total += max(free)
    return total


def _duration(seconds: float) -> str:
    if math.isnan(seconds):
        return "?"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.2f} h"


def format_study(plan: StudyPlan, workers: int) -> str:
    """A study's table: its runs, CPU and wall clock on ``workers``, then per group its label, problem, runs, CPU per
    run and in all, and how it was estimated."""
    lines = [f"{plan.study.name} ({plan.study.scale} scale): {plan.runs} runs, {_duration(plan.seconds)} CPU, about "
             f"{_duration(wall_seconds([plan], workers))} on {workers} worker(s)",
             f"  CPU by part: {format_parts(plan.parts)}"]
    for g in plan.groups:
        lines.append(f"  {g.label:<32} {g.problem:<28} {len(g.runs):>4} × {_duration(g.seconds):>9} = "
                     f"{_duration(g.total):>9}  {g.how}")
    return "\n".join(lines)


def format_parts(parts: dict[str, float]) -> str:
    """"stepping 12.0 s (60%), evaluation …": each of :data:`PARTS` and its share of their sum."""
    total = sum(parts.values())
    return ", ".join(f"{k} {_duration(v)}" + (f" ({v / total:.0%})" if total > 0 else "") for k, v in parts.items())


def format_total(plans: Sequence[StudyPlan], workers: int) -> str:
    """The last line: runs, CPU time and the wall clock on ``workers`` workers of all the studies."""
    missing = sum(len(g.runs) for p in plans for g in p.groups if math.isnan(g.seconds))
    parts = {k: sum(p.parts[k] for p in plans) for k in PARTS}
    return (f"total: {sum(p.runs for p in plans)} runs, {_duration(sum(p.seconds for p in plans))} CPU; on {workers} "
            f"worker(s) about {_duration(wall_seconds(plans, workers))} wall clock"
            + (f" ({missing} run(s) not estimated, counted as zero)" if missing else "")
            + f"\n  CPU by part: {format_parts(parts)}")
