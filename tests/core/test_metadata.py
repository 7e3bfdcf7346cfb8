"""Metric metadata as data, and runs' structured identity (issue 28, item 1).

Every metric of every built-in model declares its meaning; a plugin that does not is refused in one line;
the runner saves what the metrics mean and each run's method, variant, problem base and grid point; reports
read those, never the names.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import replace
import math
import tomllib
import warnings
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

from svibench.data import DataError
from svibench.executors import run_local
from svibench.metrics import KINDS, Metric, MetricError, check_declaration, metric_table, table_from_json, table_json
from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.report.compare import pools, unranked
from svibench.report.figures import best_known
from svibench.report.glance import ranking_tables
from svibench.report.rank import ranking
from svibench.settings import ReportSettings, Target
from svibench.results import RUN_COORDS, answers, metric_info, open_results, rankable_runs, select_runs
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec, canonical_json
from svibench.study import StudyError, load_study, parse_study
from svibench.sweep import run_study
from svibench.testing import check_algorithm
from svibench.claims import Evidence

REPORTS = Path(__file__).resolve().parents[2] / "reports"
BUILTIN_MODELS = sorted((name, cls) for name, (cls, source) in get_registry().models.items() if source.startswith("built-in"))


# -- every built-in model declares every metric ------------------------------------------------------------------

@pytest.mark.parametrize("name, cls", BUILTIN_MODELS, ids=[n for n, _ in BUILTIN_MODELS])
def test_every_builtin_metric_declares_its_meaning_and_the_answer_is_not_a_diagnostic(name, cls):
    table = check_declaration(cls)
    assert set(table) >= {"heldout_loglik"} and any(m.kind == "objective" for m in table.values())
    for metric in table.values():
        assert metric.kind in KINDS and metric.description and "\n" not in metric.description, metric
        assert metric.unit or metric.name in ("perplexity", "perplexity_vs_truth"), metric  # ratios have none
    assert table[cls.answer].kind in ("objective", "task")
    assert table_from_json(table_json(table)) == table  # what the runner saves reads back the same


@pytest.mark.parametrize("name, cls", [(n, c) for n, c in BUILTIN_MODELS if hasattr(c, "conformance_problem")],
                         ids=[n for n, c in BUILTIN_MODELS if hasattr(c, "conformance_problem")])
def test_what_evaluate_returns_is_declared_and_inside_its_valid_range(name, cls):
    """CVI-MF runs on every model (the conformance suite checks each algorithm's posterior the same way)."""
    table = cls.conformance_problem
    problem = ProblemSpec(f"meta/{name}", name, table["dataset"], table.get("model_params", {}),
                          table.get("dataset_params", {}))
    ds = execute(RunSpec("meta", problem, "cvi-mf", "CVI-MF", {}, 0, Budget(iterations=3), Checkpoints(count=2)))
    assert ds.attrs["status"] == "ok", ds.attrs["message"]
    info = table_from_json(ds.attrs["metric_info"])
    assert ds.attrs["answer"] == cls.answer and list(info)[:len(cls.metrics)] == list(cls.metrics)
    assert all(info[m].kind == "accuracy" for m in list(info)[len(cls.metrics):])  # when the problem has a reference
    recorded = [m for m in info if np.isfinite(ds[m].values).any()]
    assert recorded and all(info[m].valid(v) for m in recorded for v in ds[m].values[np.isfinite(ds[m].values)])


def test_a_value_outside_the_declared_range_is_invalid():
    perplexity = Metric("perplexity", "lower", "task", low=1.0)
    assert perplexity.valid(1.0) and not perplexity.valid(0.5) and not perplexity.valid(math.inf)
    assert Metric("kl", "lower", "diagnostic", low=0.0).valid(-3e-15)  # rounding at the bound
    assert not Metric("kl", "lower", "diagnostic", low=0.0).valid(-1e-6)
    assert perplexity.signed(3.0) == -3.0 and Metric("elbo", "higher", "objective").signed(3.0) == 3.0
    with pytest.raises(MetricError, match="direction must be one of higher, lower"):
        Metric("x", "up", "task")


# -- BPFA: psnr_fit is a fair ranking key on noise-free pixels only ---------------------------------------------

@pytest.mark.parametrize("task, rankable", [("inpainting", True), ("denoising", False)])
def test_bpfa_psnr_fit_is_no_ranking_key_on_a_denoising_problem(task, rankable):
    spec = ProblemSpec(f"bpfa/boat-{task}", "bpfa", "image-patches", {"features": 4},
                       {"image": "boat", "task": task, "size": 16})
    try:
        model = build_model(spec, cache=False)
    except DataError as exc:
        pytest.skip(f"no image data: {exc}")
    info = model.metric_info()
    assert info["psnr_fit"].rankable is rankable
    assert info["psnr"].rankable and info["heldout_loglik"].rankable
    assert list(info) == list(type(model).metrics)


# -- a plugin model without metadata: one line at load, in the conformance suite and in the runner --------------

PLUGIN = '''
import numpy as np
from svibench.algorithm import Algorithm
from svibench.data import Dataset, dataset
from svibench.metrics import Metric, metric_table
from svibench.model import Model


@dataset("meta-points", kind="meta")
def points(*, n: int = 10) -> Dataset:
    return Dataset("meta-points", "meta", {"x": np.zeros(n)})


class NamesOnly(Model):
    name = "meta-names"
    data_kinds = ("meta",)
    metrics = ("elbo",)
    answer = "elbo"
    conformance_problem = {"dataset": "meta-points", "steps": 2}

    @property
    def n_train(self):
        return 10

    def evaluate(self, posterior, rng):
        return {"elbo": float(posterior)}


class Forgetful(NamesOnly):
    """Declares elbo with its meaning, but also returns a metric it never declared."""
    name = "meta-forgetful"
    metrics = metric_table(Metric("elbo", "higher", "objective", "nats"))

    def evaluate(self, posterior, rng):
        return {"elbo": float(posterior), "score": 1.0}


class Counter(Algorithm):
    name = "meta-counter"

    def __init__(self, *, step_size: float = 1.0) -> None:
        self.step_size = step_size

    @classmethod
    def incompatibility(cls, model_cls, params=None):
        return None if "meta" in model_cls.data_kinds else "runs only on the models of this file"

    def init(self, model, rng):
        self.value_ = 0.0

    def step(self):
        self.value_ += self.step_size
        return 10

    def posterior(self):
        return self.value_
'''

STUDY = """
[study]
name = "meta"
[budget]
iterations = 3
checkpoints = 10
[[problem]]
model = "{model}"
dataset = "meta-points"
[[algorithm]]
name = "meta-counter"
"""


@pytest.fixture(scope="module")
def plugin(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("meta") / "meta_plugin.py"
    path.write_text(PLUGIN)
    return str(path)


def test_a_model_declaring_plain_names_is_refused_in_one_line_when_a_study_is_loaded(plugin):
    with pytest.raises(StudyError) as err:
        parse_study(tomllib.loads(STUDY.format(model="meta-names")), plugins=(plugin,))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("[[problem]] #1: model 'meta-names' declares its metrics as plain names ('elbo',)")
    assert "metric_table(Metric(name, direction, kind, unit" in message and "answer" in message


@pytest.mark.parametrize("bad, expected", [
    ({"metrics": {}}, "declares no metrics"),
    ({"metrics": {"elbo": "higher"}}, "metric 'elbo' has no metadata"),
    ({"answer": "posterior_kl"}, "answer 'posterior_kl' is not one of its objective or task metrics; set `answer` to one of elbo"),
])
def test_a_declaration_without_metadata_or_answer_is_one_line_saying_how_to_declare(bad, expected):
    attrs = {"name": "m", "metrics": metric_table(Metric("elbo", "higher", "objective"),
                                                   Metric("posterior_kl", "lower", "diagnostic")), "answer": "elbo"}
    cls = type("M", (), {**attrs, **bad})
    with pytest.raises(MetricError, match=expected) as err:
        check_declaration(cls)
    assert "\n" not in str(err.value)


def test_a_metric_returned_but_not_declared_fails_the_conformance_check_and_the_run(plugin):
    results = check_algorithm("meta-counter", plugins=(plugin,), raise_on_failure=False)
    finite = {r.status: r.message for r in results if r.check == "check_finite_metrics"}
    assert "fail" in finite and "\n" not in finite["fail"]
    # the first small problem it meets is one of the two faulty models: either message says how to declare
    assert "declares its metrics as plain names" in finite["fail"] or "which the model's `metrics` does not declare" in finite["fail"]
    spec = RunSpec("meta", ProblemSpec("p", "meta-forgetful", "meta-points"), "meta-counter", "C", {}, 0,
                   Budget(iterations=2), plugins=(plugin,))
    ds = execute(spec)
    assert ds.attrs["status"] == "failed"
    assert "model 'meta-forgetful' returned metrics it does not declare: ['score']; declare `metrics" in ds.attrs["message"]


# -- structured run identity: saved, read back, and run ids unchanged -------------------------------------------

GRID_STUDY = """
[study]
name = "identity"
seeds = [0]
[budget]
iterations = 4
checkpoints = 10
[[problem]]
name = "gmm/small (grid)"
model = "gmm"
dataset = "gmm-synthetic"
model_params = { components = 2 }
dataset_params = { n = 120, n_test = 30, seed = [1, 2] }
[[algorithm]]
name = "svi"
label = "SVI (tuned)"
method = "SVI"
params = { batch_size = 20, kappa = [0.6, 0.9] }
[[algorithm]]
name = "vmp"
"""


@pytest.fixture(scope="module")
def identity(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("identity")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = parse_study(tomllib.loads(GRID_STUDY), source="identity.toml", text=GRID_STUDY)
    run_study(study, out, run_local, progress=False)
    return out


def test_method_variant_problem_base_and_grid_are_saved_and_read_back(identity):
    ds = open_results(identity)
    assert set(RUN_COORDS) <= set(ds.coords)
    rows = {(str(p), str(lb)): (str(m), json.loads(str(v)), str(b), json.loads(str(g)))
            for p, lb, m, v, b, g in zip(*(ds[k].values for k in ("problem", "label", "method", "variant", "problem_base",
                                                                  "problem_grid")))}
    assert rows[("gmm/small (grid) (seed=2)", "SVI (tuned) (kappa=0.9)")] == (
        "SVI", {"kappa": 0.9}, "gmm/small (grid)", {"seed": 2})
    assert rows[("gmm/small (grid) (seed=1)", "VMP")] == ("VMP", {}, "gmm/small (grid)", {"seed": 1})
    manifest = json.loads((identity / "manifest.json").read_text())
    entry = next(e for e in manifest["runs"].values() if e["label"] == "SVI (tuned) (kappa=0.6)" and e["problem_grid"] == {"seed": 1})
    assert entry["method"] == "SVI" and entry["variant"] == {"kappa": 0.6} and entry["problem_base"] == "gmm/small (grid)"
    assert select_runs(ds, algorithm="SVI").sum() == 4 and select_runs(ds, algorithm="SVI (tuned) (kappa=0.6)").sum() == 2
    assert select_runs(ds, problem="gmm/small (grid)").sum() == 6
    assert select_runs(ds, algorithm="VMP", problem="gmm/small (grid) (seed=2)").sum() == 1


def test_the_saved_metric_metadata_is_the_models_and_the_answer_its_answer(identity):
    from svibench.models.gmm import GaussianMixture

    ds = open_results(identity)
    assert metric_info(ds) == check_declaration(GaussianMixture) and answers(ds) == ["elbo"]
    assert [m for m, i in metric_info(ds).items() if i.primary] == list(GaussianMixture.primary)
    assert rankable_runs(ds, "elbo").all() and not rankable_runs(ds, "psnr").any()


def test_older_run_files_fall_back_to_the_registry_and_to_ungridded_names(identity, tmp_path):
    """Files written before the structured identity: method = label, base = problem, the model class's metrics."""
    from svibench.models.gmm import GaussianMixture

    (tmp_path / "runs").mkdir()
    for file in (identity / "runs").glob("*.nc"):
        with xr.open_dataset(file, engine="scipy") as run:
            old = run.load()
        for key in ("method", "variant", "problem_base", "problem_grid", "metric_info", "answer"):
            del old.attrs[key]
        old.to_netcdf(tmp_path / "runs" / file.name, engine="scipy")
    ds = open_results(tmp_path)
    assert list(ds["method"].values) == list(ds["label"].values)
    assert list(ds["problem_base"].values) == list(ds["problem"].values)
    assert metric_info(ds) == GaussianMixture.metrics and answers(ds) == ["elbo"]


def test_run_ids_are_those_of_the_committed_studies():
    """The structured identity changes no run id (nor the random streams derived from the problem's key)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quickstart = load_study(REPORTS / "quickstart" / "study.toml")
    # the quickstart's study hash before issue 32 added scikit-learn's mixture (and issue 49 seeds 3 to 5): its other
    # runs keep their ids
    ids = sorted(r.run_id for r in quickstart.runs if r.algorithm != "sklearn-bgmm" and r.seed < 3)
    assert hashlib.sha1(canonical_json([quickstart.name, ids]).encode()).hexdigest()[:16] == "2e6926acc17eaa52"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = load_study(REPORTS / "khan2017-logreg" / "study.toml")
    run = next(r for r in study.runs if r.label == "PG-exact" and r.problem.name == "logreg/australian (split=0)"
               and r.seed == 0)
    assert run.method == "PG-exact" and run.variant == {}
    # the run "PG-exact (w=0.2)" as the study made it before runs had structured parts (its parameters, budget and
    # checkpoints of that time): its id then, whatever method, variant, base and grid now say
    then = replace(run, params={"w": 0.2}, budget=Budget(iterations=5000, seconds=4.0), checkpoints=Checkpoints(count=12),
                   method="other", variant={"x": 1}, problem=replace(run.problem, base="other", grid={"y": 2}))
    assert then.run_id == "5b284fee3aed3c5e"
    assert run.problem.base == "logreg/australian" and run.problem.grid == {"split": 0}
    assert run.problem.key() == json.dumps(
        {"dataset": "australian", "dataset_params": {"split": 0}, "model": "logreg", "model_params": {"delta": 1e-05},
         "name": "logreg/australian (split=0)"}, sort_keys=True, separators=(",", ":"))


def test_a_grid_varying_the_same_name_in_model_and_dataset_keeps_both(tmp_path):
    text = GRID_STUDY.replace("model_params = { components = 2 }", "model_params = { components = [2, 3] }").replace(
        "seed = [1, 2]", "seed = 1, components = [2, 3]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        study = parse_study(tomllib.loads(text))
    grids = {json.dumps(r.problem.grid, sort_keys=True) for r in study.runs}
    assert json.dumps({"dataset_params.components": 3, "model_params.components": 2}, sort_keys=True) in grids


# -- reports read the structured fields and the metadata, never the names ---------------------------------------

def _results(runs: list[dict]) -> xr.Dataset:
    """Final values of a task metric ``score`` (higher is better) per run: problem, base, label, seed, value,
    rankable (whether its model calls ``score`` a fair ranking key on that problem)."""
    values = np.array([[r["value"]] * 2 for r in runs])
    data = {name: (("run", "checkpoint"), arr) for name, arr in
            (("iteration", np.tile([0.0, 1.0], (len(runs), 1))), ("epoch", np.tile([0.0, 1.0], (len(runs), 1))),
             ("time", np.tile([1.0, 2.0], (len(runs), 1))), ("score", values))}
    tables = {flag: table_json(metric_table(Metric("score", "higher", "task", rankable=flag))) for flag in (True, False)}
    coords = {key: ("run", [r[key] for r in runs]) for key in ("problem", "label", "seed")}
    coords.update(problem_base=("run", [r["base"] for r in runs]), method=("run", [r["label"] for r in runs]),
                  status=("run", ["ok"] * len(runs)), metric_info=("run", [tables[r.get("rankable", True)] for r in runs]),
                  answer=("run", ["score"] * len(runs)))
    return xr.Dataset(data, coords=coords)


def _rank(ds: xr.Dataset):
    """The first screen's ranking of ``ds`` on ``score`` (:func:`svibench.report.rank.ranking`)."""
    return ranking(Evidence(ds, metric_info(ds)), Target("score"))


def test_pooling_follows_the_problem_base_not_the_name():
    """Grid points named without the "base (k=v)" pattern pool under their base; a problem whose own name
    contains " (" is a problem of its own, never another's grid point."""
    runs = [{"problem": problem, "base": base, "label": label, "seed": 0, "value": value}
            for problem, base in (("a/first split", "a"), ("a/second split", "a"), ("a (scaled)", "a (scaled)"))
            for label, value in (("M (fast) (x=1)", 2.0), ("N", 1.0))]
    ds = _results(runs)
    assert list(pools(ds)) == ["a"] * 4 + ["a (scaled)"] * 2
    rank = _rank(ds)
    assert set(rank["pool"]) == {"a", "a (scaled)"}
    assert rank[rank["pool"] == "a"].set_index("label").loc["M (fast) (x=1)", "instances"] == 2
    fstar = best_known(ds, "score", False, {"a": 5.0})
    assert fstar[("a/first split", 0)] == (5.0, "reference") and fstar[("a (scaled)", 0)][1] != "reference"


def test_the_ranking_leaves_out_and_names_the_problems_where_the_metric_is_no_fair_key():
    runs = [{"problem": p, "base": p, "label": lb, "seed": 0, "value": v, "rankable": p == "inpainting"}
            for p in ("inpainting", "denoising") for lb, v in (("A", 2.0), ("B", 1.0))]
    ds = _results(runs)
    rank = _rank(ds)
    assert set(rank["pool"]) == {"inpainting"}
    assert unranked(ds, "score") == {"denoising": ["denoising"]}
    short, _ = ranking_tables(rank, unranked(ds, "score"), Target("score"), 1e-3)
    assert [row[:2] for row in short.rows] == [
        ["inpainting", "A"], ["inpainting", "B"],
        ["denoising", "not ranked on denoising: its model declares score no fair ranking key there"]]
    pooled = _results([dict(r, problem=f"boat ({r['problem']})", base="boat") for r in runs])  # one [[problem]], a task grid
    rank = _rank(pooled)
    assert set(rank["pool"]) == {"boat"} and set(rank["instances"]) == {1}  # the inpainting grid point only
    assert unranked(pooled, "score") == {"boat": ["boat (denoising)"]}


def test_the_default_target_is_the_models_answer_and_objectives_are_the_declared_ones():
    info = metric_table(Metric("elbo", "higher", "objective"), Metric("nll", "lower", "task"),
                        Metric("kl", "lower", "diagnostic"))
    settings = ReportSettings.parse({})
    assert [t.metric for t in settings.targets_for(["elbo", "nll"], ["nll"])] == ["nll"]
    assert settings.objectives(list(info), [], info) == ["elbo"]
    assert settings.objectives(list(info), ["kl"], info) == ["elbo", "kl"]  # a [[reference]] gives kl an f*
