"""Study files: expansion into runs, and one-line errors for bad input (no traceback)."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from svibench.study import StudyError, load_study, parse_study

GOOD = """
[study]
name = "t"
seeds = [0, 1]

[budget]
iterations = 5
checkpoints = 3

[[problem]]
model = "gmm"
dataset = "gmm-synthetic"
dataset_params = { n = 200, n_test = 50 }

[[algorithm]]
name = "svi"
params = { batch_size = 20, kappa = [0.6, 0.9] }

[[algorithm]]
name = "vmp"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(textwrap.dedent(text))
    return path


def test_grids_and_seeds_expand_into_runs_with_labels(tmp_path):
    study = load_study(write(tmp_path, GOOD))
    assert len(study.runs) == (2 + 1) * 2
    assert sorted({r.label for r in study.runs}) == ["SVI (kappa=0.6)", "SVI (kappa=0.9)", "VMP"]
    assert len({r.run_id for r in study.runs}) == 6


def test_score_reference_reaches_every_run(tmp_path):
    runs = load_study(write(tmp_path, GOOD)).runs
    last = load_study(write(tmp_path, GOOD.replace("seeds = [0, 1]", 'seeds = [0, 1]\nscore_reference = "last"'))).runs
    assert {r.score_reference for r in runs} == {"checkpoints"} and {r.score_reference for r in last} == {"last"}


def test_paper_scale_merges_its_overrides(tmp_path):
    path = write(tmp_path, GOOD + "\n[scales.paper]\nseeds = [0, 1, 2]\ndataset_params = { n = 1000 }\nbudget = { iterations = 50 }\n")
    study = load_study(path, scale="paper")
    assert {r.seed for r in study.runs} == {0, 1, 2}
    assert {r.problem.dataset_params["n"] for r in study.runs} == {1000}
    assert {r.budget.iterations for r in study.runs} == {50}
    with pytest.raises(StudyError, match="no \\[scales.huge\\]"):
        load_study(path, scale="huge")


TWO_PROBLEMS = GOOD.replace("[[algorithm]]", """
[[problem]]
name = "gmm/big"
model = "gmm"
dataset = "gmm-synthetic"
dataset_params = { n = 300, n_test = 50 }

[[algorithm]]""", 1) + """
[report]
target = { metric = "elbo", relative = 0.01 }

[[claim]]
id = "on-big"
source = "s"
kind = "faster"
metric = "elbo"
better = ["VMP"]
worse = ["SVI"]
problems = ["gmm/big"]

[[claim]]
id = "on-both"
source = "s"
kind = "faster"
metric = "elbo"
better = ["VMP"]
worse = ["SVI"]
problems = ["gmm/big", "gmm/gmm-synthetic"]

[scales.paper]
problems = ["gmm/gmm-synthetic"]
"""


def test_a_scale_can_run_some_problems_and_their_claims_only(tmp_path):
    path = write(tmp_path, TWO_PROBLEMS)
    assert {r.problem.base for r in load_study(path).runs} == {"gmm/big", "gmm/gmm-synthetic"}
    study = load_study(path, scale="paper")
    assert {r.problem.base for r in study.runs} == {"gmm/gmm-synthetic"}
    claims = {c.id: c for c in study.claims}
    assert "not run at the paper scale" in claims["on-big"].not_run and "gmm/big" in claims["on-big"].not_run
    assert not claims["on-both"].not_run and claims["on-both"].problems == ("gmm/gmm-synthetic",)
    restricted = TWO_PROBLEMS.replace('[[algorithm]]\nname = "vmp"', '[[algorithm]]\nname = "vmp"\nproblems = ["gmm/big"]')
    assert {(r.label, r.problem.base) for r in load_study(write(tmp_path, restricted), scale="paper").runs} == {
        ("SVI (kappa=0.6)", "gmm/gmm-synthetic"), ("SVI (kappa=0.9)", "gmm/gmm-synthetic")}  # an entry of left-out problems
    on_both = next(c for c in load_study(write(tmp_path, restricted), scale="paper").claims if c.id == "on-both")
    assert on_both.not_run.startswith("not run at the paper scale: VMP run(s) only on problems outside")
    with pytest.raises(StudyError, match="no \\[\\[problem\\]\\] named 'gmm/huge'; the study's problems: gmm/gmm-synthetic, gmm/big"):
        load_study(write(tmp_path, TWO_PROBLEMS.replace('problems = ["gmm/gmm-synthetic"]\n', 'problems = ["gmm/huge"]\n')),
                   scale="paper")


def test_a_scale_narrowing_a_grid_to_one_value_keeps_the_label_and_notes_may_name_the_others(tmp_path):
    noted = GOOD + """
[[target]]
id = "t1"
source = "s"
kind = "order"
metric = "elbo"
better = ["VMP"]
worse = ["SVI"]
note = "SVI at kappa = 0.9 ends at {final[SVI (kappa=0.9)].elbo:.3g}."

[scales.small]
algorithm_params = { kappa = [0.6] }
"""
    study = load_study(write(tmp_path, noted), scale="small")
    assert sorted({r.label for r in study.runs}) == ["SVI (kappa=0.6)", "VMP"]  # not "SVI": the study varies kappa
    assert {r.label for r in load_study(write(tmp_path, noted)).runs} >= {"SVI (kappa=0.6)", "SVI (kappa=0.9)"}
    with pytest.raises(StudyError, match="no run of the study has the label 'SVI \\(kappa=0.7\\)'"):
        load_study(write(tmp_path, noted.replace("kappa=0.9)].elbo", "kappa=0.7)].elbo")), scale="small")


def test_incompatible_pairs_are_skipped_with_a_reason(tmp_path):
    study = load_study(write(tmp_path, GOOD.replace('name = "vmp"', 'name = "titsias-ssvi"')))
    assert study.skipped and "not 'titsias'" in study.skipped[0].reason


@pytest.mark.parametrize("name, label", [("sk-alg2", "S&K-Alg2"), ("sk-fg", "S&K-FG"), ("ep", "EP")])
def test_sk_and_ep_on_a_model_without_a_latent_gaussian_are_skipped_at_load_with_the_capability(tmp_path, name, label):
    # gmm has no design/latent prior: S&K and EP need LatentGaussian, so the pair is a skip naming what is missing
    study = load_study(write(tmp_path, GOOD.replace('name = "vmp"', f'name = "{name}"')))
    assert [(s.problem, s.algorithm) for s in study.skipped] == [("gmm/gmm-synthetic", label)]
    assert "gmm does not offer LatentGaussian (lacks design" in study.skipped[0].reason
    assert {r.label for r in study.runs} == {"SVI (kappa=0.6)", "SVI (kappa=0.9)"}


BAD = {
    "unknown algorithm": (GOOD.replace('name = "vmp"', 'name = "vmpp"'), "unknown algorithm 'vmpp'; valid names:"),
    "unknown key": (GOOD.replace("checkpoints = 3", "checkpoints = 3\nepoch = 3"), "[budget]: unknown key 'epoch'"),
    "wrong type": (GOOD.replace("iterations = 5", 'iterations = "five"'), "[budget] iterations: expected a positive integer, got 'five' (str)"),
    "empty grid": (GOOD.replace("kappa = [0.6, 0.9]", "kappa = []"), "kappa: empty grid"),
    "wrong param type": (GOOD.replace("batch_size = 20", 'batch_size = "20"'), "batch_size: expected int"),
    "unknown param": (GOOD.replace("batch_size = 20", "batchsize = 20"), "has no parameter 'batchsize'"),
    "bad value": (GOOD.replace("kappa = [0.6, 0.9]", "kappa = 2.0"), "kappa must be in (0.5, 1]"),
    "out of declared range": (GOOD + '\n[[algorithm]]\nname = "cvi"\nparams = { n_samples = 0 }\n',
                              "algorithm 'cvi': n_samples = 0 is outside its declared range: int ≥ 1 (svibench describe"),
    "bad choice": (GOOD.replace("batch_size = 20", 'batch_size = 20, view = "both"'),
                   """view = 'both' is outside its declared range: {"expected", "sampled"}"""),
    "not possible in a study": (GOOD + '\n[[algorithm]]\nname = "cvi"\nparams = { kappa = 0.9 }\n',
                                "algorithm 'cvi': kappa cannot be set in a study: κ of the Robbins–Monro step"),
    "not toml": ("[study\nname=", "is not valid TOML"),
    "unknown dataset": (GOOD.replace('dataset = "gmm-synthetic"', 'dataset = "no-such-data"'), "unknown dataset 'no-such-data'"),
    "no problems": (GOOD.split("[[problem]]")[0], "needs at least one [[problem]]"),
    "repeated seed": (GOOD.replace("seeds = [0, 1]", "seeds = [0, 0]"), "[study] seeds: [0, 0] repeats a seed"),
    "score_reference": (GOOD.replace("seeds = [0, 1]", 'seeds = [0, 1]\nscore_reference = "end"'),
                        "[study] score_reference: expected one of 'checkpoints', 'last' (when runs are scored against a "
                        "reference posterior), got 'end'"),
    "unknown scale key": (GOOD + "\n[scales.paper]\nseed = [1]\n", "[scales.paper]: unknown key 'seed'; valid keys:"),
    "paper value": (GOOD + '\n[[paper]]\nproblem = "p"\nalgorithm = "a"\nmetric = "elbo"\nvalue = "high"\n',
                    "[[paper]] #1 value: expected a number, got 'high' (str)"),
    "no algorithms": (GOOD.split("[[algorithm]]")[0], "needs at least one [[algorithm]]"),
    "paper split elsewhere": (GOOD.replace("n_test = 50 }", 'n_test = 50, split = "paper" }'),
                              "dataset_params.split: dataset 'gmm-synthetic' has no paper split; the datasets with one "
                              "are australian, breast-cancer, colon-cancer, covtype"),
    "scale problem budget": (GOOD + '\n[scales.paper.problem_budget]\n"gmm/nope" = { iterations = 3 }\n', None),
    "paper iteration": (GOOD + '\n[[paper]]\nproblem = "p"\nalgorithm = "a"\nmetric = "elbo"\nvalue = 1.0\niteration = -1\n',
                        "[[paper]] #1 iteration: expected a non-negative integer, got -1 (int)"),
    "authors folder": (GOOD + '\n[report]\nauthors = "no/such/folder"\n', "[report] authors: "),
}


@pytest.mark.parametrize("case", sorted(k for k in BAD if BAD[k][1] is not None))
def test_bad_study_files_give_one_line_errors(tmp_path, case):
    text, message = BAD[case]
    with pytest.raises(StudyError) as info:
        load_study(write(tmp_path, text))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_the_cli_reports_a_bad_study_in_one_line_without_a_traceback(tmp_path):
    path = write(tmp_path, BAD["unknown algorithm"][0])
    for args in ([str(path)], [str(tmp_path / "missing.toml")]):
        proc = subprocess.run([sys.executable, "-m", "svibench.cli", "run", *args, "-o", str(tmp_path / "out")],
                              capture_output=True, text=True)
        assert proc.returncode == 2
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("svibench: error:")
    assert "does not exist" in proc.stderr


def test_parse_study_rejects_a_non_table_section():
    with pytest.raises(StudyError, match="\\[budget\\]: expected a table"):
        parse_study({"study": {"name": "x"}, "budget": 3})


REPORT_BAD = {
    "negative relative target": ('target = { metric = "elbo", relative = -1 }',
                                 "[report] target #1 relative: expected a non-negative number, got -1"),
    "unknown key": ('targets = { metric = "elbo" }', "[report]: unknown key 'targets'; valid keys: target,"),
    "unknown target key": ('target = { metric = "elbo", relativ = 0.1 }', "[report] target #1: give `metric` and one of"),
    "metric no model reports": ('target = { metric = "psnr", value = 30.0 }',
                                "[report] target #1 metric: no model of the study reports 'psnr'; use one of elbo,"),
    "a direction (the model declares it)": ('lower_is_better = ["elbo"]',
                                            "[report] lower_is_better: which way is better is declared by the model"),
    "the other direction": ('higher_is_better = ["elbo"]', "[report] higher_is_better: which way is better is declared"),
    "plot of an unknown metric": ('plot = ["test_mse"]', "[report] plot: no model of the study reports 'test_mse'"),
    "not a table": (None, "[report]: expected a table, got 3 (int)"),
}


@pytest.mark.parametrize("case", sorted(REPORT_BAD))
def test_a_bad_report_table_is_an_error_at_load_time(tmp_path, case):
    """[report] was checked only after the sweep: a typo there failed after hours of runs."""
    line, message = REPORT_BAD[case]
    text = "report = 3\n" + GOOD if line is None else GOOD + "\n[report]\n" + line + "\n"
    with pytest.raises(StudyError) as info:
        load_study(write(tmp_path, text))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_good_report_table_is_kept_for_the_report(tmp_path):
    table = 'target = [{ metric = "elbo", relative = 0.01 }, { metric = "heldout_loglik", value = -3.0 }]\nplot = ["elbo"]\n'
    study = load_study(write(tmp_path, GOOD + "\n[report]\n" + table))
    assert study.report["plot"] == ["elbo"] and len(study.report["target"]) == 2


def test_a_directory_given_as_the_study_file_is_named_as_such(tmp_path):
    write(tmp_path, GOOD)
    with pytest.raises(StudyError) as info:
        load_study(tmp_path)
    assert str(info.value) == f"{tmp_path} is a directory; give the study file, e.g. {tmp_path / 'study.toml'}"


def test_an_algorithm_entry_can_be_restricted_to_some_models():
    """``models = [...]`` runs an entry only on problems of those models (not a skip: it was not asked for);
    an unknown model name is refused at load."""
    text = GOOD.replace('name = "svi"\n', 'name = "svi"\nmodels = ["gmm"]\n') + """
[[problem]]
model = "linreg"
dataset = "linreg-synthetic"
dataset_params = { n = 50, n_test = 10 }
"""
    study = parse_study(tomllib.loads(text))
    assert {r.problem.model for r in study.runs if r.algorithm == "svi"} == {"gmm"}
    assert {r.problem.model for r in study.runs if r.algorithm == "vmp"} == {"gmm", "linreg"}
    assert not study.skipped
    with pytest.raises(StudyError, match=r"models: unknown model\(s\) nope; registered: .*gmm"):
        parse_study(tomllib.loads(text.replace('models = ["gmm"]', 'models = ["nope"]')))


def test_an_algorithm_entry_can_be_restricted_to_some_problems():
    """``problems = [...]`` runs an entry only on those problems (a grid's base name stands for all its points,
    a point can be named alone); an unknown name is refused at load with the study's problem names."""
    text = GOOD.replace('name = "svi"\n', 'name = "svi"\nproblems = ["small"]\n').replace(
        'model = "gmm"\n', 'name = "small"\nmodel = "gmm"\n').replace("n = 200,", "n = [200, 300],") + """
[[problem]]
name = "other"
model = "gmm"
dataset = "gmm-synthetic"
dataset_params = { n = 100, n_test = 10 }
"""
    study = parse_study(tomllib.loads(text))
    assert {r.problem.name for r in study.runs if r.algorithm == "svi"} == {"small (n=200)", "small (n=300)"}
    assert {r.problem.name for r in study.runs if r.algorithm == "vmp"} == {"small (n=200)", "small (n=300)", "other"}
    assert not study.skipped
    one = parse_study(tomllib.loads(text.replace('problems = ["small"]', 'problems = ["small (n=300)", "other"]')))
    assert {r.problem.name for r in one.runs if r.algorithm == "svi"} == {"small (n=300)", "other"}
    with pytest.raises(StudyError, match=r"^\[\[algorithm\]\] #1 \(svi\) problems: unknown problem\(s\) smal; "
                                         r"the study's problems: other, small$"):
        parse_study(tomllib.loads(text.replace('problems = ["small"]', 'problems = ["smal"]')))
    with pytest.raises(StudyError, match=r"problems: expected a non-empty list of problem names, got \[\]"):
        parse_study(tomllib.loads(text.replace('problems = ["small"]', 'problems = []')))


def test_a_problem_can_have_its_own_budget_keys_over_the_studys():
    """A [[problem]]'s ``budget`` replaces the keys it names (here the iterations and the checkpoints) for its runs
    only, at every scale; the other keys are the study's; a bad key or value names the problem's table."""
    text = GOOD + """
[[problem]]
name = "marked"
model = "gmm"
dataset = "gmm-synthetic"
dataset_params = { n = 100, n_test = 10 }
budget = { iterations = 10, at = [1, 2, 3, 5, 8, 10], seconds = 60 }

[scales.paper]
budget = { iterations = 50, checkpoints = 4 }
"""
    for scale, plain in (("default", (5, 3)), ("paper", (50, 4))):
        study = parse_study(tomllib.loads(text), scale=scale)
        budgets = {(r.problem.name, r.budget.iterations, r.budget.seconds, r.checkpoints.count, r.checkpoints.at)
                   for r in study.runs}
        assert budgets == {("gmm/gmm-synthetic", plain[0], None, plain[1], ()),
                           ("marked", 10, 60.0, plain[1], (1, 2, 3, 5, 8, 10))}
    marked = next(r for r in study.runs if r.problem.name == "marked")
    assert marked.checkpoints.schedule(marked.budget).tolist() == [1, 2, 3, 5, 8, 10]
    with pytest.raises(StudyError, match=r"^\[\[problem\]\] #2 budget iterations: expected a positive integer, got 0"):
        parse_study(tomllib.loads(text.replace("iterations = 10,", "iterations = 0,")))
    with pytest.raises(StudyError, match=r"^\[\[problem\]\] #2 budget: unknown key 'iteration'"):
        parse_study(tomllib.loads(text.replace("iterations = 10,", "iteration = 10,")))


def test_a_claim_on_a_peer_whose_library_is_missing_is_not_run_and_the_study_still_runs(monkeypatch):
    """The README's first command runs the quickstart study without the [peers] extra: scikit-learn's BGMM is skipped,
    and its target is not run with the skip's reason, instead of the study failing to load."""
    import svibench.peers

    monkeypatch.setattr(svibench.peers, "missing_libraries", lambda modules: list(modules))
    study = load_study(Path(__file__).resolve().parents[2] / "reports" / "quickstart" / "study.toml")
    assert {r.method for r in study.runs} == {"SVI", "VMP"}
    assert {s.algorithm for s in study.skipped} == {"scikit-learn BGMM"}
    target = next(c for c in study.claims if c.id == "vmp-matches-sklearn-bgmm")
    assert target.not_run == "scikit-learn BGMM was skipped: needs sklearn: pip install 'svibench[peers]'"
    assert all(not c.not_run for c in study.claims if c.id != target.id)


@pytest.mark.parametrize("scale", ["default", "paper"])
@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[2] / "reports").glob("*/study.toml")),
                         ids=lambda p: p.parent.name)
def test_every_committed_study_loads_without_the_peer_libraries(monkeypatch, path, scale):
    """A default install (no [peers] extra) can run every committed study: its peers are skipped, not fatal."""
    import svibench.peers
    from svibench.registry import get_registry

    monkeypatch.setattr(svibench.peers, "missing_libraries", lambda modules: list(modules))
    study = load_study(path, scale=scale)
    registry = get_registry()
    peers = [r.label for r in study.runs if issubclass(registry.algorithm(r.algorithm).cls, svibench.peers.Peer)]
    assert study.runs and not peers


SCALED = GOOD + """
[[problem]]
name = "marked"
model = "gmm"
dataset = "gmm-synthetic"
dataset_params = { n = 100, n_test = 10 }
budget = { iterations = 10, seconds = 60 }

[scales.paper]
methods = ["VMP"]

[scales.paper.problem_budget]
"marked" = { iterations = 20, at = [1, 2, 3] }

[[claim]]
id = "vmp-wins"
source = "a paper"
kind = "order"
metric = "elbo"
better = ["VMP"]
worse = ["SVI"]
note = "at the default scale"

[scales.paper.claim.vmp-wins]
note = "at the paper scale"
"""


def test_a_scale_can_give_one_problem_its_own_budget_keys_and_run_some_methods_only():
    default, paper = (parse_study(tomllib.loads(SCALED), scale=s) for s in ("default", "paper"))
    assert {(r.problem.name, r.budget.iterations) for r in default.runs} == {("gmm/gmm-synthetic", 5), ("marked", 10)}
    assert {(r.problem.name, r.budget.iterations, r.budget.seconds, r.checkpoints.at) for r in paper.runs} == {
        ("gmm/gmm-synthetic", 5, None, ()), ("marked", 20, 60.0, (1, 2, 3))}
    assert {r.method for r in paper.runs} == {"VMP"} and {r.method for r in default.runs} == {"SVI", "VMP"}
    with pytest.raises(StudyError, match=r"^\[scales\] problem_budget: no \[\[problem\]\] named 'gmm/nope'"):
        parse_study(tomllib.loads(BAD["scale problem budget"][0]), scale="paper")
    with pytest.raises(StudyError, match=r"^\[scales.paper\] methods: no \[\[algorithm\]\] has the method 'CVI'"):
        parse_study(tomllib.loads(SCALED.replace('methods = ["VMP"]', 'methods = ["CVI"]')), scale="paper")


def test_a_scale_can_say_a_claim_differently():
    """[scales.NAME.claim.ID] keys replace the claim's at that scale only; an unknown id is a one-line error."""
    notes = {s: next(c for c in parse_study(tomllib.loads(SCALED.replace('methods = ["VMP"]', '')), scale=s).claims).note
             for s in ("default", "paper")}
    assert notes == {"default": "at the default scale", "paper": "at the paper scale"}
    with pytest.raises(StudyError, match=r"^\[scales.paper\] claim: no \[\[claim\]\] or \[\[target\]\] has the id 'nope'$"):
        parse_study(tomllib.loads(SCALED.replace("claim.vmp-wins", "claim.nope").replace('methods = ["VMP"]', '')),
                    scale="paper")
