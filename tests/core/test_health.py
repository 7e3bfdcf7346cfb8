"""The run-health policy (svibench.health): what makes a run diverged, on hand-made trajectories."""
from __future__ import annotations

import math

import numpy as np
import xarray as xr

from svibench import health
from svibench.metrics import Metric, metric_table
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

INFO = metric_table(Metric("neg_elbo", "lower", "objective", "nats"), Metric("error", "lower", "task", "", low=0, high=1))


def results(neg_elbo, error=None, status=("ok",)):
    neg_elbo = np.atleast_2d(np.asarray(neg_elbo, dtype=float))
    error = np.full_like(neg_elbo, 0.2) if error is None else np.atleast_2d(np.asarray(error, dtype=float))
    k = np.broadcast_to(np.arange(neg_elbo.shape[1], dtype=float), neg_elbo.shape)
    return xr.Dataset({"neg_elbo": (("run", "checkpoint"), neg_elbo), "error": (("run", "checkpoint"), error),
                       "iteration": (("run", "checkpoint"), k.copy())},
                      coords={"status": ("run", list(status)), "message": ("run", [""] * len(status))})


def test_a_synthetic_blow_up_ends_diverged_and_its_later_values_are_masked():
    ds = health.apply(results([240.0, 190.0, 1e8, 2e8]), INFO)
    assert ds["status"].values[0] == "diverged"
    assert "neg_elbo blew up" in ds["message"].values[0] and "iteration 2" in ds["message"].values[0]
    assert np.isnan(ds["neg_elbo"].values[0, 2:]).all() and ds["neg_elbo"].values[0, 1] == 190.0


def test_the_blow_up_factor_is_wide():
    """Worse than the start, even 10x its distance from zero, is still a (bad) run; more than that is a blow-up."""
    assert health.check_row(INFO, {"neg_elbo": 240.0}, {"neg_elbo": 240.0 + 10 * 240.0}) is None
    assert health.check_row(INFO, {"neg_elbo": 240.0}, {"neg_elbo": 240.0 + 10 * 240.0 + 1}) is not None
    assert health.check_row(INFO, {"neg_elbo": 0.1}, {"neg_elbo": 10.0}) is None  # scale at least 1


def test_a_value_outside_its_declared_range_or_non_finite_is_unhealthy():
    assert "outside its valid range" in health.check_row(INFO, {}, {"error": 1.5})
    assert "non-finite" in health.check_row(INFO, {}, {"neg_elbo": math.nan})


def test_healthy_runs_and_runs_already_not_ok_keep_their_status():
    ds = results([[240.0, 190.0, 180.0], [240.0, 1e9, 1e9]], status=("ok", "failed"))
    assert list(health.apply(ds, INFO)["status"].values) == ["ok", "failed"]
    assert list(health.healthy_until(ds, INFO)) == [3, 1]


def test_proximal_gradient_at_a_step_far_above_the_papers_ends_diverged_not_ok():
    """The authors' PG-exact, converging at the paper's w = 0.4 on australian, at w = 20 (a step of 0.95) drives the
    ELBO from about -640 below -60,000 within a few iterations: the runner ends it diverged, never ranks it."""
    problem = ProblemSpec("logreg/australian", "logreg", "australian", {"delta": 1e-5}, {"split": 1})
    ds = execute(RunSpec("t", problem, "pg-exact", "PG-exact", {"w": 20.0}, 0, Budget(iterations=200), Checkpoints(12)))
    assert ds.attrs["status"] == "diverged" and "blew up" in ds.attrs["message"]
    assert ds["iteration"].values[-1] < 200
