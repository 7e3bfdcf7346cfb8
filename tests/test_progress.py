"""Per-run progress: follows the budget, costs nothing to the trajectory, silent off a terminal."""
from __future__ import annotations

import io

import numpy as np

from svibench.progress import RunProgress, run_with_progress
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

GMM = ProblemSpec("gmm/p", "gmm", "gmm-synthetic", {"components": 2}, {"n": 200, "n_test": 50, "components": 2})


def _spec(budget=Budget(iterations=20)) -> RunSpec:
    return RunSpec("progress", GMM, "svi", "SVI", {"batch_size": 20}, 0, budget, Checkpoints(count=4))


class _Recorder(RunProgress):
    def __init__(self, spec):
        super().__init__(spec, enabled=False)
        self.calls = []

    def __call__(self, iteration, epoch, seconds):
        self.calls.append((iteration, epoch, seconds))
        super().__call__(iteration, epoch, seconds)


def test_the_runner_reports_every_step_and_the_trajectory_is_unchanged():
    spec = _spec()
    bar = _Recorder(spec)
    with_bar, without = execute(spec, on_step=bar), execute(spec)
    assert [c[0] for c in bar.calls] == list(range(1, 21))
    assert bar.calls[-1][1] == 20 * 20 / 200  # epochs = data points touched / N
    np.testing.assert_array_equal(with_bar["elbo"].values, without["elbo"].values)


def test_the_bar_shows_the_largest_fraction_of_the_budget_and_ends_its_line():
    stream = io.StringIO()
    bar = RunProgress(_spec(Budget(iterations=100, epochs=2.0)), enabled=True, stream=stream, interval=0.0)
    bar(10, 1.0, 0.5)  # 10% of the iterations, 50% of the epochs
    assert "50.0%" in stream.getvalue() and "iteration 10" in stream.getvalue()
    bar.close()
    assert stream.getvalue().endswith("\n")


def test_the_bar_is_silent_when_not_a_terminal_and_throttles_redraws():
    stream = io.StringIO()  # isatty() is False
    bar = RunProgress(_spec(), stream=stream)
    bar(1, 0.1, 0.01)
    bar.close()
    assert stream.getvalue() == ""
    stream = io.StringIO()
    bar = RunProgress(_spec(), enabled=True, stream=stream, interval=3600.0)
    for i in range(1, 50):
        bar(i, i / 10, i / 100)
    assert stream.getvalue().count("\r") == 1


def test_run_with_progress_executes_each_spec_in_process():
    stream = io.StringIO()
    runs = list(run_with_progress([_spec()], stream=stream))
    assert len(runs) == 1 and runs[0].attrs["status"] == "ok"
