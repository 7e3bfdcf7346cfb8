"""The claims ledger at study load, the index, regeneration, the performance profile and the unconverged marker
(issue 22; the verdict and ranking rules themselves are in test_verdicts.py).

Every expected number here is computed by hand from the synthetic results built
in this file, not by the code under test.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from svibench.metrics import Metric, metric_table, table_json
from svibench.claims.convergence import unconverged
from svibench.report.compare import performance_profile, profile_ratios
from svibench.report.index import write_index
from svibench.report.tables import paper_comparison
from svibench.study import StudyError, parse_study


def results(runs: list[dict], direction: str = "higher") -> xr.Dataset:
    """A results Dataset (run × checkpoint) from dicts: problem, base (its problem base), label, seed, values
    (of ``score``, a task metric better ``direction``), status."""
    n = max(len(r["values"]) for r in runs)
    pad = lambda v: np.concatenate([np.asarray(v, float), np.full(n - len(v), np.nan)])
    data = {
        "iteration": (("run", "checkpoint"), np.array([pad(np.arange(len(r["values"]))) for r in runs])),
        "epoch": (("run", "checkpoint"), np.array([pad(np.arange(len(r["values"]))) for r in runs])),
        "time": (("run", "checkpoint"), np.array([pad(r.get("time", np.arange(len(r["values"])) + 1.0)) for r in runs])),
        "score": (("run", "checkpoint"), np.array([pad(r["values"]) for r in runs])),
    }
    coords = {key: ("run", [r.get(key, default) for r in runs]) for key, default in
              [("problem", "p"), ("label", "A"), ("seed", 0), ("status", "ok"), ("algorithm", "a"), ("message", "")]}
    coords["run_id"] = ("run", [f"r{i}" for i in range(len(runs))])
    coords["problem_base"] = ("run", [r.get("base", r.get("problem", "p")) for r in runs])
    coords["method"] = ("run", [r.get("label", "A") for r in runs])
    coords["metric_info"] = ("run", [table_json(metric_table(Metric("score", direction, "task")))] * len(runs))
    return xr.Dataset(data, coords=coords)


def test_performance_profile_matches_a_hand_computed_case():
    reach = pd.DataFrame([
        ("p", 0, "A", 1.0), ("p", 0, "B", 2.0), ("p", 0, "C", np.nan),   # ratios 1, 2, inf
        ("q", 0, "A", 4.0), ("q", 0, "B", 2.0), ("q", 0, "C", 3.0),      # ratios 2, 1, 1.5
        ("r", 0, "A", np.nan), ("r", 0, "B", np.nan), ("r", 0, "C", np.nan),  # unsolved: counts against all
    ], columns=["problem", "seed", "label", "time"])
    profile = performance_profile(profile_ratios(reach), (1.0, 1.5, 2.0, 4.0))
    expected = {"A": [1 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3], "B": [1 / 3, 1 / 3, 2 / 3, 2 / 3, 2 / 3],
                "C": [0.0, 1 / 3, 1 / 3, 1 / 3, 1 / 3]}
    for label, values in expected.items():
        assert profile.loc[label].tolist() == pytest.approx(values)


def test_unconverged_marker_flags_a_run_still_moving_at_the_end():
    flat = [10.0] * 9 + [1.0, 1.0]          # settled: the last 10% of checkpoints do not move
    moving = [20.0 - k for k in range(11)]  # still falling by 1 per checkpoint: 1/10 of its final value
    ds = results([{"label": "A", "values": flat}, {"label": "B", "values": moving}])
    assert unconverged(ds, "score", 1e-3).tolist() == [False, True]
    assert unconverged(ds, "score", 0.2).tolist() == [False, False]  # the study may loosen the tolerance
    paper = [{"problem": "p", "algorithm": "B", "metric": "score", "value": 9.0}]
    table = paper_comparison(ds, paper, tolerance=1e-3)
    assert "† 1/1" in table.rows[0][4] and "unconverged" in table.note and table.data["unconverged"].tolist() == [1]
    settled = paper_comparison(ds, [dict(paper[0], algorithm="A")], tolerance=1e-3)
    assert "†" not in settled.rows[0][4] and "unconverged" not in settled.note


STUDY = (Path(__file__).parents[1] / "studies" / "one-vmp-run.toml").read_text() + """
[[paper]]
problem = "gmm/gmm-synthetic"
algorithm = "VMP"
metric = "elbo"
value = -1.0
"""


def load(extra: str):
    return parse_study(tomllib.loads(STUDY + textwrap.dedent(extra)), source="study.toml")


def test_a_study_with_claims_and_references_loads():
    study = load("""
        [[claim]]
        id = "o"
        source = "Fig. 1"
        kind = "order"
        metric = "elbo"
        better = ["VMP"]
        worse = ["VMP"]
        note = "why"
        [[reference]]
        problem = "gmm/gmm-synthetic"
        metric = "elbo"
        value = -0.5
        how = "VMP run to convergence"
    """)
    assert [c.id for c in study.claims] == ["o"] and study.references[0].value == -0.5


@pytest.mark.parametrize("extra, match", [
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["SVI"]\nworse = ["VMP"]',
     r"\[\[claim\]\] 'o'.*the study runs no method or label 'SVI'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'problems = ["gmm/other"]', r"problems: no problem of the study is 'gmm/other'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "psnr"\nbetter = ["VMP"]\nworse = ["VMP"]',
     r"metric: no model of the study reports 'psnr'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "guess"', r"kind: unknown claim kind 'guess'; use one of order, faster"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\nmargin = -0.01',
     r"margin: -0.01 is negative; a tie or a loss must never pass as a win"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "faster"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'target = { relative = 0.01 }\nfinal = "equivalent"', r"an equivalence gives one of tolerance"),
    ('[[claim]]\nid = "v"\nsource = "s"\nkind = "value"\ncomparable_why = "ours"', r"a value claim needs 'comparable'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'note = "{final[SVI].elbo}"', r"note: .*no run of the study has the label 'SVI'"),
    ('[[target]]\nid = "t"\nkind = "value"\ncomparable = true\ncomparable_why = "ours"',
     r"a value claim needs \[\[paper\]\] rows with claim = 't'"),
    ('[[claim]]\nid = "v"\nsource = "s"\nkind = "value"\ncomparable = false\ncomparable_why = "ours"',
     r"a value claim needs \[\[paper\]\] rows with claim = 'v'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\nmargn = 1',
     r"unknown key 'margn'"),
    ('[[reference]]\nproblem = "gmm/gmm-synthetic"\nmetric = "elbo"\nvalue = 1.0', r"\[\[reference\]\] #1: expected exactly"),
    ('[[claim]]\nid = "f"\nsource = "s"\nkind = "as-fast"\nmetric = "elbo"\nmethods = ["VMP", "SVI"]',
     r"\(f\): a as-fast claim needs 'ratio'"),
    ('[[claim]]\nid = "f"\nsource = "s"\nkind = "as-fast"\nmetric = "elbo"\nmethods = ["VMP", "SVI"]\nratio = 1.0',
     r"an as-fast claim needs ratio > 1 \(the factor its times may differ by, got 1.0\)"),
    ('[[claim]]\nid = "f"\nsource = "s"\nkind = "as-fast"\nmetric = "elbo"\nmethods = ["VMP", "VMP"]\nratio = 2',
     r"and two or more distinct methods \(got \['VMP', 'VMP'\]\)"),
    ('[[claim]]\nid = "f"\nsource = "s"\nkind = "as-fast"\nmetric = "elbo"\nmethods = ["VMP", "SVI"]\nratio = 2\n'
     'axis = "final"', r"axis: expected one of time, epoch, got 'final'"),
    ('[[claim]]\nid = "f"\nsource = "s"\nkind = "as-fast"\nmetric = "elbo"\nmethods = ["VMP", "SVI"]\nratio = 2\n'
     'tolerance = 0.1', r"unknown key 'tolerance' for a as-fast claim"),
    ('[[claim]]\nid = "f"\nsource = "s"\nkind = "as-fast"\nmetric = "elbo"\nmethods = ["VMP", "SVI"]\nratio = 2',
     r"the study runs no method or label 'SVI'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'variants = { VMP = ["VMP (damped)"] }\nvariants_why = "the paper\'s"', r"variants.VMP: 'VMP \(damped\)' is not a run label"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'comparable = { "gmm/other" = true }\ncomparable_why = "ours"', r"comparable: no problem of the study is 'gmm/other'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'comparable = false', r"say in comparable_why why"),
    ('[[claim]]\nid = "f"\nsource = "s"\nkind = "faster"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'target = { value = 0.0 }\n[[reference]]\nproblem = "gmm/gmm-synthetic"\nmetric = "elbo"\nvalue = -0.5\n'
     'how = "VMP run to convergence"', r"target: elbo = 0 is beyond the optimum -0.5 on gmm/gmm-synthetic"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'note = "VMP ends at 33.40"', r"'o' note: untagged number '33\.40'"),
    ('[report]\nsplit_panel = true', r"\[report\]: unknown key 'split_panel'"),
    ('[report]\nsuboptimality = ["psnr"]', r"\[report\] suboptimality: no model of the study reports 'psnr'"),
])
def test_bad_claims_and_references_are_refused_at_load_in_one_line(extra, match):
    with pytest.raises(StudyError, match=match) as err:
        load(extra)
    assert "\n" not in str(err.value)


def test_a_paper_row_linked_to_an_unknown_claim_is_refused():
    raw = tomllib.loads(STUDY.replace('value = -1.0', 'value = -1.0\nclaim = "nope"'))
    with pytest.raises(StudyError, match=r"\[\[paper\]\] #1 claim: no \[\[claim\]\] has the id 'nope'"):
        parse_study(raw, source="study.toml")


def test_study_load_warns_when_a_plotted_metric_gets_fewer_than_ten_checkpoints():
    with pytest.warns(UserWarning, match="checkpoints = 3"):
        parse_study(tomllib.loads(STUDY.replace("checkpoints = 10", "checkpoints = 3")), source="study.toml")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_study(tomllib.loads(STUDY), source="study.toml")


def test_the_index_lists_every_study_with_its_claims_and_verdicts(tmp_path):
    for name, claims in (("built", [{"id": "c1", "source": "Fig. 1", "verdict": "partly", "evidence": ["p: gap +1"]},
                                    {"id": "t1", "source": "", "ledger": "target", "verdict": "reproduced",
                                     "evidence": []}]),
                         ("fresh", None)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "study.toml").write_text(f'[study]\nname = "{name}"\ndescription = "about {name}"\n'
                                           '[[claim]]\nid = "c2"\nsource = "Table 2"\n')
        if claims is not None:
            (folder / "claims.json").write_text(json.dumps({"study": name, "git_commit": "abc", "claims": claims}))
            (folder / "index.html").write_text("")
    html, md = write_index(tmp_path)
    text = md.read_text()
    assert "[built](built/summary.md)" in text and "| c1 (paper claim) | Fig. 1 | **partly** | p: gap +1 |" in text
    assert "## fresh" in text and "| c2 (paper claim) | Table 2 | **not run** |" in text and "about fresh" in text
    assert 'href="built/index.html"' in html.read_text()
    assert ("Paper claims: 2 distinct; at the default scale (2): 1 not run, 1 partly. Project targets (not counted as "
            "claims): 1 distinct; at the default scale (1): 1 reproduced.") in html.read_text()


def test_the_tally_counts_a_claim_judged_at_two_scales_once_with_both_verdicts(tmp_path):
    folder = tmp_path / "s"
    (folder / "paper").mkdir(parents=True)
    (folder / "study.toml").write_text('[study]\nname = "s"\n[[claim]]\nid = "c"\nsource = "Khan & Lin (2017), §7"\n')
    claims = [{"id": "c", "source": "Khan & Lin (2017), §7", "verdict": "mixed", "evidence": []}]
    (folder / "claims.json").write_text(json.dumps({"study": "s", "git_commit": "abc", "scale": "default", "claims": claims}))
    paper = [dict(claims[0], verdict="reproduced")]
    (folder / "paper" / "claims.json").write_text(json.dumps({"study": "s", "git_commit": "abc", "scale": "paper",
                                                              "claims": paper}))
    _, md = write_index(tmp_path)
    text = md.read_text()
    assert "Paper claims: 1 distinct; at the default scale (1): 1 mixed; at the paper scale (1): 1 reproduced." in text
    assert "| Khan & Lin (2017) | s | c | mixed | reproduced |" in text
    assert "- **too few units**:" in text  # every verdict word is defined


def test_the_tally_counts_a_claim_judged_on_two_readings_once_with_both_verdicts(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "study.toml").write_text('[study]\nname = "s"\n')
    claims = [{"id": "c", "source": "Shah et al. (2015), §5.2", "verdict": "mixed", "evidence": []},
              {"id": "c [psnr_fit]", "source": "Shah et al. (2015), §5.2", "verdict": "not reproduced", "evidence": []}]
    (folder / "claims.json").write_text(json.dumps({"study": "s", "git_commit": "abc", "scale": "default", "claims": claims}))
    html, md = write_index(tmp_path)
    text = md.read_text()
    assert "Paper claims: 1 distinct; at the default scale (1): 1 mixed." in text
    assert "| Shah et al. (2015) | s | c | mixed; psnr_fit: not reproduced |" in text
    assert '<td class="v-mixed">mixed; psnr_fit: not reproduced</td>' in html.read_text()


@pytest.mark.slow
def test_regenerate_at_a_scale_writes_its_own_report_folder_on_dask_and_the_index_lists_both(tmp_path, committed_study):
    from svibench.regenerate import regenerate

    study, _ = committed_study(STUDY + "\n[scales.paper]\nseeds = [3]\n")
    (done,) = regenerate(tmp_path / "reports", scale="paper", workers=1, executor="dask", log=lambda *_: None)
    assert set(done.statuses.values()) == {"ok"}
    paper = study.parent / "paper"
    assert (paper / "index.html").exists() and not (study.parent / "index.html").exists()
    assert json.loads((paper / "claims.json").read_text())["scale"] == "paper"
    manifest = json.loads((paper / "results-regenerate" / "manifest.json").read_text())
    assert manifest["executor"] == "dask"
    index = (tmp_path / "reports" / "README.md").read_text()
    assert "## one-vmp-run\n" in index and "## [one-vmp-run (paper scale)](s/paper/summary.md)" in index


def test_regenerate_on_dask_without_dask_stops_before_clearing_any_results(tmp_path, committed_study, monkeypatch):
    from svibench.executors import ExecutorError
    from svibench.regenerate import RESULTS_DIR, regenerate

    study, _ = committed_study(STUDY)
    kept = study.parent / RESULTS_DIR / "kept.txt"
    kept.parent.mkdir()
    kept.write_text("an earlier regeneration's results")
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` raises ImportError
    with pytest.raises(ExecutorError, match=r"needs dask.distributed: pip install 'svibench\[dask\]'"):
        regenerate(tmp_path / "reports", executor="dask", allow_dirty=True, log=lambda *_: None)
    assert kept.exists()


def test_regenerate_runs_then_writes_reports_and_index_and_refuses_a_dirty_tree(tmp_path, committed_study):
    from svibench.regenerate import regenerate

    study, git = committed_study(STUDY)
    (done,) = regenerate(tmp_path / "reports", log=lambda *_: None)
    assert done.study == "one-vmp-run" and done.runs == 1 and set(done.statuses.values()) == {"ok"}
    for name in ("index.html", "summary.md", "claims.json"):
        assert (study.parent / name).exists(), name
    assert (tmp_path / "reports" / "index.html").exists() and (tmp_path / "reports" / "README.md").exists()
    with pytest.raises(StudyError, match="no study 'other'"):
        subprocess.run(git + ["add", "."], check=True)
        subprocess.run(git + ["commit", "-qm", "reports"], check=True)
        regenerate(tmp_path / "reports", ["other"])
    study.write_text(STUDY + "\n# changed\n")
    with pytest.raises(StudyError, match=r"uncommitted changes \(reports/s/study.toml\).*commit or stash"):
        regenerate(tmp_path / "reports")


def test_an_as_fast_claim_loads_with_a_target_and_is_refused_without_one():
    extra = """
        [[algorithm]]
        name = "svi"
        params = { batch_size = 10 }
        [[claim]]
        id = "f"
        source = "s"
        kind = "as-fast"
        metric = "elbo"
        methods = ["VMP", "SVI"]
        ratio = 2
    """
    with pytest.raises(StudyError, match=r"\[\[claim\]\] 'f': an as-fast claim needs a target: give target = "):
        load(extra)
    (c,) = load(extra + '[report]\ntarget = { metric = "elbo", relative = 0.01 }\n').claims
    assert (c.kind, c.methods, c.ratio, c.axis, c.target) == ("as-fast", ("VMP", "SVI"), 2.0, "time", None)
