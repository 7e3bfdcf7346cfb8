"""LIBSVM binary-classification data sets of Khan & Lin (2017), Table 3.

Files are LIBSVM text (``label idx:value ...``, 1-based indices), read into
``scipy.sparse`` CSR matrices; ``.bz2`` files are decompressed on the fly.
Every file is verified by SHA-256 (``../shared/data/SOURCES.md``).  Where no
unmodified public LIBSVM text copy exists, the text file in the data directory
was converted from the CVI authors' ``.mat`` file; when such a text file is
absent, the loader fetches that pinned ``.mat`` file instead and reads the
same matrix from it.

Splits follow the authors' code (emtiyaz/cvi, ``get_data_log_reg.m``): a1a and
a7a use the official train/test files (a1a's training matrix has 119 columns
and is padded with zeros to 123); australian, breast-cancer, colon-cancer and
covtype are split into halves (⌊N/2⌋ training rows, the first ⌊N/2⌋ of a
permutation).  ``split = "paper"`` rebuilds the authors' permutation
(:func:`paper_permutation`); an integer ``split`` seeds a random permutation of
our own.  Labels are mapped to {0, 1}.  covtype (the paper's
"Covtype-binary-scale") is built from UCI's covtype.data as LIBSVM builds
covtype.binary.scale (class 2 against the rest, features min–max scaled to
[0, 1] over all 581,012 rows) and split into halves like the others
(290,506 training rows, Table 3's N); the authors' .mat copy is too large to be
held in the stored repositories.  As for every dataset here, the model adds the
bias column and the prior (``get_data_log_reg.m`` prepends a column of ones).

Parameters
----------
split : int or "paper"
    ``"paper"``: the authors' permutation (:func:`paper_permutation`); an integer: the seed of a random
    permutation of our own.  Either way the first ⌊N/2⌋ permuted rows train and the rest test.
"""
from __future__ import annotations

import bz2
from pathlib import Path

import numpy as np
import pandas
import scipy.io
import scipy.sparse

from svibench.data import DataError, DataFile, Dataset, DatasetUnavailable, data_dir, dataset, fetch

__all__ = ["read_libsvm", "paper_permutation", "PAPER_SPLITS", "a1a", "a7a", "australian", "breast_cancer", "colon_cancer", "covtype", "covtype_binary_scale"]

_CVI = "emtiyaz/cvi@b800dc91a4391291202c2c7bc66dad94b6cc9b6b"
_CVI_URL = "https://raw.githubusercontent.com/emtiyaz/cvi/b800dc91a4391291202c2c7bc66dad94b6cc9b6b/log_reg/datasets/"


def _mat(name: str, sha256: str) -> DataFile:
    return DataFile(f"libsvm/mat/{name}.mat", sha256, _CVI_URL + f"{name}.mat", f"{_CVI} log_reg/datasets/{name}.mat")


def _converted(path: str, sha256: str, mat: DataFile) -> DataFile:
    return DataFile(path, sha256, mat.url, f"converted to LIBSVM text from {mat.source} (see SOURCES.md)")


MAT = {
    "a1a": _mat("a1a", "486d06f1bdeef6211e1fa2674bfc94880e97e6f578a3689f238d51d0341b8022"),
    "a7a": _mat("a7a", "de1f1280eb723047d9a966d494d85ba70f548cc5695a28d249b19b64e68f813c"),
    "australian": _mat("australian_scale", "a2576dbf3c5b16e01689856770442556829d1a79e18b32e7af56c5473f977360"),
    "breast-cancer": _mat("breast_cancer_scale", "ff5a6a168fad4050be607432019b4eaf04410efe04278e536b3db23fea340236"),
    "colon-cancer": _mat("colon-cancer", "97aef34283f5f5a2310b008ea5477c0f68e514eb127a931ab7819fbc97d7d8c5"),
}

#: (text file, .mat file holding the same matrix, .mat variable names X and y)
FILES = {
    "a1a": (DataFile("libsvm/a1a", "eb54c45f1bdb51286f803dd092eb8202b44637a858fc6c4e533a2d64a0d94b4e",
                     "https://raw.githubusercontent.com/LIBOL/SOL/37f2b02a11823eabae2624997a3ee0094e4198b8/data/a1a",
                     "LIBOL/SOL@37f2b02a11823eabae2624997a3ee0094e4198b8 data/a1a"), MAT["a1a"], ("X", "y")),
    "a1a.t": (_converted("libsvm/a1a.t", "0212d0c4a3996fe6fb6a0ab54033d9f4fa4b60369b6e3bb141821d9ffc40c04d", MAT["a1a"]),
              MAT["a1a"], ("X_te", "y_te")),
    "a7a": (_converted("libsvm/a7a", "d383cf150d4d9f9097b91cc88022cd0ac473c3a72da3f33b4c17801a4bfccdc6", MAT["a7a"]),
            MAT["a7a"], ("X", "y")),
    "a7a.t": (_converted("libsvm/a7a.t", "9614161fbc7ac8ae52509d19ed0be987aef752d446838816af402fc36ffccce9", MAT["a7a"]),
              MAT["a7a"], ("X_te", "y_te")),
    "australian_scale": (_converted("libsvm/australian_scale",
                                    "86799bcc4dbcd41929a514fa181d1c1a40e01f009dee139d4141a194d7ecd9e3", MAT["australian"]),
                         MAT["australian"], ("X", "y")),
    "breast-cancer_scale": (_converted("libsvm/breast-cancer_scale",
                                       "3c90cd8f884810a0ff2eaf2cc7aabf09073f33c2dfcf113d826a13ca60b257ad",
                                       MAT["breast-cancer"]), MAT["breast-cancer"], ("X", "y")),
    "colon-cancer": (_converted("libsvm/colon-cancer", "c17b0d7aff915c4343f2b85db8edc5618e0cf175f6ecf3ab3568aa8b31f6412c",
                                MAT["colon-cancer"]), MAT["colon-cancer"], ("X", "y")),
}


#: UCI's covtype.data (54 integer features, then the class 1-7) as written out from an R copy and gzipped:
#: ``url`` is that R file at a pinned commit; no download gives these gzip bytes (UCI's own .gz differs), so a
#: missing copy is not downloaded but put in the data directory by hand (SOURCES.md, covtype/).
COVTYPE = DataFile(
    "covtype/covtype.data.gz",
    "b22ca13b51814b12ef7fec2fc96a623903e35dab1469a4d1213fe9911d92912c",
    "https://raw.githubusercontent.com/straw-boy/solvers/40eac4aebc8c9379e66ee618d03af72cea57d1f9/data/covtype.rda",
    "UCI covtype.data written out from straw-boy/solvers@40eac4aebc8c9379e66ee618d03af72cea57d1f9 data/covtype.rda "
    "and gzipped, uncompressed SHA-256 0a9371cef7c964b5475d6053cc3e0894a5aa6f65ad1ed3ecb01c45aa96217945 as UCI's "
    "file: see ../shared/data/SOURCES.md, covtype/",
)


#: Rows of UCI's covtype.data (pinned by the checksum).
COVTYPE_ROWS = 581_012


#: Rows of covtype.data parsed at a time: pandas' tokenizer and the int32 chunk then take about 25 MB (65,536
#: rows: 68 MB; the whole file: 294 MB), at 10 % more CPU time than the whole file at once.
CHUNK_ROWS = 16_384


def _covtype_path() -> Path:
    """The verified covtype.data.gz: :class:`~svibench.data.DatasetUnavailable` if it is not in the data
    directory, :class:`~svibench.data.DataError` if its checksum is wrong."""
    try:
        return fetch(COVTYPE, download=False)
    except DataError as exc:
        if (data_dir() / COVTYPE.path).exists():  # there but corrupt: a data error, not an absence
            raise
        raise DatasetUnavailable(f"covtype: {exc}") from None


def covtype_binary_scale(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``rows`` (indices into UCI's covtype.data, in this order) of LIBSVM's covtype.binary.scale:
    X (len(rows), 54) in [0, 1] and y in {0, 1}.

    As LIBSVM's covtype.libsvm.binary, class 2 has label 2 and every other class label 1; ``_binary``'s
    convention (the larger label is 1) and the authors' ``y = y-1`` both make class 2 → y = 1
    (283,301 rows).  Each feature is min–max scaled to [0, 1] over ALL 581,012 rows, as LIBSVM's svm-scale
    with ``-l 0`` (no column of this file is constant): (x − min) / (max − min), exact integers until the
    division.  The file is parsed ``CHUNK_ROWS`` rows at a time, each kept row written straight to its place
    in X, which is then scaled in place: the peak is X and one chunk, not the whole table beside X.
    """
    # the checksum pins the contents: 581,012 rows of 54 integer features and the class 1-7
    place = np.full(COVTYPE_ROWS, -1, dtype=np.int64)
    place[rows] = np.arange(len(rows))
    X, label = np.empty((len(rows), 54)), np.empty(len(rows), dtype=np.int32)
    low, high = np.full(54, np.iinfo(np.int32).max), np.full(54, np.iinfo(np.int32).min)
    first = 0
    with pandas.read_csv(_covtype_path(), header=None, dtype=np.int32, engine="c", chunksize=CHUNK_ROWS) as chunks:
        for chunk in chunks:
            table = chunk.to_numpy()
            np.minimum(low, table[:, :-1].min(axis=0), out=low)
            np.maximum(high, table[:, :-1].max(axis=0), out=high)
            to = place[first:first + len(table)]
            kept = to >= 0
            X[to[kept]] = table[kept, :-1]
            label[to[kept]] = table[kept, -1]
            first += len(table)
    X -= low
    X /= high - low
    return X, (label == 2).astype(float)


#: The data sets whose paper split :func:`paper_permutation` rebuilds (a1a and a7a have official files instead).
PAPER_SPLITS = ("australian", "breast-cancer", "colon-cancer", "covtype")

#: ``seed`` of the authors' ``log_reg_expt.m``, passed to ``setSeed`` before ``split_data``.
PAPER_SEED = 1


def paper_permutation(n: int) -> np.ndarray:
    """The authors' ``randperm(n)`` after ``setSeed(1)`` (0-based), rebuilding Khan & Lin (2017)'s splits.

    ``setSeed(s)`` (emtiyaz/cvi, ``utils/setSeed.m``) calls ``rand('twister', s)``: MATLAB's MT19937
    initialised by ``init_genrand(s)``, drawing 53-bit doubles, the stream of numpy's legacy
    ``RandomState(s).random_sample`` (the documented legacy stream this split needs; every other draw in
    svibench comes from a ``Generator``).  The MATLAB ``randperm`` of the authors' release returned the
    sort order of n such draws (``[~, p] = sort(rand(1, n))``; ties have probability ~n²2⁻⁵³), and
    ``split_data`` trains on its first ⌊n/2⌋ entries.
    """
    return np.argsort(np.random.RandomState(PAPER_SEED).random_sample(n), kind="stable")


def _permutation(name: str, n: int, split: int | str) -> tuple[np.ndarray, str]:
    """The row permutation of ``split`` and how the split is described."""
    if isinstance(split, str):
        if split != "paper":
            raise ValueError(f"{name}: split must be an integer seed or \"paper\", got {split!r}")
        return paper_permutation(n), f"the paper's halves (authors' randperm after setSeed({PAPER_SEED}))"
    if isinstance(split, bool) or not isinstance(split, (int, np.integer)):
        raise ValueError(f"{name}: split must be an integer seed or \"paper\", got {split!r}")
    return np.random.default_rng(split).permutation(n), f"random halves, permutation seed {split}"


def _files(*keys: str) -> tuple[DataFile, ...]:
    """The files a dataset reads: each LIBSVM text file, or else the .mat file holding the same matrix."""
    return tuple(dict.fromkeys(f for key in keys for f in FILES[key][:2]))


def read_libsvm(path: str | Path, *, n_features: int | None = None) -> tuple[scipy.sparse.csr_matrix, np.ndarray]:
    """Parse a LIBSVM text file (optionally ``.bz2``) into (X as CSR, labels).

    Parameters
    ----------
    path : path of the file.
    n_features : int, optional
        Number of columns; by default the largest index in the file.  A
        file whose largest index exceeds it is an error.
    """
    path = Path(path)
    opener = bz2.open if path.suffix == ".bz2" else open
    labels: list[float] = []
    indptr, indices, values = [0], [], []
    with opener(path, "rt") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if not parts:
                continue
            try:
                labels.append(float(parts[0]))
                for item in parts[1:]:
                    idx, val = item.split(":")
                    indices.append(int(idx) - 1)
                    values.append(float(val))
            except ValueError:
                raise DataError(f"{path}, line {lineno}: not in LIBSVM format ('label idx:value ...')") from None
            indptr.append(len(indices))
    cols = np.asarray(indices, dtype=np.int64)
    width = int(cols.max()) + 1 if len(cols) else 0
    if n_features is not None:
        if width > n_features:
            raise DataError(f"{path} has feature index {width} above the expected {n_features}")
        width = n_features
    X = scipy.sparse.csr_matrix((np.asarray(values), cols, np.asarray(indptr)), shape=(len(labels), width))
    return X, np.asarray(labels)


def _load(key: str, n_features: int) -> tuple[scipy.sparse.csr_matrix, np.ndarray]:
    """One file's matrix and labels: the LIBSVM text if it is in the data directory, else the pinned .mat."""
    text, mat, (xname, yname) = FILES[key]
    if (data_dir() / text.path).exists():
        return read_libsvm(fetch(text), n_features=n_features)
    contents = scipy.io.loadmat(fetch(mat), variable_names=[xname, yname])
    X = scipy.sparse.csr_matrix(contents[xname], dtype=float)
    if X.shape[1] < n_features:
        X = scipy.sparse.hstack([X, scipy.sparse.csr_matrix((X.shape[0], n_features - X.shape[1]))], format="csr")
    return X, np.asarray(contents[yname], dtype=float).ravel()


def _binary(y: np.ndarray, name: str) -> np.ndarray:
    """Two distinct labels → {0, 1} (the larger one is 1)."""
    levels = np.unique(y)
    if len(levels) != 2:
        raise DataError(f"{name}: expected two class labels, found {levels}")
    return (y == levels[1]).astype(float)


def _official(name: str, train: str, test: str, n_features: int) -> Dataset:
    Xtr, ytr = _load(train, n_features)
    Xte, yte = _load(test, n_features)
    return Dataset(name, "classification", {"X": Xtr, "y": _binary(ytr, name)}, {"X": Xte, "y": _binary(yte, name)},
                   {"source": FILES[train][0].source, "split": "official train/test files"})


def _halves(name: str, key: str, n_features: int, split: int | str) -> Dataset:
    X, y = _load(key, n_features)
    y = _binary(y, name)
    perm, how = _permutation(name, X.shape[0], split)
    n_train = X.shape[0] // 2
    tr, te = perm[:n_train], perm[n_train:]
    return Dataset(name, "classification", {"X": X[tr], "y": y[tr]}, {"X": X[te], "y": y[te]},
                   {"source": FILES[key][0].source, "split": how})


@dataset("a1a", kind="classification", description="LIBSVM a1a (Adult): official split, 1,605 train / 30,956 test, 123 features",
         files=_files("a1a", "a1a.t"))
def a1a() -> Dataset:
    """LIBSVM a1a with the official train/test files (train padded from 119 to 123 columns)."""
    return _official("a1a", "a1a", "a1a.t", 123)


@dataset("a7a", kind="classification", description="LIBSVM a7a (Adult): official split, 16,100 train / 16,461 test, 123 features",
         files=_files("a7a", "a7a.t"))
def a7a() -> Dataset:
    """LIBSVM a7a with the official train/test files."""
    return _official("a7a", "a7a", "a7a.t", 123)


@dataset("australian", kind="classification", description="LIBSVM australian_scale: 690 × 14, the paper's or random halves",
         files=_files("australian_scale"), paper_split=True)
def australian(*, split: int | str = 0) -> Dataset:
    """australian_scale split into halves (345 train): the paper's, or random by the seed ``split``."""
    return _halves("australian", "australian_scale", 14, split)


@dataset("breast-cancer", kind="classification", description="LIBSVM breast-cancer_scale: 683 × 10, the paper's or random halves",
         files=_files("breast-cancer_scale"), paper_split=True)
def breast_cancer(*, split: int | str = 0) -> Dataset:
    """breast-cancer_scale (labels 2/4 → 0/1) split into halves (341 train): the paper's, or random by the seed ``split``."""
    return _halves("breast-cancer", "breast-cancer_scale", 10, split)


@dataset("colon-cancer", kind="classification", description="LIBSVM colon-cancer: 62 × 2000, the paper's or random halves",
         files=_files("colon-cancer"), paper_split=True)
def colon_cancer(*, split: int | str = 0) -> Dataset:
    """colon-cancer split into halves (31 train): the paper's, or random by the seed ``split``."""
    return _halves("colon-cancer", "colon-cancer", 2000, split)


@dataset("covtype", kind="classification",
         description="covtype.binary.scale (UCI covtype, class 2 vs rest, min-max scaled): 581,012 x 54, the paper's or random halves",
         files=(COVTYPE,), paper_split=True)
def covtype(*, split: int | str = 0, n_train: int | None = None) -> Dataset:
    """The CVI paper's "Covtype-binary-scale" split into halves (290,506 train): the paper's, or random by
    the seed ``split``.  The paper's split needs LIBSVM's row order, which is UCI's file order
    (:data:`COVTYPE_ROWS` rows of covtype.data, as LIBSVM's covtype.binary lists them).

    Parameters
    ----------
    n_train : int or None
        Keep the first n_train rows of each random half (a reduced scale; as many test rows); None keeps
        both halves whole, as the paper.
    """
    half = COVTYPE_ROWS // 2
    n = half if n_train is None else n_train
    if not 1 <= n <= half:
        raise ValueError(f"covtype: n_train must be between 1 and {half} (each random half), got {n_train}")
    perm, how = _permutation("covtype", COVTYPE_ROWS, split)
    X, y = covtype_binary_scale(np.concatenate([perm[:n], perm[half:half + n]]))  # one array: train rows, then test
    return Dataset("covtype", "classification", {"X": X[:n], "y": y[:n]}, {"X": X[n:], "y": y[n:]},
                   {"source": COVTYPE.source, "split": how + (f", first {n} rows of each" if n_train is not None else "")})
