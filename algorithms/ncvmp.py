"""Non-conjugate variational message passing (Knowles & Minka 2011) on latent Gaussian models.

Each likelihood factor fₙ(ηₙ) = p(yₙ | ηₙ), ηₙ = x̃ₙᵀz, sends a Gaussian message
exp(θ₁ₙ ηₙ + θ₂ₙ ηₙ²) whose natural parameters are defined (Knowles & Minka
2011, Algorithm 1 / eq. 6) by

    θₙ = C(ϑₙ)⁻¹ ∂Sₙ/∂ϑₙ,    Sₙ(ϑₙ) = E_{q(ηₙ|ϑₙ)}[log fₙ(ηₙ)],

where ϑₙ = (mₙ/vₙ, −1/(2vₙ)) are the natural parameters of the current marginal
q(ηₙ) = N(mₙ, vₙ) and C(ϑ) = Cov_q[(η, η²)] is its Fisher information.
∂Sₙ/∂(mₙ, vₙ) comes from the model's accurate Gaussian expectation (or a
Gauss–Hermite rule when asked) and is mapped to ∂S/∂ϑ by the Jacobian of
(m, v) w.r.t. ϑ.  q(z) combines the prior with all messages, as VMP does;
messages are updated in parallel, with optional damping
θ ← damping·θ_old + (1 − damping)·θ_new.

This route shares no code with :mod:`~svibench.algorithms.cvi` beyond the
expectations ∂Sₙ/∂(mₙ, vₙ), so the equivalence NC-VMP ≡ CVI with exact gradients and
β = 1 (Khan & Lin 2017, App. G.1) is a test between independent derivations.

On a conditionally conjugate model (every factor conjugate; through
:class:`svibench.capabilities.adapters.ConjugateMeanField`) every message is a
VMP message and there is nothing non-conjugate to linearise: NC-VMP is VMP
(Knowles & Minka 2011, §3), damped the same way, with q's blocks the globals.

References
----------
Knowles, D. A. & Minka, T. (2011). Non-conjugate variational message passing
for multinomial and binary regression. NIPS.  Khan & Lin (2017), §6, App. G.1.
"""
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from svibench.algorithm import Algorithm, Diverged
from svibench.capabilities import missing
from svibench.capabilities.adapters import ConjugateMeanField, conjugate_incompatibility
from svibench.capabilities.latent_gaussian import GaussianFromSites, GaussianPosterior, LatentGaussian, expected_loglik
from svibench.numerics.quadrature import ACCURATE, expectation_rule

__all__ = ["NCVMP"]


class NCVMP(Algorithm):
    """NC-VMP with parallel message updates.

    Parameters
    ----------
    damping : float in [0, 1)
        Weight of the previous message (0: undamped NC-VMP).
    quadrature : str
        Accuracy of ∂Sₙ/∂(mₙ, vₙ): ``"accurate"`` (the model's own) or
        ``"gauss-hermite-N"`` (:func:`svibench.numerics.quadrature.expectation_rule`).
    init_theta1, init_theta2 : float
        Initial messages (the same default as CVI's pseudo-observations).
    """

    name = "ncvmp"
    label = "NC-VMP"
    requires: ClassVar[tuple[type, ...]] = (LatentGaussian,)

    @classmethod
    def incompatibility(cls, model_cls: type, params: dict[str, Any]) -> str | None:
        """LatentGaussian, or a conditionally conjugate model with mean-field locals (VMP messages only)."""
        reason = super().incompatibility(model_cls, params)
        conjugate = reason and conjugate_incompatibility(model_cls)
        return conjugate and f"{reason}, nor is it all-conjugate ({conjugate})"

    def __init__(self, *, damping: float = 0.0, quadrature: str = ACCURATE, init_theta1: float = 0.01,
                 init_theta2: float = -0.0025) -> None:
        self.damping = damping
        self.quadrature = quadrature
        self.init_theta1 = init_theta1
        self.init_theta2 = init_theta2

    def check_params(self) -> None:
        if not 0.0 <= self.damping < 1.0:
            raise ValueError(f"damping must be in [0, 1), got {self.damping}")
        expectation_rule(self.quadrature)
        if self.init_theta2 >= 0:
            raise ValueError("init_theta2 must be < 0")

    def init(self, model: Any, rng: np.random.Generator) -> None:
        self.model_ = model
        self.conjugate_ = ConjugateMeanField(model, rng) if missing(LatentGaussian, type(model)) else None
        if self.conjugate_ is not None:
            self.lam_ = self.conjugate_.mf_init(rng)
            return
        self.sites_ = GaussianFromSites(model)
        self.rule_ = expectation_rule(self.quadrature)
        N = model.n_train
        self.theta1_ = np.full(N, float(self.init_theta1))
        self.theta2_ = np.full(N, float(self.init_theta2))

    def _marginals(self) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances of ηₙ under q(z) = prior × messages (the VMP combination of natural parameters)."""
        return self.sites_.marginals(self.theta1_, self.theta2_)

    def _conjugate_step(self) -> int:
        """Every block's VMP message from the same q, damped: λ ← aλ + (1 − a) Σ messages."""
        lam, a = self.lam_, self.damping
        new = {name: self.conjugate_.conjugate_messages(lam, name) for name in lam}
        self.lam_ = new if a == 0.0 else {name: a * lam[name] + (1.0 - a) * new[name] for name in lam}
        return self.model_.n_train

    def step(self) -> int:
        if self.conjugate_ is not None:
            return self._conjugate_step()
        m, v = self._marginals()
        if np.any(v <= 0):
            raise Diverged("a marginal variance became non-positive")
        e = expected_loglik(self.model_, m, v, self.rule_)
        dS_dm, dS_dv = e.dm, e.dv
        # ∂(m, v)/∂ϑ: m = −ϑ₁/(2ϑ₂), v = −1/(2ϑ₂)  ⇒  ∂m/∂ϑ₁ = v, ∂m/∂ϑ₂ = 2mv, ∂v/∂ϑ₁ = 0, ∂v/∂ϑ₂ = 2v²
        g1 = v * dS_dm
        g2 = 2.0 * m * v * dS_dm + 2.0 * v**2 * dS_dv
        # Fisher C = Cov[(η, η²)] = [[v, 2mv], [2mv, 4m²v + 2v²]]; solve C θ = g per datum
        c11, c12, c22 = v, 2.0 * m * v, 4.0 * m**2 * v + 2.0 * v**2
        det = c11 * c22 - c12**2
        new1 = (c22 * g1 - c12 * g2) / det
        new2 = (c11 * g2 - c12 * g1) / det
        a = self.damping
        self.theta1_ = a * self.theta1_ + (1.0 - a) * new1
        self.theta2_ = a * self.theta2_ + (1.0 - a) * new2
        if not (np.all(np.isfinite(self.theta1_)) and np.all(self.theta2_ < 0)):
            raise Diverged("NC-VMP produced an invalid message (θ₂ ≥ 0 or non-finite)")
        return self.model_.n_train

    def posterior(self) -> GaussianPosterior | Any:
        """q(z) of a latent Gaussian model, or the ConjugatePosterior of a conjugate one."""
        if self.conjugate_ is not None:
            return self.conjugate_.posterior(self.lam_)
        return self.sites_.posterior(self.theta1_, self.theta2_)

    def messages(self) -> tuple[np.ndarray, np.ndarray]:
        """The current messages (θ₁, θ₂) — for comparison with CVI's pseudo-observations."""
        return self.theta1_.copy(), self.theta2_.copy()
