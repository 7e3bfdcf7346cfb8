"""SVI and VMP on the conjugate models, against exact truths and each other."""
from __future__ import annotations

import numpy as np
import pytest

from svibench.algorithms.svi import SVI, VMP
from svibench.capabilities import ConjugatePosterior, LocalApprox, natural_step
from svibench.datasets.synthetic import gmm_synthetic, linreg_synthetic
from svibench.models.gmm import GaussianMixture
from svibench.models.linreg import BayesianLinearRegression


@pytest.fixture(scope="module")
def mixture():
    return GaussianMixture(gmm_synthetic(n=1500, n_test=300, dim=2, components=4, seed=3), components=4)


def _flat(lam):
    return np.concatenate([lam[k].flatten() for k in sorted(lam)])


def test_vmp_elbo_never_decreases_on_the_mixture(mixture):
    rng = np.random.default_rng(0)
    vmp = VMP()
    vmp.init(mixture, rng)
    elbos = [mixture.elbo(vmp.posterior().lam)]
    for _ in range(40):
        vmp.step()
        elbos.append(mixture.elbo(vmp.posterior().lam))
    steps = np.diff(elbos)
    assert np.all(steps >= -1e-8 * np.abs(elbos[1:])), steps.min()
    assert elbos[-1] > elbos[0] + 100  # it does move


def test_svi_full_batch_rho_one_is_exactly_one_vmp_step(mixture):
    vmp, svi = VMP(), SVI(batch_size=mixture.n_train, rho=1.0)
    vmp.init(mixture, np.random.default_rng(5))
    svi.init(mixture, np.random.default_rng(5))
    np.testing.assert_array_equal(_flat(vmp.posterior().lam), _flat(svi.posterior().lam))  # same init
    for _ in range(3):
        vmp.step()
        svi.step()
        np.testing.assert_allclose(_flat(svi.posterior().lam), _flat(vmp.posterior().lam), rtol=1e-10, atol=1e-9)


def test_natural_step_mixes_prior_scaled_stats_and_old_lambda(mixture):
    eta = mixture.prior_natural()
    lam = mixture.init_globals(np.random.default_rng(0))
    stats = mixture.local_statistics(mixture.expected_view(lam), np.arange(10), LocalApprox(), np.random.default_rng(0))
    new = natural_step(lam, eta, stats, rho=0.3, scale=150.0)
    for k in lam:
        expected = 0.7 * lam[k].flatten() + 0.3 * (eta[k].flatten() + 150.0 * stats[k].flatten())
        np.testing.assert_allclose(new[k].flatten(), expected)


def test_svi_reaches_vmp_final_elbo_within_one_percent(mixture):
    vmp = VMP()
    vmp.init(mixture, np.random.default_rng(1))
    for _ in range(100):
        vmp.step()
    target = mixture.elbo(vmp.posterior().lam)
    svi = SVI(batch_size=150, t0=1.0, kappa=0.6)
    svi.init(mixture, np.random.default_rng(1))
    for _ in range(600):
        svi.step()
    got = mixture.elbo(svi.posterior().lam)
    assert abs(got - target) <= 0.01 * abs(target), (got, target)


def test_gibbs_locals_average_to_mean_field_responsibilities(mixture):
    lam = mixture.init_globals(np.random.default_rng(0))
    view = mixture.expected_view(lam)
    batch = np.arange(50)
    mf = mixture.local_statistics(view, batch, LocalApprox("mf"), np.random.default_rng(0))
    gibbs = mixture.local_statistics(view, batch, LocalApprox("gibbs", samples=4000), np.random.default_rng(0))
    np.testing.assert_allclose(gibbs["pi"].flatten(), mf["pi"].flatten(), atol=0.05 * len(batch) / 4)
    assert not np.allclose(gibbs["pi"].flatten(), mf["pi"].flatten(), atol=1e-6)  # it does sample


@pytest.fixture(scope="module")
def regression():
    return BayesianLinearRegression(linreg_synthetic(n=400, dim=4, seed=2), prior_precision=2.0, noise_variance=0.25)


def test_vmp_on_linear_regression_is_the_closed_form_posterior(regression):
    vmp = VMP()
    vmp.init(regression, np.random.default_rng(0))
    vmp.step()
    q, exact = vmp.posterior().lam["w"], regression.exact_posterior()
    for got, want in zip(q.mean_cov(), exact.mean_cov()):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    assert regression.evaluate(vmp.posterior(), np.random.default_rng(0))["posterior_kl"] < 1e-10


def test_svi_on_linear_regression_converges_to_the_closed_form_posterior(regression):
    svi = SVI(batch_size=40, t0=10.0, kappa=0.9)
    svi.init(regression, np.random.default_rng(0))
    for _ in range(2000):
        svi.step()
    kl = regression.evaluate(svi.posterior(), np.random.default_rng(0))["posterior_kl"]
    assert kl < 0.05, kl


def test_linear_regression_elbo_equals_log_evidence_at_the_exact_posterior(regression):
    """At the exact posterior the ELBO is the log marginal likelihood (Bishop eq. 3.86)."""
    X, y, a, s2 = regression.X, regression.y, regression.prior_precision, regression.noise_variance
    cov = s2 * np.eye(len(y)) + X @ X.T / a
    _, logdet = np.linalg.slogdet(cov)
    log_evidence = -0.5 * (len(y) * np.log(2 * np.pi) + logdet + y @ np.linalg.solve(cov, y))
    elbo = regression.evaluate(ConjugatePosterior({"w": regression.exact_posterior()}), np.random.default_rng(0))["elbo"]
    assert elbo == pytest.approx(log_evidence, rel=1e-10)
