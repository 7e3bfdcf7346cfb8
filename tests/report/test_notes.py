"""Live numbers in claim notes (issue 28, item 7): placeholders filled from the results, and the rule that a
measured number is either one of them or tagged with where it came from.

Expected values are computed here from the results Dataset directly, not through the code under test.
"""
from __future__ import annotations

import json
import subprocess
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

from svibench.executors import run_local
from svibench.report import write_report
from svibench.claims.notes import check_text
from svibench.report.notes import NoteLookup, render_note
from svibench.settings import ReportError, ReportSettings
from svibench.results import open_results
from svibench.study import StudyError, load_study, parse_study
from svibench.sweep import run_study

NAMES = {"labels": ["CVI", "CVI-exact", "SVI (t0=64.0)"], "problems": ["logreg/a1a", "logreg/australian", "logreg/australian (split=0)"],
         "metrics": ["neg_elbo", "test_logloss_bits"]}


@pytest.mark.parametrize("text", [
    "w = 0.4, K = 100, δ = 0.002, tau0=1024, margin = -0.01, seconds = 40, seeds = [0, 1, 2]",   # settings
    "§5.1, Table 3, Fig. 1(b), eq. 15, Eq. (12), App. F, Algorithm 1, issue 29, #23",     # references
    "Khan & Lin (2017), Shah et al. (2015, §6), Bishop 2006",                           # years of citations
    "a1a, tau0, GH-50, usps-3v5, 128x128 crops, e8ffc74",                                # numbers inside words
    "CVI ends at {final[CVI].neg_elbo:.1f} nats ({sd[CVI@logreg/australian].neg_elbo} sd), {ttt[CVI-exact]}",
    "{runs[SVI (t0=64.0)].ok} runs; the [[paper]] rows; E[log beta]; literal {{braces}}; five seeds",
    "[at e8ffc74: 0.812 nats, 52.52 s, +0.012 and -63] [paper: 4.8× and 12%] [at 12676e4: E[x] 3 s [paper: 2 dB]]",
])
def test_settings_citations_placeholders_and_tagged_numbers_pass(text):
    check_text(text, **NAMES)


@pytest.mark.parametrize("text, number", [
    ("CVI ends 0.812 nats below Chol", "0.812"),
    ("Chol converges in 52.52 s", "52.52"),
    ("moved by +0.012 on split 4", "0.012"),
    ("BBVI moved by -63 on split 2", "63"),
    ("about 4.8× faster", "4.8"),
    ("a 3.5x speed-up", "3.5"),
    ("12% above the optimum", "12"),
    ("psnr_fit 31.2 dB on boat", "31.2"),
    ("ELBO −1.382e5 after iterations", "1.382e5"),
    ("CVI ends at 33.40 and Knowles at 32.31", "33.40"),                              # bare numbers
    ("a gap > 0.5 and a ratio = 2", "0.5"),                                           # after > (not a setting)
    ("= 3 with no name", "3"),
    ("52 seconds, 12 percent, 4-fold", "52"),                                         # units as words
    ("5 seeds", "5"),                                                                 # a count is a setting
    ("Tables 3 and 4", "4"),
    ("[paper: 2 dB] but ours 3 dB", "3"),
])
def test_every_other_number_fails_and_the_error_names_it(text, number):
    with pytest.raises(ReportError, match="untagged number") as err:
        check_text(text, **NAMES)
    assert repr(number) in str(err.value) and "\n" not in str(err.value)


def test_an_at_tag_must_name_a_commit_of_the_repository():
    known = {"e8ffc74"}
    check_text("[at e8ffc74: 3 s]", **NAMES, commit_exists=known.__contains__)
    with pytest.raises(ReportError, match=r"\[at abcdef1: …\]: no commit abcdef1 in the repository's history"):
        check_text("[at abcdef1: 3 s]", **NAMES, commit_exists=known.__contains__)


@pytest.mark.parametrize("text, match", [
    ("{fnal[CVI].neg_elbo}", r"unknown placeholder kind 'fnal' in \{fnal\[CVI\]\.neg_elbo\}; use one of final, sd"),
    ("{final[Chol].neg_elbo}", r"no run of the study has the label 'Chol'; labels: CVI, CVI-exact"),
    ("{final[SVI].neg_elbo}", r"no run of the study has the label 'SVI'"),  # a label is exact, grid point and all
    ("{final[CVI@logreg/a7a].neg_elbo}", r"no problem of the study is 'logreg/a7a'"),
    ("{final[CVI].elbo}", r"no model of the study reports 'elbo'"),
    ("{final[CVI]}", r"no model of the study reports None"),
    ("{ttt[CVI].neg_elbo}", r"ttt takes no field"),
    ("{runs[CVI]}", r"runs takes the field \.ok"),
    ("{runs[CVI].ok:.2f}", r"runs takes no format spec"),
    ("{final[CVI].neg_elbo:.2q}", r"'\.2q' is not a format spec"),
    ("{final CVI}", r"malformed placeholder '\{final CVI\}'"),
    ("a } alone", r"a '\}' without its '\{'"),
    ("{runs[CVI].ok}} ok", r"a '\}' without its '\{'"),
    ("[at xyz: 3 s]", r"malformed tag '\[at xyz: 3 s\]'"),
    ("[at e8ffc74: 3 s", r"unclosed tag"),
    ("[at e8ffc74: {final[CVI].neg_elbo}]", r"a placeholder inside the tag"),
])
def test_a_bad_placeholder_or_tag_is_a_one_line_error(text, match):
    with pytest.raises(ReportError, match=match) as err:
        check_text(text, **NAMES)
    assert "\n" not in str(err.value)


REPORTS = Path(__file__).resolve().parents[2] / "reports"
STUDY = (Path(__file__).parents[1] / "studies" / "one-vmp-run.toml").read_text().replace("seeds = [0]", "seeds = [0, 1]")


def claim(note: str) -> str:
    return textwrap.dedent(f'''
        [[claim]]
        id = "o"
        source = "Fig. 1"
        kind = "order"
        metric = "elbo"
        better = ["VMP"]
        worse = ["VMP"]
        note = """{note}"""
    ''')


@pytest.mark.parametrize("note, match", [
    ("VMP ends at {final[VMP].elbo_x}", r"\[\[claim\]\] 'o' note: \{final\[VMP\]\.elbo_x\}: no model of the study "
                                        r"reports 'elbo_x'"),
    ("VMP ends at {final[SVI].elbo}", r"\[\[claim\]\] 'o' note: .*no run of the study has the label 'SVI'"),
    ("VMP ends within 0.5 nats", r"\[\[claim\]\] 'o' note: untagged number '0\.5'"),
])
def test_study_load_refuses_a_bad_note_in_one_line_naming_the_claim(note, match):
    with pytest.raises(StudyError, match=match) as err:
        parse_study(tomllib.loads(STUDY + claim(note)), source="study.toml")
    assert "\n" not in str(err.value)


def test_every_free_text_field_is_checked_and_a_commit_must_exist(tmp_path):
    """source, comparable_why, variants_why and not_run, and a [[paper]] row's note, as well as a claim's note; an
    [at <commit>] of a study in a git work tree must name a commit of its history."""
    base = claim("fine").replace('source = "Fig. 1"', 'source = "Fig. 1, CVI ends at 33.40"')
    with pytest.raises(StudyError, match=r"\[\[claim\]\] 'o' source: untagged number '33\.40'"):
        parse_study(tomllib.loads(STUDY + base), source="study.toml")
    row = '\n[[paper]]\nproblem = "p"\nalgorithm = "VMP"\nmetric = "elbo"\nvalue = 1.0\nnote = "from 12 runs"\n'
    with pytest.raises(StudyError, match=r"\[\[paper\]\] #1 note: untagged number '12'"):
        parse_study(tomllib.loads(STUDY + claim("fine") + row), source="study.toml")
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    with pytest.raises(StudyError, match=r"no commit abcdef1 in the repository's history"):
        parse_study(tomllib.loads(STUDY + claim("[at abcdef1: 3 s]")), source=str(tmp_path / "study.toml"))
    parse_study(tomllib.loads(STUDY + claim("[at abcdef1: 3 s]")), source=str(tmp_path.parent / "elsewhere" / "s.toml"))


@pytest.mark.parametrize("path", sorted(REPORTS.glob("*/study.toml")), ids=lambda p: p.parent.name)
def test_every_committed_study_loads_with_its_notes_checked(path):
    load_study(path)  # a free-text field with an untagged number or a bad placeholder is a StudyError


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("notes")
    study = parse_study(tomllib.loads(STUDY), source=str(root / "study.toml"), text=STUDY)
    run_study(study, root / "results", run_local, progress=False)
    return root / "results"


def _last(ds, var: str) -> np.ndarray:
    """Each run's value of ``var`` at its last checkpoint."""
    values = ds[var].values
    return np.array([row[~np.isnan(row)][-1] for row in values])


def test_placeholders_are_filled_from_the_results(results):
    ds = open_results(results)
    elbo = _last(ds, "elbo")
    lookup = NoteLookup.of(ds, ReportSettings.parse({}))
    assert render_note("{final[VMP].elbo}", lookup) == format(elbo.mean(), ".4g")
    assert render_note("{final[VMP@gmm/gmm-synthetic].elbo:.3f}", lookup) == f"{elbo.mean():.3f}"
    assert render_note("{sd[VMP].heldout_loglik:.2e}", lookup) == f"{_last(ds, 'heldout_loglik').std(ddof=1):.2e}"
    assert render_note("{runs[VMP].ok} ok, {{literally}}", lookup) == "2/2 ok, {literally}"
    assert render_note("[at e8ffc74: 0.8 nats] vs [paper: 3 dB]", lookup) == "0.8 nats (measured at e8ffc74) vs paper: 3 dB"


def _reach_times(ds, threshold: float) -> list[float]:
    """Algorithm time at each run's first checkpoint with elbo >= threshold (NaN if none)."""
    times = []
    for r in range(ds.sizes["run"]):
        hit = np.flatnonzero(ds["elbo"].values[r] >= threshold)
        times.append(float(ds["time"].values[r, hit[0]]) if hit.size else np.nan)
    return times


def _expected(times: list[float]) -> str:
    """The rendering of ttt with spec .6g for these per-run times (NaN: not reached), computed by hand."""
    reached = [t for t in times if np.isfinite(t)]
    suffix = f" ({len(reached)}/{len(times)} reached)" if len(reached) < len(times) else ""
    return f"{np.median(reached):.6g} s{suffix}" if reached else "not reached"


def test_time_to_target_is_the_median_over_the_runs_that_reach_it_and_says_how_many_do(results):
    ds = open_results(results)
    finals = _last(ds, "elbo")
    best = finals.max()
    lookup = NoteLookup.of(ds, ReportSettings.parse({}))  # the default target: elbo within 0.1% of the best
    assert render_note("{ttt[VMP]:.6g}", lookup) == _expected(_reach_times(ds, best - 1e-3 * abs(best)))
    for value, reached in ((finals.min(), "both"), (finals.mean(), "one"), (1e9, "none")):
        lookup = NoteLookup.of(ds, ReportSettings.parse({"target": {"metric": "elbo", "value": float(value)}}))
        text = _expected(_reach_times(ds, value))
        assert render_note("{ttt[VMP@gmm/gmm-synthetic]:.6g}", lookup) == text
        assert {"both": "reached" not in text, "one": "(1/2 reached)" in text, "none": text == "not reached"}[reached]


def test_the_report_renders_a_claim_note_with_its_live_numbers(results, tmp_path):
    study = tmp_path / "study.toml"
    study.write_text(STUDY + claim("VMP ends at {final[VMP].elbo:.2f} [at e8ffc74: (was -61.3 nats)]."))
    write_report(results, tmp_path / "out", study=study)
    elbo = _last(open_results(results), "elbo").mean()
    html = (tmp_path / "out" / "index.html").read_text()
    assert f"VMP ends at {elbo:.2f} (was -61.3 nats) (measured at e8ffc74)." in html
    assert f"VMP ends at {elbo:.2f} (was -61.3 nats) (measured at e8ffc74)." in (tmp_path / "out" / "summary.md").read_text()
    assert json.loads((tmp_path / "out" / "claims.json").read_text())["claims"][0]["id"] == "o"
