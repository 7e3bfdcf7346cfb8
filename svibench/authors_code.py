"""Trajectories of the papers' own code, committed as data: the ground truth svibench is held to.

A folder such as ``references/authors/khan2017-logreg/`` holds one JSON file per
dataset, written by a driver under ``tools/authors_code/`` that ran the authors'
published code (under GNU Octave, outside this repository), and a ``manifest.toml``
that pins each file's SHA-256.  A file records its provenance (repository, commit,
files, Octave version, the exact command), the problem it was run on (dataset,
split, sizes, prior) and, per method, the authors' step size and iteration count
and the value of each metric at every iteration (one row per Monte-Carlo seed).

This module reads and checks them; the tests and the report compare svibench's
runs with them.  A file whose checksum or problem does not match is an error, never
a silent pass.
"""
from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .data import sha256_of

__all__ = ["AuthorsError", "MethodTrajectory", "AuthorsTrajectories", "load_trajectories", "match_problems", "METRICS"]

#: svibench's metric → the field of a trajectory file that holds the authors' value of it.
METRICS = {"neg_elbo_authors": "neg_log_lik", "test_logloss_bits": "log_loss"}


class AuthorsError(RuntimeError):
    """A trajectory file that is missing from its manifest, altered, malformed, or of another problem."""


@dataclass(frozen=True)
class MethodTrajectory:
    """One method's trajectories: ``values[metric]`` has one row per run (seed) and one column per iteration 0..K."""

    method: str
    w: float | None
    iterations: int
    deterministic: bool
    seeds: tuple[int, ...] | None
    values: dict[str, np.ndarray]

    def at(self, metric: str, iteration: int) -> np.ndarray:
        """The metric after ``iteration`` iterations, one value per run."""
        series = self.values[metric]
        if not 0 <= iteration < series.shape[1]:
            raise AuthorsError(f"{self.method}: the authors' code ran {series.shape[1] - 1} iterations, not {iteration}")
        return series[:, iteration]


@dataclass(frozen=True)
class AuthorsTrajectories:
    """A checked trajectory file: where it came from, its problem, its methods."""

    path: Path
    provenance: dict[str, Any]
    problem: dict[str, Any]
    methods: dict[str, MethodTrajectory]

    def check_problem(self, **ours: Any) -> None:
        """Raise :class:`AuthorsError` unless the file was run on this problem: each given key (``dataset``,
        ``split``, ``delta``, ``bias_precision``, ``n_train``, ``n_test``, ...) equals the file's."""
        wrong = [k for k in ours if not _same(ours[k], self.problem.get(k))]
        if wrong:
            raise AuthorsError(f"{self.path} was run on another problem: " + ", ".join(
                f"{k} = {self.problem.get(k)!r} there, {ours[k]!r} here" for k in wrong))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and np.isclose(a, b, rtol=1e-9, atol=0.0)
    return a == b


def _manifest(folder: Path) -> dict[str, str]:
    path = folder / "manifest.toml"
    try:
        files = tomllib.loads(path.read_text())["files"]
        return {str(name): str(entry["sha256"]) for name, entry in files.items()}
    except FileNotFoundError:
        raise AuthorsError(f"{folder} has no manifest.toml pinning its trajectory files") from None
    except (tomllib.TOMLDecodeError, KeyError, TypeError) as exc:
        raise AuthorsError(f"{path}: not a manifest of [files.NAME] tables with a sha256 ({exc})") from None


def load_trajectories(folder: str | Path, dataset: str) -> AuthorsTrajectories | None:
    """The checked trajectories of ``dataset`` in ``folder``; None when the folder has none for it."""
    folder = Path(folder)
    path = folder / f"{dataset}.json"
    if not path.exists():
        return None
    pinned = _manifest(folder).get(path.name)
    if pinned is None:
        raise AuthorsError(f"{path} is not pinned in {folder / 'manifest.toml'}")
    actual = sha256_of(path)
    if actual != pinned:
        raise AuthorsError(f"{path} has SHA-256 {actual}, not the {pinned} its manifest pins: the file was altered; "
                           f"restore it (git checkout) or regenerate it with its driver")
    try:
        raw = json.loads(path.read_text())
        methods = {name: _method(name, entry) for name, entry in raw["methods"].items()}
        return AuthorsTrajectories(path, dict(raw["provenance"]), dict(raw["problem"]), methods)
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise AuthorsError(f"{path}: not a trajectory file ({type(exc).__name__}: {exc})") from None


def _method(name: str, entry: dict[str, Any]) -> MethodTrajectory:
    values = {metric: np.asarray(entry[field], dtype=float) for metric, field in METRICS.items()}
    iterations = int(entry["iterations"])
    for metric, array in values.items():
        if array.ndim != 2 or array.shape[1] != iterations + 1:
            raise ValueError(f"{name} {METRICS[metric]}: expected rows of {iterations + 1} values, got shape {array.shape}")
    seeds = entry.get("seeds")
    return MethodTrajectory(name, entry.get("w"), iterations, bool(entry["deterministic"]),
                            None if seeds is None else tuple(int(s) for s in seeds), values)


def match_problems(folder: str | Path, problems: list[tuple[str, str, dict[str, Any], dict[str, Any]]]) -> dict[str, str]:
    """Problem name → the trajectory file in ``folder`` that was run on it, for (name, dataset, model_params,
    dataset_params) of a study's logistic-regression problems.

    A problem matches its dataset's file when it is on the file's split (``split = "paper"``, or a dataset with
    official files and no ``split``); one on a split of our own has no authors' trajectory.  A matching problem
    whose prior differs from the file's is an :class:`AuthorsError`: a comparison with it would be meaningless.
    """
    out = {}
    for name, dataset, model_params, dataset_params in problems:
        traj = load_trajectories(folder, dataset)
        if traj is None or dataset_params.get("split", "official") != traj.problem.get("split"):
            continue
        traj.check_problem(delta=float(model_params.get("delta", 1.0)),
                           bias_precision=float(model_params.get("bias_precision", 1e-4)))
        out[name] = str(traj.path.resolve())
    return out
