"""What a model offers so that its runs can be compared with a reference posterior.

Every such model maps whatever posterior an algorithm hands it to the Gaussian moments of its latent vector
(:class:`Comparable`), and gives its reference one of two ways:

* exactly (:class:`ExactReference`): a conjugate model's closed-form posterior (``linreg``);
* by a long run of an exact sampler (:class:`SampledReference`): a
  :class:`~svibench.capabilities.ConditionalSampler` whose chain state yields the latent vector
  (``logreg`` and ``gpc``: the Pólya-Gamma Gibbs sampler of ``models.polya_gamma``; ``gmm``, ``lda`` and
  ``bpfa`` below).

A model that also predicts test labels (:class:`PredictsClasses`) gets the predictive distance.

Label-switching models (the Gaussian mixture ``gmm``, ``models.gmm_chain``; LDA, ``models.lda.alignment``)
define ``align_draws(draws) -> draws`` (draws (S, D), every chain's draws stacked, e.g. each draw's components
permuted to best match one pivot, as in Stephens 2000), which
:func:`svibench.reference.sampling.sample_chains` applies to all chains together before any moment is taken, and
``align_to(q, ref_mean) -> q`` (:class:`LabelSwitching`), which the run's scorer (:mod:`.attach`) applies to q's
moments to put its components in the reference's order.  Such a model may also declare ``component_metrics`` (a
:func:`~svibench.metrics.metric_table` of kind "accuracy") and ``component_accuracy(q, ref_mean) -> dict`` (q
already relabelled), which the scorer adds to the run's accuracy metrics: LDA's ``ref_topics_off`` counts q's
topics in another mode (merged, split or dead), which dominate the RMS standardised mean error when there are any.

Where matching labels is unsound, the compared latent is one that no relabelling changes, and the model is not
:class:`LabelSwitching`: BPFA (``models.bpfa.reference``) compares the noise-free signal (zᵢ ∘ wᵢ)Φ of a fixed
set of rows, unchanged by permuting its exchangeable features, flipping their signs or rescaling them, because
many of its K features are off or shared by a few rows and split and merge between modes, so a feature of q
often has no partner in the reference to be matched to.

A large latent (LDA's topic summaries) may give ``latent_moments``' ``cov`` as a vector of variances: the
reference then stores only the diagonal (:data:`svibench.reference.moments.FULL_COV_MAX`) and the metrics
compare the diagonal Gaussians.  So does a q whose moments are Monte Carlo estimates (BPFA's signal, 640
coordinates from a thousand draws), whose full covariance would be mostly noise; its reference still stores the
full covariance.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from svibench.capabilities import ConditionalSampler
from svibench.capabilities.latent_gaussian import GaussianPosterior

__all__ = ["Comparable", "ExactReference", "SampledReference", "LabelSwitching", "PredictsClasses", "reference_kind"]


@runtime_checkable
class Comparable(Protocol):
    def latent_moments(self, posterior: Any) -> GaussianPosterior:
        """Mean and covariance of the latent vector under an algorithm's posterior (any type ``evaluate`` takes)."""


@runtime_checkable
class ExactReference(Comparable, Protocol):
    def exact_latent_posterior(self) -> GaussianPosterior:
        """The exact posterior's mean and covariance."""


@runtime_checkable
class SampledReference(Comparable, ConditionalSampler, Protocol):
    def chain_latent(self, state: Any) -> np.ndarray:
        """The latent vector (D,) at a state of the chain (a copy)."""


@runtime_checkable
class LabelSwitching(Protocol):
    def align_draws(self, draws: np.ndarray) -> np.ndarray:
        """Draws (S, D) of the latent, each relabelled to one common order."""

    def align_to(self, q: GaussianPosterior, ref_mean: np.ndarray) -> GaussianPosterior:
        """q's mean and covariance with its labels permuted to best match the reference's mean."""


@runtime_checkable
class PredictsClasses(Protocol):
    #: The test points a checkpoint scores, as indices (None: every one): the reference's predictive is compared
    #: on them at the checkpoints, and on every one at the last (:mod:`svibench.evaluation_subset`).
    test_subset: np.ndarray | None

    def test_probabilities(self, q: GaussianPosterior, whole: bool = False) -> np.ndarray | None:
        """p(y* = 1) under a Gaussian q of the test points ``test_subset`` (of every one if ``whole``; None: no
        test set)."""

    def test_probabilities_of_draws(self, draws: np.ndarray) -> np.ndarray | None:
        """The posterior predictive p(y* = 1) of every test point, averaged over draws (S, D) of the latent."""


def reference_kind(model: Any) -> str | None:
    """"exact", "sampled", or None when the model cannot be compared with a reference."""
    if isinstance(model, ExactReference):
        return "exact"
    if isinstance(model, SampledReference):
        return "sampled"
    return None
