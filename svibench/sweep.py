"""A sweep: run a study's missing runs and write each one to disk as it finishes."""
from __future__ import annotations

import hashlib
import inspect
import json
import time
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import packages_distributions, version
from pathlib import Path
from typing import Any, Sequence

from .data import DataError, DatasetUnavailable, data_dir
from .errors import UserError
from .executors import Executor
from .memory import over_budget, refuse, run_budget
from .problem import load_dataset
from .progress import Progress
from .registry import get_registry
from .report.frozen import frozen_claims
from .results import ResultsError, environment, read_run, run_files, write_json, write_run
from .spec import RunSpec, canonical_json
from .study import Study

__all__ = ["run_study", "SweepResult", "SweepError", "Pending", "pending_runs", "completed_runs", "check_data",
           "origins"]

RETRYABLE = ("failed", "timeout")
#: Seconds between two rewrites of the manifest during a sweep (and once at its end).  Rewriting it after every
#: run cost the parent O(runs) each time, CPU taken from the workers in a sweep of many short runs; the run files,
#: not the manifest, say which runs a resumed sweep keeps.
MANIFEST_INTERVAL = 5.0


class SweepError(UserError, RuntimeError):
    """The results folder belongs to a different study, or similar; the message says what to do."""


@dataclass
class SweepResult:
    """What a sweep did: runs executed, runs already on disk, statuses, unreadable files."""

    folder: Path
    executed: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    statuses: dict[str, str] = field(default_factory=dict)
    corrupt: list[str] = field(default_factory=list)


@dataclass
class Pending:
    """What a sweep of a study into a folder finds there: the runs it makes (``todo``, in the study's order), the
    statuses of those it keeps, the unreadable run files, and the folder's manifest ({} if none)."""

    todo: list[RunSpec]
    kept: dict[str, str]
    corrupt: list[str]
    manifest: dict


def pending_runs(study: Study, folder: Path, *, resume: bool = True, retry_failed: bool = True,
                 force: bool = False) -> Pending:
    """What :func:`run_study` with these arguments would make and keep in ``folder`` (its ``resume``,
    ``retry_failed`` and ``force``); raises :class:`SweepError` if the folder holds another study's results."""
    manifest_path = folder / "manifest.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    if old and not force:
        _refuse_changed_study(old, study, folder)
    existing, corrupt = completed_runs(folder)
    todo, kept = [], {}
    for run in study.runs:
        status = existing.get(run.run_id)
        if resume and status is not None and not (retry_failed and status in RETRYABLE):
            kept[run.run_id] = status
        else:
            todo.append(run)
    return Pending(todo, kept, corrupt, old)


def completed_runs(folder: Path) -> tuple[dict[str, str], list[str]]:
    """Run id → status of the readable run files, and the names of unreadable ones."""
    status, corrupt = {}, []
    for file in run_files(folder):
        try:
            status[file.stem] = str(read_run(file).attrs["status"])
        except ResultsError:
            corrupt.append(file.name)
    return status, corrupt


def origins(study: Study) -> dict[str, str]:
    """Where each algorithm, model and dataset the study uses came from, e.g.
    ``{"algorithm svi": "built-in svibench.algorithms.svi (svibench 0.1.0)"}``: a built-in
    with the svibench version, an entry point with its package's version, a plugin
    file with the SHA-256 of its bytes (so a changed file shows)."""
    registry = get_registry(study.plugins)
    used = {("algorithm", r.algorithm) for r in study.runs} | {("model", r.problem.model) for r in study.runs} | {
        ("dataset", r.problem.dataset) for r in study.runs}
    out = {}
    for kind, name in sorted(used):
        if kind == "algorithm":
            obj, source = registry.algorithm(name).cls, registry.algorithm(name).source
        elif kind == "model":
            obj, source = registry.models[name]
        else:
            obj, source = registry.datasets[name][0].loader, registry.datasets[name][1]
        out[f"{kind} {name}"] = _origin(obj, source)
    return out


def _origin(obj: object, source: str) -> str:
    if source.startswith("built-in"):
        return f"{source} (svibench {environment()['svibench_version']})"
    if source.startswith("plugin file"):
        return f"{source} (sha256 {hashlib.sha256(Path(inspect.getfile(obj)).read_bytes()).hexdigest()})"  # type: ignore[arg-type]
    dists = packages_distributions().get(obj.__module__.split(".")[0], [])
    return f"{source} (" + ", ".join(f"{d} {version(d)}" for d in dists) + ")" if dists else source


def _manifest(study: Study, statuses: dict[str, str], execution: dict, where_from: dict[str, str],
              claims: dict | None) -> dict:
    """What ``manifest.json`` holds: how the runs were made, the study as run, each run's status, and the claims
    frozen with the runs (``claims``; left out, i.e. unknown, for results kept from an older svibench)."""
    return {
        **execution,
        "origins": where_from,
        "study": study.name,
        "study_hash": study.hash,
        "study_file": study.source,
        "study_toml": study.raw.get("_text", ""),
        "scale": study.scale,
        **environment(),
        "runs": {run.run_id: _run_entry(run, statuses.get(run.run_id, "missing")) for run in study.runs},
        "skipped": [vars(s) for s in study.skipped],
        "paper": study.paper,
        "report": study.report,
        "authors": study.authors,
        **({"claims": claims} if claims is not None else {}),
    }


def _run_entry(run: RunSpec, status: str) -> dict:
    """A run's line in the manifest: its names, their structured parts (method, variant, problem base and grid point,
    as in the run's file), its seed and status."""
    return {"problem": run.problem.name, "problem_base": run.problem.base, "problem_grid": run.problem.grid,
            "label": run.label, "method": run.method, "variant": run.variant, "seed": run.seed, "status": status}


def _refuse_changed_study(old: dict, study: Study, folder: Path) -> None:
    """Raise :class:`SweepError` saying what changed if ``folder`` was written for another study."""
    if old.get("study") != study.name:
        raise SweepError(f"{folder} holds results of study {old.get('study')!r}, not {study.name!r}; use another -o folder")
    if old.get("study_hash") == study.hash:
        return
    stored = old.get("runs", {})
    now = {r.run_id: r for r in study.runs}
    gone = [f"{v['label']} seed {v['seed']} on {v['problem']}" for k, v in stored.items() if k not in now]
    new = [f"{r.label} seed {r.seed} on {r.problem.name}" for k, r in now.items() if k not in stored]
    def some(items: list[str]) -> str:
        return ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")
    changes = ([f"{len(gone)} stored run(s) no longer in the study ({some(gone)})"] if gone else []) + (
        [f"{len(new)} new run(s) ({some(new)})"] if new else [])
    keys = changed_keys(old.get("study_toml", ""), study.raw.get("_text", ""))
    what = f" ({some(keys)})" if keys else ""
    raise SweepError(f"the study file changed since {folder} was written{what}: {'; '.join(changes) or 'same runs'}; "
                     "use another -o folder, or --force to keep the old runs and add the new ones")


def changed_keys(old_text: str, new_text: str) -> list[str]:
    """The keys whose values differ between two versions of a study file, as ``key: old → new`` (``[[table]] #i``
    for an entry of an array of tables); empty when either does not parse."""
    try:
        old, new = _flatten(tomllib.loads(old_text)), _flatten(tomllib.loads(new_text))
    except tomllib.TOMLDecodeError:
        return []
    absent = "(absent)"
    return [f"{key}: {old.get(key, absent)} → {new.get(key, absent)}" for key in sorted(old.keys() | new.keys())
            if old.get(key, absent) != new.get(key, absent)]


def _flatten(table: dict, prefix: str = "") -> dict[str, str]:
    """``table``'s leaves by dotted key, each value as TOML-like text; arrays of tables as ``name #i``."""
    out = {}
    for key, value in table.items():
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value, dict):
            out.update(_flatten(value, name))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                out.update(_flatten(item, f"[[{name}]] #{i + 1}"))
        else:
            out[name] = json.dumps(value, default=str)
    return out


def check_data(runs: Sequence[RunSpec], budget: tuple[int | None, str] = (None, "")) -> None:
    """Load every dataset ``runs`` need once, before any run starts, and check each run's memory.

    Loading verifies each real data file against its SHA-256 checksum.  ``budget`` is the bytes one
    run may use and where that number comes from (:func:`svibench.memory.run_budget`); a run whose
    model estimates more (:meth:`~svibench.model.Model.memory_bytes`) is refused.

    Raises
    ------
    DataError
        Naming each problem whose dataset this machine cannot provide
        (:class:`~svibench.data.DatasetUnavailable`: the data directory and the
        loader's advice on getting the file), whose data file is missing,
        corrupt or malformed (NaN, wrong shape), or whose loader rejects its
        parameters: a sweep must not spend hours recording the same error in
        every run.  Also naming each problem whose model parameters do not fit
        its loaded data (:meth:`~svibench.model.Model.data_refusal`, e.g. an
        evaluation subset larger than the data).
    MemoryBudgetError
        A run would need more memory than ``budget`` (one line with the estimate).
    """
    loaded: dict[tuple[str, str], Any] = {}
    problems: list[str] = []
    for run in runs:
        key = (run.problem.dataset, canonical_json(run.problem.dataset_params))
        if key in loaded:
            continue
        loaded[key] = None
        try:
            loaded[key] = load_dataset(run.problem, run.plugins)
        except DatasetUnavailable as exc:
            problems.append(f"{run.problem.name}: dataset {run.problem.dataset!r} is not available "
                            f"(data directory {data_dir()}): {exc}")
        except DataError as exc:
            problems.append(f"{run.problem.name}: {exc}")
        except Exception as exc:  # a loader rejecting its parameters (ValueError, TypeError, ...)
            problems.append(f"{run.problem.name}: dataset {run.problem.dataset!r} with {run.problem.dataset_params}: "
                            f"{type(exc).__name__}: {exc}")
    if problems:
        raise DataError("nothing was run; these problems' data cannot be loaded (provide the data, or remove "
                        "the problem from the study):\n  " + "\n  ".join(problems))
    refused = _refusals(runs, loaded)
    if refused:
        raise DataError("nothing was run; these problems' model parameters do not fit their data:\n  "
                        + "\n  ".join(refused))
    by_problem: dict[str, list[RunSpec]] = {}
    for run in runs:
        by_problem.setdefault(run.problem.key(), []).append(run)
    over = [item for group in by_problem.values() for item in over_budget(
        group, loaded[(group[0].problem.dataset, canonical_json(group[0].problem.dataset_params))], budget[0])]
    if over:
        refuse(over, *budget)


def _refusals(runs: Sequence[RunSpec], loaded: dict[tuple[str, str], Any]) -> list[str]:
    """Per problem, why its model's parameters cannot run on its loaded data (:meth:`Model.data_refusal`)."""
    out, seen = [], set()
    for run in runs:
        if run.problem.key() in seen:
            continue
        seen.add(run.problem.key())
        data = loaded[(run.problem.dataset, canonical_json(run.problem.dataset_params))]
        why = get_registry(tuple(run.plugins)).model(run.problem.model).data_refusal(data, run.problem.model_params)
        if why:
            out.append(f"{run.problem.name}: model_params.{why}")
    return out


def run_study(
    study: Study,
    out: str | Path,
    executor: Executor,
    *,
    resume: bool = True,
    retry_failed: bool = True,
    force: bool = False,
    progress: bool | None = None,
    execution: dict | None = None,
    memory_limit: int | None = None,
) -> SweepResult:
    """Run what is missing of ``study`` into ``out`` with ``executor``.

    Parameters
    ----------
    resume : bool
        Keep runs already in ``out`` (when False, every run is made again).
    retry_failed : bool
        With ``resume``, make ``failed``/``timeout`` runs again.
    force : bool
        Accept a results folder written for a different version of the study.
    execution : dict, optional
        How the runs execute (``executor``, ``parallel_workers``), kept in the
        manifest and the results' attributes: parallel timings are not serial timings.
    memory_limit : int, optional
        Bytes one run may use (``--memory-limit``); default: the memory available on this
        machine shared by ``parallel_workers``.  A run whose model estimates more is refused
        before any run (:mod:`svibench.memory`).
    """
    execution = dict(execution or {})
    if execution.get("parallel_workers", 1) > 1:
        execution.setdefault(
            "timing_note",
            f"{execution['parallel_workers']} runs executed in parallel; algorithm (CPU) times include contention "
            "for memory bandwidth and caches and are not serial timings",
        )
    folder = Path(out)
    pending = pending_runs(study, folder, resume=resume, retry_failed=retry_failed, force=force)
    result = SweepResult(folder, reused=list(pending.kept), statuses=dict(pending.kept), corrupt=pending.corrupt)
    todo = pending.todo
    check_data(todo, run_budget(memory_limit, execution.get("parallel_workers", 1)))
    where_from = origins(study)
    # The claims the kept runs were made for stay frozen; only a sweep that keeps no run freezes the study's own.
    claims = pending.manifest.get("claims") if result.reused else frozen_claims(study.raw)
    def save_manifest() -> float:
        write_json(folder / "manifest.json", _manifest(study, result.statuses, execution, where_from, claims))
        return time.monotonic()

    saved = save_manifest()
    runs = executor(todo, on_progress=Progress(todo, enabled=progress))
    try:
        for ds in runs:
            write_run(ds, folder)
            run_id, status = ds.attrs["run_id"], ds.attrs["status"]
            result.executed.append(run_id)
            result.statuses[run_id] = status
            if time.monotonic() - saved >= MANIFEST_INTERVAL:
                saved = save_manifest()
    finally:
        close = getattr(runs, "close", None)
        if close:
            close()
        save_manifest()  # every status, whether the sweep ended or was interrupted
    return result
