"""Conjugate-computation variational inference, Algorithm 1 of Khan & Lin (2017).

For a latent Gaussian model (capability 2) the non-conjugate part is the
likelihood Πₙ p(yₙ | ηₙ).  CVI replaces each factor by a Gaussian
pseudo-observation exp(λ̃₁ₙ ηₙ + λ̃₂ₙ ηₙ²), whose natural parameters are a
running average of stochastic gradients w.r.t. the mean parameters of the
marginal q(ηₙ) (eq. 13):

    λ̃ₙ,t = (1 − βₜ) λ̃ₙ,t₋₁ + βₜ ĝₙ,t,    ĝ⁽¹⁾ = ∂f/∂m − 2m ∂f/∂v,  ĝ⁽²⁾ = ∂f/∂v   (App. B.1)

and q is the exact posterior of the conjugate model "prior × pseudo-data"
(Theorem 1, eq. 11: λₜ₊₁ = λ̃ₜ + η — Algorithm 1's step 4 misprints λₜ).
That conjugate step is Bayesian linear regression (logistic regression,
App. E.1) or GP regression (GP classification, §4) on pseudo-observations
ỹₙ = −λ̃₁ₙ/(2λ̃₂ₙ) with noise variance −1/(2λ̃₂ₙ).  It is computed in the
weight space (D × D Cholesky) when D ≤ N and in the data space (N × N,
matrix-inversion lemma) when D > N or for a GP, so no D × D matrix is
inverted when D ≫ N.

``expectations="mc"`` estimates the gradients with S standard-normal draws
shared by all data points (the authors' code); ``"exact"`` computes them
deterministically (CVI-exact, App. I): by default with the model's accurate
Gaussian expectation, or with ``quadrature="gauss-hermite-50"`` by the
paper's 50-node Gauss–Hermite rule (off by up to 0.7 nats on GP
classification, where the marginal standard deviations reach ~90).  ``batch_size`` gives the
doubly-stochastic variant (eq. 14): only the sites of a random minibatch
receive a gradient, scaled by N/|B| so that the estimate of
∇_μ E_q[log p̃_nc] stays unbiased (eq. 14 as printed omits this factor, which
would shrink every site towards zero by |B|/N).

Positive definiteness: q stays a valid Gaussian as long as every site is a
valid Gaussian factor, λ̃₂ₙ < 0 (§4, last paragraph).  A Monte-Carlo update
that would make λ̃₂ₙ ≥ 0 is redrawn (rejection sampling, at most
``max_rejections`` times); if still invalid, that site keeps its old value.
For log-concave likelihoods (logistic) ĝ⁽²⁾ < 0 always and this never triggers.

References
----------
Khan, M. E. & Lin, W. (2017). Conjugate-computation variational inference:
converting variational inference in non-conjugate models to inferences in
conjugate models. AISTATS. Algorithm 1, eq. 11–14, App. B.1, App. E.1.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from svibench.algorithm import Algorithm, Diverged, Preset
from svibench.capabilities.latent_gaussian import (
    GaussianFromSites,
    GaussianPosterior,
    LatentGaussian,
    expected_loglik,
    mean_parameter_gradients,
)
from svibench.numerics.minibatch import sample_minibatch
from svibench.numerics.quadrature import ACCURATE, expectation_rule, monte_carlo
from svibench.numerics.schedules import make_schedule

__all__ = ["CVI", "site_schedule", "check_site_params"]


def site_schedule(alg: Algorithm):
    """βₜ of an algorithm that averages Gaussian sites (CVI, PG, S&K) from its ``rho``, ``w``,
    ``t0``, ``kappa``: ``rho``, else w/(1+w), else Robbins–Monro (t + t0)^(−kappa)."""
    return make_schedule(rho=alg.rho, w=None if alg.rho is not None else alg.w, t0=alg.t0, kappa=alg.kappa)


def check_site_params(alg: Algorithm) -> None:
    """The checks such algorithms share: ``n_samples`` ≥ 1, valid initial sites, a valid βₜ."""
    if alg.n_samples < 1:
        raise ValueError(f"n_samples must be ≥ 1, got {alg.n_samples}")
    if alg.init_lam2 >= 0:
        raise ValueError(f"init_lam2 must be < 0 (a valid Gaussian site), got {alg.init_lam2}")
    site_schedule(alg)


class CVI(Algorithm):
    """CVI (Khan & Lin 2017, Algorithm 1) for latent Gaussian models.

    Parameters
    ----------
    expectations : {"mc", "exact"}
        Monte-Carlo gradients with ``n_samples`` shared standard-normal draws,
        or deterministic expectations (CVI-exact).
    n_samples : int ≥ 1
        Standard-normal draws per Monte-Carlo gradient, shared by all sites (``expectations="mc"`` only).
    quadrature : str
        Accuracy of the exact expectations: ``"accurate"`` (the model's own) or
        ``"gauss-hermite-N"`` (:func:`svibench.numerics.quadrature.expectation_rule`).
    w, rho : float, optional
        Constant step βₜ = w/(1+w) (Table 2) or βₜ = rho (``rho`` wins when both
        are given); with neither (w=None), Robbins–Monro βₜ = (t + t0)^(−kappa).
    t0 : float ≥ 0
        t₀ of the Robbins–Monro step βₜ = (t + t₀)^(−κ), used only if w and rho are None (not possible in a study).
    kappa : float in (0.5, 1]
        κ of the Robbins–Monro step βₜ = (t + t₀)^(−κ), used only if w and rho are None (not possible in a study).
    batch_size : int, optional
        Doubly-stochastic CVI (eq. 14) with minibatches of this size; None = all data.
    init_lam1, init_lam2 : float
        Initial pseudo-observation natural parameters (authors' code: 0.01, −0.0025).
    max_rejections : int
        Redraws of a Monte-Carlo gradient that would make a site invalid.
    """

    name = "cvi"
    label = "CVI"
    requires: ClassVar[tuple[type, ...]] = (LatentGaussian,)
    presets: ClassVar[dict[str, Preset]] = {
        "cvi-exact": Preset("CVI-exact", {"expectations": "exact"}),
    }

    def __init__(self, *, expectations: str = "mc", n_samples: int = 10, quadrature: str = ACCURATE,
                 w: float | None = 0.4, rho: float | None = None, t0: float = 1.0, kappa: float = 0.75,
                 batch_size: int | None = None, init_lam1: float = 0.01, init_lam2: float = -0.0025,
                 max_rejections: int = 10) -> None:
        self.expectations = expectations
        self.n_samples = n_samples
        self.quadrature = quadrature
        self.w = w
        self.rho = rho
        self.t0 = t0
        self.kappa = kappa
        self.batch_size = batch_size
        self.init_lam1 = init_lam1
        self.init_lam2 = init_lam2
        self.max_rejections = max_rejections

    def check_params(self) -> None:
        if self.expectations not in ("mc", "exact"):
            raise ValueError(f"expectations must be 'mc' or 'exact', got {self.expectations!r}")
        check_site_params(self)
        expectation_rule(self.quadrature)
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1 or None, got {self.batch_size}")
        if self.max_rejections < 0:
            raise ValueError("max_rejections must be ≥ 0")

    def init(self, model: LatentGaussian, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self.schedule_ = site_schedule(self)
        self.conjugate_ = GaussianFromSites(model)
        N = model.n_train
        self.lam1_ = np.full(N, float(self.init_lam1))
        self.lam2_ = np.full(N, float(self.init_lam2))
        self.m_, self.v_ = self.conjugate_.marginals(self.lam1_, self.lam2_)
        self.t_ = 0

    def _rule(self):
        if self.expectations == "exact":
            return expectation_rule(self.quadrature)
        return monte_carlo(self.rng_, self.n_samples)

    def _gradients(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """ĝ⁽¹⁾, ĝ⁽²⁾ of the sites ``rows`` w.r.t. the mean parameters of q(ηₙ) (App. B.1)."""
        m = self.m_[rows]
        e = expected_loglik(self.model_, m, self.v_[rows], self._rule(), rows)
        return mean_parameter_gradients(m, e.dm, e.dv)

    def step(self) -> int:
        self.t_ += 1
        beta = self.schedule_(self.t_)
        N = self.model_.n_train
        if self.batch_size is None or self.batch_size >= N:
            rows, scale = np.arange(N), 1.0
        else:
            rows, scale = sample_minibatch(self.rng_, N, self.batch_size), N / self.batch_size
        old1, old2 = self.lam1_[rows], self.lam2_[rows]
        g1, g2 = self._gradients(rows)
        new1, new2 = (1.0 - beta) * old1 + beta * scale * g1, (1.0 - beta) * old2 + beta * scale * g2
        bad = new2 >= 0
        for _ in range(self.max_rejections if self.expectations == "mc" else 0):
            if not bad.any():
                break
            r1, r2 = self._gradients(rows[bad])
            new1[bad] = (1.0 - beta) * old1[bad] + beta * scale * r1
            new2[bad] = (1.0 - beta) * old2[bad] + beta * scale * r2
            bad = new2 >= 0
        if scale != 1.0:  # eq. 14: every site decays; the minibatch's sites also receive the gradient
            self.lam1_ *= 1.0 - beta
            self.lam2_ *= 1.0 - beta
        self.lam1_[rows] = np.where(bad, old1, new1)
        self.lam2_[rows] = np.where(bad, old2, new2)
        if not (np.all(np.isfinite(self.lam1_)) and np.all(np.isfinite(self.lam2_))):
            raise Diverged(f"non-finite pseudo-observations at iteration {self.t_}")
        self.m_, self.v_ = self.conjugate_.marginals(self.lam1_, self.lam2_)
        return len(rows)

    def posterior(self) -> GaussianPosterior:
        return self.conjugate_.posterior(self.lam1_, self.lam2_)
