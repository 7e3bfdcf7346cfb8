"""An upper estimate of the peak memory of one BPFA run (``BPFA.memory_bytes``, :mod:`svibench.memory`).

What a run holds at once, counted in float64 arrays from the code that allocates them:

* the data: every array of the dataset (Y, masks, held-out values), as loaded;
* the globals: λ, the prior, a view and the eq. 7 statistics, each K × D or K (≤ 20 of each);
* the larger of
  - one step on R rows (R = the algorithm's ``batch_size``; every training row for an algorithm
    without one, e.g. VMP or the Gibbs sampler): a local Gibbs chain draws its uniforms and normals
    for all ``burnin + samples`` sweeps up front and keeps X, Z, W², X² per kept sample
    (``models.bpfa.local.gibbs``), the factorised kinds hold θ, m, v and the moments, and the feature
    sweep its Q, A, κ, ½ log terms (≤ 12 per row and feature in all); the residuals R × D;
  - one evaluation chunk (``eval_chunk`` rows) with ``predictive_samples`` draws, the same per-row
    count with the draws as kept samples, plus the predictive means and errors (draws × chunk × D);
  - the Gibbs initialisation of the globals (``init_method = "gibbs"``): a chain on ``init_rows`` rows.

Interpreter and library overhead is not counted: the estimate is of the arrays that grow with N, D, K.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from svibench.data import Dataset

__all__ = ["run_bytes"]

FLOAT = 8


def _per_row(K: int, D: int, burnin: int, kept: int) -> int:
    """float64 values held per row of a local step or chunk with ``kept`` kept draws after ``burnin`` sweeps."""
    return K * (12 + 2 * (burnin + kept) + 4 * kept) + D * (6 + 4 * kept)


def run_bytes(data: Dataset, params: dict[str, Any], algorithm: dict[str, Any], defaults: dict[str, Any]) -> int:
    """Peak bytes of one run of BPFA (model parameters ``params`` over ``defaults``) on ``data`` under an
    algorithm with hyperparameters ``algorithm`` (see the module docstring for what is counted)."""
    p = {**defaults, **params}
    N, D = np.shape(data.train["Y"])
    K = int(p["features"])
    burnin, samples = int(algorithm.get("burnin", 0)), int(algorithm.get("samples", 1))
    batch = algorithm.get("batch_size")  # None (BBVI's default): the whole data
    rows = N if batch is None else min(int(batch), N)
    step = rows * _per_row(K, D, burnin, samples)
    chunk = min(int(p["eval_chunk"]), N) * _per_row(K, D, burnin, int(p["predictive_samples"]))
    init = min(int(p["init_rows"]), N) * _per_row(K, D, 1, 1) if algorithm.get("init_method") == "gibbs" else 0
    arrays = sum(np.asarray(a).nbytes for split in (data.train, data.test) for a in split.values())
    return int(arrays + FLOAT * (20 * K * (D + 1) + max(step, chunk, init)))
