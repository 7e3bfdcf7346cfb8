"""Auxiliary counts for Poisson–gamma factorisation: the conditionally conjugate augmentation.

X_ij = Σ_k c_ijk with c_ijk ~ Poisson(w_ik z_jk) (Cemgil 2009, §3; Gopalan, Hofman &
Blei 2015, §2.1) leaves the marginal of X unchanged and makes every complete
conditional conjugate:

* (c_ij1, …, c_ijK) | X_ij, w, z ~ Mult(X_ij; p_ijk ∝ w_ik z_jk), and zero when X_ij = 0,
* z_jk | c, w ~ Ga(a_z + Σ_i c_ijk, b_z + Σ_i m_ij w_ik), and symmetrically w_ik.

Mean field q(c_ij·) q(z_j) q(w) gives φ_ijk ∝ exp(E[log w_ik] + E[log z_jk])
(Gopalan et al. 2015, eq. 4–6), and the statistics a column j sends to w_ik are
(X_ij φ_ijk, m_ij E[z_jk]) on (log w, w).  Entries with X_ij = 0 carry no
counts, so every loop here runs over the observed nonzeros only, as a sparse matrix.
A column (image) j is a data point: its locals are z_j and its counts.

References
----------
A. T. Cemgil, "Bayesian inference for nonnegative matrix factorisation models",
Computational Intelligence and Neuroscience, 2009.
P. Gopalan, J. M. Hofman and D. M. Blei, "Scalable recommendation with hierarchical
Poisson factorization", UAI 2015.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse
from scipy.special import digamma, logsumexp

__all__ = ["CountChain", "Nonzeros", "WeightMoments", "column_locals", "new_column_locals", "count_sweep"]


@dataclass(frozen=True)
class WeightMoments:
    """The moments of the globals W (V, K) the locals need: E[log w_ik] and E[w_ik] (or log w, w at a draw)."""

    log_w: np.ndarray
    w: np.ndarray


@dataclass(frozen=True)
class CountChain:
    """A state of the Gibbs sampler: W (V, K) and Z (N, K) (the counts are redrawn every sweep)."""

    W: np.ndarray
    Z: np.ndarray


class Nonzeros:
    """The observed nonzero counts of X (V, N), as a column-compressed sparse matrix (built from their positions,
    without a dense masked copy of X: 376 MB on MNIST)."""

    def __init__(self, X: np.ndarray, mask: np.ndarray) -> None:
        rows, cols = np.nonzero((mask > 0) & (X != 0))
        self.csc = scipy.sparse.csc_matrix((X[rows, cols], (rows, cols)), shape=X.shape)
        self.V = X.shape[0]

    def column_sums(self, f) -> np.ndarray:
        """Σ_i f(X_ij) over each column's observed nonzeros (N,), e.g. Σ_i log X_ij! with f = gammaln(x + 1)."""
        counts = np.diff(self.csc.indptr)
        return np.bincount(np.repeat(np.arange(len(counts)), counts), weights=f(self.csc.data), minlength=len(counts))

    def of(self, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Rows i, batch positions b (columns batch[b]) and counts X_ij of the nonzeros in ``batch``."""
        sub = self.csc[:, batch].tocoo()
        return sub.row, sub.col, sub.data


def _summer(index: np.ndarray, size: int) -> scipy.sparse.csr_matrix:
    """The (size, nnz) 0/1 matrix that sums nonzero-indexed rows by ``index``."""
    return scipy.sparse.csr_matrix((np.ones(len(index)), (index, np.arange(len(index)))), shape=(size, len(index)))


def _softmax(logits: np.ndarray) -> np.ndarray:
    return np.exp(logits - logsumexp(logits, axis=1, keepdims=True))


def column_locals(view: WeightMoments, nonzeros: Nonzeros, mask: np.ndarray, batch: np.ndarray,
                  z_shape: float, z_rate: float, iterations: int, tol: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean-field coordinate ascent of every column's q(z_j) and q(c_j), all columns of ``batch`` at once.

    Alternates φ_ijk ∝ exp(E[log w_ik] + ψ(α_jk) − log β_jk) over the nonzeros and
    α_jk = a_z + Σ_i X_ij φ_ijk (β_jk = b_z + Σ_i m_ij E[w_ik] does not depend on φ),
    starting from φ uniform.  A column stops after the first sweep in which its α
    moved by less than ``tol`` on average (the rule of ``LocalApprox.inner_tol``),
    at most ``iterations`` sweeps.

    Returns
    -------
    alpha, beta : ndarray, shape (|B|, K)
        q(z_j) = Ga(α_j, β_j) (shape, rate).
    counts : ndarray, shape (V, K)
        Σ_{j∈B} X_ij φ_ijk, the expected counts each w_ik receives.
    """
    rows, cols, x = nonzeros.of(batch)
    K = view.w.shape[1]
    by_col = _summer(cols, len(batch))
    beta = z_rate + mask[:, batch].T @ view.w
    alpha = z_shape + np.broadcast_to((by_col @ x)[:, None] / K, beta.shape)
    active = np.ones(len(batch), dtype=bool)
    log_w = view.log_w[rows]
    for _ in range(iterations):
        xphi = x[:, None] * _softmax(log_w + (digamma(alpha) - np.log(beta))[cols])
        new = z_shape + by_col @ xphi
        moved = np.mean(np.abs(new - alpha), axis=1)
        alpha = np.where(active[:, None], new, alpha)
        active &= moved >= tol
        if not active.any():
            break
    return alpha, beta, _summer(rows, nonzeros.V) @ xphi


def new_column_locals(view: WeightMoments, X: np.ndarray, z_shape: float, z_rate: float, iterations: int,
                      tol: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`column_locals` for fully observed new columns X (V, M), in matrix form (dense BLAS).

    With Ŵ = exp E[log W] and Ẑ = exp E[log Z] (each row scaled by its largest entry, which
    cancels in φ), Σ_i X_ij φ_ijk = Ẑ_jk Σ_i Ŵ_ik X_ij / (Ŵ_i · Ẑ_j): the same sweeps, start,
    stopping rule and fixed point as :func:`column_locals`, at the cost of two (V, M, K)
    products instead of (nonzeros, K) exponentials; for scoring test images.

    Returns alpha, beta of shape (M, K): q(z_j) = Ga(α_j, β_j).
    """
    K = view.w.shape[1]
    w_hat = np.exp(view.log_w - view.log_w.max(axis=1, keepdims=True))
    beta = np.broadcast_to(z_rate + view.w.sum(axis=0), (X.shape[1], K))
    alpha = z_shape + np.broadcast_to(X.sum(axis=0)[:, None] / K, beta.shape)
    active = np.ones(X.shape[1], dtype=bool)
    for _ in range(iterations):
        on = slice(None) if active.all() else np.flatnonzero(active)  # a column that has stopped costs nothing
        log_z = digamma(alpha[on]) - np.log(beta[on])
        z_hat = np.exp(log_z - log_z.max(axis=1, keepdims=True))
        ratio = X[:, on] / np.maximum(w_hat @ z_hat.T, np.finfo(float).tiny)
        new = z_shape + z_hat * (ratio.T @ w_hat)
        active[on] = np.mean(np.abs(new - alpha[on]), axis=1) >= tol
        alpha[on] = new
        if not active.any():
            break
    return alpha, np.array(beta)


def count_sweep(state: CountChain, nonzeros: Nonzeros, mask: np.ndarray, prior: tuple[float, float, float, float],
                rng: np.random.Generator) -> CountChain:
    """One Gibbs sweep: counts | W, Z (multinomial), then Z | counts, W, then W | counts, Z (gamma).

    ``prior`` is (a_w, b_w, a_z, b_z).  Draws from ``rng``: the multinomials, then Z's gammas, then W's.
    """
    a_w, b_w, a_z, b_z = prior
    W, Z = state.W, state.Z
    rows, cols, x = nonzeros.of(np.arange(Z.shape[0]))
    p = W[rows] * Z[cols]
    counts = rng.multinomial(x.astype(np.int64), p / p.sum(axis=1, keepdims=True))
    tiny = np.finfo(float).tiny  # shapes ≪ 1 draw underflowing gammas; a zero rate would leave p undefined
    Z = np.maximum(rng.gamma(a_z + _summer(cols, Z.shape[0]) @ counts, 1.0 / (b_z + mask.T @ W)), tiny)
    W = np.maximum(rng.gamma(a_w + _summer(rows, W.shape[0]) @ counts, 1.0 / (b_w + mask @ Z)), tiny)
    return CountChain(W, Z)
