"""The verdict rules (svibench.claims) on hand-made results whose answer is known.

Each test is built so that one plausible mutation of the rules flips it: accepting ties, dropping the pairing, counting
a blown-up run, judging on one seed, leaving the strongest variant of a baseline out, ignoring missing runs.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import xarray as xr

from svibench.metrics import Metric, metric_table, table_json
from svibench.claims.schema import parse_claims
from svibench.settings import ReportError, Target
from svibench.claims import Evidence, judge

INFO = metric_table(Metric("elbo", "higher", "objective", "nats"), Metric("loss", "lower", "task", "bits", low=0.0))


def run(label, seed, elbo, *, problem="p", base=None, method=None, time=None, status="ok", variant=None, loss=None,
        tail=2):
    """One run's record: ``elbo`` per checkpoint (time 0, 1, 2, … CPU seconds unless given), then ``tail`` more
    checkpoints at the last value (so that it counts as converged)."""
    elbo = np.asarray(list(elbo) + [elbo[-1]] * tail, dtype=float)
    if time is not None:
        time = list(time) + [time[-1] + 1 + k for k in range(tail)]
    return {"label": label, "seed": seed, "problem": problem, "problem_base": base or problem,
            "method": method or label, "status": status, "variant": json.dumps(variant or {}),
            "elbo": elbo, "loss": np.asarray(loss if loss is not None else -elbo / 1000 + 1, dtype=float),
            "time": np.asarray(time if time is not None else np.arange(elbo.size), dtype=float)}


def results(runs):
    """The runs as open_results gives them: dims run × checkpoint, identity as coordinates."""
    n = max(r["elbo"].size for r in runs)
    pad = lambda a: np.concatenate([a, np.full(n - a.size, np.nan)])  # noqa: E731
    data = {v: (("run", "checkpoint"), np.stack([pad(r[v]) for r in runs])) for v in ("elbo", "loss", "time")}
    data["iteration"] = (("run", "checkpoint"), np.stack([pad(np.arange(r["elbo"].size, dtype=float)) for r in runs]))
    data["epoch"] = data["iteration"]
    coords = {k: ("run", [r[k] for r in runs]) for k in ("label", "seed", "problem", "problem_base", "method",
                                                           "status", "variant")}
    coords["metric_info"] = ("run", [table_json(INFO)] * len(runs))
    return xr.Dataset(data, coords=coords)


def claim(**table):
    table = {"id": "c", "source": "paper", **table}
    paper = table.pop("paper", [])
    return parse_claims({"claim": [table]}, paper)[0]


def verdict(runs, c, **kw):
    (v,) = judge([c], Evidence(results(runs), INFO, **kw))
    return v


ORDER = dict(kind="order", metric="elbo", better=["A"], worse=["B"])


def test_order_holds_on_every_paired_unit_is_reproduced():
    runs = [run("A", s, [-10, -1]) for s in range(3)] + [run("B", s, [-10, -2]) for s in range(3)]
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "reproduced" and len(v.units) == 3 and "n = 3" in v.reason


def test_a_tie_never_passes_as_a_win():
    runs = [run("A", s, [-10, -1.0]) for s in range(3)] + [run("B", s, [-10, -1.0001]) for s in range(3)]
    assert verdict(runs, claim(**ORDER)).verdict == "not reproduced"  # gap 1e-4 < tie 1e-3 × 1


def test_one_or_two_seeds_are_inconclusive():
    runs = [run("A", s, [-10, -1]) for s in range(2)] + [run("B", s, [-10, -2]) for s in range(2)]
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "inconclusive" and "n = 2" in v.reason


def test_units_are_paired_by_seed():
    """A wins on every seed against B's same seed, though B's seed 2 beats A's seed 0: unpaired means would blur it."""
    a = [-5.0, -3.0, -1.0]
    runs = [run("A", s, [-10, a[s]]) for s in range(3)] + [run("B", s, [-10, a[s] - 0.5]) for s in range(3)]
    assert verdict(runs, claim(**ORDER)).verdict == "reproduced"
    runs[5] = run("B", 2, [-10, -0.5])  # now B wins its pair on seed 2
    assert verdict(runs, claim(**ORDER)).verdict == "inconclusive"


def test_a_blown_up_run_makes_the_claim_incomplete_and_is_named():
    runs = [run("A", s, [-10, -1]) for s in range(3)] + [run("B", s, [-10, -2]) for s in range(2)]
    runs.append(run("B", 2, [-10, -5e8]))  # status ok on disk, but the objective blew up
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "incomplete" and "B seed 2 on p (diverged)" in v.reason


def test_a_planned_run_that_never_reached_the_disk_is_missing():
    runs = [run("A", s, [-10, -1]) for s in range(3)] + [run("B", s, [-10, -2]) for s in range(3)]
    planned = [{"problem": "p", "label": lb, "seed": s} for lb in "AB" for s in range(4)]
    v = verdict(runs, claim(**ORDER), planned=planned)
    assert v.verdict == "incomplete" and "A seed 3 on p (missing)" in v.reason


def test_the_worse_side_is_its_strongest_variant():
    runs = [run("A", s, [-10, -1]) for s in range(3)]
    runs += [run("B (lr=1)", s, [-10, -2], method="B") for s in range(3)]
    runs += [run("B (lr=2)", s, [-10, -0.5], method="B") for s in range(3)]
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "not reproduced" and v.variants["p"]["B"] == "B (lr=2)"
    declared = claim(**ORDER, variants={"B": ["B (lr=1)"]}, variants_why="the paper's setting")
    assert verdict(runs, declared).verdict == "reproduced"


def test_problems_that_disagree_unanimously_give_partly_and_mixed_units_inconclusive():
    runs = [run("A", s, [-10, -1], problem="p") for s in range(3)] + [run("B", s, [-10, -2], problem="p") for s in range(3)]
    runs += [run("A", s, [-10, -3], problem="q") for s in range(3)] + [run("B", s, [-10, -2], problem="q") for s in range(3)]
    assert verdict(runs, claim(**ORDER)).verdict == "partly"


def test_order_compares_at_the_pairs_common_time_budget():
    """A reaches -1 only after B's budget ended; at B's 3 s, A is still at -3."""
    runs = [run("A", s, [-10, -5, -3, -1], time=[0, 1, 2, 4]) for s in range(3)]
    runs += [run("B", s, [-10, -2], time=[0, 1]) for s in range(3)]
    assert verdict(runs, claim(**ORDER, axis="final")).verdict == "reproduced"
    assert verdict(runs, claim(**ORDER, axis="time", at_budget=True)).verdict == "not reproduced"


def test_an_unconverged_run_makes_a_claim_at_convergence_inconclusive():
    moving = [-10] + list(np.linspace(-5, -1, 20))
    runs = [run("A", s, moving, tail=0) for s in range(3)] + [run("B", s, [-10] + [-2] * 20) for s in range(3)]
    assert verdict(runs, claim(**ORDER)).verdict == "inconclusive"
    assert verdict(runs, claim(**ORDER, at_budget=True)).verdict == "reproduced"


FASTER = dict(kind="faster", metric="elbo", better=["A"], worse=["B"], target={"relative": 0.01})


def test_faster_needs_disjoint_reach_intervals():
    runs = [run("A", s, [-10, -1, -1, -1]) for s in range(3)] + [run("B", s, [-10, -5, -3, -1]) for s in range(3)]
    assert verdict(runs, claim(**FASTER)).verdict == "reproduced"  # A by 1 s, B in (2, 3]
    runs = [run("A", s, [-10, -5, -1, -1]) for s in range(3)] + [run("B", s, [-10, -5, -1, -1]) for s in range(3)]
    assert verdict(runs, claim(**FASTER)).verdict == "not reproduced"  # same checkpoint: a tie


def test_faster_with_a_ratio_and_a_worse_method_that_never_gets_there():
    runs = [run("A", s, [-10, -1, -1, -1]) for s in range(3)] + [run("B", s, [-10, -5, -3, -2], tail=0) for s in range(3)]
    assert verdict(runs, claim(**FASTER)).verdict == "reproduced"  # B not in 3 s ≥ 1 × 1 s
    assert verdict(runs, claim(**FASTER, ratio=4.0)).verdict == "not reproduced"  # 3 s < 4 × 1 s: can't tell


def test_faster_takes_the_studys_target_by_default():
    runs = [run("A", s, [-10, -1, -1, -1]) for s in range(3)] + [run("B", s, [-10, -5, -3, -1]) for s in range(3)]
    c = claim(kind="faster", metric="elbo", better=["A"], worse=["B"])
    assert verdict(runs, c, targets=(Target("elbo", "relative", 0.01),)).verdict == "reproduced"


AS_FAST = dict(kind="as-fast", metric="elbo", methods=["A", "B", "C"], ratio=2.0, target={"relative": 0.01})


def test_as_fast_holds_when_every_pair_of_times_to_target_is_within_the_ratio():
    """A at 2 s, B at 3 s, C at 4 s: the slowest pair is 4/2 = 2 ≤ 2 (holds); with C at 5 s it is 2.5 > 2 (fails)."""
    within = [run("A", s, [-10, -5, -1, -1, -1, -1]) for s in range(3)]
    within += [run("B", s, [-10, -5, -3, -1, -1, -1]) for s in range(3)]
    within += [run("C", s, [-10, -5, -3, -2, -1, -1]) for s in range(3)]
    v = verdict(within, claim(**AS_FAST))
    assert v.verdict == "reproduced" and v.units["number"].tolist() == [2.0] * 3
    assert "A 2 s, B 3 s, C 4 s: ratio 2" in v.units["detail"].iloc[0]
    beyond = within[:6] + [run("C", s, [-10, -5, -3, -2, -2, -1]) for s in range(3)]
    assert verdict(beyond, claim(**AS_FAST)).verdict == "not reproduced"
    assert verdict(beyond, claim(**{**AS_FAST, "ratio": 2.5})).verdict == "reproduced"


def test_as_fast_fails_a_unit_whose_method_never_reaches_the_target():
    """C never gets within 1% of the best final value: the unit fails even though A and B are level."""
    runs = [run(lb, s, [-10, -5, -1, -1]) for lb in "AB" for s in range(3)]
    runs += [run("C", s, [-10, -5, -3, -2]) for s in range(3)]
    v = verdict(runs, claim(**AS_FAST))
    assert v.verdict == "not reproduced" and "C not in" in v.units["detail"].iloc[0]
    assert verdict(runs, claim(**{**AS_FAST, "methods": ["A", "B"]})).verdict == "reproduced"


def test_as_fast_reads_each_method_at_its_fastest_variant():
    runs = [run("A", s, [-10, -5, -1, -1]) for s in range(3)]
    runs += [run("B (w=1)", s, [-10, -5, -4, -3, -2, -1, -1], method="B") for s in range(3)]
    runs += [run("B (w=2)", s, [-10, -5, -1, -1], method="B") for s in range(3)]
    v = verdict(runs, claim(**{**AS_FAST, "methods": ["A", "B"]}))
    assert v.verdict == "reproduced" and v.variants["p"]["B"] == "B (w=2)"


def test_equivalent_within_tolerance():
    runs = [run("A", s, [-10, -1.00]) for s in range(3)] + [run("B", s, [-10, -1.02]) for s in range(3)]
    c = dict(kind="equivalent", metric="elbo", methods=["A", "B"])
    assert verdict(runs, claim(**c, tolerance=0.05)).verdict == "reproduced"
    assert verdict(runs, claim(**c, absolute=0.01)).verdict == "not reproduced"


def test_trend_improving_and_diminishing():
    def grid(values):
        return [run(f"G (b={b})", s, [-10, v], method="G", variant={"b": b})
                for b, v in zip((0, 1, 3, 10), values) for s in range(3)]
    c = dict(kind="trend", metric="elbo", method="G", setting="b", shape="improving")
    assert verdict(grid([-5, -3, -2, -1.5]), claim(**c, diminishing=True)).verdict == "reproduced"
    assert verdict(grid([-5, -3, -3.5, -1.5]), claim(**c)).verdict == "not reproduced"  # not monotone
    assert verdict(grid([-5, -4.9, -2, -1.5]), claim(**c, diminishing=True)).verdict == "not reproduced"


def test_value_claims_against_the_paper_and_not_comparable():
    runs = [run("A", s, [-10, -100.0]) for s in range(3)]
    paper = [{"claim": "c", "problem": "p", "algorithm": "A", "metric": "elbo", "value": -101.0}]
    c = dict(kind="value", paper=paper, comparable=True, comparable_why="the paper's data and split")
    assert verdict(runs, claim(**c), paper=paper).verdict == "reproduced"
    assert verdict(runs, claim(**c, tolerance=0.001), paper=paper).verdict == "not reproduced"
    c.update(comparable=False, comparable_why="our own random split")
    assert verdict(runs, claim(**c), paper=paper).verdict == "not comparable"


@pytest.mark.parametrize("table, message", [
    ({**ORDER, "margin": -0.01}, "negative"),
    ({"kind": "bigger", "metric": "elbo"}, "unknown claim kind"),
    ({"kind": "value", "paper": [{"claim": "c"}], "comparable_why": "x"}, "needs 'comparable'"),
    ({"kind": "equivalent", "metric": "elbo", "methods": ["A", "B"]}, "one of tolerance"),
    ({**ORDER, "variants": {"B": ["B (lr=1)"]}}, "variants_why"),
])
def test_bad_claims_are_one_line_errors(table, message):
    with pytest.raises(ReportError, match=message) as err:
        claim(**table)
    assert "\n" not in str(err.value)


# -- the first screen's ranking (svibench.report.rank) on the same hand-made results

def ranked(runs, target=Target("elbo", "relative", 0.001)):
    from svibench.report.rank import ranking
    return ranking(Evidence(results(runs), INFO), target).set_index("label")


def test_the_ranking_leads_with_the_first_to_target_and_calls_a_final_tie_a_tie():
    """VMP gets there at 1 s, SVI at 3 s and ends 3.5e-5 (relative) higher: SVI is not the winner, it ties."""
    runs = [run("VMP", s, [-10, -1.0, -1.0, -1.0]) for s in range(3)]
    runs += [run("SVI", s, [-10, -5, -2, -0.999965]) for s in range(3)]
    table = ranked(runs)
    assert list(table.index) == ["VMP", "SVI"] and table.loc["VMP", "first"] == 3
    assert table.loc["SVI", "tie"] and table.loc["SVI", "diff"] > 0


def test_overlapping_reach_intervals_tie_for_first():
    runs = [run("A", s, [-10, -5, -1]) for s in range(3)] + [run("B", s, [-10, -5, -1]) for s in range(3)]
    table = ranked(runs)
    assert table["first"].sum() == 0 and (table["tied"] == 3).all()


def test_a_blown_up_run_never_leads_the_ranking():
    runs = [run("A", s, [-10, -1]) for s in range(3)] + [run("B", s, [-10, -2, -2, -2]) for s in range(3)]
    runs[0] = run("A", 0, [-10, -1, -3e8])
    table = ranked(runs)
    assert table.loc["A", "diverged"] == 1 and table.loc["A", "ok"] == 2
    assert table.loc["A", "instances"] == 3 and table.loc["A", "first"] == 2  # seed 0 counts as never reaching


def test_a_value_row_versus_another_label_is_their_paired_difference():
    runs = [run("MF (init=mcmc)", s, [-10, 30.0 + s], method="MF") for s in range(3)]
    runs += [run("MF (init=prior)", s, [-10, 25.2 + s], method="MF") for s in range(3)]
    paper = [{"claim": "c", "problem": "p", "algorithm": "MF (init=mcmc)", "versus": "MF (init=prior)",
              "metric": "elbo", "value": 4.8}]
    c = claim(kind="value", paper=paper, comparable=True, comparable_why="same images", tolerance=0.02)
    v = verdict(runs, c, paper=paper)
    assert v.verdict == "reproduced" and len(v.units) == 3  # 4.8 on every seed, though the levels differ by seed


def test_a_claim_the_study_cannot_run_yet_says_why():
    c = claim(**ORDER, problems=["covtype"], not_run="covtype's data arrives with issue 29")
    v = verdict([run("A", s, [-10, -1]) for s in range(3)] + [run("B", s, [-10, -2]) for s in range(3)], c)
    assert v.verdict == "not run" and "issue 29" in v.reason


def test_faster_while_reaching_the_same_error_needs_both():
    """Knowles ends lower than CVI by 0.5%: CVI is faster to its target, but does not reach the same error at 0.1%."""
    runs = [run("A", s, [-10, -1.005, -1.005]) for s in range(3)] + [run("B", s, [-10, -5, -3, -1.0]) for s in range(3)]
    c = dict(FASTER, target={"relative": 0.01}, final="equivalent")
    assert verdict(runs, claim(**c, tolerance=0.01)).verdict == "reproduced"
    assert verdict(runs, claim(**c, tolerance=0.001)).verdict == "not reproduced"
    assert verdict(runs, claim(**dict(FASTER, final="better"))).verdict == "not reproduced"


def test_two_runs_at_the_target_from_their_start_tie():
    runs = [run("A", s, [-1.0, -1.0]) for s in range(3)] + [run("B", s, [-1.0, -1.0]) for s in range(3)]
    assert verdict(runs, claim(**FASTER)).verdict == "not reproduced"


def test_where_runs_end_needs_them_to_have_ended_and_a_variant_is_chosen_by_its_final_value_when_none_gets_there():
    moving = [-10] + list(np.linspace(-5, -1.0, 20))
    runs = [run("A", s, [-10, -1.0] + [-1.0] * 19) for s in range(3)] + [run("B", s, moving, tail=0) for s in range(3)]
    c = dict(FASTER, target={"relative": 0.01}, final="equivalent", tolerance=0.01)
    assert verdict(runs, claim(**c)).verdict == "inconclusive"  # B is still moving: where it ends is not known
    assert verdict(runs, claim(**c, at_budget=True)).verdict == "reproduced"
    runs = [run("A", s, [-10, -1.0]) for s in range(3)]
    runs += [run(f"B ({k})", s, [-10, v], method="B") for s in range(3) for k, v in (("z weak", -9.0), ("a strong", -5.0))]
    assert verdict(runs, claim(**FASTER)).variants["p"]["B"] == "B (a strong)"  # neither reaches: the better final
