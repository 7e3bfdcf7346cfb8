"""The compiled logistic function (svibench.numerics.expit) against scipy's, over the whole line."""
import math

import numba
import numpy as np
from scipy.special import expit as scipy_expit

from svibench.numerics.expit import EXPONENT_SHIFT, X_MAX, X_MIN, _as_bits, _as_double, _exp_poly, expit, expit_all


def _grid():
    rng = np.random.default_rng(0)
    edges = np.array([X_MIN, X_MAX, np.nextafter(X_MAX, 0), np.nextafter(X_MAX, np.inf), 0.0, -0.0, 1e-300, -1e-300])
    return np.concatenate([rng.uniform(-800, 800, 200_000), rng.uniform(-40, 40, 200_000), rng.normal(0, 1, 50_000),
                           -edges, edges, np.arange(-760, 760, 0.5)])


def test_agrees_with_scipy_to_a_few_ulp_everywhere():
    t = _grid()
    got = t.copy()
    expit_all(got)
    want = scipy_expit(t)
    np.testing.assert_array_equal(got == 0, want == 0)
    np.testing.assert_array_equal(got == 1, want == 1)
    np.testing.assert_allclose(got, want, rtol=4 * np.finfo(float).eps, atol=0)
    assert np.all(np.array([expit(x) for x in t[:1000]]) == got[:1000])  # the scalar and the loop agree


def test_infinities_and_nan():
    t = np.array([np.inf, -np.inf, np.nan])
    expit_all(t)
    assert t[0] == 1.0 and t[1] == 0.0 and np.isnan(t[2])


def test_the_tree_summed_polynomial_is_exp_to_one_ulp_on_its_interval():
    """e^r on |r| ≤ ½ ln 2, where expit uses it, against numpy's exp."""
    r = np.linspace(-0.5 * math.log(2.0), 0.5 * math.log(2.0), 20_001)
    got = np.array([_exp_poly(x) for x in r])
    np.testing.assert_allclose(got, np.exp(r), rtol=1.5 * np.finfo(float).eps, atol=0)


@numba.njit
def _half_power_of_two(n):
    return _as_double(_as_bits(n + EXPONENT_SHIFT) << 52)


def test_the_exponent_bits_give_two_to_the_n_over_the_whole_range():
    """2ⁿ⁻¹ as expit forms it, for every n that x ∈ [X_MIN, X_MAX] gives, against ldexp."""
    n_min, n_max = math.floor(X_MIN / math.log(2.0) + 0.5), math.floor(X_MAX / math.log(2.0) + 0.5)
    assert (n_min, n_max) == (-1021, 1024)
    for n in range(n_min, n_max + 1):
        assert _half_power_of_two(float(n)) == math.ldexp(1.0, n - 1), n
