"""Independent scalar Gaussians, batched by shape.

``T(x) = (x, x²)``, ``η = (m/v, -1/(2v))``, ``μ = (E[x], E[x²]) = (m, m² + v)`` and
``A(η) = -η₁²/(4η₂) - ½ log(-2η₂) + ½ log 2π``.

References
----------
.. [1] M. J. Wainwright and M. I. Jordan, "Graphical Models, Exponential Families,
   and Variational Inference", 2008, Example 3.3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from .base import LOG_2PI, MeanParametrization, NaturalParametrization, _require, _size_tuple

__all__ = ["GaussianDiagNatural", "GaussianDiagMean"]


@dataclass(frozen=True, eq=False)
class GaussianDiagNatural(NaturalParametrization):
    """Natural parameters of independent Gaussians.

    Parameters
    ----------
    eta1 : array_like
        ``m / v``.
    eta2 : array_like
        ``-1 / (2 v)``; must be negative.
    """

    eta1: np.ndarray
    eta2: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0)

    @classmethod
    def from_mean_var(cls, mean: ArrayLike, var: ArrayLike) -> GaussianDiagNatural:
        """From means ``m`` and variances ``v > 0``."""
        mean, var = np.asarray(mean, dtype=float), np.asarray(var, dtype=float)
        _require(var > 0, "GaussianDiag: variance must be positive")
        return cls(mean / var, -0.5 / var)

    def mean_var(self) -> tuple[np.ndarray, np.ndarray]:
        """``(m, v)`` with ``v = -1/(2η₂)`` and ``m = v η₁``."""
        self._check_domain()
        var = -0.5 / self.eta2
        return var * self.eta1, var

    def _check_domain(self) -> None:
        _require(np.isfinite(self.eta1), "GaussianDiagNatural: eta1 must be finite")
        _require(self.eta2 < 0, "GaussianDiagNatural: eta2 = -1/(2 var) must be negative")

    def log_partition(self) -> np.ndarray:
        self._check_domain()
        return -self.eta1**2 / (4 * self.eta2) - 0.5 * np.log(-2 * self.eta2) + 0.5 * LOG_2PI

    def to_mean(self) -> GaussianDiagMean:
        m, v = self.mean_var()
        return GaussianDiagMean(m, m**2 + v)

    def entropy(self) -> np.ndarray:
        """``½ log(2πe v)`` (closed form; avoids the ``A - <η, μ>`` cancellation)."""
        _, v = self.mean_var()
        return 0.5 * (np.log(v) + LOG_2PI + 1.0)

    def log_pdf(self, x: ArrayLike) -> np.ndarray:
        """``-½ (x - m)²/v - ½ log(2π v)``."""
        m, v = self.mean_var()
        x = np.asarray(x, dtype=float)
        return -0.5 * (x - m) ** 2 / v - 0.5 * (np.log(v) + LOG_2PI)

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> GaussianDiagMean:
        x = np.asarray(x, dtype=float)
        return GaussianDiagMean(x, x**2)

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        m, v = self.mean_var()
        return m + np.sqrt(v) * rng.standard_normal(_size_tuple(size) + self.batch_shape)

    def fisher_vector_product(self, v: GaussianDiagNatural) -> GaussianDiagMean:
        """``Cov[(x, x²)] v`` with ``Var x = s``, ``Cov(x, x²) = 2ms``, ``Var x² = 4m²s + 2s²``."""
        m, s = self.mean_var()
        return GaussianDiagMean(
            s * v.eta1 + 2 * m * s * v.eta2,
            2 * m * s * v.eta1 + (4 * m**2 * s + 2 * s**2) * v.eta2,
        )


@dataclass(frozen=True, eq=False)
class GaussianDiagMean(MeanParametrization):
    """Mean parameters of independent Gaussians.

    Parameters
    ----------
    mean : array_like
        ``E[x]``.
    second_moment : array_like
        ``E[x²]``; must exceed ``E[x]²``.
    """

    mean: np.ndarray
    second_moment: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0)

    def to_natural(self) -> GaussianDiagNatural:
        var = self.second_moment - self.mean**2
        _require(var > 0, "GaussianDiagMean: second_moment - mean**2 (the variance) must be positive")
        return GaussianDiagNatural.from_mean_var(self.mean, var)
