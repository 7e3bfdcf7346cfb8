"""Multivariate Gaussians in precision form, batched over leading axes.

``T(x) = (x, x xᵀ)``, ``η = (Λm, -Λ/2)``, ``μ = (E[x], E[x xᵀ]) = (m, Σ + m mᵀ)`` and,
with the Cholesky factor ``L Lᵀ = Λ`` and ``w = L⁻¹ η₁``,
``A(η) = ½ |w|² - Σᵢ log Lᵢᵢ + (D/2) log 2π``.

Only the symmetric part of ``η₂`` enters the density (``<η₂, x xᵀ>``), so every
formula uses ``Λ = -(η₂ + η₂ᵀ)``; this keeps ``∇A = μ`` exact for an unsymmetric
perturbation too.  All linear algebra goes through Cholesky factors and
triangular solves.

References
----------
.. [1] M. J. Wainwright and M. I. Jordan, "Graphical Models, Exponential Families,
   and Variational Inference", 2008, Example 3.7.
.. [2] K. P. Murphy, "Probabilistic Machine Learning: Advanced Topics", 2023, §2.3.1
   (information form).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.linalg import solve_triangular

from ..numerics.spd import inverse_from_cholesky
from .base import LOG_2PI, MeanParametrization, NaturalParametrization, _require, _size_tuple

__all__ = ["GaussianFullNatural", "GaussianFullMean"]


def _sym(a: np.ndarray) -> np.ndarray:
    return 0.5 * (a + np.swapaxes(a, -1, -2))


def _cholesky(a: np.ndarray, what: str) -> np.ndarray:
    """Batched lower Cholesky factor; ``ValueError`` if ``a`` is not positive definite."""
    _require(np.isfinite(a), f"{what} must be finite")
    try:
        return np.linalg.cholesky(a)
    except np.linalg.LinAlgError as err:
        raise ValueError(f"{what} must be positive definite") from err


def _tri_solve(chol: np.ndarray, b: np.ndarray, trans: bool) -> np.ndarray:
    """Solve ``L x = b`` (or ``Lᵀ x = b`` if ``trans``) for a batch of lower factors.

    ``chol`` has shape ``batch + (D, D)`` and ``b`` shape ``batch + (D, K)``.
    """
    out = np.empty(np.broadcast_shapes(chol.shape[:-2], b.shape[:-2]) + b.shape[-2:])
    chol = np.broadcast_to(chol, out.shape[:-2] + chol.shape[-2:])
    b = np.broadcast_to(b, out.shape)
    for idx in np.ndindex(out.shape[:-2]):
        out[idx] = solve_triangular(chol[idx], b[idx], lower=True, trans=1 if trans else 0, check_finite=False)
    return out


def _cho_solve(chol: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(L Lᵀ)⁻¹ b`` for ``b`` of shape ``batch + (D, K)``."""
    return _tri_solve(chol, _tri_solve(chol, b, trans=False), trans=True)


@dataclass(frozen=True, eq=False)
class GaussianFullNatural(NaturalParametrization):
    """Natural parameters of multivariate Gaussians.

    Parameters
    ----------
    eta1 : array_like, shape (..., D)
        Precision-adjusted mean ``Λ m``.
    eta2 : array_like, shape (..., D, D)
        ``-Λ/2``; must be negative definite.
    """

    eta1: np.ndarray
    eta2: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (1, 2)

    @classmethod
    def from_mean_precision(cls, mean: ArrayLike, precision: ArrayLike) -> GaussianFullNatural:
        """From mean ``m`` (..., D) and symmetric positive definite precision ``Λ`` (..., D, D)."""
        mean, precision = np.asarray(mean, dtype=float), np.asarray(precision, dtype=float)
        _require(np.allclose(precision, np.swapaxes(precision, -1, -2)), "GaussianFull: precision must be symmetric")
        _cholesky(precision, "GaussianFull: precision")
        return cls((precision @ mean[..., None])[..., 0], -0.5 * precision)

    @classmethod
    def from_mean_cov(cls, mean: ArrayLike, cov: ArrayLike) -> GaussianFullNatural:
        """From mean ``m`` (..., D) and symmetric positive definite covariance ``Σ`` (..., D, D)."""
        mean, cov = np.asarray(mean, dtype=float), np.asarray(cov, dtype=float)
        _require(np.allclose(cov, np.swapaxes(cov, -1, -2)), "GaussianFull: covariance must be symmetric")
        chol = _cholesky(cov, "GaussianFull: covariance")
        eta1 = _cho_solve(chol, mean[..., None])[..., 0]
        return cls(eta1, -0.5 * inverse_from_cholesky(chol))  # exactly symmetric

    def precision(self) -> np.ndarray:
        """``Λ = -(η₂ + η₂ᵀ)``."""
        return -2.0 * _sym(self.eta2)

    def _chol(self) -> np.ndarray:
        _require(np.isfinite(self.eta1), "GaussianFullNatural: eta1 must be finite")
        return _cholesky(self.precision(), "GaussianFullNatural: precision -2*eta2 (eta2 negative definite)")

    def _check_domain(self) -> None:
        self._chol()

    def _mean_from_chol(self, chol: np.ndarray) -> np.ndarray:
        return _cho_solve(chol, self.eta1[..., None])[..., 0]

    def mean_precision(self) -> tuple[np.ndarray, np.ndarray]:
        """``(m, Λ)`` with ``m = Λ⁻¹ η₁`` by Cholesky solves."""
        return self._mean_from_chol(self._chol()), self.precision()

    def mean_precision_tril(self) -> tuple[np.ndarray, np.ndarray]:
        """``(m, L)`` with ``Λ = L Lᵀ`` (lower), for a covariance formed only when wanted."""
        chol = self._chol()
        return self._mean_from_chol(chol), chol

    def mean_cov(self) -> tuple[np.ndarray, np.ndarray]:
        """``(m, Σ)`` with ``Σ = Λ⁻¹``."""
        chol = self._chol()
        return self._mean_from_chol(chol), inverse_from_cholesky(chol)  # exactly symmetric

    def log_partition(self) -> np.ndarray:
        chol = self._chol()
        w = _tri_solve(chol, self.eta1[..., None], trans=False)[..., 0]
        log_det = np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
        return 0.5 * (w**2).sum(-1) - log_det + 0.5 * chol.shape[-1] * LOG_2PI

    def to_mean(self) -> GaussianFullMean:
        m, cov = self.mean_cov()
        return GaussianFullMean(m, cov + m[..., :, None] * m[..., None, :])

    def entropy(self) -> np.ndarray:
        """``½ log det(2πe Σ) = (D/2)(1 + log 2π) - Σᵢ log Lᵢᵢ``."""
        chol = self._chol()
        d = chol.shape[-1]
        return 0.5 * d * (1.0 + LOG_2PI) - np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)

    def log_pdf(self, x: ArrayLike) -> np.ndarray:
        """``-½ |Lᵀ(x - m)|² + Σᵢ log Lᵢᵢ - (D/2) log 2π``."""
        chol = self._chol()
        m = self._mean_from_chol(chol)
        r = np.asarray(x, dtype=float) - m
        z = (r[..., None, :] @ chol)[..., 0, :]  # (Lᵀ r)ᵀ = rᵀ L
        log_det = np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
        return -0.5 * (z**2).sum(-1) + log_det - 0.5 * chol.shape[-1] * LOG_2PI

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> GaussianFullMean:
        x = np.asarray(x, dtype=float)
        return GaussianFullMean(x, x[..., :, None] * x[..., None, :])

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        """``x = m + L⁻ᵀ z`` with ``z ~ N(0, I)``, since ``Cov(L⁻ᵀ z) = (L Lᵀ)⁻¹ = Σ``."""
        size = _size_tuple(size)
        chol = self._chol()
        m = self._mean_from_chol(chol)
        d, batch = chol.shape[-1], self.batch_shape
        n = int(np.prod(size))
        z = rng.standard_normal((n,) + batch + (d,))
        z = np.moveaxis(z, 0, -1)  # batch + (D, n)
        x = np.moveaxis(_tri_solve(chol, z, trans=True), -1, 0)
        return (m + x).reshape(size + batch + (d,))

    def fisher_vector_product(self, v: GaussianFullNatural) -> GaussianFullMean:
        """Directional derivative of ``μ``: ``dΣ = 2ΣV₂Σ``, ``dm = Σv₁ + 2ΣV₂m``,
        ``dE[xxᵀ] = dΣ + dm mᵀ + m dmᵀ`` (``V₂`` symmetrised)."""
        m, cov = self.mean_cov()
        v2 = _sym(v.eta2)
        d_cov = 2.0 * cov @ v2 @ cov
        d_m = (cov @ (v.eta1[..., None] + 2.0 * v2 @ m[..., None]))[..., 0]
        outer = d_m[..., :, None] * m[..., None, :]
        return GaussianFullMean(d_m, d_cov + outer + np.swapaxes(outer, -1, -2))


@dataclass(frozen=True, eq=False)
class GaussianFullMean(MeanParametrization):
    """Mean parameters of multivariate Gaussians.

    Parameters
    ----------
    mean : array_like, shape (..., D)
        ``E[x]``.
    second_moment : array_like, shape (..., D, D)
        ``E[x xᵀ]``; ``second_moment - mean meanᵀ`` must be positive definite.
    """

    mean: np.ndarray
    second_moment: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (1, 2)

    def to_natural(self) -> GaussianFullNatural:
        cov = _sym(self.second_moment) - self.mean[..., :, None] * self.mean[..., None, :]
        _cholesky(cov, "GaussianFullMean: second_moment - outer(mean, mean) (the covariance)")
        return GaussianFullNatural.from_mean_cov(self.mean, cov)
