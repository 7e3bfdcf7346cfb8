"""asv: one CVI iteration (Khan & Lin 2017, Algorithm 1) on a7a (N > D, weight space, sparse
design) and on colon-cancer (D > N, data space through the matrix-inversion lemma), one step of
CVI and of Chol on covtype at the paper's N = 290,506 (Table 3's CVI 14.3 s against Chol 198 s), the
quality reached after the paper's 10 iterations on a7a, and the cost per data point of the
accurate Gaussian expectation of the logistic likelihood against 50-node Gauss–Hermite
(target: at most 2x).

At small N the fixed cost of an iteration is half of it (issue 33): ``CVIIteration`` on australian
(N = 345, D = 15) and breast-cancer (N = 341, D = 11), and ``CVIFixedCost`` on australian's first 16
rows, what an iteration costs with almost no data.  Measured (2 cores under load, CPU time, best of
20 interleaved blocks): MC (S = 10) 269 µs per iteration on australian, 261 on
breast-cancer, of which ~140 µs (52%) fixed, the rest ~370 ns per datum (from N×1 against N×4 rows;
16 rows: 127 and 103 µs); exact (accurate expectations) 929 and 834 µs, of which at most 367 and 308
µs (40%) at 16 rows.  The fixed part is Python and numpy call overhead (~160 Python-level calls per
MC iteration) plus the D × D conjugate step, a few µs at D = 15."""
from __future__ import annotations

import numpy as np

from svibench.algorithms.chol import Chol
from svibench.algorithms.cvi import CVI
from svibench.capabilities.latent_gaussian import expected_loglik
from svibench.data import Dataset
from svibench.datasets.libsvm import a7a, australian, breast_cancer, colon_cancer, covtype
from svibench.models.logreg import BayesianLogisticRegression
from svibench.numerics.quadrature import expectation_rule

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)

_SETTINGS = {"a7a": (a7a, {}, 5.0, 0.4), "colon-cancer": (colon_cancer, {"split": 0}, 596.3623, 0.3),
             "australian": (australian, {"split": 0}, 1e-5, 0.4), "breast-cancer": (breast_cancer, {"split": 0}, 1.0, 0.3)}


class CVIIteration:
    """Seconds per CVI iteration (MC gradients, S = 10), as in Table 3's setting."""

    params = (list(_SETTINGS), ["mc", "exact"])
    param_names = ["dataset", "expectations"]
    timeout = 120

    def setup_cache(self):
        return {name: BayesianLogisticRegression(loader(**kw), delta=delta)
                for name, (loader, kw, delta, _) in _SETTINGS.items()}

    def setup(self, models, dataset, expectations):
        self.alg = CVI(expectations=expectations, w=_SETTINGS[dataset][3])
        self.alg.init(models[dataset], np.random.default_rng(0))

    def time_step(self, models, dataset, expectations):
        self.alg.step()


class CVIFixedCost:
    """Seconds per CVI iteration on australian's first 16 training rows (split 0, δ = 10⁻⁵, w = 0.4): the cost
    of an iteration that does not grow with N (Python and numpy overhead, the D × D step), an upper bound."""

    params = (["mc", "exact"],)
    param_names = ["expectations"]
    timeout = 120

    def setup(self, expectations):
        train = australian(split=0).train
        X = train["X"].toarray() if hasattr(train["X"], "toarray") else np.asarray(train["X"])
        model = BayesianLogisticRegression(Dataset("australian-16", "classification", {"X": X[:16], "y": train["y"][:16]}),
                                           delta=1e-5)
        self.alg = CVI(expectations=expectations, w=0.4)
        self.alg.init(model, np.random.default_rng(0))

    def time_step(self, expectations):
        self.alg.step()


class CovtypeStep:
    """Seconds per step() on covtype (split 0, all 290,506 training rows, delta = 0.002): CVI (MC, S = 10, w = 0.3)
    and Chol (one L-BFGS iteration of the exact ELBO, its line search included, so its steps vary)."""

    params = ["cvi", "chol"]
    param_names = ["algorithm"]
    timeout = 600

    def setup_cache(self):
        return BayesianLogisticRegression(covtype(split=0), delta=0.002)

    def setup(self, model, algorithm):
        self.alg = CVI(w=0.3) if algorithm == "cvi" else Chol()
        self.alg.init(model, np.random.default_rng(0))

    def time_step(self, model, algorithm):
        self.alg.step()


class CVIQuality:
    """Negative ELBO on a7a after the paper's 10 iterations (paper: 5,416.3 on its bias-less scale)."""

    timeout = 120

    def track_neg_elbo_a7a_10_iterations(self):
        model = BayesianLogisticRegression(a7a(), delta=5.0)
        alg = CVI(w=0.4)
        alg.init(model, np.random.default_rng(0))
        for _ in range(10):
            alg.step()
        return -model.elbo(alg.posterior())

    track_neg_elbo_a7a_10_iterations.unit = "nats"


class LogisticExpectation:
    """Seconds for E_{N(m, v)}[log σ(sη)] and its derivatives in (m, v) at 10,000 data points.

    Marginals spread like GP classification's and logistic regression's: m ~ N(0, 10²),
    sd log-uniform in [1e-2, 300].  Per data point = this time / 10,000.
    """

    params = (["accurate", "gauss-hermite-50"],)
    param_names = ["quadrature"]
    n = 10_000

    def setup(self, quadrature):
        rng = np.random.default_rng(0)
        data = Dataset("bench", "classification", {"X": np.zeros((self.n, 1)), "y": (rng.random(self.n) < 0.5) * 1.0})
        self.model = BayesianLogisticRegression(data)
        self.m, self.v = rng.normal(0.0, 10.0, self.n), np.exp(rng.uniform(np.log(1e-2), np.log(300.0), self.n)) ** 2
        self.rule = expectation_rule(quadrature)

    def time_expectation(self, quadrature):
        expected_loglik(self.model, self.m, self.v, self.rule)
