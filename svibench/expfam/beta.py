"""Beta distributions with parameters ``a, b``.

``p(x) = x^{a-1} (1-x)^{b-1} / B(a, b)``, ``T(x) = (log x, log(1-x))``,
``η = (a - 1, b - 1)``, ``A(η) = log Γ(a) + log Γ(b) - log Γ(a+b)`` and
``μ = (ψ(a) - ψ(a+b), ψ(b) - ψ(a+b))``.  The Beta is the ``K = 2`` Dirichlet; the
mean-to-natural solve is shared with :mod:`.dirichlet`.

References
----------
.. [1] T. P. Minka, "Estimating a Dirichlet distribution", 2000 (revised 2012), §1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import digamma, gammaln, polygamma

from .base import MeanParametrization, NaturalParametrization, _require, _size_tuple
from .dirichlet import _solve_concentration

__all__ = ["BetaNatural", "BetaMean"]


@dataclass(frozen=True, eq=False)
class BetaNatural(NaturalParametrization):
    """Natural parameters of Beta distributions.

    Parameters
    ----------
    eta1 : array_like
        ``a - 1``; must exceed -1.
    eta2 : array_like
        ``b - 1``; must exceed -1.
    """

    eta1: np.ndarray
    eta2: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0)

    @classmethod
    def from_ab(cls, a: ArrayLike, b: ArrayLike) -> BetaNatural:
        """From ``a > 0`` and ``b > 0``."""
        a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
        _require(a > 0, "Beta: a must be positive")
        _require(b > 0, "Beta: b must be positive")
        return cls(a - 1.0, b - 1.0)

    def ab(self) -> tuple[np.ndarray, np.ndarray]:
        """``(a, b) = (η₁ + 1, η₂ + 1)``."""
        self._check_domain()
        return self.eta1 + 1.0, self.eta2 + 1.0

    def _check_domain(self) -> None:
        _require((self.eta1 > -1) & (self.eta2 > -1), "BetaNatural: eta1 = a - 1 and eta2 = b - 1 must exceed -1")

    def log_partition(self) -> np.ndarray:
        a, b = self.ab()
        return gammaln(a) + gammaln(b) - gammaln(a + b)

    def to_mean(self) -> BetaMean:
        a, b = self.ab()
        d = digamma(a + b)
        return BetaMean(digamma(a) - d, digamma(b) - d)

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> BetaMean:
        x = np.asarray(x, dtype=float)
        return BetaMean(np.log(x), np.log1p(-x))

    def _in_support(self, x: np.ndarray) -> np.ndarray:
        return (x > 0) & (x < 1)

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        a, b = self.ab()
        return rng.beta(a, b, size=_size_tuple(size) + self.batch_shape)

    def fisher_vector_product(self, v: BetaNatural) -> BetaMean:
        """Hessian of ``A``: ``[[ψ'(a) - ψ'(a+b), -ψ'(a+b)], [-ψ'(a+b), ψ'(b) - ψ'(a+b)]]``."""
        a, b = self.ab()
        t = polygamma(1, a + b)
        return BetaMean(
            (polygamma(1, a) - t) * v.eta1 - t * v.eta2,
            -t * v.eta1 + (polygamma(1, b) - t) * v.eta2,
        )


@dataclass(frozen=True, eq=False)
class BetaMean(MeanParametrization):
    """Mean parameters of Beta distributions.

    Parameters
    ----------
    mean_log : array_like
        ``E[log x] = ψ(a) - ψ(a+b)``.
    mean_log1m : array_like
        ``E[log(1 - x)] = ψ(b) - ψ(a+b)``; requires ``exp(mean_log) + exp(mean_log1m) < 1``.
    """

    mean_log: np.ndarray
    mean_log1m: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0)

    def to_natural(self) -> BetaNatural:
        stacked = np.stack([self.mean_log, self.mean_log1m], axis=-1)
        _require(np.isfinite(stacked), "BetaMean: mean_log and mean_log1m must be finite")
        _require(np.exp(self.mean_log) + np.exp(self.mean_log1m) < 1,
                 "BetaMean: need exp(mean_log) + exp(mean_log1m) < 1 (Jensen's inequality)")
        alpha = _solve_concentration(stacked)
        return BetaNatural.from_ab(alpha[..., 0], alpha[..., 1])
