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

Reparameterisation: π = g/Σg with g_k ~ Ga(α_k, 1), τ ~ Ga(a, b), both by the
implicit inverse-CDF gradients of ``capabilities.mean_field.gamma_draws``
(Figurnov et al. 2018), and μ = m + ε/√(κτ), ε ~ N(0, 1); the base noise is
(u_π (K), u_τ (K·D), ε (K·D)).  The entropies are analytic: for the Dirichlet
H = log B(α) + (α₀ − K)ψ(α₀) − Σ_k (α_k − 1)ψ(α_k), for the Normal–Gamma
H = a − ½ log b + log Γ(a) + (½ − a)ψ(a) − ½ log κ + ½(1 + log 2π).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.special import digamma, expit, gammaln, polygamma

from svibench.capabilities import ConjugatePosterior, Globals
from svibench.capabilities.mean_field import GammaDraws, gamma_draws
from svibench.expfam import LOG_2PI, DirichletNatural
from svibench.expfam.normal_gamma import NormalGammaNatural
from svibench.numerics.transforms import softplus, softplus_inv

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
        g1, g2, g3, g4 = (t - e for t, e in zip(q_theta.sufficient_statistics(pairs).arrays(),
                                               q_theta.to_mean().arrays()))
        return self._chain_positive(phi, np.log(pi) - q_pi.to_mean().arrays()[0], kappa * g1 - kappa * m * g3,
                                    m * g1 - 0.5 * g2 - 0.5 * m**2 * g3, g4, -g3)

    # -- reparameterisation
    def draw_noise(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Uniforms for the gammas of π and τ, then normals for μ, shape (size, K + 2KD)."""
        KD = self.K * self.D
        return np.concatenate([rng.uniform(size=(size, self.K + KD)), rng.standard_normal((size, KD))], axis=1)

    def _reparam(self, phi: np.ndarray, eps: np.ndarray) -> tuple[GammaDraws, GammaDraws, np.ndarray, np.ndarray]:
        """The gamma draws g of π and of τ, the normals ε (S, K, D) and μ."""
        alpha, m, kappa, a, b = self._unpack(phi)
        K, KD, S = self.K, self.K * self.D, len(eps)
        g = gamma_draws(alpha, 1.0, eps[:, :K])
        tau = gamma_draws(a, b, eps[:, K:K + KD].reshape(S, self.K, self.D))
        normal = eps[:, K + KD:].reshape(S, self.K, self.D)
        return g, tau, normal, m + normal / np.sqrt(kappa * tau.z)

    def transform(self, phi: np.ndarray, eps: np.ndarray) -> np.ndarray:
        g, tau, _, mu = self._reparam(phi, eps)
        S = len(eps)
        pi = g.z / g.z.sum(-1, keepdims=True)
        return np.concatenate([pi, mu.reshape(S, -1), tau.z.reshape(S, -1)], axis=1)

    def transform_vjp(self, phi: np.ndarray, eps: np.ndarray, grad_z: np.ndarray) -> np.ndarray:
        """Σ_s (∂T/∂φ)ᵀ grad_z[s]: through π = g/Σg, μ = m + ε/√(κτ) and the gammas' implicit derivatives."""
        _, m, kappa, _, _ = self._unpack(phi)
        g, tau, _, mu = self._reparam(phi, eps)
        g_pi, pairs = split_draws(grad_z, self.K, self.D)
        g_mu, g_tau = pairs[..., 0], pairs[..., 1]
        total = g.z.sum(-1, keepdims=True)
        pi = g.z / total
        g_g = (g_pi - np.sum(g_pi * pi, axis=-1, keepdims=True)) / total  # ∂/∂g of π = g/Σg
        g_tau = g_tau - 0.5 * g_mu * (mu - m) / tau.z  # μ depends on τ
        d_alpha = np.sum(g_g * g.dz_dshape, axis=0)
        d_m = np.sum(g_mu, axis=0)
        d_kappa = np.sum(-0.5 * g_mu * (mu - m) / kappa, axis=0)
        d_a, d_b = np.sum(g_tau * tau.dz_dshape, axis=0), np.sum(g_tau * tau.dz_drate, axis=0)
        return self._chain_positive(phi, d_alpha, d_m, d_kappa, d_a, d_b)

    def _chain_positive(self, phi: np.ndarray, d_alpha, d_m, d_kappa, d_a, d_b) -> np.ndarray:
        """Gradients in (α (…, K), m, κ, a, b (…, K, D)) to φ (…, n_params): the positive ones times softplus' = σ(ρ)."""
        K, KD = self.K, self.K * self.D
        rho = [phi[K + i * KD: K + (i + 1) * KD].reshape(self.K, self.D) for i in (1, 2, 3)]
        lead = np.shape(d_alpha)[:-1]
        parts = [d_m, d_kappa * expit(rho[0]), d_a * expit(rho[1]), d_b * expit(rho[2])]
        flat = [np.broadcast_to(p, lead + (self.K, self.D)).reshape(lead + (KD,)) for p in parts]
        return np.concatenate([d_alpha * expit(phi[:K]), *flat], axis=-1)

    def entropy(self, phi: np.ndarray) -> float:
        alpha, _, kappa, a, b = self._unpack(phi)
        a0, K = alpha.sum(), self.K
        h_pi = gammaln(alpha).sum() - gammaln(a0) + (a0 - K) * digamma(a0) - np.sum((alpha - 1.0) * digamma(alpha))
        h_theta = a - 0.5 * np.log(b) + gammaln(a) + (0.5 - a) * digamma(a) - 0.5 * np.log(kappa) + 0.5 * (1.0 + LOG_2PI)
        return float(h_pi + h_theta.sum())

    def entropy_grad(self, phi: np.ndarray) -> np.ndarray:
        alpha, m, kappa, a, b = self._unpack(phi)
        d_alpha = (alpha.sum() - self.K) * polygamma(1, alpha.sum()) - (alpha - 1.0) * polygamma(1, alpha)
        return self._chain_positive(phi, d_alpha, np.zeros_like(m), -0.5 / kappa, 1.0 + (0.5 - a) * polygamma(1, a),
                                    -0.5 / b)

    def posterior(self, phi: np.ndarray) -> ConjugatePosterior:
        q_pi, q_theta = self._q(phi)
        return ConjugatePosterior({"pi": q_pi, "theta": q_theta})
