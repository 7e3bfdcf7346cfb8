"""asv: CPU milliseconds per step of svibench's algorithms beside their scikit-learn peers, interleaved.

* ``SklearnLDAInterleaved``: SVI and ``sklearn-lda`` (online, Hoffman, Blei & Bach 2010's algorithm) on
  reports/hoffman-lda's synthetic corpus (4,000 training documents, V = 2,000, K = 20, α = 0.1, η = 0.05) with
  the study's SVI settings (batches of 256, τ₀ = 64, κ = 0.7, 100 local iterations, tolerance 10⁻³);
* ``SklearnBGMMInterleaved``: VMP and ``sklearn-bgmm`` on reports/quickstart's mixture (5,000 points, D = 2,
  K = 5), one whole-data sweep per step (Bishop 2006, §10.2).
* ``NumPyroADVIInterleaved``: full-rank ADVI, svibench's ``bbvi-reparam`` and the ``numpyro-advi`` peer
  (``guide="mvn"``, NumPyro's ``AutoMultivariateNormal``), both Adam 0.01, one draw, scale 0.1 at m = 0, float64,
  on the same logistic-regression log joint, on a7a (δ = 5) and australian (δ = 1).  NumPyro runs as its users run
  it, in its fused, compiled loop (``advance``: ``SVI.run``'s ``fori_loop``); its compile (the first ``init`` and
  step of a fresh program, which the runner's warm-up pays; less for the second problem of a process, whose
  primitives are compiled) is tracked apart, with its gap to the optimal neg_elbo after 1 + 8 × 250 steps.
  Recorded before the peer (issue 21, e7676ef, NumPyro's jitted ``SVI.update`` once per step, not fused):
  svibench 0.71 ms, NumPyro 2.10 ms per step on a7a.  svibench's ADVI fuses its steps on a dense design (issue 33,
  a numba loop, :mod:`svibench.algorithms.bbvi_fused`): australian 0.052 → 0.0094 ms per step against NumPyro's
  0.0245 (ratio 2.28 → 0.38; asv --quick, loaded machine); a7a (sparse, plain steps) 0.83 against 3.41 (0.24).  ``python -m benchmarks.bench_peers`` prints the table.

Both algorithms start from the same seed (the same start, and for LDA the same minibatches) and step in
alternating blocks in one process, so that both see the same machine load; each is timed by the runner's clock
(CPU time, ``svibench.clock``) around its steps only (an algorithm with fused steps takes each block in one
``advance``, as the runner hands them).  Tracks: each one's ms per step and svibench's over the peer's
(< 1: svibench's step is cheaper).  Skipped (asv's NotImplementedError) without scikit-learn or numpyro, never dependencies.
The held-out quality of the peers is a study's business: both are registered algorithms (``sklearn-lda``,
``sklearn-bgmm``) that ``svibench run`` scores with the model's own metrics.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

from svibench.algorithms.chol import Chol
from svibench.clock import Clock
from svibench.peers import missing_libraries
from svibench.problem import build_model
from svibench.registry import get_registry
from svibench.spec import ProblemSpec

from . import _problems  # noqa: F401  (sets SVIBENCH_DATA_DIR to the shared data folder)
from .bench_advi import OPTIMUM

#: reports/hoffman-lda/study.toml's lda/synthetic, and its SVI settings at τ₀ = 64.
HOFFMAN_LDA = ProblemSpec("lda/synthetic", "lda", "lda-synthetic", {"n_topics": 20, "alpha": 0.1, "eta": 0.05},
                          {"n_docs": 4500, "n_test": 500, "vocab": 2000, "n_topics": 20, "alpha": 0.1, "eta": 0.05})
LDA_SETTINGS = {"batch_size": 256, "t0": 64.0, "kappa": 0.7, "inner_iterations": 100, "inner_tol": 1e-3}
#: reports/quickstart/study.toml's problem.
QUICKSTART = ProblemSpec("gmm/synthetic", "gmm", "gmm-synthetic", {"components": 5},
                         {"n": 5000, "n_test": 1000, "dim": 2, "components": 5})
SEED = 0


def start(problem: ProblemSpec, algorithms: dict[str, tuple[str, dict]]) -> tuple[Any, dict[str, Any], dict[str, float]]:
    """The model of ``problem``, each named (registry name, params) after ``init`` from seed :data:`SEED` and one
    step (``advance(1)`` for a fused algorithm, whose loop compiles there), and the CPU seconds these took
    (compilation included: numba's, XLA's), kept out of the comparison."""
    model = build_model(problem, cache=False)
    algs, first = {}, {}
    cpu = Clock().cpu
    for label, (name, params) in algorithms.items():
        alg = get_registry().algorithm(name).build(params)
        alg.check_params()
        started = cpu()
        alg.init(model, np.random.default_rng(SEED))
        alg.advance(1) if alg.fused else alg.step()
        first[label] = cpu() - started
        algs[label] = alg
    return model, algs, first


def interleave(algs: dict[str, Any], blocks: int, steps: int) -> dict[str, float]:
    """CPU ms per step of each algorithm over ``blocks`` rounds of ``steps`` steps taken in turn (the order
    alternating; a fused algorithm takes each round in one ``advance``)."""
    spent = dict.fromkeys(algs, 0.0)
    cpu = Clock().cpu
    for block in range(blocks):
        for label in (list(algs) if block % 2 == 0 else list(algs)[::-1]):
            alg, begin = algs[label], cpu()
            if alg.fused:
                alg.advance(steps)
            else:
                for _ in range(steps):
                    alg.step()
            spent[label] += cpu() - begin
    return {label: 1e3 * seconds / (blocks * steps) for label, seconds in spent.items()}


def interleaved_ms_per_step(problem: ProblemSpec, algorithms: dict[str, tuple[str, dict]], blocks: int,
                            steps: int) -> dict[str, float]:
    """CPU ms per step of each named (registry name, params) on ``problem`` (:func:`start`, :func:`interleave`)."""
    return interleave(start(problem, algorithms)[1], blocks, steps)


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


#: ADVI's problems (Khan & Lin 2017's δ for a7a; australian as the benchmark problem), and their optimal
#: neg_elbo when recorded (a7a, bench_advi's; else Chol's, :func:`optimum`).
ADVI_PROBLEMS = {"a7a": (ProblemSpec("logreg/a7a", "logreg", "a7a", {"delta": 5.0}, {}), OPTIMUM),
                 "australian": (ProblemSpec("logreg/australian", "logreg", "australian", {"delta": 1.0}, {}), None)}
ADVI = {"ours": ("bbvi-reparam", {"family": "full", "learning_rate": 0.01}),
        "peer": ("numpyro-advi", {"guide": "mvn", "learning_rate": 0.01})}


def optimum(model: Any, recorded: float | None) -> float:
    """The optimal neg_elbo: ``recorded``, or Chol's after 500 L-BFGS iterations (a7a's is unchanged from 400 on)."""
    if recorded is not None:
        return recorded
    chol = Chol(iterations_per_step=500)
    chol.init(model, np.random.default_rng(0))
    chol.step()
    return -model.elbo(chol.posterior())


def compare_advi(dataset: str, blocks: int = 8, steps: int = 250) -> dict[str, float]:
    """ms per step of each ADVI (interleaved), NumPyro's compile seconds, and each one's relative gap to the
    optimum after its 1 + ``blocks × steps`` steps."""
    problem, recorded = ADVI_PROBLEMS[dataset]
    model, algs, first = start(problem, ADVI)
    ms = interleave(algs, blocks, steps)
    best = optimum(model, recorded)
    gap = {label: (-model.elbo(alg.posterior()) - best) / best for label, alg in algs.items()}
    return {"svibench_ms": ms["ours"], "numpyro_ms": ms["peer"], "numpyro_compile_seconds": first["peer"],
            "svibench_gap": gap["ours"], "numpyro_gap": gap["peer"]}


class NumPyroADVIInterleaved:
    """svibench's full-rank ADVI against NumPyro's (fused), per dataset; see the module."""

    params = (list(ADVI_PROBLEMS),)
    param_names = ["dataset"]
    timeout = 600

    def setup_cache(self):
        return None if missing_libraries(("numpyro", "jax")) else {name: compare_advi(name) for name in ADVI_PROBLEMS}

    def setup(self, results, dataset):
        if results is None:
            raise NotImplementedError("numpyro is not installed")

    def track_svibench_ms_per_step(self, results, dataset):
        return results[dataset]["svibench_ms"]

    def track_numpyro_ms_per_step(self, results, dataset):
        return results[dataset]["numpyro_ms"]

    def track_svibench_to_numpyro_ratio(self, results, dataset):
        return results[dataset]["svibench_ms"] / results[dataset]["numpyro_ms"]

    def track_numpyro_compile_seconds(self, results, dataset):
        return results[dataset]["numpyro_compile_seconds"]

    def track_numpyro_gap_2001_iterations(self, results, dataset):
        return results[dataset]["numpyro_gap"]

    track_svibench_ms_per_step.unit = track_numpyro_ms_per_step.unit = "ms"
    track_svibench_to_numpyro_ratio.unit = "ratio"
    track_numpyro_compile_seconds.unit = "seconds"
    track_numpyro_gap_2001_iterations.unit = "relative"


def main(argv: list[str]) -> None:
    for name in argv or list(ADVI_PROBLEMS):
        r = compare_advi(name)
        print(f"{name}: svibench {r['svibench_ms']:.3f} ms/step, NumPyro (fused) {r['numpyro_ms']:.3f} ms/step, "
              f"svibench/NumPyro {r['svibench_ms'] / r['numpyro_ms']:.2f}, NumPyro compile "
              f"{r['numpyro_compile_seconds']:.2f} s; gaps to the optimum after 2,001 steps: svibench "
              f"{r['svibench_gap']:+.3%}, NumPyro {r['numpyro_gap']:+.3%}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
