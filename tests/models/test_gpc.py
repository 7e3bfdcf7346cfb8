"""GP classification: test-time marginals and CVI-exact ≈ Chol on the USPS substitute."""
from __future__ import annotations

import numpy as np

from svibench.algorithms.chol import Chol
from svibench.algorithms.cvi import CVI
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.data import Dataset
from svibench.datasets.usps import usps_3v5
from svibench.models.gpc import GPClassification


def test_predictions_at_training_inputs_reproduce_the_posterior_marginals():
    d = usps_3v5(n_per_class=40)
    same = Dataset("t", "classification", d.train, {"X": d.train["X"], "y": d.train["y"]})
    model = GPClassification(same, log_lengthscale=2.5, log_sigma_f=1.0)
    rng = np.random.default_rng(0)
    B = rng.normal(size=(40, 40)) * 0.1
    q = GaussianPosterior(rng.normal(size=40), B @ B.T + 0.05 * np.eye(40))
    from svibench.models.logreg import binary_metrics, predictive_probability
    expected = binary_metrics(predictive_probability(q.mean, np.diag(q.cov)), d.train["y"])
    got = model.evaluate(q, rng)
    np.testing.assert_allclose(got["test_logloss_nats"], expected["test_logloss_nats"], rtol=1e-5)
    # the q-free part of the test marginals is cached: a second q is still its own
    q2 = GaussianPosterior(q.mean + 1.0, 2.0 * q.cov)
    m2, v2 = model.test_marginals(q2.mean, q2.cov)
    np.testing.assert_allclose(m2, q2.mean, atol=1e-4)
    np.testing.assert_allclose(v2, np.diag(q2.cov), rtol=1e-4, atol=1e-6)


def test_cvi_exact_reaches_chols_elbo_on_usps():
    model = GPClassification(usps_3v5(n_per_class=100))
    cvi = CVI(expectations="exact", w=1.0, init_lam1=1e-3, init_lam2=-5e-4)
    cvi.init(model, np.random.default_rng(0))
    for _ in range(150):
        cvi.step()
    chol = Chol(iterations_per_step=400)
    chol.init(model, np.random.default_rng(0))
    chol.step()
    a, b = model.elbo(cvi.posterior()), model.elbo(chol.posterior())
    assert abs(a - b) < 0.01 * abs(b), (a, b)


def test_damped_ncvmp_improves_on_gp_classification_where_undamped_oscillates():
    """NC-VMP has no convergence guarantee: undamped it oscillates on this GP problem, damped it ascends."""
    from svibench.algorithms.ncvmp import NCVMP
    from svibench.datasets.usps import usps_3v5
    from svibench.models.gpc import GPClassification

    model = GPClassification(usps_3v5(n_per_class=40, split=0))

    def elbos(damping):
        alg = NCVMP(damping=damping)
        alg.init(model, np.random.default_rng(0))
        out = []
        for _ in range(20):
            alg.step()
            out.append(model.evaluate(alg.posterior(), np.random.default_rng(0))["elbo"])
        return np.array(out)

    damped, undamped = elbos(0.5), elbos(0.0)
    assert np.all(np.diff(damped) > 0)
    assert np.ptp(undamped[-6:]) > 100  # still jumping after 20 steps


def _inverse_plus(K, W):
    """(K⁻¹ + diag W)⁻¹ = K − K W½ B⁻¹ W½ K with B = I + W½ K W½ (Rasmussen & Williams 2006, §3.4)."""
    sw = np.sqrt(W)
    B = np.eye(len(W)) + sw[:, None] * K * sw[None, :]
    C = np.linalg.solve(np.linalg.cholesky(B), sw[:, None] * K)
    return K - C.T @ C


def _opper_archambeau(model, iterations=50, damping=0.5):
    """The optimal Gaussian q(f) = N(m, (K⁻¹ + Λ)⁻¹) of Opper & Archambeau (2009): m = K ∂f/∂m, Λ = −2 ∂f/∂v.

    An independent reference: a damped fixed point on Λ, and for each Λ two Newton
    steps on the mean, whose objective Σ E[log p] − ½mᵀK⁻¹m is concave.
    """
    K, N = model.K, model.n_train
    lam, m = np.full(N, 1e-3), np.zeros(N)
    for _ in range(iterations):
        v = np.diag(_inverse_plus(K, lam)).copy()
        for _ in range(2):
            e = model.gaussian_expectation(m, v)
            W = -2.0 * e.dv
            m = _inverse_plus(K, W) @ (e.dm + W * m)
        lam = (1.0 - damping) * lam + damping * (-2.0 * model.gaussian_expectation(m, v).dv)
    return GaussianPosterior(m, _inverse_plus(K, lam))


def test_exact_methods_converge_to_the_optimum_on_khan2017_gpc_and_gauss_hermite_50_does_not():
    """khan2017-gpc, split 0, 300 per class (latent sd 16–88): the issue's acceptance test.

    With accurate expectations CVI-exact and NC-VMP end within 0.05% of the optimum
    (108.84) and Chol within 0.1% (all three agree to ~1e-12); with the paper's
    50-node Gauss–Hermite CVI-exact stops ~1.1% above it (110.04).
    """
    from svibench.algorithms.ncvmp import NCVMP

    model = GPClassification(usps_3v5(n_per_class=300, split=0), log_lengthscale=2.5, log_sigma_f=5.0)
    best = -model.elbo(_opper_archambeau(model))
    assert abs(best - 108.84) < 0.01

    def final(alg, steps):
        alg.init(model, np.random.default_rng(0))
        for _ in range(steps):
            alg.step()
        return -model.elbo(alg.posterior())

    sites = {"init_lam1": 1e-3, "init_lam2": -5e-4}
    assert final(CVI(expectations="exact", w=1.0, **sites), 300) < best * (1 + 5e-4)
    assert final(NCVMP(damping=0.5, init_theta1=1e-3, init_theta2=-5e-4), 300) < best * (1 + 5e-4)
    assert final(Chol(iterations_per_step=10), 30) < best * (1 + 1e-3)
    paper = final(CVI(expectations="exact", quadrature="gauss-hermite-50", w=1.0, **sites), 300)
    assert paper > best * (1 + 5e-3)
