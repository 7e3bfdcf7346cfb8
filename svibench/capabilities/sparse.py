"""Capability: a sparse global step (Mimno, Hoffman & Blei 2012), for SVI with sampled locals.

SVI's step λ ← (1 − ρ)λ + ρ(η + (N/|B|) n̂) (:func:`~svibench.capabilities.conjugate.natural_step`)
costs the size of λ, however few entries the minibatch's statistics n̂ touch.  When the prior η
is one scalar and n̂ is sparse (the topic–word counts of Gibbs-sampled locals: only the words of
the minibatch, only the topics their tokens were drawn from), Mimno et al. (2012, §3) keep λ
lazily as λ = s·μ + c: the decay (1 − ρ) goes into the scalar s, the prior's share ρη into the
scalar c, and only the touched entries of μ change.  :class:`LazyGlobal` is that representation;
a model offering :class:`SparseGlobalStep` computes its local statistics from it, and SVI steps
it (``algorithms.svi``).

References
----------
Mimno, Hoffman & Blei (2012), "Sparse stochastic inference for latent Dirichlet allocation", ICML, §3.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, Protocol, runtime_checkable

import numpy as np

from .conjugate import Globals, LocalApprox, ensure_finite

__all__ = ["LazyGlobal", "SparseStatistics", "SparseGlobalStep"]

#: s below this is folded back into μ (μ ← s·μ, s ← 1): s shrinks by (1 − ρ) every step and the
#: increments ρ(N/|B|) n̂ / s grow as it shrinks; renormalising at 1e-100 keeps μ ≤ λ·1e100, far
#: from overflow, and costs one pass over μ every Σρ ≈ 230 (ρ = 1 renormalises every step).
RENORMALISE_BELOW = 1e-100


class SparseStatistics(NamedTuple):
    """The nonzero entries of a global's (R, C) local statistics: ``values[i]`` at (``rows[i]``, ``cols[i]``),
    each pair at most once (LDA: topic k, word v, n̂_kv)."""

    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray


@dataclass
class LazyGlobal:
    """One global's (R, C) parameter λ kept as λ = s·μ + c under the SVI step with a scalar prior η
    (Mimno et al. 2012, §3): λ's column j is s·μ[j] + c (μ is stored (C, R), a column contiguous).

    ``totals`` holds M_r = Σ_j μ_jr, kept as μ changes, so that λ's row sums s·M + C·c cost O(R).
    """

    mu: np.ndarray
    totals: np.ndarray
    eta: float
    s: float = 1.0
    c: float = 0.0

    @classmethod
    def from_dense(cls, lam: np.ndarray, eta: float) -> LazyGlobal:
        """λ (R, C) with s = 1, c = 0; ``eta`` the scalar prior of the step."""
        mu = np.array(lam.T, dtype=float, order="C")
        return cls(mu, mu.sum(axis=0), float(eta))

    def columns(self, cols: np.ndarray) -> np.ndarray:
        """λ[:, cols]ᵀ, shape (len(cols), R)."""
        return self.s * self.mu[cols] + self.c

    def row_totals(self) -> np.ndarray:
        """Σ_j λ_rj = s·M_r + C·c, shape (R,)."""
        return self.s * self.totals + self.mu.shape[0] * self.c

    def dense(self) -> np.ndarray:
        """λ, shape (R, C) (a new array)."""
        return (self.s * self.mu + self.c).T

    def step(self, stats: SparseStatistics, rho: float, scale: float) -> None:
        """λ ← (1 − ρ)λ + ρ(η + scale·n̂), in place and in O(nnz(n̂)) (but for a renormalisation):
        s ← (1 − ρ)s, c ← (1 − ρ)c + ρη, μ_jr += ρ·scale·n̂_rj / s on the touched entries."""
        self.s *= 1.0 - rho
        self.c = (1.0 - rho) * self.c + rho * self.eta
        if self.s < RENORMALISE_BELOW:
            self.renormalise()
        increments = (rho * scale / self.s) * stats.values
        self.mu.ravel()[self._flat(stats)] += increments  # each entry once: no np.add.at needed
        self.totals += np.bincount(stats.rows, weights=increments, minlength=len(self.totals))

    def _flat(self, stats: SparseStatistics) -> np.ndarray:
        """Where μ's entries (cols, rows) are in ``mu.ravel()`` (a view: μ stays C-contiguous)."""
        return stats.cols * self.mu.shape[1] + stats.rows

    def renormalise(self) -> None:
        """Fold s into μ (μ ← s·μ, s ← 1) and recompute M from μ (dropping the rounding its updates gathered)."""
        self.mu *= self.s
        self.s = 1.0
        self.totals = self.mu.sum(axis=0)

    def ensure_finite(self, stats: SparseStatistics, t: int) -> None:
        """:func:`~svibench.capabilities.conjugate.ensure_finite` on what the last step changed: the scalars,
        the totals and the touched entries of μ (the others are unchanged since they were last checked)."""
        touched = self.mu.ravel()[self._flat(stats)]
        ensure_finite({"lam": np.concatenate([[self.s, self.c], self.totals, touched])}, t)


@runtime_checkable
class SparseGlobalStep(Protocol):
    """A conditionally conjugate model whose globals are one (R, C) λ with a scalar prior and whose local
    statistics, for some local approximations in the expected view, are sparse (Mimno et al. 2012).

    SVI (``algorithms.svi``) then keeps λ as a :class:`LazyGlobal` and steps only the touched entries,
    with the same random draws in the same order as its dense step, so the same trajectory up to rounding.

    Attributes
    ----------
    sparse_local_kinds : tuple of str
        The local kinds (:data:`~svibench.capabilities.conjugate.LOCAL_KINDS`) whose statistics
        :meth:`sparse_statistics` gives in the expected view.
    """

    sparse_local_kinds: ClassVar[tuple[str, ...]]

    def lazy_globals(self, lam: Globals) -> LazyGlobal:
        """λ (from ``init_globals``) as a :class:`LazyGlobal` whose ``eta`` is the prior of the step."""

    def dense_globals(self, lazy: LazyGlobal) -> Globals:
        """The λ a :class:`LazyGlobal` stands for, as ``init_globals`` gives it (for ``posterior()``)."""

    def sparse_statistics(self, lazy: LazyGlobal, batch: np.ndarray, approx: LocalApprox,
                          rng: np.random.Generator) -> SparseStatistics:
        """The nonzero entries of ``local_statistics(expected_view(λ), batch, approx, rng)``'s one global,
        from the same draws of ``rng`` in the same order, reading λ only through ``lazy``."""


def offers_sparse_step(model: Any, local: str, view: str) -> bool:
    """Whether SVI with this local kind and view can take ``model``'s sparse global step."""
    return view == "expected" and isinstance(model, SparseGlobalStep) and local in model.sparse_local_kinds
