"""Stochastic gradient optimisers as small (init, update) pairs, for gradient *ascent*.

Each optimiser is a frozen dataclass holding its hyperparameters, with

* ``init(phi) -> state`` — the optimiser's state for parameters shaped like ``phi``;
* ``update(g, state) -> (delta, state)`` — the step for gradient estimate ``g`` of the
  objective being *maximised* (an ELBO); the caller sets φ ← φ + delta.

State is a tuple of arrays (and the step count t), so an algorithm holding it pickles.
The optimisers, with t = 1, 2, ... counting updates:

* :class:`SGD` — delta = α ρₜ g, ρₜ a schedule of :mod:`svibench.numerics.schedules` (default
  Robbins–Monro ρₜ = (t + 1)^(−0.75)).
* :class:`AdaGrad` — Gₜ = Gₜ₋₁ + g², delta = α g / (√Gₜ + ε) (Duchi, Hazan & Singer 2011;
  the step BBVI uses, Ranganath et al. 2014, §3.3).
* :class:`RMSprop` — vₜ = β vₜ₋₁ + (1 − β) g², delta = α g / (√vₜ + ε) (Tieleman & Hinton 2012).
* :class:`Adam` — mₜ = β₁mₜ₋₁ + (1 − β₁)g, vₜ = β₂vₜ₋₁ + (1 − β₂)g², delta = α m̂ₜ/(√v̂ₜ + ε)
  with m̂ₜ = mₜ/(1 − β₁ᵗ), v̂ₜ = vₜ/(1 − β₂ᵗ) (Kingma & Ba 2015, Algorithm 1).
* :class:`Adadelta` — in Knowles' (2015) convention, ρ weighting the *newest* term (Zeiler's
  decay is 1 − ρ): Gₜ = ρg² + (1 − ρ)Gₜ₋₁, Δ = g √(Xₜ₋₁ + ε)/√(Gₜ + ε), delta = α Δ,
  Xₜ = ρΔ² + (1 − ρ)Xₜ₋₁ (Zeiler 2012, Algorithm 1, times Knowles' initial step size α).

:func:`make_optimizer` builds one by name; an unknown name or a non-positive learning rate
is a one-line ValueError.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .schedules import robbins_monro

__all__ = ["SGD", "AdaGrad", "RMSprop", "Adam", "Adadelta", "OPTIMIZERS", "make_optimizer", "check_optimizer"]

State = tuple


@dataclass(frozen=True)
class SGD:
    """delta = lr · ρₜ · g with ρₜ = ``schedule(t)``."""

    lr: float
    schedule: Callable[[int], float] = robbins_monro

    def init(self, phi: np.ndarray) -> State:
        return (0,)

    def update(self, g: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        t = state[0] + 1
        return self.lr * self.schedule(t) * g, (t,)


@dataclass(frozen=True)
class AdaGrad:
    """delta = lr · g / (√Σ_τ g_τ² + eps)."""

    lr: float
    eps: float = 1e-8

    def init(self, phi: np.ndarray) -> State:
        return (np.zeros_like(phi),)

    def update(self, g: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        sum_sq = state[0] + g * g
        return self.lr * g / (np.sqrt(sum_sq) + self.eps), (sum_sq,)


@dataclass(frozen=True)
class RMSprop:
    """v ← decay · v + (1 − decay) g², delta = lr · g / (√v + eps)."""

    lr: float
    decay: float = 0.9
    eps: float = 1e-8

    def init(self, phi: np.ndarray) -> State:
        return (np.zeros_like(phi),)

    def update(self, g: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        v = self.decay * state[0] + (1.0 - self.decay) * g * g
        return self.lr * g / (np.sqrt(v) + self.eps), (v,)


@dataclass(frozen=True)
class Adam:
    """Kingma & Ba (2015), Algorithm 1, with bias-corrected moments."""

    lr: float
    b1: float = 0.9
    b2: float = 0.999
    eps: float = 1e-8

    def init(self, phi: np.ndarray) -> State:
        return (0, np.zeros_like(phi), np.zeros_like(phi))

    def update(self, g: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        t, m1, m2 = state
        t += 1
        m1 = self.b1 * m1 + (1 - self.b1) * g
        m2 = self.b2 * m2 + (1 - self.b2) * g * g
        mhat, vhat = m1 / (1 - self.b1**t), m2 / (1 - self.b2**t)
        return self.lr * mhat / (np.sqrt(vhat) + self.eps), (t, m1, m2)


@dataclass(frozen=True)
class Adadelta:
    """Zeiler's Adadelta in Knowles' convention: ``rho`` weights the newest squared gradient/step."""

    lr: float = 1.0
    rho: float = 0.9
    eps: float = 1e-6

    def init(self, phi: np.ndarray) -> State:
        return (np.zeros_like(phi), np.zeros_like(phi))

    def update(self, g: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        ms_grad, ms_step = state
        ms_grad = self.rho * g * g + (1.0 - self.rho) * ms_grad
        delta = g * np.sqrt(ms_step + self.eps) / np.sqrt(ms_grad + self.eps)
        ms_step = self.rho * delta * delta + (1.0 - self.rho) * ms_step
        return self.lr * delta, (ms_grad, ms_step)


#: Optimisers by name.
OPTIMIZERS: dict[str, type] = {"sgd": SGD, "adagrad": AdaGrad, "rmsprop": RMSprop, "adam": Adam, "adadelta": Adadelta}


def check_optimizer(name: str, lr: float | None) -> None:
    """One-line ValueError for an unknown optimiser name or a learning rate that is not > 0."""
    if name not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {name!r}: use one of {', '.join(sorted(OPTIMIZERS))}")
    if lr is not None and not lr > 0:
        raise ValueError(f"learning_rate must be > 0, got {lr}")


def make_optimizer(name: str, lr: float, **options: Any):
    """The optimiser ``name`` (a key of :data:`OPTIMIZERS`) with learning rate ``lr`` and further options."""
    check_optimizer(name, lr)
    return OPTIMIZERS[name](lr, **options)
