"""Expectation propagation (EP) for latent Gaussian models (Minka 2001; Rasmussen & Williams 2006, Alg. 3.5).

Each likelihood factor p(yₙ | ηₙ) is replaced by a Gaussian site
t̃ₙ(ηₙ) = exp(ν̃ₙηₙ − ½τ̃ₙηₙ²), and q(z) ∝ N(z | 0, Σ₀) Πₙ t̃ₙ(xₙᵀz) = N(μ, Σ).  One
:meth:`EP.step` is a sweep over the sites in order; for site n:

    cavity       τ₋ₙ = 1/vₙ − τ̃ₙ,   ν₋ₙ = mₙ/vₙ − ν̃ₙ        (q(ηₙ) = N(mₙ, vₙ); eq. 3.56)
    tilted       Zₙ = ∫ p(yₙ|η) N(η | ν₋ₙ/τ₋ₙ, 1/τ₋ₙ) dη and its derivatives in the cavity mean
    moment match τ̃ₙ* = −∂²log Z / (1 + ∂²log Z / τ₋ₙ),
                 ν̃ₙ* = τ̃ₙ* μ₋ₙ + ∂log Z (1 + τ̃ₙ*/τ₋ₙ)             (eq. 3.59, rearranged)
    damping      (τ̃ₙ, ν̃ₙ) ← (1 − d)(τ̃ₙ, ν̃ₙ) + d(τ̃ₙ*, ν̃ₙ*)         (Minka 2001; d = 1: none)
    rank one     Σ ← Σ − c uuᵀ with u = Σxₙ, c = Δτ̃/(1 + Δτ̃ vₙ); μ follows in O(D)   (Alg. 3.5)

followed, after the sweep, by a fresh factorisation of q from the sites (R&W's
numerically stable recomputation; :class:`~svibench.capabilities.latent_gaussian.GaussianFromSites`, the
sites being pseudo-observations λ̃₁ = ν̃, λ̃₂ = −τ̃/2).  A GP has xₙ = eₙ (R&W's
setting); logistic regression's sites live on ηₙ = xₙᵀz in the same way.

The tilted moments of the logistic likelihood are the 1-D integrals of
:func:`svibench.models.logistic_expectation.sigmoid_moments` (accurate to
~1e-12 relative, checked against ``scipy.integrate.quad``), reached through the
model's ``likelihood_moments`` (capability :class:`LikelihoodMoments`).

EP does not maximise the ELBO: its fixed point matches moments of tilted
distributions instead.  Its q(z) = N(μ, Σ) is evaluated like every other
algorithm's Gaussian posterior (ELBO of that q, test log loss), so its ELBO is
a lower bound below the variational optimum, not EP's objective.

References
----------
Minka, T. (2001). Expectation propagation for approximate Bayesian inference. UAI.
Rasmussen, C. E. & Williams, C. K. I. (2006). Gaussian Processes for Machine Learning,
§3.6, Algorithm 3.5, eq. 3.56–3.61.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.sparse

from svibench.algorithm import Algorithm, Diverged
from svibench.capabilities.latent_gaussian import GaussianFromSites, GaussianPosterior, LatentGaussian, LikelihoodMoments


__all__ = ["EP"]


class EP(Algorithm):
    """Expectation propagation with Gaussian sites, sequential sweeps (R&W 2006, Alg. 3.5).

    Parameters
    ----------
    damping : float
        d in (0, 1]: the fraction of the moment-matched site taken (1 = undamped, R&W's).
    """

    name = "ep"
    label = "EP"
    requires: ClassVar[tuple[type, ...]] = (LatentGaussian, LikelihoodMoments)

    def __init__(self, *, damping: float = 1.0) -> None:
        self.damping = damping

    def check_params(self) -> None:
        if not 0.0 < self.damping <= 1.0:
            raise ValueError(f"damping must be in (0, 1] (1 = undamped), got {self.damping}")

    def init(self, model: LatentGaussian, rng: np.random.Generator) -> None:
        self.model_ = model
        self.conjugate_ = GaussianFromSites(model)
        X = model.design()
        self.X_ = None if X is None else (X.toarray() if scipy.sparse.issparse(X) else np.asarray(X, float))
        N = model.n_train
        self.tau_, self.nu_ = np.zeros(N), np.zeros(N)
        self._refactor()

    def _refactor(self) -> None:
        """q from the sites: Σ = (Σ₀⁻¹ + XᵀT̃X)⁻¹, μ = ΣXᵀν̃."""
        q = self.conjugate_.posterior(self.nu_, -0.5 * self.tau_)
        self.mu_, self.Sigma_ = q.mean.copy(), q.cov.copy()

    def _site(self, n: int) -> None:
        """Moment-match site n and update q by a rank-one correction (Alg. 3.5, lines 4–9)."""
        x = None if self.X_ is None else self.X_[n]
        u = self.Sigma_[:, n].copy() if x is None else self.Sigma_ @ x
        m, v = (self.mu_[n], u[n]) if x is None else (x @ self.mu_, x @ u)
        tau_cav = 1.0 / v - self.tau_[n]
        if not tau_cav > 0:
            raise Diverged(f"EP: the cavity of site {n} is not a Gaussian (precision {tau_cav:.3g})")
        mu_cav = (m / v - self.nu_[n]) / tau_cav
        _, d1, d2 = self.model_.likelihood_moments(np.array([mu_cav]), np.array([1.0 / tau_cav]), np.array([n]))
        tau_star = -d2[0] / (1.0 + d2[0] / tau_cav)
        nu_star = tau_star * mu_cav + d1[0] * (1.0 + tau_star / tau_cav)
        d = self.damping
        tau_new, nu_new = (1 - d) * self.tau_[n] + d * tau_star, (1 - d) * self.nu_[n] + d * nu_star
        dtau, dnu = tau_new - self.tau_[n], nu_new - self.nu_[n]
        self.tau_[n], self.nu_[n] = tau_new, nu_new
        c = dtau / (1.0 + dtau * v)
        # μ = ΣXᵀν̃: Σ_new Xᵀν̃_old = μ − c u m and Σ_new xₙ = u (1 − c v)
        self.mu_ += -c * m * u + dnu * (1.0 - c * v) * u
        self.Sigma_ -= c * np.outer(u, u)

    def step(self) -> int:
        for n in range(self.model_.n_train):
            self._site(n)
        if not (np.all(np.isfinite(self.tau_)) and np.all(np.isfinite(self.nu_))):
            raise Diverged("EP: non-finite site parameters")
        self._refactor()
        return self.model_.n_train

    def posterior(self) -> GaussianPosterior:
        return GaussianPosterior(self.mu_.copy(), self.Sigma_.copy())
