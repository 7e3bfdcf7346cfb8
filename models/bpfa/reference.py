"""BPFA's latent for a reference posterior (svibench.reference): the noise-free signal of a fixed set of rows.

The compared latent is sᵢ = (zᵢ ∘ wᵢ) Φ, the signal of row i without its noise, on all D columns (observed
entries: the denoised row; held-out ones: the predictive mean eq. 12 averages), for ``reference_rows`` rows
evenly spaced over the training rows (:func:`signal_rows`, fixed by N alone), flattened row-major (R·D,).

Why not the features themselves: the likelihood and the priors are unchanged when features are permuted, when
(w_·k, φ_k) change sign together, and when w_·k is scaled by c and φ_k by 1/c (up to the priors' weak pull), and
at K = 50 fitted features for 80 true ones many features are off or used by a handful of rows, split and merge
between modes and have no partner to be matched to (a Hungarian match on Φ's rows would pair noise with noise
and score that).  s is invariant under all three, so no alignment is needed (BPFA is not
:class:`~svibench.reference.capability.LabelSwitching`), and it is what every posterior is judged on by the
model's own task metrics.

Every posterior maps to draws of s the way evaluation draws its predictive (``models.bpfa.evaluation``,
eq. 12), restricted to these rows (:func:`signal_draws`): an SVI-family q by β⁽ᵐ⁾ ~ q(β) with the locals from
the algorithm's approximation given E_q[β] (expected view) or given β⁽ᵐ⁾ (sampled view), or from a fitted
local q (BBVI); a Gibbs-sampler state by its globals held fixed and the locals' chain continued from the state.
The latter is the conditional p(s | y, β_t): one state carries no spread of the globals, so a sampler's single
state is expected to be under-dispersed against the reference (the spread of Φ is a sizeable share of the
signal's posterior sd).  The moments are those of :data:`DRAWS` draws taken with a fixed seed (the same q gives
the same moments at every checkpoint), and only the variances are returned: q's covariance from a thousand
draws, and the reference's from its chains, are dominated by Monte Carlo noise at hundreds of coordinates (on
bpfa/synthetic, two exact chains of 4,500 draws each were 3× further apart in the full-covariance W₂ than in
the diagonal one, 0.36 against 0.12 at 400 coordinates), so the accuracy metrics compare the diagonal
Gaussians.  The reference still stores its full covariance.  The draws' own noise (two seeds of one q, on
bpfa/synthetic): ref_mean_error ≈ 0.05, ref_sd_error 0.04–0.12 (the larger for a sampler's state, whose local
draws are a chain), ref_w2 0.3–0.4; differences between algorithms below these are noise.

A chain's latent (:func:`chain_signal`) is the state's own signal, X_R Φ: one posterior draw of s.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.capabilities.latent_gaussian import GaussianPosterior

from .chain import ChainState
from .evaluation import predictive_chunks

__all__ = ["DRAWS", "SEED", "signal_rows", "chain_signal", "signal_draws", "signal_moments"]

#: Draws of s per posterior in :func:`signal_moments` (their Monte Carlo error is that of the q's moments).
DRAWS = 1000
#: Seed of those draws: one q gives the same moments whenever it is scored.
SEED = 2015


def signal_rows(n: int, count: int) -> np.ndarray:
    """``count`` training rows evenly spaced over 0..n − 1 (all rows when count ≥ n), sorted."""
    return np.unique(np.linspace(0, n - 1, min(count, n)).round().astype(int))


def chain_signal(state: ChainState, rows: np.ndarray) -> np.ndarray:
    """The signal X_R Φ of the rows at a chain state, flattened (R·D,)."""
    return (state.X[rows] @ state.phi).ravel()


def _restricted(posterior: ConjugatePosterior | ChainState, rows: np.ndarray) -> ConjugatePosterior | ChainState:
    """The posterior with its per-row parts (a chain's locals, a fitted local q) cut to ``rows``."""
    if isinstance(posterior, ChainState):
        return replace(posterior, X=posterior.X[rows])
    if posterior.local_q is not None:
        return replace(posterior, local_q=posterior.local_q.rows(rows))
    return posterior


def signal_draws(posterior: ConjugatePosterior | ChainState, Y: np.ndarray, M: np.ndarray, rows: np.ndarray,
                 n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` draws (n_draws, R·D) of the rows' signal under the posterior (the module docstring)."""
    ((_, means, _, _),) = predictive_chunks(_restricted(posterior, rows), Y[rows], M[rows], n_draws, rng,
                                            chunk=len(rows))
    return means.reshape(n_draws, -1)


def signal_moments(posterior: ConjugatePosterior | ChainState, Y: np.ndarray, M: np.ndarray, rows: np.ndarray,
                   n_draws: int) -> GaussianPosterior:
    """Mean and variances (``cov`` as a vector) of the rows' signal, from ``n_draws`` draws seeded by :data:`SEED`
    (BPFA takes :data:`DRAWS`)."""
    draws = signal_draws(posterior, Y, M, rows, n_draws, np.random.default_rng(SEED))
    return GaussianPosterior(draws.mean(0), draws.var(0, ddof=1))
