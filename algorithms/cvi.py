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
import scipy.linalg
import scipy.sparse

from svibench.algorithm import Algorithm, Diverged, Preset
from svibench.capabilities.latent_gaussian import (
    GaussianPosterior,
    LatentGaussian,
    expected_loglik,
    mean_parameter_gradients,
)
from svibench.minibatch import sample_minibatch
from svibench.quadrature import ACCURATE, expectation_rule, monte_carlo
from svibench.schedules import make_schedule

__all__ = ["CVI", "PseudoObservationPosterior"]


class PseudoObservationPosterior:
    """The conjugate step: q(z) ∝ N(z | 0, Σ₀) Πₙ exp(λ̃₁ₙ ηₙ + λ̃₂ₙ ηₙ²), η = Xz.

    Parameters
    ----------
    model : LatentGaussian
        Gives the prior (diagonal precision or kernel K) and the design X
        (None for a GP, where η = z).

    Notes
    -----
    With W = diag(−2λ̃₂) the posterior precision is Σ₀⁻¹ + XᵀWX and its
    linear term Xᵀλ̃₁.  *Weight space* (diagonal prior, D ≤ N): factor the
    D × D precision.  *Data space* (kernel, or D > N): with K = XΣ₀Xᵀ and
    B = I + W½KW½ = LLᵀ (Rasmussen & Williams 2006, Alg. 3.2),
    Cov(η) = K − CᵀC with C = L⁻¹W½K, and E[η] = Cov(η) λ̃₁.
    """

    def __init__(self, model: LatentGaussian) -> None:
        prior, X = model.latent_prior(), model.design()
        self.X = None if X is None else (scipy.sparse.csr_matrix(X) if scipy.sparse.issparse(X) else np.asarray(X, float))
        if prior.cov is not None:
            if self.X is not None:
                raise ValueError("a kernel prior takes no design (ηₙ = zₙ)")
            self.space, self.K, self.prior_var = "data", np.asarray(prior.cov, dtype=float), None
        else:
            self.prior_var = 1.0 / prior.precision
            N, D = self.X.shape
            self.space = "weight" if D <= N else "data"
            if self.space == "data":
                self.X = self.X.toarray() if scipy.sparse.issparse(self.X) else self.X
                self.K = (self.X * self.prior_var) @ self.X.T
            else:
                self.XT = self.X.T.tocsr() if scipy.sparse.issparse(self.X) else self.X.T
        self.prior = prior

    def marginals(self, lam1: np.ndarray, lam2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances of ηₙ = x̃ₙᵀz under q, for every training datum."""
        w = -2.0 * lam2
        if self.space == "weight":
            L = self._cholesky(self._precision(w))
            mu = scipy.linalg.cho_solve((L, True), self.XT @ lam1, check_finite=False)
            # vₙ = ‖L⁻¹x̃ₙ‖²: one D × D triangular inverse, then a (sparse) product with X
            Linv = scipy.linalg.solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False)
            A = self.X @ Linv.T
            return self.X @ mu, np.einsum("nd,nd->n", A, A)
        _, C = self._data_factor(w)
        v = np.diag(self.K) - np.sum(C * C, axis=0)
        m = self.K @ lam1 - C.T @ (C @ lam1)
        return m, v

    def posterior(self, lam1: np.ndarray, lam2: np.ndarray) -> GaussianPosterior:
        """q(z) with explicit mean and covariance (for evaluation, off the clock)."""
        w = -2.0 * lam2
        if self.space == "weight":
            L = self._cholesky(self._precision(w))
            cov = scipy.linalg.cho_solve((L, True), np.eye(L.shape[0]))
            return GaussianPosterior(cov @ (self.XT @ lam1), cov)
        L, C = self._data_factor(w)
        cov_eta = self.K - C.T @ C
        m = cov_eta @ lam1
        if self.X is None:
            return GaussianPosterior(m, cov_eta)
        XA = self.X * self.prior_var  # XΣ₀, (N, D)
        G = scipy.linalg.solve_triangular(L, np.sqrt(w)[:, None] * XA, lower=True)
        cov = np.diag(self.prior_var) - G.T @ G
        return GaussianPosterior(XA.T @ (lam1 - w * m), cov)

    def _precision(self, w: np.ndarray) -> np.ndarray:
        """Σ₀⁻¹ + XᵀWX (weight space)."""
        if scipy.sparse.issparse(self.X):
            precision = (self.XT.multiply(w[None, :]) @ self.X).toarray()
        else:
            precision = self.XT @ (self.X * w[:, None])
        precision[np.diag_indices_from(precision)] += self.prior.precision
        return precision

    def _data_factor(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sw = np.sqrt(w)
        B = sw[:, None] * self.K * sw[None, :]
        B[np.diag_indices_from(B)] += 1.0
        L = self._cholesky(B)
        return L, scipy.linalg.solve_triangular(L, sw[:, None] * self.K, lower=True, check_finite=False)

    @staticmethod
    def _cholesky(a: np.ndarray) -> np.ndarray:
        try:
            return scipy.linalg.cholesky(a, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            raise Diverged("the conjugate step's matrix lost positive definiteness") from None


class CVI(Algorithm):
    """CVI (Khan & Lin 2017, Algorithm 1) for latent Gaussian models.

    Parameters
    ----------
    expectations : {"mc", "exact"}
        Monte-Carlo gradients with ``n_samples`` shared standard-normal draws,
        or deterministic expectations (CVI-exact).
    n_samples : int
    quadrature : str
        Accuracy of the exact expectations: ``"accurate"`` (the model's own) or
        ``"gauss-hermite-N"`` (:func:`svibench.quadrature.expectation_rule`).
    w, rho : float, optional
        Constant step βₜ = w/(1+w) (Table 2) or βₜ = rho (``rho`` wins when both
        are given); with neither (w=None), Robbins–Monro βₜ = (t + t0)^(−kappa).
    t0, kappa : float
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
        if self.n_samples < 1:
            raise ValueError(f"n_samples must be ≥ 1, got {self.n_samples}")
        expectation_rule(self.quadrature)
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1 or None, got {self.batch_size}")
        if self.init_lam2 >= 0:
            raise ValueError(f"init_lam2 must be < 0 (a valid Gaussian site), got {self.init_lam2}")
        if self.max_rejections < 0:
            raise ValueError("max_rejections must be ≥ 0")
        self._schedule()

    def _schedule(self):
        """β_t: ``rho``, else w/(1+w), else Robbins–Monro (see the class docstring)."""
        return make_schedule(rho=self.rho, w=None if self.rho is not None else self.w, t0=self.t0, kappa=self.kappa)

    def init(self, model: LatentGaussian, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self.schedule_ = self._schedule()
        self.conjugate_ = PseudoObservationPosterior(model)
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
