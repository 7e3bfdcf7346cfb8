"""asv: a Mimno-SVI step against an SVI step on LDA at K = 100.

CPU seconds per step of SVI, of Mimno-SVI with its sparse global step (Mimno, Hoffman & Blei 2012: λ kept
lazily, the locals reading only the minibatch's words; ``svibench.capabilities.sparse``) and of Mimno-SVI
with the dense step (``sparse=False``, the same trajectory), on a synthetic corpus (4,500 documents,
V = 2,000) and on Reuters (395 stories, V = 4,258; skipped without its files), and the ratio of the sparse
Mimno step to SVI's (issue 33's target: ≤ 0.3).  SVI against scikit-learn's online LDA is in
``bench_peers`` (the ``sklearn-lda`` peer).
"""
from __future__ import annotations

import numpy as np

from svibench.algorithms.svi import SVI
from svibench.data import DataError
from svibench.problem import build_model
from svibench.spec import ProblemSpec

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from . import timer  # (asv times on this: the process CPU clock, benchmarks/__init__.py)

CORPORA = {
    "synthetic": ProblemSpec("lda/synthetic-k100", "lda", "lda-synthetic", {"n_topics": 100},
                             {"n_docs": 4500, "n_test": 500, "vocab": 2000, "n_topics": 100}),
    "reuters": ProblemSpec("lda/reuters-k100", "lda", "reuters", {"n_topics": 100}, {}),
}
#: Steps taken before timing: SVI's first steps, from random topics, run many more local iterations than later ones
#: (its second step costs several times its twentieth), so timing them would flatter Mimno-SVI (as bench_genomic).
WARMUP = 20
#: SVI's locals, and Mimno-SVI's (3 burn-in sweeps, 3 kept: the default) with the sparse and the dense step.
STEPS = {"svi": {"local": "mf"}, "mimno": {"local": "gibbs"}, "mimno-dense": {"local": "gibbs", "sparse": False}}


class MimnoStep:
    """One step (batch 128, τ₀ = 1024, κ = 0.7) of SVI and of Mimno-SVI at K = 100, after :data:`WARMUP` steps."""

    params = [list(CORPORA)]
    param_names = ["corpus"]

    def setup(self, corpus):
        try:
            self.lda = build_model(CORPORA[corpus], cache=False)
        except DataError as exc:
            raise NotImplementedError(f"{corpus} absent: {exc}") from None  # asv skips the benchmark
        self.algs = {}
        for name, params in STEPS.items():
            alg = SVI(batch_size=128, t0=1024.0, kappa=0.7, inner_iterations=100, **params)
            alg.init(self.lda, np.random.default_rng(0))
            for _ in range(WARMUP):  # the first compiles numba's loops
                alg.step()
            self.algs[name] = alg

    def time_svi_step(self, corpus):
        self.algs["svi"].step()

    def time_mimno_svi_step(self, corpus):
        self.algs["mimno"].step()

    def time_mimno_svi_dense_step(self, corpus):
        self.algs["mimno-dense"].step()

    def track_mimno_to_svi_ratio(self, corpus):
        import timeit

        times = {name: min(timeit.repeat(self.algs[name].step, number=3, repeat=3, timer=timer))
                 for name in ("mimno", "svi")}
        return times["mimno"] / times["svi"]

    track_mimno_to_svi_ratio.unit = "ratio"
