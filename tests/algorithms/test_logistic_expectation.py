"""Gaussian expectations of the logistic likelihood against adaptive quadrature split at the kink."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit, log_expit

from svibench.capabilities.latent_gaussian import expected_loglik
from svibench.models.logistic_expectation import (expected_log_sigmoid, expected_log_sigmoid_value, expected_sigmoid,
                                                 sigmoid_moments)
from svibench.models.logreg import BayesianLogisticRegression
from svibench.numerics.quadrature import gauss_hermite
from svibench.data import Dataset

MEANS = [-500.0, -50.0, -20.0, -5.0, -1.0, -0.5, 0.0, 0.5, 1.0, 5.0, 20.0, 50.0, 500.0]
SDS = [1e-3, 1e-2, 0.1, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 100.0, 300.0]


def _gauss(g, mu, sd):
    """∫ g(μ + σε) φ(ε) dε by scipy.integrate.quad on ε ∈ [−40, 40] (φ(40) ≈ 1e-348), cut at the kink.

    Also cut where e^{∓kt}N(t | μ, σ²) peaks (ε = ∓kσ), so that quad sees the mass of
    expectations as small as e^{−500}.
    """
    cuts = [-mu / sd] + [s * k * sd for s in (-1, 1) for k in (1, 4)]
    pts = sorted({-40.0, 40.0, *(p for p in cuts if -40.0 < p < 40.0)})
    f = lambda e: g(mu + sd * e) * np.exp(-0.5 * e * e) / np.sqrt(2 * np.pi)  # noqa: E731
    return sum(quad(f, a, b, epsabs=0.0, epsrel=1e-13, limit=2000)[0] for a, b in zip(pts[:-1], pts[1:]))


@pytest.fixture(scope="module")
def grid():
    mu, sd = (a.ravel() for a in np.meshgrid(MEANS, SDS))
    return mu, sd


@pytest.mark.parametrize("which, g", [
    (0, log_expit),                                    # E[log σ(t)]
    (1, lambda t: expit(-t)),                          # ∂/∂μ: E[(log σ)'(t)] = E[σ(−t)]
    (2, lambda t: -0.5 * expit(t) * expit(-t)),        # ∂/∂v: ½E[(log σ)''(t)]
])
def test_value_and_the_derivatives_cvi_and_ncvmp_use_match_quad_to_1e_8(grid, which, g):
    mu, sd = grid
    got = expected_log_sigmoid(mu, sd**2)[which]
    want = np.array([_gauss(g, m, s) for m, s in zip(mu, sd)])
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=0.0)


def test_predictive_probability_matches_quad_to_1e_8(grid):
    mu, sd = grid
    want = np.array([_gauss(expit, m, s) for m, s in zip(mu, sd)])
    np.testing.assert_allclose(expected_sigmoid(mu, sd**2), want, rtol=1e-8, atol=0.0)


@pytest.mark.parametrize("which, g", [
    (0, expit),                                                   # Z = E[σ(t)] (EP's normaliser)
    (1, lambda t: expit(t) * expit(-t)),                          # ∂Z/∂μ = E[σ'(t)]
    (2, lambda t: expit(t) * expit(-t) * (1.0 - 2.0 * expit(t))),  # ∂²Z/∂μ² = E[σ''(t)]
])
def test_the_sigmoid_moments_of_ep_match_quad(grid, which, g):
    """Relative to the scale of the integrand's parts (E[σ''] vanishes where the two sides cancel)."""
    mu, sd = grid
    got = sigmoid_moments(mu, sd**2)[which]
    want = np.array([_gauss(g, m, s) for m, s in zip(mu, sd)])
    scale = np.array([_gauss(lambda t: np.abs(g(t)), m, s) for m, s in zip(mu, sd)])
    assert np.all(np.abs(got - want) <= 1e-8 * scale), np.max(np.abs(got - want) / scale)


def test_derivatives_are_those_of_the_value():
    """Bonnet and Price: central differences of E[log σ(t)] in μ and v give the other two outputs.

    (atol: the differences amplify the value's ~1e-12 relative error by |value|/(h v).)"""
    rng = np.random.default_rng(0)
    mu, v = rng.normal(0, 10, 200), np.exp(rng.uniform(-4, 9, 200))
    value, dmu, dv = expected_log_sigmoid(mu, v)
    h = 1e-4
    fd_mu = (expected_log_sigmoid(mu + h, v)[0] - expected_log_sigmoid(mu - h, v)[0]) / (2 * h)
    fd_v = (expected_log_sigmoid(mu, v * (1 + h))[0] - expected_log_sigmoid(mu, v * (1 - h))[0]) / (2 * h * v)
    np.testing.assert_allclose(fd_mu, dmu, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(fd_v, dv, rtol=1e-5, atol=1e-9)


def test_a_degenerate_marginal_gives_the_likelihood_itself():
    t = np.array([-30.0, -1.0, 0.0, 2.0, 40.0])
    value, dmu, dv = expected_log_sigmoid(t, np.zeros_like(t))
    np.testing.assert_allclose(value, log_expit(t), rtol=1e-10)
    np.testing.assert_allclose(dmu, expit(-t), rtol=1e-10)
    np.testing.assert_allclose(dv, -0.5 * expit(t) * expit(-t), rtol=1e-10)


def test_the_models_expectation_flips_the_sign_for_label_0_and_agrees_with_gauss_hermite_at_small_variance():
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(40, 2)), (rng.random(40) < 0.5).astype(float)
    data = Dataset(name="toy", kind="classification", train={"X": X, "y": y}, test={})
    model = BayesianLogisticRegression(data, delta=1.0)
    m, v = rng.normal(0, 2, 40), rng.uniform(0.01, 1.0, 40)
    got, gh = model.gaussian_expectation(m, v), expected_loglik(model, m, v, gauss_hermite(150))
    np.testing.assert_allclose(got.value, gh.value, rtol=1e-9)
    np.testing.assert_allclose(got.dm, gh.dm, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(got.dv, gh.dv, rtol=1e-7, atol=1e-12)


def test_the_evaluation_only_expectations_equal_the_full_ones_bit_for_bit():
    """E[log σ] alone (the ELBO) and E[σ] alone (the predictive) are the full function's outputs, not approximations
    of them: evaluation computes only the part it reads."""
    rng = np.random.default_rng(0)
    mu = np.concatenate([rng.normal(0, 5, 500), [-500.0, -30.0, 0.0, 30.0, 500.0]])
    v = np.concatenate([rng.gamma(0.5, 20.0, 500), [1e-3, 0.0, 1.0, 9e4, 4.0]])
    value, grad, _ = expected_log_sigmoid(mu, v)
    np.testing.assert_array_equal(expected_log_sigmoid_value(mu, v), value)
    np.testing.assert_array_equal(expected_sigmoid(-mu, v), grad)


def test_many_points_are_computed_in_chunks_with_each_points_value_as_if_alone(monkeypatch):
    """Past ``CHUNK`` points the expectations are computed a chunk at a time (for the cache); every point's values
    are those of the points computed in one piece, bit for bit, including across a chunk's edge."""
    import svibench.models.logistic_expectation as le

    rng = np.random.default_rng(1)
    mu, v = rng.normal(0, 5, 5001), rng.gamma(0.5, 20.0, 5001)
    chunked = (*expected_log_sigmoid(mu, v), expected_sigmoid(mu, v), *sigmoid_moments(mu, v))
    monkeypatch.setattr(le, "CHUNK", 10**9)
    whole = (*expected_log_sigmoid(mu, v), expected_sigmoid(mu, v), *sigmoid_moments(mu, v))
    for a, b in zip(chunked, whole):
        np.testing.assert_array_equal(a, b)
