"""Progress: the runner reports every step without changing the trajectory; every executor
reports within a run and at its end; the bar draws at once, follows the budget, stays
silent off a terminal and throttles its redraws."""
from __future__ import annotations

import io
from functools import partial

import numpy as np
import pytest

from svibench.executors import run_dask, run_local
from svibench.executors.base import StepReporter
from svibench.progress import Progress, RunEvent, budget_fraction
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

GMM = ProblemSpec("gmm/p", "gmm", "gmm-synthetic", {"components": 2}, {"n": 200, "n_test": 50, "components": 2})

def _spec(budget=Budget(iterations=20), seed=0) -> RunSpec:
    return RunSpec("progress", GMM, "svi", "SVI", {"batch_size": 20}, seed, budget, Checkpoints(count=4))

def test_the_runner_reports_every_step_and_the_trajectory_is_unchanged():
    spec = _spec()
    calls = []
    with_hook = execute(spec, on_step=lambda *step: calls.append(step))
    without = execute(spec)
    assert [c[0] for c in calls] == list(range(1, 21))
    assert calls[-1][1] == 20 * 20 / 200  # epochs = data points touched / N
    np.testing.assert_array_equal(with_hook["elbo"].values, without["elbo"].values)

def test_the_fraction_of_the_budget_is_the_largest_over_its_limits():
    assert budget_fraction(Budget(iterations=100, epochs=2.0), 10, 1.0, 0.5) == 0.5
    assert budget_fraction(Budget(iterations=100, seconds=10.0), 10, 9.0, 0.5) == 0.1  # epochs has no limit
    assert budget_fraction(Budget(iterations=10), 30, 0.0, 0.0) == 1.0

def test_the_bar_draws_before_any_run_reports_and_counts_the_runs_in_flight():
    stream = io.StringIO()
    specs = [_spec(Budget(iterations=100), seed) for seed in (0, 1)]
    bar = Progress(specs, enabled=True, stream=stream, interval=0.0)
    assert "0/2 runs" in stream.getvalue() and "0.0%" in stream.getvalue()  # drawn at the start
    bar(RunEvent(specs[0].run_id, 50, 0.5, 0.1))
    assert stream.getvalue().endswith("not ok: 0") and " 25.0%" in stream.getvalue().rsplit("\r", 1)[1]
    bar(RunEvent(specs[0].run_id, status="failed"))
    bar(RunEvent(specs[0].run_id, 60, 0.6, 0.1))  # a late report of an ended run is ignored
    assert "1/2 runs   50.0%" in stream.getvalue().rsplit("\r", 1)[1]
    bar(RunEvent(specs[1].run_id, status="ok"))
    assert stream.getvalue().endswith("2/2 runs  100.0%" + stream.getvalue().rsplit("100.0%", 1)[1])
    assert "not ok: 1" in stream.getvalue() and stream.getvalue().endswith("\n")

def test_a_single_run_shows_its_iteration_epoch_and_algorithm_time():
    stream = io.StringIO()
    spec = _spec(Budget(iterations=100, epochs=2.0))
    bar = Progress([spec], enabled=True, stream=stream, interval=0.0)
    bar(RunEvent(spec.run_id, 10, 1.0, 0.5))  # 10% of the iterations, 50% of the epochs
    line = stream.getvalue().rsplit("\r", 1)[1]
    assert "50.0%" in line and "iteration 10" in line and "SVI on gmm/p (seed 0)" in line

def test_the_bar_is_silent_when_not_a_terminal_and_throttles_redraws():
    stream = io.StringIO()  # isatty() is False
    spec = _spec()
    bar = Progress([spec], stream=stream)
    bar(RunEvent(spec.run_id, 1, 0.1, 0.01))
    bar(RunEvent(spec.run_id, status="ok"))
    assert stream.getvalue() == ""
    stream = io.StringIO()
    bar = Progress([spec], enabled=True, stream=stream, interval=3600.0)
    for i in range(1, 50):
        bar(RunEvent(spec.run_id, i, i / 10, i / 100))
    assert stream.getvalue().count("\r") == 1  # the first draw only
    bar(RunEvent(spec.run_id, status="ok"))
    assert stream.getvalue().count("\r") == 2  # the end of a run is always drawn

def test_a_step_report_waits_an_interval_so_a_shorter_run_reports_only_its_end():
    sent = []
    report = StepReporter("r", sent.append, interval=0.2)
    for i in range(1, 50):
        report(i, i / 10, i / 1000)
    assert sent == []  # within the first interval: nothing, however many steps
    report.next_report -= 0.2  # the interval has passed
    report(50, 5.0, 0.05)
    report(51, 5.1, 0.051)  # and the next waits an interval again
    assert sent == [RunEvent("r", 50, 5.0, 0.05)]
    events = []
    runs = list(run_local([_spec(Budget(iterations=3))], on_progress=events.append))
    assert runs[0].attrs["status"] == "ok" and [e.status for e in events] == ["ok"]


@pytest.mark.parametrize("executor", [partial(run_local, workers=1), partial(run_local, workers=2),
                                      pytest.param(partial(run_dask, workers=1), marks=pytest.mark.slow)],
                         ids=["in-process", "local-workers", "dask"])
def test_every_executor_reports_within_a_run_and_at_its_end(executor):
    spec = _spec(Budget(seconds=1.5))  # algorithm seconds: several reports 0.25 s apart
    events = []
    runs = list(executor([spec], on_progress=events.append))
    assert len(runs) == 1 and runs[0].attrs["status"] == "ok"
    steps = [e for e in events if e.status is None]
    assert len(steps) >= 2 and all(e.run_id == spec.run_id for e in events)
    assert [e.iteration for e in steps] == sorted(e.iteration for e in steps) and steps[-1].iteration > steps[0].iteration
    ends = [e for e in events if e.status is not None]
    assert [e.status for e in ends] == ["ok"]
