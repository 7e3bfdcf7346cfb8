"""Executors: where runs execute.  They yield finished runs; the caller writes them.

``local`` runs in worker processes on this machine (in this process when
``workers == 1``).  Workers pin BLAS/OpenMP to one thread so parallel runs do
not oversubscribe the cores.
"""
from __future__ import annotations

import multiprocessing
import os
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Iterator, Sequence

import xarray as xr

from .runner import execute
from .spec import RunSpec

__all__ = ["run_local", "THREAD_VARS", "pinned_threads"]

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")


@contextmanager
def pinned_threads(threads: int = 1):
    """Set the BLAS/OpenMP thread variables while worker processes are started."""
    saved = {k: os.environ.get(k) for k in THREAD_VARS}
    os.environ.update({k: str(threads) for k in THREAD_VARS})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_local(specs: Sequence[RunSpec], workers: int = 1) -> Iterator[xr.Dataset]:
    """Run ``specs``, yielding each run's Dataset as soon as it finishes.

    With ``workers > 1`` runs execute in fresh (spawned) processes with
    pinned threads; closing the generator (or Ctrl-C) cancels what has not started.
    """
    if workers <= 1:
        for spec in specs:
            yield execute(spec)
        return
    with pinned_threads(1):
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"))
    try:
        pending = {pool.submit(execute, spec) for spec in specs}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
