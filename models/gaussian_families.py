"""Gaussian variational families for black-box VI (capability 4, :mod:`svibench.capabilities.log_joint`).

Both families keep φ unconstrained: scales go through softplus
(s = log(1 + e^ρ)), as in the CVI paper's BBVI baselines.

* :class:`MeanFieldGaussian` — q(z) = Π_d N(z_d | m_d, s_d²), φ = (m, ρ);
  one block per coordinate, so BBVI can Rao–Blackwellise.
* :class:`FullGaussian` — q(z) = N(m, LLᵀ) with L lower triangular,
  diagonal softplus(ρ_d); φ = (m, ρ, strictly-lower entries); one block.

Both return :class:`~svibench.capabilities.latent_gaussian.GaussianPosterior`.
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.special import expit

from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.transforms import softplus, softplus_inv

__all__ = ["MeanFieldGaussian", "FullGaussian"]

_LOG2PI = np.log(2.0 * np.pi)


class MeanFieldGaussian:
    """q(z) = Π_d N(z_d | m_d, softplus(ρ_d)²), φ = concat(m, ρ)."""

    def __init__(self, dim: int, *, init_scale: float = 0.1) -> None:
        self.dim = dim
        self.n_params = 2 * dim
        self.n_blocks = dim
        self.param_block = np.concatenate([np.arange(dim), np.arange(dim)])
        self.init_scale = init_scale

    def _split(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        m, rho = phi[: self.dim], phi[self.dim:]
        return m, rho, softplus(rho)

    def mean_sd(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(m, s), each (dim,)."""
        m, _, s = self._split(phi)
        return m, s

    @staticmethod
    def params(mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
        """φ for the means and standard deviations given."""
        return np.concatenate([np.ravel(mean), softplus_inv(np.ravel(sd))])

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        return self.params(np.zeros(self.dim), np.full(self.dim, self.init_scale))

    def sample(self, phi, rng, size):
        return self.transform(phi, self.draw_noise(rng, size))

    def log_q_blocks(self, phi, z):
        m, _, s = self._split(phi)
        return -0.5 * _LOG2PI - np.log(s) - 0.5 * ((z - m) / s) ** 2

    def score(self, phi, z):
        m, rho, s = self._split(phi)
        r = (z - m) / s
        return np.concatenate([r / s, (r**2 - 1.0) / s * expit(rho)], axis=1)

    def draw_noise(self, rng, size):
        return rng.standard_normal((size, self.dim))

    def transform(self, phi, eps):
        m, _, s = self._split(phi)
        return m + s * eps

    def transform_vjp(self, phi, eps, grad_z):
        _, rho, _ = self._split(phi)
        return np.concatenate([grad_z.sum(0), (grad_z * eps).sum(0) * expit(rho)])

    def entropy(self, phi):
        _, _, s = self._split(phi)
        return float(np.sum(np.log(s)) + 0.5 * self.dim * (1.0 + _LOG2PI))

    def entropy_grad(self, phi):
        _, rho, s = self._split(phi)
        return np.concatenate([np.zeros(self.dim), expit(rho) / s])

    def posterior(self, phi: np.ndarray) -> GaussianPosterior:
        m, _, s = self._split(phi)
        return GaussianPosterior(m.copy(), np.diag(s**2))


class FullGaussian:
    """q(z) = N(m, LLᵀ), L lower triangular with diag(L) = softplus(ρ); φ = (m, ρ, tril₋₁(L))."""

    def __init__(self, dim: int, *, init_scale: float = 0.1) -> None:
        self.dim = dim
        self._rows, self._cols = np.tril_indices(dim, -1)
        self.n_params = 2 * dim + len(self._rows)
        self.n_blocks = 1
        self.param_block = np.zeros(self.n_params, dtype=int)
        self.init_scale = init_scale

    def _unpack(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        D = self.dim
        m, rho = phi[:D], phi[D:2 * D]
        L = np.zeros((D, D))
        L[self._rows, self._cols] = phi[2 * D:]
        L[np.diag_indices(D)] = softplus(rho)
        return m, rho, L

    def _pack_grad(self, gm: np.ndarray, gL: np.ndarray, rho: np.ndarray) -> np.ndarray:
        return np.concatenate([gm, np.diag(gL) * expit(rho), gL[self._rows, self._cols]])

    def init_params(self, rng):
        return np.concatenate([np.zeros(self.dim), np.full(self.dim, softplus_inv(self.init_scale)),
                               np.zeros(len(self._rows))])

    def sample(self, phi, rng, size):
        return self.transform(phi, self.draw_noise(rng, size))

    def log_q_blocks(self, phi, z):
        m, _, L = self._unpack(phi)
        eps = scipy.linalg.solve_triangular(L, (z - m).T, lower=True).T
        return (-0.5 * self.dim * _LOG2PI - np.sum(np.log(np.diag(L))) - 0.5 * np.sum(eps**2, axis=1))[:, None]

    def score(self, phi, z):
        """∇_m log q = L⁻ᵀε, ∇_L log q = tril(L⁻ᵀεεᵀ) − diag(1/L_dd), with ε = L⁻¹(z − m)."""
        m, rho, L = self._unpack(phi)
        eps = scipy.linalg.solve_triangular(L, (z - m).T, lower=True)  # (D, S)
        u = scipy.linalg.solve_triangular(L, eps, lower=True, trans="T")  # L⁻ᵀε
        S = z.shape[0]
        out = np.empty((S, self.n_params))
        D = self.dim
        out[:, :D] = u.T
        diag = u * eps - 1.0 / np.diag(L)[:, None]  # (D, S)
        out[:, D:2 * D] = diag.T * expit(rho)
        out[:, 2 * D:] = (u[self._rows] * eps[self._cols]).T
        return out

    def draw_noise(self, rng, size):
        return rng.standard_normal((size, self.dim))

    def transform(self, phi, eps):
        m, _, L = self._unpack(phi)
        return m + eps @ L.T

    def transform_vjp(self, phi, eps, grad_z):
        _, rho, _ = self._unpack(phi)
        return self._pack_grad(grad_z.sum(0), np.tril(grad_z.T @ eps), rho)

    def entropy(self, phi):
        _, _, L = self._unpack(phi)
        return float(np.sum(np.log(np.diag(L))) + 0.5 * self.dim * (1.0 + _LOG2PI))

    def entropy_grad(self, phi):
        _, rho, L = self._unpack(phi)
        return self._pack_grad(np.zeros(self.dim), np.diag(1.0 / np.diag(L)), rho)

    def posterior(self, phi: np.ndarray) -> GaussianPosterior:
        m, _, L = self._unpack(phi)
        return GaussianPosterior(m.copy(), L @ L.T)
