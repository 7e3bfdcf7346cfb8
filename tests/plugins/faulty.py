"""Test-only algorithms and models, loaded as a plugin file: one that fails, one that
diverges, one whose evaluation is slow, one that works or waits a given time per step
and one whose first step compiles (for the clock tests)."""
from __future__ import annotations

import time

import numpy as np

from svibench.algorithm import Algorithm
from svibench.capabilities import ConditionallyConjugate, ConjugatePosterior
from svibench.data import Dataset, dataset
from svibench.metrics import Metric, metric_table
from svibench.model import Model


class Failing(Algorithm):
    """Raises at its third step."""

    name = "test-failing"
    requires = (ConditionallyConjugate,)

    def __init__(self, *, fail_at: int = 3) -> None:
        self.fail_at = fail_at

    def init(self, model, rng):
        self.model_, self.t_ = model, 0
        self.lam_ = model.init_globals(rng, model.init_methods[0])

    def step(self):
        self.t_ += 1
        if self.t_ == self.fail_at:
            raise RuntimeError("deliberate failure")
        return self.model_.n_train

    def posterior(self):
        return ConjugatePosterior(self.lam_)




@dataset("test-points", kind="test")
def points(*, n: int = 10, seed: int = 0) -> Dataset:
    return Dataset("test-points", "test", {"x": np.random.default_rng(seed).normal(size=n)})


class SlowEvaluation(Model):
    """Evaluation sleeps ``sleep`` seconds (an algorithm's clock must not count them)."""

    name = "test-slow-eval"
    data_kinds = ("test",)
    metrics = metric_table(Metric("elbo", "higher", "task", "nats", description="the posterior, a number, as is (a random walk: no objective, so no blow-up rule)"))
    answer = "elbo"

    def __init__(self, data, *, sleep: float = 0.05) -> None:
        super().__init__(data)
        self.sleep = sleep

    @property
    def n_train(self):
        return len(self.data.train["x"])

    def evaluate(self, posterior, rng):
        time.sleep(self.sleep)
        return {"elbo": float(posterior)}


class Locked(SlowEvaluation):
    """Holds a lock: it can be neither deep-copied nor pickled."""

    name = "test-locked"

    def __init__(self, data, *, sleep: float = 0.0) -> None:
        import threading

        super().__init__(data, sleep=sleep)
        self.lock = threading.Lock()


def burn(seconds: float) -> None:
    """Keep the CPU busy for ``seconds`` of this process's CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


class Sleeper(Algorithm):
    """Each step works ``work`` CPU seconds (busy), then sleeps ``sleep`` wall seconds (no CPU)."""

    name = "test-sleeper"

    def __init__(self, *, work: float = 0.01, sleep: float = 0.0) -> None:
        self.work, self.sleep = work, sleep

    def init(self, model, rng):
        self.value_ = 0.0
        self.rng_ = rng

    def step(self):
        burn(self.work)
        time.sleep(self.sleep)
        self.value_ += self.rng_.normal()
        return 10

    def posterior(self):
        return self.value_


class Fusing(Sleeper):
    """A Sleeper that takes its steps in fused chunks, recording each chunk's size in ``CHUNKS``."""

    name = "test-fusing"
    fused = True

    def advance(self, n):
        CHUNKS.append(n)
        return super().advance(n)


#: Sizes of the chunks the runner handed to Fusing.advance in this process.
CHUNKS: list[int] = []


#: Keys of the "compiled" Compiling steps in this process (numba keeps its dispatchers per process).
COMPILED: set[str] = set()


class Compiling(Sleeper):
    """Its first step in a process with a given ``key`` also "compiles": ``compile`` more CPU seconds,
    as a numba kernel's first call does."""

    name = "test-compiling"

    def __init__(self, *, key: str = "k", compile: float = 0.2, work: float = 0.001) -> None:
        self.key, self.compile, self.work, self.sleep = key, compile, work, 0.0

    def step(self):
        if self.key not in COMPILED:
            burn(self.compile)
            COMPILED.add(self.key)
        return super().step()


class Diverging(Sleeper):
    """Its posterior (a number the test model reports as its ELBO) becomes inf at ``fail_at``."""

    name = "test-diverging"

    def __init__(self, *, fail_at: int = 3) -> None:
        self.fail_at = fail_at

    @classmethod
    def incompatibility(cls, model_cls, params):
        return None if model_cls is SlowEvaluation else "runs only on test-slow-eval"

    def init(self, model, rng):
        self.value_, self.t_ = 0.0, 0

    def step(self):
        self.t_ += 1
        if self.t_ >= self.fail_at:
            self.value_ = np.inf
        return 10


class Killer(Sleeper):
    """SIGKILLs its own process at step ``kill_at`` — every time, or (with ``marker``) only
    on the first attempt, leaving the marker file behind so a retry succeeds."""

    name = "test-killer"

    def __init__(self, *, work: float = 0.001, kill_at: int = 2, marker: str = "") -> None:
        self.work, self.sleep, self.kill_at, self.marker = work, 0.0, kill_at, marker

    def step(self):
        import os
        import signal
        from pathlib import Path

        if getattr(self, "t_", 0) + 1 == self.kill_at and not (self.marker and Path(self.marker).exists()):
            if self.marker:
                Path(self.marker).touch()
            os.kill(os.getpid(), signal.SIGKILL)
        self.t_ = getattr(self, "t_", 0) + 1
        return super().step()


class Hanger(Sleeper):
    """Its first step sleeps ``hang`` seconds (a step that does not return, so the
    runner's own between-steps time check never gets a chance)."""

    name = "test-hanger"

    def __init__(self, *, hang: float = 60.0) -> None:
        self.work, self.sleep, self.hang = 0.0, 0.0, hang

    def step(self):
        self.t_ = getattr(self, "t_", 0) + 1
        if self.t_ == 1:
            time.sleep(self.hang)
        return super().step()


class Hog(Sleeper):
    """Allocates ``gib`` GiB at its second step."""

    name = "test-hog"

    def __init__(self, *, gib: float = 8.0) -> None:
        self.work, self.sleep, self.gib = 0.0, 0.0, gib

    def step(self):
        self.t_ = getattr(self, "t_", 0) + 1
        if self.t_ == 2:
            self.block_ = np.ones(int(self.gib * 2**30 / 8))
        return super().step()
