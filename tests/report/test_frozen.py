"""Claims frozen with the results (issue 28, item 6): the manifest keeps every claim as run, and a report of a claim
edited since says "amended after the runs", with both versions."""
from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path
from html import unescape

import pytest

from svibench.cli import main
from svibench.executors import run_local
from svibench.report import write_report
from svibench.report.frozen import AMENDED, UNKNOWN, amendments, claim_digest, claim_tables, frozen_claims
from svibench.study import parse_study
from svibench.sweep import run_study

CLAIM = """
[[claim]]
id = "vmp-ties-itself"
source = "Fig. 1"
kind = "order"
metric = "elbo"
better = ["VMP"]
worse = ["VMP"]
note = "A claim that holds by construction."
"""
STUDY = (Path(__file__).parents[1] / "studies" / "one-vmp-run.toml").read_text() + CLAIM
EDITED = STUDY.replace('note = "A claim', 'margin = 1.0\nnote = "An edited claim')


def test_the_digest_is_of_the_canonical_table_so_key_order_does_not_matter_but_any_value_does():
    table = {"id": "c", "kind": "order", "margin": 1.0}
    assert claim_digest(table) == claim_digest({"margin": 1.0, "kind": "order", "id": "c"})
    assert claim_digest(table) != claim_digest(table | {"margin": 2.0})
    assert len(claim_digest(table)) == 64


def test_amendments_say_edited_new_and_unknown():
    raw = tomllib.loads(STUDY)
    manifest = {"claims": frozen_claims(raw)}
    assert amendments(manifest, claim_tables(raw)) == {}
    edited = claim_tables(tomllib.loads(EDITED))
    assert amendments(manifest, edited) == {"vmp-ties-itself": (raw["claim"][0], edited[0])}
    added = dict(raw["claim"][0], id="new")
    assert amendments(manifest, [added]) == {"new": (None, added)}
    assert amendments({}, edited) is None  # results of an older svibench: unknown, not "unchanged"


def test_claim_tables_take_claims_and_targets_with_an_id():
    raw = {"claim": [{"id": "a"}, {"source": "no id"}], "target": [{"id": "t"}]}
    assert [t["id"] for t in claim_tables(raw)] == ["a", "t"]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("frozen")
    run_study(parse_study(tomllib.loads(STUDY), source=str(root / "study.toml"), text=STUDY), root / "results",
              run_local, progress=False)
    return root / "results"


def test_the_manifest_stores_every_claim_with_its_digest(results):
    claims = json.loads((results / "manifest.json").read_text())["claims"]
    table = tomllib.loads(STUDY)["claim"][0]
    assert claims == {"vmp-ties-itself": {"sha256": claim_digest(table), "table": table}}


def _report(results: Path, out: Path, study: str | None = None) -> tuple[str, dict]:
    """The report's HTML and its claims ledger (with ``study`` as the ``--study`` file, when given)."""
    path = None
    if study is not None:
        path = out.parent / f"{out.name}.toml"
        path.write_text(study)
    write_report(results, out, study=path)
    return (out / "index.html").read_text(), json.loads((out / "claims.json").read_text())


def test_a_claim_edited_after_the_runs_reports_as_amended_with_both_versions(results, tmp_path):
    html, ledger = _report(results, tmp_path / "same", STUDY)
    assert AMENDED not in html and ledger["claims"][0]["amended"] is False
    html, ledger = _report(results, tmp_path / "edited", EDITED)
    assert ledger["claims"][0]["amended"] is True
    first_screen = html.split('id="figures"')[0]
    assert f"<td>{AMENDED}; " in first_screen
    claims = html.split('id="claims"')[1]
    assert f"vmp-ties-itself (paper claim) — too few units ({AMENDED})" in claims
    assert "At run time: margin absent; note = \"A claim that holds by construction.\"" in unescape(claims)
    assert "Now: margin = 1.0; note = \"An edited claim that holds by construction.\"" in unescape(claims)


def test_a_claim_added_after_the_runs_is_amended_and_says_it_is_new(results, tmp_path):
    html, ledger = _report(results, tmp_path / "added", EDITED.replace("vmp-ties-itself", "added-later"))
    assert ledger["claims"][0]["amended"] is True
    assert "this claim was added after them" in html


def test_results_without_frozen_claims_say_amendment_is_unknown(results, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(results, old)
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["claims"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    html, ledger = _report(old, tmp_path / "out", EDITED)
    assert ledger["claims"][0]["amended"] is None and UNKNOWN in html and AMENDED + ";" not in html


def test_resuming_keeps_the_claims_the_kept_runs_were_made_for(results, tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(results, copy)
    study = parse_study(tomllib.loads(EDITED), source=str(tmp_path / "study.toml"), text=EDITED)
    result = run_study(study, copy, run_local, progress=False)
    assert result.reused and not result.executed
    _, ledger = _report(copy, tmp_path / "out")  # the saved study is now the edited one
    assert ledger["claims"][0]["amended"] is True
    run_study(study, copy, run_local, resume=False, progress=False)  # every run made again: the claims are its own
    _, ledger = _report(copy, tmp_path / "rerun")
    assert ledger["claims"][0]["amended"] is False


def test_svibench_report_with_a_study_file_shows_the_amendment(results, tmp_path):
    study = tmp_path / "edited.toml"
    study.write_text(EDITED)
    assert main(["report", str(results), "-o", str(tmp_path / "out"), "--study", str(study)]) == 0
    assert json.loads((tmp_path / "out" / "claims.json").read_text())["claims"][0]["amended"] is True


def test_regenerate_runs_afresh_so_its_claims_are_never_amended(tmp_path, committed_study):
    from svibench.regenerate import regenerate

    study, git = committed_study(STUDY)
    regenerate(tmp_path / "reports", log=lambda *_: None)
    ledger = json.loads((study.parent / "claims.json").read_text())
    assert ledger["claims"][0]["amended"] is False
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "reports"], check=True)
    study.write_text(EDITED)
    subprocess.run(git + ["commit", "-qam", "claim edited"], check=True)
    regenerate(tmp_path / "reports", log=lambda *_: None)  # the first version's results are removed, not resumed
    ledger = json.loads((study.parent / "claims.json").read_text())
    assert ledger["claims"][0]["amended"] is False and AMENDED not in (study.parent / "index.html").read_text()


def test_a_target_on_a_peer_whose_library_is_missing_reports_why_it_was_not_run(tmp_path, monkeypatch):
    """A default install skips scikit-learn's BGMM: the study still runs, and the report's verdict on the target that
    names it gives the skip's reason (from the manifest) rather than only "no ok run"."""
    import svibench.peers

    monkeypatch.setattr(svibench.peers, "missing_libraries", lambda modules: list(modules))
    text = (Path(__file__).parents[1] / "studies" / "one-vmp-run.toml").read_text() + """
[[algorithm]]
name = "sklearn-bgmm"

[[target]]
id = "vmp-matches-bgmm"
source = "a test"
kind = "equivalent"
metric = "elbo"
methods = ["VMP", "scikit-learn BGMM"]
tolerance = 0.001
"""
    study = parse_study(tomllib.loads(text), source=str(tmp_path / "study.toml"), text=text)
    assert [s.method for s in study.skipped] == ["scikit-learn BGMM"]
    run_study(study, tmp_path / "results", run_local, progress=False)
    write_report(tmp_path / "results", tmp_path / "out")
    verdict = json.loads((tmp_path / "out" / "claims.json").read_text())["claims"][0]
    assert verdict["verdict"] == "not run"
    assert verdict["summary"] == "not run: scikit-learn BGMM was skipped: needs sklearn: pip install 'svibench[peers]'"
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "peers whose library is not installed" in summary and "by design." not in summary
