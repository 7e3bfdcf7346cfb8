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

from svibench.evaluation_subset import whole_declarations, whole_name
from svibench.metrics import Metric
from svibench.model import Model
from svibench.registry import Registry
from svibench.spec import ProblemSpec

from .accuracy import ACCURACY_METRICS, accuracy, bernoulli_kl, psd_sqrt
from .artifact import Reference, check_fresh, load_reference, reference_path
from .capability import LabelSwitching, PredictsClasses, reference_kind

__all__ = ["Scorer", "scorer_for", "missing_note", "missing_notes"]

#: The accuracy metric a model's evaluation subset of test points estimates (:class:`~.capability.PredictsClasses`).
PREDICTIVE = "ref_predictive_kl"


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
    own ``component_accuracy`` when it declares ``component_metrics`` (:mod:`.capability`).  With
    ``subset_predictive``, the predictive KL is taken on the model's ``test_subset`` at every checkpoint and on every
    test point by :meth:`final` (``ref_predictive_kl_whole``, :mod:`svibench.evaluation_subset`)."""

    reference: Reference
    component_metrics: dict[str, Metric] = field(default_factory=dict)
    subset_predictive: bool = False

    @classmethod
    def of(cls, reference: Reference, model: Model, checkpoints: bool = True) -> "Scorer":
        """The scorer of ``model``'s runs: with its ``component_metrics`` when it is label-switching, and on its test
        subset when it scores one and ``checkpoints`` are scored (scored at the last only, it scores every point)."""
        components = dict(getattr(model, "component_metrics", {})) if isinstance(model, LabelSwitching) else {}
        subset = (checkpoints and reference.predictive is not None and isinstance(model, PredictsClasses)
                  and model.test_subset is not None)
        return cls(reference, components, subset)

    @cached_property
    def ref_root(self) -> np.ndarray | None:
        """The reference covariance's symmetric square root, for W₂ (once per run: an eigendecomposition of the
        full covariance cost about a third of a gpc checkpoint's scoring); None for a diagonal reference."""
        return psd_sqrt(self.reference.cov) if np.ndim(self.reference.cov) == 2 else None

    @property
    def metrics(self) -> dict[str, Metric]:
        names = [m for m in ACCURACY_METRICS if m != PREDICTIVE or self.reference.predictive is not None]
        whole = whole_declarations(ACCURACY_METRICS, [PREDICTIVE], "every test point") if self.subset_predictive else ()
        return {**{m: ACCURACY_METRICS[m] for m in names}, **{m.name: m for m in whole}, **self.component_metrics}

    def __call__(self, model: Model, posterior: Any) -> dict[str, float]:
        ref = self.reference
        q = model.latent_moments(posterior)
        if isinstance(model, LabelSwitching):
            q = model.align_to(q, ref.mean)
        p_q, p_ref = None, ref.predictive
        if ref.predictive is not None and isinstance(model, PredictsClasses):
            p_q = model.test_probabilities(q, whole=not self.subset_predictive)
            if self.subset_predictive:
                p_ref = ref.predictive[model.test_subset]
        out = accuracy(q.mean, q.cov, ref.mean, ref.cov, p_q, p_ref, self.ref_root)
        if self.component_metrics:
            out.update(model.component_accuracy(q, ref.mean))
        return out

    def final(self, model: Model, posterior: Any) -> dict[str, float]:
        """At the last checkpoint, with ``subset_predictive``: ``ref_predictive_kl_whole``, on every test point."""
        if not self.subset_predictive:
            return {}
        p_q = model.test_probabilities(model.latent_moments(posterior), whole=True)
        return {whole_name(PREDICTIVE): bernoulli_kl(self.reference.predictive, p_q)}


def scorer_for(spec: ProblemSpec, model: Model, checkpoints: bool = True) -> tuple[Scorer | None, str]:
    """The scorer of ``spec``'s run (None: no reference) and the note saved with the run: which reference
    scores it, or :func:`missing_note` ("" when the model cannot be compared with a reference).  ``checkpoints``:
    whether it scores every checkpoint (else the last only, on every test point)."""
    if reference_kind(model) is None:
        return None, ""
    path = reference_path(spec)
    if not path.exists():
        return None, missing_note(spec)
    reference = load_reference(path)
    check_fresh(reference, spec, type(model), model.data)
    state = "passed its diagnostics" if reference.passed else "FAILED its diagnostics (stored with --force)"
    return Scorer.of(reference, model, checkpoints), f"reference {path.name} ({reference.meta['method']}; {state})"
