"""The memory check before a sweep: BPFA's estimate bounds what a run really allocates (measured with
tracemalloc), and a K that cannot fit is refused before any run, in one line, with the estimate."""
from __future__ import annotations

import tomllib
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from svibench import memory
from svibench.cli import main
from svibench.data import data_dir
from svibench.datasets import cytof
from svibench.executors import run_local
from svibench.memory import MemoryBudgetError, algorithm_settings, run_budget
from svibench.model import evaluate_posterior
from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.spec import ProblemSpec
from svibench.study import load_study, parse_study
from svibench.sweep import run_study

DATA = {"n": 1500, "dim": 12, "features": 10, "heldout": 0.1, "seed": 0}
MODEL = {"features": 40, "predictive_samples": 3, "eval_chunk": 400, "init_rows": 200, "init_sweeps": 2}
REPORTS = Path(__file__).resolve().parents[2] / "reports"
SVI = {"batch_size": 300, "burnin": 2, "samples": 3, "inner_iterations": 5, "t0": 1.0, "kappa": 0.75}


def _run(algorithm: str, params: dict):
    """Load the data, init, 3 steps and one evaluation; the model."""
    model = build_model(ProblemSpec("p", "bpfa", "bpfa-synthetic", MODEL, DATA), cache=False)
    alg = get_registry().algorithm(algorithm).build(params)
    alg.init(model, np.random.default_rng(0))
    for _ in range(3):
        alg.step()
    evaluate_posterior(model, alg.posterior(), np.random.default_rng(1))
    return model


def _measured_peak(algorithm: str, params: dict) -> tuple[int, int]:
    """(tracemalloc peak of a run after a warm-up that compiles the kernels, as the runner's; the model's estimate)."""
    _run(algorithm, params)
    tracemalloc.start()
    try:
        model = _run(algorithm, params)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return peak, type(model).memory_bytes(model.data, MODEL, algorithm_settings(algorithm, params))


@pytest.mark.parametrize("algorithm, params", [
    ("mf-svi", SVI), ("gibbs-ssvi", SVI), ("mimno-svi", SVI), ("titsias-ssvi", SVI),
    ("gibbs-ssvi", {**SVI, "init_method": "gibbs"}), ("vmp", {"inner_iterations": 5}), ("gibbs", {}),
])
def test_bpfa_estimate_bounds_the_measured_peak_and_is_not_vacuous(algorithm, params):
    peak, estimate = _measured_peak(algorithm, params)
    assert peak <= estimate <= 6 * peak, (peak, estimate)


def test_the_estimate_grows_with_k_and_the_rows_per_step():
    model = build_model(ProblemSpec("p", "bpfa", "bpfa-synthetic", MODEL, DATA), cache=False)
    estimate = lambda K, batch: type(model).memory_bytes(model.data, {**MODEL, "features": K},  # noqa: E731
                                                         algorithm_settings("mf-svi", {"batch_size": batch}))
    assert estimate(40, 100) < estimate(400, 100) < estimate(4000, 100)
    assert estimate(40, 100) < estimate(40, 1000)
    assert estimate(40, 10**9) == estimate(40, DATA["n"])  # a step holds at most every training row
    bbvi = type(model).memory_bytes(model.data, MODEL, algorithm_settings("bbvi", {}))  # batch_size None: all rows
    assert bbvi == type(model).memory_bytes(model.data, MODEL, algorithm_settings("bbvi", {"batch_size": DATA["n"]}))


STUDY = """
[study]
name = "too-big"
seeds = [0]

[budget]
iterations = 2

[[problem]]
name = "bpfa/huge-k"
model = "bpfa"
dataset = "bpfa-synthetic"
model_params = {{ features = {features}, predictive_samples = 1 }}
dataset_params = {{ n = 400, dim = 8, features = 5 }}

[[algorithm]]
name = "mf-svi"
params = {{ batch_size = 100 }}
"""


def test_a_k_that_does_not_fit_is_refused_before_any_run_with_the_estimate(tmp_path):
    study = parse_study(tomllib.loads(STUDY.format(features=2_000_000)), source=str(tmp_path / "study.toml"))
    with pytest.raises(MemoryBudgetError) as err:
        run_study(study, tmp_path / "out", run_local, progress=False, memory_limit=2**30)
    message = str(err.value)
    assert "\n" not in message
    assert "MF-SVI on bpfa/huge-k" in message and "needs an estimated" in message and "--memory-limit 1 GiB" in message
    assert not (tmp_path / "out" / "runs").exists()


def test_the_cli_refuses_it_with_exit_status_2_and_runs_a_k_that_fits(tmp_path, capsys):
    path = tmp_path / "study.toml"
    path.write_text(STUDY.format(features=2_000_000))
    assert main(["run", str(path), "--workers", "1", "--memory-limit", "1", "-q", "--no-report"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("svibench: error: nothing was run: MF-SVI on bpfa/huge-k") and err.count("\n") == 1
    path.write_text(STUDY.format(features=20))
    assert main(["run", str(path), "--workers", "1", "--memory-limit", "4", "-q", "--no-report"]) == 0


def test_without_a_limit_the_available_memory_is_shared_by_the_workers(monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda: 8 * 2**30)
    assert run_budget(None, 4) == (2 * 2**30, "8 GiB available on this machine / 4 workers")
    assert run_budget(3 * 2**30, 4) == (3 * 2**30, "--memory-limit 3 GiB per worker")


@pytest.mark.skipif(not all((data_dir() / f.path).exists() for f in cytof.FILES.values()),
                    reason="the CyTOF files are not in the data directory")
def test_the_genomic_study_at_paper_scale_fits_one_gib_per_run_and_not_a_tenth(tmp_path):
    """K = 500 on all 172,791 cells: checked before any run; the executor is reached only when it fits."""
    study = load_study(REPORTS / "shah2015-genomic" / "study.toml", scale="paper")
    assert {r.problem.model_params["features"] for r in study.runs} == {500}
    reached = []

    def executor(runs, on_progress):
        reached.append(len(runs))
        return iter(())

    with pytest.raises(MemoryBudgetError, match=r"'features': 500.*needs an estimated 0\.\d+ GiB"):
        run_study(study, tmp_path / "small", executor, progress=False, memory_limit=2**30 // 10)
    assert reached == []
    run_study(study, tmp_path / "fits", executor, progress=False, memory_limit=2**30)
    assert reached == [len(study.runs)]
