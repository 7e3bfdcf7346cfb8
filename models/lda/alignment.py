"""LDA's latent for a reference posterior: a compact summary of the topics, and its relabelling.

The topics β (K × V) are K·V numbers (40,000 on lda/synthetic): too many for a covariance or for a meaningful
ESS floor on each.  The compared latent is, per topic k, β_k aggregated onto M + 1 bins: the M words most
frequent in the training corpus (:func:`summary_words`, fixed by the data before any sampling) and the rest,
1 − Σ_{w∈W} β_kw.  By the aggregation property of the Dirichlet, if β_k ~ Dir(a_k) then the binned vector is
Dir(a_kW, Σ_{w∉W} a_kw), so every posterior that is Dirichlet per topic (q of SVI/VMP; β | z of the collapsed
chain) has its summary's moments in closed form (:func:`dirichlet_summary`):
E = a / a₀ and Var = a (a₀ − a) / (a₀² (a₀ + 1)), a₀ = Σ a.

Topics are exchangeable, so the posterior is invariant to their K! relabellings (label switching).  Draws
and q are relabelled to a pivot by the permutation minimising the summed Hellinger distance between matched
binned topics, H(p, r) = √(1 − Σᵢ √(pᵢ rᵢ)) (Hungarian algorithm, ``scipy.optimize.linear_sum_assignment``):
the draws as Stephens (2000) relabels mixtures, to a pivot started at the first kept draw and re-taken once as
the mean of the relabelled draws (:func:`align_draws`).  Matching is sound when every topic has one clear
partner (matched distance well below the distance to the next best); a topic that matches poorly (H near 1:
q holds a topic the reference lacks, e.g. SVI's dead topics or two true topics merged) makes the moment
metrics of that topic mean "this topic is wrong", not "this topic is slightly off" — :func:`match` returns
the matched distances so that this can be read, and :func:`topics_off` counts such topics: those farther from
their matched reference topic than half the distance between the two closest reference topics.

Such a topic dominates the RMS standardised mean error: the reference is sure that a word absent from a topic
has β_kw ≈ η / n_k (sd of the same order, ~1e-5 on lda/synthetic), so a topic that took a few frequent words
of another true topic (β_kw ~ 1e-2) is off by hundreds of sds there.  On lda/synthetic a collapsed Gibbs chain
still in such a local mode after 816 sweeps (hoffman-lda's 17-s budget, seed 0: two of its 20 topics, one true
topic split across two and two others merged, log p(w, z) 22,000 nats below the reference's mode) scored 25.2
sds, 99.9% of Σ z² from those two topics (the other 18: 0.90); 784 sweeps later, in the reference's mode, 0.80.
"""
from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["summary_words", "dirichlet_summary", "dirichlet_summary_draw", "hellinger", "match", "topics_off",
           "align_draws"]


def summary_words(counts_per_word: np.ndarray, m: int) -> np.ndarray:
    """The ``m`` words most frequent in the corpus (ties to the lower index), sorted."""
    order = np.argsort(-np.asarray(counts_per_word), kind="stable")
    return np.sort(order[:min(m, len(order) - 1)])


def dirichlet_summary(concentration: np.ndarray, words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance (K, M + 1) of each topic's binned vector (``words``, then the rest) when β_k ~ Dir(a_k)
    with a_k the rows of ``concentration`` (K, V) (Dirichlet aggregation; moments as in the module docstring)."""
    a_words = concentration[:, words]
    a = np.concatenate([a_words, (concentration.sum(axis=1) - a_words.sum(axis=1))[:, None]], axis=1)
    a0 = a.sum(axis=1, keepdims=True)
    return a / a0, a * (a0 - a) / (a0**2 * (a0 + 1.0))


def dirichlet_summary_draw(concentration: np.ndarray, words: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw (K, M + 1) of each topic's binned vector when β_k ~ Dir(a_k): Dir(a_kW, Σ_{w∉W} a_kw) by
    normalised Gamma draws."""
    a_words = concentration[:, words]
    a = np.concatenate([a_words, (concentration.sum(axis=1) - a_words.sum(axis=1))[:, None]], axis=1)
    g = rng.gamma(a)
    return g / g.sum(axis=1, keepdims=True)


def hellinger(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    """H(p_i, r_j) (K, K) between the rows of two (K, B) arrays of distributions."""
    affinity = np.sqrt(np.maximum(p, 0.0)) @ np.sqrt(np.maximum(r, 0.0)).T
    return np.sqrt(np.maximum(1.0 - affinity, 0.0))


def match(topics: np.ndarray, pivot: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The permutation ``perm`` with ``topics[perm]`` matched row by row to ``pivot`` (both (K, B)), minimising
    the summed Hellinger distance, and the matched distances H(pivot_k, topics[perm[k]])."""
    cost = hellinger(pivot, topics)
    rows, perm = linear_sum_assignment(cost)
    return perm, cost[rows, perm]


def topics_off(topics: np.ndarray, reference: np.ndarray) -> int:
    """How many rows of ``topics`` (K, B), already in ``reference``'s order (K, B), are farther from their
    reference topic than half the Hellinger distance between the two closest reference topics (none when K = 1):
    a merged, split or dead topic, not a slightly-off one (module docstring)."""
    between = hellinger(reference, reference)
    np.fill_diagonal(between, np.inf)
    return int(np.sum(np.diag(hellinger(topics, reference)) > 0.5 * between.min()))


def _relabel(draws: np.ndarray, pivot: np.ndarray) -> np.ndarray:
    return np.array([draw[match(draw, pivot)[0]] for draw in draws])


def align_draws(draws: np.ndarray) -> np.ndarray:
    """Draws (S, K, B) with each draw's topics permuted to one pivot: the first draw, then the mean of the draws
    relabelled to it (one Stephens 2000 iteration; on a concentrated posterior the second pass changes nothing)."""
    aligned = _relabel(draws, draws[0])
    return _relabel(draws, aligned.mean(axis=0))
