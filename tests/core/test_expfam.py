"""Conformance suite for the exponential families in ``svibench.expfam``.

Every family is described once in ``CASES`` (two example distributions ``p`` and
``q`` with batch shapes, plus its ``scipy.stats`` counterpart); each ``check_*``
function states one property and runs unchanged on every case.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest
from scipy import special, stats

from svibench.expfam import (
    BernoulliMean,
    BernoulliNatural,
    BetaMean,
    BetaNatural,
    CategoricalMean,
    CategoricalNatural,
    DirichletMean,
    DirichletNatural,
    NormalGammaNatural,
    GammaMean,
    GammaNatural,
    GaussianDiagMean,
    GaussianDiagNatural,
    GaussianFullMean,
    GaussianFullNatural,
    MeanParametrization,
    NaturalParametrization,
)

N_MC = 20_000
N_SE = 5.0  # Monte-Carlo tolerance in standard errors


@dataclass(frozen=True)
class Case:
    """One family with example parameters.

    ``scipy_dist(p, idx)`` returns the frozen ``scipy.stats`` distribution of batch
    element ``idx`` of ``p``; draws are passed to it unchanged.
    """

    id: str
    p: Callable[[], NaturalParametrization]
    q: Callable[[], NaturalParametrization]
    scipy_dist: Callable[[NaturalParametrization, tuple], object]


def _norm(p, idx):
    m, v = p.mean_var()
    return stats.norm(m[idx], np.sqrt(v[idx]))


def _mvn(p, idx):
    m, s = p.mean_cov()
    return stats.multivariate_normal(m[idx], s[idx])


def _gamma(p, idx):
    a, b = p.shape_rate()
    return stats.gamma(a[idx], scale=1.0 / b[idx])


def _beta(p, idx):
    a, b = p.ab()
    return stats.beta(a[idx], b[idx])


def _bernoulli(p, idx):
    return stats.bernoulli(p.prob()[idx])


def _multinomial(p, idx):
    return stats.multinomial(1, p.probs()[idx])


def _dirichlet(p, idx):
    return stats.dirichlet(p.concentration()[idx])


class _NormalGammaByParts:
    """Normal–Gamma from scipy parts: τ ~ Gamma(a, rate b), μ | τ ~ N(m, 1/(κτ))."""

    def __init__(self, m, kappa, a, b):
        self.m, self.kappa, self.tau = m, kappa, stats.gamma(a, scale=1.0 / b)
        self.mean_log_tau = special.digamma(a) - np.log(b)

    def logpdf(self, x):
        mu, tau = x
        return self.tau.logpdf(tau) + stats.norm(self.m, 1.0 / np.sqrt(self.kappa * tau)).logpdf(mu)

    def entropy(self):
        return self.tau.entropy() + 0.5 * np.log(2 * np.pi * np.e / self.kappa) - 0.5 * self.mean_log_tau


def _normal_gamma(p, idx):
    return _NormalGammaByParts(*(v[idx] for v in p.params()))


_COV3 = np.array([[2.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 0.5]])
_COV2 = np.array([[[1.0, 0.3], [0.3, 0.5]], [[0.2, -0.1], [-0.1, 3.0]]])

CASES = [
    Case(
        "gaussian_diag_scalar",
        lambda: GaussianDiagNatural.from_mean_var(0.3, 2.0),
        lambda: GaussianDiagNatural.from_mean_var(-1.0, 0.5),
        _norm,
    ),
    Case(
        "gaussian_diag_batch_2x3",
        lambda: GaussianDiagNatural.from_mean_var([[0.0, 1.0, -2.0], [3.0, 0.5, 1.0]],
                                                  [[1.0, 0.5, 2.0], [0.1, 1.0, 3.0]]),
        lambda: GaussianDiagNatural.from_mean_var([[0.5, 1.0, -1.0], [2.5, 0.0, 1.0]],
                                                  [[2.0, 0.5, 1.0], [0.2, 1.5, 2.0]]),
        _norm,
    ),
    Case(
        "gaussian_full_d3",
        lambda: GaussianFullNatural.from_mean_cov([0.5, -1.0, 2.0], _COV3),
        lambda: GaussianFullNatural.from_mean_precision([0.0, -0.5, 1.5], np.linalg.inv(_COV3) + np.eye(3)),
        _mvn,
    ),
    Case(
        "gaussian_full_batch_2_d2",
        lambda: GaussianFullNatural.from_mean_cov([[1.0, 0.0], [-1.0, 2.0]], _COV2),
        lambda: GaussianFullNatural.from_mean_cov([[0.5, 0.5], [-1.0, 1.5]], _COV2 + np.eye(2)),
        _mvn,
    ),
    Case(
        "gamma_batch_4",
        lambda: GammaNatural.from_shape_rate([0.7, 1.0, 3.5, 20.0], [1.0, 2.0, 0.5, 4.0]),
        lambda: GammaNatural.from_shape_rate([1.2, 0.8, 3.0, 15.0], [0.7, 2.5, 0.4, 3.0]),
        _gamma,
    ),
    Case(
        "beta_batch_3",
        lambda: BetaNatural.from_ab([0.6, 2.0, 5.0], [0.8, 3.0, 1.5]),
        lambda: BetaNatural.from_ab([1.0, 1.5, 4.0], [1.2, 3.5, 2.5]),
        _beta,
    ),
    Case(
        "bernoulli_batch_2x2",
        lambda: BernoulliNatural.from_prob([[0.1, 0.5], [0.7, 0.95]]),
        lambda: BernoulliNatural.from_prob([[0.2, 0.4], [0.6, 0.9]]),
        _bernoulli,
    ),
    Case(
        "categorical_batch_2_k4",
        lambda: CategoricalNatural.from_probs([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]]),
        lambda: CategoricalNatural.from_probs([[0.25, 0.25, 0.25, 0.25], [0.5, 0.2, 0.2, 0.1]]),
        _multinomial,
    ),
    Case(
        "dirichlet_batch_2_k3",
        lambda: DirichletNatural.from_concentration([[0.6, 1.0, 2.0], [5.0, 3.0, 8.0]]),
        lambda: DirichletNatural.from_concentration([[1.0, 1.0, 1.0], [4.0, 4.0, 6.0]]),
        _dirichlet,
    ),
    Case(
        "normal_gamma_batch_3",
        lambda: NormalGammaNatural.from_params([0.3, -1.0, 2.0], [2.0, 0.5, 10.0], [3.0, 1.5, 8.0], [2.0, 0.7, 4.0]),
        lambda: NormalGammaNatural.from_params([0.0, -0.5, 1.5], [1.0, 1.0, 5.0], [2.5, 2.0, 6.0], [1.5, 1.0, 3.0]),
        _normal_gamma,
    ),
]


def _fields(params):
    return {f.name: getattr(params, f.name) for f in dataclasses.fields(params)}


def _allclose_params(a, b, rtol=1e-9, atol=1e-12):
    assert type(a) is type(b), f"{type(a).__name__} is not {type(b).__name__}"
    np.testing.assert_allclose(a.flatten(), b.flatten(), rtol=rtol, atol=atol)


def assert_within_mc_error(draws, expected, n_se=N_SE):
    """Mean of ``draws`` over axis 0 agrees with ``expected`` within ``n_se`` standard errors."""
    draws = np.asarray(draws, dtype=float)
    estimate = draws.mean(axis=0)
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    err = np.abs(estimate - expected)
    bad = err > n_se * se + 1e-12
    expected = np.broadcast_to(expected, estimate.shape)
    assert not np.any(bad), f"MC estimate {estimate[bad]} vs expected {expected[bad]} (s.e. {se[bad]})"


# ------------------------------------------------------------------- checks
def check_round_trip_natural_mean_natural(p):
    _allclose_params(p.to_mean().to_natural(), p)


def check_round_trip_mean_natural_mean(p):
    mu = p.to_mean()
    assert isinstance(mu, MeanParametrization)
    _allclose_params(mu.to_natural().to_mean(), mu)


def check_log_partition_gradient_is_mean(p, h=1e-6):
    theta = p.flatten()

    def a(vec):
        return type(p).unflatten(vec, p.batch_shape, p.event_shape).log_partition().sum()

    grad = np.empty_like(theta)
    for i in range(theta.size):
        step = h * max(1.0, abs(theta[i]))
        e = np.zeros_like(theta)
        e[i] = step
        grad[i] = (a(theta + e) - a(theta - e)) / (2 * step)
    np.testing.assert_allclose(grad, p.to_mean().flatten(), rtol=1e-6, atol=1e-7)


def check_fisher_vector_product_is_derivative_of_mean(p, h=1e-6):
    rng = np.random.default_rng(3)
    v = type(p).unflatten(rng.standard_normal(p.flatten().size), p.batch_shape, p.event_shape)
    fd = ((p + h * v).to_mean().flatten() - (p - h * v).to_mean().flatten()) / (2 * h)
    fv = p.fisher_vector_product(v)
    assert type(fv) is type(p.to_mean())
    np.testing.assert_allclose(fv.flatten(), fd, rtol=1e-5, atol=1e-6)


def _draws(p, n, seed=0):
    x = p.sample(np.random.default_rng(seed), (n,))
    assert x.shape == (n,) + p.batch_shape + p.event_shape
    return x


def check_entropy_matches_scipy(p, scipy_dist):
    ours = p.entropy()
    assert ours.shape == p.batch_shape
    for idx in np.ndindex(p.batch_shape):
        np.testing.assert_allclose(ours[idx], scipy_dist(p, idx).entropy(), rtol=1e-9, atol=1e-12)


def check_log_pdf_matches_scipy(p, scipy_dist):
    x = _draws(p, 7, seed=1)
    ours = p.log_pdf(x)
    assert ours.shape == (7,) + p.batch_shape
    for idx in np.ndindex(p.batch_shape):
        dist = scipy_dist(p, idx)
        xi = x[(slice(None),) + idx]
        ref = [dist.logpdf(row) if hasattr(dist, "logpdf") else dist.logpmf(row) for row in xi]
        np.testing.assert_allclose(ours[(slice(None),) + idx], ref, rtol=1e-9, atol=1e-10)


def check_kl_self_is_zero(p):
    np.testing.assert_allclose(p.kl(p), 0.0, atol=1e-12)


def check_kl_matches_monte_carlo(p, q, kl=None):
    """``KL(p‖q) = E_p[log p(x) - log q(x)]``; pass ``kl`` to check another value."""
    x = _draws(p, N_MC, seed=2)
    kl = p.kl(q) if kl is None else kl
    assert np.all(kl >= 0)
    assert_within_mc_error(p.log_pdf(x) - q.log_pdf(x), kl)


def check_sample_statistics_match_mean(p, expected=None):
    """Sample average of ``T(x)`` agrees with ``to_mean()`` (or ``expected``)."""
    expected = p.to_mean() if expected is None else expected
    t = type(p).sufficient_statistics(_draws(p, N_MC, seed=4))
    for name, draws in _fields(t).items():
        assert_within_mc_error(draws, getattr(expected, name))


def check_arithmetic(p, q):
    _allclose_params((p + q) - q, p)
    _allclose_params(0.5 * p + p * 0.5, p)
    _allclose_params(p / 2.0 + np.float64(0.5) * p, p)
    _allclose_params(p.zeros_like() + p, p)
    _allclose_params(-p + p, p.zeros_like(), atol=1e-15)
    for result in (p + q, p - q, 2.0 * p, p * 2.0, np.array(2.0) * p, -p, p.zeros_like()):
        assert type(result) is type(p)
    # one coefficient per batch element, from either side
    c = np.arange(1.0, 1.0 + np.prod(p.batch_shape)).reshape(p.batch_shape)
    scaled = c * p
    assert type(scaled) is type(p) and scaled.batch_shape == p.batch_shape
    _allclose_params(scaled, p * c)
    for name, x in _fields(scaled).items():
        extra = x.ndim - len(p.batch_shape)
        np.testing.assert_allclose(x, c.reshape(c.shape + (1,) * extra) * getattr(p, name))


def check_flatten_round_trip(p):
    flat = p.flatten()
    assert flat.ndim == 1
    _allclose_params(type(p).unflatten(flat, p.batch_shape, p.event_shape), p, rtol=0, atol=0)


CHECKS_ON_P = [
    check_round_trip_natural_mean_natural,
    check_round_trip_mean_natural_mean,
    check_log_partition_gradient_is_mean,
    check_fisher_vector_product_is_derivative_of_mean,
    check_kl_self_is_zero,
    check_sample_statistics_match_mean,
    check_flatten_round_trip,
]
CHECKS_WITH_SCIPY = [check_entropy_matches_scipy, check_log_pdf_matches_scipy]
CHECKS_ON_PAIR = [check_kl_matches_monte_carlo, check_arithmetic]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("check", CHECKS_ON_P, ids=lambda f: f.__name__)
def test_family_conforms(check, case):
    check(case.p())


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("check", CHECKS_WITH_SCIPY, ids=lambda f: f.__name__)
def test_family_agrees_with_scipy(check, case):
    check(case.p(), case.scipy_dist)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
@pytest.mark.parametrize("check", CHECKS_ON_PAIR, ids=lambda f: f.__name__)
def test_family_pair_conforms(check, case):
    check(case.p(), case.q())


# ------------------------------------------------- the checks can fail
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_kl_check_flags_perturbed_kl(case):
    p, q = case.p(), case.q()
    with pytest.raises(AssertionError):
        check_kl_matches_monte_carlo(p, q, kl=p.kl(q) * 1.1 + 0.02)


def test_sample_check_flags_swapped_gamma_mean_labels():
    """The label swap of Khan & Lin (2017) App. E.3 is caught."""
    p = GammaNatural.from_shape_rate([2.0, 3.0], [1.0, 0.5])
    mu = p.to_mean()
    with pytest.raises(AssertionError):
        check_sample_statistics_match_mean(p, expected=GammaMean(mu.mean, mu.mean_log))


def test_gradient_check_flags_wrong_mean():
    p = GammaNatural.from_shape_rate(2.0, 1.0)
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(p.to_mean().flatten(), (p * 1.01).to_mean().flatten(), rtol=1e-6)


def test_scipy_check_flags_wrong_parametrisation():
    """Treating the Gamma rate as a scale would be caught."""
    p = GammaNatural.from_shape_rate([2.0, 3.0], [4.0, 0.5])

    def as_scale(p, idx):
        a, b = p.shape_rate()
        return stats.gamma(a[idx], scale=b[idx])

    with pytest.raises(AssertionError):
        check_log_pdf_matches_scipy(p, as_scale)


# ------------------------------------------------------------ validation
INVALID = [
    (lambda: GaussianDiagNatural.from_mean_var(0.0, [1.0, 0.0]), "variance must be positive"),
    (lambda: GaussianDiagNatural(1.0, 0.5).to_mean(), "eta2 .* must be negative"),
    (lambda: GaussianDiagMean(1.0, 0.5).to_natural(), "variance"),
    (lambda: GaussianFullNatural.from_mean_cov([0.0, 0.0], [[1.0, 2.0], [2.0, 1.0]]), "positive definite"),
    (lambda: GaussianFullNatural.from_mean_cov([0.0, 0.0], [[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
    (lambda: GaussianFullNatural.from_mean_precision([0.0, 0.0], -np.eye(2)), "positive definite"),
    (lambda: GaussianFullNatural([0.0, 0.0], np.eye(2)).sample(np.random.default_rng(0)), "negative definite"),
    (lambda: GaussianFullMean([1.0, 1.0], np.eye(2)).to_natural(), "positive definite"),
    (lambda: GaussianFullNatural(np.zeros(3), -np.eye(2)), "inconsistent event axes"),
    (lambda: GammaNatural.from_shape_rate([1.0, -2.0], 1.0), "shape must be positive"),
    (lambda: GammaNatural.from_shape_rate(1.0, 0.0), "rate must be positive"),
    (lambda: GammaNatural(-1.5, -1.0).log_partition(), "shape - 1 must exceed -1"),
    (lambda: GammaMean(mean_log=1.0, mean=2.0).to_natural(), "Jensen"),
    (lambda: GammaMean(mean_log=0.0, mean=-1.0).to_natural(), "mean must be positive"),
    (lambda: BetaNatural.from_ab(0.0, 1.0), "a must be positive"),
    (lambda: BetaMean(-0.1, -0.1).to_natural(), "Jensen"),
    (lambda: BernoulliNatural.from_prob(1.0), "strictly between 0 and 1"),
    (lambda: BernoulliNatural(np.inf).prob(), "finite"),
    (lambda: CategoricalNatural.from_probs([0.5, 0.6]), "sum to 1"),
    (lambda: CategoricalNatural.from_probs([1.0, 0.0]), "positive"),
    (lambda: CategoricalMean([0.2, 0.2]).to_natural(), "sum to 1"),
    (lambda: BernoulliMean(0.0).to_natural(), "strictly between"),
    (lambda: DirichletNatural.from_concentration([1.0, 0.0]), "concentration must be positive"),
    (lambda: DirichletMean([-0.1, -0.1]).to_natural(), "Jensen"),
    (lambda: GammaNatural([1.0, 2.0], [-1.0, -1.0, -1.0]), "batch shapes do not broadcast"),
    (lambda: CategoricalNatural(0.0), "needs at least 1 axes"),
    (lambda: GammaNatural.unflatten(np.zeros(5), (3,)), "length 6"),
]


@pytest.mark.parametrize("make, message", INVALID, ids=[m for _, m in INVALID])
def test_invalid_parameters_raise_value_error(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_mixing_types_raises_type_error():
    g = GammaNatural.from_shape_rate(2.0, 1.0)
    with pytest.raises(TypeError):
        g + g.to_mean()
    with pytest.raises(TypeError):
        g * g
    with pytest.raises(TypeError):
        g.kl(BetaNatural.from_ab(2.0, 1.0))


# ------------------------------------------------------- family specifics
def test_svi_update_is_a_convex_combination_in_natural_space():
    lam = GammaNatural.from_shape_rate([1.0, 2.0], [1.0, 3.0])
    eta = GammaNatural.from_shape_rate(1.0, 1.0)
    stats_ = GammaNatural([0.5, 2.0], [-1.0, -0.5])
    rho, scale = 0.3, 10.0
    new = (1 - rho) * lam + rho * (eta + scale * stats_)
    assert type(new) is GammaNatural and new.batch_shape == (2,)
    np.testing.assert_allclose(new.eta1, 0.7 * lam.eta1 + 0.3 * (eta.eta1 + 10 * stats_.eta1))


def test_batch_sum_of_sufficient_statistics():
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    t = GaussianDiagNatural.sufficient_statistics(x).batch_sum(0)
    np.testing.assert_allclose(t.mean, [9.0, 12.0])
    np.testing.assert_allclose(t.second_moment, [35.0, 56.0])
    np.testing.assert_allclose(GaussianDiagNatural.sufficient_statistics(x).batch_mean(0).mean, [3.0, 4.0])


def test_categorical_natural_parameters_are_defined_up_to_a_constant():
    p = CategoricalNatural.from_probs([0.1, 0.2, 0.7])
    shifted = CategoricalNatural(p.eta + 3.0)
    x = np.eye(3)
    np.testing.assert_allclose(shifted.probs(), p.probs())
    np.testing.assert_allclose(shifted.log_pdf(x), p.log_pdf(x))
    np.testing.assert_allclose(shifted.kl(p), 0.0, atol=1e-12)
    _allclose_params(shifted.to_mean().to_natural(), p)  # normalised representative


@pytest.mark.parametrize(
    "p, outside",
    [
        (GammaNatural.from_shape_rate(2.0, 1.0), -1.0),
        (BetaNatural.from_ab(2.0, 1.0), 1.5),
        (BernoulliNatural.from_prob(0.3), 0.5),
        (CategoricalNatural.from_probs([0.5, 0.5]), [0.5, 0.5]),
        (DirichletNatural.from_concentration([2.0, 2.0]), [-0.5, 1.5]),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, NaturalParametrization) else "",
)
def test_log_pdf_is_minus_inf_outside_support(p, outside):
    assert p.log_pdf(outside) == -np.inf


def test_gamma_mean_to_natural_is_accurate_over_a_wide_range_of_shapes():
    shape = np.logspace(-3, 4, 60)
    p = GammaNatural.from_shape_rate(shape, 2.0)
    a, b = p.to_mean().to_natural().shape_rate()
    np.testing.assert_allclose(a, shape, rtol=1e-8)
    np.testing.assert_allclose(b, 2.0, rtol=1e-8)


def test_dirichlet_mean_to_natural_is_accurate_over_a_wide_range_of_concentrations():
    alpha = np.random.default_rng(5).gamma(1.0, size=(200, 4)) * np.logspace(-2, 3, 200)[:, None] + 1e-3
    p = DirichletNatural.from_concentration(alpha)
    np.testing.assert_allclose(p.to_mean().to_natural().concentration(), alpha, rtol=1e-8)


def test_sampling_is_reproducible_from_the_generator():
    p = CASES[3].p()
    a = p.sample(np.random.default_rng(11), (4,))
    b = p.sample(np.random.default_rng(11), (4,))
    np.testing.assert_array_equal(a, b)
    assert p.sample(np.random.default_rng(0)).shape == p.batch_shape + p.event_shape


def test_dirichlet_sampling_handles_small_concentrations():
    x = DirichletNatural.from_concentration([0.01, 0.02, 0.05]).sample(np.random.default_rng(0), 1000)
    assert np.all(np.isfinite(x)) and np.allclose(x.sum(-1), 1.0)


def test_parameter_fields_broadcast_to_a_common_batch_shape():
    p = GaussianFullNatural(np.zeros(2), -0.5 * np.broadcast_to(np.eye(2), (3, 2, 2)))
    assert p.batch_shape == (3,) and p.event_shape == (2,) and p.eta1.shape == (3, 2)
    g = GammaNatural(1.0, [-1.0, -2.0])  # a scalar field against a vector one: broadcast, not the same-shape path
    assert g.eta1.shape == (2,) and g.batch_shape == (2,)


def test_fields_of_one_shape_are_float_arrays_and_not_copied():
    """The same-shape construction (SVI's hot path) converts like the general one and keeps float arrays as given."""
    g = GammaNatural([1, 2], [-1, -3])
    assert g.eta1.dtype == g.eta2.dtype == np.float64 and isinstance(g.eta1, np.ndarray)
    eta = np.array([[0.1, 0.2], [0.3, 0.4]])
    c = CategoricalNatural(eta)
    assert c.eta is eta and c.batch_shape == (2,) and c.event_shape == (2,)
