"""Log joints of the conjugate models (gmm with assignments summed out, linreg), for BBVI."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from svibench.algorithms.bbvi import BBVI
from svibench.capabilities import LogJoint, LogJointGradient
from svibench.datasets.synthetic import gmm_synthetic, linreg_synthetic
from svibench.models.gmm import GaussianMixture
from svibench.models.linreg import BayesianLinearRegression


@pytest.fixture(scope="module")
def mixture():
    return GaussianMixture(gmm_synthetic(n=120, n_test=30, dim=2, components=3, seed=3), components=3)


@pytest.fixture(scope="module")
def linreg():
    return BayesianLinearRegression(linreg_synthetic(n=80, n_test=20, dim=3, seed=0))


def test_capabilities(mixture, linreg):
    assert isinstance(mixture, LogJoint) and isinstance(linreg, LogJointGradient)


def test_linreg_log_joint_is_prior_plus_likelihood(linreg):
    w = np.random.default_rng(0).standard_normal((3, 3))
    direct = [multivariate_normal(np.zeros(3), np.eye(3) / linreg.prior_precision).logpdf(v)
              + norm(linreg.X @ v, np.sqrt(linreg.noise_variance)).logpdf(linreg.y).sum() for v in w]
    np.testing.assert_allclose(linreg.log_joint(w), direct, rtol=1e-12)
    batch = np.array([2, 5, 40, 41])
    scaled = [multivariate_normal(np.zeros(3), np.eye(3)).logpdf(v)
              + 20.0 * norm(linreg.X[batch] @ v, np.sqrt(linreg.noise_variance)).logpdf(linreg.y[batch]).sum() for v in w]
    np.testing.assert_allclose(linreg.log_joint(w, batch), scaled, rtol=1e-12)


@pytest.mark.parametrize("batch", [None, np.array([0, 3, 7])])
def test_linreg_gradient_matches_finite_differences(linreg, batch):
    w = np.random.default_rng(1).standard_normal((2, 3))
    h = 1e-6
    numeric = np.stack([(linreg.log_joint(w + h * e, batch) - linreg.log_joint(w - h * e, batch)) / (2 * h)
                        for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(linreg.grad_log_joint(w, batch), numeric, rtol=1e-6, atol=1e-6)


def test_mixture_log_joint_sums_out_the_assignments(mixture):
    rng = np.random.default_rng(2)
    family = mixture.variational_family("conjugate")
    z = family.sample(family.init_params(rng), rng, 2)
    K, D = 3, 2
    for s in range(2):
        pi, mu, tau = z[s, :K], z[s, K:K + K * D].reshape(K, D), z[s, K + K * D:].reshape(K, D)
        lik = np.log(sum(pi[k] * np.prod(norm(mu[k], 1 / np.sqrt(tau[k])).pdf(mixture.X), axis=1)
                         for k in range(K))).sum()
        prior = mixture._prior["pi"].log_pdf(pi) + mixture._prior["theta"].log_pdf(np.stack([mu, tau], -1)).sum()
        np.testing.assert_allclose(mixture.log_joint(z[s:s + 1]), lik + prior, rtol=1e-10)


def test_mixture_family_score_matches_finite_differences(mixture):
    rng = np.random.default_rng(3)
    family = mixture.variational_family("conjugate")
    phi = family.init_params(rng) + 0.1 * rng.standard_normal(family.n_params)
    z = family.sample(phi, rng, 2)
    h = 1e-6
    numeric = np.stack([(family.log_q_blocks(phi + h * e, z) - family.log_q_blocks(phi - h * e, z))[:, 0] / (2 * h)
                        for e in np.eye(family.n_params)], axis=1)
    np.testing.assert_allclose(family.score(phi, z), numeric, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name, params", [("mixture", {}), ("linreg", {}), ("linreg", {"estimator": "reparam"}),
                                          ("linreg", {"family": "full", "estimator": "reparam"}),
                                          ("mixture", {"estimator": "reparam"})])
def test_bbvi_improves_the_exact_elbo(name, params, request):
    model = request.getfixturevalue(name)
    bbvi = BBVI(n_samples=20, learning_rate=0.05, **params)
    bbvi.check_params()
    bbvi.init(model, np.random.default_rng(0))
    before = model.evaluate(bbvi.posterior(), np.random.default_rng(0))["elbo"]
    for _ in range(100):
        bbvi.step()
    after = model.evaluate(bbvi.posterior(), np.random.default_rng(0))["elbo"]
    assert after > before + 1.0, (before, after)


@pytest.mark.parametrize("batch", [None, np.array([0, 5, 9])])
def test_mixture_gradient_matches_finite_differences(mixture, batch):
    rng = np.random.default_rng(4)
    family = mixture.variational_family("conjugate")
    z = family.sample(family.init_params(rng), rng, 2)
    h = 1e-6 * np.maximum(np.abs(z), 1e-3)
    numeric = np.stack([(mixture.log_joint(z + h[:, i:i + 1] * e, batch) - mixture.log_joint(z - h[:, i:i + 1] * e, batch))
                        / (2 * h[:, i]) for i, e in enumerate(np.eye(z.shape[1]))], axis=1)
    np.testing.assert_allclose(mixture.grad_log_joint(z, batch), numeric, rtol=1e-5, atol=1e-4)


def test_mixture_reparameterisation_gradients_match_finite_differences(mixture):
    """T(φ, ε) against its finite differences through the vjp, and H[q] against its gradient and a Monte-Carlo estimate."""
    rng = np.random.default_rng(5)
    family = mixture.variational_family("conjugate")
    phi = family.init_params(rng) * (1.0 + 0.05 * rng.standard_normal(family.n_params))
    eps = family.draw_noise(rng, 3)
    v = rng.standard_normal((3, family.dim))
    h = 1e-6
    numeric = np.array([np.sum(v * (family.transform(phi + h * e, eps) - family.transform(phi - h * e, eps))) / (2 * h)
                        for e in np.eye(family.n_params)])
    np.testing.assert_allclose(family.transform_vjp(phi, eps, v), numeric, rtol=1e-4, atol=1e-4)
    numeric_h = np.array([(family.entropy(phi + h * e) - family.entropy(phi - h * e)) / (2 * h) for e in np.eye(family.n_params)])
    np.testing.assert_allclose(family.entropy_grad(phi), numeric_h, rtol=1e-5, atol=1e-6)
    z = family.transform(phi, family.draw_noise(rng, 4000))
    mc = -family.log_q_blocks(phi, z).mean()
    assert abs(family.entropy(phi) - mc) < 4 * family.log_q_blocks(phi, z).std() / np.sqrt(4000)
