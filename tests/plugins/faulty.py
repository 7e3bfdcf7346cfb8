"""Test-only algorithms and models, loaded as a plugin file: one that fails, one that
diverges, one whose evaluation is slow (for the clock test)."""
from __future__ import annotations

import time

import numpy as np

from svibench.algorithm import Algorithm
from svibench.capabilities import ConditionallyConjugate
from svibench.data import Dataset, dataset
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
        return self.lam_




@dataset("test-points", kind="test")
def points(*, n: int = 10, seed: int = 0) -> Dataset:
    return Dataset("test-points", "test", {"x": np.random.default_rng(seed).normal(size=n)})


class SlowEvaluation(Model):
    """Evaluation sleeps ``sleep`` seconds; the algorithm below sleeps ``work`` per step."""

    name = "test-slow-eval"
    data_kinds = ("test",)
    metrics = ("elbo",)

    def __init__(self, data, *, sleep: float = 0.05) -> None:
        super().__init__(data)
        self.sleep = sleep

    @property
    def n_train(self):
        return len(self.data.train["x"])

    def evaluate(self, posterior, rng):
        time.sleep(self.sleep)
        return {"elbo": float(posterior)}


class Sleeper(Algorithm):
    name = "test-sleeper"

    def __init__(self, *, work: float = 0.01) -> None:
        self.work = work

    def init(self, model, rng):
        self.value_ = 0.0
        self.rng_ = rng

    def step(self):
        time.sleep(self.work)
        self.value_ += self.rng_.normal()
        return 10

    def posterior(self):
        return self.value_


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
