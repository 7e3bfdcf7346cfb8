"""The posterior-accuracy metrics on known answers (issue 30)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.stats

from svibench.metrics import check_declaration
from svibench.reference.accuracy import ACCURACY_METRICS, accuracy, bernoulli_kl, gaussian_w2, psd_sqrt


def _spd(rng: np.random.Generator, d: int) -> np.ndarray:
    A = rng.standard_normal((d, d))
    return A @ A.T / d + 0.1 * np.eye(d)


def test_q_equal_to_the_reference_scores_zero_on_every_metric():
    rng = np.random.default_rng(0)
    m, S, p = rng.standard_normal(6), _spd(rng, 6), rng.uniform(0.05, 0.95, 20)
    out = accuracy(m, S, m, S, p, p)
    assert out.keys() == set(ACCURACY_METRICS)
    assert out["ref_mean_error"] == 0.0 and out["ref_log_sd_ratio"] == 0.0 and out["ref_sd_error"] == 0.0
    assert out["ref_w2"] < 1e-6 and abs(out["ref_predictive_kl"]) < 1e-15


def test_a_shifted_q_has_w2_the_length_of_the_shift_and_standardised_error_shift_over_sd():
    rng = np.random.default_rng(1)
    m, S = rng.standard_normal(5), _spd(rng, 5)
    delta = rng.standard_normal(5)
    out = accuracy(m + delta, S, m, S)
    assert out["ref_w2"] == pytest.approx(np.linalg.norm(delta), rel=1e-6)
    assert out["ref_mean_error"] == pytest.approx(np.sqrt(np.mean((delta / np.sqrt(np.diag(S))) ** 2)), rel=1e-12)
    assert out["ref_sd_error"] == pytest.approx(0.0, abs=1e-15)
    one = accuracy(np.array([0.3]), np.eye(1) * 4.0, np.zeros(1), np.eye(1) * 4.0)
    assert one["ref_mean_error"] == pytest.approx(0.15) and one["ref_w2"] == pytest.approx(0.3)


@pytest.mark.parametrize("c", [0.5, 2.0])
def test_a_q_with_scaled_sd_gives_the_log_ratio_and_w2_of_scaled_gaussians(c):
    """Covariances c²S and S commute: W₂² = (1 − c)² tr S (Givens & Shortt 1984, commuting case)."""
    rng = np.random.default_rng(2)
    m, S = rng.standard_normal(4), _spd(rng, 4)
    out = accuracy(m, c**2 * S, m, S)
    assert out["ref_log_sd_ratio"] == pytest.approx(np.log(c)) and out["ref_sd_error"] == pytest.approx(abs(np.log(c)))
    assert out["ref_mean_error"] == 0.0
    assert out["ref_w2"] == pytest.approx(abs(1 - c) * np.sqrt(np.trace(S)), rel=1e-8)


def test_w2_matches_the_sqrtm_formula_on_random_covariances_and_is_symmetric():
    rng = np.random.default_rng(3)
    for d in (1, 3, 8):
        m1, m2, S1, S2 = rng.standard_normal(d), rng.standard_normal(d), _spd(rng, d), _spd(rng, d)
        r = scipy.linalg.sqrtm(S2).real
        expected = np.sqrt(np.sum((m1 - m2) ** 2) + np.trace(S1 + S2 - 2 * scipy.linalg.sqrtm(r @ S1 @ r).real))
        assert gaussian_w2(m1, S1, m2, S2) == pytest.approx(expected, rel=1e-8)
        assert gaussian_w2(m2, S2, m1, S1) == pytest.approx(expected, rel=1e-8)
        assert gaussian_w2(m1, S1, m2, S2, root2=psd_sqrt(S2)) == pytest.approx(expected, rel=1e-8)  # a scorer's


def test_w2_of_a_singular_covariance_is_finite():
    S = np.diag([1.0, 0.0])
    assert gaussian_w2(np.zeros(2), S, np.zeros(2), np.eye(2)) == pytest.approx(1.0)


def test_bernoulli_kl_is_scipys_entropy_averaged():
    p, q = np.array([0.1, 0.5, 0.9]), np.array([0.2, 0.4, 0.99])
    expected = np.mean([scipy.stats.entropy([a, 1 - a], [b, 1 - b]) for a, b in zip(p, q)])
    assert bernoulli_kl(p, q) == pytest.approx(expected, rel=1e-12)


def test_an_accuracy_metric_can_never_be_a_models_answer():
    class Bad:
        name, metrics, answer = "bad", ACCURACY_METRICS, "ref_w2"

    with pytest.raises(ValueError, match="answer 'ref_w2' is not one of its objective or task metrics"):
        check_declaration(Bad)


def test_variances_given_as_vectors_score_as_the_diagonal_covariance_matrices():
    rng = np.random.default_rng(3)
    m1, m2, v1, v2 = rng.normal(size=6), rng.normal(size=6), rng.gamma(2.0, size=6), rng.gamma(2.0, size=6)
    full = accuracy(m1, np.diag(v1), m2, np.diag(v2))
    for cov_q, cov_ref in ((v1, v2), (np.diag(v1), v2), (v1, np.diag(v2))):
        assert accuracy(m1, cov_q, m2, cov_ref) == pytest.approx(full, rel=1e-10)
