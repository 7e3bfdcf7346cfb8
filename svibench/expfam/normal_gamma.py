"""Normal–Gamma distributions over a mean and a precision ``(μ, τ)``.

``τ ~ Ga(a, b)``, ``μ | τ ~ N(m, 1/(κτ))``.  Sufficient statistics
``T(μ, τ) = (τμ, τμ², τ, log τ)``, natural parameters
``η = (κm, -κ/2, -(b + κm²/2), a - 1/2)`` and
``A(η) = log Γ(a) - a log b - ½ log κ + ½ log 2π``;
mean parameters ``(a m / b, a m² / b + 1/κ, a / b, ψ(a) - log b)``.

This is the conjugate prior of a Gaussian likelihood with unknown mean and
precision: an observation x adds ``(x, -½, -x²/2, ½)`` to ``η``.

References
----------
.. [1] C. M. Bishop, *Pattern Recognition and Machine Learning*, 2006, eq. 2.154.
.. [2] K. P. Murphy, "Conjugate Bayesian analysis of the Gaussian distribution", 2007, §3.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import digamma, gammaln, polygamma

from .base import LOG_2PI, MeanParametrization, NaturalParametrization, _require, _size_tuple
from .gamma import _invert_log_minus_digamma

__all__ = ["NormalGammaNatural", "NormalGammaMean"]


@dataclass(frozen=True, eq=False)
class NormalGammaNatural(NaturalParametrization):
    """Natural parameters ``(κm, -κ/2, -(b + κm²/2), a - ½)``.

    Draws (``sample``) and points (``log_pdf``) have a trailing axis of
    length 2 holding ``(μ, τ)``.
    """

    eta1: np.ndarray
    eta2: np.ndarray
    eta3: np.ndarray
    eta4: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0, 0, 0)

    @property
    def event_shape(self) -> tuple[int, ...]:
        """A draw is the pair ``(μ, τ)``."""
        return (2,)

    @classmethod
    def from_params(cls, m: ArrayLike, kappa: ArrayLike, a: ArrayLike, b: ArrayLike) -> NormalGammaNatural:
        """From location ``m``, precision scale ``κ > 0``, shape ``a > 0`` and rate ``b > 0``."""
        m, kappa, a, b = (np.asarray(v, dtype=float) for v in (m, kappa, a, b))
        _require(kappa > 0, "NormalGamma: kappa must be positive")
        _require(a > 0, "NormalGamma: shape a must be positive")
        _require(b > 0, "NormalGamma: rate b must be positive")
        return cls(kappa * m, -kappa / 2.0, -(b + kappa * m**2 / 2.0), a - 0.5)

    def params(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(m, κ, a, b)``."""
        self._check_domain()
        kappa = -2.0 * self.eta2
        m = self.eta1 / kappa
        return m, kappa, self.eta4 + 0.5, -self.eta3 - kappa * m**2 / 2.0

    def _check_domain(self) -> None:
        _require(self.eta2 < 0, "NormalGammaNatural: eta2 = -kappa/2 must be negative")
        _require(self.eta4 > -0.5, "NormalGammaNatural: eta4 = a - 1/2 must exceed -1/2")
        _require(-self.eta3 + self.eta1**2 / (4.0 * self.eta2) > 0, "NormalGammaNatural: rate b must be positive")

    def log_partition(self) -> np.ndarray:
        m, kappa, a, b = self.params()
        return gammaln(a) - a * np.log(b) - 0.5 * np.log(kappa) + 0.5 * LOG_2PI

    def to_mean(self) -> NormalGammaMean:
        m, kappa, a, b = self.params()
        s = a / b
        return NormalGammaMean(s * m, s * m**2 + 1.0 / kappa, s, digamma(a) - np.log(b))

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> NormalGammaMean:
        x = np.asarray(x, dtype=float)
        mu, tau = x[..., 0], x[..., 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            return NormalGammaMean(tau * mu, tau * mu**2, tau, np.log(tau))

    def _in_support(self, x: np.ndarray) -> np.ndarray:
        return x[..., 1] > 0

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        m, kappa, a, b = self.params()
        shape = _size_tuple(size) + self.batch_shape
        tau = rng.gamma(np.broadcast_to(a, shape), 1.0 / np.broadcast_to(b, shape))
        mu = m + rng.standard_normal(shape) / np.sqrt(kappa * tau)
        return np.stack([mu, tau], axis=-1)

    def fisher_vector_product(self, v: NormalGammaNatural) -> NormalGammaMean:
        """Exact ``dμ = ∇²A(η) v`` by differentiating the mean map."""
        m, kappa, a, b = self.params()
        e1, e2 = self.eta1, self.eta2
        d1, d2, d3, d4 = v.arrays()
        s = a / b
        da, dkappa = d4, -2.0 * d2
        dm = -d1 / (2.0 * e2) + e1 * d2 / (2.0 * e2**2)
        db = -d3 + e1 * d1 / (2.0 * e2) - e1**2 * d2 / (4.0 * e2**2)
        ds = da / b - a * db / b**2
        return NormalGammaMean(
            ds * m + s * dm,
            ds * m**2 + 2.0 * s * m * dm - dkappa / kappa**2,
            ds,
            polygamma(1, a) * da - db / b,
        )


@dataclass(frozen=True, eq=False)
class NormalGammaMean(MeanParametrization):
    """Mean parameters ``(E[τμ], E[τμ²], E[τ], E[log τ])``."""

    mean_tau_mu: np.ndarray
    mean_tau_mu2: np.ndarray
    mean_tau: np.ndarray
    mean_log_tau: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0, 0, 0, 0)

    def to_natural(self) -> NormalGammaNatural:
        s = self.mean_tau
        _require(s > 0, "NormalGammaMean: E[tau] must be positive")
        gap = np.log(s) - self.mean_log_tau
        _require(gap > 0, "NormalGammaMean: need log E[tau] > E[log tau] (Jensen)")
        m = self.mean_tau_mu / s
        inv_kappa = self.mean_tau_mu2 - s * m**2
        _require(inv_kappa > 0, "NormalGammaMean: need E[tau mu^2] > E[tau mu]^2 / E[tau]")
        a = _invert_log_minus_digamma(gap)
        return NormalGammaNatural.from_params(m, 1.0 / inv_kappa, a, a / s)
