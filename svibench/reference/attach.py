"""A run's reference: found for its problem, checked fresh, and scored at every checkpoint.

The runner calls :func:`scorer_for` once per run, after building the model.  A model that cannot be compared
with a reference gets no scorer and no message; one whose problem has no stored reference gets none and a
one-line note naming the command that computes it (saved with the run); a stale or corrupt reference raises
(the run ends ``failed`` with that one line).  The scorer runs while the algorithm's clock is stopped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from svibench.metrics import Metric
from svibench.model import Model
from svibench.registry import Registry
from svibench.spec import ProblemSpec

from .accuracy import ACCURACY_METRICS, accuracy, psd_sqrt
from .artifact import Reference, check_fresh, load_reference, reference_path
from .capability import LabelSwitching, PredictsClasses, reference_kind

__all__ = ["Scorer", "scorer_for", "missing_note", "missing_notes"]


def missing_note(spec: ProblemSpec) -> str:
    """The one line said of a problem without a reference."""
    return (f"no reference posterior for {spec.name}: posterior-accuracy metrics skipped; compute one with "
            f"`svibench reference STUDY.toml --problem '{spec.name}'`")


def missing_notes(problems: list[ProblemSpec], registry: Registry) -> list[str]:
    """:func:`missing_note` of each problem whose model could be compared with a reference that is not stored
    (checked by name, without loading data: what ``svibench run`` says before its runs)."""
    offers = ("exact_latent_posterior", "chain_latent")
    return [missing_note(p) for p in problems
            if any(hasattr(registry.model(p.model), name) for name in offers) and not reference_path(p).exists()]


@dataclass(frozen=True)
class Scorer:
    """Scores a posterior against one reference (:func:`~.accuracy.accuracy`), and by a label-switching model's
    own ``component_accuracy`` when it declares ``component_metrics`` (:mod:`.capability`)."""

    reference: Reference
    component_metrics: dict[str, Metric] = field(default_factory=dict)

    @classmethod
    def of(cls, reference: Reference, model: Model) -> "Scorer":
        """The scorer of ``model``'s runs: with its ``component_metrics`` when it is label-switching."""
        return cls(reference, dict(getattr(model, "component_metrics", {})) if isinstance(model, LabelSwitching) else {})

    @cached_property
    def ref_root(self) -> np.ndarray | None:
        """The reference covariance's symmetric square root, for W₂ (once per run: an eigendecomposition of the
        full covariance cost about a third of a gpc checkpoint's scoring); None for a diagonal reference."""
        return psd_sqrt(self.reference.cov) if np.ndim(self.reference.cov) == 2 else None

    @property
    def metrics(self) -> dict[str, Metric]:
        names = [m for m in ACCURACY_METRICS if m != "ref_predictive_kl" or self.reference.predictive is not None]
        return {**{m: ACCURACY_METRICS[m] for m in names}, **self.component_metrics}

    def __call__(self, model: Model, posterior: Any) -> dict[str, float]:
        ref = self.reference
        q = model.latent_moments(posterior)
        if isinstance(model, LabelSwitching):
            q = model.align_to(q, ref.mean)
        p_q = model.test_probabilities(q) if ref.predictive is not None and isinstance(model, PredictsClasses) else None
        out = accuracy(q.mean, q.cov, ref.mean, ref.cov, p_q, ref.predictive, self.ref_root)
        if self.component_metrics:
            out.update(model.component_accuracy(q, ref.mean))
        return out


def scorer_for(spec: ProblemSpec, model: Model) -> tuple[Scorer | None, str]:
    """The scorer of ``spec``'s run (None: no reference) and the note saved with the run: which reference
    scores it, or :func:`missing_note` ("" when the model cannot be compared with a reference)."""
    if reference_kind(model) is None:
        return None, ""
    path = reference_path(spec)
    if not path.exists():
        return None, missing_note(spec)
    reference = load_reference(path)
    check_fresh(reference, spec, type(model), model.data)
    state = "passed its diagnostics" if reference.passed else "FAILED its diagnostics (stored with --force)"
    return Scorer.of(reference, model), f"reference {path.name} ({reference.meta['method']}; {state})"
