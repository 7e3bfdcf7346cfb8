"""The report's first screen: the paper claims with their verdicts, the project's targets apart, and the ranking
(beside the headline figure); and the performance profile.

Also the claims ledger written beside each report (``claims.json``), which the
index of all reports reads.
"""
from __future__ import annotations

from collections import Counter
from typing import Any, Callable

import numpy as np
import pandas as pd

from ..claims import Evidence, Verdict, rule
from ..claims.schema import Claim
from .compare import TAUS, performance_profile, profile_ratios
from .fmt import DASH, number
from .frozen import AMENDED, UNKNOWN, Amendments, describe_change
from .header import Header
from ..settings import Target
from .tables import Details, Prose, Table, reach_records

__all__ = ["ranking_tables", "claims_tables", "claim_notes", "profile_table", "ledger", "best", "fold_shared", "LEDGER"]

LEDGER = "claims.json"

#: Algorithms per problem in the first screen's ranking (the detailed ranking has them all).
GLANCE_TOP = 3

RANKING_NOTE = ("Best first: ranked by median CPU time to the target ({target}) over the instances (problem × seed; "
                "random splits pooled), a run that is not ok or never gets there counting as never. First to target, "
                "'k of n, tied on j': on k of its n instances it reached the target strictly before every other "
                "algorithm, and on j more together with another (the checkpoints cannot tell them apart). Final: "
                "median final value; vs leader: median paired difference to the leader's final value, a tie when "
                "within the target's tolerance. † k: k runs unconverged (still moving by more than {tol:g} (relative) "
                "and their seed-to-seed noise over the last {window:.0%} of checkpoints).")


def _health(rec) -> str:
    parts = [f"{rec.ok}/{rec.ok + rec.diverged + rec.other} ok"]
    parts += [f"{rec.diverged} diverged"] if rec.diverged else []
    parts += [f"{rec.other} failed/timed out"] if rec.other else []
    parts += [f"† {rec.unconverged}"] if rec.unconverged else []
    return ", ".join(parts)


def _rank_row(rec) -> list[str]:
    leader = rec.label == rec.leader
    time = "never" if not np.isfinite(rec.time) else f"{rec.time:.3g} s"
    versus = DASH if leader else ("tie" if rec.tie else (DASH if np.isnan(rec.diff) else f"Δ {rec.diff:+.3g}"))
    label = rec.label + (" († unconverged)" if leader and rec.unconverged else "")
    first = f"{rec.first} of {rec.instances}" + (f", tied on {rec.tied}" if rec.tied else "")
    return [rec.pool, label, time, first, number(rec.final, 6), versus, _health(rec)]


def ranking_tables(rank: pd.DataFrame, unranked: dict[str, list[str]], target: Target,
                   tolerance: float, window: float = 0.1) -> tuple[Table, Table] | None:
    """The ranking (:func:`.rank.ranking`) as the first screen's table (top :data:`GLANCE_TOP` per problem, each
    problem's leader in bold) and in detail (every algorithm); a problem where the target's metric is no fair ranking
    key says so instead."""
    if rank.empty and not unranked:
        return None
    columns = ["problem", "algorithm", "to target (CPU)", "first to target", f"final {target.metric}", "vs leader", "runs"]
    note = RANKING_NOTE.format(target=target.describe(), tol=tolerance, window=window)
    left_out = [[pool, f"not ranked on {', '.join(problems)}: its model declares {target.metric} no fair ranking "
                 "key there", "", "", "", "", ""] for pool, problems in sorted(unranked.items())]
    rows, short, shown, bold, bold_short = [], [], {}, set(), set()
    for rec in rank.itertuples():
        rows.append(_rank_row(rec))
        bold |= {(len(rows) - 1, 1)} if rec.label == rec.leader else set()
        shown[rec.pool] = shown.get(rec.pool, 0) + 1
        if shown[rec.pool] <= GLANCE_TOP:
            short.append(rows[-1])
            bold_short |= {(len(short) - 1, 1)} if rec.label == rec.leader else set()
    more = [[pool, f"… {n - GLANCE_TOP} more (section Final metrics)", "", "", "", "", ""]
            for pool, n in shown.items() if n > GLANCE_TOP]
    return (Table(f"Ranking: first to {target.describe()}", columns, short + more + left_out, note, bold_short, rank),
            Table(f"Ranking in detail: first to {target.describe()}", columns, rows + left_out, note, bold, rank))


def claims_tables(verdicts: list[Verdict], amended: Amendments, timing_noise: float) -> list[Table]:
    """The paper claims with their verdicts, then (apart, never in the tally) the project's own targets; a claim
    edited after its runs (``amended``, from :func:`.frozen.amendments`; None: unknown) says so beside its verdict;
    the rule under them with the ``timing_noise`` they were judged with."""
    out = []
    for ledger_kind, title in (("claim", "Claims of the papers, checked"), ("target", "Project targets (not paper claims)")):
        chosen = [v for v in verdicts if v.claim.ledger == ledger_kind]
        if not chosen:
            continue
        reasons, shared = fold_shared([(f"{AMENDED}; " if v.claim.id in (amended or {}) else "") + v.reason
                                       for v in chosen])
        rows = [[v.claim.id, v.verdict, reason] for v, reason in zip(chosen, reasons)]
        data = pd.DataFrame([{"id": v.claim.id, "source": v.claim.source, "kind": v.claim.kind, "verdict": v.verdict,
                              "units": len(v.units), "amended": None if amended is None else v.claim.id in amended}
                             for v in chosen])
        notes = rule(timing_noise) + (f" {UNKNOWN}" if amended is None else "")
        notes += "".join(f" [{k}]: {clause}." for k, clause in enumerate(shared, 1))
        out.append(Table(title, ["claim", "verdict", "why (this run)"], rows, notes,
                         {(i, 1) for i in range(len(rows))}, data))
    return out


#: A clause of a verdict's reason at least this long that two claims share is written once, under the table.
SHARED_CLAUSE = 40


def fold_shared(reasons: list[str]) -> tuple[list[str], list[str]]:
    """The reasons with each long clause ("; "-separated) that two or more of them share replaced by "[k]", and
    those clauses in order (k = 1, 2, ...), so that a reason common to several claims (e.g. the same runs not ok)
    is read once."""
    clauses = [reason.split("; ") for reason in reasons]
    counts = Counter(clause for parts in clauses for clause in set(parts))
    shared = [c for c in dict.fromkeys(c for parts in clauses for c in parts) if counts[c] > 1 and len(c) >= SHARED_CLAUSE]
    mark = {clause: f"[{k}]" for k, clause in enumerate(shared, 1)}
    return ["; ".join(mark.get(c, c) for c in parts) for parts in clauses], shared


def _statement(claim: Claim) -> str:
    """What the claim asserts, in words."""
    if claim.kind in ("order", "faster"):
        verb = "beat" if claim.kind == "order" else "reach the target sooner than"
        extra = f" by > {claim.margin:g}" if claim.margin else ""
        extra += f" (× {claim.ratio:g})" if claim.kind == "faster" and claim.ratio != 1 else ""
        extra += f", with {claim.final} final values" if claim.kind == "faster" and claim.final != "any" else ""
        return f"{claim.kind}: {', '.join(claim.better)} {verb} {', '.join(claim.worse)}{extra} on {claim.metric} ({claim.axis})"
    if claim.kind == "as-fast":
        return (f"as fast: {', '.join(claim.methods)} reach the target within a factor {claim.ratio:g} of each other's "
                f"{'CPU time' if claim.axis == 'time' else 'data passes'} on {claim.metric}")
    if claim.kind == "equivalent":
        allowed = f"± {claim.absolute:g}" if claim.absolute is not None else f"within {100 * claim.tolerance:g}%"
        return f"equivalent: {', '.join(claim.methods)} reach the same {claim.metric}, {allowed} ({claim.axis})"
    if claim.kind == "trend":
        return (f"trend: {claim.methods[0]}'s {claim.metric} {claim.shape} with {claim.setting}"
                + (", in diminishing steps" if claim.diminishing else ""))
    return f"value: the paper's numbers within {100 * claim.tolerance:g}% (the [[paper]] rows linked to it)"


def claim_notes(verdicts: list[Verdict], amended: Amendments, render: Callable[[str], str]) -> Prose:
    """Each claim's statement, verdict with its reason, evidence per problem (with the variants used), the definitions
    at run time and now if it was amended, and its note (through ``render``, which fills its placeholders)."""
    items = []
    for v in verdicts:
        c = v.claim
        paragraphs = [f"Claim ({_statement(c)}). Verdict: {v.verdict}: {v.reason}."]
        paragraphs += [f"Evidence: {'; '.join(v.summaries)}."] if v.summaries else []
        paragraphs += [Details(f"Every unit ({len(v.units)})", v.unit_lines)] if len(v.units) else []
        paragraphs += [f"Variants: only {', '.join(lb for lbs in c.variants.values() for lb in lbs)}, because "
                       f"{c.variants_why}."] if c.variants else []
        paragraphs += describe_change(*amended[c.id]) if c.id in (amended or {}) else []
        paragraphs += [p.strip() for p in render(c.note).split("\n\n") if p.strip()]
        mark = f" ({AMENDED})" if c.id in (amended or {}) else ""
        kind = "project target" if c.ledger == "target" else "paper claim"
        items.append((f"{c.id} ({kind}) — {v.verdict}{mark} — {c.source or 'svibench'}", paragraphs))
    return Prose("Claims", items)


def profile_table(ev: Evidence, target: Target) -> tuple[Table, pd.DataFrame] | None:
    """The performance profile at τ = 1, 2, 4, 10 and ∞ as a table, and the ratios behind it (for the figure)."""
    reach = reach_records(ev, target)
    if reach.empty or reach["label"].nunique() < 2:
        return None
    ratios = profile_ratios(reach)
    profile = performance_profile(ratios, TAUS).sort_values(list(TAUS), ascending=False)
    rows = [[label, *(f"{rec[t]:.2f}" for t in TAUS), f"{rec['solved']:.2f}"] for label, rec in profile.iterrows()]
    return Table(
        f"Across problems: time to target ({target.describe()})",
        ["algorithm", *(f"ρ(τ={t:g})" for t in TAUS), "reached"],
        rows,
        f"Performance profile (Dolan & Moré 2002) over {len(ratios)} instances (problem × seed): ρ(τ) is the "
        "fraction of instances on which the algorithm reaches the target within τ × the fastest algorithm's "
        "CPU time on that instance; ρ(1) is how often it is the fastest, 'reached' how often it gets there "
        "at all (a run that is not ok never does).",
        {(0, 0)},
        profile,
    ), ratios


def best(rank: pd.DataFrame, target: Target | None) -> dict[str, Any]:
    """The ranking's answer for the index: its target and, per problem, the leader and its median CPU seconds to the
    target (None where no algorithm reached it on most instances: the leader is then the best final value)."""
    if target is None or rank.empty:
        return {}
    leaders = rank[rank["label"] == rank["leader"]]
    return {"target": target.describe(),
            "leaders": [{"problem": r.pool, "algorithm": r.label,
                         "seconds": float(r.time) if np.isfinite(float(r.time)) else None} for r in leaders.itertuples()]}


def ledger(header: Header, manifest: dict[str, Any], verdicts: list[Verdict], amended: Amendments,
           best: dict[str, Any] | None = None, cost: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the index of all reports needs: the study, how it was run, which algorithm reached the ranking's target
    first on each problem (``best``, from :func:`best`), and one line per claim or target (``ledger`` says which;
    ``amended``: edited after the runs, null when the results predate frozen claims).  Also what its runs cost
    (``cost``: their number, ``runs``, and their ``seconds`` by part, :func:`svibench.report.header.cost_parts`),
    which ``regenerate --plan`` holds its estimate against."""
    facts = dict(header.facts)
    return {
        "best": best or {},
        "cost": cost or {},
        "study": manifest.get("study", ""),
        "description": header.description,
        "scale": manifest.get("scale", "default"),
        "git_commit": manifest.get("git_commit", ""),
        "svibench": facts.get("svibench", ""),
        "results_written": facts.get("results written", ""),
        "claims": [{"id": v.claim.id, "source": v.claim.source, "ledger": v.claim.ledger, "kind": v.claim.kind,
                    "verdict": v.verdict, "summary": v.reason, "evidence": v.evidence, "variants": v.variants,
                    "amended": None if amended is None else v.claim.id in amended}
                   for v in verdicts],
    }
