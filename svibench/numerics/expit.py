"""A compiled logistic function σ(t) = 1/(1 + e^(−t)) whose loops vectorise.

numba compiles ``math.exp`` to a call into the C library, one value at a time, and a call spills every
live register.  In a kernel whose every step ends in σ (BPFA's coordinate ascent, eq. 9 and 11) that call
was about a quarter of the time.  :func:`expit` has no call and no branch, so a loop of it over a small
array (:func:`expit_all`) runs in SIMD registers:

* e^x with x = n ln 2 + r, |r| ≤ ½ ln 2: n = ⌊x / ln 2 + ½⌋, r by Cody & Waite's two-part ln 2 (the low
  part keeps r exact to rounding), e^r by its Taylor polynomial of degree 13 (truncation error
  below 2·10⁻¹⁷ relative), and 2ⁿ written into a double's exponent bits (as 2ⁿ⁻¹ · 2, so that n = 1024, the
  top of the range, does not overflow them).  n stays a double and reaches the exponent bits through an
  addition (:data:`EXPONENT_SHIFT`) and a shift, not a conversion to an integer: AVX2 has no vector
  conversion between doubles and 64-bit integers, and with one the loop went one lane at a time there
  (coordinate-ascent kernel at B = K = 250, D = 64 on an AVX2 machine: 5% less; the same bits);
* the polynomial is summed in a tree six multiply-adds deep (:func:`_exp_poly`), not by Horner's
  rule, thirteen deep: each multiply-add waits for the one before, so in a kernel that waits for σ
  (BPFA's, whose next step needs θ) the depth is time (coordinate-ascent kernel at B = K = 250,
  D = 64: 4% less).  The terms 1 + r are added last, as Horner adds them, and the largest error
  against scipy stays 2.7 ulp;
* x is clamped to [−708, 709.78] first: below −708, σ(t) rounds to 1 whatever e^x is, and above 709.78
  e^x overflows, so σ(t) = 0, as with the C library's exp; NaN stays NaN.

σ agrees with ``scipy.special.expit`` to a few units in the last place over the whole line
(``tests/core/test_expit.py``).  Compiled without ``reassoc``: reassociating the reduction would lose
the low part of ln 2.
"""
from __future__ import annotations

import math

import numpy as np
from llvmlite import ir
from numba.extending import intrinsic

from svibench.numerics.jit import numba

__all__ = ["expit", "expit_all"]

INV_LN2 = 1.0 / math.log(2.0)
LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: n · LN2_HI is exact for |n| ≤ 2¹¹
LN2_LO = 1.90821492927058770002e-10  # ln 2 − LN2_HI
X_MIN, X_MAX = -708.0, 709.782712893384  # e^X_MIN is normal; e^X_MAX is the largest finite double
#: 1.5 · 2⁵² + 1022: for an integer-valued double n in [−1021, 1025] (expit's n is in [−1021, 1024]), the low
#: bits of n + EXPONENT_SHIFT are n + 1022 (its mantissa's unit is 1), so its bits shifted left by 52 are 2ⁿ⁻¹'s.
EXPONENT_SHIFT = 1.5 * 2.0**52 + 1022.0
#: 1/j! for j = 0, ..., 13: the Taylor coefficients of e^r.
TAYLOR = tuple(1.0 / math.factorial(j) for j in range(14))

_compile = numba.njit(cache=True, fastmath={"contract"}, error_model="numpy")


@intrinsic
def _as_double(typingctx, bits):
    """The float64 whose IEEE-754 bits are the int64 ``bits``."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())
    return numba.types.float64(numba.types.int64), codegen


@intrinsic
def _as_bits(typingctx, x):
    """The IEEE-754 bits of the float64 ``x``, as an int64."""
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))
    return numba.types.int64(numba.types.float64), codegen


@_compile
def _exp_poly(r):
    """Σ_{j ≤ 13} r^j / j! (``TAYLOR``), six multiply-adds deep: (1 + r) + r²(c₂ + c₃r + r²(u₁ + r⁴(u₂ + r⁴u₃))),
    with u₁, u₂, u₃ the terms of degrees 4–7, 8–11 and 12–13 in pairs."""
    c = TAYLOR
    r2 = r * r
    r4 = r2 * r2
    u1 = (c[4] + c[5] * r) + (c[6] + c[7] * r) * r2
    u2 = (c[8] + c[9] * r) + (c[10] + c[11] * r) * r2
    u3 = c[12] + c[13] * r
    return (1.0 + r) + r2 * ((c[2] + c[3] * r) + r2 * (u1 + r4 * (u2 + r4 * u3)))


@_compile
def expit(t):
    """σ(t) = 1/(1 + e^(−t)) (see the module docstring)."""
    x = -t
    xc = min(max(x, X_MIN), X_MAX)
    n = np.floor(xc * INV_LN2 + 0.5)
    r = (xc - n * LN2_HI) - n * LN2_LO
    e = _exp_poly(r) * _as_double(_as_bits(n + EXPONENT_SHIFT) << 52) * 2.0
    e = math.inf if x > X_MAX else (x if x != x else e)
    return 1.0 / (1.0 + e)


@_compile
def expit_all(t):
    """t ← σ(t) elementwise, in place (a 1-d array; the loop vectorises)."""
    for j in range(t.shape[0]):
        t[j] = expit(t[j])
