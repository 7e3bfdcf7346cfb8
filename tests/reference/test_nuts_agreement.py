"""Two independent samplers agree on logreg a1a (issue 30): NumPyro's NUTS, on the model's JAX log joint, against the
committed Pólya-Gamma Gibbs reference, every coordinate's mean and sd within their joint Monte Carlo error.
Skipped without NumPyro (``pip install 'svibench[peers]'``)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from svibench.problem import build_model
from svibench.reference.artifact import load_reference, reference_path
from svibench.spec import ProblemSpec
from svibench.study import load_study

pytest.importorskip("numpyro")
pytestmark = pytest.mark.slow

from pathlib import Path  # noqa: E402

STUDY = Path(__file__).parents[2] / "reports" / "khan2017-logreg" / "study.toml"


def a1a() -> ProblemSpec:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return next(r.problem for r in load_study(STUDY).runs if r.problem.name == "logreg/a1a")


def nuts_draws(model, chains: int = 2, warmup: int = 500, draws: int = 1500, seed: int = 0) -> np.ndarray:
    """NUTS (Hoffman & Gelman 2014, NumPyro's defaults) on −log p(y, z): draws (chains, draws, D)."""
    import jax
    from numpyro.infer import MCMC, NUTS

    density = model.jax_log_joint()
    with jax.enable_x64(True):
        data = tuple(jax.numpy.asarray(a) for a in density.data)
        kernel = NUTS(potential_fn=lambda z: -density.fn(z, *data))
        mcmc = MCMC(kernel, num_warmup=warmup, num_samples=draws, num_chains=chains, chain_method="sequential",
                    progress_bar=False)
        mcmc.run(jax.random.PRNGKey(seed), init_params=jax.numpy.zeros((chains, model.latent_dim)))
        return np.asarray(mcmc.get_samples(group_by_chain=True))


def test_nuts_and_pg_gibbs_agree_on_a1a_within_monte_carlo_error():
    import arviz as az

    spec = a1a()
    reference = load_reference(reference_path(spec))
    draws = nuts_draws(build_model(spec, cache=False))
    posterior = az.convert_to_dataset(draws)
    mcse_mean = np.asarray(az.mcse(posterior, method="mean").to_array()).ravel()
    mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
    z_mean = (mean - reference.mean) / np.hypot(mcse_mean, reference.arrays["mcse_mean"])
    # the sd's MCSE by the delta method: MCSE of the variance E[(z − m)²], from the ESS of the squared deviations
    squares = (draws - mean) ** 2
    ess = np.asarray(az.ess(az.convert_to_dataset(squares), method="mean").to_array()).ravel()
    mcse_sd = squares.std(axis=(0, 1)) / np.sqrt(ess) / (2 * sd)
    z_sd = (sd - reference.arrays["sd"]) / np.hypot(mcse_sd, reference.arrays["mcse_sd"])
    assert np.max(np.abs(z_mean)) < 4.5 and np.median(np.abs(z_mean)) < 1.2, np.sort(np.abs(z_mean))[-5:]
    assert np.max(np.abs(z_sd)) < 4.5 and np.median(np.abs(z_sd)) < 1.2, np.sort(np.abs(z_sd))[-5:]
