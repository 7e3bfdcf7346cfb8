"""PG-exact and PG-SVI: proximal-gradient variational inference with a KL proximal term.

"PG" here is **proximal gradient** (Khan et al. 2015; Khan et al. 2016), not the
Pólya-Gamma augmentation.  The ELBO of a latent Gaussian model is split into the
non-conjugate part f(q) = Σₙ fₙ(mₙ, vₙ), fₙ = E_{N(ηₙ|mₙ,vₙ)}[log p(yₙ|ηₙ)], linearised
at the current q in the marginal means and variances, and the conjugate part
−KL(q ‖ p(z)), kept exact.

The update is the one of the authors' code (emtiyaz/cvi, ``log_reg/baseline_infer.m``,
case ``'PG-exact'``), in these words.  With r = 1/(1 + w) (so 1 − r = w/(1+w), the β of
Khan & Lin 2017, Table 2), the state is the mean m of z, the marginal means and
variances (η̄ₙ, vₙ) at which the next expectations are taken, and per-datum site
precisions Tₙ.  Each iteration takes αₙ = ∂fₙ/∂mₙ, γₙ = ∂fₙ/∂vₙ at (η̄ₙ, vₙ) and

    A      = Σ₀⁻¹ + Xᵀ diag(r T) X                 (the preconditioner, with the *old* T)
    m     ← m + (1 − r) A⁻¹ (Xᵀα − Σ₀⁻¹ m)          (a preconditioned step on the linearised ELBO)
    vₙ    ← x̃ₙᵀ A⁻¹ x̃ₙ,   η̄ = X m                 (the next expectations' marginals: A's variances)
    T     ← r T + (1 − r)(−2γ),

and q after the iteration is N(m, (Σ₀⁻¹ + Xᵀ diag(r T) X)⁻¹), with the *new* T, as the
authors' code scores it.  Before the first iteration q is CVI's initial q (prior × sites
λ̃₁ = ``init_lam1``, λ̃₂ = ``init_lam2``) and T starts at ``init_precision`` (0.05 in the
authors' code, against the 0.005 of that q: "much better", its comment says).  It is
computed with the conjugate step of the sites (λ̃₁, λ̃₂) = (τ ∘ η̄ + α, −τ/2), τ = rT:
A⁻¹(Xᵀα − Σ₀⁻¹m) = A⁻¹Xᵀ(τ ∘ Xm + α) − m, so m ← r m + (1 − r) A⁻¹Xᵀ(τ ∘ η̄ + α), and
likewise for η̄ (no D × D matrix when D > N, and a GP's kernel is never inverted).

What this replaces: a derivation from the paper's one-line definition of the
proximal step (sites λ̃ averaged as in CVI, the mean taken at the new covariance),
which diverged at the paper's step sizes (australian, w = 0.4).  It is not kept as a
variant: it was never any paper's algorithm, and its only evidence was its divergence.

PG-exact (``expectations="exact"``) uses the model's expectations (the logistic
regression of Table 3 takes the piecewise bound with ``expectation = "piecewise"``,
as the authors do); PG-SVI (``"mc"``) Monte-Carlo estimates from S shared
standard-normal draws (Price's form for γ; :func:`expected_loglik`).

References
----------
Khan, M. E., Baqué, P., Fleuret, F. & Fua, P. (2015). Kullback-Leibler proximal
variational inference. NIPS.
Khan, M. E., Babanezhad, R., Lin, W., Schmidt, M. & Sugiyama, M. (2016). Faster
stochastic variational inference using proximal-gradient methods with general
divergence functions. UAI.
Khan, M. E. & Lin, W. (2017). Conjugate-computation variational inference. AISTATS,
App. I.1 (PG-exact in Table 3).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from svibench.algorithm import Diverged, Preset
from svibench.capabilities.latent_gaussian import GaussianPosterior, expected_loglik
from svibench.numerics.quadrature import ACCURATE

from .cvi import CVI

__all__ = ["ProximalGradientVI"]


class ProximalGradientVI(CVI):
    """PG-SVI / PG-exact: KL-proximal-gradient steps with the likelihood linearised in (mₙ, vₙ).

    Shares CVI's hyperparameters, its initial q and its conjugate step; the state and the
    update are the authors' (module docstring).

    Parameters
    ----------
    expectations : {"mc", "exact"}
        PG-SVI (Monte Carlo, ``n_samples`` draws) or PG-exact.
    n_samples : int ≥ 1
        Standard-normal draws per Monte-Carlo estimate of α, γ, shared by all sites (PG-SVI only).
    quadrature : str
        Accuracy of the exact expectations (see :class:`~.cvi.CVI`).
    w, rho : float, optional
        Proximal step w, i.e. 1 − r = w/(1+w); or 1 − r = ``rho`` directly; neither:
        Robbins–Monro (t + t0)^(−kappa).
    t0 : float ≥ 0
        t₀ of the Robbins–Monro step 1 − r = (t + t₀)^(−κ), used only if w and rho are None (not possible in a study).
    kappa : float in (0.5, 1]
        κ of the Robbins–Monro step 1 − r = (t + t₀)^(−κ), used only if w and rho are None (not possible in a study).
    init_lam1, init_lam2 : float
        The initial q, as CVI's: prior × sites exp(λ̃₁ηₙ + λ̃₂ηₙ²).
    init_precision : float > 0
        The site precisions T when the iterations start (the authors' code: 0.05).
    """

    name = "pg-svi"
    label = "PG-SVI"
    presets: ClassVar[dict[str, Preset]] = {
        "pg-exact": Preset("PG-exact", {"expectations": "exact"}),
    }
    #: CVI's settings that PG does not have: full batch (PG-SVI is stochastic in its expectations
    #: only, as in Khan & Lin 2017's comparison), and no rejection of invalid sites (γ ≤ 0 here).
    batch_size: ClassVar[None] = None
    max_rejections: ClassVar[int] = 0

    def __init__(self, *, expectations: str = "mc", n_samples: int = 10, quadrature: str = ACCURATE,
                 w: float | None = 0.4, rho: float | None = None, t0: float = 1.0, kappa: float = 0.75,
                 init_lam1: float = 0.01, init_lam2: float = -0.0025, init_precision: float = 0.05) -> None:
        super().__init__(expectations=expectations, n_samples=n_samples, quadrature=quadrature, w=w, rho=rho,
                         t0=t0, kappa=kappa, init_lam1=init_lam1, init_lam2=init_lam2)
        del self.batch_size, self.max_rejections  # not hyperparameters here: the class constants above
        self.init_precision = init_precision

    def check_params(self) -> None:
        super().check_params()
        if not self.init_precision > 0:
            raise ValueError(f"init_precision must be > 0, got {self.init_precision}")

    def init(self, model, rng: np.random.Generator) -> None:
        super().init(model, rng)  # CVI's initial q: sites (init_lam1, init_lam2), its marginals m_, v_
        N = model.n_train
        self.mean_ = self.conjugate_.mean_and_marginals(self.lam1_, self.lam2_)[0]
        self.T_ = np.full(N, float(self.init_precision))
        self.scored_precision_ = -2.0 * self.lam2_  # the precisions of the q that posterior() reports
        del self.lam1_, self.lam2_

    def step(self) -> int:
        self.t_ += 1
        beta = self.schedule_(self.t_)  # 1 − r
        r = 1.0 - beta
        e = expected_loglik(self.model_, self.m_, self.v_, self._rule())
        # no guard on ∂f/∂v ≤ 0, as in the authors' code: the piecewise bound's is 0 up to rounding on the pieces
        # that are linear; sites that make A lose positive definiteness end the run in the conjugate step
        tau = r * self.T_
        mean, eta, self.v_ = self.conjugate_.mean_and_marginals(tau * self.m_ + e.dm, -0.5 * tau)
        self.mean_ = r * self.mean_ + beta * mean
        self.m_ = r * self.m_ + beta * eta
        self.T_ = r * self.T_ + beta * (-2.0 * e.dv)
        self.scored_precision_ = r * self.T_
        if not (np.all(np.isfinite(self.mean_)) and np.all(np.isfinite(self.T_))):
            raise Diverged(f"non-finite mean or site precisions at iteration {self.t_}")
        return self.model_.n_train

    def posterior(self) -> GaussianPosterior:
        # the sites' q, in the form it comes in (with log|Σ|, and Σ as diag − low rank when N < D): the metrics then
        # decompose and form nothing D × D
        q = self.conjugate_.posterior(np.zeros_like(self.scored_precision_), -0.5 * self.scored_precision_)
        return q.with_mean(self.mean_.copy())
