"""The global statistics of beta-process factor analysis (Shah et al. 2015, eq. 7, corrected).

Σᵢ η̂ᵢ for a minibatch, in natural-parameter form, from the locals' moments
(``models.bpfa.local.LocalMoments``) and the globals' view.  Relative to the
printed eq. 7 (see CATALOG.md errata):

* φ_k's prior precision is D (φ_k ~ N(0, D⁻¹I)) and, with masks, its
  posterior precision is per dimension: τ_kd = D + E[γ_obs] Σᵢ m_id E[x_ik²];
* the linear term carries E[γ_obs]:  μ_kd = E[γ_obs] Σᵢ m_id E[x_ik (y_id − Σ_{j≠k} x_ij φ_jd)];
* c = c′ + ½ Σᵢ Σ_d m_id and d = d′ + ½ Σᵢ Σ_d m_id E[(y_id − Σ_k x_ik φ_kd)²]
  count observed entries only;
* e = e′ + ½ B K and f = f′ + ½ Σᵢₖ E[w_ik²] (w_ik exists whether or not z_ik = 1).

"E" is over the locals' approximation and, for the other globals, over the
view (expectations under q(β), or one sample of β in the structured variants).
"""
from __future__ import annotations

import numpy as np

from svibench.expfam import BetaNatural, GammaNatural, GaussianDiagNatural

from .local import GlobalMoments, LocalMoments

__all__ = ["global_statistics"]


def global_statistics(mom: LocalMoments, view: GlobalMoments, Y: np.ndarray, M: np.ndarray) -> dict:
    """Σ_{i∈B} η̂ᵢ of every global, averaged over the S draws of ``mom``.

    Returns a dict: ``pi`` (BetaNatural, K), ``phi`` (GaussianDiagNatural, K×D),
    ``gamma_obs`` and ``gamma_w`` (GammaNatural scalars) — increments to add to
    the prior natural parameters.  The residual m ∘ (y − x Φ) of each draw is ``mom.R`` when the
    local routine kept it (the same to rounding), else computed here.
    """
    S, B, K = mom.X.shape
    g, phi = view.gamma_obs, view.phi
    X = mom.X.reshape(S * B, K)                  # the S draws stacked: one product each, not S
    used = X.any(axis=0)                         # features some draw uses: the others add nothing to X Φ or Xᵀ R
    on = slice(None) if used.all() else np.flatnonzero(used)  # (Gibbs draws use few of the K: fewer flops)
    X_on = X[:, on]
    R = (M * (Y - (X_on @ phi[on]).reshape(S, B, -1)) if mom.R is None else mom.R).reshape(S * B, -1)
    both = (M.T @ np.concatenate([(mom.X * mom.X).sum(0), mom.X2.sum(0)], axis=1)).T  # one product for the two:
    XX_M, X2_M = both[:K], both[K:]              # Σ_s Σᵢ m_id E[x_ik]² and Σ_s Σᵢ m_id E[x_ik²]  (K, D) each
    lin = g * phi * XX_M
    lin[on] += g * (X_on.T @ R)
    resid2 = float((R * R).sum() + (X2_M * view.phi2).sum() - (XX_M * phi**2).sum())
    z = mom.Z.sum(axis=(0, 1)) / S
    return {
        "pi": BetaNatural(z, B - z),
        "phi": GaussianDiagNatural(lin / S, -0.5 * g * X2_M / S),
        "gamma_obs": GammaNatural(0.5 * M.sum(), -0.5 * resid2 / S),
        "gamma_w": GammaNatural(0.5 * B * K, -0.5 * mom.W2.sum() / S),
    }
