"""Verdicts a referee would sign: a pure function from (claims, results) to verdicts.

The rule, stated in every report with its n:

- **Units.** A claim is judged on paired units, one per (problem, seed): the
  same data and start for every method (:mod:`.kinds` says what each kind
  measures on a unit).  A tie never holds: order and faster claims need a gap
  beyond the tie tolerance, in the claimed direction; an as-fast claim needs
  every method at the target, the slowest within ``ratio`` of the fastest.
- **A diverged run is a result.**  It fails every unit it is in (its method
  lost that unit); a variant is chosen with its diverged runs counting as its
  worst, and then judged on every unit, so it is never picked only where it
  survived.
- **Variants are chosen on held-out data.**  Where a method has several
  variants, each pool chooses on its lowest seed (or, with one seed, its first
  problem) and judges the rest; the ledger says what was held out.
- **Incomplete** only when a planned run of a variant the claim names is
  absent: not run, crashed, or timed out.  The verdict names those runs.
- **Undecided units.**  A unit whose answer a still-moving run could change
  (:mod:`.convergence`; e.g. the better side of a unit that fails, the worse
  side of one that holds) is left out of n unless the claim is declared
  ``at_budget``; the verdict says how many.  So is a faster or as-fast unit
  on CPU time whose ratio of times is within the timing noise of the ratio
  its answer turns on (``[report] timing_noise``, by default
  :data:`svibench.settings.TIMING_NOISE`: two makings of one run differ by up
  to that factor), whatever ``at_budget`` says.
- **Sign rule** (:mod:`.stats`).  With n decided units, k of which hold:
  *partly* when the units disagree only between problems (each problem
  unanimous on ≥ 3 units); else *reproduced* when the one-sided sign test
  gives P(X ≥ k) ≤ 0.05, *not reproduced* when P(X ≤ k) ≤ 0.05, and *mixed*
  (k/n) otherwise.  Fewer than 5 units cannot reach p ≤ 0.05 either way: *too
  few units*, with the count.  Every verdict prints n, k and p.
- **Comparability per problem.**  A unit on a problem the claim declares not
  comparable (``comparable``: not the paper's data or split) is shown but not
  counted; with no comparable unit the verdict is *not comparable*.  A value
  claim's units are its [[paper]] rows.  *Not run* when no unit exists at all,
  or the claim says why the study cannot run it yet (``not_run``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

from .schema import Claim
from .evidence import Evidence
from .kinds import CHOSEN_ON, Chosen, units
from .stats import ALPHA, MIN_UNITS, sign_test
from ..settings import TIMING_NOISE

__all__ = ["Verdict", "VERDICTS", "MIN_UNITS", "PARTLY_UNITS", "judge", "Evidence", "rule"]

VERDICTS = ("reproduced", "partly", "not reproduced", "mixed", "too few units", "incomplete", "not comparable",
            "not run")
#: The fewest units each problem needs for a *partly* (every problem unanimous).
PARTLY_UNITS = 3


def rule(timing_noise: float = TIMING_NOISE) -> str:
    """The verdict rule in words, printed under every report's claims (``timing_noise``: the study's)."""
    return ("Paired units are (problem, seed); a method's variant is chosen on held-out data (the lowest seed, else the "
            "first problem) that is then not a unit; a tie never holds; a diverged run fails its units. A unit is "
            "undecided when a still-moving run could change its answer, or when its ratio of CPU times is within the "
            f"timing noise (×{timing_noise:g} between two makings of one run) of the ratio its answer turns on. Sign "
            f"rule on the decided units: partly when units disagree only between problems (each unanimous on ≥ "
            f"{PARTLY_UNITS} units), else reproduced when the one-sided sign test gives p ≤ {ALPHA} that it holds, not "
            f"reproduced when p ≤ {ALPHA} that it fails, else mixed (k/n); fewer than {MIN_UNITS} units: too few units. "
            "Incomplete: a planned run of a named method is absent, crashed or timed out.")


UNIT_COLUMNS = ["pool", "problem", "seed", "holds", "number", "detail", "unconverged", "within_noise", "comparable"]


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict, the rule's reason in one line, its units and the variant chosen per problem."""

    claim: Claim
    verdict: str
    reason: str
    units: pd.DataFrame
    variants: Chosen = field(default_factory=dict)

    def _per_pool(self, details: bool) -> list[str]:
        out = []
        for pool, group in self.units.groupby("pool", sort=False):
            chosen = ", ".join(f"{m} {lb}" if m == CHOSEN_ON else f"{m} as {lb}" if m != lb else m
                               for m, lb in self.variants.get(pool, {}).items())
            out.append(f"{pool}: {int(group['holds'].sum())}/{len(group)} hold"
                       + ("; " + "; ".join(group["detail"]) if details else "") + (f" [{chosen}]" if chosen else ""))
        return out

    @property
    def summaries(self) -> list[str]:
        """Per pool: how many units hold, with the variants judged."""
        return self._per_pool(details=False)

    @property
    def unit_lines(self) -> list[str]:
        """Every unit in one line: where, whether it holds, why; undecided and not comparable ones marked."""
        out = []
        for u in self.units.itertuples():
            moving = u.unconverged and not self.claim.at_budget
            marks = (([] if u.comparable else ["not comparable"]) + (["undecided"] if moving else [])
                     + (["undecided: within the timing noise"] if u.within_noise and not moving else []))
            where = u.pool if self.claim.kind == "value" else f"{u.problem} seed {u.seed}"  # a value claim's unit is a row
            out.append(f"{where}: {'holds' if u.holds else 'fails'} ({u.detail})"
                       + (f" [{', '.join(marks)}]" if marks else ""))
        return out

    @property
    def evidence(self) -> list[str]:
        """Per pool: how many units hold, and every unit's measured number (the ledger's ``evidence``)."""
        return self._per_pool(details=True)

    def summary(self) -> str:
        """The verdict's one line: the rule's reason and n."""
        return self.reason


def _decide(claim: Claim, table: pd.DataFrame, missing: list[str], noise: float = TIMING_NOISE) -> tuple[str, str]:
    """(verdict, reason) by the rule of the module docstring (``noise``: the timing noise the units were judged
    with)."""
    if claim.not_run:
        return "not run", f"not run: {claim.not_run}"
    if table.empty and not missing:
        return "not run", "no run of the methods it names"
    if claim.comparable is False or (not table.empty and not table["comparable"].any()):
        return "not comparable", f"not comparable: {claim.comparable_why}"
    if missing:
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        return "incomplete", f"{len(missing)} planned run(s) absent, crashed or timed out: {', '.join(missing[:3])}{more}"
    elsewhere = ~table["comparable"].astype(bool)
    aside = (f"; {int(elsewhere.sum())} unit(s) on problems not comparable left out ({claim.comparable_why})"
             if elsewhere.any() else "")
    table = table[~elsewhere]
    moving = table["unconverged"].astype(bool) & (not claim.at_budget)
    noisy = table["within_noise"].astype(bool) & ~moving
    decided = table[~(moving | noisy)]
    n, held = len(decided), int(decided["holds"].sum())
    test = sign_test(held, n)
    open_ = (f"; {int(moving.sum())} more unit(s) undecided: a run that could change their answer was still moving"
             if moving.any() else "")
    open_ += (f"; {int(noisy.sum())} more unit(s) undecided: their ratio of CPU times is within the timing noise "
              f"(×{noise:g} between two makings of one run) of the ratio their answer turns on" if noisy.any() else "")
    open_ += aside
    if n < MIN_UNITS:
        return "too few units", (f"{held} of n = {n} decided unit(s) hold{open_}; the one-sided sign test needs "
                                 f"n ≥ {MIN_UNITS} to reach p ≤ {ALPHA}")
    per_pool = decided.groupby("pool", sort=False)["holds"].agg(["all", "any", "size"])
    unanimous = (per_pool["all"] | ~per_pool["any"]).all() and (per_pool["size"] >= PARTLY_UNITS).all()
    if unanimous and per_pool["all"].any() and not per_pool["all"].all():
        held_on = ", ".join(per_pool.index[per_pool["all"]])
        return "partly", f"holds on every unit of {held_on} and on none of the others; {test.describe()}{open_}"
    if test.p_holds <= ALPHA:
        return "reproduced", f"{test.describe()}{open_}"
    if test.p_fails <= ALPHA:
        return "not reproduced", f"{test.describe()}{open_}"
    return "mixed", f"mixed ({held}/{n}): {test.describe()}{open_}"


def _judge_one(claim: Claim, ev: Evidence) -> Verdict:
    if claim.not_run:
        return Verdict(claim, *_decide(claim, pd.DataFrame(columns=UNIT_COLUMNS), []), pd.DataFrame(columns=UNIT_COLUMNS))
    rows, chosen = units(ev, claim)
    for unit in rows:
        unit["comparable"] = claim.comparable_on(ev.base_of(unit["problem"]))
    table = pd.DataFrame(rows, columns=UNIT_COLUMNS)
    problems = [p for pool in ev.pools(claim).values() for p in pool]
    if claim.kind == "value":
        rows_of = [r for r in ev.paper if r.get("claim") == claim.paper_id]
        labels = sorted({lb for r in rows_of for name in (r["algorithm"], r.get("versus")) if name
                         for lb in ev.labels(claim, name)})
        problems = sorted({p for r in rows_of for p in ev.pool(r["problem"])})
    else:
        names = claim.better + claim.worse + claim.methods
        labels = sorted({lb for name in names for lb in ev.labels(claim, name)})
    verdict, reason = _decide(claim, table, ev.missing(labels, problems), ev.timing_noise)
    return Verdict(claim, verdict, reason, table, chosen)


def _magnitudes(verdicts: list[Verdict], ev: Evidence) -> list[Verdict]:
    """A value claim judged on several readings of its metric: each verdict says which reading the paper's
    numbers are closest to (the median over its rows of the relative distance of the median run)."""
    families: dict[str, list[int]] = {}
    for i, v in enumerate(verdicts):
        if v.claim.kind == "value" and (v.claim.readings or v.claim.reading_of):
            families.setdefault(v.claim.paper_id, []).append(i)
    out = list(verdicts)
    for members in (m for m in families.values() if len(m) > 1):
        distance = {verdicts[i].claim.metric or _rows_metric(verdicts[i].claim, ev): float(pd.to_numeric(verdicts[i].units["number"]).replace(
            [float("inf"), -float("inf")], float("nan")).median()) for i in members}
        known = {m: d for m, d in distance.items() if d == d}
        if not known:
            continue
        closest = min(known, key=known.get)
        said = ("; readings, median relative distance to the paper's rows: "
                + ", ".join(f"{m} {d:.2g}" for m, d in known.items())
                + f": the paper's magnitudes are closest to {closest}")
        for i in members:
            out[i] = replace(verdicts[i], reason=verdicts[i].reason + said)
    return out


def _rows_metric(claim: Claim, ev: Evidence) -> str:
    """The metric(s) a value claim's own [[paper]] rows name."""
    return ", ".join(sorted({r["metric"] for r in ev.paper if r.get("claim") == claim.paper_id}))


def judge(claims: list[Claim], evidence: Evidence) -> list[Verdict]:
    """Every claim's verdict (pure: reads ``evidence`` only)."""
    return _magnitudes([_judge_one(claim, evidence) for claim in claims], evidence)
