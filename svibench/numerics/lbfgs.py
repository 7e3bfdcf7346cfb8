"""L-BFGS whose memory survives between calls: k iterations, then k more, is one run of 2k.

Minimises a smooth f given as ``fun(x) -> (f(x), ∇f(x))``.  Each iteration

1. takes the direction d = −H∇f from the two-loop recursion over the last ``memory``
   curvature pairs (sᵢ, yᵢ) = (xᵢ₊₁ − xᵢ, ∇fᵢ₊₁ − ∇fᵢ), with H₀ = γI,
   γ = sᵀy / yᵀy of the newest pair (Nocedal & Wright 2006, Algorithm 7.4 and eq. 7.20);
   with no pair yet, d = −∇f / ‖∇f‖ (a unit first trial step);
2. finds a step α satisfying the strong Wolfe conditions (c₁ = 1e-4, c₂ = 0.9), first trial
   α = 1, by :func:`scipy.optimize.line_search` (Nocedal & Wright, Algorithms 3.5–3.6);
3. keeps the pair when sᵀy > 1e-10 · yᵀy (always so under the Wolfe conditions, barring
   round-off), dropping the oldest beyond ``memory``.

The state — the point, its value and gradient, and the pairs — is held by the object, so
calling :meth:`LBFGS.iterate` repeatedly continues one run.  When the line search fails
along d, the memory is cleared and the normalised steepest-descent direction tried; when
that fails too, the point is taken as converged (:attr:`LBFGS.converged`) and later calls
do nothing.
"""
from __future__ import annotations

import warnings
from collections import deque
from typing import Callable

import numpy as np
import scipy.optimize

__all__ = ["LBFGS"]

Objective = Callable[[np.ndarray], tuple[float, np.ndarray]]


class _Counted:
    """``fun`` split into f and ∇f for the line search, evaluated once per point and counted."""

    def __init__(self, fun: Objective) -> None:
        self.fun, self.n_evals = fun, 0
        self._x: np.ndarray | None = None
        self._fg: tuple[float, np.ndarray] = (np.nan, np.empty(0))

    def __call__(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        if self._x is None or not np.array_equal(x, self._x):
            self._x, self._fg = x.copy(), self.fun(x)
            self.n_evals += 1
        return self._fg

    def f(self, x: np.ndarray) -> float:
        return self(x)[0]

    def grad(self, x: np.ndarray) -> np.ndarray:
        return self(x)[1]


class LBFGS:
    """A resumable L-BFGS on ``fun`` from ``x0`` with ``memory`` curvature pairs."""

    def __init__(self, fun: Objective, x0: np.ndarray, *, memory: int = 20) -> None:
        self.fun_ = _Counted(fun)
        self.x = np.array(x0, dtype=float)
        self.f, self.g = self.fun_(self.x)
        self.pairs: deque[tuple[np.ndarray, np.ndarray, float]] = deque(maxlen=memory)
        self.converged = False

    @property
    def n_evals(self) -> int:
        """Function-and-gradient evaluations so far (the first, at x0, included)."""
        return self.fun_.n_evals

    def direction(self) -> np.ndarray:
        """−H∇f by the two-loop recursion (Nocedal & Wright, Algorithm 7.4)."""
        if not self.pairs:
            return -self.g / np.linalg.norm(self.g)
        q = self.g.copy()
        alphas = []
        for s, y, rho in reversed(self.pairs):
            a = rho * (s @ q)
            q -= a * y
            alphas.append(a)
        s, y, _ = self.pairs[-1]
        r = (s @ y) / (y @ y) * q
        for (s, y, rho), a in zip(self.pairs, reversed(alphas)):
            r += s * (a - rho * (y @ r))
        return -r

    def _search(self, d: np.ndarray) -> float | None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # scipy's LineSearchWarning: failure is handled below
            alpha = scipy.optimize.line_search(self.fun_.f, self.fun_.grad, self.x, d, self.g, self.f,
                                               c1=1e-4, c2=0.9, maxiter=20)[0]
        return alpha

    def iterate(self, n: int) -> None:
        """``n`` more iterations of the run (fewer if it converges)."""
        for _ in range(n):
            if self.converged or not np.any(self.g):
                self.converged = True
                return
            d = self.direction()
            alpha = self._search(d)
            if alpha is None and self.pairs:
                self.pairs.clear()
                d = self.direction()
                alpha = self._search(d)
            if alpha is None:
                self.converged = True
                return
            x = self.x + alpha * d
            f, g = self.fun_(x)
            s, y = x - self.x, g - self.g
            if s @ y > 1e-10 * (y @ y):
                self.pairs.append((s, y, 1.0 / (s @ y)))
            self.x, self.f, self.g = x, f, g
