"""Uncollapsed Gibbs sampling of beta-process factor analysis (the paper's MCMC baseline, §5.1).

State: a draw of the globals β = (π, Φ, γ_w, γ_obs) and of every row's locals
x_i = z_i ∘ w_i (N × K — inherent to an uncollapsed sampler; the SVI methods
never keep it).  One sweep: the locals of every row given β (one blocked sweep
of ``models.bpfa.local.gibbs``, compiled by default), then each global from its complete
conditional:

* w_ik for z_ik = 0 from its prior N(0, 1/γ_w) — only Σ w_ik² over those
  entries enters γ_w's conditional, drawn as χ²/γ_w;
* π_k ~ Beta(a/K + Σᵢ z_ik, b(K−1)/K + Σᵢ (1 − z_ik));
* γ_w ~ Gamma(e′ + NK/2, f′ + ½ Σᵢₖ w_ik²);
* φ_k, k = 1..K in turn, per dimension N(μ_kd/τ_kd, 1/τ_kd) with
  τ_kd = D + γ_obs Σᵢ m_id x_ik², μ_kd = γ_obs Σᵢ m_id x_ik r_{-k,id};
* γ_obs ~ Gamma(c′ + ½ Σᵢ_d m_id, d′ + ½ Σᵢ_d m_id r_id²).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .local import GlobalMoments, gibbs

__all__ = ["ChainState", "point_view", "sweep_locals", "sample_globals"]


@dataclass(frozen=True)
class ChainState:
    """One state of the chain: the globals' draw and the locals x (N, K) of the rows it covers."""

    pi: np.ndarray
    phi: np.ndarray
    gamma_w: float
    gamma_obs: float
    X: np.ndarray


def point_view(state: ChainState) -> GlobalMoments:
    """The globals of a chain state as a (degenerate) view for the local routines."""
    return GlobalMoments(state.gamma_obs, float(np.log(state.gamma_obs)), state.gamma_w, float(np.log(state.gamma_w)),
                         np.log(state.pi), np.log1p(-state.pi), state.phi, state.phi**2)


def sweep_locals(state: ChainState, Y: np.ndarray, M: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One blocked Gibbs sweep over every row's locals given the state's globals; returns new x."""
    return gibbs(point_view(state), Y, M, 0, 1, rng, X0=state.X).X[0]


def sample_globals(state: ChainState, Y: np.ndarray, M: np.ndarray, prior: dict,
                   rng: np.random.Generator) -> ChainState:
    """Draw the globals from their complete conditionals given the state's locals (module docstring).

    ``prior`` has ``a0, b0`` (Beta parameters of π_k), ``c0, d0`` (Gamma of γ_obs),
    ``e0, f0`` (Gamma of γ_w) and ``phi_precision`` (D).  The inactive w's are
    drawn given the state's γ_w, Φ's rows given the state's γ_obs, then γ_obs
    given the new Φ.
    """
    X = state.X
    N, K = X.shape
    on = X != 0.0
    n_on = on.sum(0)
    pi = np.clip(rng.beta(prior["a0"] + n_on, prior["b0"] + N - n_on), 1e-300, 1.0 - 1e-16)
    n_off = N * K - int(n_on.sum())
    w2_off = 2.0 * rng.gamma(0.5 * n_off) / state.gamma_w if n_off else 0.0
    gamma_w = rng.gamma(prior["e0"] + 0.5 * N * K, 1.0 / (prior["f0"] + 0.5 * (float((X * X).sum()) + w2_off)))
    phi = state.phi.copy()
    R = M * (Y - X @ phi)
    for k in range(K):
        rows = np.flatnonzero(on[:, k])
        x, m = X[rows, k], M[rows]
        Rk = R[rows] + m * np.outer(x, phi[k])
        tau = prior["phi_precision"] + state.gamma_obs * (x * x) @ m
        mu = state.gamma_obs * x @ Rk
        phi[k] = mu / tau + rng.standard_normal(phi.shape[1]) / np.sqrt(tau)
        R[rows] = Rk - m * np.outer(x, phi[k])
    gamma_obs = rng.gamma(prior["c0"] + 0.5 * M.sum(), 1.0 / (prior["d0"] + 0.5 * float((R * R).sum())))
    return ChainState(pi, phi, float(gamma_w), float(gamma_obs), X)
