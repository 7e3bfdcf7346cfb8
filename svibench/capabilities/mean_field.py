"""Capability 3: mean-field models with conjugate and non-conjugate factors.

For CVI on mean-field approximations (Khan & Lin 2017, Algorithm 2).  The
variational distribution is q(z) = Πᵢ qᵢ(zᵢ | λᵢ), each factor a minimal
exponential family (Assumption 3).  The nodes are grouped in named *blocks*
(e.g. ``"W"`` and ``"Z"`` of a matrix factorisation), each block one batched
natural-parameter object of :mod:`svibench.expfam`.  For every node the model
offers the two kinds of messages of Algorithm 2, step 4:

* the conjugate messages Σ_{a∈Nᵢ} η̃_{a,i} = Σ_a E_{q/i}[η_{a,i}(x_{a/i})]
  (eq. 20: the VMP messages of the factors conjugate to qᵢ, the prior factor
  included), and
* a stochastic estimate of Σ_{a∈Nᵢ} ∇_{μᵢ} E_q[log p̃_nc^{a,i}], the gradient
  of the non-conjugate factors w.r.t. the mean parameters μᵢ.

Both are natural-parameter objects (a gradient w.r.t. μ lives in the dual,
natural coordinates), so Algorithm 2 is plain linear arithmetic:
λ̃ᵢ = messages + gradient (eq. 84), λᵢ ← (1 − β)λᵢ + βλ̃ᵢ (eq. 85).

Every algorithm hands the model its :data:`Blocks` (λ of every block); the
models' own Gamma families for gradient methods (``models.gamma_family``) hand
out the same.

Where ∇_μ is not available directly, it is obtained from a gradient w.r.t.
the natural parameters by eq. 15, ∇_μ f = C_λ⁻¹ ∇_λ f with C_λ the Fisher
information (:func:`mean_gradient`); for Gamma factors ∇_λ f comes from the
reparameterisation trick (App. F, eq. 73–74; :func:`gamma_mean_gradient`).

References
----------
M. E. Khan and W. Lin, "Conjugate-Computation Variational Inference",
AISTATS 2017, §5, Algorithm 2, App. F (eq. 72–74) and App. G (eq. 84–85).
M. Figurnov, S. Mohamed and A. Mnih, "Implicit Reparameterization
Gradients", NeurIPS 2018, eq. 6 (dz/dα = −∂_α F(z; α) / p(z; α)).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Protocol, runtime_checkable

import numpy as np
from scipy.special import digamma, gammainc, gammaincc, gammaincinv, gammaln

from ..numerics import gamma_inverse
from ..expfam import GammaNatural
from ..expfam.base import NaturalParametrization

__all__ = [
    "Blocks", "MeanFieldNonConjugate", "mean_gradient", "is_valid",
    "GammaDraws", "gamma_draws", "gamma_mean_gradient", "gamma_natural_gradient_sum",
]

#: Variational parameters of a mean-field model: block name -> batched natural parameters.
Blocks = Mapping[str, NaturalParametrization]


@runtime_checkable
class MeanFieldNonConjugate(Protocol):
    """A model whose mean-field CVI updates split into conjugate messages and non-conjugate gradients.

    Attributes
    ----------
    n_train : int
        Number of data points (what an epoch counts).
    """

    n_train: int

    def mf_init(self, rng: np.random.Generator) -> dict[str, NaturalParametrization]:
        """Initial λ of every block."""

    def conjugate_messages(self, lam: Blocks, block: str) -> NaturalParametrization:
        """Σ_{a∈Nᵢ} η̃_{a,i} (eq. 20) for every node of ``block``, given the current q of the other nodes.

        Includes the node's own prior factor, so with no non-conjugate factors
        λᵢ = conjugate_messages is the VMP update of node i.
        """

    def nonconjugate_gradient(
        self, lam: Blocks, blocks: tuple[str, ...], rng: np.random.Generator, n_samples: int
    ) -> dict[str, NaturalParametrization]:
        """Σ_{a∈Nᵢ} ∇̂_{μᵢ} E_q[log p̃_nc^{a,i}] at q = q(λ) for every node of each of ``blocks``.

        A Monte-Carlo estimate from ``n_samples`` draws of q (unbiased up to
        the accuracy of the reparameterisation), in natural coordinates.
        """


def is_valid(lam: NaturalParametrization) -> bool:
    """Whether every natural parameter in the batch lies in its family's domain (and is finite)."""
    if not all(np.all(np.isfinite(x)) for x in lam.arrays()):
        return False
    try:
        lam.log_partition()
    except ValueError:
        return False
    return True


def mean_gradient(lam: NaturalParametrization, grad_lam: NaturalParametrization) -> NaturalParametrization:
    """∇_μ f from ∇_λ f by eq. 15 / 72: solve C_λ g = ∇_λ f, element by element of the batch.

    The Fisher matrix C_λ = ∇²A(λ) of each element is assembled from
    ``fisher_vector_product`` on the unit directions, so any family whose
    fields are scalars per batch element (Gamma, Beta, Bernoulli) works.
    ``grad_lam`` has the type of ``lam``; so does the result (the gradient
    w.r.t. μ is a natural-coordinate vector).
    """
    unit = lam.zeros_like()
    n_fields = len(unit.arrays())
    if any(rank for rank in lam._field_ranks):
        raise NotImplementedError(f"mean_gradient handles families with scalar fields, not {type(lam).__name__}")
    columns = []
    for f in range(n_fields):
        direction = type(lam)(*(np.ones(unit.batch_shape) if g == f else np.zeros(unit.batch_shape) for g in range(n_fields)))
        columns.append(np.stack(lam.fisher_vector_product(direction).arrays(), axis=-1))
    fisher = np.stack(columns, axis=-1)  # batch + (n_fields, n_fields)
    rhs = np.stack(grad_lam.arrays(), axis=-1)[..., None]
    solution = np.linalg.solve(fisher, rhs)[..., 0]
    return type(lam)(*(solution[..., f] for f in range(n_fields)))


@dataclass(frozen=True)
class GammaDraws:
    """Reparameterised draws z = F⁻¹(u; α)/β of Gamma(α, β) (shape α, rate β).

    Attributes
    ----------
    z : ndarray, shape (S,) + batch
        The draws.
    dz_dshape, dz_drate : ndarray, same shape
        ∂z/∂α (implicit differentiation of the CDF) and ∂z/∂β = −z/β.
    """

    z: np.ndarray
    dz_dshape: np.ndarray
    dz_drate: np.ndarray


UPPER_TAIL = 0.9
"""u above which ∂_α P is differenced through Q = gammaincc (see :func:`_inverse_cdf_scipy`)."""


def _inverse_cdf_scipy(alpha: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P⁻¹(α, u) (floored at ``tiny``) and its α-derivative from scipy: the reference of the compiled kernel.

    ∂_α P is a central difference of ``scipy.special.gammainc`` (of ``gammaincc``
    where u > ``UPPER_TAIL``: there P ≈ 1 and only Q = 1 − P keeps its relative
    accuracy), with step 10⁻⁵·min(α, √α): relative error below 10⁻⁸ for the
    shapes met here.  ~3× slower than :mod:`svibench.numerics.gamma_inverse`, which the
    tests check against it.
    """
    tiny = np.finfo(float).tiny
    xtilde = np.maximum(gammaincinv(alpha, u), tiny)
    h = 1e-5 * np.minimum(alpha, np.sqrt(alpha))
    dP = np.empty(u.shape)
    for part, incomplete, sign in ((u <= UPPER_TAIL, gammainc, 1.0), (u > UPPER_TAIL, gammaincc, -1.0)):
        a, step, x = alpha[part], h[part], xtilde[part]
        dP[part] = sign * (incomplete(a + step, x) - incomplete(a - step, x))
    dP /= 2.0 * h
    log_pdf = (alpha - 1.0) * np.log(xtilde) - xtilde - gammaln(alpha)
    return xtilde, -dP * np.exp(-log_pdf)


def _inverse_cdf(shape: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """P⁻¹(α, u) for α = ``shape`` broadcast against ``u``, floored at ``tiny``, and ∂/∂α of it."""
    alpha = np.broadcast_to(shape, u.shape)
    x, dx = np.empty(u.size), np.empty(u.size)
    shape = np.asarray(shape, dtype=float)  # log Γ and ψ once per factor, not once per draw
    gamma_inverse.inverse_gamma_cdf(
        np.ascontiguousarray(alpha, dtype=float).ravel(), np.ascontiguousarray(u, dtype=float).ravel(),
        np.broadcast_to(gammaln(shape), u.shape).ravel(), np.broadcast_to(digamma(shape), u.shape).ravel(), x, dx)
    return x.reshape(u.shape), dx.reshape(u.shape)


def gamma_draws(shape: np.ndarray, rate: np.ndarray, u: np.ndarray) -> GammaDraws:
    """Inverse-CDF draws of Gamma(shape, rate) from uniforms ``u`` and their derivatives.

    z̃ = P⁻¹(α, u) with P the regularised lower incomplete gamma function,
    z = z̃/β.  Holding u fixed, dz̃/dα = −∂_α P(α, z̃) / p(z̃; α) (implicit
    reparameterisation; Figurnov et al. 2018, eq. 6), computed by the compiled
    kernel of :mod:`svibench.numerics.gamma_inverse`.  This is the
    exact reparameterisation gradient (the quantity Knowles 2015 approximates),
    to ~10⁻¹² relative.

    Draws are floored at the smallest normal float (``tiny``), after the division
    by β: at shapes α ≲ 0.01 the inverse CDF underflows, and a subnormal or zero
    z would make a model's prior gradient (a − 1)/z overflow although its
    product with dz/dα, (a − 1) d log z/dα, is finite.

    Parameters
    ----------
    shape, rate : ndarray
        α > 0 and β > 0, broadcastable against ``u``.
    u : ndarray
        Uniform(0, 1) draws, shape (S,) + batch.
    """
    ztilde, dztilde = _inverse_cdf(shape, u)
    z = np.maximum(ztilde / rate, np.finfo(float).tiny)
    return GammaDraws(z, dztilde / rate, -z / rate)


def gamma_mean_gradient(lam: GammaNatural, draws: GammaDraws, grad_z: np.ndarray) -> GammaNatural:
    """Monte-Carlo ∇_μ E_q[f(z)] for a batch of Gamma factors (App. F, eq. 72–74).

    ∇_λ E_q[f] is estimated by reparameterisation, (∂/∂η₁, ∂/∂η₂) =
    (E[f'(z) ∂z/∂α], −E[f'(z) ∂z/∂β]) for η = (α − 1, −β), then mapped to
    ∇_μ by the exact Gamma Fisher information (eq. 15) — the authors' later
    code does the same ("inexact g, exact I").

    Parameters
    ----------
    lam : GammaNatural
        q, batch shape B.
    draws : GammaDraws
        Draws of q (:func:`gamma_draws`), shape (S,) + B.
    grad_z : ndarray, shape (S,) + B
        ∂f/∂z at each draw (other blocks' variables held at their own draws).
    """
    return mean_gradient(lam, gamma_natural_gradient_sum(draws, grad_z) / len(grad_z))


def gamma_natural_gradient_sum(draws: GammaDraws, grad_z: np.ndarray) -> GammaNatural:
    """Σ_s (f'(zₛ) ∂zₛ/∂α, −f'(zₛ) ∂zₛ/∂β): the reparameterisation estimate of ∇_λ E_q[f] times S.

    A sum, so that a model may add it up over chunks of its draws and divide by S once.
    """
    return GammaNatural(np.sum(grad_z * draws.dz_dshape, axis=0), -np.sum(grad_z * draws.dz_drate, axis=0))
