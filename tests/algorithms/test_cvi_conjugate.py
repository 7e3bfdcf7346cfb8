"""CVI on conditionally conjugate models (Khan & Lin 2017, §5): it is SVI and VMP there.

Through :class:`svibench.capabilities.adapters.ConjugateMeanField`, full-batch
CVI-MF with step β must take exactly the steps of full-batch MF-SVI with the
constant step ρ = β, and NC-VMP exactly those of VMP — step by step, to 10⁻¹⁰,
on the mixture and on BPFA (whose locals are an iterative coordinate ascent).
"""
from __future__ import annotations

import numpy as np
import pytest

from svibench.algorithms.cvi_mf import CVIMF
from svibench.algorithms.ncvmp import NCVMP
from svibench.algorithms.svi import SVI, VMP
from svibench.capabilities import ConjugatePosterior
from svibench.capabilities.adapters import ConjugateMeanField
from svibench.datasets.bpfa_synthetic import bpfa_synthetic
from svibench.datasets.synthetic import gmm_synthetic, linreg_synthetic
from svibench.models.bpfa import BPFA
from svibench.models.gmm import GaussianMixture
from svibench.models.linreg import BayesianLinearRegression
from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.spec import ProblemSpec


@pytest.fixture(scope="module")
def mixture():
    return GaussianMixture(gmm_synthetic(n=400, n_test=50, dim=2, components=3, seed=3), components=3)


@pytest.fixture(scope="module")
def bpfa():
    data = bpfa_synthetic(n=80, dim=8, features=5, seed=1)
    return BPFA(data, features=5, predictive_samples=1, init_rows=20, init_sweeps=1)


@pytest.fixture(scope="module")
def logreg():
    """Pólya-Gamma-augmented logistic regression (``models.polya_gamma``): conjugate given its PG locals."""
    return build_model(ProblemSpec("logreg/australian", "logreg", "australian", {"delta": 1.0}), cache=False)


def _flat(posterior: ConjugatePosterior) -> np.ndarray:
    return np.concatenate([posterior.lam[k].flatten() for k in sorted(posterior.lam)])


def _lockstep(a, b, model, seed: int, steps: int) -> None:
    a.init(model, np.random.default_rng(seed))
    b.init(model, np.random.default_rng(seed))
    np.testing.assert_array_equal(_flat(a.posterior()), _flat(b.posterior()))  # the same start
    for _ in range(steps):
        a.step()
        b.step()
        np.testing.assert_allclose(_flat(a.posterior()), _flat(b.posterior()), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["mixture", "bpfa", "logreg"])
@pytest.mark.parametrize("beta", [0.3, 1.0])
def test_full_batch_cvi_mf_is_full_batch_svi_with_constant_rho(name, beta, request):
    model = request.getfixturevalue(name)
    _lockstep(CVIMF(rho=beta), SVI(batch_size=model.n_train, rho=beta), model, seed=4, steps=4)


@pytest.mark.parametrize("name", ["mixture", "bpfa"])
def test_ncvmp_is_vmp_on_all_conjugate_models(name, request):
    model = request.getfixturevalue(name)
    _lockstep(NCVMP(), VMP(), model, seed=2, steps=4)


def test_the_steps_do_move(mixture):
    """The lockstep tests compare moving trajectories, not two copies of the start."""
    cvi = CVIMF(rho=0.5)
    cvi.init(mixture, np.random.default_rng(4))
    start = _flat(cvi.posterior())
    cvi.step()
    assert np.max(np.abs(_flat(cvi.posterior()) - start)) > 1.0


def test_damped_ncvmp_is_cvi_mf_with_beta_one_minus_damping(mixture):
    _lockstep(NCVMP(damping=0.25), CVIMF(rho=0.75), mixture, seed=7, steps=3)


def test_cvi_mf_reaches_the_exact_linreg_posterior():
    model = BayesianLinearRegression(linreg_synthetic(n=200, n_test=20, dim=3, seed=0))
    cvi = CVIMF(rho=1.0)
    cvi.init(model, np.random.default_rng(0))
    cvi.step()
    assert model.evaluate(cvi.posterior(), np.random.default_rng(0))["posterior_kl"] < 1e-10


def test_adapter_has_no_nonconjugate_part(mixture):
    adapter = ConjugateMeanField(mixture, np.random.default_rng(0))
    lam = adapter.mf_init(np.random.default_rng(0))
    grads = adapter.nonconjugate_gradient(lam, tuple(lam), np.random.default_rng(0), 5)
    assert all(np.all(g.flatten() == 0) for g in grads.values())
    assert set(grads) == set(lam)


FAMILIES = {"SVI family": ("svi", "vmp"), "CVI family": ("cvi-mf", "ncvmp"), "BBVI": ("bbvi", "bbvi-reparam"),
            "samplers": ("gibbs",)}


@pytest.mark.parametrize("model", ["bpfa", "logreg", "gpc", "pmf", "gmm", "linreg"])
def test_shared_models_meet_three_families(model):
    """Issue 20: the comparisons across families can be made on every shared model."""
    registry = get_registry()
    model_cls = registry.model(model)
    meets = [family for family, names in FAMILIES.items()
             if any(registry.algorithm(name).incompatibility(model_cls) is None for name in names)]
    assert len(meets) >= 3, meets
