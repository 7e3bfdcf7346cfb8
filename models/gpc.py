"""Gaussian-process classification with a logistic likelihood (Khan & Lin 2017, §3–4, §7).

    f ~ N(0, K),  K_ij = σ_f² exp(−‖xᵢ − xⱼ‖² / (2ℓ²)),  yₙ ~ Bernoulli(σ(fₙ))

Hyperparameters are fixed (the paper's USPS setting: log ℓ = 2.5, log σ_f = 5).
Offers the latent-Gaussian capability (kernel prior, identity design) and the
log joint (for BBVI; a mean-field block's Markov blanket is its likelihood
term plus the whole GP prior), and by Pólya-Gamma augmentation
(:mod:`.polya_gamma`) the conditionally conjugate capability and a Gibbs
sampler, with the latent function f as the one global: given ω, q(f) has
η₁ = κ, η₂ = −½(K⁻¹ + diag ω).  Minibatch SVI is well defined (a datum's
terms touch only its own coordinate of η₁ and diagonal entry of η₂, scaled by
N/|B| for the sampled rows: an unbiased natural gradient) but gains nothing:
every step still turns the N×N λ into moments, O(N³), whatever |B|, and a
step moves only the sampled rows' terms (towards N/|B| times their value), so
it adds noise and no speed; use a full batch (ρ = 1: VMP).

Metrics: ELBO / negative ELBO (with the accurate Gaussian expectations of
:mod:`.logistic_expectation`), the augmented bound ``elbo_augmented``, test log
loss in nats (the authors' GP code) and bits, test error.  Test marginals:
f* | f has mean K*ᵀK⁻¹f, so under q(f) = N(m, S)
m* = Aᵀm and v* = k** − diag(AᵀK*) + diag(AᵀSA) with A = K⁻¹K*.
"""
from __future__ import annotations

from functools import cached_property

import numpy as np
import scipy.linalg
from scipy.spatial.distance import cdist

from svibench.capabilities.jax_log_joint import JaxLogDensity
from svibench.capabilities.latent_gaussian import GaussianPosterior, LatentGaussianPrior
from svibench.data import Dataset
from svibench.expfam import LOG_2PI, GaussianFullNatural
from svibench.metrics import metric_table

from .logreg import LOGISTIC_METRICS, LatentLogisticModel, binary_metrics, jax_logistic_loglik, logistic_loglik
from .polya_gamma import LatentView, PolyaGammaChain

__all__ = ["GPClassification", "jax_gpc_log_joint"]


def jax_gpc_log_joint(f, y, chol_K):
    """log p(y, f) of GP classification in JAX: Σₙ log σ(sₙfₙ) + log N(f | 0, K), K = LLᵀ."""
    import jax.numpy as jnp
    from jax.scipy.linalg import solve_triangular

    w = solve_triangular(chol_K, f, lower=True)
    log_prior = -0.5 * w @ w - jnp.sum(jnp.log(jnp.diag(chol_K))) - 0.5 * f.shape[0] * LOG_2PI
    return jax_logistic_loglik(f, y) + log_prior


class GPClassification(LatentLogisticModel):
    """GP classification, squared-exponential kernel, logistic likelihood.

    Parameters
    ----------
    data : Dataset of kind ``"classification"`` with dense ``X`` and 0/1 ``y``.
    log_lengthscale, log_sigma_f : float
        log ℓ and log σ_f of the kernel.
    jitter : float
        Added to K's diagonal, relative to σ_f².
    """

    name = "gpc"
    conformance_problem = {"dataset": "usps-3v5", "dataset_params": {"n_per_class": 110, "split": 0}, "steps": 10}
    data_kinds = ("classification",)
    metrics = metric_table(*(LOGISTIC_METRICS[m] for m in ("elbo", "neg_elbo", "elbo_augmented", "test_logloss_nats",
                                                          "test_logloss_bits", "test_error", "heldout_loglik")))
    #: Exact for every q (a Gibbs chain is scored by its Gaussian moments).
    answer = "elbo"
    primary = ("elbo", "test_logloss_nats", "test_error")

    def __init__(self, data: Dataset, *, log_lengthscale: float = 2.5, log_sigma_f: float = 5.0,
                 jitter: float = 1e-8) -> None:
        super().__init__(data)
        self.X = np.asarray(data.train["X"], dtype=float)
        self.y = np.asarray(data.train["y"], dtype=float)
        self.ell2, self.sf2, self.jitter = np.exp(2 * log_lengthscale), np.exp(2 * log_sigma_f), jitter
        self.K = self.kernel(self.X, self.X) + jitter * self.sf2 * np.eye(len(self.y))
        self.chol_K = scipy.linalg.cholesky(self.K, lower=True)

    def kernel(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return self.sf2 * np.exp(-0.5 * cdist(A, B, "sqeuclidean") / self.ell2)

    @property
    def n_train(self) -> int:
        return len(self.y)

    @property
    def latent_dim(self) -> int:
        return len(self.y)

    def train_marginals(self, q: GaussianPosterior) -> tuple[np.ndarray, np.ndarray]:
        return q.mean, np.diag(q.cov).copy()

    # -- capability: latent Gaussian
    def latent_prior(self) -> LatentGaussianPrior:
        return LatentGaussianPrior(cov=self.K, scale_tril=self.chol_K)

    def design(self) -> None:
        return None

    # -- Pólya-Gamma augmentation (models.polya_gamma)
    def _prior_gaussian(self) -> GaussianFullNatural:
        K_inv = scipy.linalg.cho_solve((self.chol_K, True), np.eye(self.n_train))
        return GaussianFullNatural(np.zeros(self.n_train), -0.25 * (K_inv + K_inv.T))

    def _draw_z(self, state: PolyaGammaChain, rng: np.random.Generator) -> PolyaGammaChain:
        """f ~ p(f | ω, y) without K⁻¹, which rounding ruins when σ_f is large (the paper's σ_f = e⁵ with the
        jitter gives cond(K) ~ 1e10, so the explicit K⁻¹ of :meth:`_prior_gaussian` is off by far more than its
        smallest eigenvalues: the chain's conditional was too narrow).  Given ω the κₙ are Gaussian
        pseudo-observations f̃ₙ = κₙ/ωₙ of fₙ with noise variance 1/ωₙ, so with W = diag ω and the well-conditioned
        B = I + W^½KW^½ (Rasmussen & Williams 2006, §3.4.3): mean K W^½ B⁻¹ W^½ f̃, covariance
        K − K W^½ B⁻¹ W^½ K, and a draw by Matheron's rule, f = f₀ + K W^½ B⁻¹ (W^½(f̃ − f₀) − ε) with
        f₀ ~ N(0, K) and ε ~ N(0, I) (Wilson et al. 2020, eq. 4)."""
        sw = np.sqrt(state.omega)
        chol_B = scipy.linalg.cholesky(np.eye(self.n_train) + sw[:, None] * self.K * sw, lower=True)
        V = scipy.linalg.solve_triangular(chol_B, sw[:, None] * self.K, lower=True)  # L_B⁻¹ W^½ K

        def gain(r: np.ndarray) -> np.ndarray:  # K W^½ B⁻¹ r
            return V.T @ scipy.linalg.solve_triangular(chol_B, r, lower=True)

        kappa = self.y - 0.5
        state.record(gain(kappa / sw), self.K - V.T @ V)
        prior = self.chol_K @ rng.standard_normal(self.n_train)
        state.z = prior + gain(kappa / sw - sw * prior - rng.standard_normal(self.n_train))
        return state

    def _row_marginals(self, view: LatentView, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return view.mean[batch], (np.zeros(len(batch)) if view.cov is None else np.diag(view.cov)[batch])

    def _row_natural(self, batch: np.ndarray, kappa: np.ndarray, omega: np.ndarray) -> GaussianFullNatural:
        n = self.n_train
        return GaussianFullNatural(np.bincount(batch, kappa, n), -0.5 * np.diag(np.bincount(batch, omega, n)))

    # -- capability: log joint
    def _lik(self, z: np.ndarray, batch: np.ndarray | None):
        """Per-datum log-likelihood (S, N), zero outside ``batch`` and scaled by N/|B| inside it."""
        f, d1, _ = logistic_loglik(z.T, self.y)
        f, d1 = f.T, d1.T
        if batch is not None:
            mask = np.zeros(self.n_train)
            mask[batch] = self.n_train / len(batch)
            f, d1 = f * mask, d1 * mask
        return f, d1

    def _log_prior(self, z: np.ndarray) -> np.ndarray:
        w = scipy.linalg.solve_triangular(self.chol_K, z.T, lower=True)
        return -0.5 * np.sum(w * w, 0) - np.sum(np.log(np.diag(self.chol_K))) - 0.5 * self.n_train * LOG_2PI

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        return self._lik(z, batch)[0].sum(1) + self._log_prior(z)

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        lik = self._lik(z, batch)[0]
        prior = self._log_prior(z)[:, None]
        return (lik.sum(1, keepdims=True) + prior) if kind == "full" else lik + prior

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        return self._lik(z, batch)[1] - scipy.linalg.cho_solve((self.chol_K, True), z.T).T

    # -- capability: JAX log joint
    def jax_log_joint(self) -> JaxLogDensity:
        return JaxLogDensity(jax_gpc_log_joint, (self.y, self.chol_K))

    # -- evaluation
    @property
    def has_test(self) -> bool:
        return "X" in self.data.test

    @cached_property
    def _test_gain(self) -> tuple[np.ndarray, np.ndarray]:
        """A = K⁻¹K* and k** − diag(AᵀK*), which do not depend on q: computed once, not at every checkpoint."""
        Ks = self.kernel(self.X, np.asarray(self.data.test["X"], float))
        A = scipy.linalg.cho_solve((self.chol_K, True), Ks)
        return A, self.sf2 - np.sum(A * Ks, 0)

    def test_marginals(self, mean: np.ndarray, cov: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """m* = Aᵀm, v* = k** − diag(AᵀK*) + diag(AᵀSA), A = K⁻¹K* (module docstring; S = 0 when ``cov`` is None)."""
        A, v_prior = self._test_gain
        v = np.maximum(v_prior + (0.0 if cov is None else np.sum(A * (cov @ A), 0)), 1e-12)
        return A.T @ mean, (v if np.ndim(mean) == 1 else v[:, None])

    def evaluate(self, posterior, rng: np.random.Generator) -> dict[str, float]:
        """Metrics of q(f): a GaussianPosterior, SVI/VMP's λ or the PG Gibbs chain (:meth:`gaussian`)."""
        posterior = self.gaussian(posterior)
        out = self.elbo_metrics(posterior)
        if self.has_test:
            out.update(binary_metrics(self.test_probabilities(posterior), np.asarray(self.data.test["y"], float)))
        return out
