"""Chol: the ELBO of a full-covariance Gaussian maximised directly by L-BFGS.

q(z) = N(m, LLᵀ) with L lower triangular; with the design A = X̃R of the
rescaled variable z̃ = R⁻¹z (see :class:`Chol`) the ELBO

    L(m, L) = Σₙ E_{N(ηₙ | aₙᵀm, ‖Lᵀaₙ‖²)}[log p(yₙ|ηₙ)] − KL(q(z̃) ‖ N(0, R⁻¹Σ₀R⁻ᵀ))

and its gradient are computed exactly (the model's accurate Gaussian
expectations, or a Gauss–Hermite rule when asked), with R⁻¹Σ₀R⁻ᵀ = diag(1/r) (I or diagonal):
∂L/∂m = Aᵀ(∂f/∂m) − r∘m, ∂L/∂L = tril(2 Aᵀ diag(∂f/∂v) A L − diag(r) L + diag(1/L_dd)).
This is the deterministic reference optimum of Khan & Lin (2017), §7
("Chol"), there with a piecewise-quadratic bound instead of quadrature.

One :meth:`step` is ``iterations_per_step`` iterations of one long L-BFGS run
(:class:`svibench.numerics.lbfgs.LBFGS`: the two-loop recursion with a strong-Wolfe line
search, its curvature pairs and current point kept between steps, so N steps of
k iterations are the iterates of one run of N·k).  Every function-and-gradient
evaluation touches all N data points, so a step reports (number of evaluations,
line searches included) × N data points touched.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.linalg
import scipy.sparse

from svibench.numerics.jit import numba
from svibench.algorithm import Algorithm
from svibench.capabilities.latent_gaussian import GaussianFromSites, GaussianPosterior, LatentGaussian, expected_loglik
from svibench.numerics.lbfgs import LBFGS
from svibench.numerics.quadrature import ACCURATE, expectation_rule

__all__ = ["Chol"]


@numba.njit(cache=True)
def _sparse_quadratic_rows(data, indices, indptr, S):  # pragma: no cover - compiled
    """vₙ = aₙᵀ S aₙ for every row aₙ of a CSR matrix: O(Σₙ nnz(aₙ)²), against O(nnz · D) for (AL)(AL)ᵀ."""
    v = np.zeros(len(indptr) - 1)
    for r in range(len(indptr) - 1):
        acc = 0.0
        for p in range(indptr[r], indptr[r + 1]):
            for q in range(indptr[r], indptr[r + 1]):
                acc += data[p] * data[q] * S[indices[p], indices[q]]
        v[r] = acc
    return v


@numba.njit(cache=True)
def _sparse_weighted_gram(data, indices, indptr, w, D):  # pragma: no cover - compiled
    """Σₙ wₙ aₙaₙᵀ (D × D) for the rows aₙ of a CSR matrix."""
    M = np.zeros((D, D))
    for r in range(len(indptr) - 1):
        for p in range(indptr[r], indptr[r + 1]):
            for q in range(indptr[r], indptr[r + 1]):
                M[indices[p], indices[q]] += w[r] * data[p] * data[q]
    return M


class Chol(Algorithm):
    """Direct L-BFGS on the ELBO in (mean, Cholesky factor) form, in rescaled coordinates.

    The parameters are those of z̃ = R⁻¹z: q(z̃) = N(m̃, L̃L̃ᵀ), the design becomes X̃R,
    and KL(q ‖ p) = ½[Σ_d r_d(‖L̃_d·‖² + m̃_d²) − D − 2Σ log|L̃_dd| − Σ log r_d] with
    R⁻¹Σ₀R⁻ᵀ = diag(1/r).  For a GP, R = chol(K) whitens (r = 1; σ_f² = e¹⁰ makes K badly
    conditioned).  For a diagonal prior R = diag(c^(-1/2)) with c_d = δ_d + Σₙ −∂²log p(yₙ|0)/∂η²
    x_nd² (``precondition``, the Laplace diagonal at z = 0) or c = δ (whitening by the prior
    alone).  A change of variables, not of the optimum: it gives L-BFGS coordinates of unit
    curvature.  Whitening alone leaves a7a's bias (prior precision 1e-4) with curvature 1e4
    times the rest: 0.1% of the optimum took ~1,000 iterations, preconditioned ~60.

    Parameters
    ----------
    quadrature : str
        Accuracy of the expectations: ``"accurate"`` (the model's own) or
        ``"gauss-hermite-N"`` (:func:`svibench.numerics.quadrature.expectation_rule`).
    iterations_per_step : int
        L-BFGS iterations per :meth:`step`.
    memory : int
        L-BFGS memory (number of correction pairs).
    init_scale : float
        Initial L̃ = init_scale · I (m̃ = 0), unless the initial sites are given.
    init_lam1, init_lam2 : float, optional
        Start instead at q₀ = prior × sites exp(λ̃₁ηₙ + λ̃₂ηₙ²), as the authors' code does (emtiyaz/cvi,
        ``baseline_infer.m``, case ``'Chol'``: 0.01 and −0.25, i.e. site precisions 0.5).
    precondition : bool
        Diagonal prior: rescale by the Laplace diagonal at 0 (True) or by the prior alone.
    """

    name = "chol"
    label = "Chol"
    requires: ClassVar[tuple[type, ...]] = (LatentGaussian,)

    def __init__(self, *, quadrature: str = ACCURATE, iterations_per_step: int = 1, memory: int = 20,
                 init_scale: float = 0.01, init_lam1: float | None = None, init_lam2: float | None = None,
                 precondition: bool = True) -> None:
        self.quadrature = quadrature
        self.precondition = precondition
        self.iterations_per_step = iterations_per_step
        self.memory = memory
        self.init_scale = init_scale
        self.init_lam1 = init_lam1
        self.init_lam2 = init_lam2

    def check_params(self) -> None:
        if self.iterations_per_step < 1 or self.memory < 1 or self.init_scale <= 0:
            raise ValueError("iterations_per_step ≥ 1, memory ≥ 1 and init_scale > 0 are required")
        if (self.init_lam1 is None) != (self.init_lam2 is None):
            raise ValueError("give both init_lam1 and init_lam2 (the initial sites), or neither")
        if self.init_lam2 is not None and self.init_lam2 >= 0:
            raise ValueError(f"init_lam2 must be < 0 (a valid Gaussian site), got {self.init_lam2}")
        expectation_rule(self.quadrature)

    def init(self, model: LatentGaussian, rng: np.random.Generator) -> None:
        self.model_ = model
        prior = model.latent_prior()
        X = model.design()
        if prior.cov is not None:
            self.root_ = scipy.linalg.cholesky(prior.cov, lower=True)  # Σ₀^(1/2)
            self.design_, self.r_ = self.root_, np.ones(prior.dim)
        else:
            self.root_ = 1.0 / np.sqrt(self._curvature(model, prior.precision, X))
            self.r_ = prior.precision * self.root_**2
            if scipy.sparse.issparse(X):
                self.design_ = scipy.sparse.csr_matrix(scipy.sparse.csr_matrix(X, dtype=float) @ scipy.sparse.diags(self.root_))
                self.design_.sort_indices()
            else:
                self.design_ = np.asarray(X, float) * self.root_
        D = prior.dim
        self.rows_, self.cols_ = np.tril_indices(D)
        m0, L0 = np.zeros(D), self.init_scale * np.eye(D)
        if self.init_lam1 is not None:
            q0 = GaussianFromSites(model).posterior(np.full(model.n_train, float(self.init_lam1)),
                                                    np.full(model.n_train, float(self.init_lam2)))
            m0, L0 = self._whiten(q0.mean), self._whiten(scipy.linalg.cholesky(q0.cov, lower=True))
        self.rule_ = expectation_rule(self.quadrature)
        self.lbfgs_ = LBFGS(self.negative_elbo, np.concatenate([m0, L0[self.rows_, self.cols_]]), memory=self.memory)

    def _whiten(self, a: np.ndarray) -> np.ndarray:
        """R⁻¹a: a mean or a Cholesky factor of z, in the coordinates z̃ = R⁻¹z the optimiser works in."""
        if self.root_.ndim == 1:
            return a / (self.root_ if a.ndim == 1 else self.root_[:, None])
        return scipy.linalg.solve_triangular(self.root_, a, lower=True)

    def _curvature(self, model: LatentGaussian, precision: np.ndarray, X) -> np.ndarray:
        """The scale of each coordinate: the prior precision δ_d, plus, when ``precondition``, the
        log joint's curvature Σₙ −∂²log p(yₙ|0)/∂η² x_nd² at z = 0 (the Laplace diagonal there)."""
        if not self.precondition:
            return precision
        d2 = -model.loglik(np.zeros((model.n_train, 1)))[2][:, 0]
        sq = X.multiply(X) if scipy.sparse.issparse(X) else np.asarray(X, float) ** 2
        return precision + np.asarray(sq.T @ d2).ravel()

    def _unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        D = len(x) - len(self.rows_)
        L = np.zeros((D, D))
        L[self.rows_, self.cols_] = x[D:]
        return x[:D], L

    def negative_elbo(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """−L and its gradient at the packed whitened parameters x = (m̃, tril(L̃)).

        For a sparse design, vₙ = aₙᵀ(L̃L̃ᵀ)aₙ and Aᵀdiag(∂f/∂v)A are formed row by row over the
        nonzeros (cost Σₙ nnz(aₙ)² + D³ instead of nnz(A)·D: a7a's 16,100 × 124 design, 14 nonzeros a
        row, 5× faster); a dense one goes through AL̃."""
        m, L = self._unpack(x)
        A = self.design_
        mu = A @ m
        if scipy.sparse.issparse(A):
            v = _sparse_quadratic_rows(A.data, A.indices, A.indptr, L @ L.T)
        else:
            AL = A @ L
            v = np.einsum("nd,nd->n", AL, AL)
        e = expected_loglik(self.model_, mu, v, self.rule_)
        diag = np.diag(L)
        r = self.r_
        kl = 0.5 * (r @ np.sum(L * L, axis=1) + r @ (m * m) - len(m) - 2.0 * np.sum(np.log(np.abs(diag))) - np.sum(np.log(r)))
        gm = np.asarray(A.T @ e.dm).ravel() - r * m
        if scipy.sparse.issparse(A):
            gram = _sparse_weighted_gram(A.data, A.indices, A.indptr, e.dv, len(m)) @ L
        else:
            gram = np.asarray(A.T @ (e.dv[:, None] * AL))
        gL = 2.0 * gram - r[:, None] * L + np.diag(1.0 / diag)
        return -float(e.value.sum() - kl), -np.concatenate([gm, gL[self.rows_, self.cols_]])

    def step(self) -> int:
        before = self.lbfgs_.n_evals
        self.lbfgs_.iterate(self.iterations_per_step)
        return (self.lbfgs_.n_evals - before) * self.model_.n_train

    def posterior(self) -> GaussianPosterior:
        m, L = self._unpack(self.lbfgs_.x)
        if self.root_.ndim == 1:
            m, L = self.root_ * m, self.root_[:, None] * L
        else:
            m, L = self.root_ @ m, self.root_ @ L
        return GaussianPosterior(m, scale_tril=L)
