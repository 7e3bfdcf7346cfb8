"""Synthetic data from the BPFA prior (Shah, Knowles & Ghahramani 2015, §5.1)."""
from __future__ import annotations

import numpy as np

from svibench.data import Dataset, dataset

__all__ = ["bpfa_synthetic", "mask_entries"]


@dataset("bpfa-synthetic", kind="factor", description="draws from the finite beta-process factor model (BPFA §5.1)",
         size=("n",))
def bpfa_synthetic(*, n: int = 2000, dim: int = 40, features: int = 80, gamma_w: float = 1.0, gamma_obs: float = 100.0,
                   a: float = 10.0, b: float = 10.0, heldout: float = 0.075, seed: int = 0) -> Dataset:
    """yᵢ = (zᵢ ∘ wᵢ)Φ + εᵢ with π_k ~ Beta(a/K, b(K−1)/K), φ_k ~ N(0, I/D), wᵢ ~ N(0, I/γ_w),
    εᵢ ~ N(0, I/γ_obs) and a fraction ``heldout`` of the entries, uniformly at random,
    held out for testing.  Each column is standardised to mean 0 and variance 1
    over its training entries (§5); ``meta`` keeps ``offset`` and ``scale`` (per column).  Paper: n = 1e5, dim = 40, features = 80.

    Parameters
    ----------
    n : int ≥ 1
        Data points yᵢ (rows of Y).
    dim : int ≥ 1
        D, the length of each yᵢ and of each feature φ_k.
    features : int ≥ 1
        K, the number of true features φ_k that generate the data (not the model's truncation ``features``).
    gamma_w : float > 0
        γ_w, the precision of the weights, wᵢ ~ N(0, I/γ_w).
    gamma_obs : float > 0
        γ_obs, the precision of the noise, εᵢ ~ N(0, I/γ_obs).
    a, b : float > 0
        π_k ~ Beta(a/K, b(K−1)/K), the probability that a point uses feature k.
    heldout : float in (0, 1)
        Fraction of the entries held out for testing, each entry independently with this probability.
    seed : int
        Seeds the draw and the held-out entries.
    """
    if min(n, dim, features) < 1 or not 0 < heldout < 1 or min(gamma_w, gamma_obs, a, b) <= 0:
        raise ValueError("bpfa-synthetic: n, dim, features ≥ 1, heldout in (0, 1), gamma_w, gamma_obs, a, b > 0")
    rng = np.random.default_rng(seed)
    K = features
    pi = rng.beta(a / K, b * (K - 1) / K, size=K)
    phi = rng.normal(0.0, dim**-0.5, size=(K, dim))
    z = rng.random((n, K)) < pi
    w = rng.normal(0.0, gamma_w**-0.5, size=(n, K))
    Y = (z * w) @ phi + rng.normal(0.0, gamma_obs**-0.5, size=(n, dim))
    train, test, mean, sd = mask_entries(Y, heldout, rng)
    return Dataset("bpfa-synthetic", "factor", train, test,
                   {"pi": pi, "phi": phi, "gamma_w": gamma_w, "gamma_obs": gamma_obs, "seed": seed,
                    "offset": mean, "scale": sd})


def mask_entries(Y: np.ndarray, heldout: float, rng: np.random.Generator) -> tuple[dict, dict, np.ndarray, np.ndarray]:
    """BPFA's held-out entries (§5): a fraction ``heldout`` of the entries of Y, uniformly at random, held out,
    and each column standardised to mean 0 and variance 1 over its training entries.

    Returns (train, test, offset, scale): train ``Y`` is zero where held out, with 0/1 ``mask`` of the
    training entries; test has the whole standardised ``Y`` and the mask of the held-out entries.
    ``Y`` is standardised in place and becomes test's (callers pass an array of their own), and the uniform
    draws' array is the scratch of the column sums and then train's ``Y``: no array of Y's size beyond the four
    returned ones is held.
    """
    scratch = rng.random(Y.shape)
    train = scratch >= heldout
    count = train.sum(0)
    mean = np.multiply(Y, train, out=scratch).sum(0) / count
    np.subtract(Y, mean, out=scratch)
    scratch *= train
    sd = np.sqrt(np.square(scratch, out=scratch).sum(0) / count)
    Y -= mean
    Y /= sd
    mask = train.astype(float)
    return {"Y": np.multiply(Y, mask, out=scratch), "mask": mask}, {"Y": Y, "mask": 1.0 - mask}, mean, sd
