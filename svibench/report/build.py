"""Write a report of saved results: ``index.html``, ``summary.md`` and ``figures/*.png``."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..results import open_results, run_files
from .figures import ReportFigure, metric_figures, palette
from .header import make_header
from .html import Section, render_html
from .markdown import render_markdown
from .settings import ReportSettings
from .tables import Table, final_metrics, ok_runs, paper_comparison, recorded_metrics, runs_not_ok, skipped_pairs, time_to_target

__all__ = ["write_report", "Report"]

FIGURES_DIR = "figures"


@dataclass
class Report:
    """Where the report went, and what it holds."""

    folder: Path
    html: Path
    markdown: Path
    figures: list[Path] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)


def _results_folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent.parent


def _results_written(folder: Path) -> datetime | None:
    times = [f.stat().st_mtime for f in run_files(folder)]
    return datetime.fromtimestamp(max(times), tz=timezone.utc) if times else None


def write_report(results: str | Path, out: str | Path, *, dpi: int = 100) -> Report:
    """Read the results at ``results`` (a results folder) and write the report into ``out``.

    Parameters
    ----------
    results : str or Path
        A folder written by ``svibench run`` (``manifest.json`` + ``runs/``).
    out : str or Path
        Folder for ``index.html`` (self-contained), ``summary.md`` and ``figures/*.png``.
    dpi : int
        Resolution of the figures.

    Returns
    -------
    Report
        Paths written and the tables (with the numbers behind them).
    """
    results = Path(results)
    ds = open_results(results, skip_corrupt=True)
    folder = _results_folder(results)
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    settings = ReportSettings.parse(manifest.get("report"))
    metrics = recorded_metrics(ds)
    colours = palette(list(map(str, ds["label"].values)))
    ok = ok_runs(ds)
    figures: list[ReportFigure] = metric_figures(ok, settings.plotted(metrics), colours, dpi=dpi) if ok.sizes["run"] else []

    final = final_metrics(ds, settings)
    targets = [t for t in (time_to_target(ds, settings, target) for target in settings.targets_for(metrics)) if t]
    paper = paper_comparison(ds, manifest.get("paper", []))
    not_ok = runs_not_ok(ds, manifest)
    skipped = skipped_pairs(manifest)
    sections: list[Section] = [("Final metrics", [final])]
    if figures:
        sections.append(("Figures", list(figures)))
    if targets:
        sections.append(("Time to target", list(targets)))
    if paper:
        sections.append(("Paper vs this run", [paper]))
    sections.append(("Runs not ok", [not_ok] + ([skipped] if skipped else [])))
    header = make_header(ds, manifest, settings, _results_written(folder))

    out = Path(out)
    fig_dir = out / FIGURES_DIR
    fig_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fig in figures:
        path = fig_dir / f"{fig.name}.png"
        path.write_bytes(fig.png)
        written.append(path)
    for stale in set(fig_dir.glob("*-vs-*.png")) - set(written):
        stale.unlink()
    html_path, md_path = out / "index.html", out / "summary.md"
    html_path.write_text(render_html(header, sections), encoding="utf-8")
    md_path.write_text(render_markdown(header, sections, FIGURES_DIR), encoding="utf-8")
    tables = [final, *targets, *([paper] if paper else []), not_ok, *([skipped] if skipped else [])]
    return Report(out, html_path, md_path, written, tables)
