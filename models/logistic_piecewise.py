"""The piecewise-quadratic bound on E[log(1 + eᵗ)] of Marlin, Khan & Murphy (2011).

Khan & Lin (2017) take the expectations of the logistic likelihood in CVI-exact,
PG-exact and Chol, and in the Neg-Log-Lik column of Table 3, from this bound, not
from quadrature (their code: emtiyaz/cvi, ``log_reg/E_log_p.m``, ``Ellp`` and
``get_llp_bound``).  llp(t) = log(1 + eᵗ) is bounded above by R = 20 quadratics,
one on each interval [l_r, h_r) of a partition of the real line,

    llp(t) ≤ a_r t² + b_r t + c_r   for t ∈ [l_r, h_r),

so for t ~ N(m, v) the bound on E[llp(t)] is a sum of truncated Gaussian moments,
and E[log p(y | η)] = y m − E[llp(η)] (y ∈ {0, 1}, η ~ N(m, v)) is bounded *below*:
every quantity built on it (CVI-exact's and PG-exact's gradients, the ELBO Table 3
prints) is the bound's, not the exact expectation's.

The coefficients are the numbers of ``get_llp_bound``; the tests check the bound's
side and its largest error against accurate quadrature.  The truncated moments follow
App. A of Marlin et al. (the formulas of ``Ellp``):

    E[t^k 1{l ≤ t < h}] for k = 0, 1, 2,   with z = (·−m)/√v, φ, Φ the standard normal pdf and cdf,

and the gradients in m and v are the closed forms of the same appendix.

References
----------
Marlin, B. M., Khan, M. E. & Murphy, K. P. (2011). Piecewise bounds for estimating
Bernoulli-logistic latent Gaussian models. ICML.
Khan, M. E. & Lin, W. (2017). Conjugate-computation variational inference. AISTATS, App. I.1.
"""
from __future__ import annotations

import numpy as np
from scipy.special import erf

__all__ = ["LLP_BOUND", "expected_llp_bound", "expected_llp_bound_value", "expected_bernoulli_logit_bound"]

_INF = np.inf

#: Rows c, b, a, l, h of the 20 pieces: llp(t) ≤ a t² + b t + c on [l, h) (emtiyaz/cvi, ``get_llp_bound``).
LLP_BOUND = np.array([
    [0.000188712193000, 0.028090310300000, 0.110211757000000, 0.232736440000000, 0.372524706000000,
     0.504567936000000, 0.606280283000000, 0.666125432000000, 0.689334264000000, 0.693147181000000,
     0.693147181000000, 0.689334264000000, 0.666125432000000, 0.606280283000000, 0.504567936000000,
     0.372524706000000, 0.232736440000000, 0.110211757000000, 0.028090310400000, 0.000188712000000],
    [0.0, 0.006648614600000, 0.034432684600000, 0.088701969900000, 0.168024214000000,
     0.264032863000000, 0.360755794000000, 0.439094482000000, 0.485091758000000, 0.499419205000000,
     0.500580795000000, 0.514908242000000, 0.560905518000000, 0.639244206000000, 0.735967137000000,
     0.831975786000000, 0.911298030000000, 0.965567315000000, 0.993351385000000, 1.000000000000000],
    [0.0, 0.000397791059000, 0.002753100850000, 0.008770186980000, 0.020034759300000,
     0.037511596000000, 0.060543032900000, 0.086256780600000, 0.109213531000000, 0.123026104000000,
     0.123026104000000, 0.109213531000000, 0.086256780600000, 0.060543032900000, 0.037511596000000,
     0.020034759300000, 0.008770186980000, 0.002753100850000, 0.000397791059000, 0.0],
    [-_INF, -8.575194939999999, -5.933689180000000, -4.525933600000000, -3.528107790000000,
     -2.751548540000000, -2.097898790000000, -1.519690830000000, -0.989533382000000, -0.491473077000000,
     0.0, 0.491473077000000, 0.989533382000000, 1.519690830000000, 2.097898790000000,
     2.751548540000000, 3.528107790000000, 4.525933600000000, 5.933689180000000, 8.575194939999999],
    [-8.575194939999999, -5.933689180000000, -4.525933600000000, -3.528107790000000, -2.751548540000000,
     -2.097898790000000, -1.519690830000000, -0.989533382000000, -0.491473077000000, 0.0,
     0.491473077000000, 0.989533382000000, 1.519690830000000, 2.097898790000000, 2.751548540000000,
     3.528107790000000, 4.525933600000000, 5.933689180000000, 8.575194939999999, _INF],
])

#: The pieces' ends l_0 = −∞ < l_1 < … < l_19 < h_19 = ∞ (piece r's h is piece r + 1's l), as a column.
_ENDS = np.append(LLP_BOUND[3], LLP_BOUND[4, -1])[:, None]


def expected_llp_bound(m: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bound B(m, v) ≥ E[log(1 + eᵗ)], t ~ N(m, v), with ∂B/∂m and ∂B/∂v (Marlin et al. 2011, App. A).

    The same arithmetic as the authors' ``Ellp``: truncated moments from φ and ½erf(z/√2) at the
    pieces' ends, the infinite ends' terms set to zero (φ(±∞) = 0, so l·φ(z_l) → 0 there).
    """
    m, v, c, b, a, l, h, pl, ph, ex0, value = _moments(m, v)
    gm = (a * ((l**2 + 2 * v) * pl - (h**2 + 2 * v) * ph) + 2 * a * m * ex0
          + b * (l * pl - h * ph) + b * ex0 + c * (pl - ph)).sum(0)
    t1 = 2 * v * l + l**3 - l**2 * m
    t2 = 2 * v * h + h**3 - h**2 * m
    gv = (a / 2 / v * (t1 * pl - t2 * ph) + a * ex0
          + b / 2 / v * ((l**2 + v - l * m) * pl - (h**2 + v - h * m) * ph)
          + c / 2 / v * ((l - m) * pl - (h - m) * ph)).sum(0)
    return value, gm, gv


def expected_llp_bound_value(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """B(m, v) alone, bit for bit :func:`expected_llp_bound`'s first output at about half its cost (evaluation
    reads no derivatives)."""
    return _moments(m, v)[-1]


def _moments(m: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, ...]:
    """The pieces' truncated moments, shared by the bound and its derivatives, and the bound."""
    m = np.asarray(m, dtype=float)[None, :]
    v = np.asarray(v, dtype=float)[None, :]
    if np.any(v <= 0):
        raise ValueError("the piecewise bound needs strictly positive variances")
    c, b, a, l, h = (row[:, None] for row in LLP_BOUND)
    sd = np.sqrt(v)
    z = (_ENDS - m) / sd  # each piece's ends: its l is the piece before's h, so 21 ends, not 40
    p = np.exp(-0.5 * z**2) / np.sqrt(2.0 * np.pi) / sd  # φ(z)/√v: the density of t at the ends
    half_cdf = 0.5 * erf(z / np.sqrt(2.0))
    pl, ph, cl, ch = p[:-1], p[1:], half_cdf[:-1], half_cdf[1:]
    l, h = np.where(np.isfinite(l), l, 0.0), np.where(np.isfinite(h), h, 0.0)
    ex0 = ch - cl
    ex1 = v * (pl - ph) + m * ex0
    ex2 = v * ((l + m) * pl - (h + m) * ph) + (v + m**2) * ex0
    return m, v, c, b, a, l, h, pl, ph, ex0, (a * ex2 + b * ex1 + c * ex0).sum(0)


def expected_bernoulli_logit_bound(y: np.ndarray, m: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The lower bound y m − B(m, v) on E[log p(y | η)] = E[y η − log(1 + e^η)], η ~ N(m, v), y ∈ {0, 1},
    with its derivatives in m and v: the authors' ``E_log_p('bernoulli_logit', y, m, v, [])``."""
    value, gm, gv = expected_llp_bound(m, v)
    return y * m - value, y - gm, -gv
