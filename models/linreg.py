"""Bayesian linear regression with known noise: a fully conjugate model.

w ~ N(0, α⁻¹ I), yₙ | xₙ, w ~ N(xₙᵀw, σ²).  The posterior is Gaussian in closed
form, N(μ, Σ) with Σ⁻¹ = αI + XᵀX/σ², μ = Σ Xᵀy/σ² (Bishop 2006, eq. 3.53–3.54),
so an algorithm's variational posterior can be checked against it exactly.
There are no local variables; the "local statistics" of a minibatch are its
likelihood's natural-parameter contributions (Xᵀy/σ², −XᵀX/(2σ²)).

It also offers its log joint and gradient in w, so BBVI (score function or
reparameterised) runs on it with a mean-field or full Gaussian family; a
Gaussian q is scored by the same exact ELBO as the conjugate one.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from svibench.capabilities import ConjugatePosterior, Globals, LocalApprox
from svibench.capabilities.jax_log_joint import JaxLogDensity
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.data import Dataset
from svibench.expfam import LOG_2PI, GaussianFullNatural
from svibench.metrics import Metric, metric_table
from svibench.model import Model

from .gaussian_families import FullGaussian, MeanFieldGaussian

__all__ = ["BayesianLinearRegression", "jax_linreg_log_joint"]


def jax_linreg_log_joint(w, X, y, noise_variance, prior_precision):
    """log p(y, w) of linear regression in JAX: Σₙ log N(yₙ | xₙᵀw, σ²) + log N(w | 0, α⁻¹I)."""
    import jax.numpy as jnp

    resid = y - X @ w
    loglik = -0.5 * (y.shape[0] * (LOG_2PI + jnp.log(noise_variance)) + resid @ resid / noise_variance)
    return loglik + 0.5 * w.shape[0] * (jnp.log(prior_precision) - LOG_2PI) - 0.5 * prior_precision * w @ w


class BayesianLinearRegression(Model):
    """Bayesian linear regression with known noise variance.

    Parameters
    ----------
    data : Dataset of kind ``"regression"`` with ``X`` (N, D) and ``y`` (N,).
    prior_precision : float
        α.
    noise_variance : float
        σ², known.
    """

    name = "linreg"
    #: Small problem of the conformance suite (``svibench.testing``).
    conformance_problem: ClassVar[dict] = {"dataset": "linreg-synthetic",
                                           "dataset_params": {"n": 300, "n_test": 100, "dim": 3, "seed": 0}}
    data_kinds = ("regression",)
    metrics = metric_table(
        Metric("elbo", "higher", "objective", "nats", description="exact ELBO of the Gaussian q(w)"),
        Metric("heldout_loglik", "higher", "task", "nats per test point",
               description="mean log predictive density of the test targets under q (exact)"),
        Metric("posterior_kl", "lower", "diagnostic", "nats", low=0.0,
               description="KL(q ‖ exact posterior), closed form (Bishop 2006, eq. 3.53–3.54); elbo + KL = log p(y)"),
    )
    #: Exact for every Gaussian q; ranks like ``posterior_kl`` (their sum is the constant log p(y)).
    answer = "elbo"
    primary = ("elbo", "heldout_loglik", "posterior_kl")
    posterior_types = (ConjugatePosterior, GaussianPosterior)
    local_kinds: ClassVar[tuple[str, ...]] = ("mf",)
    init_methods: ClassVar[tuple[str, ...]] = ("prior",)
    family_kinds: ClassVar[tuple[str, ...]] = ("meanfield", "full")

    def __init__(self, data: Dataset, *, prior_precision: float = 1.0, noise_variance: float = 0.25) -> None:
        super().__init__(data)
        self.X, self.y = data.train["X"], data.train["y"]
        self.prior_precision, self.noise_variance = prior_precision, noise_variance
        D = self.X.shape[1]
        self._prior = {"w": GaussianFullNatural.from_mean_precision(np.zeros(D), prior_precision * np.eye(D))}

    @property
    def n_train(self) -> int:
        return self.X.shape[0]

    def exact_posterior(self) -> GaussianFullNatural:
        """The closed-form posterior N(μ, Σ), Bishop (2006) eq. 3.53–3.54."""
        D = self.X.shape[1]
        precision = self.prior_precision * np.eye(D) + self.X.T @ self.X / self.noise_variance
        mean = np.linalg.solve(precision, self.X.T @ self.y / self.noise_variance)
        return GaussianFullNatural.from_mean_precision(mean, precision)

    # -- comparison with a reference posterior (svibench.reference.capability)
    def exact_latent_posterior(self) -> GaussianPosterior:
        """The exact posterior of w as mean and covariance (the reference of a conjugate model)."""
        return GaussianPosterior(*self.exact_posterior().mean_cov())

    def latent_moments(self, posterior: ConjugatePosterior | GaussianPosterior) -> GaussianPosterior:
        """q(w)'s mean and covariance, whatever form the algorithm hands it in."""
        if isinstance(posterior, GaussianPosterior):
            return posterior
        return GaussianPosterior(*posterior.lam["w"].mean_cov())

    # -- capability: conditionally conjugate (no locals)
    def prior_natural(self) -> Globals:
        return dict(self._prior)

    def init_globals(self, rng: np.random.Generator, method: str = "prior") -> Globals:
        return dict(self._prior)

    def expected_view(self, lam: Globals) -> None:
        return None

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> None:
        return None

    def local_statistics(self, view: None, batch: np.ndarray, approx: LocalApprox, rng: np.random.Generator) -> Globals:
        if approx.kind not in self.local_kinds:
            raise ValueError(f"linreg offers local approximations {self.local_kinds}, not {approx.kind!r}")
        x, y = self.X[batch], self.y[batch]
        return {"w": GaussianFullNatural(x.T @ y / self.noise_variance, -0.5 * x.T @ x / self.noise_variance)}

    # -- capability: log joint with its gradient (BBVI)
    def variational_family(self, kind: str = "meanfield") -> MeanFieldGaussian | FullGaussian:
        if kind not in self.family_kinds:
            raise ValueError(f"linreg offers families {self.family_kinds}, not {kind!r}")
        return (MeanFieldGaussian if kind == "meanfield" else FullGaussian)(self.X.shape[1])

    def _scaled(self, batch: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, float]:
        """The data terms of ``batch`` (all when None) and their weight N/|B|."""
        if batch is None:
            return self.X, self.y, 1.0
        return self.X[batch], self.y[batch], self.n_train / len(batch)

    def log_joint(self, w: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        """log N(w | 0, α⁻¹I) + (N/|B|) Σ_{n∈B} log N(yₙ | xₙᵀw, σ²), for draws w of shape (S, D)."""
        x, y, scale = self._scaled(batch)
        resid = y - w @ x.T  # (S, |B|)
        s2, alpha, D = self.noise_variance, self.prior_precision, w.shape[1]
        loglik = -0.5 * (len(y) * (LOG_2PI + np.log(s2)) + np.sum(resid**2, axis=1) / s2)
        return scale * loglik + 0.5 * D * (np.log(alpha) - LOG_2PI) - 0.5 * alpha * np.sum(w**2, axis=1)

    def log_joint_blocks(self, w: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """Every coordinate of w meets every likelihood term: each block's Markov blanket is the whole joint."""
        n_blocks = self.variational_family(kind).n_blocks
        return np.repeat(self.log_joint(w, batch)[:, None], n_blocks, axis=1)

    def grad_log_joint(self, w: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        """(N/|B|) Σ_{n∈B} xₙ (yₙ − xₙᵀw)/σ² − αw."""
        x, y, scale = self._scaled(batch)
        return scale * (y - w @ x.T) @ x / self.noise_variance - self.prior_precision * w

    # -- capability: JAX log joint
    @property
    def latent_dim(self) -> int:
        """Dimension of w."""
        return self.X.shape[1]

    def jax_log_joint(self) -> JaxLogDensity:
        return JaxLogDensity(jax_linreg_log_joint, (np.asarray(self.X, float), np.asarray(self.y, float),
                                                    np.float64(self.noise_variance), np.float64(self.prior_precision)))

    def posterior_from_gaussian(self, q: GaussianPosterior) -> GaussianPosterior:
        """q(w) itself: ``evaluate`` takes a GaussianPosterior."""
        return q

    # -- evaluation
    def evaluate(self, posterior: ConjugatePosterior | GaussianPosterior, rng: np.random.Generator) -> dict[str, float]:
        """Exact ELBO, KL to the exact posterior and held-out log density of a Gaussian q(w)
        (the SVI family's natural parameters, or BBVI's mean and covariance)."""
        if isinstance(posterior, GaussianPosterior):
            q = GaussianFullNatural.from_mean_cov(posterior.mean, posterior.cov)
        else:
            q = posterior.lam["w"]
        mean, cov = q.mean_cov()
        s2 = self.noise_variance
        resid = self.y - self.X @ mean
        expected_loglik = -0.5 * (
            self.n_train * (LOG_2PI + np.log(s2)) + (resid @ resid + np.einsum("nd,de,ne->", self.X, cov, self.X)) / s2
        )
        out = {
            "elbo": float(expected_loglik - q.kl(self._prior["w"])),
            "posterior_kl": float(q.kl(self.exact_posterior())),
        }
        if "X" in self.data.test:
            Xt, yt = self.data.test["X"], self.data.test["y"]
            var = s2 + np.einsum("nd,de,ne->n", Xt, cov, Xt)
            out["heldout_loglik"] = float(np.mean(-0.5 * (LOG_2PI + np.log(var)) - 0.5 * (yt - Xt @ mean) ** 2 / var))
        return out
