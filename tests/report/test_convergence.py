"""The convergence rule (svibench.claims.convergence) on constant-step SGD, whose answer is known.

x ← x − ρ (x − 1) + ρ ε, ε ~ N(0, 1): the iterates approach 1 geometrically and then fluctuate around it for ever,
with stationary standard deviation ρ/√(ρ(2 − ρ)).  With ρ = 0.2 and 400 steps the run has converged (it is noise
from step 30 on); with ρ = 0.002 it has travelled about half the way.  A rule that reads the last two checkpoints
against a fixed tolerance calls the first unconverged; this one must not, and must still call the second so.
"""
from __future__ import annotations

import numpy as np

from svibench.claims.convergence import unconverged

from .test_verdicts import results, run


def _sgd(rho: float, seed: int, steps: int = 400, every: int = 20) -> list[float]:
    rng = np.random.default_rng(seed)
    x, out = 5.0, [5.0]
    for t in range(1, steps + 1):
        x = x - rho * (x - 1.0) + rho * rng.standard_normal()
        if t % every == 0:
            out.append(x)
    return out


def test_a_constant_step_run_at_its_noise_floor_is_converged():
    ds = results([run("SGD", s, _sgd(0.2, s), tail=0) for s in range(5)])
    assert not unconverged(ds, "elbo", 1e-3).any()


def test_a_constant_step_run_still_travelling_is_unconverged():
    ds = results([run("SGD", s, _sgd(0.002, s), tail=0) for s in range(5)])
    assert unconverged(ds, "elbo", 1e-3).all()


def test_without_seeds_to_measure_the_noise_the_tolerance_alone_decides():
    """One seed: no spread to allow for, so the plateau's noise (larger than 1e-3 of the value) reads as movement;
    a looser tolerance passes it."""
    ds = results([run("SGD", 0, _sgd(0.2, 0), tail=0)])
    assert unconverged(ds, "elbo", 1e-3).all()
    assert not unconverged(ds, "elbo", 0.5).any()
