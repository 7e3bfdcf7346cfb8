"""The arrays a reference stores: moments of the latent vector and their Monte Carlo standard errors.

From draws: means, sds, quantiles and the covariance, with the MCSEs of :func:`~.diagnostics.mcse` for the
first three; the covariance's MCSE and the predictive's by batch means (each chain cut into contiguous
batches, MCSE = sd of the batch estimates / √batches; Flegal & Jones 2010), summarised by their worst entry.
From an exact posterior: the same moments in closed form, with MCSEs of zero.

Above :data:`FULL_COV_MAX` coordinates (LDA's topic summaries) no covariance is stored: the sds are the
diagonal, and :func:`~.accuracy.accuracy` compares the diagonal Gaussians.
"""
from __future__ import annotations

from typing import Callable

import numpy as np
from scipy.special import ndtri  # Φ⁻¹ (scipy.stats.norm.ppf is the same function; scipy.stats costs ~1 s to import)

from svibench.capabilities.latent_gaussian import GaussianPosterior

from .diagnostics import Diagnostics, mcse

__all__ = ["QUANTILES", "BATCHES_PER_CHAIN", "FULL_COV_MAX", "sampled_arrays", "exact_arrays", "batch_estimates", "compact"]

#: The quantile levels stored with every reference.
QUANTILES = (0.025, 0.25, 0.5, 0.75, 0.975)
#: Contiguous batches per chain for batch-means MCSEs.
BATCHES_PER_CHAIN = 5
#: Above this dimension the covariance is stored as float32 (a 320 × 320 float64 matrix is 800 kB).
FLOAT32_ABOVE = 320
#: Above this dimension only the diagonal (``sd``) is stored: a full covariance would be too large to store or to
#: estimate (its D(D+1)/2 entries from a few thousand draws).
FULL_COV_MAX = 1000


def compact(cov: np.ndarray) -> np.ndarray:
    """The covariance as stored: float64, or float32 when large (its MCSE is far above float32's rounding)."""
    return cov.astype(np.float32) if cov.shape[0] > FLOAT32_ABOVE else cov


def batch_estimates(draws: np.ndarray, estimate: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``estimate`` over all draws (chains, draws, D) as the mean of its batch values, and its batch-means MCSE."""
    batches = [b for chain in draws for b in np.array_split(chain, BATCHES_PER_CHAIN)]
    values = np.array([estimate(b) for b in batches])
    return values.mean(0), values.std(0, ddof=1) / np.sqrt(len(values))


def sampled_arrays(draws: np.ndarray, diagnostics: Diagnostics) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The stored arrays of a sampled reference, and the worst MCSEs relative to each coordinate's sd (the
    covariance and its MCSE only up to :data:`FULL_COV_MAX` coordinates)."""
    pooled = draws.reshape(-1, draws.shape[-1])
    errors = mcse(draws, QUANTILES)
    mean, sd = pooled.mean(0), pooled.std(0, ddof=1)
    arrays = {"mean": mean, "sd": sd, "quantiles": np.quantile(pooled, QUANTILES, axis=0),
              "mcse_mean": errors["mean"], "mcse_sd": errors["sd"], "mcse_quantiles": errors["quantile"],
              "rhat": diagnostics.rhat, "ess_bulk": diagnostics.ess_bulk, "ess_tail": diagnostics.ess_tail}
    worst = {"mean_over_sd": float(np.max(errors["mean"] / sd)), "sd_over_sd": float(np.max(errors["sd"] / sd)),
             "quantile_over_sd": float(np.max(errors["quantile"] / sd))}
    if len(mean) <= FULL_COV_MAX:
        cov = np.cov(pooled, rowvar=False).reshape(len(mean), len(mean))
        _, cov_mcse = batch_estimates(draws, lambda b: np.cov(b, rowvar=False).ravel())
        arrays["cov"] = compact(cov)
        worst["cov_over_sd_sd"] = float(np.max(cov_mcse.reshape(cov.shape) / np.outer(sd, sd)))
    return arrays, worst


def exact_arrays(q: GaussianPosterior) -> dict[str, np.ndarray]:
    """The stored arrays of an exact Gaussian posterior (MCSEs zero)."""
    sd = np.sqrt(np.diag(q.cov))
    zeros = np.zeros_like(sd)
    return {"mean": q.mean, "sd": sd, "cov": compact(q.cov),
            "quantiles": q.mean + ndtri(np.array(QUANTILES))[:, None] * sd,
            "mcse_mean": zeros, "mcse_sd": zeros, "mcse_quantiles": np.zeros((len(QUANTILES), len(sd)))}
