"""Synthetic data for the conjugate models (generated from the model's prior family).

Parameters
----------
n : int ≥ 1
    Training points (rows of X), drawn with the test points from the same true parameters.
n_test : int ≥ 1
    Test points (rows of the test X).
dim : int ≥ 1
    D, the dimension of each point x.
seed : int
    Seeds every draw: the true parameters and the points.
"""
from __future__ import annotations

import numpy as np

from svibench.data import Dataset, dataset

__all__ = ["gmm_synthetic", "linreg_synthetic"]


@dataset("gmm-synthetic", kind="density", description="Gaussian mixture draws (K well-separated diagonal components)",
         size=("n", "n_test"))
def gmm_synthetic(*, n: int = 2000, n_test: int = 500, dim: int = 2, components: int = 5,
                  separation: float = 4.0, seed: int = 0) -> Dataset:
    """Mixture of ``components`` diagonal Gaussians; means ~ N(0, separation²), sds in [0.5, 1.5].

    Parameters
    ----------
    components : int ≥ 1
        K, the number of true components, weighted by a draw from Dir(5 · 1_K).
    separation : float ≥ 0
        Standard deviation of the true means, μ_k ~ N(0, separation² I): larger spreads the components further apart.
    """
    if min(n, n_test, dim, components) < 1:
        raise ValueError("gmm-synthetic: n, n_test, dim and components must be positive")
    rng = np.random.default_rng(seed)
    weights = rng.dirichlet(np.full(components, 5.0))
    means = rng.normal(0.0, separation, size=(components, dim))
    sds = rng.uniform(0.5, 1.5, size=(components, dim))
    z = rng.choice(components, size=n + n_test, p=weights)
    X = means[z] + sds[z] * rng.standard_normal((n + n_test, dim))
    return Dataset(
        "gmm-synthetic", "density", {"X": X[:n]}, {"X": X[n:]},
        {"weights": weights, "means": means, "sds": sds, "seed": seed},
    )


@dataset("linreg-synthetic", kind="regression", description="linear-Gaussian regression draws", size=("n", "n_test"))
def linreg_synthetic(*, n: int = 500, n_test: int = 200, dim: int = 5, noise_sd: float = 0.5, seed: int = 0) -> Dataset:
    """X ~ N(0, I), w ~ N(0, I), y = Xw + N(0, noise_sd²).

    Parameters
    ----------
    noise_sd : float > 0
        Standard deviation of the noise on y = Xw + ε, ε ~ N(0, noise_sd²).
    """
    if min(n, n_test, dim) < 1 or noise_sd <= 0:
        raise ValueError("linreg-synthetic: n, n_test, dim must be positive and noise_sd > 0")
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(dim)
    X = rng.standard_normal((n + n_test, dim))
    y = X @ w + noise_sd * rng.standard_normal(n + n_test)
    return Dataset("linreg-synthetic", "regression", {"X": X[:n], "y": y[:n]}, {"X": X[n:], "y": y[n:]}, {"w": w, "seed": seed})
