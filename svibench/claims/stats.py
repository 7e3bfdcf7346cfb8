"""The statistical rule of the verdicts: a one-sided sign test on the paired units.

Each unit (problem, seed) either holds or not.  Under the null hypothesis that the claim is no better than a coin
(each unit holds with probability ½), the number holding is Binomial(n, ½); the verdict needs the one-sided
p-value of what was seen to be at most :data:`ALPHA`:

- ``p_holds`` = P(X ≥ k): evidence that the claim holds more often than not;
- ``p_fails`` = P(X ≤ k): evidence that it fails more often than not.

With n units, the smallest p either side can reach is ½ⁿ, so fewer than :data:`MIN_UNITS` (5) units can never
decide: such a claim is *too few units*, with its count.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from scipy.stats import binom

__all__ = ["SignTest", "sign_test", "ALPHA", "MIN_UNITS"]

#: The one-sided level a verdict needs.
ALPHA = 0.05
#: The fewest units on which a unanimous result reaches p ≤ ALPHA (½⁵ = 0.031).
MIN_UNITS = math.ceil(math.log(ALPHA) / math.log(0.5))


@dataclass(frozen=True)
class SignTest:
    """k of n units hold; the one-sided p-values of the sign test either way."""

    holds: int
    n: int
    p_holds: float
    p_fails: float

    def describe(self) -> str:
        """The rule's line for the ledger: n, the statistic and p."""
        return f"sign test: {self.holds} of n = {self.n} hold, one-sided p = {self.p_holds:.2g} (holds), {self.p_fails:.2g} (fails)"


def sign_test(holds: int, n: int) -> SignTest:
    """The one-sided sign test of ``holds`` successes in ``n`` paired units."""
    if n == 0:
        return SignTest(0, 0, 1.0, 1.0)
    return SignTest(holds, n, float(binom.sf(holds - 1, n, 0.5)), float(binom.cdf(holds, n, 0.5)))
