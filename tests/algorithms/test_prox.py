"""PG-exact / PG-SVI (proximal gradient, Khan et al. 2015, 2016) against independent truths."""
from __future__ import annotations

import numpy as np
import pytest

from svibench.algorithms.prox import ProximalGradientVI
from svibench.capabilities.latent_gaussian import expected_loglik
from svibench.data import Dataset
from svibench.datasets.libsvm import breast_cancer
from svibench.models.logreg import BayesianLogisticRegression
from svibench.testing.gaussian_latent import ConjugateLatentGaussian, optimal_elbo


def _authors_pg_exact(model, w: float, steps: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The authors' PG-exact loop (emtiyaz/cvi, baseline_infer.m, case 'PG-exact') written out with dense inverses,
    independently of the package's conjugate step: (mean, covariance) of the q it scores after 0..steps iterations."""
    X, prior = np.asarray(model.X, float), np.diag(model.precision)
    V = np.linalg.inv(prior + X.T @ (0.005 * X))  # the initial q: sites 0.01 and precision 0.005
    m = V @ X.T @ np.full(len(X), 0.01)
    tm, tv = X @ m, np.einsum("nd,de,ne->n", X, V, X)
    t_lambda, r = np.full(len(X), 0.05), 1.0 / (1.0 + w)
    out = [(m, V)]
    for _ in range(steps):
        e = expected_loglik(model, tm, tv, None)
        b = -prior @ m + X.T @ e.dm
        A = prior + X.T @ (r * t_lambda[:, None] * X)
        m = m + (1 - r) * np.linalg.solve(A, b)
        tv, tm = np.einsum("nd,de,ne->n", X, np.linalg.inv(A), X), X @ m
        t_lambda = r * t_lambda + (1 - r) * (-2.0 * e.dv)
        out.append((m, np.linalg.inv(prior + X.T @ (r * t_lambda[:, None] * X))))
    return out


@pytest.mark.parametrize("w", [0.4, 3.0])
@pytest.mark.parametrize("n", [12, 3])  # weight space (D ≤ N) and data space (D > N)
def test_pg_exact_is_the_authors_loop(w, n):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    y = (rng.random(n) < 0.5).astype(float)
    model = BayesianLogisticRegression(Dataset("toy", "classification", {"X": X, "y": y}), delta=0.7, bias_precision=0.5)
    alg = ProximalGradientVI(expectations="exact", w=w)
    alg.init(model, np.random.default_rng(0))
    for k, (mean, cov) in enumerate(_authors_pg_exact(model, w, 6)):
        if k:
            alg.step()
        np.testing.assert_allclose(alg.posterior().mean, mean, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(alg.posterior().cov, cov, rtol=1e-9, atol=1e-12)
        # log|Σ| comes with Σ (the KL to the prior then decomposes nothing), and is Σ's
        assert alg.posterior().logdet == pytest.approx(np.linalg.slogdet(cov)[1], rel=1e-10)


@pytest.mark.parametrize("shape", [(40, 5), (6, 30)])
def test_on_a_gaussian_likelihood_pg_exact_finds_the_posterior_mean_and_its_own_covariance(shape):
    """At the fixed point the linearised ELBO's mean gradient vanishes: the exact posterior mean (a Gaussian
    likelihood's ∂f/∂m does not depend on v).  The sites' precisions reach the likelihood's 1/σ², and the q scored
    keeps the authors' r·T in its precision: (Σ₀⁻¹ + r XᵀX/σ²)⁻¹, wider than the posterior's for r < 1."""
    rng = np.random.default_rng(1)
    N, D = shape
    X = rng.normal(size=(N, D))
    model = ConjugateLatentGaussian(X, X @ rng.normal(size=D) + 0.3 * rng.normal(size=N),
                                    precision=rng.uniform(0.5, 2.0, D))
    mean, cov = model.exact_posterior()
    alg = ProximalGradientVI(expectations="exact", w=1.0)
    alg.init(model, rng)
    for _ in range(400):
        alg.step()
    r = 1.0 / (1.0 + 1.0)
    np.testing.assert_allclose(alg.posterior().mean, mean, rtol=1e-6, atol=1e-8)
    own = np.linalg.inv(np.diag(model.latent_prior().precision) + r * X.T @ X / model.noise**2)
    np.testing.assert_allclose(alg.posterior().cov, own, rtol=1e-6, atol=1e-9)
    assert not np.allclose(alg.posterior().cov, cov, rtol=1e-2)


def test_on_logistic_regression_pg_exact_reaches_the_authors_fixed_point_and_pg_svi_gets_near_it():
    """PG-exact's fixed point (module docstring): ∂/∂m of the linearised ELBO vanishes with the expectations taken at
    the variances of A = Σ₀⁻¹ + r Xᵀ diag(T) X, T = −2 ∂f/∂v there.  With Robbins–Monro steps r → 1, so PG-SVI's q
    approaches the optimal Gaussian (Chol's optimum), which a constant w keeps PG-exact's wider covariance from."""
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    X, prior = np.asarray(model.X, float), np.diag(model.precision)
    exact = ProximalGradientVI(expectations="exact", w=0.4)
    exact.init(model, np.random.default_rng(0))
    for _ in range(300):
        exact.step()
    m = exact.posterior().mean
    A = np.linalg.inv(exact.posterior().cov)  # Σ₀⁻¹ + r Xᵀ diag(T) X
    e = expected_loglik(model, X @ m, np.einsum("nd,de,ne->n", X, np.linalg.inv(A), X), None)
    assert np.max(np.abs(X.T @ e.dm - prior @ m)) < 1e-8 * np.max(np.abs(X.T @ e.dm))
    svi = ProximalGradientVI(expectations="mc", w=None, t0=1.0, kappa=0.7)
    svi.init(model, np.random.default_rng(0))
    for _ in range(500):
        svi.step()
    ref = optimal_elbo(model)
    assert abs(model.elbo(svi.posterior()) - ref) < 1e-3 * abs(ref)
    assert model.elbo(exact.posterior()) < ref - 1e-3 * abs(ref)


@pytest.mark.parametrize("params, match", [({"expectations": "exact-ish"}, "expectations must be"),
                                           ({"init_lam2": 0.1}, "init_lam2 must be < 0"),
                                           ({"n_samples": 0}, "n_samples must be"),
                                           ({"init_precision": 0.0}, "init_precision must be > 0")])
def test_bad_hyperparameters_are_one_line_errors(params, match):
    with pytest.raises(ValueError, match=match) as err:
        ProximalGradientVI(**params).check_params()
    assert "\n" not in str(err.value)
