"""Gaussian-process classification with a logistic likelihood (Khan & Lin 2017, §3–4, §7).

    f ~ N(0, K),  K_ij = σ_f² exp(−‖xᵢ − xⱼ‖² / (2ℓ²)),  yₙ ~ Bernoulli(σ(fₙ))

Hyperparameters are fixed (the paper's USPS setting: log ℓ = 2.5, log σ_f = 5).
Offers the latent-Gaussian capability (kernel prior, identity design) and the
log joint (for BBVI; a mean-field block's Markov blanket is its likelihood
term plus the whole GP prior).  Metrics: ELBO / negative ELBO (with the
accurate Gaussian expectations of :mod:`.logistic_expectation`), test log
loss in nats (the authors' GP code) and bits, test error.  Test marginals: f* | f has mean K*ᵀK⁻¹f, so under q(f) = N(m, S)
m* = Aᵀm and v* = k** − diag(AᵀK*) + diag(AᵀSA) with A = K⁻¹K*.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.spatial.distance import cdist

from svibench.capabilities.latent_gaussian import GaussianPosterior, LatentGaussianPrior
from svibench.data import Dataset

from .logreg import LatentLogisticModel, binary_metrics, logistic_loglik

__all__ = ["GPClassification"]


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
    conformance_problem = {"dataset": "usps-3v5", "dataset_params": {"n_per_class": 40, "split": 0}, "steps": 10}
    data_kinds = ("classification",)
    metrics = ("elbo", "neg_elbo", "test_logloss_nats", "test_logloss_bits", "test_error", "heldout_loglik")

    def __init__(self, data: Dataset, *, log_lengthscale: float = 2.5, log_sigma_f: float = 5.0,
                 jitter: float = 1e-8) -> None:
        super().__init__(data)
        self.X = np.asarray(data.train["X"], dtype=float)
        self.y = np.asarray(data.train["y"], dtype=float)
        self.ell2, self.sf2 = np.exp(2 * log_lengthscale), np.exp(2 * log_sigma_f)
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
        return LatentGaussianPrior(cov=self.K)

    def design(self) -> None:
        return None

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
        return -0.5 * np.sum(w * w, 0) - np.sum(np.log(np.diag(self.chol_K))) - 0.5 * self.n_train * np.log(2 * np.pi)

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        return self._lik(z, batch)[0].sum(1) + self._log_prior(z)

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        lik = self._lik(z, batch)[0]
        prior = self._log_prior(z)[:, None]
        return (lik.sum(1, keepdims=True) + prior) if kind == "full" else lik + prior

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        return self._lik(z, batch)[1] - scipy.linalg.cho_solve((self.chol_K, True), z.T).T

    # -- evaluation
    def evaluate(self, posterior: GaussianPosterior, rng: np.random.Generator) -> dict[str, float]:
        elbo = self.elbo(posterior)
        out = {"elbo": elbo, "neg_elbo": -elbo}
        if "X" in self.data.test:
            Ks = self.kernel(self.X, np.asarray(self.data.test["X"], float))
            A = scipy.linalg.cho_solve((self.chol_K, True), Ks)
            m = A.T @ posterior.mean
            v = self.sf2 - np.sum(A * Ks, 0) + np.sum(A * (posterior.cov @ A), 0)
            out.update(binary_metrics(m, np.maximum(v, 1e-12), np.asarray(self.data.test["y"], float)))
        return out
