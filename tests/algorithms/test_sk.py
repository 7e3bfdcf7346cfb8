"""S&K-Alg2 and S&K-FG (Salimans & Knowles 2013) against independent truths."""
from __future__ import annotations

import numpy as np
import pytest

from svibench.algorithms.sk import SalimansKnowles
from svibench.datasets.libsvm import australian, breast_cancer
from svibench.models.logreg import BayesianLogisticRegression
from svibench.testing.gaussian_latent import ConjugateLatentGaussian, optimal_elbo


def _conjugate(shape, seed, kernel=False):
    rng = np.random.default_rng(seed)
    N, D = shape
    if kernel:
        x = np.sort(rng.uniform(0, 5, N))
        K = 2.0 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + 1e-6 * np.eye(N)
        return ConjugateLatentGaussian(None, np.sin(x) + 0.3 * rng.normal(size=N), cov=K)
    X = rng.normal(size=(N, D))
    return ConjugateLatentGaussian(X, X @ rng.normal(size=D) + 0.3 * rng.normal(size=N),
                                   precision=rng.uniform(0.5, 2.0, D))


@pytest.mark.parametrize("factorised", [False, True])
@pytest.mark.parametrize("shape, kernel", [((40, 5), False), ((6, 30), False), ((12, 12), True)])
def test_one_step_with_unit_step_is_exact_on_a_gaussian_likelihood(factorised, shape, kernel):
    """log p is quadratic, so the regression of its gradient on z is exact from any draws."""
    model = _conjugate(shape, 1, kernel)
    alg = SalimansKnowles(factorised=factorised, n_samples=2, w=None, rho=1.0)
    alg.init(model, np.random.default_rng(0))
    alg.step()
    q = alg.posterior()
    mean, cov = model.exact_posterior()
    np.testing.assert_allclose(q.mean, mean, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(q.cov, cov, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("factorised", [False, True])
@pytest.mark.parametrize("dataset, delta", [(breast_cancer, 1.0), (australian, 1e-5)])
def test_both_variants_reach_chols_optimum_on_logistic_regression(factorised, dataset, delta):
    model = BayesianLogisticRegression(dataset(split=0), delta=delta)
    ref = optimal_elbo(model)
    alg = SalimansKnowles(factorised=factorised, n_samples=10, w=None, t0=1.0, kappa=0.7)
    alg.init(model, np.random.default_rng(0))
    for _ in range(300):
        alg.step()
    elbo = model.elbo(alg.posterior())
    assert abs(elbo - ref) < 3e-4 * abs(ref), (elbo, ref)


@pytest.mark.parametrize("params, match", [({"n_samples": 0}, "n_samples must be"),
                                           ({"init_lam2": 0.0}, "init_lam2 must be < 0"),
                                           ({"factorised": "yes"}, "factorised must be true or false"),
                                           ({"w": None, "kappa": 2.0}, "kappa")])
def test_bad_hyperparameters_are_one_line_errors(params, match):
    with pytest.raises(ValueError, match=match) as err:
        SalimansKnowles(**params).check_params()
    assert "\n" not in str(err.value)
