"""Memory a run needs, checked before any run: a model's estimate against what one run may use.

A model may estimate the peak bytes of one run on its data (:meth:`Model.memory_bytes`: the data,
the globals, and the larger of one step's and one evaluation chunk's working arrays).  Before a
sweep, every run whose estimate exceeds the memory one run may use — ``--memory-limit`` per worker,
or else the memory available on this machine shared by the workers — is refused in one line with
the estimate, so that a truncation level K that cannot fit is not found out hours into a sweep.
"""
from __future__ import annotations

import inspect
from typing import Any, Sequence

import psutil

from .data import Dataset
from .errors import UserError
from .registry import get_registry
from .spec import RunSpec

__all__ = ["MemoryBudgetError", "available_bytes", "run_budget", "algorithm_settings", "over_budget", "refuse"]

GIB = 2**30


class MemoryBudgetError(UserError, RuntimeError):
    """A run would need more memory than one run may use; the message gives the estimate and the fix."""


def available_bytes() -> int | None:
    """Memory available to new processes on this machine (psutil's ``available``: Linux ``MemAvailable``, the
    platform's equivalent elsewhere), or None when it cannot be read."""
    try:
        return int(psutil.virtual_memory().available)
    except (OSError, RuntimeError):
        return None


#: Run in a fresh interpreter: what a worker holds once it has imported what it runs, in bytes (address space, resident).
_WORKER_FOOTPRINT = ("import psutil, svibench.executors.local; m = psutil.Process().memory_info(); "
                     "print(m.vms, m.rss)")


def check_worker_limit(memory_limit: int, executor: str) -> None:
    """Raise :class:`MemoryBudgetError` when ``memory_limit`` (bytes per worker) is below what a worker holds
    before its first run, so that every worker would die starting (and print its traceback) rather than run: the
    address space of a fresh interpreter that imported the worker's module, for local workers (their limit is
    RLIMIT_AS), or its resident memory for Dask's (their nanny watches that)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _WORKER_FOOTPRINT], check=True, capture_output=True, text=True)
    vms, rss = map(int, out.stdout.split())
    local = executor != "dask"
    floor = vms if local else rss
    if memory_limit <= floor:
        what = "address space" if local else "resident memory"
        raise MemoryBudgetError(f"--memory-limit {memory_limit / GIB:.3g} GiB is below the {floor / GIB:.2g} GiB of "
                                f"{what} a worker holds before its first run (Python, numpy, svibench); give more "
                                "than that, or leave the option out")


def run_budget(memory_limit: int | None, workers: int) -> tuple[int | None, str]:
    """The bytes one run may use and where that number comes from: ``memory_limit`` (per worker) if given,
    else the available memory divided among ``workers`` runs at once."""
    if memory_limit:
        return memory_limit, f"--memory-limit {memory_limit / GIB:.3g} GiB per worker"
    free = available_bytes()
    if free is None:
        return None, "unknown"
    workers = max(workers, 1)
    return free // workers, f"{free / GIB:.3g} GiB available on this machine" + (
        f" / {workers} workers" if workers > 1 else "")


def algorithm_settings(name: str, params: dict[str, Any], plugins: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every hyperparameter of algorithm ``name`` run with ``params``: its constructor's defaults, the preset's
    fixed ones, then ``params``."""
    entry = get_registry(plugins).algorithm(name)
    defaults = {key: p.default for key, p in inspect.signature(entry.cls.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    return {**defaults, **entry.fixed, **params}


def over_budget(runs: Sequence[RunSpec], data: Dataset, budget: int | None) -> list[tuple[int, RunSpec]]:
    """(estimated bytes, run) of every run of ``runs`` (all on one problem, whose dataset is ``data``) whose
    model estimates more than ``budget`` bytes (none when ``budget`` is None)."""
    if budget is None or not runs:
        return []
    model_cls = get_registry(runs[0].plugins).model(runs[0].problem.model)
    over = []
    for run in runs:
        settings = algorithm_settings(run.algorithm, run.params, run.plugins)
        need = model_cls.memory_bytes(data, run.problem.model_params, settings)
        if need is not None and need > budget:
            over.append((need, run))
    return over


def refuse(over: list[tuple[int, RunSpec]], budget: int, where: str) -> None:
    """Raise :class:`MemoryBudgetError` naming the largest of the runs ``over`` the budget, in one line."""
    need, run = max(over, key=lambda item: item[0])
    more = f" (and {len(over) - 1} more run(s))" if len(over) > 1 else ""
    raise MemoryBudgetError(
        f"nothing was run: {run.label} on {run.problem.name} with {run.problem.model_params} needs an estimated "
        f"{need / GIB:.3g} GiB, more than the {budget / GIB:.3g} GiB one run may use ({where}){more}; "
        "lower the model's size (e.g. features) or the rows per step at this scale, use fewer --workers, "
        "or raise --memory-limit")
