"""svibench's SVI on LDA against scikit-learn's online LDA (Hoffman, Blei & Bach 2010), side by side.

Optional: needs scikit-learn (never a dependency of svibench).  Same corpus, K, batch
size, τ₀ (``learning_offset``), κ (``learning_decay``), α (``doc_topic_prior``), η
(``topic_word_prior``), local iterations (``max_doc_update_iter``) and tolerance
(``mean_change_tol``); one CPU thread.  Both fits are timed without evaluation, and both
held-out perplexities come from svibench's document-completion estimator
(``models.lda.evaluation``) applied to each one's fitted topics λ / Σ_v λ:

    OMP_NUM_THREADS=1 python -m benchmarks.lda_sklearn [epochs] [seeds]
"""
from __future__ import annotations

import sys
import time

import numpy as np

from svibench.algorithms.svi import SVI
from svibench.models.lda import LDA
from svibench.problem import build_model
from svibench.spec import ProblemSpec

#: The issue's corpus: 4,500 training documents, V = 2,000, K = 20, and Hoffman et al.'s
#: τ₀ = 1024, κ = 0.7 with batches of 128.
SYNTHETIC = ProblemSpec("lda/synthetic", "lda", "lda-synthetic", {"n_topics": 20},
                        {"n_docs": 4500, "n_test": 500, "vocab": 2000, "n_topics": 20})
SETTINGS = {"batch_size": 128, "t0": 1024.0, "kappa": 0.7, "inner_iterations": 100, "inner_tol": 1e-3}


def model(spec: ProblemSpec = SYNTHETIC) -> LDA:
    return build_model(spec, cache=False)


def svibench_fit(lda: LDA, epochs: int, seed: int = 0, **settings) -> tuple[float, np.ndarray]:
    """(seconds per epoch, topics) of svibench's SVI, ⌈D / batch⌉ steps per epoch."""
    settings = {**SETTINGS, **settings}
    alg = SVI(**settings)
    alg.check_params()
    alg.init(lda, np.random.default_rng(seed))
    steps = -(-lda.n_train // settings["batch_size"])
    start = time.perf_counter()
    for _ in range(steps * epochs):
        alg.step()
    seconds = (time.perf_counter() - start) / epochs
    lam = alg.posterior().lam["topics"].concentration()
    return seconds, lam / lam.sum(axis=1, keepdims=True)


def sklearn_fit(lda: LDA, epochs: int, seed: int = 0, **settings) -> tuple[float, np.ndarray]:
    """(seconds per epoch, topics) of scikit-learn's ``LatentDirichletAllocation(learning_method="online")``."""
    from sklearn.decomposition import LatentDirichletAllocation

    settings = {**SETTINGS, **settings}
    sk = LatentDirichletAllocation(
        n_components=lda.K, doc_topic_prior=lda.alpha, topic_word_prior=lda.eta, learning_method="online",
        learning_decay=settings["kappa"], learning_offset=settings["t0"], batch_size=settings["batch_size"],
        max_doc_update_iter=settings["inner_iterations"], mean_change_tol=settings["inner_tol"],
        max_iter=epochs, total_samples=lda.n_train, evaluate_every=-1, random_state=seed, n_jobs=1)
    start = time.perf_counter()
    sk.fit(lda.corpus.csr)
    seconds = (time.perf_counter() - start) / epochs
    return seconds, sk.components_ / sk.components_.sum(axis=1, keepdims=True)


def perplexity(lda: LDA, topics: np.ndarray) -> float:
    """svibench's held-out perplexity (document completion) of topics (K, V)."""
    return lda.completion_metrics(topics)["perplexity"]


def main(epochs: int = 5, seeds: int = 3) -> None:
    lda = model()
    svibench_fit(lda, 1)  # compile the kernels outside the comparison
    truth = perplexity(lda, np.asarray(lda.data.meta["topics"]))
    print(f"corpus: {lda.n_train} documents, V = {lda.V}, K = {lda.K}; {epochs} epochs; {SETTINGS}")
    print(f"true topics' perplexity: {truth:.1f}")
    print("seed  svibench s/epoch  perplexity  |  scikit-learn s/epoch  perplexity  |  time ratio")
    for seed in range(seeds):
        (t_ours, ours), (t_sk, sk) = svibench_fit(lda, epochs, seed), sklearn_fit(lda, epochs, seed)
        print(f"{seed:4d}  {t_ours:16.3f}  {perplexity(lda, ours):10.1f}  |  {t_sk:20.3f}  "
              f"{perplexity(lda, sk):10.1f}  |  {t_ours / t_sk:10.2f}")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
