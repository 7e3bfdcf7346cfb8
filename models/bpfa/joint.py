"""BPFA's log joint density and its mean-field family, for black-box VI (capability 4).

The model of ``models.bpfa`` (Shah et al. 2015, eq. 5), x_ik = z_ik w_ik:

    log p = Σ_k log Beta(π_k | a/K, b(K−1)/K) + Σ_kd log N(φ_kd | 0, 1/D)
          + log Ga(γ_obs | c′, d′) + log Ga(γ_w | e′, f′)
          + Σ_ik [log Bern(z_ik | π_k) + log N(w_ik | 0, 1/γ_w)]
          + Σ_id m_id log N(y_id | Σ_k x_ik φ_kd, 1/γ_obs)         (observed entries only).

A flat draw lays the latents out as π (K), Φ (K·D, row-major), (γ_obs, γ_w),
Z (N·K), W (N·K).  :class:`BPFAFamily` is the fully factorised q over them —
Beta, Gaussian, Gamma, Bernoulli, Gaussian — i.e. the mean-field q of MF-SVI and
VMP (§3, eq. 8), here to be fitted by score-function BBVI (Ranganath et al. 2014);
z_ik is discrete, so there is no reparameterisation gradient.

Markov blankets (``log_joint_blocks``; the factors of p that contain the latent):
π_k: its prior + Σ_i log Bern(z_ik | π_k);  φ_kd: its prior + column d's likelihood;
γ_obs: its prior + the whole likelihood;  γ_w: its prior + Σ_ik log N(w_ik | 0, 1/γ_w);
z_ik, w_ik: their own prior term + row i's likelihood.

Only full-data evaluation (``batch=None``): every row has its own locals, and the
minibatch convention of the capability (data terms × N/|B|) would scale the
gradients of those locals as well.  Sizes: a gradient holds S × (2NK + KD + K + 2)
numbers, so BBVI on BPFA is for small problems (the conformance problem, a few
hundred rows), not the image studies.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.expfam import LOG_2PI, BetaNatural, GammaNatural, GaussianDiagNatural

from .local import FactorQ
from ..gamma_family import MeanFieldGamma
from ..gaussian_families import MeanFieldGaussian
from ..score_families import MeanFieldBernoulli, MeanFieldBeta, ProductFamily

__all__ = ["BPFAFamily", "log_joint", "log_joint_blocks"]


class BPFAFamily(ProductFamily):
    """The fully factorised q over BPFA's latents (see the module docstring), φ unconstrained.

    ``init_params`` starts the globals where the SVI family's ``"random"`` initialisation does
    (``BPFA.init_globals``), q(z_ik) at the prior mean of π_k and q(w_ik) at N(0, 1/E[γ_w]).
    """

    def __init__(self, model: Any) -> None:
        self.model = model
        (N, D), K = model.Y.shape, model.features
        self.N, self.K, self.D = N, K, D
        super().__init__({"pi": MeanFieldBeta(K), "phi": MeanFieldGaussian(K * D),
                          "gamma": MeanFieldGamma({"gamma_obs": (), "gamma_w": ()}),
                          "z": MeanFieldBernoulli(N * K), "w": MeanFieldGaussian(N * K)})

    def init_params(self, rng: np.random.Generator) -> np.ndarray:
        lam = self.model.init_globals(rng, "random")
        (a, b), (m, v) = lam["pi"].ab(), lam["phi"].mean_var()
        (so, ro), (sw, rw) = lam["gamma_obs"].shape_rate(), lam["gamma_w"].shape_rate()
        theta = np.broadcast_to(a / (a + b), (self.N, self.K))
        return np.concatenate([MeanFieldBeta.params(a, b), MeanFieldGaussian.params(m, np.sqrt(v)),
                               MeanFieldGamma.params([so, sw], [ro, rw]), MeanFieldBernoulli.params(theta),
                               MeanFieldGaussian.params(np.zeros((self.N, self.K)), np.full((self.N, self.K), np.sqrt(rw / sw)))])

    def unpack(self, z: np.ndarray) -> dict[str, np.ndarray]:
        """(S, dim) draws as arrays: pi (S, K), phi (S, K, D), gamma_obs, gamma_w (S,), Z, W (S, N, K)."""
        part = self.split(z)
        S = len(z)
        return {"pi": part["pi"], "phi": part["phi"].reshape(S, self.K, self.D),
                "gamma_obs": part["gamma"][:, 0], "gamma_w": part["gamma"][:, 1],
                "Z": part["z"].reshape(S, self.N, self.K), "W": part["w"].reshape(S, self.N, self.K)}

    def posterior(self, phi: np.ndarray) -> ConjugatePosterior:
        """λ of the globals (Beta, diagonal Gaussian, Gamma natural parameters) with ``local_q``, the
        fitted mean-field q of every training row's locals (a ``FactorQ`` of kind "mf"), which
        evaluation uses as it is instead of recomputing the locals from E_q[β]."""
        p = self.split_params(phi)
        a, b = self.parts["pi"].ab(p["pi"])
        m, s = self.parts["phi"].mean_sd(p["phi"])
        shape, rate = self.parts["gamma"].shape_rate(p["gamma"])
        mw, sw = self.parts["w"].mean_sd(p["w"])
        lam = {"pi": BetaNatural.from_ab(a, b),
               "phi": GaussianDiagNatural.from_mean_var(m.reshape(self.K, self.D), (s**2).reshape(self.K, self.D)),
               "gamma_obs": GammaNatural.from_shape_rate(shape[0], rate[0]),
               "gamma_w": GammaNatural.from_shape_rate(shape[1], rate[1])}
        grid = (self.N, self.K)
        theta = self.parts["z"].posterior(p["z"]).reshape(grid)
        local_q = FactorQ("mf", theta, mw.reshape(grid), (sw**2).reshape(grid), shape[1] / rate[1])
        return ConjugatePosterior(lam, local_q=local_q)


def _terms(model: Any, family: BPFAFamily, z: np.ndarray, batch: np.ndarray | None) -> dict[str, np.ndarray]:
    """Every factor of log p at the draws, kept apart for the Markov blankets."""
    if batch is not None:
        raise ValueError("bpfa's log joint is evaluated on all rows only (each row has its own latents, whose "
                         "gradients a minibatch's N/|B| scaling would also scale): run BBVI with batch_size = None")
    v = family.unpack(z)
    prior = model.prior_natural()
    log_pi, log_1m_pi = np.log(v["pi"]), np.log1p(-v["pi"])
    go, gw = v["gamma_obs"], v["gamma_w"]
    resid = model.M * (model.Y - (v["Z"] * v["W"]) @ v["phi"])                       # (S, N, D)
    entry = model.M * (0.5 * (np.log(go) - LOG_2PI))[:, None, None] - 0.5 * go[:, None, None] * resid**2
    return {
        "entry": entry,                                                                   # (S, N, D)
        **{name: prior[name].log_pdf(v[name]) for name in ("pi", "phi", "gamma_obs", "gamma_w")},
        "z": np.where(v["Z"] > 0, log_pi[:, None, :], log_1m_pi[:, None, :]),           # (S, N, K)
        "w": (0.5 * (np.log(gw) - LOG_2PI))[:, None, None] - 0.5 * gw[:, None, None] * v["W"]**2,
    }


def log_joint(model: Any, family: BPFAFamily, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
    """log p(y, π, Φ, γ_obs, γ_w, Z, W) at each draw, shape (S,)."""
    t = _terms(model, family, z, batch)
    S = len(z)
    return sum(t[name].reshape(S, -1).sum(1) for name in t)


def log_joint_blocks(model: Any, family: BPFAFamily, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
    """The Markov-blanket terms of every latent (module docstring), shape (S, n_blocks) in draw order."""
    t = _terms(model, family, z, batch)
    S = len(z)
    row = t["entry"].sum(2)[:, :, None]                                                  # (S, N, 1)
    blocks = [t["pi"] + t["z"].sum(1),
              t["phi"] + t["entry"].sum(1)[:, None, :],
              (t["gamma_obs"] + t["entry"].sum((1, 2)))[:, None],
              (t["gamma_w"] + t["w"].sum((1, 2)))[:, None],
              t["z"] + row,
              t["w"] + row]
    return np.concatenate([b.reshape(S, -1) for b in blocks], axis=1)
