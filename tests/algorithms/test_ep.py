"""EP (Rasmussen & Williams 2006, Alg. 3.5) against brute-force integrals of the tilted distributions."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit

from svibench.algorithms.ep import EP
from svibench.data import Dataset
from svibench.models.gpc import GPClassification
from svibench.models.logreg import BayesianLogisticRegression


def _tilted(y, mu, var):
    """Z, mean and variance of σ(sf)N(f | μ, var), s = 2y − 1, by quad split at the kink f = 0."""
    sd, s = np.sqrt(var), 2 * y - 1
    pts = sorted({mu - 40 * sd, mu + 40 * sd, *([0.0] if abs(mu) < 40 * sd else [])})
    def integral(k):
        f = lambda t: t**k * expit(s * t) * np.exp(-0.5 * (t - mu) ** 2 / var) / np.sqrt(2 * np.pi * var)  # noqa: E731
        return sum(quad(f, a, b, epsabs=0.0, epsrel=1e-12, limit=500)[0] for a, b in zip(pts[:-1], pts[1:]))
    Z = integral(0)
    mean = integral(1) / Z
    return Z, mean, integral(2) / Z - mean**2


def _gp(n, seed=0, log_sigma_f=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (rng.random(n) < expit(2 * X[:, 0])).astype(float)
    return GPClassification(Dataset("toy", "classification", {"X": X, "y": y}), log_lengthscale=0.0,
                            log_sigma_f=log_sigma_f)


@pytest.mark.parametrize("y, mu, var", [(1, 0.3, 0.5), (0, 2.0, 40.0), (1, -30.0, 4.0), (0, 1.0, 1e4), (1, 5.0, 1e-4)])
def test_the_models_likelihood_moments_give_the_tilted_moments_of_quad(y, mu, var):
    X = np.zeros((1, 2))
    model = GPClassification(Dataset("one", "classification", {"X": X, "y": np.array([float(y)])}))
    log_z, d1, d2 = model.likelihood_moments(np.array([mu]), np.array([var]))
    Z, mean, tvar = _tilted(y, mu, var)
    np.testing.assert_allclose(np.exp(log_z[0]), Z, rtol=1e-9)
    np.testing.assert_allclose(mu + var * d1[0], mean, rtol=1e-9, atol=1e-9 * np.sqrt(var))
    np.testing.assert_allclose(var + var**2 * d2[0], tvar, rtol=1e-7)


@pytest.mark.parametrize("y", [0.0, 1.0])
def test_with_one_datum_ep_is_the_exact_posterior_after_one_sweep(y):
    """One site: the cavity is the prior, so q(f) is the exact posterior's moments."""
    model = GPClassification(Dataset("one", "classification", {"X": np.zeros((1, 2)), "y": np.array([y])}),
                             log_sigma_f=2.0)
    ep = EP()
    ep.init(model, np.random.default_rng(0))
    ep.step()
    q = ep.posterior()
    _, mean, var = _tilted(y, 0.0, model.K[0, 0])
    np.testing.assert_allclose(q.mean[0], mean, rtol=1e-9)
    np.testing.assert_allclose(q.cov[0, 0], var, rtol=1e-8)


def _check_fixed_point(model, ep, marginals):
    """At EP's fixed point every site's tilted distribution (cavity from q) has q's marginal moments."""
    m, v = marginals
    for n in range(model.n_train):
        tau_cav = 1.0 / v[n] - ep.tau_[n]
        mu_cav = (m[n] / v[n] - ep.nu_[n]) / tau_cav
        _, mean, var = _tilted(model.y[n], mu_cav, 1.0 / tau_cav)
        np.testing.assert_allclose([mean, var], [m[n], v[n]], rtol=1e-7, atol=1e-9)


def test_ep_on_a_small_gp_reaches_a_moment_matching_fixed_point():
    model = _gp(8, log_sigma_f=1.5)
    ep = EP()
    ep.init(model, np.random.default_rng(0))
    for _ in range(30):
        ep.step()
    q = ep.posterior()
    _check_fixed_point(model, ep, (q.mean, np.diag(q.cov)))


def test_ep_on_logistic_regression_reaches_a_fixed_point_and_its_rank_one_updates_match_a_refactor():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(15, 3))
    y = (rng.random(15) < expit(X @ np.array([1.0, -2.0, 0.5]))).astype(float)
    model = BayesianLogisticRegression(Dataset("toy", "classification", {"X": X, "y": y}), delta=1.0,
                                       bias_precision=1.0)
    ep = EP(damping=0.8)
    ep.init(model, np.random.default_rng(0))
    for n in range(model.n_train):  # one sweep of rank-one updates, without the final refactor
        ep._site(n)
    mu, Sigma = ep.mu_.copy(), ep.Sigma_.copy()
    ep._refactor()
    np.testing.assert_allclose(mu, ep.mu_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(Sigma, ep.Sigma_, rtol=1e-9, atol=1e-12)
    for _ in range(60):
        ep.step()
    q = ep.posterior()
    _check_fixed_point(model, ep, (model.X @ q.mean, np.einsum("nd,de,ne->n", model.X, q.cov, model.X)))


def test_ep_is_skipped_on_a_model_without_likelihood_moments_and_bad_damping_is_one_line():
    from svibench.testing.gaussian_latent import ConjugateLatentGaussian

    class Named(ConjugateLatentGaussian):
        name = "conjugate"
    reason = EP.incompatibility(Named, {})
    assert "LikelihoodMoments" in reason and "likelihood_moments" in reason
    with pytest.raises(ValueError, match=r"damping must be in \(0, 1\]") as err:
        EP(damping=0.0).check_params()
    assert "\n" not in str(err.value)
