"""CVI-MF (Khan & Lin 2017, Alg. 2) and the mean-field capability's Gamma gradients."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.special import polygamma

from svibench.algorithm import Diverged
from svibench.algorithms.cvi_mf import CVIMF, safe_convex_step
from svibench.capabilities import MeanFieldNonConjugate
from svibench.capabilities.mean_field import gamma_draws, gamma_mean_gradient, is_valid, mean_gradient
from svibench.expfam import GammaMean, GammaNatural

SHAPES = np.array([0.3, 1.0, 4.0, 60.0])
RATES = np.array([1.3, 0.5, 2.0, 4.0])


def _fd_in_mean(q: GammaNatural, f, h: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Central differences of a closed-form f(shape, rate) w.r.t. μ = (E log z, E z)."""
    mu = q.to_mean()

    def at(d_log, d_mean):
        return f(*GammaMean(mu.mean_log + d_log, mu.mean + d_mean).to_natural().shape_rate())

    return (at(h, 0) - at(-h, 0)) / (2 * h), (at(0, h) - at(0, -h)) / (2 * h)


def test_gamma_draws_derivatives_match_closed_form_expectations():
    rng = np.random.default_rng(0)
    u = rng.uniform(size=(200_000, len(SHAPES)))
    d = gamma_draws(SHAPES, RATES, u)
    # d/dα E[z] = 1/β and d/dα E[log z] = ψ'(α); d/dβ E[z] = −α/β².
    np.testing.assert_allclose(d.dz_dshape.mean(0), 1 / RATES, rtol=0.01)
    np.testing.assert_allclose((d.dz_dshape / d.z).mean(0), polygamma(1, SHAPES), rtol=0.01)
    np.testing.assert_allclose(d.dz_drate.mean(0), -SHAPES / RATES**2, rtol=0.01)


def test_gamma_draws_derivative_matches_inverse_cdf_differences():
    u = np.array([1e-6, 0.2, 0.5, 0.75, 0.9, 0.93, 1 - 1e-7])  # both sides of UPPER_TAIL
    from scipy.special import gammaincinv

    for alpha in (0.2, 1.0, 7.0, 500.0):
        d = gamma_draws(np.array(alpha), np.array(1.0), u)
        h = 1e-6 * alpha
        fd = (gammaincinv(alpha + h, u) - gammaincinv(alpha - h, u)) / (2 * h)
        np.testing.assert_allclose(d.dz_dshape, fd, rtol=1e-5)


@pytest.mark.parametrize("alpha, rtol", [(0.05, 1e-4), (0.01, 0.02)])
def test_gamma_draws_keep_a_small_shape_prior_gradient_finite(alpha, rtol):
    """At α ≤ 0.01 and β = 50 the inverse CDF underflows below the smallest normal float; the
    reparameterised gradient of a Gamma(0.1, ·) prior, E[(a − 1)/z · dz/dα] = (a − 1) ψ'(α),
    must stay finite (it overflowed to ±inf/NaN and stopped BBVI-reparam runs on Poisson–gamma MF)."""
    u = (np.arange(200_000) + 0.5) / 200_000
    d = gamma_draws(np.array(alpha), np.array(50.0), u)
    g = (0.1 - 1.0) / d.z * d.dz_dshape
    assert np.isfinite(g).all() and (d.z >= np.finfo(float).tiny).all()
    np.testing.assert_allclose(g.mean(), (0.1 - 1.0) * polygamma(1, alpha), rtol=rtol)
    extreme = gamma_draws(np.array(0.005), np.array(50.0), u)  # 3 % of draws floored: finite, biased low
    assert np.isfinite((0.1 - 1.0) / extreme.z * extreme.dz_dshape).all()


@pytest.mark.parametrize(
    "name, f, df, closed",
    [
        ("z^2", lambda z: z**2, lambda z: 2 * z, lambda a, b: a * (a + 1) / b**2),
        ("exp(-z)", lambda z: np.exp(-z), lambda z: -np.exp(-z), lambda a, b: (b / (b + 1)) ** a),
    ],
)
def test_gamma_mean_gradient_matches_finite_differences_of_closed_form(name, f, df, closed):
    q = GammaNatural.from_shape_rate(SHAPES[:3], RATES[:3])
    shape, rate = q.shape_rate()
    draws = gamma_draws(shape, rate, np.random.default_rng(1).uniform(size=(400_000, 3)))
    g = gamma_mean_gradient(q, draws, df(draws.z))
    fd_log, fd_mean = _fd_in_mean(q, closed)
    np.testing.assert_allclose(g.eta1, fd_log, rtol=0.03, atol=1e-3)
    np.testing.assert_allclose(g.eta2, fd_mean, rtol=0.03, atol=1e-3)


def test_mean_gradient_inverts_the_fisher_information():
    # f = c1 E[log z] + c2 E[z] is linear in μ: ∇_λ f = C (c1, c2), ∇_μ f = (c1, c2) exactly.
    q = GammaNatural.from_shape_rate(SHAPES, RATES)
    c = GammaNatural(np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.3, 0.0, -1.0, 2.0]))
    grad_lam = q.fisher_vector_product(c)
    got = mean_gradient(q, GammaNatural(grad_lam.mean_log, grad_lam.mean))
    np.testing.assert_allclose(got.eta1, c.eta1, rtol=1e-10)
    np.testing.assert_allclose(got.eta2, c.eta2, rtol=1e-10)


class PoissonGammaToy:
    """z ~ Ga(a, b), yₙ ~ Poisson(z): the likelihood (yₙ log z − z) treated as *non-conjugate*,
    with its exact mean-parameter gradient (Σy, −N) obtained through ∇_λ and eq. 15."""

    n_train = 5

    def __init__(self, y=(3.0, 0.0, 5.0, 2.0, 1.0), a=2.0, b=0.5):
        self.y, self.a, self.b = np.asarray(y), a, b
        self.prior = GammaNatural.from_shape_rate(np.array([a]), np.array([b]))

    def mf_init(self, rng):
        return {"z": GammaNatural.from_shape_rate(np.array([1.0]), np.array([1.0]))}

    def conjugate_messages(self, lam, block):
        return self.prior

    def nonconjugate_gradient(self, lam, blocks, rng, n_samples):
        exact = GammaNatural(np.array([self.y.sum()]), np.array([-float(len(self.y))]))
        grad_lam = lam["z"].fisher_vector_product(exact)
        return {"z": mean_gradient(lam["z"], GammaNatural(grad_lam.mean_log, grad_lam.mean))}

    def exact_posterior(self):
        return GammaNatural.from_shape_rate(np.array([self.a + self.y.sum()]), np.array([self.b + len(self.y)]))


def test_toy_offers_the_capability():
    assert isinstance(PoissonGammaToy(), MeanFieldNonConjugate)


def test_beta_one_with_exact_gradients_gives_the_exact_posterior_in_one_step():
    toy = PoissonGammaToy()
    alg = CVIMF(rho=1.0, n_samples=1)
    alg.init(toy, np.random.default_rng(0))
    alg.step()
    exact = toy.exact_posterior()
    np.testing.assert_allclose(alg.posterior()["z"].shape_rate(), exact.shape_rate(), rtol=1e-10)
    assert alg.shrinks_ == 0


def test_small_constant_step_converges_geometrically_to_the_exact_posterior():
    toy = PoissonGammaToy()
    alg = CVIMF(rho=0.3, n_samples=1)
    alg.init(toy, np.random.default_rng(0))
    start = alg.posterior()["z"]
    for _ in range(30):
        alg.step()
    exact = toy.exact_posterior()
    # λ_t − λ* = (1 − ρ)^t (λ_0 − λ*) exactly (eq. 85 with a fixed λ̃ = λ*).
    expected = exact + (0.7**30) * (start - exact)
    np.testing.assert_allclose(alg.posterior()["z"].eta1, expected.eta1, rtol=1e-10)
    np.testing.assert_allclose(alg.posterior()["z"].eta2, expected.eta2, rtol=1e-10)


def test_a_step_that_would_make_a_rate_negative_is_shrunk_to_a_valid_one():
    lam = {"z": GammaNatural.from_shape_rate(np.array([2.0, 3.0]), np.array([1.0, 1.0]))}
    # Target rates −9 and 0.5: the first needs ρ' < 1/10 to keep the rate positive.
    target = {"z": GammaNatural(np.array([1.0, 1.0]), np.array([9.0, -0.5]))}
    new, step, m = safe_convex_step(lam, target, rho=0.5, shrink=0.8, max_shrinks=100)
    assert is_valid(new["z"])
    expected_m = int(np.ceil(np.log(0.1 / 0.5) / np.log(0.8)))  # least m with 0.5·0.8^m < 0.1
    assert m == expected_m and step == pytest.approx(0.5 * 0.8**m)
    assert not is_valid((1 - step / 0.8) * lam["z"] + (step / 0.8) * target["z"])
    shape, rate = new["z"].shape_rate()
    assert np.all(shape > 0) and np.all(rate > 0)


def test_the_node_scope_shrinks_only_the_nodes_that_need_it():
    lam = {"z": GammaNatural.from_shape_rate(np.array([2.0, 3.0, 1.0]), np.array([1.0, 1.0, 2.0]))}
    # Node 0: target rate −9 needs ρ' < 1/10; node 1: target rate 0.5 is valid; node 2: target shape −4
    # (η₁ = −5) needs (1 − ρ')·0 + ρ'·(−5) > −1, i.e. ρ' < 1/5.
    target = {"z": GammaNatural(np.array([1.0, 1.0, -5.0]), np.array([9.0, -0.5, -1.0]))}
    new, step, m = safe_convex_step(lam, target, rho=0.5, shrink=0.8, max_shrinks=100, scope="node")
    assert np.all(new["z"].in_domain())
    least = [int(np.ceil(np.log(bound / 0.5) / np.log(0.8))) for bound in (0.1, 0.2)]  # least m with 0.5·0.8^m < bound
    steps = np.array([0.5 * 0.8 ** least[0], 0.5, 0.5 * 0.8 ** least[1]])
    expected = (1 - steps) * lam["z"] + steps * target["z"]
    np.testing.assert_allclose(new["z"].eta1, expected.eta1, rtol=1e-12)
    np.testing.assert_allclose(new["z"].eta2, expected.eta2, rtol=1e-12)
    assert m == max(least) and step == pytest.approx(steps.mean())
    # One step larger (÷0.8) would leave the domain for each shrunk node.
    wider = (1 - steps / 0.8) * lam["z"] + (steps / 0.8) * target["z"]
    assert not wider.in_domain()[0] and not wider.in_domain()[2]


def test_both_shrink_scopes_agree_when_no_shrink_is_needed():
    lam = {"z": GammaNatural.from_shape_rate(np.array([2.0, 3.0]), np.array([1.0, 1.0]))}
    target = {"z": GammaNatural.from_shape_rate(np.array([4.0, 1.0]), np.array([2.0, 0.5]))}
    per_node = safe_convex_step(lam, target, rho=0.5, shrink=0.8, max_shrinks=100, scope="node")
    shared = safe_convex_step(lam, target, rho=0.5, shrink=0.8, max_shrinks=100)
    np.testing.assert_array_equal(per_node[0]["z"].eta2, shared[0]["z"].eta2)
    assert per_node[1:] == shared[1:] == (0.5, 0)


def test_a_step_that_would_make_a_shape_negative_is_shrunk_and_counted():
    class BadGradient(PoissonGammaToy):
        def nonconjugate_gradient(self, lam, blocks, rng, n_samples):
            return {"z": GammaNatural(np.array([-100.0]), np.array([0.0]))}  # shape message −97

    alg = CVIMF(rho=0.5, n_samples=1)
    alg.init(BadGradient(), np.random.default_rng(0))
    alg.step()
    shape, _ = alg.posterior()["z"].shape_rate()
    assert shape[0] > 0
    assert alg.shrinks_ > 0 and alg.last_rho_ < 0.5


def test_no_valid_step_is_reported_as_divergence():
    lam = {"z": GammaNatural(np.array([0.0]), np.array([np.nan]))}
    target = {"z": GammaNatural(np.array([0.0]), np.array([-1.0]))}
    with pytest.raises(Diverged):
        safe_convex_step(lam, target, rho=0.5, shrink=0.8, max_shrinks=5)


def test_hyperparameters_are_validated():
    for bad in (dict(rho=0.0), dict(rho=1.5), dict(n_samples=0), dict(sweep="random"), dict(shrink=1.0),
                dict(shrink_scope="block")):
        with pytest.raises(ValueError):
            CVIMF(**bad).check_params()
