"""Knowles' gamma SGVB: reparameterised ELBO gradients of a softplus-Gamma family, stepped by Adadelta.

The baseline of Khan & Lin (2017, §7, Table 4) on the gamma factor model.
Each iteration draws ``n_samples`` (Knowles: one) reparameterised samples of
q, forms ĝ = (1/S) Σ_s (∂z/∂φ)ᵀ ∇_z log p(y, z_s) + ∇_φ H[q] (analytic
entropy), and takes an Adadelta step (:class:`svibench.numerics.optim.Adadelta`) on the softplus
parameters φ:

    G ← ρ ĝ² + (1 − ρ) G,
    Δ = ĝ √(X + ε) / √(G + ε),
    φ ← φ + w₀ Δ,
    X ← ρ Δ² + (1 − ρ) X,

with ρ = 0.9 weighting the *new* term and ε = 1e-4, as in Knowles' code
(davidaknowles/gamma_sgvb, gammaSGVB.m and gammaSGVBsettings.m, setting 5);
w₀ is the "initial step size" of the paper's Table 2 (10).  Knowles' own
draws use an approximate inverse CDF; here they are the exact inverse-CDF
draws of the model's family (the same as CVI-MF's).

References
----------
D. A. Knowles, "Stochastic gradient variational Bayes for gamma approximating
distributions", arXiv:1509.01631, 2015.  M. D. Zeiler, "ADADELTA", 2012, Alg. 1.
"""
from __future__ import annotations

from typing import Any, ClassVar, Generic

import numpy as np

from svibench.algorithm import Algorithm, Diverged
from svibench.capabilities.log_joint import LogJointGradient, Q
from svibench.numerics.optim import Adadelta

from .bbvi import reparam_gradient

__all__ = ["GammaSGVB"]


class GammaSGVB(Algorithm, Generic[Q]):
    """Stochastic-gradient VB with reparameterised Gamma factors and Adadelta (Knowles 2015).

    Parameters
    ----------
    step_size : float
        w₀, the multiplier of the Adadelta step (paper, Table 2: 10).
    decay : float
        ρ, the weight of the newest squared gradient/step (Knowles: 0.9).
    eps : float
        ε of Adadelta (Knowles: 1e-4).
    n_samples : int
        Draws per gradient (Knowles: 1).
    """

    name = "gamma-sgvb"
    label = "Knowles (gamma SGVB)"
    requires: ClassVar[tuple[type, ...]] = (LogJointGradient,)

    def __init__(self, *, step_size: float = 10.0, decay: float = 0.9, eps: float = 1e-4, n_samples: int = 1) -> None:
        self.step_size = step_size
        self.decay = decay
        self.eps = eps
        self.n_samples = n_samples

    def check_params(self) -> None:
        if self.step_size <= 0 or self.eps <= 0 or not 0.0 < self.decay <= 1.0 or self.n_samples < 1:
            raise ValueError("gamma-sgvb: need step_size > 0, eps > 0, 0 < decay ≤ 1 and n_samples ≥ 1")

    def init(self, model: Any, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self.q_ = model.variational_family(model.family_kinds[0])
        self.phi_ = self.q_.init_params(rng)
        self.optimizer_ = Adadelta(self.step_size, rho=self.decay, eps=self.eps)
        self.state_ = self.optimizer_.init(self.phi_)

    def step(self) -> int:
        eps = self.q_.draw_noise(self.rng_, self.n_samples)
        g = reparam_gradient(self.model_, self.q_, self.phi_, eps, None)
        delta, self.state_ = self.optimizer_.update(g, self.state_)
        self.phi_ = self.phi_ + delta
        if not np.all(np.isfinite(self.phi_)):
            raise Diverged("gamma-sgvb: non-finite variational parameters")
        return self.model_.n_train

    def posterior(self) -> Q:
        """What the model's family hands out (its type ``Q``; the Gamma families: ``Blocks``)."""
        return self.q_.posterior(self.phi_)
