"""The runner: determinism by seed, a clock that excludes evaluation, statuses, budgets."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from svibench.executors import run_local
from svibench.registry import get_registry
from svibench.results import open_results
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec
from svibench.study import parse_study
from svibench.sweep import run_study

GMM = ProblemSpec("gmm/small", "gmm", "gmm-synthetic", {"components": 3}, {"n": 600, "n_test": 100, "components": 3})


def spec(algorithm="svi", params=None, seed=0, budget=Budget(iterations=30), plugins=(), problem=GMM, **kw):
    params = {"batch_size": 50} if params is None and algorithm == "svi" else (params or {})
    return RunSpec("test", problem, algorithm, algorithm, params, seed, budget, Checkpoints(count=8), plugins=plugins, **kw)


def test_same_seed_gives_the_same_trajectory_and_different_seeds_differ():
    a, b, c = execute(spec(seed=4)), execute(spec(seed=4)), execute(spec(seed=5))
    assert a.attrs["status"] == "ok"
    for var in ("iteration", "epoch", "elbo", "heldout_loglik"):
        np.testing.assert_array_equal(a[var].values, b[var].values)
    assert not np.allclose(a["elbo"].values[1:], c["elbo"].values[1:])


def test_checkpoints_are_log_spaced_with_iteration_zero_and_the_end():
    ds = execute(spec(budget=Budget(iterations=100)))
    its = ds["iteration"].values
    assert its[0] == 0 and its[-1] == 100
    assert np.all(np.diff(its) > 0)
    assert its[1] == 1 and len(its) <= 9  # log spacing puts early points close together


def test_epoch_budget_counts_data_points_touched():
    ds = execute(spec(params={"batch_size": 60}, budget=Budget(epochs=2.0)))
    assert ds["epoch"].values[-1] == pytest.approx(2.0)
    assert ds["iteration"].values[-1] == 20  # 600 points / 60 per step * 2 epochs


def test_evaluation_that_sleeps_does_not_count_as_algorithm_time(faulty_plugin):
    problem = ProblemSpec("slow", "test-slow-eval", "test-points", {"sleep": 0.05}, {})
    ds = execute(spec("test-sleeper", {"work": 0.002}, budget=Budget(iterations=20), plugins=(faulty_plugin,), problem=problem))
    assert ds.attrs["status"] == "ok", ds.attrs["message"]
    n_evals = ds.sizes["checkpoint"]
    # 20 steps of 2 ms CPU each: ~0.04 s of algorithm time; the evaluations slept 0.05 s each, n_evals (≥ 8) times:
    # ≥ 0.4 s that neither clock of the algorithm may count.  A sleep costs no CPU, so the CPU time has no margin to
    # lose to load; the wall time of the steps has a factor of 10 (a machine that stretched 0.04 s of steps to the
    # evaluations' 0.4 s would be too loaded to run the suite).
    assert n_evals >= 8
    assert 0.04 <= ds["time"].values[-1] < 0.04 + 0.5 * 0.05 * n_evals
    assert ds.attrs["evaluation_seconds"] >= 0.05 * n_evals
    assert ds["wall_time"].values[-1] < ds.attrs["evaluation_seconds"]


def test_failing_and_diverging_runs_are_recorded_while_the_sweep_goes_on(tmp_path, faulty_plugin):
    raw = {
        "study": {"name": "faults", "seeds": [0, 1]},
        "budget": {"iterations": 10, "checkpoints": 5},
        "problem": [
            {"model": "gmm", "dataset": "gmm-synthetic", "dataset_params": {"n": 300, "n_test": 50}},
            {"model": "test-slow-eval", "dataset": "test-points", "model_params": {"sleep": 0.0}},
        ],
        "algorithm": [{"name": "test-failing"}, {"name": "test-diverging"}, {"name": "vmp"}],
    }
    study = parse_study(raw, plugins=(faulty_plugin,))
    assert len(study.skipped) == 3  # failing and vmp need the conjugate capability; diverging only the test model
    result = run_study(study, tmp_path, partial(run_local, workers=2), progress=False)
    ds = open_results(tmp_path)
    status = dict(zip(ds.label.values, ds.status.values))
    assert status == {"test-failing": "failed", "test-diverging": "diverged", "VMP": "ok"}
    assert ds.sizes["run"] == 6 and len(result.executed) == 6
    failed = ds.where(ds.status == "failed", drop=True)
    assert all("RuntimeError: deliberate failure" in m for m in failed.message.values)
    assert all("non-finite elbo" in m for m in ds.where(ds.status == "diverged", drop=True).message.values)
    # the failing run kept its checkpoints before the failure
    assert np.isfinite(failed["elbo"].values[:, 0]).all()


def test_timeout_ends_a_run_with_its_checkpoints_kept_and_is_wall_clock(faulty_plugin):
    """Steps that sleep use no CPU time: the time limit (a safety limit) is on the wall clock."""
    problem = ProblemSpec("slow", "test-slow-eval", "test-points", {"sleep": 0.0}, {})
    ds = execute(spec("test-sleeper", {"work": 0.0, "sleep": 0.02}, budget=Budget(iterations=10_000),
                      plugins=(faulty_plugin,), problem=problem, timeout=0.3))
    assert ds.attrs["status"] == "timeout"
    assert "time limit" in ds.attrs["message"]
    assert 5 < ds["iteration"].values[-1] < 10_000
    assert ds["time"].values[-1] < 0.1 < ds["wall_time"].values[-1]


def test_seconds_budget_stops_on_algorithm_cpu_time(faulty_plugin):
    """Each step works 10 ms of CPU and sleeps 10 ms: a budget of 0.2 s is at most 20 steps of CPU
    time, fewer by the runner's own CPU per step (CI measured 19); a wall-clock budget would stop
    after about 10."""
    problem = ProblemSpec("slow", "test-slow-eval", "test-points", {"sleep": 0.01}, {})
    ds = execute(spec("test-sleeper", {"work": 0.01, "sleep": 0.01}, budget=Budget(seconds=0.2),
                      plugins=(faulty_plugin,), problem=problem))
    assert ds.attrs["status"] == "ok"
    assert 0.2 <= ds["time"].values[-1] < 0.3
    assert 16 <= ds["iteration"].values[-1] <= 20
    assert ds["wall_time"].values[-1] >= ds["time"].values[-1] + 0.01 * ds["iteration"].values[-1]


@pytest.mark.parametrize("budget", [Budget(iterations=200), Budget(epochs=150.0), Budget(iterations=500, seconds=0.05)])
def test_fused_steps_give_the_one_step_trajectory_and_never_pass_a_checkpoint(faulty_plugin, budget):
    """An algorithm with ``fused = True`` gets its steps in chunks that end at the checkpoints (iterations and
    epochs: exactly; seconds: at the rate so far), and its trajectory is the one of single steps."""
    import sys

    problem = ProblemSpec("slow", "test-slow-eval", "test-points", {"sleep": 0.0}, {})
    runs = {name: execute(spec(name, {"work": 0.0001}, budget=budget, plugins=(faulty_plugin,), problem=problem))
            for name in ("test-sleeper", "test-fusing")}
    # the plugin module these runs used (another test may have imported tests/plugins/faulty.py under another name)
    chunks = sys.modules[get_registry((faulty_plugin,)).algorithm("test-fusing").cls.__module__].CHUNKS
    one, fused = runs["test-sleeper"], runs["test-fusing"]
    assert fused.attrs["status"] == one.attrs["status"] == "ok" and max(chunks) > 1
    if budget.seconds is None:
        np.testing.assert_array_equal(fused["iteration"].values, one["iteration"].values)
        np.testing.assert_array_equal(fused["elbo"].values, one["elbo"].values)
        assert sum(chunks) + len(one["iteration"]) - 1 >= fused["iteration"].values[-1]  # chunks + single steps
    else:  # the same draws at the iterations both reached
        common = np.intersect1d(one["iteration"].values, fused["iteration"].values)
        at = lambda ds: ds["elbo"].values[np.searchsorted(ds["iteration"].values, common)]
        np.testing.assert_array_equal(at(fused), at(one))
        assert fused["time"].values[-1] < 2 * budget.seconds
    chunks.clear()


def test_an_unknown_algorithm_in_a_spec_fails_the_run_with_the_valid_names():
    ds = execute(spec("nope", {}))
    assert ds.attrs["status"] == "failed" and "valid names" in ds.attrs["message"]


def test_the_runner_checks_hyperparameters_before_init(picky_plugin):
    """Algorithms do not call check_params themselves: the runner does, before init, and a rejected
    value ends the run failed with check_params' message."""
    plugin = picky_plugin
    ds = execute(spec("test-picky", {"rate": -2.0}, plugins=(str(plugin),)))
    assert ds.attrs["status"] == "failed"
    assert ds.attrs["message"].startswith("ValueError: rate must be > 0, got -2.0")
    assert ds.sizes["checkpoint"] == 0
    ds = execute(spec("test-picky", {"rate": 1.0}, plugins=(str(plugin),)))
    assert "init ran before check_params" in ds.attrs["message"]  # a valid value reaches init


def test_runs_of_one_problem_share_its_model_and_uncached_builds_are_fresh():
    from svibench.problem import build_model

    assert build_model(GMM) is build_model(GMM)
    fresh = build_model(GMM, cache=False)
    assert fresh is not build_model(GMM) and fresh.n_train == build_model(GMM).n_train == 600


def test_a_cached_problem_gives_the_fresh_problems_trajectory_and_no_run_leaks_into_the_next():
    """A worker keeps each problem it loaded (build_model's cache, keyed by the problem's whole definition) and runs
    one run after another on it: a run on a fresh problem, then others on the cached one, then the first again give
    the same trajectory, and the cached data stays read-only and unchanged."""
    from dataclasses import replace

    from svibench.problem import _build_model_cached, build_model

    def same(a, b):
        assert a.attrs["status"] == b.attrs["status"] == "ok"
        for var in (v for v in a.data_vars if v not in ("time", "wall_time")):
            np.testing.assert_array_equal(a[var].values, b[var].values, err_msg=str(var))

    _build_model_cached.cache_clear()
    first = execute(spec(seed=3))  # loads the problem
    before = {k: v.copy() for k, v in build_model(GMM).data.train.items()}
    same(execute(spec("vmp", seed=3)), execute(spec("vmp", seed=3)))
    execute(spec(seed=5, params={"batch_size": 20}))
    same(first, execute(spec(seed=3)))
    for key, array in build_model(GMM).data.train.items():
        assert not array.flags.writeable and np.array_equal(array, before[key]), key
    assert build_model(replace(GMM, dataset_params={**GMM.dataset_params, "n": 601})) is not build_model(GMM)
    assert build_model(replace(GMM, model_params={"components": 4})) is not build_model(GMM)


def test_a_posterior_of_the_wrong_type_is_named_in_one_line(tmp_path):
    """A model that declares its posterior types refuses another type before evaluating it."""
    plugin = tmp_path / "bare.py"
    plugin.write_text(
        "from svibench.algorithm import Algorithm\n\n\n"
        "class Bare(Algorithm):\n    name = 'test-bare'\n\n"
        "    def init(self, model, rng):\n        self.lam_ = model.prior_natural()\n\n"
        "    def step(self):\n        return 1\n\n"
        "    def posterior(self):\n        return self.lam_\n")
    ds = execute(spec("test-bare", {}, plugins=(str(plugin),)))
    assert ds.attrs["status"] == "failed"
    assert ds.attrs["message"].startswith(
        "TypeError: model 'gmm' evaluates a svibench.capabilities.conjugate.ConjugatePosterior or "
        "svibench.models.gmm_chain.MixtureChain; "
        "the algorithm's posterior() returned a dict")


def test_the_warm_up_keeps_compilation_off_the_clock(faulty_plugin):
    """A step that compiles on its first call in the process (0.3 s of CPU) is warmed up before the
    clock starts: the run's time holds its steps only, and the compilation is ``warmup_seconds``."""
    problem = ProblemSpec("slow", "test-slow-eval", "test-points", {"sleep": 0.0}, {})

    def run(warm):
        params = {"key": f"warm={warm}", "compile": 0.3, "work": 0.001}
        return execute(spec("test-compiling", params, budget=Budget(iterations=20), plugins=(faulty_plugin,),
                            problem=problem), warm=warm)

    warmed, cold = run(True), run(False)
    assert warmed.attrs["status"] == cold.attrs["status"] == "ok"
    assert warmed["time"].values[-1] < 0.1 and warmed.attrs["warmup_seconds"] >= 0.3
    assert cold["time"].values[-1] >= 0.3 and np.isnan(cold.attrs["warmup_seconds"])


def test_the_warm_up_leaves_the_trajectory_unchanged():
    """Chol's numba kernels and an SVI run: the same seed gives identical metrics with and without warm-up."""
    logreg = ProblemSpec("logreg/breast-cancer", "logreg", "breast-cancer", {"delta": 1.0}, {"split": 0})
    for run in (spec(), spec("chol", {}, problem=logreg, budget=Budget(iterations=3))):
        warmed, cold = execute(run), execute(run, warm=False)
        assert warmed.attrs["status"] == cold.attrs["status"] == "ok", warmed.attrs["message"]
        assert warmed.attrs["warmup_seconds"] > 0
        for var in ("iteration", "epoch", *[str(m) for m in warmed.data_vars if m not in ("time", "wall_time")]):
            np.testing.assert_array_equal(warmed[var].values, cold[var].values)


def test_a_model_the_warm_up_cannot_copy_fails_the_run_saying_why(faulty_plugin):
    problem = ProblemSpec("locked", "test-locked", "test-points", {}, {})
    run = spec("test-sleeper", {"work": 0.0}, budget=Budget(iterations=3), plugins=(faulty_plugin,), problem=problem)
    ds = execute(run)
    assert ds.attrs["status"] == "failed" and ds.sizes["checkpoint"] == 0
    assert ds.attrs["message"].startswith("TypeError: the warm-up cannot copy model 'test-locked' (TypeError: ")
    assert execute(run, warm=False).attrs["status"] == "ok"


def test_the_thread_pools_are_scanned_again_only_after_an_import(monkeypatch):
    """A scan of the loaded libraries costs ~2 ms; a library is loaded by an import, which makes a new scan."""
    import sys
    import types

    from svibench.clock import thread_pools

    first = thread_pools()
    assert thread_pools() is first
    monkeypatch.setitem(sys.modules, "_svibench_probe", types.ModuleType("_svibench_probe"))
    assert thread_pools() is not first


def test_a_run_in_this_process_gets_one_blas_thread_and_gives_the_pools_back():
    """CPU time counts every thread: the runner limits BLAS to one thread even where a caller allowed more."""
    from threadpoolctl import threadpool_info, threadpool_limits

    with threadpool_limits(limits=2):
        before = [pool["num_threads"] for pool in threadpool_info()]
        ds = execute(spec())
        after = [pool["num_threads"] for pool in threadpool_info()]
    assert ds.attrs["status"] == "ok" and ds.attrs["blas_threads"] == 1
    assert after == before and max(before) == 2
