"""Compute a problem's reference posterior once, judge its diagnostics, store it, and reuse it afterwards.

:func:`make_reference` is what ``svibench reference`` calls for each problem: an existing, fresh reference is
reused; otherwise the model's exact posterior, or its sampler's chains (:mod:`.sampling`) judged against the
:class:`~.diagnostics.Floor`, give the arrays of :mod:`.moments`; a sampled reference that fails the floor is
stored only when forced, and is marked so.
"""
from __future__ import annotations

import datetime
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from svibench.model import Model
from svibench.spec import ProblemSpec

from .artifact import (FORMAT, Reference, ReferenceError, check_fresh, data_checksum, load_reference,
                       problem_identity, reference_id, reference_path, resolved_model_params)
from .capability import PredictsClasses, reference_kind
from .diagnostics import Floor, diagnose
from .moments import QUANTILES, batch_estimates, exact_arrays, sampled_arrays
from .sampling import SamplerSettings, sample_chains

__all__ = ["Made", "make_reference", "compute_reference", "source_commit"]

#: At most this many draws (thinned evenly) enter the posterior predictive.
PREDICTIVE_DRAWS = 2000


def source_commit() -> str:
    """The svibench commit, with ``-dirty`` when its tracked files outside ``references/`` have changes (writing
    references does not make the source dirty); "unknown" outside a git checkout."""
    root = Path(__file__).resolve().parents[2]
    try:
        head, dirty = (subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=5,
                                      check=True).stdout.strip()
                       for args in (["rev-parse", "HEAD"],
                                    ["status", "--porcelain", "--untracked-files=no", "--", ".", ":!references"]))
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("-dirty" if dirty else "")


def _identity(spec: ProblemSpec, model: Model) -> dict[str, Any]:
    return {"format": FORMAT, "reference_id": reference_id(spec), "problem": problem_identity(spec),
            "problem_name": spec.name, "problem_key": spec.key(),
            "model_params_resolved": resolved_model_params(type(model), spec.model_params),
            "data_sha256": data_checksum(model.data), "svibench_commit": source_commit(),
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "quantile_levels": list(QUANTILES)}


def _predictive(model: Model, draws: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The posterior predictive of the test labels, from draws thinned to about :data:`PREDICTIVE_DRAWS`."""
    if not isinstance(model, PredictsClasses) or not getattr(model, "has_test", False):
        return {}, {}
    step = max(1, draws.shape[0] * draws.shape[1] // PREDICTIVE_DRAWS)
    mean, mcse = batch_estimates(draws[:, ::step], lambda b: model.test_probabilities_of_draws(b))
    return {"predictive": mean}, {"predictive_max": float(np.max(mcse))}


def compute_reference(spec: ProblemSpec, model: Model, settings: SamplerSettings, floor: Floor,
                      force: bool = False) -> Reference:
    """A new reference of ``spec`` (``model`` bound to its data); a sampled one that fails ``floor`` raises
    :class:`ReferenceError` unless ``force``, which keeps it marked ``forced``."""
    meta = _identity(spec, model)
    kind = reference_kind(model)
    if kind == "exact":
        meta.update(method="exact", diagnostics={"passed": True, "forced": False, "failures": []}, mcse={})
        return Reference(exact_arrays(model.exact_latent_posterior()), meta)
    if kind is None:
        raise ReferenceError(f"model {spec.model!r} cannot give a reference posterior: it offers neither "
                             "exact_latent_posterior nor a Gibbs chain with chain_latent (svibench.reference.capability)")
    chains = sample_chains(model, settings)
    diagnostics = diagnose(chains.draws)
    failures = floor.failures(diagnostics)
    if failures and not force:
        raise ReferenceError(f"{spec.name}: the reference's diagnostics fail the floor ({'; '.join(failures)}); "
                             "not stored: sample longer (--draws, --warmup) or store it marked failed with --force")
    arrays, worst = sampled_arrays(chains.draws, diagnostics)
    predictive, predictive_mcse = _predictive(model, chains.draws)
    ess_rate = diagnostics.summary()["ess_bulk_min"] / chains.cpu_seconds
    meta.update(method=getattr(model, "sampler_name", f"{type(model).__name__}'s Gibbs sampler"),
                sampler={**settings.to_dict(), "inits": list(chains.inits),
                         "chain_seeds": f"numpy SeedSequence({settings.seed}).spawn({settings.chains})"},
                seconds={"cpu": chains.cpu_seconds, "wall": chains.wall_seconds},
                diagnostics={**diagnostics.summary(), "floor": floor.to_dict(), "passed": not failures,
                             "forced": bool(failures), "failures": failures, "ess_bulk_min_per_cpu_second": ess_rate},
                mcse={**worst, **predictive_mcse})
    return Reference({**arrays, **predictive}, meta)


@dataclass(frozen=True)
class Made:
    """What :func:`make_reference` did: the reference, its sidecar, and whether it was computed now."""

    reference: Reference
    path: Path
    computed: bool


def make_reference(spec: ProblemSpec, model: Model, settings: SamplerSettings, floor: Floor = Floor(),
                   force: bool = False, folder: Path | None = None) -> Made:
    """Reuse ``spec``'s fresh reference in ``folder``, or compute and store one (``force``: always compute, and
    store it even when its diagnostics fail the floor)."""
    path = reference_path(spec, folder)
    if path.exists() and not force:
        reference = load_reference(path)
        check_fresh(reference, spec, type(model), model.data)
        return Made(reference, path, False)
    reference = compute_reference(spec, model, settings, floor, force)
    return Made(reference, reference.save(path), True)
