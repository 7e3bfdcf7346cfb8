"""Bernoulli distributions on ``{0, 1}``.

``T(x) = x``, ``η = log(p / (1 - p))`` (the logit), ``A(η) = log(1 + eᵑ)`` and
``μ = p = σ(η)``.

References
----------
.. [1] M. J. Wainwright and M. I. Jordan, "Graphical Models, Exponential Families,
   and Variational Inference", 2008, Example 3.1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import expit, logit

from .base import MeanParametrization, NaturalParametrization, _require, _size_tuple

__all__ = ["BernoulliNatural", "BernoulliMean"]


@dataclass(frozen=True, eq=False)
class BernoulliNatural(NaturalParametrization):
    """Natural parameters of Bernoulli distributions.

    Parameters
    ----------
    eta : array_like
        The logit ``log(p / (1 - p))``; must be finite.
    """

    eta: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0,)

    @classmethod
    def from_prob(cls, prob: ArrayLike) -> BernoulliNatural:
        """From success probabilities ``0 < p < 1``."""
        prob = np.asarray(prob, dtype=float)
        _require((prob > 0) & (prob < 1), "Bernoulli: prob must lie strictly between 0 and 1")
        return cls(logit(prob))

    def prob(self) -> np.ndarray:
        """``p = σ(η)``."""
        self._check_domain()
        return expit(self.eta)

    def _check_domain(self) -> None:
        _require(np.isfinite(self.eta), "BernoulliNatural: eta (the logit) must be finite")

    def log_partition(self) -> np.ndarray:
        self._check_domain()
        return np.logaddexp(0.0, self.eta)

    def to_mean(self) -> BernoulliMean:
        return BernoulliMean(self.prob())

    @classmethod
    def sufficient_statistics(cls, x: ArrayLike) -> BernoulliMean:
        return BernoulliMean(np.asarray(x, dtype=float))

    def _in_support(self, x: np.ndarray) -> np.ndarray:
        return (x == 0) | (x == 1)

    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        """Float draws in ``{0., 1.}``."""
        p = self.prob()
        return (rng.random(_size_tuple(size) + self.batch_shape) < p).astype(float)

    def fisher_vector_product(self, v: BernoulliNatural) -> BernoulliMean:
        """``p (1 - p) v``."""
        p = self.prob()
        return BernoulliMean(p * (1.0 - p) * v.eta)


@dataclass(frozen=True, eq=False)
class BernoulliMean(MeanParametrization):
    """Mean parameters of Bernoulli distributions.

    Parameters
    ----------
    prob : array_like
        ``p = E[x]``, strictly between 0 and 1.
    """

    prob: np.ndarray
    _field_ranks: ClassVar[tuple[int, ...]] = (0,)

    def to_natural(self) -> BernoulliNatural:
        return BernoulliNatural.from_prob(self.prob)
