"""LDA: compiled loops against their references, samplers against exact enumeration, the ELBO against
Monte Carlo, the log joint's gradient against finite differences, and the SVI equivalences."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.sparse
from scipy.optimize import linear_sum_assignment
from scipy.special import digamma, gammaln, logsumexp
from scipy.stats import dirichlet

from svibench.algorithms.cvi_mf import CVIMF
from svibench.algorithms.gibbs import GibbsSampler
from svibench.algorithms.svi import SVI, VMP
from svibench.capabilities.conjugate import LocalApprox
from svibench.data import DataError, Dataset
from svibench.models.lda import LDA, kernels, reference
from svibench.models.lda.corpus import Corpus
from svibench.models.lda.evaluation import elbo, fit_documents

def _corpus(rng, D=30, V=12, K=3, length=15, alpha=0.2, eta=0.1):
    """A small LDA draw: (counts CSR, true topics)."""
    beta = rng.dirichlet(np.full(V, eta), size=K)
    theta = rng.dirichlet(np.full(K, alpha), size=D)
    X = np.array([rng.multinomial(max(rng.poisson(length), 2), t @ beta) for t in theta], dtype=float)
    return scipy.sparse.csr_matrix(X[X.sum(1) > 0]), beta


def _dataset(rng, D=200, D_test=40, V=30, K=3, length=40, alpha=0.2, eta=0.05):
    counts, beta = _corpus(rng, D + D_test, V, K, length, alpha, eta)
    test = counts[D:].toarray()
    observed = rng.binomial(test.astype(np.int64), 0.5).astype(float)
    keep = (observed.sum(1) > 0) & ((test - observed).sum(1) > 0)
    return Dataset("tiny-lda", "bag-of-words", {"counts": counts[:D]},
                   {"observed": scipy.sparse.csr_matrix(observed[keep]),
                    "heldout": scipy.sparse.csr_matrix((test - observed)[keep])}, {"topics": beta})


# -- compiled loops against the references
def test_digamma_matches_scipy():
    x = np.concatenate([np.geomspace(1e-3, 1e4, 400), [0.01, 0.5, 1.0, 5.999, 6.0, 6.001]])
    np.testing.assert_allclose([kernels.digamma(v) for v in x], digamma(x), rtol=1e-11, atol=1e-11)


def test_mf_kernel_matches_reference():
    rng = np.random.default_rng(0)
    counts, beta = _corpus(rng)
    corpus = Corpus(counts)
    weights = np.ascontiguousarray(beta.T * rng.uniform(0.5, 1.0, size=beta.T.shape))
    results = []
    for loops in (kernels, reference):
        gamma = np.full((corpus.D, 3), 1.0)
        stats = np.zeros((corpus.V, 3))
        loops.mf_documents(*corpus.arrays(), weights, 0.2, gamma, 50, 1e-6, stats, True)
        results.append((gamma, stats))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-10)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-10, atol=1e-12)
    assert results[0][1].sum() == pytest.approx(counts.sum())  # Σ_k φ = 1 on every token


def test_gibbs_kernels_match_reference_draw_for_draw():
    rng = np.random.default_rng(1)
    counts, beta = _corpus(rng)
    corpus = Corpus(counts)
    weights = np.ascontiguousarray(beta.T)
    u = rng.random((1 + 2 + 3, corpus.n_tokens))
    stats = [np.zeros((corpus.V, 3)) for _ in range(2)]
    for loops, out in zip((kernels, reference), stats):
        loops.gibbs_documents(*corpus.arrays(), weights, 0.2, u, 2, 3, out)
    np.testing.assert_allclose(stats[0], stats[1], atol=1e-12)
    doc, word = corpus.tokens()
    z0 = rng.integers(3, size=len(doc))
    states = []
    for loops in (kernels, reference):
        z, ndk, nwk = z0.copy(), np.zeros((corpus.D, 3), np.int64), np.zeros((corpus.V, 3), np.int64)
        np.add.at(ndk, (doc, z), 1)
        np.add.at(nwk, (word, z), 1)
        nk = nwk.sum(0)
        loops.collapsed_sweep(doc, word, z, ndk, nwk, nk, 0.2, 0.1, u[0])
        states.append((z, ndk, nwk, nk))
    for a, b in zip(*states):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(states[0][0], z0)


@pytest.mark.parametrize("K, alpha", [(12, 0.01), (40, 0.5), (1, 0.1)])
def test_the_sparse_gibbs_kernel_matches_the_reference_with_many_topics(K, alpha):
    """Draw for draw at the sizes where the document's part and the smoothing part both fall (topics entering and
    leaving a document's list, a small α, one topic), on weights with zeros in them."""
    rng = np.random.default_rng(4)
    counts, _ = _corpus(rng, D=20, V=25, K=K, length=30)
    corpus = Corpus(counts)
    weights = rng.dirichlet(np.full(K, 0.3), size=corpus.V) * (rng.random((corpus.V, K)) > 0.2)
    weights[:, 0] += 1e-3  # every word has some weight
    u = rng.random((1 + 3 + 4, corpus.n_tokens))
    stats = [np.zeros((corpus.V, K)) for _ in range(2)]
    for loops, out in zip((kernels, reference), stats):
        loops.gibbs_documents(*corpus.arrays(), np.ascontiguousarray(weights), alpha, u, 3, 4, out)
    np.testing.assert_array_equal(stats[0], stats[1])
    assert stats[0].sum() == pytest.approx(corpus.n_tokens)


# -- samplers against exact enumeration
def _exact_local(tokens, weights, alpha, K):
    """E[#{n: z_n = k, w_n = v}] under p(z | w, β) ∝ Π_n β_{z_n w_n} · DirMult(counts(z) | α), by enumeration."""
    expected = np.zeros(weights.shape)
    configs = list(itertools.product(range(K), repeat=len(tokens)))
    logp = []
    for z in configs:
        n_k = np.bincount(z, minlength=K)
        logp.append(np.sum(np.log(weights[tokens, z])) + np.sum(gammaln(alpha + n_k)))
    p = np.exp(np.array(logp) - logsumexp(logp))
    for z, pz in zip(configs, p):
        np.add.at(expected, (tokens, np.array(z)), pz)
    return expected


def test_mimno_local_sampler_targets_the_collapsed_local_posterior():
    """Mimno et al. (2012)'s sweep, averaged over many sweeps, gives the exact expected topic-word counts."""
    rng = np.random.default_rng(2)
    K, V = 2, 3
    weights = np.ascontiguousarray(rng.dirichlet(np.ones(V), size=K).T)
    counts = scipy.sparse.csr_matrix(np.array([[2.0, 1.0, 2.0]]))
    corpus = Corpus(counts)
    samples = 40_000
    stats = np.zeros((V, K))
    u = rng.random((1 + 20 + samples, corpus.n_tokens))
    fit = np.zeros_like(stats)
    kernels.gibbs_documents(*corpus.arrays(), weights, 0.3, u, 20, samples, fit)
    exact = _exact_local(np.repeat(np.arange(V), [2, 1, 2]), weights, 0.3, K)
    np.testing.assert_allclose(fit, exact, atol=0.03)
    assert np.abs(exact - exact[:, ::-1]).max() > 0.2  # the statistic is not symmetric: a wrong sampler would show


def test_mimno_local_sampler_targets_the_collapsed_local_posterior_with_several_topics():
    """As above with K = 4 and α = 0.05, where most of a draw's mass is in the document's own topics and the rest in
    the smoothing part: both parts, and the order they are laid out in, must give the exact conditional."""
    rng = np.random.default_rng(5)
    K, V = 4, 3
    weights = np.ascontiguousarray(rng.dirichlet(np.full(V, 0.7), size=K).T)
    corpus = Corpus(scipy.sparse.csr_matrix(np.array([[2.0, 1.0, 2.0]])))
    samples = 60_000
    u = rng.random((1 + 20 + samples, corpus.n_tokens))
    fit = np.zeros((V, K))
    kernels.gibbs_documents(*corpus.arrays(), weights, 0.05, u, 20, samples, fit)
    exact = _exact_local(np.repeat(np.arange(V), [2, 1, 2]), weights, 0.05, K)
    np.testing.assert_allclose(fit, exact, atol=0.03)


def test_collapsed_gibbs_samples_the_exact_posterior_over_assignments():
    """P(z_i = z_j) of every token pair (label-invariant) from the chain against enumeration of p(z | w)."""
    rng = np.random.default_rng(3)
    X = np.array([[2.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    data = Dataset("two-docs", "bag-of-words", {"counts": scipy.sparse.csr_matrix(X)})
    model = LDA(data, n_topics=2, alpha=0.5, eta=0.3)
    doc, word = model.corpus.tokens()
    n, K, V = len(doc), 2, 3
    logp, configs = [], list(itertools.product(range(K), repeat=n))
    for z in configs:
        z = np.array(z)
        ndk = np.zeros((2, K)); np.add.at(ndk, (doc, z), 1)
        nkv = np.zeros((K, V)); np.add.at(nkv, (z, word), 1)
        logp.append(np.sum(gammaln(ndk + 0.5)) + np.sum(gammaln(nkv + 0.3)) - np.sum(gammaln(nkv.sum(1) + V * 0.3)))
    p = np.exp(np.array(logp) - logsumexp(logp))
    same = lambda z: (z[:, None] == z[None, :]).astype(float)
    exact = sum(pz * same(np.array(z)) for z, pz in zip(configs, p))
    sampler = GibbsSampler()
    sampler.init(model, rng)
    acc = np.zeros((n, n))
    for _ in range(200):
        sampler.step()
    sweeps = 20_000
    for _ in range(sweeps):
        sampler.step()
        acc += same(sampler.posterior().z)
    np.testing.assert_allclose(acc / sweeps, exact, atol=0.02)
    assert np.ptp(exact[np.triu_indices(n, 1)]) > 0.1


# -- the ELBO and the log joint
def test_elbo_matches_monte_carlo():
    rng = np.random.default_rng(4)
    counts, _ = _corpus(rng, D=3, V=4, K=2, length=5)
    corpus, alpha, eta = Corpus(counts), 0.4, 0.3
    lam = rng.uniform(0.5, 3.0, size=(2, 4))
    closed = elbo(corpus, lam, alpha, eta, 200, 0.0)
    elog_beta = digamma(lam) - digamma(lam.sum(1, keepdims=True))
    gamma = fit_documents(corpus, np.exp(elog_beta).T, alpha, 200, 0.0)
    elog_theta = digamma(gamma) - digamma(gamma.sum(1, keepdims=True))
    X = counts.toarray()
    S = 40_000
    beta = np.stack([rng.dirichlet(l, size=S) for l in lam], axis=1)           # (S, K, V)
    theta = np.stack([rng.dirichlet(g, size=S) for g in gamma], axis=1)        # (S, D, K)
    total = np.zeros(S)
    for d in range(len(X)):
        log_phi = elog_theta[d][:, None] + elog_beta                           # (K, V)
        log_phi -= logsumexp(log_phi, axis=0)
        # E_z[log p(w, z | θ, β) − log q(z)] in closed form over z given the draws of θ and β
        term = np.exp(log_phi) * (np.log(theta[:, d, :, None]) + np.log(beta) - log_phi)
        total += np.einsum("skv,v->s", term, X[d])
        total += dirichlet.logpdf(theta[:, d].T, np.full(2, alpha)) - dirichlet.logpdf(theta[:, d].T, gamma[d])
    for k in range(2):
        total += dirichlet.logpdf(beta[:, k].T, np.full(4, eta)) - dirichlet.logpdf(beta[:, k].T, lam[k])
    assert closed == pytest.approx(total.mean(), abs=4 * total.std() / np.sqrt(S))


def test_log_joint_gradient_matches_finite_differences():
    rng = np.random.default_rng(5)
    model = LDA(_dataset(rng, D=8, D_test=4, V=6, K=2, length=10), n_topics=2, alpha=0.7, eta=0.4)
    z = rng.uniform(0.5, 2.0, size=(2, model.corpus.D * 2 + 2 * model.V))
    batch = np.array([1, 4, 6])
    grad = model.grad_log_joint(z, batch)
    eps = 1e-6
    for i in rng.choice(z.shape[1], size=12, replace=False):
        step = np.zeros_like(z); step[:, i] = eps
        fd = (model.log_joint(z + step, batch) - model.log_joint(z - step, batch)) / (2 * eps)
        np.testing.assert_allclose(grad[:, i], fd, rtol=1e-5, atol=1e-6)
    blocks = model.log_joint_blocks(z, "meanfield")
    assert blocks.shape == z.shape


# -- equivalences and end-to-end behaviour
def test_full_batch_svi_with_rho_one_is_vmp():
    rng = np.random.default_rng(6)
    model = LDA(_dataset(rng), n_topics=3, alpha=0.2, eta=0.05)
    runs = [SVI(batch_size=model.n_train, rho=1.0), VMP(), CVIMF(rho=1.0)]
    for alg in runs:
        alg.init(model, np.random.default_rng(7))
        for _ in range(4):
            alg.step()
    lams = [alg.lam_["topics"].concentration() for alg in runs[:2]]
    lams.append(runs[2].posterior().lam["topics"].concentration())
    np.testing.assert_allclose(lams[0], lams[1], rtol=1e-9)
    np.testing.assert_allclose(lams[2], lams[1], rtol=1e-9)


def _aligned_l1(a: np.ndarray, b: np.ndarray) -> float:
    """Mean L1 distance of topics a and b (K, V) after the best matching of b's topics to a's."""
    cost = np.abs(a[:, None, :] - b[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return float(cost[rows, cols].mean())


def test_sampled_locals_agree_with_the_collapsed_gibbs_topics():
    """Mimno-SVI and Gibbs-SSVI converge to the topics of the collapsed Gibbs sampler's stationary state."""
    rng = np.random.default_rng(8)
    model = LDA(_dataset(rng, D=300, V=30, K=3, length=50, eta=0.05), n_topics=3, alpha=0.2, eta=0.05)
    sampler = GibbsSampler()
    sampler.init(model, np.random.default_rng(9))
    reference_topics = np.zeros((3, model.V))
    for t in range(300):
        sampler.step()
        if t >= 200:
            reference_topics += sampler.posterior().topics(model.eta) / 100
    for view in ("expected", "sampled"):
        alg = SVI(batch_size=50, local="gibbs", view=view, burnin=5, samples=5, t0=10.0, kappa=0.7)
        alg.init(model, np.random.default_rng(10))
        for _ in range(300):
            alg.step()
        lam = alg.posterior().lam["topics"].concentration()
        assert _aligned_l1(lam / lam.sum(1, keepdims=True), reference_topics) < 0.08, view
    assert _aligned_l1(rng.dirichlet(np.ones(model.V), size=3), reference_topics) > 0.5


def test_svi_reaches_the_true_topics_perplexity():
    """From the restart with the best ELBO (LDA's ELBO has local optima: here 1 start of 3 merges two topics)."""
    rng = np.random.default_rng(11)
    model = LDA(_dataset(rng, D=400, V=30, K=3, length=60), n_topics=3, alpha=0.2, eta=0.05)
    runs = []
    for seed in (12, 13, 14):
        alg = SVI(batch_size=50, t0=10.0, kappa=0.7)
        alg.init(model, np.random.default_rng(seed))
        assert model.evaluate(alg.posterior(), rng)["perplexity_vs_truth"] > 1.2
        for _ in range(200):
            alg.step()
        runs.append(model.evaluate(alg.posterior(), rng))
    best = max(runs, key=lambda m: m["elbo"])
    assert best["perplexity_vs_truth"] < 1.01
    assert max(m["perplexity_vs_truth"] for m in runs) > 1.05  # the merged-topics optimum, found by its ELBO
    assert best["perplexity"] == pytest.approx(np.exp(-best["heldout_loglik"]))


# -- bad input
@pytest.mark.parametrize("params, message", [({"n_topics": 0}, "n_topics"), ({"n_topics": 2, "alpha": -1.0}, "alpha")])
def test_bad_hyperparameters_are_one_line_errors(params, message):
    with pytest.raises(ValueError, match=message):
        LDA(_dataset(np.random.default_rng(0), D=10, D_test=5), **params)


@pytest.mark.parametrize("where, row2, match", [
    ("counts", [-1.0], r"lda on tiny-lda \(train counts\): document 2 holds a negative or non-integer count"),
    ("counts", [1.5], r"\(train counts\): document 2 holds a negative or non-integer count"),
    ("counts", [], r"\(train counts\): document 2 is empty"),
    ("observed", [np.nan], r"\(test observed\): document 2 holds NaN/inf"),
    ("heldout", [1.0] * 31, r"\(test heldout\): document 2 has a word id ≥ V = 30"),
])
def test_bad_counts_in_a_hand_built_dataset_name_the_document(where, row2, match):
    """A Dataset that did not come through the bag-of-words loaders is checked by the model itself: document 2
    gets the entries ``row2`` (nothing else)."""
    data = _dataset(np.random.default_rng(0), D=10, D_test=5, V=30)
    arrays = data.train if where == "counts" else data.test
    X = np.pad(arrays[where].toarray(), ((0, 0), (0, len(row2) > 30)))
    X[2] = 0.0
    X[2, :len(row2)] = row2
    arrays[where] = scipy.sparse.csr_matrix(X)
    with pytest.raises(DataError, match=match) as info:
        LDA(data, n_topics=2)
    assert "\n" not in str(info.value)


def test_unknown_local_kind_is_refused():
    model = LDA(_dataset(np.random.default_rng(0), D=10, D_test=5), n_topics=2)
    view = model.expected_view(model.init_globals(np.random.default_rng(0)))
    with pytest.raises(ValueError, match="offers local approximations mf, gibbs, not 'titsias'"):
        model.local_statistics(view, np.arange(3), LocalApprox("titsias"), np.random.default_rng(0))


def test_mean_field_locals_match_scikit_learn():
    """The E-step of scikit-learn's online LDA (an independent implementation of Hoffman et al. 2010), from the
    same start γ = 1, gives the same γ and statistics."""
    sklearn_lda = pytest.importorskip("sklearn.decomposition._lda")
    rng = np.random.default_rng(13)
    counts, beta = _corpus(rng, D=40, V=25, K=4, length=30)
    weights = beta * rng.uniform(0.5, 1.0, size=beta.shape)
    gamma_sk, stats_sk = sklearn_lda._update_doc_distribution(counts, weights, 0.3, 100, 1e-8, True, None)
    stats = np.zeros((25, 4))
    gamma = fit_documents(Corpus(counts), weights.T, 0.3, 100, 1e-8, stats)
    # to 1e-7: scikit-learn's Cython ψ is a shorter asymptotic series (~1e-9 relative), not scipy's
    np.testing.assert_allclose(gamma, gamma_sk, rtol=1e-7)
    np.testing.assert_allclose(stats.T, stats_sk * weights, rtol=1e-7, atol=1e-12)
