"""The SVI family on conditionally conjugate models: SVI, its structured variants, batch VMP.

One composition, not six copies: :class:`SVI` is parameterised by the local
approximation (``local``: mean-field, Titsias spike-and-slab, Gibbs) and by the
view of the globals the locals see (``view``: their expectations under q(β),
or one sample β ~ q(β)).  The six cells of that grid are registered as presets
under the names used by Shah, Knowles & Ghahramani (2015):

============  ============  ==============
local \\ view  expected      sampled
============  ============  ==============
mf            MF-SVI        MF-SSVI
titsias       Titsias-SVI   Titsias-SSVI
gibbs         Mimno-SVI     Gibbs-SSVI
============  ============  ==============

A seventh preset, ``titsias-printed-ssvi``, fits the Titsias q to the local
objective as the paper's appendix prints it (not a bound;
``models.bpfa.local.titsias_printed``), to reproduce its Table 1 row.

Both hand evaluation a :class:`svibench.capabilities.ConjugatePosterior`: λ, the
local approximation and the view.

References
----------
Hoffman, Blei, Wang & Paisley (2013), "Stochastic Variational Inference", JMLR, Alg. 1.
Hoffman & Blei (2015), "Structured Stochastic Variational Inference", AISTATS (SSVI-A).
Mimno, Hoffman & Blei (2012), "Sparse stochastic inference for LDA", ICML.
Shah, Knowles & Ghahramani (2015), "An Empirical Study of Stochastic Variational
Algorithms for the Beta Bernoulli Process", ICML, §3 and Alg. 1.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from svibench.algorithm import Algorithm, Preset, resolve_init_method
from svibench.capabilities import ConditionallyConjugate, LocalApprox, natural_step
from svibench.capabilities.conjugate import LOCAL_KINDS, VIEWS, ConjugatePosterior, ensure_finite
from svibench.capabilities.sparse import offers_sparse_step
from svibench.numerics.minibatch import sample_minibatch
from svibench.numerics.schedules import make_schedule

__all__ = ["SVI", "VMP"]


def _local_incompatibility(model_cls: type, kind: str, start: str) -> str | None:
    offered = getattr(model_cls, "local_kinds", ())
    if kind not in offered:
        return f"{model_cls.name} offers local approximations {', '.join(offered)}, not {kind!r}"
    starts = getattr(model_cls, "local_starts", ("full",))
    if kind in LOCAL_KINDS and LOCAL_KINDS[kind].started and start not in starts:
        return f"{model_cls.name} starts its {kind} locals {' or '.join(map(repr, starts))}, not local_init={start!r}"
    return None


class _ConjugateFamily(Algorithm):
    """What SVI and VMP share: the capability, the local-approximation check and the start."""

    requires = (ConditionallyConjugate,)

    @classmethod
    def incompatibility(cls, model_cls: type, params: dict[str, Any]) -> str | None:
        return super().incompatibility(model_cls, params) or _local_incompatibility(
            model_cls, params.get("local", "mf"), params.get("local_init", "full"))

    def _start(self, approx: LocalApprox) -> None:
        """Keep the local approximation; η from the prior; λ from the model's init method (draws from ``rng_``)."""
        self.check_model(self.model_)
        self.approx_ = approx
        self.eta_ = self.model_.prior_natural()
        self.lam_ = self.model_.init_globals(self.rng_, resolve_init_method(self.model_, self.init_method))
        self.t_ = 0


class SVI(_ConjugateFamily):
    """Stochastic variational inference with a choice of local approximation and global view.

    Each iteration draws a minibatch B (without replacement), computes the
    locals' expected sufficient statistics given the globals' ``view``, and
    takes the natural-gradient step λ ← (1 − ρₜ)λ + ρₜ(η + N/|B| Σ_{i∈B} η̂ᵢ).

    Where the model offers it (:class:`svibench.capabilities.sparse.SparseGlobalStep`; LDA with
    ``local="gibbs"``, ``view="expected"``: Mimno-SVI), the step is Mimno, Hoffman & Blei (2012)'s
    sparse one: λ kept lazily as λ = s·μ + c, the decay in the scalar s, the prior's share in the
    scalar c, and only the entries the minibatch's sampled statistics touch updated; the locals read
    λ only at the minibatch's columns.  A step then costs the minibatch, not the size of λ; the random
    draws are the dense step's, in the same order, so the trajectory is the same up to rounding, and
    ``posterior()`` forms the dense λ (at checkpoints, off the clock).

    Parameters
    ----------
    batch_size : int
        |B| (capped at N).
    kappa, t0 : float
        Robbins–Monro schedule ρₜ = (t + t₀)^(−κ), unless ``rho`` is given.
    rho : float, optional
        Constant step size instead (ρ = 1 with a full batch is batch VMP).
    local : str
        Local approximation, a key of :data:`svibench.capabilities.conjugate.LOCAL_KINDS`
        (see :class:`svibench.capabilities.LocalApprox`).
    view : {"expected", "sampled"}
        Locals see E_q[β] (SVI, Mimno) or one draw β ~ q(β) per iteration (SSVI).
    burnin, samples : int
        Gibbs sweeps discarded and kept (``local="gibbs"``).
    inner_iterations, inner_tol : int, float
        Cap on local coordinate-ascent sweeps (``local`` other than gibbs), and the
        per-row stopping tolerance on the mean change of the local parameters
        (:class:`svibench.capabilities.LocalApprox`).
    local_init : str
        Where the locals' coordinate ascent starts, every iteration
        (``LocalApprox.init``; BPFA: ``"full"`` or ``"prior"``,
        ``models.bpfa.local.mean_field``).  Only ``local`` in mf, titsias-printed reads it.
    init_method : str
        The model's initialisation method ("default": its first).
    sparse : bool
        Take the sparse global step of Mimno, Hoffman & Blei (2012) where the model offers it (LDA's Mimno-SVI);
        False: always the dense step (the same trajectory up to rounding).
    """

    name = "svi"
    label = "SVI"
    presets = {
        "mf-svi": Preset("MF-SVI", {"local": "mf", "view": "expected"}),
        "mf-ssvi": Preset("MF-SSVI", {"local": "mf", "view": "sampled"}),
        "titsias-svi": Preset("Titsias-SVI", {"local": "titsias", "view": "expected"}),
        "titsias-ssvi": Preset("Titsias-SSVI", {"local": "titsias", "view": "sampled"}),
        "titsias-printed-ssvi": Preset("Titsias-SSVI (printed objective)",
                                       {"local": "titsias-printed", "view": "sampled"}),
        "mimno-svi": Preset("Mimno-SVI", {"local": "gibbs", "view": "expected"}),
        "gibbs-ssvi": Preset("Gibbs-SSVI", {"local": "gibbs", "view": "sampled"}),
    }

    def __init__(self, *, batch_size: int = 100, kappa: float = 0.75, t0: float = 1.0, rho: float | None = None,
                 local: str = "mf", view: str = "expected", burnin: int = 3, samples: int = 3,
                 inner_iterations: int = 20, inner_tol: float = 1e-3, local_init: str = "full",
                 init_method: str = "default", sparse: bool = True) -> None:
        self.batch_size = batch_size
        self.kappa = kappa
        self.t0 = t0
        self.rho = rho
        self.local = local
        self.view = view
        self.burnin = burnin
        self.samples = samples
        self.inner_iterations = inner_iterations
        self.inner_tol = inner_tol
        self.local_init = local_init
        self.init_method = init_method
        self.sparse = sparse

    def check_params(self) -> None:
        if self.local not in LOCAL_KINDS:
            raise ValueError(f"local must be one of {', '.join(LOCAL_KINDS)}, got {self.local!r}")
        if self.view not in VIEWS:
            raise ValueError(f"view must be one of {', '.join(VIEWS)}, got {self.view!r}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1, got {self.batch_size}")
        if self.burnin < 0 or self.samples < 1 or self.inner_iterations < 1 or not self.inner_tol >= 0:
            raise ValueError("need burnin ≥ 0, samples ≥ 1, inner_iterations ≥ 1 and inner_tol ≥ 0")
        make_schedule(rho=self.rho, t0=self.t0, kappa=self.kappa)

    def init(self, model: Any, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self.schedule_ = make_schedule(rho=self.rho, t0=self.t0, kappa=self.kappa)
        self._start(LocalApprox(self.local, self.burnin, self.samples, self.inner_iterations, self.inner_tol,
                                self.local_init))
        self.lazy_ = None
        if self.sparse and offers_sparse_step(model, self.local, self.view):
            self.lazy_, self.lam_ = model.lazy_globals(self.lam_), None

    def step(self) -> int:
        model, rng = self.model_, self.rng_
        n = model.n_train
        batch = sample_minibatch(rng, n, self.batch_size)
        if self.lazy_ is not None:
            return self._sparse_step(batch)
        view = model.expected_view(self.lam_) if self.view == "expected" else model.sampled_view(self.lam_, rng)
        stats = model.local_statistics(view, batch, self.approx_, rng)
        self.t_ += 1
        self.lam_ = natural_step(self.lam_, self.eta_, stats, self.schedule_(self.t_), n / len(batch))
        ensure_finite(self.lam_, self.t_)
        return len(batch)

    def _sparse_step(self, batch: np.ndarray) -> int:
        """The step on the lazy λ (Mimno et al. 2012, §3): the same draws as the dense step, O(minibatch) work."""
        stats = self.model_.sparse_statistics(self.lazy_, batch, self.approx_, self.rng_)
        self.t_ += 1
        self.lazy_.step(stats, self.schedule_(self.t_), self.model_.n_train / len(batch))
        self.lazy_.ensure_finite(stats, self.t_)
        return len(batch)

    def posterior(self) -> ConjugatePosterior:
        lam = self.lam_ if self.lazy_ is None else self.model_.dense_globals(self.lazy_)
        return ConjugatePosterior(lam, self.approx_, self.view)


class VMP(_ConjugateFamily):
    """Batch variational message passing (coordinate ascent VI) on a conditionally conjugate model.

    Each iteration: locals given E_q[β] over the whole data set, then every
    global set to its optimum λ = η + Σᵢ η̂ᵢ (Winn & Bishop 2005; Hoffman et al.
    2013, eq. 14).  With exact local updates (the mixture) the ELBO never
    decreases; with iterative ones (BPFA's coordinate ascent, restarted every
    iteration and stopped at ``inner_tol``) only up to that tolerance.  On the
    Pólya-Gamma-augmented logistic models (logreg, gpc) it is the EM of the
    Jaakkola–Jordan bound (``models.polya_gamma``).

    Parameters
    ----------
    inner_iterations, inner_tol, local_init, init_method
        As in :class:`SVI`.
    """

    name = "vmp"
    label = "VMP"

    def __init__(self, *, inner_iterations: int = 20, inner_tol: float = 1e-3, local_init: str = "full",
                 init_method: str = "default") -> None:
        self.inner_iterations = inner_iterations
        self.inner_tol = inner_tol
        self.local_init = local_init
        self.init_method = init_method

    def init(self, model: ConditionallyConjugate, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self._start(LocalApprox("mf", inner_iterations=self.inner_iterations, inner_tol=self.inner_tol,
                                init=self.local_init))
        self.everyone_ = np.arange(model.n_train)

    def step(self) -> int:
        stats = self.model_.local_statistics(self.model_.expected_view(self.lam_), self.everyone_, self.approx_, self.rng_)
        self.lam_ = {name: self.eta_[name] + stats[name] for name in self.eta_}
        self.t_ += 1
        ensure_finite(self.lam_, self.t_)
        return self.model_.n_train

    def posterior(self) -> ConjugatePosterior:
        return ConjugatePosterior(self.lam_, self.approx_, "expected")
