"""What the conformance checks run on: algorithms under test (subjects) and the small problems of models."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from ..algorithm import Algorithm
from ..data import data_dir
from ..model import Model
from ..problem import build_model
from ..registry import AlgorithmEntry, Registry, RegistryError, get_registry
from ..spec import ProblemSpec

__all__ = ["CheckFailed", "CheckSkipped", "SmallProblem", "small_problems", "Subject", "resolve"]


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

    def build(self, plugins: tuple[str, ...] = ()) -> Model:
        return build_model(self.spec(f"conformance/{self.model}"), plugins, cache=False)


def small_problems(registry: Registry) -> tuple[dict[str, SmallProblem], dict[str, str]]:
    """(model name → its small problem, model name → why it has none)."""
    found: dict[str, SmallProblem] = {}
    missing: dict[str, str] = {}
    for name, (model_cls, _) in sorted(registry.models.items()):
        table = getattr(model_cls, "conformance_problem", None)
        if table is None:
            missing[name] = "declares no conformance_problem"
            continue
        problem = SmallProblem(name, **table)
        if problem.dataset.lower() not in registry.datasets:
            missing[name] = f"its conformance dataset {problem.dataset!r} is not registered"
            continue
        info, _ = registry.datasets[problem.dataset.lower()]
        absent = [f.path for f in info.files if not (data_dir() / f.path).exists()]
        if absent:  # a model whose small problem needs a file is checked where the file is, never downloaded here
            missing[name] = (f"its conformance dataset {problem.dataset!r} needs {', '.join(absent)} in the data "
                             f"directory {data_dir()} (set SVIBENCH_DATA_DIR to a folder that holds it)")
            continue
        found[name] = problem
    return found, missing


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
        """The small problems of the models it claims; none is a skip that says why (each distinct reason it gives
        for the models it rejects, e.g. a peer's missing library, and the models without a small problem)."""
        claimed, rejected = self.claims()
        if not claimed:
            _, missing = small_problems(self.registry)
            why = list(dict.fromkeys(reason for _, reason in rejected)) + [f"{m}: {r}" for m, r in missing.items()]
            raise CheckSkipped("claims no model that has a small problem" + (f" ({'; '.join(why)})" if why else ""))
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

