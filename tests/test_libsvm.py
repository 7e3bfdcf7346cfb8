"""The LIBSVM loader on the real files (SVIBENCH_DATA_DIR) and its failure modes."""
from __future__ import annotations

import bz2
import shutil

import numpy as np
import pytest

from svibench.data import DataError, DatasetUnavailable, data_dir
from svibench.datasets import libsvm


@pytest.mark.parametrize("loader, train, test, labels", [
    (libsvm.a1a, (1605, 123), (30956, 123), (395, 7446)),
    (libsvm.a7a, (16100, 123), (16461, 123), (3918, 3923)),
])
def test_official_splits_have_the_published_shapes(loader, train, test, labels):
    d = loader()
    assert d.train["X"].shape == train and d.test["X"].shape == test
    assert (int(d.train["y"].sum()), int(d.test["y"].sum())) == labels  # +1 counts (SOURCES.md)


@pytest.mark.parametrize("loader, rows, cols, positives", [
    (libsvm.australian, 690, 14, 307), (libsvm.breast_cancer, 683, 10, 239), (libsvm.colon_cancer, 62, 2000, 22),
])
def test_random_half_splits_partition_the_data(loader, rows, cols, positives):
    a, b = loader(split=0), loader(split=1)
    assert a.train["X"].shape == (rows // 2, cols) and a.test["X"].shape == (rows - rows // 2, cols)
    assert a.train["y"].sum() + a.test["y"].sum() == positives
    assert not np.array_equal(a.train["y"], b.train["y"]) or not np.array_equal(a.train["X"].toarray(), b.train["X"].toarray())
    np.testing.assert_array_equal(a.train["X"].toarray(), loader(split=0).train["X"].toarray())


def test_text_files_and_the_authors_mat_files_hold_the_same_matrices(tmp_path, monkeypatch):
    text = libsvm.australian(split=3)
    (tmp_path / "libsvm" / "mat").mkdir(parents=True)
    shutil.copy(data_dir() / "libsvm/mat/australian_scale.mat", tmp_path / "libsvm/mat/australian_scale.mat")
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    mat = libsvm.australian(split=3)
    np.testing.assert_allclose(text.train["X"].toarray(), mat.train["X"].toarray(), rtol=1e-5)
    np.testing.assert_array_equal(text.test["y"], mat.test["y"])


def test_a_corrupted_copy_gives_a_checksum_error(tmp_path, monkeypatch):
    (tmp_path / "libsvm").mkdir()
    raw = (data_dir() / "libsvm/australian_scale").read_bytes()
    (tmp_path / "libsvm/australian_scale").write_bytes(raw.replace(b"1:", b"2:", 1))
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"corrupt: SHA-256 .* expected.*emtiyaz/cvi"):
        libsvm.australian()


def test_reader_handles_bz2_and_rejects_bad_lines(tmp_path):
    src = data_dir() / "libsvm/a1a"
    packed = tmp_path / "a1a.bz2"
    packed.write_bytes(bz2.compress(src.read_bytes()))
    X, y = libsvm.read_libsvm(packed, n_features=123)
    X0, y0 = libsvm.read_libsvm(src)
    assert X.shape == (1605, 123) and X0.shape == (1605, 119)
    np.testing.assert_array_equal(X[:, :119].toarray(), X0.toarray())
    bad = tmp_path / "bad"
    bad.write_text("+1 3:1 4=2\n")
    with pytest.raises(DataError, match="line 1"):
        libsvm.read_libsvm(bad)
    with pytest.raises(DataError, match="above"):
        libsvm.read_libsvm(src, n_features=100)


def test_covtype_is_reported_unavailable_with_the_reason():
    with pytest.raises(DatasetUnavailable, match="too large"):
        libsvm.covtype()
