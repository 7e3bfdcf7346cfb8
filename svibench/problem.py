"""A problem spec made concrete: its dataset loaded and its model bound to it.

The one place that turns a :class:`~svibench.spec.ProblemSpec` into data and a
model.  The runner, the conformance suite (:mod:`svibench.testing`), the
sweep's up-front data check and the asv benchmarks all go through it.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Iterable

from .data import Dataset
from .model import Model
from .registry import get_registry
from .spec import ProblemSpec

__all__ = ["load_dataset", "build_model"]


def load_dataset(spec: ProblemSpec, plugins: Iterable[str] = ()) -> Dataset:
    """The dataset of ``spec``, from its registered loader (which verifies real files' checksums).

    Raises
    ------
    RegistryError
        The dataset name is not registered (the message lists the valid ones).
    DataError
        A data file is missing, corrupt or malformed; :class:`~svibench.data.DatasetUnavailable`
        if this machine cannot provide the dataset at all.
    """
    return get_registry(tuple(plugins)).dataset(spec.dataset).loader(**spec.dataset_params)


@lru_cache(maxsize=8)
def _build_model_cached(key: str, plugins: tuple[str, ...]) -> Model:
    return build_model(ProblemSpec(**json.loads(key)), plugins, cache=False)


def build_model(spec: ProblemSpec, plugins: Iterable[str] = (), *, cache: bool = True) -> Model:
    """Load the dataset of ``spec`` and bind its model to it.

    With ``cache`` (the runner's default) the model is kept per process and
    per spec, so runs of one problem share their data; ``cache=False`` builds
    a fresh one (the conformance suite, so no run sees another's state).
    """
    plugins = tuple(plugins)
    if cache:
        return _build_model_cached(spec.key(), plugins)
    return get_registry(plugins).model(spec.model)(load_dataset(spec, plugins), **spec.model_params)
