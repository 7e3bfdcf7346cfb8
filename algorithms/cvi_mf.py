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
The step is then shrunk, β ← 0.8β, until the updated factors are valid (the
valid set is convex and contains λᵢ, so this terminates).  The paper only
says the step is shrunk "such that the steps are just within the
constraints"; two readings are offered (``shrink_scope``):

* ``"all"`` — one β shared by every node updated together, as in the
  authors' gamma-factor code: the worst node's draw sets everyone's step;
* ``"node"`` — each node i shrinks its own βᵢ (Algorithm 2 updates every
  node by its own eq. 85, so a node-wise step is still Algorithm 2).

The shrink is not carried over to the next iteration.  ``shrinks_`` counts
the shrinks (the largest per node, for ``"node"``) and ``last_rho_`` is the
iteration's step (the mean over nodes, for ``"node"``).

With exact gradients and β = 1 this is NC-VMP (App. G.1); with no
non-conjugate factors it is VMP (parallel or sequential).  A conditionally
conjugate model (the SVI family's capability) runs through
:class:`svibench.capabilities.adapters.ConjugateMeanField`: its globals are the
blocks, its locals are optimised inside the messages, and the step is then
full-batch SVI with the constant step ρ = β.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from svibench.algorithm import Algorithm, Diverged
from svibench.capabilities.adapters import as_mean_field, mean_field_incompatibility, mean_field_posterior
from svibench.capabilities.mean_field import MeanFieldNonConjugate, is_valid

__all__ = ["CVIMF", "safe_convex_step"]

SWEEPS = ("parallel", "sequential")
SHRINK_SCOPES = ("all", "node")


def safe_convex_step(lam: dict, lam_tilde: dict, rho: float, shrink: float, max_shrinks: int,
                     scope: str = "all") -> tuple[dict, float, int]:
    """(1 − ρ')λ + ρ'λ̃ for every block, ρ' = ρ·shrinkᵐ with m the least making the update valid.

    With ``scope="all"`` one m serves every node of every block; with
    ``scope="node"`` each node has its own m (the families must offer
    ``in_domain``).  Returns the new blocks, the (mean) step ρ' and the
    (largest) m.  Raises :class:`Diverged` if λ itself is invalid or no step
    ≥ ρ·shrink^max_shrinks is valid.
    """
    steps = {name: np.full(block.batch_shape, rho) if scope == "node" else np.asarray(rho) for name, block in lam_tilde.items()}
    for m in range(max_shrinks + 1):
        new = {name: (1.0 - steps[name]) * lam[name] + steps[name] * lam_tilde[name] for name in lam_tilde}
        if scope == "node":
            bad = {name: ~block.in_domain() for name, block in new.items()}
        else:
            invalid = not all(is_valid(block) for block in new.values())
            bad = dict.fromkeys(new, np.asarray(invalid))
        if not any(b.any() for b in bad.values()):
            return new, float(np.mean(np.concatenate([np.ravel(x) for x in steps.values()]))), m
        steps = {name: np.where(bad[name], steps[name] * shrink, steps[name]) for name in steps}
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
    shrink_scope : {"all", "node"}
        Shrink one β shared by all nodes updated together (the authors'
        code) or each node's own β (see the module docstring).
    max_shrinks : int
        Give up (diverged) after this many shrinks in one update.

    References
    ----------
    Khan & Lin (2017), §5, Algorithm 2, App. G eq. 84–85; §7 for the shrinking.
    """

    name = "cvi-mf"
    label = "CVI-MF"
    requires = (MeanFieldNonConjugate,)

    @classmethod
    def incompatibility(cls, model_cls: type, params: dict[str, Any]) -> str | None:
        """MeanFieldNonConjugate, or a conditionally conjugate model through the adapter."""
        return mean_field_incompatibility(model_cls)

    def __init__(self, *, rho: float = 0.02, n_samples: int = 10, sweep: str = "parallel",
                 shrink: float = 0.8, shrink_scope: str = "all", max_shrinks: int = 200) -> None:
        self.rho = rho
        self.n_samples = n_samples
        self.sweep = sweep
        self.shrink = shrink
        self.shrink_scope = shrink_scope
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
        if self.shrink_scope not in SHRINK_SCOPES:
            raise ValueError(f"shrink_scope must be one of {', '.join(SHRINK_SCOPES)}, got {self.shrink_scope!r}")
        if self.max_shrinks < 0:
            raise ValueError(f"max_shrinks must be ≥ 0, got {self.max_shrinks}")

    def init(self, model: Any, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = as_mean_field(model, rng), rng
        self.lam_ = dict(self.model_.mf_init(rng))
        self.groups_ = [tuple(self.lam_)] if self.sweep == "parallel" else [(name,) for name in self.lam_]
        self.shrinks_ = 0
        self.last_rho_ = self.rho

    def _update(self, blocks: tuple[str, ...]) -> None:
        model, lam = self.model_, self.lam_
        grads = model.nonconjugate_gradient(lam, blocks, self.rng_, self.n_samples)
        lam_tilde = {name: model.conjugate_messages(lam, name) + grads[name] for name in blocks}
        new, self.last_rho_, m = safe_convex_step(lam, lam_tilde, self.rho, self.shrink, self.max_shrinks,
                                                   self.shrink_scope)
        self.shrinks_ += m
        self.lam_ = {**lam, **new}

    def step(self) -> int:
        for blocks in self.groups_:
            self._update(blocks)
        return self.model_.n_train

    def posterior(self) -> Any:
        """The blocks λ (a ConjugatePosterior of them on a conditionally conjugate model)."""
        return mean_field_posterior(self.model_, self.lam_)
