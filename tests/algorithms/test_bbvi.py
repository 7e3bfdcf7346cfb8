"""BBVI (score function, Rao–Blackwellised, control variates) and BBVI-reparam against closed forms."""
from __future__ import annotations

import tracemalloc

import numpy as np
import scipy.linalg
import pytest

import svibench.algorithms.bbvi as bbvi_module
from svibench.algorithms.bbvi import BBVI, reparam_gradient, score_gradient
from svibench.algorithms.chol import Chol
from svibench.capabilities import LogJoint, LogJointGradient, missing
from svibench.datasets.bpfa_synthetic import bpfa_synthetic
from svibench.datasets.libsvm import breast_cancer
from svibench.datasets.pmf import pmf_synthetic
from svibench.models.bpfa import BPFA
from svibench.models.gaussian_families import FullGaussian, MeanFieldGaussian
from svibench.models.logreg import BayesianLogisticRegression
from svibench.models.pmf import PoissonGammaMF
from svibench.numerics.transforms import softplus_inv
from svibench.models.score_families import MeanFieldBernoulli, MeanFieldBeta, ProductFamily


class _LinearGaussian:
    """z ~ N(0, I), yₙ ~ N(aₙᵀz, σ²): a log joint whose ELBO under a Gaussian q is closed-form."""

    family_kinds = ("meanfield", "full")

    def __init__(self, rng, N=15, D=3, noise=0.7):
        self.A = rng.normal(size=(N, D))
        self.y = self.A @ rng.normal(size=D) + noise * rng.normal(size=N)
        self.noise, self.D = noise, D

    n_train = property(lambda self: len(self.y))

    def variational_family(self, kind):
        return {"meanfield": MeanFieldGaussian, "full": FullGaussian}[kind](self.D)

    def _lik(self, z):
        r = self.y[None, :] - z @ self.A.T
        return -0.5 * np.sum(r**2, 1) / self.noise**2 - 0.5 * self.n_train * np.log(2 * np.pi * self.noise**2), r

    def _prior(self, z):
        return -0.5 * z**2 - 0.5 * np.log(2 * np.pi)

    def log_joint(self, z, batch=None):
        return self._lik(z)[0] + self._prior(z).sum(1)

    def log_joint_blocks(self, z, kind, batch=None):
        lik = self._lik(z)[0]
        return (lik + self._prior(z).sum(1))[:, None] if kind == "full" else lik[:, None] + self._prior(z)

    def grad_log_joint(self, z, batch=None):
        return self._lik(z)[1] @ self.A / self.noise**2 - z

    def elbo(self, q):
        """E_q[log p(y, z)] + H[q] in closed form."""
        m, S = q.mean, q.cov
        r = self.y - self.A @ m
        lik = -0.5 * (r @ r + np.trace(self.A @ S @ self.A.T)) / self.noise**2 - 0.5 * self.n_train * np.log(2 * np.pi * self.noise**2)
        prior = -0.5 * (m @ m + np.trace(S)) - 0.5 * self.D * np.log(2 * np.pi)
        entropy = 0.5 * np.linalg.slogdet(2 * np.pi * np.e * S)[1]
        return lik + prior + entropy


def _exact_gradient(model, family, phi, h=1e-6):
    f = lambda p: model.elbo(family.posterior(p))  # noqa: E731
    return np.array([(f(phi + h * e) - f(phi - h * e)) / (2 * h) for e in np.eye(len(phi))])


def test_the_toy_model_offers_both_log_joint_capabilities():
    assert not missing(LogJoint, _LinearGaussian)
    assert not missing(LogJointGradient, _LinearGaussian)
    assert not missing(LogJointGradient, BayesianLogisticRegression)


@pytest.mark.parametrize("kind", ["meanfield", "full"])
@pytest.mark.parametrize("estimator", ["score", "score+cv", "reparam", "reparam+stl"])
def test_gradient_estimators_are_unbiased(kind, estimator):
    rng = np.random.default_rng(0)
    model = _LinearGaussian(rng)
    family = model.variational_family(kind)
    phi = family.init_params(rng) + 0.3 * rng.normal(size=family.n_params)
    exact = _exact_gradient(model, family, phi)
    R, S = 4000, 20
    draws = []
    for _ in range(R):
        if estimator.startswith("reparam"):
            draws.append(reparam_gradient(model, family, phi, family.draw_noise(rng, S), None, estimator.endswith("stl")))
        else:
            z = family.sample(phi, rng, S)
            draws.append(score_gradient(model, family, kind, phi, z, None, estimator == "score+cv"))
    draws = np.array(draws)
    mean, se = draws.mean(0), draws.std(0) / np.sqrt(R)
    assert np.all(np.abs(mean - exact) < 4.5 * se + 1e-9), (mean, exact, se)


def test_rao_blackwellisation_and_control_variates_reduce_variance():
    rng = np.random.default_rng(1)
    model = _LinearGaussian(rng)
    family = model.variational_family("meanfield")
    phi = family.init_params(rng)

    def spread(kind, cv):
        g = [score_gradient(model, family, kind, phi, family.sample(phi, rng, 20), None, cv) for _ in range(300)]
        return np.var(g, axis=0).sum()

    class _NoRB(_LinearGaussian):
        def log_joint_blocks(self, z, kind, batch=None):
            return np.repeat(self.log_joint(z)[:, None], self.D, axis=1)

    plain = _NoRB.__new__(_NoRB)
    plain.__dict__.update(model.__dict__)
    # without Rao–Blackwellisation every block sees the whole log joint and the whole log q
    class _NoRBq(MeanFieldGaussian):
        def log_q_blocks(self, phi, z):
            return np.repeat(super().log_q_blocks(phi, z).sum(1, keepdims=True), self.dim, axis=1)

    fam_no_rb = _NoRBq(model.D)
    no_rb = np.var([score_gradient(plain, fam_no_rb, "meanfield", phi, fam_no_rb.sample(phi, rng, 20), None, False)
                    for _ in range(300)], axis=0).sum()
    assert spread("meanfield", False) < no_rb
    assert spread("meanfield", True) < spread("meanfield", False)


@pytest.mark.parametrize("family", [MeanFieldGaussian(4), FullGaussian(4), MeanFieldBeta(3), MeanFieldBernoulli(3),
                                    ProductFamily({"a": MeanFieldBeta(2), "b": MeanFieldBernoulli(3)})])
def test_family_score_is_the_gradient_of_log_q(family):
    rng = np.random.default_rng(2)
    phi = family.init_params(rng) + 0.2 * rng.normal(size=family.n_params)
    z = family.sample(phi, rng, 3)
    h = 1e-6
    fd = np.array([(family.log_q_blocks(phi + h * e, z).sum(1) - family.log_q_blocks(phi - h * e, z).sum(1)) / (2 * h)
                   for e in np.eye(family.n_params)]).T
    np.testing.assert_allclose(family.score(phi, z), fd, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", [MeanFieldGaussian(4), FullGaussian(4)])
def test_family_transform_and_entropy_gradients_match_differences(family):
    rng = np.random.default_rng(2)
    phi = family.init_params(rng) + 0.2 * rng.normal(size=family.n_params)
    h = 1e-6
    eps = family.draw_noise(rng, 3)
    g = rng.normal(size=(3, 4))
    fd_t = np.array([(np.sum(g * family.transform(phi + h * e, eps)) - np.sum(g * family.transform(phi - h * e, eps))) / (2 * h)
                     for e in np.eye(family.n_params)])
    np.testing.assert_allclose(family.transform_vjp(phi, eps, g), fd_t, rtol=1e-5, atol=1e-6)
    fd_h = np.array([(family.entropy(phi + h * e) - family.entropy(phi - h * e)) / (2 * h) for e in np.eye(family.n_params)])
    np.testing.assert_allclose(family.entropy_grad(phi), fd_h, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("family", [MeanFieldGaussian(4), FullGaussian(4)])
def test_grad_log_q_is_the_z_gradient_of_log_q_at_the_draw(family):
    rng = np.random.default_rng(4)
    phi = family.init_params(rng) + 0.3 * rng.normal(size=family.n_params)
    eps = family.draw_noise(rng, 3)
    z, h = family.transform(phi, eps), 1e-6
    fd = np.array([(family.log_q_blocks(phi, z + h * e).sum(1) - family.log_q_blocks(phi, z - h * e).sum(1)) / (2 * h)
                   for e in np.eye(family.dim)]).T
    np.testing.assert_allclose(family.grad_log_q(phi, eps), fd, rtol=1e-6, atol=1e-6)


def test_sticking_the_landing_is_exactly_zero_at_the_exact_posterior():
    """At q = p(z | y) (the toy model's posterior is Gaussian), ∇_z log p(y, z) = ∇_z log q(z):
    the STL gradient vanishes for every draw (Roeder et al. 2017, §3), the standard one does not."""
    rng = np.random.default_rng(5)
    model = _LinearGaussian(rng)
    precision = np.eye(model.D) + model.A.T @ model.A / model.noise**2
    L = np.linalg.cholesky(np.linalg.inv(precision))
    s = np.diag(L)
    family = FullGaussian(model.D)
    phi = np.concatenate([np.linalg.solve(precision, model.A.T @ model.y / model.noise**2), softplus_inv(s),
                          (L / s[:, None])[np.tril_indices(model.D, -1)]])
    np.testing.assert_allclose(family.posterior(phi).cov, np.linalg.inv(precision), rtol=1e-12)
    eps = family.draw_noise(rng, 5)
    np.testing.assert_allclose(reparam_gradient(model, family, phi, eps, None, True), 0.0, atol=1e-10)
    assert np.max(np.abs(reparam_gradient(model, family, phi, eps, None))) > 1e-3


def test_full_rank_posterior_keeps_its_factor_so_a_wide_diagonal_is_no_linalg_error():
    """A scale-tril whose diagonal spans ten decades under a large first column (L_d0 = 1, L_dd =
    1e-10) has an LLᵀ that Cholesky rejects in floating point (as BBVI-reparam's iterates did on
    colon-cancer); the model's KL uses L itself."""
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    D = model.latent_dim
    family = FullGaussian(D)
    s = np.r_[1.0, np.full(D - 1, 1e-10)]
    U = np.eye(D)
    U[1:, 0] = 1.0 / s[1:]
    phi = np.concatenate([np.zeros(D), softplus_inv(s), U[np.tril_indices(D, -1)]])
    q = family.posterior(phi)
    rng = np.random.default_rng(6)
    with pytest.raises(np.linalg.LinAlgError):
        scipy.linalg.cholesky(q.cov, lower=True)
    assert np.isfinite(model.evaluate(q, rng)["neg_elbo"])


def test_logreg_log_joint_gradient_matches_finite_differences():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    rng = np.random.default_rng(3)
    z = rng.normal(size=(2, model.X.shape[1]))
    h = 1e-6
    fd = np.array([(model.log_joint(z + h * e) - model.log_joint(z - h * e)) / (2 * h) for e in np.eye(z.shape[1])]).T
    np.testing.assert_allclose(model.grad_log_joint(z), fd, rtol=1e-5, atol=1e-5)
    batch = np.arange(50)
    assert np.isfinite(model.log_joint(z, batch)).all()
    # minibatch log joints are unbiased for the full one
    est = np.mean([model.log_joint(z, rng.choice(model.n_train, 50, replace=False)) for _ in range(3000)], axis=0)
    np.testing.assert_allclose(est, model.log_joint(z), rtol=0.02)


def test_bbvi_reparam_reaches_chols_elbo_within_one_percent():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    chol = Chol(iterations_per_step=500)
    chol.init(model, np.random.default_rng(0))
    chol.step()
    ref = model.elbo(chol.posterior())
    alg = BBVI(estimator="reparam", optimizer="adam", learning_rate=0.01, n_samples=10, family="full")
    alg.init(model, np.random.default_rng(0))
    for _ in range(3000):
        alg.step()
    assert abs(model.elbo(alg.posterior()) - ref) < 0.01 * abs(ref)


def test_bbvi_score_function_improves_the_elbo_and_declares_its_needs():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    alg = BBVI(family="meanfield", n_samples=50)
    alg.init(model, np.random.default_rng(0))
    start = model.elbo(alg.posterior())
    for _ in range(300):
        alg.step()
    assert model.elbo(alg.posterior()) > start + 0.5 * abs(start)
    assert BBVI.incompatibility(BayesianLogisticRegression, {"estimator": "reparam"}) is None
    assert "flows" in BBVI.incompatibility(BayesianLogisticRegression, {"family": "flows"})


def test_gradient_memory_bound_is_a_lower_bound_and_a_problem_too_large_is_refused_up_front(monkeypatch):
    """``gradient_bytes`` never exceeds what a gradient really allocates (tracemalloc peak), and a
    problem whose bound passes half the machine's memory gets a MemoryError that names the fix
    at ``init`` instead of an out-of-memory kill mid-run."""
    bpfa = BPFA(bpfa_synthetic(n=100, dim=8, features=6, seed=0), features=6, init_rows=20, init_sweeps=1)
    pmf = PoissonGammaMF(pmf_synthetic(rows=30, cols=40, factors=3, seed=0), n_factors=3)
    for model, estimator, optimizer in ((bpfa, "score", "adagrad"), (pmf, "score", "adagrad"), (pmf, "reparam", "adam")):
        alg = BBVI(n_samples=40, estimator=estimator, optimizer=optimizer)
        alg.init(model, np.random.default_rng(0))
        alg.gradient(None)  # the first call may compile numba kernels (Gamma draws): not the gradient's memory
        tracemalloc.start()
        alg.gradient(None)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        bound = bbvi_module.gradient_bytes(alg.q_, 40, estimator)
        assert 0.1 * peak < bound <= peak, (model.name, estimator, bound, peak)
    monkeypatch.setattr(bbvi_module, "physical_memory", lambda: 2 * bbvi_module.gradient_bytes(
        bpfa.variational_family(), 100, "score") - 2)
    with pytest.raises(MemoryError, match="n_samples=100 on this bpfa problem .* use fewer samples or a smaller problem"):
        BBVI(n_samples=100).init(bpfa, np.random.default_rng(0))
    BBVI(n_samples=99).init(bpfa, np.random.default_rng(0))  # just under half: accepted



@pytest.mark.parametrize("family, stick_the_landing", [("meanfield", False), ("meanfield", True), ("full", False),
                                                      ("full", True), ("gamma", False)])  # gamma: no grad_log_q
def test_reparam_gradient_in_chunks_of_draws_is_the_gradient_of_all_draws_at_once(monkeypatch, family,
                                                                                  stick_the_landing):
    """Σ_s (∂z_s/∂φ)ᵀ ∇_z log p(z_s) taken two draws at a time (the last draw alone) is the sum over all at once."""
    if family == "gamma":
        model, kind = PoissonGammaMF(pmf_synthetic(rows=30, cols=40, factors=3, seed=0), n_factors=3), "meanfield"
    else:
        model, kind = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0), family
    q = model.variational_family(kind)
    rng = np.random.default_rng(0)
    phi = q.init_params(rng) if family == "gamma" else 0.1 * rng.standard_normal(q.n_params)
    eps = q.draw_noise(rng, 7)
    whole = reparam_gradient(model, q, phi, eps, None, stick_the_landing)
    monkeypatch.setattr(bbvi_module, "REPARAM_CHUNK_BYTES", 8 * eps.shape[1] * 2)  # 2 draws per chunk: 4 chunks
    assert bbvi_module._reparam_chunk(eps.shape[1]) == 2
    chunked = reparam_gradient(model, q, phi, eps, None, stick_the_landing)
    np.testing.assert_allclose(chunked, whole, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("family", ["meanfield", "full", "gamma"])
def test_a_gradient_drawing_its_noise_in_chunks_draws_and_computes_what_one_draw_of_all_would(monkeypatch, family):
    """BBVI's gradient draws its base draws a chunk at a time (noise_chunks): for the Gaussian and gamma families
    the same numbers as one draw_noise of all, the same gradient bit for bit, and the generator left in the same
    state."""
    if family == "gamma":
        model, kind = PoissonGammaMF(pmf_synthetic(rows=30, cols=40, factors=3, seed=0), n_factors=3), "meanfield"
    else:
        model, kind = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0), family
    alg = BBVI(estimator="reparam", n_samples=7, family=kind)
    alg.init(model, np.random.default_rng(0))
    alg.phi_ = alg.phi_ + 0.1 * np.random.default_rng(1).standard_normal(alg.phi_.shape)
    monkeypatch.setattr(bbvi_module, "REPARAM_CHUNK_BYTES", 8 * alg.q_.dim * 2)  # 2 draws per chunk: 4 chunks
    alg.rng_, rng = np.random.default_rng(3), np.random.default_rng(3)
    whole = reparam_gradient(model, alg.q_, alg.phi_, alg.q_.draw_noise(rng, 7), None)
    sizes, draw_noise = [], alg.q_.draw_noise
    monkeypatch.setattr(alg.q_, "draw_noise", lambda rng_, size: sizes.append(size) or draw_noise(rng_, size))
    chunked = alg.gradient(None)
    assert sizes == [2, 2, 2, 1]  # never all 7 at once
    np.testing.assert_array_equal(chunked, whole)
    assert alg.rng_.bit_generator.state == rng.bit_generator.state


_STUDY = """
[study]
name = "t"
seeds = [0]

[budget]
iterations = 5

[[problem]]
model = "logreg"
dataset = "breast-cancer"

[[algorithm]]
name = "{name}"
params = {params}
"""


@pytest.mark.parametrize("name, params, message", [
    ("bbvi", '{ optimizer = "nesterov" }', "unknown optimizer 'nesterov': use one of adadelta, adagrad, adam, rmsprop, sgd"),
    ("bbvi-reparam", '{ optimizer = "Adam" }', "unknown optimizer 'Adam': use one of"),
    ("bbvi-reparam", "{ learning_rate = 0.0 }", "learning_rate must be > 0, got 0.0"),
    ("bbvi", "{ learning_rate = -0.5 }", "learning_rate must be > 0, got -0.5"),
    ("bbvi", "{ stick_the_landing = true }", "stick_the_landing needs estimator = 'reparam'"),
    ("gamma-sgvb", "{ step_size = 0.0 }", "step_size > 0"),
])
def test_bad_optimizer_settings_stop_the_study_at_load_in_one_line(tmp_path, name, params, message):
    from svibench.study import StudyError, load_study

    path = tmp_path / "study.toml"
    path.write_text(_STUDY.format(name=name, params=params))
    with pytest.raises(StudyError) as info:
        load_study(path)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_bbvi_reparam_defaults_to_adam_with_one_draw_and_score_to_adagrad_with_100():
    reparam, score = BBVI(estimator="reparam"), BBVI()
    assert (reparam.optimizer_name, reparam.draws) == ("adam", 1)
    assert (score.optimizer_name, score.draws) == ("adagrad", 100)
