"""The capability of a model whose every variable can be drawn from its complete conditional (Gibbs sampling).

The Gibbs sampler (``svibench.algorithms.gibbs``) owns only the loop; the model decides what the chain is
(BPFA: uncollapsed, ``models.bpfa.chain``; LDA: collapsed over the topic assignments, ``models.lda``;
logistic regression: Pólya-Gamma augmented, ``models.polya_gamma``).
"""
from __future__ import annotations

from typing import ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = ["ConditionalSampler", "State"]

#: The model's state of the chain (BPFA: ``models.bpfa.chain.ChainState``), which is also
#: what ``GibbsSampler.posterior`` (svibench.algorithms.gibbs) hands to the model's ``evaluate``.
State = TypeVar("State")


@runtime_checkable
class ConditionalSampler(Protocol[State]):
    """A model that can run a Gibbs sampler over all its variables.

    Attributes
    ----------
    init_methods : tuple of str
        Accepted ``method`` values of :meth:`chain_init` (first is default).
    """

    init_methods: ClassVar[tuple[str, ...]]
    n_train: int

    def chain_init(self, rng: np.random.Generator, method: str) -> State:
        """Initial state of the chain over every variable."""

    def chain_sweep(self, state: State, rng: np.random.Generator) -> State:
        """One sweep: every variable drawn from its complete conditional; returns the new state."""
