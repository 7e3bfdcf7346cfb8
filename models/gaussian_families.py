"""Gaussian variational families for black-box VI (capability 4, :mod:`svibench.capabilities.log_joint`).

Both keep φ unconstrained, parametrised as the standard ADVI guides are (NumPyro's
``AutoNormal`` / ``AutoMultivariateNormal``, Kucukelbir et al. 2017, §2.4), so that
no iterate is ever decomposed and a constant-rate Adam moves each parameter on the
scale of the posterior it describes:

* :class:`MeanFieldGaussian` — q(z) = Π_d N(z_d | m_d, s_d²), s = exp(ω), φ = (m, ω);
  one block per coordinate, so BBVI can Rao–Blackwellise.
* :class:`FullGaussian` — q(z) = N(m, LLᵀ) with the scale-tril L = diag(s) U, s =
  softplus(ρ) > 0 and U unit lower triangular; φ = (m, ρ, strictly-lower entries of U);
  one block.  L's diagonal is s, positive by construction; an off-diagonal entry
  L_ij = s_i U_ij moves in proportion to its row's scale.

Both start at m = 0 (the prior median of the models here) and scale 0.1 (NumPyro's
``init_scale``), and give ∇_z log q at a reparameterised draw (:meth:`grad_log_q`, for
the "sticking the landing" gradient, Roeder, Wu & Duvenaud 2017).  Both return
:class:`~svibench.capabilities.latent_gaussian.GaussianPosterior`, the full family with
its scale-tril, so the model's KL never decomposes LLᵀ.  Both give their reparameterisation
gradient compiled too (:meth:`compiled_reparam_gradient`, for BBVI's fused steps).
"""
from __future__ import annotations

import numpy as np
import scipy.linalg
from scipy.special import expit

from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.expfam import LOG_2PI
from svibench.numerics.transforms import softplus, softplus_inv

from . import gaussian_kernels

__all__ = ["MeanFieldGaussian", "FullGaussian"]



class MeanFieldGaussian:
    """q(z) = Π_d N(z_d | m_d, s_d²), s = exp(ω), φ = concat(m, ω)."""

    def __init__(self, dim: int, *, init_scale: float = 0.1) -> None:
        self.dim = dim
        self.n_params = 2 * dim
        self.n_blocks = dim
        self.param_block = np.concatenate([np.arange(dim), np.arange(dim)])
        self.init_scale = init_scale

    def mean_sd(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(m, s), each (dim,)."""
        return phi[: self.dim], np.exp(phi[self.dim:])

    @staticmethod
    def params(mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
        """φ for the means and standard deviations given."""
        return np.concatenate([np.ravel(mean), np.log(np.ravel(sd))])

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        return self.params(np.zeros(self.dim), np.full(self.dim, self.init_scale))

    def sample(self, phi, rng, size):
        return self.transform(phi, self.draw_noise(rng, size))

    def log_q_blocks(self, phi, z):
        m, s = self.mean_sd(phi)
        return -0.5 * LOG_2PI - np.log(s) - 0.5 * ((z - m) / s) ** 2

    def score(self, phi, z):
        """∂ log q/∂m = r/s, ∂ log q/∂ω = r² − 1, with r = (z − m)/s."""
        m, s = self.mean_sd(phi)
        r = (z - m) / s
        return np.concatenate([r / s, r**2 - 1.0], axis=1)

    def draw_noise(self, rng, size):
        return rng.standard_normal((size, self.dim))

    def transform(self, phi, eps):
        m, s = self.mean_sd(phi)
        return m + s * eps

    def transform_vjp(self, phi, eps, grad_z):
        _, s = self.mean_sd(phi)
        return np.concatenate([grad_z.sum(0), (grad_z * eps).sum(0) * s])

    def grad_log_q(self, phi, eps):
        """∇_z log q(z | φ) at z = T(φ, ε): −ε/s, shape (S, dim)."""
        return -eps / self.mean_sd(phi)[1]

    def entropy(self, phi):
        return float(np.sum(phi[self.dim:]) + 0.5 * self.dim * (1.0 + LOG_2PI))

    def entropy_grad(self, phi):
        return np.concatenate([np.zeros(self.dim), np.ones(self.dim)])

    def compiled_reparam_gradient(self):
        """This family's compiled reparameterisation gradient (:mod:`.gaussian_kernels`)."""
        return gaussian_kernels.mean_field_gradient

    def posterior(self, phi: np.ndarray) -> GaussianPosterior:
        m, s = self.mean_sd(phi)
        return GaussianPosterior(m.copy(), np.diag(s**2), np.diag(s))


class FullGaussian:
    """q(z) = N(m, LLᵀ), L = diag(softplus(ρ)) U with U unit lower triangular; φ = (m, ρ, tril₋₁(U))."""

    def __init__(self, dim: int, *, init_scale: float = 0.1) -> None:
        self.dim = dim
        self._rows, self._cols = np.tril_indices(dim, -1)
        self._strict = np.tri(dim, k=-1, dtype=bool)  # the strictly-lower entries, in tril_indices' (row-major) order
        self.n_params = 2 * dim + len(self._rows)
        self.n_blocks = 1
        self.param_block = np.zeros(self.n_params, dtype=int)
        self.init_scale = init_scale

    def _unpack(self, phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(m, ρ, s, U)."""
        D = self.dim
        m, rho = phi[:D], phi[D:2 * D]
        U = np.eye(D)
        U[self._strict] = phi[2 * D:]
        return m, rho, softplus(rho), U

    def scale_tril(self, phi: np.ndarray) -> np.ndarray:
        """L = diag(s) U, lower triangular with positive diagonal s."""
        _, _, s, U = self._unpack(phi)
        return s[:, None] * U


    def init_params(self, rng):
        return np.concatenate([np.zeros(self.dim), np.full(self.dim, softplus_inv(self.init_scale)),
                               np.zeros(len(self._rows))])

    def sample(self, phi, rng, size):
        return self.transform(phi, self.draw_noise(rng, size))

    def log_q_blocks(self, phi, z):
        m, L = phi[:self.dim], self.scale_tril(phi)
        eps = scipy.linalg.solve_triangular(L, (z - m).T, lower=True).T
        return (-0.5 * self.dim * LOG_2PI - np.sum(np.log(np.diag(L))) - 0.5 * np.sum(eps**2, axis=1))[:, None]

    def score(self, phi, z):
        """With ε = L⁻¹(z − m) and u = L⁻ᵀε: ∇_m log q = u, ∂/∂L_ij = u_i ε_j − δ_ij/s_i (i ≥ j),
        so ∂/∂s_i = u_i (Uε)_i − 1/s_i and ∂/∂U_ij = s_i u_i ε_j."""
        m, rho, s, U = self._unpack(phi)
        L = s[:, None] * U
        eps = scipy.linalg.solve_triangular(L, (z - m).T, lower=True)  # (D, S)
        u = scipy.linalg.solve_triangular(L, eps, lower=True, trans="T")
        D = self.dim
        out = np.empty((z.shape[0], self.n_params))
        out[:, :D] = u.T
        out[:, D:2 * D] = (u * (U @ eps) - 1.0 / s[:, None]).T * expit(rho)
        out[:, 2 * D:] = (s[self._rows, None] * u[self._rows] * eps[self._cols]).T  # tril_indices order = the mask's
        return out

    def draw_noise(self, rng, size):
        return rng.standard_normal((size, self.dim))

    def transform(self, phi, eps):
        m, _, s, U = self._unpack(phi)
        return m + (eps @ U.T) * s

    def transform_vjp(self, phi, eps, grad_z):
        """Σ_s (∂z_s/∂φ)ᵀ g_s with z = m + Lε = m + s∘(Uε): ∂/∂m = Σ g_s, ∂/∂s = Σ g_s∘(Uε_s)
        (then ∂s/∂ρ = σ(ρ)), ∂/∂U_ij = s_i Σ_s g_si ε_sj (i > j)."""
        _, rho, s, U = self._unpack(phi)
        g_U = (grad_z * s).T @ eps
        return np.concatenate([grad_z.sum(0), np.sum(grad_z * (eps @ U.T), axis=0) * expit(rho), g_U[self._strict]])

    def grad_log_q(self, phi, eps):
        """∇_z log q(z | φ) at z = m + Lε: −(LLᵀ)⁻¹Lε = −L⁻ᵀε, shape (S, dim)."""
        return -scipy.linalg.solve_triangular(self.scale_tril(phi), eps.T, lower=True, trans="T").T

    def entropy(self, phi):
        _, _, s, _ = self._unpack(phi)
        return float(np.sum(np.log(s)) + 0.5 * self.dim * (1.0 + LOG_2PI))

    def entropy_grad(self, phi):
        """H = Σ log s_i + const: only ρ moves it, by σ(ρ)/s."""
        D = self.dim
        rho = phi[D:2 * D]
        return np.concatenate([np.zeros(D), expit(rho) / softplus(rho), np.zeros(self.n_params - 2 * D)])

    def compiled_reparam_gradient(self):
        """This family's compiled reparameterisation gradient (:mod:`.gaussian_kernels`)."""
        return gaussian_kernels.full_rank_gradient

    def posterior(self, phi: np.ndarray) -> GaussianPosterior:
        L = self.scale_tril(phi)
        return GaussianPosterior(phi[:self.dim].copy(), scale_tril=L)
