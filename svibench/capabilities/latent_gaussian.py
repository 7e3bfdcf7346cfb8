"""Capability 2: latent Gaussian models with a per-datum likelihood.

For CVI (Khan & Lin 2017, Algorithm 1), CVI-exact, NC-VMP and direct
L-BFGS (Chol).  The model is

    z ~ N(0, Σ₀),     ηₙ = xₙᵀ z  (or ηₙ = zₙ for a GP),     yₙ ~ p(yₙ | ηₙ),

with Σ₀ either diagonal (given by its precisions, e.g. Bayesian logistic
regression) or a kernel matrix K (GP classification, where the design is the
identity).  An algorithm needs the prior, the design, and the per-datum
log-likelihood with its first two derivatives in ηₙ, and the model's own
accurate E_q[log p(yₙ|ηₙ)] under q(ηₙ) = N(mₙ, vₙ) with its gradients w.r.t.
mₙ and vₙ (``gaussian_expectation``; closed forms or quadrature designed for
the likelihood).  :func:`expected_loglik` returns that expectation, or
computes it from the derivatives by Monte Carlo or Gauss–Hermite (the same
formula, :mod:`svibench.numerics.quadrature`), and
:func:`mean_parameter_gradients` turns them into gradients w.r.t. the mean
parameters μ⁽¹⁾ = m, μ⁽²⁾ = v + m² (Khan & Lin 2017, App. B.1).

Every algorithm hands the model a :class:`GaussianPosterior` over z.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.linalg
import scipy.sparse

from ..errors import Diverged
from ..numerics.quadrature import Rule
from ..numerics.spd import inverse_from_cholesky

__all__ = [
    "LatentGaussian",
    "LikelihoodMoments",
    "LatentGaussianPrior",
    "GaussianPosterior",
    "GaussianFromSites",
    "ExpectedLoglik",
    "expected_loglik",
    "mean_parameter_gradients",
    "kl_to_prior",
    "quadratic_rows",
]


@dataclass(frozen=True)
class LatentGaussianPrior:
    """z ~ N(0, Σ₀): give exactly one of ``precision`` (diagonal Σ₀⁻¹, shape (D,)) or ``cov`` (K, (D, D)); with
    ``cov``, optionally its lower Cholesky factor ``scale_tril`` (a model that holds it: :func:`kl_to_prior` then
    does not decompose K at every checkpoint)."""

    precision: np.ndarray | None = None
    cov: np.ndarray | None = None
    scale_tril: np.ndarray | None = None

    def __post_init__(self) -> None:
        if (self.precision is None) == (self.cov is None):
            raise ValueError("LatentGaussianPrior takes exactly one of precision (diagonal) or cov (kernel)")
        if self.scale_tril is not None and self.cov is None:
            raise ValueError("LatentGaussianPrior's scale_tril is the Cholesky factor of cov; give cov too")

    @property
    def dim(self) -> int:
        return len(self.precision) if self.precision is not None else self.cov.shape[0]


class GaussianPosterior:
    """q(z) = N(mean, cov) — the posterior every latent-Gaussian algorithm reports.

    Given by ``cov``, or by a form the algorithm holds: ``scale_tril`` L with cov = LLᵀ, ``precision_tril`` L with
    cov⁻¹ = LLᵀ, or ``low_rank`` (d, G) with cov = diag(d) − GᵀG (a diagonal prior updated by N < D sites, G of
    shape (N, D)).  From these, :attr:`cov` is formed only when read (D³ or D²N flops: on colon-cancer's D = 2,000
    weights, most of a checkpoint), since a model's metrics mostly need only diag(X cov Xᵀ)
    (:meth:`quadratic_rows`), diag(cov) (:meth:`variances`) and log|cov| (:attr:`logdet`), which the factor gives in
    D²N and D³/3 flops, the low-rank form in DN per row.  :func:`kl_to_prior` uses ``scale_tril`` instead of
    decomposing cov (which can fail in floating point when L's diagonal spans many decades).  ``logdet``, when known
    more cheaply than from cov (log|Σ| by the determinant lemma from an N × N factor when N < D; −log|Λ| from
    ``precision_tril``, which sets it), spares :func:`kl_to_prior` a D × D Cholesky under a diagonal prior.
    ``cov`` may also be a vector of variances (a diagonal q)."""

    def __init__(self, mean: np.ndarray, cov: np.ndarray | None = None, scale_tril: np.ndarray | None = None,
                 logdet: float | None = None, *, precision_tril: np.ndarray | None = None,
                 low_rank: tuple[np.ndarray, np.ndarray] | None = None) -> None:
        if cov is None and scale_tril is None and precision_tril is None and low_rank is None:
            raise ValueError("GaussianPosterior needs cov, scale_tril, precision_tril or low_rank")
        self.mean, self.scale_tril, self.precision_tril, self.low_rank = mean, scale_tril, precision_tril, low_rank
        if precision_tril is not None and logdet is None:
            logdet = -2.0 * float(np.sum(np.log(np.diag(precision_tril))))
        self.logdet = logdet
        if cov is not None:
            self.__dict__["cov"] = cov

    def with_mean(self, mean: np.ndarray) -> "GaussianPosterior":
        """The same covariance, in the same form, about another mean."""
        return GaussianPosterior(mean, self.cov if self._has_cov() else None, self.scale_tril, self.logdet,
                                 precision_tril=self.precision_tril, low_rank=self.low_rank)

    @functools.cached_property
    def cov(self) -> np.ndarray:
        """Σ, formed from the factor the first time it is read."""
        if self.scale_tril is not None:
            return self.scale_tril @ self.scale_tril.T
        if self.low_rank is not None:
            d, G = self.low_rank
            return np.diag(d) - G.T @ G
        return inverse_from_cholesky(self.precision_tril)

    def _has_cov(self) -> bool:
        return "cov" in self.__dict__ or all(f is None for f in (self.precision_tril, self.scale_tril, self.low_rank))

    def variances(self) -> np.ndarray:
        """diag(Σ): from Σ if formed, else the row norms of ``scale_tril``, d − the column norms of the low-rank
        form's G, or the column norms of ``precision_tril``'s inverse."""
        if self._has_cov():
            return np.diag(self.cov) if np.ndim(self.cov) == 2 else np.asarray(self.cov)
        if self.scale_tril is not None:
            return np.einsum("ij,ij->i", self.scale_tril, self.scale_tril)
        if self.low_rank is not None:
            d, G = self.low_rank
            return d - np.einsum("nd,nd->d", G, G)
        inv, info = scipy.linalg.lapack.dtrtri(self.precision_tril, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError(f"trtri: the factor is singular (info = {info})")
        inv = np.tril(inv)
        return np.einsum("ij,ij->j", inv, inv)

    def quadratic_rows(self, X) -> np.ndarray:
        """diag(X Σ Xᵀ) for a dense or sparse X of N rows: from the low-rank form when given (D times its rank
        per row), else from Σ when it is formed or D ≤ N (forming it costs less than the factor's D²N then), else
        from the factor."""
        if self.low_rank is not None:
            d, G = self.low_rank
            XG = np.asarray(X @ G.T)
            Xsq = X.multiply(X) if scipy.sparse.issparse(X) else np.square(X)
            return np.asarray(Xsq @ d).ravel() - np.einsum("nr,nr->n", XG, XG)
        D = len(self.mean)
        if self._has_cov() or D <= X.shape[0]:
            return quadratic_rows(X, self.cov)
        X = X.toarray() if scipy.sparse.issparse(X) else np.asarray(X)
        if self.scale_tril is not None:
            XL = X @ self.scale_tril
            return np.einsum("nd,nd->n", XL, XL)
        W = scipy.linalg.solve_triangular(self.precision_tril, X.T, lower=True, check_finite=False)
        return np.einsum("dn,dn->n", W, W)


def quadratic_rows(X, cov: np.ndarray) -> np.ndarray:
    """diag(X cov Xᵀ) for dense or sparse X."""
    XC = X @ cov
    return np.asarray(X.multiply(XC).sum(1)).ravel() if scipy.sparse.issparse(X) else np.einsum("nd,nd->n", XC, X)


@runtime_checkable
class LatentGaussian(Protocol):
    """A latent Gaussian model with independent per-datum likelihood terms."""

    n_train: int

    def latent_prior(self) -> LatentGaussianPrior:
        """The Gaussian prior of z."""

    def design(self) -> np.ndarray | scipy.sparse.spmatrix | None:
        """X of shape (N, D) with ηₙ = xₙᵀz (dense or sparse), or None when ηₙ = zₙ (GP)."""

    def loglik(self, eta: np.ndarray, batch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log p(yₙ|ηₙ) and its first and second derivatives in ηₙ.

        ``eta`` has shape (len(batch), K): K values of ηₙ for each datum n of
        ``batch`` (all data when None).  Returns three arrays of that shape.
        """

    def gaussian_expectation(self, m: np.ndarray, v: np.ndarray, batch: np.ndarray | None = None) -> ExpectedLoglik:
        """E[log p(yₙ|ηₙ)] for ηₙ ~ N(mₙ, vₙ), with its derivatives in mₙ and vₙ, accurate to ~1e-10 relative.

        ``m`` and ``v`` have shape (len(batch),) (all data when None).
        """


@runtime_checkable
class LikelihoodMoments(Protocol):
    """Gaussian integrals of the likelihood itself (not its log), for expectation propagation."""

    def likelihood_moments(self, m: np.ndarray, v: np.ndarray,
                           batch: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """log Zₙ, ∂ log Zₙ/∂mₙ and ∂² log Zₙ/∂mₙ² for Zₙ = ∫ p(yₙ|η) N(η | mₙ, vₙ) dη.

        The moments of the tilted distribution p(yₙ|η)N(η|mₙ, vₙ)/Zₙ follow: mean
        mₙ + vₙ ∂ log Z/∂m, variance vₙ + vₙ² ∂² log Z/∂m² (Rasmussen & Williams 2006, eq. 3.58).
        """


@dataclass(frozen=True)
class ExpectedLoglik:
    """Per-datum f = E_q[log p(yₙ|ηₙ)] and its gradients ∂f/∂mₙ, ∂f/∂vₙ."""

    value: np.ndarray
    dm: np.ndarray
    dv: np.ndarray


def expected_loglik(model: LatentGaussian, m: np.ndarray, v: np.ndarray, rule: Rule | None,
                    batch: np.ndarray | None = None) -> ExpectedLoglik:
    """E_q[log p(yₙ|ηₙ)] under q(ηₙ) = N(mₙ, vₙ), with gradients in mₙ and vₙ.

    With ``rule`` None (the ``"accurate"`` setting of
    :func:`svibench.numerics.quadrature.expectation_rule`) this is the model's
    ``gaussian_expectation``; otherwise it is computed with the rule from ``loglik``.

    With ηₙ = mₙ + √vₙ εₖ for the rule's nodes εₖ: ∂f/∂mₙ = E[∂ log p/∂η] (Bonnet).
    For ∂f/∂vₙ two identities hold: ½ E[∂² log p/∂η²] (Price) and
    E[∂ log p/∂η · ε] / (2√vₙ) (Stein / reparameterisation).  Monte-Carlo
    rules use Price's form (lower variance for log-concave likelihoods; the
    authors' ``E_log_p_mc``); quadrature rules use the first-derivative form
    (the authors' ``likKL``): when vₙ is large the second derivative is a
    spike of width ~1 that falls between nodes spaced ~√vₙ apart, and its
    quadrature is badly wrong (GP classification with σ_f² = e¹⁰ has √vₙ ≈ 100).
    Even so, Gauss–Hermite of a log-likelihood with a bend of width ~1 is off
    when √vₙ ≫ 1 (0.7 nats on USPS GP classification with 50 nodes), hence
    the accurate default.  The same draws serve every datum (as in the authors' code).

    References
    ----------
    Opper & Archambeau (2009), "The variational Gaussian approximation revisited", eq. 5–6.
    Khan & Lin (2017), App. B.1, eq. 30–31.
    """
    if rule is None:
        return model.gaussian_expectation(m, v, batch)
    eta = m[:, None] + np.sqrt(v)[:, None] * rule.nodes[None, :]
    f, d1, d2 = model.loglik(eta, batch)
    w = rule.weights
    if rule.deterministic:
        dv = (d1 * rule.nodes[None, :]) @ w / (2.0 * np.sqrt(v))
    else:
        dv = 0.5 * (d2 @ w)
    return ExpectedLoglik(f @ w, d1 @ w, dv)


def mean_parameter_gradients(m: np.ndarray, dm: np.ndarray, dv: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gradients w.r.t. the mean parameters μ⁽¹⁾ = m, μ⁽²⁾ = v + m² of N(m, v).

    By the chain rule through m = μ⁽¹⁾, v = μ⁽²⁾ − (μ⁽¹⁾)²:
    ∂f/∂μ⁽¹⁾ = ∂f/∂m − 2m ∂f/∂v and ∂f/∂μ⁽²⁾ = ∂f/∂v.

    References
    ----------
    Khan & Lin (2017), App. B.1, eq. 30–31 (as corrected in CATALOG.md's errata).
    """
    return dm - 2.0 * m * dv, dv


def kl_to_prior(q: GaussianPosterior, prior: LatentGaussianPrior) -> float:
    """KL(N(μ, Σ) ‖ N(0, Σ₀)) = ½[tr(Σ₀⁻¹Σ) + μᵀΣ₀⁻¹μ − D + log|Σ₀| − log|Σ|].

    Computed through Cholesky factors (a GP kernel with a large signal
    variance is badly conditioned, so Σ₀⁻¹ is never formed).
    """
    mu = q.mean
    D = len(mu)
    if q.logdet is not None and prior.precision is not None:
        logdet_q, chol_q = q.logdet, None
    else:
        chol_q = q.scale_tril if q.scale_tril is not None else scipy.linalg.cholesky(q.cov, lower=True, check_finite=True)
        logdet_q = 2.0 * np.sum(np.log(np.abs(np.diag(chol_q))))
    if prior.precision is not None:
        p = prior.precision
        trace = float(np.sum(p * q.variances()))
        maha = float(np.sum(p * mu**2))
        logdet_p = -float(np.sum(np.log(p)))
    else:
        chol_p = prior.scale_tril if prior.scale_tril is not None else scipy.linalg.cholesky(prior.cov, lower=True)
        a = scipy.linalg.solve_triangular(chol_p, chol_q, lower=True)
        trace = float(np.sum(a**2))
        b = scipy.linalg.solve_triangular(chol_p, mu, lower=True)
        maha = float(b @ b)
        logdet_p = 2.0 * float(np.sum(np.log(np.diag(chol_p))))
    return 0.5 * (trace + maha - D + logdet_p - logdet_q)


class GaussianFromSites:
    """q(z) ∝ N(z | 0, Σ₀) Πₙ exp(λ̃₁ₙ ηₙ + λ̃₂ₙ ηₙ²), η = Xz: the prior times Gaussian sites.

    The one place this Gaussian is formed: CVI's conjugate step (Khan & Lin 2017, eq. 17), NC-VMP's
    q = prior × messages, S&K's and PG-exact's sites, EP's sites (λ̃₁ = ν̃, λ̃₂ = −τ̃/2).

    Parameters
    ----------
    model : LatentGaussian
        Gives the prior (diagonal precision or kernel K) and the design X
        (None for a GP, where η = z).

    Notes
    -----
    With W = diag(−2λ̃₂) the posterior precision is Σ₀⁻¹ + XᵀWX and its
    linear term Xᵀλ̃₁.  *Weight space* (diagonal prior, D ≤ N): factor the
    D × D precision.  *Data space* (kernel, or D > N): with K = XΣ₀Xᵀ and
    B = I + W½KW½ = LLᵀ (Rasmussen & Williams 2006, Alg. 3.2),
    Cov(η) = K − CᵀC with C = L⁻¹W½K, and E[η] = Cov(η) λ̃₁.
    """

    def __init__(self, model: LatentGaussian) -> None:
        prior, X = model.latent_prior(), model.design()
        self.X = None if X is None else (scipy.sparse.csr_matrix(X) if scipy.sparse.issparse(X) else np.asarray(X, float))
        if prior.cov is not None:
            if self.X is not None:
                raise ValueError("a kernel prior takes no design (ηₙ = zₙ)")
            self.space, self.K, self.prior_var = "data", np.asarray(prior.cov, dtype=float), None
        else:
            self.prior_var = 1.0 / prior.precision
            N, D = self.X.shape
            self.space = "weight" if D <= N else "data"
            if self.space == "data":
                self.X = self.X.toarray() if scipy.sparse.issparse(self.X) else self.X
                self.K = (self.X * self.prior_var) @ self.X.T
            else:
                self.XT = self.X.T.tocsr() if scipy.sparse.issparse(self.X) else self.X.T
        self.prior = prior

    def marginals(self, lam1: np.ndarray, lam2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Means and variances of ηₙ = x̃ₙᵀz under q, for every training datum."""
        if self.space == "weight":
            return self.mean_and_marginals(lam1, lam2)[1:]
        _, C = self._data_factor(-2.0 * lam2)
        v = np.diag(self.K) - np.sum(C * C, axis=0)
        m = self.K @ lam1 - C.T @ (C @ lam1)
        return m, v

    def mean_and_marginals(self, lam1: np.ndarray, lam2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """E_q[z] with the means and variances of every ηₙ (:meth:`marginals`), without q's covariance."""
        if self.space == "weight":
            w = -2.0 * lam2
            L = self._cholesky(self._precision(w))
            mu = scipy.linalg.cho_solve((L, True), self.XT @ lam1, check_finite=False)
            # vₙ = ‖L⁻¹x̃ₙ‖²: one D × D triangular inverse, then a (sparse) product with X
            Linv = scipy.linalg.solve_triangular(L, np.eye(L.shape[0]), lower=True, check_finite=False)
            A = self.X @ Linv.T
            return mu, self.X @ mu, np.einsum("nd,nd->n", A, A)
        m, v = self.marginals(lam1, lam2)
        if self.X is None:
            return m, m, v
        return (self.X * self.prior_var).T @ (lam1 + 2.0 * lam2 * m), m, v

    def posterior(self, lam1: np.ndarray, lam2: np.ndarray) -> GaussianPosterior:
        """q(z) with explicit mean and covariance (for evaluation, off the clock)."""
        w = -2.0 * lam2
        if self.space == "weight":
            L = self._cholesky(self._precision(w))
            cov = inverse_from_cholesky(L)
            logdet = -2.0 * float(np.sum(np.log(np.diag(L))))  # log|Σ| = −log|Σ₀⁻¹ + XᵀWX|
            return GaussianPosterior(cov @ (self.XT @ lam1), cov, logdet=logdet)
        L, C = self._data_factor(w)
        cov_eta = self.K - C.T @ C
        m = cov_eta @ lam1
        if self.X is None:
            return GaussianPosterior(m, cov_eta)
        XA = self.X * self.prior_var  # XΣ₀, (N, D)
        G = scipy.linalg.solve_triangular(L, np.sqrt(w)[:, None] * XA, lower=True)
        # Σ = Σ₀ − GᵀG, kept in that form: the metrics read diag(Σ) and diag(XΣXᵀ) from it in DN flops a row
        # |Σ⁻¹| = |Σ₀⁻¹ + XᵀWX| = |Σ₀⁻¹| |I + W^½XΣ₀XᵀW^½| (determinant lemma), the latter LLᵀ
        logdet = float(np.sum(np.log(self.prior_var)) - 2.0 * np.sum(np.log(np.diag(L))))
        return GaussianPosterior(XA.T @ (lam1 - w * m), low_rank=(self.prior_var, G), logdet=logdet)

    def _precision(self, w: np.ndarray) -> np.ndarray:
        """Σ₀⁻¹ + XᵀWX (weight space)."""
        if scipy.sparse.issparse(self.X):
            precision = (self.XT.multiply(w[None, :]) @ self.X).toarray()
        else:
            precision = self.XT @ (self.X * w[:, None])
        precision[np.diag_indices_from(precision)] += self.prior.precision
        return precision

    def _data_factor(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        sw = np.sqrt(w)
        B = sw[:, None] * self.K * sw[None, :]
        B[np.diag_indices_from(B)] += 1.0
        L = self._cholesky(B)
        return L, scipy.linalg.solve_triangular(L, sw[:, None] * self.K, lower=True, check_finite=False)

    @staticmethod
    def _cholesky(a: np.ndarray) -> np.ndarray:
        try:
            return scipy.linalg.cholesky(a, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            raise Diverged("the conjugate step's matrix lost positive definiteness") from None
