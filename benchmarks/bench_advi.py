"""asv: the baselines of Khan & Lin (2017, Table 3) as users would run them, on a7a (δ = 5).

* BBVI-reparam as a standard full-rank ADVI (Adam 0.01, one draw): seconds per iteration
  (target ≤ 2 ms) and the relative gap of the negative ELBO to the optimum after 2,000 and
  5,000 iterations (targets 1.5% and 1%);
* Chol (one long L-BFGS run): seconds per iteration and the gap after 100 iterations
  (target: 0.1% within 30 s);
* the same ADVI in NumPyro (``AutoMultivariateNormal``, identical model and settings) when
  numpyro is installed (skipped otherwise; :mod:`benchmarks.advi_numpyro` prints both curves).

The optimum, 5,419.249 nats (neg_elbo; 5,414.644 on Table 3's bias-less scale), is Chol run
to convergence (600 iterations, unchanged to 1e-4 nats from 400 on).
"""
from __future__ import annotations

import numpy as np

from svibench.algorithms.bbvi import BBVI
from svibench.algorithms.chol import Chol
from svibench.datasets.libsvm import a7a
from svibench.models.logreg import BayesianLogisticRegression

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)

#: a7a's optimal negative ELBO (neg_elbo metric, δ = 5, bias precision 1e-4).
OPTIMUM = 5419.249


def _model() -> BayesianLogisticRegression:
    return BayesianLogisticRegression(a7a(), delta=5.0)


def _advi() -> BBVI:
    return BBVI(estimator="reparam", family="full", learning_rate=0.01)


def _gap(model: BayesianLogisticRegression, alg) -> float:
    return (-model.elbo(alg.posterior()) - OPTIMUM) / OPTIMUM


class BaselineIteration:
    """Seconds per iteration of ADVI (full rank, one draw) and of Chol on a7a."""

    params = (["bbvi-reparam", "chol"],)
    param_names = ["algorithm"]
    timeout = 120

    def setup_cache(self):
        return _model()

    def setup(self, model, algorithm):
        self.alg = _advi() if algorithm == "bbvi-reparam" else Chol()
        self.alg.init(model, np.random.default_rng(0))
        for _ in range(5):  # past the first iterations (and numba's compilation for Chol)
            self.alg.step()

    def time_step(self, model, algorithm):
        self.alg.step()


class BaselineQuality:
    """Relative gap to a7a's optimal negative ELBO (seed 0)."""

    timeout = 300

    def setup_cache(self):
        return _model()

    def track_advi_gap_2000_iterations(self, model):
        return self._advi_gap(model, 2000)

    def track_advi_gap_5000_iterations(self, model):
        return self._advi_gap(model, 5000)

    def track_chol_gap_100_iterations(self, model):
        alg = Chol(iterations_per_step=100)
        alg.init(model, np.random.default_rng(0))
        alg.step()
        return _gap(model, alg)

    @staticmethod
    def _advi_gap(model, iterations):
        alg = _advi()
        alg.init(model, np.random.default_rng(0))
        for _ in range(iterations):
            alg.step()
        return _gap(model, alg)

    track_advi_gap_2000_iterations.unit = "relative"
    track_advi_gap_5000_iterations.unit = "relative"
    track_chol_gap_100_iterations.unit = "relative"
