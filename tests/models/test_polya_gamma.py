"""Pólya-Gamma augmentation of logreg and gpc (models/polya_gamma.py), against independent truths:
the PG distribution's closed-form moments, Monte Carlo, direct maximisation of the Jaakkola–Jordan
bound, and quadrature of the exact posterior."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.optimize
from scipy.special import log_expit

from svibench.algorithms.gibbs import GibbsSampler
from svibench.algorithms.svi import SVI, VMP
from svibench.capabilities import LocalApprox
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.data import Dataset
from svibench.datasets.gamma_factor import gamma_factor_synthetic
from svibench.errors import IncompatibleModel
from svibench.models.gamma_factor import GammaFactor
from svibench.models.gpc import GPClassification
from svibench.models.logreg import BayesianLogisticRegression
from svibench.models.polya_gamma import LatentView, PolyaGammaChain, pg_draw, pg_mean
from svibench.registry import get_registry


def pg_variance(c: np.ndarray) -> np.ndarray:
    """Var[ω], ω ~ PG(1, c): (sinh c − c)/(4c³cosh²(c/2)) (Polson et al. 2013, from the Laplace transform)."""
    return (np.sinh(c) - c) / (4.0 * c**3 * np.cosh(c / 2.0) ** 2)


def classification(n: int, dim: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * n, dim))
    y = (rng.random(2 * n) < 1.0 / (1.0 + np.exp(-X @ np.linspace(1.5, -1.0, dim) - 0.5))).astype(float)
    return Dataset("tiny", "classification", {"X": X[:n], "y": y[:n]}, {"X": X[n:], "y": y[n:]})


def tiny_logreg(n: int = 30, dim: int = 2) -> BayesianLogisticRegression:
    return BayesianLogisticRegression(classification(n, dim, seed=1), delta=1.0, bias_precision=1.0)


def tiny_gpc(n: int = 8) -> GPClassification:
    return GPClassification(classification(n, 2, seed=2), log_lengthscale=0.0, log_sigma_f=0.5)


# -- the PG distribution
@pytest.mark.parametrize("c", [0.0, 0.5, 2.0, 10.0, 200.0, 500.0])
def test_pg_draws_have_the_closed_form_mean_and_variance(c):
    """Up to c = 500: polyagamma 2.0.2's default (Devroye) sampler draws PG(1, c) with 64 times the mean at
    c = 200 (exact up to c ≈ 160), which GP classification's |f| reaches (issue 30)."""
    draws = pg_draw(1.0, np.full(200_000, c), np.random.default_rng(0))
    mean, var = pg_mean(1.0, c), (1.0 / 24.0 if c == 0 else pg_variance(c))  # the variance's limit at 0 is 1/24
    n = len(draws)
    assert abs(draws.mean() - mean) < 5 * np.sqrt(var / n)
    fourth = np.mean((draws - draws.mean()) ** 4)
    assert abs(draws.var() - var) < 5 * np.sqrt((fourth - var**2) / n)


def test_pg_mean_is_smooth_through_its_small_c_series():
    c = np.array([0.0, 0.99e-4, 1.01e-4, 1e-3, 1.0, 50.0, 1e4])
    direct = np.tanh(c[1:] / 2) / (2 * c[1:])
    assert pg_mean(1.0, 0.0) == 0.25
    np.testing.assert_allclose(pg_mean(1.0, c[1:]), direct, rtol=1e-14)
    np.testing.assert_allclose(pg_mean(2.0, -c[1:]), 2 * direct, rtol=1e-14)  # even in c, linear in b


def test_pg_draws_come_from_the_generator_passed_in():
    a = pg_draw(1.0, np.arange(5.0), np.random.default_rng(3))
    b = pg_draw(1.0, np.arange(5.0), np.random.default_rng(3))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, pg_draw(1.0, np.arange(5.0), np.random.default_rng(4)))


@pytest.mark.parametrize("b", [0.0, -1.0])
def test_a_nonpositive_pg_shape_is_a_one_line_error(b):
    with pytest.raises(ValueError, match=r"shape b must be > 0.*got") as err:
        pg_draw(b, np.zeros(3), np.random.default_rng(0))
    assert "\n" not in str(err.value)


# -- the local step
def test_mean_field_local_step_matches_monte_carlo_of_exact_draws():
    """gpc's η₂ is −½ diag(E[ωₙ]): the mf kind's closed form against the gibbs kind's average of exact draws."""
    model, samples = tiny_gpc(), 40_000
    rng = np.random.default_rng(0)
    view = LatentView(rng.normal(size=model.n_train), np.diag(rng.uniform(0.1, 4.0, model.n_train)))
    everyone = np.arange(model.n_train)
    exact = model.local_statistics(view, everyone, LocalApprox("mf"), rng)["z"]
    mc = model.local_statistics(view, everyone, LocalApprox("gibbs", samples=samples), rng)["z"]
    np.testing.assert_array_equal(exact.eta1, mc.eta1)  # κ does not depend on ω
    c = np.sqrt(view.mean**2 + np.diag(view.cov))
    se = np.sqrt(pg_variance(c) / samples)
    assert np.all(np.abs(np.diag(mc.eta2) - np.diag(exact.eta2)) < 5 * 0.5 * se)


def test_local_kind_the_model_lacks_is_a_one_line_error_and_an_incompatible_pair():
    model = tiny_logreg()
    with pytest.raises(ValueError, match="Pólya-Gamma local kinds .* not 'titsias'") as err:
        model.local_statistics(model.expected_view(model.prior_natural()), np.arange(3), LocalApprox("titsias"),
                               np.random.default_rng(0))
    assert "\n" not in str(err.value)
    registry = get_registry()
    for model_name in ("logreg", "gpc"):
        reason = registry.algorithm("titsias-svi").incompatibility(registry.models[model_name][0])
        assert reason == f"{model_name} offers local approximations mf, gibbs, not 'titsias'"
        assert registry.algorithm("gibbs").incompatibility(registry.models[model_name][0]) is None


@pytest.mark.parametrize("algorithm", [VMP(), SVI(batch_size=10), GibbsSampler(), SVI(local="titsias")])
def test_an_augmentation_requested_on_a_model_without_one_is_a_one_line_error(algorithm):
    """The conjugate family and the sampler run on a model's augmentation; started directly (not through a sweep,
    which skips the pair) on a model with none — gamma-factor — or asking for a local kind it lacks, they refuse
    before any work, in one line that names the algorithm, the model and what is missing."""
    model = tiny_logreg() if algorithm.get_params().get("local") == "titsias" else GammaFactor(
        gamma_factor_synthetic(n=50, n_test=10, dim=4, factors=2), n_factors=2)
    with pytest.raises(IncompatibleModel, match=rf"cannot run on {model.name}: .*(does not offer|not 'titsias')") as err:
        algorithm.init(model, np.random.default_rng(0))
    assert "\n" not in str(err.value)


# -- SVI / VMP
@pytest.mark.parametrize("make", [tiny_logreg, tiny_gpc])
def test_full_batch_svi_with_rho_one_is_vmp_step_by_step(make):
    model = make()
    svi, vmp = SVI(batch_size=model.n_train, rho=1.0), VMP()
    svi.init(model, np.random.default_rng(0))
    vmp.init(model, np.random.default_rng(0))
    for _ in range(5):
        svi.step(), vmp.step()
        np.testing.assert_allclose(svi.lam_["z"].eta1, vmp.lam_["z"].eta1, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(svi.lam_["z"].eta2, vmp.lam_["z"].eta2, rtol=1e-12, atol=1e-12)


def _maximise_jj_bound(model) -> GaussianPosterior:
    """argmax over q(z) = N(m, LLᵀ) of the Jaakkola–Jordan bound, by BFGS (an independent route to the optimum)."""
    d = model.latent_dim
    rows, cols = np.tril_indices(d)

    def unpack(x):
        L = np.zeros((d, d))
        L[rows, cols] = x[d:]
        L[np.diag_indices(d)] = np.exp(np.diag(L))
        return GaussianPosterior(x[:d], L @ L.T)

    x0 = np.zeros(d + len(rows))
    res = scipy.optimize.minimize(lambda x: -model.elbo_metrics(unpack(x))["elbo_augmented"], x0, method="BFGS",
                                  options={"gtol": 1e-9, "maxiter": 5000})
    return unpack(res.x)


@pytest.mark.parametrize("make", [lambda: tiny_logreg(n=30, dim=2), lambda: tiny_gpc(n=5)])
def test_vmp_fixed_point_is_the_maximiser_of_the_jaakkola_jordan_bound(make):
    model = make()
    vmp = VMP()
    vmp.init(model, np.random.default_rng(0))
    for _ in range(300):
        vmp.step()
    q, best = model.gaussian(vmp.posterior()), _maximise_jj_bound(model)
    np.testing.assert_allclose(q.mean, best.mean, atol=1e-4)
    np.testing.assert_allclose(q.cov, best.cov, atol=1e-4)
    bound = model.elbo_metrics(q)
    assert bound["elbo_augmented"] >= model.elbo_metrics(best)["elbo_augmented"] - 1e-8
    assert bound["elbo_augmented"] < bound["elbo"]  # the JJ bound lies below the exact ELBO


# -- the Gibbs sampler
def _quadrature_moments(model: BayesianLogisticRegression, half_width: float = 6.0, nodes: int = 601):
    """Posterior mean and second moment of the 2-D z by a dense grid (the posterior is ~N(·, <1))."""
    g = np.linspace(-half_width, half_width, nodes)
    Z = np.stack(np.meshgrid(g, g, indexing="ij"), -1).reshape(-1, 2)
    s = 2 * model.y - 1
    logp = log_expit(s[:, None] * (model.X @ Z.T)).sum(0) - 0.5 * (Z**2 * model.precision).sum(1)
    w = np.exp(logp - logp.max())
    w /= w.sum()
    return w @ Z, (Z * w[:, None]).T @ Z


def _batch_means_se(values: np.ndarray, batches: int = 25) -> np.ndarray:
    """Standard error of a chain's average from the spread of its batch means."""
    means = values[: len(values) // batches * batches].reshape(batches, -1, *values.shape[1:]).mean(1)
    return means.std(0, ddof=1) / np.sqrt(batches)


def test_gibbs_posterior_moments_agree_with_quadrature_within_monte_carlo_error():
    model = tiny_logreg(n=15, dim=1)  # z = (bias, weight)
    mean, second = _quadrature_moments(model)
    sampler = GibbsSampler()
    sampler.init(model, np.random.default_rng(0))
    draws = []
    for _ in range(12_000):
        sampler.step()
        draws.append(sampler.posterior().z.copy())
    z = np.array(draws[2000:])
    outer = z[:, :, None] * z[:, None, :]
    assert np.all(np.abs(z.mean(0) - mean) < 4 * _batch_means_se(z))
    assert np.all(np.abs(outer.mean(0) - second) < 4 * _batch_means_se(outer))
    # what evaluation sees: the Rao-Blackwellised moments of z | ω over the chain's later sweeps
    q = model.gaussian(sampler.posterior())
    assert np.all(np.abs(q.mean - mean) < 4 * _batch_means_se(z))
    assert np.all(np.abs(q.cov + np.outer(q.mean, q.mean) - second) < 4 * _batch_means_se(outer))


def test_every_family_is_scored_by_the_same_exact_elbo():
    """λ, the chain and a GaussianPosterior with the same moments give the same metrics."""
    model = tiny_logreg()
    vmp = VMP()
    vmp.init(model, np.random.default_rng(0))
    vmp.step()
    rng = np.random.default_rng(0)
    q = GaussianPosterior(*vmp.lam_["z"].mean_cov())
    assert model.evaluate(vmp.posterior(), rng) == pytest.approx(model.evaluate(q, rng), rel=1e-13)  # λ's factor
    assert model.evaluate(q, rng)["elbo"] == pytest.approx(model.elbo(q), rel=1e-14)


def test_gpc_draws_z_given_omega_without_k_inverse_from_the_conditional():
    """GP classification draws f | ω in the B = I + W^½KW^½ form by Matheron's rule (models.gpc); on a
    well-conditioned K, where the natural-parameter conditional (with K⁻¹) is accurate, the recorded moments
    are its moments and 20,000 draws have its mean and covariance within 5 standard errors."""
    model = tiny_gpc()
    rng = np.random.default_rng(4)
    omega = pg_draw(1.0, 3.0 * rng.standard_normal(model.n_train), rng)
    mean, cov = model._conditional(omega).mean_cov()
    state, draws = PolyaGammaChain(np.zeros(model.n_train), omega), []
    for _ in range(20_000):
        state = model._draw_z(state, rng)
        draws.append(state.z)
    recorded = state.moments()
    np.testing.assert_allclose(recorded.mean, mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(recorded.cov, cov, rtol=1e-7, atol=1e-9)
    draws = np.array(draws)
    n, var = len(draws), np.diag(cov)
    assert np.all(np.abs(draws.mean(0) - mean) < 5 * np.sqrt(var / n))
    se = np.sqrt((np.outer(var, var) + cov**2) / n)
    assert np.all(np.abs(np.cov(draws, rowvar=False) - cov) < 5 * se)
