"""The claims ledger: a study's ``[[claim]]`` and ``[[reference]]`` entries, and their verdicts.

A claim is one statement of a paper, checked against this run's final values::

    [[claim]]
    id = "table1-inpainting"
    source = "Shah et al. (2015), Table 1, inpainting column"
    kind = "order"                  # these algorithms beat those by at least `margin`
    metric = "psnr_fit"
    problems = ["bpfa/boat-inpainting", "bpfa/barbara-inpainting"]   # default: every problem
    better = ["Mimno-SVI", "Gibbs-SSVI"]
    worse = ["MF-SVI (local_init=prior)"]
    margin = 5.0                    # in the metric's units, in its better direction
    note = "what was tried, and how to read the verdict"

    [[claim]]
    id = "table3"
    kind = "value"                  # the [[paper]] rows with `claim = "table3"` are its numbers
    tolerance = 0.05                # relative: |this run - paper| <= 5% of |paper|
    comparable = false              # stand-in data or another scale: the verdict says so

A ``[[reference]]`` gives a problem's best known value of a metric (f*), with
how it was obtained; the suboptimality figures measure distance to it::

    [[reference]]
    problem = "logreg/a1a"
    metric = "neg_elbo"
    value = 1234.5
    how = "Chol (L-BFGS on the exact ELBO) run to convergence, 200 s"

Problems and algorithms are matched as the paper table does: a name also
matches the problems (labels) it is the base of, e.g. ``logreg/australian``
pools ``logreg/australian (split=0)``, …, and ``MF-SVI`` matches
``MF-SVI (local_init=prior)``.  Verdicts: *reproduced* (holds on every problem
it covers), *partly* (on some), *not reproduced* (on none), *not comparable*
(declared with ``comparable = false``; the evidence is still shown) and *not
run* (no ok run of the algorithms it names on its problems).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .settings import ReportError

__all__ = ["Claim", "Reference", "Verdict", "VERDICTS", "matches", "parse_claims", "parse_references",
           "evaluate_claims"]

CLAIM_KEYS = ("id", "source", "kind", "metric", "problems", "better", "worse", "margin", "tolerance", "comparable", "note")
REFERENCE_KEYS = ("problem", "metric", "value", "how")
KINDS = ("value", "order")
VERDICTS = ("reproduced", "partly", "not reproduced", "not comparable", "not run")


def matches(name: str, wanted: str) -> bool:
    """``name`` is ``wanted`` or a grid point of it (``wanted (k=v, …)``)."""
    return name == wanted or name.startswith(wanted + " (")


@dataclass(frozen=True)
class Claim:
    """One checked statement of a paper (see the module docstring)."""

    id: str
    source: str
    kind: str
    metric: str
    problems: tuple[str, ...] = ()
    better: tuple[str, ...] = ()
    worse: tuple[str, ...] = ()
    margin: float = 0.0
    tolerance: float = 0.05
    comparable: bool = True
    note: str = ""


@dataclass(frozen=True)
class Reference:
    """The best known value ``value`` of ``metric`` on ``problem``, and how it was obtained."""

    problem: str
    metric: str
    value: float
    how: str


@dataclass(frozen=True)
class Verdict:
    """A claim's verdict, with the measured evidence per problem as text and numbers."""

    claim: Claim
    verdict: str
    evidence: list[str]
    data: pd.DataFrame

    def summary(self) -> str:
        """The evidence in one line: on how many problems (value rows) the claim holds, and the range measured."""
        done = self.data[self.data["holds"].notna()] if len(self.data) else self.data
        if done.empty:
            return "no ok run of the algorithms it names"
        held = int(done["holds"].astype(bool).sum())
        if self.claim.kind == "order":
            return (f"holds on {held} of {len(done)} problems; gap {done['gap'].min():+.3g} to {done['gap'].max():+.3g} "
                    f"(needs ≥ {self.claim.margin:g} {self.claim.metric})")
        rel = 100 * (done["mean"] - done["paper"]) / done["paper"].abs()
        return (f"{held} of {len(done)} values within {100 * self.claim.tolerance:g}% of the paper's; "
                f"this run − paper: {rel.min():+.3g}% to {rel.max():+.3g}%")


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ReportError(f"{where}: expected a list of names, got {value!r}")
    return tuple(value)


def _number(value: Any, where: str, minimum: float | None = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (minimum is not None and value < minimum):
        raise ReportError(f"{where}: expected a {'non-negative ' if minimum is not None else ''}number, got {value!r}")
    return float(value)


def _claim(table: Any, i: int) -> Claim:
    where = f"[[claim]] #{i + 1}"
    if not isinstance(table, dict):
        raise ReportError(f"{where}: expected a table, got {table!r}")
    unknown = sorted(set(table) - set(CLAIM_KEYS))
    if unknown:
        raise ReportError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(CLAIM_KEYS)}")
    for key in ("id", "source", "metric") if table.get("kind") == "order" else ("id", "source"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise ReportError(f"{where} {key}: expected a non-empty string, got {table.get(key)!r}")
    if table.get("kind") not in KINDS:
        raise ReportError(f"{where} kind: expected one of {', '.join(KINDS)}, got {table.get('kind')!r}")
    order = table["kind"] == "order"
    if order and not (table.get("better") and table.get("worse")):
        raise ReportError(f"{where} ({table['id']}): an order claim names `better` and `worse` algorithms")
    if not isinstance(table.get("comparable", True), bool):
        raise ReportError(f"{where} comparable: expected true or false, got {table['comparable']!r}")
    return Claim(
        table["id"], table["source"], table["kind"], str(table.get("metric", "")),
        _strings(table.get("problems", []), f"{where} problems"), _strings(table.get("better", []), f"{where} better"),
        _strings(table.get("worse", []), f"{where} worse"), _number(table.get("margin", 0.0), f"{where} margin", None),
        _number(table.get("tolerance", 0.05), f"{where} tolerance"), table.get("comparable", True),
        str(table.get("note", "")).strip(),
    )


def parse_claims(rows: Any, paper: list[dict[str, Any]]) -> list[Claim]:
    """``[[claim]]`` entries, checked for shape; a value claim needs ``[[paper]]`` rows linked to it."""
    if not isinstance(rows, list):
        raise ReportError(f"[[claim]]: expected an array of tables, got {rows!r}")
    claims = [_claim(row, i) for i, row in enumerate(rows)]
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ReportError(f"[[claim]]: two claims have the id {next(i for i in ids if ids.count(i) > 1)!r}; ids must be unique")
    linked = {row.get("claim") for row in paper}
    for claim in claims:
        if claim.kind == "value" and claim.id not in linked:
            raise ReportError(f"[[claim]] {claim.id!r}: a value claim needs [[paper]] rows with claim = {claim.id!r}")
    for j, row in enumerate(paper):
        if row.get("claim") is not None and row["claim"] not in ids:
            raise ReportError(f"[[paper]] #{j + 1} claim: no [[claim]] has the id {row['claim']!r}; ids: {', '.join(ids) or '(none)'}")
    return claims


def parse_references(rows: Any) -> list[Reference]:
    """``[[reference]]`` entries: problem, metric, value and how it was obtained."""
    if not isinstance(rows, list):
        raise ReportError(f"[[reference]]: expected an array of tables, got {rows!r}")
    out = []
    for i, row in enumerate(rows):
        where = f"[[reference]] #{i + 1}"
        if not isinstance(row, dict) or set(row) != set(REFERENCE_KEYS):
            raise ReportError(f"{where}: expected exactly the keys {', '.join(REFERENCE_KEYS)}, got {row!r}")
        for key in ("problem", "metric", "how"):
            if not isinstance(row[key], str):
                raise ReportError(f"{where} {key}: expected a string, got {row[key]!r}")
        out.append(Reference(row["problem"], row["metric"], _number(row["value"], f"{where} value", None), row["how"]))
    return out


def check_names(claims: list[Claim], references: list[Reference], problems: list[str], labels: list[str],
                metrics: set[str]) -> None:
    """Every problem, algorithm and metric a claim or reference names exists in the study (else ReportError):
    ``problems`` are the study's problems and problem bases, ``labels`` its labels and methods."""
    def known(names: tuple[str, ...], pool: list[str], what: str, where: str) -> None:
        for name in names:
            if name not in pool:
                raise ReportError(f"{where}: no {what} of the study is {name!r}; use one of {', '.join(sorted(set(pool)))}")

    for c in claims:
        where = f"[[claim]] {c.id!r}"
        known(c.problems, problems, "problem", f"{where} problems")
        known(c.better + c.worse, labels, "algorithm label", f"{where}")
        if c.metric and c.metric not in metrics:
            raise ReportError(f"{where} metric: no model of the study reports {c.metric!r}; use one of {', '.join(sorted(metrics))}")
    for r in references:
        known((r.problem,), problems, "problem", "[[reference]]")
        if r.metric not in metrics:
            raise ReportError(f"[[reference]] metric: no model of the study reports {r.metric!r}; use one of {', '.join(sorted(metrics))}")


def _verdict(claim: Claim, holds: list[bool | None]) -> str:
    done = [h for h in holds if h is not None]
    if not done:
        return "not run"
    if not claim.comparable:
        return "not comparable"
    if all(done) and len(done) == len(holds):
        return "reproduced"
    return "partly" if any(done) else "not reproduced"


def _labels(finals: pd.DataFrame, wanted: str) -> list[str]:
    """The labels ``wanted`` names: itself if a run has that exact label, else its grid points."""
    labels = sorted(set(finals["label"]))
    return [wanted] if wanted in labels else [lb for lb in labels if matches(lb, wanted)]


def _mean(finals: pd.DataFrame, problem: str, label: str, metric: str) -> float:
    """Mean final ``metric`` of ``label``'s runs on ``problem`` (pooled over its grid points, e.g. splits)."""
    at = finals["problem"].map(lambda p: matches(p, problem)) & (finals["label"] == label)
    values = finals.loc[at, metric].dropna() if metric in finals else pd.Series(dtype=float)
    return float(values.mean()) if len(values) else np.nan


def _side(finals: pd.DataFrame, problem: str, names: tuple[str, ...], metric: str, sign: float) -> list[float]:
    """Signed means (higher = better) of every label the names select; NaN for a name with no run here."""
    out = []
    for name in names:
        labels = _labels(finals, name)
        out += [sign * _mean(finals, problem, lb, metric) for lb in labels] if labels else [np.nan]
    return out


def _order(claim: Claim, finals: pd.DataFrame, problems: list[str], lower: bool) -> Verdict:
    """Per problem: the worst of ``better`` against the best of ``worse``; gap in the better direction."""
    sign = -1.0 if lower else 1.0
    records, evidence = [], []
    for problem in claim.problems or problems:
        b = _side(finals, problem, claim.better, claim.metric, sign)
        w = _side(finals, problem, claim.worse, claim.metric, sign)
        gap = min(b) - max(w) if not (np.isnan(b).any() or np.isnan(w).any()) else np.nan
        holds = None if np.isnan(gap) else bool(gap >= claim.margin)
        records.append({"problem": problem, "gap": gap, "margin": claim.margin, "holds": holds})
        evidence.append(f"{problem}: not run" if holds is None
                        else f"{problem}: gap {gap:+.3g} {'✓' if holds else '✗'} (needs ≥ {claim.margin:g})")
    return Verdict(claim, _verdict(claim, [r["holds"] for r in records]), evidence, pd.DataFrame(records))


def _value(claim: Claim, finals: pd.DataFrame, paper: list[dict[str, Any]]) -> Verdict:
    """Per linked [[paper]] row and label it names: |this run − paper| ≤ tolerance × |paper|."""
    records, evidence = [], []
    for row in (r for r in paper if r.get("claim") == claim.id):
        published = float(row["value"])
        for label in _labels(finals, row["algorithm"]) or [row["algorithm"]]:
            mean = _mean(finals, row["problem"], label, row["metric"])
            rel = abs(mean - published) / abs(published) if published else abs(mean)
            holds = None if np.isnan(mean) else bool(rel <= claim.tolerance)
            records.append({"problem": row["problem"], "algorithm": label, "metric": row["metric"],
                            "paper": published, "mean": mean, "relative": rel, "holds": holds})
            evidence.append(f"{row['problem']} {label}: " + ("not run" if holds is None else
                            f"{mean:.4g} vs {published:.4g} ({100 * (mean - published) / abs(published or 1):+.2g}%) "
                            + ("✓" if holds else "✗")))
    return Verdict(claim, _verdict(claim, [r["holds"] for r in records]), evidence, pd.DataFrame(records))


def evaluate_claims(claims: list[Claim], finals: pd.DataFrame, paper: list[dict[str, Any]],
                    lower_is_better) -> list[Verdict]:
    """Each claim's verdict from ``finals`` (one row per ok run: problem, label, metrics)."""
    problems = sorted(set(finals["problem_base"])) if len(finals) else []
    return [_order(c, finals, problems, lower_is_better(c.metric)) if c.kind == "order" else _value(c, finals, paper)
            for c in claims]
