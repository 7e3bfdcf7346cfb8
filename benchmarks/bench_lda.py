"""asv: LDA's SVI against scikit-learn's online LDA, and Mimno-SVI against SVI.

* seconds per epoch of svibench's SVI on the issue's synthetic corpus (4,500 documents,
  V = 2,000, K = 20, batches of 128, τ₀ = 1024, κ = 0.7, 100 local iterations at most,
  tolerance 1e-3), the same for scikit-learn's ``LatentDirichletAllocation`` with the same
  settings, and their ratio (target ≤ 1.0); both held-out perplexities after 5 epochs
  under svibench's estimator, from each one's topics (``benchmarks.lda_sklearn``).  The
  scikit-learn entries are skipped when it is not installed (it is no dependency);
* seconds per step of Mimno-SVI and of SVI at K = 100, and their ratio (target ≤ 2).
"""
from __future__ import annotations

import numpy as np

from svibench.algorithms.svi import SVI
from svibench.spec import ProblemSpec

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from .lda_sklearn import SYNTHETIC, model, perplexity, sklearn_fit, svibench_fit

EPOCHS = 5
K100 = ProblemSpec("lda/synthetic-k100", "lda", "lda-synthetic", {"n_topics": 100},
                   {"n_docs": 4500, "n_test": 500, "vocab": 2000, "n_topics": 100})


def _compiled_corpus(needs_sklearn: bool = False):
    """The synthetic corpus, with svibench's kernels compiled before timing; ``NotImplementedError``
    (asv's skip) when scikit-learn is needed and not installed."""
    if needs_sklearn:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            raise NotImplementedError("scikit-learn is not installed") from None
    lda = model(SYNTHETIC)
    svibench_fit(lda, 1)
    return lda


class SvibenchOnlineLDA:
    """svibench's SVI on the corpus scikit-learn's online LDA is timed on (``SklearnOnlineLDA``)."""

    timeout = 600

    def setup(self):
        self.lda = _compiled_corpus()

    def track_svibench_seconds_per_epoch(self):
        return svibench_fit(self.lda, 2)[0]

    track_svibench_seconds_per_epoch.unit = "seconds"

    def track_svibench_perplexity_5_epochs(self):
        return perplexity(self.lda, svibench_fit(self.lda, EPOCHS)[1])

    track_svibench_perplexity_5_epochs.unit = "perplexity"


class SklearnOnlineLDA:
    """scikit-learn's online LDA with svibench's settings, and svibench's time over its time.

    Skipped when scikit-learn is not installed.
    """

    timeout = 600

    def setup(self):
        self.lda = _compiled_corpus(needs_sklearn=True)

    def track_sklearn_seconds_per_epoch(self):
        return sklearn_fit(self.lda, 2)[0]

    track_sklearn_seconds_per_epoch.unit = "seconds"

    def track_time_ratio_to_sklearn(self):
        return svibench_fit(self.lda, 2)[0] / sklearn_fit(self.lda, 2)[0]

    track_time_ratio_to_sklearn.unit = "ratio"

    def track_sklearn_perplexity_5_epochs(self):
        return perplexity(self.lda, sklearn_fit(self.lda, EPOCHS)[1])

    track_sklearn_perplexity_5_epochs.unit = "perplexity"


class MimnoStep:
    """One step (batch 128) of SVI and of Mimno-SVI (3 burn-in sweeps, 3 kept: the default) at K = 100."""

    def setup(self):
        self.lda = model(K100)
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
