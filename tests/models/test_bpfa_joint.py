"""BPFA's log joint and mean-field family (models.bpfa.joint, models.score_families) for score-function BBVI."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from svibench.algorithms.bbvi import BBVI
from svibench.algorithms.svi import SVI
from svibench.datasets.bpfa_synthetic import bpfa_synthetic
from svibench.models.bpfa import BPFA
from svibench.models.score_families import MeanFieldBernoulli, MeanFieldBeta, ProductFamily


@pytest.fixture(scope="module")
def tiny():
    """12 rows, D = 5, K = 3, 20% of entries held out (masks exercised)."""
    return BPFA(bpfa_synthetic(n=12, dim=5, features=3, heldout=0.2, seed=3), features=3, predictive_samples=2,
                init_rows=12, init_sweeps=2)


def _perturbed_phi(family, rng):
    return family.init_params(rng) + 0.3 * rng.normal(size=family.n_params)


def test_log_joint_equals_the_densities_written_out_with_scipy(tiny):
    fam = tiny.variational_family()
    rng = np.random.default_rng(0)
    z = fam.sample(_perturbed_phi(fam, rng), rng, 4)
    v = fam.unpack(z)
    h, (N, D), K = tiny.hyper, tiny.Y.shape, tiny.features
    expected = []
    for s in range(4):
        x = v["Z"][s] * v["W"][s]
        lp = stats.beta.logpdf(v["pi"][s], h["a0"], h["b0"]).sum()
        lp += stats.norm.logpdf(v["phi"][s], 0.0, D**-0.5).sum()
        lp += stats.gamma.logpdf(v["gamma_obs"][s], h["c0"], scale=1 / h["d0"])
        lp += stats.gamma.logpdf(v["gamma_w"][s], h["e0"], scale=1 / h["f0"])
        lp += stats.bernoulli.logpmf(v["Z"][s], v["pi"][s]).sum()
        lp += stats.norm.logpdf(v["W"][s], 0.0, v["gamma_w"][s] ** -0.5).sum()
        on = tiny.M > 0
        lp += stats.norm.logpdf(tiny.Y[on], (x @ v["phi"][s])[on], v["gamma_obs"][s] ** -0.5).sum()
        expected.append(lp)
    assert 0 < tiny.M.mean() < 1 and 0 < v["Z"].mean() < 1
    np.testing.assert_allclose(tiny.log_joint(z), expected, rtol=1e-10)


def test_markov_blankets_carry_every_term_that_involves_the_latent(tiny):
    """Changing one latent changes log p by exactly the change of its own block's column."""
    fam = tiny.variational_family()
    rng = np.random.default_rng(1)
    z = fam.sample(_perturbed_phi(fam, rng), rng, 1)
    start = np.cumsum([0] + [p.dim for p in fam.parts.values()])
    for part, first in zip(fam.parts, start):
        for j in (first, first + fam.parts[part].dim - 1):
            z2 = z.copy()
            z2[0, j] = 1.0 - z[0, j] if part in ("z", "pi") else z[0, j] * 1.3 + 0.1
            change = tiny.log_joint(z2) - tiny.log_joint(z)
            column = tiny.log_joint_blocks(z2, "meanfield")[0, j] - tiny.log_joint_blocks(z, "meanfield")[0, j]
            assert abs(change[0]) > 1e-6, (part, j)
            assert column == pytest.approx(change[0], rel=1e-9), (part, j)


def test_bpfa_log_joint_rejects_minibatches_with_the_reason(tiny):
    fam = tiny.variational_family()
    z = fam.sample(fam.init_params(np.random.default_rng(0)), np.random.default_rng(0), 2)
    with pytest.raises(ValueError, match="batch_size = None"):
        tiny.log_joint(z, batch=np.arange(4))


def _scipy_log_q(family, phi, z):
    if isinstance(family, ProductFamily):
        return np.concatenate([_scipy_log_q(part, p, zp) for part, p, zp in
                               zip(family.parts.values(), family.split_params(phi).values(), family.split(z).values())], 1)
    if isinstance(family, MeanFieldBeta):
        return stats.beta.logpdf(z, *family.ab(phi))
    return stats.bernoulli.logpmf(z, family.posterior(phi))


@pytest.mark.parametrize("family", [MeanFieldBeta(3), MeanFieldBernoulli(3),
                                    ProductFamily({"a": MeanFieldBeta(2), "b": MeanFieldBernoulli(3)})])
def test_score_families_densities_and_mean_zero_scores(family):
    """log q per block against scipy and E_q[score] = 0 by Monte Carlo (the score against finite
    differences of log q is in test_bbvi, with the other families)."""
    rng = np.random.default_rng(2)
    phi = family.init_params(rng) + 0.4 * rng.normal(size=family.n_params)
    z = family.sample(phi, rng, 5)
    np.testing.assert_allclose(family.log_q_blocks(phi, z), _scipy_log_q(family, phi, z), rtol=1e-10)
    draws = family.sample(phi, rng, 200_000)
    score = family.score(phi, draws)
    np.testing.assert_array_less(np.abs(score.mean(0)), 5 * score.std(0) / np.sqrt(len(draws)) + 1e-12)


def test_evaluated_elbo_of_the_fitted_q_matches_monte_carlo(tiny):
    """``evaluate``'s closed-form ELBO of a BBVI posterior (local ELBO of the fitted locals minus the
    globals' KL) against E_q[log p(y, latents) − log q] from the family's draws and the log joint."""
    fam = tiny.variational_family()
    rng = np.random.default_rng(4)
    phi = fam.init_params(rng) + 0.2 * rng.normal(size=fam.n_params)
    closed = tiny.evaluate(fam.posterior(phi), np.random.default_rng(5))["elbo"]
    z = fam.sample(phi, rng, 100_000)
    terms = tiny.log_joint(z) - fam.log_q_blocks(phi, z).sum(1)
    assert closed == pytest.approx(terms.mean(), abs=5 * terms.std() / np.sqrt(len(terms)))


def test_bbvi_fits_bpfa_most_of_the_way_to_mf_svi():
    """Score-function BBVI on 200 rows from the prior: in 100 steps its ELBO closes over half the gap
    between its initial q and MF-SVI's (about 90% in practice) and its held-out log-likelihood rises."""
    model = BPFA(bpfa_synthetic(n=200, dim=10, features=8, seed=0), features=8, predictive_samples=2,
                 init_rows=50, init_sweeps=2)
    bbvi, svi = BBVI(n_samples=50), SVI(batch_size=50)
    bbvi.init(model, np.random.default_rng(1))
    svi.init(model, np.random.default_rng(1))
    first = model.evaluate(bbvi.posterior(), np.random.default_rng(2))
    for _ in range(100):
        bbvi.step()
        svi.step()
    last = model.evaluate(bbvi.posterior(), np.random.default_rng(2))
    target = model.evaluate(svi.posterior(), np.random.default_rng(2))["elbo"]
    assert last["elbo"] > first["elbo"] + 0.5 * (target - first["elbo"])
    assert last["heldout_loglik"] > first["heldout_loglik"] + 1.0
