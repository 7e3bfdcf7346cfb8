"""Convergence diagnostics of a reference's chains, through ArviZ, and the floor a reference must pass.

Rank-normalised split-R̂ and bulk/tail effective sample size (Vehtari, Gelman, Simpson, Carpenter & Bürkner
2021, "Rank-normalization, folding, and localization: an improved R̂ for assessing convergence of MCMC",
Bayesian Analysis 16(2)), as ``arviz.rhat(method="rank")`` and ``arviz.ess(method="bulk"/"tail")`` compute them;
the Monte Carlo standard errors of means, sds and quantiles are ArviZ's (``arviz.mcse``, same paper, §4).
The floor is the paper's recommendation: R̂ < 1.01 and ESS above 400 (100 per chain for four chains).
"""
from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import numpy as np

__all__ = ["Diagnostics", "Floor", "diagnose", "mcse"]


def _dataset(draws: np.ndarray):
    """``draws`` (chains, draws, D) as an ArviZ dataset of one variable ``z``."""
    import arviz as az  # imported here: loading it takes a second, and only references need it

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return az, az.convert_to_dataset({"z": np.asarray(draws, dtype=float)})


@dataclass(frozen=True)
class Diagnostics:
    """Per-coordinate rank-normalised split-R̂, bulk ESS and tail ESS of the latent vector."""

    rhat: np.ndarray
    ess_bulk: np.ndarray
    ess_tail: np.ndarray

    def summary(self) -> dict[str, float]:
        """The worst coordinate of each (what the floor is judged on)."""
        return {"rhat_max": float(np.max(self.rhat)), "ess_bulk_min": float(np.min(self.ess_bulk)),
                "ess_tail_min": float(np.min(self.ess_tail))}


@dataclass(frozen=True)
class Floor:
    """What a stored reference must reach: every coordinate's R̂ below ``rhat_max``, its ESSs above ``ess_min``."""

    rhat_max: float = 1.01
    ess_min: float = 400.0

    def failures(self, diagnostics: Diagnostics) -> list[str]:
        """One line per failed criterion, naming the worst value (empty: passed)."""
        worst = diagnostics.summary()
        out = []
        if not worst["rhat_max"] < self.rhat_max:
            out.append(f"split-R̂ {worst['rhat_max']:.4f} ≥ {self.rhat_max}")
        for name in ("ess_bulk_min", "ess_tail_min"):
            if not worst[name] >= self.ess_min:
                out.append(f"{name.split('_')[1]} ESS {worst[name]:.0f} < {self.ess_min:g}")
        return out

    def to_dict(self) -> dict[str, float]:
        return asdict(self)


def diagnose(draws: np.ndarray) -> Diagnostics:
    """R̂ and bulk/tail ESS of every coordinate of ``draws`` (chains, draws, D); needs at least two chains."""
    draws = np.asarray(draws, dtype=float)
    if draws.ndim != 3 or draws.shape[0] < 2 or draws.shape[1] < 4:
        raise ValueError(f"diagnostics need draws of shape (chains ≥ 2, draws ≥ 4, D), got {draws.shape}")
    az, ds = _dataset(draws)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Diagnostics(az.rhat(ds, method="rank")["z"].values, az.ess(ds, method="bulk")["z"].values,
                           az.ess(ds, method="tail")["z"].values)


def mcse(draws: np.ndarray, quantiles: tuple[float, ...]) -> dict[str, np.ndarray]:
    """Monte Carlo standard errors of each coordinate's mean, sd and ``quantiles`` (rows of ``quantile``).

    The mean's and the quantiles' are ArviZ's.  The sd's is by the delta method, √Var̂(s²) / (2s), with
    Var̂(s²) = Var((z − z̄)²) / ESS((z − z̄)²) (the ``posterior`` package's ``mcse_sd``); ArviZ 0.23's own
    ``mcse(method="sd")`` fails under NumPy 2.
    """
    draws = np.asarray(draws, dtype=float)
    az, ds = _dataset(draws)
    squares = (draws - draws.mean(axis=(0, 1))) ** 2
    _, ds_sq = _dataset(squares)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ess_sq = az.ess(ds_sq, method="mean")["z"].values
        sd = draws.std(axis=(0, 1), ddof=1)
        return {"mean": az.mcse(ds, method="mean")["z"].values,
                "sd": np.sqrt(squares.var(axis=(0, 1), ddof=1) / ess_sq) / (2.0 * sd),
                "quantile": np.array([az.mcse(ds, method="quantile", prob=p)["z"].values for p in quantiles])}
