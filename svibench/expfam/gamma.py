"""Gamma distributions with shape ``α`` and rate ``β``.

``p(x) = βᵅ xᵅ⁻¹ e^{-βx} / Γ(α)``, ``T(x) = (log x, x)``, ``η = (α - 1, -β)``,
``A(η) = log Γ(α) - α log β`` and ``μ = (ψ(α) - log β, α/β)``.

Note that Khan & Lin (2017), App. E.3, list the mean parameters in the opposite
order; the sufficient statistics here are ``(log x, x)`` throughout.

References
----------
.. [1] M. E. Khan and W. Lin, "Conjugate-Computation Variational Inference",
   AISTATS 2017, App. E.3.
.. [2] T. P. Minka, "Estimating a Gamma distribution", 2002, eq. 5 (initial guess)
   and the Newton update that follows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import digamma, gammaln, polygamma

from .base import MeanParametrization, NaturalParametrization, _require, _size_tuple

__all__ = ["GammaNatural", "GammaMean"]


def _invert_log_minus_digamma(s: np.ndarray, max_iter: int = 100) -> np.ndarray:
    """Solve ``log α - ψ(α) = s`` (``s > 0``) for ``α`` by Newton's method in ``log α``."""
    alpha = (3.0 - s + np.sqrt((s - 3.0) ** 2 + 24.0 * s)) / (12.0 * s)  # Minka 2002, eq. 5
    u = np.log(alpha)
    for _ in range(max_iter):
        alpha = np.exp(u)
        g = u - digamma(alpha) - s
        dg = 1.0 - alpha * polygamma(1, alpha)  # < 0
        step = g / dg
        u = u - step
        if np.all(np.abs(step) < 1e-14 * np.maximum(1.0, np.abs(u))):
            break
    return np.exp(u)


@dataclass(frozen=True, eq=False)
class GammaNatural(NaturalParametrization):
    """Natural parameters of Gamma distributions.

    Parameters
    ----------
    eta1 : array_like
        ``α - 1``; must exceed -1.
    eta2 : array_like
        ``-β``; must be negative.
    """

    eta1: np.ndarray
    eta2: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0)

    @classmethod
    def from_shape_rate(cls, shape: ArrayLike, rate: ArrayLike) -> GammaNatural:
        """From shape ``α > 0`` and rate ``β > 0``."""
        shape, rate = np.asarray(shape, dtype=float), np.asarray(rate, dtype=float)
        _require(shape > 0, "Gamma: shape must be positive")
        _require(rate > 0, "Gamma: rate must be positive")
        return cls(shape - 1.0, -rate)

    def shape_rate(self) -> tuple[np.ndarray, np.ndarray]:
        """``(α, β) = (η₁ + 1, -η₂)``."""
        self._check_domain()
        return self.eta1 + 1.0, -self.eta2

    def _check_domain(self) -> None:
        _require(self.eta1 > -1, "GammaNatural: eta1 = shape - 1 must exceed -1")
        _require(self.eta2 < 0, "GammaNatural: eta2 = -rate must be negative")

    def in_domain(self) -> np.ndarray:
        return np.isfinite(self.eta1) & np.isfinite(self.eta2) & (self.eta1 > -1) & (self.eta2 < 0)

    def log_partition(self) -> np.ndarray:
        a, b = self.shape_rate()
        return gammaln(a) - a * np.log(b)

    def to_mean(self) -> GammaMean:
        a, b = self.shape_rate()
        return GammaMean(digamma(a) - np.log(b), a / b)

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> GammaMean:
        x = np.asarray(x, dtype=float)
        return GammaMean(np.log(x), x)

    def _in_support(self, x: np.ndarray) -> np.ndarray:
        return x > 0

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        a, b = self.shape_rate()
        return rng.gamma(a, 1.0 / b, size=_size_tuple(size) + self.batch_shape)

    def fisher_vector_product(self, v: GammaNatural) -> GammaMean:
        """``Cov[(log x, x)] v`` with entries ``ψ'(α)``, ``1/β`` and ``α/β²``."""
        a, b = self.shape_rate()
        return GammaMean(
            polygamma(1, a) * v.eta1 + v.eta2 / b,
            v.eta1 / b + a / b**2 * v.eta2,
        )


@dataclass(frozen=True, eq=False)
class GammaMean(MeanParametrization):
    """Mean parameters of Gamma distributions.

    Parameters
    ----------
    mean_log : array_like
        ``E[log x] = ψ(α) - log β``.
    mean : array_like
        ``E[x] = α/β``; by Jensen ``mean_log < log(mean)``.
    """

    mean_log: np.ndarray
    mean: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0)

    def to_natural(self) -> GammaNatural:
        """Solve ``log α - ψ(α) = log E[x] - E[log x]`` ([2]_), then ``β = α / E[x]``."""
        _require(self.mean > 0, "GammaMean: mean must be positive")
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.log(self.mean) - self.mean_log
        _require(gap > 0, "GammaMean: need mean_log < log(mean) (Jensen's inequality)")
        a = _invert_log_minus_digamma(gap)
        return GammaNatural.from_shape_rate(a, a / self.mean)
