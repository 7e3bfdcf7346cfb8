"""Seeded evaluation subsets (svibench.evaluation_subset): the checkpoints estimate on a fixed subset, the last
checkpoint measures the whole set, the report states the estimate's error, and a subset that does not fit its data
is refused before any run."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.capabilities.latent_gaussian import GaussianPosterior
from svibench.data import DataError
from svibench.datasets.gamma_factor import gamma_factor_synthetic
from svibench.datasets.lda import lda_synthetic
from svibench.evaluation_subset import draw_subset, subset_refusal, whole_declarations
from svibench.executors import run_local
from svibench.models.lda import LDA
from svibench.models.lda.evaluation import elbo
from svibench.expfam import GammaNatural
from svibench.models.gamma_factor import GammaFactor
from svibench.models.logreg import BayesianLogisticRegression
from svibench.models.pmf import PoissonGammaMF
from svibench.reference.artifact import Reference
from svibench.reference.attach import Scorer
from svibench.report import write_report
from svibench.report.subsets import subset_errors
from svibench.results import open_results
from svibench.study import StudyError, parse_study
from svibench.sweep import run_study


def test_a_subset_is_seeded_sorted_and_distinct_and_zero_or_all_means_every_item():
    a, b = draw_subset(30, 100, 7, "eval_x", "items"), draw_subset(30, 100, 7, "eval_x", "items")
    assert np.array_equal(a, b) and a.size == 30 and np.array_equal(a, np.unique(a)) and a.max() < 100
    assert not np.array_equal(a, draw_subset(30, 100, 8, "eval_x", "items"))
    assert draw_subset(0, 100, 7, "eval_x", "items") is None and draw_subset(100, 100, 7, "eval_x", "items") is None


@pytest.mark.parametrize("size", [-1, 101, 2.5, True])
def test_a_size_that_is_no_subset_is_refused_in_one_line_naming_the_parameter_and_the_range(size):
    why = subset_refusal(size, 100, "eval_x", "test images")
    assert why == f"eval_x = {size!r} must be 0 (every one of the 100 test images) or a number of them from 1 to 100"
    with pytest.raises(ValueError, match="eval_x"):
        draw_subset(size, 100, 0, "eval_x", "test images")


def _pmf_data(n_test: int = 40):
    """Synthetic counts with new test columns (test X of the train's rows, no mask), as MNIST's are held."""
    rng = np.random.default_rng(0)
    W, Z = rng.gamma(1.0, 1.0, (12, 3)), rng.gamma(1.0, 1.0, (30 + n_test, 3))
    X = rng.poisson(W @ Z.T).astype(float)
    from svibench.data import Dataset
    return Dataset("pmf-columns", "count-matrix", train={"X": X[:, :30], "mask": np.ones((12, 30), bool)},
                   test={"X": X[:, 30:]}, meta={})


def test_pmf_scores_the_subset_at_checkpoints_and_every_test_image_at_the_last():
    data = _pmf_data()
    every = PoissonGammaMF(data, n_factors=3, eval_samples=5)
    sampled = PoissonGammaMF(data, n_factors=3, eval_samples=5, eval_test=10, eval_seed=3)
    q = every.mf_init(np.random.default_rng(0))
    whole = every.evaluate(q, np.random.default_rng(1))
    final = sampled.evaluate_final(q, np.random.default_rng(1))
    assert set(final) == {"recon_loss_whole", "recon_rmse_whole", "heldout_loglik_whole"}
    for name in ("recon_loss", "recon_rmse"):  # deterministic: the whole set's value exactly, as without a subset
        assert final[f"{name}_whole"] == whole[name] == whole[f"{name}_whole"]
    assert sampled.final_evaluation_ratio() == 4.0 and every.final_evaluation_ratio() == 0.0
    # The checkpoint's estimate is the same model scored on those 10 test images alone.
    alone = PoissonGammaMF(dataclasses.replace(data, test={"X": data.test["X"][:, sampled.test_subset]}),
                           n_factors=3, eval_samples=5)
    estimate, direct = sampled.evaluate(q, np.random.default_rng(1)), alone.evaluate(q, np.random.default_rng(1))
    assert "recon_loss_whole" not in estimate
    for name in ("recon_loss", "recon_rmse", "heldout_loglik", "elbo"):
        assert estimate[name] == direct[name]


def test_pmf_measures_an_svi_posterior_on_every_test_image_from_its_q_w_alone():
    from svibench.algorithms.svi import SVI

    data = _pmf_data()
    every = PoissonGammaMF(data, n_factors=3, eval_samples=5)
    sampled = PoissonGammaMF(data, n_factors=3, eval_samples=5, eval_test=10)
    alg = SVI(batch_size=10, t0=1.0)
    alg.init(sampled, np.random.default_rng(0))
    for _ in range(3):
        alg.step()
    q = alg.posterior()
    whole, final = every.evaluate(q, np.random.default_rng(1)), sampled.evaluate_final(q, np.random.default_rng(1))
    assert final["recon_loss_whole"] == whole["recon_loss"] and final["recon_rmse_whole"] == whole["recon_rmse"]


def test_gamma_factor_estimates_its_predictive_on_the_subset_and_measures_every_test_row_at_the_last():
    data = gamma_factor_synthetic(n=60, n_test=50, dim=5, factors=2, seed=0)
    every = GammaFactor(data, n_factors=2, eval_samples=6)
    sampled = GammaFactor(data, n_factors=2, eval_samples=6, eval_test=12, eval_seed=2)
    alone = GammaFactor(dataclasses.replace(data, test={"Y": data.test["Y"][sampled.test_subset]}), n_factors=2,
                        eval_samples=6)
    q = {"Z": GammaNatural.from_shape_rate(np.full((5, 2), 2.0), np.full((5, 2), 3.0))}
    whole = every.evaluate(q, np.random.default_rng(1))
    estimate = sampled.evaluate(q, np.random.default_rng(1))
    assert estimate["heldout_loglik"] == alone.evaluate(q, np.random.default_rng(1))["heldout_loglik"]
    assert estimate["neg_test_loglik"] == whole["neg_test_loglik"]  # one whitening: always every test row
    assert "heldout_loglik_whole" not in estimate and whole["heldout_loglik_whole"] == whole["heldout_loglik"]
    # The last checkpoint draws q afresh, as a checkpoint without a subset draws first: the same number.
    final = sampled.evaluate_final(q, np.random.default_rng(1))
    assert final == {"heldout_loglik_whole": whole["heldout_loglik"]}
    assert sampled.final_evaluation_ratio() == 50 / 12
    assert GammaFactor.data_refusal(data, {"eval_test": 51}).startswith("eval_test = 51 must be 0 (every one of the "
                                                                        "50 test rows)")


def test_pmf_refuses_a_test_subset_where_the_test_data_are_held_out_entries():
    data = _pmf_data()
    held = dataclasses.replace(data, test={"X": data.train["X"], "mask": np.zeros((12, 30), bool)})
    assert "holds out entries of its matrix, not test images; remove eval_test" in \
        PoissonGammaMF.data_refusal(held, {"eval_test": 5})
    with pytest.raises(ValueError, match="eval_test = 41 must be 0 \\(every one of the 40 test images\\)"):
        PoissonGammaMF(data, n_factors=3, eval_test=41)


def _classification(n_train: int = 40, n_test: int = 60, dim: int = 4):
    from svibench.data import Dataset
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n_train + n_test, dim))
    y = (X @ rng.standard_normal(dim) + rng.logistic(size=n_train + n_test) > 0).astype(float)
    return Dataset("clf", "classification", train={"X": X[:n_train], "y": y[:n_train]},
                   test={"X": X[n_train:], "y": y[n_train:]}, meta={})


def _gaussian(dim: int) -> GaussianPosterior:
    rng = np.random.default_rng(3)
    A = rng.standard_normal((dim, dim))
    return GaussianPosterior(rng.standard_normal(dim), 0.1 * A @ A.T + 0.05 * np.eye(dim))


def test_logreg_scores_the_subset_of_test_points_at_checkpoints_and_every_one_at_the_last():
    data = _classification()
    every = BayesianLogisticRegression(data, delta=1.0)
    sampled = BayesianLogisticRegression(data, delta=1.0, eval_test=15, eval_seed=2)
    alone = BayesianLogisticRegression(dataclasses.replace(data, test={k: v[sampled.test_subset] for k, v in
                                                                       data.test.items()}), delta=1.0)
    q = _gaussian(5)
    estimate, direct = sampled.evaluate(q, np.random.default_rng(0)), alone.evaluate(q, np.random.default_rng(0))
    whole = every.evaluate(q, np.random.default_rng(0))
    assert "test_logloss_bits_whole" not in estimate and whole["test_logloss_bits_whole"] == whole["test_logloss_bits"]
    for name in ("test_logloss_bits", "test_logloss_nats", "test_error", "heldout_loglik"):
        assert estimate[name] == pytest.approx(direct[name], rel=1e-12)
    assert estimate["elbo"] == whole["elbo"]  # the training rows are never subsampled
    final = sampled.evaluate_final(q, np.random.default_rng(0))
    assert final == {f"{name}_whole": whole[name] for name in ("test_logloss_bits", "test_logloss_nats", "test_error",
                                                              "heldout_loglik")}
    assert sampled.final_evaluation_ratio() == 60 / (40 + 15) and every.final_evaluation_ratio() == 0.0


def test_logreg_refuses_a_test_subset_larger_than_the_test_set_or_without_one():
    data = _classification()
    assert BayesianLogisticRegression.data_refusal(data, {"eval_test": 61}) == \
        "eval_test = 61 must be 0 (every one of the 60 test points) or a number of them from 1 to 60"
    no_test = dataclasses.replace(data, test={})
    assert BayesianLogisticRegression.data_refusal(no_test, {"eval_test": 5}) == \
        "eval_test = 5: 'clf' has no test set; remove eval_test"
    with pytest.raises(ValueError, match="logreg: eval_test = 61 must be 0"):
        BayesianLogisticRegression(data, eval_test=61)


@pytest.mark.parametrize("checkpoints", [True, False])
def test_the_reference_predictive_is_compared_on_the_same_test_points_and_on_every_one_at_the_last(checkpoints):
    """The scorer's ref_predictive_kl reads the model's subset at every checkpoint, and ref_predictive_kl_whole every
    test point at the last; a run scored at its last checkpoint only scores every point there."""
    from svibench.reference.accuracy import bernoulli_kl

    data = _classification()
    sampled = BayesianLogisticRegression(data, delta=1.0, eval_test=15, eval_seed=2)
    q, p_ref = _gaussian(5), np.random.default_rng(4).uniform(0.05, 0.95, 60)
    reference = Reference({"mean": np.zeros(5), "cov": np.eye(5), "predictive": p_ref}, {})
    scorer = Scorer.of(reference, sampled, checkpoints)
    p_every = BayesianLogisticRegression(data, delta=1.0).test_probabilities(q)
    if not checkpoints:
        assert "ref_predictive_kl_whole" not in scorer.metrics and scorer.final(sampled, q) == {}
        assert scorer(sampled, q)["ref_predictive_kl"] == bernoulli_kl(p_ref, p_every)
        return
    assert scorer.metrics["ref_predictive_kl_whole"].tracked_by == "ref_predictive_kl"
    subset = sampled.test_subset
    assert scorer(sampled, q)["ref_predictive_kl"] == bernoulli_kl(p_ref[subset], p_every[subset])
    assert scorer.final(sampled, q) == {"ref_predictive_kl_whole": bernoulli_kl(p_ref, p_every)}


def test_lda_elbo_on_complementary_subsets_weighs_back_to_the_whole_corpus_elbo():
    """The bound's terms are per document but for the topics' one, so the two scaled estimates of a split of the
    documents, weighted by their sizes, give the whole corpus's ELBO (the estimator is D/|S| times a sum over S)."""
    data = lda_synthetic(n_docs=80, n_test=20, vocab=30, n_topics=3, seed=0)
    model = LDA(data, n_topics=3)
    lam = model.init_globals(np.random.default_rng(0))["topics"].concentration()
    D = model.corpus.D
    first = draw_subset(25, D, 1, "eval_docs", "training documents")
    rest = np.setdiff1d(np.arange(D), first)
    args = (model.corpus, lam, model.alpha, model.eta, 100, 1e-4)
    whole = elbo(*args)
    weighted = len(first) / D * elbo(*args, batch=first) + len(rest) / D * elbo(*args, batch=rest)
    assert weighted == pytest.approx(whole, rel=1e-12)
    sampled = LDA(data, n_topics=3, eval_docs=25, eval_seed=1)
    posterior = ConjugatePosterior(model.init_globals(np.random.default_rng(0)))
    assert sampled.evaluate(posterior, np.random.default_rng(0))["elbo"] == elbo(*args, batch=first)
    assert sampled.evaluate_final(posterior, np.random.default_rng(0))["elbo_whole"] == whole
    assert model.evaluate(posterior, np.random.default_rng(0))["elbo_whole"] == whole


def test_a_whole_declaration_copies_the_metric_and_is_tracked_by_it():
    (whole,) = whole_declarations(PoissonGammaMF.metrics, ("recon_loss",), "every test image")
    base = PoissonGammaMF.metrics["recon_loss"]
    assert (whole.name, whole.tracked_by, whole.direction, whole.kind, whole.low) == \
        ("recon_loss_whole", "recon_loss", base.direction, base.kind, base.low)
    assert not whole.primary


def _lda_study(eval_docs: int):
    return parse_study({
        "study": {"name": "subset", "seeds": [0, 1]},
        "budget": {"iterations": 10, "checkpoints": 10},
        "problem": [{"name": "lda/tiny", "model": "lda", "dataset": "lda-synthetic",
                     "model_params": {"n_topics": 3, "eval_docs": eval_docs},
                     "dataset_params": {"n_docs": 60, "n_test": 20, "vocab": 30, "n_topics": 3}}],
        "algorithm": [{"name": "svi", "params": {"batch_size": 10}}, {"name": "vmp"}],
    })


def test_a_subset_larger_than_the_data_stops_the_sweep_before_any_run(tmp_path):
    with pytest.raises(DataError, match=r"nothing was run; these problems' model parameters do not fit their data:\n"
                                        r"  lda/tiny: model_params\.eval_docs = 41 must be 0 \(every one of the 40 "
                                        r"training documents\) or a number of them from 1 to 40$"):
        run_study(_lda_study(41), tmp_path / "out", run_local, progress=False)
    assert not (tmp_path / "out" / "runs").exists()


def test_a_negative_subset_is_refused_at_study_load():
    with pytest.raises(StudyError, match=r"eval_docs = -1 is outside its declared range: int ≥ 0"):
        _lda_study(-1)


def test_the_report_states_each_subsets_error_from_the_runs_last_checkpoints(tmp_path):
    run_study(_lda_study(10), tmp_path / "results", run_local, progress=False)
    ds = open_results(tmp_path / "results")
    errors = subset_errors(ds)
    assert sorted(set(errors["metric"])) == ["elbo", "elbo_per_word"] and len(errors) == 2 * 4
    last = ds["iteration"].notnull().sum("checkpoint").values - 1
    for r in range(4):
        row = errors[(errors["run"] == r) & (errors["metric"] == "elbo")].iloc[0]
        assert (row["subset"], row["whole"]) == (ds["elbo"].values[r, last[r]], ds["elbo_whole"].values[r, last[r]])
        assert row["error"] == abs(row["subset"] - row["whole"]) > 0
        assert np.isnan(ds["elbo_whole"].values[r, :last[r]]).all()  # measured at the last checkpoint only
    report = write_report(tmp_path / "results", tmp_path / "report")
    text = report.markdown.read_text()
    assert "Evaluation subsets: the estimate against the whole set" in text
    table = next(t for t in report.tables if t.title.startswith("Evaluation subsets"))
    assert [row[:3] for row in table.rows] == [["lda/tiny", "elbo", "4"], ["lda/tiny", "elbo_per_word", "4"]]
    # Without a subset the _whole metrics equal the checkpoints' at every checkpoint, and no table is written.
    run_study(_lda_study(0), tmp_path / "every", run_local, progress=False)
    every = open_results(tmp_path / "every")
    assert np.array_equal(every["elbo_whole"].values, every["elbo"].values, equal_nan=True)
    assert subset_errors(every).empty
