"""Issue 52: a worker that fails around a run (not in it: execute() records a run's own errors), e.g. a MemoryError
under --memory-limit while sending the run's results, prints one line, never a traceback; the run is recorded as
lost with the reason, and the sweep goes on."""
import sys

import pytest

from svibench.executors import local, run_local
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

GMM = ProblemSpec("gmm/p", "gmm", "gmm-synthetic", {"components": 2}, {"n": 200, "n_test": 50, "components": 2})


def _out_of_memory(spec, **_):
    raise MemoryError("simulated: the run's results did not fit under --memory-limit")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the patched worker needs the fork start method")
def test_a_worker_failing_around_a_run_prints_one_line_and_the_run_is_lost(monkeypatch, capfd):
    # The patched worker needs the fork start method, which the pool takes only while this process runs one thread;
    # a thread another test leaves idle (Dask's offload thread) would make it spawn, and the workers would not see
    # the patch: fork is asked for.
    monkeypatch.setattr(local, "start_method", lambda memory_limit: "fork")
    monkeypatch.setattr(local, "execute", _out_of_memory)  # forked workers inherit it
    specs = [RunSpec("w", GMM, "svi", "SVI", {"batch_size": 20}, seed, Budget(iterations=3), Checkpoints(count=2))
             for seed in range(2)]
    runs = list(run_local(specs, workers=2, retries=0))
    assert [ds.attrs["status"] for ds in runs] == ["failed", "failed"]
    assert all("worker process died" in ds.attrs["message"] for ds in runs)
    err = capfd.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.startswith("svibench worker")]
    assert len(lines) == 2 and all("MemoryError: simulated" in line for line in lines)
