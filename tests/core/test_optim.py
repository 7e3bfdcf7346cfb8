"""svibench.numerics.optim: each optimiser's first two steps against numbers worked by hand."""
from __future__ import annotations

import pickle

import numpy as np
import pytest

from svibench.numerics.optim import OPTIMIZERS, SGD, AdaGrad, Adadelta, Adam, RMSprop, make_optimizer
from svibench.numerics.schedules import constant

G1, G2 = np.array([0.5, -2.0]), np.array([1.0, 1.0])


def two_steps(opt):
    state = opt.init(np.zeros(2))
    d1, state = opt.update(G1, state)
    d2, state = opt.update(G2, state)
    return d1, d2


def test_sgd_scales_the_gradient_by_the_schedule():
    # Robbins–Monro (t + 1)^-0.75: t = 1 → 2^-0.75 = 0.594604, t = 2 → 3^-0.75 = 0.438691
    d1, d2 = two_steps(SGD(0.1))
    np.testing.assert_allclose(d1, [0.1 * 0.594604 * 0.5, -0.1 * 0.594604 * 2.0], rtol=1e-6)
    np.testing.assert_allclose(d2, [0.0438691, 0.0438691], rtol=1e-5)
    d1, _ = two_steps(SGD(0.1, schedule=lambda t: constant(t, rho=1.0)))
    np.testing.assert_allclose(d1, [0.05, -0.2])


def test_adagrad_divides_by_the_root_of_the_summed_squares():
    # step 1: G = (0.25, 4) → 0.1·(0.5/0.5, −2/2) = (0.1, −0.1)
    # step 2: G = (1.25, 5) → 0.1·(1/√1.25, 1/√5) = (0.0894427, 0.0447214)
    d1, d2 = two_steps(AdaGrad(0.1))
    np.testing.assert_allclose(d1, [0.1, -0.1], rtol=1e-7)
    np.testing.assert_allclose(d2, [0.0894427, 0.0447214], rtol=1e-6)


def test_rmsprop_divides_by_the_root_of_the_moving_average():
    # step 1: v = 0.1·(0.25, 4) = (0.025, 0.4) → 0.01·(0.5/0.158114, −2/0.632456) = (0.0316228, −0.0316228)
    # step 2: v = 0.9·v + 0.1 = (0.1225, 0.46) → 0.01·(1/0.35, 1/0.678233) = (0.0285714, 0.0147442)
    d1, d2 = two_steps(RMSprop(0.01))
    np.testing.assert_allclose(d1, [0.0316228, -0.0316228], rtol=1e-6)
    np.testing.assert_allclose(d2, [0.0285714, 0.0147442], rtol=1e-5)


def test_adam_bias_corrects_its_moments():
    # step 1: m̂ = g, v̂ = g² → 0.01·sign(g) = (0.01, −0.01)
    # step 2: m = 0.9·0.1·g1 + 0.1·g2 = (0.145, −0.08), m̂ = m/0.19 = (0.763158, −0.421053);
    #         v = 0.999·0.001·g1² + 0.001·g2² = (0.00124975, 0.004996), v̂ = v/0.001999 = (0.625188, 2.499250)
    #         → 0.01·(0.763158/0.790688, −0.421053/1.580902) = (0.00965183, −0.00266337)
    d1, d2 = two_steps(Adam(0.01))
    np.testing.assert_allclose(d1, [0.01, -0.01], rtol=1e-7)
    np.testing.assert_allclose(d2, [0.00965183, -0.00266337], rtol=1e-5)


def test_adadelta_in_knowles_convention():
    # ρ = 0.9 weights the new term, ε = 1e-4, lr = 10.
    # step 1: G = 0.9·(0.25, 4) = (0.225, 3.6); Δ = g·√1e-4/√(G + 1e-4) = (0.5·0.01/0.474447, −2·0.01/1.897393)
    #         = (0.0105386, −0.0105407); X = 0.9Δ² = (9.99558e-5, 9.99956e-5)
    # step 2: G = 0.9 + 0.1·G = (0.9225, 1.26); Δ = √(X + 1e-4)/√(G + 1e-4)
    #         = (0.01414066/0.960521, 0.01414207/1.122542) = (0.0147218, 0.0125982)
    d1, d2 = two_steps(Adadelta(10.0, rho=0.9, eps=1e-4))
    np.testing.assert_allclose(d1, [0.105386, -0.105407], rtol=1e-5)
    np.testing.assert_allclose(d2, [0.147218, 0.125982], rtol=2e-5)


def test_state_is_not_mutated_and_optimisers_pickle():
    opt = Adam(0.1)
    state = opt.init(np.zeros(2))
    opt.update(G1, state)
    assert state[0] == 0 and not np.any(state[1])
    assert pickle.loads(pickle.dumps(opt)) == opt


@pytest.mark.parametrize("bad, match", [(("nesterov", 0.1), "unknown optimizer 'nesterov': use one of adadelta, adagrad, adam, rmsprop, sgd"),
                                        (("adam", 0.0), "learning_rate must be > 0"), (("adam", -1.0), "learning_rate must be > 0")])
def test_bad_optimizer_settings_are_one_line_errors(bad, match):
    with pytest.raises(ValueError, match=match) as err:
        make_optimizer(*bad)
    assert "\n" not in str(err.value)


def test_every_optimizer_is_built_by_name():
    assert {type(make_optimizer(name, 0.5)) for name in OPTIMIZERS} == set(OPTIMIZERS.values())
