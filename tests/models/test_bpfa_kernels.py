"""The compiled BPFA sweeps (models.bpfa.kernels) against the numpy reference (models.bpfa.local), with masks."""
from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from svibench.models.bpfa import kernels as bpfa_kernels
from svibench.models.bpfa.chain import ChainState, point_view, sweep_locals
from svibench.models.bpfa.local import FeatureSweep, GlobalMoments, gibbs, mean_field, titsias, titsias_printed

def _problem(seed, B=37, K=12, D=9, full=False):
    """A sampled-like view with E[φ²] > E[φ]², data from the model, 30% of entries missing (unless ``full``)."""
    rng = np.random.default_rng(seed)
    pi = rng.uniform(0.1, 0.5, K)
    phi = rng.normal(0, 1.0, (K, D))
    view = GlobalMoments(5.0, np.log(5.0) - 0.1, 1.5, np.log(1.5) - 0.2, np.log(pi), np.log1p(-pi), phi,
                         phi**2 + rng.uniform(0.01, 0.2, (K, D)))
    X = (rng.random((B, K)) < pi) * rng.normal(0, 1, (B, K))
    M = np.ones((B, D)) if full else (rng.random((B, D)) < 0.7).astype(float)
    Y = (X @ phi + rng.normal(0, 0.3, (B, D))) * M
    return view, Y, M


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("approx", [mean_field, partial(mean_field, start="prior"), titsias, titsias_printed,
                                    partial(titsias_printed, start="prior")],
                         ids=["mf", "mf-from-prior", "titsias", "titsias-printed", "titsias-printed-from-prior"])
@pytest.mark.parametrize("max_sweeps", [1, 3, 200])
@pytest.mark.parametrize(("B", "K"), [(3, 12), (37, 12), (37, 13)])
def test_coordinate_ascent_kernel_equals_reference(approx, full, max_sweeps, B, K):
    """Same q after 1, 3 or (converged) many sweeps; both stop at the same sweep.  B = 3 leaves
    kernel lanes idle from the start; at B = 37 rows that stop hand their lanes to the next.  An
    odd K leaves the last pair of features one feature."""
    assert 3 < bpfa_kernels.LANES < 37
    view, Y, M = _problem(0, B=B, K=K, full=full)
    plain = approx(view, Y, M, max_sweeps, kernel=False)
    fast = approx(view, Y, M, max_sweeps, kernel=True)
    for name in ("theta", "mean_w", "var_w"):
        np.testing.assert_allclose(getattr(fast, name), getattr(plain, name), rtol=1e-9, atol=1e-12, err_msg=name)
    assert 0.05 < plain.theta.mean() < 0.95  # neither all on nor all off: the comparison has content


@pytest.mark.parametrize("kernel", [False, True])
def test_each_row_stops_after_its_first_small_sweep(kernel):
    """Row i stops after the first sweep n_i in which mean_k |Δθ_ik| < tol: found independently by
    running exactly n sweeps (tol = 0) for n = 1, 2, ...; rows stop at different sweeps.  The n sweeps are
    the compiled kernel's, which makes the reference's sweeps to rounding (the test above): the reference's
    ~3,000 sweeps took ~70 s."""
    view, Y, M = _problem(1)
    tol = 1e-3
    exact = [mean_field(view, Y, M, n, tol=0.0, kernel=True).theta for n in range(1, 80)]
    stopped = mean_field(view, Y, M, 100, tol=tol, kernel=kernel).theta
    first = []
    for i in range(Y.shape[0]):
        n = next(n for n in range(1, len(exact)) if np.mean(np.abs(exact[n][i] - exact[n - 1][i])) < tol)
        np.testing.assert_allclose(stopped[i], exact[n][i], rtol=1e-9, atol=1e-12)
        first.append(n + 1)
    assert len(set(first)) > 2, first  # the rule is per row, not one count for the minibatch


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("start", ["zero", "state"])
@pytest.mark.parametrize("K", [3, 12, 20], ids=["K<block", "K=block+4", "K=2 blocks+4"])
def test_gibbs_kernel_equals_reference_with_the_same_draws(full, start, K):
    view, Y, M = _problem(2, K=K, full=full)
    X0 = None if start == "zero" else np.random.default_rng(9).normal(0, 1, (Y.shape[0], view.phi.shape[0]))
    plain = gibbs(view, Y, M, 3, 4, np.random.default_rng(7), X0=X0, kernel=False)
    fast = gibbs(view, Y, M, 3, 4, np.random.default_rng(7), X0=X0, kernel=True)
    np.testing.assert_array_equal(fast.X != 0, plain.X != 0)  # same z draws
    for name in ("X", "X2", "Z", "W2", "R"):
        np.testing.assert_allclose(getattr(fast, name), getattr(plain, name), rtol=1e-9, atol=1e-12, err_msg=name)
    assert 0.05 < np.mean(plain.X != 0) < 0.95
    # a different seed gives a different chain (the draws do come from rng)
    other = gibbs(view, Y, M, 3, 4, np.random.default_rng(8), X0=X0, kernel=True)
    assert not np.array_equal(other.X != 0, fast.X != 0)


def test_kernel_leaves_the_sweep_state_consistent():
    """The kernel's residual bookkeeping matches a fresh masked residual of its final x."""
    view, Y, M = _problem(3)
    rng = np.random.default_rng(4)
    sweep = FeatureSweep(view, Y, M, np.zeros((Y.shape[0], view.phi.shape[0])))
    shape = (2,) + sweep.X.shape
    out = [np.empty((1,) + sweep.X.shape) for _ in range(3)] + [np.empty((1,) + Y.shape)]  # the kept sweep's
    bpfa_kernels.gibbs_sweeps(sweep.R, sweep.X, M, view.phi, sweep.Q, sweep.kappa, sweep.half_log, view.gamma_obs,
                              view.gamma_w, view.logit_pi, rng.random(shape), 1, *out)  # X, Z, W2, R
    np.testing.assert_allclose(sweep.R, M * (Y - sweep.X @ view.phi), atol=1e-10)
    np.testing.assert_array_equal(out[0][0], sweep.X)
    np.testing.assert_array_equal(out[3][0], sweep.R)


def test_chain_sweep_is_the_same_on_both_paths():
    """The uncollapsed sampler's local sweep (compiled by default) = one reference Gibbs sweep from its state."""
    view, Y, M = _problem(5)
    state = ChainState(np.exp(view.log_pi), view.phi, view.gamma_w, view.gamma_obs,
                       np.random.default_rng(6).normal(0, 1, (Y.shape[0], view.phi.shape[0])))
    fast = sweep_locals(state, Y, M, np.random.default_rng(3))
    plain = gibbs(point_view(state), Y, M, 0, 1, np.random.default_rng(3), X0=state.X, kernel=False).X[0]
    np.testing.assert_allclose(fast, plain, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("approx", [mean_field, titsias])
def test_a_row_gets_the_same_q_in_any_minibatch(approx):
    """Rows are independent given the view, stopping included: row i's q is the same alone or in a batch."""
    view, Y, M = _problem(4, B=12)
    batch = approx(view, Y, M, 100, kernel=True)
    for i in (0, 5):
        alone = approx(view, Y[i:i + 1], M[i:i + 1], 100, kernel=True)
        np.testing.assert_allclose(batch.theta[i], alone.theta[0], rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="tolerance"):
        approx(view, Y, M, 100, tol=-1.0)


def test_the_kernel_buffers_start_on_cache_lines():
    """The kernels' copies of φ and of the rows they sweep start on 64-byte boundaries, whatever the allocator
    returns (numba's start on 32-byte boundaries, so about half of these would not), and hold the values."""
    for rows, cols in [(1, 1), (3, 7), (16, 64), (16, 63), (250, 64), (125, 9)]:
        buffer = bpfa_kernels._aligned(rows, cols)
        assert buffer.shape == (rows, cols) and buffer.flags.c_contiguous and buffer.ctypes.data % 64 == 0
    phi = np.random.default_rng(0).normal(size=(13, 10))
    copy = bpfa_kernels._copy_aligned(phi)
    assert copy.ctypes.data % 64 == 0
    np.testing.assert_array_equal(copy, phi)
