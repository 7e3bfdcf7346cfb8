from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SHARED_DATA = HERE.parent.parent / "shared" / "data"

# Real data for tests: CI sets SVIBENCH_DATA_DIR=../shared/data; default to it when present.
if "SVIBENCH_DATA_DIR" not in os.environ and SHARED_DATA.is_dir():
    os.environ["SVIBENCH_DATA_DIR"] = str(SHARED_DATA)
# Parallel test runs must not oversubscribe the 2 cores.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")


@pytest.fixture
def faulty_plugin() -> str:
    """Path of the plugin file with deliberately failing/diverging/slow test algorithms."""
    return str(HERE / "plugins" / "faulty.py")


@pytest.fixture
def picky_plugin() -> str:
    """Path of the plugin file whose algorithm rejects its default hyperparameters and fails if
    ``init`` runs before ``check_params``."""
    return str(HERE / "plugins" / "picky.py")
