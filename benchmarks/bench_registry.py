"""Time, memory and quality of every built-in algorithm on every compatible benchmark problem.

Generated from the registry (see ``_problems.py``): a new algorithm appears
here without editing this file.  Each benchmark works at a small fixed size
(one step, one epoch, or a short run with a fixed budget and seed), well
under a second.
"""
from __future__ import annotations

import math

import numpy as np

from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, RunSpec

from ._problems import PEAKMEM_MODELS, SEED, pairs, parse_pair
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)

#: the data passes of the fixed-budget quality runs (`track_` benchmarks).
TRACK_EPOCHS = 2.0
#: upper bound on steps in one timed epoch (an algorithm touching no data must not hang the suite).
MAX_STEPS = 100_000


def _started(pair: str, *, cache: bool = True):
    """The pair's model, and its algorithm after ``init`` and one warm-up step."""
    algorithm, problem = parse_pair(pair)
    model = build_model(problem, cache=cache)
    alg = get_registry().algorithm(algorithm).build({})
    alg.init(model, np.random.default_rng(SEED))
    alg.step()
    return model, alg


class AlgorithmIteration:
    """Seconds per iteration (one ``step``) at the benchmark size."""

    params = [pairs()]
    param_names = ["algorithm @ problem"]
    repeat = (1, 5, 2.0)
    warmup_time = 0.0

    def setup(self, pair):
        self.model, self.alg = _started(pair)

    def time_iteration(self, pair):
        self.alg.step()


class AlgorithmEpoch:
    """Seconds per epoch (steps until N data points have been touched)."""

    params = [pairs()]
    param_names = ["algorithm @ problem"]
    number = 1
    repeat = (1, 3, 2.0)
    warmup_time = 0.0

    def setup(self, pair):
        self.model, self.alg = _started(pair)

    def time_epoch(self, pair):
        seen, steps = 0, 0
        while seen < self.model.n_train and steps < MAX_STEPS:
            seen += self.alg.step()
            steps += 1


class AlgorithmQuality:
    """Final ELBO and held-out log-likelihood after TRACK_EPOCHS passes with seed SEED.

    A run that ends ``failed``/``diverged`` fails the benchmark, so a change that
    makes an algorithm faster but wrong shows up in ``asv compare``.
    """

    params = [pairs()]
    param_names = ["algorithm @ problem"]
    unit = "nats"
    timeout = 120

    def setup(self, pair):
        algorithm, problem = parse_pair(pair)
        spec = RunSpec("asv", problem, algorithm, algorithm, {}, SEED, Budget(epochs=TRACK_EPOCHS),
                       Checkpoints(at=(TRACK_EPOCHS,)))
        run = execute(spec)
        if run.attrs["status"] != "ok":
            raise RuntimeError(f"{pair}: run ended {run.attrs['status']}: {run.attrs['message']}")
        self.final = {name: float(run[name].values[-1]) for name in run.data_vars}

    def _metric(self, name):
        return self.final.get(name, math.nan)

    def track_elbo(self, pair):
        return self._metric("elbo")

    def track_heldout_loglik(self, pair):
        return self._metric("heldout_loglik")


_PEAK_PAIRS = pairs(PEAKMEM_MODELS)

if _PEAK_PAIRS:

    class AlgorithmPeakMemory:
        """Peak resident memory of loading the problem, ``init`` and three steps (BPFA and GP problems)."""

        params = [_PEAK_PAIRS]
        param_names = ["algorithm @ problem"]

        def peakmem_init_and_steps(self, pair):
            model, alg = _started(pair, cache=False)
            alg.step()
            alg.step()
            alg.posterior()
