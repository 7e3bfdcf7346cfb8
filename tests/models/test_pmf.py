"""Poisson-gamma matrix factorisation (Khan & Lin 2017, App. K) and CVI-MF on it."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.stats
from scipy.special import gammaln, logsumexp

from svibench.algorithms.bbvi import BBVI
from svibench.algorithms.cvi_mf import CVIMF
from svibench.capabilities import LogJointGradient, MeanFieldNonConjugate
from svibench.data import Dataset
from svibench.datasets.mnist import mnist_digits
from svibench.datasets.pmf import mnist, pmf_synthetic, usps_counts
from svibench.models import pmf as pmf_model
from svibench.models.pmf import PoissonGammaMF

PRIORS = dict(w_shape=1.0, w_rate=1.0, z_shape=1.0, z_rate=1.0)


@pytest.fixture(scope="module")
def small():
    return PoissonGammaMF(pmf_synthetic(rows=40, cols=60, factors=3, seed=0), n_factors=3, eval_samples=50, **PRIORS)


def test_model_offers_both_capabilities(small):
    assert isinstance(small, MeanFieldNonConjugate) and isinstance(small, LogJointGradient)


def test_log_joint_matches_a_direct_sum(small):
    z = np.random.default_rng(0).gamma(1.0, 1.0, size=(2, (40 + 60) * 3))
    W, Z = z[:, :120].reshape(2, 40, 3), z[:, 120:].reshape(2, 60, 3)
    m, X = small.mask, small.X
    direct = []
    for s in range(2):
        r = W[s] @ Z[s].T
        lik = (m * (X * np.log(r) - r - gammaln(X + 1))).sum()
        direct.append(lik + (-W[s] - 0.0).sum() + (-Z[s]).sum())  # Ga(1, 1) prior: log p = −x
    np.testing.assert_allclose(small.log_joint(z), direct, rtol=1e-10)


def test_reconstruction_losses_follow_the_papers_formula_on_held_out_and_on_observed_entries(small):
    """§7: √(Σ (x − E[w]ᵀE[z])²) / (number of entries), written out entry by entry."""
    q = small.mf_init(np.random.default_rng(3))
    (sw, rw), (sz, rz) = q["W"].shape_rate(), q["Z"].shape_rate()
    out = small.evaluate(q, np.random.default_rng(0))
    test = small.data.test
    for metric, X, mask in (("recon_loss", test["X"], test["mask"]), ("recon_loss_fit", small.X, small.mask > 0)):
        sq = [(X[i, j] - sum(sw[i, k] / rw[i, k] * sz[j, k] / rz[j, k] for k in range(3))) ** 2
              for i, j in zip(*np.nonzero(mask))]
        assert 0 < mask.mean() < 1
        assert out[metric] == pytest.approx(np.sqrt(np.sum(sq)) / len(sq), rel=1e-10), metric


def test_log_joint_gradient_matches_differences(small):
    z = np.random.default_rng(1).gamma(2.0, 1.0, size=(1, 300))
    g = small.grad_log_joint(z)[0]
    for p in (0, 50, 200, 299):
        d = np.zeros_like(z)
        d[0, p] = 1e-6
        assert g[p] == pytest.approx((small.log_joint(z + d)[0] - small.log_joint(z - d)[0]) / 2e-6, rel=1e-5)


def test_markov_blanket_blocks_carry_every_term_that_involves_the_block(small):
    rng = np.random.default_rng(2)
    z = rng.gamma(2.0, 1.0, size=(1, 300))
    for p in (4, 130):
        z2 = z.copy()
        z2[0, p] *= 1.7
        change = small.log_joint(z2) - small.log_joint(z)
        blocks = small.log_joint_blocks(z2, "meanfield") - small.log_joint_blocks(z, "meanfield")
        assert blocks[0, p] == pytest.approx(change[0], rel=1e-10)


def test_single_factor_cvi_mf_step_with_beta_one_is_the_vmp_update():
    """K = 1: log(w z) = log w + log z is conjugate, so λ̃ must be VMP's
    (a + Σⱼ m X, b + Σⱼ m E[z]) — here through the Monte-Carlo mean gradients."""
    model = PoissonGammaMF(pmf_synthetic(rows=6, cols=8, factors=1, seed=1), n_factors=1, **PRIORS)
    lam = model.mf_init(np.random.default_rng(0))
    alg = CVIMF(rho=1.0, n_samples=20_000)
    alg.init(model, np.random.default_rng(0))
    alg.step()
    (sz, rz), (sw, rw) = lam["Z"].shape_rate(), lam["W"].shape_rate()
    m, X = model.mask, model.X
    shape_w, rate_w = alg.posterior()["W"].shape_rate()
    np.testing.assert_allclose(rate_w[:, 0], 1.0 + m @ (sz / rz)[:, 0], rtol=0.05)  # conjugate message + MC zero
    np.testing.assert_allclose(shape_w[:, 0], 1.0 + (m * X).sum(1), rtol=0.03, atol=0.3)  # MC part
    shape_z, rate_z = alg.posterior()["Z"].shape_rate()
    np.testing.assert_allclose(rate_z[:, 0], 1.0 + m.T @ (sw / rw)[:, 0], rtol=0.05)
    np.testing.assert_allclose(shape_z[:, 0], 1.0 + (m * X).sum(0), rtol=0.03, atol=0.3)


def test_mean_gradient_of_the_poisson_term_matches_its_closed_form_for_one_factor():
    """E[X log(wz)] = X (E log w + E log z): its μ-gradient is (Σⱼ X, 0) per w, exactly."""
    model = PoissonGammaMF(pmf_synthetic(rows=3, cols=4, factors=1, seed=2), n_factors=1, **PRIORS)
    lam = model.mf_init(np.random.default_rng(1))
    grad = model.nonconjugate_gradient(lam, ("W",), np.random.default_rng(3), 100_000)["W"]
    np.testing.assert_allclose(grad.eta1[:, 0], model.X.sum(1), rtol=0.02, atol=0.05)
    np.testing.assert_allclose(grad.eta2[:, 0], 0.0, atol=0.05 * max(1.0, model.X.sum()))


def _iterations_to_target(alg, model, target: float, max_iter: int) -> float:
    """First multiple of 5 iterations at which the held-out log-likelihood reaches ``target`` (inf if never)."""
    ev = np.random.default_rng(5)
    alg.init(model, np.random.default_rng(0))
    for it in range(1, max_iter + 1):
        alg.step()
        if it % 5 == 0 and model.evaluate(alg.posterior(), ev)["heldout_loglik"] >= target:
            return it
    return np.inf


def test_cvi_mf_improves_held_out_fit_and_reaches_a_target_sooner_than_bbvi_reparam(small):
    # Iterations, not seconds (speed is asv's job): both draw the same 10 reparameterised samples of q
    # and compute the same per-draw gradients each iteration, so an iteration costs both the same.
    ev = np.random.default_rng(5)
    start = small.evaluate(small.mf_init(np.random.default_rng(0)), ev)
    cvi = CVIMF(rho=0.02, n_samples=10)
    n_cvi = _iterations_to_target(cvi, small, target=-2.0, max_iter=200)
    end = small.evaluate(cvi.posterior(), ev)
    assert end["heldout_loglik"] > start["heldout_loglik"] + 0.3 and end["recon_loss"] < start["recon_loss"]
    n_adam = _iterations_to_target(BBVI(estimator="reparam", optimizer="adam", learning_rate=0.2, n_samples=10),
                                   small, target=-2.0, max_iter=600)
    assert n_cvi < n_adam / 1.5, (n_cvi, n_adam)


def test_mnist_is_the_official_split_binarised_with_test_images_as_new_columns():
    data = mnist(n_train=300, n_test=200, seed=1)
    train, test = data.train["X"], data.test["X"]
    assert train.shape == (784, 300) and test.shape == (784, 200) and "mask" not in data.test
    assert data.train["mask"].all() and set(np.unique(train)) | set(np.unique(test)) == {0.0, 1.0}
    images, _ = mnist_digits("test")
    binarised = {tuple(row) for row in (images.reshape(-1, 784) >= 128).astype(float)}
    assert {tuple(col) for col in test.T} <= binarised, "test columns are binarised official test images"
    assert 0.12 < train.mean() < 0.15  # binarised MNIST: about 13 % of pixels on
    full = mnist(n_train=60_000, n_test=10_000)
    np.testing.assert_array_equal(full.test["X"][:, :3].T, (images[:3].reshape(3, 784) >= 128))
    with pytest.raises(ValueError, match="n_train"):
        mnist(n_train=60_001)


def _tiny_new_columns(M: int = 7) -> PoissonGammaMF:
    train = pmf_synthetic(rows=12, cols=30, factors=1, seed=4)
    test = pmf_synthetic(rows=12, cols=M, factors=1, seed=5).test["X"]
    data = Dataset("tiny", "count-matrix", {"X": train.test["X"], "mask": np.ones((12, 30), bool)}, {"X": test})
    return PoissonGammaMF(data, n_factors=1, eval_samples=5, test_iterations=50, **PRIORS)


def test_new_test_columns_get_their_factors_fitted_given_w_and_the_papers_loss():
    """K = 1: the mean-field fit of a new column given q(W) is closed-form, α_j = a_z + Σᵢ X_ij,
    β_j = b_z + Σᵢ E[wᵢ] (one factor takes every count); the losses written out entry by entry."""
    model = _tiny_new_columns()
    q = model.mf_init(np.random.default_rng(0))
    out = model.evaluate(q, np.random.default_rng(1))
    Xt = model.data.test["X"]
    sw, rw = q["W"].shape_rate()
    ew = (sw / rw)[:, 0]
    sq = []
    for j in range(Xt.shape[1]):
        ez = (1.0 + Xt[:, j].sum()) / (1.0 + ew.sum())
        sq += [(Xt[i, j] - ew[i] * ez) ** 2 for i in range(Xt.shape[0])]
    assert out["recon_loss"] == pytest.approx(np.sqrt(np.sum(sq)) / len(sq), rel=1e-8)
    assert out["recon_rmse"] == pytest.approx(np.sqrt(np.mean(sq)), rel=1e-8)
    assert set(out) == {"elbo", "heldout_loglik", "recon_loss", "recon_rmse", "recon_loss_fit",
                        "heldout_loglik_whole", "recon_loss_whole", "recon_rmse_whole"}  # no subset: whole = these
    scaled = PoissonGammaMF(model.data, n_factors=1, eval_samples=5, loss_entries=10 * len(sq), **PRIORS)
    value = scaled.evaluate(q, np.random.default_rng(1))["recon_loss"]
    assert value == pytest.approx(np.sqrt(np.sum(sq) * 10) / (10 * len(sq)), rel=1e-8)


def test_chunking_the_draws_changes_no_number(small, monkeypatch):
    """The (S, V, N) intermediates formed a draw at a time give the numbers formed all at once."""
    lam = small.mf_init(np.random.default_rng(0))
    z = np.random.default_rng(1).gamma(2.0, 1.0, size=(4, (40 + 60) * 3))

    def numbers():
        grads = small.nonconjugate_gradient(lam, ("W", "Z"), np.random.default_rng(2), 6)
        metrics = small.evaluate(lam, np.random.default_rng(3))
        return ([g for name in ("W", "Z") for g in grads[name].arrays()]
                + [small.log_joint(z), small.grad_log_joint(z), small.log_joint_blocks(z, "meanfield")], metrics)

    whole, whole_metrics = numbers()
    assert len(small._sample_chunks(6, small.N)) == 1
    monkeypatch.setattr(pmf_model, "CHUNK_BYTES", 8 * small.V * small.N)  # one draw per chunk
    assert len(small._sample_chunks(6, small.N)) == 6
    chunked, chunked_metrics = numbers()
    for a, b in zip(whole, chunked):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    assert chunked_metrics == pytest.approx(whole_metrics, rel=1e-12)


def test_usps_counts_reads_the_checksummed_file_and_holds_out_entries():
    data = usps_counts(n_images=50, seed=0)
    X, mask = data.train["X"], data.train["mask"]
    assert X.shape == (256, 50) and X.min() == 0 and X.max() <= 15 and np.all(X == np.floor(X))
    assert np.all(X[~mask] == 0) and np.array_equal(data.test["mask"], ~mask)
    assert 0.05 < data.test["mask"].mean() < 0.15
    assert np.array_equal(data.test["X"][mask], X[mask])


def test_new_column_locals_reach_column_locals_fixed_point_in_matrix_form():
    """The dense form scores test images; it must give the sparse coordinate ascent's q(z_j)."""
    from svibench.models.poisson_counts import Nonzeros, WeightMoments, column_locals, new_column_locals

    rng = np.random.default_rng(0)
    X = rng.poisson(1.0, size=(15, 9)).astype(float)
    shape, rate = rng.uniform(0.05, 3.0, size=(15, 4)), rng.uniform(0.5, 2.0, size=(15, 4))
    from scipy.special import digamma
    view = WeightMoments(digamma(shape) - np.log(rate), shape / rate)
    for iterations, tol in ((1, 0.0), (7, 0.0), (200, 1e-3)):
        a, b, _ = column_locals(view, Nonzeros(X, np.ones(X.shape)), np.ones(X.shape), np.arange(9), 0.1, 0.1, iterations, tol)
        a2, b2 = new_column_locals(view, X, 0.1, 0.1, iterations, tol)
        np.testing.assert_allclose(a2, a, rtol=1e-10)
        np.testing.assert_allclose(b2, b, rtol=1e-12)


def test_held_out_log_predictive_is_the_poisson_mixture_of_the_draws(small):
    """Mean over the held entries of log (1/S) Σ_s Poisson(x | wᵢₛᵀzⱼₛ), with the draws (W's, then Z's) taken from the
    same generator and the Poisson written by scipy, on held-out entries and on every entry (new columns)."""
    q = small.mf_init(np.random.default_rng(3))
    test = small.data.test
    for held in (test["mask"], np.ones(test["X"].shape, bool)):
        x = test["X"][held]
        value = small._log_predictive(q["W"], q["Z"], held, x, np.random.default_rng(5), 7)
        rng, logp = np.random.default_rng(5), []
        for _ in range(7):
            (sw, rw), (sz, rz) = q["W"].shape_rate(), q["Z"].shape_rate()
            w = np.maximum(rng.gamma(sw, 1.0 / rw), np.finfo(float).tiny)
            z = np.maximum(rng.gamma(sz, 1.0 / rz), np.finfo(float).tiny)
            logp.append(scipy.stats.poisson.logpmf(x, (w @ z.T)[held]))
        assert value == pytest.approx(np.mean(logsumexp(logp, axis=0) - np.log(7)), rel=1e-12)
