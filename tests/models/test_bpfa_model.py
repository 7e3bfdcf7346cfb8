"""BPFA global updates (eq. 7, corrected) against naive loops; SVI ≡ VMP; recovery on data from the prior."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from svibench.algorithms.gibbs import GibbsSampler
from svibench.algorithms.svi import SVI, VMP
from svibench.capabilities import LocalApprox
from svibench.datasets.bpfa_synthetic import bpfa_synthetic
from svibench.models.bpfa import BPFA
from svibench.models.bpfa.local import FACTOR_KINDS, GlobalMoments, LocalMoments, gibbs
from svibench.models.bpfa.stats import global_statistics


def _naive(mom: LocalMoments, view: GlobalMoments, Y, M):
    """Eq. 7 term by term: E over the S draws, within a draw features independent."""
    S, B, K = mom.X.shape
    D = Y.shape[1]
    g, phi = view.gamma_obs, view.phi
    lin, prec, d, z, w2 = np.zeros((K, D)), np.zeros((K, D)), 0.0, np.zeros(K), 0.0
    for s in range(S):
        X, X2 = mom.X[s], mom.X2[s]
        for i in range(B):
            for k in range(K):
                z[k] += mom.Z[s, i, k] / S
                w2 += mom.W2[s, i, k] / S
                for dd in range(D):
                    if not M[i, dd]:
                        continue
                    others = sum(X[i, j] * phi[j, dd] for j in range(K) if j != k)
                    lin[k, dd] += g * X[i, k] * (Y[i, dd] - others) / S
                    prec[k, dd] += g * X2[i, k] / S
            for dd in range(D):
                if not M[i, dd]:
                    continue
                # E[(y - Σ x φ)²] = (y - Σ E x E φ)² + Σ_k (E x² E φ² − (E x)² (E φ)²)
                mean = sum(X[i, k] * phi[k, dd] for k in range(K))
                var = sum(X2[i, k] * view.phi2[k, dd] - X[i, k] ** 2 * phi[k, dd] ** 2 for k in range(K))
                d += 0.5 * ((Y[i, dd] - mean) ** 2 + var) / S
    return lin, prec, d, z, w2


@pytest.mark.parametrize("unused", [False, True])
@pytest.mark.parametrize("S", [1, 3])
def test_global_statistics_equal_eq7_computed_naively_with_masks(S, unused):
    """Also with a feature no draw uses (x_·k = 0 as in sparse Gibbs draws), which the products skip."""
    rng = np.random.default_rng(0)
    B, K, D = 5, 3, 4
    phi = rng.normal(0, 1, (K, D))
    view = GlobalMoments(2.5, 0.8, 1.3, 0.2, np.log([0.2, 0.3, 0.4]), np.log([0.8, 0.7, 0.6]), phi,
                         phi**2 + rng.uniform(0.1, 0.3, (K, D)))
    M = (rng.random((B, D)) < 0.6).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    X = rng.normal(0, 1, (S, B, K))
    if unused:
        X[:, :, 1] = 0.0
    mom = LocalMoments(X, X**2 + rng.uniform(0, 1, X.shape), rng.random(X.shape), rng.uniform(0, 2, X.shape))
    stats = global_statistics(mom, view, Y, M)
    lin, prec, d, z, w2 = _naive(mom, view, Y, M)
    np.testing.assert_allclose(stats["phi"].eta1, lin, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(stats["phi"].eta2, -0.5 * prec, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(stats["gamma_obs"].eta2, -d, rtol=1e-10)
    np.testing.assert_allclose(stats["gamma_obs"].eta1, 0.5 * M.sum())
    np.testing.assert_allclose(stats["pi"].eta1, z, rtol=1e-12)
    np.testing.assert_allclose(stats["pi"].eta2, B - z, rtol=1e-12)
    np.testing.assert_allclose(stats["gamma_w"].eta1, 0.5 * B * K)
    np.testing.assert_allclose(stats["gamma_w"].eta2, -0.5 * w2, rtol=1e-12)


@pytest.mark.parametrize("kernel", [False, True])
def test_gibbs_keeps_each_draws_residual_and_the_statistics_reuse_it(kernel):
    """``LocalMoments.R`` of Gibbs draws is m ∘ (y − x Φ) of each kept draw, and the statistics
    computed from it equal those that recompute it (to rounding)."""
    rng = np.random.default_rng(3)
    B, K, D = 20, 6, 8
    phi = rng.normal(0, 1, (K, D))
    view = GlobalMoments(2.5, 0.8, 1.3, 0.2, np.log(np.full(K, 0.3)), np.log(np.full(K, 0.7)), phi, phi**2)
    M = (rng.random((B, D)) < 0.7).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    mom = gibbs(view, Y, M, 2, 3, rng, kernel=kernel)
    assert 0 < np.mean(mom.X != 0) < 1
    np.testing.assert_allclose(mom.R, M * (Y - mom.X @ phi), atol=1e-12)
    kept, fresh = global_statistics(mom, view, Y, M), global_statistics(replace(mom, R=None), view, Y, M)
    np.testing.assert_allclose(kept["phi"].eta1, fresh["phi"].eta1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(kept["gamma_obs"].eta2, fresh["gamma_obs"].eta2, rtol=1e-12)


@pytest.mark.parametrize("kind", ["mf", "titsias", "titsias-printed"])
def test_the_compiled_coordinate_ascent_keeps_its_residual_and_the_statistics_reuse_it(kind):
    """The kernel's q carries m ∘ (y − E[x] Φ) at the fitted q (the reference's does not), and the statistics
    computed from it equal those that recompute it (to rounding)."""
    rng = np.random.default_rng(4)
    B, K, D = 20, 7, 8
    phi = rng.normal(0, 1, (K, D))
    view = GlobalMoments(2.5, 0.8, 1.3, 0.2, np.log(np.full(K, 0.3)), np.log(np.full(K, 0.7)), phi,
                         phi**2 + 0.1)
    M = (rng.random((B, D)) < 0.7).astype(float)
    Y = rng.normal(0, 1, (B, D)) * M
    q = FACTOR_KINDS[kind].fit(view, Y, M, LocalApprox(kind, inner_iterations=5))
    assert q.residual is not None
    np.testing.assert_allclose(q.residual, M * (Y - (q.theta * q.mean_w) @ phi), atol=1e-12)
    mom = q.moments()
    kept, fresh = global_statistics(mom, view, Y, M), global_statistics(replace(mom, R=None), view, Y, M)
    for name in ("phi", "gamma_obs"):
        np.testing.assert_allclose(kept[name].eta1, fresh[name].eta1, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(kept[name].eta2, fresh[name].eta2, rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def small():
    return BPFA(bpfa_synthetic(n=300, dim=10, features=8, seed=1), features=10, predictive_samples=3)


def _flat(lam):
    return np.concatenate([lam[k].flatten() for k in sorted(lam)])


@pytest.mark.parametrize("local_init", ["full", "prior"])
def test_mf_svi_full_batch_rho_one_is_one_vmp_step(small, local_init):
    vmp = VMP(inner_iterations=5, local_init=local_init)
    svi = SVI(batch_size=small.n_train, rho=1.0, local="mf", view="expected", inner_iterations=5, local_init=local_init)
    vmp.init(small, np.random.default_rng(5))
    svi.init(small, np.random.default_rng(5))
    for _ in range(2):
        vmp.step()
        svi.step()
        np.testing.assert_allclose(_flat(svi.posterior().lam), _flat(vmp.posterior().lam), rtol=1e-10, atol=1e-9)
    assert svi.posterior().approx.init == vmp.posterior().approx.init == local_init  # evaluation starts there too


@pytest.mark.parametrize("local", ["mf", "titsias-printed"])
def test_the_local_start_changes_the_svi_step(small, local):
    steps = []
    for local_init in ("full", "prior"):
        svi = SVI(batch_size=small.n_train, rho=1.0, local=local, inner_iterations=5, local_init=local_init)
        svi.init(small, np.random.default_rng(5))
        svi.step()
        steps.append(_flat(svi.posterior().lam))
    assert not np.allclose(*steps)


def test_a_mean_field_start_the_model_lacks_makes_the_pair_incompatible():
    from svibench.models.gmm import GaussianMixture

    assert SVI.incompatibility(BPFA, {"local_init": "prior"}) is None
    assert "not local_init='uniform'" in SVI.incompatibility(BPFA, {"local_init": "uniform"})
    assert "'full', not local_init='prior'" in VMP.incompatibility(GaussianMixture, {"local_init": "prior"})
    assert SVI.incompatibility(BPFA, {"local": "gibbs", "local_init": "prior"}) is None
    assert "titsias-printed locals 'full' or 'prior', not local_init='uniform'" in SVI.incompatibility(
        BPFA, {"local": "titsias-printed", "local_init": "uniform"})


def test_vmp_elbo_increases(small):
    vmp = VMP(inner_iterations=50)
    vmp.init(small, np.random.default_rng(0))
    elbos = []
    for _ in range(6):
        vmp.step()
        elbos.append(small.evaluate(vmp.posterior(), np.random.default_rng(0))["elbo"])
    assert elbos[-1] > elbos[0]


def test_init_methods_give_valid_globals(small):
    for method in small.init_methods:
        lam = small.init_globals(np.random.default_rng(0), method)
        view = small.expected_view(lam)
        assert np.all(np.isfinite(view.phi)) and view.gamma_obs > 0 and view.gamma_w > 0


@pytest.fixture(scope="module")
def fitted():
    """Every method fitted on data from the prior (seeded); its metrics, and the prior predictive's (0) MSE."""
    data = bpfa_synthetic(n=2000, dim=20, features=20, seed=3)
    model = BPFA(data, features=30, predictive_samples=5)
    prior_mse = float(np.sum(data.test["mask"] * (data.test["Y"] * data.meta["scale"]) ** 2) / data.test["mask"].sum())
    metrics = {}
    for name, alg, iters in [("mf-svi", SVI(batch_size=200, t0=0.0, local="mf", view="expected"), 150),
                             ("mf-ssvi", SVI(batch_size=200, t0=0.0, local="mf", view="sampled"), 150),
                             ("mf-ssvi-prior", SVI(batch_size=200, t0=0.0, local="mf", view="sampled", local_init="prior"), 150),
                             ("titsias-ssvi", SVI(batch_size=200, t0=0.0, local="titsias", view="sampled"), 150),
                             ("mimno-svi", SVI(batch_size=200, t0=0.0, local="gibbs", view="expected"), 150),
                             ("gibbs-ssvi", SVI(batch_size=200, t0=0.0, local="gibbs", view="sampled"), 150),
                             ("gibbs", GibbsSampler(), 40)]:
        alg.init(model, np.random.default_rng(0))
        for _ in range(iters):
            alg.step()
        metrics[name] = model.evaluate(alg.posterior(), np.random.default_rng(1))
    return metrics, prior_mse


@pytest.mark.slow
def test_every_method_predicts_held_out_data_far_better_than_the_prior(fitted):
    metrics, prior_mse = fitted
    for name, values in metrics.items():
        assert values["mse"] < 0.7 * prior_mse, (name, values["mse"], prior_mse)


@pytest.mark.slow
@pytest.mark.parametrize("metric", ["mse", "draw_mse"])
def test_gibbs_ssvi_mse_is_below_mf_ssvi_with_its_locals_started_at_the_prior(fitted, metric):
    """The paper's result (§5.1) holds when MF-SSVI's locals start at the prior (local_init="prior",
    as the shah2015 studies run MF): here 0.0159 vs 0.0181 (mse), 0.0292 vs 0.0342 (draw_mse)."""
    metrics, _ = fitted
    assert metrics["gibbs-ssvi"][metric] < metrics["mf-ssvi-prior"][metric], metrics


@pytest.mark.slow
@pytest.mark.xfail(strict=True, reason="open finding: with MF-SSVI's locals started greedily (local_init='full', "
                   "every feature available) Gibbs-SSVI's MSE is above "
                   "MF-SSVI's, unlike the paper's result, on the predictive mean's error (mse) and on a draw's "
                   "(draw_mse, the reading that matches the paper's magnitudes; here 0.0292 vs 0.0255). The sampled "
                   "view is the cause: on the study's data "
                   "(16 s) Mimno-SVI, with the same Gibbs locals but E_q[β], estimates γ_obs at 2.44 (truth 2.57, "
                   "MSE 0.0111) while Gibbs-SSVI over-estimates it (2.81), turns on 3.3 features per row (truth ≈ 1) "
                   "and has MSE 0.0118 (MF-SSVI 0.0110). The paper-scale run (N = 1e5, K = 150, 600 s, "
                   "reports/shah2015-synthetic/study.toml) shows the same: Gibbs-SSVI 0.01182 / 0.02197, MF-SSVI "
                   "0.01062 / 0.02169 (mse / draw_mse)")
@pytest.mark.parametrize("metric", ["mse", "draw_mse"])
def test_gibbs_ssvi_mse_is_below_mf_ssvi(fitted, metric):
    metrics, _ = fitted
    assert metrics["gibbs-ssvi"][metric] < metrics["mf-ssvi"][metric], metrics


def test_heldout_metrics_against_entrywise_formulas_and_draws_of_the_predictive():
    """Eq. 12's log-likelihood and the mean's squared error entry by entry; ``draw_mse`` against
    Monte Carlo: draws ŷ ~ N(μ⁽ᵐ⁾, 1/γ⁽ᵐ⁾) with m uniform, squared error in original units."""
    from scipy.special import logsumexp
    from scipy.stats import norm

    from svibench.models.bpfa.evaluation import heldout_metrics

    rng = np.random.default_rng(5)
    M, n, D = 4, 3, 5
    means, truth = rng.normal(size=(M, n, D)), rng.normal(size=(n, D))
    gammas, scale = rng.uniform(0.5, 4.0, M), rng.uniform(0.5, 2.0, D)
    test = (rng.random((n, D)) < 0.6).astype(float)
    test[0, 0] = 1.0
    ll, se, se_draw, mean = heldout_metrics(means, gammas, truth, test, scale)
    held = [(i, d) for i in range(n) for d in range(D) if test[i, d]]
    want_ll = sum(logsumexp([sum(norm.logpdf(truth[i, d], means[m, i, d], gammas[m] ** -0.5) for (j, d) in held if j == i)
                             for m in range(M)]) - np.log(M) for i in range(n))
    assert ll == pytest.approx(want_ll, rel=1e-12)
    assert se == pytest.approx(sum((scale[d] * (truth[i, d] - means[:, i, d].mean())) ** 2 for i, d in held), rel=1e-12)
    np.testing.assert_allclose(mean, means.mean(0))
    draws = 400_000
    m = rng.integers(M, size=draws)
    mc = 0.0
    for i, d in held:
        y_hat = means[m, i, d] + rng.standard_normal(draws) / np.sqrt(gammas[m])
        mc += np.mean((scale[d] * (y_hat - truth[i, d])) ** 2)
    assert se_draw == pytest.approx(mc, rel=0.01)
    assert se_draw > se  # a draw scatters about the mean: the mean's error plus the predictive variance


def test_psnr_fit_scores_the_reconstruction_on_observed_pixels_only():
    """psnr_fit (the paper's Table 1 reading) = 20 log10(255/rmse) over observed pixels of the
    assembled reconstruction vs the observed values; psnr = the same vs the clean image, all pixels."""
    from svibench.datasets.images import extract_patches
    from svibench.models.bpfa import psnr, psnr_fit

    rng = np.random.default_rng(3)
    shape, meta = (12, 12), {"patch": 8, "offset": 100.0, "scale": 40.0}
    clean = rng.uniform(60.0, 190.0, shape)
    seen = rng.random(shape) < 0.3
    observed = clean + 5.0 * rng.standard_normal(shape)
    err = np.where(seen, rng.normal(0.0, 3.0, shape), rng.normal(0.0, 30.0, shape))
    Y = extract_patches(np.where(seen, (observed - meta["offset"]) / meta["scale"], 0.0), 8)
    M = extract_patches(seen.astype(float), 8)
    means = extract_patches((observed + err - meta["offset"]) / meta["scale"], 8)
    want_fit = 20 * np.log10(255 / np.sqrt(np.mean(err[seen] ** 2)))
    assert psnr_fit(means, Y, M, meta, shape) == pytest.approx(want_fit, rel=1e-10)
    want = 20 * np.log10(255 / np.sqrt(np.mean((np.clip(observed + err, 0, 255) - clean) ** 2)))
    assert psnr(means, meta, clean) == pytest.approx(want, rel=1e-10)
