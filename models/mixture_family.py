"""The mixture's conjugate family q(π) Π q(μ_kd, τ_kd) as a score-function family for BBVI.

q(π) = Dir(α) and q(μ_kd, τ_kd) = NormalGamma(m, κ, a, b), the same family the SVI
family fits, with φ = (ρ_α, m, ρ_κ, ρ_a, ρ_b) and every positive parameter a
softplus of its ρ, so BBVI's posterior is a :class:`ConjugatePosterior` that the
mixture scores with its exact ELBO, as it scores SVI's.

For an exponential family the score in the natural parameters is T(z) − E_q[T]
(e.g. Wainwright & Jordan 2008, Prop. 3.1); the score in φ is that vector through the
Jacobian of η(φ): for the Normal–Gamma η = (κm, −κ/2, −(b + κm²/2), a − ½), for the
Dirichlet η = α − 1.

One block: every variable meets every data point's mixture likelihood, so the
Markov blanket of each is the whole joint and Rao–Blackwellisation has nothing to drop.
A sample is the flat vector (π (K), μ (K·D), τ (K·D)).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.special import expit

from svibench.capabilities import ConjugatePosterior, Globals
from svibench.expfam import DirichletNatural
from svibench.expfam.normal_gamma import NormalGammaNatural
from svibench.transforms import softplus, softplus_inv

__all__ = ["MixtureFamily", "split_draws"]


def split_draws(z: np.ndarray, K: int, D: int) -> tuple[np.ndarray, np.ndarray]:
    """π (S, K) and the (μ, τ) pairs (S, K, D, 2) of flat draws z (S, K + 2KD)."""
    KD = K * D
    pairs = np.stack([z[:, K:K + KD], z[:, K + KD:]], axis=-1)
    return z[:, :K], pairs.reshape(len(z), K, D, 2)


class MixtureFamily:
    """Dirichlet × Normal–Gamma family over (π, μ, τ) for score-function BBVI.

    Parameters
    ----------
    K, D : int
        Components and dimensions.
    init : callable
        ``init(rng)`` → the model's initial λ (``"pi"``, ``"theta"``), the start of φ.
    """

    def __init__(self, K: int, D: int, init: Callable[[np.random.Generator], Globals]) -> None:
        self.K, self.D, self.init = K, D, init
        self.dim = K + 2 * K * D
        self.n_params = K + 4 * K * D
        self.n_blocks = 1
        self.param_block = np.zeros(self.n_params, dtype=int)

    def _unpack(self, phi: np.ndarray) -> tuple[np.ndarray, ...]:
        """(α (K,), m, κ, a, b (K, D) each)."""
        K, KD = self.K, self.K * self.D
        parts = [phi[K + i * KD: K + (i + 1) * KD].reshape(self.K, self.D) for i in range(4)]
        return softplus(phi[:K]), parts[0], softplus(parts[1]), softplus(parts[2]), softplus(parts[3])

    def _q(self, phi: np.ndarray) -> tuple[DirichletNatural, NormalGammaNatural]:
        alpha, m, kappa, a, b = self._unpack(phi)
        return DirichletNatural.from_concentration(alpha), NormalGammaNatural.from_params(m, kappa, a, b)

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        lam = self.init(rng)
        m, kappa, a, b = lam["theta"].params()
        positive = [np.ravel(softplus_inv(v)) for v in (kappa, a, b)]
        return np.concatenate([softplus_inv(lam["pi"].concentration()), np.ravel(m), *positive])

    def sample(self, phi: np.ndarray, rng: np.random.Generator, size: int) -> np.ndarray:
        """π, then (μ, τ) (their draws floored at ``tiny``: a Dirichlet draw of small α may underflow)."""
        q_pi, q_theta = self._q(phi)
        pi = np.maximum(q_pi.sample(rng, size), np.finfo(float).tiny)
        theta = q_theta.sample(rng, size)
        return np.concatenate([pi, theta[..., 0].reshape(size, -1), theta[..., 1].reshape(size, -1)], axis=1)

    def log_q_blocks(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        q_pi, q_theta = self._q(phi)
        pi, pairs = split_draws(z, self.K, self.D)
        return (q_pi.log_pdf(pi) + q_theta.log_pdf(pairs).sum((-2, -1)))[:, None]

    def score(self, phi: np.ndarray, z: np.ndarray) -> np.ndarray:
        """∇_φ log q(z | φ) = (∂η/∂φ)ᵀ (T(z) − E_q[T]) for every draw, shape (S, n_params)."""
        q_pi, q_theta = self._q(phi)
        pi, pairs = split_draws(z, self.K, self.D)
        _, m, kappa, _, _ = self._unpack(phi)
        g_alpha = (np.log(pi) - q_pi.to_mean().arrays()[0]) * expit(phi[:self.K])
        g1, g2, g3, g4 = (t - e for t, e in zip(q_theta.sufficient_statistics(pairs).arrays(),
                                               q_theta.to_mean().arrays()))
        rho_kappa, rho_a, rho_b = (phi[self.K + i * self.K * self.D: self.K + (i + 1) * self.K * self.D]
                                   .reshape(self.K, self.D) for i in (1, 2, 3))
        g_m = kappa * g1 - kappa * m * g3
        g_kappa = (m * g1 - 0.5 * g2 - 0.5 * m**2 * g3) * expit(rho_kappa)
        g_a, g_b = g4 * expit(rho_a), -g3 * expit(rho_b)
        S = len(z)
        return np.concatenate([g_alpha] + [g.reshape(S, -1) for g in (g_m, g_kappa, g_a, g_b)], axis=1)

    def posterior(self, phi: np.ndarray) -> ConjugatePosterior:
        q_pi, q_theta = self._q(phi)
        return ConjugatePosterior({"pi": q_pi, "theta": q_theta})
