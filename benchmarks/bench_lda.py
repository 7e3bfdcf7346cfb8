"""asv: a Mimno-SVI step against an SVI step on LDA at K = 100.

CPU seconds per step of SVI, of Mimno-SVI with its sparse global step (Mimno, Hoffman & Blei 2012: λ kept
lazily, the locals reading only the minibatch's words; ``svibench.capabilities.sparse``) and of Mimno-SVI
with the dense step (``sparse=False``, the same trajectory), on a synthetic corpus (4,500 documents,
V = 2,000) and on Reuters (395 stories, V = 4,258; skipped without its files), and the ratio of the sparse
Mimno step to SVI's (issue 33's target: ≤ 0.3), each under two settings (:data:`SETTINGS`).  The ratio depends on
the batch: a sparse step computes exp(E[log β]) at the minibatch's word types (K × V_B digammas, a cost per step,
not per token), and on Reuters V_B is most of the vocabulary at a batch of 128 as at 256, while the sampler and
SVI's locals cost per document.  SVI against scikit-learn's online LDA is in ``bench_peers`` (the ``sklearn-lda``
peer).
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
#: The step settings timed: issue 33's, and those of hoffman-lda's runs on both corpora
#: (reports/hoffman-lda/study.toml: SVI at τ₀ = 64 and 1024, Mimno-SVI at 64, every batch 256); κ = 0.7 in both.
SETTINGS = {"batch128": {"batch_size": 128, "t0": 1024.0}, "hoffman-lda": {"batch_size": 256, "t0": 64.0}}
#: Steps taken before timing: SVI's first steps, from random topics, run many more local iterations than later ones
#: (its second step costs several times its twentieth), so timing them would flatter Mimno-SVI (as bench_genomic).
WARMUP = 20
#: Steps of each timed for the ratio: a step's cost varies with its minibatch's documents by tens of percent.
REPEATS = 15
#: SVI's locals, and Mimno-SVI's (3 burn-in sweeps, 3 kept: the default) with the sparse and the dense step.
STEPS = {"svi": {"local": "mf"}, "mimno": {"local": "gibbs"}, "mimno-dense": {"local": "gibbs", "sparse": False}}


class MimnoStep:
    """One step of SVI and of Mimno-SVI at K = 100 under each of :data:`SETTINGS`, after :data:`WARMUP` steps."""

    params = [list(CORPORA), list(SETTINGS)]
    param_names = ["corpus", "settings"]

    def setup(self, corpus, settings):
        try:
            self.lda = build_model(CORPORA[corpus], cache=False)
        except DataError as exc:
            raise NotImplementedError(f"{corpus} absent: {exc}") from None  # asv skips the benchmark
        self.algs = {}
        for name, params in STEPS.items():
            alg = SVI(kappa=0.7, inner_iterations=100, **SETTINGS[settings], **params)
            alg.init(self.lda, np.random.default_rng(0))
            for _ in range(WARMUP):  # the first compiles numba's loops
                alg.step()
            self.algs[name] = alg

    def time_svi_step(self, corpus, settings):
        self.algs["svi"].step()

    def time_mimno_svi_step(self, corpus, settings):
        self.algs["mimno"].step()

    def time_mimno_svi_dense_step(self, corpus, settings):
        self.algs["mimno-dense"].step()

    def track_mimno_to_svi_ratio(self, corpus, settings):
        """The median CPU time of :data:`REPEATS` Mimno-SVI steps over that of as many SVI steps, alternated (so
        that both see the same load, as ``bench_bpfa.BPFAGemmRatio``)."""
        times = {"mimno": [], "svi": []}
        for _ in range(REPEATS):
            for name, spent in times.items():
                start = timer()
                self.algs[name].step()
                spent.append(timer() - start)
        return float(np.median(times["mimno"]) / np.median(times["svi"]))

    track_mimno_to_svi_ratio.unit = "ratio"
