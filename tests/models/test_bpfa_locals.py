"""BPFA local approximations against independent truths (exact posterior, Monte Carlo, monotonicity)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.special import expit, ndtri
from scipy.stats import kstest, multivariate_normal, norm

from svibench.models.bpfa.local import (FactorQ, FeatureSweep, GlobalMoments, _collapsed, gibbs, local_elbo,
                                         mean_field, mf_step, titsias, titsias_printed, titsias_printed_step,
                                         titsias_step)

_LOG_2PI = np.log(2 * np.pi)


def _point_view(rng, K, D, gamma_obs=4.0, gamma_w=1.5):
    pi = rng.uniform(0.2, 0.6, K)
    phi = rng.normal(0, 1.0, (K, D))
    return GlobalMoments(gamma_obs, np.log(gamma_obs), gamma_w, np.log(gamma_w), np.log(pi), np.log1p(-pi), phi, phi**2)


def _expected_like_view(rng, K, D):
    """A view with E[φ²] > E[φ]² (as under q(β)) and arbitrary E[log γ], E[log π]."""
    v = _point_view(rng, K, D)
    return GlobalMoments(v.gamma_obs, v.log_gamma_obs - 0.1, v.gamma_w, v.log_gamma_w - 0.2, v.log_pi - 0.05,
                         v.log_1m_pi - 0.03, v.phi, v.phi2 + rng.uniform(0.01, 0.2, v.phi.shape))


def test_gibbs_chain_samples_the_exact_local_posterior():
    """Stationary distribution of the blocked sampler = p(z | y, β) by enumeration (w integrated),
    and E[x | y, β] exactly; one row replicated over the batch = many independent chains."""
    rng = np.random.default_rng(0)
    K, D = 3, 5
    view = _point_view(rng, K, D)
    y = rng.normal(0, 1, D)
    mask = np.array([1, 1, 0, 1, 1.0])  # one missing entry must not count
    obs = mask > 0
    pi = np.exp(view.log_pi)
    post, ex = {}, np.zeros(K)
    for z in itertools.product([0, 1], repeat=K):
        z = np.array(z)
        F = view.phi[z > 0][:, obs]
        cov = F.T @ F / view.gamma_w + np.eye(obs.sum()) / view.gamma_obs
        post[tuple(z)] = np.prod(np.where(z, pi, 1 - pi)) * multivariate_normal(np.zeros(obs.sum()), cov).pdf(y[obs])
    total = sum(post.values())
    for z, p in post.items():
        z = np.array(z)
        if z.any():  # E[w_z | y, z] = Σ_w F (F'Σ_wF + I/γ)⁻¹ y
            F = view.phi[z > 0][:, obs]
            cov = F.T @ F / view.gamma_w + np.eye(obs.sum()) / view.gamma_obs
            ex[z > 0] += p / total * (F @ np.linalg.solve(cov, y[obs])) / view.gamma_w
    n = 20000
    Y, M = np.tile(y, (n, 1)), np.tile(mask, (n, 1))
    X = gibbs(view, Y, M, burnin=15, samples=1, rng=np.random.default_rng(1)).X[0]
    Zs = X != 0
    for z, p in post.items():
        freq = np.mean(np.all(Zs == np.array(z, bool), axis=1))
        assert abs(freq - p / total) < 4 * np.sqrt(p / total * (1 - p / total) / n) + 2e-3, (z, freq, p / total)
    np.testing.assert_allclose(X.mean(0), ex, atol=4 * X.std(0).max() / np.sqrt(n) + 1e-3)


@pytest.mark.parametrize("kind,step", [("mf", mf_step), ("titsias", titsias_step),
                                       ("titsias-printed", titsias_printed_step)])
def test_each_coordinate_step_never_decreases_the_local_elbo(kind, step):
    """(For "titsias-printed": the objective it ascends, the appendix's printed one.)"""
    rng = np.random.default_rng(2)
    B, K, D = 40, 6, 8
    view = _expected_like_view(rng, K, D)
    M = (rng.random((B, D)) < 0.7).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    q = FactorQ(kind, rng.uniform(0.05, 0.95, (B, K)), rng.normal(0, 1, (B, K)), rng.uniform(0.1, 2, (B, K)), view.gamma_w)
    sweep = FeatureSweep(view, Y, M, q.theta * q.mean_w)
    before = local_elbo(view, Y, M, q)
    steps = 0
    for _ in range(4):
        for k in range(K):
            step(sweep, q, k)
            after = local_elbo(view, Y, M, q)
            assert np.all(after >= before - 1e-9 * np.abs(before)), (k, (after - before).min())
            steps += np.sum(after > before + 1e-9)
            before = after
            # the sweep's bookkeeping (masked residual) matches a fresh computation
            np.testing.assert_allclose(sweep.R, M * (Y - (q.theta * q.mean_w) @ view.phi), atol=1e-10)
    assert steps > 0


@pytest.mark.parametrize("start, theta0", [("full", lambda pi: 1.0), ("prior", lambda pi: pi)])
def test_mean_field_first_step_starts_where_start_says(start, theta0):
    """One feature, one sweep: the eq. 9 step written out from θ = ``theta0``, m = 0."""
    rng = np.random.default_rng(4)
    view = _point_view(rng, 1, 6)
    M = (rng.random((5, 6)) < 0.7).astype(float)
    Y = rng.normal(0, 1, (5, 6)) * M
    q = mean_field(view, Y, M, max_sweeps=1, start=start, kernel=False)
    theta = theta0(np.exp(view.log_pi[0]))
    A = view.gamma_obs * M @ view.phi2[0]
    b = view.gamma_obs * (M * Y) @ view.phi[0]
    kappa = theta * A + view.gamma_w
    m = theta * b / kappa
    logit = view.log_pi[0] - view.log_1m_pi[0] + m * b - 0.5 * (m**2 + 1 / kappa) * A
    np.testing.assert_allclose(q.mean_w[:, 0], m, rtol=1e-12)
    np.testing.assert_allclose(q.theta[:, 0], 1 / (1 + np.exp(-logit)), rtol=1e-12)
    with pytest.raises(ValueError, match="full, prior"):
        mean_field(view, Y, M, max_sweeps=1, start="uniform")


def test_printed_titsias_step_is_the_coordinate_maximum_of_the_printed_objective():
    """(m, v) maximise the printed objective at the θ the step read, then θ at the new (m, v):
    perturbing any of them lowers it.  The objective is evaluated by ``local_elbo``, the step's
    closed forms come from setting its derivatives to zero; they must agree."""
    rng = np.random.default_rng(3)
    B, K, D = 30, 5, 7
    view = _expected_like_view(rng, K, D)
    M = (rng.random((B, D)) < 0.7).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    q = FactorQ("titsias-printed", rng.uniform(0.05, 0.95, (B, K)), rng.normal(0, 1, (B, K)),
                rng.uniform(0.1, 2, (B, K)), view.gamma_w)
    k, eps = 2, 1e-4
    old_theta = q.theta[:, k].copy()
    titsias_printed_step(FeatureSweep(view, Y, M, q.theta * q.mean_w), q, k)

    def objective(theta, m, v):
        th, mw, vw = q.theta.copy(), q.mean_w.copy(), q.var_w.copy()
        th[:, k], mw[:, k], vw[:, k] = theta, m, v
        return local_elbo(view, Y, M, FactorQ("titsias-printed", th, mw, vw, view.gamma_w))

    m, v, theta = q.mean_w[:, k], q.var_w[:, k], q.theta[:, k]
    best = objective(old_theta, m, v)
    for dm, dv in ((eps, 0), (-eps, 0), (0, eps), (0, -eps)):
        assert np.all(objective(old_theta, m + dm, v * (1 + dv)) < best), (dm, dv)
    best = objective(theta, m, v)
    for dt in (eps, -eps):
        assert np.all(objective(np.clip(theta + dt, 1e-12, 1 - 1e-12), m, v) < best), dt


@pytest.mark.parametrize("start", ["full", "prior"])
def test_printed_titsias_first_step_written_out(start):
    """One feature, one sweep from θ = 1 or π, m = 0: m = θb/(θA + γ_w), v = θ/(θA + γ_w),
    logit θ' = logit π + m b − ½(m² + v)A + ½ log(γ_w v).  From θ = 1 the slab is Titsias's
    exact one (m = b/κ, v = 1/κ), and θ' is not: the printed objective charges the slab's prior
    whatever z."""
    rng = np.random.default_rng(4)
    view = _point_view(rng, 1, 6)
    M = (rng.random((5, 6)) < 0.7).astype(float)
    Y = rng.normal(0, 1, (5, 6)) * M
    q = titsias_printed(view, Y, M, max_sweeps=1, start=start, kernel=False)
    theta = 1.0 if start == "full" else np.exp(view.log_pi[0])
    A = view.gamma_obs * M @ view.phi2[0]
    b = view.gamma_obs * (M * Y) @ view.phi[0]
    m, v = theta * b / (theta * A + view.gamma_w), theta / (theta * A + view.gamma_w)
    logit = view.log_pi[0] - view.log_1m_pi[0] + m * b - 0.5 * (m**2 + v) * A + 0.5 * np.log(view.gamma_w * v)
    np.testing.assert_allclose(q.mean_w[:, 0], m, rtol=1e-12)
    np.testing.assert_allclose(q.var_w[:, 0], v, rtol=1e-12)
    np.testing.assert_allclose(q.theta[:, 0], 1 / (1 + np.exp(-logit)), rtol=1e-12)
    if start == "full":
        exact = titsias(view, Y, M, max_sweeps=1, kernel=False)
        np.testing.assert_allclose(q.mean_w, exact.mean_w, rtol=1e-12)
        np.testing.assert_allclose(q.var_w, exact.var_w, rtol=1e-12)
        assert not np.allclose(q.theta, exact.theta)
    with pytest.raises(ValueError, match="full, prior"):
        titsias_printed(view, Y, M, max_sweeps=1, start="uniform")


def test_mean_field_from_the_prior_ends_sparser_and_neither_start_dominates():
    """Rows of one strong feature each, K = 20 features with π = 0.05: both starts find the row's
    feature; from "full" the greedy first sweep leaves ~3 features on per row, from "prior" fewer,
    and here the sparser optimum has the higher local ELBO (on image patches it fits worse)."""
    rng = np.random.default_rng(0)
    K, D, B = 20, 16, 200
    pi = np.full(K, 0.05)
    phi = rng.normal(0, 1, (K, D))
    view = GlobalMoments(25.0, np.log(25.0), 1.0, 0.0, np.log(pi), np.log1p(-pi), phi, phi**2)
    true = rng.integers(K, size=B)
    Y = 2.0 * phi[true] + rng.normal(0, 0.2, (B, D))
    M = np.ones((B, D))
    on, elbo = {}, {}
    for start in ("full", "prior"):
        q = mean_field(view, Y, M, 50, start=start)
        assert q.theta[np.arange(B), true].mean() > 0.95, start
        on[start], elbo[start] = (q.theta > 0.5).sum(1).mean(), local_elbo(view, Y, M, q).mean()
    assert on["prior"] < on["full"] - 0.5 and elbo["prior"] > elbo["full"], (on, elbo)


def _log_joint_draws(view, Y, M, z, w):
    """log p(yᵢ, zᵢ, wᵢ | β) per row (S, B) for draws z, w (S, B, K) of the locals; observed entries only."""
    mu = (z * w) @ view.phi
    log_lik = (M * (0.5 * (view.log_gamma_obs - _LOG_2PI) - 0.5 * view.gamma_obs * (Y - mu) ** 2)).sum(-1)
    log_prior = (np.where(z, view.log_pi, view.log_1m_pi) + 0.5 * (view.log_gamma_w - _LOG_2PI)
                 - 0.5 * view.gamma_w * w**2).sum(-1)
    return log_lik + log_prior


def _check_local_elbo_by_monte_carlo(fit, seed, B, K, D, observed, off_from_prior):
    """E_q[log p(y, z, w | β) − log q(z, w)] over 200,000 draws of q = ``fit``'s equals its analytic
    local ELBO within 5 s.e.  q(w | z) is its Gaussian slab; with ``off_from_prior`` (Titsias) w | z = 0
    follows the prior N(0, 1/γ_w) instead of the slab."""
    rng = np.random.default_rng(seed)
    view = _point_view(rng, K, D)
    M = (rng.random((B, D)) < observed).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    q = fit(view, Y, M, max_sweeps=10)
    S = 200000
    z = rng.random((S, B, K)) < q.theta
    eps = rng.standard_normal((S, B, K))
    w = q.mean_w + np.sqrt(q.var_w) * eps
    log_qw = -0.5 * (np.log(q.var_w) + _LOG_2PI) - 0.5 * eps**2
    if off_from_prior:
        w = np.where(z, w, eps / np.sqrt(view.gamma_w))
        log_qw = np.where(z, log_qw, 0.5 * (view.log_gamma_w - _LOG_2PI) - 0.5 * view.gamma_w * w**2)
    log_q = (np.where(z, np.log(q.theta), np.log1p(-q.theta)) + log_qw).sum(-1)
    terms = _log_joint_draws(view, Y, M, z, w) - log_q
    mc, se = terms.mean(0), terms.std(0) / np.sqrt(S)
    np.testing.assert_array_less(np.abs(mc - local_elbo(view, Y, M, q)), 5 * se + 1e-6)


def test_titsias_local_elbo_matches_monte_carlo_of_the_same_bound():
    _check_local_elbo_by_monte_carlo(titsias, seed=3, B=4, K=3, D=6, observed=0.8, off_from_prior=True)


def test_mean_field_local_elbo_matches_monte_carlo():
    _check_local_elbo_by_monte_carlo(mean_field, seed=4, B=3, K=3, D=5, observed=1.0, off_from_prior=False)


def _one_feature_draws(kernel, seed=10, n=200_000):
    """One Gibbs update of one feature (K = 1) for n copies of one row: the field (κ, mean, p) it
    should follow and the draws x (n,)."""
    rng = np.random.default_rng(seed)
    view = _point_view(rng, 1, 6)
    y, mask = rng.normal(0, 1, 6), np.array([1, 1, 0, 1, 1, 1.0])
    Y, M = np.tile(y * mask, (n, 1)), np.tile(mask, (n, 1))
    sweep = FeatureSweep(view, Y[:1], M[:1], np.zeros((1, 1)))
    kappa, mean, log_odds = _collapsed(sweep, 0, sweep.field(0)[1])
    x = gibbs(view, Y, M, 0, 1, np.random.default_rng(seed + 1), kernel=kernel).X[0, :, 0]
    return float(kappa[0]), float(mean[0]), float(expit(log_odds[0])), x


@pytest.mark.parametrize("kernel", [False, True])
def test_one_uniform_draws_z_and_w_from_their_exact_conditional(kernel):
    """P(z = 1) = p and w | z = 1 ~ N(b/κ, 1/κ) (KS test) when one uniform u gives z = [u < p] and
    w = b/κ + Φ⁻¹(u/p)/√κ (inverse CDF of u/p ~ U(0, 1) given u < p)."""
    kappa, mean, p, x = _one_feature_draws(kernel)
    on = x != 0
    assert 0.2 < p < 0.8, p  # both outcomes frequent: the test has power
    assert abs(on.mean() - p) < 4 * np.sqrt(p * (1 - p) / len(x)), (on.mean(), p)
    assert kstest(x[on], norm(mean, 1 / np.sqrt(kappa)).cdf).pvalue > 1e-3


def test_the_slab_test_fails_when_w_reuses_u_instead_of_u_over_p(monkeypatch):
    """The KS check above has power: Φ⁻¹(u) in place of Φ⁻¹(u/p) (w then lies below the slab's
    p-quantile, given u < p) is rejected."""
    from svibench.models.bpfa import local

    p = _one_feature_draws(kernel=False, n=1)[2]
    monkeypatch.setattr(local, "slab_quantile", lambda v: ndtri(v * p))  # Φ⁻¹(u)
    kappa, mean, _, x = _one_feature_draws(kernel=False)
    on = x != 0
    assert kstest(x[on], norm(mean, 1 / np.sqrt(kappa)).cdf).pvalue < 1e-10


def test_a_zero_uniform_gives_a_finite_slab_draw():
    """rng.random can return 0.0: u/p = 0 is floored (Φ⁻¹(0) = −∞), on both paths."""
    from svibench.models.bpfa import kernels
    from svibench.models.bpfa.local import gibbs_update, slab_quantile

    assert np.isfinite(slab_quantile(np.zeros(1))).all() and kernels.V_MIN > 0
    rng = np.random.default_rng(2)
    view = _point_view(rng, 3, 5)
    Y, M = rng.normal(0, 1, (4, 5)), np.ones((4, 5))
    sweep = FeatureSweep(view, Y, M, np.zeros((4, 3)))
    gibbs_update(sweep, 0, np.zeros(4))
    assert np.isfinite(sweep.X).all() and (sweep.X[:, 0] != 0).all()
    sweep = FeatureSweep(view, Y, M, np.zeros((4, 3)))
    out = [np.empty((1, 4, 3)) for _ in range(3)] + [np.empty((1, 4, 5))]
    kernels.gibbs_sweeps(sweep.R, sweep.X, M, view.phi, sweep.Q, sweep.kappa, sweep.half_log, view.gamma_obs,
                         view.gamma_w, view.logit_pi, np.zeros((1, 4, 3)), 0, *out)
    assert np.isfinite(out[0]).all() and (out[0] != 0).all()


def test_gibbs_sweep_keeps_the_masked_residual_exact():
    """The sparse residual update (only rows whose x_k changed) equals a fresh computation."""
    from svibench.models.bpfa.local import gibbs_step
    rng = np.random.default_rng(5)
    B, K, D = 30, 5, 7
    view = _point_view(rng, K, D)
    M = (rng.random((B, D)) < 0.7).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    sweep = FeatureSweep(view, Y, M, np.zeros((B, K)))
    for _ in range(3):
        for k in range(K):
            gibbs_step(sweep, k, rng)
            np.testing.assert_allclose(sweep.R, M * (Y - sweep.X @ view.phi), atol=1e-10)
    assert 0 < np.mean(sweep.X != 0) < 1


def test_the_local_table_is_what_bpfa_offers_and_svi_knows():
    """One entry per kind: BPFA offers exactly the kinds of its table, each one the SVI family knows."""
    from svibench.capabilities.conjugate import LOCAL_KINDS
    from svibench.models.bpfa import BPFA
    from svibench.models.bpfa.local import FACTOR_KINDS, LOCALS

    assert BPFA.local_kinds == tuple(LOCALS) and set(FACTOR_KINDS) < set(LOCALS)
    assert set(LOCALS) <= set(LOCAL_KINDS)
    assert sorted(kind.mode for kind in FACTOR_KINDS.values()) == list(range(len(FACTOR_KINDS)))


@pytest.mark.parametrize("kind", ["mf", "titsias", "titsias-printed"])
def test_start_matters_exactly_for_the_kinds_marked_started(kind):
    """``LOCAL_KINDS[kind].started`` says whether LocalApprox.init changes the fitted q (Titsias'
    step is the exact conditional and never reads θ, so its start cannot matter)."""
    from svibench.capabilities.conjugate import LOCAL_KINDS, LocalApprox
    from svibench.models.bpfa.local import FACTOR_KINDS

    rng = np.random.default_rng(8)
    B, K, D = 6, 4, 7
    view = _point_view(rng, K, D)
    M = (rng.random((B, D)) < 0.8).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    fits = {start: FACTOR_KINDS[kind].fit(view, Y, M, LocalApprox(kind, inner_iterations=2, init=start))
            for start in ("full", "prior")}
    same = np.allclose(fits["full"].theta, fits["prior"].theta, rtol=0, atol=1e-12)
    assert same != LOCAL_KINDS[kind].started


@pytest.mark.parametrize("kind", ["mf", "titsias", "titsias-printed"])
def test_factor_q_second_moment_of_w_matches_monte_carlo(kind):
    """E[w²] of each kind's q (its table entry's ``prior_off``: q(w | z = 0) is the prior for
    the Titsias kinds, the slab for mean-field), against draws of (z, w) from that q."""
    rng = np.random.default_rng(9)
    B, K, gamma_w = 3, 4, 1.7
    q = FactorQ(kind, rng.uniform(0.1, 0.9, (B, K)), rng.normal(0, 1, (B, K)), rng.uniform(0.2, 1.5, (B, K)), gamma_w)
    S = 400000
    z = rng.random((S, B, K)) < q.theta
    slab = q.mean_w + np.sqrt(q.var_w) * rng.standard_normal((S, B, K))
    prior = rng.standard_normal((S, B, K)) / np.sqrt(gamma_w)
    w = slab if kind == "mf" else np.where(z, slab, prior)
    w2 = w**2
    np.testing.assert_array_less(np.abs(w2.mean(0) - q.moments().W2[0]), 5 * w2.std(0) / np.sqrt(S))
