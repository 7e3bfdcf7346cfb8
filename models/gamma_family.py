"""A mean-field Gamma variational family for black-box VI (capability 4).

Every latent scalar zᵢ of the model has its own factor Gamma(αᵢ, βᵢ) (shape,
rate) with unconstrained parameters αᵢ = softplus(φ_αᵢ), βᵢ = softplus(φ_βᵢ):
the transform λ = log(1 + exp(λ')) of Khan & Lin (2017, §7) for their ADAM
baseline, and of Knowles (2015).  Draws are reparameterised through the
inverse CDF, z = P⁻¹(α, u)/β with u ~ Uniform(0, 1)
(:func:`svibench.capabilities.mean_field.gamma_draws`), the same draws and
derivatives CVI-MF uses, so both spend the same on a gradient; draws that need no
derivative (score-function BBVI, Monte-Carlo metrics: :meth:`MeanFieldGamma.sample`)
come from numpy's Gamma sampler.

The model's latent variables are named blocks of arrays (``{"W": (V, K),
"Z": (N, K)}``); a sample is their concatenation, flattened in block order.
Each scalar is its own Rao–Blackwellisation block.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.special import digamma, expit, gammaln, polygamma

from svibench.capabilities.mean_field import Blocks, GammaDraws, gamma_draws
from svibench.expfam import GammaNatural
from svibench.numerics.transforms import softplus, softplus_inv

__all__ = ["MeanFieldGamma"]


class MeanFieldGamma:
    """Independent softplus-parameterised Gamma factors over named blocks of positive latents.

    Parameters
    ----------
    shapes : dict of str to tuple of int
        Block name -> array shape of that block's latents.
    init : callable, optional
        ``rng -> {block: GammaNatural}``, the model's initial q (shared with CVI-MF); needed
        by :meth:`init_params` unless a larger family that holds this one initialises it.

    Notes
    -----
    φ = (φ_α, φ_β), each of length ``dim``: α = softplus(φ_α), β = softplus(φ_β).
    Implements :class:`svibench.capabilities.ReparameterisableFamily`.
    """

    def __init__(self, shapes: dict[str, tuple[int, ...]], init: Callable[[np.random.Generator], dict[str, GammaNatural]] | None = None) -> None:
        self.shapes = dict(shapes)
        self.sizes = {name: int(np.prod(shape)) for name, shape in self.shapes.items()}
        self.dim = sum(self.sizes.values())
        self.n_params = 2 * self.dim
        self.n_blocks = self.dim
        self.param_block = np.concatenate([np.arange(self.dim), np.arange(self.dim)])
        self._init = init
        self._cache: tuple[np.ndarray, np.ndarray, GammaDraws] | None = None

    # -- parameters
    def shape_rate(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(α, β), each of shape (dim,)."""
        return softplus(phi[: self.dim]), softplus(phi[self.dim:])

    def split(self, flat: np.ndarray) -> dict[str, np.ndarray]:
        """Cut (..., dim) into the blocks, each reshaped to (...,) + its shape."""
        out, start = {}, 0
        for name, shape in self.shapes.items():
            size = self.sizes[name]
            out[name] = flat[..., start:start + size].reshape(flat.shape[:-1] + shape)
            start += size
        return out

    @staticmethod
    def params(shape: np.ndarray, rate: np.ndarray) -> np.ndarray:
        """φ for the shapes and rates given (each of length ``dim``, in block order)."""
        return np.concatenate([softplus_inv(np.ravel(shape)), softplus_inv(np.ravel(rate))])

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        if self._init is None:
            raise ValueError("this MeanFieldGamma was built without an init; pass init= or set φ with params()")
        q = self._init(rng)
        parts = [q[name].shape_rate() for name in self.shapes]
        return self.params(np.concatenate([np.ravel(a) for a, _ in parts]), np.concatenate([np.ravel(b) for _, b in parts]))

    def posterior(self, phi: np.ndarray) -> Blocks:
        shape, rate = self.shape_rate(phi)
        a, b = self.split(shape), self.split(rate)
        return {name: GammaNatural.from_shape_rate(a[name], b[name]) for name in self.shapes}

    # -- sampling and densities
    def draw_noise(self, rng: np.random.Generator, size: int) -> np.ndarray:
        return rng.uniform(size=(size, self.dim))

    def _draws(self, phi: np.ndarray, eps: np.ndarray) -> GammaDraws:
        if self._cache is not None and self._cache[1] is eps and np.array_equal(self._cache[0], phi):
            return self._cache[2]
        shape, rate = self.shape_rate(phi)
        draws = gamma_draws(shape, rate, eps)
        self._cache = (phi.copy(), eps, draws)
        return draws

    def transform(self, phi: np.ndarray, eps: np.ndarray) -> np.ndarray:
        return self._draws(phi, eps).z

    def transform_vjp(self, phi: np.ndarray, eps: np.ndarray, grad_z: np.ndarray) -> np.ndarray:
        draws = self._draws(phi, eps)
        ds_a, ds_b = expit(phi[: self.dim]), expit(phi[self.dim:])
        return np.concatenate([(grad_z * draws.dz_dshape).sum(0) * ds_a, (grad_z * draws.dz_drate).sum(0) * ds_b])

    def sample(self, phi: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` draws of q (size, dim) where no derivative is wanted (score-function BBVI, Monte-Carlo
        metrics): numpy's Gamma sampler (Marsaglia & Tsang 2000), floored at ``tiny`` as the reparameterised draws
        are.  The inverse-CDF draws of :meth:`transform`, which carry their derivatives, cost an order of magnitude
        more, which a sampler that needs no derivative should not pay."""
        shape, rate = self.shape_rate(phi)
        return np.maximum(rng.gamma(shape, 1.0 / rate, size=(size, self.dim)), np.finfo(float).tiny)

    def log_q_blocks(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        a, b = self.shape_rate(phi)
        return a * np.log(b) - gammaln(a) + (a - 1.0) * np.log(z) - b * z

    def score(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        a, b = self.shape_rate(phi)
        d_a = (np.log(b) - digamma(a) + np.log(z)) * expit(phi[: self.dim])
        d_b = (a / b - z) * expit(phi[self.dim:])
        return np.concatenate([d_a, d_b], axis=-1)

    def entropy(self, phi: np.ndarray) -> float:
        a, b = self.shape_rate(phi)
        return float(np.sum(a - np.log(b) + gammaln(a) + (1.0 - a) * digamma(a)))

    def entropy_grad(self, phi: np.ndarray) -> np.ndarray:
        a, b = self.shape_rate(phi)
        return np.concatenate([(1.0 + (1.0 - a) * polygamma(1, a)) * expit(phi[: self.dim]), -expit(phi[self.dim:]) / b])
