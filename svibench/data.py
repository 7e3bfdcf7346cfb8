"""Datasets and the data directory.

A :class:`Dataset` is arrays plus a train/test split.  Real files are read from
the data directory (``SVIBENCH_DATA_DIR``, default ``~/.cache/svibench``); a
missing file is downloaded from its pinned public source and every file is
verified by SHA-256 before use (README.md, "Data").
"""
from __future__ import annotations

import hashlib
import inspect
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # numpy is imported where used: `svibench list` reads data_dir() without it
    import numpy as np

from .errors import UserError

__all__ = [
    "Dataset",
    "DataFile",
    "DataError",
    "DatasetUnavailable",
    "data_dir",
    "fetch",
    "dataset",
    "check_finite",
    "sha256_of",
]


class DataError(UserError, RuntimeError):
    """A data file is missing, corrupt or malformed; the message says how to fix it."""


class DatasetUnavailable(DataError):
    """A dataset cannot be provided on this machine (the reason is the message)."""


@dataclass(frozen=True)
class Dataset:
    """Arrays of one problem instance.

    Parameters
    ----------
    name : str
        Registry name, e.g. ``"australian"``.
    train, test : dict of str to ndarray
        The split.  Which keys exist is a matter between the dataset and the
        models of its ``kind`` (e.g. ``X``/``y`` for classification).
    kind : str
        What the arrays mean (``"density"``, ``"regression"``,
        ``"classification"``, ``"factor"``, ``"images"``, ...).
    meta : dict
        Anything else a model or metric needs (image shapes, masks' origin,
        true parameters of synthetic data, the source and checksum of real data).
    """

    name: str
    kind: str
    train: dict[str, np.ndarray]
    test: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import numpy as np

        for split, arrays in (("train", self.train), ("test", self.test)):
            for key, value in arrays.items():
                if isinstance(value, np.ndarray):
                    value.setflags(write=False)  # algorithms must not mutate data
                    check_finite(value, f"{self.name}: {split}[{key!r}]")


def check_finite(array: np.ndarray, what: str) -> None:
    """Raise :class:`DataError` if a float array holds NaN or inf.

    Missing values are expressed with masks, never with NaN.
    """
    import numpy as np

    if np.issubdtype(np.asarray(array).dtype, np.floating) and not np.all(np.isfinite(array)):
        bad = int(np.size(array) - np.count_nonzero(np.isfinite(array)))
        raise DataError(
            f"{what} holds {bad} NaN/inf value(s); svibench expresses missing "
            "entries with a mask, so clean the data or pass a mask"
        )


def data_dir() -> Path:
    """The data directory: ``$SVIBENCH_DATA_DIR``, else ``../shared/data`` beside a source checkout (where the tests
    look too), else ``~/.cache/svibench``."""
    env = os.environ.get("SVIBENCH_DATA_DIR")
    if env:
        return Path(env).expanduser()
    checkout = Path(__file__).resolve().parents[1]
    shared = checkout.parent / "shared" / "data"
    if (checkout / "pyproject.toml").is_file() and shared.is_dir():
        return shared
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "svibench"


@dataclass(frozen=True)
class DataFile:
    """A real data file: its place under the data directory, pinned source and checksum.

    ``url`` points at the file at a fixed commit of its public repository
    (``../shared/data/SOURCES.md``), so the bytes behind it never change.
    """

    path: str
    sha256: str
    url: str
    source: str

    def describe(self) -> str:
        return f"{self.path} (source: {self.source}; {self.url})"


def sha256_of(path: Path) -> str:
    """The SHA-256 of a file, as hex (what :class:`DataFile` pins)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch(file: DataFile, *, download: bool = True) -> Path:
    """Return the local path of a verified data file, downloading it if missing.

    A download goes to a temporary file beside its final path and is renamed
    into place only once its SHA-256 matches; whatever happens, no partial or
    corrupt download is left behind.

    Raises
    ------
    DataError
        If the file is missing and cannot be downloaded, or its checksum is
        wrong; the message names the file, the folder and the source.
    """
    root = data_dir()
    path = root / file.path
    if not path.exists():
        if not download:
            raise DataError(f"{file.path} is not in the data directory {root}; get it from {file.source}")
        _download(file, path)
    actual = sha256_of(path)
    if actual != file.sha256:
        raise DataError(
            f"{path} is corrupt: SHA-256 {actual} but {file.sha256} was expected. "
            f"Delete it and fetch it again from {file.url} ({file.source})."
        )
    return path


def _download(file: DataFile, path: Path) -> None:
    """Download ``file`` to ``path``, checksum first: only verified bytes ever appear at ``path``."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(file.url, timeout=30) as response:
            shutil.copyfileobj(response, out)
        actual = sha256_of(Path(tmp))
        if actual != file.sha256:
            raise DataError(f"the download from {file.url} has SHA-256 {actual}, not the pinned {file.sha256}; "
                            f"nothing was saved. Check the source ({file.source}) or download the file by hand "
                            f"into {path.parent}")
        os.replace(tmp, path)
        tmp = None
    except DataError:
        raise
    except Exception as exc:  # network down, read-only folder, 404, ...
        raise DataError(
            f"{file.path} is not in the data directory {data_dir()} and downloading it failed "
            f"({type(exc).__name__}: {exc}). Download it by hand from {file.url} "
            f"({file.source}) into {path.parent}, or set SVIBENCH_DATA_DIR to a folder that holds it."
        ) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


@dataclass(frozen=True)
class DatasetInfo:
    """What the registry knows of a dataset without loading it."""

    name: str
    kind: str
    description: str
    loader: Callable[..., Dataset]
    files: tuple[DataFile, ...] = ()
    paper_split: bool = False
    size: tuple[str, ...] = ()
    cost_params: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def with_defaults(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with the loader's defaults for the parameters they leave out."""
        found = inspect.signature(self.loader).parameters.values()
        return {**{p.name: p.default for p in found if p.default is not p.empty}, **params}


def dataset(name: str, *, kind: str, description: str = "", files: tuple[DataFile, ...] = (),
            paper_split: bool = False, size: tuple[str, ...] = (),
            cost_params: Callable[[dict[str, Any]], dict[str, Any]] | None = None
            ) -> Callable[[Callable[..., Dataset]], Callable[..., Dataset]]:
    """Mark a loader function as the dataset ``name``.

    The registry collects marked functions from the modules of
    ``svibench.datasets`` (and from plugins).  The loader's keyword arguments
    are the dataset's parameters in a study file; a ``seed`` parameter, if
    any, seeds synthetic generation or random splits.  ``files`` are the
    :class:`DataFile` s it reads (``svibench describe`` lists them, present or not).  ``paper_split``:
    the loader's ``split`` also takes ``"paper"``, the split of the paper the dataset comes from.  ``size``: the
    loader's parameters that count its rows (data points, train or test), which a plan's reduced problem scales
    down alike (:mod:`svibench.reduced_problem`); each must take any count from 1 to its value.  ``cost_params``:
    what a problem's CPU cost depends on, as a function of the loader's parameters (its defaults filled in), for a
    dataset whose parameters choose which data in a way that can also set how much (an image's name sets its side);
    a plan probes once for the problems it maps alike (:mod:`svibench.plan`).  Without it, a plan takes every
    parameter but ``split`` and ``seed`` (which rows, not how many).
    """

    def mark(loader: Callable[..., Dataset]) -> Callable[..., Dataset]:
        unknown = [p for p in size if p not in inspect.signature(loader).parameters]
        if unknown:
            raise TypeError(f"@dataset({name!r}, size=...): {', '.join(unknown)} not a parameter of {loader.__name__}; "
                            "size names the loader's parameters that count its rows")
        doc = description or (loader.__doc__ or "").strip().split("\n")[0]
        loader._svibench_dataset = DatasetInfo(name, kind, doc, loader, tuple(files), paper_split,
                                                  tuple(size), cost_params)  # type: ignore[attr-defined]
        return loader

    return mark
