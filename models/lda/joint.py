"""LDA's log joint with z summed out, for black-box VI, on unnormalised Gamma coordinates.

With z summed out, p(w | θ, β) = Π_d Π_v (Σ_k θ_dk β_kv)^n_dv.  θ_d and β_k live
on simplices; BBVI's mean-field Gamma family (``models.gamma_family``) needs
positive unconstrained-shape latents, so each simplex is written as normalised
Gammas: g_dk ~ Ga(α, 1) gives θ_d = g_d / Σ_k g_dk ~ Dir(α) (and h_kv ~ Ga(η, 1),
β_k = h_k / Σ_v h_kv ~ Dir(η)), with the totals Σ_k g_dk independent of θ_d.  The
joint of (w, g, h) is therefore the joint of (w, θ, β) times the totals' own
Gamma densities, and every ELBO of a q(g, h) is a lower bound on the same log p(w)
that the SVI family's ELBO bounds, so the two compare.

Gradients (checked against finite differences in ``tests/models/test_lda.py``): with
r_dv = Σ_k θ_dk β_kv, A_dk = Σ_v n_dv β_kv / r_dv and B_kv = Σ_d n_dv θ_dk / r_dv,

    ∂ log p(w | θ, β) / ∂g_dk = (A_dk − Σ_j θ_dj A_dj) / Σ_j g_dj,
    ∂ log p(w | θ, β) / ∂h_kv = (B_kv − Σ_u β_ku B_ku) / Σ_u h_ku.

Every sum runs over the nonzeros of the count matrix only.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse
from scipy.special import gammaln

__all__ = ["doc_loglik", "loglik_grad", "gamma_prior", "gamma_prior_grad"]


def _rates(counts: scipy.sparse.csr_matrix, theta: np.ndarray, beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and r_dv = θ_dᵀβ_·v of every nonzero (d, v) of ``counts``, in CSR order, for one draw θ (B, K), β (K, V)."""
    rows = np.repeat(np.arange(counts.shape[0]), np.diff(counts.indptr))
    return rows, np.einsum("nk,kn->n", theta[rows], beta[:, counts.indices])


def doc_loglik(counts: scipy.sparse.csr_matrix, g: np.ndarray, h: np.ndarray) -> np.ndarray:
    """Σ_v n_dv log r_dv of every document of ``counts`` (B, V), for each draw g (S, B, K), h (S, K, V): (S, B)."""
    out = np.empty(g.shape[:2])
    for s in range(len(g)):  # one draw at a time: (nnz, K) temporaries, not (S, nnz, K)
        rows, rate = _rates(counts, g[s] / g[s].sum(1, keepdims=True), h[s] / h[s].sum(1, keepdims=True))
        out[s] = np.bincount(rows, counts.data * np.log(rate), minlength=counts.shape[0])
    return out


def loglik_grad(counts: scipy.sparse.csr_matrix, g: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """∂/∂g (S, B, K) and ∂/∂h (S, K, V) of Σ_d Σ_v n_dv log r_dv over the documents of ``counts`` (the module's formulas)."""
    grad_g, grad_h = np.empty_like(g), np.empty_like(h)
    for s in range(len(g)):
        g_tot, h_tot = g[s].sum(1, keepdims=True), h[s].sum(1, keepdims=True)
        theta, beta = g[s] / g_tot, h[s] / h_tot
        _, rate = _rates(counts, theta, beta)
        C = counts.copy()  # the CSR pattern with n_dv / r_dv as its values
        C.data = counts.data / rate
        A, B = C @ beta.T, (C.T @ theta).T
        grad_g[s] = (A - np.sum(theta * A, 1, keepdims=True)) / g_tot
        grad_h[s] = (B - np.sum(beta * B, 1, keepdims=True)) / h_tot
    return grad_g, grad_h


def gamma_prior(x: np.ndarray, shape: float) -> np.ndarray:
    """log Ga(x | shape, 1), elementwise."""
    return (shape - 1.0) * np.log(x) - x - gammaln(shape)


def gamma_prior_grad(x: np.ndarray, shape: float) -> np.ndarray:
    """∂ log Ga(x | shape, 1) / ∂x."""
    return (shape - 1.0) / x - 1.0
