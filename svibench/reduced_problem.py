"""A problem made smaller for the plan's probes (:mod:`svibench.plan`), and the law that carries a probe's timings
back to the whole problem.

A dataset declares the loader parameters that count its rows (``@dataset(..., size=...)``: images, documents,
cells, points; train and test alike) and a model the parameters that count rows it evaluates on
(:attr:`~svibench.model.Model.row_params`, e.g. an evaluation subset).  :func:`reduce` multiplies each of them by
one fraction f (rounded, at least 1; a parameter at 0 or None, "every row", stays), so the reduced problem is the
whole one with fewer rows: the same model, dimensions, factors, algorithm and batch sizes.

The scaling law (:func:`exponent`, :func:`extrapolate`): each part of a probe (the init, a step, an evaluation)
is either constant in the rows (a minibatch step, a fixed evaluation subset) or linear in them (a batch pass, an
evaluation of every test row), and two reduced problems, at f and :data:`SMALLER` · f of the rows, tell which:
the part's growth from one to the other, as an exponent b of cost ∝ fᵇ, is rounded to 0 or 1.  The fitted b
itself is not used: at a few thousand rows a step's fixed costs flatten it, and carried over tens of times the
rows it would put a batch step at a fraction of its cost.  No model with a declared size does more than linear
work per row.  The fraction is chosen so that the larger reduced problem has :data:`PROBE_ROWS` rows in its
largest declared count, raised if need be so that every declared count keeps at least :data:`FEWEST_ROWS` rows in
the smaller one (with fewer, a part that grows with it cannot show its growth over its fixed costs); a problem
that would be reduced by less than :data:`WHOLE_ABOVE` is probed whole.
"""
from __future__ import annotations

import inspect
import math
from dataclasses import replace
from typing import Any, Iterable

from .registry import get_registry
from .spec import ProblemSpec

__all__ = ["PROBE_ROWS", "WHOLE_ABOVE", "FEWEST_ROWS", "SMALLER", "fraction", "reduce", "exponent", "extrapolate"]

#: The rows of the larger reduced problem, in its largest declared count.
PROBE_ROWS = 2000
#: A problem whose reduction fraction would be above this is probed whole (the law would save little).
WHOLE_ABOVE = 0.25
#: The smaller reduced problem has this fraction of the larger one's rows.
SMALLER = 0.25
#: The fewest rows any declared count keeps in the smaller reduced problem.  With fewer, a part that grows with it
#: is mostly fixed costs there (an evaluation of a handful of test documents), and the law cannot tell constant
#: from linear.
FEWEST_ROWS = 64


def _sizes(spec: ProblemSpec, plugins: Iterable[str]) -> dict[str, Any]:
    """The dataset's declared size parameters and their values in ``spec`` (the loader's defaults if not set)."""
    info = get_registry(tuple(plugins)).dataset(spec.dataset)
    params = info.with_defaults(spec.dataset_params)
    return {name: params[name] for name in info.size}


def fraction(spec: ProblemSpec, plugins: Iterable[str] = ()) -> float | None:
    """The fraction f of the larger reduced problem, or None if the problem is probed whole: its dataset declares
    no size, or f would be above :data:`WHOLE_ABOVE`.  f puts :data:`PROBE_ROWS` rows in the largest declared count
    (the dataset's and the model's :attr:`row_params`), and at least :data:`FEWEST_ROWS` in the smallest one at the
    smaller reduced problem, so that a part growing with it shows its growth over fixed costs."""
    sizes = [v for v in _sizes(spec, plugins).values() if _is_count(v)]
    if not sizes:
        return None
    counts = sizes + [v for v in _row_params(spec, plugins).values() if _is_count(v)]
    f = max(PROBE_ROWS / max(counts), FEWEST_ROWS / (SMALLER * min(counts)))
    return f if f <= WHOLE_ABOVE else None


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _row_params(spec: ProblemSpec, plugins: Iterable[str]) -> dict[str, Any]:
    """The model's :attr:`row_params` and their values in ``spec`` (its defaults if not set)."""
    model = get_registry(tuple(plugins)).model(spec.model)
    defaults = inspect.signature(model).parameters
    return {k: spec.model_params.get(k, defaults[k].default if k in defaults else None) for k in model.row_params}


def _scaled(value: Any, f: float) -> Any:
    return max(1, round(value * f)) if _is_count(value) else value


def reduce(spec: ProblemSpec, f: float, plugins: Iterable[str] = ()) -> ProblemSpec:
    """``spec`` with every declared row count (the dataset's sizes, the model's :attr:`row_params`) times ``f``."""
    data = {**spec.dataset_params, **{k: _scaled(v, f) for k, v in _sizes(spec, plugins).items()}}
    params = {**spec.model_params,
              **{k: _scaled(v, f) for k, v in _row_params(spec, plugins).items() if v is not None}}
    return replace(spec, name=f"{spec.name} (rows × {f:.3g})", dataset_params=data, model_params=params)


def exponent(at_smaller: float, at_f: float, sign: float = 1.0) -> float:
    """The law's exponent of a part from its CPU seconds at :data:`SMALLER` · f and at f: ``sign`` (linear; -1 for a
    quantity that falls as the rows grow, the epochs a minibatch covers) if it changed by more than the square root
    of the rows' ratio between them (halfway from constant to linear on a log scale), else 0 (constant); 0 when
    either is not positive (a part the probe did not measure)."""
    if not (at_smaller > 0 and at_f > 0):
        return 0.0
    return sign if sign * math.log(at_f / at_smaller) > 0.5 * math.log(1 / SMALLER) else 0.0


def extrapolate(at_f: float, f: float, b: float) -> float:
    """The part at the whole problem (fraction 1) from its value at ``f``: at_f · (1/f)ᵇ."""
    return at_f * f ** -b
