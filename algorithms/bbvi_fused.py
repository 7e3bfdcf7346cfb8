"""BBVI's reparameterised steps fused into one compiled (numba) loop, for ``BBVI.advance``.

On a small problem (australian: N = 345, D = 15) a plain step's arithmetic is a few
microseconds and the ~60 numpy calls around it cost ~50 µs.  :func:`adam_steps` runs n steps
of ``BBVI.step`` (reparameterisation gradient with the analytic entropy, all data, Adam) in one
call: the family's compiled gradient (:mod:`svibench.models.gaussian_kernels`) with the model's
compiled ∇_z log p (:mod:`svibench.capabilities.compiled_log_joint`), then :func:`adam_update`.
The base draws of the n steps are drawn before, in one block, in the order n single steps draw
them, so the trajectory is the plain one to rounding (tests/algorithms/test_bbvi_fused.py).
"""
from __future__ import annotations

import math

import numpy as np

from svibench.numerics.jit import njit_taking_functions, numba

__all__ = ["adam_update", "adam_steps"]

_jit = numba.njit(cache=True, error_model="numpy")


@_jit
def adam_update(g, m1, m2, t, lr, b1, b2, eps, phi):
    """φ ← φ + α m̂ₜ/(√v̂ₜ + ε) for ascent, m1, m2 updated in place: :class:`svibench.numerics.optim.Adam`
    (Kingma & Ba 2015, Algorithm 1), step count t ≥ 1."""
    c1, c2 = 1.0 - b1**t, 1.0 - b2**t
    for p in range(phi.shape[0]):
        m1[p] = b1 * m1[p] + (1.0 - b1) * g[p]
        m2[p] = b2 * m2[p] + (1.0 - b2) * g[p] * g[p]
        phi[p] += lr * (m1[p] / c1) / (math.sqrt(m2[p] / c2) + eps)


@njit_taking_functions(error_model="numpy")
def adam_steps(family_gradient, kernel, data, noise, phi, m1, m2, t, lr, b1, b2, eps):
    """``noise.shape[0]`` steps from Adam's step count ``t``, φ, m1, m2 updated in place, each on its
    base draws ``noise[k]`` (S, D).  Returns 0, or the step (1-based) after which φ was not finite
    (where it stops, as the plain step raises)."""
    grad = np.empty_like(phi)
    for k in range(noise.shape[0]):
        family_gradient(phi, noise[k], kernel, data, grad)
        adam_update(grad, m1, m2, t + k + 1, lr, b1, b2, eps, phi)
        for p in range(phi.shape[0]):
            if not math.isfinite(phi[p]):
                return k + 1
    return 0
