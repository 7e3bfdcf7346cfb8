"""Reference posteriors (issue 30): the artifact, staleness, the diagnostics floor, the runner's accuracy metrics,
and agreement of independent Pólya-Gamma Gibbs references within Monte Carlo error."""
from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from svibench.cli import main
from svibench.problem import build_model
from svibench.reference.artifact import ReferenceError, StaleReference, load_reference, reference_path
from svibench.reference.build import compute_reference, make_reference
from svibench.reference.diagnostics import Floor, diagnose
from svibench.reference.sampling import SamplerSettings, sample_chains
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

LINREG = ProblemSpec("linreg/small", "linreg", "linreg-synthetic", {"prior_precision": 2.0}, {"n": 200, "n_test": 50, "dim": 3})
AUSTRALIAN = ProblemSpec("logreg/australian", "logreg", "australian", {"delta": 1e-5}, {"split": 0})
SHORT = SamplerSettings(chains=2, warmup=300, draws=3000)


@pytest.fixture
def refdir(tmp_path, monkeypatch):
    monkeypatch.setenv("SVIBENCH_REFERENCE_DIR", str(tmp_path))
    return tmp_path


def _run(problem: ProblemSpec, algorithm: str = "vmp", iterations: int = 3):
    return execute(RunSpec("t", problem, algorithm, algorithm, {}, 0, Budget(iterations=iterations), Checkpoints(count=3)))


# -- linreg: the exact posterior as reference; VMP is exact on this conjugate model --------------------------------

def test_vmp_on_linreg_scores_zero_against_the_exact_reference_and_the_prior_does_not(refdir):
    made = make_reference(LINREG, build_model(LINREG, cache=False), SHORT)
    assert made.computed and made.path.parent == refdir and made.reference.meta["method"] == "exact"
    ds = _run(LINREG)
    assert ds.attrs["status"] == "ok", ds.attrs["message"]
    assert made.path.name in ds.attrs["reference"]
    final = {m: float(ds[m].values[-1]) for m in ("ref_mean_error", "ref_log_sd_ratio", "ref_sd_error", "ref_w2")}
    assert all(abs(v) < 1e-8 for v in final.values()), final
    assert ds["ref_w2"].values[0] > 0.1 and ds["ref_mean_error"].values[0] > 1.0  # the prior, at iteration 0
    assert "ref_predictive_kl" not in ds  # linreg predicts no classes
    assert 0.0 < ds.attrs["accuracy_seconds"] < ds.attrs["evaluation_seconds"] < ds.attrs["wall_seconds"]


def test_a_run_scored_at_its_last_checkpoint_only_records_what_every_checkpoint_scoring_records_there(refdir):
    """``score_reference = "last"``: the accuracy metrics only in the last row, equal to those a run scored at
    every checkpoint records there (the same trajectory: scoring draws nothing from the run's streams); the rest of
    the rows unchanged; the run says how it was scored; its identity differs."""
    make_reference(LINREG, build_model(LINREG, cache=False), SHORT)
    spec = RunSpec("t", LINREG, "svi", "svi", {"batch_size": 50}, 0, Budget(iterations=20), Checkpoints(count=4))
    every, last = execute(spec), execute(replace(spec, score_reference="last"))
    assert every.attrs["status"] == last.attrs["status"] == "ok"
    for m in ("ref_mean_error", "ref_sd_error", "ref_w2"):
        assert np.isfinite(every[m].values).all()
        assert np.isnan(last[m].values[:-1]).all() and last[m].values[-1] == every[m].values[-1]
    np.testing.assert_array_equal(last["elbo"].values, every["elbo"].values)
    assert 'score_reference = "last"' in last.attrs["reference"] and "last" not in every.attrs["reference"]
    assert replace(spec, score_reference="last").run_id != spec.run_id


def test_a_problem_without_reference_runs_without_accuracy_metrics_and_says_which_command_makes_one(refdir):
    ds = _run(LINREG)
    assert ds.attrs["status"] == "ok" and "ref_w2" not in ds
    assert "svibench reference STUDY.toml --problem 'linreg/small'" in ds.attrs["reference"]
    assert ds.attrs["accuracy_seconds"] == 0.0


def test_a_reference_is_reused_and_its_arrays_are_checksummed(refdir):
    model = build_model(LINREG, cache=False)
    first = make_reference(LINREG, model, SHORT)
    again = make_reference(LINREG, model, SHORT)
    assert not again.computed and np.array_equal(again.reference.cov, first.reference.cov)
    npz = first.path.with_suffix(".npz")
    npz.write_bytes(npz.read_bytes()[:-8] + b"corrupt!")
    with pytest.raises(ReferenceError, match="missing or corrupt"):
        load_reference(first.path)


@pytest.mark.parametrize("field, value, says", [("data_sha256", "0" * 64, "data checksum"),
                                                ("model_params_resolved", {"prior_precision": 2.0, "noise_variance": 1.0},
                                                 "model parameters")])
def test_a_stale_reference_is_refused_in_one_line_naming_the_mismatch(refdir, field, value, says):
    path = make_reference(LINREG, build_model(LINREG, cache=False), SHORT).path
    meta = json.loads(path.read_text())
    meta[field] = value
    path.write_text(json.dumps(meta))
    with pytest.raises(StaleReference, match=f"stale reference for linreg/small: its {says}"):
        make_reference(LINREG, build_model(LINREG, cache=False), SHORT)
    ds = _run(LINREG)
    assert ds.attrs["status"] == "failed" and "stale reference" in ds.attrs["message"]
    assert "\n" not in ds.attrs["message"].split(" (at ")[0]


# -- the diagnostics floor -------------------------------------------------------------------------------------------

def test_the_floor_passes_independent_draws_and_fails_a_sticky_chain():
    rng = np.random.default_rng(0)
    assert Floor().failures(diagnose(rng.standard_normal((4, 1000, 3)))) == []
    sticky = np.cumsum(rng.standard_normal((4, 1000, 2)), axis=1)  # random walks: no stationary distribution
    failures = Floor().failures(diagnose(sticky))
    assert [f.split()[0] for f in failures] == ["split-R̂", "bulk", "tail"]


def test_a_sampled_reference_that_fails_the_floor_is_refused_unless_forced(refdir):
    model = build_model(AUSTRALIAN, cache=False)
    tiny = SamplerSettings(chains=2, warmup=0, draws=20)
    with pytest.raises(ReferenceError, match="fail the floor .*not stored.*--force"):
        make_reference(AUSTRALIAN, model, tiny)
    assert not reference_path(AUSTRALIAN).exists()
    made = make_reference(AUSTRALIAN, model, tiny, force=True)
    diagnostics = load_reference(made.path).meta["diagnostics"]
    assert diagnostics["passed"] is False and diagnostics["forced"] is True and diagnostics["failures"]
    ds = _run(AUSTRALIAN, iterations=2)
    assert "FAILED its diagnostics" in ds.attrs["reference"] and np.isfinite(ds["ref_predictive_kl"].values).all()


def test_the_reference_command_computes_reuses_and_refuses_a_failing_floor(refdir, tmp_path, capsys):
    study = tmp_path / "s.toml"
    study.write_text('[study]\nname = "s"\nseeds = [0]\n[budget]\niterations = 10\ncheckpoints = 10\n'
                     '[[problem]]\nmodel = "logreg"\ndataset = "australian"\nmodel_params = { delta = 1e-5 }\n'
                     'dataset_params = { split = 0 }\n[[algorithm]]\nname = "vmp"\n')
    assert main(["reference", str(study), "--chains", "2", "--warmup", "0", "--draws", "20"]) == 1
    assert "fail the floor" in capsys.readouterr().out and not list(refdir.glob("*.json"))
    assert main(["reference", str(study), "--problem", "logreg/australian", "--chains", "2", "--warmup", "0",
                 "--draws", "20", "--force"]) == 0
    assert "computed" in capsys.readouterr().out
    assert main(["reference", str(study)]) == 0 and "reused" in capsys.readouterr().out
    assert main(["reference", str(study), "--problem", "nope"]) == 2


# -- two independent PG Gibbs references agree within Monte Carlo error ---------------------------------------------

def test_the_same_seed_gives_the_same_chains():
    model = build_model(AUSTRALIAN, cache=False)
    settings = SamplerSettings(chains=2, warmup=5, draws=10, seed=3)
    a, b = sample_chains(model, settings), sample_chains(model, settings)
    assert np.array_equal(a.draws, b.draws) and a.inits == ("prior", "dispersed")


def _z(a, b, name: str) -> np.ndarray:
    return (a.arrays[name] - b.arrays[name]) / np.hypot(a.arrays[f"mcse_{name}"], b.arrays[f"mcse_{name}"])


def test_two_pg_gibbs_references_from_other_seeds_and_starts_agree_within_mcse():
    """Australian (D = 15): seeds 1 and 2, each with a chain from the prior's ω and one from a dispersed z.
    The means and sds differ by less than 4 combined MCSEs in every coordinate (15 coordinates: a false alarm
    has probability ~1e-3), while a reference of another prior (δ = 1) is far outside them."""
    model = build_model(AUSTRALIAN, cache=False)
    a, b = (compute_reference(AUSTRALIAN, model, SamplerSettings(2, 300, 3000, seed=s), Floor(), force=True)
            for s in (1, 2))
    assert np.max(np.abs(_z(a, b, "mean"))) < 4 and np.max(np.abs(_z(a, b, "sd"))) < 4
    other = ProblemSpec("o", "logreg", "australian", {"delta": 1.0}, {"split": 0})
    c = compute_reference(other, build_model(other, cache=False), SamplerSettings(2, 100, 500, seed=1), Floor(),
                          force=True)
    assert np.max(np.abs(_z(a, c, "mean"))) > 10
    assert np.max(np.abs(a.predictive - b.predictive)) < 4 * np.sqrt(2) * a.meta["mcse"]["predictive_max"] + 1e-3


def test_svibench_run_names_the_command_for_each_problem_without_reference(refdir, tmp_path, capsys):
    from svibench.reference.attach import missing_notes
    from svibench.registry import get_registry

    pmf = ProblemSpec("pmf/s", "pmf", "pmf-synthetic", {}, {})  # a model that offers no reference posterior
    assert missing_notes([LINREG, pmf], get_registry()) == [
        "no reference posterior for linreg/small: posterior-accuracy metrics skipped; compute one with "
        "`svibench reference STUDY.toml --problem 'linreg/small'`"]
    make_reference(LINREG, build_model(LINREG, cache=False), SHORT)
    assert missing_notes([LINREG, pmf], get_registry()) == []


def test_a_pg_gibbs_reference_matches_the_posterior_by_quadrature_within_mcse():
    """An independent truth: logistic regression with a bias and one feature (D = 2, N = 30), its posterior
    means and sds by a 400 × 400 grid over the weights (the exact log joint, no augmentation)."""
    from scipy.special import log_expit

    from svibench.data import Dataset
    from svibench.models.logreg import BayesianLogisticRegression
    from svibench.reference.moments import sampled_arrays

    rng = np.random.default_rng(5)
    x = rng.standard_normal((30, 1))
    y = (rng.uniform(size=30) < 1 / (1 + np.exp(-(0.5 + 1.5 * x[:, 0])))).astype(float)
    model = BayesianLogisticRegression(Dataset("toy", "classification", {"X": x, "y": y}), delta=1.0, bias_precision=1.0)
    chains = sample_chains(model, SamplerSettings(chains=2, warmup=200, draws=4000, seed=7))
    arrays, _ = sampled_arrays(chains.draws, diagnose(chains.draws))
    grid = np.linspace(-4, 5, 400)
    b, w = np.meshgrid(grid, grid, indexing="ij")
    eta = b[..., None] + w[..., None] * x[:, 0]
    logp = log_expit((2 * y - 1) * eta).sum(-1) - 0.5 * (b**2 + w**2)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    mean = np.array([(p * b).sum(), (p * w).sum()])
    sd = np.sqrt(np.array([(p * b**2).sum(), (p * w**2).sum()]) - mean**2)
    assert np.all(np.abs(arrays["mean"] - mean) < 4 * arrays["mcse_mean"]), (arrays["mean"], mean, arrays["mcse_mean"])
    assert np.all(np.abs(arrays["sd"] - sd) < 4 * arrays["mcse_sd"]), (arrays["sd"], sd, arrays["mcse_sd"])
    assert np.all(arrays["mcse_mean"] < 0.05 * sd)  # tight enough that the check means something
