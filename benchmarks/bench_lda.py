"""asv: a Mimno-SVI step against an SVI step on LDA.

Seconds per step of Mimno-SVI and of SVI at K = 100 on a synthetic corpus (4,500 documents, V = 2,000), and their
ratio (target ≤ 2).  SVI against scikit-learn's online LDA is in ``bench_peers`` (the ``sklearn-lda`` peer).
"""
from __future__ import annotations

import numpy as np

from svibench.algorithms.svi import SVI
from svibench.problem import build_model
from svibench.spec import ProblemSpec

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from . import timer  # noqa: F401  (asv times on this: the process CPU clock, benchmarks/__init__.py)

K100 = ProblemSpec("lda/synthetic-k100", "lda", "lda-synthetic", {"n_topics": 100},
                   {"n_docs": 4500, "n_test": 500, "vocab": 2000, "n_topics": 100})


class MimnoStep:
    """One step (batch 128) of SVI and of Mimno-SVI (3 burn-in sweeps, 3 kept: the default) at K = 100."""

    def setup(self):
        self.lda = build_model(K100, cache=False)
        self.algs = {}
        for local in ("mf", "gibbs"):
            alg = SVI(batch_size=128, t0=1024.0, kappa=0.7, local=local, inner_iterations=100)
            alg.init(self.lda, np.random.default_rng(0))
            alg.step()  # compile
            self.algs[local] = alg

    def time_svi_step(self):
        self.algs["mf"].step()

    def time_mimno_svi_step(self):
        self.algs["gibbs"].step()

    def track_mimno_to_svi_ratio(self):
        import timeit

        times = {local: min(timeit.repeat(alg.step, number=3, repeat=3)) for local, alg in self.algs.items()}
        return times["gibbs"] / times["mf"]

    track_mimno_to_svi_ratio.unit = "ratio"
