"""Poisson–gamma factorisation with auxiliary counts (models.poisson_counts): SVI, VMP and Gibbs on pmf."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse
from scipy.special import digamma, gammaln, logsumexp

from svibench.algorithms.gibbs import GibbsSampler
from svibench.algorithms.svi import SVI, VMP
from svibench.capabilities import ConditionallyConjugate, ConjugatePosterior, LocalApprox
from svibench.data import Dataset
from svibench.datasets.pmf import pmf_synthetic
from svibench.model import IncompatibleData
from svibench.models.pmf import PoissonGammaMF
from svibench.models.poisson_counts import Nonzeros

PRIORS = dict(w_shape=1.0, w_rate=1.0, z_shape=1.0, z_rate=1.0)


@pytest.fixture(scope="module")
def small():
    return PoissonGammaMF(pmf_synthetic(rows=30, cols=50, factors=3, seed=0), n_factors=3, eval_samples=400, **PRIORS)


def _one_column(model, lam, j, iterations):
    """The coordinate ascent of column j written out entry by entry (Gopalan et al. 2015, eq. 4–6)."""
    shape, rate = lam["W"].shape_rate()
    e_log_w, e_w = digamma(shape) - np.log(rate), shape / rate
    a_z, b_z = model.hyper[2], model.hyper[3]
    beta = b_z + sum(model.mask[i, j] * e_w[i] for i in range(model.V))
    nz = [i for i in range(model.V) if model.mask[i, j] and model.X[i, j] > 0]
    alpha = a_z + np.full(model.K, sum(model.X[i, j] for i in nz) / model.K)
    for _ in range(iterations):
        phis = {i: np.exp(e_log_w[i] + digamma(alpha) - np.log(beta)) for i in nz}
        alpha = a_z + sum(model.X[i, j] * phis[i] / phis[i].sum() for i in nz)
    return alpha, beta


def test_model_is_conditionally_conjugate(small):
    assert isinstance(small, ConditionallyConjugate)


def test_vectorised_locals_match_the_column_by_column_loop(small):
    lam = small.init_globals(np.random.default_rng(1))
    approx = LocalApprox(inner_iterations=7, inner_tol=0.0)
    blocks = small.fitted_blocks(ConjugatePosterior(lam, approx))
    alpha, beta = blocks["Z"].shape_rate()
    for j in (0, 7, 49):
        want_alpha, want_beta = _one_column(small, lam, j, 7)
        np.testing.assert_allclose(alpha[j], want_alpha, rtol=1e-12)
        np.testing.assert_allclose(beta[j], want_beta, rtol=1e-12)


def test_global_statistics_are_expected_counts_and_rates(small):
    lam = small.init_globals(np.random.default_rng(2))
    batch = np.array([3, 10, 11])
    stats = small.local_statistics(small.expected_view(lam), batch, LocalApprox(), np.random.default_rng(0))
    shape_part, rate_part = stats["W"].arrays()
    # every count is shared out among the K factors: the expected counts sum to the data
    np.testing.assert_allclose(shape_part.sum(1), small.X[:, batch].sum(1), rtol=1e-12)
    assert np.all(rate_part <= 0)


def test_reported_elbo_bounds_the_augmented_one(small):
    """The reported ELBO (counts summed out) is ≥ the auxiliary-count bound at optimal q(c), by Jensen."""
    vmp = VMP()
    vmp.init(small, np.random.default_rng(0))
    for _ in range(15):
        vmp.step()
    blocks = small.fitted_blocks(vmp.posterior())
    (sw, rw), (sz, rz) = blocks["W"].shape_rate(), blocks["Z"].shape_rate()
    elw, elz = digamma(sw) - np.log(rw), digamma(sz) - np.log(rz)
    log_mix = logsumexp(elw[:, None, :] + elz[None, :, :], axis=-1)
    X, m = small.X, small.mask
    aux = (np.where(X > 0, X * log_mix, 0.0) - m * ((sw / rw) @ (sz / rz).T) - m * gammaln(X + 1)).sum()
    aux -= sum(float(blocks[k].kl(small.prior[k]).sum()) for k in blocks)
    reported = small.evaluate(vmp.posterior(), np.random.default_rng(0))["elbo"]
    assert aux < reported < aux + 0.2 * abs(aux), (aux, reported)


def test_vmp_svi_and_gibbs_fit_better_than_their_start(small):
    for alg in (VMP(), SVI(batch_size=10, kappa=0.6), GibbsSampler()):
        alg.init(small, np.random.default_rng(0))
        before = small.evaluate(alg.posterior(), np.random.default_rng(1))
        for _ in range(40):
            alg.step()
        after = small.evaluate(alg.posterior(), np.random.default_rng(1))
        assert after["heldout_loglik"] > before["heldout_loglik"] + 0.05, (type(alg).__name__, before, after)
        assert after["recon_loss_fit"] < before["recon_loss_fit"], type(alg).__name__


def test_gibbs_same_seed_same_chain(small):
    states = []
    for _ in range(2):
        g = GibbsSampler()
        g.init(small, np.random.default_rng(3))
        g.step()
        states.append(g.posterior())
    np.testing.assert_array_equal(states[0].W, states[1].W)
    np.testing.assert_array_equal(states[0].Z, states[1].Z)


@pytest.mark.parametrize("bad", [-1.0, 2.5])
def test_counts_must_be_non_negative_integers(bad):
    data = pmf_synthetic(rows=5, cols=6, factors=2, seed=0)
    X = data.train["X"].copy()
    X[tuple(np.argwhere(data.train["mask"] > 0)[0])] = bad
    data = dataclasses.replace(data, train={**data.train, "X": X})
    with pytest.raises(IncompatibleData, match="non-negative integer counts") as err:
        PoissonGammaMF(data, n_factors=2)
    assert "\n" not in str(err.value)


def test_nonzeros_are_the_observed_nonzero_counts_without_a_dense_copy():
    """The sparse matrix built from the entries' positions is the one scipy builds from the masked dense matrix, and
    its column sums of log X! are the dense ones."""
    rng = np.random.default_rng(0)
    X = rng.poisson(0.7, size=(23, 31)).astype(float)
    mask = rng.uniform(size=X.shape) < 0.8
    dense = scipy.sparse.csc_matrix(np.where(mask, X, 0.0))
    dense.eliminate_zeros()
    nz = Nonzeros(X, mask)
    for field in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(nz.csc, field), getattr(dense, field))
    np.testing.assert_array_equal(nz.column_sums(lambda x: gammaln(x + 1.0)), (gammaln(X + 1.0) * mask).sum(0))


def test_a_fully_observed_matrix_is_not_copied_and_a_masked_one_is_zeroed_where_unobserved(small):
    X = small.data.train["X"]
    full = PoissonGammaMF(Dataset("full", "count-matrix", {"X": X, "mask": np.ones(X.shape, bool)}, {}), n_factors=2)
    assert np.shares_memory(full.X, X) and np.array_equal(full.mask, np.ones(X.shape))
    mask = small.data.train["mask"]
    assert not mask.all() and np.array_equal(small.X, np.where(mask, X, 0.0))
