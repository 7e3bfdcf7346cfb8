"""Compiled (numba) sweeps over features for the BPFA local approximations.

The same updates as the plain-numpy reference in ``models.bpfa.local``
(``mf_step``, ``titsias_step``, ``titsias_printed_step``, ``gibbs_update``;
Shah et al. 2015, eq. 9, 11, the appendix's printed Titsias objective and its
blocked Gibbs step), reorganised for speed without changing the maths:

* rows are independent given the globals, so the loop over rows is outermost
  and each row sweeps its features with its residual r_i (D values) kept in
  cache — one dot product and, when x_ik changed, one axpy per (row, feature)
  instead of several numpy calls per feature; the axpy and the next feature's
  dot product share one pass over r_i (~20% faster).  Single-threaded: splitting
  rows over threads with ``prange`` gave no gain on the 2-core machine, and
  numba's default threading layer must not be entered from two threads at once
  (as in a multi-threaded Dask worker);
* the coordinate-ascent kernel keeps the reference's stopping rule, which is
  per row (a row stops when its θ_i· moved by less than ``tol`` on average),
  and interleaves ``LANES`` rows feature by feature.  Within a row each step
  waits for the previous one (its dot product feeds the next feature's field,
  through a division and an exp), so one row at a time leaves the core idle on
  that chain; steps of different rows are independent and the CPU overlaps them
  (asv MF local step at B = K = 250: 9.0 → 6.6–6.9 ms).  A row that stops hands its
  lane to the next row at the end of the sweep.  A row's result does not depend
  on the rows beside it;
* the arrays its passes stream start on cache lines: E[φ] is copied, and the lanes'
  r_i and m_i are copied side by side (r_i goes back as the row leaves its lane),
  into 64-byte aligned buffers (:func:`_aligned`).  numpy aligns arrays to 16 bytes
  only (in the asv benchmark's steps R always started 16 bytes past a 32-byte
  boundary, M in half the steps or more), and then half of a row's vector loads
  span two lines: the MF kernel took 4.4–4.6 ms with φ, R and M so placed against
  3.6–3.9 ms with them 32-byte aligned, and now takes 3.3–3.5 ms either way, with
  the same arithmetic, bit for bit (B = K = 250, D = 64, issue 33).  The Gibbs
  kernel does the same for its φ and the row it sweeps (0–3% with aligned inputs,
  up to 15% with misaligned ones).  Copying the rows of the (B, K) arrays too, or
  making the lanes feature-major, was slower;
* it takes features in pairs (k, k + 1): one pass applies both updates and takes
  the next pair's two products; the second feature's product follows from the
  first's update as r_i · φ_k+1 − δ_k G_ip, with G_ip = Σ_d m_id φ_kd φ_k+1,d the
  pair's masked product, which does not change during the sweeps: the caller
  gives all of them, one (B, D) × (D, K/2) product (:func:`pair_products`).  A pass then
  loads r_i, m_i and four rows of φ for two features instead of eight arrays (MF
  local step at B = K = 250, D = 64: 5.5–5.6 → 4.8–5.2 ms; Titsias 5.5–5.8 → 5.1–5.2;
  G_ip from the product rather than in the pass: a further 3–5%);
* and it takes each feature's θ_ik = σ(·) for all lanes at once, in SIMD
  registers (``svibench.numerics.expit``), rather than by a call of the C
  library's exp per lane (4.9–5.8 → 4.3–5.1 ms).  With σ taken this way, 16 lanes
  (two SIMD registers' worth) beat 8 by 6–8%: two independent chains of σ's
  multiply-adds instead of one;
* the Gibbs kernel computes the dot products r_i · φ_j of ``BLOCK`` features in one pass
  over r_i (one load of r_i for eight products).  A draw leaves x_ik, and so r_i, unchanged
  for most features (x_ik = 0 before and after: 96% of updates at B = K = 250), so the
  products stay valid until a feature changes; then r_i is updated and the next block starts
  at the feature after it.  1/κ is taken once per row, not at every sweep.  Kernel at
  B = K = 250, D = 64, 3 + 3 sweeps: 9.9–10.6 → 8.1–8.4 ms.  The block's P(z_ik = 1 | rest)
  are then taken at once (``svibench.numerics.expit``): 10.7 → 9.7 ms on a loaded machine;
* the Gibbs kernel takes its uniforms ``U`` pre-drawn by the caller's
  ``numpy.random.Generator`` (shape (sweeps, B, K)), the same draws the
  reference consumes, so a seed fixes the trajectory on both paths.  One
  uniform gives both z_ik and w_ik (``gibbs_update``: the slab draw is
  Φ⁻¹(u/p) by the inverse-CDF method); Φ⁻¹ is scipy's own ``ndtri`` (its
  ``cython_special`` C entry point, linked by name so the kernel still caches),
  so both paths compute the same quantile.

Results agree with the reference to rounding (dot products are summed in
another order); ``tests/models/test_bpfa_kernels.py`` checks this with masks.

Inputs are float64, C-contiguous; arrays are updated in place.
"""
from __future__ import annotations

import math

import llvmlite.binding
import numpy as np
from numba.extending import get_cython_function_address

from svibench.numerics.jit import numba
from svibench.numerics.expit import expit_all

__all__ = ["V_MIN", "pair_products", "factor_sweeps", "gibbs_sweeps"]

#: Floor of the slab draw's u/p before Φ⁻¹ (``rng.random`` can return 0.0): the smallest positive double.
V_MIN = math.ulp(0.0)
#: Rows interleaved by the coordinate-ascent kernel (16 was fastest of 6–32 at B = K = 250, D = 64).
LANES = 16
#: Features whose dot products the Gibbs kernel takes in one pass (``_dots`` has one accumulator for each).
BLOCK = 8

#: ``error_model="numpy"``: a division by zero gives inf or NaN instead of raising (the run then ends diverged:
#: SVI's λ is checked after each step, the sampler's metrics at each checkpoint), so numba adds no zero check
#: before each division; otherwise the results are the same bits.
_jit = numba.njit(cache=True, fastmath={"reassoc", "contract"}, error_model="numpy")

# scipy.special.ndtri's C entry point, called by symbol name (a ctypes pointer would stop caching).
llvmlite.binding.add_symbol("svibench_scipy_ndtri",
                            get_cython_function_address("scipy.special.cython_special", "ndtri"))
_ndtri = numba.types.ExternalFunction("svibench_scipy_ndtri", numba.types.float64(numba.types.float64))


def pair_products(M: np.ndarray, phi: np.ndarray) -> np.ndarray:
    """G (B, ⌈K/2⌉): G_ip = Σ_d m_id φ_2p,d φ_2p+1,d, the masked product of each pair of features
    :func:`factor_sweeps` takes together (0 for the last, single feature when K is odd)."""
    pairs = np.zeros(((phi.shape[0] + 1) // 2, phi.shape[1]))
    second = phi[1::2]
    pairs[:len(second)] = phi[0::2][:len(second)] * second
    return M @ pairs.T


@numba.njit(inline="always", fastmath={"reassoc", "contract"})
def _pair_pass(R, M, phi, i, k0, k1, d0, d1, j0, j1):
    """r_i ← r_i − m_i ∘ (d0 φ_k0 + d1 φ_k1), returning (r_i · φ_j0, r_i · φ_j1): one pass over r_i
    for a pair of features' updates and the next pair's products."""
    s0 = 0.0
    s1 = 0.0
    for d in range(R.shape[1]):
        R[i, d] -= (d0 * phi[k0, d] + d1 * phi[k1, d]) * M[i, d]
        s0 += R[i, d] * phi[j0, d]
        s1 += R[i, d] * phi[j1, d]
    return s0, s1


@numba.njit(inline="always")
def _aligned(rows, cols):
    """An uninitialised C-contiguous (rows, cols) array whose data starts on a 64-byte boundary (a cache line).
    numba's own arrays start on 32-byte boundaries and numpy's on 16, so that a 64-byte vector load may span two
    cache lines."""
    buf = np.empty(rows * cols + 8)
    start = (8 - (buf.ctypes.data // 8) % 8) % 8
    return buf[start:start + rows * cols].reshape((rows, cols))


@numba.njit(inline="always")
def _copy_aligned(a):
    """A copy of the 2-d array ``a`` in an :func:`_aligned` array."""
    out = _aligned(a.shape[0], a.shape[1])
    out[:] = a
    return out


@numba.njit(inline="always")
def _take_row(R, M, phi, i, r_l, m_l, lane, first1, t):
    """Lane ``lane`` takes row i: r_i and m_i into its rows of ``r_l`` and ``m_l``, and the first pair's products."""
    r_l[lane] = R[i]
    m_l[lane] = M[i]
    t[lane, 0], t[lane, 1] = _pair_pass(r_l, m_l, phi, lane, 0, 0, 0.0, 0.0, 0, first1)


# long: the coordinate step stays in the loop body: as an inlined function taking its arrays it ran 2× slower
@_jit
def factor_sweeps(mode, R, X, M, phi, A, Q, G, half_log, gamma_obs, gamma_w, logit_pi,
                  theta, mean_w, var_w, max_sweeps, tol):
    """Coordinate-ascent sweeps of the mean-field (eq. 9) or Titsias (eq. 11, or its printed
    objective) local q, row by row (rows interleaved: see the module docstring).

    Parameters
    ----------
    mode : int
        0: mean-field step (κ = θA + γ_w, m = θb/κ, θ = σ(logit π_k + m b − ½(m² + 1/κ) A));
        1: Titsias step (κ = A + γ_w, m = b/κ, logit θ = logit π_k + ½ log(γ_w/κ) + b²/(2κ));
        2: step of the appendix's printed Titsias objective (m = θb/(θA + γ_w),
        v = θ/(θA + γ_w), logit θ = logit π_k + m b − ½(m² + v) A + ½ log(γ_w v)).
    R, X, M : (B, D), (B, K), (B, D)
        Masked residual, current E[x] and mask (updated: R, X).
    phi, A, Q : (K, D), (B, K), (B, K)
        E[φ], γ_obs Σ_d m_id E[φ_kd²] and γ_obs Σ_d m_id E[φ_kd]².
    G : (B, ⌈K/2⌉)
        Σ_d m_id E[φ_2p,d] E[φ_2p+1,d], the pairs' masked products (:func:`pair_products`).
    half_log : (B, K)
        ½ log(γ_w/(A + γ_w)) (Titsias only; any (B, K) array otherwise).
    theta, mean_w, var_w : (B, K)
        The factorised q, updated in place.
    max_sweeps, tol
        Row i stops after the first sweep in which its θ_ik moved by less than ``tol``
        on average over k, or after ``max_sweeps``.

    Returns
    -------
    ndarray (B,) of int
        The sweeps each row did.
    """
    B, K = X.shape
    sweeps = np.empty(B, dtype=np.int64)
    row = np.full(LANES, -1, dtype=np.int64)
    done = np.zeros(LANES, dtype=np.int64)
    moved = np.zeros(LANES)
    t = np.zeros((LANES, 2))                  # r_i · φ_k, r_i · φ_k+1 of the pair about to be updated
    r_l = _aligned(LANES, R.shape[1])         # each lane's r_i and m_i, side by side (see the module docstring)
    m_l = _aligned(LANES, R.shape[1])
    phi = _copy_aligned(phi)                  # E[φ] on cache-line boundaries (see the module docstring)
    delta = np.zeros((LANES, 2))              # the pair's changes of x_ik
    th_new = np.zeros(LANES)                  # each lane's logit θ_ik, then θ_ik
    first1 = min(1, K - 1)                    # the first pair's second feature (itself when K = 1)
    nxt = 0
    for lane in range(min(LANES, B)):
        row[lane] = nxt
        _take_row(R, M, phi, nxt, r_l, m_l, lane, first1, t)
        nxt += 1
    while (row >= 0).any():
        for k in range(0, K, 2):
            for h in range(min(2, K - k)):
                kk = k + h
                for lane in range(LANES):
                    i = row[lane]
                    if i < 0:
                        continue
                    # r_i · φ_kk; for the pair's second feature, after the first one's update:
                    # (r_i − δ_k m_i ∘ φ_k) · φ_k+1 = t_1 − δ_k G_i,k/2
                    s = t[lane, 0] if h == 0 else t[lane, 1] - delta[lane, 0] * G[i, k // 2]
                    b = gamma_obs * s + X[i, kk] * Q[i, kk]
                    a = A[i, kk]
                    if mode == 1:
                        kappa = a + gamma_w
                        m = b / kappa
                        v = 1.0 / kappa
                        log_odds = logit_pi[kk] + half_log[i, kk] + 0.5 * b * m
                    elif mode == 2:
                        den = theta[i, kk] * a + gamma_w
                        m = theta[i, kk] * b / den
                        v = theta[i, kk] / den
                        log_odds = logit_pi[kk] + m * b - 0.5 * (m * m + v) * a + 0.5 * math.log(gamma_w * v)
                    else:
                        kappa = theta[i, kk] * a + gamma_w
                        m = theta[i, kk] * b / kappa
                        v = 1.0 / kappa
                        log_odds = logit_pi[kk] + m * b - 0.5 * (m * m + v) * a
                    mean_w[i, kk] = m
                    var_w[i, kk] = v
                    th_new[lane] = log_odds
                expit_all(th_new)  # θ of every lane at once (SIMD: svibench.numerics.expit)
                for lane in range(LANES):
                    i = row[lane]
                    if i < 0:
                        continue
                    th = th_new[lane]
                    moved[lane] += abs(th - theta[i, kk])
                    theta[i, kk] = th
                    delta[lane, h] = th * mean_w[i, kk] - X[i, kk]
                    X[i, kk] = th * mean_w[i, kk]
            k1 = min(k + 1, K - 1)
            j0 = k + 2 if k + 2 < K else 0
            j1 = min(j0 + 1, K - 1)
            for lane in range(LANES):
                i = row[lane]
                if i < 0:
                    continue
                d1 = delta[lane, 1] if k + 1 < K else 0.0
                t[lane, 0], t[lane, 1] = _pair_pass(r_l, m_l, phi, lane, k, k1, delta[lane, 0], d1, j0, j1)
        for lane in range(LANES):
            i = row[lane]
            if i < 0:
                continue
            done[lane] += 1
            if moved[lane] < tol * K or done[lane] == max_sweeps:
                sweeps[i], done[lane] = done[lane], 0
                R[i] = r_l[lane]
                if nxt < B:
                    row[lane] = nxt
                    _take_row(R, M, phi, nxt, r_l, m_l, lane, first1, t)
                    nxt += 1
                else:
                    row[lane] = -1
            moved[lane] = 0.0
    return sweeps


@numba.njit(inline="always", fastmath={"reassoc", "contract"})
def _dots(R, phi_pad, i, j, out):
    """out[l] = r_i · φ_{j+l} for l < BLOCK, in one pass over r_i (``phi_pad``: φ with BLOCK zero rows below)."""
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    for d in range(R.shape[1]):
        r = R[i, d]
        s0 += r * phi_pad[j, d]
        s1 += r * phi_pad[j + 1, d]
        s2 += r * phi_pad[j + 2, d]
        s3 += r * phi_pad[j + 3, d]
        s4 += r * phi_pad[j + 4, d]
        s5 += r * phi_pad[j + 5, d]
        s6 += r * phi_pad[j + 6, d]
        s7 += r * phi_pad[j + 7, d]
    out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7] = s0, s1, s2, s3, s4, s5, s6, s7


@numba.njit(inline="always", fastmath={"reassoc", "contract"})
def _set(R, M, i, phi, k, delta):
    """r_i ← r_i − δ m_i ∘ φ_k, as x_ik changes by δ."""
    for d in range(R.shape[1]):
        R[i, d] -= delta * phi[k, d] * M[i, d]


@_jit
def gibbs_sweeps(R, X, M, phi, Q, kappa, half_log, gamma_obs, gamma_w, logit_pi, U, burnin, X_keep, Z, W2,
                 R_keep):
    """Blocked Gibbs sweeps on every row's locals (appendix): z_ik with w_ik integrated, then w_ik | z_ik.

    Sweep s, feature k of row i uses ``U[s, i, k]`` for both: z_ik = 1 iff U < p, then
    w_ik = b/κ + Φ⁻¹(max(U/p, ``V_MIN``))/√κ (inverse CDF; ``local.gibbs_update``); sweeps
    ``s ≥ burnin`` are kept in ``X_keep``, ``Z`` (E[z_ik | rest]) and ``W2`` (E[w_ik² | rest]),
    each (samples, B, K), and ``R_keep`` (samples, B, D), the masked residual.  ``kappa`` = A + γ_w
    and ``half_log`` = ½ log(γ_w/κ) are (B, K).  ``dots`` holds r_i · φ_j for the block of features
    from ``k``, valid until a feature of the block changes x_ik (see the module docstring), and so do
    ``means`` and ``probs``, the block's slab means b/κ and P(z_ij = 1 | rest), taken at once.
    """
    B, K = X.shape
    phi_pad = _aligned(K + BLOCK, phi.shape[1])  # on cache lines, as r_i and m_i (see the module docstring)
    phi_pad[:K] = phi
    phi_pad[K:] = 0.0
    r, m = _aligned(1, R.shape[1]), _aligned(1, R.shape[1])  # r_i and m_i of the row being swept
    dots = np.empty(BLOCK)
    means = np.zeros(BLOCK)
    probs = np.zeros(BLOCK)
    inv_kappa = np.empty(K)
    inv_gamma_w = 1.0 / gamma_w
    for i in range(B):
        r[0] = R[i]
        m[0] = M[i]
        for k in range(K):
            inv_kappa[k] = 1.0 / kappa[i, k]
        for s in range(U.shape[0]):
            keep = s - burnin
            k = 0
            while k < K:
                _dots(r, phi_pad, 0, k, dots)
                end = min(k + BLOCK, K)
                for j in range(k, end):  # the block's slab means and P(z_ij = 1 | rest), valid as the products are
                    b = gamma_obs * dots[j - k] + X[i, j] * Q[i, j]
                    means[j - k] = b * inv_kappa[j]
                    probs[j - k] = logit_pi[j] + half_log[i, j] + 0.5 * b * means[j - k]
                expit_all(probs)
                j = k
                while j < end:
                    ik = inv_kappa[j]
                    mean = means[j - k]
                    p = probs[j - k]
                    u = U[s, i, j]
                    xk = mean + _ndtri(max(u / p, V_MIN)) * math.sqrt(ik) if u < p else 0.0
                    if keep >= 0:
                        Z[keep, i, j] = p
                        W2[keep, i, j] = p * (mean * mean + ik) + (1.0 - p) * inv_gamma_w
                    changed = xk != X[i, j]
                    if changed:
                        _set(r, m, 0, phi_pad, j, xk - X[i, j])
                        X[i, j] = xk
                    j += 1
                    if changed:
                        break
                k = j
            if keep >= 0:
                for k in range(K):
                    X_keep[keep, i, k] = X[i, k]
                for d in range(R.shape[1]):
                    R_keep[keep, i, d] = r[0, d]
        R[i] = r[0]
