"""Step-size schedules ρₜ (t = 1, 2, ...)."""
from __future__ import annotations

from functools import partial

__all__ = ["robbins_monro", "constant", "beta_from_w", "make_schedule"]


def robbins_monro(t: int, *, t0: float = 1.0, kappa: float = 0.75) -> float:
    """ρₜ = (t + t₀)^(−κ), κ ∈ (0.5, 1] for convergence.

    References
    ----------
    Hoffman et al. (2013), "Stochastic Variational Inference", eq. 26.
    Shah et al. (2015) use ρₜ = t^(−0.75) (t₀ = 0).
    """
    if t < 1:
        raise ValueError(f"iteration t must be ≥ 1, got {t}")
    if not 0.5 < kappa <= 1.0:
        raise ValueError(f"kappa must be in (0.5, 1] for the Robbins–Monro conditions, got {kappa}")
    if t0 < 0:
        raise ValueError(f"t0 must be ≥ 0, got {t0}")
    return float((t + t0) ** (-kappa))


def constant(t: int, *, rho: float) -> float:
    """ρₜ = ρ."""
    return float(rho)


def beta_from_w(w: float) -> float:
    """β = w / (1 + w), the CVI step size of Khan & Lin (2017), Table 2."""
    if w <= 0:
        raise ValueError(f"w must be positive, got {w}")
    return w / (1.0 + w)


def make_schedule(*, rho: float | None = None, w: float | None = None, t0: float = 1.0, kappa: float = 0.75):
    """A schedule t ↦ ρₜ from hyperparameters: constant ``rho``, β = w/(1+w), or Robbins–Monro.

    Validates eagerly, so a bad value fails at ``init``, not mid-run.
    """
    if rho is not None and w is not None:
        raise ValueError("give either rho or w, not both")
    if rho is not None:
        if not 0.0 < rho <= 1.0:
            raise ValueError(f"rho must be in (0, 1], got {rho}")
        return partial(constant, rho=rho)
    if w is not None:
        return partial(constant, rho=beta_from_w(w))
    robbins_monro(1, t0=t0, kappa=kappa)
    return partial(robbins_monro, t0=t0, kappa=kappa)
