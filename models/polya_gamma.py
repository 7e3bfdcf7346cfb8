"""Pólya-Gamma augmentation of the logistic likelihood (Polson, Scott & Windle 2013).

With ωₙ ~ PG(1, 0) and κₙ = yₙ − ½ (0/1 labels), eq. (3) of the paper gives

    p(yₙ | ψₙ) = σ(ψₙ)^{yₙ} σ(−ψₙ)^{1−yₙ} = ½ exp(κₙψₙ) E_{PG(1,0)}[exp(−ωₙψₙ²/2)],

so given ω the latent Gaussian z (logistic regression: ψₙ = x̃ₙᵀz; GP
classification: ψₙ = fₙ) is conditionally conjugate: p(z | ω, y) = N with

    η₁ = η₁⁽⁰⁾ + Σₙ κₙ xₙ,     η₂ = η₂⁽⁰⁾ − ½ Σₙ ωₙ xₙxₙᵀ.

This module gives the models (:class:`PolyaGammaAugmented`, mixed into
``logreg`` and ``gpc``) the conditionally conjugate capability and the Gibbs
sampler's :class:`~svibench.capabilities.ConditionalSampler`:

* local kind ``"mf"``: the mean-field optimum q(ωₙ) = PG(1, cₙ), cₙ² = E_q[ψₙ²],
  whose only moment the global update needs is E[ωₙ] = tanh(cₙ/2)/(2cₙ)
  (:func:`pg_mean`).  Batch VMP with it is the EM of the Jaakkola–Jordan bound
  (its optimal q(ω) makes the augmented ELBO equal that bound,
  :func:`jaakkola_jordan`); with view ``"sampled"`` cₙ = |ψₙ| at one draw of z.
* local kind ``"gibbs"``: ωₙ drawn exactly from PG(1, cₙ) (``LocalApprox.samples``
  draws averaged; independent given the view, so there is no burn-in).
* the Gibbs sampler: z | ω ~ N(η above), ω | z ~ PG(1, ψₙ), with exact PG draws
  (the ``polyagamma`` package, which draws from the Generator passed in).

Every method is evaluated on its Gaussian q(z) with the model's exact ELBO;
:meth:`PolyaGammaAugmented.gaussian` maps each algorithm's posterior to that q.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from polyagamma import random_polyagamma
from scipy.special import log_expit

from svibench.capabilities import ConjugatePosterior, Globals, LocalApprox
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.expfam import GaussianFullNatural
from svibench.model import per_checkpoint

__all__ = ["PolyaGammaAugmented", "PolyaGammaChain", "LatentView", "pg_mean", "pg_draw", "jaakkola_jordan"]

#: Below this |c|, E[ω] = ¼ tanh(c/2)/(c/2) is taken from its series ¼(1 − c²/12) (error < c⁴/480).
_SMALL_C = 1e-4


def pg_mean(b: float, c: np.ndarray) -> np.ndarray:
    """E[ω] for ω ~ PG(b, c): b tanh(c/2)/(2c), with its limit b/4 at c = 0 (Polson et al. 2013, §3.1)."""
    c = np.abs(np.asarray(c, dtype=float))
    small = c < _SMALL_C
    safe = np.where(small, 1.0, c)
    return b * np.where(small, 0.25 * (1.0 - c**2 / 12.0), np.tanh(safe / 2.0) / (2.0 * safe))


def pg_draw(b: float, c: np.ndarray, rng: np.random.Generator, size: tuple[int, ...] | None = None) -> np.ndarray:
    """Exact draws ω ~ PG(b, c) from ``rng`` (``size`` repeats the broadcast shape of c).

    b = 1 uses polyagamma's ``alternate`` sampler (Windle, Polson & Scott 2014): its default for b = 1, Devroye's,
    is wrong for |c| above about 170 in polyagamma 2.0.2 (mean 64 times too large at c = 200, 128 at 400), which
    made the Gibbs chain of GP classification far too narrow; ``alternate`` has the closed-form mean and variance
    from c = 0 to 5000 (tests/models/test_polya_gamma.py).
    """
    if not b > 0:
        raise ValueError(f"Pólya-Gamma shape b must be > 0 (b = 1 for a Bernoulli likelihood), got {b}")
    method = "alternate" if b == 1 else None
    return random_polyagamma(b, np.asarray(c, dtype=float), size=size, method=method, random_state=rng)


def jaakkola_jordan(s: np.ndarray, m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The Jaakkola–Jordan bound of E[log σ(sψ)], ψ ~ N(m, v), at its optimal ξ = √(m² + v).

    log σ(ξ) + (sm − ξ)/2 (Jaakkola & Jordan 2000, eq. 3 with λ(ξ)(E[ψ²] − ξ²) = 0);
    it equals the PG-augmented ELBO term at q(ω) = PG(1, ξ) (module docstring).
    """
    xi = np.sqrt(m**2 + v)
    return log_expit(xi) + 0.5 * (s * m - xi)


@dataclass(frozen=True)
class LatentView:
    """The globals as the locals see them: q(z)'s mean and covariance, or one draw (``cov`` None)."""

    mean: np.ndarray
    cov: np.ndarray | None = None


@dataclass
class PolyaGammaChain:
    """State of the PG Gibbs chain, and the Rao–Blackwellised moments of z | ω it has visited.

    ``sums`` accumulates (count, Σ m(ω_t), Σ (V(ω_t) + m mᵀ)) over sweeps [2ᵏ⁻¹, t] and
    ``older`` over the block before it: when t reaches 2ᵏ⁺¹ the older block is dropped,
    so the reported moments average the last half to three quarters of the chain
    (the start is discarded as burn-in, with O(1) memory).
    """

    z: np.ndarray
    omega: np.ndarray
    t: int = 0
    sums: list = field(default_factory=list)
    older: list = field(default_factory=list)

    def record(self, mean: np.ndarray, cov: np.ndarray) -> None:
        """Add one sweep's conditional moments of z."""
        self.t += 1
        if self.t & (self.t - 1) == 0:  # t is a power of two: start a new block
            self.older, self.sums = self.sums, []
        term = [1, mean, cov + np.outer(mean, mean)]
        self.sums = term if not self.sums else [a + b for a, b in zip(self.sums, term)]

    def moments(self) -> GaussianPosterior:
        """Mean and covariance of z over the kept sweeps."""
        total = self.sums if not self.older else [a + b for a, b in zip(self.sums, self.older)]
        mean = total[1] / total[0]
        cov = total[2] / total[0] - np.outer(mean, mean)
        return GaussianPosterior(mean, 0.5 * (cov + cov.T))


class PolyaGammaAugmented:
    """Conditionally conjugate and Gibbs-sampler capabilities of a logistic model, by PG augmentation.

    A subclass (a ``LatentLogisticModel``) gives 0/1 labels ``y`` and
    :meth:`_prior_gaussian`, :meth:`_row_marginals`, :meth:`_row_natural`.
    """

    local_kinds: ClassVar[tuple[str, ...]] = ("mf", "gibbs")
    #: How its reference posterior is sampled (svibench.reference).
    sampler_name: ClassVar[str] = "Pólya-Gamma Gibbs (Polson, Scott & Windle 2013), exact PG draws"
    #: "prior" (both capabilities); "dispersed" starts the Gibbs chain only, from a draw of z from its prior.
    init_methods: ClassVar[tuple[str, ...]] = ("prior", "dispersed")
    y: np.ndarray
    n_train: int

    def _prior_gaussian(self) -> GaussianFullNatural:
        """The prior of z in natural parameters."""
        raise NotImplementedError

    def _row_marginals(self, view: LatentView, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ψₙ, n ∈ batch, under the view (variance 0 for a draw)."""
        raise NotImplementedError

    def _row_natural(self, batch: np.ndarray, kappa: np.ndarray, omega: np.ndarray) -> GaussianFullNatural:
        """Σ_{n∈batch} (κₙxₙ, −½ωₙxₙxₙᵀ)."""
        raise NotImplementedError

    # -- capability: conditionally conjugate
    def prior_natural(self) -> Globals:
        return {"z": self._prior_gaussian()}

    def init_globals(self, rng: np.random.Generator, method: str = "prior") -> Globals:
        """λ = η: the locals' first update sees the prior."""
        if method != "prior":
            raise ValueError(f"init method {method!r} starts the Gibbs chain only; the conjugate family starts "
                             "from 'prior'")
        return self.prior_natural()

    def expected_view(self, lam: Globals) -> LatentView:
        return LatentView(*lam["z"].mean_cov())

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> LatentView:
        return LatentView(lam["z"].sample(rng))

    def local_statistics(self, view: LatentView, batch: np.ndarray, approx: LocalApprox,
                         rng: np.random.Generator) -> Globals:
        """Σ_{n∈B} (κₙxₙ, −½E[ωₙ]xₙxₙᵀ) with q(ωₙ) = PG(1, cₙ), cₙ² = E[ψₙ²] under the view.

        ``"mf"`` uses E[ωₙ] (:func:`pg_mean`); ``"gibbs"`` the mean of ``approx.samples`` exact draws.
        """
        if approx.kind not in self.local_kinds:
            raise ValueError(f"{type(self).__name__} offers Pólya-Gamma local kinds {self.local_kinds}, "
                             f"not {approx.kind!r}")
        m, v = self._row_marginals(view, batch)
        c = np.sqrt(m**2 + v)
        omega = pg_mean(1.0, c) if approx.kind == "mf" else pg_draw(1.0, c, rng, (approx.samples, len(c))).mean(0)
        return {"z": self._row_natural(batch, self.y[batch] - 0.5, omega)}

    # -- capability: Gibbs sampler (svibench.capabilities.ConditionalSampler)
    def _conditional(self, omega: np.ndarray) -> GaussianFullNatural:
        """p(z | ω, y): the prior plus every datum's augmented term."""
        everyone = np.arange(self.n_train)
        return self._prior_gaussian() + self._row_natural(everyone, self.y - 0.5, omega)

    def chain_init(self, rng: np.random.Generator, method: str = "prior") -> PolyaGammaChain:
        """``"prior"``: ω from its prior PG(1, 0); ``"dispersed"``: z from its prior, then ω | z (for several
        chains from over-dispersed starts, Gelman & Rubin 1992).  Then z | ω, its moments recorded, so the
        start can be evaluated."""
        if method not in self.init_methods:
            raise ValueError(f"{type(self).__name__} starts its chain by {self.init_methods}, not {method!r}")
        if method == "dispersed":
            z = self._prior_gaussian().sample(rng)
            return self.chain_sweep(PolyaGammaChain(z, np.zeros(self.n_train)), rng)
        return self._draw_z(PolyaGammaChain(np.zeros(0), pg_draw(1.0, np.zeros(self.n_train), rng)), rng)

    def chain_sweep(self, state: PolyaGammaChain, rng: np.random.Generator) -> PolyaGammaChain:
        """ω | z ~ PG(1, ψₙ), then z | ω ~ N (Polson et al. 2013, §3.1), recording z | ω's moments."""
        state.omega = pg_draw(1.0, self._row_marginals(LatentView(state.z), np.arange(self.n_train))[0], rng)
        return self._draw_z(state, rng)

    def _draw_z(self, state: PolyaGammaChain, rng: np.random.Generator) -> PolyaGammaChain:
        """z ~ p(z | ω, y) for the state's ω, after recording that conditional's mean and covariance."""
        conditional = self._conditional(state.omega)
        state.record(*conditional.mean_cov())
        state.z = conditional.sample(rng)
        return state

    # -- evaluation
    @per_checkpoint
    def gaussian(self, posterior: Any) -> GaussianPosterior:
        """The Gaussian q(z) of a posterior the model takes (``posterior_types``): as given, q(z) from λ,
        or the chain's moments (once per checkpoint: the metrics and the reference scorer read the same q)."""
        if isinstance(posterior, ConjugatePosterior):
            mean, chol = posterior.lam["z"].mean_precision_tril()
            return GaussianPosterior(mean, precision_tril=chol)
        if isinstance(posterior, PolyaGammaChain):
            return posterior.moments()
        return posterior
