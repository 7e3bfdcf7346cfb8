"""Verdicts a referee would sign: a pure function from (claims, results) to verdicts.

The rule, stated in every report with its n:

- **Units.** A claim is judged on paired units, one per (problem, seed): the
  same data and start for every method (:mod:`.kinds` says what each kind
  measures on a unit).  A tie never holds: order and faster claims need a gap
  beyond the tie tolerance, in the claimed direction; an as-fast claim needs
  every method at the target, the slowest within ``ratio`` of the fastest.
- **Complete.** Every planned run of the methods the claim names, on its
  problems, must have ended healthy and ``ok`` (:mod:`svibench.health`);
  otherwise the verdict is *incomplete* and names the runs.  A problem whose
  runs all failed stays in the denominator that way.
- **Sign rule.** With n ≥ 3 units: *reproduced* when every unit holds, *not
  reproduced* when none does, *partly* when the units disagree only between
  problems (each problem unanimous on ≥ 3 units), else *inconclusive*.  Fewer
  than 3 units is *inconclusive*, and so is a claim judged on an unconverged run
  unless it is declared ``at_budget`` (a faster claim reads the time a target is
  reached, so convergence enters it only when it also says where the runs end,
  ``final``).
- A ``value`` claim declared ``comparable = false`` is *not comparable*
  whatever its numbers; *not run* when no unit exists at all, or the claim says
  why the study cannot run it yet (``not_run``).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .schema import Claim
from .evidence import Evidence
from .kinds import Chosen, units

__all__ = ["Verdict", "VERDICTS", "MIN_UNITS", "judge", "Evidence", "RULE"]

VERDICTS = ("reproduced", "partly", "not reproduced", "inconclusive", "incomplete", "not comparable", "not run")
#: The fewest paired units on which a verdict other than inconclusive is given.
MIN_UNITS = 3
RULE = ("Paired units are (problem, seed). Sign rule: with n ≥ 3 units, reproduced when every unit holds, not "
        "reproduced when none does, partly when units disagree only between problems (each unanimous on ≥ 3 units), "
        "else inconclusive; a tie never holds. Incomplete: a planned run of a named method is not ok.")
UNIT_COLUMNS = ["pool", "problem", "seed", "holds", "number", "detail", "unconverged"]


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict, the rule's reason in one line, its units and the variant chosen per problem."""

    claim: Claim
    verdict: str
    reason: str
    units: pd.DataFrame
    variants: Chosen = field(default_factory=dict)

    @property
    def evidence(self) -> list[str]:
        """Per pool: how many units hold, and the range of the measured number."""
        out = []
        for pool, group in self.units.groupby("pool", sort=False):
            chosen = ", ".join(f"{m} as {lb}" if m != lb else m for m, lb in self.variants.get(pool, {}).items())
            out.append(f"{pool}: {int(group['holds'].sum())}/{len(group)} hold; "
                       + "; ".join(group["detail"].head(3)) + (" …" if len(group) > 3 else "")
                       + (f" [{chosen}]" if chosen else ""))
        return out

    def summary(self) -> str:
        """The verdict's one line: the rule's reason and n."""
        return self.reason


def _decide(claim: Claim, table: pd.DataFrame, missing: list[str]) -> tuple[str, str]:
    """(verdict, reason) by the rule of the module docstring."""
    if claim.not_run:
        return "not run", f"not run: {claim.not_run}"
    if table.empty and not missing:
        return "not run", "no ok run of the methods it names"
    if claim.kind == "value" and not claim.comparable:
        return "not comparable", f"not comparable: {claim.comparable_why}"
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return "incomplete", f"{len(missing)} planned run(s) not ok: {', '.join(missing[:3])}{more}"
    n, held = len(table), int(table["holds"].sum())
    if n < MIN_UNITS:
        return "inconclusive", f"n = {n} paired unit(s), fewer than {MIN_UNITS}"
    moving = int(table["unconverged"].sum())
    if moving and not claim.at_budget:
        return "inconclusive", f"{moving} of {n} units have an unconverged run and the claim is not at a budget"
    if held == n:
        return "reproduced", f"holds on all n = {n} paired units"
    if held == 0:
        return "not reproduced", f"holds on none of n = {n} paired units"
    per_pool = table.groupby("pool")["holds"].agg(["nunique", "size"])
    if (per_pool["nunique"] == 1).all() and (per_pool["size"] >= MIN_UNITS).all():
        return "partly", f"holds on {held} of n = {n} units: on every unit of some problems, none of the others"
    return "inconclusive", f"units disagree: holds on {held} of n = {n}"


def _judge_one(claim: Claim, ev: Evidence) -> Verdict:
    if claim.not_run:
        return Verdict(claim, *_decide(claim, pd.DataFrame(columns=UNIT_COLUMNS), []), pd.DataFrame(columns=UNIT_COLUMNS))
    rows, chosen = units(ev, claim)
    table = pd.DataFrame(rows, columns=UNIT_COLUMNS)
    problems = [p for pool in ev.pools(claim).values() for p in pool]
    if claim.kind == "value":
        rows_of = [r for r in ev.paper if r.get("claim") == claim.id]
        labels = sorted({lb for r in rows_of for name in (r["algorithm"], r.get("versus")) if name
                         for lb in ev.labels(claim, name)})
        problems = sorted({p for r in rows_of for p in ev.pool(r["problem"])})
    else:
        names = claim.better + claim.worse + claim.methods
        labels = sorted({lb for name in names for lb in ev.labels(claim, name)})
    verdict, reason = _decide(claim, table, ev.missing(labels, problems))
    return Verdict(claim, verdict, reason, table, chosen)


def judge(claims: list[Claim], evidence: Evidence) -> list[Verdict]:
    """Every claim's verdict (pure: reads ``evidence`` only)."""
    return [_judge_one(claim, evidence) for claim in claims]
