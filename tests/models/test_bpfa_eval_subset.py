"""BPFA's evaluation subsets: checkpoints estimate every metric on the patches covering seeded pixel windows (the
PSNRs on those pixels, reconstructed as in the whole image) or on a seeded subset of a factor matrix's rows, and the
last checkpoint measures the whole data's metrics (``*_whole``) exactly as evaluating every row does."""
from __future__ import annotations

import numpy as np
import pytest

from svibench.algorithms.svi import SVI
from svibench.claims.convergence import unconverged
from svibench.datasets.bpfa_synthetic import bpfa_synthetic
from svibench.datasets.images import image_patches
from svibench.metrics import Metric, MetricError, check_declaration, metric_table
from svibench.models.bpfa import BPFA, WHOLE
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

SMALL = {"features": 8, "predictive_samples": 2, "init_rows": 50, "init_sweeps": 2}
#: Two by two windows of 4 × 4 pixels on the 24 × 24 crop.
WINDOWS = {"eval_patches": "windows", "eval_windows": 2, "eval_window": 4}


@pytest.fixture(scope="module")
def fitted():
    """A 24 × 24 crop (289 patches), MF-SSVI after 20 steps: the posterior, and the data."""
    data = image_patches(image="house", size=24)
    model = BPFA(data, **SMALL)
    alg = SVI(batch_size=50, t0=0.0, local="mf", view="sampled")
    alg.init(model, np.random.default_rng(0))
    for _ in range(20):
        alg.step()
    return data, alg.posterior()


def test_with_every_patch_evaluated_the_whole_image_psnrs_are_the_checkpoints(fitted):
    data, posterior = fitted
    model = BPFA(data, **SMALL)
    values = model.evaluate(posterior, np.random.default_rng(1))
    assert all(values[f"{name}_whole"] == values[name] for name in WHOLE)
    assert model.evaluate_final(posterior, np.random.default_rng(1)) == {}


def test_the_last_checkpoint_measures_what_evaluating_every_patch_measures(fitted):
    """Same posterior and evaluation stream: the windows model's final PSNRs are bit for bit the all-patches model's."""
    data, posterior = fitted
    every = BPFA(data, **SMALL).evaluate(posterior, np.random.default_rng(1))
    sampled = BPFA(data, **SMALL, **WINDOWS)
    final = sampled.evaluate_final(posterior, np.random.default_rng(1))
    assert final == {f"{name}_whole": every[name] for name in WHOLE}
    assert "psnr_whole" not in sampled.evaluate(posterior, np.random.default_rng(1))
    assert sampled.eval_subset.size < data.train["Y"].shape[0]


def test_a_checkpoint_scores_the_windows_pixels_as_the_whole_image_reconstructs_them(fitted):
    """Given the same patch predictions, the checkpoint's psnr is the whole reconstruction's PSNR on the windows'
    pixels: the estimate samples pixels, it does not change how a pixel is reconstructed."""
    from svibench.datasets.images import assemble_patches
    from svibench.models.bpfa import psnr, psnr_fit

    data, _ = fitted
    sampled = BPFA(data, **SMALL, **WINDOWS)
    rows, pixels, meta = sampled.eval_subset, sampled.eval_pixels, data.meta
    clean = np.asarray(data.test["image"], dtype=float)
    means = np.random.default_rng(2).normal(size=sampled.Y.shape)  # any predictions, overlaps disagreeing
    whole = np.clip(assemble_patches(means * meta["scale"] + meta["offset"], clean.shape, meta["patch"]), 0, 255)
    expected = 20 * np.log10(255 / np.sqrt(np.mean((whole - clean)[pixels] ** 2)))
    assert psnr(means[rows], meta, clean, rows, pixels) == pytest.approx(expected, rel=1e-12)
    assert psnr(means[rows], meta, clean, rows, pixels) != psnr(means, meta, clean)  # a sample of the pixels
    Y, M = sampled.Y, sampled.M
    fit = psnr_fit(means[rows], Y[rows], M[rows], meta, clean.shape, rows, pixels)
    observed = (assemble_patches(M, clean.shape, meta["patch"]) > 0) & pixels
    values = assemble_patches(M * (Y * meta["scale"] + meta["offset"]), clean.shape, meta["patch"])
    values = values[observed] / assemble_patches(M, clean.shape, meta["patch"])[observed]
    assert fit == pytest.approx(20 * np.log10(255 / np.sqrt(np.mean((whole[observed] - values) ** 2))), rel=1e-12)


def test_the_windows_are_one_fixed_subset_per_seed(fitted):
    data, _ = fitted
    a, b = (BPFA(data, **SMALL, **WINDOWS).eval_subset for _ in range(2))
    assert np.array_equal(a, b)
    assert not np.array_equal(a, BPFA(data, **SMALL, **WINDOWS, eval_seed=1).eval_subset)


def test_factor_data_evaluate_a_seeded_subset_of_rows_and_every_row_at_the_end():
    data = bpfa_synthetic(n=300, dim=6, features=4, seed=0)
    model = BPFA(data, features=4, predictive_samples=2, init_rows=50, init_sweeps=2)
    alg = SVI(batch_size=50, t0=0.0, local="mf", view="sampled")
    alg.init(model, np.random.default_rng(0))
    for _ in range(10):
        alg.step()
    posterior = alg.posterior()
    every = model.evaluate(posterior, np.random.default_rng(1))
    sampled = BPFA(data, features=4, predictive_samples=2, init_rows=50, init_sweeps=2, eval_rows=60)
    assert sampled.eval_subset.size == 60 and np.array_equal(sampled.eval_subset, np.unique(sampled.eval_subset))
    assert sampled.final_evaluation_ratio() == 5.0
    final = sampled.evaluate_final(posterior, np.random.default_rng(1))
    assert final == {f"{name}_whole": every[name] for name in ("heldout_loglik", "mse", "draw_mse")}
    estimate = sampled.evaluate(posterior, np.random.default_rng(1))
    assert "mse_whole" not in estimate and estimate["mse"] != every["mse"]
    assert estimate["mse"] == pytest.approx(every["mse"], rel=0.5)  # 60 of 300 rows: the same quantity, sampled


@pytest.mark.parametrize("params, says", [
    ({"eval_rows": 51}, r"eval_rows = 51 must be 0 \(every one of the 50 rows\) or a number of them from 1 to 50"),
    ({"eval_rows": -1}, r"eval_rows = -1 must be 0 \(every one of the 50 rows\) or a number of them from 1 to 50"),
])
def test_a_row_subset_must_be_part_of_the_data(params, says):
    with pytest.raises(ValueError, match=says):
        BPFA(bpfa_synthetic(n=50, dim=4, features=3, seed=0), features=3, **params)


def test_a_row_subset_is_for_factor_data(fitted):
    data, _ = fitted
    with pytest.raises(ValueError, match="eval_rows is for factor data; on an image use eval_patches = 'windows'"):
        BPFA(data, **SMALL, eval_rows=10)


def test_windows_need_an_image_and_a_known_choice():
    synthetic = bpfa_synthetic(n=50, dim=4, features=3, seed=0)
    with pytest.raises(ValueError, match="eval_patches = 'windows' needs image data"):
        BPFA(synthetic, features=3, eval_patches="windows")
    with pytest.raises(ValueError, match="eval_patches must be 'all' or 'windows', got 'tiling'"):
        BPFA(synthetic, features=3, eval_patches="tiling")


def _spec(budget: Budget, model_params: dict) -> RunSpec:
    problem = ProblemSpec("bpfa/tiny", "bpfa", "image-patches", {**SMALL, **model_params}, {"image": "house", "size": 24})
    return RunSpec("test", problem, "mf-svi", "mf-svi", {"batch_size": 50}, 0, budget, Checkpoints(count=4))


@pytest.mark.parametrize("budget", [Budget(iterations=12), Budget(iterations=10_000, seconds=0.3)])
def test_a_run_records_the_whole_image_psnrs_at_its_last_checkpoint_only(budget):
    ds = execute(_spec(budget, WINDOWS))
    assert ds.attrs["status"] == "ok"
    whole = ds["psnr_whole"].values
    assert np.isfinite(whole[-1]) and np.isnan(whole[:-1]).all()
    assert np.isfinite(ds["psnr"].values).all() and np.isfinite(ds["psnr_fit_whole"].values[-1])


def test_whether_a_run_converged_on_a_last_checkpoint_metric_is_read_from_its_tracker(fitted):
    data, _ = fitted
    ds = execute(_spec(Budget(iterations=12), WINDOWS)).expand_dims("run")
    ds = ds.assign_coords(problem=("run", ["p"]), label=("run", ["l"]))
    info = BPFA(data, **SMALL, **WINDOWS).metric_info()
    moving = unconverged(ds, "psnr", 1e-12, 0.5)
    assert moving.all()  # 12 steps from a random start: still moving by more than 1e-12
    assert np.array_equal(unconverged(ds, "psnr_whole", 1e-12, 0.5, info), moving)
    assert not unconverged(ds, "psnr_whole", 1e-12, 0.5).any()  # one finite value: no trajectory of its own


def test_a_tracker_must_be_another_metric_of_the_model():
    class Bad:
        name, answer = "bad", "a"
        metrics = metric_table(Metric("a", "higher", "task"), Metric("b", "higher", "task", tracked_by="c"))

    with pytest.raises(MetricError, match="metric 'b' is tracked_by 'c', which is not another of its metrics"):
        check_declaration(Bad)


def test_a_plan_counts_the_whole_image_once_beside_the_checkpoints_without_making_it():
    """The probe times checkpoints on the windows and scales one by N / (their patches) for the last evaluation."""
    from svibench.plan import probe

    sampled = probe(_spec(Budget(iterations=12), WINDOWS))
    n, rows = 17 * 17, BPFA(image_patches(image="house", size=24), **SMALL, **WINDOWS).eval_subset.size
    assert sampled.final_evaluation == pytest.approx(sampled.per_evaluation * n / rows)
    assert probe(_spec(Budget(iterations=12), {})).final_evaluation == 0
