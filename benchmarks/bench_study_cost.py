"""asv: what a whole study costs, by part, followed across commits (issue 51): reports/quickstart at its default
scale, run serially in this process as ``svibench run`` would with one worker.

``track_part`` is the seconds of one part of the plan's split (:data:`svibench.plan.PARTS`: stepping, the
algorithms' CPU; evaluation, the checkpoints' wall seconds but scoring; scoring against references; compilation,
the warm-up's CPU), summed over the study's runs and read from their results
(:func:`svibench.report.header.cost_parts`, the report header's own numbers); ``track_total`` is their sum.  The
study runs once, in ``setup_cache``.  Evaluation and scoring are wall seconds as the runner records them (BLAS is
pinned to one thread), so a busy machine can move them; stepping and compilation are CPU seconds.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from svibench.executors import run_local
from svibench.plan import PARTS
from svibench.report.header import cost_parts
from svibench.results import open_results
from svibench.study import load_study
from svibench.sweep import run_study

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)

QUICKSTART = Path(__file__).resolve().parents[1] / "reports" / "quickstart" / "study.toml"


class QuickstartCost:
    """reports/quickstart's runs (24 at the default scale), their seconds by part and in all."""

    timeout = 600
    unit = "seconds"

    def setup_cache(self) -> dict[str, float]:
        with tempfile.TemporaryDirectory() as out:
            run_study(load_study(QUICKSTART), out, run_local, progress=False)
            with open_results(out) as ds:
                return cost_parts(ds)

    def track_total(self, parts: dict[str, float]) -> float:
        return sum(parts.values())

    def track_part(self, parts: dict[str, float], part: str) -> float:
        return parts[part]

    track_part.params = list(PARTS)
    track_part.param_names = ["part"]
