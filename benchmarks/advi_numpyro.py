"""svibench's BBVI-reparam (ADVI) against NumPyro's AutoMultivariateNormal on a7a, side by side.

Optional: needs ``numpyro`` and ``jax`` (never a dependency of svibench).  Same model
(logreg with its bias column, prior precision δ = 5 on the weights and 1e-4 on the bias),
same settings (full rank, Adam 0.01, one draw per step, scale 0.1 at m = 0), one CPU
thread.  Each curve is the exact negative ELBO (svibench's logreg metric ``neg_elbo``) of
the current iterate and its gap to the optimum, timed without evaluation:

    OMP_NUM_THREADS=1 python -m benchmarks.advi_numpyro [iterations ...]

Recorded (issue 21, svibench e7676ef, numpyro with jax on one CPU thread; gap to the optimum
5,419.249, median over seeds 0-4 of each library, so unpaired draws):

    iterations          1,500    2,000    3,500    5,000
    svibench            0.979%   0.967%   0.979%   1.012%
    NumPyro             0.983%   1.093%   1.154%   1.118%

Time per step with both stepped in alternating blocks of 250 (same load, 1-min load 0.5):
svibench 0.71 ms, NumPyro 2.10 ms (ratio 0.34).  Both sit on the same noise floor of a
constant-rate Adam with one draw (seed-to-seed range ~0.8-1.7% from 2,000 steps on).
"""
from __future__ import annotations

import os
import sys
import time

import numpy as np

from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.datasets.libsvm import a7a
from svibench.models.logreg import BayesianLogisticRegression

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from .bench_advi import OPTIMUM

MARKS = (500, 1000, 1500, 2000, 3000, 3500, 5000)


def numpyro_curve(model: BayesianLogisticRegression, marks=MARKS, seed: int = 0):
    """[(iterations, seconds, neg_elbo)] of NumPyro's jitted SVI at each mark."""
    import jax
    import jax.numpy as jnp
    import numpyro
    import numpyro.distributions as dist
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoMultivariateNormal
    from numpyro.infer.initialization import init_to_value

    numpyro.enable_x64()  # float64 as svibench
    X = jnp.asarray(model.X.toarray() if hasattr(model.X, "toarray") else model.X)
    y, sd = jnp.asarray(model.y), jnp.asarray(1.0 / np.sqrt(model.precision))

    def logreg(X, y):
        z = numpyro.sample("z", dist.Normal(0.0, sd).to_event(1))
        numpyro.sample("y", dist.Bernoulli(logits=X @ z), obs=y)

    guide = AutoMultivariateNormal(logreg, init_loc_fn=init_to_value(values={"z": jnp.zeros(X.shape[1])}), init_scale=0.1)
    svi = SVI(logreg, guide, numpyro.optim.Adam(0.01), Trace_ELBO(num_particles=1))
    state = svi.init(jax.random.PRNGKey(seed), X, y)
    update = jax.jit(svi.update)
    jax.block_until_ready(update(state, X, y))  # compile outside the clock
    out, t, it = [], 0.0, 0
    for mark in marks:
        t0 = time.perf_counter()
        while it < mark:
            state, _ = update(state, X, y)
            it += 1
        jax.block_until_ready(state)
        t += time.perf_counter() - t0
        params = svi.get_params(state)
        out.append((it, t, _neg_elbo(model, np.asarray(params["auto_loc"]), np.asarray(params["auto_scale_tril"]))))
    return out


def svibench_curve(model: BayesianLogisticRegression, marks=MARKS, seed: int = 0, **params):
    """The same for svibench's BBVI-reparam, full rank, Adam 0.01, one draw."""
    from svibench.algorithms.bbvi import BBVI

    alg = BBVI(estimator="reparam", family="full", learning_rate=0.01, **params)
    alg.check_params()
    alg.init(model, np.random.default_rng(seed))
    out, t, it = [], 0.0, 0
    for mark in marks:
        t0 = time.perf_counter()
        while it < mark:
            alg.step()
            it += 1
        t += time.perf_counter() - t0
        q = alg.posterior()
        out.append((it, t, _neg_elbo(model, q.mean, q.scale_tril)))
    return out


def _neg_elbo(model: BayesianLogisticRegression, m: np.ndarray, L: np.ndarray) -> float:
    return -model.elbo(GaussianPosterior(m, L @ L.T, L))


def main(argv: list[str]) -> None:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    marks = tuple(int(a) for a in argv) or MARKS
    model = BayesianLogisticRegression(a7a(), delta=5.0)
    which = os.environ.get("ADVI_COMPARE", "svibench,numpyro").split(",")
    curves = {"svibench": svibench_curve, "numpyro": numpyro_curve}
    for name in which:
        curve = curves[name](model, marks)
        for it, t, v in curve:
            print(f"{name:9s} {it:6d} it {t:7.2f} s {1000 * t / it:6.3f} ms/it  neg_elbo {v:9.2f}  "
                  f"{100 * (v - OPTIMUM) / OPTIMUM:+.3f}%", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
