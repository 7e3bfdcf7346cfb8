"""Mimno et al. (2012)'s lazy global step (svibench.capabilities.sparse) against SVI's dense natural step."""
from __future__ import annotations

import numpy as np
import pytest

from svibench.capabilities import natural_step
from svibench.capabilities.sparse import RENORMALISE_BELOW, LazyGlobal, SparseStatistics
from svibench.expfam import DirichletNatural

K, V, ETA, SCALE = 6, 40, 0.05, 25.0


def _sparse_counts(rng: np.random.Generator) -> tuple[SparseStatistics, np.ndarray]:
    """A few (k, v) entries, each once, holding averaged Gibbs counts (multiples of 1/3); and the same as a dense (K, V)."""
    flat = rng.choice(K * V, size=rng.integers(1, 30), replace=False)
    k, v = np.divmod(flat, V)
    values = rng.integers(1, 10, size=len(flat)) / 3
    dense = np.zeros((K, V))
    dense[k, v] = values
    return SparseStatistics(k, v, values), dense


def _rho(t: int) -> float:
    """Robbins–Monro on odd steps, 0.6 on even ones (s falls by 0.4 every other step: below 1e-100 within
    about 500 steps), and one step of ρ = 1 (s = 0: λ forgets its past, batch VMP's step)."""
    return 1.0 if t == 77 else 0.6 if t % 2 == 0 else (t + 1.0) ** -0.7


def test_lazy_step_matches_the_dense_natural_step_over_hundreds_of_steps():
    rng = np.random.default_rng(0)
    lam0 = rng.gamma(100.0, 0.01, size=(K, V))
    lam = {"topics": DirichletNatural.from_concentration(lam0)}
    eta = {"topics": DirichletNatural.from_concentration(np.full((K, V), ETA))}
    lazy = LazyGlobal.from_dense(lam0, ETA)
    renormalised = 0
    for t in range(1, 801):
        stats, dense = _sparse_counts(rng)
        lam = natural_step(lam, eta, {"topics": DirichletNatural(dense)}, _rho(t), SCALE)
        s_before = lazy.s
        lazy.step(stats, _rho(t), SCALE)
        lazy.ensure_finite(stats, t)
        renormalised += lazy.s > s_before
        want = lam["topics"].concentration()
        np.testing.assert_allclose(lazy.dense(), want, rtol=1e-10, err_msg=f"step {t}")
        np.testing.assert_allclose(lazy.row_totals(), want.sum(axis=1), rtol=1e-10, err_msg=f"step {t}")
        cols = np.unique(stats.cols)
        np.testing.assert_allclose(lazy.columns(cols), want[:, cols].T, rtol=1e-10, err_msg=f"step {t}")
    assert renormalised >= 2  # the ρ = 1 step and at least one s < 1e-100
    assert lazy.s < 1.0 and lazy.c > 0.0  # the decay and the prior's share are still lazy at the end


def test_renormalising_keeps_lambda_and_sets_s_to_one():
    rng = np.random.default_rng(1)
    lazy = LazyGlobal.from_dense(rng.gamma(1.0, 1.0, size=(K, V)), ETA)
    for t in range(1, 40):
        lazy.step(_sparse_counts(rng)[0], 0.5, SCALE)
    before = lazy.dense()
    assert RENORMALISE_BELOW < lazy.s < 1e-10
    lazy.renormalise()
    assert lazy.s == 1.0
    np.testing.assert_allclose(lazy.dense(), before, rtol=1e-13)
    np.testing.assert_allclose(lazy.totals, lazy.mu.sum(axis=0), rtol=1e-13)


def test_a_non_finite_step_is_reported_as_divergence():
    from svibench.errors import Diverged

    lazy = LazyGlobal.from_dense(np.ones((K, V)), ETA)
    stats = SparseStatistics(np.array([1]), np.array([2]), np.array([np.inf]))
    lazy.step(stats, 0.1, SCALE)
    with pytest.raises(Diverged, match="after iteration 3"):
        lazy.ensure_finite(stats, 3)
