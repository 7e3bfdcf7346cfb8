"""Evaluation of a BPFA posterior: predictive draws (eq. 12), MSE, PSNR and the mean-field ELBO.

For every row, M joint draws (β⁽ᵐ⁾, ψᵢ⁽ᵐ⁾) ~ q(β, ψ) under the approximation
the algorithm used (Shah et al. 2015, eq. 12):

* unstructured (expected view: MF-SVI, Titsias-SVI, Mimno-SVI, VMP): q(ψᵢ)
  computed once from E_q[β] — mean-field/Titsias q then M independent draws,
  or M kept sweeps of the Mimno chain after burn-in — and β⁽ᵐ⁾ ~ q(β) independently;
* structured (sampled view: MF-/Titsias-/Gibbs-SSVI): β⁽ᵐ⁾ ~ q(β), then the
  locals' approximation given β⁽ᵐ⁾ and one draw from it;
* globals with a q of every training row's locals fitted alongside them
  (``ConjugatePosterior.local_q``, from BBVI): β⁽ᵐ⁾ ~ q(β) and ψᵢ⁽ᵐ⁾ from
  that q, nothing recomputed;
* a Gibbs-sampler state (``ChainState``): β⁽ᵐ⁾ = the chain's current globals,
  ψᵢ⁽ᵐ⁾ = M further local sweeps started from the chain's locals (the
  sampler's own state is not changed).

Each draw predicts yᵢ ~ N(xᵢ⁽ᵐ⁾Φ⁽ᵐ⁾, I/γ_obs⁽ᵐ⁾).  Rows are processed in chunks,
so nothing of size N × K is held at once.
"""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from svibench.capabilities import Globals, LocalApprox
from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.expfam import LOG_2PI

from .chain import ChainState, point_view
from .local import LOCALS, FactorQ, GlobalMoments, draws_from_q, gibbs, local_elbo

__all__ = ["expected_view", "sampled_view", "predictive_chunks", "heldout_metrics"]


def expected_view(lam: Globals) -> GlobalMoments:
    """E_q[β]-moments of λ: E[γ], E[log γ], E[log π], E[log(1−π)], E[φ], E[φ²]."""
    pi, phi = lam["pi"].to_mean(), lam["phi"].to_mean()
    go, gw = lam["gamma_obs"].to_mean(), lam["gamma_w"].to_mean()
    return GlobalMoments(float(go.mean), float(go.mean_log), float(gw.mean), float(gw.mean_log),
                         pi.mean_log, pi.mean_log1m, phi.mean, phi.second_moment)


def sampled_view(lam: Globals, rng: np.random.Generator) -> GlobalMoments:
    """One draw β ~ q(β) as moments (φ² at the draw; π kept inside (0, 1) for the logs)."""
    pi = np.clip(lam["pi"].sample(rng), 1e-300, 1.0 - 1e-16)
    phi = lam["phi"].sample(rng)
    go, gw = float(lam["gamma_obs"].sample(rng)), float(lam["gamma_w"].sample(rng))
    return GlobalMoments(go, np.log(go), gw, np.log(gw), np.log(pi), np.log1p(-pi), phi, phi**2)


def _local_draws(view: GlobalMoments, Y, M, approx: LocalApprox, n_draws: int, rng, fitted: FactorQ | None = None):
    """(n_draws, B, K) draws of x from the local approximation given ``view`` (or from the
    ``fitted`` q of these rows), and the factorised q if any."""
    if fitted is not None:
        return draws_from_q(fitted, n_draws, rng), fitted
    return LOCALS[approx.kind].draws(view, Y, M, approx, n_draws, rng)


def predictive_chunks(posterior: ConjugatePosterior | ChainState, Y: np.ndarray, M: np.ndarray, n_draws: int,
                      rng: np.random.Generator, chunk: int = 1024,
                      subset: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, float]]:
    """Yield (row indices, means (n_draws, n, D), γ_obs draws (n_draws,), local ELBO sum or NaN) per chunk of the
    rows ``subset`` (sorted indices; None: every row).

    The local ELBO (eq. 9 with all constants) is summed only for mean-field
    locals given E_q[β] — the case where the full ELBO is tractable.
    """
    order = np.arange(Y.shape[0]) if subset is None else np.asarray(subset)
    if isinstance(posterior, ChainState):
        view = None
    else:
        approx, fitted = posterior.approx, posterior.local_q
        draws = [sampled_view(posterior.lam, rng) for _ in range(n_draws)]
        view = None if posterior.view == "sampled" else expected_view(posterior.lam)
    for start in range(0, order.size, chunk):
        rows = order[start:start + chunk]
        y, m = Y[rows], M[rows]
        elbo = np.nan
        if isinstance(posterior, ChainState):
            X = gibbs(point_view(posterior), y, m, 0, n_draws, rng, X0=posterior.X[rows]).X
            means = X @ posterior.phi
            gammas = np.full(n_draws, posterior.gamma_obs)
        elif view is None:
            means = np.stack([_local_draws(d, y, m, approx, 1, rng)[0][0] @ d.phi for d in draws])
            gammas = np.array([d.gamma_obs for d in draws])
        else:
            X, q = _local_draws(view, y, m, approx, n_draws, rng, None if fitted is None else fitted.rows(rows))
            means = np.stack([X[i] @ d.phi for i, d in enumerate(draws)])
            gammas = np.array([d.gamma_obs for d in draws])
            if q is not None and q.spec.elbo:
                elbo = float(local_elbo(view, y, m, q).sum())
        yield rows, means, gammas, elbo


def heldout_metrics(means: np.ndarray, gammas: np.ndarray, truth: np.ndarray, test: np.ndarray, scale: np.ndarray):
    """Per chunk: (Σ over rows of log (1/M) Σ_m Π_{d held out} N(ŷ_id | μ_id⁽ᵐ⁾, 1/γ⁽ᵐ⁾),
    Σ squared error of the predictive mean over held-out entries, Σ expected squared error
    of a draw from the predictive, (1/M) Σ_m [(ŷ_id − μ_id⁽ᵐ⁾)² + 1/γ⁽ᵐ⁾], both in the
    data's original units (× ``scale``², the standardisation's sd per column), predictive mean (n, D))."""
    g = gammas[:, None, None]
    sq = (truth - means) ** 2
    logp = (test * (0.5 * (np.log(g) - LOG_2PI) - 0.5 * g * sq)).sum(-1)  # (M, n)
    top = logp.max(0)
    row_ll = top + np.log(np.exp(logp - top).mean(0))
    mean = means.mean(0)
    per_draw = (sq + 1.0 / g).mean(0)
    return (float(row_ll.sum()), float((test * (scale * (truth - mean)) ** 2).sum()),
            float((test * scale**2 * per_draw).sum()), mean)
