"""Rules for expectations under a standard normal, E[g(ε)] ≈ Σₖ wₖ g(εₖ), ε ~ N(0, 1).

Gauss–Hermite (deterministic, exact for polynomials of degree < 2K) and Monte
Carlo (K draws, weights 1/K) share this form, so code that consumes a rule
serves both the "exact" and the stochastic variant of an algorithm.

:func:`expectation_rule` reads the accuracy setting of the deterministic
("exact") variants: ``"accurate"`` asks the model for its own accurate
expectation (no rule), ``"gauss-hermite-N"`` for the N-node rule (the papers'
choice, e.g. Khan & Lin 2017's ``"gauss-hermite-50"``).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["Rule", "gauss_hermite", "monte_carlo", "expectation_rule", "ACCURATE"]

#: The accuracy setting that asks the model for its own accurate expectation.
ACCURATE = "accurate"


@dataclass(frozen=True)
class Rule:
    """Nodes εₖ and weights wₖ (summing to 1) of an expectation under N(0, 1).

    ``deterministic`` is True for quadrature rules, False for Monte-Carlo draws.
    """

    nodes: np.ndarray
    weights: np.ndarray
    deterministic: bool = True


@lru_cache(maxsize=32)
def _gauss_hermite(n: int) -> Rule:
    x, w = np.polynomial.hermite_e.hermegauss(n)  # weight exp(-x²/2)
    w = w / w.sum()
    x.setflags(write=False)
    w.setflags(write=False)
    return Rule(x, w)


def gauss_hermite(n: int) -> Rule:
    """The ``n``-node Gauss–Hermite rule for N(0, 1) (probabilists' Hermite polynomials)."""
    if not 1 <= n <= 150:
        raise ValueError(f"Gauss–Hermite needs 1 to 150 nodes (numpy's rule overflows beyond), got {n}")
    return _gauss_hermite(int(n))


def monte_carlo(rng: np.random.Generator, n: int) -> Rule:
    """``n`` standard-normal draws from ``rng`` with equal weights."""
    if n < 1:
        raise ValueError(f"Monte Carlo needs at least one sample, got {n}")
    return Rule(rng.standard_normal(n), np.full(n, 1.0 / n), deterministic=False)


def expectation_rule(setting: str) -> Rule | None:
    """The rule an accuracy setting names: None for ``"accurate"``, Gauss–Hermite for ``"gauss-hermite-N"``."""
    prefix = "gauss-hermite-"
    n = setting[len(prefix):] if isinstance(setting, str) and setting.startswith(prefix) else ""
    if setting == ACCURATE:
        return None
    if not (n.isdigit() and 1 <= int(n) <= 150):
        raise ValueError(f"quadrature must be {ACCURATE!r} or 'gauss-hermite-N' with N in 1..150 "
                         f"(the paper's is 'gauss-hermite-50'), got {setting!r}")
    return gauss_hermite(int(n))
