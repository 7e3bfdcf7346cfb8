"""Bayesian logistic regression (Khan & Lin 2017, §7 and App. E.1).

    z ~ N(0, diag(1/δ_d)),   yₙ ~ Bernoulli(σ(x̃ₙᵀz)),   x̃ₙ = (1, xₙ)

Prior convention (the CVI authors' code, emtiyaz/cvi): a bias column is
prepended to X, and δ is a **precision** — the prior is N(0, δ⁻¹I) on the
weights and N(0, 1/``bias_precision``) on the bias (default precision 1e-4).
The δ values of the authors' ``get_expt_params`` (a1a 2.8072, a7a 5.0,
colon-cancer 596.362332, australian 1e-5, breast-cancer 1.0, covtype 0.002) are
passed as ``delta``.

Offers the latent-Gaussian capability (design X̃, diagonal prior precision,
logistic log-likelihood with derivatives) and the log joint (for BBVI, with
mean-field and full-covariance Gaussian families; its gradient also compiled,
:mod:`.logistic_kernels`, for fused ADVI steps), and — by Pólya-Gamma
augmentation (:mod:`.polya_gamma`) — the conditionally conjugate capability
(SVI family, batch VMP) and a Gibbs sampler.  Metrics: the ELBO and
negative ELBO on the training data, with the accurate Gaussian expectations
of :mod:`.logistic_expectation` (Table 3's "negative log-lik"); test log loss
in bits with p̂ₙ = ∫σ(f)N(f|mₙ, vₙ)df (Table 3's "log loss"); test error;
mean held-out log-likelihood in nats; ``elbo_augmented``, the Jaakkola–Jordan
bound (the PG-augmented ELBO at the optimal q(ω)), a lower bound of ``elbo``.
Every algorithm's q(z), whatever its family, is scored with the same ``elbo``.
With ``eval_test`` the test metrics are estimated at every checkpoint on a seeded subset of the test points and
measured on every one at the last (``test_logloss_bits_whole``, …: :mod:`svibench.evaluation_subset`).

:class:`LatentLogisticModel` holds what logistic regression and GP
classification share: the likelihood, its Gaussian expectations, the
variational families, the Pólya-Gamma augmentation and the ELBO.

``neg_elbo_authors`` is the negative ELBO as the authors' code computes it
(emtiyaz/cvi, ``chol_log_reg.m``), Table 3's "Neg-Log-Lik": its expectations are
the piecewise bound of Marlin, Khan & Murphy (2011) (:mod:`.logistic_piecewise`,
so it is ≥ the exact neg_elbo on that account), and its KL term sums the log prior
precisions over the weights only, leaving out the bias's ½ log(bias_precision).

``expectation`` chooses what the model hands the latent-Gaussian algorithms as
E_q[log p(yₙ|ηₙ)] (their ``quadrature = "accurate"``): ``"accurate"`` (~1e-10
relative) or ``"piecewise"``, the authors' bound, with which CVI-exact, PG-exact
and Chol follow the authors' code.  The metrics ``elbo`` and ``neg_elbo`` stay
exact either way.
"""
from __future__ import annotations

from typing import ClassVar

import numpy as np
import scipy.sparse
from scipy.special import expit

from svibench.capabilities import ConjugatePosterior
from svibench.capabilities.compiled_log_joint import CompiledGradient
from svibench.capabilities.jax_log_joint import JaxLogDensity
from svibench.capabilities.latent_gaussian import (
    ExpectedLoglik,
    GaussianPosterior,
    LatentGaussianPrior,
    kl_to_prior,
    quadratic_rows,
)
from svibench.data import Dataset
from svibench.evaluation_subset import draw_subset, subset_refusal, whole_declarations, whole_metrics, with_whole
from svibench.expfam import LOG_2PI, GaussianFullNatural
from svibench.metrics import Metric, metric_table
from svibench.model import IncompatibleData, Model, per_checkpoint

from . import logistic_kernels
from .gaussian_families import FullGaussian, MeanFieldGaussian
from .logistic_expectation import expected_log_sigmoid, expected_log_sigmoid_value, expected_sigmoid, sigmoid_moments
from .logistic_piecewise import expected_bernoulli_logit_bound, expected_llp_bound_value
from .polya_gamma import LatentView, PolyaGammaAugmented, PolyaGammaChain, jaakkola_jordan

__all__ = ["BayesianLogisticRegression", "LatentLogisticModel", "logistic_loglik", "predictive_probability",
           "LOGISTIC_METRICS", "jax_logistic_loglik", "jax_logreg_log_joint"]

#: The metrics of a latent Gaussian model with a Bernoulli likelihood (logistic regression, GP classification).
#: Bernoulli probabilities are at most 1, so the ELBO (≤ log p(y)) and the test log-likelihoods are ≤ 0.
#: ``neg_elbo_authors`` is the objective shifted by a constant (an objective: its f* is on its own scale);
#: ``elbo_augmented`` is a looser bound of the same q, what the Pólya-Gamma SVI/VMP climb: a diagnostic of that gap,
#: no fair key for ranking every family.
LOGISTIC_METRICS = metric_table(
    Metric("elbo", "higher", "objective", "nats", high=0.0,
           description="exact ELBO Σ E_q log σ(sη) − KL(q ‖ p) of q(z), expectations accurate to ~1e-10, every family alike"),
    Metric("neg_elbo", "lower", "objective", "nats", low=0.0, description="−elbo (Khan & Lin 2017's 'negative log-lik')"),
    Metric("neg_elbo_authors", "lower", "objective", "nats",
           description="the negative ELBO as the authors' code computes it (Table 3's 'Neg-Log-Lik'): the piecewise "
                       "bound's expectations, the bias's ½ log(bias_precision) left out of the KL"),
    Metric("elbo_augmented", "higher", "diagnostic", "nats", rankable=False, high=0.0,
           description="Jaakkola–Jordan bound (PG-augmented ELBO at the optimal q(ω)) ≤ elbo: the PG methods' objective"),
    Metric("test_logloss_bits", "lower", "task", "bits per test point", low=0.0,
           description="test log loss −mean log₂ p̂(y*) with p̂ = ∫σ(f)N(f|m*, v*)df (Table 3's 'log loss')"),
    Metric("test_logloss_nats", "lower", "task", "nats per test point", low=0.0,
           description="test log loss in nats (the authors' GP code)"),
    Metric("test_error", "lower", "task", "fraction of test points", low=0.0, high=1.0,
           description="fraction of test points with p̂ on the wrong side of 0.5"),
    Metric("heldout_loglik", "higher", "task", "nats per test point", high=0.0,
           description="mean log p̂(y*) of the test labels (= −test_logloss_nats)"),
)


def logistic_loglik(eta: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """log σ(sη) with s = 2y − 1, and its first two derivatives in η.

    ``y`` (0/1) broadcasts against ``eta`` along its first axis.
    """
    s = (2.0 * y - 1.0).reshape((-1,) + (1,) * (eta.ndim - 1))
    f = -np.logaddexp(0.0, -s * eta)
    p = expit(eta)
    return f, logistic_dloglik(eta, y), -p * (1.0 - p)


def logistic_dloglik(eta: np.ndarray, y: np.ndarray) -> np.ndarray:
    """∂ log σ(sη)/∂η = s σ(−sη), s = 2y − 1 (alone: a reparameterised gradient needs nothing else)."""
    s = (2.0 * y - 1.0).reshape((-1,) + (1,) * (eta.ndim - 1))
    return s * expit(-s * eta)


def jax_logistic_loglik(eta, y):
    """Σₙ log σ(sₙηₙ), s = 2y − 1, in JAX (jax imported here: the module imports without it)."""
    import jax.numpy as jnp

    return -jnp.sum(jnp.logaddexp(0.0, -(2.0 * y - 1.0) * eta))


def jax_logreg_log_joint(z, X, y, precision):
    """log p(y, z) of logistic regression in JAX: Σₙ log σ(sₙ x̃ₙᵀz) + Σ_d log N(z_d | 0, 1/δ_d)."""
    import jax.numpy as jnp

    log_prior = 0.5 * jnp.sum(jnp.log(precision) - LOG_2PI - precision * z**2)
    return jax_logistic_loglik(X @ z, y) + log_prior


def predictive_probability(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """p̂ = ∫ σ(f) N(f | m, v) df (accurate to ~1e-10 relative, :mod:`.logistic_expectation`)."""
    return expected_sigmoid(m, v)


def binary_metrics(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Test log loss (bits and nats), error rate and mean log-likelihood of predictive probabilities p̂(y* = 1)
    (:func:`predictive_probability` of the test points' marginals)."""
    p = np.clip(p, 1e-300, 1.0 - 1e-16)
    loglik = y * np.log(p) + (1.0 - y) * np.log1p(-p)
    return {
        "test_logloss_bits": float(-np.mean(loglik) / np.log(2.0)),
        "test_logloss_nats": float(-np.mean(loglik)),
        "test_error": float(np.mean((p > 0.5) != (y > 0.5))),
        "heldout_loglik": float(np.mean(loglik)),
    }


#: The test metrics a seeded subset of the test points estimates at every checkpoint (``eval_test``) and the last
#: checkpoint measures on every one (``_whole``).
TEST_METRICS = ("test_logloss_bits", "test_logloss_nats", "test_error", "heldout_loglik")

#: The choices of :class:`BayesianLogisticRegression`'s ``expectation``.
EXPECTATIONS = ("accurate", "piecewise")

#: Below this fraction of nonzeros the design is kept sparse (CSR).
SPARSE_DENSITY = 0.25


def _with_bias(X):
    """[1, X], as CSR when X is sparse enough, else a dense array."""
    X = scipy.sparse.csr_matrix(X, dtype=float)
    Xb = scipy.sparse.hstack([np.ones((X.shape[0], 1)), X], format="csr")
    return Xb if Xb.nnz < SPARSE_DENSITY * np.prod(Xb.shape) else Xb.toarray()


def weighted_gram(X, w: np.ndarray) -> np.ndarray:
    """Xᵀ diag(w) X as a dense array, for dense or sparse X."""
    XtW = X.multiply(w[:, None]).T if scipy.sparse.issparse(X) else (X * w[:, None]).T
    return np.asarray((XtW @ X).todense() if scipy.sparse.issparse(X) else XtW @ X)


class LatentLogisticModel(PolyaGammaAugmented, Model):
    """A latent Gaussian model with likelihood yₙ ~ Bernoulli(σ(ηₙ)) (0/1 labels ``self.y``).

    Subclasses give the latent dimension, the training marginals q(ηₙ) = N(mₙ, vₙ)
    and what :class:`~.polya_gamma.PolyaGammaAugmented` needs.
    """

    family_kinds: ClassVar[tuple[str, ...]] = ("meanfield", "full")
    posterior_types = (GaussianPosterior, ConjugatePosterior, PolyaGammaChain)
    y: np.ndarray
    #: The test points every checkpoint scores, as sorted indices; None: every one (logistic regression's
    #: ``eval_test``: :mod:`svibench.evaluation_subset`).
    test_subset: np.ndarray | None = None

    @property
    def latent_dim(self) -> int:
        """Dimension of z."""
        raise NotImplementedError

    def train_marginals(self, q: GaussianPosterior) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances of ηₙ under q, for every training datum."""
        raise NotImplementedError

    def loglik(self, eta: np.ndarray, batch: np.ndarray | None = None):
        return logistic_loglik(eta, self.y if batch is None else self.y[batch])

    def gaussian_expectation(self, m: np.ndarray, v: np.ndarray, batch: np.ndarray | None = None) -> ExpectedLoglik:
        """E[log σ(sₙηₙ)], ηₙ ~ N(mₙ, vₙ), sₙ = 2yₙ − 1, and its derivatives (t = sη ~ N(sm, v))."""
        s = 2.0 * (self.y if batch is None else self.y[batch]) - 1.0
        value, dmu, dv = expected_log_sigmoid(s * m, v)
        return ExpectedLoglik(value, s * dmu, dv)

    def likelihood_moments(self, m: np.ndarray, v: np.ndarray, batch: np.ndarray | None = None):
        """log Z, ∂ log Z/∂m, ∂² log Z/∂m² for Zₙ = E[σ(sₙηₙ)], ηₙ ~ N(mₙ, vₙ) (t = sη ~ N(sm, v))."""
        s = 2.0 * (self.y if batch is None else self.y[batch]) - 1.0
        Z, dZ, d2Z = sigmoid_moments(s * m, v)
        return np.log(Z), s * dZ / Z, d2Z / Z - (dZ / Z) ** 2

    def variational_family(self, kind: str):
        families = {"meanfield": MeanFieldGaussian, "full": FullGaussian}
        if kind not in families:
            raise ValueError(f"{self.name} offers variational families {self.family_kinds}, not {kind!r}")
        return families[kind](self.latent_dim)

    def posterior_from_gaussian(self, q: GaussianPosterior) -> GaussianPosterior:
        """q(z) itself: ``evaluate`` takes a GaussianPosterior (capability :mod:`~svibench.capabilities.jax_log_joint`)."""
        return q

    def test_marginals(self, mean: np.ndarray, cov: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances of the test points' ψ* under N(mean, cov) (``cov`` None: ``mean`` is a point, or
        columns of points, and the variances are what ψ* keeps given it)."""
        raise NotImplementedError

    # -- comparison with a reference posterior (svibench.reference.capability)
    def latent_moments(self, posterior) -> GaussianPosterior:
        return self.gaussian(posterior)

    def chain_latent(self, state: PolyaGammaChain) -> np.ndarray:
        return state.z.copy()

    def test_probabilities(self, q: GaussianPosterior, whole: bool = False) -> np.ndarray | None:
        """p̂(y* = 1) = ∫σ(ψ*)N(ψ*|m*, v*)dψ* under q of the test points a checkpoint scores
        (:attr:`test_subset`), or of every one (``whole``); None: no test set."""
        return None if not self.has_test else self.test_predictive(q, whole or self.test_subset is None)

    @per_checkpoint
    def test_predictive(self, q: GaussianPosterior, whole: bool) -> np.ndarray:
        """:meth:`test_probabilities` of a model with a test set, once per checkpoint: the test metrics
        (:meth:`evaluate`) and the reference's predictive KL read the same (on a1a's 30,956 test points it is
        most of a checkpoint's scoring)."""
        return predictive_probability(*self.posterior_test_marginals(q, whole))

    def posterior_test_marginals(self, q: GaussianPosterior, whole: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`test_marginals` under q itself, of every test point or of :attr:`test_subset`'s (a model may read
        q's factor instead of its covariance, and only the subset's rows)."""
        m, v = self.test_marginals(q.mean, q.cov)
        return (m, v) if whole or self.test_subset is None else (m[self.test_subset], v[self.test_subset])

    def test_probabilities_of_draws(self, draws: np.ndarray, chunk: int = 256) -> np.ndarray | None:
        """The posterior predictive p(y* = 1) of every test point, averaged over ``draws`` (S, D) of z."""
        if not self.has_test:
            return None
        total = 0.0
        for start in range(0, len(draws), chunk):
            m, v = self.test_marginals(draws[start:start + chunk].T, None)  # (n_test, draws)
            p = expit(m) if not np.any(v) else predictive_probability(m.ravel(), np.broadcast_to(v, m.shape).ravel())
            total = total + p.reshape(m.shape).sum(1)
        return total / len(draws)

    def elbo(self, q: GaussianPosterior) -> float:
        """Σₙ E_q[log p(yₙ|ηₙ)] − KL(q ‖ p), the expectations accurate to ~1e-10 relative."""
        return self.elbo_metrics(q)["elbo"]

    def elbo_metrics(self, q: GaussianPosterior) -> dict[str, float]:
        """``elbo``, ``neg_elbo`` and ``elbo_augmented`` (Σₙ of :func:`~.polya_gamma.jaakkola_jordan` − KL) of q(z)."""
        return self._elbo_terms(q)[0]

    def _elbo_terms(self, q: GaussianPosterior) -> tuple[dict[str, float], np.ndarray, np.ndarray, float]:
        """:meth:`elbo_metrics` and what they were made of: the training marginals m, v and KL(q ‖ p).  The
        expectations are values alone (:func:`expected_log_sigmoid_value`), whatever the algorithms are handed."""
        m, v = self.train_marginals(q)
        kl = kl_to_prior(q, self.latent_prior())
        s = 2.0 * self.y - 1.0
        elbo = float(expected_log_sigmoid_value(s * m, v).sum() - kl)
        return {"elbo": elbo, "neg_elbo": -elbo, "elbo_augmented": float(jaakkola_jordan(s, m, v).sum() - kl)}, m, v, kl


class BayesianLogisticRegression(LatentLogisticModel):
    """Bayesian logistic regression with a Gaussian prior (bias column prepended).

    Parameters
    ----------
    data : Dataset of kind ``"classification"`` with ``X`` (N, D) and 0/1 ``y``.
    delta : float
        Prior precision δ of the weights (Table 3 lists it per dataset).
    bias_precision : float
        Prior precision of the bias (1e-4 in the authors' code).
    expectation : {"accurate", "piecewise"}
        E_q[log p(yₙ|ηₙ)] handed to the latent-Gaussian algorithms: accurate to ~1e-10, or the
        piecewise bound of the authors' code (module docstring).
    eval_test : int ≥ 0
        The test points scored at every checkpoint (the test metrics and the reference's predictive KL): a
        seeded random subset of that many (0: every one), with every one at the last checkpoint
        (``test_logloss_bits_whole``, … and ``ref_predictive_kl_whole``): a checkpoint's predictive costs a
        fraction of scoring all of them (a1a's 30,956 test points are most of its checkpoint).
    eval_seed : int
        Seed of that subset: one subset for every method, seed and checkpoint of a problem.
    """

    name = "logreg"
    conformance_problem = {"dataset": "breast-cancer", "dataset_params": {"split": 0}, "model_params": {"delta": 1.0}, "steps": 10}
    data_kinds = ("classification",)
    metrics = {**LOGISTIC_METRICS,
               **metric_table(*whole_declarations(LOGISTIC_METRICS, TEST_METRICS, "every test point (eval_test)"))}
    evaluation_params: ClassVar[tuple[str, ...]] = ("eval_test", "eval_seed")
    row_params: ClassVar[tuple[str, ...]] = ("eval_test",)
    #: Exact for every q (a Gibbs chain is scored by its Gaussian moments).
    answer = "elbo"
    #: How the algorithms take E_q[log p(yₙ|ηₙ)]: the posterior does not depend on it.
    approximation_params = ("expectation",)
    primary = ("elbo", "test_logloss_bits", "test_error")

    def __init__(self, data: Dataset, *, delta: float = 1.0, bias_precision: float = 1e-4,
                 expectation: str = "accurate", eval_test: int = 0, eval_seed: int = 0) -> None:
        super().__init__(data)
        if delta <= 0 or bias_precision <= 0:
            raise ValueError(f"logreg: delta and bias_precision are precisions and must be > 0, got {delta}, {bias_precision}")
        if expectation not in EXPECTATIONS:
            raise ValueError(f"logreg: expectation must be one of {', '.join(EXPECTATIONS)}, got {expectation!r}")
        self.expectation = expectation
        y = np.asarray(data.train["y"], dtype=float)
        if not np.all((y == 0) | (y == 1)):
            raise IncompatibleData(f"logreg needs 0/1 labels; {data.name} has {np.unique(y)}")
        self.delta, self.bias_precision = delta, bias_precision
        self.X = _with_bias(data.train["X"])
        self.y = y
        self.X_test = _with_bias(data.test["X"]) if "X" in data.test else None
        self.y_test = np.asarray(data.test["y"], dtype=float) if "y" in data.test else None
        self.precision = np.full(self.X.shape[1], float(delta))
        self.precision[0] = bias_precision
        why = self.data_refusal(data, {"eval_test": eval_test})
        if why:
            raise ValueError(f"logreg: {why}")
        self.X_scored, self.y_scored = self.X_test, self.y_test  # the test points a checkpoint scores
        if self.has_test:
            self.test_subset = draw_subset(eval_test, self.X_test.shape[0], eval_seed, "eval_test", "test points")
            if self.test_subset is not None:
                self.X_scored, self.y_scored = self.X_test[self.test_subset], self.y_test[self.test_subset]

    @classmethod
    def data_refusal(cls, data: Dataset, params: dict) -> str:
        """An ``eval_test`` that is not a subset of the test points, or set on data without a test set."""
        size, X = params.get("eval_test", 0), data.test.get("X")
        if size and X is None:
            return f"eval_test = {size!r}: {data.name!r} has no test set; remove eval_test"
        return subset_refusal(size, X.shape[0], "eval_test", "test points") if size else ""

    @property
    def n_train(self) -> int:
        return self.X.shape[0]

    @property
    def latent_dim(self) -> int:
        return self.X.shape[1]

    def train_marginals(self, q: GaussianPosterior) -> tuple[np.ndarray, np.ndarray]:
        return self.X @ q.mean, q.quadratic_rows(self.X)

    # -- capability: latent Gaussian
    def latent_prior(self) -> LatentGaussianPrior:
        return LatentGaussianPrior(precision=self.precision.copy())

    def design(self):
        return self.X

    # -- Pólya-Gamma augmentation (models.polya_gamma)
    def _prior_gaussian(self) -> GaussianFullNatural:
        return GaussianFullNatural(np.zeros(self.latent_dim), -0.5 * np.diag(self.precision))

    def _row_marginals(self, view: LatentView, batch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        X = self.X[batch]
        return X @ view.mean, (np.zeros(len(batch)) if view.cov is None else quadratic_rows(X, view.cov))

    def _row_natural(self, batch: np.ndarray, kappa: np.ndarray, omega: np.ndarray) -> GaussianFullNatural:
        X = self.X[batch]
        return GaussianFullNatural(np.asarray(X.T @ kappa).ravel(), -0.5 * weighted_gram(X, omega))

    # -- capability: log joint
    def _loglik_sum(self, z: np.ndarray, batch: np.ndarray | None, grad: bool = False) -> np.ndarray:
        """Σₙ log p(yₙ | z) per draw (minibatch-scaled), shape (S,); with ``grad`` its z-gradient, (S, D)."""
        X = self.X if batch is None else self.X[batch]
        y = self.y if batch is None else self.y[batch]
        scale = 1.0 if batch is None else self.n_train / len(batch)
        eta = X @ z.T  # (n, S)
        if grad:
            return scale * np.asarray(X.T @ logistic_dloglik(eta, y)).T
        return scale * logistic_loglik(eta, y)[0].sum(0)

    def _log_prior(self, z: np.ndarray) -> np.ndarray:
        """Per-coordinate log N(z_d | 0, 1/δ_d), shape (S, D)."""
        return 0.5 * (np.log(self.precision) - LOG_2PI) - 0.5 * self.precision * z**2

    def log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        return self._loglik_sum(z, batch) + self._log_prior(z).sum(1)

    def log_joint_blocks(self, z: np.ndarray, kind: str, batch: np.ndarray | None = None) -> np.ndarray:
        """Every likelihood term involves every coordinate: block d's Markov blanket is all data plus its prior."""
        lik = self._loglik_sum(z, batch)
        if kind == "full":
            return (lik + self._log_prior(z).sum(1))[:, None]
        return lik[:, None] + self._log_prior(z)

    def grad_log_joint(self, z: np.ndarray, batch: np.ndarray | None = None) -> np.ndarray:
        return self._loglik_sum(z, batch, grad=True) - self.precision * z

    # -- capability: the log-joint gradient compiled (numba), for BBVI's fused reparameterised steps
    def compiled_grad_log_joint(self) -> CompiledGradient | None:
        """A dense design's kernel (:mod:`.logistic_kernels`); None for a sparse one, where scipy's products win."""
        if scipy.sparse.issparse(self.X):
            return None
        return CompiledGradient(logistic_kernels.dense_grad_log_joint,
                                (np.ascontiguousarray(self.X), 2.0 * self.y - 1.0, self.precision))

    # -- capability: JAX log joint, the design densified: XLA's dense products beat its sparse ones here
    # (a7a, 11% nonzeros: NumPyro ADVI 2.3 ms/step dense, 4.5 ms/step with a segment-sum product)
    def jax_log_joint(self) -> JaxLogDensity:
        X = self.X.toarray() if scipy.sparse.issparse(self.X) else np.asarray(self.X)
        return JaxLogDensity(jax_logreg_log_joint, (X, self.y, self.precision))

    # -- evaluation
    @property
    def has_test(self) -> bool:
        return self.X_test is not None

    def test_marginals(self, mean: np.ndarray, cov: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        m = self.X_test @ mean
        return m, (np.zeros(()) if cov is None else quadratic_rows(self.X_test, cov))

    def posterior_test_marginals(self, q: GaussianPosterior, whole: bool = True) -> tuple[np.ndarray, np.ndarray]:
        X = self.X_test if whole else self.X_scored
        return X @ q.mean, q.quadratic_rows(X)

    # -- capability: latent Gaussian, the expectation the study chose
    def gaussian_expectation(self, m: np.ndarray, v: np.ndarray, batch: np.ndarray | None = None) -> ExpectedLoglik:
        if self.expectation == "accurate":
            return super().gaussian_expectation(m, v, batch)
        return ExpectedLoglik(*expected_bernoulli_logit_bound(self.y if batch is None else self.y[batch], m, v))

    def elbo_metrics(self, q: GaussianPosterior) -> dict[str, float]:
        """The exact ``elbo``, ``neg_elbo`` and ``elbo_augmented`` (whatever ``expectation`` is), and
        ``neg_elbo_authors``: the authors' ``chol_log_reg`` objective, −(Σₙ bound − KL′) with KL′ = KL + ½ log δ_bias."""
        out, m, v, kl = self._elbo_terms(q)
        bound = float((self.y * m - expected_llp_bound_value(m, v)).sum())  # the authors' bound, its value alone
        return {**out, "neg_elbo_authors": -(bound - kl) + 0.5 * np.log(self.bias_precision)}

    def evaluate(self, posterior, rng: np.random.Generator) -> dict[str, float]:
        """Metrics of q(z): a GaussianPosterior, SVI/VMP's λ or the PG Gibbs chain (:meth:`gaussian`)."""
        q = self.gaussian(posterior)
        out = self.elbo_metrics(q)
        if self.has_test:
            out.update(binary_metrics(self.test_probabilities(q), self.y_scored))
        return with_whole(out, TEST_METRICS, self.test_subset)

    def evaluate_final(self, posterior, rng: np.random.Generator) -> dict[str, float]:
        """With a subset of the test points at the checkpoints (``eval_test``): the ``_whole`` test metrics, on
        every test point."""
        if self.test_subset is None:
            return {}
        return whole_metrics(binary_metrics(self.test_probabilities(self.gaussian(posterior), whole=True), self.y_test),
                             TEST_METRICS)

    def final_evaluation_ratio(self) -> float:
        """Test points over the rows a checkpoint reads (training rows and scored test points): an upper estimate,
        since a training row's ELBO terms (two expectations) cost more than a test point's predictive (one)."""
        if self.test_subset is None:
            return 0.0
        return self.X_test.shape[0] / (self.n_train + self.test_subset.size)
