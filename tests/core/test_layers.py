"""The package's layers (pyproject.toml's import-linter contract): each imports only the layers below it, so the
report imports the claims, never the other way round, and the study file needs no report."""
from __future__ import annotations

from pathlib import Path

from importlinter.cli import lint_imports

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_import_layers_contract_is_kept():
    assert lint_imports(config_filename=str(PYPROJECT), no_cache=True) == 0
