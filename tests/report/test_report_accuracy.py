"""The report's posterior-accuracy section (issue 30): the closest q, its metrics and the ELBO-against-accuracy figure,
read from the runs' recorded accuracy metrics."""
from __future__ import annotations

import pytest

from svibench.executors import run_local
from svibench.problem import build_model
from svibench.reference.build import make_reference
from svibench.reference.sampling import SamplerSettings
from svibench.report import write_report
from svibench.spec import ProblemSpec
from svibench.study import parse_study
from svibench.sweep import run_study

LINREG = ProblemSpec("linreg/small", "linreg", "linreg-synthetic", {}, {"n": 200, "n_test": 50, "dim": 3})
STUDY = {
    "study": {"name": "accuracy", "seeds": [0, 1]},
    "budget": {"iterations": 40, "checkpoints": 10},
    "problem": [{"name": "linreg/small", "model": "linreg", "dataset": "linreg-synthetic",
                 "dataset_params": {"n": 200, "n_test": 50, "dim": 3}},
                {"name": "linreg/other", "model": "linreg", "dataset": "linreg-synthetic",
                 "dataset_params": {"n": 100, "n_test": 50, "dim": 3}}],
    "algorithm": [{"name": "vmp"}, {"name": "bbvi", "params": {"family": "meanfield", "n_samples": 5}}],
}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    root = tmp_path_factory.mktemp("accuracy")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SVIBENCH_REFERENCE_DIR", str(root / "references"))
        make_reference(LINREG, build_model(LINREG, cache=False), SamplerSettings())
        run_study(parse_study(STUDY), root / "results", run_local, progress=False)
    return write_report(root / "results", root / "report")


def _table(report, title):
    return next(t for t in report.tables if t.title == title)


def test_vmp_exact_on_linreg_is_the_closest_q_and_the_elbo_winner(report):
    closest = _table(report, "Closest to the reference, and the ELBO's winners").data
    assert closest.to_dict("records") == [{"problem": "linreg/small", "closest": ["VMP"], "best_elbo": ["VMP"],
                                           "agree": True}]


def test_ties_are_listed_never_broken():
    import pandas as pd

    from svibench.report.accuracy import _leaders

    values = pd.Series({"A": 0.010, "B": 0.012, "C": 0.5})
    assert _leaders(values, True, 0.05) == ["A", "B"] and _leaders(values, True, 0.001) == ["A"]
    assert _leaders(pd.Series({"A": -100.0, "B": -100.05, "C": -120.0}), False, 0.1) == ["A", "B"]


def test_the_elbo_tie_is_relative_to_the_best_elbo_not_to_the_worst():
    """A far-off method (scikit-learn's Laplace q on gpc ends near -5,300 against -109) must not widen the tie."""
    import pandas as pd

    from svibench.report.accuracy import best_elbo

    assert best_elbo(pd.Series({"A": -100.0, "B": -100.05, "C": -5000.0})) == ["A", "B"]
    assert best_elbo(pd.Series({"A": -100.0, "B": -100.5, "C": -5000.0})) == ["A"]


def test_the_accuracy_table_holds_the_runs_medians_and_only_problems_with_a_reference(report):
    data = _table(report, "Posterior accuracy against the reference").data
    assert set(data.index.get_level_values("problem")) == {"linreg/small"}  # linreg/other has no reference
    assert data.loc[("linreg/small", "VMP"), "ref_mean_error"] < 1e-8
    assert data.loc[("linreg/small", "BBVI"), "ref_mean_error"] > 1e-3
    assert data.loc[("linreg/small", "BBVI"), "ref_w2"] > data.loc[("linreg/small", "VMP"), "ref_w2"]


def test_the_report_draws_elbo_against_accuracy_and_says_it_in_both_renderings(report):
    assert (report.folder / "figures" / "elbo-vs-accuracy.png").stat().st_size > 1000
    for page in ("index.html", "summary.md"):  # the page embeds the figure, the Markdown links it
        text = (report.folder / page).read_text()
        assert "Posterior accuracy" in text and "ELBO against posterior accuracy" in text
    assert "figures/elbo-vs-accuracy.png" in (report.folder / "summary.md").read_text()


def test_the_report_names_each_problems_reference_or_the_command_that_makes_one(report):
    rows = {problem: (reference, share) for problem, reference, share in _table(report, "Reference posteriors").rows}
    assert "passed its diagnostics" in rows["linreg/small"][0]
    assert "svibench reference STUDY.toml --problem 'linreg/other'" in rows["linreg/other"][0]
    assert 0.0 < float(rows["linreg/small"][1].rstrip("%")) < 100.0  # scoring's share of the runs' wall time
    assert rows["linreg/other"][1] == "0.0%"  # nothing to score against


def test_a_report_without_accuracy_metrics_has_no_accuracy_section(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_REFERENCE_DIR", str(tmp_path / "none"))
    study = {**STUDY, "problem": STUDY["problem"][1:], "algorithm": STUDY["algorithm"][:1]}
    run_study(parse_study(study), tmp_path / "results", run_local, progress=False)
    built = write_report(tmp_path / "results", tmp_path / "report")
    assert "Posterior accuracy" not in (built.folder / "summary.md").read_text()


def test_without_an_elbo_the_closest_q_is_still_named_and_the_elbo_columns_say_so(report):
    """BPFA's sampled locals and its sampler record no ELBO: the accuracy section must still be written."""
    from svibench.report.accuracy import accuracy_figure, accuracy_table, closest_table
    from svibench.report.fmt import DASH
    from svibench.report.tables import ok_runs
    from svibench.results import metric_info, open_results

    ok = ok_runs(open_results(report.folder.parent / "results"))
    info = {m: i for m, i in metric_info(ok).items() if m != "elbo"}
    assert closest_table(ok, info).rows == [["linreg/small", "VMP", closest_table(ok, info).rows[0][2], DASH, DASH, DASH]]
    assert "elbo ↑" not in accuracy_table(ok, info).columns
    assert accuracy_figure(ok, info, {}) is None
