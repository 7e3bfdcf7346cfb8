"""An optional refinement of capability 4: ∇_z log p(y, z) as a compiled (numba) kernel, for fused loops.

A model offering :class:`LogJointGradient` gives its gradient on numpy arrays, one call per
step.  On a small problem the arithmetic of a step is a few microseconds and the Python and
numpy call overhead around it is most of the cost; an algorithm that fuses many steps into one
compiled loop (``Algorithm.advance``, e.g. BBVI's reparameterised ADVI) needs the gradient in a
form it can call from inside that loop.  A model gives it here: a numba ``njit`` function
``kernel(z, data, out)`` that writes ∇_z log p(y, z) on all training data (no minibatch) for one
draw z, shape (latent_dim,), into ``out``, with ``data`` the tuple of arrays it reads.

It is the same gradient as :meth:`LogJointGradient.grad_log_joint` (``grad_log_joint(z[None])[0]``);
the model's tests check the two against each other.  ``compiled_grad_log_joint`` returns None where
compiling would not pay (logistic regression's sparse designs), and an algorithm then takes its
plain numpy steps.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

import numpy as np

__all__ = ["CompiledLogJointGradient", "CompiledGradient"]


@dataclass(frozen=True)
class CompiledGradient:
    """∇_z log p(y, z) = what ``kernel(z, data, out)`` writes into ``out``: ``kernel`` a module-level
    numba function (so a second ``init`` reuses its compiled code), ``data`` the arrays it reads."""

    kernel: Callable[..., Any]
    data: tuple[np.ndarray, ...]


@runtime_checkable
class CompiledLogJointGradient(Protocol):
    """A model whose log-joint gradient in z is also given compiled, for fused loops."""

    def compiled_grad_log_joint(self) -> CompiledGradient | None:
        """The full-data gradient kernel, or None (no gain on this problem)."""
