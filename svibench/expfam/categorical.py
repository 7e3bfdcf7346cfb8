"""Categorical distributions over the last axis (``K`` categories).

Draws are one-hot vectors, so ``T(x) = x`` and ``E[T(x)] = p``.  The natural
parameter is the non-minimal vector of log-probabilities ``η`` with
``A(η) = logsumexp(η)`` and ``μ = softmax(η)``.  Because ``η`` and ``η + c·1``
describe the same distribution, :meth:`CategoricalMean.to_natural` returns the
normalised representative ``η = log p`` (``A = 0``).

References
----------
.. [1] M. J. Wainwright and M. I. Jordan, "Graphical Models, Exponential Families,
   and Variational Inference", 2008, §3.2 (overcomplete representations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import logsumexp, softmax

from .base import MeanParametrization, NaturalParametrization, _require, _size_tuple

__all__ = ["CategoricalNatural", "CategoricalMean"]


@dataclass(frozen=True, eq=False)
class CategoricalNatural(NaturalParametrization):
    """Natural parameters of Categorical distributions.

    Parameters
    ----------
    eta : array_like, shape (..., K)
        Log-probabilities up to an additive constant per batch element; finite.
    """

    eta: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (1,)

    @classmethod
    def from_probs(cls, probs: ArrayLike) -> CategoricalNatural:
        """From probabilities ``p > 0`` (..., K) summing to one over the last axis."""
        probs = np.asarray(probs, dtype=float)
        _require(probs > 0, "Categorical: probs must be positive (zero probabilities have no natural parameter)")
        _require(np.abs(probs.sum(-1) - 1.0) < 1e-8, "Categorical: probs must sum to 1 over the last axis")
        return cls(np.log(probs) - np.log(probs.sum(-1, keepdims=True)))

    def probs(self) -> np.ndarray:
        """``p = softmax(η)``."""
        self._check_domain()
        return softmax(self.eta, axis=-1)

    def _check_domain(self) -> None:
        _require(np.isfinite(self.eta), "CategoricalNatural: eta must be finite")

    def log_partition(self) -> np.ndarray:
        self._check_domain()
        return logsumexp(self.eta, axis=-1)

    def to_mean(self) -> CategoricalMean:
        return CategoricalMean(self.probs())

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> CategoricalMean:
        """``T(x) = x`` for one-hot ``x`` of shape (..., K)."""
        return CategoricalMean(np.asarray(x, dtype=float))

    def _in_support(self, x: np.ndarray) -> np.ndarray:
        return np.all((x == 0) | (x == 1), axis=-1) & (x.sum(-1) == 1)

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        """One-hot float draws of shape ``size + batch_shape + (K,)``
        (use ``.argmax(-1)`` for labels)."""
        p = self.probs()
        k = p.shape[-1]
        u = rng.random(_size_tuple(size) + self.batch_shape + (1,))
        labels = np.minimum((u >= np.cumsum(p, axis=-1)).sum(-1), k - 1)
        return np.eye(k)[labels]

    def fisher_vector_product(self, v: CategoricalNatural) -> CategoricalMean:
        """``(diag(p) - p pᵀ) v``."""
        p = self.probs()
        return CategoricalMean(p * v.eta - p * (p * v.eta).sum(-1, keepdims=True))


@dataclass(frozen=True, eq=False)
class CategoricalMean(MeanParametrization):
    """Mean parameters of Categorical distributions.

    Parameters
    ----------
    probs : array_like, shape (..., K)
        Probabilities ``E[x] = p``; positive, summing to one over the last axis.
    """

    probs: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (1,)

    def to_natural(self) -> CategoricalNatural:
        return CategoricalNatural.from_probs(self.probs)
