"""The verdict rules (svibench.claims) on hand-made results whose answer is known.

Each test is built so that one plausible mutation of the rules flips it: accepting ties, dropping the pairing, reading
a diverged run as missing data, judging below the sign test's n, leaving the strongest variant of a baseline out,
ignoring missing runs, a partly without three units on every problem or with one problem unanimous, a doubled
equivalence tolerance, a default tie ten times larger, a target taken from every method, an ignored time tie.
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
from svibench.settings import TIMING_NOISE
from svibench.claims.kinds import CHOSEN_ON

#: Seeds per method: the fewest on which a unanimous result passes the sign test (p = 1/32).
N = 5
SEEDS = range(N)
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
    runs = [run("A", s, [-10, -1]) for s in SEEDS] + [run("B", s, [-10, -2]) for s in SEEDS]
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "reproduced" and len(v.units) == N and "5 of n = 5 hold, one-sided p = 0.031" in v.reason


def test_a_tie_never_passes_as_a_win():
    runs = [run("A", s, [-10, -1.0]) for s in SEEDS] + [run("B", s, [-10, -1.0001]) for s in SEEDS]
    assert verdict(runs, claim(**ORDER)).verdict == "not reproduced"  # gap 1e-4 < tie 1e-3 × 1


def test_the_default_tie_is_one_in_a_thousand():
    """A gap of 2e-3 (relative) is a win under the default tie of 1e-3, and would be a tie under ten times it."""
    runs = [run("A", s, [-10, -1.0]) for s in SEEDS] + [run("B", s, [-10, -1.002]) for s in SEEDS]
    assert verdict(runs, claim(**ORDER)).verdict == "reproduced"


def test_a_last_checkpoint_metric_ties_under_the_target_of_the_metric_that_tracks_it():
    """``whole`` is measured at the last checkpoint only and tracked by ``elbo``: the study's absolute target on elbo
    (0.5) is its tie too, so a gap of 0.2 ties; without the tracker the default tie (1e-3 relative) would pass it."""
    runs = [run("A", s, [-10, -1.0]) for s in SEEDS] + [run("B", s, [-10, -1.2]) for s in SEEDS]
    ds = results(runs)
    ds["whole"] = ds["elbo"].where(ds["checkpoint"] == ds.sizes["checkpoint"] - 1)
    info = {**INFO, "whole": Metric("whole", "higher", "task", tracked_by="elbo")}
    c = claim(**{**ORDER, "metric": "whole"})
    (tied,) = judge([c], Evidence(ds, info, targets=(Target("elbo", "absolute", 0.5),)))
    assert tied.verdict == "not reproduced" and "needs > 0.5" in tied.units["detail"].iloc[0]
    untracked = {**info, "whole": Metric("whole", "higher", "task")}
    (won,) = judge([c], Evidence(ds, untracked, targets=(Target("elbo", "absolute", 0.5),)))
    assert won.verdict == "reproduced"


@pytest.mark.parametrize("seeds", [2, 4])
def test_fewer_units_than_the_sign_test_needs_are_too_few(seeds):
    """Four unanimous units give p = 1/16 > 0.05: too few units, with the count, never reproduced."""
    runs = [run("A", s, [-10, -1]) for s in range(seeds)] + [run("B", s, [-10, -2]) for s in range(seeds)]
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "too few units" and f"n = {seeds}" in v.reason and "n ≥ 5" in v.reason


def test_units_are_paired_by_seed():
    """A wins on every seed against B's same seed, though B's seed 2 beats A's seed 0: unpaired means would blur it."""
    a = [-5.0, -3.0, -1.0, -4.0, -2.0]
    runs = [run("A", s, [-10, a[s]]) for s in SEEDS] + [run("B", s, [-10, a[s] - 0.5]) for s in SEEDS]
    assert verdict(runs, claim(**ORDER)).verdict == "reproduced"
    runs[N + 2] = run("B", 2, [-10, -0.5])  # now B wins its pair on seed 2
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "mixed" and v.reason.startswith("mixed (4/5)") and "p = 0.19" in v.reason


def test_a_diverged_run_is_a_result_not_missing_data():
    """B blows up on seed 2 (status ok on disk): B lost that unit, so the claim is judged on all five, not
    incomplete; a diverged run of the better side fails its unit."""
    runs = [run("A", s, [-10, -1]) for s in SEEDS] + [run("B", s, [-10, -2]) for s in SEEDS if s != 2]
    runs.append(run("B", 2, [-10, -5e8]))
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "reproduced" and len(v.units) == N and "B diverged" in v.units["detail"].tolist()
    runs[0] = run("A", 0, [-10, -5e8])
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "mixed" and v.units.set_index("seed").loc[0, "holds"] == False  # noqa: E712


def test_a_variant_that_diverges_on_some_units_is_judged_on_every_unit():
    """B (lr=2) is the stronger baseline where it survives, but diverges on the held-out seed 0: its divergence
    counts as its worst, so B (lr=1) is chosen.  Declared instead, lr=2 is judged on every seed, its divergences
    included (they fail its side)."""
    seeds = range(N + 1)
    runs = [run("A", s, [-10, -1]) for s in seeds]
    runs += [run("B (lr=1)", s, [-10, -2], method="B") for s in seeds]
    runs += [run("B (lr=2)", s, [-10, -0.5] if s in (1, 2) else [-10, -5e8], method="B") for s in seeds]
    v = verdict(runs, claim(**ORDER))
    assert v.variants["p"]["B"] == "B (lr=1)" and v.verdict == "reproduced" and 0 not in set(v.units["seed"])
    declared = claim(**ORDER, variants={"B": ["B (lr=2)"]}, variants_why="the paper's step")
    v = verdict(runs, declared)
    assert len(v.units) == N + 1 and v.units["holds"].sum() == 4  # lr=2 wins seeds 1 and 2, loses four to divergence


def test_a_variant_is_chosen_on_a_held_out_seed_that_is_then_no_unit():
    """B (lr=1) is the stronger baseline on seed 0 only, B (lr=2) on every other seed: the choice is made on seed 0
    (held out) and judged on the others, so the luck of the judged seeds does not pick the baseline."""
    seeds = range(N + 1)
    runs = [run("A", s, [-10, -1]) for s in seeds]
    runs += [run("B (lr=1)", s, [-10, -0.5 if s == 0 else -3], method="B") for s in seeds]
    runs += [run("B (lr=2)", s, [-10, -2 if s == 0 else -1.5], method="B") for s in seeds]
    v = verdict(runs, claim(**ORDER))
    assert v.variants["p"]["B"] == "B (lr=1)" and v.variants["p"][CHOSEN_ON] == "seed 0 (held out)"
    assert sorted(v.units["seed"]) == list(range(1, N + 1)) and v.verdict == "reproduced"
    assert "chosen on seed 0 (held out)" in v.summaries[0]


def test_with_one_seed_the_first_problem_is_held_out():
    runs = [run("A", 0, [-10, -1], problem=f"p/{i}", base="p") for i in range(N + 1)]
    runs += [run(f"B (lr={lr})", 0, [-10, -2], problem=f"p/{i}", base="p", method="B")
             for i in range(N + 1) for lr in (1, 2)]
    v = verdict(runs, claim(**ORDER, problems=["p"]))
    assert v.variants["p"][CHOSEN_ON] == "p/0 (held out)" and "p/0" not in set(v.units["problem"])
    assert len(v.units) == N


def test_a_planned_run_that_never_reached_the_disk_is_missing():
    runs = [run("A", s, [-10, -1]) for s in SEEDS] + [run("B", s, [-10, -2]) for s in SEEDS]
    planned = [{"problem": "p", "label": lb, "seed": s} for lb in "AB" for s in range(N + 1)]
    v = verdict(runs, claim(**ORDER), planned=planned)
    assert v.verdict == "incomplete" and f"A seed {N} on p (missing)" in v.reason


def test_the_worse_side_is_its_strongest_variant():
    seeds = range(N + 1)  # one is held out to choose on
    runs = [run("A", s, [-10, -1]) for s in seeds]
    runs += [run("B (lr=1)", s, [-10, -2], method="B") for s in seeds]
    runs += [run("B (lr=2)", s, [-10, -0.5], method="B") for s in seeds]
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "not reproduced" and v.variants["p"]["B"] == "B (lr=2)"
    declared = claim(**ORDER, variants={"B": ["B (lr=1)"]}, variants_why="the paper's setting")
    assert verdict(runs, declared).verdict == "reproduced"


def _two_problems(p_seeds, q_seeds, q_wins=()):
    """A beats B on every seed of p; on q, B wins except on the seeds in ``q_wins``."""
    runs = [run(lb, s, [-10, v], problem="p") for lb, v in (("A", -1), ("B", -2)) for s in range(p_seeds)]
    return runs + [run(lb, s, [-10, v if not (lb == "A" and s in q_wins) else -1], problem="q")
                   for lb, v in (("A", -3), ("B", -2)) for s in range(q_seeds)]


def test_problems_that_disagree_unanimously_give_partly():
    v = verdict(_two_problems(3, 3), claim(**ORDER))
    assert v.verdict == "partly" and "holds on every unit of p" in v.reason


def test_partly_needs_every_problem_unanimous():
    """p unanimous, q split 1/4: not partly (one unanimous problem is not enough); 4/9 is mixed."""
    v = verdict(_two_problems(4, 5, q_wins=(0,)), claim(**ORDER))
    assert v.verdict == "mixed"


def test_partly_needs_three_units_on_every_problem():
    """p holds on 3 seeds, q fails on 2: the problems disagree unanimously, but q has too few units for it."""
    assert verdict(_two_problems(3, 2), claim(**ORDER)).verdict == "mixed"


def test_order_compares_at_the_pairs_common_time_budget():
    """A reaches -1 only after B's budget ended; at B's 3 s, A is still at -3."""
    runs = [run("A", s, [-10, -5, -3, -1], time=[0, 1, 2, 4]) for s in SEEDS]
    runs += [run("B", s, [-10, -2], time=[0, 1]) for s in SEEDS]
    assert verdict(runs, claim(**ORDER, axis="final")).verdict == "reproduced"
    assert verdict(runs, claim(**ORDER, axis="time", at_budget=True)).verdict == "not reproduced"


def test_a_unit_a_still_moving_run_could_flip_is_undecided():
    """A is still improving and behind B: A could still overtake, so the units are undecided (too few decided);
    at a budget they fail.  When A is ahead, its moving only widens the gap: decided."""
    behind = [-10] + list(np.linspace(-5, -3, 20))
    runs = [run("A", s, behind, tail=0) for s in SEEDS] + [run("B", s, [-10] + [-2] * 20) for s in SEEDS]
    v = verdict(runs, claim(**ORDER))
    assert v.verdict == "too few units" and "5 more unit(s) undecided" in v.reason
    assert verdict(runs, claim(**ORDER, at_budget=True)).verdict == "not reproduced"
    ahead = [-10] + list(np.linspace(-5, -1, 20))
    runs = [run("A", s, ahead, tail=0) for s in SEEDS] + [run("B", s, [-10] + [-2] * 20) for s in SEEDS]
    assert verdict(runs, claim(**ORDER)).verdict == "reproduced"
    runs = [run("A", s, [-10] + [-1] * 20) for s in SEEDS] + [run("B", s, ahead[:-1] + [-1.5], tail=0) for s in SEEDS]
    assert verdict(runs, claim(**ORDER)).verdict == "too few units"  # B, behind, could still catch up


FASTER = dict(kind="faster", metric="elbo", better=["A"], worse=["B"], target={"relative": 0.01})


def test_faster_needs_disjoint_reach_intervals():
    runs = [run("A", s, [-10, -1, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -3, -1]) for s in SEEDS]
    assert verdict(runs, claim(**FASTER)).verdict == "reproduced"  # A by 1 s, B in (2, 3]
    runs = [run("A", s, [-10, -5, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -1, -1]) for s in SEEDS]
    assert verdict(runs, claim(**FASTER)).verdict == "not reproduced"  # same checkpoint: a tie


def test_faster_with_a_ratio_and_a_worse_method_that_never_gets_there():
    """The rule at the checkpoints' resolution, on times known exactly (``timing_noise = 1``)."""
    runs = [run("A", s, [-10, -1, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -3, -2], tail=0) for s in SEEDS]
    assert verdict(runs, claim(**FASTER), timing_noise=1.0).verdict == "reproduced"  # B not in 3 s ≥ 1 × 1 s
    assert verdict(runs, claim(**FASTER, ratio=4.0), timing_noise=1.0).verdict == "not reproduced"  # 3 s < 4 × 1 s


def test_faster_honours_a_declared_time_tie():
    """B needs 1.0001 s against A's 1 s: faster at the checkpoints' resolution (on times known exactly), a tie
    within a declared 5%."""
    runs = [run("A", s, [-10, -1], time=[0, 1.0]) for s in SEEDS]
    runs += [run("B", s, [-10, -5, -1], time=[0, 1.0, 1.0001]) for s in SEEDS]
    assert verdict(runs, claim(**FASTER), timing_noise=1.0).verdict == "reproduced"
    assert verdict(runs, claim(**FASTER, tie=0.05), timing_noise=1.0).verdict == "not reproduced"


def test_a_faster_unit_within_the_timing_noise_is_undecided():
    """Two makings of one run differ in CPU time by up to ``TIMING_NOISE`` (1.8): B at 3 s against A's 1 s with
    ratio 2 could be either side of 2 × A's time, and is undecided; at 5 s, or with ratio 1, it is faster by more
    than the noise; with ratio 4 it fails by more than the noise.  On data passes there is no timing noise."""
    assert TIMING_NOISE == 1.8
    runs = [run("A", s, [-10, -1, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -5, -1]) for s in SEEDS]
    v = verdict(runs, claim(**FASTER, ratio=2.0))  # B in (2, 3], need 2 × 1 s: 2 / 2 = 1, within [1/1.8, 1.8]
    assert v.verdict == "too few units" and "5 more unit(s) undecided: their ratio of CPU times is within the timing noise (×1.8" in v.reason
    assert v.unit_lines[0].endswith("[undecided: within the timing noise]")
    assert verdict(runs, claim(**FASTER, ratio=2.0), timing_noise=1.0).verdict == "reproduced"
    far = [run("A", s, [-10, -1, -1, -1, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -5, -5, -5, -1]) for s in SEEDS]
    assert verdict(far, claim(**FASTER, ratio=2.0)).verdict == "reproduced"  # B in (4, 5]: 4 / (2 × 1) ≥ 1.8
    assert verdict(runs, claim(**FASTER, ratio=1.0)).verdict == "reproduced"  # B in (2, 3]: 2 / 1 ≥ 1.8
    assert verdict(runs, claim(**FASTER, ratio=4.0)).verdict == "not reproduced"  # 2 s × 1.8 < 4 × 1 s
    assert verdict(runs, claim(**FASTER, ratio=2.0, axis="epoch")).verdict == "reproduced"


def test_the_target_of_faster_comes_from_the_claims_own_methods():
    """C, which the claim does not name, ends 50% higher: a target from every run would be out of A's and B's reach
    and the claim would fail; from A's and B's runs, A gets there first."""
    runs = [run("A", s, [-10, -1, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -3, -1]) for s in SEEDS]
    runs += [run("C", s, [-10, -0.5]) for s in SEEDS]
    assert verdict(runs, claim(**FASTER)).verdict == "reproduced"


def test_faster_takes_the_studys_target_by_default():
    runs = [run("A", s, [-10, -1, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -3, -1]) for s in SEEDS]
    c = claim(kind="faster", metric="elbo", better=["A"], worse=["B"])
    assert verdict(runs, c, targets=(Target("elbo", "relative", 0.01),)).verdict == "reproduced"


AS_FAST = dict(kind="as-fast", metric="elbo", methods=["A", "B", "C"], ratio=2.0, target={"relative": 0.01})


def test_as_fast_holds_when_every_pair_of_times_to_target_is_within_the_ratio():
    """A at 2 s, B at 3 s, C at 4 s: the slowest pair is 4/2 = 2 ≤ 2 (holds); with C at 5 s it is 2.5 > 2 (fails);
    on times known exactly (``timing_noise = 1``).  With the timing noise (×1.8) both are undecided; the ratio
    must be within 2 / 1.8 to hold, or beyond 2 × 1.8 to fail."""
    within = [run("A", s, [-10, -5, -1, -1, -1, -1]) for s in SEEDS]
    within += [run("B", s, [-10, -5, -3, -1, -1, -1]) for s in SEEDS]
    within += [run("C", s, [-10, -5, -3, -2, -1, -1]) for s in SEEDS]
    v = verdict(within, claim(**AS_FAST), timing_noise=1.0)
    assert v.verdict == "reproduced" and v.units["number"].tolist() == [2.0] * N
    assert "A 2 s, B 3 s, C 4 s: ratio 2" in v.units["detail"].iloc[0]
    beyond = within[:2 * N] + [run("C", s, [-10, -5, -3, -2, -2, -1]) for s in SEEDS]
    assert verdict(beyond, claim(**AS_FAST), timing_noise=1.0).verdict == "not reproduced"
    assert verdict(beyond, claim(**{**AS_FAST, "ratio": 2.5}), timing_noise=1.0).verdict == "reproduced"
    for runs in (within, beyond):
        v = verdict(runs, claim(**AS_FAST))
        assert v.verdict == "too few units" and "5 more unit(s) undecided" in v.reason
    assert verdict(within, claim(**{**AS_FAST, "ratio": 3.6})).verdict == "reproduced"  # 2 ≤ 3.6 / 1.8
    assert verdict(beyond, claim(**{**AS_FAST, "ratio": 1.3})).verdict == "not reproduced"  # 2.5 > 1.3 × 1.8


def test_as_fast_fails_a_unit_whose_method_never_reaches_the_target():
    """C never gets within 1% of the best final value: the unit fails even though A and B are level."""
    runs = [run(lb, s, [-10, -5, -1, -1]) for lb in "AB" for s in SEEDS]
    runs += [run("C", s, [-10, -5, -3, -2]) for s in SEEDS]
    v = verdict(runs, claim(**AS_FAST))
    assert v.verdict == "not reproduced" and "C not in" in v.units["detail"].iloc[0]
    assert verdict(runs, claim(**{**AS_FAST, "methods": ["A", "B"]})).verdict == "reproduced"


def test_as_fast_reads_each_method_at_its_fastest_variant():
    seeds = range(N + 1)  # one is held out to choose on
    runs = [run("A", s, [-10, -5, -1, -1]) for s in seeds]
    runs += [run("B (w=1)", s, [-10, -5, -4, -3, -2, -1, -1], method="B") for s in seeds]
    runs += [run("B (w=2)", s, [-10, -5, -1, -1], method="B") for s in seeds]
    v = verdict(runs, claim(**{**AS_FAST, "methods": ["A", "B"]}))
    assert v.verdict == "reproduced" and v.variants["p"]["B"] == "B (w=2)"


def test_equivalent_within_tolerance():
    runs = [run("A", s, [-10, -1.00]) for s in SEEDS] + [run("B", s, [-10, -1.02]) for s in SEEDS]
    c = dict(kind="equivalent", metric="elbo", methods=["A", "B"])
    assert verdict(runs, claim(**c, tolerance=0.02)).verdict == "reproduced"  # spread 0.02 ≤ 0.02 × 1.02
    assert verdict(runs, claim(**c, tolerance=0.015)).verdict == "not reproduced"  # 0.02 > 0.0153: not doubled
    assert verdict(runs, claim(**c, absolute=0.01)).verdict == "not reproduced"


def test_trend_improving_and_diminishing():
    def grid(values):
        return [run(f"G (b={b})", s, [-10, v], method="G", variant={"b": b})
                for b, v in zip((0, 1, 3, 10), values) for s in SEEDS]
    c = dict(kind="trend", metric="elbo", method="G", setting="b", shape="improving")
    assert verdict(grid([-5, -3, -2, -1.5]), claim(**c, diminishing=True)).verdict == "reproduced"
    assert verdict(grid([-5, -3, -3.5, -1.5]), claim(**c)).verdict == "not reproduced"  # not monotone
    assert verdict(grid([-5, -4.9, -2, -1.5]), claim(**c, diminishing=True)).verdict == "not reproduced"


PROBLEMS = [f"p{i}" for i in range(N)]


def test_value_claims_against_the_paper_and_not_comparable():
    """Five rows (one per problem) against runs within 1%: each row is one unit, whatever its seeds."""
    runs = [run("A", s, [-10, -100.0], problem=q) for q in PROBLEMS for s in range(3)]
    paper = [{"claim": "c", "problem": q, "algorithm": "A", "metric": "elbo", "value": -101.0} for q in PROBLEMS]
    c = dict(kind="value", paper=paper, comparable=True, comparable_why="the paper's data and split")
    v = verdict(runs, claim(**c), paper=paper)
    assert v.verdict == "reproduced" and len(v.units) == N and "3/3 runs hold" in v.units["detail"].iloc[0]
    assert verdict(runs, claim(**c, tolerance=0.001), paper=paper).verdict == "not reproduced"
    c.update(comparable=False, comparable_why="our own random split")
    assert verdict(runs, claim(**c), paper=paper).verdict == "not comparable"


def test_a_value_claim_counts_rows_not_variants_times_seeds():
    """One row, four step sizes × five seeds: one unit (too few), never n = 20."""
    runs = [run(f"A (lr={lr})", s, [-10, -100.0], method="A") for lr in (1, 2, 3, 4) for s in SEEDS]
    paper = [{"claim": "c", "problem": "p", "algorithm": "A", "metric": "elbo", "value": -101.0}]
    v = verdict(runs, claim(kind="value", paper=paper, comparable=True, comparable_why="x"), paper=paper)
    assert v.verdict == "too few units" and len(v.units) == 1 and "20/20 runs hold" in v.units["detail"].iloc[0]


def test_comparability_is_per_problem():
    """A beats B on the five comparable problems and loses on five of our own: judged on the comparable ones."""
    runs = [run(lb, s, [-10, v], problem=q) for q in PROBLEMS for lb, v in (("A", -1), ("B", -2)) for s in range(1)]
    runs += [run(lb, s, [-10, v], problem=f"own{i}") for i in range(N) for lb, v in (("A", -3), ("B", -2))
             for s in range(1)]
    c = claim(**ORDER, comparable={q: True for q in PROBLEMS}, comparable_why="own* are our own splits")
    v = verdict(runs, c)
    assert v.verdict == "reproduced" and "5 unit(s) on problems not comparable left out" in v.reason
    assert verdict(runs, claim(**ORDER)).verdict == "mixed"
    mine = claim(**ORDER, comparable={f"own{i}": True for i in range(N)}, comparable_why="p* are someone else's")
    assert verdict(runs, mine).verdict == "not reproduced"


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
    runs = [run("VMP", s, [-10, -1.0, -1.0, -1.0]) for s in SEEDS]
    runs += [run("SVI", s, [-10, -5, -2, -0.999965]) for s in SEEDS]
    table = ranked(runs)
    assert list(table.index) == ["VMP", "SVI"] and table.loc["VMP", "first"] == N
    assert table.loc["SVI", "tie"] and table.loc["SVI", "diff"] > 0


def test_overlapping_reach_intervals_tie_for_first():
    runs = [run("A", s, [-10, -5, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -1]) for s in SEEDS]
    table = ranked(runs)
    assert table["first"].sum() == 0 and (table["tied"] == N).all()


def test_a_blown_up_run_never_leads_the_ranking():
    runs = [run("A", s, [-10, -1]) for s in SEEDS] + [run("B", s, [-10, -2, -2, -2]) for s in SEEDS]
    runs[0] = run("A", 0, [-10, -1, -3e8])
    table = ranked(runs)
    assert table.loc["A", "diverged"] == 1 and table.loc["A", "ok"] == N - 1
    assert table.loc["A", "instances"] == N and table.loc["A", "first"] == N - 1  # seed 0 counts as never reaching


def test_a_value_row_versus_another_label_is_their_paired_difference():
    runs = [run("MF (init=mcmc)", s, [-10, 30.0 + s], method="MF", problem=q) for q in PROBLEMS for s in range(3)]
    runs += [run("MF (init=prior)", s, [-10, 25.2 + s], method="MF", problem=q) for q in PROBLEMS for s in range(3)]
    paper = [{"claim": "c", "problem": q, "algorithm": "MF (init=mcmc)", "versus": "MF (init=prior)",
              "metric": "elbo", "value": 4.8} for q in PROBLEMS]
    c = claim(kind="value", paper=paper, comparable=True, comparable_why="same images", tolerance=0.02)
    v = verdict(runs, c, paper=paper)
    assert v.verdict == "reproduced" and len(v.units) == N  # 4.8 on every seed, though the levels differ by seed
    assert (v.units["detail"].str.startswith("3/3 runs hold")).all()


def test_a_claim_the_study_cannot_run_yet_says_why():
    c = claim(**ORDER, problems=["covtype"], not_run="covtype's data arrives with issue 29")
    v = verdict([run("A", s, [-10, -1]) for s in SEEDS] + [run("B", s, [-10, -2]) for s in SEEDS], c)
    assert v.verdict == "not run" and "issue 29" in v.reason


def test_faster_while_reaching_the_same_error_needs_both():
    """Knowles ends lower than CVI by 0.5%: CVI is faster to its target, but does not reach the same error at 0.1%."""
    runs = [run("A", s, [-10, -1.005, -1.005]) for s in SEEDS] + [run("B", s, [-10, -5, -3, -1.0]) for s in SEEDS]
    c = dict(FASTER, target={"relative": 0.01}, final="equivalent")
    assert verdict(runs, claim(**c, tolerance=0.01)).verdict == "reproduced"
    assert verdict(runs, claim(**c, tolerance=0.001)).verdict == "not reproduced"
    assert verdict(runs, claim(**dict(FASTER, final="better"))).verdict == "not reproduced"


def test_two_runs_at_the_target_from_their_start_tie():
    runs = [run("A", s, [-1.0, -1.0]) for s in SEEDS] + [run("B", s, [-1.0, -1.0]) for s in SEEDS]
    assert verdict(runs, claim(**FASTER)).verdict == "not reproduced"


def test_where_runs_end_needs_them_to_have_ended_and_a_variant_is_chosen_by_its_final_value_when_none_gets_there():
    moving = [-10] + list(np.linspace(-5, -1.0, 20))
    runs = [run("A", s, [-10, -1.0] + [-1.0] * 19) for s in SEEDS] + [run("B", s, moving, tail=0) for s in SEEDS]
    c = dict(FASTER, target={"relative": 0.01}, final="equivalent", tolerance=0.01)
    assert verdict(runs, claim(**c)).verdict == "too few units"  # B is still moving: where it ends is not known
    assert verdict(runs, claim(**c, at_budget=True)).verdict == "reproduced"
    runs = [run("A", s, [-10, -1.0]) for s in SEEDS]
    runs += [run(f"B ({k})", s, [-10, v], method="B") for s in SEEDS for k, v in (("z weak", -9.0), ("a strong", -5.0))]
    assert verdict(runs, claim(**FASTER)).variants["p"]["B"] == "B (a strong)"  # neither reaches: the better final


def test_a_faster_method_that_diverges_after_reaching_the_target_loses_the_unit():
    """A gets there first on every seed but blows up on seeds 0 and 1 afterwards: those units fail (3/5, mixed); B
    diverging instead is read on its checkpoints before the blow-up, so A still wins."""
    runs = [run("A", s, [-10, -1, -1, -1] if s > 1 else [-10, -1, -1, -5e8]) for s in SEEDS]
    runs += [run("B", s, [-10, -5, -3, -1]) for s in SEEDS]
    v = verdict(runs, claim(**FASTER))
    assert v.verdict == "mixed" and v.units["holds"].sum() == 3
    runs = [run("A", s, [-10, -1, -1, -1]) for s in SEEDS] + [run("B", s, [-10, -5, -3, -5e8]) for s in SEEDS]
    assert verdict(runs, claim(**FASTER)).verdict == "reproduced"


def test_a_claim_is_judged_on_every_reading_of_its_metric_and_says_which_the_paper_matches():
    """The paper's rows (value 0.5) are on the scale of ``loss`` (0.5), not of ``elbo`` (−100): both readings are
    judged, as two verdicts, and each says that the magnitudes are closest to ``loss``."""
    runs = [run("A", s, [-10, -100.0], problem=q, loss=[1.0, 0.5, 0.5, 0.5]) for q in PROBLEMS for s in range(3)]
    paper = [{"claim": "c", "problem": q, "algorithm": "A", "metric": "elbo", "value": 0.5} for q in PROBLEMS]
    table = {"id": "c", "source": "paper", "kind": "value", "readings": ["loss"], "comparable": True,
             "comparable_why": "the paper's data"}
    claims = parse_claims({"claim": [table]}, paper)
    assert [c.id for c in claims] == ["c", "c [loss]"] and claims[1].metric == "loss"
    on_elbo, on_loss = judge(claims, Evidence(results(runs), INFO, paper=paper))
    assert on_elbo.verdict == "not reproduced" and on_loss.verdict == "reproduced"
    assert all("elbo 2e+02, loss 0: the paper's magnitudes are closest to loss" in v.reason for v in (on_elbo, on_loss))

