"""Posterior accuracy: how far an algorithm's q is from a problem's reference posterior.

Every measure compares moments (and, where the model offers one, the posterior predictive) of q with those
stored in a :class:`~svibench.reference.artifact.Reference`:

* :func:`standardised_mean_error`: RMS over coordinates of (E_q[zᵢ] − E_ref[zᵢ]) / sd_ref(zᵢ), the error of
  each posterior mean in units of the posterior's own spread.
* :func:`log_sd_ratio`: log(sd_q / sd_ref) per coordinate; its mean (negative: q is under-dispersed, the usual
  failure of mean-field VI) and its RMS (how far the spreads are off either way).
* :func:`gaussian_w2`: the 2-Wasserstein distance between the Gaussians with q's and the reference's means and
  covariances, in closed form (Dowson & Landau 1982; Givens & Shortt 1984).  When either covariance is given
  as a vector of variances (a large latent, whose reference stores only the diagonal), the W₂ of the diagonal
  Gaussians: √(‖m₁ − m₂‖² + ‖s₁ − s₂‖²), s the sds.
* :func:`bernoulli_kl`: mean over test points of KL(Bern(p_ref) ‖ Bern(p_q)) between the reference's posterior
  predictive class probabilities and q's.
"""
from __future__ import annotations

import numpy as np

from svibench.metrics import Metric, metric_table

__all__ = ["ACCURACY_METRICS", "standardised_mean_error", "log_sd_ratio", "gaussian_w2", "psd_sqrt",
           "bernoulli_kl", "accuracy"]

#: What the accuracy metrics mean (added to a run's metric table when its problem has a reference).
ACCURACY_METRICS = metric_table(
    Metric("ref_mean_error", "lower", "accuracy", "posterior sd", low=0.0,
           description="RMS over coordinates of |E_q z − E_ref z| / sd_ref: posterior means off by this many sds"),
    Metric("ref_log_sd_ratio", "higher", "accuracy", "log ratio", rankable=False,
           description="mean over coordinates of log(sd_q / sd_ref): 0 is exact, negative under-dispersed "
                       "(better is towards 0, so it ranks nothing)"),
    Metric("ref_sd_error", "lower", "accuracy", "log ratio", low=0.0,
           description="RMS over coordinates of log(sd_q / sd_ref): spreads off by this factor (log) either way"),
    Metric("ref_w2", "lower", "accuracy", "latent units", low=0.0,
           description="2-Wasserstein distance between the Gaussians of q's and the reference's mean and covariance"),
    Metric("ref_predictive_kl", "lower", "accuracy", "nats per test point", low=0.0,
           description="mean over test points of KL(reference predictive ‖ q's predictive) of the class label"),
)

#: The smallest sd taken for q (a degenerate q gets a huge, finite log ratio instead of −inf).
_TINY_SD = 1e-300


def standardised_mean_error(mean_q: np.ndarray, mean_ref: np.ndarray, sd_ref: np.ndarray) -> float:
    """√(mean over i of ((mean_qᵢ − mean_refᵢ) / sd_refᵢ)²)."""
    return float(np.sqrt(np.mean(((np.asarray(mean_q) - mean_ref) / sd_ref) ** 2)))


def log_sd_ratio(sd_q: np.ndarray, sd_ref: np.ndarray) -> np.ndarray:
    """log(sd_qᵢ / sd_refᵢ) per coordinate (sd_q floored at 1e-300)."""
    return np.log(np.maximum(np.asarray(sd_q, dtype=float), _TINY_SD)) - np.log(sd_ref)


def psd_sqrt(S: np.ndarray) -> np.ndarray:
    """The symmetric square root of a positive semi-definite matrix (eigenvalues below 0 from rounding set to 0)."""
    vals, vecs = np.linalg.eigh(0.5 * (S + S.T))
    return (vecs * np.sqrt(np.maximum(vals, 0.0))) @ vecs.T


def gaussian_w2(m1: np.ndarray, S1: np.ndarray, m2: np.ndarray, S2: np.ndarray,
                root2: np.ndarray | None = None) -> float:
    """W₂(N(m₁, S₁), N(m₂, S₂)) = √(‖m₁ − m₂‖² + tr S₁ + tr S₂ − 2 tr (S₂^½ S₁ S₂^½)^½).

    Dowson & Landau (1982), Givens & Shortt (1984).  The last trace is the sum of the square roots of the
    eigenvalues of the symmetric PSD matrix S₂^½ S₁ S₂^½ (by ``eigh``, not ``scipy.linalg.sqrtm``, which can turn
    complex on a nearly singular covariance); rounding that makes W₂² slightly negative is clipped at 0.
    ``root2``: S₂^½ if already known (a reference's, computed once per run rather than at every checkpoint).
    """
    root = psd_sqrt(S2) if root2 is None else root2
    cross = np.linalg.eigvalsh(root @ S1 @ root)
    w2sq = np.sum((np.asarray(m1) - m2) ** 2) + np.trace(S1) + np.trace(S2) - 2.0 * np.sum(np.sqrt(np.maximum(cross, 0.0)))
    return float(np.sqrt(max(w2sq, 0.0)))


def bernoulli_kl(p_ref: np.ndarray, p_q: np.ndarray) -> float:
    """Mean over points of KL(Bern(p_ref) ‖ Bern(p_q)), in nats (probabilities clipped to [1e-12, 1 − 1e-12])."""
    p = np.clip(p_ref, 1e-12, 1.0 - 1e-12)
    q = np.clip(p_q, 1e-12, 1.0 - 1e-12)
    return float(np.mean(p * (np.log(p) - np.log(q)) + (1.0 - p) * (np.log1p(-p) - np.log1p(-q))))


def _sd(cov: np.ndarray) -> np.ndarray:
    """The sds of a covariance matrix, or of a vector of variances."""
    cov = np.asarray(cov, dtype=float)
    return np.sqrt(np.maximum(cov if cov.ndim == 1 else np.diag(cov), 0.0))


def accuracy(mean_q: np.ndarray, cov_q: np.ndarray, mean_ref: np.ndarray, cov_ref: np.ndarray,
             p_q: np.ndarray | None = None, p_ref: np.ndarray | None = None,
             ref_root: np.ndarray | None = None) -> dict[str, float]:
    """Every accuracy metric of q (mean, covariance; test-set class probabilities if given) against a reference.

    A covariance given as a vector (variances) makes W₂ that of the diagonal Gaussians of both; ``ref_root``:
    the reference covariance's :func:`psd_sqrt`, if already known."""
    sd_q, sd_ref = _sd(cov_q), _sd(cov_ref)
    ratio = log_sd_ratio(sd_q, sd_ref)
    if np.ndim(cov_q) == 1 or np.ndim(cov_ref) == 1:
        w2 = float(np.sqrt(np.sum((np.asarray(mean_q) - mean_ref) ** 2) + np.sum((sd_q - sd_ref) ** 2)))
    else:
        w2 = gaussian_w2(mean_q, cov_q, mean_ref, cov_ref, ref_root)
    out = {"ref_mean_error": standardised_mean_error(mean_q, mean_ref, sd_ref),
           "ref_log_sd_ratio": float(np.mean(ratio)), "ref_sd_error": float(np.sqrt(np.mean(ratio**2))),
           "ref_w2": w2}
    if p_q is not None and p_ref is not None:
        out["ref_predictive_kl"] = bernoulli_kl(p_ref, p_q)
    return out
