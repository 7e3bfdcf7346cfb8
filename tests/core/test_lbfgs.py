"""The resumable L-BFGS and Chol built on it: one run however it is cut into steps, and the
optimum scipy's L-BFGS-B finds on the same objective."""
from __future__ import annotations

import numpy as np
import scipy.optimize

from svibench.algorithms.chol import Chol
from svibench.datasets.libsvm import breast_cancer
from svibench.numerics.lbfgs import LBFGS
from svibench.models.logreg import BayesianLogisticRegression


def rosenbrock(x):
    return float(scipy.optimize.rosen(x)), scipy.optimize.rosen_der(x)


def test_steps_of_k_iterations_are_one_run_of_n_times_k():
    x0 = np.array([-1.2, 1.0, -0.5, 0.8])
    one = LBFGS(rosenbrock, x0, memory=5)
    one.iterate(24)
    cut = LBFGS(rosenbrock, x0, memory=5)
    for _ in range(6):
        cut.iterate(4)
    np.testing.assert_array_equal(one.x, cut.x)
    assert one.n_evals == cut.n_evals


def test_it_reaches_the_minimum_of_rosenbrock_as_scipy_does():
    x0 = np.array([-1.2, 1.0, -0.5, 0.8, 1.3])
    run = LBFGS(rosenbrock, x0, memory=10)
    run.iterate(500)
    ref = scipy.optimize.minimize(rosenbrock, x0, jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 0})
    np.testing.assert_allclose(run.x, np.ones(5), atol=1e-7)
    np.testing.assert_allclose(run.x, ref.x, atol=1e-6)
    assert run.converged


def test_the_two_loop_direction_is_the_inverse_bfgs_hessian_times_the_gradient():
    """On a quadratic after D exact-line-search-free iterations the direction equals −H∇f built
    from the same pairs by the BFGS inverse update (N&W eq. 6.17), formed densely."""
    A = np.array([[3.0, 1.0, 0.0], [1.0, 2.0, 0.5], [0.0, 0.5, 1.0]])
    run = LBFGS(lambda x: (0.5 * x @ A @ x, A @ x), np.array([1.0, -2.0, 0.5]), memory=10)
    run.iterate(2)
    s, y, _ = run.pairs[-1]
    H = (s @ y) / (y @ y) * np.eye(3)
    for s, y, rho in run.pairs:
        V = np.eye(3) - rho * np.outer(y, s)
        H = V.T @ H @ V + rho * np.outer(s, s)
    np.testing.assert_allclose(run.direction(), -H @ run.g, rtol=1e-10)


def _chol_after(model, iterations_per_step, steps):
    alg = Chol(iterations_per_step=iterations_per_step)
    alg.init(model, np.random.default_rng(0))
    for _ in range(steps):
        alg.step()
    return alg


def test_chol_is_one_lbfgs_run_and_reaches_scipys_optimum():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    steps, once = _chol_after(model, 3, 10), _chol_after(model, 30, 1)
    np.testing.assert_array_equal(steps.lbfgs_.x, once.lbfgs_.x)

    once.lbfgs_.iterate(3000)
    ref = scipy.optimize.minimize(once.negative_elbo, steps.lbfgs_.x, jac=True,
                                  method="L-BFGS-B", options={"maxiter": 20000, "gtol": 1e-10, "ftol": 0})
    assert once.lbfgs_.f <= ref.fun + 1e-8 * abs(ref.fun)
    np.testing.assert_allclose(-model.elbo(once.posterior()), ref.fun, rtol=1e-9)
