"""Dirichlet distributions over the last axis (``K`` categories).

``p(x) = Πₖ xₖ^{αₖ-1} / B(α)`` on the simplex, ``T(x) = log x``, ``η = α - 1``,
``A(η) = Σₖ log Γ(αₖ) - log Γ(α₀)`` with ``α₀ = Σₖ αₖ``, and
``μₖ = E[log xₖ] = ψ(αₖ) - ψ(α₀)``.

References
----------
.. [1] T. P. Minka, "Estimating a Dirichlet distribution", 2000 (revised 2012),
   §1: Newton step with the diagonal-plus-constant Hessian (eqs. 12-18).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import digamma, gammaln, logsumexp, polygamma

from .base import MeanParametrization, NaturalParametrization, _require, _size_tuple

__all__ = ["DirichletNatural", "DirichletMean"]


def _dirichlet_log_partition(alpha: np.ndarray) -> np.ndarray:
    return gammaln(alpha).sum(-1) - gammaln(alpha.sum(-1))


def _solve_concentration(mean_log: np.ndarray, max_iter: int = 200) -> np.ndarray:
    """Concentrations ``α`` with ``ψ(αₖ) - ψ(α₀) = mean_log[k]`` (last axis).

    Damped Newton on the convex objective ``f(α) = A(α - 1) - <α, mean_log>``,
    whose gradient is the residual; the Hessian ``diag(ψ'(α)) - ψ'(α₀) 11ᵀ`` is
    inverted by Sherman-Morrison ([1]_).  The start uses ``ψ(a) ≈ log a - 1/(2a)``:
    ``α = s softmax(mean_log)`` with ``s = (K - 1) / (-2 logsumexp(mean_log))``.
    Requires ``logsumexp(mean_log) < 0``.
    """
    k = mean_log.shape[-1]
    c = -logsumexp(mean_log, axis=-1, keepdims=True)
    alpha = np.maximum((k - 1) / (2.0 * c) * np.exp(mean_log + c), 1.0 / (1.0 - mean_log))

    def objective(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``f(a)`` and the size of its terms (``f`` is a difference of large numbers)."""
        lg, lg0, lin = gammaln(a), gammaln(a.sum(-1)), a * mean_log
        f = lg.sum(-1) - lg0 - lin.sum(-1)
        return f, np.abs(lg).sum(-1) + np.abs(lg0) + np.abs(lin).sum(-1)

    for _ in range(max_iter):
        a0 = alpha.sum(-1, keepdims=True)
        grad = digamma(alpha) - digamma(a0) - mean_log
        q = polygamma(1, alpha)
        z = -polygamma(1, a0)
        b = (grad / q).sum(-1, keepdims=True) / (1.0 / z + (1.0 / q).sum(-1, keepdims=True))
        step = (grad - b) / q
        f_old, f_size = objective(alpha)
        t = np.ones(alpha.shape[:-1] + (1,))
        for _ in range(60):  # backtrack: stay positive, do not increase f beyond rounding
            cand = alpha - t * step
            with np.errstate(invalid="ignore"):
                ok = np.all(cand > 0, axis=-1, keepdims=True)
                f_new = objective(np.where(ok, cand, alpha))[0]
                ok &= (f_new <= f_old + 1e-12 * f_size)[..., None]
            if np.all(ok):
                break
            t = np.where(ok, t, 0.5 * t)
        alpha = np.where(ok, cand, alpha)
        if np.all(np.abs(t * step) <= 1e-13 * alpha):
            break
    return alpha


@dataclass(frozen=True, eq=False)
class DirichletNatural(NaturalParametrization):
    """Natural parameters of Dirichlet distributions.

    Parameters
    ----------
    eta : array_like, shape (..., K)
        ``α - 1``; every entry must exceed -1.
    """

    eta: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (1,)

    @classmethod
    def from_concentration(cls, alpha: ArrayLike) -> DirichletNatural:
        """From concentrations ``α > 0`` of shape (..., K)."""
        alpha = np.asarray(alpha, dtype=float)
        _require(alpha > 0, "Dirichlet: concentration must be positive")
        return cls(alpha - 1.0)

    def concentration(self) -> np.ndarray:
        """``α = η + 1``."""
        self._check_domain()
        return self.eta + 1.0

    def _check_domain(self) -> None:
        _require(self.eta > -1, "DirichletNatural: eta = concentration - 1 must exceed -1")

    def log_partition(self) -> np.ndarray:
        return _dirichlet_log_partition(self.concentration())

    def to_mean(self) -> DirichletMean:
        alpha = self.concentration()
        return DirichletMean(digamma(alpha) - digamma(alpha.sum(-1, keepdims=True)))

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> DirichletMean:
        return DirichletMean(np.log(np.asarray(x, dtype=float)))

    def _in_support(self, x: np.ndarray) -> np.ndarray:
        return np.all(x > 0, axis=-1)

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        """Normalised Gamma draws, formed in log space so that small ``α`` does not
        underflow: ``log G(α) = log G(α + 1) + log(U)/α`` (Marsaglia & Tsang's boost)."""
        alpha = self.concentration()
        shape = _size_tuple(size) + alpha.shape
        log_g = np.log(rng.gamma(alpha + 1.0, size=shape)) + np.log(rng.random(shape)) / alpha
        log_g -= log_g.max(-1, keepdims=True)
        g = np.exp(log_g)
        return g / g.sum(-1, keepdims=True)

    def fisher_vector_product(self, v: DirichletNatural) -> DirichletMean:
        """``ψ'(α) ⊙ v - ψ'(α₀) Σₖ vₖ``."""
        alpha = self.concentration()
        return DirichletMean(
            polygamma(1, alpha) * v.eta - polygamma(1, alpha.sum(-1, keepdims=True)) * v.eta.sum(-1, keepdims=True)
        )


@dataclass(frozen=True, eq=False)
class DirichletMean(MeanParametrization):
    """Mean parameters of Dirichlet distributions.

    Parameters
    ----------
    mean_log : array_like, shape (..., K)
        ``E[log xₖ] = ψ(αₖ) - ψ(α₀)``; requires ``Σₖ exp(mean_log[k]) < 1``.
    """

    mean_log: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (1,)

    def to_natural(self) -> DirichletNatural:
        _require(np.isfinite(self.mean_log), "DirichletMean: mean_log must be finite")
        _require(logsumexp(self.mean_log, axis=-1) < 0,
                 "DirichletMean: need sum(exp(mean_log)) < 1 (Jensen's inequality)")
        return DirichletNatural.from_concentration(_solve_concentration(self.mean_log))
