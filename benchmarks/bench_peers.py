"""asv: CPU milliseconds per step of svibench's algorithms beside their scikit-learn peers, interleaved.

* ``SklearnLDAInterleaved``: SVI and ``sklearn-lda`` (online, Hoffman, Blei & Bach 2010's algorithm) on
  reports/hoffman-lda's synthetic corpus (4,000 training documents, V = 2,000, K = 20, α = 0.1, η = 0.05) with
  the study's SVI settings (batches of 256, τ₀ = 64, κ = 0.7, 100 local iterations, tolerance 10⁻³);
* ``SklearnBGMMInterleaved``: VMP and ``sklearn-bgmm`` on reports/quickstart's mixture (5,000 points, D = 2,
  K = 5), one whole-data sweep per step (Bishop 2006, §10.2).

Both algorithms start from the same seed (the same start, and for LDA the same minibatches) and step in
alternating blocks in one process, so that both see the same machine load; each is timed by the runner's clock
(CPU time, ``svibench.clock``) around its steps only.  Tracks: each one's ms per step and svibench's over the peer's
(< 1: svibench's step is cheaper).  Skipped (asv's NotImplementedError) without scikit-learn, never a dependency.
The held-out quality of the peers is a study's business: both are registered algorithms (``sklearn-lda``,
``sklearn-bgmm``) that ``svibench run`` scores with the model's own metrics.
"""
from __future__ import annotations

import numpy as np

from svibench.clock import Clock
from svibench.peers import missing_libraries
from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.spec import ProblemSpec

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)

#: reports/hoffman-lda/study.toml's lda/synthetic, and its SVI settings at τ₀ = 64.
HOFFMAN_LDA = ProblemSpec("lda/synthetic", "lda", "lda-synthetic", {"n_topics": 20, "alpha": 0.1, "eta": 0.05},
                          {"n_docs": 4500, "n_test": 500, "vocab": 2000, "n_topics": 20, "alpha": 0.1, "eta": 0.05})
LDA_SETTINGS = {"batch_size": 256, "t0": 64.0, "kappa": 0.7, "inner_iterations": 100, "inner_tol": 1e-3}
#: reports/quickstart/study.toml's problem.
QUICKSTART = ProblemSpec("gmm/synthetic", "gmm", "gmm-synthetic", {"components": 5},
                         {"n": 5000, "n_test": 1000, "dim": 2, "components": 5})
SEED = 0


def interleaved_ms_per_step(problem: ProblemSpec, algorithms: dict[str, tuple[str, dict]], blocks: int,
                            steps: int) -> dict[str, float]:
    """CPU ms per step of each named (registry name, params) on ``problem``, all from seed :data:`SEED`, after one
    untimed warm-up step each, over ``blocks`` rounds of ``steps`` steps taken in turn (the order alternating)."""
    model = build_model(problem, cache=False)
    algs = {}
    for label, (name, params) in algorithms.items():
        alg = get_registry().algorithm(name).build(params)
        alg.check_params()
        alg.init(model, np.random.default_rng(SEED))
        alg.step()  # compiles svibench's kernels outside the comparison
        algs[label] = alg
    spent = dict.fromkeys(algs, 0.0)
    cpu = Clock().cpu
    for block in range(blocks):
        for label in (list(algs) if block % 2 == 0 else list(algs)[::-1]):
            start = cpu()
            for _ in range(steps):
                algs[label].step()
            spent[label] += cpu() - start
    return {label: 1e3 * seconds / (blocks * steps) for label, seconds in spent.items()}


class _Interleaved:
    """svibench's algorithm (``ours``) and its scikit-learn peer (``peer``) timed together; see the module."""

    timeout = 300
    problem: ProblemSpec
    algorithms: dict[str, tuple[str, dict]]
    blocks, steps = 6, 5

    def setup(self):
        if missing_libraries(("sklearn",)):
            raise NotImplementedError("scikit-learn is not installed")
        self.ms = interleaved_ms_per_step(self.problem, self.algorithms, self.blocks, self.steps)

    def track_svibench_ms_per_step(self):
        return self.ms["ours"]

    track_svibench_ms_per_step.unit = "ms"

    def track_sklearn_ms_per_step(self):
        return self.ms["peer"]

    track_sklearn_ms_per_step.unit = "ms"

    def track_svibench_to_sklearn_ratio(self):
        return self.ms["ours"] / self.ms["peer"]

    track_svibench_to_sklearn_ratio.unit = "ratio"


class SklearnLDAInterleaved(_Interleaved):
    """SVI against scikit-learn's online LDA, same settings, same minibatches."""

    problem = HOFFMAN_LDA
    algorithms = {"ours": ("svi", LDA_SETTINGS), "peer": ("sklearn-lda", {"learning_method": "online", **LDA_SETTINGS})}


class SklearnBGMMInterleaved(_Interleaved):
    """VMP against scikit-learn's BayesianGaussianMixture, one sweep per step from the same start."""

    problem = QUICKSTART
    algorithms = {"ours": ("vmp", {}), "peer": ("sklearn-bgmm", {})}
    blocks, steps = 10, 20
