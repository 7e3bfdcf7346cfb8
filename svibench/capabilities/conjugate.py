"""Capability 1: conditionally conjugate models with global and local variables.

For SVI and its structured variants, batch VMP and Mimno/Gibbs-within-SVI
(Hoffman et al. 2013; Hoffman & Blei 2014; Shah, Knowles & Ghahramani 2015).
The global variational parameters λ are natural parameters of exponential
families, one entry per global variable; the model computes, for a minibatch,
the sum of the local expected sufficient statistics Σᵢ η̂ᵢ given a *view* of
the globals: their expected moments under q(β), or one sample β ~ q(β).

Every algorithm hands the model a :class:`ConjugatePosterior`: λ with the local
approximation and the view it used.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping, Protocol, runtime_checkable

import numpy as np

from ..errors import Diverged

__all__ = [
    "ConditionallyConjugate", "ConjugatePosterior", "Globals", "LOCAL_KINDS", "LocalApprox", "LocalKind", "natural_step",
    "ensure_finite",
]

#: Global natural parameters: global variable name -> natural-parameter object
#: of ``svibench.expfam`` (or any object with the same linear arithmetic).
Globals = Mapping[str, Any]

VIEWS = ("expected", "sampled")


@dataclass(frozen=True)
class LocalKind:
    """A local approximation the SVI family can ask a model for (a ``LocalApprox.kind``).

    Each model implements the kinds it offers (its ``local_kinds``; BPFA: the table
    ``models.bpfa.local.LOCALS``).

    Attributes
    ----------
    summary : str
        What it is, for people.
    started : bool
        Whether its result may depend on where its coordinate ascent starts, so that
        ``LocalApprox.init`` applies (and is checked against the model's ``local_starts``).
    """

    summary: str
    started: bool = False


#: Every local kind by name: a new kind is one entry here, plus its implementation in the models offering it.
LOCAL_KINDS: dict[str, LocalKind] = {
    "mf": LocalKind("mean-field coordinate ascent", started=True),
    "titsias": LocalKind("the Titsias spike-and-slab q(z) q(w | z), keeping z–w dependence, fitted to its local ELBO"),
    "titsias-printed": LocalKind("the Titsias q fitted to the local objective as Shah et al. (2015)'s appendix prints it",
                                 started=True),
    "gibbs": LocalKind("Gibbs sampling from the exact local conditional"),
}


@dataclass(frozen=True)
class LocalApprox:
    """How the local variables of a minibatch are approximated.

    Parameters
    ----------
    kind : str
        A key of :data:`LOCAL_KINDS`: mean-field coordinate ascent, the Titsias
        spike-and-slab form that keeps z–w dependence (fitted to its local ELBO,
        or to the objective as Shah et al. 2015's appendix prints it), or Gibbs
        sampling from the exact local conditional.
    burnin, samples : int
        Gibbs sweeps discarded, then averaged (Shah et al. 2015, §5.1: 3 and 3).
    inner_iterations : int
        Cap on mean-field/Titsias local coordinate-ascent sweeps.
    inner_tol : float
        A row's coordinate ascent stops after the first sweep in which its local
        parameters moved by less than this on average (Hoffman, Blei & Bach 2010's
        per-document rule for online LDA, and their threshold 10⁻³).
    init : str
        Where a coordinate ascent whose result depends on its start (kinds
        ``started`` in :data:`LOCAL_KINDS`) starts, for models with a choice (their
        ``local_starts``; BPFA: ``"full"`` or ``"prior"``, see
        ``models.bpfa.local.mean_field``).
    """

    kind: str = "mf"
    burnin: int = 3
    samples: int = 3
    inner_iterations: int = 20
    inner_tol: float = 1e-3
    init: str = "full"


@dataclass(frozen=True)
class ConjugatePosterior:
    """What an algorithm hands to the ``evaluate`` of a conditionally conjugate model.

    Attributes
    ----------
    lam : Globals
        The globals' natural parameters λ of q(β).
    approx : LocalApprox
        The local approximation the algorithm used, for models whose held-out
        metrics draw the locals from it (BPFA, Shah et al. 2015 eq. 12).
    view : {"expected", "sampled"}
        The view of the globals the locals saw (see :data:`VIEWS`).
    local_q : object or None
        A q of every training row's locals fitted together with λ (BBVI on BPFA's
        log joint: a ``models.bpfa.local.FactorQ``), which evaluation uses as it is
        instead of recomputing the locals from the view; None for the SVI family.
    """

    lam: Globals
    approx: LocalApprox = LocalApprox()
    view: str = "expected"
    local_q: Any = None


@runtime_checkable
class ConditionallyConjugate(Protocol):
    """A model whose complete conditionals of the globals are conjugate.

    Attributes
    ----------
    local_kinds : tuple of str
        The local approximations :meth:`local_statistics` offers.
    local_starts : tuple of str, optional
        Values of ``LocalApprox.init`` its ``started`` locals (:data:`LOCAL_KINDS`) accept
        (absent: ``("full",)``).
    init_methods : tuple of str
        Accepted ``method`` values of :meth:`init_globals` (first is default).
    """

    local_kinds: ClassVar[tuple[str, ...]]
    init_methods: ClassVar[tuple[str, ...]]
    n_train: int

    def prior_natural(self) -> Globals:
        """The globals' prior natural parameters η."""

    def init_globals(self, rng: np.random.Generator, method: str) -> Globals:
        """Initial λ."""

    def expected_view(self, lam: Globals) -> Any:
        """The globals' moments that local updates need, as expectations under q(β)."""

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> Any:
        """The same moments evaluated at one draw β ~ q(β) (structured SVI)."""

    def local_statistics(
        self, view: Any, batch: np.ndarray, approx: LocalApprox, rng: np.random.Generator
    ) -> Globals:
        """Σ_{i ∈ batch} η̂ᵢ: local expected sufficient statistics, in natural-parameter form.

        Unscaled: the algorithm multiplies by N/|B|.  Adding :meth:`prior_natural`
        to the statistics of the full data gives the batch coordinate-ascent
        update of every global.
        """


def natural_step(lam: Globals, eta: Globals, stats: Globals, rho: float, scale: float) -> dict[str, Any]:
    """The SVI natural-gradient step λ ← (1 − ρ)λ + ρ(η + (N/|B|) Σᵢ η̂ᵢ).

    References
    ----------
    Hoffman, Blei, Wang & Paisley (2013), "Stochastic Variational Inference",
    eq. 37; ``scale`` is N/|B|.
    """
    return {name: _affine(lam[name], eta[name], stats[name], rho, scale) for name in lam}


def _affine(lam: Any, eta: Any, stats: Any, rho: float, scale: float) -> Any:
    """(1 − ρ)λ + ρ(η + s·t) field by field, building one object instead of five
    (parameter objects validate shapes on construction; this is the SVI hot path)."""
    if type(lam) is type(eta) is type(stats) and hasattr(lam, "arrays"):
        return type(lam)(*((1.0 - rho) * l + rho * (e + scale * t) for l, e, t in zip(lam.arrays(), eta.arrays(), stats.arrays())))
    return (1.0 - rho) * lam + rho * (eta + scale * stats)


def ensure_finite(lam: Globals, t: int) -> None:
    """Raise :class:`~svibench.algorithm.Diverged` if any global parameter is NaN or inf."""
    bad = [name for name, value in lam.items() if not np.all(np.isfinite(value.flatten()))]
    if bad:
        raise Diverged(f"non-finite global parameters {', '.join(bad)} after iteration {t}")
