"""PG-exact / PG-SVI (proximal gradient, Khan et al. 2015, 2016) against independent truths."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize

from svibench.algorithms.prox import ProximalGradientVI
from svibench.capabilities.latent_gaussian import expected_loglik
from svibench.data import Dataset
from svibench.datasets.libsvm import breast_cancer
from svibench.models.logreg import BayesianLogisticRegression
from svibench.testing.gaussian_latent import ConjugateLatentGaussian, optimal_elbo


def _kl(m1, S1, m0, S0):
    """KL(N(m1, S1) ‖ N(m0, S0)), dense and direct (independent of the package's Cholesky route)."""
    P0 = np.linalg.inv(S0)
    d = m1 - m0
    return 0.5 * (np.trace(P0 @ S1) + d @ P0 @ d - len(m1) + np.linalg.slogdet(S0)[1] - np.linalg.slogdet(S1)[1])


@pytest.mark.parametrize("w", [0.4, 3.0])
def test_one_pg_step_solves_the_linearised_kl_proximal_problem(w):
    """The closed form against scipy.optimize on argmax Σ(αₙmₙ + γₙvₙ) − KL(q‖p) − KL(q‖q_k)/w."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y = (rng.random(12) < 0.5).astype(float)
    model = BayesianLogisticRegression(Dataset("toy", "classification", {"X": X, "y": y}), delta=0.7, bias_precision=0.5)
    alg = ProximalGradientVI(expectations="exact", w=w)
    alg.init(model, np.random.default_rng(0))
    q_k = alg.posterior()
    e = expected_loglik(model, alg.m_, alg.v_, None)
    Xb, D = model.X, model.latent_dim
    S0 = np.diag(1.0 / model.precision)
    rows, cols = np.tril_indices(D)

    def negative(x):
        L = np.zeros((D, D))
        L[rows, cols] = x[D:]
        m, S = x[:D], L @ L.T
        lin = e.dm @ (Xb @ m) + e.dv @ np.einsum("nd,de,ne->n", Xb, S, Xb)
        return -(lin - _kl(m, S, np.zeros(D), S0) - _kl(m, S, q_k.mean, q_k.cov) / w)

    L0 = np.linalg.cholesky(q_k.cov)
    res = scipy.optimize.minimize(negative, np.concatenate([q_k.mean, L0[rows, cols]]), method="BFGS",
                                  options={"gtol": 1e-10, "maxiter": 5000})
    L = np.zeros((D, D))
    L[rows, cols] = res.x[D:]
    alg.step()
    q = alg.posterior()
    np.testing.assert_allclose(q.mean, res.x[:D], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(q.cov, L @ L.T, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shape", [(40, 5), (6, 30)])
def test_pg_exact_converges_to_the_exact_posterior_of_a_conjugate_model(shape):
    """On a Gaussian likelihood the optimal Gaussian is the posterior; with w = ∞ (β = 1) the
    covariance is exact after one step, the mean only at the fixed point (PG linearises in m)."""
    rng = np.random.default_rng(1)
    N, D = shape
    X = rng.normal(size=(N, D))
    model = ConjugateLatentGaussian(X, X @ rng.normal(size=D) + 0.3 * rng.normal(size=N),
                                    precision=rng.uniform(0.5, 2.0, D))
    mean, cov = model.exact_posterior()
    alg = ProximalGradientVI(expectations="exact", w=None, rho=1.0)
    alg.init(model, rng)
    alg.step()
    np.testing.assert_allclose(alg.posterior().cov, cov, rtol=1e-7, atol=1e-9)
    assert not np.allclose(alg.posterior().mean, mean, rtol=1e-3)
    alg = ProximalGradientVI(expectations="exact", w=1.0)
    alg.init(model, rng)
    for _ in range(400):
        alg.step()
    np.testing.assert_allclose(alg.posterior().mean, mean, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(alg.posterior().cov, cov, rtol=1e-6, atol=1e-9)


def test_pg_exact_and_pg_svi_reach_chols_optimum_on_logistic_regression():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    ref = optimal_elbo(model)
    for alg, steps in ((ProximalGradientVI(expectations="exact", w=0.4), 100),
                       (ProximalGradientVI(expectations="mc", w=None, t0=1.0, kappa=0.7), 300)):
        alg.init(model, np.random.default_rng(0))
        for _ in range(steps):
            alg.step()
        assert abs(model.elbo(alg.posterior()) - ref) < 1e-3 * abs(ref), (alg, ref)


@pytest.mark.parametrize("params, match", [({"expectations": "exact-ish"}, "expectations must be"),
                                           ({"init_lam2": 0.1}, "init_lam2 must be < 0"),
                                           ({"n_samples": 0}, "n_samples must be")])
def test_bad_hyperparameters_are_one_line_errors(params, match):
    with pytest.raises(ValueError, match=match) as err:
        ProximalGradientVI(**params).check_params()
    assert "\n" not in str(err.value)
