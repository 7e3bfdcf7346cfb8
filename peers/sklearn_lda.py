"""scikit-learn's ``LatentDirichletAllocation`` on svibench's LDA: online VB (Hoffman, Blei & Bach 2010) or batch VB.

Hyperparameters under svibench's names (:class:`SklearnLDA`'s Parameters name the estimator's for each);
from the model, its α, η (``doc_topic_prior``, ``topic_word_prior``: the Dirichlet priors of θ_d and β_k)
and its K and D (``n_components``; ``total_samples``, the documents the online step scales by).

The defaults are scikit-learn's own (batches of 128, τ₀ = 10, κ = 0.7, 100 local iterations,
tolerance 10⁻³), so that ``sklearn-lda`` is the library as its users meet it.

One step:

* ``learning_method="online"``: one public ``partial_fit`` on a minibatch drawn from the rng passed to
  :meth:`init` exactly as svibench's SVI draws its own (``sample_minibatch``), with ``total_samples`` = the
  training documents: with the same seed both see the same minibatches (common random numbers);
* ``learning_method="batch"``: one variational EM sweep over the whole corpus through the estimator's private
  ``_em_step(X, total_samples, batch_update=True)``, the body of each iteration of ``fit``.  ``fit`` itself is
  not called: after its iterations it runs one more whole-corpus E-step and a bound, work no svibench step
  does, which the runner's clock would charge to scikit-learn.

Private scikit-learn API used (pinned by ``tests/peers/test_sklearn_peers.py``, which fails if it changes):
``_em_step`` (batch steps), ``_init_latent_vars`` (the fitted attributes ``partial_fit`` expects, before the start
is replaced) and ``_online_lda_fast._dirichlet_expectation_2d`` (exp E[log β] of that start, computed as the
estimator computes it).

Both start from λ drawn by the model's ``init_globals`` (Ga(100, 1/100), scikit-learn's own start) from the same
rng, as SVI does, and scikit-learn's draws (each document's random start γ_d) come from a generator spawned from
that rng, which leaves its stream to the minibatches.  The posterior is q(β_k) = Dir(λ_k) with λ =
``components_``, exactly the estimator's variational parameter (Hoffman et al. 2010, eq. 5), scored by the
model's own ELBO and held-out perplexity.

Conformance: every check applies.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from svibench.capabilities.conjugate import ConjugatePosterior, LocalApprox
from svibench.expfam import DirichletNatural
from svibench.models.lda import LDA
from svibench.numerics.minibatch import sample_minibatch

from . import Peer

__all__ = ["SklearnLDA"]

LEARNING_METHODS = ("online", "batch")


class SklearnLDA(Peer):
    """scikit-learn's ``LatentDirichletAllocation`` (online or batch VB) as an svibench algorithm; see the module.

    Parameters
    ----------
    learning_method : {"online", "batch"}
        A step is one ``partial_fit`` on a minibatch (online VB) or one EM sweep over the whole corpus (batch VB).
    batch_size : int ≥ 1
        Documents per online step (scikit-learn's ``batch_size``, online only).
    t0 : float ≥ 1
        τ₀ of the online step ρₜ = (τ₀ + t)^(−κ) (scikit-learn's ``learning_offset``, which needs τ₀ ≥ 1).
    kappa : float in (0.5, 1]
        κ of the online step ρₜ = (τ₀ + t)^(−κ) (scikit-learn's ``learning_decay``).
    inner_iterations : int ≥ 1
        Cap on each document's local coordinate ascent (scikit-learn's ``max_doc_update_iter``).
    inner_tol : float ≥ 0
        Stop a document's coordinate ascent when the mean change of γ_d is below this (``mean_change_tol``).
    """

    name = "sklearn-lda"
    label = "scikit-learn LDA"
    libraries = ("sklearn",)
    model = LDA
    fits = "scikit-learn's LatentDirichletAllocation fits LDA only"

    def __init__(self, *, learning_method: str = "online", batch_size: int = 128, t0: float = 10.0,
                 kappa: float = 0.7, inner_iterations: int = 100, inner_tol: float = 1e-3) -> None:
        self.learning_method = learning_method
        self.batch_size = batch_size
        self.t0 = t0
        self.kappa = kappa
        self.inner_iterations = inner_iterations
        self.inner_tol = inner_tol

    def check_params(self) -> None:
        if self.learning_method not in LEARNING_METHODS:
            raise ValueError(f"learning_method must be one of {', '.join(LEARNING_METHODS)}, got {self.learning_method!r}")
        if not 0.5 < self.kappa <= 1.0:
            raise ValueError(f"kappa must be in (0.5, 1] (the Robbins–Monro condition), got {self.kappa}")
        if not self.t0 >= 1.0:
            raise ValueError(f"t0 must be ≥ 1 (scikit-learn's learning_offset), got {self.t0}")
        if self.batch_size < 1 or self.inner_iterations < 1 or not self.inner_tol >= 0:
            raise ValueError("need batch_size ≥ 1, inner_iterations ≥ 1 and inner_tol ≥ 0")

    def estimator(self, model: LDA, random_state: Any) -> Any:
        """The unfitted ``LatentDirichletAllocation`` with this algorithm's settings on ``model`` (the mapping above)."""
        from sklearn.decomposition import LatentDirichletAllocation

        if not (model.alpha <= 1.0 and model.eta <= 1.0):
            raise ValueError(f"scikit-learn's LatentDirichletAllocation takes priors in (0, 1]; this lda has "
                             f"alpha = {model.alpha:g}, eta = {model.eta:g}: use sklearn-lda with smaller ones")
        return LatentDirichletAllocation(
            n_components=model.K, doc_topic_prior=model.alpha, topic_word_prior=model.eta,
            learning_method=self.learning_method, learning_decay=self.kappa, learning_offset=self.t0,
            batch_size=self.batch_size, max_doc_update_iter=self.inner_iterations, mean_change_tol=self.inner_tol,
            total_samples=model.n_train, evaluate_every=-1, n_jobs=1, random_state=random_state)

    def init(self, model: LDA, rng: np.random.Generator) -> None:
        """λ from the model's start (the rng's first draws, as SVI's); the estimator's own generator spawned from the rng."""
        from sklearn.decomposition._online_lda_fast import _dirichlet_expectation_2d

        self.check_model(model)
        self.model_, self.rng_ = model, rng
        lam = model.init_globals(rng)["topics"].concentration()
        self.est_ = self.estimator(model, np.random.RandomState(rng.spawn(1)[0].bit_generator))
        self.est_._init_latent_vars(model.V, dtype=np.float64)  # its attributes (and a start, replaced:)
        self.est_.components_ = lam
        self.est_.exp_dirichlet_component_ = np.exp(_dirichlet_expectation_2d(lam))

    def step(self) -> int:
        if self.learning_method == "batch":
            self.est_._em_step(self.model_.corpus.csr, total_samples=self.model_.n_train, batch_update=True)
            return self.model_.n_train
        batch = sample_minibatch(self.rng_, self.model_.n_train, self.batch_size)
        self.est_.partial_fit(self.model_.corpus.csr[batch])
        return len(batch)

    def posterior(self) -> ConjugatePosterior:
        """q(β_k) = Dir(λ_k), λ = ``components_``; the local approximation the estimator's E-step is (mean field)."""
        lam = DirichletNatural.from_concentration(self.est_.components_.copy())
        return ConjugatePosterior({"topics": lam}, LocalApprox("mf", inner_iterations=self.inner_iterations,
                                                               inner_tol=self.inner_tol))
