"""The CyTOF loader (datasets/cytof.py) on the real BCR-XL files, against an independent reading of the
FCS bytes (TEXT keywords and big-endian float32 DATA read here with numpy), and its one-line errors."""
from __future__ import annotations

import re
import shutil

import flowio
import numpy as np
import pytest

from svibench.data import DataError, DataFile, data_dir, sha256_of
from svibench.datasets import cytof as c

pytestmark = pytest.mark.skipif(not all((data_dir() / f.path).exists() for f in c.FILES.values()),
                                reason="cytof/bcr-xl/ is not in the data directory (../shared/data/SOURCES.md)")


def raw_fcs(sample: str) -> tuple[np.ndarray, list[str]]:
    """An independent FCS 3.0 reading of one file: $TOT, $PAR, $PnS from TEXT, events as '>f4' at $BEGINDATA."""
    raw = (data_dir() / c.FILES[sample].path).read_bytes()
    text_start, text_end = int(raw[10:18]), int(raw[18:26])
    text = raw[text_start:text_end + 1].decode("latin-1")
    delim = text[0]
    items = text[1:].split(delim)
    keys = {items[i].upper(): items[i + 1] for i in range(0, len(items) - 1, 2)}
    tot, par, begin = int(keys["$TOT"]), int(keys["$PAR"]), int(keys["$BEGINDATA"])
    assert keys["$DATATYPE"] == "F" and keys["$BYTEORD"] == "4,3,2,1"
    events = np.frombuffer(raw, dtype=">f4", count=tot * par, offset=begin).reshape(tot, par)
    return events.astype(float), [keys[f"$P{i}S"] for i in range(1, par + 1)]


@pytest.fixture(scope="module")
def everything():
    return c.read_markers()


def test_all_files_give_the_published_cell_count_and_each_file_its_tot(everything):
    assert everything.Y.shape == (172_791, 24)
    counts = np.bincount(everything.sample_of_cell)
    assert [int(n) for n in counts] == [raw_fcs(s)[0].shape[0] for s in c.SAMPLES]
    assert counts[0] == 2838 and counts[-1] == 13670  # SOURCES.md: patient1_BCR-XL and patient8_Reference


def test_markers_are_the_24_named_proteins_in_the_files_pns(everything):
    assert everything.markers == c.MARKERS and len(set(c.MARKERS)) == 24
    _, names = raw_fcs("patient3_Reference")
    assert set(c.MARKERS) <= set(names) and not {"Time", "Cell_length", "BC1", "DNA-1"} & set(c.MARKERS)


@pytest.mark.parametrize("sample", ["patient1_BCR-XL", "patient8_Reference"])
def test_values_are_arcsinh_of_the_raw_ion_counts_over_5(everything, sample):
    events, names = raw_fcs(sample)
    expected = np.arcsinh(events[:, [names.index(m) for m in c.MARKERS]] / 5.0)
    np.testing.assert_allclose(everything.Y[everything.sample_of_cell == c.SAMPLES.index(sample)], expected, rtol=1e-12)


def test_the_in_place_transform_equals_the_plain_arcsinh_of_all_files_bit_for_bit(everything):
    plain = [(lambda events, names: events[:, [names.index(m) for m in c.MARKERS]])(*raw_fcs(s)) for s in c.SAMPLES]
    np.testing.assert_array_equal(everything.Y, np.arcsinh(np.concatenate(plain) / 5.0))


def _plain_mask_entries(Y, heldout, rng):
    """mask_entries as written before it worked in place (bpfa_synthetic.py): every step a new array."""
    train = rng.random(Y.shape) >= heldout
    count = train.sum(0)
    mean = (Y * train).sum(0) / count
    sd = np.sqrt((((Y - mean) * train) ** 2).sum(0) / count)
    Y = (Y - mean) / sd
    mask = train.astype(float)
    return {"Y": Y * mask, "mask": mask}, {"Y": Y, "mask": 1.0 - mask}, mean, sd


def test_the_splits_equal_the_plain_versions_bit_for_bit(everything):
    """cytof (standardised in place after one take per half) and cytof-entries (mask_entries in place) return
    exactly what the plain expressions give on the same cells and draws."""
    Y, n = everything.Y, len(everything.Y)
    rows = np.random.default_rng(0).permutation(n)
    n_test = int(round(c.PAPER_HELDOUT * n))
    train, test = np.sort(rows[n_test:]), np.sort(rows[:n_test])
    offset, scale = Y[train].mean(0), Y[train].std(0)
    cells = c.cytof()
    assert cells.train["Y"].tobytes() == ((Y[train] - offset) / scale).tobytes()
    assert cells.test["Y"].tobytes() == ((Y[test] - offset) / scale).tobytes()
    rng = np.random.default_rng(0)
    expected = _plain_mask_entries(Y[np.sort(rng.permutation(n))], 0.05, rng)
    entries = c.cytof_entries()
    for got, want in zip((entries.train, entries.test), expected):
        assert all(got[key].tobytes() == want[key].tobytes() for key in ("Y", "mask"))
    assert entries.meta["offset"].tobytes() == expected[2].tobytes()
    assert entries.meta["scale"].tobytes() == expected[3].tobytes()


def test_subsets_of_samples_and_markers_in_the_order_asked(everything):
    part = c.read_markers(["patient2_Reference", "patient1_BCR-XL"], ["pS6", "CD3"])
    assert part.markers == ("pS6", "CD3") and part.Y.shape == (16725 + 2838, 2)
    first = everything.Y[everything.sample_of_cell == c.SAMPLES.index("patient2_Reference")]
    np.testing.assert_array_equal(part.Y[:16725], first[:, [c.MARKERS.index("pS6"), 0]])


def test_heldout_cells_partition_the_rows_and_the_split_follows_the_seed(everything):
    a = c.cytof(heldout=0.25, standardize=False, seed=1)
    assert a.train["Y"].shape == (172_791 - 43_198, 24) and a.test["Y"].shape == (43_198, 24)
    both = np.vstack([a.train["Y"], a.test["Y"]])
    np.testing.assert_array_equal(np.sort(both, axis=0), np.sort(everything.Y, axis=0))
    np.testing.assert_array_equal(a.test["Y"], c.cytof(heldout=0.25, standardize=False, seed=1).test["Y"])
    assert not np.array_equal(a.test["Y"], c.cytof(heldout=0.25, standardize=False, seed=2).test["Y"])


def test_standardised_with_training_rows_only_and_subsampled_by_seed():
    d = c.cytof(n_cells=3000, heldout=0.4, seed=5)
    raw = c.cytof(n_cells=3000, heldout=0.4, seed=5, standardize=False)
    assert d.train["Y"].shape == (1800, 24) and d.test["Y"].shape == (1200, 24)
    np.testing.assert_allclose(d.train["Y"].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(d.train["Y"].std(0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(d.test["Y"], (raw.test["Y"] - raw.train["Y"].mean(0)) / raw.train["Y"].std(0), rtol=1e-12)
    assert not np.allclose(d.test["Y"].mean(0), 0.0, atol=1e-6)  # the test rows did not enter the scaling
    assert not np.array_equal(raw.train["Y"], c.cytof(n_cells=3000, heldout=0.4, seed=6, standardize=False).train["Y"])


def test_heldout_entries_mask_a_fraction_of_entries(everything):
    e = c.cytof_entries(heldout=0.05, seed=0)
    mask, Y = e.train["mask"], e.test["Y"]
    assert mask.shape == (172_791, 24) and abs(1 - mask.mean() - 0.05) < 0.002
    np.testing.assert_array_equal(e.test["mask"], 1 - mask)
    np.testing.assert_array_equal(e.train["Y"][mask == 0], 0.0)
    np.testing.assert_allclose(Y * e.meta["scale"] + e.meta["offset"], everything.Y, rtol=1e-10, atol=1e-12)
    col = Y[:, 0][mask[:, 0] == 1]
    assert abs(col.mean()) < 1e-12 and col.std() == pytest.approx(1.0)
    np.testing.assert_array_equal(mask, c.cytof_entries(heldout=0.05, seed=0).train["mask"])


@pytest.mark.parametrize("heldout", [0.0, 1.0, -0.1, 1.5])
def test_a_heldout_fraction_outside_0_1_is_refused(heldout):
    for loader in (c.cytof, c.cytof_entries):
        with pytest.raises(ValueError, match=r"heldout .* must be in \(0, 1\), got"):
            loader(heldout=heldout)


def test_an_absent_marker_or_unknown_sample_is_named():
    with pytest.raises(ValueError, match=r"markers \['CD3', 'CD8'\]: \['CD8'\] absent; choose from"):
        c.cytof(markers=["CD3", "CD8"])
    with pytest.raises(ValueError, match=r"samples .*\['patient9_BCR-XL'\] absent"):
        c.read_markers(["patient9_BCR-XL"])


@pytest.fixture
def copied(tmp_path, monkeypatch):
    """The 16 files copied into a fresh data directory (no network: a download attempt fails at once)."""
    (tmp_path / "cytof").mkdir()
    shutil.copytree(data_dir() / "cytof/bcr-xl", tmp_path / "cytof/bcr-xl")
    (tmp_path / "cytof/bcr-xl").chmod(0o755)
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    monkeypatch.setattr("urllib.request.urlopen", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    return tmp_path / "cytof/bcr-xl"


def test_a_missing_file_names_the_source(copied):
    (copied / "PBMC8_30min_patient4_Reference.fcs").unlink()
    with pytest.raises(DataError, match=r"patient4_Reference.fcs is not in the data directory .*Ascona_Talk@0797742e"):
        c.cytof()


def test_an_altered_file_fails_its_checksum(copied):
    path = copied / "PBMC8_30min_patient5_BCR-XL.fcs"
    raw = bytearray(path.read_bytes())
    path.chmod(0o644)
    raw[-3] ^= 1
    path.write_bytes(bytes(raw))
    with pytest.raises(DataError, match=r"corrupt: SHA-256 .*Ascona_Talk@0797742e"):
        c.read_markers(["patient5_BCR-XL"])


def test_an_fcs_file_with_another_channel_set_is_refused(copied, monkeypatch):
    events, names = raw_fcs("patient1_BCR-XL")
    names[4] = "CD8"
    path = copied / "other.fcs"
    with open(path, "wb") as fh:
        flowio.create_fcs(fh, events.astype(np.float32).ravel(), names, opt_channel_names=names)
    monkeypatch.setitem(c.FILES, "patient1_BCR-XL", DataFile("cytof/bcr-xl/other.fcs", sha256_of(path), "u", "s"))
    with pytest.raises(DataError, match=r"other.fcs: unexpected channel set \(missing \['BC1'\], extra \['CD8'\]\)"):
        c.read_markers(["patient1_BCR-XL"])
