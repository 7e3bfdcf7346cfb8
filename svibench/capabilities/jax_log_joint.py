"""Capability 5: a log joint density written in JAX, for peers built on JAX (NumPyro's SVI).

The model gives log p(y, z) as a *pure* JAX function of a flat latent vector z of length
``latent_dim``, with the data passed as arguments, and says how a Gaussian q(z) = N(m, Σ)
becomes the posterior its ``evaluate`` takes.  The function must be defined at module level
(not a closure rebuilt per call): JAX compiles once per function object and argument shapes,
so a second ``init`` on the same problem (the run after the runner's warm-up) reuses what the
first compiled.  Model modules import jax only inside these functions, so they import without it.

It is the same density as the numpy log joint of :mod:`.log_joint` (``log_joint(z[None])[0]``,
full data); the tests check the two against each other in float64.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

from .latent_gaussian import GaussianPosterior

__all__ = ["JaxLogJoint", "JaxLogDensity"]


@dataclass(frozen=True)
class JaxLogDensity:
    """log p(y, z) = ``fn(z, *data)``: ``fn`` a module-level JAX function returning a scalar,
    ``data`` the numpy arrays it reads (dense, float64)."""

    fn: Callable[..., Any]
    data: tuple[np.ndarray, ...]


@runtime_checkable
class JaxLogJoint(Protocol):
    """A model whose log joint over a flat, real latent vector z is given in JAX.

    Attributes
    ----------
    latent_dim : int
        Length of z.
    """

    latent_dim: int

    def jax_log_joint(self) -> JaxLogDensity:
        """The log joint on all training data (no minibatch scaling)."""

    def posterior_from_gaussian(self, q: GaussianPosterior) -> Any:
        """What ``evaluate`` takes for the Gaussian q(z) over the same z."""
