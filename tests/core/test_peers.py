"""Peers (svibench.peers): registered through svibench's own entry points; a missing library is a skip."""
from __future__ import annotations

import os
from importlib.metadata import entry_points
from pathlib import Path

from svibench.cli import main
from svibench.peers import INSTALL
from svibench.registry import get_registry
from svibench.study import parse_study

ABSENT = str(Path(__file__).parents[1] / "plugins" / "absent_peer.py")
STUDY = {
    "study": {"name": "peers", "seeds": [0]},
    "budget": {"iterations": 5, "checkpoints": 5},
    "problem": [{"model": "gmm", "dataset": "gmm-synthetic", "dataset_params": {"n": 200, "n_test": 50}}],
    "algorithm": [{"name": "vmp"}, {"name": "test-absent-peer"}],
}


def test_a_peer_without_its_library_is_skipped_with_the_install_command_and_the_rest_runs(recwarn):
    study = parse_study(STUDY, plugins=(ABSENT,))
    assert [r.algorithm for r in study.runs] == ["vmp"]
    (skip,) = study.skipped
    assert skip.algorithm == "test-absent-peer" and skip.reason == f"needs svibench_no_such_library: {INSTALL}"


def test_list_shows_the_peer_and_why_it_is_skipped(capsys):
    assert main(["list", "--plugin", ABSENT]) == 0
    out = capsys.readouterr().out
    assert "test-absent-peer" in out and f"test-absent-peer on gmm: needs svibench_no_such_library: {INSTALL}" in out


def test_every_peer_is_an_entry_point_of_svibench_itself():
    """The peers ship with svibench and register as any plugin does, through the entry-point group."""
    shipped = {ep.name: ep.value for ep in entry_points(group="svibench.algorithms") if ep.dist and ep.dist.name == "svibench"}
    assert set(shipped) == {"numpyro-advi", "sklearn-lda", "sklearn-bgmm", "sklearn-gpc-laplace"}
    registry = get_registry()
    for name in shipped:
        assert registry.algorithm(name).source.startswith(f"entry point {name} = svibench.peers.")


def test_the_registry_loads_the_entry_points_of_the_distributions_it_is_told(monkeypatch):
    """The suite sets SVIBENCH_ENTRY_POINTS=svibench (tests/conftest.py): a third-party plugin installed beside
    svibench is not seen, and with the variable unset every installed one is."""
    from svibench.registry import ENTRY_POINTS_VAR, build_registry

    assert os.environ[ENTRY_POINTS_VAR] == "svibench"
    own = {name for name, e in build_registry().algorithms.items() if e.source.startswith("entry point")}
    monkeypatch.setenv(ENTRY_POINTS_VAR, "no-such-distribution")
    assert not any(e.source.startswith("entry point") for e in build_registry().algorithms.values())
    monkeypatch.delenv(ENTRY_POINTS_VAR)
    every = {name for name, e in build_registry().algorithms.items() if e.source.startswith("entry point")}
    assert own and own <= every
