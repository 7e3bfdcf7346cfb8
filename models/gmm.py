"""Bayesian Gaussian mixture with diagonal Normal–Gamma components.

π ~ Dir(α₀ 1_K); for each component k and dimension d, (μ_kd, τ_kd) ~ NormalGamma(m₀, κ₀, a₀, b₀);
zᵢ ~ Cat(π); x_id | zᵢ = k ~ N(μ_kd, 1/τ_kd).  Globals π and (μ, τ), locals zᵢ.
Every complete conditional is conjugate, so the ELBO is exact and batch VMP
and SVI apply (Hoffman et al. 2013, §2–3; Bishop 2006, §10.2).  The log joint
of (π, μ, τ) with the assignments summed out, Σᵢ log Σ_k π_k N(xᵢ | μ_k, 1/τ_k),
serves BBVI (score function, or reparameterised with its gradient), whose family
is the same conjugate one (``models.mixture_family``), so its q is scored by the
same exact ELBO.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.special import gammaln, logsumexp

from svibench.capabilities import ConjugatePosterior, Globals, LocalApprox
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.data import Dataset
from svibench.expfam import LOG_2PI, DirichletNatural
from svibench.expfam.normal_gamma import NormalGammaNatural
from svibench.metrics import Metric, metric_table
from svibench.model import Model

from .gmm_chain import MixtureChain, align_draws, align_to, assignment_statistics, draw_assignments, globals_moments
from .mixture_family import MixtureFamily, split_draws

__all__ = ["GaussianMixture", "MixtureMoments"]


@dataclass(frozen=True)
class MixtureMoments:
    """The global moments the local step needs: expectations under q, or values at a draw.

    ``log_pi`` (K,); ``tau_mu``, ``tau_mu2``, ``tau``, ``log_tau`` (K, D) — i.e.
    E[τμ], E[τμ²], E[τ], E[log τ] (or τμ, τμ², τ, log τ at a sample).
    """

    log_pi: np.ndarray
    tau_mu: np.ndarray
    tau_mu2: np.ndarray
    tau: np.ndarray
    log_tau: np.ndarray

    def log_weights(self, x: np.ndarray) -> np.ndarray:
        """s_ik = log π_k + Σ_d E[log N(x_id | μ_kd, 1/τ_kd)], shape (n, K)."""
        quad = (
            -0.5 * (x**2) @ self.tau.T
            + x @ self.tau_mu.T
            - 0.5 * self.tau_mu2.sum(1)
            + 0.5 * self.log_tau.sum(1)
            - 0.5 * x.shape[1] * LOG_2PI
        )
        return self.log_pi + quad


class GaussianMixture(Model):
    """Bayesian Gaussian mixture (conditionally conjugate; exact ELBO).

    Parameters
    ----------
    data : Dataset of kind ``"density"`` with ``train["X"]`` (N, D) and ``test["X"]``.
    components : int
        K.
    alpha0 : float
        Dirichlet concentration of π.
    m0, kappa0, a0, b0 : float
        Normal–Gamma prior of every (μ_kd, τ_kd).
    """

    name = "gmm"
    #: Small problem of the conformance suite (``svibench.testing``).
    conformance_problem: ClassVar[dict] = {"dataset": "gmm-synthetic", "model_params": {"components": 3},
                                           "dataset_params": {"n": 300, "n_test": 100, "dim": 2, "components": 3, "seed": 0}}
    data_kinds = ("density",)
    metrics = metric_table(
        Metric("elbo", "higher", "objective", "nats",
               description="exact ELBO of q(π, μ, τ), each q(zᵢ) at its optimum given λ: what every algorithm here climbs"),
        Metric("heldout_loglik", "higher", "task", "nats per test point",
               description="mean log predictive density of the test points under q (exact, a Student-t mixture)"),
    )
    #: Exact for every posterior an algorithm hands out.
    answer = "elbo"
    primary = ("elbo", "heldout_loglik")
    posterior_types = (ConjugatePosterior, MixtureChain)
    local_kinds: ClassVar[tuple[str, ...]] = ("mf", "gibbs")
    init_methods: ClassVar[tuple[str, ...]] = ("random",)
    #: How its reference posterior is sampled (svibench.reference).
    sampler_name: ClassVar[str] = ("uncollapsed Gibbs over (z, π, μ, τ) (Bishop 2006, §10.2), draws relabelled "
                                   "to a pivot by the Hungarian algorithm (Stephens 2000)")
    family_kinds: ClassVar[tuple[str, ...]] = ("conjugate",)

    def __init__(self, data: Dataset, *, components: int = 5, alpha0: float = 1.0, m0: float = 0.0,
                 kappa0: float = 0.01, a0: float = 1.0, b0: float = 1.0) -> None:
        super().__init__(data)
        self.X = data.train["X"]
        self.X_test = data.test.get("X")
        self.components = components
        K, D = components, self.X.shape[1]
        self._prior = {
            "pi": DirichletNatural.from_concentration(np.full(K, alpha0)),
            "theta": NormalGammaNatural.from_params(np.full((K, D), m0), kappa0, a0, b0),
        }

    @property
    def n_train(self) -> int:
        return self.X.shape[0]

    # -- capability: conditionally conjugate
    def prior_natural(self) -> Globals:
        return dict(self._prior)

    def init_globals(self, rng: np.random.Generator, method: str = "random") -> Globals:
        """Components centred on K distinct random data points, with the data's scale."""
        if method not in self.init_methods:
            raise ValueError(f"unknown init method {method!r}; choose from {self.init_methods}")
        K = self.components
        centres = self.X[rng.choice(self.n_train, size=K, replace=False)]
        var = self.X.var(axis=0) + 1e-12
        a = 1.0 + self.n_train / (2.0 * K)
        return {
            "pi": DirichletNatural.from_concentration(self._prior["pi"].concentration() + self.n_train / K),
            "theta": NormalGammaNatural.from_params(centres, 1.0 + self.n_train / K, a, a * var),
        }

    def expected_view(self, lam: Globals) -> MixtureMoments:
        pi, theta = lam["pi"].to_mean(), lam["theta"].to_mean()
        return MixtureMoments(pi.mean_log, theta.mean_tau_mu, theta.mean_tau_mu2, theta.mean_tau, theta.mean_log_tau)

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> MixtureMoments:
        pi = lam["pi"].sample(rng)
        mu, tau = np.moveaxis(lam["theta"].sample(rng), -1, 0)
        return MixtureMoments(np.log(pi), tau * mu, tau * mu**2, tau, np.log(tau))

    def local_statistics(self, view: MixtureMoments, batch: np.ndarray, approx: LocalApprox,
                         rng: np.random.Generator) -> Globals:
        """Σᵢ η̂ᵢ over ``batch``: responsibilities r (mean field: q(zᵢ) ∝ exp sᵢ; Gibbs:
        average of ``samples`` draws zᵢ ~ Cat(softmax sᵢ), which is the exact
        conditional, so burn-in is not needed) turned into natural-parameter increments."""
        x = self.X[batch]
        s = view.log_weights(x)
        r = np.exp(s - logsumexp(s, axis=1, keepdims=True))
        if approx.kind == "gibbs":
            cum = np.cumsum(r, axis=1)
            u = rng.random((approx.samples, len(batch), 1))
            z = np.minimum((u > cum).sum(-1), self.components - 1)
            r = np.eye(self.components)[z].mean(axis=0)
        elif approx.kind != "mf":
            raise ValueError(f"gmm offers local approximations {self.local_kinds}, not {approx.kind!r}")
        nk = r.sum(0)
        return {
            "pi": DirichletNatural(nk),
            "theta": NormalGammaNatural(r.T @ x, -0.5 * nk[:, None] * np.ones_like(x[:1]), -0.5 * r.T @ x**2,
                                        0.5 * nk[:, None] * np.ones_like(x[:1])),
        }

    # -- capability: log joint, assignments summed out (score-function BBVI)
    def variational_family(self, kind: str = "conjugate") -> MixtureFamily:
        if kind not in self.family_kinds:
            raise ValueError(f"gmm offers families {self.family_kinds}, not {kind!r}")
        return MixtureFamily(self.components, self.X.shape[1], self.init_globals)

    def _draw_weights(self, z: np.ndarray, batch: np.ndarray | None) -> tuple[np.ndarray, float, np.ndarray]:
        """The batch's points, their weight N/|B| and s_ik = log π_k + Σ_d log N(x_id | μ_kd, 1/τ_kd) at each draw (S, |B|, K)."""
        pi, pairs = split_draws(z, self.components, self.X.shape[1])
        mu, tau = pairs[..., 0], pairs[..., 1]
        x = self.X if batch is None else self.X[batch]
        scale = 1.0 if batch is None else self.n_train / len(batch)
        s = np.stack([MixtureMoments(*draw).log_weights(x)  # one draw at a time
                      for draw in zip(np.log(pi), tau * mu, tau * mu**2, tau, np.log(tau))])
        return x, scale, s

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        """log p(π) + Σ_kd log p(μ_kd, τ_kd) + (N/|B|) Σ_{i∈B} logsumexp_k [log π_k + Σ_d log N(x_id | μ_kd, 1/τ_kd)]."""
        pi, pairs = split_draws(z, self.components, self.X.shape[1])
        x, scale, s = self._draw_weights(z, batch)
        prior = self._prior["pi"].log_pdf(pi) + self._prior["theta"].log_pdf(pairs).sum((-2, -1))
        return scale * logsumexp(s, axis=-1).sum(-1) + prior

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """One block (see ``models.mixture_family``): the whole joint."""
        return self.log_joint(z, batch)[:, None]

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        """∇ of :meth:`log_joint` in (π, μ, τ), with r_ik the responsibilities at the draw:
        ∂/∂π_k = s Σᵢ r_ik/π_k + (α₀ − 1)/π_k;  ∂/∂μ_kd = s Σᵢ r_ik τ(x_id − μ) − κ₀τ(μ − m₀);
        ∂/∂τ_kd = s Σᵢ r_ik (1/(2τ) − (x_id − μ)²/2) + (a₀ − ½)/τ − κ₀(μ − m₀)²/2 − b₀ (s = N/|B|)."""
        pi, pairs = split_draws(z, self.components, self.X.shape[1])
        mu, tau = pairs[..., 0], pairs[..., 1]
        x, scale, s = self._draw_weights(z, batch)
        r = np.exp(s - logsumexp(s, axis=-1, keepdims=True))  # (S, |B|, K)
        nk, rx, rx2 = r.sum(1), np.einsum("sbk,bd->skd", r, x), np.einsum("sbk,bd->skd", r, x**2)
        m0, kappa0, a0, b0 = (v[None] for v in self._prior["theta"].params())
        alpha0 = self._prior["pi"].concentration()
        g_pi = (scale * nk + alpha0 - 1.0) / pi
        g_mu = scale * tau * (rx - nk[..., None] * mu) - kappa0 * tau * (mu - m0)
        g_tau = (scale * (0.5 * nk[..., None] / tau - 0.5 * (rx2 - 2.0 * mu * rx + nk[..., None] * mu**2))
                 + (a0 - 0.5) / tau - 0.5 * kappa0 * (mu - m0) ** 2 - b0)
        return np.concatenate([g_pi, g_mu.reshape(len(z), -1), g_tau.reshape(len(z), -1)], axis=1)

    # -- capability: Gibbs sampler (svibench.capabilities.ConditionalSampler; models.gmm_chain)
    def _conditional_globals(self, z: np.ndarray) -> Globals:
        """p(π, μ, τ | z, x): the prior plus the statistics of the assignments (conjugate)."""
        stats = assignment_statistics(self.X, z, self.components)
        return {name: self._prior[name] + stats[name] for name in self._prior}

    def chain_init(self, rng: np.random.Generator, method: str = "random") -> MixtureChain:
        """(π, μ, τ) drawn from :meth:`init_globals`' q (components on K distinct random data points), then one
        sweep, so every variable of the state is a draw."""
        draw = self.sampled_view(self.init_globals(rng, method), rng)
        state = MixtureChain(np.zeros(self.n_train, dtype=int), np.exp(draw.log_pi), draw.tau_mu / draw.tau, draw.tau)
        return self.chain_sweep(state, rng)

    def chain_sweep(self, state: MixtureChain, rng: np.random.Generator) -> MixtureChain:
        """z | π, μ, τ (Gumbel-max), then π | z ~ Dir and (μ, τ) | z ~ NormalGamma (``models.gmm_chain``)."""
        view = MixtureMoments(np.log(state.pi), state.tau * state.mu, state.tau * state.mu**2, state.tau,
                              np.log(state.tau))
        z = draw_assignments(view.log_weights(self.X), rng)
        lam = self._conditional_globals(z)
        pi = np.maximum(lam["pi"].sample(rng), np.finfo(float).tiny)
        mu, tau = np.moveaxis(lam["theta"].sample(rng), -1, 0)
        return MixtureChain(z, pi, mu, tau)

    # -- capability: reference posterior (svibench.reference; θ = (μ, π), models.gmm_chain)
    def chain_latent(self, state: MixtureChain) -> np.ndarray:
        """θ = (μ (K·D), π (K)) at the state, in the chain's own labels (relabelled by :meth:`align_draws`)."""
        return state.latent()

    def latent_moments(self, posterior: ConjugatePosterior | MixtureChain) -> GaussianPosterior:
        """Mean and covariance of θ = (μ, π) under q; for a chain state, under p(π, μ, τ | z) (Rao–Blackwellised),
        in the posterior's own component order (:meth:`align_to` orders it as a reference)."""
        lam = self._conditional_globals(posterior.z) if isinstance(posterior, MixtureChain) else posterior.lam
        return globals_moments(lam)

    def align_draws(self, draws: np.ndarray) -> np.ndarray:
        """Draws of θ (S, K·D + K) relabelled to one pivot (``models.gmm_chain.align_draws``)."""
        return align_draws(draws, self.components, self.X.std(axis=0) + 1e-12)

    def align_to(self, q: GaussianPosterior, ref_mean: np.ndarray) -> GaussianPosterior:
        """q's components permuted to match the reference's means (``models.gmm_chain.align_to``)."""
        return align_to(q, ref_mean, self.components, self.X.std(axis=0) + 1e-12)

    # -- evaluation
    def elbo(self, lam: Globals) -> float:
        """Exact ELBO with the locals at their optimum given λ:
        Σᵢ logsumexp_k s_ik − KL(q(π)‖p(π)) − Σ_kd KL(q(μ,τ)‖p(μ,τ))."""
        local = logsumexp(self.expected_view(lam).log_weights(self.X), axis=1).sum()
        return float(local - lam["pi"].kl(self._prior["pi"]) - lam["theta"].kl(self._prior["theta"]).sum())

    def heldout_loglik(self, lam: Globals) -> float:
        """Mean log predictive density of the test points under q (exact):
        p(x*) = Σ_k E[π_k] Π_d St(x*_d | 2a, m, b(κ+1)/(aκ))."""
        m, kappa, a, b = lam["theta"].params()
        weights = lam["pi"].concentration()
        log_w = np.log(weights / weights.sum())
        nu, scale2 = 2.0 * a, b * (kappa + 1.0) / (a * kappa)
        x = self.X_test[:, None, :]
        log_t = (gammaln((nu + 1) / 2) - gammaln(nu / 2) - 0.5 * np.log(nu * np.pi * scale2)
                 - (nu + 1) / 2 * np.log1p((x - m) ** 2 / (nu * scale2)))
        return float(logsumexp(log_w + log_t.sum(-1), axis=1).mean())

    def evaluate(self, posterior: ConjugatePosterior | MixtureChain, rng: np.random.Generator) -> dict[str, float]:
        """Both metrics of q; a Gibbs state is scored by q = p(π, μ, τ | z) at its assignments, a member of the
        conjugate family whose ELBO and predictive are exact (Rao–Blackwellised over the globals' draw)."""
        lam = self._conditional_globals(posterior.z) if isinstance(posterior, MixtureChain) else posterior.lam
        out = {"elbo": self.elbo(lam)}
        if self.X_test is not None and len(self.X_test):
            out["heldout_loglik"] = self.heldout_loglik(lam)
        return out
