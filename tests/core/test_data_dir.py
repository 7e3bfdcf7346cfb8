"""The data directory: checksum before use, download when missing, clear errors."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from svibench.data import DataError, DataFile, Dataset, data_dir, fetch


def _file(tmp_path, content=b"hello svibench\n"):
    source = tmp_path / "upstream" / "f.txt"
    source.parent.mkdir()
    source.write_bytes(content)
    return DataFile("sub/f.txt", hashlib.sha256(content).hexdigest(), source.as_uri(), "test upstream, commit abc")


def test_data_dir_follows_the_environment_then_a_source_checkouts_shared_data_then_the_cache(tmp_path, monkeypatch):
    """The command line looks where the tests look (tests/conftest.py): the variable, ../shared/data beside the
    checkout, the user's cache."""
    from pathlib import Path

    import svibench.data

    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    assert data_dir() == tmp_path
    monkeypatch.delenv("SVIBENCH_DATA_DIR")
    checkout = Path(svibench.data.__file__).resolve().parents[1]
    shared = checkout.parent / "shared" / "data"
    assert data_dir() == (shared if shared.is_dir() and (checkout / "pyproject.toml").is_file()
                          else Path.home() / ".cache" / "svibench")
    monkeypatch.setattr(svibench.data, "__file__", str(tmp_path / "site-packages" / "svibench" / "data.py"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert data_dir() == tmp_path / "cache" / "svibench"  # an installed copy: no checkout beside it


def test_a_missing_file_is_downloaded_and_verified(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path / "data"))
    file = _file(tmp_path)
    path = fetch(file)
    assert path == tmp_path / "data" / "sub" / "f.txt" and path.read_bytes() == b"hello svibench\n"


def test_a_corrupt_file_is_refused_naming_file_and_source(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path / "data"))
    file = _file(tmp_path)
    fetch(file).write_bytes(b"tampered")
    with pytest.raises(DataError, match=r"sub/f.txt is corrupt: SHA-256 .* Delete it and fetch it again from file:"):
        fetch(file)


def test_an_unreachable_source_says_where_to_put_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path / "data"))
    file = DataFile("x.bin", "0" * 64, (tmp_path / "nowhere").as_uri(), "somewhere, commit 123")
    with pytest.raises(DataError) as info:
        fetch(file)
    message = str(info.value)
    assert "x.bin is not in the data directory" in message and "downloading it failed" in message
    assert "somewhere, commit 123" in message and "SVIBENCH_DATA_DIR" in message


def test_a_corrupt_download_never_lands_at_its_final_path_and_leaves_nothing_behind(tmp_path, monkeypatch):
    """The checksum is checked before the rename: a later fetch must not find bad bytes in place."""
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path / "data"))
    file = _file(tmp_path)
    (tmp_path / "upstream" / "f.txt").write_bytes(b"hello svibench, tampered upstream\n")
    with pytest.raises(DataError) as info:
        fetch(file)
    assert "nothing was saved" in str(info.value) and "\n" not in str(info.value)
    folder = tmp_path / "data" / "sub"
    assert not (folder / "f.txt").exists()
    assert list(folder.iterdir()) == []  # no temporary file either


def test_a_failed_download_leaves_no_temporary_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path / "data"))
    file = DataFile("sub/x.bin", "0" * 64, (tmp_path / "nowhere").as_uri(), "somewhere, commit 123")
    with pytest.raises(DataError, match="downloading it failed"):
        fetch(file)
    assert list((tmp_path / "data" / "sub").iterdir()) == []


def test_datasets_reject_nan_and_are_read_only():
    with pytest.raises(DataError, match="NaN/inf"):
        Dataset("d", "density", {"X": np.array([1.0, np.nan])})
    ds = Dataset("d", "density", {"X": np.ones(3)})
    with pytest.raises(ValueError):
        ds.train["X"][0] = 2.0
