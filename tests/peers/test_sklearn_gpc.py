"""sklearn-gpc-laplace against independent truths: the model's K, Newton steps and the mode of
R&W (2006) Alg. 3.1 solved in other coordinates, (K⁻¹ + W)⁻¹ by a plain inverse, and scikit-learn's own
public fit and predictions."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
from scipy.special import expit

pytest.importorskip("sklearn")

from sklearn.gaussian_process import GaussianProcessClassifier  # noqa: E402

from svibench.data import Dataset  # noqa: E402
from svibench.datasets.usps import usps_3v5  # noqa: E402
from svibench.models.gpc import GPClassification  # noqa: E402
from svibench.models.logreg import BayesianLogisticRegression, predictive_probability  # noqa: E402
from svibench.peers import INSTALL  # noqa: E402
from svibench.peers.sklearn_gpc import SklearnGPCLaplace, sklearn_kernel  # noqa: E402


@pytest.fixture(scope="module")
def usps():
    """40 training and 40 test images at the study's kernel (log ℓ = 2.5, log σ_f = 5)."""
    return GPClassification(usps_3v5(n_per_class=40, split=0), log_lengthscale=2.5, log_sigma_f=5.0)


def _run(model, steps):
    alg = SklearnGPCLaplace()
    alg.init(model, np.random.default_rng(0))
    for _ in range(steps):
        alg.step()
    return alg


def _newton_whitened(model, iterations=40):
    """The mode of log p(y|f) + log N(f|0, K) by plain Newton in v = L⁻¹f (K = LLᵀ): Hessian I + LᵀWL."""
    L, s = model.chol_K, 2.0 * model.y - 1.0
    v = np.zeros(model.n_train)
    for _ in range(iterations):
        f = L @ v
        p = expit(f)
        grad = L.T @ (s * expit(-s * f)) - v
        v += np.linalg.solve(np.eye(len(v)) + L.T @ ((p * (1 - p))[:, None] * L), grad)
    return L @ v


def test_sklearns_kernel_matrix_is_the_models_K_jitter_included(usps):
    K = sklearn_kernel(usps)(usps.X)
    assert np.max(np.abs(K - usps.K)) < 1e-10
    Xs = usps.data.test["X"]
    assert np.max(np.abs(sklearn_kernel(usps)(usps.X, Xs) - usps.kernel(usps.X, Xs))) < 1e-10


def test_one_step_is_one_newton_iteration_of_rw_algorithm_3_1(usps):
    """Pins the private API: _posterior_mode with max_iter_predict = 1 moves f_cached by exactly
    f ← (K⁻¹ + W)⁻¹(Wf + y − π) = K(I + WK)⁻¹b, here solved without B."""
    alg = _run(usps, 2)
    f = alg.estimator_.f_cached.copy()
    alg.step()
    p = expit(f)
    W = p * (1 - p)
    expected = usps.K @ np.linalg.solve(np.eye(len(f)) + W[:, None] * usps.K, W * f + usps.y - p)
    np.testing.assert_allclose(alg.estimator_.f_cached, expected, rtol=1e-8, atol=1e-8 * np.max(np.abs(expected)))


def test_the_mode_after_convergence_is_the_posterior_mode(usps):
    """After 20 steps f is the maximiser of the log posterior: the independent whitened Newton solution
    and the stationarity condition f = K(y − σ(f)) (R&W eq. 3.17)."""
    f = _run(usps, 20).posterior().mean
    scale = np.max(np.abs(f))
    np.testing.assert_allclose(f, _newton_whitened(usps), rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose(f, usps.K @ (usps.y - expit(f)), rtol=0, atol=1e-8 * scale)
    assert not np.allclose(_run(usps, 5).posterior().mean, f, atol=1e-3 * scale)  # 5 steps are not yet there


def test_the_posterior_is_the_laplace_gaussian_at_the_iterate():
    """q = N(f, (K⁻¹ + W)⁻¹), W = diag(σ(f)(1 − σ(f))), against a plain inverse on a well-conditioned GP."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(12, 2))
    y = (rng.random(12) < expit(2 * X[:, 0])).astype(float)
    model = GPClassification(Dataset("toy", "classification", {"X": X, "y": y}), log_lengthscale=0.0, log_sigma_f=1.0)
    for steps in (0, 1, 8):
        q = _run(model, steps).posterior()
        p = expit(q.mean)
        expected = np.linalg.inv(np.linalg.inv(model.K) + np.diag(p * (1 - p)))
        np.testing.assert_allclose(q.cov, expected, rtol=1e-9, atol=1e-12)


def test_predictions_agree_with_sklearns_public_fit(usps):
    """scikit-learn's own fit (max_iter_predict = 100) gives the same latent predictive N(m*, v*) as the
    model computes from the Laplace q (v* up to the white term jitter·σ_f² in scikit-learn's k**), and its
    predict_proba — Williams & Barber's five-erf approximation of ∫σ(f)N(f|m*, v*) df — the exact
    predictive to 1e-6, so the same test error and log loss."""
    q = _run(usps, 20).posterior()
    gpc = GaussianProcessClassifier(kernel=sklearn_kernel(usps), optimizer=None).fit(usps.X, usps.y)
    Xs, ys = usps.data.test["X"], usps.data.test["y"]
    m_sk, v_sk = gpc.latent_mean_and_variance(Xs)
    Ks = usps.kernel(usps.X, Xs)
    A = scipy.linalg.cho_solve((usps.chol_K, True), Ks)
    m, v = A.T @ q.mean, usps.sf2 - np.sum(A * Ks, 0) + np.sum(A * (q.cov @ A), 0)
    np.testing.assert_allclose(m_sk, m, rtol=0, atol=1e-8 * np.max(np.abs(m)))
    np.testing.assert_allclose(v_sk - usps.jitter * usps.sf2, v, rtol=1e-10)
    p_sk = gpc.predict_proba(Xs)[:, 1]
    np.testing.assert_allclose(p_sk, predictive_probability(m, v), atol=1e-6)
    metrics = usps.evaluate(q, np.random.default_rng(0))
    assert metrics["test_error"] == np.mean(gpc.predict(Xs) != ys)
    log_loss = -np.mean(ys * np.log(p_sk) + (1 - ys) * np.log1p(-p_sk))
    assert metrics["test_logloss_nats"] == pytest.approx(log_loss, rel=1e-5)


def test_a_missing_scikit_learn_skips_every_pair_with_the_install_command(monkeypatch):
    assert SklearnGPCLaplace.incompatibility(GPClassification, {}) is None
    monkeypatch.setattr("svibench.peers.missing_libraries", lambda modules: list(modules))
    reason = SklearnGPCLaplace.incompatibility(GPClassification, {})
    assert reason == f"needs sklearn: {INSTALL}"


def test_other_models_are_incompatible_with_a_reason():
    reason = SklearnGPCLaplace.incompatibility(BayesianLogisticRegression, {})
    assert "only gpc" in reason and "logreg" in reason


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_a_bad_iterations_per_step_is_a_one_line_error(bad):
    with pytest.raises(ValueError, match=r"^iterations_per_step must be a positive integer [^\n]*$"):
        SklearnGPCLaplace(iterations_per_step=bad).check_params()


def test_two_iterations_per_step_are_two_steps(usps):
    two = SklearnGPCLaplace(iterations_per_step=2)
    two.init(usps, np.random.default_rng(0))
    assert two.step() == 2 * usps.n_train
    np.testing.assert_array_equal(two.posterior().mean, _run(usps, 2).posterior().mean)
