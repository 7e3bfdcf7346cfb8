"""Reports read saved results and show every problem, algorithm and metric with the right numbers."""
from __future__ import annotations

import base64
import json
import re
import textwrap
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from svibench.cli import main
from svibench.report import ReportError, ReportSettings, write_report
from svibench.peers import INSTALL
from svibench.report.fmt import mean_sd
from svibench.report.tables import skipped_pairs
from svibench.results import open_results
from svibench.executors import run_local
from svibench.study import parse_study
from svibench.sweep import run_study

PLUGIN = '''
from svibench.algorithm import Diverged
from svibench.algorithms.svi import VMP


class FailingVMP(VMP):
    """VMP that raises at its third step."""
    name = "test-report-failing"
    label = "Failing"
    presets = {}

    def step(self):
        if self.t_ == 2:
            raise RuntimeError("deliberate failure for the report test")
        return super().step()


class DivergingVMP(VMP):
    """VMP that reports divergence at its fourth step."""
    name = "test-report-diverging"
    label = "Diverging"
    presets = {}

    def step(self):
        if self.t_ == 3:
            raise Diverged("deliberate divergence for the report test")
        return super().step()
'''

STUDY = """
[study]
name = "report-test"
description = "tiny GMM study for the report tests"
seeds = [0, 1]

[budget]
iterations = 12
checkpoints = 6

[[problem]]
name = "gmm/small"
model = "gmm"
dataset = "gmm-synthetic"
model_params = { components = 3 }
dataset_params = { n = 300, n_test = 100, components = 3 }

[[problem]]
name = "gmm/tiny"
model = "gmm"
dataset = "gmm-synthetic"
model_params = { components = 2 }
dataset_params = { n = 150, n_test = 50, components = 2, seed = 3 }

[[algorithm]]
name = "svi"
params = { batch_size = 50 }

[[algorithm]]
name = "vmp"

[[algorithm]]
name = "test-report-failing"

[[algorithm]]
name = "test-report-diverging"

[[paper]]
problem = "gmm/small"
algorithm = "VMP"
metric = "elbo"
value = -900.0
sd = 5.0
note = "made-up number for the test"

[[paper]]
problem = "gmm/small"
algorithm = "Gibbs sampler"
metric = "elbo"
value = -1.0

[report]
target = { metric = "elbo", relative = 0.01 }
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report")
    plugin = root / "report_plugin.py"
    plugin.write_text(PLUGIN)
    (root / "study.toml").write_text(STUDY)
    study = parse_study(tomllib.loads(STUDY), source=str(root / "study.toml"), plugins=(str(plugin),), text=STUDY)
    run_study(study, root / "results", run_local, progress=False)  # in this process
    return root / "results"


@pytest.fixture(scope="module")
def report(results, tmp_path_factory):
    return write_report(results, tmp_path_factory.mktemp("out"))


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images, self.links, self.cells, self._in_cell = [], [], [], False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs["src"])
        if tag in ("a", "link", "script") and (attrs.get("href") or attrs.get("src")):
            self.links.append(attrs.get("href") or attrs.get("src"))
        self._in_cell = tag in ("td", "th")

    def handle_data(self, data):
        if self._in_cell:
            self.cells.append(data.strip())

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self._in_cell = False


def _final(ds, r: int, var: str) -> float:
    k = int(np.isfinite(ds["iteration"].values[r]).sum()) - 1
    return float(ds[var].values[r, k])


def test_report_names_every_problem_algorithm_and_metric(results, report):
    ds = open_results(results)
    html, md = report.html.read_text(), report.markdown.read_text()
    for name in [*set(ds["problem"].values), *set(ds["label"].values), "elbo", "heldout_loglik"]:
        assert name in html and name in md, name
    # the objective (ELBO) as suboptimality, the task metric on its own axis, a final-value strip of each, the profile
    assert {p.name for p in report.figures} == {
        "subopt-elbo-vs-time.png", "subopt-elbo-vs-epoch.png", "heldout_loglik-vs-time.png",
        "heldout_loglik-vs-epoch.png", "final-subopt-elbo.png", "final-heldout_loglik.png", "performance-profile.png",
            "headline-subopt-elbo-vs-time.png"}
    for fig in report.figures:
        assert f"figures/{fig.name}" in md and fig.read_bytes().startswith(b"\x89PNG")


def test_html_parses_and_embeds_its_figures_without_external_files(report):
    page = _Page()
    page.feed(report.html.read_text())
    page.close()
    assert len(page.images) == len(report.figures) == 8  # the first screen's headline figure is one of them
    for src in page.images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG")
    assert all(link.startswith("#") for link in page.links), page.links


def test_final_metrics_match_numbers_computed_from_the_xarray_results(results, report):
    ds = open_results(results)
    table = next(t for t in report.tables if t.title == "Final metrics")
    for (problem, label), rec in table.data.iterrows():
        runs = [r for r in range(ds.sizes["run"]) if ds["problem"].values[r] == problem and ds["label"].values[r] == label]
        ok = [r for r in runs if ds["status"].values[r] == "ok"]
        assert rec["runs"] == len(runs) == 2 and rec["runs_ok"] == len(ok)
        for var in ("elbo", "heldout_loglik", "time"):
            values = np.array([_final(ds, r, var) for r in ok])
            if ok:
                assert rec[f"{var}_mean"] == pytest.approx(values.mean(), rel=1e-12)
                assert rec[f"{var}_std"] == pytest.approx(values.std(ddof=1), rel=1e-9)
                assert mean_sd(values.mean(), values.std(ddof=1)) in report.markdown.read_text()
            else:
                assert np.isnan(rec[f"{var}_mean"])
    assert set(table.data.index.get_level_values("label")) == {"SVI", "VMP", "Failing", "Diverging"}


def test_time_to_target_matches_a_direct_computation(results, report):
    ds = open_results(results)
    table = next(t for t in report.tables if t.title.startswith("Time to target"))
    for (problem, label), rec in table.data.iterrows():
        in_problem = [r for r in range(ds.sizes["run"]) if ds["problem"].values[r] == problem]
        best = max(_final(ds, r, "elbo") for r in in_problem if ds["status"].values[r] == "ok")
        threshold = best - 0.01 * abs(best)
        assert rec["threshold"] == pytest.approx(threshold)
        times = []
        for r in in_problem:
            if ds["label"].values[r] != label:
                continue
            hit = np.flatnonzero(ds["elbo"].values[r] >= threshold)
            if hit.size:
                times.append(ds["time"].values[r, hit[0]])
        assert rec["reached"] == len(times)
        if times:
            assert rec["time_mean"] == pytest.approx(np.mean(times))
    assert table.data["reached"].max() >= 1


def test_failed_and_diverged_runs_are_reported_with_their_messages(report):
    table = next(t for t in report.tables if t.title == "Runs not ok")
    statuses = dict(zip(table.data["label"], table.data["status"]))
    assert statuses == {"Failing": "failed", "Diverging": "diverged"}
    assert table.data["count"].sum() == 8  # 2 problems × 2 seeds × 2 algorithms
    for text in (report.html.read_text(), report.markdown.read_text()):
        assert "deliberate failure for the report test" in text
        assert "deliberate divergence for the report test" in text
        assert "8 of 16 runs not ok: 4 diverged, 4 failed" in text


def test_paper_vs_this_run_shows_the_difference(results, report):
    ds = open_results(results)
    table = next(t for t in report.tables if t.title == "Paper vs this run")
    row = table.data[table.data["label"] == "VMP"].iloc[0]
    vmp = [_final(ds, r, "elbo") for r in range(ds.sizes["run"])
           if ds["problem"].values[r] == "gmm/small" and ds["label"].values[r] == "VMP"]
    assert row["difference"] == pytest.approx(np.mean(vmp) + 900.0)
    assert "not in these results" in report.markdown.read_text()  # the Gibbs sampler row


def test_header_carries_study_versions_machine_and_parallel_caveat(results, tmp_path):
    manifest = json.loads((results / "manifest.json").read_text())
    html = write_report(results, tmp_path / "a").html.read_text()
    for value in ("report-test", manifest["git_commit"], manifest["machine"], manifest["numpy_version"], "tiny GMM study"):
        assert value in html
    assert "parallel" not in html.lower()
    copy = tmp_path / "copy"
    (copy / "runs").mkdir(parents=True)
    for f in (results / "runs").iterdir():
        (copy / "runs" / f.name).write_bytes(f.read_bytes())
    manifest["parallel_workers"] = 2
    manifest.pop("timing_note", None)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    html = write_report(copy, tmp_path / "b").html.read_text()
    assert "parallel workers" in html and "2 at a time" in html


def test_a_study_cannot_override_a_declared_direction_and_targets_follow_the_declared_one():
    with pytest.raises(ReportError, match=r"\[report\] lower_is_better: which way is better is declared by the model"):
        ReportSettings.check({"lower_is_better": ["elbo"]}, {"elbo"})
    assert ReportSettings.parse({"higher_is_better": ["x"]}).ignored == ("higher_is_better",)  # older results: a caveat


def test_header_says_times_are_cpu_seconds_with_the_warm_up_apart(results):
    """The clock caveat follows the results: CPU seconds with the warm-up's total as a fact; results written
    with the wall clock (no `wall_time`) say so; runs with more than one BLAS thread are named."""
    from svibench.report.header import make_header

    ds = open_results(results)
    warm = ds["warmup_seconds"].values
    assert np.isfinite(warm).all() and (warm > 0).all() and (ds["blas_threads"].values == 1).all()
    header = make_header(ds, {}, ReportSettings(), None)
    facts = dict(header.facts)
    assert facts["warm-up"].startswith(f"{warm.sum():.3g} s CPU in all, at most {warm.max():.3g} s in a run")
    assert header.caveats[0].startswith("Times are CPU seconds of the run's process") and "`wall_time`" in header.caveats[0]
    assert not any("BLAS/OpenMP pools" in c for c in header.caveats)
    threads = ds["blas_threads"].values.copy()
    threads[:3] = 2
    header = make_header(ds.assign_coords(blas_threads=("run", threads)), {}, ReportSettings(), None)
    assert "3 run(s) had BLAS/OpenMP pools of up to 2 threads" in header.caveats[1]
    old = make_header(ds.drop_vars(["wall_time", "warmup_seconds", "blas_threads"]), {}, ReportSettings(), None)
    assert old.caveats[0].startswith("Times are wall-clock algorithm seconds") and "warm-up" not in dict(old.facts)
    stepping, evaluation = ds["time"].max("checkpoint").values.sum(), ds["evaluation_seconds"].values.sum()
    share = evaluation / (stepping + evaluation + warm.sum())
    assert facts["cost"].startswith(f"{stepping + evaluation + warm.sum():.3g} s over the runs: stepping {stepping:.3g} s "
                                    f"CPU, evaluation {evaluation:.3g} s wall ({share:.0%}; scoring against references")
    target = ReportSettings.parse({"target": {"metric": "test_mse", "relative": 0.1}}).targets[0]
    assert target.threshold(2.0, lower=True) == pytest.approx(2.2)
    assert target.threshold(-100.0, lower=False) == pytest.approx(-110.0)


@pytest.mark.parametrize("table", [
    {"target": {"relative": 0.1}},
    {"target": {"metric": "elbo", "relative": 0.1, "absolute": 1.0}},
    {"target": {"metric": "elbo", "relative": -1}},
    {"timing_noise": 0.5}, {"timing_noise": "2"}, {"timing_noise": True}, {"timing_noise": float("inf")},
])
def test_a_bad_report_table_is_refused_naming_the_key(table):
    with pytest.raises(ReportError, match=r"\[report\]"):
        ReportSettings.parse(table)


def test_a_study_sets_its_timing_noise_and_the_rule_says_it():
    """``[report] timing_noise``: what the study's machine measured (default the reports' machine's 1.8); the
    claims' rule under the verdicts says which."""
    from svibench.claims import rule
    assert ReportSettings.parse({}).timing_noise == 1.8 and ReportSettings.parse({"timing_noise": 1}).timing_noise == 1.0
    assert "(×1.8 between two makings of one run)" in rule() and "(×1.25 between" in rule(1.25)


def test_cli_report_and_run_write_the_report_and_no_report_turns_it_off(results, tmp_path, capsys):
    assert main(["report", str(results), "-o", str(tmp_path / "r")]) == 0
    assert (tmp_path / "r" / "index.html").exists() and (tmp_path / "r" / "summary.md").exists()
    study = tmp_path / "s" / "study.toml"
    study.parent.mkdir()
    study.write_text((Path(__file__).parents[1] / "studies" / "one-vmp-run.toml").read_text())
    assert main(["run", str(study), "--workers", "1", "-q"]) == 0
    # a user's run writes beside its (ignored) results, never over the committed report beside the study file
    assert (study.parent / "results" / "report" / "index.html").exists() and not (study.parent / "index.html").exists()
    assert main(["run", str(study), "--workers", "1", "-q", "-o", str(tmp_path / "o"), "--no-report"]) == 0
    assert not (tmp_path / "o" / "report").exists()
    assert main(["run", str(study), "--workers", "1", "-q", "-o", str(tmp_path / "o2")]) == 0
    assert (tmp_path / "o2" / "report" / "index.html").exists()


def test_the_shown_metrics_are_report_plot_else_the_primary_and_claimed_ones_else_all():
    from dataclasses import replace

    from svibench.metrics import Metric, metric_table
    from svibench.settings import ReportError, ReportSettings

    info = metric_table(Metric("elbo", "higher", "objective", primary=True), Metric("loss", "lower", "task"),
                        Metric("err", "lower", "task", primary=True))
    assert ReportSettings.parse({"plot": ["loss"]}).shown(info) == ["loss"]
    assert ReportSettings.parse({}).shown(info) == ["elbo", "err"]
    claimed = replace(ReportSettings.parse({}), claimed=("loss",))  # a claim judged on a non-primary metric
    assert claimed.shown(info) == ["elbo", "loss", "err"]
    assert replace(ReportSettings.parse({"plot": ["loss"]}), show_all=True).shown(info) == ["elbo", "loss", "err"]
    unflagged = {k: replace(m, primary=False) for k, m in info.items()}  # results saved before the flag
    assert ReportSettings.parse({}).shown(unflagged) == ["elbo", "loss", "err"]
    with pytest.raises(ReportError, match="plot"):
        ReportSettings.parse({"plot": "elbo"})


def test_a_default_logreg_report_shows_at_most_three_metrics_and_names_the_others(tmp_path):
    from svibench.cli import main

    study = tmp_path / "study.toml"
    study.write_text(textwrap.dedent("""
        [study]
        name = "lr"
        [budget]
        iterations = 3
        checkpoints = 3
        [[problem]]
        model = "logreg"
        dataset = "australian"
        [[algorithm]]
        name = "cvi-exact"
    """))
    assert main(["run", str(study), "--workers", "1", "-q"]) == 0
    final = (tmp_path / "results" / "report" / "summary.md").read_text().split("## Final metrics", 1)[1]
    header = next(line for line in final.splitlines() if line.startswith("| problem | algorithm | CPU time"))
    assert header.count("↑") + header.count("↓") == 3 and "test_logloss_nats" not in header
    assert "Also recorded, not shown here: neg_elbo, neg_elbo_authors" in final
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "all"), "--metrics", "all"]) == 0
    every = (tmp_path / "all" / "summary.md").read_text().split("## Final metrics", 1)[1]
    assert "test_logloss_nats" in next(line for line in every.splitlines() if line.startswith("| problem | algorithm | CPU time"))


def test_paper_numbers_pool_the_grid_problems_of_a_paper_problem():
    """Random splits are grid points of one [[problem]]; the paper's problem is compared with all of them, by the
    problem base each run records, whatever the names look like."""
    from svibench.metrics import Metric, metric_table
    from svibench.report.tables import paper_comparison
    from svibench.runner import to_dataset
    from svibench.spec import Budget, ProblemSpec, RunSpec

    loss = metric_table(Metric("loss", "lower", "task"))
    runs = []
    for name, base, value in [("aus, first split", "logreg/aus", 0.40), ("aus, second split", "logreg/aus", 0.50),
                              ("aus, third split", "logreg/aus", 0.60), ("logreg/aus (scaled)", "logreg/aus (scaled)", 9.0)]:
        spec = RunSpec("s", ProblemSpec(name, "logreg", "australian", base=base), "cvi", "CVI", {}, 0, Budget(iterations=1))
        runs.append(to_dataset(spec, [{"iteration": 1, "epoch": 1, "time": 1, "loss": value}], loss, "ok", ""))
    import xarray as xr
    from svibench.results import RUN_COORDS

    ds = xr.concat([r.drop_attrs() for r in runs], dim="run").assign_coords(
        {name: ("run", [r.attrs[name] for r in runs]) for name in RUN_COORDS})
    table = paper_comparison(ds, [{"problem": "logreg/aus", "algorithm": "CVI", "metric": "loss", "value": 0.45}])
    record = table.data.iloc[0]
    assert record["mean"] == pytest.approx(0.5) and record["min"] == 0.4 and record["max"] == 0.6
    assert "range 0.4 to 0.6" in table.rows[0][4]


def _curves(**finals: tuple[float, float]) -> pd.DataFrame:
    """Per label: a curve from `start` decaying to `end` over x in [1, 100] (two seeds)."""
    x = np.geomspace(1, 100, 30)
    frames = [pd.DataFrame({"label": label, "seed": seed, "x": x,
                            "value": end + (start - end) * np.exp(-5 * (x - 1)) + 0.01 * seed})
              for label, (start, end) in finals.items() for seed in (0, 1)]
    return pd.concat(frames, ignore_index=True)


def test_figure_limits_clip_a_transient_and_a_diverging_label_but_not_ordinary_curves():
    from svibench.report.figures import _ylim

    assert _ylim(_curves(a=(2.0, 1.0), b=(2.5, 1.5))) is None
    lo, hi = _ylim(_curves(a=(1e4, 1.0), b=(1e4, 1.5)))  # a huge first value: clipped
    assert lo < 1.0 and 1.5 < hi < 10
    blown = _curves(a=(2.0, 1.0), b=(2.5, 1.5), c=(2.0, 1.2))
    late = (blown["label"] == "c") & (blown["x"] > 50)
    blown.loc[late, "value"] = 1e3 * blown.loc[late, "x"]  # c diverges late: it leaves the axes
    lo, hi = _ylim(blown)
    assert lo < 1.0 and 1.5 < hi < 10


def test_the_first_section_answers_which_is_best_and_the_ledger_is_written(report):
    html = report.html.read_text()
    assert html.index("At a glance") < html.index("Ranking: first to elbo") < html.index('id="figures"')
    ranking = next(t for t in report.tables if t.title.startswith("Ranking: first to elbo")).data
    ranking = ranking[ranking["pool"] == "gmm/tiny"].set_index("label")
    assert ranking.index[0] in {"SVI", "VMP"}  # a run that failed or diverged never leads: it never reaches the target
    assert ranking.loc["Failing", "ok"] == 0 and ranking.loc["Failing", "time"] == np.inf
    assert ranking.loc["Diverging", "diverged"] == 2 and ranking.loc["Diverging", "first"] == 0
    ledger = json.loads((report.folder / "claims.json").read_text())
    assert ledger["study"] and ledger["claims"] == []


CLAIM = """
[[claim]]
id = "vmp-beats-svi"
source = "made up for the test"
kind = "order"
metric = "elbo"
better = ["VMP"]
worse = ["SVI"]
note = "the first screen shows this verdict"
"""


def test_the_first_screen_holds_the_ranking_the_verdicts_and_the_headline_figure(results, tmp_path):
    """Issues 22 and 52: the answer first — the ranking, then the verdicts, then the headline figure, before Figures."""
    study = tmp_path / "study.toml"
    study.write_text(STUDY + CLAIM)
    report = write_report(results, tmp_path / "out", study=study)
    html = report.html.read_text()
    glance = html[html.index('id="at-a-glance"'):html.index('id="figures"')]
    assert (glance.index('<div class="glance">') < glance.index("Ranking: first to elbo")
            < glance.index("Claims of the papers, checked") < glance.index("<img"))
    assert "vmp-beats-svi" in glance
    assert re.search(r'class="v-[a-z]+"><strong>(reproduced|partly|not reproduced|mixed|too few units|incomplete|not comparable|'
                     r'not run)<', glance)
    assert "Suboptimality of elbo against algorithm CPU time" in glance and "best variant of each method" in glance
    assert glance.count("<img") == 1
    assert "made up for the test" not in glance  # the source stays in section Claims, with the note
    assert html.index("made up for the test") > html.index('id="claims"')


def test_the_report_says_what_each_metric_means_as_the_model_declares_it(report):
    table = next(t for t in report.tables if t.title == "What the metrics mean")
    meaning = {row[0]: row[1:] for row in table.rows}
    assert meaning["elbo"][:3] == ["↑ higher", "objective", "nats"]
    assert meaning["heldout_loglik"][:3] == ["↑ higher", "task", "nats per test point"] and meaning["elbo"][4] == "yes"
    assert "What the metrics mean" in report.markdown.read_text()


def test_skipped_pairs_say_by_design_only_when_every_pair_is_incompatible():
    incompatible = {"problem": "gmm/x", "algorithm": "Chol", "reason": "gmm does not offer LatentGaussian"}
    missing = {"problem": "gmm/x", "algorithm": "scikit-learn BGMM", "reason": f"needs sklearn: {INSTALL}"}
    by_design = "Pairs the registry marks incompatible: not run, by design."
    assert skipped_pairs({"skipped": [incompatible]}).note == by_design
    assert "library is not installed" in skipped_pairs({"skipped": [incompatible, missing]}).note
    assert skipped_pairs({"skipped": []}) is None
