"""The ``digits`` rule of value claims and the paper's table row by row, on hand-made results and trajectories."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from svibench.authors_code import AuthorsTrajectories, MethodTrajectory
from svibench.report.authors import rows_table
from svibench.claims import Evidence
from svibench.claims.kinds import decimals_of, prints

from .test_verdicts import INFO, claim, results, run, verdict


@pytest.mark.parametrize("row, decimals", [({"value": 590.4}, 1), ({"value": 0.48}, 2), ({"value": 0.48, "decimals": 3}, 3),
                                           ({"value": 149641}, 0), ({"value": 5418.0, "decimals": 1}, 1)])
def test_a_paper_numbers_decimals_are_its_printed_ones(row, decimals):
    assert decimals_of(row) == decimals


def test_a_value_prints_the_paper_number_within_half_a_unit_of_its_last_digit():
    assert prints(590.449, 590.4, 1) and prints(590.35, 590.4, 1) and not prints(590.46, 590.4, 1)
    assert not prints(np.nan, 590.4, 1)


def _authors(values, method="A"):
    """Trajectories of 'the authors' code' for method A: one row per seed, one column per iteration."""
    values = np.atleast_2d(np.asarray(values, dtype=float))
    m = MethodTrajectory(method, 0.4, values.shape[1] - 1, values.shape[0] == 1, None,
                         {"elbo": values, "loss": values})
    return {"p": AuthorsTrajectories(None, {}, {}, {method: m})}


PAPER = [{"claim": "c", "problem": "p", "algorithm": "A", "metric": "elbo", "value": -1.5, "iteration": 2}]
RULE = dict(kind="value", rule="digits", comparable=True, comparable_why="the paper's split", paper=PAPER)


def test_the_digits_rule_reads_the_row_at_its_iteration_not_the_runs_end():
    runs = [run("A", 0, [-10, -3, -1.5, -1.0])]  # prints -1.5 after 2 steps, ends at -1.0
    v = verdict(runs, claim(**RULE), paper=PAPER)
    assert v.units["holds"].tolist() == [True] and "prints -1.5 at iteration 2" in v.units["detail"][0]
    moved = [{**PAPER[0], "iteration": 3}]
    assert verdict(runs, claim(**{**RULE, "paper": moved}), paper=moved).units["holds"].tolist() == [False]


def test_the_digits_rule_holds_where_both_pass_through_the_papers_number_at_one_iteration():
    runs = [run("A", 0, [-10, -1.5, -1.2, -1.0])]  # -1.0 at iteration 2, but -1.5 at iteration 1
    c = claim(**RULE)
    assert verdict(runs, c, paper=PAPER).units["holds"].tolist() == [False]  # no trajectory of the authors'
    v = verdict(runs, c, paper=PAPER, authors=_authors([-9, -1.5, -1.3]))
    assert v.units["holds"].tolist() == [True] and "with the authors' code at iteration 1" in v.units["detail"][0]
    assert verdict(runs, c, paper=PAPER, authors=_authors([-9, -1.4, -1.3])).units["holds"].tolist() == [False]


def test_the_rows_table_sets_the_paper_the_authors_and_svibench_side_by_side():
    runs = [run("A", 0, [-10, -1.5, -1.2, -1.0])]
    ev = Evidence(results(runs), INFO, paper=PAPER, authors=_authors([[-9, -1.5, -1.3], [-9, -1.6, -1.46]]))
    table = rows_table(ev, PAPER)
    (row,) = table.rows
    assert row[:7] == ["p", "A", "elbo", "2", "-1.5", "-1.4 (-1.5 to -1.3, n=2)", "-1.2"]
    assert row[7] == "reproduced (through the authors' point at iteration 1)"
    assert table.data["reproduced"].tolist() == [True] and table.note.startswith("1 of 1 rows reproduced")
    ev = replace(ev, authors={})
    (row,) = rows_table(ev, PAPER).rows
    assert row[5] == "—" and row[7] == "not reproduced (nearest at iteration 1, +0.00)"


def test_a_row_without_an_iteration_is_not_in_the_rows_table():
    ev = Evidence(results([run("A", 0, [-10, -1.5])]), INFO)
    assert rows_table(ev, [{k: v for k, v in PAPER[0].items() if k != "iteration"}]) is None
