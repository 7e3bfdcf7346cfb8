"""scikit-learn's ``BayesianGaussianMixture`` (diagonal, Dirichlet weights) on svibench's Gaussian mixture.

The variational Bayesian mixture of Bishop (2006, §10.2) as scikit-learn implements it, with
``covariance_type="diag"`` and ``weight_concentration_prior_type="dirichlet_distribution"``.

The prior, mapped exactly.  svibench's gmm has π ~ Dir(α₀ 1_K) and, per component k and dimension d,
τ_kd ~ Gamma(a₀, rate b₀), μ_kd | τ_kd ~ N(m₀, 1/(κ₀ τ_kd)).  scikit-learn's diagonal "Wishart" is a Gamma per
dimension with shape ν/2 and rate ``covariance_prior``/2 (its M-step, ``_estimate_wishart_diag``:
ν_k = ν₀ + N_k, ``covariances_`` = (c₀ + N_k S_k + N_k κ₀/κ_k (x̄_k − m₀)²)/ν_k, i.e. 2b_k/ν_k), and its
mean given the precision is N(m, (β τ)⁻¹).  Hence

=====================  ================================  =====================================
svibench               scikit-learn                      fitted state → svibench's q
=====================  ================================  =====================================
α₀                     ``weight_concentration_prior``    α_k = ``weight_concentration_``
m₀                     ``mean_prior`` = m₀ 1_D            m_kd = ``means_``
κ₀                     ``mean_precision_prior``          κ_kd = ``mean_precision_``
a₀                     ``degrees_of_freedom_prior`` = 2a₀  a_kd = ``degrees_of_freedom_``/2
b₀                     ``covariance_prior`` = 2b₀ 1_D     b_kd = ``covariances_`` × ν_k/2
=====================  ================================  =====================================

with ``reg_covar = 0`` (svibench's model adds nothing to the covariances).  scikit-learn requires
ν₀ = 2a₀ > D − 1; a gmm with a smaller a₀ is refused at ``init``, in one line.

One known difference, not a mapping error.  scikit-learn's diagonal E-step scores a component with the *full*
Wishart's E[log |Λ|] = Σ_{i<D} ψ((ν − i)/2) + D log 2 − Σ_d log(ν c_d) (c = ``covariances_``) instead of the product
of Gammas' Σ_d E[log τ_d] = D ψ(ν/2) + D log 2 − Σ_d log(ν c_d): its log-responsibilities carry an extra
½ Σ_{i=1}^{D−1} [ψ((ν_k − i)/2) − ψ(ν_k/2)] ≈ −D(D − 1)/(4ν_k) per component, negligible for components holding
many points.  In one dimension one step is therefore exactly one sweep of svibench's VMP (Bishop's batch VB); in D
dimensions the same up to that term (both pinned by ``tests/peers/test_sklearn_peers.py``).

One step = one variational EM sweep: the estimator's private ``_e_step`` then ``_m_step`` on the whole training
set (Bishop 2006, §10.2.1).  Not ``fit(warm_start=True, max_iter=1)``: ``fit`` also computes the lower bound
every iteration and ends with a further whole-data E-step (for consistent labels), work the runner's clock would
charge to scikit-learn.  The start is svibench's (the model's ``init_globals`` from the rng passed to
:meth:`init`, as VMP's), written into the estimator with its ``_set_parameters`` (the private method ``fit``
uses to restore its best initialisation); the priors' fitted attributes come from its ``_check_parameters``.
The private API is pinned by the tests.

Conformance: every check applies.  The steps are deterministic given the start, so the rng is drawn from only
at :meth:`init` (check_seed_matters still holds: different seeds, different starts).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.expfam import DirichletNatural
from svibench.expfam.normal_gamma import NormalGammaNatural
from svibench.models.gmm import GaussianMixture

from . import Peer

__all__ = ["SklearnBGMM", "sklearn_prior"]


def sklearn_prior(model: GaussianMixture) -> dict[str, Any]:
    """``BayesianGaussianMixture``'s prior arguments equal to ``model``'s prior (the table above)."""
    prior = model.prior_natural()
    m0, kappa0, a0, b0 = np.broadcast_arrays(*prior["theta"].params())  # (K, D), equal across k
    return {"weight_concentration_prior": float(prior["pi"].concentration()[0]), "mean_prior": m0[0].copy(),
            "mean_precision_prior": float(kappa0[0, 0]), "degrees_of_freedom_prior": 2.0 * float(a0[0, 0]),
            "covariance_prior": 2.0 * b0[0]}


def to_sklearn(lam: dict[str, Any]) -> tuple[np.ndarray, ...]:
    """svibench's λ → ``BayesianGaussianMixture._get_parameters()``'s tuple (κ and a must be equal across d)."""
    m, kappa, a, b = np.broadcast_arrays(*lam["theta"].params())
    if not (np.all(kappa == kappa[:, :1]) and np.all(a == a[:, :1])):
        raise ValueError("scikit-learn's diagonal mixture has one mean precision and one ν per component, not per dimension")
    dof = 2.0 * a[:, 0]
    covariances = b / a
    return lam["pi"].concentration(), kappa[:, 0].copy(), m.copy(), dof, covariances, 1.0 / np.sqrt(covariances)


def from_sklearn(params: tuple[np.ndarray, ...]) -> dict[str, Any]:
    """``_get_parameters()``'s tuple → svibench's λ (the table above)."""
    weight_concentration, mean_precision, means, dof, covariances, _ = params
    return {"pi": DirichletNatural.from_concentration(np.array(weight_concentration, dtype=float)),
            "theta": NormalGammaNatural.from_params(means, mean_precision[:, None], dof[:, None] / 2.0,
                                                    covariances * dof[:, None] / 2.0)}


class SklearnBGMM(Peer):
    """scikit-learn's ``BayesianGaussianMixture`` (diag, Dirichlet weights), one EM sweep per step; see the module."""

    name = "sklearn-bgmm"
    label = "scikit-learn BGMM"
    libraries = ("sklearn",)
    model = GaussianMixture
    fits = "scikit-learn's BayesianGaussianMixture fits the Gaussian mixture gmm only"

    def __init__(self) -> None:
        pass

    def estimator(self, model: GaussianMixture) -> Any:
        """The estimator with ``model``'s prior, its prior attributes set (``_check_parameters``)."""
        from sklearn.mixture import BayesianGaussianMixture

        prior = sklearn_prior(model)
        D = model.X.shape[1]
        if not prior["degrees_of_freedom_prior"] > D - 1:
            raise ValueError(f"scikit-learn's diagonal mixture needs 2 a0 > D - 1 = {D - 1}; this gmm has "
                             f"a0 = {prior['degrees_of_freedom_prior'] / 2:g}: give the gmm a0 > {(D - 1) / 2:g}")
        est = BayesianGaussianMixture(n_components=model.components, covariance_type="diag",
                                      weight_concentration_prior_type="dirichlet_distribution", reg_covar=0.0, **prior)
        est._check_parameters(model.X)
        return est

    def init(self, model: GaussianMixture, rng: np.random.Generator) -> None:
        """svibench's start (the model's ``init_globals`` from ``rng``, as VMP's), written into the estimator."""
        self.check_model(model)
        self.model_ = model
        self.est_ = self.estimator(model)
        self.est_._set_parameters(to_sklearn(model.init_globals(rng)))

    def step(self) -> int:
        """One variational EM sweep over the training set (Bishop 2006, eqs. 10.46–10.63)."""
        _, log_resp = self.est_._e_step(self.model_.X)
        self.est_._m_step(self.model_.X, log_resp)
        return self.model_.n_train

    def posterior(self) -> ConjugatePosterior:
        return ConjugatePosterior(from_sklearn(self.est_._get_parameters()))
