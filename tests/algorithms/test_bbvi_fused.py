"""BBVI's fused, compiled reparameterised steps (algorithms/bbvi_fused.py) against the plain numpy step."""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from svibench.algorithm import Diverged
from svibench.algorithms.bbvi import BBVI, reparam_gradient
from svibench.algorithms.bbvi_fused import adam_update
from svibench.capabilities import CompiledLogJointGradient
from svibench.datasets.libsvm import a1a, breast_cancer
from svibench.models.logreg import BayesianLogisticRegression
from svibench.numerics.optim import Adam
from svibench.registry import get_registry
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, RunSpec
from svibench.testing import small_problems

RTOL = 1e-12


@pytest.fixture(scope="module")
def model():
    return BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)


def test_compiled_gradient_is_the_numpy_gradient_and_the_finite_difference(model):
    assert isinstance(model, CompiledLogJointGradient)
    density = model.compiled_grad_log_joint()
    rng = np.random.default_rng(0)
    for z in rng.normal(scale=[[0.1], [3.0]], size=(2, model.latent_dim)):  # small and saturating σ(η)
        out = np.empty_like(z)
        density.kernel(z, density.data, out)
        np.testing.assert_allclose(out, model.grad_log_joint(z[None])[0], rtol=RTOL, atol=RTOL * np.abs(out).max())
        h = 1e-6
        fd = [(model.log_joint((z + h * e)[None]) - model.log_joint((z - h * e)[None]))[0] / (2 * h)
              for e in np.eye(len(z))]
        np.testing.assert_allclose(out, fd, rtol=1e-5, atol=1e-5)


def test_a_sparse_design_offers_no_compiled_gradient_so_bbvi_steps_plainly():
    sparse = BayesianLogisticRegression(a1a(), delta=2.8)
    assert sparse.compiled_grad_log_joint() is None
    alg = BBVI(estimator="reparam", family="full")
    alg.init(sparse, np.random.default_rng(0))
    assert not alg.fused


@pytest.mark.parametrize("family", ["full", "meanfield"])
def test_compiled_family_gradient_is_reparam_gradient(model, family):
    q = model.variational_family(family)
    rng = np.random.default_rng(1)
    phi = rng.normal(scale=0.3, size=q.n_params)
    eps = q.draw_noise(rng, 3)
    density = model.compiled_grad_log_joint()
    out = np.empty_like(phi)
    q.compiled_reparam_gradient()(phi, eps, density.kernel, density.data, out)
    expected = reparam_gradient(model, q, phi, eps, None)
    np.testing.assert_allclose(out, expected, rtol=RTOL, atol=RTOL * np.abs(expected).max())


def test_compiled_adam_is_adam():
    rng = np.random.default_rng(2)
    opt, phi = Adam(0.01), rng.normal(size=7)
    state, m1, m2, ours = opt.init(phi), np.zeros(7), np.zeros(7), phi.copy()
    for t in range(1, 6):
        g = rng.normal(size=7)
        delta, state = opt.update(g, state)
        phi = phi + delta
        adam_update(g, m1, m2, t, opt.lr, opt.b1, opt.b2, opt.eps, ours)
        np.testing.assert_allclose(ours, phi, rtol=RTOL)
    np.testing.assert_allclose(m1, state[1], rtol=RTOL)
    np.testing.assert_allclose(m2, state[2], rtol=RTOL)


def _started(model, **params):
    alg = BBVI(estimator="reparam", **params)
    alg.check_params()
    alg.init(model, np.random.default_rng(0))
    return alg


@pytest.mark.parametrize("family, n_samples", [("full", None), ("full", 3), ("meanfield", 2)])
def test_advance_is_n_single_steps(model, family, n_samples):
    """The same draws in the same order: φ, Adam's state and the generator after advance(n) are those
    after n steps, and the two interleave (a fused chunk after plain steps, as in the runner)."""
    single, fused = _started(model, family=family, n_samples=n_samples), _started(model, family=family, n_samples=n_samples)
    assert fused.fused
    for _ in range(301):
        single.step()
    fused.step()
    assert fused.advance(300) == 300 * model.n_train
    np.testing.assert_allclose(fused.phi_, single.phi_, rtol=RTOL, atol=RTOL * np.abs(single.phi_).max())
    assert fused.t_ == single.t_ == 301 and fused.state_[0] == single.state_[0] == 301
    for ours, theirs in zip(fused.state_[1:], single.state_[1:]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=RTOL * np.abs(theirs).max())
    assert fused.rng_.random() == single.rng_.random()
    assert not np.allclose(single.phi_, _started(model, family=family).phi_)  # it moved


@pytest.mark.parametrize("params", [{"stick_the_landing": True}, {"optimizer": "adagrad"}, {"batch_size": 50}])
def test_settings_without_a_compiled_path_step_plainly(model, params):
    alg = _started(model, family="full", **params)
    assert not alg.fused
    assert _started(model, family="full", batch_size=model.n_train).fused  # a batch of all data is all data
    assert not BBVI().fused  # before init


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the plain step overflowing on its way to non-finite φ
def test_divergence_stops_at_the_step_a_single_step_would(model):
    def diverged_at(alg, advance):
        with pytest.raises(Diverged, match=r"at step (\d+)") as info:
            alg.advance(50) if advance else [alg.step() for _ in range(50)]
        return alg.t_, info.value

    fused, single = _started(model, family="full", learning_rate=1e300), _started(model, family="full", learning_rate=1e300)
    (t_fused, _), (t_single, _) = diverged_at(fused, True), diverged_at(single, False)
    assert t_fused == t_single < 50


def test_a_copied_or_pickled_fused_bbvi_continues_the_same_trajectory(model):
    alg = _started(model, family="full")
    alg.advance(10)
    twins = [copy.deepcopy(alg), pickle.loads(pickle.dumps(alg))]
    alg.advance(20)
    for twin in twins:
        assert twin.fused
        twin.advance(20)
        np.testing.assert_array_equal(twin.phi_, alg.phi_)


def _spec(params):
    problem = small_problems(get_registry())[0]["logreg"].spec("bbvi-fused-test/logreg")
    return RunSpec("test", problem, "bbvi-reparam", "BBVI-reparam", params, 0, Budget(iterations=200), Checkpoints(count=8))


def test_runner_fused_trajectory_is_the_single_step_one(monkeypatch):
    """The runner hands BBVI chunks up to each checkpoint; the trajectory is that of single steps."""
    params = {"family": "full", "learning_rate": 0.02}
    fused = execute(_spec(params))
    monkeypatch.setattr(BBVI, "fused", False)
    single = execute(_spec(params))
    assert fused.attrs["status"] == single.attrs["status"] == "ok"
    np.testing.assert_array_equal(fused["iteration"].values, single["iteration"].values)
    np.testing.assert_allclose(fused["elbo"].values, single["elbo"].values, rtol=RTOL)
    assert not np.allclose(fused["elbo"].values[0], fused["elbo"].values[-1])
