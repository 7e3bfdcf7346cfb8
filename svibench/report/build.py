"""Write a report of saved results: ``index.html``, ``summary.md``, ``figures/*.png`` and ``claims.json``."""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import xarray as xr

from .. import health
from ..metrics import Metric
from ..authors_code import AuthorsError, AuthorsTrajectories, load_trajectories
from ..results import answers, metric_info, run_files
from ..claims import Evidence, Verdict, judge
from .authors import rows_table
from ..claims.schema import Claim, parse_claims, parse_references, scale_claims, skip_reasons, skipped_not_run
from .compare import pools, unranked
from .accuracy import accuracy_figure, accuracy_metrics, accuracy_table, closest_table, references_table
from .figures import (AXES, ReportFigure, best_known, curve_figure, final_figure, headline_styles, palette,
                      profile_figure)
from .frozen import Amendments, amendments, claim_tables
from .glance import LEDGER, best, claim_notes, claims_tables, ledger, profile_table, ranking_tables
from .header import cost_parts, make_header
from .html import Section, render_html
from .markdown import render_markdown
from .notes import NoteLookup, render_note
from .rank import HEADLINE_METHODS, headline, ranking
from .subsets import subset_table
from ..settings import ReportError, ReportSettings, Target
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
    #: Run files of the results that could not be read, left out of the report.
    unreadable: list[str] = field(default_factory=list)


def _results_folder(path: Path) -> Path:
    return path if path.is_dir() else path.parent.parent


def _results_written(folder: Path) -> datetime | None:
    times = [f.stat().st_mtime for f in run_files(folder)]
    return datetime.fromtimestamp(max(times), tz=timezone.utc) if times else None


def _study_tables(manifest: dict) -> tuple[list[Claim], dict[str, dict[str, float]], Amendments]:
    """The study's claims and targets, references (f* per metric and problem) and the claims amended since the runs
    (:func:`.frozen.amendments`), from the study text saved with the results or given with ``--study``."""
    try:
        raw = tomllib.loads(manifest.get("study_toml", ""))
    except tomllib.TOMLDecodeError:
        return [], {}, {}
    planned = {r.get(key) for r in manifest.get("runs", {}).values() for key in ("label", "method")}
    claims = skipped_not_run(parse_claims(scale_claims(raw, manifest.get("scale", "default")), manifest.get("paper", [])),
                             planned,
                             skip_reasons(manifest.get("skipped", [])))
    references: dict[str, dict[str, float]] = {}
    for ref in parse_references(raw.get("reference", [])):
        references.setdefault(ref.metric, {})[ref.problem] = ref.value
    return claims, references, amendments(manifest, claim_tables(raw))


def _figures(ok: xr.Dataset, settings: ReportSettings, info: dict[str, Metric], references: dict, colours: dict,
             dpi: int) -> list[ReportFigure]:
    """Suboptimality curves of the objective metrics, curves of the others, then every final-value strip
    (``info``: what each recorded metric means, :func:`svibench.results.metric_info`)."""
    plotted = settings.shown(info)
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


def _accuracy(ok: xr.Dataset, info: dict[str, Metric], colours: dict, dpi: int) -> list:
    """The posterior-accuracy section (:mod:`.accuracy`): empty when no run was scored against a reference."""
    if not ok.sizes["run"] or not accuracy_metrics(info):
        return []
    items = [closest_table(ok, info), accuracy_table(ok, info), accuracy_figure(ok, info, colours, dpi=dpi),
             references_table(ok)]
    return [item for item in items if item is not None]


def _headline(ok: xr.Dataset, rank: pd.DataFrame, settings: ReportSettings, info: dict[str, Metric],
              references: dict, dpi: int) -> ReportFigure | None:
    """The first screen's figure: the first plotted metric (as suboptimality if it is an objective) against CPU time,
    drawn for the best variant of each of the best-ranked methods only (:func:`.rank.headline`), one colour, line
    style and marker per method."""
    plotted = settings.shown(info)
    if not plotted or rank.empty or not ok.sizes["run"]:
        return None
    metric = plotted[0]
    chosen = headline(rank)
    keep = [r for r, (pool, label) in enumerate(zip(pools(ok, settings.split_panels), ok["label"].values.astype(str)))
            if label in chosen.get(pool, {})]
    colours, dashes, markers = headline_styles(chosen)
    subset = ok.isel(run=keep)
    fstar = (best_known(ok, metric, info[metric].lower, references.get(metric, {}))
             if metric in settings.objectives(plotted, list(references), info) else None)
    fig = curve_figure(subset, metric, "time", colours, dpi=dpi, split_panels=settings.split_panels, fstar=fstar,
                       dashes=dashes, markers=markers, name="headline-")
    return fig and replace(fig, title=f"{fig.title}: the best variant of each method",
                           caption=fig.caption + f" Per panel, the best variant of each of the {HEADLINE_METHODS} "
                                                 "best-ranked methods at most; every variant is in section Figures.")


def _target(settings: ReportSettings, info: dict[str, Metric], answered: list[str]) -> Target | None:
    """The target the ranking races to: the study's first (by default the models' answer), else the first shown
    metric within 0.1%."""
    targets = settings.targets_for(list(info), answered)
    if targets:
        return targets[0]
    shown = settings.shown(info)
    return Target(shown[0]) if shown else None


def _load(results: Path, study: str | Path | None) -> tuple[xr.Dataset, dict, Path]:
    """The results judged by the health policy, the manifest (with ``study``'s claims and report table, if given),
    and the results folder."""
    ds = health.open_judged(results, skip_corrupt=True)
    folder = _results_folder(results)
    manifest_path = folder / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    if study is not None:
        text = Path(study).read_text()
        raw = tomllib.loads(text)
        manifest.update(study_toml=text, paper=raw.get("paper", []), report=raw.get("report", {}))
    return ds, manifest, folder


def _authors(manifest: dict) -> dict[str, AuthorsTrajectories]:
    """The trajectories of the paper's own code, by problem, as the study matched them when it ran (re-checked)."""
    out = {}
    for problem, path in manifest.get("authors", {}).items():
        try:
            traj = load_trajectories(Path(path).parent, Path(path).stem)
        except AuthorsError as exc:
            raise ReportError(f"[report] authors: {exc}") from None
        if traj is None:
            raise ReportError(f"[report] authors: {path}, matched to {problem} when the study ran, is gone; restore it "
                              "or run the report without it")
        out[problem] = traj
    return out


def _answers(ds: xr.Dataset, manifest: dict, settings: ReportSettings, claims: list[Claim]):
    """The verdicts, the ranking tables, the ranking itself and its target, all read through one :class:`Evidence`."""
    metrics = recorded_metrics(ds)
    target = _target(settings, {m: metric_info(ds)[m] for m in metrics}, answers(ds))
    ev = Evidence(ds, metric_info(ds), list(manifest.get("runs", {}).values()), manifest.get("paper", []),
                  settings.targets_for(metrics, answers(ds)), settings.converged_tolerance, settings.converged_window,
                  _authors(manifest), settings.timing_noise)
    verdicts = judge(claims, ev)
    rank = ranking(ev, target, settings.split_panels) if target else pd.DataFrame()
    tables = (ranking_tables(rank, unranked(ds, target.metric, settings.split_panels), target,
                             settings.converged_tolerance, settings.converged_window) if target else None)
    return ev, verdicts, rank, tables, target


def write_report(results: str | Path, out: str | Path, *, dpi: int = 100, study: str | Path | None = None,
                 all_metrics: bool = False) -> Report:
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
        A study file whose ``[[claim]]``, ``[[target]]``, ``[[reference]]``, ``[[paper]]`` and ``[report]`` replace
        those saved with the results (e.g. claims written after the runs: they show as amended); by default the
        saved study is used.
    all_metrics : bool
        Figures and the final-metrics table of every recorded metric, not only ``[report] plot`` or the models'
        primary ones (``svibench report --metrics all``).

    Returns
    -------
    Report
        Paths written and the tables (with the numbers behind them).
    """
    ds, manifest, folder = _load(Path(results), study)
    claims, references, amended = _study_tables(manifest)
    settings = replace(ReportSettings.parse(manifest.get("report")), show_all=all_metrics,
                       claimed=tuple(c.metric for c in claims if c.metric))
    metrics = recorded_metrics(ds)
    info = {m: metric_info(ds)[m] for m in metrics}
    colours = palette(list(map(str, ds["label"].values)))
    ok = ok_runs(ds)
    figures = _figures(ok, settings, info, references, colours, dpi) if ok.sizes["run"] else []
    ev, verdicts, rank, rankings, target = _answers(ds, manifest, settings, claims)
    top = _headline(ok, rank, settings, info, references, dpi)
    glance = [*([rankings[0]] if rankings else []), *claims_tables(verdicts, amended, settings.timing_noise),
              *([top] if top else [])]
    targets = settings.targets_for(metrics, answers(ds))
    profile = profile_table(ev, targets[0]) if targets and targets[0].metric in ds else None
    across = [profile[0], profile_figure(profile[1], colours, targets[0].metric, dpi=dpi)] if profile else []
    subsets = subset_table(ds)
    final = [final_metrics(ds, settings.shown(info)), metrics_meaning(ds), *([subsets] if subsets else [])]
    reach = [t for t in (time_to_target(ev, target) for target in targets) if t]
    paper = paper_comparison(ds, manifest.get("paper", []), {v.claim.id: v.verdict for v in verdicts},
                             settings.converged_tolerance, settings.converged_window)
    not_ok = runs_not_ok(ds, manifest)
    skipped = skipped_pairs(manifest)
    header = make_header(ds, manifest, settings, _results_written(folder))
    lookup = NoteLookup(ev, targets[0] if targets and targets[0].metric in ds else None)  # as NoteLookup.of, sharing ev
    accuracy = _accuracy(ok, info, colours, dpi)
    sections: list[Section] = [("At a glance", glance), *([("Figures", figures)] if figures else []),
                               *([("Posterior accuracy", accuracy)] if accuracy else []),
                               *([("Across problems", across)] if across else [])]
    if verdicts:
        sections.append(("Claims", [claim_notes(verdicts, amended, lambda note: render_note(note, lookup))]))
    sections.append(("Final metrics", [*([rankings[1]] if rankings else []), *final]))
    sections += [("Time to target", list(reach))] if reach else []
    sections += [("Paper vs this run", [paper])] if paper else []
    rows = rows_table(ev, manifest.get("paper", []))
    sections += [("The paper's table, row by row", [rows])] if rows else []
    sections.append(("Runs not ok", [not_ok] + ([skipped] if skipped else [])))
    drawn = [f for f in accuracy if isinstance(f, ReportFigure)]
    written = _write(Path(out), header, sections, figures + drawn + across[1:] + ([top] if top else []),
                     ledger(header, manifest, verdicts, amended, best(rank, target),
                            {"runs": int(ds.sizes["run"]), "seconds": cost_parts(ds)}))
    tables = [t for _, items in sections for t in items if isinstance(t, Table)]
    unreadable = [name.strip() for name in ds.attrs.get("corrupt_files", "").split(",") if name.strip()]
    return Report(Path(out), Path(out) / "index.html", Path(out) / "summary.md", written, tables, verdicts, unreadable)


def _write(out: Path, header, sections: list[Section], figures: list[ReportFigure], claims: dict) -> list[Path]:
    """Write the figures, ``index.html``, ``summary.md`` and the claims ledger into ``out``; the figure paths."""
    written = _write_figures(out / FIGURES_DIR, figures)
    (out / "index.html").write_text(render_html(header, sections), encoding="utf-8")
    (out / "summary.md").write_text(render_markdown(header, sections, FIGURES_DIR), encoding="utf-8")
    (out / LEDGER).write_text(json.dumps(claims, indent=1) + "\n", encoding="utf-8")
    return written


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
