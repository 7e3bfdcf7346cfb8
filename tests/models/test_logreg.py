"""Bayesian logistic regression: prior convention, exact ELBO and the Table 3 metrics."""
from __future__ import annotations

import numpy as np
from scipy.special import expit

from svibench.capabilities import LatentGaussian, LogJoint, missing
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.datasets.libsvm import a1a, breast_cancer
from svibench.models.logreg import BayesianLogisticRegression, predictive_probability


def test_delta_is_a_precision_and_the_bias_column_is_prepended():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=4.0, bias_precision=1e-4)
    assert not missing(LatentGaussian, BayesianLogisticRegression) and not missing(LogJoint, BayesianLogisticRegression)
    assert model.X.shape == (341, 11) and np.all(model.X[:, 0] == 1.0)
    np.testing.assert_array_equal(model.latent_prior().precision, [1e-4] + [4.0] * 10)


def test_a1a_design_is_sparse_with_123_features_plus_bias():
    model = BayesianLogisticRegression(a1a(), delta=2.8072)
    assert model.X.shape == (1605, 124) and model.X_test.shape == (30956, 124)


def test_quadrature_elbo_agrees_with_monte_carlo():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    rng = np.random.default_rng(0)
    D = model.X.shape[1]
    B = rng.normal(size=(D, D)) * 0.1
    q = GaussianPosterior(rng.normal(size=D) * 0.3, B @ B.T + 0.01 * np.eye(D))
    z = rng.multivariate_normal(q.mean, q.cov, size=200_000)
    logq = -0.5 * np.sum(np.linalg.solve(np.linalg.cholesky(q.cov), (z - q.mean).T) ** 2, 0) \
        - 0.5 * np.linalg.slogdet(2 * np.pi * q.cov)[1]
    terms = np.concatenate([model.log_joint(c) for c in np.array_split(z, 20)]) - logq
    se = terms.std() / np.sqrt(len(terms))
    assert abs(model.elbo(q) - terms.mean()) < 4 * se


def test_test_log_loss_is_in_bits_of_the_probit_free_predictive():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    D = model.X.shape[1]
    q = GaussianPosterior(np.full(D, 0.2), 0.05 * np.eye(D))
    out = model.evaluate(q, np.random.default_rng(0))
    np.testing.assert_allclose(out["test_logloss_bits"], out["test_logloss_nats"] / np.log(2))
    assert out["neg_elbo"] == -out["elbo"]
    m, v = np.array([0.3, -2.0]), np.array([0.5, 3.0])
    draws = expit(m + np.sqrt(v) * np.random.default_rng(1).standard_normal((400_000, 2)))
    np.testing.assert_allclose(predictive_probability(m, v), draws.mean(0), atol=2e-3)
