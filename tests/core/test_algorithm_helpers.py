"""The helpers every algorithm shares: minibatch sampling and init-method resolution."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from svibench.algorithm import resolve_init_method
from svibench.numerics.minibatch import sample_minibatch


def test_minibatch_is_a_sorted_draw_without_replacement_on_the_generators_own_stream():
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    batch = sample_minibatch(a, 50, 12)
    assert np.array_equal(batch, np.sort(b.choice(50, size=12, replace=False)))
    assert len(np.unique(batch)) == 12 and np.all(np.diff(batch) > 0) and batch.min() >= 0 and batch.max() < 50
    assert a.random() == b.random()  # the same numbers were consumed


def test_minibatch_larger_than_the_data_is_all_of_it():
    assert np.array_equal(sample_minibatch(np.random.default_rng(0), 7, 100), np.arange(7))


def test_minibatch_draws_every_row_equally_often():
    rng = np.random.default_rng(1)
    counts = np.bincount(np.concatenate([sample_minibatch(rng, 10, 3) for _ in range(20000)]), minlength=10)
    np.testing.assert_allclose(counts / 20000, 0.3, atol=0.02)


def test_init_method_default_is_the_models_first_and_an_unknown_one_says_which_exist():
    model = SimpleNamespace(name="toy", init_methods=("random", "gibbs"))
    assert resolve_init_method(model, "default") == "random"
    assert resolve_init_method(model, "gibbs") == "gibbs"
    with pytest.raises(ValueError, match="toy has init methods random, gibbs, not 'kmeans'"):
        resolve_init_method(model, "kmeans")
