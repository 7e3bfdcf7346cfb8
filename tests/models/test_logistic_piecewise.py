"""The piecewise bound of Marlin, Khan & Murphy (2011) against accurate quadrature and finite differences."""
import numpy as np
import pytest
from scipy import integrate

from svibench.models.logistic_piecewise import (LLP_BOUND, expected_bernoulli_logit_bound, expected_llp_bound,
                                                 expected_llp_bound_value)

#: The bound's largest pointwise gap above log(1 + eᵗ) (measured on a grid of 200,001 points in [−12, 12]:
#: 1.95e-4 nats near t = ±2.75), and the coefficients' rounding, which leaves it under llp by up to 1e-9.
POINTWISE_GAP, ROUNDING = 2.0e-4, 1.0e-9

M, V = (a.ravel() for a in np.meshgrid(np.linspace(-8, 8, 33), [1e-3, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 100]))


def _quad_llp(m: float, v: float) -> float:
    """E[log(1 + eᵗ)], t ~ N(m, v), by adaptive quadrature in ε = (t − m)/√v, split at the kink t = 0."""
    s = np.sqrt(v)
    f = lambda e: np.logaddexp(0.0, m + s * e) * np.exp(-0.5 * e * e) / np.sqrt(2 * np.pi)  # noqa: E731
    cuts = sorted({-40.0, 40.0, float(np.clip(-m / s, -40, 40))})
    return sum(integrate.quad(f, a, b, epsabs=1e-14, epsrel=1e-12, limit=400)[0] for a, b in zip(cuts[:-1], cuts[1:]))


def test_the_pieces_cover_the_line_and_are_symmetric():
    """Each piece starts where the one before ends (the bound takes its 21 ends once, not 40), and pieces mirror."""
    c, b, a, lo, hi = LLP_BOUND
    assert lo[0] == -np.inf and hi[-1] == np.inf and np.array_equal(lo[1:], hi[:-1])
    # the mirror image of piece r is piece 21 − r: llp(−t) = llp(t) − t, so b ↦ 1 − b with a, c kept
    np.testing.assert_allclose(a, a[::-1], atol=1e-9)
    np.testing.assert_allclose(c, c[::-1], atol=1e-9)
    np.testing.assert_allclose(b + b[::-1], 1.0, atol=1e-9)


def test_the_bound_lies_above_log_one_plus_exp_pointwise():
    t = np.linspace(-12, 12, 200_001)
    gap = expected_llp_bound(t, np.full_like(t, 1e-12))[0] - np.logaddexp(0.0, t)
    assert gap.min() > -ROUNDING and gap.max() < POINTWISE_GAP


def test_the_expected_bound_lies_above_quadrature_and_within_the_pointwise_gap():
    """E[bound] − E[llp] = E[bound − llp] ∈ [−1e-9, 2e-4]: the authors' E[log p] is a lower bound, off by ≤ 2e-4 nats."""
    bound = expected_llp_bound(M, V)[0]
    exact = np.array([_quad_llp(m, v) for m, v in zip(M, V)])
    gap = bound - exact
    assert gap.min() > -ROUNDING
    assert gap.max() < POINTWISE_GAP


@pytest.mark.parametrize("y", [0.0, 1.0])
def test_gradients_match_finite_differences(y):
    m, v, h = M[::7], V[::7], 1e-6
    f, gm, gv = expected_bernoulli_logit_bound(np.full_like(m, y), m, v)
    fd_m = (expected_bernoulli_logit_bound(y, m + h, v)[0] - expected_bernoulli_logit_bound(y, m - h, v)[0]) / (2 * h)
    hv = 1e-4 * v
    fd_v = (expected_bernoulli_logit_bound(y, m, v + hv)[0] - expected_bernoulli_logit_bound(y, m, v - hv)[0]) / (2 * hv)
    np.testing.assert_allclose(gm, fd_m, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gv, fd_v, rtol=1e-5, atol=1e-8)


def test_both_labels_are_the_authors_y_m_minus_the_bound():
    m, v = np.array([-1.0, 0.3, 4.0]), np.array([0.5, 2.0, 0.1])
    b = expected_llp_bound(m, v)[0]
    np.testing.assert_array_equal(expected_bernoulli_logit_bound(np.ones(3), m, v)[0], m - b)
    np.testing.assert_array_equal(expected_bernoulli_logit_bound(np.zeros(3), m, v)[0], -b)


def test_a_variance_that_is_not_positive_is_refused():
    with pytest.raises(ValueError, match="strictly positive"):
        expected_llp_bound(np.zeros(2), np.array([1.0, 0.0]))


def test_the_bound_alone_is_the_full_functions_value_bit_for_bit():
    """Evaluation reads B(m, v) without its derivatives: the same numbers, not an approximation of them."""
    rng = np.random.default_rng(0)
    m, v = rng.normal(0.0, 6.0, 400), rng.gamma(0.5, 10.0, 400) + 1e-6
    np.testing.assert_array_equal(expected_llp_bound_value(m, v), expected_llp_bound(m, v)[0])
    y = (rng.random(400) < 0.5).astype(float)
    np.testing.assert_array_equal(y * m - expected_llp_bound_value(m, v), expected_bernoulli_logit_bound(y, m, v)[0])
