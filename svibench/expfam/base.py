"""Shared machinery for natural and mean (expectation) parametrisations.

Every family ``F`` has two frozen dataclasses, ``FNatural`` and ``FMean``, whose
fields are parameter arrays batched by shape.  A field of *rank* ``r`` has shape
``batch_shape + event_shape * r``: rank 0 for scalars, rank 1 for vectors such as
a Gaussian mean ``(..., D)``, rank 2 for matrices such as ``E[x xᵀ]`` ``(..., D, D)``.

This module holds everything that is generic over the fields: batching, linear
arithmetic, flattening, and the exponential-family identities that only need
``log_partition`` and ``to_mean``:

* entropy ``H = A(η) - <η, μ>``,
* ``KL(p‖q) = A(η_q) - A(η_p) - <η_q - η_p, μ_p>``,
* ``log p(x) = <η, T(x)> - A(η)``.

All families use the base measure ``h(x) = 1`` (constants such as ``log 2π`` live
in ``A``), so no ``E[log h(x)]`` term appears.

References
----------
.. [1] M. J. Wainwright and M. I. Jordan, "Graphical Models, Exponential Families,
   and Variational Inference", Found. Trends Mach. Learn. 1(1-2), 2008, §3.2-3.4
   (eq. 3.41 for the gradient of the log-partition).
"""

from __future__ import annotations

import dataclasses
import functools
from abc import ABC, abstractmethod
from typing import ClassVar, Self

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["Parametrization", "NaturalParametrization", "MeanParametrization", "LOG_2PI"]

#: log 2π, the Gaussian normaliser's constant (one definition for every module).
LOG_2PI = float(np.log(2.0 * np.pi))


def _require(condition: ArrayLike, message: str) -> None:
    """Raise ``ValueError(message)`` unless every element of ``condition`` holds.

    NaNs compare false, so they are rejected too.  (``ndarray.all`` rather than ``np.all``: half the call's
    cost, and the domain checks are on SVI's hot path.)
    """
    if not np.asarray(condition).all():
        raise ValueError(message)


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    """The dataclass field names of ``cls`` in order (``dataclasses.fields`` costs a call per use)."""
    return tuple(f.name for f in dataclasses.fields(cls))


def _inner(a: Parametrization, b: Parametrization) -> np.ndarray:
    """Batched inner product ``<a, b>`` summed over fields and event axes."""
    total = 0.0
    for rank, x, y in zip(a._field_ranks, a.arrays(), b.arrays(), strict=True):
        prod = x * y
        total = total + (prod.sum(axis=tuple(range(-rank, 0))) if rank else prod)
    return np.asarray(total)


class Parametrization(ABC):
    """Frozen bundle of parameter arrays with linear arithmetic.

    Subclasses are frozen dataclasses; ``_field_ranks`` gives the number of event
    axes of each field (in field order).  Fields are converted to ``float64``
    arrays and broadcast to a common batch shape on construction.  Domain
    validation (e.g. positive shapes) happens when a quantity is computed, not on
    construction, so that intermediate SVI iterates may be formed freely.

    Arithmetic: ``a + b`` and ``a - b`` need the same type; ``c * a``, ``a * c``
    and ``a / c`` take a scalar or an array broadcastable against ``batch_shape``
    (one coefficient per batch element).
    """

    _field_ranks: ClassVar[tuple[int, ...]]
    # Make ``ndarray * param`` defer to ``param.__rmul__`` instead of building an
    # object array element by element.
    __array_ufunc__ = None

    def __post_init__(self) -> None:
        names = _field_names(type(self))
        arrays = [np.asarray(getattr(self, n), dtype=float) for n in names]
        if not self._same_layout(arrays):
            arrays = self._broadcast(names, arrays)
        for name, x in zip(names, arrays):
            object.__setattr__(self, name, x)

    def _same_layout(self, arrays: list[np.ndarray]) -> bool:
        """True when the fields need no checks and no broadcasting: one shape, and every field of one rank ≤ 1
        (the common case, e.g. an SVI iterate built from its own arrays; the construction cost is on its hot path)."""
        ranks, shape = self._field_ranks, arrays[0].shape
        return ranks[0] <= 1 and len(shape) >= ranks[0] and all(r == ranks[0] for r in ranks) \
            and all(x.shape == shape for x in arrays)

    def _broadcast(self, names: tuple[str, ...], arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The fields checked for consistent event axes and broadcast to a common batch shape."""
        for name, rank, x in zip(names, self._field_ranks, arrays):
            if x.ndim < rank:
                raise ValueError(f"{type(self).__name__}.{name} needs at least {rank} axes, got {x.shape}")
        sizes = {x.shape[-1] for r, x in zip(self._field_ranks, arrays) if r}
        for rank, x in zip(self._field_ranks, arrays):
            if rank and (len(sizes) != 1 or len(set(x.shape[x.ndim - rank:])) != 1):
                shapes = [a.shape for a in arrays]
                raise ValueError(f"{type(self).__name__}: inconsistent event axes, got shapes {shapes}")
        try:
            batch = np.broadcast_shapes(*(x.shape[: x.ndim - r] for r, x in zip(self._field_ranks, arrays)))
        except ValueError as err:
            shapes = [a.shape for a in arrays]
            raise ValueError(f"{type(self).__name__}: batch shapes do not broadcast: {shapes}") from err
        targets = [batch + x.shape[x.ndim - r:] for r, x in zip(self._field_ranks, arrays)]
        return [x if x.shape == target else np.broadcast_to(x, target) for x, target in zip(arrays, targets)]

    # ---------------------------------------------------------------- shapes
    def arrays(self) -> tuple[np.ndarray, ...]:
        """The field arrays in field order (no copy)."""
        return tuple(getattr(self, n) for n in _field_names(type(self)))

    @property
    def batch_shape(self) -> tuple[int, ...]:
        """Shape of the batch of distributions."""
        x = self.arrays()[0]
        return x.shape[: x.ndim - self._field_ranks[0]]

    @property
    def event_shape(self) -> tuple[int, ...]:
        """Shape of one draw: ``()`` for scalar families, ``(D,)`` or ``(K,)`` otherwise."""
        for rank, x in zip(self._field_ranks, self.arrays()):
            if rank:
                return x.shape[-1:]
        return ()

    # ------------------------------------------------------------ arithmetic
    def _map(self, fn) -> Self:
        return type(self)(*(fn(rank, x) for rank, x in zip(self._field_ranks, self.arrays())))

    def __add__(self, other: Self) -> Self:
        if type(other) is not type(self):
            return NotImplemented
        return type(self)(*(x + y for x, y in zip(self.arrays(), other.arrays())))

    def __sub__(self, other: Self) -> Self:
        if type(other) is not type(self):
            return NotImplemented
        return type(self)(*(x - y for x, y in zip(self.arrays(), other.arrays())))

    def __mul__(self, c: ArrayLike) -> Self:
        if isinstance(c, Parametrization):
            return NotImplemented
        c = np.asarray(c, dtype=float)
        return self._map(lambda rank, x: x * c.reshape(c.shape + (1,) * rank))

    __rmul__ = __mul__

    def __truediv__(self, c: ArrayLike) -> Self:
        if isinstance(c, Parametrization):
            return NotImplemented
        return self * (1.0 / np.asarray(c, dtype=float))

    def __neg__(self) -> Self:
        return self._map(lambda rank, x: -x)

    def zeros_like(self) -> Self:
        """Same type and shapes, every parameter zero (the additive identity)."""
        return self._map(lambda rank, x: np.zeros(x.shape))

    def batch_sum(self, axis: int | tuple[int, ...] = 0) -> Self:
        """Sum over batch axes, e.g. sufficient statistics over a minibatch."""
        nb = len(self.batch_shape)
        axes = tuple(a % nb for a in np.atleast_1d(axis))
        return self._map(lambda rank, x: x.sum(axis=axes))

    def batch_mean(self, axis: int | tuple[int, ...] = 0) -> Self:
        """Average over batch axes (see :meth:`batch_sum`)."""
        shape = self.batch_shape
        count = np.prod([shape[a % len(shape)] for a in np.atleast_1d(axis)])
        return self.batch_sum(axis) / count

    # ------------------------------------------------------------ flattening
    def flatten(self) -> np.ndarray:
        """All parameters as one 1-D array, field by field in C order."""
        return np.concatenate([x.ravel() for x in self.arrays()])

    @classmethod
    def unflatten(cls, vec: ArrayLike, batch_shape: tuple[int, ...] = (), event_shape: tuple[int, ...] = ()) -> Self:
        """Inverse of :meth:`flatten`.

        Parameters
        ----------
        vec : array_like, 1-D
        batch_shape : tuple of int
        event_shape : tuple of int
            ``()`` for scalar families, ``(D,)`` / ``(K,)`` for vector families.
        """
        vec = np.asarray(vec, dtype=float)
        shapes = [tuple(batch_shape) + tuple(event_shape) * r for r in cls._field_ranks]
        sizes = [int(np.prod(s)) for s in shapes]
        if vec.shape != (sum(sizes),):
            raise ValueError(f"{cls.__name__}.unflatten: expected a 1-D array of length {sum(sizes)}, got {vec.shape}")
        parts = np.split(vec, np.cumsum(sizes)[:-1])
        return cls(*(p.reshape(s) for p, s in zip(parts, shapes)))


class MeanParametrization(Parametrization):
    """Expectation parameters ``μ = E[T(x)]`` of a family."""

    @abstractmethod
    def to_natural(self) -> NaturalParametrization:
        """Natural parameters ``η`` with ``∇A(η) = μ``."""


class NaturalParametrization(Parametrization):
    """Natural parameters ``η`` of ``p(x) = exp(<η, T(x)> - A(η))``."""

    @abstractmethod
    def _check_domain(self) -> None:
        """Raise ``ValueError`` if ``η`` is outside the natural parameter space."""

    def in_domain(self) -> np.ndarray:
        """Element-wise membership of the natural parameter space, a boolean array of ``batch_shape``.

        Needed only where a batch is updated element by element (CVI-MF's
        per-node step shrink); families that offer it override this.
        """
        raise NotImplementedError(f"{type(self).__name__} does not offer an element-wise domain check")

    @abstractmethod
    def log_partition(self) -> np.ndarray:
        """Log-partition ``A(η)``, one value per batch element."""

    @abstractmethod
    def to_mean(self) -> MeanParametrization:
        """Mean parameters ``μ = ∇A(η) = E[T(x)]`` ([1]_ eq. 3.41)."""

    @classmethod
    @abstractmethod
    def sufficient_statistics(cls, x: ArrayLike) -> MeanParametrization:
        """``T(x)`` as the mean-parameter type, so that ``E[T(x)] = to_mean()``."""

    @abstractmethod
    def sample(self, rng: np.random.Generator, size: tuple[int, ...] | int = ()) -> np.ndarray:
        """Draws of shape ``size + batch_shape + event_shape``."""

    @abstractmethod
    def fisher_vector_product(self, v: Self) -> MeanParametrization:
        """Fisher information times a tangent vector: ``∇²A(η) v = Cov[T] v``.

        ``v`` is a natural-parameter direction; the result is the matching
        change of the mean parameters, ``dμ = F(η) dη``.
        """

    def _in_support(self, x: np.ndarray) -> np.ndarray | bool:
        """Boolean mask over ``x.shape[:-len(event_shape)]``; default: everywhere."""
        return True

    def entropy(self) -> np.ndarray:
        """Differential (or Shannon) entropy ``A(η) - <η, μ>`` per batch element."""
        return self.log_partition() - _inner(self, self.to_mean())

    def kl(self, other: Self) -> np.ndarray:
        """``KL(self ‖ other) = A(η_q) - A(η_p) - <η_q - η_p, μ_p>`` per batch element."""
        if type(other) is not type(self):
            raise TypeError(f"kl needs another {type(self).__name__}, got {type(other).__name__}")
        return other.log_partition() - self.log_partition() - _inner(other - self, self.to_mean())

    def log_pdf(self, x: ArrayLike) -> np.ndarray:
        """Log density ``<η, T(x)> - A(η)``; ``-inf`` outside the support.

        ``x`` has shape ``sample_shape + batch_shape + event_shape``.
        """
        x = np.asarray(x, dtype=float)
        log_z = self.log_partition()
        with np.errstate(all="ignore"):
            value = _inner(self, self.sufficient_statistics(x)) - log_z
        return np.where(self._in_support(x), value, -np.inf)


def _size_tuple(size: tuple[int, ...] | int) -> tuple[int, ...]:
    return (size,) if np.isscalar(size) else tuple(size)
