"""S&K-Alg2 and S&K-FG: Salimans & Knowles (2013), stochastic linear regression with gradients.

A Gaussian q(z) = N(m, P⁻¹) is optimal when E_q[∇ log p(y, z)] = 0 and
P = −E_q[∇² log p(y, z)] (Salimans & Knowles 2013, §3–4; Opper & Archambeau
2009).  Algorithm 2 of Salimans & Knowles estimates both by regressing the
gradient on z, ∇ log p(z) ≈ ḡ − H̄(z − z̄), with running averages over draws
z* ~ q (step β):

    ḡ ← (1 − β) ḡ + β ∇ log p(y, z*),   H̄ ← (1 − β) H̄ − β ∇² log p(y, z*),   z̄ ← (1 − β) z̄ + β z*,
    q = N(m, P⁻¹) with P = H̄,  m = z̄ + H̄⁻¹ ḡ   (the zero of the regression line).

**S&K-Alg2** (``factorised=False``) does this for the whole D-dimensional z of a
latent Gaussian model, ∇ log p = Xᵀ∂ log p(y|η) − Σ₀⁻¹z and ∇² log p =
Xᵀ diag(∂² log p(y|η)) X − Σ₀⁻¹ with η = Xz*: it keeps a D × D matrix H̄ and
factors it each step (slow when D is large, colon-cancer's 2,001).  As in the
authors' code (emtiyaz/cvi, ``log_reg/GaussVarApproxHessian_alg2.m``, adapted from
Salimans's LinRegVB), the averages start at q₀ = prior × sites (``init_lam1``,
``init_lam2``): H̄ = q₀'s precision, z̄ = q₀'s mean, ḡ = 0.

**S&K-FG** (``factorised=True``) is the factorised-gradient variant for likelihoods
Πₙ p(yₙ | xₙᵀz) of the authors' code (``GaussVarApproxFactorGradientGLM.m``, adapted
from Salimans's ``GaussVarApproxFactorGradientGLM``).  Each factor regresses its
gradient on its own 1-D ηₙ, using first derivatives only: with q(ηₙ) = N(mₙ, vₙ),
sₙ = √vₙ and S antithetic pairs of draws ηₙ* = mₙ ± sₙεₖ, it averages (step β) the
statistics

    XX12 = −mₙ,  XX22 = −sₙ mean_k εₖ²,  XY1 = mean ∂ log p(yₙ|ηₙ*),  XY2 = mean ±εₖ ∂ log p(yₙ|ηₙ*)

(means over the 2S draws; the antithetic pairs cancel the odd terms), and the factor
is the Gaussian site with precision XY2/XX22 and precision × mean
XY1 − XX12·XY2/XX22, q = prior × sites computed like CVI's conjugate step (no D × D
matrix when D ≫ N).  The statistics start at the site (``init_lam1``, ``init_lam2``):
XX22 = −1, XY2 = 2·init_lam2, XX12 = 0, XY1 = init_lam1.  Both variants reach q exactly
in one step with β = 1 when log p is quadratic (a Gaussian likelihood): the
regression is then exact.

Each average takes the mean over ``n_samples`` draws per iteration (Khan & Lin
2017, Table 2: 10, with β = w/(1+w)).  Salimans & Knowles average uniformly over
the last half of a fixed number of iterations; the authors' code, as here, keeps β
constant, so q carries the Monte-Carlo noise of the last ~1/β iterations.

References
----------
Salimans, T. & Knowles, D. A. (2013). Fixed-form variational posterior approximation
through stochastic linear regression. Bayesian Analysis 8(4), 837–882, Algorithm 2.
Khan, M. E. & Lin, W. (2017). Conjugate-computation variational inference. AISTATS, §5, §7.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.linalg
import scipy.sparse

from svibench.algorithm import Algorithm, Diverged, Preset
from svibench.capabilities.latent_gaussian import GaussianFromSites, GaussianPosterior, LatentGaussian

from .cvi import check_site_params, site_schedule

__all__ = ["SalimansKnowles"]


class SalimansKnowles(Algorithm):
    """S&K-Alg2 (full D × D regression) or S&K-FG (per-factor regression); see the module docstring.

    Parameters
    ----------
    factorised : bool
        False: Algorithm 2 on z (a D × D Hessian; for a GP, D = N and Σ₀⁻¹ = K⁻¹);
        True: the factorised-gradient variant.
    n_samples : int
        Draws per iteration.
    w, rho : float, optional
        Constant β = w/(1+w), or β = ``rho`` (wins); neither: Robbins–Monro (t + t0)^(−kappa).
    t0 : float ≥ 0
        t₀ of the Robbins–Monro step β = (t + t₀)^(−κ), used only if w and rho are None (not possible in a study).
    kappa : float in (0.5, 1]
        κ of the Robbins–Monro step β = (t + t₀)^(−κ), used only if w and rho are None (not possible in a study).
    init_lam1, init_lam2 : float
        The initial q, as CVI's: prior × sites exp(λ̃₁ηₙ + λ̃₂ηₙ²) (the authors' code: 0.01, −0.0025; for
        S&K-FG on covtype 0, −0.5).
    """

    name = "sk-alg2"
    label = "S&K-Alg2"
    requires: ClassVar[tuple[type, ...]] = (LatentGaussian,)
    presets: ClassVar[dict[str, Preset]] = {"sk-fg": Preset("S&K-FG", {"factorised": True})}

    def __init__(self, *, factorised: bool = False, n_samples: int = 10, w: float | None = 0.4,
                 rho: float | None = None, t0: float = 1.0, kappa: float = 0.75, init_lam1: float = 0.01,
                 init_lam2: float = -0.0025) -> None:
        self.factorised = factorised
        self.n_samples = n_samples
        self.w = w
        self.rho = rho
        self.t0 = t0
        self.kappa = kappa
        self.init_lam1 = init_lam1
        self.init_lam2 = init_lam2

    def check_params(self) -> None:
        if not isinstance(self.factorised, bool):
            raise ValueError(f"factorised must be true or false, got {self.factorised!r}")
        check_site_params(self)

    def init(self, model: LatentGaussian, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self.schedule_ = site_schedule(self)
        self.conjugate_ = GaussianFromSites(model)
        N, self.t_ = model.n_train, 0
        lam1, lam2 = np.full(N, float(self.init_lam1)), np.full(N, float(self.init_lam2))
        if self.factorised:  # the regression's statistics, which start at the sites (λ̃₁, λ̃₂)
            self.xx12_, self.xx22_, self.xy1_, self.xy2_ = np.zeros(N), -np.ones(N), lam1, 2.0 * lam2
            return
        prior, X = model.latent_prior(), model.design()
        self.X_ = None if X is None else (scipy.sparse.csr_matrix(X) if scipy.sparse.issparse(X) else np.asarray(X, float))
        if prior.precision is not None:
            self.prior_prec_ = np.diag(prior.precision)
        else:  # Σ₀⁻¹ = K⁻¹ (a GP; badly conditioned for a large signal variance)
            self.prior_prec_ = scipy.linalg.cho_solve((scipy.linalg.cholesky(prior.cov, lower=True), True), np.eye(N))
        # q₀ = prior × sites: H̄ = Σ₀⁻¹ + XᵀWX (W = −2λ̃₂), z̄ = q₀'s mean, ḡ = 0 (so m = z̄ + H̄⁻¹ḡ = q₀'s mean)
        self.H_ = self.prior_prec_ + self._quadratic(-2.0 * lam2)
        self.z_bar_ = self.conjugate_.mean_and_marginals(lam1, lam2)[0]
        self.g_ = np.zeros(prior.dim)

    def _transpose(self, a: np.ndarray) -> np.ndarray:
        """Xᵀa (a for a GP, where X = I)."""
        return a.copy() if self.X_ is None else np.asarray(self.X_.T @ a).ravel()

    def _quadratic(self, c: np.ndarray) -> np.ndarray:
        """XᵀCX for C = diag(c), dense."""
        X = self.X_
        if X is None:
            return np.diag(c)
        return (X.T @ X.multiply(c[:, None])).toarray() if scipy.sparse.issparse(X) else X.T @ (X * c[:, None])

    def step(self) -> int:
        self.t_ += 1
        beta = self.schedule_(self.t_)
        (self._step_factorised if self.factorised else self._step_full)(beta)
        return self.model_.n_train

    def _step_factorised(self, beta: float) -> None:
        m, v = self.conjugate_.marginals(*self._sites())
        sd = np.sqrt(v)
        eps = self.rng_.standard_normal((len(m), self.n_samples))
        pm = np.concatenate([eps, -eps], axis=1)  # antithetic pairs
        _, d1, _ = self.model_.loglik(m[:, None] + sd[:, None] * pm)
        for name, new in (("xx12_", -m), ("xx22_", -sd * np.mean(eps**2, axis=1)),
                          ("xy1_", d1.mean(1)), ("xy2_", np.mean(pm * d1, axis=1))):
            setattr(self, name, (1 - beta) * getattr(self, name) + beta * new)
        if not np.all(self.xy2_ / self.xx22_ > 0):
            raise Diverged(f"S&K-FG: a factor's precision estimate is not positive at iteration {self.t_}")

    def _sites(self) -> tuple[np.ndarray, np.ndarray]:
        """λ̃₁ = XY1 − XX12·XY2/XX22 (precision × mean) and λ̃₂ = −½ XY2/XX22 (−½ precision) of every factor."""
        slope = self.xy2_ / self.xx22_
        return self.xy1_ - self.xx12_ * slope, -0.5 * slope

    def _step_full(self, beta: float) -> None:
        L = self._cholesky(self.H_)
        mean = self.z_bar_ + scipy.linalg.cho_solve((L, True), self.g_)
        eps = self.rng_.standard_normal((len(mean), self.n_samples))
        z = mean[:, None] + scipy.linalg.solve_triangular(L, eps, lower=True, trans="T")  # z ~ N(m, H̄⁻¹)
        _, d1, d2 = self.model_.loglik(z if self.X_ is None else np.asarray(self.X_ @ z))
        grad = self._transpose(d1.mean(1)) - self.prior_prec_ @ z.mean(1)
        neg_hessian = self._quadratic(-d2.mean(1)) + self.prior_prec_  # −E[∇² log p(y, z)] over the draws
        self.g_ = (1 - beta) * self.g_ + beta * grad
        self.H_ = (1 - beta) * self.H_ + beta * neg_hessian
        self.z_bar_ = (1 - beta) * self.z_bar_ + beta * z.mean(1)

    @staticmethod
    def _cholesky(a: np.ndarray) -> np.ndarray:
        try:
            return scipy.linalg.cholesky(a, lower=True, check_finite=True)
        except (np.linalg.LinAlgError, ValueError):
            raise Diverged("S&K-Alg2: the averaged Hessian lost positive definiteness") from None

    def posterior(self) -> GaussianPosterior:
        if self.factorised:
            return self.conjugate_.posterior(*self._sites())
        L = self._cholesky(self.H_)
        # Σ = H̄⁻¹ given by H̄'s factor, formed only if read (D = 2,000 on colon-cancer); the mean by its solves
        return GaussianPosterior(self.z_bar_ + scipy.linalg.cho_solve((L, True), self.g_), precision_tril=L)
