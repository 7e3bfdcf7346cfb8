"""The Gaussian mixture's Gibbs sampler and label alignment (models.gmm_chain), against independent truths:
the closed-form Normal–Gamma posterior of a one-component mixture, responsibilities computed by scipy, and
permutations that alignment must undo."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import softmax
from scipy.stats import norm

from models.gmm import GaussianMixture
from models.gmm_chain import MixtureChain
from svibench.capabilities import ConjugatePosterior
from svibench.data import Dataset
from svibench.expfam import DirichletNatural
from svibench.expfam.normal_gamma import NormalGammaNatural
from svibench.reference.artifact import Reference
from svibench.reference.attach import Scorer
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

PRIOR = {"alpha0": 1.0, "m0": 0.5, "kappa0": 0.3, "a0": 2.0, "b0": 1.5}
QUICKSTART = ProblemSpec("gmm/synthetic", "gmm", "gmm-synthetic", {"components": 5},
                         {"n": 5000, "n_test": 1000, "dim": 2, "components": 5})


def _mixture(X: np.ndarray, K: int) -> GaussianMixture:
    return GaussianMixture(Dataset("toy", "density", {"X": X}, {"X": X[:5]}), components=K, **PRIOR)


def _normal_gamma_posterior(x: np.ndarray) -> tuple[np.ndarray, ...]:
    """Murphy (2007), eqs. 86–89, per dimension: (m_n, κ_n, a_n, b_n)."""
    n, xbar = len(x), x.mean(0)
    kappa = PRIOR["kappa0"] + n
    m = (PRIOR["kappa0"] * PRIOR["m0"] + n * xbar) / kappa
    a = PRIOR["a0"] + n / 2
    b = PRIOR["b0"] + 0.5 * ((x - xbar) ** 2).sum(0) + PRIOR["kappa0"] * n * (xbar - PRIOR["m0"]) ** 2 / (2 * kappa)
    return m, kappa, a, b


def test_one_component_chain_draws_the_closed_form_normal_gamma_posterior():
    X = np.random.default_rng(1).normal([1.0, -2.0], [0.7, 2.0], size=(40, 2))
    model, rng = _mixture(X, 1), np.random.default_rng(2)
    state, draws = model.chain_init(rng, "random"), []
    for _ in range(4000):
        state = model.chain_sweep(state, rng)
        draws.append(np.concatenate([state.mu[0], state.tau[0]]))
    draws = np.array(draws)  # with K = 1 every sweep is an independent posterior draw
    m, kappa, a, b = _normal_gamma_posterior(X)
    exact_mean = np.concatenate([m, a / b])
    exact_sd = np.sqrt(np.concatenate([b / (kappa * (a - 1)), a / b**2]))
    mcse = draws.std(0) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(0) - exact_mean) < 4 * mcse), (draws.mean(0), exact_mean, mcse)
    assert np.allclose(draws.std(0), exact_sd, rtol=0.08)
    q = model.latent_moments(state)  # Rao–Blackwellised: exactly the posterior of μ, and π = 1
    assert np.allclose(q.mean, np.concatenate([m, [1.0]])) and np.allclose(np.diag(q.cov)[:2], exact_sd[:2] ** 2)


def test_assignments_are_drawn_with_the_responsibilities_frequencies():
    X = np.random.default_rng(3).normal(0.0, 2.0, size=(6, 2))
    model = _mixture(X, 3)
    pi, mu, tau = np.array([0.5, 0.3, 0.2]), np.array([[-1.0, 0.0], [1.0, 1.0], [0.0, -2.0]]), np.full((3, 2), 0.8)
    logp = np.log(pi) + norm.logpdf(X[:, None, :], mu, 1 / np.sqrt(tau)).sum(-1)
    resp, rng, R = softmax(logp, axis=1), np.random.default_rng(4), 4000
    counts = sum(np.eye(3)[model.chain_sweep(MixtureChain(np.zeros(6, int), pi, mu, tau), rng).z] for _ in range(R))
    assert np.all(np.abs(counts / R - resp) < 4 * np.sqrt(resp * (1 - resp) / R) + 1e-12)


def test_align_draws_undoes_each_draws_permutation():
    rng = np.random.default_rng(5)
    K, D, S = 4, 2, 300
    centres, weights = rng.normal(0, 5, size=(K, D)), np.array([0.1, 0.2, 0.3, 0.4])
    mu = centres + 0.1 * rng.standard_normal((S, K, D))
    draws = np.concatenate([mu.reshape(S, -1), np.tile(weights, (S, 1))], axis=1)
    model = _mixture(rng.normal(size=(50, D)), K)
    perms = np.array([np.arange(K)] + [rng.permutation(K) for _ in range(S - 1)])
    shuffled = np.concatenate([np.take_along_axis(mu, perms[:, :, None], 1).reshape(S, -1),
                               np.take_along_axis(np.tile(weights, (S, 1)), perms, 1)], axis=1)
    assert np.array_equal(model.align_draws(shuffled), draws)


def _permuted(lam, perm):
    m, kappa, a, b = lam["theta"].params()
    return {"pi": DirichletNatural.from_concentration(lam["pi"].concentration()[perm]),
            "theta": NormalGammaNatural.from_params(m[perm], kappa[perm], a[perm], b[perm])}


def test_a_q_with_permuted_components_scores_exactly_as_the_unpermuted_one():
    rng = np.random.default_rng(6)
    model = _mixture(rng.normal(size=(200, 2)) + rng.choice([-4, 0, 4], size=(200, 1)), 3)
    lam = model.init_globals(rng)
    ref_mean = model.latent_moments(ConjugatePosterior(_permuted(lam, np.array([2, 0, 1])))).mean
    reference = Reference({"mean": ref_mean + 0.05, "cov": np.eye(len(ref_mean)) * 0.01}, {})
    scores = [Scorer(reference)(model, ConjugatePosterior(_permuted(lam, p))) for p in ([0, 1, 2], [1, 2, 0], [2, 1, 0])]
    assert scores[0] == scores[1] == scores[2]
    assert scores[0]["ref_mean_error"] == pytest.approx(0.5)  # matched: every coordinate 0.05 / 0.1 off


def test_vmp_at_convergence_is_within_a_fifth_of_a_posterior_sd_of_the_gibbs_reference():
    """The committed reference of the quickstart's mixture (references/); its components are well separated
    enough that mean-field VB's means are right while its spreads are too small (Bishop 2006, §10.1.2)."""
    ds = execute(RunSpec("t", QUICKSTART, "vmp", "vmp", {}, 0, Budget(iterations=200), Checkpoints(count=2)))
    assert ds.attrs["status"] == "ok", ds.attrs["message"]
    assert "gmm-gmm-synthetic" in ds.attrs["reference"]
    assert ds["ref_mean_error"].values[0] > 5 and ds["ref_mean_error"].values[-1] < 0.2
    assert ds["ref_log_sd_ratio"].values[-1] < -0.1
