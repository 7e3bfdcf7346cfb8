"""Seeded evaluation subsets: a model whose evaluation grows with its data estimates some metrics on one fixed,
seeded subset of its evaluation items (test images, training documents, rows) at every checkpoint, and measures
them on every item at the run's last checkpoint (:meth:`svibench.model.Model.evaluate_final`) under the name
``<metric>_whole``, declared with ``Metric.tracked_by`` naming its per-checkpoint estimate.

One subset serves every method, seed and checkpoint of a problem (it depends only on its size and seed), so the
trajectories compare paired; the report states, from the runs' own last checkpoints, how far the subset's value was
from the whole set's (:mod:`svibench.report.subsets`).  Without a subset, ``evaluate`` returns the ``_whole``
metrics too, equal to the checkpoint's, so that a claim that reads them reads one name at every setting.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

import numpy as np

from .metrics import Metric

__all__ = ["WHOLE", "whole_name", "whole_metrics", "with_whole", "whole_declarations", "subset_refusal", "draw_subset"]

#: The suffix of a metric measured on the whole set at the last checkpoint.
WHOLE = "_whole"


def whole_name(name: str) -> str:
    """The name of ``name`` measured on the whole set."""
    return f"{name}{WHOLE}"


def whole_metrics(values: Mapping[str, float], names: Iterable[str]) -> dict[str, float]:
    """``values``' metrics among ``names`` under their ``_whole`` names."""
    return {whole_name(name): values[name] for name in names if name in values}


def with_whole(values: dict[str, float], names: Iterable[str], subset: np.ndarray | None) -> dict[str, float]:
    """A checkpoint's ``values``; when it evaluated no subset (``subset`` None), with the ``_whole`` metrics of
    ``names`` added, equal to them (the module's convention)."""
    return values if subset is not None else {**values, **whole_metrics(values, names)}


def whole_declarations(metrics: Mapping[str, Metric], names: Iterable[str], how: str) -> tuple[Metric, ...]:
    """The ``_whole`` declarations of ``metrics[name]`` for ``names``: the same direction, kind, unit and range,
    tracked by the checkpoint metric; ``how`` says in a few words what "whole" is (e.g. "every test image")."""
    return tuple(replace(metrics[name], name=whole_name(name), primary=False, tracked_by=name,
                         description=f"{name} on {how}; at the last checkpoint only when the checkpoints evaluate a "
                                     f"subset, else at every checkpoint, equal to {name}")
                 for name in names)


def subset_refusal(size: int, total: int, param: str, items: str) -> str:
    """Why ``size`` cannot be a subset of ``total`` ``items`` (empty: it can; 0 means every item)."""
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 0 <= size <= total:
        return (f"{param} = {size!r} must be 0 (every one of the {total} {items}) or a number of them from 1 to "
                f"{total}")
    return ""


def draw_subset(size: int, total: int, seed: int, param: str, items: str) -> np.ndarray | None:
    """The sorted indices of a seeded subset of ``size`` of ``total`` items (``numpy.random.default_rng(seed)``,
    without replacement); None for every item (``size`` 0 or ``total``).  Raises ValueError (one line) for a size
    that is not one (:func:`subset_refusal`)."""
    why = subset_refusal(size, total, param, items)
    if why:
        raise ValueError(why)
    if size in (0, total):
        return None
    return np.sort(np.random.default_rng(seed).choice(total, size=int(size), replace=False))
