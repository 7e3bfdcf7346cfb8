"""The claims ledger, paired comparisons, the performance profile and the unconverged marker (issue 22).

Every expected number here is computed by hand from the synthetic results built
in this file, not by the code under test.
"""
from __future__ import annotations

import json
import subprocess
import textwrap
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from svibench.metrics import Metric, metric_table, table_json
from svibench.report.claims import evaluate_claims, parse_claims
from svibench.report.compare import performance_profile, profile_ratios, ranking, summary_line, unconverged
from svibench.report.index import write_index
from svibench.report.settings import ReportError, ReportSettings
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


def finals(rows: list[tuple]) -> pd.DataFrame:
    """Final values from (problem, label, value[, problem base])."""
    return pd.DataFrame([{"problem": p, "problem_base": (base or [p])[0], "label": lb, "score": v, "status": "ok"}
                         for p, lb, v, *base in rows])


ORDER = finals([("p1", "A", 10.0), ("p1", "B", 8.0), ("p2", "A", 5.0), ("p2", "B", 4.5)])


def order_claim(**kw) -> list:
    table = {"id": "c", "source": "paper", "kind": "order", "metric": "score", "better": ["A"], "worse": ["B"], **kw}
    return parse_claims([table], [])


@pytest.mark.parametrize("margin, comparable, verdict", [
    (0.0, True, "reproduced"),        # gaps 2.0 and 0.5
    (1.0, True, "partly"),            # holds on p1 only
    (3.0, True, "not reproduced"),
    (1.0, False, "not comparable"),
])
def test_order_claim_verdicts_from_the_gaps(margin, comparable, verdict):
    (v,) = evaluate_claims(order_claim(margin=margin, comparable=comparable), ORDER, [], lambda m: False)
    assert v.verdict == verdict
    assert list(v.data["gap"]) == [2.0, 0.5]


def test_order_claim_follows_the_metric_direction_and_says_not_run_without_runs():
    (v,) = evaluate_claims(order_claim(), ORDER, [], lambda m: True)  # lower is better: B beats A
    assert v.verdict == "not reproduced" and list(v.data["gap"]) == [-2.0, -0.5]
    (v,) = evaluate_claims(order_claim(worse=["C"]), ORDER, [], lambda m: False)
    assert v.verdict == "not run"


def test_value_claim_pools_grid_points_and_checks_the_tolerance():
    rows = finals([("p (split=0)", "A", 9.0, "p"), ("p (split=1)", "A", 11.5, "p"), ("q", "A", 20.0)])
    paper = [{"problem": "p", "algorithm": "A", "metric": "score", "value": 10.0, "claim": "v"},
             {"problem": "q", "algorithm": "A", "metric": "score", "value": 10.0, "claim": "v"}]
    claims = parse_claims([{"id": "v", "source": "T1", "kind": "value", "tolerance": 0.05}], paper)
    (v,) = evaluate_claims(claims, rows, paper, lambda m: False)
    assert list(v.data["mean"]) == [10.25, 20.0]  # the splits' mean; q is 100% off
    assert list(v.data["holds"]) == [True, False] and v.verdict == "partly"


def test_an_exact_label_is_not_pooled_with_labels_that_extend_it():
    rows = finals([("p", "T", 1.0), ("p", "T (printed) (init=prior)", 5.0), ("p", "M", 3.0)])
    (v,) = evaluate_claims(order_claim(better=["M"], worse=["T"]), rows, [], lambda m: False)
    assert list(v.data["gap"]) == [2.0]  # against T alone, not T's printed variant
    (v,) = evaluate_claims(order_claim(better=["M"], worse=["T (printed)"]), rows, [], lambda m: False)
    assert list(v.data["gap"]) == [-2.0]  # a base name selects its grid points


def test_ranking_pairs_runs_by_problem_and_seed():
    # two splits × two seeds; A wins 3 of 4 pairs, B one; A − B per pair: +1, +2, −1, +4 → median of B − A = −1.5
    a = [(0, 0, 5.0), (0, 1, 6.0), (1, 0, 2.0), (1, 1, 9.0)]
    b = [(0, 0, 4.0), (0, 1, 4.0), (1, 0, 3.0), (1, 1, 5.0)]
    runs = [{"problem": f"p (split={s})", "base": "p", "label": lb, "seed": seed, "values": [0.0, v]}
            for lb, rows in (("A", a), ("B", b)) for s, seed, v in rows]
    rank = ranking(results(runs), "score", ReportSettings.parse({})).set_index("label")
    assert rank.loc["A", "wins"] == 3 and rank.loc["B", "wins"] == 1 and set(rank["pool"]) == {"p"}
    assert rank.loc["B", "median_diff"] == -1.5 and rank.loc["A", "leader"] == "A"
    split = ranking(results(runs), "score", ReportSettings.parse({"split_panels": True}))
    assert set(split["pool"]) == {"p (split=0)", "p (split=1)"}


def test_the_first_screen_ranking_line_keeps_the_leaders_and_counts_the_rest():
    runs = [{"label": lb, "values": [v] * 11} for lb, v in zip("ABCDEF", (6.0, 5.0, 4.0, 3.0, 2.0, 1.0))]
    rank = ranking(results(runs), "score", ReportSettings.parse({}))
    assert summary_line(rank, top=2) == "A 1/1 › B 0/1 (Δ -1) › … 4 more"
    assert summary_line(rank).count("›") == 5 and summary_line(rank, top=6) == summary_line(rank)


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


STUDY = (Path(__file__).parent / "studies" / "one-vmp-run.toml").read_text() + """
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
     r"\[\[claim\]\] 'o'.*no algorithm label of the study is 'SVI'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\n'
     'problems = ["gmm/other"]', r"problems: no problem of the study is 'gmm/other'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "psnr"\nbetter = ["VMP"]\nworse = ["VMP"]',
     r"metric: no model of the study reports 'psnr'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "guess"', r"kind: expected one of value, order"),
    ('[[claim]]\nid = "v"\nsource = "s"\nkind = "value"', r"a value claim needs \[\[paper\]\] rows with claim = 'v'"),
    ('[[claim]]\nid = "o"\nsource = "s"\nkind = "order"\nmetric = "elbo"\nbetter = ["VMP"]\nworse = ["VMP"]\nmargn = 1',
     r"unknown key 'margn'"),
    ('[[reference]]\nproblem = "gmm/gmm-synthetic"\nmetric = "elbo"\nvalue = 1.0', r"\[\[reference\]\] #1: expected exactly"),
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
    for name, claims in (("built", [{"id": "c1", "source": "Fig. 1", "verdict": "partly", "evidence": ["p: gap +1"]}]),
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
    assert "[built](built/summary.md)" in text and "| c1 | Fig. 1 | **partly** | p: gap +1 |" in text
    assert "## fresh" in text and "| c2 | Table 2 | **not run** |" in text and "about fresh" in text
    assert 'href="built/index.html"' in html.read_text() and "1 partly" in html.read_text()


def test_regenerate_runs_then_writes_reports_and_index_and_refuses_a_dirty_tree(tmp_path):
    from svibench.regenerate import regenerate

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    study = tmp_path / "reports" / "s" / "study.toml"
    study.parent.mkdir(parents=True)
    study.write_text(STUDY)
    (tmp_path / ".gitignore").write_text("reports/*/results*/\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-qm", "s"], check=True)
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
