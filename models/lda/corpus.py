"""A document–word count matrix as the loops of ``models.lda.kernels`` take it."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse

__all__ = ["Corpus", "Chain"]


class Corpus:
    """CSR counts (D, V) with the arrays the kernels read (int64 ids, float64 counts)."""

    def __init__(self, counts: scipy.sparse.csr_matrix) -> None:
        self.csr = scipy.sparse.csr_matrix(counts, dtype=np.float64)
        self.csr.sort_indices()
        self.D, self.V = self.csr.shape
        self.n_tokens = int(self.csr.sum())

    def arrays(self, batch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``indptr``, ``words`` and ``counts`` of the documents ``batch`` (all: None), in that order."""
        sub = self.csr if batch is None else self.csr[batch]
        return sub.indptr.astype(np.int64), sub.indices.astype(np.int64), np.ascontiguousarray(sub.data)

    def tokens(self) -> tuple[np.ndarray, np.ndarray]:
        """Document and word of every token (nonzeros expanded by their counts), in CSR order."""
        reps = self.csr.data.astype(np.int64)
        docs = np.repeat(np.arange(self.D), np.diff(self.csr.indptr))
        return np.repeat(docs, reps), np.repeat(self.csr.indices.astype(np.int64), reps)


@dataclass
class Chain:
    """The collapsed Gibbs sampler's state: every token's topic and the counts it implies.

    ``chain_sweep`` updates it in place (the arrays are large and a sweep touches all of them).
    """

    z: np.ndarray     # (n_tokens,) topic of each training token
    ndk: np.ndarray   # (D, K) tokens of document d on topic k
    nwk: np.ndarray   # (V, K) tokens of word w on topic k
    nk: np.ndarray    # (K,) tokens on topic k
    rng: np.random.Generator | None = None  # the Generator chain_init was given (chain_latent's draws of β | z)

    def topics(self, eta: float) -> np.ndarray:
        """The collapsed posterior mean of β given z: (n_kw + η) / (n_k + Vη), shape (K, V)."""
        return ((self.nwk + eta) / (self.nk + self.nwk.shape[0] * eta)).T
