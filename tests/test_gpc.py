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
    from svibench.models.logreg import binary_metrics
    expected = binary_metrics(q.mean, np.diag(q.cov), d.train["y"])
    got = model.evaluate(q, rng)
    np.testing.assert_allclose(got["test_logloss_nats"], expected["test_logloss_nats"], rtol=1e-5)


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
