"""Local variables of beta-process factor analysis: the three local approximations.

For a minibatch of rows yᵢ (with observation masks mᵢ) and a *view* of the
globals β = {π, Φ, γ_w, γ_obs} — their expectations under q(β) or one sample —
this module computes q(ψᵢ) = q(zᵢ, wᵢ) by

* mean-field coordinate ascent, q(z_ik) q(w_ik) (Shah et al. 2015, eq. 8–9);
* the Titsias & Lázaro-Gredilla spike-and-slab form, q(z_ik) q(w_ik | z_ik) (eq. 11);
* the same q fitted to the Titsias local objective *as printed* in the paper's
  appendix (``"titsias-printed"``, see :func:`titsias_printed`): not a bound, offered
  to reproduce the paper's Titsias-SSVI numbers;
* blocked Gibbs sampling from the exact local conditional p(ψᵢ | yᵢ, β): z_ik
  with w_ik integrated out, then w_ik | z_ik (appendix, "Gibbs-SSVI"/"Mimno-SVI").

All three share one sweep over features k = 1..K, vectorised over the
minibatch (``FeatureSweep``).  With x_ik = z_ik w_ik and the masked residual r_{-k} of the other
features, every step needs the same two numbers per row,

    A_ik = E[γ_obs] Σ_d m_id E[φ_kd²],    b_ik = E[γ_obs] Σ_d m_id E[φ_kd] r_{-k,id},

(at a sample of β, E[·] is the value at the sample).  The view is a
:class:`GlobalMoments`; the same routine therefore serves SVI/Mimno (expected
view) and the structured SSVI variants (sampled view).  Missing entries never
enter: every sum over d carries the mask m_id.

The result of every approximation is a :class:`LocalMoments`: S "draws" of
(E[x], E[x²], E[z], E[w²]) per row and feature, whose cross moments within a
draw are products — exact for mean-field and Titsias (S = 1, independent
features) and for Gibbs samples (S = number of kept sweeps, X2 = X²).  The
eq. 7 statistics are written once in terms of these (``models.bpfa.stats``).

Everything that differs between the kinds is one table, :data:`LOCALS` (kind →
:class:`FactorKind` or :class:`GibbsKind`): the coordinate step, its code in the
compiled kernel, what q(w | z = 0) is (for E[w²] and the entropy), the printed
objective's w-prior term, and whether evaluation reports the ELBO.  A new local
kind is one entry there (and one in ``svibench.capabilities.conjugate.LOCAL_KINDS``).

The numpy code here is the reference.  ``mean_field``, ``titsias`` and
``gibbs`` run the same sweeps compiled (``models.bpfa.kernels``, numba) when
``kernel=True``, and by default (:data:`KERNEL`; set the environment
variable ``SVIBENCH_BPFA_KERNEL=0`` to default to the reference).
Both paths start from the same ``FeatureSweep`` state and consume the same
random draws.

References
----------
Shah, Knowles & Ghahramani (2015), ICML, §3 and appendix.
Titsias & Lázaro-Gredilla (2011), "Spike and slab variational inference for
multi-task and multiple kernel learning", NIPS.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np
from scipy.special import expit, ndtri

from svibench.capabilities.conjugate import LOCAL_KINDS, LocalApprox
from svibench.expfam import LOG_2PI

from . import kernels

__all__ = [
    "GlobalMoments",
    "LocalMoments",
    "FactorQ",
    "FeatureSweep",
    "FactorKind",
    "GibbsKind",
    "LOCAL_STARTS",
    "FACTOR_KINDS",
    "LOCALS",
    "mean_field",
    "titsias",
    "titsias_printed",
    "gibbs",
    "gibbs_update",
    "slab_quantile",
    "local_elbo",
    "draw_from_q",
    "draws_from_q",
]

#: Default tolerance of the local coordinate ascent: a row stops after the first sweep in which
#: its θ_ik moved by less than this on average over k (the per-document rule and threshold,
#: ``meanchangethresh``, of Hoffman, Blei & Bach's online LDA, 2010).
LOCAL_TOL = 1e-3
#: Starts of the coordinate ascents whose result depends on the start
#: (:func:`mean_field`, :func:`titsias_printed`).
LOCAL_STARTS = ("full", "prior")
#: Default of the ``kernel`` argument: the compiled sweeps, unless SVIBENCH_BPFA_KERNEL=0.
KERNEL = os.environ.get("SVIBENCH_BPFA_KERNEL", "1") != "0"


def _use_kernel(kernel: bool | None) -> bool:
    return KERNEL if kernel is None else bool(kernel)


def _c(a) -> np.ndarray:
    """``a`` as a C-contiguous float64 array (what the compiled kernels take)."""
    return np.ascontiguousarray(a, dtype=float)


@dataclass(frozen=True)
class GlobalMoments:
    """The moments of β the local computations need.

    Expectations under q(β) (expected view) or values at one draw β ~ q(β)
    (sampled view; then ``phi2 == phi**2``).

    Attributes
    ----------
    gamma_obs, log_gamma_obs, gamma_w, log_gamma_w : float
        E[γ_obs], E[log γ_obs], E[γ_w], E[log γ_w].
    log_pi, log_1m_pi : ndarray (K,)
        E[log π_k], E[log(1 − π_k)].
    phi, phi2 : ndarray (K, D)
        E[φ_kd] and E[φ_kd²] (per dimension: q(φ_kd) has its own precision τ_kd).
    """

    gamma_obs: float
    log_gamma_obs: float
    gamma_w: float
    log_gamma_w: float
    log_pi: np.ndarray
    log_1m_pi: np.ndarray
    phi: np.ndarray
    phi2: np.ndarray

    @property
    def logit_pi(self) -> np.ndarray:
        """E[log π_k − log(1 − π_k)]: ψ(a_k) − ψ(b_k) in expectation, log(π_k/(1 − π_k)) at a draw."""
        return self.log_pi - self.log_1m_pi


@dataclass(frozen=True)
class LocalMoments:
    """S draws of the locals' moments for B rows, each array (S, B, K).

    ``X`` = E[x_ik], ``X2`` = E[x_ik²], ``Z`` = E[z_ik], ``W2`` = E[w_ik²], with
    x_ik = z_ik w_ik; within one draw features are independent (cross moments
    are products of ``X``).  Statistics average over the S draws.

    ``R`` (S, B, D), when the local routine kept it (Gibbs, the compiled coordinate ascent), is each
    draw's masked residual m ∘ (y − x Φ) at the view's E[φ], which the eq. 7 statistics would otherwise
    recompute.
    """

    X: np.ndarray
    X2: np.ndarray
    Z: np.ndarray
    W2: np.ndarray
    R: np.ndarray | None = None


@dataclass(frozen=True)
class FactorQ:
    """A factorised local q: q(z_ik) = Bern(θ_ik), slab q(w_ik | z_ik = 1) = N(m_ik, v_ik).

    ``kind`` (a key of :data:`FACTOR_KINDS`) "mf": q(w_ik) = N(m_ik, v_ik) whatever z_ik (eq. 8);
    "titsias": q(w_ik | z_ik = 0) = N(0, 1/γ_w), the prior (eq. 11);
    "titsias-printed": the Titsias q, fitted to the appendix's printed objective
    (:func:`titsias_printed`).
    In the paper's parametrisation m = ν/κ and v = 1/κ.  ``residual`` (B, D), when the fit kept it (the
    compiled sweeps do), is m ∘ (y − E[x] E[Φ]) at the fitted q, which the eq. 7 statistics would otherwise
    recompute (:class:`LocalMoments` ``R``).
    """

    kind: str
    theta: np.ndarray
    mean_w: np.ndarray
    var_w: np.ndarray
    gamma_w: float
    residual: np.ndarray | None = None

    def rows(self, rows: slice | np.ndarray) -> FactorQ:
        """The q of the rows selected."""
        residual = None if self.residual is None else self.residual[rows]
        return FactorQ(self.kind, self.theta[rows], self.mean_w[rows], self.var_w[rows], self.gamma_w, residual)

    @property
    def spec(self) -> FactorKind:
        """The entry of :data:`FACTOR_KINDS` for ``kind``."""
        return FACTOR_KINDS[self.kind]

    def moments(self) -> LocalMoments:
        slab2 = self.mean_w**2 + self.var_w
        x2 = self.theta * slab2
        w2 = x2 + (1.0 - self.theta) / self.gamma_w if self.spec.prior_off else slab2
        R = None if self.residual is None else self.residual[None]
        return LocalMoments((self.theta * self.mean_w)[None], x2[None], self.theta[None], w2[None], R)


class FeatureSweep:
    """The state of a sweep over features for a minibatch: current x (B, K) and masked residual.

    Parameters
    ----------
    view : GlobalMoments
    Y, M : ndarray (B, D)
        Rows and their masks (1 = observed); unobserved entries of Y are ignored.
    X0 : ndarray (B, K)
        Initial E[x] (mean-field/Titsias) or state x (Gibbs).
    """

    def __init__(self, view: GlobalMoments, Y: np.ndarray, M: np.ndarray, X0: np.ndarray) -> None:
        self.view = view
        self.M = M
        self.full = bool(M.all())
        g, phi = view.gamma_obs, view.phi
        phi_sq = phi**2
        if np.array_equal(view.phi2, phi_sq):  # a sampled view: E[φ²] = φ², so A = Q
            self.Q = self.A = g * (M @ phi_sq.T)
        else:  # both from one (B, D) x (D, 2K) product, not two of half the width
            K = phi.shape[0]
            both = M @ np.concatenate([phi_sq, view.phi2]).T
            self.Q, self.A = g * both[:, :K], g * both[:, K:]
        self.X = np.array(X0, dtype=float)
        self.R = Y - self.X @ phi if self.X.any() else np.array(Y, dtype=float)
        if not self.full:
            self.R *= M

    @cached_property
    def kappa(self) -> np.ndarray:
        """κ = A + γ_w (B, K): the precision of w_ik given z_ik = 1 and the other features."""
        return self.A + self.view.gamma_w

    @cached_property
    def half_log(self) -> np.ndarray:
        """½ log(γ_w/κ) (B, K), the log-odds term of integrating w_ik out (fixed during a sweep)."""
        return 0.5 * np.log(self.view.gamma_w / self.kappa)

    def field(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(A_k, b_k) of feature k for every row, with feature k's own term removed from b."""
        b = self.view.gamma_obs * (self.R @ self.view.phi[k]) + self.X[:, k] * self.Q[:, k]
        return self.A[:, k], b

    def set(self, k: int, xk: np.ndarray) -> None:
        """Set E[x_·k] (or the sample x_·k) and update the residual of the rows that changed."""
        delta = xk - self.X[:, k]
        rows = np.flatnonzero(delta)
        if len(rows) == len(delta):
            step = np.outer(delta, self.view.phi[k])
            self.R -= step if self.full else step * self.M
        elif len(rows):
            step = np.outer(delta[rows], self.view.phi[k])
            self.R[rows] -= step if self.full else step * self.M[rows]
        self.X[:, k] = xk


def _collapsed(sweep: FeatureSweep, k: int, b: np.ndarray):
    """Exact conditional of (z_k, w_k) given the other features (w_k integrated for z_k).

    Precision κ = A + γ_w, slab mean b/κ; log-odds of z_k = 1:
    logit π_k + ½ log(γ_w/κ) + b²/(2κ).
    """
    kappa = sweep.kappa[:, k]
    mean = b / kappa
    log_odds = sweep.view.logit_pi[k] + sweep.half_log[:, k] + 0.5 * b * mean
    return kappa, mean, log_odds


def mf_step(sweep: FeatureSweep, q: FactorQ, k: int) -> None:
    """One mean-field coordinate step on feature k: q(w_·k), then q(z_·k) (eq. 9).

    Each is the exact maximiser of the local ELBO in its coordinate:
    κ = θA + γ_w, m = θb/κ, v = 1/κ; θ = σ(logit π_k + m b − ½(m² + v) A).
    """
    A, b = sweep.field(k)
    theta = q.theta[:, k]
    kappa = theta * A + sweep.view.gamma_w
    m = theta * b / kappa
    q.mean_w[:, k], q.var_w[:, k] = m, 1.0 / kappa
    q.theta[:, k] = theta = expit(sweep.view.logit_pi[k] + m * b - 0.5 * (m * m + 1.0 / kappa) * A)
    sweep.set(k, theta * m)


def titsias_step(sweep: FeatureSweep, q: FactorQ, k: int) -> None:
    """One Titsias coordinate step on feature k (eq. 11): the joint optimum of (θ, ν, κ).

    Maximising the local ELBO over q(z_k) q(w_k | z_k) gives κ = A + γ_w,
    m = b/κ and logit θ = logit π_k + ½ log(γ_w/κ) + b²/(2κ): the exact
    conditional of (z_k, w_k) given the other features' means.
    """
    _, b = sweep.field(k)
    kappa, m, log_odds = _collapsed(sweep, k, b)
    q.mean_w[:, k], q.var_w[:, k] = m, 1.0 / kappa
    q.theta[:, k] = theta = expit(log_odds)
    sweep.set(k, theta * m)


def titsias_printed_step(sweep: FeatureSweep, q: FactorQ, k: int) -> None:
    """One coordinate step on feature k of the Titsias local objective as printed in the appendix:
    (m, v), then θ.

    The printed objective is the Titsias one with the w-prior term −γ_w/2 (m² + v) for every
    (i, k), whatever z_ik, where q(w_ik | z_ik = 0) = N(0, 1/γ_w) gives −γ_w/2 [θ(m² + v) + 1 − θ].
    Its coordinate maxima: m = θb/(θA + γ_w) (the mean-field w-step), v = θ/(θA + γ_w), then
    logit θ = logit π_k + m b − ½(m² + v) A + ½ log(γ_w v).
    """
    A, b = sweep.field(k)
    theta = q.theta[:, k]
    den = theta * A + sweep.view.gamma_w
    m, v = theta * b / den, theta / den
    q.mean_w[:, k], q.var_w[:, k] = m, v
    with np.errstate(divide="ignore"):  # θ = 0 gives v = 0 and keeps θ at 0
        log_odds = sweep.view.logit_pi[k] + m * b - 0.5 * (m * m + v) * A + 0.5 * np.log(sweep.view.gamma_w * v)
    q.theta[:, k] = theta = expit(log_odds)
    sweep.set(k, theta * m)


@dataclass(frozen=True)
class FactorKind:
    """One factorised local approximation (a :class:`FactorQ` kind): all that differs between kinds.

    Attributes
    ----------
    name : str
        Its key in :data:`FACTOR_KINDS` and ``LocalApprox.kind``.
    step : callable (sweep, q, k) -> None
        The numpy reference's coordinate step on feature k.
    mode : int
        Its code in the compiled kernel (``kernels.factor_sweeps``).
    collapsed : bool
        The step integrates w_ik out for z_ik, so the kernel needs ½ log(γ_w/κ).
    prior_off : bool
        q(w_ik | z_ik = 0) is the prior N(0, 1/γ_w) (Titsias, eq. 11), not the slab
        (mean-field, eq. 8): sets E[w²] and the entropy.
    printed : bool
        The local objective's w-prior term is −γ_w/2 (m² + v) whatever z_ik (the
        appendix's printed objective, not a bound).
    elbo : bool
        Evaluation reports the ELBO with these locals (mean-field only; ``BPFA.evaluate``).

    Whether θ's start matters (``LocalApprox.init``) is the kind's ``started`` in
    ``svibench.capabilities.conjugate.LOCAL_KINDS``.
    """

    name: str
    step: Callable[[FeatureSweep, FactorQ, int], None]
    mode: int
    collapsed: bool = False
    prior_off: bool = False
    printed: bool = False
    elbo: bool = False

    def fit(self, view: GlobalMoments, Y: np.ndarray, M: np.ndarray, approx: LocalApprox) -> FactorQ:
        """q given the view, by coordinate ascent with ``approx``'s sweeps cap, tolerance and start."""
        return _coordinate_ascent(view, Y, M, self, approx.inner_iterations, approx.inner_tol, None, approx.init)

    def moments(self, view: GlobalMoments, Y: np.ndarray, M: np.ndarray, approx: LocalApprox,
                rng: np.random.Generator) -> LocalMoments:
        """The locals' moments for the eq. 7 statistics (``rng`` unused: q is deterministic)."""
        return self.fit(view, Y, M, approx).moments()

    def draws(self, view: GlobalMoments, Y: np.ndarray, M: np.ndarray, approx: LocalApprox, n_draws: int,
              rng: np.random.Generator) -> tuple[np.ndarray, FactorQ]:
        """``n_draws`` draws of x (n_draws, B, K) from q given the view, and q."""
        q = self.fit(view, Y, M, approx)
        return draws_from_q(q, n_draws, rng), q


#: The factorised local kinds by name (``LocalApprox.kind``).
FACTOR_KINDS: dict[str, FactorKind] = {kind.name: kind for kind in (
    FactorKind("mf", mf_step, 0, elbo=True),
    FactorKind("titsias", titsias_step, 1, collapsed=True, prior_off=True),
    FactorKind("titsias-printed", titsias_printed_step, 2, prior_off=True, printed=True),
)}


def _coordinate_ascent(view, Y, M, kind: FactorKind, max_sweeps, tol, kernel, start="full") -> FactorQ:
    """Per row, sweeps of ``kind.step`` from θ = 1 (or, for a kind ``started`` in ``LOCAL_KINDS``,
    where ``start`` says), m = 0 until the row's θ moved by less than ``tol`` on average, or ``max_sweeps``."""
    if not tol >= 0:
        raise ValueError(f"the local tolerance must be ≥ 0, not {tol!r}")
    B, K = Y.shape[0], view.phi.shape[0]
    theta0 = _theta0(view, start) if LOCAL_KINDS[kind.name].started else 1.0
    theta = np.array(np.broadcast_to(theta0, (B, K)), dtype=float)
    q = FactorQ(kind.name, theta, np.zeros((B, K)), np.full((B, K), 1.0 / view.gamma_w), view.gamma_w)
    if _use_kernel(kernel):
        sweep = FeatureSweep(view, Y, M, np.zeros((B, K)))
        kernels.factor_sweeps(kind.mode, sweep.R, sweep.X, _c(M), _c(view.phi), sweep.A, sweep.Q,
                              kernels.pair_products(M, view.phi), sweep.half_log if kind.collapsed else sweep.A,
                              float(view.gamma_obs), float(view.gamma_w), _c(view.logit_pi), q.theta, q.mean_w,
                              q.var_w, max_sweeps, tol)
        return replace(q, residual=sweep.R)
    for i in range(B):  # the reference: each row its own coordinate ascent, vectorised over nothing
        sweep, row = FeatureSweep(view, Y[i:i + 1], M[i:i + 1], np.zeros((1, K))), FactorQ(
            kind.name, q.theta[i:i + 1], q.mean_w[i:i + 1], q.var_w[i:i + 1], view.gamma_w)
        for _ in range(max_sweeps):
            before = row.theta.copy()
            for k in range(K):
                kind.step(sweep, row, k)
            if np.mean(np.abs(row.theta - before)) < tol:
                break
    return q


def _theta0(view: GlobalMoments, start: str):
    """θ where a start-dependent coordinate ascent begins (:data:`LOCAL_STARTS`)."""
    if start not in LOCAL_STARTS:
        raise ValueError(f"the local start must be one of {', '.join(LOCAL_STARTS)}, not {start!r}")
    return 1.0 if start == "full" else np.exp(view.log_pi)


def mean_field(view: GlobalMoments, Y: np.ndarray, M: np.ndarray, max_sweeps: int,
               tol: float = LOCAL_TOL, kernel: bool | None = None, start: str = "full") -> FactorQ:
    """Mean-field local q (eq. 8) by coordinate ascent on the local ELBO (eq. 9).

    Each row sweeps its features until its θ moved by less than ``tol`` on average in a
    sweep (:data:`LOCAL_TOL`), or ``max_sweeps``; rows are independent given the view.
    ``kernel``: compiled sweeps (True), the numpy reference (False) or :data:`KERNEL` (None).

    ``start`` (:data:`LOCAL_STARTS`; the paper does not say) is where every row starts, with
    E[w_ik] = 0 in both: ``"full"``, θ_ik = 1 — every feature available, so the first sweep's
    w-step is the full slab update and the sweep fits features one after another; or
    ``"prior"``, θ_ik = exp(E[log π_k]) — q(z) at (about) its prior, so the first w-step is
    shrunk by θ (m = θb/κ) and a feature turns on only on strong evidence: rows end sparser.
    Neither start is better everywhere (``tests/models/test_bpfa_locals.py``, the shah2015 studies).
    """
    return _coordinate_ascent(view, Y, M, FACTOR_KINDS["mf"], max_sweeps, tol, kernel, start)


def titsias(view: GlobalMoments, Y: np.ndarray, M: np.ndarray, max_sweeps: int,
            tol: float = LOCAL_TOL, kernel: bool | None = None) -> FactorQ:
    """Titsias spike-and-slab local q (eq. 11) by coordinate ascent on its local ELBO
    (``tol`` and ``kernel`` as in :func:`mean_field`).  Each step is the exact conditional of
    (z_k, w_k) and does not read the previous θ_k, so θ's start (the only difference between
    :data:`LOCAL_STARTS`) does not change the result."""
    return _coordinate_ascent(view, Y, M, FACTOR_KINDS["titsias"], max_sweeps, tol, kernel)


def titsias_printed(view: GlobalMoments, Y: np.ndarray, M: np.ndarray, max_sweeps: int,
                    tol: float = LOCAL_TOL, kernel: bool | None = None, start: str = "full") -> FactorQ:
    """The Titsias q fitted by coordinate ascent to the local objective as the paper's appendix
    prints it ("Titsias-SSVI": the w-prior term is −γ_w/2 Σ (m² + v) whatever z, as in
    mean-field; see :func:`titsias_printed_step`).  Arguments as in :func:`mean_field`.

    This objective is not a bound on the evidence: it is offered to reproduce Table 1's
    Titsias-SSVI, whose m-step it makes the mean-field one, shrunk by θ, so that from the
    ``"prior"`` start it behaves like mean-field and not like :func:`titsias`.
    """
    return _coordinate_ascent(view, Y, M, FACTOR_KINDS["titsias-printed"], max_sweeps, tol, kernel, start)


def gibbs_update(sweep: FeatureSweep, k: int, u: np.ndarray):
    """Blocked Gibbs step on feature k for every row: z_k ~ p(z_k | rest) with w_k
    integrated out, then w_k | z_k = 1 ~ N(b/κ, 1/κ) (x_k = 0 when z_k = 0), both from
    one uniform per row.

    ``u`` (B,) uniforms: z_ik = 1 iff u_i < p_ik.  Given u_i < p_ik, u_i/p_ik is
    Uniform(0, 1) and independent of the event, so by the inverse-CDF method
    w_ik = b_ik/κ_ik + Φ⁻¹(u_i/p_ik)/√κ_ik is an exact draw of w_ik | z_ik = 1
    (:func:`slab_quantile`).  Returns the Rao–Blackwellised E[z_k | rest] and E[w_k² | rest].
    """
    _, b = sweep.field(k)
    kappa, mean, log_odds = _collapsed(sweep, k, b)
    p = expit(log_odds)
    on = u < p
    xk = np.zeros_like(u)
    xk[on] = mean[on] + slab_quantile(u[on] / p[on]) / np.sqrt(kappa[on])
    sweep.set(k, xk)
    return p, p * (mean * mean + 1.0 / kappa) + (1.0 - p) / sweep.view.gamma_w


def slab_quantile(v: np.ndarray) -> np.ndarray:
    """Φ⁻¹(v) for v = u/p ∈ [0, 1), the standard-normal quantile of :func:`gibbs_update`'s slab draw.

    ``rng.random`` can return 0.0, whose quantile is −∞: v is floored at the smallest positive
    double (``kernels.V_MIN``, Φ⁻¹ = −38.5, a probability-5e-324 event).  v < 1 always (u < p
    and the division rounds below 1), so the result is finite.
    """
    return ndtri(np.maximum(v, kernels.V_MIN))


def gibbs_step(sweep: FeatureSweep, k: int, rng: np.random.Generator):
    """:func:`gibbs_update` with B uniforms drawn from ``rng``."""
    return gibbs_update(sweep, k, rng.random(sweep.X.shape[0]))


def gibbs(view: GlobalMoments, Y: np.ndarray, M: np.ndarray, burnin: int, samples: int,
          rng: np.random.Generator, X0: np.ndarray | None = None, kernel: bool | None = None) -> LocalMoments:
    """Gibbs chain on the locals given the view: ``burnin`` sweeps discarded, ``samples`` kept.

    Starts from x = 0 (no feature on) unless ``X0`` is given.  Kept draws
    carry the sampled x (so cross moments x_ik x_ij are those of the chain)
    and Rao–Blackwellised E[z], E[w²], and the sweep's masked residual ``R``
    at each kept draw (:class:`LocalMoments`).  The chain's randomness is drawn
    up front from ``rng``: uniforms U (sweeps, B, K); sweep s, feature k, row i
    uses U[s, i, k] for both z_ik and w_ik (:func:`gibbs_update`) on either path
    (``kernel`` as in :func:`mean_field`).
    """
    B, K = Y.shape[0], view.phi.shape[0]
    sweep = FeatureSweep(view, Y, M, np.zeros((B, K)) if X0 is None else X0)
    U = rng.random((burnin + samples, B, K))
    X = np.empty((samples, B, K))
    Z = np.empty((samples, B, K))
    W2 = np.empty((samples, B, K))
    R = np.empty((samples,) + Y.shape)
    if _use_kernel(kernel):
        kernels.gibbs_sweeps(sweep.R, sweep.X, _c(M), _c(view.phi), sweep.Q, sweep.kappa, sweep.half_log,
                             float(view.gamma_obs), float(view.gamma_w), _c(view.logit_pi), U, burnin,
                             X, Z, W2, R)
        return LocalMoments(X, X * X, Z, W2, R)
    for s in range(burnin + samples):
        keep = s - burnin
        for k in range(K):
            p, w2 = gibbs_update(sweep, k, U[s, :, k])
            if keep >= 0:
                Z[keep, :, k], W2[keep, :, k] = p, w2
        if keep >= 0:
            X[keep], R[keep] = sweep.X, sweep.R
    return LocalMoments(X, X * X, Z, W2, R)


@dataclass(frozen=True)
class GibbsKind:
    """Blocked Gibbs sampling from the exact local conditional (:func:`gibbs`) as a local kind."""

    name: str = "gibbs"

    def moments(self, view: GlobalMoments, Y: np.ndarray, M: np.ndarray, approx: LocalApprox,
                rng: np.random.Generator) -> LocalMoments:
        """``approx.burnin`` sweeps discarded, ``approx.samples`` kept, for the eq. 7 statistics."""
        return gibbs(view, Y, M, approx.burnin, approx.samples, rng)

    def draws(self, view: GlobalMoments, Y: np.ndarray, M: np.ndarray, approx: LocalApprox, n_draws: int,
              rng: np.random.Generator) -> tuple[np.ndarray, None]:
        """``n_draws`` kept sweeps of x (n_draws, B, K) after ``approx.burnin``; no factorised q."""
        return gibbs(view, Y, M, approx.burnin, n_draws, rng).X, None


#: Every local kind BPFA offers, by name: what ``BPFA.local_statistics`` and evaluation dispatch on.
LOCALS: dict[str, FactorKind | GibbsKind] = {**FACTOR_KINDS, "gibbs": GibbsKind()}


def local_elbo(view: GlobalMoments, Y: np.ndarray, M: np.ndarray, q: FactorQ) -> np.ndarray:
    """Local ELBO per row, E_q[log p(yᵢ, zᵢ, wᵢ | β)] − E_q[log q(zᵢ, wᵢ)], with all constants.

    Expectations over β use the view (E[γ], E[log γ], E[log π], E[φ], E[φ²]),
    so with the expected view this is row i's share of the full ELBO; only
    observed entries enter the likelihood.  Mean-field (eq. 9) or Titsias
    entropy according to ``q.kind`` (:class:`FactorKind`); for a ``printed`` kind the appendix's
    printed objective (w-prior term on m² + v whatever z), which is not a bound.
    """
    mom = q.moments()
    ex, ex2, w2 = mom.X[0], mom.X2[0], mom.W2[0]
    R = M * (Y - ex @ view.phi)
    resid2 = (R**2).sum(1) + (ex2 * (M @ view.phi2.T)).sum(1) - (ex**2 * (M @ (view.phi**2).T)).sum(1)
    n_obs = M.sum(1)
    loglik = 0.5 * n_obs * (view.log_gamma_obs - LOG_2PI) - 0.5 * view.gamma_obs * resid2
    th = q.theta
    prior_z = (th * view.log_pi + (1.0 - th) * view.log_1m_pi).sum(1)
    if q.spec.printed:
        w2 = q.mean_w**2 + q.var_w
    prior_w = (0.5 * (view.log_gamma_w - LOG_2PI) - 0.5 * view.gamma_w * w2).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        h_z = -(np.where(th > 0, th * np.log(th), 0.0) + np.where(th < 1, (1 - th) * np.log1p(-th), 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):  # v = 0 where θ = 0 (printed objective)
        h_slab = 0.5 * (np.log(q.var_w) + LOG_2PI + 1.0)
        if q.spec.prior_off:
            h_w = np.where(th > 0, th * h_slab, 0.0) + (1.0 - th) * 0.5 * (LOG_2PI + 1.0 - np.log(q.gamma_w))
        else:
            h_w = h_slab
    return loglik + prior_z + prior_w + (h_z + h_w).sum(1)


def draw_from_q(q: FactorQ, rng: np.random.Generator) -> np.ndarray:
    """One draw x = z ∘ w from a factorised local q (B, K)."""
    z = rng.random(q.theta.shape) < q.theta
    return np.where(z, q.mean_w + np.sqrt(q.var_w) * rng.standard_normal(q.theta.shape), 0.0)


def draws_from_q(q: FactorQ, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` independent draws of x from a factorised local q, (n_draws, B, K)."""
    return np.stack([draw_from_q(q, rng) for _ in range(n_draws)])
