"""Mimno, Hoffman & Blei (2012)'s sampled locals for LDA, and their sparse form for the lazy global step.

:func:`gibbs_counts` is the ``gibbs`` local kind on any (V', K) topic weights: the dense path hands it
exp(E[log β]) over the whole vocabulary (``LDA.local_statistics``), the sparse one
(:func:`sparse_gibbs_statistics`) only the minibatch's V_B word types, computed from the lazy λ
(:class:`svibench.capabilities.sparse.LazyGlobal`) and its row totals, so that the locals cost K × V_B
digammas and the sampled counts come out as the (topic, word) pairs drawn.  Same uniforms, drawn in the
same order, and the same sweep: the two paths differ only in the rounding of λ.
"""
from __future__ import annotations

import numpy as np
from scipy.special import digamma

from svibench.capabilities.conjugate import LocalApprox
from svibench.capabilities.sparse import LazyGlobal, SparseStatistics

from . import kernels
from .corpus import Corpus

__all__ = ["gibbs_counts", "sparse_gibbs_statistics"]


def gibbs_counts(indptr: np.ndarray, words: np.ndarray, counts: np.ndarray, weights: np.ndarray, alpha: float,
                 approx: LocalApprox, rng: np.random.Generator) -> np.ndarray:
    """The topic–word counts (V', K) of a CSR batch whose word ids index the rows of ``weights`` (V', K),
    averaged over ``approx.samples`` sweeps after ``approx.burnin`` (``kernels.gibbs_documents``)."""
    stats = np.zeros(weights.shape)
    u = rng.random((1 + approx.burnin + approx.samples, int(counts.sum())))
    kernels.gibbs_documents(indptr, words, counts, weights, alpha, u, approx.burnin, approx.samples, stats)
    return stats


def sparse_gibbs_statistics(corpus: Corpus, lazy: LazyGlobal, alpha: float, batch: np.ndarray,
                            approx: LocalApprox, rng: np.random.Generator) -> SparseStatistics:
    """:func:`gibbs_counts` of ``batch`` given exp(E[log β]) of its word types only, as sparse (k, v, n̂_kv)."""
    indptr, words, counts = corpus.arrays(batch)
    types, local = np.unique(words, return_inverse=True)
    lam = lazy.columns(types)
    weights = np.exp(digamma(lam) - digamma(lazy.row_totals()))
    block = gibbs_counts(indptr, local.astype(np.int64), counts, weights, alpha, approx, rng)
    drawn = np.flatnonzero(block != 0)  # on a mask: numpy counts booleans faster than floats
    j = drawn // block.shape[1]
    return SparseStatistics(drawn - j * block.shape[1], types[j], block.ravel()[drawn])
