"""A study may run a problem until it converges: the runner stops at the first checkpoint where the declared metric
levelled off, with the budget's limits as the cap."""
import tomllib

import numpy as np
import pytest

from svibench.runner import execute
from svibench.spec import Budget, UntilConverged
from svibench.study import StudyError, parse_study

STUDY = """
[study]
name = "u"
seeds = [0]
[budget]
iterations = 400
checkpoints = 40
{until}
[[problem]]
model = "gmm"
dataset = "gmm-synthetic"
dataset_params = {{ n = 500, dim = 2 }}
[[algorithm]]
name = "vmp"
"""


def _study(until: str):
    return parse_study(tomllib.loads(STUDY.format(until=until)))


def test_a_run_stops_once_its_metric_levels_off_and_the_cap_ends_one_that_does_not():
    """VMP on a GMM converges in a few dozen iterations: with the rule it stops well before the cap of 400, at a
    checkpoint where the ELBO moved by at most the tolerance over the window; with a tolerance no run can meet it
    runs to the cap."""
    (spec,) = _study('until_converged = { metric = "elbo", tolerance = 1e-6 }').runs
    ds = execute(spec)
    elbo = ds["elbo"].values
    assert ds.attrs["status"] == "ok" and "converged at iteration" in ds.attrs["message"]
    assert int(ds["iteration"].values[-1]) < 400
    assert spec.budget.until.reached([{"elbo": v} for v in elbo])
    assert not spec.budget.until.reached([{"elbo": v} for v in elbo[:-1]])  # the first checkpoint that meets it
    (capped,) = _study('until_converged = { metric = "elbo", tolerance = 1e-300 }').runs
    assert int(execute(capped)["iteration"].values[-1]) == 400


def test_the_rule_reads_the_last_window_of_checkpoints_and_needs_a_few():
    rule = UntilConverged("elbo", tolerance=1e-3, window=0.25, least=5)
    rows = [{"elbo": v} for v in (-100.0, -50.0, -20.0, -10.0, -10.001)]
    assert rule.reached(rows) and not rule.reached(rows[:4])  # too few checkpoints, whatever the change
    moving = [{"elbo": v} for v in (-100.0, -50.0, -20.0, -10.0, -9.0)]
    assert not rule.reached(moving)


def test_a_scale_can_turn_the_rule_off():
    """A scale whose runs must reach the paper's iteration count says until_converged = false."""
    text = STUDY.format(until='until_converged = { metric = "elbo", tolerance = 1e-6 }')
    text += "[scales.paper]\nbudget = { until_converged = false }\n"
    (spec,) = parse_study(tomllib.loads(text), scale="paper").runs
    assert spec.budget.until is None and spec.budget.iterations == 400


def test_a_scale_can_drop_the_studys_iterations_for_a_cpu_cap():
    """A paper scale that runs until converged under a CPU cap says iterations = false; a budget left with no limit
    is still an error."""
    text = STUDY.format(until="") + ('[scales.paper]\nbudget = { iterations = false, seconds = 60, '
                                     'until_converged = { metric = "elbo", tolerance = 1e-6 } }\n')
    (spec,) = parse_study(tomllib.loads(text), scale="paper").runs
    assert spec.budget.iterations is None and spec.budget.seconds == 60 and spec.budget.until.metric == "elbo"
    with pytest.raises(StudyError, match="set at least one of iterations, epochs, seconds"):
        parse_study(tomllib.loads(STUDY.format(until="") + "[scales.paper]\nbudget = { iterations = false }\n"),
                    scale="paper")


def test_a_plain_budget_keeps_its_run_ids():
    assert "until" not in Budget(iterations=10).key() and "until" in Budget(10, until=UntilConverged("elbo", 1e-3)).key()


@pytest.mark.parametrize("until, says", [
    ('until_converged = { metric = "nope", tolerance = 1e-3 }', "reports no 'nope'"),
    ('until_converged = { metric = "elbo" }', "give the metric and the tolerance"),
    ('until_converged = { metric = "elbo", tolerance = 1e-3, window = 1.5 }', "window: a fraction"),
    ('until_converged = { metric = "elbo", tolerance = 1e-3, span = 2 }', "span"),
])
def test_a_bad_until_converged_is_one_line_at_load(until, says):
    with pytest.raises(StudyError, match=says):
        _study(until)
