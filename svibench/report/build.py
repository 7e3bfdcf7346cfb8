"""Write a report of saved results: ``index.html``, ``summary.md``, ``figures/*.png`` and ``claims.json``."""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import xarray as xr

from ..metrics import Metric
from ..results import answers, metric_info, open_results, run_files
from ..summary import final_values
from .claims import Claim, Verdict, evaluate_claims, parse_claims, parse_references
from .figures import AXES, ReportFigure, best_known, curve_figure, final_figure, palette, profile_figure
from .frozen import Amendments, amendments, claim_tables
from .glance import LEDGER, claim_notes, claims_table, ledger, profile_table, ranking_tables
from .header import make_header
from .html import Section, render_html
from .markdown import render_markdown
from .notes import NoteLookup, render_note
from .settings import ReportSettings
from .tables import (Table, final_metrics, metrics_meaning, ok_runs, paper_comparison, recorded_metrics, runs_not_ok,
                     skipped_pairs, time_to_target)

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
    verdicts: list[Verdict] = field(default_factory=list)


def _results_folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent.parent


def _results_written(folder: Path) -> datetime | None:
    times = [f.stat().st_mtime for f in run_files(folder)]
    return datetime.fromtimestamp(max(times), tz=timezone.utc) if times else None


def _study_tables(manifest: dict) -> tuple[list[Claim], dict[str, dict[str, float]], Amendments]:
    """The study's claims, references (f* per metric and problem) and the claims amended since the runs
    (:func:`.frozen.amendments`), from the study text saved with the results or given with ``--study``."""
    try:
        raw = tomllib.loads(manifest.get("study_toml", ""))
    except tomllib.TOMLDecodeError:
        return [], {}, {}
    claims = parse_claims(raw.get("claim", []), manifest.get("paper", []))
    references: dict[str, dict[str, float]] = {}
    for ref in parse_references(raw.get("reference", [])):
        references.setdefault(ref.metric, {})[ref.problem] = ref.value
    return claims, references, amendments(manifest, claim_tables(raw))


def _figures(ok: xr.Dataset, settings: ReportSettings, info: dict[str, Metric], references: dict, colours: dict,
             dpi: int) -> list[ReportFigure]:
    """Suboptimality curves of the objective metrics, curves of the others, then every final-value strip
    (``info``: what each recorded metric means, :func:`svibench.results.metric_info`)."""
    plotted = settings.plotted(list(info))
    objectives = settings.objectives(plotted, list(references), info)
    fstars = {m: best_known(ok, m, info[m].lower, references.get(m, {})) for m in objectives}
    figures = []
    for metric in plotted:
        for axis in AXES:
            figures.append(curve_figure(ok, metric, axis, colours, dpi=dpi, split_panels=settings.split_panels,
                                        fstar=fstars.get(metric)))
    for metric in plotted:
        figures.append(final_figure(ok, metric, colours, dpi=dpi, split_panels=settings.split_panels,
                                    fstar=fstars.get(metric)))
    return [f for f in figures if f is not None]


def _ranked_metric(settings: ReportSettings, metrics: list[str], answered: list[str]) -> str | None:
    """The first target's metric (by default the models' answer), else the first plotted one."""
    targets = settings.targets_for(metrics, answered)
    if targets:
        return targets[0].metric
    plotted = settings.plotted(metrics)
    return plotted[0] if plotted else None


def write_report(results: str | Path, out: str | Path, *, dpi: int = 100, study: str | Path | None = None) -> Report:
    """Read the results at ``results`` (a results folder) and write the report into ``out``.

    Parameters
    ----------
    results : str or Path
        A folder written by ``svibench run`` (``manifest.json`` + ``runs/``).
    out : str or Path
        Folder for ``index.html`` (self-contained), ``summary.md``, ``figures/*.png`` and ``claims.json``
        (the verdicts, for the index of all reports).
    dpi : int
        Resolution of the figures.
    study : str or Path, optional
        A study file whose ``[[claim]]``, ``[[reference]]``, ``[[paper]]`` and ``[report]`` replace those saved
        with the results (e.g. claims written after the runs); by default the saved study is used.

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
    if study is not None:
        text = Path(study).read_text()
        raw = tomllib.loads(text)
        manifest.update(study_toml=text, paper=raw.get("paper", []), report=raw.get("report", {}))
    settings = ReportSettings.parse(manifest.get("report"))
    claims, references, amended = _study_tables(manifest)
    metrics = recorded_metrics(ds)
    declared = metric_info(ds)
    info = {m: declared[m] for m in metrics}
    colours = palette(list(map(str, ds["label"].values)))
    ok = ok_runs(ds)
    figures = _figures(ok, settings, info, references, colours, dpi) if ok.sizes["run"] else []

    finals = final_values(ds)
    verdicts = evaluate_claims(claims, finals[finals["status"] == "ok"], manifest.get("paper", []),
                               lambda metric: declared[metric].lower)
    ranked = _ranked_metric(settings, metrics, answers(ds))
    rankings = ranking_tables(ds, ranked, settings) if ranked else None
    # The first screen: the claims' verdicts (a few short rows), the ranking and the headline figure (the first
    # plotted metric, as suboptimality if it is an objective, against time), which the Figures section repeats.
    glance = [t for t in (claims_table(verdicts, amended), rankings[0] if rankings else None) if t] + figures[:1]
    targets = settings.targets_for(metrics, answers(ds))
    profile = profile_table(ds, targets[0]) if targets and targets[0].metric in ds else None
    across = [profile[0], profile_figure(profile[1], colours, targets[0].metric, dpi=dpi)] if profile else []
    final = [final_metrics(ds), metrics_meaning(ds)]
    reach = [t for t in (time_to_target(ds, target) for target in targets) if t]
    paper = paper_comparison(ds, manifest.get("paper", []), {v.claim.id: v.verdict for v in verdicts},
                             settings.converged_tolerance)
    not_ok = runs_not_ok(ds, manifest)
    skipped = skipped_pairs(manifest)
    header = make_header(ds, manifest, settings, _results_written(folder))
    sections: list[Section] = [("At a glance", glance)]
    if figures:
        sections.append(("Figures", list(figures)))
    if across:
        sections.append(("Across problems", across))
    if verdicts:
        lookup = NoteLookup.of(ds, settings)
        sections.append(("Claims", [claim_notes(verdicts, amended, lambda note: render_note(note, lookup))]))
    sections.append(("Final metrics", [*([rankings[1]] if rankings else []), *final]))
    if reach:
        sections.append(("Time to target", list(reach)))
    if paper:
        sections.append(("Paper vs this run", [paper]))
    sections.append(("Runs not ok", [not_ok] + ([skipped] if skipped else [])))

    out = Path(out)
    written = _write_figures(out / FIGURES_DIR, figures + across[1:])
    html_path, md_path = out / "index.html", out / "summary.md"
    html_path.write_text(render_html(header, sections), encoding="utf-8")
    md_path.write_text(render_markdown(header, sections, FIGURES_DIR), encoding="utf-8")
    (out / LEDGER).write_text(json.dumps(ledger(header, manifest, verdicts, amended), indent=1) + "\n",
                              encoding="utf-8")
    tables = [*glance, *across[:1], *(rankings[1:] if rankings else []), *final, *reach, *([paper] if paper else []), not_ok, *([skipped] if skipped else [])]
    return Report(out, html_path, md_path, written, tables, verdicts)


def _write_figures(fig_dir: Path, figures: list[ReportFigure]) -> list[Path]:
    """Write the PNGs and remove figures of an earlier report that this one no longer draws."""
    fig_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for fig in figures:
        path = fig_dir / f"{fig.name}.png"
        path.write_bytes(fig.png)
        written.append(path)
    for stale in set(fig_dir.glob("*.png")) - set(written):
        stale.unlink()
    return written
