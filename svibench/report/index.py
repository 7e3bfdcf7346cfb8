"""The index of all reports: ``reports/index.html`` and ``reports/README.md``.

One section per study folder (``reports/<study>/study.toml``), and one per report of it at another scale
(``reports/<study>/<scale>/``): its description,
how its report was built (scale, commit), and one line per claim with its
verdict, read from the ``claims.json`` each report writes.  A study whose
report has no ledger yet lists its claims as *not run*.
"""
from __future__ import annotations

import json
import tomllib
from collections import Counter
from html import escape
from pathlib import Path
from typing import Any

from .html import CSS, VERDICT_CLASS
from .glance import LEDGER

__all__ = ["write_index", "collect"]

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


def _tally(entries: list[dict[str, Any]], ledger: str = "claim") -> str:
    """Verdict counts over the paper claims (``ledger="claim"``) or, apart, the project's targets."""
    counts = Counter(c["verdict"] for e in entries for c in e["claims"] if c.get("ledger", "claim") == ledger)
    return ", ".join(f"{n} {v}" for v, n in sorted(counts.items(), key=lambda kv: -kv[1])) or "none"


def _kind(claim: dict[str, Any]) -> str:
    return "project target" if claim.get("ledger") == "target" else "paper claim"


def _evidence(claim: dict[str, Any]) -> str:
    return claim.get("summary") or "; ".join(claim.get("evidence", []))


def _built(entry: dict[str, Any]) -> str:
    if not entry.get("git_commit"):
        return "no verdicts yet: `svibench regenerate` builds this report with its claims"
    return f"{entry.get('scale', 'default')} scale, commit {entry['git_commit'][:12]}, results {entry.get('results_written', '')}"


def render_index_html(entries: list[dict[str, Any]]) -> str:
    """The index page: a verdict tally, then per study its link, description and claims."""
    parts = []
    for e in entries:
        link = f'<a href="{escape(e["folder"])}/index.html">{escape(e["study"])}</a>' if e["has_report"] else escape(e["study"])
        rows = "".join(
            f'<tr><td>{escape(c["id"])} ({_kind(c)})</td><td>{escape(c["source"])}</td>'
            f'<td class="{VERDICT_CLASS.get(c["verdict"], "")}">{escape(c["verdict"])}</td>'
            f'<td>{escape(_evidence(c))}</td></tr>' for c in e["claims"])
        table = (f"<table><tr><th>claim</th><th>source</th><th>verdict</th><th>evidence</th></tr>{rows}</table>"
                 if rows else '<p class="note">No claims declared.</p>')
        parts.append(f'<h2>{link}</h2><p class="description">{escape(e["description"])}</p>'
                     f'<p class="run-line">{escape(_built(e))}</p>{table}')
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{TITLE}</title>'
            f"<style>{CSS}</style></head><body><h1>{TITLE}</h1>"
            f'<p class="description">Every study of the project with each paper claim it checks and the verdict of its '
            f"last report. Paper claims: {escape(_tally(entries))}. Project targets (not counted as claims): "
            f"{escape(_tally(entries, 'target'))}.</p>" + "\n".join(parts) + "</body></html>\n")


def render_index_markdown(entries: list[dict[str, Any]]) -> str:
    """The same index for GitHub."""
    lines = [f"# {TITLE}", "", "Every study of the project with each paper claim it checks and the verdict of its "
             f"last report (`svibench regenerate` rebuilds them all). Paper claims: {_tally(entries)}. Project targets "
             f"(not counted as claims): {_tally(entries, 'target')}.", ""]
    for e in entries:
        lines += [f"## [{e['study']}]({e['folder']}/summary.md)" if e["has_report"] else f"## {e['study']}", "",
                  e["description"], "", f"_{_built(e)}_", ""]
        if e["claims"]:
            lines += ["| claim | source | verdict | evidence |", "| --- | --- | --- | --- |"]
            lines += [f"| {c['id']} ({_kind(c)}) | {c['source']} | **{c['verdict']}** | {_evidence(c).replace('|', '/')} |"
                      for c in e["claims"]]
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_index(reports: str | Path) -> tuple[Path, Path]:
    """Write ``index.html`` and ``README.md`` into the ``reports`` folder; return their paths."""
    reports = Path(reports)
    entries = collect(reports)
    html, md = reports / "index.html", reports / "README.md"
    html.write_text(render_index_html(entries), encoding="utf-8")
    md.write_text(render_index_markdown(entries), encoding="utf-8")
    return html, md
