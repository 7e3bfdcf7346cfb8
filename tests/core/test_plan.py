"""`svibench regenerate --plan` (svibench.plan): the runs counted as the sweep expands them, estimates that add up,
the runner's own evaluation count, and nothing run or written."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tomllib
from dataclasses import replace

import pytest

from svibench.cli import main
from svibench.plan import (PARTS, PROBE_STEPS, Probe, evaluations, format_total, plan_studies, plan_study, probe,
                           run_parts, run_seconds, wall_seconds)
from svibench.regenerate import against_committed
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints
from svibench.study import parse_study

STUDY = """
[study]
name = "plan"
seeds = [0, 1, 2]
[budget]
epochs = 3
checkpoints = 10
[[problem]]
model = "gmm"
dataset = "gmm-synthetic"
dataset_params = { n = 200, n_test = 50, dim = [1, 2] }
[[algorithm]]
name = "svi"
params = { batch_size = 20, kappa = [0.6, 0.9] }
[[algorithm]]
name = "vmp"
[scales.paper]
seeds = [0, 1, 2, 3]
"""

#: A made-up probe: 1 s warm-up, 2 s init, 0.5 s a step covering 0.25 epoch, 0.1 s an evaluation.
FAKE = Probe(warm_up=1.0, init=2.0, per_step=0.5, per_evaluation=0.1, epochs_per_step=0.25, steps=10)


def study(scale="default"):
    return parse_study(tomllib.loads(STUDY), scale=scale)


def test_the_plan_counts_the_runs_the_sweep_makes_grouped_by_algorithm_point_and_problem():
    for scale, seeds in (("default", 3), ("paper", 4)):
        s = study(scale)
        plan = plan_study(s, lambda run: FAKE)
        assert plan.runs == len(s.runs) == 3 * 2 * seeds  # 3 algorithm points x 2 problems (dim grid) x seeds
        assert [r.run_id for g in plan.groups for r in g.runs] == [r.run_id for r in s.runs]
        assert {len(g.runs) for g in plan.groups} == {seeds} and len(plan.groups) == 6


def test_the_estimate_of_a_run_is_its_parts_and_the_totals_add_up():
    s = study()
    # epochs = 3: 12 steps of 0.25 epoch; the 10 checkpoints 0.003, 0.0065, ..., 1.39, 3 epochs fall due at
    # steps 1 (six of them), 2, 3, 6 and 12, the end: 5 evaluations, and iteration 0's
    run = s.runs[0]
    seconds, binds = run_seconds(run, FAKE)
    assert not binds and seconds == pytest.approx(1.0 + 2.0 + 12 * 0.5 + 6 * 0.1)
    # 4 s of algorithm time: init and 4 steps; checkpoints due at steps 1, 2, 3, then the end apart
    assert run_seconds(replace(run, budget=Budget(epochs=3, seconds=4.0)), FAKE) == (pytest.approx(1 + 4 + 5 * 0.1), True)
    assert run_seconds(replace(run, timeout=5.0), FAKE)[0] == 5.0  # the time limit ends the run
    # a model that measures more at the last checkpoint (BPFA's whole image) adds it once
    assert run_seconds(run, replace(FAKE, final_evaluation=7.0))[0] == pytest.approx(seconds + 7.0)
    parts, _ = run_parts(run, replace(FAKE, per_scoring=0.04))
    assert list(parts) == list(PARTS) and sum(parts.values()) == pytest.approx(seconds)
    assert parts["scoring"] == pytest.approx(0.4 * parts["evaluation"] / 0.6)  # 0.04 of each 0.1 s evaluation
    assert parts["compilation"] == FAKE.warm_up
    last, _ = run_parts(replace(run, score_reference="last"), replace(FAKE, per_scoring=0.04))
    assert last["scoring"] == pytest.approx(0.04) and last["evaluation"] == parts["evaluation"]  # one scoring, at the end
    plan = plan_study(s, lambda run: FAKE)
    assert plan.seconds == pytest.approx(sum(g.seconds * len(g.runs) for g in plan.groups))
    assert plan.seconds == pytest.approx(18 * seconds)
    assert wall_seconds([plan], 1) == pytest.approx(plan.seconds)
    assert wall_seconds([plan], 2) == pytest.approx(plan.seconds / 2)  # 18 equal runs share 2 workers evenly
    assert wall_seconds([plan, plan], 2) == pytest.approx(plan.seconds)  # studies run one after another
    assert f"36 runs, {2 * plan.seconds / 60:.1f} min CPU; on 2 worker(s) about {plan.seconds / 60:.1f} min" in \
        format_total([plan, plan], 2)


def test_a_group_that_cannot_be_probed_is_named_and_counted_as_zero():
    def failing(run):
        if run.algorithm == "vmp":
            raise RuntimeError("the probe ended failed: boom")
        return FAKE
    plan = plan_study(study(), failing)
    bad = [g for g in plan.groups if math.isnan(g.seconds)]
    assert len(bad) == 2 and bad[0].how == "not estimated: the probe ended failed: boom"
    assert "(6 run(s) not estimated, counted as zero)" in format_total([plan], 2)
    plan = plan_study(study(), lambda run: replace(FAKE, diverged=True))  # its rates stand; the runs may end sooner
    assert all(g.how.endswith("; the probe diverged: the runs may end early") for g in plan.groups)
    assert plan.seconds == pytest.approx(plan_study(study(), lambda run: FAKE).seconds)


@pytest.mark.parametrize("budget, checkpoints", [
    (Budget(iterations=15), Checkpoints(5)),
    (Budget(epochs=2.0), Checkpoints(4, "linear")),
    (Budget(iterations=10), Checkpoints(at=(1, 2, 5))),  # the end is not a checkpoint: evaluated apart
    (Budget(iterations=50, epochs=1.0), Checkpoints(6)),  # the epochs stop the run before its iteration axis ends
    (Budget(epochs=1.0), Checkpoints(20)),  # log-spaced from 1/1000 of the budget: many checkpoints due at step 1
])
def test_the_evaluation_count_is_the_runners(budget, checkpoints):
    run = replace(study().runs[0], budget=budget, checkpoints=checkpoints)
    ds = execute(run)
    assert ds.attrs["status"] == "ok"
    steps = int(ds["iteration"][-1])
    rates = replace(FAKE, init=float(ds["time"][0]), epochs_per_step=float(ds["epoch"][-1]) / steps)
    assert evaluations(run, steps, rates) == ds.sizes["checkpoint"]


def test_a_probe_times_a_few_steps_of_the_real_run_and_never_more_than_its_budget():
    run = study().runs[0]
    p = probe(replace(run, budget=Budget(iterations=3 * PROBE_STEPS)))
    assert 1 <= p.steps <= PROBE_STEPS  # the steps or the CPU seconds of a probe, whichever come first
    assert p.per_step > 0 and p.per_evaluation > 0 and p.epochs_per_step == pytest.approx(20 / 200)
    assert probe(replace(run, budget=Budget(iterations=4))).steps == 4  # a run shorter than a probe: the run itself
    assert probe(run).steps <= 30  # epochs = 3 of 10 steps each


def test_the_cli_prints_the_plan_writes_nothing_and_refuses_an_unknown_scale_in_one_line(tmp_path):
    folder = tmp_path / "reports" / "plan"
    folder.mkdir(parents=True)
    (folder / "study.toml").write_text(STUDY.replace("dim = [1, 2]", "dim = 1").replace("kappa = [0.6, 0.9]", "kappa = 0.6"))
    cli = [sys.executable, "-m", "svibench.cli", "regenerate", "--reports", str(tmp_path / "reports"), "--plan"]
    out = subprocess.run(cli + ["--scale", "paper", "--workers", "2"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith("plan (paper scale): 8 runs, ") and " on 2 worker(s)" in lines[0] and len(lines) == 7
    for line in (lines[1], lines[-1]):
        assert line.startswith("  CPU by part: stepping ") and all(f"{part} " in line for part in PARTS)
    assert "SVI" in lines[2] and " 4 × " in lines[2] and "probe: " in lines[2]
    assert lines[4].startswith("  against the committed report: none to hold it against")
    assert lines[-2].startswith("total: 8 runs, ") and "on 2 worker(s) about " in lines[-2]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["plan", "reports", "study.toml"]
    again = subprocess.run(cli + ["--scale", "paper", "--workers", "2"], capture_output=True, text=True)
    assert "probe from the cache: " in again.stdout.splitlines()[2]  # the same code on the same machine: no probe
    bad = subprocess.run(cli + ["--scale", "huge"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.count("\n") == 1 and "no [scales.huge] table; available scales: default, paper" in bad.stderr


def test_run_plan_estimates_the_runs_the_command_would_make_and_writes_nothing(tmp_path, capsys):
    """`svibench run --plan` plans what that `run` would make: every run into a new folder, the missing ones when it
    resumes, all again with --no-resume; a folder of another study is refused as `run` refuses it."""
    study_file, out = tmp_path / "study.toml", tmp_path / "results"
    study_file.write_text(STUDY.replace("dim = [1, 2]", "dim = 1").replace("kappa = [0.6, 0.9]", "kappa = 0.6"))
    run = ["run", str(study_file), "-o", str(out), "--workers", "2"]
    assert main(run + ["--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    workers = min(2, os.cpu_count() or 1)  # run caps its workers at the cores
    assert lines[0].startswith("plan (default scale): 6 runs, ") and f" on {workers} worker(s)" in lines[0]
    assert len(lines) == 4 and lines[1].startswith("  CPU by part: stepping ")
    assert not out.exists()
    assert main(run + ["-q", "--no-report"]) == 0
    gone = sorted((out / "runs").glob("*.nc"))[:2]
    for file in gone:
        file.unlink()
    manifest = (out / "manifest.json").read_text()
    assert main(run + ["--plan"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"4 of 6 runs are already in {out} and are kept; the plan is of the 2 to make"
    assert lines[1].startswith("plan (default scale): 2 runs, ")
    assert len(list((out / "runs").glob("*.nc"))) == 4 and (out / "manifest.json").read_text() == manifest
    assert main(run + ["--plan", "--no-resume"]) == 0
    assert capsys.readouterr().out.startswith("plan (default scale): 6 runs, ")
    assert main(run + ["-q", "--no-report"]) == 0 and main(run + ["--plan"]) == 0
    assert capsys.readouterr().out == f"all 6 runs of 'plan' are in {out}: nothing to make\n"
    study_file.write_text(STUDY.replace("dim = [1, 2]", "dim = 1"))
    assert main(run + ["--plan"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the study file changed since" in err
    assert '([[algorithm]] #1.params.kappa: 0.6 → [0.6, 0.9])' in err  # the key that changed, then the runs it moves


def _dies(run):
    """A measure whose process dies mid-probe (as one killed for its memory would)."""
    os._exit(1)


def test_on_two_workers_the_groups_are_probed_in_two_processes_with_the_same_plan():
    s = study()
    one, two = plan_study(s), next(plan_studies([s], workers=2))
    assert [(g.label, g.problem, [r.run_id for r in g.runs]) for g in two.groups] == \
        [(g.label, g.problem, [r.run_id for r in g.runs]) for g in one.groups]
    assert all(g.how.startswith("probe: ") and g.seconds > 0 for g in one.groups + two.groups)
    # the same probes, each the whole of these short runs (their timings differ: not compared)
    assert [g.how.split(" at ")[0] for g in two.groups] == [g.how.split(" at ")[0] for g in one.groups]
    assert {g.how.split(" at ")[0] for g in one.groups} == {"probe: 30 step(s)", "probe: 3 step(s)"}
    dead = next(plan_studies([s], workers=2, measure=_dies))
    assert all(math.isnan(g.seconds) for g in dead.groups)
    assert all(g.how.startswith("not estimated: its worker process failed") for g in dead.groups)


def test_the_plan_is_held_against_what_the_committed_reports_runs_cost(tmp_path):
    s = replace(study(), source=str(tmp_path / "study.toml"))
    plan = plan_study(s, lambda run: FAKE)
    assert "none to hold it against (no report at this scale" in against_committed(plan)
    (tmp_path / "claims.json").write_text(json.dumps({"claims": []}))  # a report from before costs were recorded
    assert "has no cost of its runs" in against_committed(plan)
    measured = {k: 2 * v for k, v in plan.parts.items()}
    (tmp_path / "claims.json").write_text(json.dumps({"cost": {"runs": plan.runs, "seconds": measured}}))
    line = against_committed(plan)
    assert f"measured {sum(measured.values()):.0f} s" in line and "ratio 0.50" in line and "stepping 0.50" in line
    (tmp_path / "claims.json").write_text(json.dumps({"cost": {"runs": plan.runs + 1, "seconds": measured}}))
    assert "not comparable" in against_committed(plan)


def _fake_probe(spec):
    """A probe whose parts follow the problem's rows n exactly: a step and an evaluation linear in them, an init and
    the scoring constant, a minibatch of 20 rows, and a warm-up of 1 s of compilation plus an init and a step."""
    n = spec.problem.dataset_params["n"]
    init, step = 0.5, 1e-4 * n
    return Probe(warm_up=1.0 + init + step, init=init, per_step=step, per_evaluation=2e-5 * n,
                 epochs_per_step=20 / n, steps=10, final_evaluation=0.0, per_scoring=0.01)


def test_a_reduced_problem_scales_every_declared_row_count_alike_and_nothing_else():
    from svibench.reduced_problem import FEWEST_ROWS, PROBE_ROWS, SMALLER, fraction, reduce
    from svibench.spec import ProblemSpec
    big = ProblemSpec("mnist-like", "pmf", "mnist", {"eval_test": 5000, "eval_seed": 3, "n_factors": 100},
                      {"n_train": 60000, "levels": 2})  # n_test: the loader's default, 10,000
    assert fraction(replace(big, model_params={"eval_test": 0})) == PROBE_ROWS / 60000  # the largest count: 2,000
    f = fraction(big)  # raised: the 5,000 test images scored keep FEWEST_ROWS in the smaller problem
    assert f == pytest.approx(FEWEST_ROWS / (SMALLER * 5000)) and f > PROBE_ROWS / 60000
    assert fraction(replace(big, model_params={"eval_test": 500})) is None  # a count too small to reduce: whole
    small = reduce(big, f)
    assert small.dataset_params == {"n_train": round(60000 * f), "n_test": round(10000 * f), "levels": 2}
    assert small.model_params == {"eval_test": round(5000 * f), "eval_seed": 3, "n_factors": 100}
    assert reduce(replace(big, model_params={"eval_test": 0}), 1e-6).model_params == {"eval_test": 0}  # 0: every row
    assert reduce(big, 1e-6).dataset_params["n_train"] == 1  # at least one row
    assert "rows" in small.name and small.key() != big.key()
    assert fraction(replace(big, dataset_params={"n_train": 3 * PROBE_ROWS, "n_test": 100})) is None  # whole
    assert fraction(ProblemSpec("a", "logreg", "australian")) is None  # no declared size: whole
    from svibench.data import dataset
    with pytest.raises(TypeError, match=r"size=\.\.\.\): n_rows not a parameter of points"):
        @dataset("points", kind="density", size=("n_rows",))
        def points(*, n: int = 10):
            return None


def test_the_scaling_law_is_constant_or_linear_as_the_two_reduced_problems_tell(monkeypatch):
    from svibench import plan as plan_module
    from svibench.reduced_problem import exponent
    assert exponent(1.0, 4.0) == 1.0 and exponent(1.0, 1.3) == 0.0 and exponent(1.0, 0.5) == 0.0
    assert exponent(4.0, 1.0, -1.0) == -1.0 and exponent(0.0, 3.0) == 0.0
    monkeypatch.setattr(plan_module, "_probe", _fake_probe)
    run = study().runs[0]  # gmm-synthetic: its rows n, n_test are declared
    run = replace(run, problem=replace(run.problem, dataset_params={**run.problem.dataset_params, "n": 100_000,
                                                                    "n_test": 20_000}))
    whole = _fake_probe(run)
    p = plan_module.probe(run)
    assert p.reduced == pytest.approx(0.02) and p.exponents["per_step"] == 1 and p.exponents["init"] == 0
    assert p.exponents["epochs_per_step"] == -1 and p.exponents["per_scoring"] == 0
    for part in ("init", "per_step", "per_evaluation", "epochs_per_step", "warm_up", "per_scoring"):
        assert getattr(p, part) == pytest.approx(getattr(whole, part)), part
    # a reduced problem the model or the algorithm refuses: the whole problem is probed
    monkeypatch.setattr(plan_module, "_probe", lambda spec: _fake_probe(spec) if spec.problem.name == run.problem.name
                        else (_ for _ in ()).throw(ValueError("batch_size above the rows")))
    assert plan_module.probe(run) == whole


def test_groups_that_differ_only_in_a_split_share_one_probe_and_say_so(monkeypatch):
    from svibench import plan as plan_module
    monkeypatch.setattr(plan_module, "_PRIMED", set())  # this process has probed no model yet
    s = parse_study(tomllib.loads(STUDY.replace('dim = [1, 2]', 'dim = 1, seed = [0, 1, 2]')))
    probed = []
    plan = plan_study(s, lambda run: probed.append(run.problem.name) or FAKE)
    assert len(plan.groups) == 9 and len(probed) == 1 + 3  # 3 algorithm points, once each, the first primed
    assert all(g.seconds == plan.groups[0].seconds for g in plan.groups)
    shared = [g for g in plan.groups if "probed on " in g.how]
    assert len(shared) == 6 and all("seed=0" in g.how and "seed=0" not in g.problem for g in shared)
    two = next(plan_studies([s], workers=2))
    assert [(g.problem, g.label) for g in two.groups] == [(g.problem, g.label) for g in plan.groups]
    assert sum("probed on " in g.how for g in two.groups) == 6


IMAGES = """
[study]
name = "images"
[budget]
iterations = 10
[[problem]]
model = "bpfa"
dataset = "image-patches"
dataset_params = { image = ["boat", "house", "barbara", "peppers"], task = ["inpainting", "denoising"], size = SIZE }
[[algorithm]]
name = "mf-svi"
"""


@pytest.mark.parametrize("size, sides", [(0, 2), (32, 1)])
def test_images_of_one_side_share_a_probe(monkeypatch, size, sides):
    """image-patches says what its cost depends on (``@dataset(cost_params=...)``): the side of its pixels (the
    crop's, else the image's: boat and barbara 512, house and peppers 256) and the task, not which image."""
    from svibench import plan as plan_module
    monkeypatch.setattr(plan_module, "_PRIMED", {"bpfa"})
    probed = []
    s = parse_study(tomllib.loads(IMAGES.replace("SIZE", str(size))))
    plan = plan_study(s, lambda run: probed.append(run.problem.name) or FAKE)
    assert len(plan.groups) == 8 and len(probed) == 2 * sides  # each task once per side
    side = {"boat": 512, "barbara": 512, "house": 256, "peppers": 256}
    for g in plan.groups:
        on = g.how.split("; probed on ")[1] if "probed on" in g.how else g.problem
        assert on in probed and on.split(",")[1] == g.problem.split(",")[1]  # the same task
        assert size or side[on.split("image=")[1].split(",")[0]] == side[g.problem.split("image=")[1].split(",")[0]]


def test_a_second_plan_takes_every_shared_group_from_the_cache(tmp_path, monkeypatch):
    """On two workers, the groups that share a probe take it from the cache the second time, as the group it was made
    on does: a second plan whose probes would all fail estimates every group."""
    monkeypatch.setenv("SVIBENCH_CACHE_DIR", str(tmp_path))
    s = parse_study(tomllib.loads(STUDY.replace('dim = [1, 2]', 'dim = 1, seed = [0, 1, 2]')))
    first = next(plan_studies([s], workers=2, cache=True))
    again = next(plan_studies([s], workers=2, measure=_dies, cache=True))
    assert all(g.how.startswith("probe from the cache: ") for g in again.groups)
    assert [g.seconds for g in again.groups] == [g.seconds for g in first.groups]
