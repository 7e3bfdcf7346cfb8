"""The registry: algorithms, models and datasets from built-ins, entry points and plugin files.

Built-ins are the modules of ``svibench.algorithms``, ``svibench.models`` and
``svibench.datasets`` (found by listing the package folders, so a file dropped
into ``algorithms/`` of an editable install is found without reinstalling).
Third parties register through the entry-point groups of the same names, or
are loaded from a file path.  A source that fails to import is listed as
unavailable with the reason; it never breaks the others.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import pkgutil
import sys
import traceback
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable

from .algorithm import Algorithm
from .data import DatasetInfo
from .entry_points import ENTRY_POINTS_VAR, GROUPS, selected
from .errors import UserError
from .model import Model

__all__ = ["Registry", "AlgorithmEntry", "RegistryError", "get_registry", "accepted_params", "ENTRY_POINTS_VAR"]


#: Arguments of a model's ``__init__`` that are not a study's to set.
_NOT_PARAMS = ("self", "data")


def accepted_params(func: Callable) -> list[str]:
    """The keyword parameters of ``func`` a study may set (a model's ``__init__`` without ``self``/``data``,
    a dataset's loader, an algorithm's keyword-only ``__init__`` arguments)."""
    return [p.name for p in inspect.signature(func).parameters.values()
            if p.name not in _NOT_PARAMS and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]



class RegistryError(UserError, LookupError):
    """Unknown name, or two sources registering the same name."""


@dataclass(frozen=True)
class AlgorithmEntry:
    """A registered algorithm name: its class and the hyperparameters the name fixes."""

    name: str
    cls: type[Algorithm]
    label: str
    fixed: dict[str, Any]
    source: str

    def param_names(self) -> list[str]:
        return [p for p in self.cls.param_names() if p not in self.fixed]

    def build(self, params: dict[str, Any]) -> Algorithm:
        return self.cls(**{**self.fixed, **params})

    def incompatibility(self, model_cls: type, params: dict[str, Any] | None = None) -> str | None:
        return self.cls.incompatibility(model_cls, {**self.fixed, **(params or {})})


@dataclass
class Registry:
    """Everything known by name, plus the sources that could not be loaded."""

    algorithms: dict[str, AlgorithmEntry] = field(default_factory=dict)
    models: dict[str, tuple[type[Model], str]] = field(default_factory=dict)
    datasets: dict[str, tuple[DatasetInfo, str]] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)

    # -- lookup with helpful errors
    def algorithm(self, name: str) -> AlgorithmEntry:
        return self._get(self.algorithms, name, "algorithm")

    def model(self, name: str) -> type[Model]:
        return self._get(self.models, name, "model")[0]

    def dataset(self, name: str) -> DatasetInfo:
        return self._get(self.datasets, name, "dataset")[0]

    def _get(self, table: dict, name: str, what: str):
        key = name.lower()
        if key in table:
            return table[key]
        hint = "".join(f"; {source} failed to load: {reason}" for source, reason in sorted(self.unavailable.items()))
        raise RegistryError(f"unknown {what} {name!r}; valid names: {', '.join(sorted(table))}{hint}")

    # -- compatibility
    def compatibility(self) -> dict[tuple[str, str], str | None]:
        """(algorithm, model) → None if compatible, else the reason for skipping."""
        return {
            (a, m): _safe_incompatibility(entry, model_cls)
            for a, entry in sorted(self.algorithms.items())
            for m, (model_cls, _) in sorted(self.models.items())
        }

    # -- filling
    def add_module(self, module: ModuleType, source: str) -> None:
        """Register what ``module`` defines (not what it imports)."""
        for obj in vars(module).values():
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            self.add_object(obj, source)

    def add_object(self, obj: Any, source: str) -> None:
        if inspect.isclass(obj) and issubclass(obj, Algorithm) and "name" in vars(obj):
            self._put(self.algorithms, obj.name, AlgorithmEntry(obj.name, obj, vars(obj).get("label") or obj.name, {}, source), source, "algorithm")
            for name, preset in vars(obj).get("presets", {}).items():
                self._put(self.algorithms, name, AlgorithmEntry(name, obj, preset.label, dict(preset.params), source), source, "algorithm")
        elif inspect.isclass(obj) and issubclass(obj, Model) and "name" in vars(obj):
            self._put(self.models, obj.name, (obj, source), source, "model")
        elif callable(obj) and hasattr(obj, "_svibench_dataset"):
            info: DatasetInfo = obj._svibench_dataset
            self._put(self.datasets, info.name, (info, source), source, "dataset")

    def _put(self, table: dict, name: str, value: Any, source: str, what: str) -> None:
        key = name.lower()
        if key in table:
            old = table[key]
            old_source = old.source if isinstance(old, AlgorithmEntry) else old[1]
            if old_source == source:
                return
            raise RegistryError(f"{what} name {name!r} is registered twice: by {old_source} and by {source}; rename one")
        table[key] = value

    def add_plugin_file(self, path: str | Path) -> None:
        """Load algorithms/models/datasets from a Python file."""
        path = Path(path).resolve()
        source = f"plugin file {path}"
        if not path.is_file():
            raise RegistryError(f"plugin file {path} does not exist")
        module_name = f"svibench_plugin_{hashlib.sha1(str(path).encode()).hexdigest()[:12]}"
        try:
            spec = importlib.util.spec_from_file_location(module_name, path)
            module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
            sys.modules[module_name] = module
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        except Exception as exc:
            sys.modules.pop(module_name, None)
            self.unavailable[source] = _describe_import_error(exc)
            return
        before = len(self.algorithms) + len(self.models) + len(self.datasets)
        self.add_module(module, source)
        if len(self.algorithms) + len(self.models) + len(self.datasets) == before:
            self.unavailable[source] = "defines no Algorithm or Model subclass with a `name` and no @dataset loader"


def _safe_incompatibility(entry: AlgorithmEntry, model_cls: type) -> str | None:
    """The entry's reason to skip ``model_cls``; a plugin whose check raises is skipped, not fatal."""
    try:
        return entry.incompatibility(model_cls)
    except Exception as exc:
        return f"{entry.cls.__name__}.incompatibility raised {type(exc).__name__}: {exc} ({entry.source})"


def _describe_import_error(exc: BaseException) -> str:
    last = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    where = f" ({last[0].filename}:{last[0].lineno})" if last else ""
    if isinstance(exc, SyntaxError):
        where = f" ({exc.filename}:{exc.lineno})"
    return f"{type(exc).__name__}: {exc}{where}"


def _builtin_modules(package: str) -> Iterable[tuple[str, ModuleType | BaseException]]:
    pkg = importlib.import_module(package)
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        name = f"{package}.{info.name}"
        try:
            yield name, importlib.import_module(name)
        except Exception as exc:
            yield name, exc


def build_registry(plugins: Iterable[str | Path] = ()) -> Registry:
    """A fresh registry: built-ins, installed entry points (of the distributions :data:`ENTRY_POINTS_VAR` allows),
    then plugin files."""
    registry = Registry()
    for group in GROUPS:
        for name, module in _builtin_modules(f"svibench.{group}"):
            if isinstance(module, BaseException):
                registry.unavailable[name] = _describe_import_error(module)
            else:
                registry.add_module(module, f"built-in {name}")
        for ep in selected(f"svibench.{group}"):
            source = f"entry point {ep.name} = {ep.value} ({ep.dist.name if ep.dist else '?'})"
            try:
                obj = ep.load()
            except Exception as exc:
                registry.unavailable[source] = _describe_import_error(exc)
                continue
            before = len(registry.algorithms) + len(registry.models) + len(registry.datasets)
            if isinstance(obj, ModuleType):
                registry.add_module(obj, source)
            else:
                registry.add_object(obj, source)
            if len(registry.algorithms) + len(registry.models) + len(registry.datasets) == before:
                registry.unavailable[source] = (
                    f"{ep.value} defines no Algorithm or Model subclass with a `name` and no @dataset loader"
                )
    for path in plugins:
        registry.add_plugin_file(path)
    return registry


@lru_cache(maxsize=16)
def get_registry(plugins: tuple[str, ...] = ()) -> Registry:
    """The registry for a set of plugin files, built once per process."""
    return build_registry(plugins)
