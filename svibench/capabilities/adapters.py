"""Adapters between capabilities: one model capability seen as another.

:class:`ConjugateMeanField` shows a conditionally conjugate model (capability 1,
:mod:`.conjugate`) as a mean-field model for CVI (capability 3, :mod:`.mean_field`),
so CVI-MF and NC-VMP run on every model whose factors are all conjugate, with no
code in the model.  Its blocks are the globals; the locals are not blocks of
their own but are optimised, given the globals' expected view, each time the
globals' messages are formed (their optimum is a function of the globals, as
in VMP's alternation of local and global steps).  Then

* the conjugate messages of block i are η_i + Σ_n η̂_{n,i}: the prior plus the
  local expected sufficient statistics of the whole data set (Khan & Lin 2017,
  eq. 20; Hoffman et al. 2013, eq. 14: the VMP/coordinate-ascent update), and
* the non-conjugate part is empty: its gradient is zero.

So CVI-MF's step λ ← (1 − β)λ + β(η + Σ_n η̂_n) is full-batch SVI with the
constant step ρ = β (Hoffman et al. 2013, eq. 37), and with β = 1 it is VMP —
Khan & Lin (2017)'s claim that CVI generalises SVI and VMP (§5), which the tests
check step by step on BPFA and the mixture.

References
----------
M. E. Khan and W. Lin, "Conjugate-Computation Variational Inference", AISTATS 2017, §5, Algorithm 2.
M. D. Hoffman, D. M. Blei, C. Wang and J. Paisley, "Stochastic Variational Inference", JMLR 2013.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import missing
from .conjugate import ConditionallyConjugate, ConjugatePosterior, Globals, LocalApprox
from .mean_field import MeanFieldNonConjugate

__all__ = ["ConjugateMeanField", "conjugate_incompatibility", "as_mean_field", "mean_field_incompatibility",
           "mean_field_posterior"]


def conjugate_incompatibility(model_cls: type) -> str | None:
    """Why ``model_cls`` cannot be seen as a conjugate mean-field model, or None."""
    lacking = missing(ConditionallyConjugate, model_cls)
    if lacking:
        return f"{model_cls.name} does not offer ConditionallyConjugate (lacks {', '.join(lacking)})"
    if "mf" not in model_cls.local_kinds:
        return f"{model_cls.name} offers local approximations {', '.join(model_cls.local_kinds)}, not 'mf'"
    return None


def mean_field_incompatibility(model_cls: type) -> str | None:
    """None if ``model_cls`` offers MeanFieldNonConjugate, or is conjugate enough for :class:`ConjugateMeanField`."""
    if not missing(MeanFieldNonConjugate, model_cls):
        return None
    reason = conjugate_incompatibility(model_cls)
    return reason and f"{model_cls.name} offers neither MeanFieldNonConjugate nor, through its conjugate factors, " \
                      f"an all-conjugate mean field ({reason})"


def as_mean_field(model: Any, rng: np.random.Generator) -> Any:
    """``model`` itself if it offers MeanFieldNonConjugate, else its :class:`ConjugateMeanField` (drawing from ``rng``)."""
    return model if not missing(MeanFieldNonConjugate, type(model)) else ConjugateMeanField(model, rng)


def mean_field_posterior(mean_field: Any, lam: Globals) -> Any:
    """What the model's ``evaluate`` takes for blocks λ: a ConjugatePosterior through the adapter, else λ itself."""
    return mean_field.posterior(lam) if isinstance(mean_field, ConjugateMeanField) else dict(lam)


class ConjugateMeanField:
    """A conditionally conjugate model as a mean-field model with no non-conjugate factors.

    Parameters
    ----------
    model : ConditionallyConjugate
        The model; its ``local_kinds`` must include ``"mf"``.
    rng : numpy.random.Generator
        What the model's local step draws from (its mean-field locals draw nothing
        on the models here; the protocol passes a generator all the same).
    approx : LocalApprox
        The mean-field local approximation (the SVI family's default: restarted
        every call, at most 20 sweeps, tolerance 10⁻³).
    """

    def __init__(self, model: ConditionallyConjugate, rng: np.random.Generator,
                 approx: LocalApprox = LocalApprox()) -> None:
        self.model, self.rng, self.approx = model, rng, approx
        self.eta = model.prior_natural()
        self.everyone = np.arange(model.n_train)
        self._cache: tuple[tuple, Globals, tuple] | None = None

    @property
    def n_train(self) -> int:
        return self.model.n_train

    def mf_init(self, rng: np.random.Generator) -> dict[str, Any]:
        """The model's first initialisation of the globals (the one SVI and VMP use by default)."""
        return dict(self.model.init_globals(rng, self.model.init_methods[0]))

    def _statistics(self, lam: Globals) -> Globals:
        """Σ_n η̂_n over all data given the expected view of ``lam``, computed once per λ
        (a parallel sweep asks for every block's messages from the same λ)."""
        key = tuple(id(value) for value in lam.values())
        if self._cache is None or self._cache[0] != key:
            stats = self.model.local_statistics(self.model.expected_view(lam), self.everyone, self.approx, self.rng)
            self._cache = (key, stats, tuple(lam.values()))  # the values are kept so their ids stay unique
        return self._cache[1]

    def conjugate_messages(self, lam: Globals, block: str) -> Any:
        """η_i + Σ_n η̂_{n,i} (the VMP update of block i; Hoffman et al. 2013, eq. 14)."""
        return self.eta[block] + self._statistics(lam)[block]

    def nonconjugate_gradient(self, lam: Globals, blocks: tuple[str, ...], rng: np.random.Generator,
                              n_samples: int) -> dict[str, Any]:
        """Zero for every block: all factors are conjugate."""
        return {name: lam[name].zeros_like() for name in blocks}

    def posterior(self, lam: Globals) -> ConjugatePosterior:
        """λ with the local approximation its messages used."""
        return ConjugatePosterior(dict(lam), self.approx, "expected")
