"""Benchmark problems (one small problem per model) and the (algorithm, problem) pairs asv measures.

Everything is generated from the registry: a new algorithm is benchmarked on
every problem it is compatible with without editing the suite; a new model is
benchmarked on its entry in :data:`PROBLEMS` or, until it has one, on the first
registered dataset of a kind it accepts, with default parameters (add an entry
to keep it small).  Sizes are chosen so that one step, one epoch and one
fixed-budget run each take well under a second.
"""
from __future__ import annotations

import os
from pathlib import Path

from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.spec import ProblemSpec

__all__ = ["PROBLEMS", "PEAKMEM_MODELS", "SEED", "problems", "pairs", "pair_id", "parse_pair"]

# Real data (the logistic-regression problem) comes from the shared data folder beside the repo, as in the tests.
_SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
if "SVIBENCH_DATA_DIR" not in os.environ and _SHARED.is_dir():
    os.environ["SVIBENCH_DATA_DIR"] = str(_SHARED)

SEED = 0

#: model name → its benchmark problem (small, fixed sizes).
PROBLEMS: dict[str, ProblemSpec] = {p.model: p for p in (
    ProblemSpec("gmm/bench", "gmm", "gmm-synthetic", {"components": 5}, {"n": 2000, "n_test": 500, "dim": 2}),
    ProblemSpec("linreg/bench", "linreg", "linreg-synthetic", {}, {"n": 500, "n_test": 200, "dim": 5}),
    ProblemSpec("logreg/australian", "logreg", "australian", {"delta": 1.0}, {}),
    ProblemSpec("bpfa/bench", "bpfa", "bpfa-synthetic",
                {"features": 20, "predictive_samples": 2, "init_rows": 200, "init_sweeps": 5},
                {"n": 600, "dim": 16, "features": 20}),
    ProblemSpec("gamma-factor/bench", "gamma-factor", "gamma-factor-synthetic", {"n_factors": 10, "eval_samples": 10},
                {"n": 500, "n_test": 100, "dim": 10, "factors": 10}),
    ProblemSpec("pmf/bench", "pmf", "pmf-synthetic", {"n_factors": 10, "eval_samples": 5},
                {"rows": 50, "cols": 100, "factors": 5}),
    ProblemSpec("gpc/usps-3v5", "gpc", "usps-3v5", {"log_lengthscale": 2.5, "log_sigma_f": 5.0}, {"n_per_class": 100}),
    ProblemSpec("lda/bench", "lda", "lda-synthetic", {"n_topics": 10, "eval_samples": 2},
                {"n_docs": 600, "n_test": 100, "vocab": 500, "n_topics": 10}),
)}

#: models whose problems also get a peak-memory benchmark (the large-data ones of the papers).
PEAKMEM_MODELS = ("bpfa", "gpc")

SEP = " @ "
#: The environment variable that brings installed plugins' algorithms and models into the suite.
PLUGINS_ENV = "SVIBENCH_BENCH_PLUGINS"


def _default_problem(model: str) -> ProblemSpec | None:
    """A registered model without an entry: the first dataset of a kind it accepts that it can be built on."""
    registry = get_registry()
    model_cls = registry.model(model)
    for name, (info, _) in sorted(registry.datasets.items()):
        if info.kind in model_cls.data_kinds:
            spec = ProblemSpec(f"{model}/{name}", model, name)
            try:
                build_model(spec, cache=False)
            except Exception:  # unavailable, missing file, data the model cannot take: try the next one
                continue
            return spec
    return None


def _included(source: str) -> bool:
    """Built-ins always; installed plugins (entry points) only when ``SVIBENCH_BENCH_PLUGINS=1`` asks for them, so a
    package someone installed beside svibench never changes the suite's names or timings unasked."""
    return source.startswith("built-in") or os.environ.get(PLUGINS_ENV) == "1"


def problems() -> dict[str, ProblemSpec]:
    """Benchmark problem of every registered model (models with no usable dataset are left out)."""
    out = {}
    for model in sorted(m for m, (_, source) in get_registry().models.items() if _included(source)):
        spec = PROBLEMS.get(model) or _default_problem(model)
        if spec is not None:
            out[model] = spec
    return out


def pair_id(algorithm: str, problem: ProblemSpec) -> str:
    return f"{algorithm}{SEP}{problem.name}"


def pairs(models: tuple[str, ...] | None = None) -> list[str]:
    """``"algorithm @ problem"`` for every compatible pair of the registry (optionally only some models)."""
    registry = get_registry()
    out = []
    for model, problem in problems().items():
        if models is not None and model not in models:
            continue
        model_cls = registry.model(model)
        for name, entry in sorted(registry.algorithms.items()):
            if _included(entry.source) and entry.incompatibility(model_cls) is None:
                out.append(pair_id(name, problem))
    return out


def parse_pair(pair: str) -> tuple[str, ProblemSpec]:
    algorithm, problem_name = pair.split(SEP)
    problem = next(p for p in problems().values() if p.name == problem_name)
    return algorithm, problem
