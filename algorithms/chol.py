"""Chol: the ELBO of a full-covariance Gaussian maximised directly by L-BFGS.

q(z) = N(m, LLᵀ) with L lower triangular; with the design A = X̃Σ₀^(1/2) of the
whitened variable (see :class:`Chol`) the ELBO

    L(m, L) = Σₙ E_{N(ηₙ | aₙᵀm, ‖Lᵀaₙ‖²)}[log p(yₙ|ηₙ)] − KL(N(m, LLᵀ) ‖ N(0, I))

and its gradient are computed exactly (the model's accurate Gaussian
expectations, or a Gauss–Hermite rule when asked):  ∂L/∂m = Aᵀ(∂f/∂m) − m,
∂L/∂L = tril(2 Aᵀ diag(∂f/∂v) A L − L + diag(1/L_dd)).
This is the deterministic reference optimum of Khan & Lin (2017), §7
("Chol"), there with a piecewise-quadratic bound instead of quadrature.

One :meth:`step` is a batch of ``iterations_per_step`` L-BFGS iterations
(scipy's L-BFGS-B, warm-started with the previous point; the curvature pairs
are rebuilt at each call, so a step is self-contained).  Every
function-and-gradient evaluation touches all N data points, so a step reports
(number of evaluations, line searches included) × N data points touched.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse

from svibench.algorithm import Algorithm
from svibench.capabilities.latent_gaussian import GaussianPosterior, LatentGaussian, expected_loglik
from svibench.quadrature import ACCURATE, expectation_rule

__all__ = ["Chol"]


class Chol(Algorithm):
    """Direct L-BFGS on the ELBO in (mean, Cholesky factor) form, whitened by the prior.

    The parameters are those of the whitened variable z̃ = Σ₀^(-1/2) z (Σ₀^(1/2) is
    diag(δ^(-1/2)) for a diagonal prior, the kernel's Cholesky factor for a GP):
    q(z̃) = N(m̃, L̃L̃ᵀ), so KL(q ‖ p) = KL(N(m̃, L̃L̃ᵀ) ‖ N(0, I)) and the design
    becomes X̃Σ₀^(1/2).  Whitening is a change of variables, not of the
    optimum; it spares L-BFGS the prior's conditioning (δ = 1e-5 for
    australian, σ_f² = e¹⁰ for the GP).

    Parameters
    ----------
    quadrature : str
        Accuracy of the expectations: ``"accurate"`` (the model's own) or
        ``"gauss-hermite-N"`` (:func:`svibench.quadrature.expectation_rule`).
    iterations_per_step : int
        L-BFGS iterations per :meth:`step`.
    memory : int
        L-BFGS memory (number of correction pairs).
    init_scale : float
        Initial L̃ = init_scale · I (m̃ = 0).
    """

    name = "chol"
    label = "Chol"
    requires: ClassVar[tuple[type, ...]] = (LatentGaussian,)

    def __init__(self, *, quadrature: str = ACCURATE, iterations_per_step: int = 10, memory: int = 20,
                 init_scale: float = 0.01) -> None:
        self.quadrature = quadrature
        self.iterations_per_step = iterations_per_step
        self.memory = memory
        self.init_scale = init_scale

    def check_params(self) -> None:
        if self.iterations_per_step < 1 or self.memory < 1 or self.init_scale <= 0:
            raise ValueError("iterations_per_step ≥ 1, memory ≥ 1 and init_scale > 0 are required")
        expectation_rule(self.quadrature)

    def init(self, model: LatentGaussian, rng: np.random.Generator) -> None:
        self.model_ = model
        prior = model.latent_prior()
        X = model.design()
        if prior.cov is not None:
            self.root_ = scipy.linalg.cholesky(prior.cov, lower=True)  # Σ₀^(1/2)
            self.design_ = self.root_
        else:
            self.root_ = 1.0 / np.sqrt(prior.precision)
            if scipy.sparse.issparse(X):
                self.design_ = scipy.sparse.csr_matrix(X) @ scipy.sparse.diags(self.root_)
            else:
                self.design_ = np.asarray(X, float) * self.root_
        D = prior.dim
        self.rows_, self.cols_ = np.tril_indices(D)
        L0 = self.init_scale * np.eye(D)
        self.x_ = np.concatenate([np.zeros(D), L0[self.rows_, self.cols_]])
        self.rule_ = expectation_rule(self.quadrature)

    def _unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        D = len(x) - len(self.rows_)
        L = np.zeros((D, D))
        L[self.rows_, self.cols_] = x[D:]
        return x[:D], L

    def negative_elbo(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """−L and its gradient at the packed whitened parameters x = (m̃, tril(L̃))."""
        m, L = self._unpack(x)
        A = self.design_
        AL, mu = A @ L, A @ m
        v = np.einsum("nd,nd->n", AL, AL)
        e = expected_loglik(self.model_, mu, v, self.rule_)
        diag = np.diag(L)
        kl = 0.5 * (np.sum(L * L) + m @ m - len(m) - 2.0 * np.sum(np.log(np.abs(diag))))
        gm = np.asarray(A.T @ e.dm).ravel() - m
        gL = 2.0 * np.asarray(A.T @ (e.dv[:, None] * AL)) - L + np.diag(1.0 / diag)
        return -float(e.value.sum() - kl), -np.concatenate([gm, gL[self.rows_, self.cols_]])

    def step(self) -> int:
        result = scipy.optimize.minimize(
            self.negative_elbo, self.x_, jac=True, method="L-BFGS-B",
            options={"maxiter": self.iterations_per_step, "maxcor": self.memory, "ftol": 0.0, "gtol": 1e-10},
        )
        self.x_ = result.x
        return int(result.nfev) * self.model_.n_train

    def posterior(self) -> GaussianPosterior:
        m, L = self._unpack(self.x_)
        if self.root_.ndim == 1:
            m, L = self.root_ * m, self.root_[:, None] * L
        else:
            m, L = self.root_ @ m, self.root_ @ L
        return GaussianPosterior(m, L @ L.T)
