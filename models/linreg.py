"""Bayesian linear regression with known noise: a fully conjugate model.

w ~ N(0, α⁻¹ I), yₙ | xₙ, w ~ N(xₙᵀw, σ²).  The posterior is Gaussian in closed
form, N(μ, Σ) with Σ⁻¹ = αI + XᵀX/σ², μ = Σ Xᵀy/σ² (Bishop 2006, eq. 3.53–3.54),
so an algorithm's variational posterior can be checked against it exactly.
There are no local variables; the "local statistics" of a minibatch are its
likelihood's natural-parameter contributions (Xᵀy/σ², −XᵀX/(2σ²)).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np

from svibench.capabilities import ConjugatePosterior, Globals, LocalApprox
from svibench.data import Dataset
from svibench.expfam import GaussianFullNatural
from svibench.model import Model

__all__ = ["BayesianLinearRegression"]


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
    metrics = ("elbo", "heldout_loglik", "posterior_kl")
    posterior_types = (ConjugatePosterior,)
    local_kinds: ClassVar[tuple[str, ...]] = ("mf",)
    init_methods: ClassVar[tuple[str, ...]] = ("prior",)

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

    # -- evaluation
    def evaluate(self, posterior: ConjugatePosterior, rng: np.random.Generator) -> dict[str, float]:
        q = posterior.lam["w"]
        mean, cov = q.mean_cov()
        s2 = self.noise_variance
        resid = self.y - self.X @ mean
        expected_loglik = -0.5 * (
            self.n_train * np.log(2 * np.pi * s2) + (resid @ resid + np.einsum("nd,de,ne->", self.X, cov, self.X)) / s2
        )
        out = {
            "elbo": float(expected_loglik - q.kl(self._prior["w"])),
            "posterior_kl": float(q.kl(self.exact_posterior())),
        }
        if "X" in self.data.test:
            Xt, yt = self.data.test["X"], self.data.test["y"]
            var = s2 + np.einsum("nd,de,ne->n", Xt, cov, Xt)
            out["heldout_loglik"] = float(np.mean(-0.5 * np.log(2 * np.pi * var) - 0.5 * (yt - Xt @ mean) ** 2 / var))
        return out
