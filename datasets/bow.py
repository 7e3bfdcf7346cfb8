"""Bag-of-words corpora: readers, validation and the document-completion split.

A corpus is a (documents, vocabulary) matrix of word counts in CSR form.  The
datasets of kind ``"bag-of-words"`` (``datasets/lda.py``) all hold

* ``train = {"counts": csr (D_train, V)}``;
* ``test = {"observed": csr (D_test, V), "heldout": csr (D_test, V)}``: the
  document-completion split of the held-out documents (Wallach et al. 2009,
  "Evaluation methods for topic models", §5.1): each document's tokens are
  split at random into two halves, ``observed + heldout`` is the document;
* ``meta``: ``vocab`` (list of words or None), ``n_tokens`` (training tokens),
  ``source``, ``seed``, ``train_docs`` and ``test_docs`` (the documents' rows
  in the whole corpus) and ``n_test_dropped``.

Every count matrix is float64 holding non-negative integers, with sorted
indices, no explicit zeros and no empty row.  The readers parse whole files
with numpy (no per-line Python loop), so files with millions of lines load in
seconds; ``.gz`` files are decompressed on the fly.
"""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse

from svibench.data import DataError, Dataset

__all__ = ["BAG_OF_WORDS", "read_uci_docword", "read_vocab", "read_svmlight_counts", "validate_counts",
           "document_completion"]

BAG_OF_WORDS = "bag-of-words"


def _open(path: Path, mode: str = "rt"):
    return gzip.open(path, mode) if path.suffix == ".gz" else open(path, mode)


def _counts_matrix(rows: np.ndarray, cols: np.ndarray, counts: np.ndarray, shape: tuple[int, int]) -> scipy.sparse.csr_matrix:
    """The canonical CSR of (row, col, count) triples: float64, duplicates summed, zeros dropped, indices sorted."""
    X = scipy.sparse.csr_matrix((np.asarray(counts, dtype=np.float64), (rows, cols)), shape=shape)
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    return X


def _bad_counts(counts: np.ndarray) -> np.ndarray:
    """Mask of entries that are not finite non-negative integers."""
    return ~np.isfinite(counts) | (counts < 0) | (counts != np.round(counts))


def read_vocab(path: str | Path) -> list[str]:
    """The words of a vocabulary file, one per line (``.gz`` or plain); line i is word id i (0-based)."""
    path = Path(path)
    with _open(path) as fh:
        words = fh.read().rstrip("\n").split("\n")
    return [w.rstrip("\r") for w in words]


def _uci_header(path: Path, fh) -> tuple[int, int, int]:
    """D, W, NNZ from the first three lines of a UCI docword file."""
    header = [fh.readline().strip() for _ in range(3)]
    if not all(h.isdigit() and int(h) > 0 for h in header):
        raise DataError(f"{path}: expected a UCI docword header of three positive integers D, W, NNZ on lines 1-3, "
                        f"found {header}; the file is not in the UCI Bag-of-Words format")
    D, W, NNZ = map(int, header)
    return D, W, NNZ


def read_uci_docword(docword_path: str | Path, vocab_path: str | Path | None = None
                     ) -> tuple[scipy.sparse.csr_matrix, list[str] | None]:
    """Read a UCI Bag-of-Words corpus (``docword.*.txt[.gz]`` and optionally ``vocab.*.txt``).

    The format (archive.ics.uci.edu, "Bag of Words"): three header lines D
    (documents), W (words), NNZ (lines that follow), then NNZ lines
    ``docID wordID count`` with 1-based ids.  Duplicate (doc, word) pairs are
    summed; zero counts are dropped.  Documents without any word stay as empty
    rows (:func:`validate_counts` refuses them).

    Returns
    -------
    (counts, vocab) : the (D, W) CSR count matrix and the vocabulary (None without ``vocab_path``).

    Raises
    ------
    DataError
        A wrong header (not three positive integers, NNZ not the number of
        lines, W not the vocabulary's length), an id outside 1..D or 1..W, or a
        negative or non-integer count; the message names the file and the line.
    """
    path = Path(docword_path)
    vocab = read_vocab(vocab_path) if vocab_path is not None else None
    with _open(path) as fh:
        D, W, NNZ = _uci_header(path, fh)
        try:
            table = np.loadtxt(fh, dtype=np.float64, ndmin=2)
        except ValueError as exc:
            raise DataError(f"{path}: not 'docID wordID count' lines after the header "
                            f"({' '.join(str(exc).split())})") from None
    if len(table) != NNZ:
        raise DataError(f"{path}: the header says NNZ = {NNZ} lines follow, found {len(table)}; fix line 3 or the file")
    if table.shape[1] != 3:
        raise DataError(f"{path}: expected 3 numbers per line (docID wordID count), found {table.shape[1]}")
    if vocab is not None and len(vocab) != W:
        raise DataError(f"{path}: the header says W = {W} words but {vocab_path} holds {len(vocab)}; "
                        "use the vocabulary file that belongs to this corpus")
    docs, words, counts = table.T
    for ids, size, what in ((docs, D, "document"), (words, W, "word")):
        bad = np.flatnonzero((ids < 1) | (ids > size) | (ids != np.round(ids)))
        if len(bad):
            raise DataError(f"{path}, line {bad[0] + 4}: {what} id {ids[bad[0]]:g} is outside 1..{size} "
                            f"(the header's {'D' if what == 'document' else 'W'}); {len(bad)} such line(s)")
    bad = np.flatnonzero(_bad_counts(counts))
    if len(bad):
        raise DataError(f"{path}, line {bad[0] + 4}: count {counts[bad[0]]:g} is not a non-negative integer; "
                        f"{len(bad)} such line(s)")
    return _counts_matrix(docs.astype(np.int64) - 1, words.astype(np.int64) - 1, counts, (D, W)), vocab


_SEPARATORS = np.frombuffer(b" \t\n\r\x0b\x0c:", dtype=np.uint8)


def _tokenise(path: Path, raw: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split ``raw`` into ``number id:count id:count ...`` lines, vectorised over its bytes.

    Returns every token's value, its 0-based line and its rank on that line
    (0 the leading number, odd ids, even ≥ 2 counts).  A line whose ':'s do
    not join exactly each id to its count is a :class:`DataError` naming it.
    """
    b = np.frombuffer(raw, dtype=np.uint8)
    sep = np.isin(b, _SEPARATORS)
    starts = np.flatnonzero(~sep & np.concatenate(([True], sep[:-1])))
    line_of = np.cumsum(b == ord("\n"))
    lines = line_of[starts]
    rank = np.arange(len(starts)) - np.searchsorted(lines, lines)
    colons = np.flatnonzero(b == ord(":"))
    joined = np.zeros(len(colons), dtype=bool)  # a ':' right after an id and right before a count
    inner = (colons > 0) & (colons < len(b) - 1)
    joined[inner] = ~sep[colons[inner] - 1] & ~sep[colons[inner] + 1]
    before = np.searchsorted(starts, colons) - 1
    joined &= rank[before] % 2 == 1
    n_lines = int(line_of[-1]) + 1 if len(b) else 0
    tokens = np.bincount(lines, minlength=n_lines)
    pairs = np.bincount(line_of[colons], minlength=n_lines)
    bad = np.concatenate((line_of[colons[~joined]], np.flatnonzero((tokens > 0) & (tokens != 2 * pairs + 1))))
    if len(bad):
        raise DataError(f"{path}, line {int(bad.min()) + 1}: expected 'number id:count id:count ...'; "
                        f"{len(np.unique(bad))} such line(s)")
    try:
        values = np.array(raw.replace(b":", b" ").split()).astype(np.float64)
    except ValueError as exc:
        raise DataError(f"{path}: a token is not a number ({exc}); expected 'number id:count ...' lines") from None
    return values, lines, rank


def read_svmlight_counts(path: str | Path, n_features: int | None = None, zero_based: bool | None = None,
                         ldac: bool = False) -> scipy.sparse.csr_matrix:
    """Read word counts in svmlight/LIBSVM (``label id:count ...``) or LDA-C (``M id:count ...``) format.

    Each non-blank line is a document (blank lines are skipped); the label of
    svmlight lines is ignored.  In Blei's LDA-C format (``ldac=True``) the
    leading number M must equal the number of ``id:count`` pairs on the line.
    Duplicate ids within a line are summed; zero counts are dropped.

    Parameters
    ----------
    path : the file (``.gz`` or plain).
    n_features : int, optional
        The vocabulary size V; by default the largest id + 1.  An id ≥ V is an error.
    zero_based : bool, optional
        Whether ids start at 0; by default the format's convention (LIBSVM 1-based, LDA-C 0-based).
    ldac : bool
        Read LDA-C instead of svmlight.

    Raises
    ------
    DataError
        A line not of the form ``number id:count ...``, a non-integer or out-of-range id, a
        negative or non-integer count, or (LDA-C) M differing from the number of pairs; the
        message names the file and the line.
    """
    path = Path(path)
    zero_based = ldac if zero_based is None else zero_based
    with _open(path, "rb") as fh:
        values, lines, rank = _tokenise(path, fh.read())
    lead, ids, counts = rank == 0, rank % 2 == 1, (rank > 0) & (rank % 2 == 0)
    ids_lines, ids = lines[ids], values[ids] - (0 if zero_based else 1)
    counts = values[counts]
    docs, row = np.unique(lines, return_inverse=True)
    if ldac:
        n_pairs = np.bincount(row, minlength=len(docs)) // 2
        wrong = np.flatnonzero(values[lead] != n_pairs)
        if len(wrong):
            raise DataError(f"{path}, line {docs[wrong[0]] + 1}: LDA-C's leading number M = {values[lead][wrong[0]]:g} "
                            f"but the line has {n_pairs[wrong[0]]} id:count pairs; {len(wrong)} such line(s)")
    V = max(int(ids.max()) + 1, 1) if n_features is None and len(ids) else (n_features or 0)
    bad = np.flatnonzero((ids < 0) | (ids >= V) | (ids != np.round(ids)))
    if len(bad):
        raise DataError(f"{path}, line {ids_lines[bad[0]] + 1}: word id {ids[bad[0]] + (0 if zero_based else 1):g} "
                        f"is outside {'0' if zero_based else '1'}..{V - (1 if zero_based else 0)} "
                        f"({'zero' if zero_based else 'one'}-based, V = {V}); {len(bad)} such pair(s)")
    bad = np.flatnonzero(_bad_counts(counts))
    if len(bad):
        raise DataError(f"{path}, line {ids_lines[bad[0]] + 1}: count {counts[bad[0]]:g} is not a non-negative "
                        f"integer; {len(bad)} such pair(s)")
    return _counts_matrix(row[rank % 2 == 1], ids.astype(np.int64), counts, (len(docs), V))


def validate_counts(name: str, counts: Any, V: int) -> scipy.sparse.csr_matrix:
    """Check a (documents, V) count matrix and return it in canonical CSR form.

    Canonical: float64, duplicates summed, explicit zeros dropped, indices
    sorted (a copy; ``counts`` is not changed).  Raises a one-line
    :class:`DataError` for NaN/inf, a negative or non-integer count, a word id
    ≥ V, or an empty document, each naming the first offending row.
    """
    X = scipy.sparse.csr_matrix(counts, dtype=np.float64, copy=True)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    checks = (
        (~np.isfinite(X.data), "holds NaN/inf", "missing counts are 0; clean the corpus"),
        (_bad_counts(X.data), "holds a negative or non-integer count", "counts must be whole numbers of tokens"),
        (X.indices >= V, f"has a word id ≥ V = {V}", "pass the vocabulary that belongs to the corpus"),
    )
    for bad, what, fix in checks:
        where = np.flatnonzero(bad)
        if len(where):
            raise DataError(f"{name}: document {rows[where[0]]} {what} ({len(where)} entries); {fix}")
    if X.shape[1] != V:
        raise DataError(f"{name}: the count matrix has {X.shape[1]} columns but the vocabulary {V} words; "
                        "pass the vocabulary that belongs to the corpus")
    X.sum_duplicates()
    X.eliminate_zeros()
    X.sort_indices()
    empty = np.flatnonzero(np.diff(X.indptr) == 0)
    if len(empty):
        raise DataError(f"{name}: document {empty[0]} is empty ({len(empty)} empty documents); "
                        "remove documents without words from the corpus")
    return X


def _n_test(name: str, n_test: int | float, D: int) -> int:
    """``n_test`` as a number of documents: an int as is, a float in (0, 1) as a fraction of D."""
    if isinstance(n_test, float) and 0.0 < n_test < 1.0:
        n_test = int(round(n_test * D))
    if not (isinstance(n_test, (int, np.integer)) and 1 <= n_test < D):
        raise DataError(f"{name}: n_test = {n_test} must be a number of documents in 1..{D - 1} or a fraction "
                        "in (0, 1) leaving at least one document on each side")
    return int(n_test)


def document_completion(name: str, counts: Any, vocab: list[str] | None, n_test: int | float, seed: int,
                        meta: dict[str, Any]) -> Dataset:
    """A bag-of-words :class:`Dataset`: ``n_test`` random documents held out for document completion.

    The documents are permuted with ``np.random.default_rng(seed)``; the first
    ``n_test`` are the test documents.  Each test document's tokens are split
    into two halves by binomial thinning with p = 1/2 of every (document, word)
    count, drawn from the same generator, so ``observed + heldout`` is the
    document (Wallach et al. 2009, §5.1).  A test document with an empty half
    is dropped (``meta["n_test_dropped"]``); ``meta["train_docs"]`` and
    ``meta["test_docs"]`` give the rows of the training and kept test documents in the whole corpus.
    """
    V = len(vocab) if vocab is not None else np.shape(counts)[1]
    X = validate_counts(name, counts, V)
    D = X.shape[0]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(D)
    n = _n_test(name, n_test, D)
    test_docs, train_docs = np.sort(perm[:n]), np.sort(perm[n:])
    test = X[test_docs]
    observed = test.copy()
    observed.data = rng.binomial(test.data.astype(np.int64), 0.5).astype(np.float64)
    heldout = test - observed
    observed.eliminate_zeros()
    heldout.eliminate_zeros()
    keep = (np.diff(observed.indptr) > 0) & (np.diff(heldout.indptr) > 0)
    if not keep.any():
        raise DataError(f"{name}: every test document has fewer than 2 tokens, so none can be split "
                        "into observed and held-out halves; use longer documents")
    train = X[train_docs]
    return Dataset(name, BAG_OF_WORDS, {"counts": train},
                   {"observed": observed[keep], "heldout": heldout[keep]},
                   {**meta, "vocab": vocab, "n_tokens": int(train.sum()), "seed": seed,
                    "train_docs": train_docs, "test_docs": test_docs[keep], "n_test_dropped": int((~keep).sum())})
