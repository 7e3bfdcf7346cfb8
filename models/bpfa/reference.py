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

Every posterior maps to s the way evaluation draws its predictive (``models.bpfa.evaluation``, eq. 12),
restricted to these rows: an SVI-family q by β⁽ᵐ⁾ ~ q(β) with the locals from the algorithm's approximation
given E_q[β] (expected view) or given β⁽ᵐ⁾ (sampled view), or from a fitted local q (BBVI); a Gibbs-sampler
state by its globals held fixed and the locals' chain continued from the state.  The latter is the conditional
p(s | y, β_t): one state carries no spread of the globals, so a sampler's single state is expected to be
under-dispersed against the reference (the spread of Φ is a sizeable share of the signal's posterior sd).

Where the locals are factorised (mean-field or Titsias q: MF-SVI/SSVI, Titsias-SVI/SSVI, VMP, BBVI) the moments
are Rao–Blackwellised (:func:`factorised_moments`): given β the features are independent under q, so
E[s | β] = E[x]Φ and Var(s_d | β) = Σ_k Var(x_k) φ_kd²; with the expected view x is independent of Φ ~ q(Φ) and
the moments are exact, E[s_d] = Σ_k E[x_k]E[φ_kd] and Var(s_d) = Σ_k E[x_k²]E[φ_kd²] − E[x_k]²E[φ_kd]²; with the
sampled view, the law of total variance over :data:`DRAWS` draws of β.  Plain draws would not do: a row that
mean-field switches almost entirely off (θ ≈ 1e-5) has no feature on in a thousand draws, a sample variance of
exactly 0 and a log sd ratio of −690 (the metric's floor), which swamps the mean over coordinates.  The Gibbs
locals (Mimno-SVI, Gibbs-SSVI, a sampler's state) give the moments of :data:`DRAWS` draws (:func:`signal_draws`).
Either way the seed is fixed (the same q gives the same moments at every checkpoint), and their own noise (two
seeds of one q on bpfa/synthetic) is: none with the expected view and factorised locals; ref_mean_error ≈ 0.01,
ref_sd_error 0.01 and ref_w2 ≈ 0.05 with the sampled view; ≈ 0.04–0.05, 0.08–0.11 and 0.22–0.29 for the Gibbs
locals.  Differences between algorithms below these are noise.

Only the variances are returned: q's covariance from a thousand draws, and the reference's from its chains, are
dominated by Monte Carlo noise at hundreds of coordinates (on bpfa/synthetic, two exact chains of 4,500 draws
each were 3× further apart in the full-covariance W₂ than in the diagonal one, 0.36 against 0.12 at 400
coordinates), so the accuracy metrics compare the diagonal Gaussians.  The reference still stores its full
covariance.  Memory: the Gibbs locals with the sampled view hold :data:`DRAWS` draws of Φ at once (32 MB at
K = 50, D = 40), not counted by ``BPFA.memory_bytes``.

A chain's latent (:func:`chain_signal`) is the state's own signal, X_R Φ: one posterior draw of s.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.capabilities.latent_gaussian import GaussianPosterior

from .chain import ChainState
from .evaluation import expected_view, predictive_chunks, sampled_view
from .local import FACTOR_KINDS

__all__ = ["DRAWS", "SEED", "signal_rows", "chain_signal", "signal_draws", "factorised_moments", "signal_moments"]

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


def factorised_moments(posterior: ConjugatePosterior, Y: np.ndarray, M: np.ndarray, n_draws: int,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance (B, D) of the signal of rows ``Y`` under a q whose locals are factorised (a
    :data:`~.local.FACTOR_KINDS` kind, or a fitted ``local_q``), Rao–Blackwellised (the module docstring): exact
    with the expected view, over ``n_draws`` draws of β with the sampled view."""
    lam, approx = posterior.lam, posterior.approx
    if posterior.view != "sampled":  # x ~ q(x | E β) independent of Φ ~ q(Φ), as eq. 12 draws them
        q = posterior.local_q or FACTOR_KINDS[approx.kind].fit(expected_view(lam), Y, M, approx)
        mom, (phi, var_phi) = q.moments(), lam["phi"].mean_var()
        x, x2 = mom.X[0], mom.X2[0]
        return x @ phi, np.maximum(x2 @ (phi**2 + var_phi) - x**2 @ phi**2, 0.0)
    means, variances = np.empty((2, n_draws) + Y.shape)
    for m in range(n_draws):
        view = sampled_view(lam, rng)
        mom = FACTOR_KINDS[approx.kind].fit(view, Y, M, approx).moments()
        means[m], variances[m] = mom.X[0] @ view.phi, np.maximum(mom.X2[0] - mom.X[0] ** 2, 0.0) @ view.phi**2
    return means.mean(0), variances.mean(0) + means.var(0, ddof=1)


def signal_moments(posterior: ConjugatePosterior | ChainState, Y: np.ndarray, M: np.ndarray, rows: np.ndarray,
                   n_draws: int) -> GaussianPosterior:
    """Mean and variances (``cov`` as a vector) of the rows' signal, seeded by :data:`SEED` (BPFA takes
    ``n_draws`` = :data:`DRAWS`): :func:`factorised_moments` where the locals are factorised, else the moments of
    ``n_draws`` draws (:func:`signal_draws`)."""
    rng = np.random.default_rng(SEED)
    if isinstance(posterior, ConjugatePosterior) and (posterior.local_q is not None or posterior.approx.kind in FACTOR_KINDS):
        mean, var = factorised_moments(_restricted(posterior, rows), Y[rows], M[rows], n_draws, rng)
        return GaussianPosterior(mean.ravel(), var.ravel())
    draws = signal_draws(posterior, Y, M, rows, n_draws, rng)
    return GaussianPosterior(draws.mean(0), draws.var(0, ddof=1))
