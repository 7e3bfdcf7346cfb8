"""The report's header: what was run, when, with which code on which machine, and timing caveats."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import xarray as xr

from .settings import ReportSettings

__all__ = ["Header", "make_header"]

LIBRARIES = ("numpy", "scipy", "xarray", "pandas")


@dataclass
class Header:
    """Title, one-line description, (name, value) facts and caveats."""

    title: str
    description: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)


def _description(manifest: dict[str, Any]) -> str:
    try:
        return str(tomllib.loads(manifest.get("study_toml", "")).get("study", {}).get("description", ""))
    except tomllib.TOMLDecodeError:
        return ""


def _report_libraries() -> str:
    out = []
    for lib in ("matplotlib", "seaborn"):
        try:
            out.append(f"{lib} {version(lib)}")
        except PackageNotFoundError:
            pass
    return ", ".join(out)


def make_header(ds: xr.Dataset, manifest: dict[str, Any], settings: ReportSettings,
                results_written: datetime | None, now: datetime | None = None) -> Header:
    """Facts from the results' attributes and manifest; caveats where the timing needs one."""
    attrs = {**ds.attrs, **{k: v for k, v in manifest.items() if isinstance(v, (str, int, float))}}
    now = now or datetime.now(timezone.utc)
    study = str(attrs.get("study", "?"))
    libs = ", ".join(f"{lib} {attrs[f'{lib}_version']}" for lib in LIBRARIES if f"{lib}_version" in attrs)
    facts = [
        ("study", f"{study} ({attrs.get('scale', 'default')} scale)"),
        ("study file", str(attrs.get("study_file", "—"))),
        ("runs", f"{ds.sizes['run']} on disk ({len(manifest.get('runs', {})) or ds.sizes['run']} in the study)"),
        ("results written", results_written.strftime("%Y-%m-%d %H:%M UTC") if results_written else "—"),
        ("report written", now.strftime("%Y-%m-%d %H:%M UTC")),
        ("svibench", f"{attrs.get('svibench_version', '?')}, git commit {attrs.get('git_commit', '?')}"),
        ("machine", str(attrs.get("machine", "?"))),
        ("libraries", f"Python {attrs.get('python_version', '?')}, {libs}" + (f"; report: {_report_libraries()}")),
    ]
    caveats = ["Times are algorithm seconds: the clock runs during `init` and `step` only; evaluation is excluded."]
    workers = attrs.get("parallel_workers")  # written by the sweep with its executor settings
    if workers is not None:
        facts.append(("parallel workers", str(workers)))
        if attrs.get("timing_note"):
            caveats.append(f"Timing: {attrs['timing_note']}.")
        elif int(workers) > 1:
            caveats.append(
                f"Runs executed {workers} at a time on this machine: they shared cores, caches and memory bandwidth, "
                "so absolute times are inflated and noisier than on an idle machine. Compare algorithms within this "
                "report; rerun with `--workers 1` for times to quote."
            )
    if str(attrs.get("git_commit", "")).endswith("-dirty"):
        caveats.append("The results were produced from a working tree with uncommitted changes.")
    if attrs.get("corrupt_files"):
        caveats.append(f"Unreadable run files were left out: {attrs['corrupt_files']}.")
    if attrs.get("stale_runs"):
        caveats.append(f"{attrs['stale_runs']} run file(s) of an earlier version of the study were left out "
                       "(they are still in runs/).")
    if settings.ignored:
        caveats.append(f"[report] keys not understood by this svibench version (ignored): {', '.join(settings.ignored)}.")
    return Header(f"svibench report: {study}", _description(manifest), facts, caveats)
