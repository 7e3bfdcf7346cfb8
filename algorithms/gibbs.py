"""The Gibbs sampler: the MCMC baseline of Shah, Knowles & Ghahramani (2015, §5.1).

Each iteration is one full sweep over every variable of the model's chain, each
drawn from its complete conditional.  The model supplies the sweep through the
small :class:`~svibench.capabilities.ConditionalSampler` protocol and decides what the chain is
(BPFA: uncollapsed, over every row's locals and then every global,
``models.bpfa.chain``; LDA: collapsed over the topic assignments, θ and β
integrated out, Griffiths & Steyvers 2004, ``models.lda``); this module owns
only the loop.

What ``posterior()`` hands to evaluation: the chain's *current* state.  BPFA
evaluates it by holding the globals at the current draw and continuing the
locals' chain for ``predictive_samples`` sweeps (eq. 12 with β⁽ᵐ⁾ = β_t),
without changing the sampler's state; LDA by the topics' posterior mean given
the current assignments.  No averaging over past states is done.
"""
from __future__ import annotations

from typing import Generic

import numpy as np

from svibench.algorithm import Algorithm, resolve_init_method
from svibench.capabilities import ConditionalSampler
from svibench.capabilities.sampler import State

__all__ = ["GibbsSampler"]


class GibbsSampler(Algorithm, Generic[State]):
    """Gibbs sampling, one full sweep of the model's chain per iteration.

    Parameters
    ----------
    init_method : str
        The model's initialisation ("default": its first; BPFA's start draws the
        globals from that initial q and switches every feature off, LDA's draws
        every token's topic uniformly).
    """

    name = "gibbs"
    label = "Gibbs sampler"
    requires = (ConditionalSampler,)

    def __init__(self, *, init_method: str = "default") -> None:
        self.init_method = init_method

    def init(self, model: ConditionalSampler[State], rng: np.random.Generator) -> None:
        self.check_model(model)
        method = resolve_init_method(model, self.init_method)
        self.model_, self.rng_ = model, rng
        self.state_ = model.chain_init(rng, method)

    def step(self) -> int:
        self.state_ = self.model_.chain_sweep(self.state_, self.rng_)
        return self.model_.n_train

    def posterior(self) -> State:
        return self.state_
