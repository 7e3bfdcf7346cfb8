"""Compiled (numba) reparameterisation gradients of the Gaussian families, for fused ADVI loops.

Each kernel is ``reparam_gradient`` of :mod:`svibench.algorithms.bbvi` (analytic entropy, full
data) for one family of :mod:`.gaussian_families`, with the model's gradient a compiled kernel
(:mod:`svibench.capabilities.compiled_log_joint`):

    ĝ = (1/S) Σ_s (∂T/∂φ)ᵀ ∇_z log p(y, T(φ, ε_s)) + ∇_φ H[q]

(Kucukelbir et al. 2017, eq. 8–10), written to ``out`` for base draws ``eps`` (S, D).  The
numpy families stay the reference; the tests check each kernel against them.
"""
from __future__ import annotations

import math

import numpy as np

from svibench.numerics.jit import njit_taking_functions, numba

__all__ = ["full_rank_gradient", "mean_field_gradient"]

_OPTIONS = {"error_model": "numpy", "fastmath": {"reassoc", "contract"}}
_jit = numba.njit(cache=True, **_OPTIONS)
_jit_taking_kernel = njit_taking_functions(**_OPTIONS)  # the model's gradient kernel is an argument


@_jit
def _softplus_sigmoid(rho):
    """(softplus(ρ), σ(ρ)), stably for either sign of ρ."""
    e = math.exp(-abs(rho))
    sig = 1.0 / (1.0 + e) if rho >= 0.0 else e / (1.0 + e)
    return math.log1p(e) + max(rho, 0.0), sig


@_jit_taking_kernel
def full_rank_gradient(phi, eps, kernel, data, out):
    """FullGaussian, φ = (m, ρ, tril₋₁(U)) row-major, L = diag(s) U, s = softplus(ρ): with Uε_s,
    z_s = m + s ∘ Uε_s and g_s = ∇_z log p(y, z_s), ∂/∂m = Σ g_s, ∂/∂ρ = Σ g_s ∘ Uε_s σ(ρ) (+ σ(ρ)/s
    from H = Σ log s_i), ∂/∂U_ij = s_i Σ g_si ε_sj (i > j)."""
    D = eps.shape[1]
    s, sig = np.empty(D), np.empty(D)
    for i in range(D):
        s[i], sig[i] = _softplus_sigmoid(phi[D + i])
    ue, z, g = np.empty(D), np.empty(D), np.empty(D)
    out[:] = 0.0
    for draw in range(eps.shape[0]):
        e = eps[draw]
        for i in range(D):
            row = 2 * D + i * (i - 1) // 2
            acc = e[i]
            for j in range(i):
                acc += phi[row + j] * e[j]
            ue[i] = acc
            z[i] = phi[i] + s[i] * acc
        kernel(z, data, g)
        for i in range(D):
            out[i] += g[i]
            out[D + i] += g[i] * ue[i]
            row = 2 * D + i * (i - 1) // 2
            for j in range(i):
                out[row + j] += s[i] * g[i] * e[j]
    out /= eps.shape[0]
    for i in range(D):
        out[D + i] = out[D + i] * sig[i] + sig[i] / s[i]


@_jit_taking_kernel
def mean_field_gradient(phi, eps, kernel, data, out):
    """MeanFieldGaussian, φ = (m, ω), s = exp(ω): z_s = m + s ∘ ε_s, ∂/∂m = Σ g_s,
    ∂/∂ω = s ∘ Σ g_s ∘ ε_s (+ 1 from H = Σ ω_i)."""
    D = eps.shape[1]
    z, g = np.empty(D), np.empty(D)
    out[:] = 0.0
    for draw in range(eps.shape[0]):
        for i in range(D):
            z[i] = phi[i] + math.exp(phi[D + i]) * eps[draw, i]
        kernel(z, data, g)
        for i in range(D):
            out[i] += g[i]
            out[D + i] += g[i] * eps[draw, i]
    for i in range(D):
        out[D + i] *= math.exp(phi[D + i])
    out /= eps.shape[0]
    for i in range(D):
        out[D + i] += 1.0
