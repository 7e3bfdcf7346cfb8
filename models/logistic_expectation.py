"""Gaussian expectations of the logistic likelihood, accurate to ~1e-10 relative.

For t ~ N(μ, v), σ = √v, the latent-Gaussian algorithms need

    E[log σ(t)],    ∂/∂μ = E[σ(−t)]  (Bonnet),    ∂/∂v = ½E[(log σ)''(t)] = −½E[σ(t)σ(−t)]  (Price).

Gauss–Hermite quadrature is poor here when σ ≫ 1 (GP classification has
σ ≈ 16–88): log σ(t) is nearly piecewise linear with a kink-like bend of width
~1 at t = 0, which falls between nodes spaced ~σ apart.  So each integrand is
split, with u = e^{−|t|}, into a part with a closed form and a bounded part that
decays like u:

    log σ(t)        = min(t, 0)  + R₀(u),  R₀(u) = −log(1 + u)
    σ(−t)           = 1{t < 0}   + sgn(t) R₁(u),  R₁(u) = u/(1 + u)
    σ(t)σ(−t)       =              R₂(u),  R₂(u) = u/(1 + u)²

E[min(t, 0)] = μΦ(−z) − σφ(z) and E[1{t<0}] = Φ(−z), z = μ/σ.  The remainders
are integrated on each side of the kink (t > 0 here; t < 0 is t > 0 for −t ~
N(−μ, v)).  With Rⱼ(u) = Σₖ cₖuᵏ, the first J terms are exact:

    Mₖ = E[e^{−kt} 1{t>0}] = exp(−kμ + k²v/2) Φ((μ − kv)/σ) = φ(z) m(kσ − z),

m(w) = Φ(−w)/φ(w) the Mills ratio, and what is left, sⱼ(t) = Rⱼ(e^{−t}) −
Σ_{k≤J} cₖe^{−kt} = O(e^{−(J+1)t}), is integrated by Gauss–Legendre in
ε = (t − μ)/σ over the window where e^{−(J+1)t}N(t | μ, v) ∝ φ(ε + (J+1)σ) — the
Gaussian tilted by the remainder's decay — is within e^{−K²/2} of its largest
value on t > 0.  The tilt keeps the window on the mass even where the
expectation is tiny (μ = 500) and short (≤ K²/(2(J+1)) ≈ 7 in t) when σ is
large, so a fixed number of nodes serves σ from 1e-3 to 300.

Every part has a fixed sign on each side, so no cancellation spoils the relative
accuracy; the tests compare with adaptive quadrature (scipy.integrate.quad)
split at the kink.  Why this route: Gauss–Hermite split at the kink needs a
Gaussian rule on a half-line whose nodes depend on μ/σ (none fixed), and a
fixed t-grid would need ~70 nodes per side to follow e^{−|t|} over a window of
~36 when σ is large; here 2 × 28 nodes give ~1e-10 at about the cost of
50-node Gauss–Hermite (benchmarks/bench_cvi.py).  The module is in models/
because it is the logistic likelihood's math; algorithms reach it only through
the latent-Gaussian capability's ``gaussian_expectation``.
"""
from __future__ import annotations

import numpy as np
from scipy.special import erfcx, log_ndtr, ndtr

from svibench.expfam import LOG_2PI

__all__ = ["expected_log_sigmoid", "expected_log_sigmoid_value", "expected_sigmoid", "sigmoid_moments"]

#: Series terms with closed-form expectations (J), window half-width in tilted standard
#: deviations (K: the mass left out is ~e^{−K²/2} ≈ 7e-13 of the remainder's), and
#: Gauss–Legendre nodes on each side of the kink (28 give ~1e-10 relative on the test grid,
#: 24 only ~1e-6).
TERMS, WINDOW, NODES = 3, 7.5, 28
#: Points whose expectations are computed together: 2,048 × 28 nodes, 450 KB an array.
CHUNK = 2048

_k = np.arange(1, TERMS + 1)
_COEF = (  # cₖ of R₀ = −log(1+u), R₁ = u/(1+u), R₂ = u/(1+u)², R₃ = u(1−u)/(1+u)³, k = 1..J
    (-1.0) ** _k / _k,
    -((-1.0) ** _k),
    -((-1.0) ** _k) * _k,
    -((-1.0) ** _k) * _k**2,
)
_x, _w = np.polynomial.legendre.leggauss(NODES)
_X01, _W01 = (_x + 1.0) / 2.0, _w / 2.0
_LOG_SQRT_2PI = 0.5 * LOG_2PI


def _log_mills_moments(mu: np.ndarray, sd: np.ndarray) -> np.ndarray:
    """log Mₖ = log E[e^{−kt} 1{t>0}], t ~ N(μ, σ²), shape (n, J).

    φ(z)m(w) with w = kσ − z when w > 0 (no overflow, no cancellation);
    −kμ + k²σ²/2 + log Φ(−w) otherwise (then log Φ(−w) ≥ log ½).
    """
    z = (mu / sd)[:, None]
    s = sd[:, None]
    w = _k * s - z
    mills = np.log(np.sqrt(np.pi / 2.0) * erfcx(np.maximum(w, 0.0) / np.sqrt(2.0))) - 0.5 * z**2 - _LOG_SQRT_2PI
    direct = -_k * mu[:, None] + 0.5 * (_k * s) ** 2 + log_ndtr(-np.minimum(w, 0.0))
    return np.where(w > 0, mills, direct)


def _remainders(u: np.ndarray, parts: tuple[int, ...]) -> dict[int, np.ndarray]:
    """Rⱼ at u for j in ``parts`` (see ``_COEF``), computing only what those need."""
    r1 = u / (1.0 + u) if max(parts) >= 1 else None
    r2 = r1 * (1.0 - r1) if max(parts) >= 2 else None
    made = {0: lambda: -np.log1p(u), 1: lambda: r1, 2: lambda: r2, 3: lambda: r2 * (1.0 - 2.0 * r1)}
    return {j: made[j]() for j in parts}


def _side(mu: np.ndarray, sd: np.ndarray, parts: tuple[int, ...] = (0, 1, 2)) -> np.ndarray:
    """E[Rⱼ(e^{−t}) 1{t>0}] for j in ``parts`` and t ~ N(μ, σ²), shape (len(parts), n), :data:`CHUNK` points at a
    time: the (points × nodes) arrays of a chunk stay in the cache through the passes over them (the same values,
    each point's computed alone)."""
    if mu.size <= CHUNK:
        return _side_chunk(mu, sd, parts)
    out = np.empty((len(parts), mu.size))
    for start in range(0, mu.size, CHUNK):
        out[:, start:start + CHUNK] = _side_chunk(mu[start:start + CHUNK], sd[start:start + CHUNK], parts)
    return out


def _side_chunk(mu: np.ndarray, sd: np.ndarray, parts: tuple[int, ...]) -> np.ndarray:
    """:func:`_side` of a few points at once."""
    series = np.exp(_log_mills_moments(mu, sd))
    # the window in ε: t = 0 at ε₀; the tilted density peaks at `tilt`, on the side at c
    eps0 = -mu / sd
    tilt = -(TERMS + 1) * sd
    c = np.maximum(tilt, eps0)
    half = np.sqrt((c - tilt) ** 2 + WINDOW**2)
    lo = np.maximum(eps0, tilt - half)
    hi = c + WINDOW**2 / (half + (c - tilt))  # = tilt + half, without cancellation
    eps = lo[:, None] + (hi - lo)[:, None] * _X01
    u = np.exp(-(mu[:, None] + sd[:, None] * eps))
    weight = np.exp(-0.5 * eps**2 - _LOG_SQRT_2PI) * _W01 * (hi - lo)[:, None]
    remainders = _remainders(u, parts)
    return np.stack([series @ _COEF[j] + np.einsum("ij,ij->i", remainders[j] - _power_series(u, _COEF[j]), weight)
                     for j in parts])


def _power_series(u: np.ndarray, coef: np.ndarray) -> np.ndarray:
    """Σₖ cₖuᵏ, k = 1..J, by Horner's rule."""
    acc = np.zeros_like(u)
    for c in coef[::-1]:
        acc = (acc + c) * u
    return acc


def expected_log_sigmoid(mu: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """E[log σ(t)], its derivative in μ, E[σ(−t)], and in v, −½E[σ(t)σ(−t)], for t ~ N(μ, v).

    ``mu`` and ``v`` are 1-D arrays of the same length (one entry per data point); v = 0 gives
    the likelihood at μ.
    """
    mu, sd, z = _standardised(mu, v)
    pos, neg = _side(mu, sd), _side(-mu, sd)  # remainders on t > 0 and on t < 0
    return _expected_min(mu, sd, z) + pos[0] + neg[0], ndtr(-z) + pos[1] - neg[1], -0.5 * (pos[2] + neg[2])


def expected_log_sigmoid_value(mu: np.ndarray, v: np.ndarray) -> np.ndarray:
    """E[log σ(t)] alone (the ELBO's term), equal to :func:`expected_log_sigmoid`'s first output bit for bit at a
    third of its cost: evaluation needs no derivatives."""
    mu, sd, z = _standardised(mu, v)
    return _expected_min(mu, sd, z) + _side(mu, sd, (0,))[0] + _side(-mu, sd, (0,))[0]


def _standardised(mu: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mu = np.asarray(mu, dtype=float)
    sd = np.sqrt(np.maximum(np.asarray(v, dtype=float), 1e-300))
    return mu, sd, mu / sd


def _expected_min(mu: np.ndarray, sd: np.ndarray, z: np.ndarray) -> np.ndarray:
    """E[min(t, 0)] = μΦ(−z) − σφ(z), as σφ(z)(z m(z) − 1) for z > 0, without cancellation."""
    zp = np.maximum(z, 0.0)
    phi = np.exp(-0.5 * z**2 - _LOG_SQRT_2PI)
    return np.where(z > 0, sd * phi * (zp * np.sqrt(np.pi / 2.0) * erfcx(zp / np.sqrt(2.0)) - 1.0),
                    mu * ndtr(-z) - sd * phi)


def expected_sigmoid(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """p̂ = E[σ(f)] for f ~ N(m, v): E[σ(−t)] with t = −f ~ N(−m, v) (the second output of
    :func:`expected_log_sigmoid`, bit for bit, without the other two)."""
    mu, sd, z = _standardised(-np.asarray(m, dtype=float), v)
    return ndtr(-z) + _side(mu, sd, (1,))[0] - _side(-mu, sd, (1,))[0]


def sigmoid_moments(mu: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Z = E[σ(t)] and its first two derivatives in μ, E[σ'(t)] and E[σ''(t)], for t ~ N(μ, v).

    These give the moments of the tilted distribution σ(t)N(t | μ, v)/Z (expectation
    propagation): mean μ + v Z'/Z, variance v − v²((Z'/Z)² − Z''/Z).  With the split of
    the module docstring, σ(t) = 1{t>0} − sgn(t) R₁(u), σ' = R₂(u) and σ'' = −sgn(t) R₃(u):
    Z = Φ(z) − E[R₁ 1{t>0}] + E[R₁ 1{t<0}], where the first two are E[σ(t) 1{t>0}] ≥ ½Φ(z),
    so Z keeps its relative accuracy when it is tiny (μ ≪ 0).
    """
    mu, sd, z = _standardised(mu, v)
    pos, neg = _side(mu, sd, (1, 2, 3)), _side(-mu, sd, (1, 2, 3))
    return ndtr(z) - pos[0] + neg[0], pos[1] + neg[1], neg[2] - pos[2]
