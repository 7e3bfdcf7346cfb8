"""Transforms between unconstrained and positive parameters (for gradient-based VI)."""
from __future__ import annotations

import numpy as np

__all__ = ["softplus", "softplus_inv"]


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + eˣ), computed stably."""
    return np.logaddexp(0.0, x)


def softplus_inv(y: np.ndarray) -> np.ndarray:
    """The inverse of :func:`softplus` for y > 0: log(eʸ − 1)."""
    y = np.asarray(y, dtype=float)
    return y + np.log(-np.expm1(-y))
