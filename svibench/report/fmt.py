"""Numbers as report text: as many digits as the spread over seeds supports."""
from __future__ import annotations

import math

__all__ = ["number", "mean_sd", "DASH"]

DASH = "—"


def number(x: float, digits: int = 4) -> str:
    """``x`` with ``digits`` significant digits, ``—`` for NaN."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return DASH
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.{digits}g}"


def mean_sd(mean: float, sd: float, digits: int = 4) -> str:
    """``mean ± sd`` rounded to the sd's second significant digit (``mean`` alone when sd is NaN/0)."""
    if math.isnan(mean) or math.isinf(mean):
        return number(mean)
    if math.isnan(sd) or sd == 0 or math.isinf(sd):
        return number(mean, digits)
    decimals = 1 - math.floor(math.log10(abs(sd)))
    scale = max(abs(mean), abs(sd))
    if decimals > 8 or scale >= 1e7 or decimals < -6:
        return f"{mean:.{digits}g} ± {sd:.2g}"
    decimals = max(decimals, 0)
    return f"{mean:.{decimals}f} ± {sd:.{decimals}f}"
