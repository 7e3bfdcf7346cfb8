"""The conformance checks: each ``check_<property>(subject)`` raises :class:`CheckFailed` saying what
is wrong, or :class:`CheckSkipped` saying why it does not apply."""
from __future__ import annotations

import inspect
import json
import pickle
from typing import Any, Callable, Mapping
from unittest import mock

import numpy as np

from ..algorithm import Algorithm
from ..metrics import HOW_TO_DECLARE, Metric, MetricError, check_declaration
from ..spec import Budget, RunSpec
from .subjects import CheckFailed, CheckSkipped, SmallProblem, Subject
from .trials import data_arrays, differences, global_random_state, leaves, new_rng, trial

__all__ = ["CHECKS", "FEW_STEPS"]

#: Steps of the short runs (determinism, mutation, pickling).
FEW_STEPS = 5

_RESERVED = {name for name in dir(Algorithm) if not name.startswith("_")}


def check_constructor_stores_only(subject: Subject) -> None:
    """``__init__`` takes keyword-only hyperparameters with defaults and stores each, unchanged, under its name."""
    cls = subject.entry.cls
    params = [p for p in inspect.signature(cls.__init__).parameters.values() if p.name != "self"]
    bad_kind = [p.name for p in params if p.kind != p.KEYWORD_ONLY]
    if bad_kind:
        raise CheckFailed(f"__init__ parameters must be keyword-only (after `*`): {', '.join(bad_kind)}")
    no_default = [p.name for p in params if p.default is p.empty and p.name not in subject.entry.fixed]
    if no_default:
        raise CheckFailed(f"every hyperparameter needs a default: {', '.join(no_default)}")
    clash = sorted({p.name for p in params} & _RESERVED)
    if clash:
        raise CheckFailed(f"hyperparameter names clash with Algorithm members: {', '.join(clash)}")
    values = {p.name: subject.entry.fixed.get(p.name, p.default) for p in params}
    alg = cls(**values)
    stored = dict(vars(alg))
    extra = sorted(set(stored) - set(values))
    if extra:
        raise CheckFailed(f"__init__ sets attributes that are not hyperparameters: {', '.join(extra)} "
                          "(set state in init(), ending its name with '_')")
    for name, value in values.items():
        if name not in stored:
            raise CheckFailed(f"__init__ does not store hyperparameter {name!r} as self.{name}")
        if stored[name] is not value:
            raise CheckFailed(f"__init__ changes hyperparameter {name!r} ({value!r} → {stored[name]!r}); "
                              "store it as given and validate in check_params()")


def check_params_round_trip(subject: Subject) -> None:
    """``cls(**alg.get_params())`` gives the same hyperparameters; ``check_params`` accepts the defaults."""
    alg = subject.build()
    params = alg.get_params()
    clone = type(alg)(**params)
    diff = differences(params, clone.get_params())
    if diff:
        raise CheckFailed(f"get_params → cls(**params) → get_params changes {', '.join(diff)}")
    try:
        json.dumps(params)
    except TypeError as exc:
        raise CheckFailed(f"hyperparameters must be JSON values (they name runs in results files): {exc}") from None
    try:
        alg.check_params()
    except ValueError as exc:
        raise CheckFailed(f"check_params() rejects the default hyperparameters {params}: {exc}") from None
    repr(alg)


def check_runs_on_claimed_models(subject: Subject) -> None:
    """``init`` and ``step`` work on every model the algorithm declares compatible; ``step`` returns
    the positive number of data points it touched."""
    for problem in subject.claimed():
        run = trial(subject, problem, seed=0, steps=FEW_STEPS)
        for t, n in enumerate(run.touched, 1):
            if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
                raise CheckFailed(f"on {problem.model}, step {t} returned {n!r}; step() must return the "
                                  "number of data points it touched, a positive int (the runner counts epochs with it)")


def check_rejections_are_honest(subject: Subject) -> None:
    """A model the algorithm rejects (``incompatibility`` gives a reason) really does not work with it."""
    _, rejected = subject.claims()
    if not rejected:
        raise CheckSkipped("rejects no model that has a small problem")
    for problem, reason in rejected:
        try:
            run = trial(subject, problem, seed=0, steps=FEW_STEPS)
            values = run.metrics()
        except Exception:  # it does not work there: the rejection is honest
            continue
        if values and all(np.isfinite(v) for v in values.values()):
            raise CheckFailed(f"declares {problem.model} incompatible ({reason}) but runs on it with finite "
                              f"metrics {_fmt(values)}; declare it compatible, or say why it is wrong")


def check_deterministic_by_seed(subject: Subject) -> None:
    """The same seed gives the identical posterior and metrics, whatever the global random state."""
    for problem in subject.claimed():
        with global_random_state(1):
            a = trial(subject, problem, seed=0, steps=FEW_STEPS)
            ma = a.metrics()
        with global_random_state(2):
            b = trial(subject, problem, seed=0, steps=FEW_STEPS)
            mb = b.metrics()
        diff = differences(a.alg.posterior(), b.alg.posterior()) + differences(ma, mb)
        if diff:
            raise CheckFailed(f"on {problem.model}, two runs with seed 0 differ after {FEW_STEPS} steps in "
                              f"{', '.join(diff[:4])}; draw every random number from the rng passed to init()")


def check_seed_matters(subject: Subject) -> None:
    """A stochastic algorithm gives different results for different seeds (its randomness comes from ``rng``)."""
    for problem in subject.claimed():
        own_generators: list[Any] = []

        def spy(seed: Any = None, *args: Any, **kwargs: Any) -> np.random.Generator:
            if not isinstance(seed, (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)):
                own_generators.append(seed)
            return new_rng(seed, *args, **kwargs)

        runs = []
        for seed in (0, 1):
            model = problem.build(subject.plugins)  # data generators are not the algorithm's
            with mock.patch("numpy.random.default_rng", spy):
                run = trial(subject, problem, seed=seed, steps=FEW_STEPS, model=model)
            runs.append((run, run.rng.bit_generator.state != new_rng(seed).bit_generator.state))
        (a, used_a), (b, used_b) = runs
        if differences(a.alg.posterior(), b.alg.posterior()):
            continue
        if used_a or used_b:
            raise CheckFailed(f"on {problem.model}, draws from rng but seeds 0 and 1 give the identical posterior "
                              f"after {FEW_STEPS} steps: the draws are ignored")
        if own_generators:
            raise CheckFailed(f"on {problem.model}, ignores the rng passed to init() and makes its own generator "
                              f"(numpy.random.default_rng({own_generators[0]!r})); seeds 0 and 1 give the identical posterior")


def check_evaluation_does_not_perturb(subject: Subject) -> None:
    """Calling ``posterior()`` and evaluating it between steps leaves the trajectory unchanged
    (the runner evaluates at checkpoints, with the clock stopped)."""
    for problem in subject.claimed():
        quiet = trial(subject, problem, seed=0, steps=FEW_STEPS)
        watched = trial(subject, problem, seed=0, steps=FEW_STEPS, evaluate_each=True)
        diff = differences(quiet.alg.posterior(), watched.alg.posterior())
        if diff:
            raise CheckFailed(f"on {problem.model}, evaluating between steps changes the posterior ({', '.join(diff[:4])}); "
                              "posterior() must not change state or do work the clock would miss")


def check_warm_up_does_not_perturb(subject: Subject) -> None:
    """The runner's warm-up (a throwaway copy of the algorithm, one step on a copy of the model, before
    the clock starts) works on every claimed model and leaves the trajectory unchanged."""
    from ..runner import warm_up

    for problem in subject.claimed():
        model = problem.build(subject.plugins)
        try:
            warm_up(subject.build(), model)
        except Exception as exc:
            raise CheckFailed(f"on {problem.model}, the warm-up raised {type(exc).__name__}: {exc}") from None
        warmed = trial(subject, problem, seed=0, steps=FEW_STEPS, model=model)
        cold = trial(subject, problem, seed=0, steps=FEW_STEPS)
        diff = differences(cold.alg.posterior(), warmed.alg.posterior()) + differences(cold.metrics(), warmed.metrics())
        if diff:
            raise CheckFailed(f"on {problem.model}, a warm-up before the run changes its trajectory ({', '.join(diff[:4])}); "
                              "keep no state outside the instance (class attributes, module globals)")


def check_does_not_mutate_data(subject: Subject) -> None:
    """Data and model arrays are unchanged by value, stay read-only, and the algorithm holds no writable view of them."""
    for problem in subject.claimed():
        model = problem.build(subject.plugins)
        snapshot = {k: np.array(v, copy=True) for k, v in leaves(model, "model") if isinstance(v, np.ndarray)}
        data = data_arrays(model)
        run = trial(subject, problem, seed=0, steps=FEW_STEPS, model=model)
        run.metrics()
        after = {k: v for k, v in leaves(model, "model") if isinstance(v, np.ndarray)}
        changed = [k for k, v in snapshot.items() if k not in after or not np.array_equal(v, after[k], equal_nan=True)]
        if changed:
            raise CheckFailed(f"on {problem.model}, init/step change the model's arrays: {', '.join(changed[:4])}")
        writable = [k for k, v in data.items() if v.flags.writeable]
        if writable:
            raise CheckFailed(f"on {problem.model}, the data arrays {', '.join(writable)} were made writable")
        for path, value in leaves(run.alg, "alg"):
            if isinstance(value, np.ndarray) and value.flags.writeable:
                for name, array in data.items():
                    if np.shares_memory(value, array):
                        raise CheckFailed(f"on {problem.model}, {path} is a writable view of {name}")


def check_finite_metrics(subject: Subject) -> None:
    """On every claimed small problem the metrics after init and after a few steps are finite, declared by the
    model with their meaning (:mod:`svibench.metrics`), and inside their declared valid range."""
    for problem in subject.claimed():
        run = trial(subject, problem, seed=0, steps=FEW_STEPS)
        info = _declared(run.model)
        for when, values in (("after init", run.first), (f"after {FEW_STEPS} steps", run.metrics())):
            bad = {k: v for k, v in values.items() if not np.isfinite(v)}
            if bad:
                raise CheckFailed(f"on {problem.model}, non-finite metrics {when}: {_fmt(bad)}")
            undeclared = sorted(set(values) - set(info))
            if undeclared:
                raise CheckFailed(f"on {problem.model}, evaluate returns {', '.join(undeclared)}, which the model's "
                                  f"`metrics` does not declare; {HOW_TO_DECLARE}")
            outside = [f"{k}={v:.6g} (valid: [{info[k].low:g}, {info[k].high:g}])" for k, v in values.items()
                       if not info[k].valid(v)]
            if outside:
                raise CheckFailed(f"on {problem.model}, metrics outside their declared range {when}: {', '.join(outside)}")


def _declared(model: Any) -> dict[str, Metric]:
    """The model's metric table on its data (``metric_info``), after checking its class's declaration and that the
    instance keeps the same names, each a :class:`~svibench.metrics.Metric`."""
    try:
        table = check_declaration(type(model))
    except MetricError as exc:
        raise CheckFailed(str(exc)) from None
    info = model.metric_info()
    if list(info) != list(table) or not all(isinstance(m, Metric) and m.name == k for k, m in info.items()):
        raise CheckFailed(f"model {model.name!r}: metric_info() must give a Metric for each of the names its class "
                          f"declares ({', '.join(table)}), got {info!r}")
    return info


def check_improves_over_init(subject: Subject) -> None:
    """Within the small problem's step budget the model's objective (its first objective metric the posterior
    has, or else its declared answer) gets better than at initialisation, in its declared direction."""
    for problem in subject.claimed():
        run = trial(subject, problem, seed=0, steps=problem.steps)
        last = run.metrics()
        info = run.model.metric_info()
        both = [m for m in info if m in run.first and m in last]
        objectives = [m for m in both if info[m].kind == "objective"]
        answer = type(run.model).answer
        metric = objectives[0] if objectives else answer if answer in both else None
        if metric is None:
            raise CheckSkipped(f"{problem.model} reports neither an objective metric nor its answer {answer!r}")
        if not info[metric].signed(last[metric]) > info[metric].signed(run.first[metric]):
            raise CheckFailed(f"on {problem.model}, {metric} after {problem.steps} steps is {last[metric]:.6g}, "
                              f"not better ({info[metric].direction} is better) than at init {run.first[metric]:.6g}")


def check_picklable(subject: Subject) -> None:
    """The constructed algorithm, its RunSpec, and the algorithm after ``init`` survive pickling
    (runs travel to Dask workers); the unpickled state continues the same trajectory."""
    alg = subject.build()
    try:
        clone = pickle.loads(pickle.dumps(alg))
    except Exception as exc:
        raise CheckFailed(f"the constructed algorithm does not pickle: {type(exc).__name__}: {exc}") from None
    if differences(alg.get_params(), clone.get_params()):
        raise CheckFailed("pickling the constructed algorithm changes its hyperparameters")
    problem = subject.claimed()[0]
    spec = _run_spec(subject, problem)
    if pickle.loads(pickle.dumps(spec)) != spec:
        raise CheckFailed("its RunSpec does not survive pickling")
    run = trial(subject, problem, seed=0, steps=2)
    try:
        copy = pickle.loads(pickle.dumps(run.alg))
    except Exception as exc:
        raise CheckFailed(f"the algorithm after init does not pickle: {type(exc).__name__}: {exc}") from None
    run.alg.step()
    copy.step()
    diff = differences(run.alg.posterior(), copy.posterior())
    if diff:
        raise CheckFailed(f"after unpickling, the next step differs ({', '.join(diff[:4])}): "
                          "some state (e.g. the rng) is lost in pickling")


def check_runs_in_runner(subject: Subject) -> None:
    """The runner (as in a study) runs it by registry name on a small problem to status ``ok``."""
    if not subject.registered:
        raise CheckSkipped("not registered (the runner reaches algorithms by registry name); "
                           "declare an entry point or pass the file with --plugin")
    from ..runner import execute

    problem = subject.claimed()[0]
    result = execute(_run_spec(subject, problem))
    if result.attrs["status"] != "ok":
        raise CheckFailed(f"on {problem.model}, the run ended {result.attrs['status']}: {result.attrs['message']}")


def _run_spec(subject: Subject, problem: SmallProblem) -> RunSpec:
    entry = subject.entry
    params = {k: v for k, v in subject.build().get_params().items() if k not in entry.fixed}
    # Own problem name per algorithm: the runner caches models by problem, and a
    # faulty algorithm must not reach another's data.
    return RunSpec("conformance", problem.spec(f"conformance/{entry.name}/{problem.model}"), entry.name,
                   entry.label, params, 0, Budget(iterations=FEW_STEPS), plugins=subject.plugins)


def _fmt(values: Mapping[str, float]) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in values.items())


CHECKS: tuple[Callable[[Subject], None], ...] = (
    check_constructor_stores_only,
    check_params_round_trip,
    check_runs_on_claimed_models,
    check_rejections_are_honest,
    check_deterministic_by_seed,
    check_seed_matters,
    check_evaluation_does_not_perturb,
    check_warm_up_does_not_perturb,
    check_does_not_mutate_data,
    check_finite_metrics,
    check_improves_over_init,
    check_picklable,
    check_runs_in_runner,
)

