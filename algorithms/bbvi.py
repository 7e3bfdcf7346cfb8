"""Black-box variational inference: score-function (BBVI) and reparameterisation (ADVI-style) gradients.

Both work on any model with a log joint (capability 4,
:mod:`svibench.capabilities.log_joint`) and optimise the flat, unconstrained
parameters φ of the model's variational family.

``estimator="score"`` — Ranganath, Gerrish & Blei (2014): for parameter p of
block b, with z_s ~ q,

    ĝ_p = (1/S) Σ_s ∇_p log q_b(z_s) (log p_b(y, z_s) − log q_b(z_s) − â_p),

Rao–Blackwellised by using only block b's Markov-blanket terms log p_b
(eq. 5 there) and with the control variate h = ∇_p log q_b, whose optimal
scaling â_p = Cov(f_p, h_p)/Var(h_p) (eq. 8–9) is estimated, for each draw,
from the other draws (leave-one-out, which keeps the estimator unbiased); steps by AdaGrad, ρ_t = η / √(Σ_{τ≤t} ĝ_τ²) (§3.3).

``estimator="reparam"`` — ADVI (Kucukelbir et al. 2017; Kingma & Welling 2014):
z = T(φ, ε), ĝ = (1/S) Σ_s (∂T/∂φ)ᵀ ∇_z log p(y, z_s) + ∇_φ H[q], stepped by Adam,
one draw per step by default.  The Gaussian families are parametrised as the standard
autoguides (:mod:`svibench.models.gaussian_families`): log-scale for mean field, a
scale-tril with positive diagonal for full rank, initialised at m = 0, scale 0.1.  With
``stick_the_landing`` the score term of the entropy is dropped, ĝ = (1/S) Σ_s
(∂T/∂φ)ᵀ (∇_z log p(y, z_s) − ∇_z log q(z_s | φ)) with φ in log q held fixed: the same
expectation, zero variance when q = p (Roeder, Wu & Duvenaud 2017, eq. 8).  Cost per step:
O(S·nnz(X) + S·D²) for the full-rank family on logistic regression.

The optimisers are those of :mod:`svibench.numerics.optim`.

One :meth:`step` is one gradient step on a minibatch of ``batch_size`` data
terms (all data when None), scaled by N/|B| inside the model's log joint; it
reports the minibatch size as data touched.  :meth:`step` is the reference; with
the reparameterisation estimator on all data, the analytic entropy and Adam, on a model
with a compiled log-joint gradient (:mod:`svibench.capabilities.compiled_log_joint`) and a
family with a compiled one, BBVI is ``fused``: :meth:`advance` takes n steps in one compiled
loop (:mod:`.bbvi_fused`), the same draws in the same order, the same trajectory to rounding.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, Generic

import numpy as np

from svibench.algorithm import Algorithm, Diverged, Preset
from svibench.capabilities.compiled_log_joint import CompiledGradient, CompiledLogJointGradient
from svibench.capabilities.log_joint import LogJoint, LogJointGradient, Q
from svibench.numerics.minibatch import sample_minibatch
from svibench.numerics.optim import Adam, check_optimizer, make_optimizer

from . import bbvi_fused

__all__ = ["BBVI", "score_gradient", "reparam_gradient", "noise_chunks", "gradient_bytes"]


def score_gradient(model: LogJoint, family: Any, kind: str, phi: np.ndarray, z: np.ndarray,
                   batch: np.ndarray | None, control_variates: bool) -> np.ndarray:
    """The Rao–Blackwellised score-function estimate of ∇_φ ELBO from draws ``z`` ~ q(· | φ).

    References
    ----------
    Ranganath, Gerrish & Blei (2014), "Black box variational inference", eq. 3, 5, 8–9.
    """
    blocks = family.param_block
    weight = model.log_joint_blocks(z, kind, batch) - family.log_q_blocks(phi, z)  # (S, B)
    h = family.score(phi, z)  # (S, P)
    f = h * weight[:, blocks]
    S = z.shape[0]
    if not control_variates or S < 3:
        return f.mean(0)
    # â for draw s from the other S − 1 draws (leave-one-out), so that â is independent
    # of (f_s, h_s) and the estimate stays unbiased; estimating â from the same draws,
    # as Ranganath et al. do, biases it by O(1/S).
    sf, sh, sfh, shh = f.sum(0), h.sum(0), (f * h).sum(0), (h * h).sum(0)
    n = S - 1
    mf, mh = (sf - f) / n, (sh - h) / n
    cov = (sfh - f * h) / n - mf * mh
    var = (shh - h * h) / n - mh * mh
    a = np.divide(cov, var, out=np.zeros_like(cov), where=var > 0)
    return (f - a * h).mean(0)


#: Bytes of one (draws × latents) array that :func:`reparam_gradient` forms at once; beyond, the draws go through in
#: chunks.  Taken all at once, pmf's 10 draws of MNIST's 6.1 M latents held ~4 GB per step (issue 33).
REPARAM_CHUNK_BYTES = 64 * 2**20


def _reparam_chunk(width: int) -> int:
    """Draws per chunk of :func:`reparam_gradient` for base draws of ``width`` numbers each."""
    return max(1, REPARAM_CHUNK_BYTES // (8 * width))


def gradient_bytes(family: Any, n_samples: int, estimator: str) -> int:
    """A lower bound on the bytes one gradient estimate holds at once: the score estimator's
    (draws × parameters) scores and weighted scores and its two (draws × blocks) log densities;
    the reparameterisation estimator's chunk of draws (:func:`noise_chunks`): its noise, z, ∇_z log p and product.
    The model's own intermediates come on top."""
    if estimator == "score":
        return 8 * n_samples * (2 * family.n_params + 2 * family.n_blocks)
    return 8 * 4 * min(n_samples, _reparam_chunk(family.dim)) * family.dim


def physical_memory() -> int:
    """Bytes of RAM on this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def noise_chunks(family: Any, rng: np.random.Generator, n: int) -> Iterator[np.ndarray]:
    """The ``n`` base draws of one reparameterisation gradient, drawn a chunk of :func:`_reparam_chunk` draws at a
    time, so that only one chunk's noise is held (pmf's 10 draws of MNIST's 6.1 M latents: 486 MB).  A family whose
    ``draw_noise`` fills its array row by row from one stream (the Gaussian and gamma families) draws the same
    numbers as one ``draw_noise(rng, n)``; n draws that fit in one chunk are that one call, whatever the family."""
    per = _reparam_chunk(family.dim)
    for start in range(0, n, per):
        yield family.draw_noise(rng, min(per, n - start))


def reparam_gradient(model: LogJointGradient, family: Any, phi: np.ndarray, eps: np.ndarray | Iterable[np.ndarray],
                     batch: np.ndarray | None, stick_the_landing: bool = False) -> np.ndarray:
    """The reparameterisation estimate of ∇_φ ELBO from base draws ``eps``: with the analytic
    entropy gradient, or the "sticking the landing" path gradient (Roeder et al. 2017, eq. 8).

    ``eps`` is an array of draws or chunks of them (:func:`noise_chunks`).  Σ_s (∂z_s/∂φ)ᵀ ∇_z log p(z_s) is summed
    a chunk of draws at a time (an array is cut into chunks of :data:`REPARAM_CHUNK_BYTES`), in order.
    """
    chunks = eps
    if isinstance(eps, np.ndarray):
        per = _reparam_chunk(eps.shape[1])
        chunks = [eps[start:start + per] for start in range(0, eps.shape[0], per)]
    total, draws = 0.0, 0
    for part in chunks:
        grad_z = model.grad_log_joint(family.transform(phi, part), batch)
        if stick_the_landing:
            grad_z = grad_z - family.grad_log_q(phi, part)
        total, draws = total + family.transform_vjp(phi, part, grad_z), draws + len(part)
    total = total / draws
    return total if stick_the_landing else total + family.entropy_grad(phi)


#: Learning rate when none is given, per optimiser (AdaGrad: Ranganath et al.'s η; Adam: ADVI's).
DEFAULT_LEARNING_RATE = {"sgd": 0.1, "adagrad": 0.5, "rmsprop": 0.01, "adam": 0.01, "adadelta": 1.0}


class BBVI(Algorithm, Generic[Q]):
    """Black-box VI with a score-function or reparameterisation gradient.

    Parameters
    ----------
    estimator : {"score", "reparam"}
        Gradient estimator: score function (Ranganath et al. 2014) or reparameterisation (ADVI, needs
        LogJointGradient).
    optimizer : str, optional
        A name of :data:`svibench.numerics.optim.OPTIMIZERS`; default "adagrad" (score) or "adam" (reparam).
    learning_rate : float, optional
        Its learning rate (default :data:`DEFAULT_LEARNING_RATE`: AdaGrad 0.5, Adam 0.01).
    n_samples : int, optional
        Draws per gradient (default 100 for score, 1 for reparam).
    family : str, optional
        Variational family (one of the model's ``family_kinds``; default its first).
    control_variates : bool
        Score estimator only: subtract the optimal scaled score.
    stick_the_landing : bool
        Reparam estimator only: the path-derivative gradient (the family must give ``grad_log_q``).
    batch_size : int, optional
        Data terms per step (None: all).

    :meth:`posterior` is what the model's family hands out (its type ``Q``).
    """

    name = "bbvi"
    label = "BBVI"
    requires: ClassVar[tuple[type, ...]] = (LogJoint,)
    presets: ClassVar[dict[str, Preset]] = {
        "bbvi-reparam": Preset("BBVI-reparam", {"estimator": "reparam"}),
    }

    def __init__(self, *, estimator: str = "score", optimizer: str | None = None, learning_rate: float | None = None,
                 n_samples: int | None = None, family: str | None = None, control_variates: bool = True,
                 stick_the_landing: bool = False, batch_size: int | None = None) -> None:
        self.estimator = estimator
        self.optimizer = optimizer
        self.learning_rate = learning_rate
        self.n_samples = n_samples
        self.family = family
        self.control_variates = control_variates
        self.stick_the_landing = stick_the_landing
        self.batch_size = batch_size

    @property
    def optimizer_name(self) -> str:
        """The optimiser used: ``optimizer`` or the estimator's default."""
        return self.optimizer or {"score": "adagrad", "reparam": "adam"}.get(self.estimator, "adagrad")

    @property
    def draws(self) -> int:
        """Draws per gradient: ``n_samples`` or the estimator's default."""
        return self.n_samples or (1 if self.estimator == "reparam" else 100)

    @classmethod
    def incompatibility(cls, model_cls: type, params: dict[str, Any]) -> str | None:
        reason = super().incompatibility(model_cls, params)
        if reason is None and params.get("estimator") == "reparam":
            from svibench.capabilities import missing

            lacking = missing(LogJointGradient, model_cls)
            if lacking:
                return f"{model_cls.name} does not offer LogJointGradient (lacks {', '.join(lacking)})"
        family = params.get("family")
        if reason is None and family is not None and family not in getattr(model_cls, "family_kinds", ()):
            return f"{model_cls.name} offers variational families {model_cls.family_kinds}, not {family!r}"
        return reason

    def check_params(self) -> None:
        if self.estimator not in ("score", "reparam"):
            raise ValueError(f"estimator must be 'score' or 'reparam', got {self.estimator!r}")
        check_optimizer(self.optimizer_name, self.learning_rate)
        if self.n_samples is not None and self.n_samples < 1:
            raise ValueError(f"n_samples must be ≥ 1, got {self.n_samples}")
        if self.stick_the_landing and self.estimator != "reparam":
            raise ValueError("stick_the_landing needs estimator = 'reparam'")
        if self.batch_size is not None and self.batch_size < 1:
            raise ValueError("batch_size must be ≥ 1 or None")

    def init(self, model: LogJoint, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self.kind_ = self.family or model.family_kinds[0]
        self.q_ = model.variational_family(self.kind_)
        if self.stick_the_landing and not hasattr(self.q_, "grad_log_q"):
            raise ValueError(f"stick_the_landing: {model.name}'s {self.kind_!r} family does not give grad_log_q")
        need, have = gradient_bytes(self.q_, self.draws, self.estimator), physical_memory()
        if need > have // 2:
            raise MemoryError(f"BBVI ({self.estimator}) with n_samples={self.draws} on this {model.name} problem would hold "
                              f"at least {need / 2**30:.1f} GiB per gradient ({self.q_.n_params} variational parameters), "
                              f"more than half of this machine's {have / 2**30:.1f} GiB: use fewer samples or a smaller problem")
        self.phi_ = self.q_.init_params(rng)
        name = self.optimizer_name
        self.optimizer_ = make_optimizer(name, self.learning_rate or DEFAULT_LEARNING_RATE[name])
        self.state_ = self.optimizer_.init(self.phi_)
        self.t_ = 0
        self.compiled_ = self._compiled(model)

    def _compiled(self, model: LogJoint) -> tuple[Any, CompiledGradient] | None:
        """The family's and the model's compiled gradients when these settings fuse (see the module), else None."""
        plain = (self.estimator != "reparam" or self.stick_the_landing or not isinstance(self.optimizer_, Adam)
                 or (self.batch_size is not None and self.batch_size < model.n_train)
                 or not hasattr(self.q_, "compiled_reparam_gradient") or not isinstance(model, CompiledLogJointGradient))
        if plain:
            return None
        density = model.compiled_grad_log_joint()
        return None if density is None else (self.q_.compiled_reparam_gradient(), density)

    @property
    def fused(self) -> bool:  # type: ignore[override]
        """Whether :meth:`init` found compiled gradients for these settings (then :meth:`advance` fuses)."""
        return getattr(self, "compiled_", None) is not None

    def gradient(self, batch: np.ndarray | None) -> np.ndarray:
        """One stochastic estimate of ∇_φ ELBO at the current φ."""
        if self.estimator == "score":
            z = self.q_.sample(self.phi_, self.rng_, self.draws)
            return score_gradient(self.model_, self.q_, self.kind_, self.phi_, z, batch, self.control_variates)
        eps = noise_chunks(self.q_, self.rng_, self.draws)
        return reparam_gradient(self.model_, self.q_, self.phi_, eps, batch, self.stick_the_landing)

    def step(self) -> int:
        N = self.model_.n_train
        batch = None
        if self.batch_size is not None and self.batch_size < N:
            batch = sample_minibatch(self.rng_, N, self.batch_size)
        delta, self.state_ = self.optimizer_.update(self.gradient(batch), self.state_)
        self.phi_ = self.phi_ + delta
        self.t_ += 1
        if not np.all(np.isfinite(self.phi_)):
            raise Diverged(f"non-finite variational parameters at step {self.t_}")
        return N if batch is None else len(batch)

    def advance(self, n: int) -> int:
        """``n`` steps in one compiled loop (:func:`.bbvi_fused.adam_steps`) when fused, else ``n`` :meth:`step`
        calls; the base draws of the ``n`` steps drawn in one block, as ``n`` steps draw them."""
        if not self.fused:
            return super().advance(n)
        family_gradient, density = self.compiled_
        noise = self.q_.draw_noise(self.rng_, n * self.draws).reshape(n, self.draws, -1)
        t, m1, m2 = self.state_
        phi, m1, m2, opt = self.phi_.copy(), m1.copy(), m2.copy(), self.optimizer_
        bad = bbvi_fused.adam_steps(family_gradient, density.kernel, density.data, noise, phi, m1, m2, t,
                                    float(opt.lr), float(opt.b1), float(opt.b2), float(opt.eps))
        done = bad or n
        self.phi_, self.state_, self.t_ = phi, (t + done, m1, m2), self.t_ + done
        if bad:
            raise Diverged(f"non-finite variational parameters at step {self.t_}")
        return n * self.model_.n_train

    def posterior(self) -> Q:
        return self.q_.posterior(self.phi_)
