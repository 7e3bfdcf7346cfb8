"""Compiled (numba) loops of LDA's local steps and of the collapsed Gibbs sampler.

Each is the same computation as its plain-Python reference in
``models.lda.reference`` (``tests/models/test_lda.py`` checks them against each other):

* :func:`mf_documents` — Hoffman, Blei & Bach (2010)'s per-document coordinate
  ascent (their Algorithm 2, ``onlineldavb.py``'s ``do_e_step``), each document
  stopping after the first sweep in which its γ moved by less than ``tol`` on
  average (``meanchangethresh``).  It runs over the nonzeros of a CSR
  document–word matrix only, never a dense D × V loop;
* :func:`gibbs_documents` — Mimno, Hoffman & Blei (2012)'s sampled locals: a
  Gibbs sweep over each document's tokens with θ_d integrated out,
  p(z_n = k | z₋ₙ, w, β) ∝ (α + n_dk^¬n) β_k,w_n, whose topic–word counts are
  averaged over the sweeps kept after burn-in; each draw split into a document part and a
  smoothing part as SparseLDA splits it (Yao, Mimno & McCallum 2009), so that it costs the
  document's topics, not K;
* :func:`collapsed_sweep` — Griffiths & Steyvers (2004)'s collapsed Gibbs
  sampler over every training token, θ and β integrated out.

Random numbers are uniforms pre-drawn by the caller's ``numpy.random.Generator``,
so that a seed fixes the trajectory on both paths.  Sweeps over the tokens of
one document are sequential by nature, which is why they are compiled.

Topic weights come as a (V, K) array (word-major), so that the K weights of one
word are contiguous.  Single-threaded, as BPFA's kernels (``models.bpfa.kernels``).
"""
from __future__ import annotations

import math

import numpy as np

from svibench.numerics.jit import numba

__all__ = ["mf_documents", "gibbs_documents", "collapsed_sweep", "digamma"]

_jit = numba.njit(cache=True)


@_jit
def digamma(x):
    """ψ(x) for x > 0: the recurrence ψ(x) = ψ(x + 1) − 1/x up to x ≥ 6, then the asymptotic series
    (Abramowitz & Stegun 6.3.18) to x⁻¹⁰; absolute error below 1e-11."""
    shift = 0.0
    while x < 6.0:
        shift -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    tail = f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f / 132))))
    return shift + math.log(x) - 0.5 / x - tail


@_jit
def _exp_elog_theta(gamma_d, out):
    """exp(E[log θ_dk]) = exp(ψ(γ_dk) − ψ(Σ_k γ_dk)) into ``out``."""
    total = 0.0
    for k in range(gamma_d.shape[0]):
        total += gamma_d[k]
    psi_total = digamma(total)
    for k in range(gamma_d.shape[0]):
        out[k] = math.exp(digamma(gamma_d[k]) - psi_total)


@_jit
def _phinorm(words, lo, hi, weights, et, out):
    """Σ_k exp(E[log θ_dk]) w_k,v for each nonzero v of the document (φ's normaliser)."""
    for j in range(lo, hi):
        row = weights[words[j]]
        s = 0.0
        for k in range(et.shape[0]):
            s += et[k] * row[k]
        out[j - lo] = s + 1e-100


@_jit
def mf_documents(indptr, words, counts, weights, alpha, gamma, iterations, tol, stats, accumulate):
    """Mean-field locals of every document of a CSR batch, in place.

    Parameters
    ----------
    indptr, words, counts : the batch's CSR arrays (int64, int64, float64).
    weights : (V, K) exp(E[log β_kv]) (expected view) or β_kv (a draw, or a point estimate).
    gamma : (B, K) starting γ, overwritten with the fitted q(θ_d) = Dir(γ_d).
    stats : (V, K) receives Σ_d n_dv φ_dvk when ``accumulate`` (Hoffman et al. 2010, eq. 5).
    """
    K = gamma.shape[1]
    et = np.empty(K)
    acc = np.empty(K)
    for d in range(gamma.shape[0]):
        lo, hi = indptr[d], indptr[d + 1]
        phinorm = np.empty(hi - lo)
        _exp_elog_theta(gamma[d], et)
        _phinorm(words, lo, hi, weights, et, phinorm)
        for _ in range(iterations):
            acc[:] = 0.0
            for j in range(lo, hi):
                c = counts[j] / phinorm[j - lo]
                row = weights[words[j]]
                for k in range(K):
                    acc[k] += c * row[k]
            change = 0.0
            for k in range(K):
                new = alpha + et[k] * acc[k]
                change += abs(new - gamma[d, k])
                gamma[d, k] = new
            _exp_elog_theta(gamma[d], et)
            _phinorm(words, lo, hi, weights, et, phinorm)
            if change / K < tol:
                break
        if accumulate:
            for j in range(lo, hi):
                c = counts[j] / phinorm[j - lo]
                row = weights[words[j]]
                for k in range(K):
                    stats[words[j], k] += c * et[k] * row[k]


@_jit
def _draw(c, target):
    """The index k with c[k−1] ≤ target < c[k] (the inverse-CDF draw; K − 1 past c[K − 2]) given the
    running sums c of the weights: the number of c[k] ≤ target below K − 1, as c never decreases.
    A branch-free count that vectorises, where stopping at the first c[k] > target would walk a second
    add chain; the same index, so the same draws as summing in the scan."""
    n = 0
    for k in range(c.shape[0] - 1):
        n += c[k] <= target
    return n


@_jit
def _bisect(c, target):
    """The index k with c[k−1] ≤ target < c[k] (K − 1 past c[K − 2]) in running sums c that never decrease: the
    inverse-CDF draw by bisection, the same index as :func:`_draw` counts."""
    lo, hi = 0, c.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if c[mid] <= target:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _running_sums(weights):
    """Each row's running sums, (V, K)."""
    cum = np.empty(weights.shape)
    for v in range(weights.shape[0]):
        total = 0.0
        for k in range(weights.shape[1]):
            total += weights[v, k]
            cum[v, k] = total
    return cum


@_jit
def _tokens(words, counts, lo, hi):
    """The word of every token of the nonzeros lo..hi (a document), each repeated by its count, in CSR order."""
    n = 0
    for j in range(lo, hi):
        n += int(counts[j])
    tokens = np.empty(n, np.int64)
    i = 0
    for j in range(lo, hi):
        for _ in range(int(counts[j])):
            tokens[i] = words[j]
            i += 1
    return tokens


@_jit
def gibbs_documents(indptr, words, counts, weights, alpha, u, burnin, samples, stats):
    """Mimno et al. (2012)'s sampled locals of every document of a CSR batch.

    Tokens are the nonzeros expanded by their counts, in CSR order.  Each token's
    topic starts as a draw ∝ w_·v (θ-free; uniforms ``u[0]``); then ``burnin +
    samples`` sweeps with uniforms ``u[1 + s]``.  ``stats`` (V, K) receives the
    topic–word counts averaged over the last ``samples`` sweeps.

    A draw from p(z = k) ∝ (α + n_dk) w_vk is split as SparseLDA splits it (Yao, Mimno & McCallum 2009, §3):
    the document's part Σₖ n_dk w_vk over the topics present in the document, then the smoothing part
    α Σₖ w_vk over every topic.  One uniform picks the part and the topic within it (inverse CDF over the two
    parts laid end to end), the smoothing part by bisection of w_v's running sums, which are formed once per call;
    so a draw costs the document's topics and log K, not K.  The topics present are kept in a list, each with
    its count: a topic enters at the end when its count becomes 1 and leaves when it becomes 0, the last entry
    taking its place (so the document's part is laid out in that list's order).  The initial draw bisects the
    running sums too.
    """
    K = weights.shape[1]
    cum = _running_sums(weights)
    present = np.empty(K, np.int64)  # the document's topics, in list order
    count = np.empty(K)  # n_dk of present[j]
    where = np.full(K, -1, np.int64)  # j with present[j] = k, or -1
    part = np.empty(K)
    t = 0
    for d in range(indptr.shape[0] - 1):
        tokens = _tokens(words, counts, indptr[d], indptr[d + 1])
        n = tokens.shape[0]
        z = np.empty(n, np.int64)
        n_present = 0
        for s in range(-1, burnin + samples):
            for i in range(n):
                v = tokens[i]
                if s < 0:
                    k = _bisect(cum[v], u[0, t + i] * cum[v, K - 1])
                else:
                    j = where[z[i]]
                    count[j] -= 1.0
                    if count[j] == 0.0:  # z[i] leaves: the last entry takes its place
                        n_present -= 1
                        where[z[i]] = -1
                        if j < n_present:
                            present[j] = present[n_present]
                            count[j] = count[n_present]
                            where[present[j]] = j
                    row = weights[v]
                    r = 0.0
                    for j in range(n_present):
                        r += count[j] * row[present[j]]
                        part[j] = r
                    target = u[1 + s, t + i] * (r + alpha * cum[v, K - 1])
                    if target < r:
                        j = 0
                        while part[j] <= target:
                            j += 1
                        k = present[j]
                    else:
                        k = _bisect(cum[v], (target - r) / alpha)
                z[i] = k
                if where[k] < 0:  # k enters at the end
                    where[k] = n_present
                    present[n_present] = k
                    count[n_present] = 1.0
                    n_present += 1
                else:
                    count[where[k]] += 1.0
            if s >= burnin:
                for i in range(n):
                    stats[tokens[i], z[i]] += 1.0 / samples
        for j in range(n_present):
            where[present[j]] = -1
        t += n


@_jit
def collapsed_sweep(doc, word, z, ndk, nwk, nk, alpha, eta, u):
    """One sweep of Griffiths & Steyvers (2004, eq. 5) over every token, in place:
    p(z_i = k | z₋ᵢ, w) ∝ (n_dk^¬i + α)(n_kw^¬i + η) / (n_k^¬i + Vη)."""
    K = nk.shape[0]
    v_eta = nwk.shape[0] * eta
    c = np.empty(K)
    for i in range(z.shape[0]):
        d, w, k = doc[i], word[i], z[i]
        ndk[d, k] -= 1
        nwk[w, k] -= 1
        nk[k] -= 1
        total = 0.0
        for k in range(K):
            total += (ndk[d, k] + alpha) * (nwk[w, k] + eta) / (nk[k] + v_eta)
            c[k] = total
        k = _draw(c, u[i] * total)
        z[i] = k
        ndk[d, k] += 1
        nwk[w, k] += 1
        nk[k] += 1
