"""Compiled (numba) ∇_z log p(y, z) of Bayesian logistic regression, for fused loops
(:mod:`svibench.capabilities.compiled_log_joint`).

With sₙ = 2yₙ − 1 and ηₙ = x̃ₙᵀz, the same gradient as the numpy ``grad_log_joint`` of
:mod:`.logreg`:

    ∇_z log p(y, z) = Σₙ x̃ₙ sₙ σ(−sₙηₙ) − δ ∘ z,

one pass over the rows of a dense X̃, each row's ηₙ and its contribution taken together.  Sums
run in another order than the BLAS products of the numpy path (reassociated, so that they
vectorise: as fast as numpy's at N = 20,000, D = 55, 2.5× faster at australian's 345 × 15),
so the two agree to rounding.  σ is :func:`svibench.numerics.expit.expit` (no C-library call: the
gradient at N = 20,000, D = 55 went 913 → 603 µs, at 345 × 15 7.4 → 6.3 µs).  Dense only: on a CSR design (a7a, 11% nonzeros) the same loop
was 2× slower than scipy's sparse products, which leave no Python overhead worth fusing away.
"""
from __future__ import annotations


from svibench.numerics.jit import numba
from svibench.numerics.expit import expit

__all__ = ["dense_grad_log_joint"]

_jit = numba.njit(cache=True, error_model="numpy", fastmath={"reassoc", "contract"})


@_jit
def _dloglik(s, eta):
    """∂ log σ(sη)/∂η = s σ(−sη) (exact to a few ulp for either sign of sη: ``expit`` clamps, never overflows)."""
    return s * expit(-s * eta)


@_jit
def dense_grad_log_joint(z, data, out):
    """``out`` ← ∇_z log p(y, z) for ``data`` = (X̃ dense (N, D), s (N,), δ (D,))."""
    X, s, precision = data
    for d in range(z.shape[0]):
        out[d] = -precision[d] * z[d]
    for n in range(X.shape[0]):
        eta = 0.0
        for d in range(z.shape[0]):
            eta += X[n, d] * z[d]
        r = _dloglik(s[n], eta)
        for d in range(z.shape[0]):
            out[d] += r * X[n, d]
