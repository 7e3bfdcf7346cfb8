"""Plain numpy references of the compiled loops in ``models.lda.kernels``.

The same updates, written for reading and checking, not for speed: the tests
check the kernels against them.  Same arguments and the same draws.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma

__all__ = ["mf_documents", "gibbs_documents", "collapsed_sweep"]


def _exp_elog_theta(gamma_d: np.ndarray) -> np.ndarray:
    return np.exp(digamma(gamma_d) - digamma(gamma_d.sum()))


def mf_documents(indptr, words, counts, weights, alpha, gamma, iterations, tol, stats, accumulate) -> None:
    """Hoffman, Blei & Bach (2010), Algorithm 2's E-step, one document at a time (see the kernel)."""
    for d in range(len(gamma)):
        ids, cts = words[indptr[d]:indptr[d + 1]], counts[indptr[d]:indptr[d + 1]]
        w = weights[ids]                                       # (n_d, K)
        et = _exp_elog_theta(gamma[d])
        phinorm = w @ et + 1e-100
        for _ in range(iterations):
            new = alpha + et * ((cts / phinorm) @ w)
            change = np.mean(np.abs(new - gamma[d]))
            gamma[d] = new
            et = _exp_elog_theta(gamma[d])
            phinorm = w @ et + 1e-100
            if change < tol:
                break
        if accumulate:
            np.add.at(stats, ids, (cts / phinorm)[:, None] * et * w)


def _draw(p: np.ndarray, u: float) -> int:
    return min(int(np.searchsorted(np.cumsum(p), u * p.sum(), side="right")), len(p) - 1)


def gibbs_documents(indptr, words, counts, weights, alpha, u, burnin, samples, stats) -> None:
    """Mimno et al. (2012)'s sampled locals (see the kernel)."""
    t = 0
    for d in range(len(indptr) - 1):
        tokens = np.repeat(words[indptr[d]:indptr[d + 1]], counts[indptr[d]:indptr[d + 1]].astype(np.int64))
        z = np.array([_draw(weights[v], u[0, t + i]) for i, v in enumerate(tokens)], dtype=np.int64)
        ndk = np.bincount(z, minlength=weights.shape[1]).astype(float)
        for s in range(burnin + samples):
            for i, v in enumerate(tokens):
                ndk[z[i]] -= 1.0
                z[i] = _draw((alpha + ndk) * weights[v], u[1 + s, t + i])
                ndk[z[i]] += 1.0
            if s >= burnin:
                np.add.at(stats, (tokens, z), 1.0 / samples)
        t += len(tokens)


def collapsed_sweep(doc, word, z, ndk, nwk, nk, alpha, eta, u) -> None:
    """Griffiths & Steyvers (2004, eq. 5), in place (see the kernel)."""
    v_eta = nwk.shape[0] * eta
    for i in range(len(z)):
        d, w, k = doc[i], word[i], z[i]
        ndk[d, k] -= 1
        nwk[w, k] -= 1
        nk[k] -= 1
        k = _draw((ndk[d] + alpha) * (nwk[w] + eta) / (nk + v_eta), u[i])
        z[i] = k
        ndk[d, k] += 1
        nwk[w, k] += 1
        nk[k] += 1
