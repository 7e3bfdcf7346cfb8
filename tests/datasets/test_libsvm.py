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


needs_covtype = pytest.mark.skipif(not (data_dir() / libsvm.COVTYPE.path).exists(),
                                   reason="covtype/covtype.data.gz is not in the data directory")


@pytest.fixture(scope="module")
def covtype0():
    return libsvm.covtype(split=0)


@needs_covtype
def test_covtype_has_the_papers_size_labels_and_scale(covtype0):
    """Table 3's N = 290,506 training rows of D = 54; class 2 (283,301 rows, SOURCES.md's class counts) is y = 1;
    every feature spans exactly [0, 1] over all 581,012 rows (min-max scaling, not per half)."""
    train, test = covtype0.train, covtype0.test
    assert train["X"].shape == test["X"].shape == (290506, 54)
    assert train["y"].sum() + test["y"].sum() == 283301 and set(np.unique(train["y"])) == {0.0, 1.0}
    both = np.vstack([train["X"], test["X"]])
    np.testing.assert_array_equal(both.min(axis=0), 0.0)
    np.testing.assert_array_equal(both.max(axis=0), 1.0)
    # the 44 one-hot columns (wilderness area, soil type) stay 0/1; the 10 quantitative ones are not
    assert np.all(np.isin(both[:, 10:], (0.0, 1.0))) and not np.all(np.isin(both[:, :10], (0.0, 1.0)))


@needs_covtype
def test_covtype_rows_are_uci_rows_rescaled(covtype0):
    """An independent reading of the first UCI row (gzip + csv module): its scaled copy is in the data."""
    import csv
    import gzip
    with gzip.open(data_dir() / libsvm.COVTYPE.path, "rt") as fh:
        first = np.array(next(csv.reader(fh)), dtype=float)
    assert first[-1] == 5  # UCI's first row: class 5, so y = 0
    low = np.array([1859, 0, 0, 0, -173] + [0] * 49, dtype=float)  # per-column minima and maxima of UCI's file
    high = np.array([3858, 360, 66, 1397, 601, 7117, 254, 254, 254, 7173] + [1] * 44, dtype=float)
    row = (first[:-1] - low) / (high - low)
    X = np.vstack([covtype0.train["X"], covtype0.test["X"]])
    y = np.concatenate([covtype0.train["y"], covtype0.test["y"]])
    hit = np.flatnonzero(np.all(np.abs(X - row) < 1e-12, axis=1))
    assert len(hit) >= 1 and np.all(y[hit] == 0)


@needs_covtype
def test_covtype_split_is_seeded(covtype0):
    again, other = libsvm.covtype(split=0), libsvm.covtype(split=1)
    np.testing.assert_array_equal(again.train["X"], covtype0.train["X"])
    np.testing.assert_array_equal(again.test["y"], covtype0.test["y"])
    assert not np.array_equal(other.train["X"][:100], covtype0.train["X"][:100])


def _plain_covtype(split: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The obvious covtype: the whole table at once, min-max scaled over all rows, then indexed by the halves."""
    import pandas
    table = pandas.read_csv(data_dir() / libsvm.COVTYPE.path, header=None, dtype=np.int32).to_numpy()
    X = table[:, :-1].astype(float)
    X = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    y = (table[:, -1] == 2).astype(float)
    perm = np.random.default_rng(split).permutation(len(table))
    tr, te = perm[:n], perm[len(table) // 2:len(table) // 2 + n]
    return X[tr], y[tr], X[te], y[te]


@needs_covtype
@pytest.mark.parametrize("split, n_train", [(0, None), (1, 1000)])
def test_covtype_streamed_loader_equals_the_plain_whole_table_version(covtype0, split, n_train):
    """The chunked parse into place (datasets/libsvm.py) returns exactly the plain version's arrays, bit for bit."""
    data = covtype0 if split == 0 and n_train is None else libsvm.covtype(split=split, n_train=n_train)
    expected = _plain_covtype(split, n_train or libsvm.COVTYPE_ROWS // 2)
    for got, want in zip((data.train["X"], data.train["y"], data.test["X"], data.test["y"]), expected):
        assert got.dtype == want.dtype and got.tobytes() == np.ascontiguousarray(want).tobytes()


def test_covtype_missing_file_names_the_source(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(DatasetUnavailable, match=r"^covtype: covtype/covtype.data.gz is not in the data directory "
                                                 r".*straw-boy/solvers.*SOURCES.md, covtype/$"):
        libsvm.covtype()


@needs_covtype
def test_covtype_corrupt_file_is_a_checksum_error_naming_the_source(tmp_path, monkeypatch):
    (tmp_path / "covtype").mkdir()
    raw = bytearray((data_dir() / libsvm.COVTYPE.path).read_bytes())
    raw[len(raw) // 2] ^= 1
    (tmp_path / libsvm.COVTYPE.path).write_bytes(bytes(raw))
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    with pytest.raises(DataError, match=r"corrupt: SHA-256 .* expected.*SOURCES.md, covtype/") as info:
        libsvm.covtype()
    assert not isinstance(info.value, DatasetUnavailable) and "\n" not in str(info.value)


@needs_covtype
def test_covtype_n_train_keeps_the_first_rows_of_each_half_of_the_same_split(covtype0):
    small = libsvm.covtype(split=0, n_train=1000)
    assert small.train["X"].shape == small.test["X"].shape == (1000, 54)
    np.testing.assert_array_equal(small.train["X"], covtype0.train["X"][:1000])
    np.testing.assert_array_equal(small.test["y"], covtype0.test["y"][:1000])
    with pytest.raises(ValueError, match=r"n_train must be between 1 and 290506 \(each random half\), got 290507"):
        libsvm.covtype(n_train=290507)


def _mt19937_res53(seed: int, n: int) -> np.ndarray:
    """MATLAB's rand('twister', seed) written out from the MT19937 reference (init_genrand, genrand_int32,
    genrand_res53), independently of numpy: the stream :func:`libsvm.paper_permutation` sorts."""
    mt = [seed & 0xFFFFFFFF]
    for i in range(1, 624):
        mt.append((1812433253 * (mt[-1] ^ (mt[-1] >> 30)) + i) & 0xFFFFFFFF)
    out, index = [], 624

    def word() -> int:
        nonlocal index
        if index == 624:
            for k in range(624):
                y = (mt[k] & 0x80000000) | (mt[(k + 1) % 624] & 0x7FFFFFFF)
                mt[k] = mt[(k + 397) % 624] ^ (y >> 1) ^ (0x9908B0DF if y & 1 else 0)
            index = 0
        y = mt[index]
        index += 1
        y ^= y >> 11
        y ^= (y << 7) & 0x9D2C5680
        y ^= (y << 15) & 0xEFC60000
        return y ^ (y >> 18)

    for _ in range(n):
        a, b = word() >> 5, word() >> 6
        out.append((a * 67108864.0 + b) / 9007199254740992.0)
    return np.array(out)


def test_the_paper_permutation_sorts_matlabs_twister_stream():
    draws = _mt19937_res53(1, 62)
    assert draws[0] == 0.417022004702574  # MATLAB: rand('twister', 1); rand → 0.417022004702574
    np.testing.assert_array_equal(libsvm.paper_permutation(62), np.argsort(draws, kind="stable"))


@pytest.mark.parametrize("loader, rows", [(libsvm.australian, 690), (libsvm.breast_cancer, 683), (libsvm.colon_cancer, 62)])
def test_the_paper_split_trains_on_the_first_half_of_the_authors_permutation(loader, rows):
    """split = "paper": the training rows are the first ⌊N/2⌋ of randperm(N) after setSeed(1), in that order."""
    whole, paper = loader(split=0), loader(split="paper")
    X = libsvm.read_libsvm(data_dir() / libsvm.FILES[{690: "australian_scale", 683: "breast-cancer_scale",
                                                      62: "colon-cancer"}[rows]][0].path)[0].toarray()
    perm = libsvm.paper_permutation(rows)
    np.testing.assert_array_equal(paper.train["X"].toarray(), X[perm[:rows // 2]])
    np.testing.assert_array_equal(paper.test["X"].toarray(), X[perm[rows // 2:]])
    assert paper.meta["split"].startswith("the paper's halves") and whole.meta["split"].startswith("random halves")


@pytest.mark.parametrize("split", ["Paper", 1.5, True])
def test_a_split_that_is_neither_a_seed_nor_paper_is_refused(split):
    with pytest.raises(ValueError, match='integer seed or "paper"'):
        libsvm.australian(split=split)


@needs_covtype
def test_covtype_paper_split_trains_on_the_first_half_of_the_authors_permutation(covtype0):
    paper = libsvm.covtype(split="paper", n_train=1000)
    perm = libsvm.paper_permutation(libsvm.COVTYPE_ROWS)
    X, y = libsvm.covtype_binary_scale(np.concatenate([perm[:1000], perm[libsvm.COVTYPE_ROWS // 2:][:1000]]))
    np.testing.assert_array_equal(paper.train["X"], X[:1000])
    np.testing.assert_array_equal(paper.test["y"], y[1000:])
