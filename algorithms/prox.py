"""PG-exact and PG-SVI: proximal-gradient variational inference with a KL proximal term.

"PG" here is **proximal gradient** (Khan et al. 2015; Khan et al. 2016), not the
Pólya-Gamma augmentation.  The ELBO of a latent Gaussian model is split into the
non-conjugate part f(q) = Σₙ fₙ(mₙ, vₙ), fₙ = E_{N(ηₙ|mₙ,vₙ)}[log p(yₙ|ηₙ)], which is
linearised in the marginal means and variances, and the conjugate part
−KL(q ‖ p(z)), kept exact; each iteration solves

    q_{k+1} = argmax_q  Σₙ (αₙ mₙ + γₙ vₙ) − KL(q ‖ p(z)) − (1/w) KL(q ‖ q_k),
    αₙ = ∂fₙ/∂mₙ,  γₙ = ∂fₙ/∂vₙ  at q_k.

Derived here from that definition (the search tool gave no text of the papers'
updates; this is Khan et al. 2016's linearised KL-proximal step).  Setting the
derivatives in (m, V) to zero, with r = 1/(1 + w) (so 1 − r = w/(1+w), the β of
Khan & Lin 2017, Table 2):

    V_{k+1}⁻¹ = r V_k⁻¹ + (1 − r)(Σ₀⁻¹ − 2Xᵀ diag(γ) X),
    m_{k+1}   = [Σ₀⁻¹ + r XᵀW_kX]⁻¹ Xᵀ(r λ̃₁ + (1 − r) α),

where q_k = prior × sites exp(λ̃₁ₙηₙ + λ̃₂ₙηₙ²), W_k = diag(−2λ̃₂).  So q_{k+1} is again
of that form, with

    λ̃₂ ← r λ̃₂ + (1 − r) γ,     λ̃₁ ← r λ̃₁ + (1 − r)(α − 2γ m̂),    m̂ = X m_{k+1}.

CVI (Khan & Lin 2017) linearises in the mean parameters (m, v + m²) instead, which
gives the same λ̃₂ update and λ̃₁ ← r λ̃₁ + (1 − r)(α − 2γ m) with the *current* mₙ:
PG needs the new mean m̂ first, i.e. one more conjugate solve (with the sites
(r λ̃₁ + (1 − r)α, r λ̃₂)) per iteration.  On a Gaussian likelihood the covariance is
exact after one step with w = ∞ (r = 0) but the mean is not (a gradient step
preconditioned by Σ₀), unlike CVI.

PG-exact (``expectations="exact"``) uses the model's accurate α, γ (the paper:
a piecewise bound or quadrature); PG-SVI (``"mc"``) Monte-Carlo estimates from S
shared standard-normal draws (Price's form for γ; :func:`expected_loglik`).

References
----------
Khan, M. E., Baqué, P., Fleuret, F. & Fua, P. (2015). Kullback-Leibler proximal
variational inference. NIPS.
Khan, M. E., Babanezhad, R., Lin, W., Schmidt, M. & Sugiyama, M. (2016). Faster
stochastic variational inference using proximal-gradient methods with general
divergence functions. UAI.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from svibench.algorithm import Diverged, Preset
from svibench.capabilities.latent_gaussian import expected_loglik
from svibench.numerics.quadrature import ACCURATE

from .cvi import CVI

__all__ = ["ProximalGradientVI"]


class ProximalGradientVI(CVI):
    """PG-SVI / PG-exact: KL-proximal-gradient steps with the likelihood linearised in (mₙ, vₙ).

    Shares CVI's state (sites λ̃, the conjugate step, the marginals) and
    hyperparameters; only the update of the sites differs (module docstring).

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
        Initial sites (as CVI's).
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
                 init_lam1: float = 0.01, init_lam2: float = -0.0025) -> None:
        super().__init__(expectations=expectations, n_samples=n_samples, quadrature=quadrature, w=w, rho=rho,
                         t0=t0, kappa=kappa, init_lam1=init_lam1, init_lam2=init_lam2)
        del self.batch_size, self.max_rejections  # not hyperparameters here: the class constants above

    def step(self) -> int:
        self.t_ += 1
        beta = self.schedule_(self.t_)  # 1 − r
        e = expected_loglik(self.model_, self.m_, self.v_, self._rule())
        if np.any(e.dv > 0):
            raise Diverged(f"PG: ∂f/∂v > 0 at iteration {self.t_}: the linearised site is not a Gaussian")
        m_new, _ = self.conjugate_.marginals((1.0 - beta) * self.lam1_ + beta * e.dm, (1.0 - beta) * self.lam2_)
        self.lam2_ = (1.0 - beta) * self.lam2_ + beta * e.dv
        self.lam1_ = (1.0 - beta) * self.lam1_ + beta * (e.dm - 2.0 * e.dv * m_new)
        if not (np.all(np.isfinite(self.lam1_)) and np.all(np.isfinite(self.lam2_))):
            raise Diverged(f"non-finite sites at iteration {self.t_}")
        self.m_, self.v_ = self.conjugate_.marginals(self.lam1_, self.lam2_)
        return self.model_.n_train
