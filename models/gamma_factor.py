"""The gamma factor model of Knowles (2015), Khan & Lin (2017) App. J.

yᵢ ~ N(0, ZZᵀ + σ²I) for i = 1..N (yᵢ ∈ ℝᴰ), Z_jk ~ Ga(a, b) (shape, rate),
q(Z) = Π_jk Ga(Z_jk | α_jk, β_jk).  The factors are integrated out, so the
likelihood couples all of Z through Σ = ZZᵀ + σ²I and is not conjugate to the
Gamma prior.  It depends on the data only through S = YᵀY:

    log p(Y | Z) = −N/2 (D log 2π + log|Σ|) − ½ tr(Σ⁻¹ S),
    ∂/∂Z log p(Y | Z) = (Σ⁻¹ S Σ⁻¹ − N Σ⁻¹) Z,

so an iteration costs O(S_mc D³ + S_mc D² K) whatever N is.

Capabilities: :class:`~svibench.capabilities.mean_field.MeanFieldNonConjugate`
(the prior is the only conjugate factor; the likelihood is the non-conjugate
one) and :class:`~svibench.capabilities.LogJointGradient` with the
softplus-Gamma family of :mod:`.gamma_family`.

Metrics
-------
neg_test_loglik
    The paper's "perplexity" (§7; Table 4): −(1/N_test) Σᵢ log N(yᵢ | 0, Σ̄)
    with Σ̄ = E_q[ZZᵀ] + σ²I.  This is the estimator of the authors' code
    (Σ̄ averaged over 2000 draws of q), here with E_q[ZZᵀ] in closed form
    (E[Z]E[Z]ᵀ + diag(Σ_k Var Z_jk)): deterministic given q.
heldout_loglik
    The Monte-Carlo predictive (1/N_test) Σᵢ log (1/S) Σ_s N(yᵢ | 0, Σ_s),
    Z_s ~ q, S = ``eval_samples`` (biased low by Jensen for small S).  It costs S whitenings of every test
    row (O(S N_test D²), most of an evaluation when the test rows are many), so with ``eval_test`` the
    checkpoints estimate it on a seeded subset of the test rows and the last checkpoint measures it on every
    one, as ``heldout_loglik_whole`` (:mod:`svibench.evaluation_subset`).  ``neg_test_loglik``, one
    whitening, is always on every test row.
elbo
    E_q[log p(Y | Z)] by Monte Carlo (``eval_samples`` draws) − KL(q ‖ prior) exactly.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
from scipy.special import logsumexp

from svibench.capabilities.mean_field import Blocks, gamma_draws, gamma_mean_gradient
from svibench.data import Dataset
from svibench.evaluation_subset import draw_subset, subset_refusal, whole_declarations, whole_metrics, with_whole
from svibench.expfam import LOG_2PI, GammaNatural
from svibench.metrics import Metric, metric_table
from svibench.model import IncompatibleData, Model

from .gamma_family import MeanFieldGamma

__all__ = ["GammaFactor"]


class GammaFactor(Model):
    """Gamma factor model with the factors integrated out (Khan & Lin 2017, App. J, eq. 95).

    Parameters
    ----------
    data : Dataset of kind ``"real-matrix"`` with ``Y`` (N, D) in train (and test).
    n_factors : int
        K (paper: 40).
    noise_variance : float
        σ², fixed (paper: 0.1).
    prior_shape, prior_rate : float
        a, b of the Gamma prior (paper: 1, 1).
    eval_samples : int
        Draws of q for the Monte-Carlo metrics ``heldout_loglik`` and ``elbo``.
    eval_test : int ≥ 0
        The test rows ``heldout_loglik`` is estimated on at every checkpoint, a seeded random subset of that many
        (0: every one), with every one at the last checkpoint (``heldout_loglik_whole``).
    eval_seed : int
        Seed of that subset: one subset for every method, seed and checkpoint of a problem.
    """

    name = "gamma-factor"
    conformance_problem = {"dataset": "gamma-factor-synthetic", "dataset_params": {"n": 300, "n_test": 100, "dim": 8, "factors": 4},
                           "model_params": {"n_factors": 4, "eval_samples": 20}, "steps": 20}
    data_kinds = ("real-matrix",)
    metrics = metric_table(
        Metric("elbo", "higher", "objective", "nats",
               description="E_q log p(Y | Z) by Monte Carlo (eval_samples draws) − KL(q ‖ prior) exactly"),
        Metric("heldout_loglik", "higher", "task", "nats per test row",
               description="Monte-Carlo predictive mean_i log (1/S) Σ_s N(yᵢ | 0, Σ_s), biased low for small S"),
        Metric("neg_test_loglik", "lower", "task", "nats per test row",
               description="the paper's 'perplexity' (§7, Table 4): −mean_i log N(yᵢ | 0, E_q[ZZᵀ] + σ²I), deterministic given q"),
    )
    metrics = {**metrics, **metric_table(*whole_declarations(metrics, ("heldout_loglik",), "every test row (eval_test)"))}
    evaluation_params: ClassVar[tuple[str, ...]] = ("eval_test", "eval_seed")
    row_params: ClassVar[tuple[str, ...]] = ("eval_test",)
    #: Deterministic given q (the ELBO and heldout_loglik are Monte-Carlo estimates), and the paper's measure.
    answer = "neg_test_loglik"
    primary = ("elbo", "neg_test_loglik")
    family_kinds: ClassVar[tuple[str, ...]] = ("meanfield",)

    def __init__(self, data: Dataset, *, n_factors: int = 40, noise_variance: float = 0.1,
                 prior_shape: float = 1.0, prior_rate: float = 1.0, eval_samples: int = 100, eval_test: int = 0,
                 eval_seed: int = 0) -> None:
        super().__init__(data)
        Y = data.train.get("Y")
        if Y is None or Y.ndim != 2:
            raise IncompatibleData(f"gamma-factor needs a 2-D train['Y'] (N, D); {data.name!r} has keys {sorted(data.train)}")
        if n_factors < 1 or noise_variance <= 0 or prior_shape <= 0 or prior_rate <= 0 or eval_samples < 1:
            raise ValueError("gamma-factor: need n_factors ≥ 1, noise_variance > 0, prior_shape > 0, prior_rate > 0, eval_samples ≥ 1")
        self.Y = Y
        self.K, self.noise_variance, self.eval_samples = n_factors, noise_variance, eval_samples
        self.prior_shape, self.prior_rate = prior_shape, prior_rate
        self.D = Y.shape[1]
        self.scatter = Y.T @ Y
        self.prior = GammaNatural.from_shape_rate(np.full((self.D, self.K), prior_shape), np.full((self.D, self.K), prior_rate))
        why = self.data_refusal(data, {"eval_test": eval_test})
        if why:
            raise ValueError(f"gamma-factor: {why}")
        Yt = data.test.get("Y")
        self.test_subset = draw_subset(eval_test, len(Yt), eval_seed, "eval_test", "test rows") if eval_test else None

    @classmethod
    def data_refusal(cls, data: Dataset, params: dict) -> str:
        """An ``eval_test`` that is not a subset of the test rows."""
        size, Yt = params.get("eval_test", 0), data.test.get("Y")
        return subset_refusal(size, 0 if Yt is None else len(Yt), "eval_test", "test rows") if size else ""

    @property
    def n_train(self) -> int:
        return self.Y.shape[0]

    # -- the likelihood, on a stack of Z of shape (S, D, K)
    def _covariance(self, Z: np.ndarray) -> np.ndarray:
        return Z @ np.swapaxes(Z, -1, -2) + self.noise_variance * np.eye(self.D)

    def loglik(self, Z: np.ndarray, scatter: np.ndarray | None = None, n: float | None = None) -> np.ndarray:
        """log p(Y | Z) for each Z in the stack (S, D, K) (data summarised by ``scatter`` = YᵀY and ``n``)."""
        scatter = self.scatter if scatter is None else scatter
        n = self.n_train if n is None else n
        sigma = self._covariance(Z)
        chol = np.linalg.cholesky(sigma)
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
        trace = np.einsum("sij,ji->s", np.linalg.inv(sigma), scatter)
        return -0.5 * n * (self.D * LOG_2PI + logdet) - 0.5 * trace

    def grad_loglik(self, Z: np.ndarray, scatter: np.ndarray | None = None, n: float | None = None) -> np.ndarray:
        """∂ log p(Y | Z)/∂Z = (Σ⁻¹ S Σ⁻¹ − n Σ⁻¹) Z for each Z in the stack (S, D, K)."""
        scatter = self.scatter if scatter is None else scatter
        n = self.n_train if n is None else n
        inv = np.linalg.inv(self._covariance(Z))
        return (inv @ scatter @ inv - n * inv) @ Z

    def _batch_summary(self, batch: np.ndarray | None) -> tuple[np.ndarray, float]:
        if batch is None:
            return self.scatter, float(self.n_train)
        Yb = self.Y[batch]
        return (self.n_train / len(batch)) * (Yb.T @ Yb), float(self.n_train)

    # -- capability: mean-field non-conjugate (CVI-MF)
    def mf_init(self, rng: np.random.Generator) -> dict[str, GammaNatural]:
        """q = prior, as in the authors' code."""
        return {"Z": self.prior}

    def conjugate_messages(self, lam: Blocks, block: str) -> GammaNatural:
        """Only the prior factor is conjugate: η = (a − 1, −b)."""
        return self.prior

    def nonconjugate_gradient(self, lam: Blocks, blocks: tuple[str, ...], rng: np.random.Generator,
                              n_samples: int) -> dict[str, GammaNatural]:
        """∇̂_μ E_q[log p(Y | Z)] by reparameterised draws and the Gamma Fisher information (eq. 15)."""
        q = lam["Z"]
        shape, rate = q.shape_rate()
        draws = gamma_draws(shape, rate, rng.uniform(size=(n_samples, self.D, self.K)))
        return {"Z": gamma_mean_gradient(q, draws, self.grad_loglik(draws.z))}

    # -- capability: log joint (BBVI)
    def variational_family(self, kind: str = "meanfield") -> MeanFieldGamma:
        if kind not in self.family_kinds:
            raise ValueError(f"gamma-factor offers families {self.family_kinds}, not {kind!r}")
        return MeanFieldGamma({"Z": (self.D, self.K)}, self.mf_init)

    def _log_prior(self, Z: np.ndarray) -> np.ndarray:
        return self.prior.log_pdf(Z)

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        Z = z.reshape(-1, self.D, self.K)
        return self.loglik(Z, *self._batch_summary(batch)) + self._log_prior(Z).sum((-2, -1))

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """Every Z_jk has the whole likelihood in its Markov blanket, plus its own prior term."""
        Z = z.reshape(-1, self.D, self.K)
        return self.loglik(Z, *self._batch_summary(batch))[:, None] + self._log_prior(Z).reshape(len(Z), -1)

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        Z = z.reshape(-1, self.D, self.K)
        grad = self.grad_loglik(Z, *self._batch_summary(batch)) + (self.prior_shape - 1.0) / Z - self.prior_rate
        return grad.reshape(len(Z), -1)

    # -- evaluation
    def expected_covariance(self, q: GammaNatural) -> np.ndarray:
        """Σ̄ = E_q[ZZᵀ] + σ²I = E[Z]E[Z]ᵀ + diag(Σ_k Var Z_jk) + σ²I."""
        shape, rate = q.shape_rate()
        mean, var = shape / rate, shape / rate**2
        return mean @ mean.T + np.diag(var.sum(1)) + self.noise_variance * np.eye(self.D)

    @staticmethod
    def _gauss_logpdf(Y: np.ndarray, sigma: np.ndarray) -> np.ndarray:
        """log N(yᵢ | 0, Σ) for rows of Y (N, D) and one Σ or a stack (S, D, D) -> (N,) or (S, N)."""
        chol = np.linalg.cholesky(sigma)
        logdet = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(-1)
        # L⁻¹ is D × D: whitening by a matrix product, not a general solve against N right-hand sides
        white = np.linalg.inv(chol) @ Y.T
        maha = (white**2).sum(-2)
        return -0.5 * (Y.shape[1] * LOG_2PI + np.asarray(logdet)[..., None] + maha)

    def evaluate(self, posterior: Blocks, rng: np.random.Generator) -> dict[str, float]:
        q = posterior["Z"]
        shape, rate = q.shape_rate()
        draws = gamma_draws(shape, rate, rng.uniform(size=(self.eval_samples, self.D, self.K))).z
        out = {"elbo": float(np.mean(self.loglik(draws)) - q.kl(self.prior).sum())}
        Yt = self.data.test.get("Y")
        if Yt is not None and len(Yt):
            out["neg_test_loglik"] = float(-np.mean(self._gauss_logpdf(Yt, self.expected_covariance(q))))
            out["heldout_loglik"] = self._predictive(Yt if self.test_subset is None else Yt[self.test_subset], draws)
        return with_whole(out, ("heldout_loglik",), self.test_subset)

    def evaluate_final(self, posterior: Blocks, rng: np.random.Generator) -> dict[str, float]:
        """With a subset of the test rows at the checkpoints (``eval_test``): ``heldout_loglik`` on every one, from
        new draws of q."""
        if self.test_subset is None:
            return {}
        shape, rate = posterior["Z"].shape_rate()
        draws = gamma_draws(shape, rate, rng.uniform(size=(self.eval_samples, self.D, self.K))).z
        return whole_metrics({"heldout_loglik": self._predictive(self.data.test["Y"], draws)}, ("heldout_loglik",))

    def final_evaluation_ratio(self) -> float:
        """N_test / ``eval_test``: the predictive's whitenings, linear in the rows, are most of an evaluation."""
        return 0.0 if self.test_subset is None else len(self.data.test["Y"]) / self.test_subset.size

    def _predictive(self, Y: np.ndarray, draws: np.ndarray) -> float:
        """(1/N) Σᵢ log (1/S) Σ_s N(yᵢ | 0, Σ_s) of the rows of ``Y`` under the draws Z_s."""
        per_draw = self._gauss_logpdf(Y, self._covariance(draws))  # (S, N)
        return float(np.mean(logsumexp(per_draw, axis=0) - np.log(len(draws))))
