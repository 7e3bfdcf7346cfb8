"""CVI for mean-field approximations (Khan & Lin 2017, Algorithm 2).

Each iteration, for every block of nodes (all at once, or one block after the
other), the natural parameter of the non-conjugate-free "approximation term"
is formed from the conjugate VMP messages and a stochastic gradient of the
non-conjugate factors w.r.t. the mean parameters (step 4, eq. 84),

    λ̃ᵢ = Σ_{a∈Nᵢ} [η̃_{a,i} + ∇̂_{μᵢ} E_q[log p̃_nc^{a,i}]],

and q moves towards it by a convex combination with a constant step β
(step 5, eq. 85): λᵢ ← (1 − β)λᵢ + βλ̃ᵢ.

Constraint safeguard (§7): a stochastic λ̃ may lie outside the natural
parameter space (e.g. a negative Gamma rate), and so may the combination.
The step is then shrunk, β ← 0.8β, until every updated factor is valid (the
valid set is convex and contains λᵢ, so this terminates); the number of
shrinks is kept in ``shrinks_`` and the iteration's step in ``last_rho_``.
The shrink is shared by the nodes updated together, like the authors' code,
and is not carried over to the next iteration.

With exact gradients and β = 1 this is NC-VMP (App. G.1); with no
non-conjugate factors it is VMP (parallel or sequential).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from svibench.algorithm import Algorithm, Diverged
from svibench.capabilities.mean_field import MeanFieldNonConjugate, is_valid

__all__ = ["CVIMF", "safe_convex_step"]

SWEEPS = ("parallel", "sequential")


def safe_convex_step(lam: dict, lam_tilde: dict, rho: float, shrink: float, max_shrinks: int) -> tuple[dict, float, int]:
    """(1 − ρ')λ + ρ'λ̃ for every block, with ρ' = ρ·shrinkᵐ and m the least making all blocks valid.

    Returns the new blocks, ρ' and m.  Raises :class:`Diverged` if λ itself is
    invalid or no ρ' ≥ ρ·shrink^max_shrinks is valid.
    """
    for m in range(max_shrinks + 1):
        step = rho * shrink**m
        new = {name: (1.0 - step) * lam[name] + step * lam_tilde[name] for name in lam_tilde}
        if all(is_valid(block) for block in new.values()):
            return new, step, m
    raise Diverged(f"CVI-MF: no valid step after {max_shrinks} shrinks of rho = {rho} (blocks {sorted(lam_tilde)})")


class CVIMF(Algorithm):
    """Conjugate-computation VI for mean-field models, Algorithm 2 of Khan & Lin (2017).

    Parameters
    ----------
    rho : float
        Constant step β ∈ (0, 1] (paper: 5e-5 on the gamma factor model with
        N = 300,000; 0.02 on Poisson–gamma MF).
    n_samples : int
        Monte-Carlo draws per gradient (paper: 50 gamma factor, 10 PMF).
    sweep : {"parallel", "sequential"}
        Update all blocks from the same q (one VMP-like parallel step) or
        block after block, each seeing the others' newest q.
    shrink : float
        Factor applied to β while the update is invalid (§7; 0.8 as the authors).
    max_shrinks : int
        Give up (diverged) after this many shrinks in one update.

    References
    ----------
    Khan & Lin (2017), §5, Algorithm 2, App. G eq. 84–85; §7 for the shrinking.
    """

    name = "cvi-mf"
    label = "CVI-MF"
    requires = (MeanFieldNonConjugate,)

    def __init__(self, *, rho: float = 0.02, n_samples: int = 10, sweep: str = "parallel",
                 shrink: float = 0.8, max_shrinks: int = 200) -> None:
        self.rho = rho
        self.n_samples = n_samples
        self.sweep = sweep
        self.shrink = shrink
        self.max_shrinks = max_shrinks

    def check_params(self) -> None:
        if not 0.0 < self.rho <= 1.0:
            raise ValueError(f"rho must be in (0, 1], got {self.rho}")
        if self.n_samples < 1:
            raise ValueError(f"n_samples must be ≥ 1, got {self.n_samples}")
        if self.sweep not in SWEEPS:
            raise ValueError(f"sweep must be one of {', '.join(SWEEPS)}, got {self.sweep!r}")
        if not 0.0 < self.shrink < 1.0:
            raise ValueError(f"shrink must be in (0, 1), got {self.shrink}")
        if self.max_shrinks < 0:
            raise ValueError(f"max_shrinks must be ≥ 0, got {self.max_shrinks}")

    def init(self, model: Any, rng: np.random.Generator) -> None:
        self.check_params()
        self.model_, self.rng_ = model, rng
        self.lam_ = dict(model.mf_init(rng))
        self.groups_ = [tuple(self.lam_)] if self.sweep == "parallel" else [(name,) for name in self.lam_]
        self.shrinks_ = 0
        self.last_rho_ = self.rho

    def _update(self, blocks: tuple[str, ...]) -> None:
        model, lam = self.model_, self.lam_
        grads = model.nonconjugate_gradient(lam, blocks, self.rng_, self.n_samples)
        lam_tilde = {name: model.conjugate_messages(lam, name) + grads[name] for name in blocks}
        new, self.last_rho_, m = safe_convex_step(lam, lam_tilde, self.rho, self.shrink, self.max_shrinks)
        self.shrinks_ += m
        self.lam_ = {**lam, **new}

    def step(self) -> int:
        for blocks in self.groups_:
            self._update(blocks)
        return self.model_.n_train

    def posterior(self) -> dict:
        return dict(self.lam_)
