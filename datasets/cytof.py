"""CyTOF: the Bodenmiller et al. (2012) BCR-XL PBMC set — a real-data SUBSTITUTE for the papers' CyTOF.

Khan & Lin (2017, §7) and Shah et al. (2015, §5.4) use a CyTOF matrix of Knowles
(N ≈ 520–530k cells, D = 40 markers; davidaknowles/gamma_sgvb data/cytof.mat) that
is not obtainable (``../shared/data/SOURCES.md``).  This module reads the 16 FCS 3.0
files of ``cytof/bcr-xl/`` (8 patients × {BCR-XL stimulated, Reference}; 172,791
cells; ChristofSeiler/Ascona_Talk at a pinned commit) with FlowIO, the FCS reader
of the FlowKit project, keeps the 24 protein markers (named by the files' $PnS
keywords) and applies the field's arcsinh(x / 5).  Results on it are not
comparable with the papers' numbers (other cells, D = 24).

:func:`read_markers` is the shared core (the transformed marker matrix and its
names); the datasets split it by held-out cells (``cytof``, for the gamma factor
model, which scores test rows) or by held-out entries with masks (``cytof-entries``,
for BPFA, as ``bpfa-synthetic``).

Parameters
----------
samples : list of str, optional
    Files to read, e.g. [["patient1_BCR-XL", "patient1_Reference"]] in a study (a bare list is a grid), all 16 by default.
markers : list of str, optional
    Markers to keep, in this order, e.g. [["CD3", "CD4", "pS6"]] in a study (a bare list is a grid), all 24 by default.
n_cells : int ≥ 2, optional
    Cells in a seeded random subsample drawn before the split (None: every cell of the samples).
seed : int
    Seeds the subsample of cells and which cells (cytof) or entries (cytof-entries) are held out.
"""
from __future__ import annotations

import warnings
from typing import NamedTuple, Sequence

import flowio
import numpy as np

from svibench.data import DataError, DataFile, Dataset, dataset, fetch

from .bpfa_synthetic import mask_entries

__all__ = ["CELLS", "COFACTOR", "FILES", "MARKERS", "SAMPLES", "CytofCells", "cytof", "cytof_entries", "read_markers"]

_COMMIT = "0797742e2ff6939aad12ea2a9b91b2d5fd8a34f1"
_SHA256 = {
    "patient1_BCR-XL": "d2a70d9d63eb4c99248e14ff508518bc554a065a6fbde59be522a7fabf6a635f",
    "patient1_Reference": "85d34c5727985348a4058b842e76677c7e2457ad3576e29a5c044edc0d21da1a",
    "patient2_BCR-XL": "e4e08652785ade6d86cb0d22510586307b0d5f96bca360306d05ba401afb0dc8",
    "patient2_Reference": "674f80ae53933a4086f89a63e98d18e0a0e591655feab7e48cee03c0767a989d",
    "patient3_BCR-XL": "f8a0e1e545ceeef9dff541d577eb7bc477a5072be32a8753b37fd1888425e86f",
    "patient3_Reference": "2d1d872286cb6ef0a569b2f2a1a8f09150d7e5489587d1f6571dce9b9cae8f36",
    "patient4_BCR-XL": "b3639a6e3af65ab4bf916e053dc28b26a7bc61a9dc640b4365e638a3cc7961fd",
    "patient4_Reference": "fe779d8d6955efdddbe765fd8583ab1827060f27cd7bf998d4cea04187c178ca",
    "patient5_BCR-XL": "a5cf70f206d8d33e10b1acc177258a8cec70b5b891c6d777594a010e1d5f4018",
    "patient5_Reference": "2d192bce83b1bc81efce7555577cd6f9a4e511ab66fa15e4a33a7512aa6745a3",
    "patient6_BCR-XL": "72ad9bca2985ea5582fd3759ec8a0db9b191f17264e5dd0979b040dfd74d2b42",
    "patient6_Reference": "d067e6aab26de461aeb61d977882520cb885c70bf7afac5cc053b77f70bf0041",
    "patient7_BCR-XL": "776f0a2da5b17223b7c9434c7c3251692908146cf3bc692ded63e53233459197",
    "patient7_Reference": "8205e04c859d9ef4275e6dbbec491604137ef974d3511be4be3d5e68fdd56747",
    "patient8_BCR-XL": "84084143698dc6ba7bf412a854875740a4bfdb6744b36a8e5192de1ba1e40baa",
    "patient8_Reference": "9116552e3983495678b29d61e6e56e8d8b2a9c9b812e0a88448c5c02e9220d8d",
}
#: The 16 samples, in the order of SOURCES.md.
SAMPLES: tuple[str, ...] = tuple(_SHA256)
FILES: dict[str, DataFile] = {
    sample: DataFile(f"cytof/bcr-xl/PBMC8_30min_{sample}.fcs", sha,
                     f"https://raw.githubusercontent.com/ChristofSeiler/Ascona_Talk/{_COMMIT}/PBMC8_30min_{sample}.fcs",
                     f"ChristofSeiler/Ascona_Talk@{_COMMIT} PBMC8_30min_{sample}.fcs")
    for sample, sha in _SHA256.items()
}
#: All cells of the 16 files (SOURCES.md).
CELLS = 172_791
#: The 24 protein markers ($PnS): 10 surface, then 14 phospho-signalling (SOURCES.md's order).
MARKERS: tuple[str, ...] = (
    "CD3", "CD45", "CD4", "CD20", "CD33", "CD123", "CD14", "IgM", "HLA-DR", "CD7",
    "pNFkB", "pp38", "pStat5", "pAkt", "pStat1", "pSHP2", "pZap70", "pStat3", "pSlp76", "pBtk", "pPlcg2", "pErk",
    "pLat", "pS6",
)
#: Every channel of every file: time, cell length, the markers, barcodes BC1–BC7 and two DNA channels.
CHANNELS = frozenset({"Time", "Cell_length", *MARKERS, *(f"BC{i}" for i in range(1, 8)), "DNA-1", "DNA-2"})
#: The field's arcsinh cofactor for CyTOF ion counts.
COFACTOR = 5.0
#: Khan & Lin's train fraction (300,000 of 522,656 cells): held out 222,656 / 522,656.
PAPER_HELDOUT = 222_656 / 522_656


class CytofCells(NamedTuple):
    """arcsinh(x / 5) of the chosen markers, (cells, markers), with names and each cell's sample."""

    Y: np.ndarray
    markers: tuple[str, ...]
    samples: tuple[str, ...]
    sample_of_cell: np.ndarray


def _read_fcs(sample: str) -> tuple[np.ndarray, list[str]]:
    """Raw events (cells, channels) of one verified file and its $PnS channel names, counts checked against $TOT."""
    file = FILES[sample]
    path = fetch(file)
    try:
        with warnings.catch_warnings():
            # These files' $ENDDATA is one past the last byte (their cytometer software's known quirk);
            # FlowIO reads them with ignore_offset_error, and the counts are checked below instead.
            warnings.simplefilter("ignore", UserWarning)
            fcs = flowio.FlowData(str(path), ignore_offset_error=True)
        events = np.asarray(fcs.as_array(preprocess=False))
    except Exception as exc:  # noqa: BLE001 - FlowIO raises several types; one message names the file
        raise DataError(f"{path}: not a readable FCS file ({type(exc).__name__}: {exc}); "
                        f"fetch it again from {file.url} ({file.source})") from None
    names = [fcs.channels[i].get("pns") or fcs.channels[i]["pnn"] for i in sorted(fcs.channels)]
    total = int(fcs.text.get("tot", -1))
    if events.shape != (total, len(names)):
        raise DataError(f"{path}: read {events.shape[0]} cells × {events.shape[1]} channels, but $TOT = {total} "
                        f"and $PAR = {len(names)}; fetch it again from {file.url} ({file.source})")
    if set(names) != CHANNELS:
        raise DataError(f"{path}: unexpected channel set (missing {sorted(CHANNELS - set(names))}, extra "
                        f"{sorted(set(names) - CHANNELS)}); cytof reads the BCR-XL files of {file.source}")
    return events, names


def _chosen(requested: Sequence[str] | None, known: Sequence[str], what: str) -> tuple[str, ...]:
    """``requested`` (default: all of ``known``), checked: each known and none repeated."""
    chosen = tuple(known if requested is None else requested)
    absent = [name for name in chosen if name not in known]
    if absent or not chosen or len(set(chosen)) != len(chosen):
        problem = f"{absent} absent" if absent else "empty or repeated names"
        raise ValueError(f"cytof: {what} {list(chosen)}: {problem}; choose from {list(known)}")
    return chosen


def read_markers(samples: Sequence[str] | None = None, markers: Sequence[str] | None = None) -> CytofCells:
    """The marker matrix arcsinh(x / 5) of the chosen samples (default all 16) and markers (default all 24).

    Rows are cells, file after file in the order of ``samples``; columns follow ``markers``.
    With all 16 files the cell count is checked against SOURCES.md's 172,791.
    """
    samples = _chosen(samples, SAMPLES, "samples")
    markers = _chosen(markers, MARKERS, "markers")
    blocks = []
    for sample in samples:  # 16 files at most: one vectorised read each, transformed in place
        events, names = _read_fcs(sample)
        block = events[:, [names.index(m) for m in markers]]
        block /= COFACTOR
        blocks.append(np.arcsinh(block, out=block))
    counts = [len(b) for b in blocks]
    if len(samples) == len(SAMPLES) and sum(counts) != CELLS:
        raise DataError(f"cytof: the 16 files hold {sum(counts)} cells, not {CELLS} (SOURCES.md); "
                        f"fetch them again from {FILES[SAMPLES[0]].source.split()[0]}")
    return CytofCells(np.concatenate(blocks), markers, samples, np.repeat(np.arange(len(samples)), counts))


def _subsample(cells: CytofCells, n_cells: int | None, rng: np.random.Generator) -> np.ndarray:
    """Rows of a seeded subsample of ``n_cells`` cells (all rows, shuffled, when None)."""
    total = len(cells.Y)
    if n_cells is not None and not 2 <= n_cells <= total:
        raise ValueError(f"cytof: n_cells must be in [2, {total}] for these samples, got {n_cells}")
    return rng.permutation(total)[: total if n_cells is None else n_cells]


def _check_heldout(heldout: float) -> None:
    if not 0 < heldout < 1:
        raise ValueError(f"cytof: heldout is the held-out fraction and must be in (0, 1), got {heldout}")


def _meta(cells: CytofCells, seed: int, **extra) -> dict:
    return {"markers": cells.markers, "samples": cells.samples, "seed": seed, "cofactor": COFACTOR,
            "source": FILES[SAMPLES[0]].source.split()[0],
            "substitute": "Bodenmiller 2012 BCR-XL (D = 24) stands in for the papers' CyTOF (D = 40)", **extra}


@dataset("cytof", kind="real-matrix",
         description="CyTOF BCR-XL (Bodenmiller 2012; SUBSTITUTE for the papers' CyTOF), arcsinh(x/5), held-out cells",
         files=tuple(FILES.values()))
def cytof(*, samples: list[str] | None = None, markers: list[str] | None = None, heldout: float = PAPER_HELDOUT,
          n_cells: int | None = None, standardize: bool = True, seed: int = 0) -> Dataset:
    """A seeded random fraction ``heldout`` of the cells (rows) as test set; ``Y`` in train and test.

    ``n_cells`` draws a seeded subsample of cells first (default: all).  With
    ``standardize`` every marker is centred and scaled to unit variance with the
    training rows (the authors' preprocessing for the gamma factor model, App. J);
    ``meta`` keeps ``offset`` and ``scale``.  Default ``heldout``: Khan & Lin's
    222,656 of 522,656 cells.

    Parameters
    ----------
    heldout : float in (0, 1)
        Fraction of the cells (rows) held out as the test set (default Khan & Lin's 222,656 of 522,656).
    standardize : bool
        Centre each marker and scale it to unit variance with the training rows' mean and sd.
    """
    _check_heldout(heldout)
    cells = read_markers(samples, markers)
    rows = _subsample(cells, n_cells, np.random.default_rng(seed))
    n_test = min(max(int(round(heldout * len(rows))), 1), len(rows) - 1)
    train, test = np.sort(rows[n_test:]), np.sort(rows[:n_test])
    Y_train, Y_test = cells.Y[train], cells.Y[test]
    cells = cells._replace(Y=None)  # the halves are copies: free the whole matrix before the standardisation
    offset, scale = ((Y_train.mean(0), Y_train.std(0)) if standardize
                     else (np.zeros(Y_train.shape[1]), np.ones(Y_train.shape[1])))
    for Y in (Y_train, Y_test):
        Y -= offset
        Y /= scale
    return Dataset("cytof", "real-matrix", {"Y": Y_train}, {"Y": Y_test},
                   _meta(cells, seed, offset=offset, scale=scale, heldout=heldout,
                         sample_of_cell={"train": cells.sample_of_cell[train], "test": cells.sample_of_cell[test]}))


@dataset("cytof-entries", kind="factor",
         description="CyTOF BCR-XL (SUBSTITUTE for the papers' CyTOF), arcsinh(x/5), held-out entries with masks (BPFA)",
         files=tuple(FILES.values()), size=("n_cells",))
def cytof_entries(*, samples: list[str] | None = None, markers: list[str] | None = None, heldout: float = 0.05,
                  n_cells: int | None = None, seed: int = 0) -> Dataset:
    """A seeded random fraction ``heldout`` of the ENTRIES held out (Shah et al. §5.4: 5%), as ``bpfa-synthetic``.

    ``n_cells`` draws a seeded subsample of cells first (default: all).  Each
    marker is standardised over its training entries; ``meta`` keeps ``offset``
    and ``scale``.

    Parameters
    ----------
    heldout : float in (0, 1)
        Fraction of the entries held out for testing, each entry independently with this probability (paper: 5 %).
    """
    _check_heldout(heldout)
    cells = read_markers(samples, markers)
    rng = np.random.default_rng(seed)
    rows = np.sort(_subsample(cells, n_cells, rng))
    Y, cells = cells.Y[rows], cells._replace(Y=None)  # mask_entries standardises this copy in place; free the rest
    train, test, offset, scale = mask_entries(Y, heldout, rng)
    return Dataset("cytof-entries", "factor", train, test,
                   _meta(cells, seed, offset=offset, scale=scale, heldout=heldout, sample_of_cell=cells.sample_of_cell[rows]))
