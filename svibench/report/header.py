"""The report's header: what was run, when, with which code on which machine, and timing caveats."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import xarray as xr

from .fmt import number
from ..settings import ReportSettings

__all__ = ["Header", "make_header"]

LIBRARIES = ("numpy", "scipy", "xarray", "pandas")


@dataclass
class Header:
    """Title, one-line description, (name, value) facts and caveats."""

    title: str
    description: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)

    @property
    def run_line(self) -> str:
        """The line under the title: the study, the svibench version and when the results were written."""
        facts = dict(self.facts)
        return " · ".join(facts[k] for k in ("study", "svibench", "results written") if k in facts)


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


def _clock(ds: xr.Dataset) -> tuple[list[tuple[str, str]], list[str]]:
    """(facts, caveats) on what the times are: the clock, the warm-up's total, threads beyond one."""
    if "wall_time" not in ds:
        return [], ["Times are wall-clock algorithm seconds (`init` and `step` only, evaluation excluded): these "
                    "results were written before svibench timed CPU seconds, so they move with the load on the machine."]
    facts: list[tuple[str, str]] = []
    caveats = ["Times are CPU seconds of the run's process in `init` and `step` only, with BLAS/OpenMP pinned to one "
               "thread; evaluation and the warm-up are excluded, so load on the machine barely moves them. The wall "
               "seconds of the same intervals are kept in the results as `wall_time`."]
    warm = ds["warmup_seconds"].values if "warmup_seconds" in ds.coords else np.array([])
    if np.isfinite(warm).any():
        total, most = number(np.nansum(warm), 3), number(np.nanmax(warm), 3)
        facts.append(("warm-up", f"{total} s CPU in all, at most {most} s in a run: compilation (numba) and first "
                                 "calls, before each run's clock, not in its time"))
    cost = _cost(ds)
    if cost:
        facts.append(("cost", cost))
    threads = ds["blas_threads"].values if "blas_threads" in ds.coords else np.array([])
    if (threads > 1).any():
        caveats.append(f"{int((threads > 1).sum())} run(s) had BLAS/OpenMP pools of up to {int(np.nanmax(threads))} "
                       "threads (a library refused the limit): their CPU time counts every thread.")
    return facts, caveats


def cost_parts(ds: xr.Dataset) -> dict[str, float]:
    """What the study's runs cost, summed over them, in the plan's parts (:data:`svibench.plan.PARTS`): stepping
    (the algorithms' CPU seconds), evaluation (the checkpoints' wall seconds but for scoring), scoring against
    references (wall), compilation (the warm-up's CPU); empty for results that do not record them."""
    if "evaluation_seconds" not in ds.coords or "time" not in ds:
        return {}
    total = {name: float(np.nansum(ds[name].values)) if name in ds.coords else 0.0
             for name in ("evaluation_seconds", "accuracy_seconds", "warmup_seconds")}
    return {"stepping": float(np.nansum(ds["time"].max("checkpoint").values)),
            "evaluation": total["evaluation_seconds"] - total["accuracy_seconds"],
            "scoring": total["accuracy_seconds"], "compilation": total["warmup_seconds"]}


def _cost(ds: xr.Dataset) -> str:
    """:func:`cost_parts` in a line, with evaluation's share (scoring included) of the whole."""
    parts = cost_parts(ds)
    total = sum(parts.values())
    if not total > 0:
        return ""
    evaluation = parts["evaluation"] + parts["scoring"]
    return (f"{number(total, 3)} s over the runs: stepping {number(parts['stepping'], 3)} s CPU, evaluation "
            f"{number(evaluation, 3)} s wall ({evaluation / total:.0%}; scoring against references "
            f"{number(parts['scoring'], 3)} s of it), warm-up {number(parts['compilation'], 3)} s CPU")


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
    clock_facts, caveats = _clock(ds)
    facts += clock_facts
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
