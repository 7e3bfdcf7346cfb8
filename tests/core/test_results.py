"""Results files: atomic per-run files, one Dataset per study, corrupt files named."""
from __future__ import annotations

import numpy as np
import pytest

import svibench
from svibench.models.gmm import GaussianMixture
from svibench.results import ResultsError, write_run
from svibench.runner import to_dataset
from svibench.spec import Budget, ProblemSpec, RunSpec


def run(seed, n, status="ok", label="A"):
    spec = RunSpec("s", ProblemSpec("p", "gmm", "gmm-synthetic"), "svi", label, {"batch_size": seed + 1}, seed, Budget(iterations=9))
    rows = [{"iteration": i, "epoch": i / 2, "time": 0.1 * i, "elbo": -10.0 + i} for i in range(n)]
    return to_dataset(spec, rows, GaussianMixture.metrics, status, "" if status == "ok" else "boom", answer="elbo")


def test_a_study_opens_as_one_dataset_padded_with_nan(tmp_path):
    write_run(run(0, 3), tmp_path)
    write_run(run(1, 5, status="failed"), tmp_path)
    ds = svibench.open_results(tmp_path)
    assert dict(ds.sizes) == {"run": 2, "checkpoint": 5}
    assert list(ds.seed.values) == [0, 1] and list(ds.status.values) == ["ok", "failed"]
    assert np.isnan(ds.elbo.values[0, 3:]).all() and ds.elbo.values[1, 4] == -6.0
    assert np.isnan(ds.heldout_loglik.values).all()
    assert ds.message.values[1] == "boom"
    assert ds.attrs["svibench_version"] and ds.attrs["numpy_version"] == np.__version__
    assert ds.sel(run=ds.label == "A").sizes["run"] == 2


def test_writes_leave_no_temporary_files(tmp_path):
    write_run(run(0, 3), tmp_path)
    assert [p.name for p in (tmp_path / "runs").iterdir()] == [f"{run(0, 3).attrs['run_id']}.nc"]


def test_a_truncated_run_file_is_reported_by_name(tmp_path):
    path = write_run(run(0, 3), tmp_path)
    write_run(run(1, 3), tmp_path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(ResultsError, match=path.name):
        svibench.open_results(tmp_path)
    ds = svibench.open_results(tmp_path, skip_corrupt=True)
    assert ds.sizes["run"] == 1 and path.name in ds.attrs["corrupt_files"]


def test_an_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ResultsError, match="no readable run files"):
        svibench.open_results(tmp_path)
