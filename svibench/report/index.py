"""The index of all reports: ``reports/index.html`` and ``reports/README.md``.

One section per study folder (``reports/<study>/study.toml``), and one per report of it at another scale
(``reports/<study>/<scale>/``): its description,
how its report was built (scale, commit), which algorithm its ranking puts first on each problem, and one line per
claim with its
verdict, read from the ``claims.json`` each report writes.  A study whose
report has no ledger yet lists its claims as *not run*.
"""
from __future__ import annotations

import json
import re
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

from markupsafe import Markup

from .html import CSS, VERDICT_CLASS
from .jinja import templates
from .glance import LEDGER
from ..claims.schema import READING_ID

__all__ = ["write_index", "collect", "distinct_claims", "paper_of", "DEFINITIONS"]

TITLE = "svibench: reports and the claims ledger"


def collect(reports: Path) -> list[dict[str, Any]]:
    """One entry per study folder under ``reports``: its ledger, or its declared claims as not run."""
    entries = []
    for study_file in sorted(reports.glob("*/study.toml")):
        folder = study_file.parent
        raw = tomllib.loads(study_file.read_text())
        ledger_path = folder / LEDGER
        if ledger_path.exists():
            entry = json.loads(ledger_path.read_text())
        else:
            entry = {"study": raw.get("study", {}).get("name", folder.name), "git_commit": "", "scale": "",
                     "claims": [{"id": c.get("id", ""), "source": c.get("source", ""), "verdict": "not run",
                                 "ledger": kind, "evidence": []} for kind in ("claim", "target") for c in raw.get(kind, [])]}
        entry["description"] = entry.get("description") or raw.get("study", {}).get("description", "")
        entry["folder"] = folder.name
        entry["has_report"] = (folder / "index.html").exists()
        entries.append(entry)
        entries += [_scale_entry(sub, entry["description"]) for sub in sorted(folder.iterdir())
                    if sub.is_dir() and (sub / LEDGER).exists()]
    return entries


def _scale_entry(folder: Path, description: str) -> dict[str, Any]:
    """The report of a study at another scale (``reports/<study>/<scale>/``, written by ``regenerate --scale``)."""
    entry = json.loads((folder / LEDGER).read_text())
    entry["study"] = f"{entry['study']} ({entry.get('scale') or folder.name} scale)"
    entry["description"] = description
    entry["folder"] = f"{folder.parent.name}/{folder.name}"
    entry["has_report"] = (folder / "index.html").exists()
    return entry


#: What each verdict word means (the reports' README defines them all, :mod:`svibench.claims` the rule).
DEFINITIONS = {
    "reproduced": "the one-sided sign test on the paired units (problem, seed) gives p ≤ 0.05 that the claim holds",
    "partly": "the units disagree only between problems: every unit of some problems holds, none of the others "
              "(each with ≥ 3 units)",
    "not reproduced": "the sign test gives p ≤ 0.05 that the claim fails (a diverged run fails its units)",
    "mixed": "mixed (k/n): k of n units hold, and neither side of the sign test reaches p ≤ 0.05",
    "too few units": "fewer than 5 decided units: the sign test cannot reach p ≤ 0.05 either way (units a "
                     "still-moving run could flip are undecided)",
    "incomplete": "a planned run of a method the claim names is absent, crashed or timed out",
    "not comparable": "the claim's numbers are not the paper's setting (substitute data, our own splits)",
    "not run": "the study does not run the experiment yet (the reason is given)",
}
PAPER = re.compile(r"^(.*?)\s*\((\d{4}[a-z]?)[,)]")


def paper_of(source: str) -> str:
    """The paper a claim's ``source`` cites: its authors and year, e.g. "Khan & Lin (2017)" (also from
    "Shah, Knowles & Ghahramani (2015, §6)")."""
    found = PAPER.match(source)
    return f"{found.group(1).strip()} ({found.group(2)})" if found else (source.split(",")[0].strip() or "(no source)")


def distinct_claims(entries: list[dict[str, Any]], ledger: str = "claim") -> list[dict[str, Any]]:
    """One record per distinct claim (a study's claim id, whatever the scales and the readings of its metric it was
    judged at): its paper, id and verdict at each scale; a reading's verdict follows the claim's, with its metric
    ("mixed; psnr_fit: not reproduced")."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    readings: list[tuple[tuple[str, str], str, str, str]] = []
    for e in entries:
        scale = e.get("scale") or "default"
        for c in (c for c in e["claims"] if c.get("ledger", "claim") == ledger):
            study, reading = e["folder"].split("/")[0], READING_ID.match(c["id"])
            if reading:
                readings.append(((study, reading["id"]), scale, reading["metric"], c["verdict"]))
                continue
            record = out.setdefault((study, c["id"]), {"study": study, "id": c["id"],
                                                      "paper": paper_of(c.get("source", "")), "verdicts": {},
                                                      "readings": {}})
            record["verdicts"][scale] = c["verdict"]
    for key, scale, metric, verdict in readings:
        if key in out:
            out[key]["readings"].setdefault(scale, []).append(f"{metric}: {verdict}")
    return sorted(out.values(), key=lambda r: (r["paper"], r["study"], r["id"]))


def _cell(claim: dict[str, Any], scale: str) -> str:
    """A claim's verdict at ``scale``, with its other readings' verdicts."""
    verdict = claim["verdicts"].get(scale, "—")
    return "; ".join([verdict, *claim.get("readings", {}).get(scale, [])])


def _tally(entries: list[dict[str, Any]], ledger: str = "claim") -> str:
    """How many distinct claims (a claim judged at two scales, or on two readings of its metric, counts once), and
    their verdicts at each scale (a claim's own, not its other readings')."""
    claims = distinct_claims(entries, ledger)
    if not claims:
        return "none"
    scales = sorted({s for c in claims for s in c["verdicts"]}, key=lambda s: (s != "default", s))
    parts = []
    for scale in scales:
        counts = Counter(c["verdicts"][scale] for c in claims if scale in c["verdicts"])
        parts.append(f"at the {scale} scale ({sum(counts.values())}): "
                     + ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))))
    return f"{len(claims)} distinct; " + "; ".join(parts)


def _tally_table(entries: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Paper, study, claim and its verdict at each scale, one row per distinct paper claim."""
    claims = distinct_claims(entries)
    scales = sorted({s for c in claims for s in c["verdicts"]}, key=lambda s: (s != "default", s))
    header = ["paper", "study", "claim"] + [f"{s} scale" for s in scales]
    return header, [[c["paper"], c["study"], c["id"]] + [_cell(c, s) for s in scales] for c in claims]


def _kind(claim: dict[str, Any]) -> str:
    return "project target" if claim.get("ledger") == "target" else "paper claim"


def _evidence(claim: dict[str, Any]) -> str:
    return claim.get("summary") or "; ".join(claim.get("evidence", []))


def _built(entry: dict[str, Any]) -> str:
    if not entry.get("git_commit"):
        return "no verdicts yet: `svibench regenerate` builds this report with its claims"
    return f"{entry.get('scale', 'default')} scale, commit {entry['git_commit'][:12]}, results {entry.get('results_written', '')}"


def _best(entry: dict[str, Any]) -> str:
    """Which algorithm the study's ranking puts first on each problem, and how fast ("" before a ranking)."""
    found = entry.get("best") or {}
    if not found.get("leaders"):
        return ""
    leaders = "; ".join(f"{r['problem']}: {r['algorithm']} "
                        + (f"({r['seconds']:.3g} s)" if r["seconds"] is not None
                           else "(none reached it on most instances; best final value)") for r in found["leaders"])
    return f"First to {found['target']} (median CPU time): {leaders}"


def _context(entries: list[dict[str, Any]]) -> dict[str, Any]:
    """What both index templates show."""
    header, rows = _tally_table(entries)
    return {"title": TITLE, "entries": entries, "tally": _tally(entries), "targets": _tally(entries, "target"),
            "tally_header": header, "tally_rows": rows, "definitions": DEFINITIONS, "verdict_class": VERDICT_CLASS,
            "built": _built, "kind": _kind, "evidence": _evidence, "best": _best}


ENVIRONMENT = templates(globals={"css": Markup(CSS)})


def render_index_html(entries: list[dict[str, Any]]) -> str:
    """The index page (``templates/index.html.j2``): a verdict tally, the claims by paper, then per study its link,
    description and claims."""
    return ENVIRONMENT.get_template("index.html.j2").render(**_context(entries))


def render_index_markdown(entries: list[dict[str, Any]]) -> str:
    """The same index for GitHub (``templates/index.md.j2``)."""
    return ENVIRONMENT.get_template("index.md.j2").render(**_context(entries)).rstrip() + "\n"


def write_index(reports: str | Path) -> tuple[Path, Path]:
    """Write ``index.html`` and ``README.md`` into the ``reports`` folder; return their paths."""
    reports = Path(reports)
    entries = collect(reports)
    html, md = reports / "index.html", reports / "README.md"
    html.write_text(render_index_html(entries), encoding="utf-8")
    md.write_text(render_index_markdown(entries), encoding="utf-8")
    return html, md
