"""The compiled inverse Gamma CDF and its shape derivative (svibench.numerics.gamma_inverse) against scipy."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import digamma, gammaincinv, gammaln

from svibench.numerics import gamma_inverse
from svibench.capabilities.mean_field import _inverse_cdf_scipy, gamma_draws

SHAPES = np.array([1e-3, 5e-3, 0.01, 0.05, 0.1, 0.3, 0.7, 1.0, 1.5, 3.0, 7.0, 20.0, 60.0, 200.0, 1e3, 1e4])
#: Both tails, both sides of u = ½ (where the kernel switches from P to Q) and of scipy's UPPER_TAIL.
UNIFORMS = np.array([1e-12, 1e-8, 1e-4, 0.01, 0.1, 0.3, 0.5, 0.5 + 1e-7, 0.7, 0.9, 0.93, 0.99, 1 - 1e-6, 1 - 1e-10])


def _kernel(alpha: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    x, dx = np.empty(u.size), np.empty(u.size)
    gamma_inverse.inverse_gamma_cdf(alpha, u, gammaln(alpha), digamma(alpha), x, dx)
    return x, dx


def test_kernel_matches_scipy_on_a_grid_of_shapes_and_both_tails():
    alpha, u = (m.ravel().copy() for m in np.meshgrid(SHAPES, UNIFORMS, indexing="ij"))
    x, dx = _kernel(alpha, u)
    x_ref, dx_ref = _inverse_cdf_scipy(alpha, u)
    # x: scipy's gammaincinv to rounding; dx: scipy's side is a finite difference (~1e-8 relative).
    np.testing.assert_allclose(x, x_ref, rtol=1e-11)
    np.testing.assert_allclose(dx, dx_ref, rtol=1e-7)
    assert (dx > 0).all()  # a larger shape moves every quantile up


def test_kernel_derivative_is_the_derivative_of_its_own_quantile():
    """Central differences of the kernel's x in α (independent of scipy's finite-difference ∂_α P)."""
    alpha, u = (m.ravel().copy() for m in np.meshgrid(SHAPES[3:14], UNIFORMS[1:-1], indexing="ij"))
    h = 1e-6 * alpha
    fd = (_kernel(alpha + h, u)[0] - _kernel(alpha - h, u)[0]) / (2 * h)
    np.testing.assert_allclose(_kernel(alpha, u)[1], fd, rtol=1e-5)


def test_kernel_floors_underflowing_quantiles_like_the_draws():
    """At α = 10⁻³ the lower half of the quantiles is below 10⁻³⁰⁰: floored at the smallest normal float."""
    tiny = np.finfo(float).tiny
    alpha = np.full(5, 1e-3)
    u = np.array([0.0, 1e-12, 0.3, 0.5, 0.99])
    x, dx = _kernel(alpha, u)
    assert (x >= tiny).all() and np.isfinite(dx).all()
    np.testing.assert_array_equal(x[:3], tiny)
    np.testing.assert_allclose(x[3:], np.maximum(gammaincinv(alpha[3:], u[3:]), tiny), rtol=1e-11)


def test_gamma_draws_match_scipy_with_the_shapes_broadcast_against_the_uniforms():
    """The kernel's per-factor log Γ(α) and ψ(α), broadcast over the draws, give scipy's values draw by draw."""
    rng = np.random.default_rng(0)
    shape = np.concatenate([0.1 + 0.05 * rng.uniform(size=(7, 3)), 1.0 + 0.5 * rng.uniform(size=(7, 3))], axis=1)
    rate = rng.uniform(0.5, 3.0, size=(7, 6))
    u = rng.uniform(size=(10, 7, 6))
    draws = gamma_draws(shape, rate, u)
    x, dx = _inverse_cdf_scipy(np.broadcast_to(shape, u.shape), u)
    np.testing.assert_allclose(draws.z, x / rate, rtol=1e-11)
    np.testing.assert_allclose(draws.dz_dshape, dx / rate, rtol=1e-7)


def test_kernel_returns_nan_for_an_invalid_shape_or_uniform():
    """A diverged q (NaN, zero or negative shape) gives NaN draws at once, as scipy does."""
    x, dx = _kernel(np.array([np.nan, 0.0, -1.0, np.inf, 2.0]), np.array([0.3, 0.3, 0.3, 0.3, np.nan]))
    assert np.isnan(x).all() and np.isnan(dx).all()
