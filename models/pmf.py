"""Poisson–gamma matrix factorisation (Ranganath et al. 2015; Khan & Lin 2017, App. K).

X_ij ~ Poisson(wᵢᵀzⱼ) for rows i = 1..V (pixels) and columns j = 1..N
(images), w_ik ~ Ga(a_w, b_w), z_jk ~ Ga(a_z, b_z) (shape, rate), and
q(W, Z) = Π Ga(w_ik | ·) Π Ga(z_jk | ·) (eq. 96–97).  Entries may be held out
(``mask``); only observed entries enter the likelihood.

For w_ik (and symmetrically z_jk) the Poisson factor splits as
(wᵢᵀzⱼ)^X_ij · exp(−Σ_k w_ik z_jk): the exponential part is conjugate to the
Gamma factor, with VMP message (0, −Σ_j m_ij E[z_jk]) on (log w, w); the part
X_ij log(wᵢᵀzⱼ) is the non-conjugate one, whose mean-parameter gradient is
estimated by reparameterised draws (eq. 15, 73–74):

    ∂/∂w_ik Σ_j X_ij log(wᵢᵀzⱼ) = Σ_j (X_ij / wᵢᵀzⱼ) z_jk.

With K = 1 the split is exact (log(w z) = log w + log z is conjugate) and
CVI-MF with β = 1 reproduces VMP.

Augmented with auxiliary counts X_ij = Σ_k c_ijk (``models.poisson_counts``) the
model is conditionally conjugate, so the SVI family (columns as data points: z_j
and the counts c_j·· local, W global), VMP and a Gibbs sampler run on it too.
Their q(W) is evaluated with q(Z) fitted by the same mean-field locals, and the
``elbo`` is the one below, of q(W) q(Z) with the counts summed out — the
objective CVI-MF and BBVI are scored with, so the families compare on one number
(it is at least the augmented bound the SVI family climbs, by Jensen).

Metrics (on the held-out entries H of ``test``)
-------
recon_loss
    The paper's reconstruction loss (§7), √(Σ_H (x − x̂)²) / |H| with
    x̂ = E_q[wᵢ]ᵀE_q[zⱼ]; the paper divides by V × N, the number of entries it
    evaluates, which is |H| here.
recon_loss_fit
    The same on the observed (training) entries: the other reading of §7's
    "reconstruction", a fit to the data the model was given.
heldout_loglik
    Mean over H of log (1/S) Σ_s Poisson(x | wᵢₛᵀzⱼₛ), S = ``eval_samples``.
elbo
    E_q[log p(X | W, Z)] (E[log wᵀz] by ``eval_samples`` draws, the rest exact)
    − KL(q ‖ prior).
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import digamma, gammaln, logsumexp

from svibench.capabilities.conjugate import ConjugatePosterior, Globals, LocalApprox
from svibench.capabilities.mean_field import Blocks, gamma_draws, gamma_mean_gradient
from svibench.data import Dataset
from svibench.expfam import GammaNatural
from svibench.metrics import Metric, metric_table
from svibench.model import IncompatibleData, Model

from .gamma_family import MeanFieldGamma
from .poisson_counts import CountChain, Nonzeros, WeightMoments, column_locals, count_sweep

__all__ = ["PoissonGammaMF"]


class PoissonGammaMF(Model):
    """Poisson–gamma matrix factorisation with a mean-field Gamma posterior.

    Parameters
    ----------
    data : Dataset of kind ``"count-matrix"``: train ``X`` (V, N) counts and
        ``mask`` (V, N), True where observed; test ``X`` and ``mask`` (held-out entries).
    n_factors : int
        K (paper: 100).
    w_shape, w_rate, z_shape, z_rate : float
        Gamma priors of W and Z.  Paper (App. H, Table 1): a^(z0) = b^(z0) =
        a^(w0) = 0.1 and "b^(z0) = 0.3", which can only be b^(w0) = 0.3.
    eval_samples : int
        Draws of q for the Monte-Carlo metrics.
    """

    name = "pmf"
    conformance_problem = {"dataset": "pmf-synthetic", "dataset_params": {"rows": 30, "cols": 40, "factors": 3},
                           "model_params": {"n_factors": 3, "eval_samples": 20}, "steps": 20}
    data_kinds = ("count-matrix",)
    metrics = metric_table(
        Metric("elbo", "higher", "objective", "nats",
               description="E_q log p(X | W, Z) (E log wᵀz by eval_samples draws) − KL(q ‖ prior); no ELBO for a Gibbs state"),
        Metric("heldout_loglik", "higher", "task", "nats per held-out entry", high=0.0,
               description="mean over held-out entries of log (1/S) Σ_s Poisson(x | wᵢₛᵀzⱼₛ)"),
        Metric("recon_loss", "lower", "task", "counts", low=0.0,
               description="the paper's reconstruction loss (§7) √(Σ (x − x̂)²) / |H| on the held-out entries, x̂ = E[w]ᵀE[z]"),
        Metric("recon_loss_fit", "lower", "diagnostic", "counts", rankable=False, low=0.0,
               description="the same on the observed entries: a fit to Poisson-noisy counts, which rewards fitting their noise"),
    )
    #: Every posterior has it (a Gibbs state has no ELBO).
    answer = "heldout_loglik"
    primary = ("elbo", "heldout_loglik", "recon_loss")
    family_kinds: ClassVar[tuple[str, ...]] = ("meanfield",)
    posterior_types = (dict, ConjugatePosterior, CountChain)
    local_kinds: ClassVar[tuple[str, ...]] = ("mf",)
    init_methods: ClassVar[tuple[str, ...]] = ("moments",)

    def __init__(self, data: Dataset, *, n_factors: int = 100, w_shape: float = 0.1, w_rate: float = 0.3,
                 z_shape: float = 0.1, z_rate: float = 0.1, eval_samples: int = 20) -> None:
        super().__init__(data)
        X, mask = data.train.get("X"), data.train.get("mask")
        if X is None or mask is None or X.ndim != 2 or mask.shape != X.shape:
            raise IncompatibleData(f"pmf needs train['X'] and train['mask'] of the same 2-D shape; {data.name!r} has {sorted(data.train)}")
        if n_factors < 1 or min(w_shape, w_rate, z_shape, z_rate) <= 0 or eval_samples < 1:
            raise ValueError("pmf: need n_factors ≥ 1, positive prior parameters and eval_samples ≥ 1")
        observed = X[mask > 0]
        if np.any(observed < 0) or np.any(observed != np.round(observed)):
            raise IncompatibleData(f"pmf: the observed entries of {data.name!r} must be non-negative integer counts "
                                   f"(found e.g. {observed[(observed < 0) | (observed != np.round(observed))][:1]}); "
                                   "round or quantise the data first")
        self.mask = mask.astype(float)
        self.X = X * self.mask
        self.V, self.N = X.shape
        self.K, self.eval_samples = n_factors, eval_samples
        self.prior = {
            "W": GammaNatural.from_shape_rate(np.full((self.V, n_factors), w_shape), np.full((self.V, n_factors), w_rate)),
            "Z": GammaNatural.from_shape_rate(np.full((self.N, n_factors), z_shape), np.full((self.N, n_factors), z_rate)),
        }
        self._log_x_factorial = (gammaln(self.X + 1.0) * self.mask).sum(0)  # per column (image)
        self.hyper = (w_shape, w_rate, z_shape, z_rate)
        self.nonzeros = Nonzeros(self.X, self.mask)

    @property
    def n_train(self) -> int:
        return self.N

    # -- helpers on draws W (S, V, K), Z (S, N, K)
    def _draws(self, lam: Blocks, rng: np.random.Generator, n_samples: int) -> dict:
        """``n_samples`` reparameterised draws of every block of q (uniforms drawn W first, then Z)."""
        draws = {}
        for name, rows in (("W", self.V), ("Z", self.N)):
            shape, rate = lam[name].shape_rate()
            draws[name] = gamma_draws(shape, rate, rng.uniform(size=(n_samples, rows, self.K)))
        return draws

    def _column_weights(self, batch: np.ndarray | None) -> np.ndarray:
        """1 for every column, or N/|B| on the minibatch ``batch`` and 0 elsewhere."""
        if batch is None:
            return np.ones(self.N)
        weights = np.zeros(self.N)
        weights[batch] = self.N / len(batch)
        return weights

    def _ratio(self, W: np.ndarray, Z: np.ndarray) -> np.ndarray:
        """X_ij / wᵢᵀzⱼ on observed entries (0 elsewhere), shape (S, V, N)."""
        rate = W @ np.swapaxes(Z, -1, -2)
        return np.divide(self.X, rate, out=np.zeros(rate.shape), where=self.X > 0)

    # -- capability: mean-field non-conjugate (CVI-MF)
    def _init_block(self, rng: np.random.Generator, rows: int) -> GammaNatural:
        """Shapes 1 + U(0, 0.5), means √(mean X / K) so that E[wᵢᵀzⱼ] matches the data's mean count."""
        m0 = np.sqrt(max(self.X.sum() / self.mask.sum(), 1e-3) / self.K)
        shape = 1.0 + 0.5 * rng.uniform(size=(rows, self.K))
        return GammaNatural.from_shape_rate(shape, shape / m0)

    def mf_init(self, rng: np.random.Generator) -> dict[str, GammaNatural]:
        """Every block from :meth:`_init_block`, W first."""
        return {name: self._init_block(rng, rows) for name, rows in (("W", self.V), ("Z", self.N))}

    def conjugate_messages(self, lam: Blocks, block: str) -> GammaNatural:
        """Prior + Σ (0, −Σ_j m_ij E[z_jk]) for W (and the transpose for Z): eq. 20."""
        other = "Z" if block == "W" else "W"
        shape, rate = lam[other].shape_rate()
        mask = self.mask if block == "W" else self.mask.T
        return self.prior[block] + GammaNatural(0.0, -(mask @ (shape / rate)))

    def nonconjugate_gradient(self, lam: Blocks, blocks: tuple[str, ...], rng: np.random.Generator,
                              n_samples: int) -> dict[str, GammaNatural]:
        """∇̂_μ Σ_ij m_ij X_ij E_q[log wᵢᵀzⱼ] for the requested blocks (draws of both W and Z)."""
        draws = self._draws(lam, rng, n_samples)
        ratio = self._ratio(draws["W"].z, draws["Z"].z)
        grad_z = {"W": ratio @ draws["Z"].z, "Z": np.swapaxes(ratio, -1, -2) @ draws["W"].z}
        return {name: gamma_mean_gradient(lam[name], draws[name], grad_z[name]) for name in blocks}

    # -- capability: conditionally conjugate, with auxiliary counts (models.poisson_counts)
    def prior_natural(self) -> Globals:
        return {"W": self.prior["W"]}

    def init_globals(self, rng: np.random.Generator, method: str = "moments") -> Globals:
        """q(W) as in :meth:`mf_init` (the same draws for W)."""
        return {"W": self._init_block(rng, self.V)}

    def expected_view(self, lam: Globals) -> WeightMoments:
        shape, rate = lam["W"].shape_rate()
        return WeightMoments(digamma(shape) - np.log(rate), shape / rate)

    def sampled_view(self, lam: Globals, rng: np.random.Generator) -> WeightMoments:
        shape, rate = lam["W"].shape_rate()
        w = np.maximum(rng.gamma(shape, 1.0 / rate), np.finfo(float).tiny)
        return WeightMoments(np.log(w), w)

    def _column_q(self, view: WeightMoments, batch: np.ndarray, approx: LocalApprox):
        if approx.kind not in self.local_kinds:
            raise ValueError(f"pmf offers local approximations {self.local_kinds}, not {approx.kind!r}")
        return column_locals(view, self.nonzeros, self.mask, batch, self.hyper[2], self.hyper[3],
                             approx.inner_iterations, approx.inner_tol)

    def local_statistics(self, view: WeightMoments, batch: np.ndarray, approx: LocalApprox,
                         rng: np.random.Generator) -> Globals:
        """Σ_{j∈B} (Σ_j X_ij φ_ijk, −Σ_j m_ij E[z_jk]) on (log w_ik, w_ik), from the mean-field locals."""
        alpha, beta, counts = self._column_q(view, batch, approx)
        return {"W": GammaNatural(counts, -(self.mask[:, batch] @ (alpha / beta)))}

    # -- capability: Gibbs sampler over W, Z and the counts (algorithms.gibbs)
    def chain_init(self, rng: np.random.Generator, method: str = "moments") -> CountChain:
        """W and Z drawn from the initial q of :meth:`mf_init`."""
        q = self.mf_init(rng)
        W, Z = (np.maximum(rng.gamma(*_shape_scale(q[name])), np.finfo(float).tiny) for name in ("W", "Z"))
        return CountChain(W, Z)

    def chain_sweep(self, state: CountChain, rng: np.random.Generator) -> CountChain:
        return count_sweep(state, self.nonzeros, self.mask, self.hyper, rng)

    # -- capability: log joint (BBVI)
    def variational_family(self, kind: str = "meanfield") -> MeanFieldGamma:
        if kind not in self.family_kinds:
            raise ValueError(f"pmf offers families {self.family_kinds}, not {kind!r}")
        return MeanFieldGamma({"W": (self.V, self.K), "Z": (self.N, self.K)}, self.mf_init)

    def _split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        S, n_w = len(z), self.V * self.K
        return z[:, :n_w].reshape(S, self.V, self.K), z[:, n_w:].reshape(S, self.N, self.K)

    def _loglik_terms(self, W: np.ndarray, Z: np.ndarray, batch: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, float]:
        """Observed-entry Poisson log-likelihoods (S, V, N), the column weights, log-factorials.

        With ``batch`` the columns outside it get weight 0 and those in it N/|B|.
        """
        rate = W @ np.swapaxes(Z, -1, -2)
        with np.errstate(divide="ignore"):
            terms = np.where(self.X > 0, self.X * np.log(rate), 0.0) - rate * self.mask
        weights = self._column_weights(batch)
        return terms, weights, float(self._log_x_factorial @ weights)

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        W, Z = self._split(z)
        terms, weights, log_fact = self._loglik_terms(W, Z, batch)
        prior = self.prior["W"].log_pdf(W).sum((-2, -1)) + self.prior["Z"].log_pdf(Z).sum((-2, -1))
        return (terms * weights).sum((-2, -1)) - log_fact + prior

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """Markov blanket of w_ik: row i's likelihood + its prior; of z_jk: column j's + its prior."""
        W, Z = self._split(z)
        terms, weights, _ = self._loglik_terms(W, Z, batch)
        terms = terms * weights
        row = terms.sum(-1)[..., None] + self.prior["W"].log_pdf(W)  # (S, V, K)
        col = terms.sum(-2)[..., None] + self.prior["Z"].log_pdf(Z)  # (S, N, K)
        return np.concatenate([row.reshape(len(z), -1), col.reshape(len(z), -1)], axis=1)

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        W, Z = self._split(z)
        resid = (self._ratio(W, Z) - self.mask) * self._column_weights(batch)  # ∂/∂rate of the weighted likelihood
        (aw, bw), (az, bz) = self.prior["W"].shape_rate(), self.prior["Z"].shape_rate()
        gW = resid @ Z + (aw - 1.0) / W - bw
        gZ = np.swapaxes(resid, -1, -2) @ W + (az - 1.0) / Z - bz
        return np.concatenate([gW.reshape(len(z), -1), gZ.reshape(len(z), -1)], axis=1)

    # -- evaluation
    def fitted_blocks(self, posterior: ConjugatePosterior) -> dict[str, GammaNatural]:
        """q(W) of the SVI family with q(Z) of every column fitted by its mean-field locals given E_q[W]."""
        alpha, beta, _ = self._column_q(self.expected_view(posterior.lam), np.arange(self.N), posterior.approx)
        return {"W": posterior.lam["W"], "Z": GammaNatural.from_shape_rate(alpha, beta)}

    def evaluate(self, posterior: Blocks | ConjugatePosterior | CountChain, rng: np.random.Generator) -> dict[str, float]:
        """Metrics of a mean-field q (every metric), of the SVI family's q(W) (through :meth:`fitted_blocks`),
        or of a Gibbs state (the rate W Zᵀ of the current draw; no ELBO)."""
        if isinstance(posterior, CountChain):
            rate = posterior.W @ posterior.Z.T
            return self._rate_metrics(rate[None], rate)
        if isinstance(posterior, ConjugatePosterior):
            posterior = self.fitted_blocks(posterior)
        draws = self._draws(posterior, rng, self.eval_samples)
        W, Z = draws["W"].z, draws["Z"].z
        rate_draws = W @ np.swapaxes(Z, -1, -2)  # (S, V, N)
        (sw, rw), (sz, rz) = posterior["W"].shape_rate(), posterior["Z"].shape_rate()
        mean_rate = (sw / rw) @ (sz / rz).T
        with np.errstate(divide="ignore"):
            e_log_rate = np.mean(np.log(rate_draws), axis=0)
        expected_loglik = (np.where(self.X > 0, self.X * e_log_rate, 0.0) - mean_rate * self.mask).sum() - self._log_x_factorial.sum()
        kl = sum(float(posterior[name].kl(self.prior[name]).sum()) for name in ("W", "Z"))
        return {"elbo": float(expected_loglik - kl), **self._rate_metrics(rate_draws, mean_rate)}

    def _rate_metrics(self, rate_draws: np.ndarray, mean_rate: np.ndarray) -> dict[str, float]:
        """Reconstruction losses of ``mean_rate`` and the held-out log predictive of the draws (S, V, N)."""
        out = {"recon_loss_fit": _recon_loss(self.X[self.mask > 0], mean_rate[self.mask > 0])}
        held = self.data.test.get("mask")
        if held is not None and held.any():
            x = self.data.test["X"][held]
            out["recon_loss"] = _recon_loss(x, mean_rate[held])
            r = rate_draws[:, held]
            log_p = x * np.log(r) - r - gammaln(x + 1.0)
            out["heldout_loglik"] = float(np.mean(logsumexp(log_p, axis=0) - np.log(len(rate_draws))))
        return out


def _shape_scale(q: GammaNatural) -> tuple[np.ndarray, np.ndarray]:
    """numpy's Gamma parameters (shape, scale = 1/rate) of q."""
    shape, rate = q.shape_rate()
    return shape, 1.0 / rate


def _recon_loss(x: np.ndarray, x_hat: np.ndarray) -> float:
    """√(Σ (x − x̂)²) / (number of entries) (Khan & Lin 2017, §7)."""
    return float(np.sqrt(np.sum((x - x_hat) ** 2)) / x.size)
