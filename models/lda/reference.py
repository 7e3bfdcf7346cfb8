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


def _bisect(c: np.ndarray, target: float) -> int:
    return min(int(np.searchsorted(c, target, side="right")), len(c) - 1)


def _draw(p: np.ndarray, u: float) -> int:
    """The inverse-CDF draw from weights ``p`` at uniform ``u``."""
    return _bisect(np.cumsum(p), u * p.sum())


def gibbs_documents(indptr, words, counts, weights, alpha, u, burnin, samples, stats) -> None:
    """Mimno et al. (2012)'s sampled locals (see the kernel): each draw over the document's part (its topics in the
    kernel's list order: a topic enters at the end, a leaving one's place taken by the last) and then the
    smoothing part."""
    cum = np.cumsum(weights, axis=1)
    t = 0
    for d in range(len(indptr) - 1):
        tokens = np.repeat(words[indptr[d]:indptr[d + 1]], counts[indptr[d]:indptr[d + 1]].astype(np.int64))
        z = np.zeros(len(tokens), dtype=np.int64)
        present: list[int] = []
        ndk = np.zeros(weights.shape[1])
        for s in range(-1, burnin + samples):
            for i, v in enumerate(tokens):
                if s < 0:
                    k = _bisect(cum[v], u[0, t + i] * cum[v, -1])
                else:
                    ndk[z[i]] -= 1.0
                    if ndk[z[i]] == 0.0:
                        j = present.index(z[i])
                        last = present.pop()
                        if j < len(present):
                            present[j] = last
                    part = np.cumsum(ndk[present] * weights[v, present])
                    r = part[-1] if len(part) else 0.0
                    target = u[1 + s, t + i] * (r + alpha * cum[v, -1])
                    if target < r:
                        k = present[int(np.searchsorted(part, target, side="right"))]
                    else:
                        k = _bisect(cum[v], (target - r) / alpha)
                z[i] = k
                if ndk[k] == 0.0:
                    present.append(int(k))
                ndk[k] += 1.0
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
