"""svibench.numerics.spd: the inverse of an SPD matrix from its Cholesky factor (LAPACK potri)."""
from __future__ import annotations

import numpy as np
import pytest

from svibench.numerics.spd import inverse_from_cholesky


def _spd(rng: np.random.Generator, d: int) -> np.ndarray:
    a = rng.standard_normal((d, d))
    return a @ a.T + d * np.eye(d)


@pytest.mark.parametrize("d", [1, 5, 60])
def test_the_inverse_from_the_factor_is_the_inverse_and_exactly_symmetric(d):
    a = _spd(np.random.default_rng(d), d)
    inv = inverse_from_cholesky(np.linalg.cholesky(a))
    assert np.array_equal(inv, inv.T)
    np.testing.assert_allclose(inv, np.linalg.inv(a), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(inv @ a, np.eye(d), atol=1e-10)


def test_a_batch_of_factors_is_inverted_one_by_one():
    rng = np.random.default_rng(0)
    stack = np.stack([[_spd(rng, 4) for _ in range(3)] for _ in range(2)])  # (2, 3, 4, 4)
    inv = inverse_from_cholesky(np.linalg.cholesky(stack))
    np.testing.assert_allclose(inv, np.linalg.inv(stack), rtol=1e-10, atol=1e-12)


def test_a_singular_factor_is_refused():
    chol = np.tril(np.ones((3, 3)))
    chol[1, 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        inverse_from_cholesky(chol)
