"""Rules for expectations under a standard normal, E[g(ε)] ≈ Σₖ wₖ g(εₖ), ε ~ N(0, 1).

Gauss–Hermite (deterministic, exact for polynomials of degree < 2K) and Monte
Carlo (K draws, weights 1/K) share this form, so code that consumes a rule
serves both the "exact" and the stochastic variant of an algorithm.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

__all__ = ["Rule", "gauss_hermite", "monte_carlo"]


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
