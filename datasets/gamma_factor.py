"""Synthetic data for the gamma factor model (Khan & Lin 2017, §7 and App. J).

The paper uses CyTOF (N = 522,656 cells, D = 40 markers; 300,000 for training),
from davidaknowles/gamma_sgvb (data/cytof.mat), which is not obtainable
(``../shared/data/SOURCES.md``).  ``cytof`` (:mod:`.cytof`) is the real-data
substitute (Bodenmiller 2012, D = 24); ``gamma-factor-synthetic`` draws from the
model itself at the paper's D = 40, K = 40.
"""
from __future__ import annotations

import numpy as np

from svibench.data import Dataset, dataset

__all__ = ["gamma_factor_synthetic"]


@dataset("gamma-factor-synthetic", kind="real-matrix",
         description="draws of the gamma factor model, D = 40, K = 40", size=("n", "n_test"))
def gamma_factor_synthetic(*, n: int = 20000, n_test: int = 5000, dim: int = 40, factors: int = 40,
                           noise_variance: float = 0.1, shape: float = 1.0, rate: float = 1.0,
                           standardize: bool = True, seed: int = 0) -> Dataset:
    """yᵢ ~ N(0, ZZᵀ + σ²I), Z_jk ~ Ga(shape, rate) (App. J, eq. 95).

    With ``standardize`` every column is centred and scaled to unit variance
    using the training rows (the preprocessing the authors apply to CyTOF),
    which keeps the metric on the scale of the paper's (≈ 52 nats for D = 40).
    The generating Z is in ``meta["Z"]``.

    Parameters
    ----------
    n : int ≥ 1
        Training rows yᵢ.
    n_test : int ≥ 1
        Test rows, drawn from the same Z.
    dim : int ≥ 1
        D, the length of each yᵢ (paper: 40, CyTOF's markers).
    factors : int ≥ 1
        K, the number of latent factors, the columns of Z (D × K) (paper: 40).
    noise_variance : float > 0
        σ², the variance of the noise in yᵢ ~ N(0, ZZᵀ + σ²I).
    shape, rate : float > 0
        Z_jk ~ Ga(shape, rate), rate the inverse scale.
    standardize : bool
        Centre each column and scale it to unit variance with the training rows' mean and sd.
    seed : int
        Seeds Z and the rows.
    """
    if min(n, n_test, dim, factors) < 1 or noise_variance <= 0 or shape <= 0 or rate <= 0:
        raise ValueError("gamma-factor-synthetic: sizes must be positive, noise_variance, shape and rate > 0")
    rng = np.random.default_rng(seed)
    Z = rng.gamma(shape, 1.0 / rate, size=(dim, factors))
    X = rng.standard_normal((n + n_test, factors))
    Y = X @ Z.T + np.sqrt(noise_variance) * rng.standard_normal((n + n_test, dim))
    if standardize:
        Y = (Y - Y[:n].mean(0)) / Y[:n].std(0)
    return Dataset(
        "gamma-factor-synthetic", "real-matrix", {"Y": Y[:n]}, {"Y": Y[n:]},
        {"Z": Z, "noise_variance": noise_variance, "standardized": standardize, "seed": seed},
    )
