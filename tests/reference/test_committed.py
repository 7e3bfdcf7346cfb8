"""Every committed reference is one that a committed study's problem finds, and it is fresh for that problem: a
reference that no study can use (a renamed identity, a changed default) is caught here, not by a regeneration."""
from __future__ import annotations

from pathlib import Path

import pytest

from svibench.data import DataError
from svibench.problem import build_model
from svibench.reference.artifact import check_fresh, load_reference, reference_dir, reference_path
from svibench.registry import get_registry
from svibench.study import load_study

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted((ROOT / "reports").glob("*/study.toml"))


def _problems_by_sidecar() -> dict[Path, list]:
    found: dict[Path, list] = {}
    for path in STUDIES:
        problems = {run.problem.key(): run.problem for run in load_study(path).runs}
        for problem in problems.values():
            found.setdefault(reference_path(problem), []).append(problem)
    return found


SIDECARS = sorted(reference_dir().glob("*.json"))


@pytest.mark.parametrize("sidecar", SIDECARS, ids=[p.stem for p in SIDECARS])
def test_a_committed_reference_is_found_and_fresh_for_a_committed_study(sidecar):
    problems = _problems_by_sidecar().get(sidecar)
    if problems is None:
        pytest.skip(f"{sidecar.name}: no committed study's default scale uses it (tests or other scales may)")
    reference = load_reference(sidecar)
    for problem in problems:
        try:
            model = build_model(problem, cache=False)
        except DataError as err:
            pytest.skip(f"{problem.name}: data not here ({err})")
        check_fresh(reference, problem, get_registry().model(problem.model), model.data)
