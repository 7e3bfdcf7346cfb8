"""The report's first screen: the claims with their verdicts and the ranking (beside the headline figure), and the
performance profile.

Also the claims ledger written beside each report (``claims.json``), which the
index of all reports reads.
"""
from __future__ import annotations

from typing import Any

import pandas as pd
import xarray as xr

from .claims import Verdict
from .compare import TAUS, TIE, performance_profile, profile_ratios, ranking, ranking_rows, summary_line
from .header import Header
from .settings import ReportSettings, Target
from .tables import Prose, Table, reach_records

__all__ = ["ranking_tables", "claims_table", "claim_notes", "profile_table", "ledger", "LEDGER"]

LEDGER = "claims.json"


#: Algorithms per problem in the first screen's ranking line (the detailed ranking has them all).
GLANCE_TOP = 3

PAIRING = ("Best first. Runs with the same problem and seed are a pair (same data and start); random splits are pooled. "
           "k/n: best (within {tie:g}, relative) in k of its n pairs; Δ: median paired difference to the leader; "
           "† k/n: k runs unconverged (still moving > {tol:g} over the last 10% of checkpoints).")


def ranking_tables(ds: xr.Dataset, metric: str, settings: ReportSettings) -> tuple[Table, Table] | None:
    """The ranking on the final ``metric`` (see :func:`.compare.ranking`): one line per pooled problem for the first
    screen, and one row per (problem, algorithm) in detail."""
    rank = ranking(ds, metric, settings)
    if rank.empty:
        return None
    lower = settings.lower_is_better(metric)
    note = PAIRING.format(tie=TIE, tol=settings.converged_tolerance)
    title = f"on final {metric} ({'lower' if lower else 'higher'} is better)"
    short = [[pool, summary_line(group, GLANCE_TOP)] for pool, group in rank.groupby("pool", sort=True)]
    detail = ranking_rows(rank, metric, lower)
    bold = {(i, 1) for i, rec in enumerate(rank.itertuples()) if rec.label == rec.leader}
    return (Table(f"Ranking {title}", ["problem", "ranking"], short,
                  note, data=rank),
            Table(f"Ranking in detail {title}", ["problem", "algorithm", "wins", f"median {metric}",
                                                  "median paired Δ vs leader", "unconverged"], detail, note, bold, rank))


def claims_table(verdicts: list[Verdict]) -> Table | None:
    """One line per claim: its verdict and the measured evidence in short (its source is in section Claims,
    so that the first screen has room for the ranking and a figure)."""
    if not verdicts:
        return None
    rows = [[v.claim.id, v.verdict, v.summary()] for v in verdicts]
    data = pd.DataFrame([{"id": v.claim.id, "source": v.claim.source, "kind": v.claim.kind, "verdict": v.verdict}
                         for v in verdicts])
    return Table("Claims of the paper, checked", ["claim", "verdict", "evidence (this run)"], rows,
                 "Reproduced: holds on every problem it covers; partly: on some; not comparable: stand-in data or "
                 "another scale. Each claim's source and note (section Claims) say what was tried.",
                 {(i, 1) for i in range(len(rows))}, data)


def claim_notes(verdicts: list[Verdict]) -> Prose:
    """Each claim's note as prose, under its id, source and verdict."""
    items = []
    for v in verdicts:
        what = (f"order: {', '.join(v.claim.better)} beat {', '.join(v.claim.worse)} by ≥ {v.claim.margin:g} on "
                f"{v.claim.metric}" if v.claim.kind == "order"
                else f"values within {100 * v.claim.tolerance:g}% of the paper's (the [[paper]] rows linked to it)")
        paragraphs = [f"Claim ({what}). Evidence: {'; '.join(v.evidence) or '—'}."]
        paragraphs += [p.strip() for p in v.claim.note.split("\n\n") if p.strip()]
        items.append((f"{v.claim.id} — {v.verdict} — {v.claim.source}", paragraphs))
    return Prose("Claims", items)


def profile_table(ds: xr.Dataset, settings: ReportSettings, target: Target) -> tuple[Table, pd.DataFrame] | None:
    """The performance profile at τ = 1, 2, 4, 10 and ∞ as a table, and the ratios behind it (for the figure)."""
    reach = reach_records(ds, settings, target)
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
        "at all.",
        {(0, 0)},
        profile,
    ), ratios


def ledger(header: Header, manifest: dict[str, Any], verdicts: list[Verdict]) -> dict[str, Any]:
    """What the index of all reports needs: the study, how it was run, and one line per claim."""
    facts = dict(header.facts)
    return {
        "study": manifest.get("study", ""),
        "description": header.description,
        "scale": manifest.get("scale", "default"),
        "git_commit": manifest.get("git_commit", ""),
        "svibench": facts.get("svibench", ""),
        "results_written": facts.get("results written", ""),
        "claims": [{"id": v.claim.id, "source": v.claim.source, "verdict": v.verdict, "summary": v.summary(),
                    "evidence": v.evidence} for v in verdicts],
    }
