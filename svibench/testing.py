"""Conformance checks for algorithms, in the spirit of scikit-learn's ``check_estimator``.

Each check is a small standalone function ``check_<property>(subject)`` that
raises :class:`CheckFailed` with what is wrong (or :class:`CheckSkipped` with
why it does not apply).  The same checks run on every built-in algorithm in CI
(``tests/test_conformance.py``) and on plugins, three ways::

    check_algorithm("damped-vmp", known_failures={"check_picklable": "holds a lock"})

    @parametrize_with_checks([DampedVMP])          # pytest, one test per check
    def test_conformance(algorithm, check):
        check(algorithm)

    $ svibench check path/to/plugin.py             # or a registry / entry-point name

Small problems
--------------
The checks run an algorithm on small synthetic problems, one per model that
declares one.  A model declares its problem as a class attribute::

    conformance_problem = {"dataset": "gmm-synthetic", "dataset_params": {"n": 300},
                           "model_params": {"components": 3}, "steps": 20}

(``steps``: the budget in which the ELBO must improve).  :data:`SMALL_PROBLEMS`
holds the problems of built-in models that do not carry the attribute.  A model
with neither is left out, and the skipped checks say so.
"""
from __future__ import annotations

import dataclasses
import inspect
import json
import pickle
import random
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping
from unittest import mock

import numpy as np

from .algorithm import Algorithm
from .registry import AlgorithmEntry, Registry, RegistryError, get_registry
from .spec import Budget, ProblemSpec, RunSpec

__all__ = [
    "SmallProblem",
    "SMALL_PROBLEMS",
    "Subject",
    "CheckResult",
    "CheckFailed",
    "CheckSkipped",
    "ConformanceError",
    "CHECKS",
    "resolve",
    "small_problems",
    "check_algorithm",
    "run_checks",
    "parametrize_with_checks",
    "cli_check",
]

#: numpy's constructor, captured so that the suite's own generators escape the spy of check_seed_matters.
_new_rng = np.random.default_rng

#: Steps of the short runs (determinism, mutation, pickling).
FEW_STEPS = 5

#: Small problems of built-in models without a ``conformance_problem`` attribute.
SMALL_PROBLEMS: dict[str, dict[str, Any]] = {
    "gmm": {
        "dataset": "gmm-synthetic",
        "dataset_params": {"n": 300, "n_test": 100, "dim": 2, "components": 3, "seed": 0},
        "model_params": {"components": 3},
    },
    "linreg": {
        "dataset": "linreg-synthetic",
        "dataset_params": {"n": 300, "n_test": 100, "dim": 3, "seed": 0},
    },
}


class CheckFailed(AssertionError):
    """The algorithm violates the property a check pins down."""


class CheckSkipped(Exception):
    """The check does not apply (the message says why)."""


@dataclass(frozen=True)
class SmallProblem:
    """A model on a small dataset, built fresh for every run (so no run sees another's state)."""

    model: str
    dataset: str
    dataset_params: dict[str, Any] = field(default_factory=dict)
    model_params: dict[str, Any] = field(default_factory=dict)
    steps: int = 20

    def spec(self, name: str) -> ProblemSpec:
        return ProblemSpec(name, self.model, self.dataset, dict(self.model_params), dict(self.dataset_params))

    def build(self, registry: Registry) -> Any:
        data = registry.dataset(self.dataset).loader(**self.dataset_params)
        return registry.model(self.model)(data, **self.model_params)


def small_problems(registry: Registry) -> tuple[dict[str, SmallProblem], dict[str, str]]:
    """(model name → its small problem, model name → why it has none)."""
    found: dict[str, SmallProblem] = {}
    missing: dict[str, str] = {}
    for name, (model_cls, _) in sorted(registry.models.items()):
        table = getattr(model_cls, "conformance_problem", None) or SMALL_PROBLEMS.get(name)
        if table is None:
            missing[name] = "declares no conformance_problem"
            continue
        problem = SmallProblem(name, **table)
        if problem.dataset.lower() not in registry.datasets:
            missing[name] = f"its conformance dataset {problem.dataset!r} is not registered"
            continue
        found[name] = problem
    return found, missing


# --------------------------------------------------------------------------- subjects
@dataclass(frozen=True)
class Subject:
    """An algorithm under test: its registry entry and the plugin files it needs."""

    entry: AlgorithmEntry
    plugins: tuple[str, ...] = ()
    registered: bool = True

    @property
    def registry(self) -> Registry:
        return get_registry(self.plugins)

    def __str__(self) -> str:
        return f"{self.entry.name} ({self.entry.source})"

    def build(self) -> Algorithm:
        return self.entry.build({})

    def claims(self) -> tuple[list[SmallProblem], list[tuple[SmallProblem, str]]]:
        """(problems of models it claims, (problem, reason) of models it rejects)."""
        problems, _ = small_problems(self.registry)
        claimed, rejected = [], []
        for name, problem in problems.items():
            reason = self.entry.incompatibility(self.registry.model(name))
            if reason is None:
                claimed.append(problem)
            else:
                rejected.append((problem, reason))
        return claimed, rejected

    def claimed(self) -> list[SmallProblem]:
        claimed, _ = self.claims()
        if not claimed:
            _, missing = small_problems(self.registry)
            without = "; ".join(f"{m}: {r}" for m, r in missing.items())
            raise CheckSkipped(f"claims no model that has a small problem{' (' + without + ')' if without else ''}")
        return claimed


def resolve(obj: Any, plugins: Iterable[str] = ()) -> list[Subject]:
    """The algorithms named by ``obj``: a class, a registry name, an entry-point name or a plugin file."""
    plugins = tuple(str(Path(p).resolve()) for p in plugins)
    if isinstance(obj, AlgorithmEntry):
        return [Subject(obj, plugins)]
    if isinstance(obj, type) and issubclass(obj, Algorithm):
        registry = get_registry(plugins)
        for entry in registry.algorithms.values():
            if entry.cls is obj and not entry.fixed:
                return [Subject(entry, plugins)]
        where = f"class {obj.__module__}.{obj.__qualname__}"
        return [Subject(AlgorithmEntry(obj.name, obj, obj.label or obj.name, {}, where), plugins, registered=False)]
    text = str(obj)
    if text.endswith(".py") or Path(text).is_file():
        path = str(Path(text).resolve())
        plugins = plugins + (path,) if path not in plugins else plugins
        registry = get_registry(plugins)
        source = f"plugin file {path}"
        if source in registry.unavailable:
            raise RegistryError(f"{source} failed to load: {registry.unavailable[source]}")
        subjects = [Subject(e, plugins) for _, e in sorted(registry.algorithms.items()) if e.source == source]
        if not subjects:
            raise RegistryError(f"{source} defines no Algorithm subclass with a `name`")
        return subjects
    registry = get_registry(plugins)
    if text.lower() in registry.algorithms:
        return [Subject(registry.algorithm(text), plugins)]
    from_entry_point = [
        Subject(e, plugins) for _, e in sorted(registry.algorithms.items())
        if e.source.startswith(f"entry point {text} =") or e.source.endswith(f"({text})")
    ]
    if from_entry_point:
        return from_entry_point
    failed = {s: r for s, r in registry.unavailable.items() if s.startswith(f"entry point {text} =") or s.endswith(f"({text})")}
    if failed:
        raise RegistryError("; ".join(f"{s} failed to load: {r}" for s, r in failed.items()))
    registry.algorithm(text)  # raises with the valid names
    raise AssertionError("unreachable")


# --------------------------------------------------------------------------- helpers
def _leaves(obj: Any, path: str = "", depth: int = 0, seen: set[int] | None = None) -> Iterator[tuple[str, Any]]:
    """(path, value) of every array/scalar inside nested dicts, sequences, dataclasses and objects."""
    seen = set() if seen is None else seen
    if isinstance(obj, (np.ndarray, np.generic, int, float, complex, str, bytes, bool)) or obj is None:
        yield path, obj
        return
    if id(obj) in seen or depth > 6:
        return
    seen.add(id(obj))
    if isinstance(obj, Mapping):
        items: Iterable[tuple[Any, Any]] = sorted(obj.items(), key=lambda kv: str(kv[0]))
    elif isinstance(obj, (list, tuple)):
        items = enumerate(obj)
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        items = ((f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj))
    elif hasattr(obj, "__dict__") and not callable(obj):
        items = sorted(vars(obj).items())
    else:
        return
    for key, value in items:
        yield from _leaves(value, f"{path}[{key!r}]" if isinstance(obj, (Mapping, list, tuple)) else f"{path}.{key}", depth + 1, seen)


def _differences(a: Any, b: Any) -> list[str]:
    """Where two nested values differ (arrays compared exactly, NaN equal to NaN)."""
    la, lb = dict(_leaves(a)), dict(_leaves(b))
    if la.keys() != lb.keys():
        return [f"structure differs: {sorted(la.keys() ^ lb.keys())[:3]}"]
    out = []
    for key, x in la.items():
        y = lb[key]
        if isinstance(x, (np.ndarray, np.generic, float, int, complex)) and not isinstance(x, bool):
            try:
                same = np.array_equal(np.asarray(x), np.asarray(y), equal_nan=np.asarray(x).dtype.kind in "fc")
            except TypeError:
                same = np.array_equal(np.asarray(x), np.asarray(y))
        else:
            same = x == y
        if not same:
            out.append(key or "value")
    return out


def _data_arrays(model: Any) -> dict[str, np.ndarray]:
    data = model.data
    arrays = {f"data.train[{k!r}]": v for k, v in data.train.items() if isinstance(v, np.ndarray)}
    arrays.update({f"data.test[{k!r}]": v for k, v in data.test.items() if isinstance(v, np.ndarray)})
    return arrays


@contextmanager
def _global_random_state(seed: int) -> Iterator[None]:
    """Seed numpy's and Python's global generators (an algorithm must not depend on them)."""
    np_state, py_state = np.random.get_state(), random.getstate()
    np.random.seed(seed)
    random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(np_state)
        random.setstate(py_state)


@dataclass
class _Run:
    alg: Algorithm
    model: Any
    rng: np.random.Generator
    touched: list[int]
    first: dict[str, float]

    def metrics(self) -> dict[str, float]:
        return self.model.evaluate(self.alg.posterior(), _new_rng(0))


def _run(subject: Subject, problem: SmallProblem, seed: int, steps: int, *,
         evaluate_each: bool = False, model: Any = None) -> _Run:
    """init + ``steps`` steps on a fresh model; errors name the model and the phase."""
    model = problem.build(subject.registry) if model is None else model
    alg = subject.build()
    rng = _new_rng(seed)
    phase = "init"
    try:
        alg.init(model, rng)
        phase = "evaluate after init"
        first = model.evaluate(alg.posterior(), _new_rng(0))
        touched = []
        for t in range(1, steps + 1):
            phase = f"step {t}"
            touched.append(alg.step())
            if evaluate_each:
                phase = f"evaluate after step {t}"
                model.evaluate(alg.posterior(), _new_rng(t))
    except (CheckFailed, CheckSkipped):
        raise
    except Exception as exc:
        frame = traceback.extract_tb(exc.__traceback__)[-1]
        raise CheckFailed(
            f"on {problem.model} ({problem.dataset}), {phase} raised {type(exc).__name__}: {exc} "
            f"(at {frame.filename}:{frame.lineno})"
        ) from exc
    return _Run(alg, model, rng, touched, first)


# --------------------------------------------------------------------------- the checks
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
    diff = _differences(params, clone.get_params())
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
        run = _run(subject, problem, seed=0, steps=FEW_STEPS)
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
            run = _run(subject, problem, seed=0, steps=FEW_STEPS)
            values = run.metrics()
        except Exception:  # it does not work there: the rejection is honest
            continue
        if values and all(np.isfinite(v) for v in values.values()):
            raise CheckFailed(f"declares {problem.model} incompatible ({reason}) but runs on it with finite "
                              f"metrics {_fmt(values)}; declare it compatible, or say why it is wrong")


def check_deterministic_by_seed(subject: Subject) -> None:
    """The same seed gives the identical posterior and metrics, whatever the global random state."""
    for problem in subject.claimed():
        with _global_random_state(1):
            a = _run(subject, problem, seed=0, steps=FEW_STEPS)
            ma = a.metrics()
        with _global_random_state(2):
            b = _run(subject, problem, seed=0, steps=FEW_STEPS)
            mb = b.metrics()
        diff = _differences(a.alg.posterior(), b.alg.posterior()) + _differences(ma, mb)
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
            return _new_rng(seed, *args, **kwargs)

        runs = []
        for seed in (0, 1):
            model = problem.build(subject.registry)  # data generators are not the algorithm's
            with mock.patch("numpy.random.default_rng", spy):
                run = _run(subject, problem, seed=seed, steps=FEW_STEPS, model=model)
            runs.append((run, run.rng.bit_generator.state != _new_rng(seed).bit_generator.state))
        (a, used_a), (b, used_b) = runs
        if _differences(a.alg.posterior(), b.alg.posterior()):
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
        quiet = _run(subject, problem, seed=0, steps=FEW_STEPS)
        watched = _run(subject, problem, seed=0, steps=FEW_STEPS, evaluate_each=True)
        diff = _differences(quiet.alg.posterior(), watched.alg.posterior())
        if diff:
            raise CheckFailed(f"on {problem.model}, evaluating between steps changes the posterior ({', '.join(diff[:4])}); "
                              "posterior() must not change state or do work the clock would miss")


def check_does_not_mutate_data(subject: Subject) -> None:
    """Data and model arrays are unchanged by value, stay read-only, and the algorithm holds no writable view of them."""
    for problem in subject.claimed():
        model = problem.build(subject.registry)
        snapshot = {k: np.array(v, copy=True) for k, v in _leaves(model, "model") if isinstance(v, np.ndarray)}
        data = _data_arrays(model)
        run = _run(subject, problem, seed=0, steps=FEW_STEPS, model=model)
        run.metrics()
        after = {k: v for k, v in _leaves(model, "model") if isinstance(v, np.ndarray)}
        changed = [k for k, v in snapshot.items() if k not in after or not np.array_equal(v, after[k], equal_nan=True)]
        if changed:
            raise CheckFailed(f"on {problem.model}, init/step change the model's arrays: {', '.join(changed[:4])}")
        writable = [k for k, v in data.items() if v.flags.writeable]
        if writable:
            raise CheckFailed(f"on {problem.model}, the data arrays {', '.join(writable)} were made writable")
        for path, value in _leaves(run.alg, "alg"):
            if isinstance(value, np.ndarray) and value.flags.writeable:
                for name, array in data.items():
                    if np.shares_memory(value, array):
                        raise CheckFailed(f"on {problem.model}, {path} is a writable view of {name}")


def check_finite_metrics(subject: Subject) -> None:
    """On every claimed small problem the metrics after init and after a few steps are finite,
    and are among the model's declared ``metrics``."""
    for problem in subject.claimed():
        run = _run(subject, problem, seed=0, steps=FEW_STEPS)
        for when, values in (("after init", run.first), (f"after {FEW_STEPS} steps", run.metrics())):
            bad = {k: v for k, v in values.items() if not np.isfinite(v)}
            if bad:
                raise CheckFailed(f"on {problem.model}, non-finite metrics {when}: {_fmt(bad)}")


def check_improves_over_init(subject: Subject) -> None:
    """Within the small problem's step budget the ELBO (or, without one, the held-out
    log-likelihood) rises above its value at initialisation."""
    for problem in subject.claimed():
        run = _run(subject, problem, seed=0, steps=problem.steps)
        last = run.metrics()
        metric = next((m for m in ("elbo", "heldout_loglik") if m in run.first and m in last), None)
        if metric is None:
            raise CheckSkipped(f"{problem.model} reports neither elbo nor heldout_loglik")
        if not last[metric] > run.first[metric]:
            raise CheckFailed(f"on {problem.model}, {metric} after {problem.steps} steps is {last[metric]:.6g}, "
                              f"not above its value at init {run.first[metric]:.6g}")


def check_picklable(subject: Subject) -> None:
    """The constructed algorithm, its RunSpec, and the algorithm after ``init`` survive pickling
    (runs travel to Dask workers); the unpickled state continues the same trajectory."""
    alg = subject.build()
    try:
        clone = pickle.loads(pickle.dumps(alg))
    except Exception as exc:
        raise CheckFailed(f"the constructed algorithm does not pickle: {type(exc).__name__}: {exc}") from None
    if _differences(alg.get_params(), clone.get_params()):
        raise CheckFailed("pickling the constructed algorithm changes its hyperparameters")
    problem = subject.claimed()[0]
    spec = _run_spec(subject, problem)
    if pickle.loads(pickle.dumps(spec)) != spec:
        raise CheckFailed("its RunSpec does not survive pickling")
    run = _run(subject, problem, seed=0, steps=2)
    try:
        copy = pickle.loads(pickle.dumps(run.alg))
    except Exception as exc:
        raise CheckFailed(f"the algorithm after init does not pickle: {type(exc).__name__}: {exc}") from None
    run.alg.step()
    copy.step()
    diff = _differences(run.alg.posterior(), copy.posterior())
    if diff:
        raise CheckFailed(f"after unpickling, the next step differs ({', '.join(diff[:4])}): "
                          "some state (e.g. the rng) is lost in pickling")


def check_runs_in_runner(subject: Subject) -> None:
    """The runner (as in a study) runs it by registry name on a small problem to status ``ok``."""
    if not subject.registered:
        raise CheckSkipped("not registered (the runner reaches algorithms by registry name); "
                           "declare an entry point or pass the file with --plugin")
    from .runner import execute

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
    check_does_not_mutate_data,
    check_finite_metrics,
    check_improves_over_init,
    check_picklable,
    check_runs_in_runner,
)


# --------------------------------------------------------------------------- running them
@dataclass(frozen=True)
class CheckResult:
    """One check on one algorithm: ``pass``, ``fail``, ``skip``, ``xfail`` (known failure) or ``xpass``."""

    check: str
    algorithm: str
    source: str
    status: str
    message: str = ""

    def __str__(self) -> str:
        tail = f": {self.message}" if self.message else ""
        return f"{self.status.upper():<5} {self.check} — {self.algorithm} ({self.source}){tail}"


class ConformanceError(AssertionError):
    """Raised by :func:`check_algorithm` when a check fails; ``results`` has every outcome."""

    def __init__(self, results: list[CheckResult]) -> None:
        self.results = results
        failed = [str(r) for r in results if r.status == "fail"]
        super().__init__(f"{len(failed)} conformance check(s) failed:\n" + "\n".join(failed))


def run_checks(subject: Subject, known_failures: Mapping[str, str] | None = None) -> Iterator[CheckResult]:
    """Run every check on ``subject``, yielding each outcome as it is known."""
    known = dict(known_failures or {})
    unknown = sorted(set(known) - {c.__name__ for c in CHECKS})
    if unknown:
        raise ValueError(f"known_failures names unknown checks {unknown}; checks: {', '.join(c.__name__ for c in CHECKS)}")
    for check in CHECKS:
        name = check.__name__
        try:
            check(subject)
        except CheckSkipped as exc:
            status, message = "skip", str(exc)
        except Exception as exc:
            text = str(exc) if isinstance(exc, CheckFailed) else f"{type(exc).__name__}: {exc}"
            status, message = ("xfail", f"{text} [known: {known[name]}]") if name in known else ("fail", text)
        else:
            status, message = ("xpass", f"listed as known failure ({known[name]}) but passes") if name in known else ("pass", "")
        yield CheckResult(name, subject.entry.name, subject.entry.source, status, message)


def check_algorithm(algorithm: Any, known_failures: Mapping[str, str] | None = None, *,
                    plugins: Iterable[str] = (), raise_on_failure: bool = True) -> list[CheckResult]:
    """Run the conformance suite on an algorithm class, registry name, entry-point name or plugin file.

    Parameters
    ----------
    algorithm : Algorithm subclass, str or AlgorithmEntry
        What to check; a plugin file checks every algorithm it defines.
    known_failures : dict of check name to reason
        Checks expected to fail; they are run and reported as ``xfail``.
    plugins : paths of plugin files the algorithm or its models need.
    raise_on_failure : bool
        Raise :class:`ConformanceError` if a check fails (otherwise just return the results).
    """
    results = [r for subject in resolve(algorithm, plugins) for r in run_checks(subject, known_failures)]
    if raise_on_failure and any(r.status == "fail" for r in results):
        raise ConformanceError(results)
    return results


class _PytestCheck:
    """A check as a pytest parameter: skips become ``pytest.skip``."""

    def __init__(self, check: Callable[[Subject], None]) -> None:
        self.check = check

    def __call__(self, subject: Subject) -> None:
        import pytest

        try:
            self.check(subject)
        except CheckSkipped as exc:
            pytest.skip(str(exc))

    def __repr__(self) -> str:
        return self.check.__name__


def parametrize_with_checks(algorithms: Iterable[Any], *, plugins: Iterable[str] = (),
                            known_failures: Mapping[str, str] | None = None):
    """A ``pytest.mark.parametrize`` over (algorithm, check) pairs; known failures become ``xfail``.

    Examples
    --------
    >>> @parametrize_with_checks(["svi", "vmp"])        # doctest: +SKIP
    ... def test_conformance(algorithm, check):
    ...     check(algorithm)
    """
    import pytest

    known = dict(known_failures or {})
    params = []
    for obj in algorithms:
        for subject in resolve(obj, plugins):
            for check in CHECKS:
                marks = [pytest.mark.xfail(reason=known[check.__name__], strict=False)] if check.__name__ in known else []
                params.append(pytest.param(subject, _PytestCheck(check), id=f"{subject.entry.name}-{check.__name__}", marks=marks))
    return pytest.mark.parametrize("algorithm, check", params)


def cli_check(target: str, plugins: Iterable[str] = (), known_failures: Mapping[str, str] | None = None,
              out: Callable[[str], None] = print) -> int:
    """``svibench check TARGET``: print every outcome; 0 if nothing failed, 1 otherwise."""
    try:
        subjects = resolve(target, plugins)
    except RegistryError as exc:
        out(f"FAIL  check_plugin_loads — {target}: {exc}")
        return 1
    failed = 0
    for subject in subjects:
        for result in run_checks(subject, known_failures):
            out(str(result))
            failed += result.status == "fail"
    out(f"{failed} check(s) failed" if failed else f"all checks passed ({len(subjects)} algorithm(s))")
    return 1 if failed else 0
