"""Mimno-SVI on LDA with the sparse global step (Mimno, Hoffman & Blei 2012) against the dense step.

The two paths draw the same minibatches and the same uniforms in the same order; they differ only in
how λ is rounded (λ = s·μ + c against (1 − ρ)λ + ρ(η + (D/|B|) n̂) in natural parameters), about 1e-15
relative.  A Gibbs draw u·total against a cumulative sum of topic weights flips on such a difference
only if u·total falls within ~1e-15 of a boundary: with the ~10⁵ draws of a run here, a chance of about
1e-10, and the runs are deterministic given their seed, so the equality below is not a lucky pass
(a flipped draw would move λ by ρ(D/|B|)/samples, far above the 1e-10 asked).
"""
from __future__ import annotations

import numpy as np
import pytest

from svibench.algorithms.svi import SVI
from svibench.capabilities.sparse import SparseGlobalStep
from svibench.models.lda import LDA
from svibench.problem import build_model
from svibench.spec import ProblemSpec

SMALL = ProblemSpec("lda/sparse-test", "lda", "lda-synthetic", {"n_topics": 6},
                    {"n_docs": 240, "n_test": 40, "vocab": 300, "n_topics": 6, "mean_length": 30.0})


@pytest.fixture(scope="module")
def lda() -> LDA:
    return build_model(SMALL, cache=False)


def _run(lda: LDA, steps: int, **params) -> SVI:
    alg = SVI(batch_size=12, local="gibbs", view="expected", **params)
    alg.init(lda, np.random.default_rng(5))
    for _ in range(steps):
        alg.step()
    return alg


@pytest.mark.parametrize("schedule, steps", [({"t0": 4.0, "kappa": 0.6}, 40),
                                              ({"rho": 0.99}, 60)])  # s = 0.01^t: renormalised at t = 50
def test_sparse_mimno_svi_follows_the_dense_trajectory(lda, schedule, steps):
    dense, sparse = (_run(lda, steps, sparse=flag, **schedule) for flag in (False, True))
    assert dense.lazy_ is None and sparse.lazy_ is not None
    want = dense.posterior().lam["topics"].concentration()
    got = sparse.posterior().lam["topics"].concentration()
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert sparse.rng_.bit_generator.state == dense.rng_.bit_generator.state  # the same draws, all of them
    assert 0.0 < sparse.lazy_.s < 1.0 and sparse.lazy_.c > 0.0  # the decay is still lazy
    if "rho" in schedule:
        assert sparse.lazy_.s > 0.01 ** steps  # ... after a renormalisation


def test_the_locals_read_only_the_minibatch_words(lda):
    """The sparse statistics are the dense ones' nonzero entries, computed from λ at the minibatch's words
    only (a λ that is wrong elsewhere changes nothing)."""
    assert isinstance(lda, SparseGlobalStep)
    alg = _run(lda, 3)
    batch = np.arange(12)
    words = np.unique(lda.corpus.arrays(batch)[1])
    assert len(words) < lda.V / 2
    approx = alg.approx_
    dense = lda.local_statistics(lda.expected_view(alg.posterior().lam), batch, approx, np.random.default_rng(0))
    outside = np.setdiff1d(np.arange(lda.V), words)
    alg.lazy_.mu[outside] = np.nan
    stats = lda.sparse_statistics(alg.lazy_, batch, approx, np.random.default_rng(0))
    got = np.zeros((lda.K, lda.V))
    got[stats.rows, stats.cols] = stats.values
    np.testing.assert_array_equal(got, dense["topics"].eta)
    assert np.all(stats.values > 0)
