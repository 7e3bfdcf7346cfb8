"""The report's first screen: the claims with their verdicts and the ranking (beside the headline figure), and the
performance profile.

Also the claims ledger written beside each report (``claims.json``), which the
index of all reports reads.
"""
from __future__ import annotations

from typing import Any, Callable

import pandas as pd
import xarray as xr

from .claims import Verdict
from ..results import metric_info
from .compare import TAUS, TIE, performance_profile, profile_ratios, ranking, ranking_rows, summary_line, unranked
from .frozen import AMENDED, UNKNOWN, Amendments, describe_change
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
    screen (and one saying so per pool where ``metric`` is no fair ranking key), and one row per (problem, algorithm)
    in detail."""
    rank = ranking(ds, metric, settings)
    skipped = unranked(ds, metric, settings.split_panels)
    if rank.empty and not skipped:
        return None
    lower = metric_info(ds)[metric].lower
    note = PAIRING.format(tie=TIE, tol=settings.converged_tolerance)
    if skipped:
        note += (f" Not ranked: {', '.join(p for problems in skipped.values() for p in problems)}, where the model "
                 f"declares {metric} no fair ranking key (e.g. a fit to noisy observations).")
    title = f"on final {metric} ({'lower' if lower else 'higher'} is better)"
    lines = {pool: summary_line(group, GLANCE_TOP) for pool, group in rank.groupby("pool")} if len(rank) else {}
    short = [[pool, _ranking_line(lines.get(pool, ""), skipped.get(pool, []), pool, metric)]
             for pool in sorted(set(lines) | set(skipped))]
    detail = ranking_rows(rank, metric, lower)
    bold = {(i, 1) for i, rec in enumerate(rank.itertuples()) if rec.label == rec.leader}
    return (Table(f"Ranking {title}", ["problem", "ranking"], short,
                  note, data=rank),
            Table(f"Ranking in detail {title}", ["problem", "algorithm", "wins", f"median {metric}",
                                                  "median paired Δ vs leader", "unconverged"], detail, note, bold, rank))


def _ranking_line(line: str, skipped: list[str], pool: str, metric: str) -> str:
    """A pool's ranking line, saying which of its problems are not ranked because ``metric`` is no fair key there."""
    if not skipped:
        return line
    where = "" if skipped == [pool] else f" on {', '.join(skipped)}"
    return (f"{line}; " if line else "") + f"not ranked{where}: {metric} is no fair ranking key there"


def claims_table(verdicts: list[Verdict], amended: Amendments) -> Table | None:
    """One line per claim: its verdict and the measured evidence in short (its source is in section Claims,
    so that the first screen has room for the ranking and a figure); a claim edited after its runs (``amended``,
    from :func:`.frozen.amendments`; None: unknown) says so beside its verdict."""
    if not verdicts:
        return None
    rows = [[v.claim.id, v.verdict, (f"{AMENDED}; " if v.claim.id in (amended or {}) else "") + v.summary()]
            for v in verdicts]
    data = pd.DataFrame([{"id": v.claim.id, "source": v.claim.source, "kind": v.claim.kind, "verdict": v.verdict,
                          "amended": None if amended is None else v.claim.id in amended} for v in verdicts])
    return Table("Claims of the paper, checked", ["claim", "verdict", "evidence (this run)"], rows,
                 "Reproduced: holds on every problem it covers; partly: on some; not comparable: stand-in data or "
                 "another scale. Each claim's source and note (section Claims) say what was tried."
                 + (f" {UNKNOWN}" if amended is None else ""),
                 {(i, 1) for i in range(len(rows))}, data)


def claim_notes(verdicts: list[Verdict], amended: Amendments, render: Callable[[str], str]) -> Prose:
    """Each claim's note as prose (through ``render``, which fills its placeholders), under its id, source and
    verdict; an amended claim also shows its definition at run time and now."""
    items = []
    for v in verdicts:
        what = (f"order: {', '.join(v.claim.better)} beat {', '.join(v.claim.worse)} by ≥ {v.claim.margin:g} on "
                f"{v.claim.metric}" if v.claim.kind == "order"
                else f"values within {100 * v.claim.tolerance:g}% of the paper's (the [[paper]] rows linked to it)")
        paragraphs = [f"Claim ({what}). Evidence: {'; '.join(v.evidence) or '—'}."]
        paragraphs += describe_change(*amended[v.claim.id]) if v.claim.id in (amended or {}) else []
        paragraphs += [p.strip() for p in render(v.claim.note).split("\n\n") if p.strip()]
        mark = f" ({AMENDED})" if v.claim.id in (amended or {}) else ""
        items.append((f"{v.claim.id} — {v.verdict}{mark} — {v.claim.source}", paragraphs))
    return Prose("Claims", items)


def profile_table(ds: xr.Dataset, target: Target) -> tuple[Table, pd.DataFrame] | None:
    """The performance profile at τ = 1, 2, 4, 10 and ∞ as a table, and the ratios behind it (for the figure)."""
    reach = reach_records(ds, target)
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
        "algorithm time on that instance; ρ(1) is how often it is the fastest, 'reached' how often it gets there "
        "at all.",
        {(0, 0)},
        profile,
    ), ratios


def ledger(header: Header, manifest: dict[str, Any], verdicts: list[Verdict], amended: Amendments) -> dict[str, Any]:
    """What the index of all reports needs: the study, how it was run, and one line per claim (``amended``: edited
    after the runs; null when the results predate frozen claims)."""
    facts = dict(header.facts)
    return {
        "study": manifest.get("study", ""),
        "description": header.description,
        "scale": manifest.get("scale", "default"),
        "git_commit": manifest.get("git_commit", ""),
        "svibench": facts.get("svibench", ""),
        "results_written": facts.get("results written", ""),
        "claims": [{"id": v.claim.id, "source": v.claim.source, "verdict": v.verdict, "summary": v.summary(),
                    "evidence": v.evidence, "amended": None if amended is None else v.claim.id in amended}
                   for v in verdicts],
    }
