"""svibench.model.per_checkpoint: what a model's metrics and the reference scorer both read of one posterior is
computed once a checkpoint, and never carried into the next."""
from __future__ import annotations

import numpy as np

from svibench.model import Model, per_checkpoint


class _Counting(Model):
    name = "counting"

    def __init__(self) -> None:  # no data needed to count calls
        self.calls = 0

    @per_checkpoint
    def predictive(self, q: np.ndarray) -> float:
        self.calls += 1
        return float(q.sum())


def test_within_a_checkpoint_the_same_argument_is_computed_once_and_a_new_one_afresh():
    model, q, other = _Counting(), np.ones(3), np.ones(3)
    with model.checkpoint():
        assert model.predictive(q) == model.predictive(q) == 3.0
        assert model.calls == 1
        model.predictive(other)  # equal values, another object: computed
        assert model.calls == 2
    q[:] = 2.0  # the posterior moved on: the next checkpoint sees it
    with model.checkpoint():
        assert model.predictive(q) == 6.0 and model.calls == 3
    model.predictive(q), model.predictive(q)  # outside a checkpoint nothing is kept
    assert model.calls == 5
