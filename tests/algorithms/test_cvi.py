"""CVI (Khan & Lin 2017, Algorithm 1), NC-VMP and Chol against independent truths."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse

from svibench.algorithms.chol import Chol
from svibench.algorithms.cvi import CVI
from svibench.capabilities.latent_gaussian import GaussianFromSites
from svibench.algorithms.ncvmp import NCVMP
from svibench.capabilities.latent_gaussian import (
    GaussianPosterior,
    LatentGaussianPrior,
    expected_loglik,
    kl_to_prior,
    mean_parameter_gradients,
)
from svibench.data import Dataset
from svibench.datasets.libsvm import australian, breast_cancer
from svibench.models.logreg import BayesianLogisticRegression, logistic_loglik
from svibench.numerics.quadrature import gauss_hermite, monte_carlo
from svibench.testing.gaussian_latent import ConjugateLatentGaussian as _GaussianLatent


class _Logistic:
    """Just the likelihood of the latent-Gaussian capability, for gradient checks."""

    def __init__(self, y):
        self.y = np.asarray(y, float)

    def loglik(self, eta, batch=None):
        return logistic_loglik(eta, self.y if batch is None else self.y[batch])


def _f(mu1, mu2, y, nodes=150):
    """E_{N(m, v)}[log p(y|η)] as a function of the mean parameters μ⁽¹⁾ = m, μ⁽²⁾ = v + m²."""
    model = _Logistic(y)
    return expected_loglik(model, mu1, mu2 - mu1**2, gauss_hermite(nodes)).value


def test_mean_parameter_gradients_match_finite_differences_of_quadrature():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 20).astype(float)
    m, v = rng.normal(0, 2, 20), rng.uniform(0.1, 4.0, 20)
    mu1, mu2 = m, v + m**2
    h = 1e-5
    fd1 = (_f(mu1 + h, mu2, y) - _f(mu1 - h, mu2, y)) / (2 * h)
    fd2 = (_f(mu1, mu2 + h, y) - _f(mu1, mu2 - h, y)) / (2 * h)
    e = expected_loglik(_Logistic(y), m, v, gauss_hermite(150))
    g1, g2 = mean_parameter_gradients(m, e.dm, e.dv)
    np.testing.assert_allclose(g1, fd1, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(g2, fd2, rtol=1e-6, atol=1e-8)
    # the Monte-Carlo gradients are unbiased estimates of the same quantities
    mc = [mean_parameter_gradients(m, *(lambda e: (e.dm, e.dv))(expected_loglik(_Logistic(y), m, v, monte_carlo(rng, 1000))))
          for _ in range(200)]
    np.testing.assert_allclose(np.mean([g[0] for g in mc], 0), fd1, atol=5e-3)
    np.testing.assert_allclose(np.mean([g[1] for g in mc], 0), fd2, atol=2e-3)


@pytest.mark.parametrize("shape", [(40, 5), (6, 30)])
def test_cvi_gives_the_exact_posterior_in_one_step_on_a_conjugate_model(shape):
    """β = 1 on a Gaussian likelihood: the site is the likelihood itself, so q is exact (weight and data space)."""
    rng = np.random.default_rng(1)
    N, D = shape
    X = rng.normal(size=(N, D))
    model = _GaussianLatent(X, X @ rng.normal(size=D) + 0.3 * rng.normal(size=N), precision=rng.uniform(0.5, 2.0, D))
    alg = CVI(expectations="exact", w=None, rho=1.0)
    alg.init(model, rng)
    alg.step()
    q = alg.posterior()
    mean, cov = model.exact_posterior()
    np.testing.assert_allclose(q.mean, mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(q.cov, cov, rtol=1e-7, atol=1e-9)
    # the marginals used by the next step agree with the posterior
    np.testing.assert_allclose(alg.m_, X @ mean, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(alg.v_, np.einsum("nd,de,ne->n", X, cov, X), rtol=1e-7, atol=1e-9)


def test_cvi_gp_regression_in_one_step_matches_closed_form():
    rng = np.random.default_rng(2)
    x = np.sort(rng.uniform(0, 5, 25))
    K = 2.0 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2) + 1e-8 * np.eye(25)
    model = _GaussianLatent(None, np.sin(x) + 0.3 * rng.normal(size=25), cov=K)
    alg = CVI(expectations="exact", w=None, rho=1.0)
    alg.init(model, rng)
    alg.step()
    q = alg.posterior()
    s2 = 0.09
    mean = K @ np.linalg.solve(K + s2 * np.eye(25), model.y)
    cov = K - K @ np.linalg.solve(K + s2 * np.eye(25), K)
    np.testing.assert_allclose(q.mean, mean, atol=1e-7)
    np.testing.assert_allclose(q.cov, cov, atol=1e-7)


@pytest.mark.parametrize("quadrature", ["accurate", "gauss-hermite-150"])
def test_ncvmp_equals_cvi_with_exact_gradients_and_unit_step_on_logistic_regression(quadrature):
    """Khan & Lin (2017), App. G.1: the messages of NC-VMP are CVI's pseudo-observations with β = 1.

    The two share the expectations ∂S/∂(m, v) and nothing else: CVI maps them to
    mean-parameter gradients, NC-VMP solves with the Fisher information.  A unit
    bias precision keeps the first marginal variances moderate (with 1e-4 they
    are ~1e4 and the run is long-tailed).
    """
    model = BayesianLogisticRegression(australian(split=0), delta=1.0, bias_precision=1.0)
    cvi = CVI(expectations="exact", quadrature=quadrature, w=None, rho=1.0)
    nc = NCVMP(quadrature=quadrature)
    cvi.init(model, np.random.default_rng(0))
    nc.init(model, np.random.default_rng(0))
    for _ in range(6):
        cvi.step()
        nc.step()
        t1, t2 = nc.messages()
        np.testing.assert_allclose(cvi.lam1_, t1, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(cvi.lam2_, t2, rtol=1e-6, atol=1e-9)
    a, b = cvi.posterior(), nc.posterior()
    np.testing.assert_allclose(a.mean, b.mean, rtol=1e-6, atol=1e-8)


def test_ncvmp_damping_equals_cvi_step_size():
    model = BayesianLogisticRegression(breast_cancer(split=1), delta=1.0, bias_precision=1.0)
    cvi, nc = CVI(expectations="exact", w=None, rho=0.7), NCVMP(damping=0.3)
    cvi.init(model, np.random.default_rng(0))
    nc.init(model, np.random.default_rng(0))
    for _ in range(3):
        cvi.step()
        nc.step()
    np.testing.assert_allclose(cvi.lam2_, nc.messages()[1], rtol=1e-6)


def test_data_space_and_weight_space_conjugate_steps_agree():
    """The matrix-inversion-lemma route (D > N) and the D × D route give the same q."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 12))
    model = _GaussianLatent(X, rng.normal(size=30), precision=rng.uniform(0.5, 2.0, 12))
    conj = GaussianFromSites(model)
    assert conj.space == "weight"
    lam1, lam2 = rng.normal(size=30), -rng.uniform(0.1, 2.0, 30)
    m_w, v_w = conj.marginals(lam1, lam2)
    q_w = conj.posterior(lam1, lam2)
    conj.space = "data"
    conj.X, conj.prior_var = X, 1.0 / model.prior.precision
    conj.K = (X * conj.prior_var) @ X.T
    m_d, v_d = conj.marginals(lam1, lam2)
    q_d = conj.posterior(lam1, lam2)
    np.testing.assert_allclose(m_w, m_d, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(v_w, v_d, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(q_w.mean, q_d.mean, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(q_w.cov, q_d.cov, rtol=1e-8, atol=1e-10)
    # the data route's log|Σ| by the determinant lemma, and the KL it spares a D × D Cholesky for
    assert q_d.logdet == pytest.approx(np.linalg.slogdet(q_w.cov)[1], rel=1e-10)
    assert kl_to_prior(q_d, model.prior) == pytest.approx(kl_to_prior(q_w, model.prior), rel=1e-10)


class _StudentT(_GaussianLatent):
    """Student-t likelihood (ν = 1): not log-concave, so ĝ⁽²⁾ > 0 happens for outliers."""

    def gaussian_expectation(self, m, v, batch=None):
        raise NotImplementedError("no closed form here: this model serves Monte-Carlo CVI only")

    def loglik(self, eta, batch=None):
        y = (self.y if batch is None else self.y[batch])[:, None]
        r = y - eta
        u = 1.0 + r**2
        return -np.log(np.pi) - np.log(u), 2 * r / u, (2 * r**2 - 2) / u**2


def test_positive_definiteness_safeguard_keeps_every_site_valid():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 3))
    y = X @ np.ones(3) + rng.normal(size=60)
    y[:10] += 30.0  # outliers: E[f''] > 0 there
    model = _StudentT(X, y, precision=np.ones(3))
    alg = CVI(expectations="mc", n_samples=3, w=None, rho=0.9)
    alg.init(model, rng)
    for _ in range(20):
        alg.step()
        assert np.all(alg.lam2_ < 0)
    # the unguarded update would have broken validity: the raw gradient is positive at the outliers
    _, g2 = alg._gradients(np.arange(10))
    assert np.any(g2 > 0)


def test_doubly_stochastic_cvi_approaches_the_full_batch_optimum():
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    full = CVI(expectations="exact", w=0.4)
    full.init(model, np.random.default_rng(0))
    for _ in range(60):
        full.step()
    ds = CVI(expectations="exact", w=None, t0=10.0, kappa=0.6, batch_size=50)
    ds.init(model, np.random.default_rng(0))
    touched = sum(ds.step() for _ in range(600))
    assert touched == 600 * 50
    target = model.elbo(full.posterior())
    assert abs(model.elbo(ds.posterior()) - target) < 0.02 * abs(target)


def _optimum(model, alg, steps):
    alg.init(model, np.random.default_rng(0))
    for _ in range(steps):
        alg.step()
    return model.elbo(alg.posterior())


@pytest.mark.parametrize("dataset, delta, w", [(australian, 1e-5, 0.4), (breast_cancer, 1.0, 0.3)])
def test_cvi_ncvmp_and_chol_reach_the_same_elbo(dataset, delta, w):
    model = BayesianLogisticRegression(dataset(split=0), delta=delta)
    ref = _optimum(model, Chol(iterations_per_step=500), 4)
    results = {
        "CVI-exact": _optimum(model, CVI(expectations="exact", w=w), 100),
        # a constant β leaves Monte-Carlo noise of ~0.3% in the ELBO; a decaying βₜ removes it
        "CVI": _optimum(model, CVI(expectations="mc", w=None, t0=1.0, kappa=0.7), 300),
        "NC-VMP": _optimum(model, NCVMP(damping=0.5), 100),
    }
    for name, elbo in results.items():
        assert abs(elbo - ref) < 1e-3 * abs(ref), (name, elbo, ref)
    # and Chol is at an optimum: no algorithm is noticeably above it
    assert max(results.values()) < ref + 1e-4 * abs(ref)


@pytest.mark.parametrize("make", [lambda q: CVI(expectations="exact", quadrature=q), lambda q: NCVMP(quadrature=q),
                                  lambda q: Chol(quadrature=q)])
@pytest.mark.parametrize("setting", ["gauss-hermite", "gauss-hermite-0", "gh50", 50])
def test_a_bad_quadrature_setting_is_a_one_line_error_naming_the_choices(make, setting):
    with pytest.raises(ValueError, match="'accurate' or 'gauss-hermite-N'") as err:
        make(setting).check_params()
    assert "\n" not in str(err.value)


def test_the_papers_gauss_hermite_setting_reproduces_the_50_node_rule():
    """quadrature="gauss-hermite-50" gives exactly the rule-based expectations; "accurate" the model's."""
    model = BayesianLogisticRegression(breast_cancer(split=0), delta=1.0)
    rows = np.arange(model.n_train)
    for setting, rule in (("gauss-hermite-50", gauss_hermite(50)), ("accurate", None)):
        alg = CVI(expectations="exact", quadrature=setting, w=0.4)
        alg.init(model, np.random.default_rng(0))
        alg.step()
        e = expected_loglik(model, alg.m_, alg.v_, rule, rows)
        for got, want in zip(alg._gradients(rows), mean_parameter_gradients(alg.m_, e.dm, e.dv)):
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("sparse", [False, True])
def test_a_posterior_given_by_a_factor_gives_its_covariances_quantities_and_forms_it_only_when_read(sparse):
    """GaussianPosterior from Σ, from L with Σ = LLᵀ, from L with Σ⁻¹ = LLᵀ and from Σ = diag(d) − GᵀG: the same
    variances, diag(XΣXᵀ), log|Σ|, KL and Σ itself; with more dimensions than rows, the metrics of a logistic
    regression read the factor and never form Σ (D³ flops), and give what Σ gives."""
    rng = np.random.default_rng(7)
    D, N = 40, 12
    d, G = rng.uniform(1.0, 3.0, D), 0.1 * rng.normal(size=(5, D))
    cov = np.diag(d) - G.T @ G
    mean = rng.normal(size=D)
    scale, prec = np.linalg.cholesky(cov), np.linalg.cholesky(np.linalg.inv(cov))
    X = rng.normal(size=(N, D)) * (rng.random((N, D)) < 0.3)
    X = scipy.sparse.csr_matrix(X) if sparse else X
    forms = [GaussianPosterior(mean, cov), GaussianPosterior(mean, scale_tril=scale),
             GaussianPosterior(mean, precision_tril=prec), GaussianPosterior(mean, low_rank=(d, G))]
    prior = LatentGaussianPrior(precision=np.full(D, 2.0))
    truth = forms[0]
    for q in forms[1:]:
        np.testing.assert_allclose(q.variances(), np.diag(cov), rtol=1e-10)
        np.testing.assert_allclose(q.quadratic_rows(X), truth.quadratic_rows(X), rtol=1e-10)
        assert "cov" not in vars(q)  # nothing above formed Σ
        assert kl_to_prior(q, prior) == pytest.approx(kl_to_prior(truth, prior), rel=1e-10)
        np.testing.assert_allclose(q.cov, cov, rtol=1e-10, atol=1e-12)
    assert forms[2].logdet == pytest.approx(np.linalg.slogdet(cov)[1], rel=1e-12)
    with pytest.raises(ValueError, match="needs cov, scale_tril, precision_tril or low_rank"):
        GaussianPosterior(mean)
    data = Dataset("wide", "classification", {"X": X[:, 1:], "y": (rng.random(N) < 0.5).astype(float)},
                   {"X": X[:6, 1:], "y": np.ones(6)})
    model = BayesianLogisticRegression(data, delta=2.0)
    metrics = [model.evaluate(GaussianPosterior(mean, precision_tril=prec), rng), model.evaluate(truth, rng)]
    assert metrics[0] == pytest.approx(metrics[1], rel=1e-10)
    q = GaussianPosterior(mean, precision_tril=prec)
    model.evaluate(q, rng)
    assert "cov" not in vars(q)
    sites = GaussianFromSites(model).posterior(rng.normal(size=N), -0.5 * rng.uniform(0.1, 1.0, N))  # D > N
    assert sites.low_rank is not None and sites.logdet is not None
    model.evaluate(sites, rng)
    assert "cov" not in vars(sites)


def test_a_kernel_prior_given_with_its_factor_gives_the_same_kl_to_the_bit():
    """A GP model hands its prior with K's Cholesky factor (``LatentGaussianPrior.scale_tril``): the KL is the one
    decomposing K gives, bit for bit, and a factor without K is refused."""
    rng = np.random.default_rng(3)
    D = 30
    A = rng.normal(size=(D, D))
    K = A @ A.T + D * np.eye(D)
    q = GaussianPosterior(rng.normal(size=D), np.diag(rng.random(D) + 0.5))
    chol = scipy.linalg.cholesky(K, lower=True)
    assert kl_to_prior(q, LatentGaussianPrior(cov=K, scale_tril=chol)) == kl_to_prior(q, LatentGaussianPrior(cov=K))
    with pytest.raises(ValueError, match="give cov too"):
        LatentGaussianPrior(precision=np.ones(D), scale_tril=chol)
