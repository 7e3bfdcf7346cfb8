"""Minibatch sampling: the one way every algorithm draws the data points of an iteration."""
from __future__ import annotations

import numpy as np

__all__ = ["sample_minibatch"]


def sample_minibatch(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """``min(size, n)`` distinct indices of ``range(n)`` drawn uniformly without replacement, sorted.

    Sorted so that a model reads its rows in memory order; the draw is
    ``rng.choice(n, min(size, n), replace=False)``, so the generator's stream is
    the same whichever algorithm asks.
    """
    return np.sort(rng.choice(n, size=min(size, n), replace=False))
