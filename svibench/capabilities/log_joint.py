"""Capability 4: a log joint density, for black-box variational inference.

BBVI (Ranganath, Gerrish & Blei 2014) needs nothing from a model but
log p(y, z) evaluated at samples z ~ q and a variational family q(z | φ) that
can sample, evaluate log q and its score ∇_φ log q.  Two refinements need a
little more, and this module spells out exactly what:

* **Rao–Blackwellisation** (Ranganath et al. 2014, §3.1, eq. 5).  For a
  factorised q(z) = Π_b q_b(z_b | φ_b), the gradient w.r.t. φ_b only needs
  the terms of log p that involve z_b (its Markov blanket):
  ∇_{φ_b} L = E_{q}[∇_{φ_b} log q_b(z_b) (log p_b(y, z) − log q_b(z_b))],
  where log p_b collects the factors of p whose scope contains z_b.  The
  model returns these per-block terms as the columns of
  :meth:`LogJoint.log_joint_blocks`; the family returns the per-block
  log q_b as the columns of :meth:`VariationalFamily.log_q_blocks` and tells
  which block each variational parameter belongs to (``param_block``).
  A family with one block (e.g. a full-covariance Gaussian) gets no
  Rao–Blackwellisation, only control variates.

* **Reparameterisation** (Kingma & Welling 2014; ADVI, Kucukelbir et al. 2017).
  Where z = T(φ, ε) with ε from a fixed base distribution and the model
  gives ∇_z log p(y, z) (:class:`LogJointGradient`), the gradient is
  E_ε[(∂T/∂φ)ᵀ ∇_z log p(y, T(φ, ε))] + ∇_φ H[q].  The family then also
  implements :class:`ReparameterisableFamily`.

Conventions
-----------
* A sample is a flat vector: ``z`` has shape ``(S, dim)`` for ``S`` draws, in
  the space where the model's density is defined (positive variables stay
  positive; it is the *variational parameters* φ that are unconstrained,
  e.g. through softplus, so any real φ is valid).
* ``batch`` selects data terms for doubly-stochastic estimates: the model
  includes the likelihood terms of the data points in ``batch`` multiplied by
  ``n_train / len(batch)`` (an unbiased estimate of the full sum) plus every
  prior term; ``batch=None`` means all data.
* The family's :meth:`VariationalFamily.posterior` turns φ into whatever the
  model's ``evaluate`` accepts (the family's type parameter ``Q``), so BBVI never
  needs to know the model's posterior type.  The models here hand out the
  posterior of their other capability: a
  :class:`~svibench.capabilities.latent_gaussian.GaussianPosterior` (logistic
  regression, GP classification), the mean-field
  :data:`~svibench.capabilities.mean_field.Blocks` (Poisson and gamma factor
  models), or a :class:`~svibench.capabilities.conjugate.ConjugatePosterior`
  with the fitted locals (BPFA).
"""
from __future__ import annotations

from typing import ClassVar, Protocol, TypeVar, runtime_checkable

import numpy as np

__all__ = ["VariationalFamily", "ReparameterisableFamily", "LogJoint", "LogJointGradient"]

#: What a family's :meth:`~VariationalFamily.posterior` hands to the model's ``evaluate``.
Q = TypeVar("Q", covariant=True)


@runtime_checkable
class VariationalFamily(Protocol[Q]):
    """A variational family q(z | φ) with a flat, unconstrained parameter vector φ.

    Attributes
    ----------
    dim : int
        Length of a sample z.
    n_params : int
        Length of φ.
    n_blocks : int
        Number of independent factors q_b (1 for a joint family).
    param_block : ndarray of int, shape (n_params,)
        ``param_block[p]`` is the block b whose q_b depends on φ_p.
    """

    dim: int
    n_params: int
    n_blocks: int
    param_block: np.ndarray

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        """Initial φ, shape (n_params,)."""

    def sample(self, phi: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws z ~ q(· | φ), shape (size, dim)."""

    def log_q_blocks(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        """log q_b(z_b | φ_b) for every draw and block, shape (S, n_blocks); rows sum to log q(z)."""

    def score(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        """∇_φ log q(z | φ) for every draw, shape (S, n_params)."""

    def posterior(self, phi: np.ndarray) -> Q:
        """q(· | φ) in the form the model's ``evaluate`` takes."""


@runtime_checkable
class ReparameterisableFamily(VariationalFamily[Q], Protocol[Q]):
    """A family with z = T(φ, ε), ε from a base distribution free of φ."""

    def draw_noise(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` base draws ε, shape (size, ·)."""

    def transform(self, phi: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """z = T(φ, ε), shape (S, dim)."""

    def transform_vjp(self, phi: np.ndarray, eps: np.ndarray, grad_z: np.ndarray) -> np.ndarray:
        """Σ_s (∂T(φ, ε_s)/∂φ)ᵀ grad_z[s], shape (n_params,)."""

    def entropy(self, phi: np.ndarray) -> float:
        """H[q(· | φ)]."""

    def entropy_grad(self, phi: np.ndarray) -> np.ndarray:
        """∇_φ H[q(· | φ)], shape (n_params,)."""


@runtime_checkable
class LogJoint(Protocol[Q]):
    """A model that evaluates its log joint density on samples.

    Attributes
    ----------
    family_kinds : tuple of str
        Names of the variational families :meth:`variational_family` builds
        (first is the default), e.g. ``("meanfield", "full")``.
    n_train : int
        Number of data terms (what ``batch`` indexes).
    """

    family_kinds: ClassVar[tuple[str, ...]]
    n_train: int

    def variational_family(self, kind: str) -> VariationalFamily[Q]:
        """The variational family ``kind`` over this model's latent variables."""

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        """log p(y, z) (minibatch-scaled when ``batch`` is given), shape (S,)."""

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """Markov-blanket terms log p_b(y, z) of each block of family ``kind``, shape (S, n_blocks).

        Column b sums the factors of p whose scope contains block b; for a
        one-block family it equals :meth:`log_joint`.
        """


@runtime_checkable
class LogJointGradient(LogJoint[Q], Protocol[Q]):
    """A log joint that also gives its gradient in z (for reparameterisation).

    The families this model builds must implement :class:`ReparameterisableFamily`.
    """

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        """∇_z log p(y, z) (minibatch-scaled as :meth:`LogJoint.log_joint`), shape (S, dim)."""
