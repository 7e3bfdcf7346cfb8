from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parent.parent / "shared" / "data"

# Real data for tests: CI sets SVIBENCH_DATA_DIR=../shared/data; default to it when present.
if "SVIBENCH_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
    os.environ["SVIBENCH_DATA_DIR"] = str(SHARED_DATA)
# Only svibench's own entry points (its peers): no test depends on which third-party plugins are installed (CI
# installs one first to make sure).  A test of plugin discovery sets its own.
os.environ["SVIBENCH_ENTRY_POINTS"] = "svibench"
# The command line's cache of `list` and `describe` (svibench.catalogue) in a folder of the test session's own.
os.environ["SVIBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="svibench-cli-cache-")
# Parallel test runs must not oversubscribe the 2 cores.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")


#: Test folders by layer; everything under integration/ (sweeps, the CLI end to end, Dask, asv) is marked slow.
SLOW_FOLDERS = ("integration",)


def pytest_collection_modifyitems(config, items):
    """Mark the slow layer: ``pytest -m 'not slow'`` skips it locally; CI runs everything."""
    for item in items:
        if any(folder in Path(str(item.path)).relative_to(HERE).parts[:1] for folder in SLOW_FOLDERS):
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def faulty_plugin() -> str:
    """Path of the plugin file with deliberately failing/diverging/slow test algorithms."""
    return str(HERE / "plugins" / "faulty.py")


@pytest.fixture
def picky_plugin() -> str:
    """Path of the plugin file whose algorithm rejects its default hyperparameters and fails if
    ``init`` runs before ``check_params``."""
    return str(HERE / "plugins" / "picky.py")


@pytest.fixture
def committed_study(tmp_path):
    """A factory: ``committed_study(text)`` writes ``reports/s/study.toml`` in a fresh git repository at ``tmp_path``
    (results ignored), commits it, and returns (the study file, the git command prefix for that repository)."""
    import subprocess

    def make(text: str) -> tuple[Path, list[str]]:
        subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
        study = tmp_path / "reports" / "s" / "study.toml"
        study.parent.mkdir(parents=True)
        study.write_text(text)
        (tmp_path / ".gitignore").write_text("reports/*/results*/\n")
        git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(git + ["add", "."], check=True)
        subprocess.run(git + ["commit", "-qm", "s"], check=True)
        return study, git
    return make
