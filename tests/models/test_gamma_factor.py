"""Gamma factor model (Khan & Lin 2017, App. J): likelihood gradient, metrics, BBVI family, CVI-MF progress."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import gammaln
from scipy.stats import gamma as gamma_dist

from svibench.algorithms.cvi_mf import CVIMF
from svibench.algorithms.gamma_sgvb import GammaSGVB
from svibench.capabilities import LogJointGradient, MeanFieldNonConjugate, ReparameterisableFamily
from svibench.datasets.gamma_factor import gamma_factor_synthetic
from svibench.expfam import GammaNatural
from svibench.models.gamma_factor import GammaFactor


@pytest.fixture(scope="module")
def model():
    data = gamma_factor_synthetic(n=400, n_test=300, dim=5, factors=3, seed=3)
    return GammaFactor(data, n_factors=3, eval_samples=200)


def test_model_offers_both_capabilities(model):
    assert isinstance(model, MeanFieldNonConjugate) and isinstance(model, LogJointGradient)
    assert isinstance(model.variational_family(), ReparameterisableFamily)


def test_likelihood_matches_a_direct_sum_of_gaussian_log_densities(model):
    from scipy.stats import multivariate_normal

    Z = np.random.default_rng(0).gamma(1.0, 1.0, size=(2, 5, 3))
    direct = [multivariate_normal(np.zeros(5), z @ z.T + 0.1 * np.eye(5)).logpdf(model.Y).sum() for z in Z]
    np.testing.assert_allclose(model.loglik(Z), direct, rtol=1e-10)


def test_likelihood_gradient_matches_finite_differences(model):
    Z = np.random.default_rng(1).gamma(1.0, 1.0, size=(1, 5, 3))
    grad = model.grad_loglik(Z)[0]
    h = 1e-6
    for j, k in [(0, 0), (2, 1), (4, 2)]:
        up, down = Z.copy(), Z.copy()
        up[0, j, k] += h
        down[0, j, k] -= h
        fd = (model.loglik(up)[0] - model.loglik(down)[0]) / (2 * h)
        assert grad[j, k] == pytest.approx(fd, rel=1e-5)


def test_expected_covariance_matches_monte_carlo(model):
    q = GammaNatural.from_shape_rate(np.full((5, 3), 2.0), np.linspace(1, 3, 15).reshape(5, 3))
    Z = q.sample(np.random.default_rng(2), 200_000)
    mc = np.einsum("sjk,slk->jl", Z, Z) / len(Z) + 0.1 * np.eye(5)
    np.testing.assert_allclose(model.expected_covariance(q), mc, rtol=0.01)


def test_family_matches_scipy_and_its_transform_gradient_matches_differences(model):
    fam = model.variational_family()
    rng = np.random.default_rng(3)
    phi = fam.init_params(rng) + 0.3 * rng.standard_normal(fam.n_params)
    shape, rate = fam.shape_rate(phi)
    z = fam.sample(phi, rng, 4)
    np.testing.assert_allclose(fam.log_q_blocks(phi, z), gamma_dist(shape, scale=1 / rate).logpdf(z), rtol=1e-9)
    assert fam.entropy(phi) == pytest.approx(gamma_dist(shape, scale=1 / rate).entropy().sum(), rel=1e-10)
    eps = fam.draw_noise(rng, 3)
    w = rng.standard_normal((3, fam.dim))
    vjp = fam.transform_vjp(phi, eps, w)
    for p in (0, 7, fam.dim + 4):
        d = np.zeros(fam.n_params)
        d[p] = 1e-6
        fd = ((fam.transform(phi + d, eps) - fam.transform(phi - d, eps)) * w).sum() / 2e-6
        assert vjp[p] == pytest.approx(fd, rel=1e-4)


def test_log_joint_gradient_matches_differences(model):
    z = np.random.default_rng(4).gamma(2.0, 1.0, size=(1, 15))
    g = model.grad_log_joint(z)[0]
    for p in (0, 9):
        d = np.zeros_like(z)
        d[0, p] = 1e-6
        assert g[p] == pytest.approx((model.log_joint(z + d)[0] - model.log_joint(z - d)[0]) / 2e-6, rel=1e-5)


def test_cvi_mf_improves_the_test_metric_over_the_prior(model):
    ev = np.random.default_rng(9)
    start = model.evaluate(model.mf_init(None), ev)
    alg = CVIMF(rho=0.01, n_samples=20)
    alg.init(model, np.random.default_rng(0))
    for _ in range(60):
        alg.step()
    end = model.evaluate(alg.posterior(), ev)
    assert end["neg_test_loglik"] < start["neg_test_loglik"] - 2.0
    assert end["elbo"] > start["elbo"] + 1000 and end["heldout_loglik"] > start["heldout_loglik"] + 1.0


def test_knowles_sgvb_improves_its_objective(model):
    ev = np.random.default_rng(9)
    start = model.evaluate(model.mf_init(None), ev)["elbo"]
    alg = GammaSGVB(step_size=1.0)
    alg.init(model, np.random.default_rng(0))
    for _ in range(1000):
        alg.step()
    assert model.evaluate(alg.posterior(), ev)["elbo"] > start + 50


@pytest.mark.parametrize("stack", [False, True])
def test_gauss_logpdf_matches_scipy_for_one_covariance_and_a_stack(stack):
    from scipy.stats import multivariate_normal
    rng = np.random.default_rng(7)
    Y = rng.standard_normal((50, 4))
    A = rng.standard_normal((3, 4, 4))
    sigma = A @ np.swapaxes(A, -1, -2) + 0.5 * np.eye(4)
    got = GammaFactor._gauss_logpdf(Y, sigma if stack else sigma[0])
    want = np.array([multivariate_normal(np.zeros(4), s).logpdf(Y) for s in (sigma if stack else sigma[:1])])
    np.testing.assert_allclose(got, want if stack else want[0], rtol=1e-10)


def test_family_sample_draws_each_gamma_factor_without_derivatives():
    """sample (score-function BBVI, Monte-Carlo metrics) is numpy's Gamma sampler: the factors' moments, a
    Kolmogorov–Smirnov test against scipy's Gamma, and the floor at tiny for a shape far below 1."""
    from scipy.stats import kstest

    from svibench.models.gamma_family import MeanFieldGamma

    fam = MeanFieldGamma({"z": (3,)})
    shape, rate = np.array([0.3, 2.0, 1e-4]), np.array([1.5, 0.5, 1.0])
    phi = fam.params(shape, rate)
    z = fam.sample(phi, np.random.default_rng(0), 200_000)
    assert z.shape == (200_000, 3) and z.min() >= np.finfo(float).tiny
    np.testing.assert_allclose(z[:, :2].mean(0), (shape / rate)[:2], rtol=0.01)
    np.testing.assert_allclose(z[:, :2].var(0), (shape / rate**2)[:2], rtol=0.03)
    for k in range(2):
        assert kstest(z[:, k], gamma_dist(shape[k], scale=1 / rate[k]).cdf).pvalue > 1e-3
