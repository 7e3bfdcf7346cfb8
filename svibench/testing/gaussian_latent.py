"""A conjugate latent-Gaussian model, for testing latent-Gaussian algorithms against the exact posterior.

z ~ N(0, Σ₀), yₙ ~ N(x̃ₙᵀz, σ²): the posterior is Gaussian in closed form, so the
optimal Gaussian q of every latent-Gaussian algorithm is known exactly.  It offers
:class:`~svibench.capabilities.latent_gaussian.LatentGaussian` and nothing else.
"""
from __future__ import annotations

import numpy as np

from ..capabilities.latent_gaussian import ExpectedLoglik, LatentGaussianPrior


def optimal_elbo(model, iterations: int = 1500) -> float:
    """The ELBO's maximum over full-covariance Gaussians, by L-BFGS on the accurate ELBO (Chol).

    The reference optimum for latent-Gaussian algorithms on a non-conjugate model.
    """
    from ..algorithms.chol import Chol

    chol = Chol(iterations_per_step=iterations)
    chol.init(model, np.random.default_rng(0))
    chol.step()
    return model.elbo(chol.posterior())

__all__ = ["ConjugateLatentGaussian", "optimal_elbo"]


class ConjugateLatentGaussian:
    """A conjugate latent-Gaussian model: z ~ N(0, Σ₀), yₙ ~ N(x̃ₙᵀz, σ²)."""

    def __init__(self, X, y, *, precision=None, cov=None, noise=0.3):
        self.X, self.y, self.noise = X, y, noise
        self.prior = LatentGaussianPrior(precision=precision, cov=cov)

    n_train = property(lambda self: len(self.y))

    def latent_prior(self):
        return self.prior

    def design(self):
        return self.X

    def loglik(self, eta, batch=None):
        y = (self.y if batch is None else self.y[batch])[:, None]
        r = y - eta
        s2 = self.noise**2
        return -0.5 * np.log(2 * np.pi * s2) - 0.5 * r**2 / s2, r / s2, np.full_like(eta, -1.0 / s2)

    def gaussian_expectation(self, m, v, batch=None):
        """E[log N(y | η, σ²)] = −½ log 2πσ² − ((y − m)² + v)/(2σ²) for η ~ N(m, v)."""
        r, s2 = (self.y if batch is None else self.y[batch]) - m, self.noise**2
        return ExpectedLoglik(-0.5 * np.log(2 * np.pi * s2) - 0.5 * (r**2 + v) / s2, r / s2, np.full_like(m, -0.5 / s2))

    def exact_posterior(self):
        """N(μ, Σ): Σ⁻¹ = Σ₀⁻¹ + XᵀX/σ², μ = Σ Xᵀy/σ² (Bishop 2006, eq. 3.53–3.54)."""
        X = np.eye(len(self.y)) if self.X is None else self.X
        prior_prec = np.diag(self.prior.precision) if self.prior.precision is not None else np.linalg.inv(self.prior.cov)
        cov = np.linalg.inv(prior_prec + X.T @ X / self.noise**2)
        return cov @ X.T @ self.y / self.noise**2, cov
