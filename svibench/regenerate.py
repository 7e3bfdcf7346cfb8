"""Rebuild the committed reports at HEAD: run every study from scratch, then write the reports (each with a
screenshot of its headline at 1280 px, where Chromium is installed) and the index.

A study's report at the default scale sits beside its study file; at another scale (``--scale paper``) in
the folder of that name beside it (``reports/<study>/paper/``), so both are committed and the index lists both.

The tree must be clean (no uncommitted change to a tracked file), so every
result records the commit without ``-dirty``.  All studies run before any
report is written: a written report is a change to a tracked file, and the
runs after it would record a dirty tree.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from .executors import require_distributed, run_dask, run_local
from .plan import StudyPlan, format_study, format_total, plan_studies
from .study import Study, StudyError, load_study
from .sweep import run_study

__all__ = ["regenerate", "plan", "against_committed", "dirty_files", "report_folder", "RESULTS_DIR"]

#: Where regenerate runs the studies (ignored by git; a user's own `results/` is left alone).
RESULTS_DIR = "results-regenerate"


def dirty_files(folder: Path) -> list[str]:
    """Tracked files with uncommitted changes in the git work tree holding ``folder``."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=folder, capture_output=True,
                         text=True, timeout=30)
    if out.returncode != 0:
        raise StudyError(f"{folder} is not in a git work tree (git status: {out.stderr.strip()})")
    return [line[3:] for line in out.stdout.splitlines() if line.strip()]


def report_folder(study: Study) -> Path:
    """Where a study's committed report goes: beside its file at the default scale, else in ``<scale>/`` beside it."""
    folder = Path(study.source).parent
    return folder if study.scale == "default" else folder / study.scale


@dataclass
class Regenerated:
    """A study whose report was rebuilt, and how long its runs took (wall-clock seconds)."""

    study: str
    runs: int
    seconds: float
    statuses: dict[str, str]


def _screenshot(folder: Path, log) -> None:
    """The report's headline as a 1280 px browser shows it, beside the report (:mod:`svibench.report.browser`);
    without Chromium an earlier screenshot is removed rather than left to disagree with the report."""
    from .report.browser import SCREENSHOT, chromium, headline_screenshot

    out = folder / SCREENSHOT
    if chromium() is None:
        out.unlink(missing_ok=True)
        log(f"{folder.name}: no Chromium on the PATH, so no {SCREENSHOT} (apt-get install chromium)")
        return
    headline_screenshot(folder / "index.html", out)


def _studies(reports: Path, names: list[str], scale: str) -> list[Study]:
    files = sorted(reports.glob("*/study.toml"))
    known = {f.parent.name: f for f in files}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise StudyError(f"no study {unknown[0]!r} under {reports}; studies: {', '.join(known)}")
    return [load_study(known[n], scale=scale) for n in (names or list(known))]


def regenerate(reports: str | Path = "reports", names: list[str] | None = None, *, scale: str = "default",
               workers: int = 1, executor: str = "local", allow_dirty: bool = False, log=print) -> list[Regenerated]:
    """Run the studies (all under ``reports``, or ``names``) into ``results-regenerate`` of their report folder
    (:func:`report_folder`) afresh, then write each report there and the index ``reports/index.html`` /
    ``README.md``.  ``executor`` is ``"local"`` (worker processes) or ``"dask"`` (a ``LocalCluster`` of
    ``workers`` single-threaded processes)."""
    from .report import write_report
    from .report.index import write_index

    reports = Path(reports).resolve()
    dirty = dirty_files(reports)
    if dirty and not allow_dirty:
        raise StudyError(f"the work tree has uncommitted changes ({', '.join(dirty[:3])}{', …' if len(dirty) > 3 else ''}); "
                         "commit or stash them: committed reports must be built at a clean HEAD")
    studies = _studies(reports, list(names or []), scale)  # every study checked before any run
    if executor == "dask":
        require_distributed()  # and the executor's library: before any results folder is cleared
    done = []
    run = partial(run_dask if executor == "dask" else run_local, workers=workers)
    for study in studies:
        out = report_folder(study) / RESULTS_DIR
        shutil.rmtree(out, ignore_errors=True)
        start = time.perf_counter()
        result = run_study(study, out, run, progress=False,
                           execution={"executor": executor, "parallel_workers": workers if len(study.runs) > 1 else 1})
        done.append(Regenerated(study.name, len(study.runs), time.perf_counter() - start, result.statuses))
        log(f"{study.name}: {len(study.runs)} runs in {done[-1].seconds:.0f} s")
    for study in studies:
        start = time.perf_counter()
        write_report(report_folder(study) / RESULTS_DIR, report_folder(study))
        _screenshot(report_folder(study), log)
        log(f"{study.name}: report written in {time.perf_counter() - start:.0f} s")
    html, _ = write_index(reports)
    log(f"index: {html}")
    return done


def plan(reports: str | Path = "reports", names: list[str] | None = None, *, scale: str = "default",
         workers: int = 1, log=print) -> list[StudyPlan]:
    """What :func:`regenerate` with the same arguments would run and how long it would take (:mod:`svibench.plan`):
    each study's table as it is estimated, then the total; nothing is run or written, and the tree may be dirty."""
    plans = []
    for study_plan in plan_studies(_studies(Path(reports).resolve(), list(names or []), scale), workers, cache=True):
        plans.append(study_plan)
        log(format_study(study_plan, workers))
        log(against_committed(study_plan))
    log(format_total(plans, workers))
    return plans


def against_committed(study_plan: StudyPlan) -> str:
    """How far the plan's estimate is from what the committed report's runs cost (its ledger's ``cost``), when the
    report holds the same number of runs; else why there is nothing to hold it against."""
    from .report.glance import LEDGER

    path = report_folder(study_plan.study) / LEDGER
    try:
        cost = json.loads(path.read_text()).get("cost") or {}
    except (OSError, ValueError):
        cost = {}
    measured = sum((cost.get("seconds") or {}).values())
    if not measured > 0:
        why = f"{path} has no cost of its runs" if path.exists() else f"no report at this scale ({path} is absent)"
        return f"  against the committed report: none to hold it against ({why})"
    if cost.get("runs") != study_plan.runs:
        return (f"  against the committed report: not comparable ({cost.get('runs')} runs there, {study_plan.runs} "
                "in this plan)")
    parts = ", ".join(f"{k} {v / cost['seconds'][k]:.2f}" for k, v in study_plan.parts.items()
                      if cost["seconds"].get(k, 0) > 0)
    return (f"  against the committed report: estimate {study_plan.seconds:.0f} s, measured {measured:.0f} s (the "
            f"runs' CPU, evaluation in wall seconds): ratio {study_plan.seconds / measured:.2f}; by part {parts}")
