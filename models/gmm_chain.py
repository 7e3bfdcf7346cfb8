"""The Gaussian mixture's Gibbs sampler and label alignment (its reference posterior, svibench.reference).

The chain is uncollapsed over (z, π, μ, τ).  One sweep draws, each from its complete conditional
(Bishop 2006, §10.2; Murphy 2007, §3 for the Normal–Gamma update):

* zᵢ | π, μ, τ ~ Cat(softmax sᵢ), s_ik = log π_k + Σ_d log N(x_id | μ_kd, 1/τ_kd), by the Gumbel-max trick
  (argmax_k s_ik + G_ik, G_ik ~ Gumbel(0, 1));
* π | z ~ Dir(α₀ + n_k);
* (μ_kd, τ_kd) | z ~ NormalGamma: the prior's natural parameters plus Σ_{i: zᵢ=k} (x_id, −½, −x_id²/2, ½).

The latent vector compared with a reference is θ = (μ (K·D, component-major), π (K)): every component's
location and weight, the quantities a user reads off a fitted mixture (the precisions are left out to keep the
vector small; their posteriors follow the means' in a conjugate model).  The likelihood is invariant under
permuting the components, so the draws are relabelled before moments are taken (Stephens 2000;
Papastamoulis 2016, ``label.switching``): :func:`align_draws` matches each draw's means to a pivot by the
Hungarian algorithm (``scipy.optimize.linear_sum_assignment``) on the squared distance of the means in units
of the data's sd per dimension, the pivot being the mean of the draws after relabelling to the first draw,
then relabelled once more to that pivot (one step of Stephens' relabelling algorithm with a squared loss).
A variational q is put in the reference's order the same way (:func:`align_to`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment

from svibench.capabilities import Globals
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.expfam import DirichletNatural
from svibench.expfam.normal_gamma import NormalGammaNatural

__all__ = ["MixtureChain", "assignment_statistics", "draw_assignments", "globals_moments", "relabel",
           "align_draws", "align_to"]


@dataclass
class MixtureChain:
    """State of the Gibbs chain: assignments z (N,), weights π (K,), means μ and precisions τ (K, D)."""

    z: np.ndarray
    pi: np.ndarray
    mu: np.ndarray
    tau: np.ndarray

    def latent(self) -> np.ndarray:
        """θ = (μ (K·D), π (K)), a copy."""
        return np.concatenate([self.mu.ravel(), self.pi])


def assignment_statistics(X: np.ndarray, z: np.ndarray, K: int) -> Globals:
    """Σᵢ of the natural-parameter increments of hard assignments: Dirichlet n_k; Normal–Gamma
    (Σ_{zᵢ=k} x_id, −n_k/2, −Σ_{zᵢ=k} x_id²/2, n_k/2) (the ``local_statistics`` of a one-hot r)."""
    r = np.zeros((len(z), K))
    r[np.arange(len(z)), z] = 1.0
    nk = r.sum(0)
    ones = np.ones((1, X.shape[1]))
    return {"pi": DirichletNatural(nk),
            "theta": NormalGammaNatural(r.T @ X, -0.5 * nk[:, None] * ones, -0.5 * r.T @ X**2, 0.5 * nk[:, None] * ones)}


def draw_assignments(s: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """zᵢ ~ Cat(softmax s_i·) for every row of the log weights s (N, K): argmax_k (s_ik + G_ik), G Gumbel(0, 1)
    (Gumbel 1954; e.g. Maddison et al. 2014, §2)."""
    return np.argmax(s + rng.gumbel(size=s.shape), axis=1)


def globals_moments(lam: Globals) -> GaussianPosterior:
    """Mean and covariance of θ = (μ, π) under q(π) Π q(μ_kd, τ_kd) = Dir(α) × NormalGamma(m, κ, a, b).

    μ_kd's marginal is Student-t(2a, m, b/(aκ)) with variance b/(κ(a − 1)) (a > 1; Murphy 2007, eq. 110);
    the factors are independent, so that block is diagonal.  π's block is the Dirichlet's:
    E π_k = α_k/α₀, Cov(π_j, π_k) = (α₀ δ_jk α_k − α_j α_k)/(α₀²(α₀ + 1)).
    """
    m, kappa, a, b = lam["theta"].params()
    var_mu = np.where(a > 1.0, b / (kappa * np.maximum(a - 1.0, 1e-300)), np.inf)
    alpha = lam["pi"].concentration()
    total = alpha.sum()
    mean_pi = alpha / total
    cov_pi = (np.diag(mean_pi) - np.outer(mean_pi, mean_pi)) / (total + 1.0)
    KD, K = m.size, alpha.size
    cov = np.zeros((KD + K, KD + K))
    cov[:KD, :KD] = np.diag(np.broadcast_to(var_mu, m.shape).ravel())
    cov[KD:, KD:] = cov_pi
    return GaussianPosterior(np.concatenate([m.ravel(), mean_pi]), cov)


def _means(theta: np.ndarray, K: int) -> np.ndarray:
    """The component means (…, K, D) of θ vectors (…, K·D + K)."""
    return theta[..., :-K].reshape(theta.shape[:-1] + (K, -1))


def _permutation(means: np.ndarray, pivot: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """perm with means[perm[j]] matched to pivot[j], minimising Σ_j ‖(means[perm[j]] − pivot[j]) / scale‖²."""
    cost = ((((means[None, :, :] - pivot[:, None, :]) / scale) ** 2).sum(-1))
    rows, cols = linear_sum_assignment(cost)
    return cols[np.argsort(rows)]


def relabel(theta: np.ndarray, perm: np.ndarray, K: int) -> np.ndarray:
    """θ with its components reordered: component j of the result is component perm[j] of θ."""
    return np.concatenate([_means(theta, K)[perm].ravel(), theta[-K:][perm]])


def align_draws(draws: np.ndarray, K: int, scale: np.ndarray) -> np.ndarray:
    """Every draw (S, K·D + K) relabelled to the pivot (module docstring): first to draw 0, the pivot is the
    mean of those, then each draw of the original is matched to the pivot."""
    means = _means(draws, K)
    first = np.array([relabel(d, _permutation(m, means[0], scale), K) for d, m in zip(draws, means)])
    pivot = _means(first.mean(0), K)
    return np.array([relabel(d, _permutation(m, pivot, scale), K) for d, m in zip(draws, means)])


def align_to(q: GaussianPosterior, ref_mean: np.ndarray, K: int, scale: np.ndarray) -> GaussianPosterior:
    """q's θ (mean and covariance) with its components in the order that best matches ``ref_mean``'s."""
    perm = _permutation(_means(q.mean, K), _means(ref_mean, K), scale)
    D = (len(q.mean) - K) // K
    index = np.concatenate([(perm[:, None] * D + np.arange(D)).ravel(), len(q.mean) - K + perm])
    return GaussianPosterior(q.mean[index], q.cov[np.ix_(index, index)])
