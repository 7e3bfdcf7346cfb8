"""Results on disk: one netCDF file per finished run, opened together as one Dataset.

Layout of a results folder::

    OUT/manifest.json        study, its hash, environment, run ids with status
    OUT/runs/<run_id>.nc     one run: dim ``checkpoint``; identity in attributes

Files are written to a temporary name and renamed, so a file either holds a
whole run or does not exist.  netCDF-3 via scipy keeps the dependency list at
the base set (no HDF5 library).
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import tempfile
from dataclasses import replace
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import xarray as xr

from .errors import UserError
from .metrics import Metric, table_from_json, table_json
from .registry import RegistryError, get_registry
from .summary import metric_names

__all__ = ["write_run", "read_run", "open_results", "run_files", "environment", "ResultsError", "RUN_COORDS",
           "RUN_NUMBERS", "metric_info", "rankable_runs", "answers", "named", "select_runs"]

#: Per-run attributes that become coordinates along ``run`` in the combined Dataset: the run's names, their
#: structured parts (``method``, ``variant``, ``problem_base``, ``problem_grid``; dicts as JSON) and what its
#: metrics mean (``metric_info``, JSON of :func:`svibench.metrics.table_json`; ``answer``).
RUN_COORDS = ("run_id", "problem", "problem_base", "problem_grid", "model", "dataset", "algorithm", "label", "method",
              "variant", "seed", "params", "status", "message", "metric_info", "answer", "reference")
#: Per-run numeric attributes that become float coordinates along ``run`` (NaN for runs written before them).
RUN_NUMBERS = ("warmup_seconds", "blas_threads", "wall_seconds", "evaluation_seconds", "accuracy_seconds")


class ResultsError(UserError, RuntimeError):
    """A results path that is missing, empty or holds unreadable files."""


@lru_cache(maxsize=1)
def environment() -> dict[str, str]:
    """svibench version, git commit, library versions and machine, for the results' attributes."""
    env = {"svibench_version": _version("svibench"), "git_commit": _git_commit()}
    for lib in ("numpy", "scipy", "xarray", "pandas"):
        env[f"{lib}_version"] = _version(lib)
    env["python_version"] = platform.python_version()
    env["machine"] = f"{platform.node()} {platform.machine()} {platform.system()} {os.cpu_count()} cpus"
    return env


def _version(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "unknown"


def _git_commit() -> str:
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=here, capture_output=True, text=True, timeout=5, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=here, capture_output=True, text=True, timeout=5
        ).stdout.strip()
        return out + ("-dirty" if dirty else "")
    except Exception:
        return "unknown"


def _atomic_write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_run(ds: xr.Dataset, folder: str | Path) -> Path:
    """Write one run, with :func:`environment` in its attributes, atomically to ``folder/runs/<run_id>.nc``;
    return the path.  The file is encoded in memory and written as bytes: scipy's writer given a path cost ~0.5 ms
    more a run (its file manager), in the sweep's parent, which writes every run (issue 33)."""
    data = ds.assign_attrs(environment()).to_netcdf(engine="scipy")
    path = Path(folder) / "runs" / f"{ds.attrs['run_id']}.nc"
    _atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
    return path


def write_json(path: Path, obj) -> None:
    """Write JSON atomically."""
    def dump(tmp: str) -> None:
        with open(tmp, "w") as fh:
            json.dump(obj, fh, indent=1, sort_keys=True)
    _atomic_write(Path(path), dump)


def read_run(path: str | Path) -> xr.Dataset:
    """Read one run file into memory; a truncated or corrupt file raises :class:`ResultsError`."""
    try:
        with xr.open_dataset(path, engine="scipy") as ds:
            loaded = ds.load()
        if "run_id" not in loaded.attrs:
            raise ValueError("no run_id attribute")
        return loaded
    except Exception as exc:
        raise ResultsError(f"run file {path} is unreadable ({type(exc).__name__}: {exc}); delete it to run it again") from None


def run_files(folder: str | Path) -> list[Path]:
    return sorted((Path(folder) / "runs").glob("*.nc"))


def open_results(path: str | Path, *, skip_corrupt: bool = False) -> xr.Dataset:
    """Open a study's results as one Dataset with dims ``run`` × ``checkpoint``.

    Parameters
    ----------
    path : str or Path
        A results folder (holding ``runs/``) or a single run file.
    skip_corrupt : bool
        Leave out unreadable run files (their names are listed in the
        ``corrupt_files`` attribute) instead of raising.

    A folder's run files that its manifest does not list (kept from an earlier
    version of the study, run again with ``--force``) are left out; their
    number is the ``stale_runs`` attribute.

    Returns
    -------
    xarray.Dataset
        Variables ``iteration``, ``epoch``, ``time`` (algorithm CPU seconds),
        ``wall_time`` (wall seconds of the same intervals) and every metric, NaN
        where a run has fewer checkpoints or a metric does not apply; per-run
        coordinates :data:`RUN_COORDS` (:func:`metric_info`, :func:`answers`
        and :func:`select_runs` read them) and :data:`RUN_NUMBERS`
        (``warmup_seconds``: CPU seconds of the warm-up before the clock;
        ``blas_threads``: BLAS/OpenMP threads in force during the run;
        ``wall_seconds``: the whole run, wall clock; ``evaluation_seconds``: of
        it, evaluating the checkpoints; ``accuracy_seconds``: of that, scoring
        against a reference posterior);
        attributes from the manifest (study, versions, git commit, machine, and
        ``origins``: JSON of where each algorithm, model and dataset came from —
        built-in, entry point with its package's version, or plugin file with
        its SHA-256).

    Examples
    --------
    >>> ds = open_results("reports/quickstart/results")          # doctest: +SKIP
    >>> ds.elbo.where(ds.algorithm == "vmp", drop=True).isel(checkpoint=-1)   # doctest: +SKIP
    """
    path = Path(path)
    if path.is_file():
        files = [path]
        folder = path.parent.parent
    elif path.is_dir():
        files = run_files(path)
        folder = path
    else:
        raise ResultsError(f"no results at {path}: give a results folder (holding runs/) or a run file")
    manifest = folder / "manifest.json"
    info = json.loads(manifest.read_text()) if manifest.exists() else {}
    stale = []
    if path.is_dir() and info.get("runs"):  # files of an earlier version of the study (run with --force) stay out
        stale = [f for f in files if f.stem not in info["runs"]]
        files = [f for f in files if f.stem in info["runs"]]
    runs, corrupt = [], []
    for file in files:
        try:
            runs.append(read_run(file))
        except ResultsError:
            if not skip_corrupt:
                raise
            corrupt.append(file.name)
    if not runs:
        raise ResultsError(f"{path} holds no readable run files" + (f" ({len(corrupt)} corrupt)" if corrupt else ""))
    runs.sort(key=lambda ds: (ds.attrs["problem"], ds.attrs["label"], int(ds.attrs["seed"]), ds.attrs["run_id"]))
    coords = {name: ("run", [_attr(ds, name) for ds in runs]) for name in RUN_COORDS}
    coords.update({name: ("run", [float(ds.attrs.get(name, np.nan)) for ds in runs]) for name in RUN_NUMBERS})
    combined = xr.concat(
        [ds.drop_attrs() if hasattr(ds, "drop_attrs") else ds.assign_attrs({}) for ds in runs],
        dim="run",
        join="outer",
        fill_value=np.nan,
        data_vars="all",
        coords="minimal",
        compat="override",
    )
    combined = combined.assign_coords(coords)
    combined = combined.assign_coords(run=np.arange(len(runs)))
    attrs = {k: v for k, v in runs[0].attrs.items() if k in environment() or k == "study"}
    if info:
        attrs.update({k: v for k, v in info.items() if isinstance(v, (str, int, float))})
        attrs["study_toml"] = info.get("study_toml", "")
        attrs["origins"] = json.dumps(info.get("origins", {}), sort_keys=True)
    if corrupt:
        attrs["corrupt_files"] = ", ".join(corrupt)
    if stale:
        attrs["stale_runs"] = len(stale)
    combined.attrs = attrs
    return combined


def _attr(ds: xr.Dataset, name: str):
    value = ds.attrs.get(name)
    if value is None or (name == "metric_info" and value == "[]"):
        value = _older_file(ds.attrs, name)
    return int(value) if name == "seed" else str(value)


def _older_file(attrs: dict, name: str) -> str:
    """What a run file written before an attribute existed stands for: the structured identity of a run without
    grids (method = label, problem base = problem), and its model class's declared metrics (``Model.metrics``,
    without a per-data refinement such as BPFA's; none if the model is not registered here)."""
    if name in ("method", "problem_base"):
        return str(attrs.get("label" if name == "method" else "problem", ""))
    if name in ("variant", "problem_grid"):
        return "{}"
    if name not in ("metric_info", "answer"):
        return str(attrs.get(name, ""))
    try:
        model_cls = get_registry().model(str(attrs.get("model", "")))
    except RegistryError:
        return "[]" if name == "metric_info" else ""
    return table_json(dict(model_cls.metrics)) if name == "metric_info" else model_cls.answer


@lru_cache(maxsize=64)
def _table(text: str) -> dict[str, Metric]:
    return table_from_json(text)


def metric_info(ds: xr.Dataset) -> dict[str, Metric]:
    """What each metric of the results means: the union over runs of their models' ``metric_info``.

    A metric declared by several models (``elbo``, ``heldout_loglik``) keeps its first declaration, with the
    widest valid range and ``rankable`` only if every run's says so (:func:`rankable_runs` has each run's).

    Raises
    ------
    ResultsError
        Two models declare a metric with a different direction or kind, or a metric of the results has no
        metadata (a run file written by an older svibench, of a model not registered here).
    """
    out: dict[str, Metric] = {}
    for text in dict.fromkeys(map(str, ds["metric_info"].values)):
        for name, m in _table(text).items():
            first = out.setdefault(name, m)
            if (first.direction, first.kind) != (m.direction, m.kind):
                raise ResultsError(f"metric {name!r} is {first.direction}-is-better {first.kind} in one model and "
                                   f"{m.direction}-is-better {m.kind} in another; rename one of them")
            out[name] = replace(first, rankable=first.rankable and m.rankable, low=min(first.low, m.low),
                                high=max(first.high, m.high))
    bare = [m for m in metric_names(ds) if m not in out]
    if bare:
        raise ResultsError(f"the results hold no metadata for metric {bare[0]!r} (older run files of a model not "
                           "registered here); run the study again with this svibench")
    return out


def rankable_runs(ds: xr.Dataset, metric: str) -> np.ndarray:
    """Per run: whether its model declares ``metric`` a fair ranking key on its data (False if it does not declare it)."""
    tables = [_table(str(text)) for text in ds["metric_info"].values]
    return np.array([metric in t and t[metric].rankable for t in tables], dtype=bool)


def answers(ds: xr.Dataset) -> list[str]:
    """The metrics the runs' models name as their default answer (``Model.answer``), in run order, once each."""
    return [a for a in dict.fromkeys(map(str, ds["answer"].values)) if a]


def named(exact, group, wanted: str) -> np.ndarray:
    """Which rows ``wanted`` names, by whole strings: those whose ``exact`` value (a label, a problem) is
    ``wanted`` if any is, else those whose ``group`` value (a method, a problem base) is.  So ``"MF-SVI"``
    selects every grid point of MF-SVI unless a run is labelled exactly ``MF-SVI``."""
    exact, group = np.asarray(exact, dtype=str), np.asarray(group, dtype=str)
    hit = exact == wanted
    return hit if hit.any() else group == wanted


def select_runs(ds: xr.Dataset, *, algorithm: str | None = None, problem: str | None = None) -> np.ndarray:
    """Mask over the runs of ``ds``: those of ``algorithm`` (an exact label, else a method) on ``problem`` (an
    exact problem, else a problem base: its grid points), read from the structured coordinates (:func:`named`)."""
    mask = np.ones(ds.sizes["run"], dtype=bool)
    if algorithm is not None:
        mask &= named(ds["label"].values, ds["method"].values, algorithm)
    if problem is not None:
        mask &= named(ds["problem"].values, ds["problem_base"].values, problem)
    return mask
