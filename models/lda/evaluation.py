"""LDA's metrics: held-out perplexity by document completion, and the per-word ELBO.

Document completion (Wallach, Murray, Salakhutdinov & Mimno 2009, §4.2's
"estimated θ" method, as in Hoffman, Blei & Bach 2010, §4): every held-out
document's tokens are split in two halves (``datasets.bow.document_completion``).
Given a point estimate of the topics β̂ (K, V) — E_q[β] for a variational q(β),
(n_kw + η)/(n_k + Vη) for a collapsed Gibbs state, the true β for the truth —
q(θ_d) = Dir(γ_d) is fitted to the *observed* half by the mean-field coordinate
ascent with β fixed at β̂ (``kernels.mf_documents``), and the *held-out* half is
scored with θ̂_d = E_q[θ_d]:

    log p(w_ho) ≈ Σ_d Σ_{v ∈ ho_d} n_dv log Σ_k θ̂_dk β̂_kv,
    perplexity = exp(−log p(w_ho) / number of held-out tokens).

Every method is scored by the same estimator from its topics alone, so the
numbers compare.  (scikit-learn's ``perplexity()`` is not used: on held-out
documents it scores the variational bound with an unscaled topic KL.)
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma, gammaln

from . import kernels
from .corpus import Corpus

__all__ = ["completion_loglik", "fit_documents", "elbo"]


def fit_documents(corpus: Corpus, weights_vk: np.ndarray, alpha: float, iterations: int, tol: float,
                  stats: np.ndarray | None = None, batch: np.ndarray | None = None) -> np.ndarray:
    """γ (B, K) of q(θ_d) for the documents ``batch`` (all: None) by the mean-field locals with topic weights
    ``weights_vk`` (V, K), starting from γ_dk = 1 (the slides' SVI for LDA, step 5; scikit-learn's
    non-random start); adds Σ n φ to ``stats`` if given."""
    indptr, words, counts = corpus.arrays(batch)
    K = weights_vk.shape[1]
    gamma = np.ones((len(indptr) - 1, K))
    accumulate = stats is not None
    kernels.mf_documents(indptr, words, counts, np.ascontiguousarray(weights_vk), float(alpha), gamma,
                       int(iterations), float(tol), stats if accumulate else np.zeros((1, K)), accumulate)
    return gamma


def completion_loglik(topics: np.ndarray, alpha: float, observed: Corpus, heldout: Corpus,
                      iterations: int, tol: float) -> float:
    """Σ log p of the held-out halves given the observed halves and topics β̂ (K, V) (see the module)."""
    gamma = fit_documents(observed, topics.T, alpha, iterations, tol)
    theta = gamma / gamma.sum(axis=1, keepdims=True)
    coo = heldout.csr.tocoo()
    p = np.einsum("nk,kn->n", theta[coo.row], topics[:, coo.col])
    return float(coo.data @ np.log(p))


def elbo(corpus: Corpus, lam: np.ndarray, alpha: float, eta: float, iterations: int, tol: float,
         batch: np.ndarray | None = None) -> float:
    """The ELBO of q(β) = Π Dir(λ_k) with every document's q(θ_d) q(z_d) fitted by the mean-field locals.

    Hoffman, Blei & Bach (2010)'s bound (``onlineldavb.py``'s ``approx_bound``,
    unscaled): with φ optimal given γ, Σ_v n_dv Σ_k φ(E log θ + E log β − log φ)
    = Σ_v n_dv log Σ_k exp(E log θ_dk + E log β_kv).  With ``batch`` (a subset of the documents), the
    documents' terms are summed over it and scaled by D/|batch| (the bound's minibatch estimate, as
    ``approx_bound`` scales a minibatch's); the topics' term is exact.
    """
    elog_beta = digamma(lam) - digamma(lam.sum(axis=1, keepdims=True))
    gamma = fit_documents(corpus, np.exp(elog_beta).T, alpha, iterations, tol, batch=batch)
    elog_theta = digamma(gamma) - digamma(gamma.sum(axis=1, keepdims=True))
    coo = (corpus.csr if batch is None else corpus.csr[batch]).tocoo()
    phinorm = np.einsum("nk,kn->n", np.exp(elog_theta)[coo.row], np.exp(elog_beta)[:, coo.col])
    K, V = lam.shape
    words = coo.data @ np.log(phinorm)
    docs = (np.sum((alpha - gamma) * elog_theta) + np.sum(gammaln(gamma)) - np.sum(gammaln(gamma.sum(axis=1)))
            + len(gamma) * (gammaln(K * alpha) - K * gammaln(alpha)))
    topics = (np.sum((eta - lam) * elog_beta) + np.sum(gammaln(lam)) - np.sum(gammaln(lam.sum(axis=1)))
              + K * (gammaln(V * eta) - V * gammaln(eta)))
    scale = 1.0 if batch is None else corpus.D / len(batch)
    return float(scale * (words + docs) + topics)
