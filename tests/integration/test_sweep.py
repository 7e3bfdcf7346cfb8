"""Sweeps that lose nothing: executors agree, killed workers, hangs, memory, Ctrl-C, resume."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest

from svibench.data import DataError
from svibench.executors import run_dask, run_local
from svibench.executors.dask import chunks
from svibench.results import open_results, run_files
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec
from svibench.study import StudyError, load_study, parse_study
from svibench.sweep import SweepError, run_study

TEST_PROBLEM = ProblemSpec("t", "test-slow-eval", "test-points", {"sleep": 0.0}, {})


def trajectories(ds):
    """Everything but times, keyed by run id."""
    return {
        str(rid): {v: ds[v].values[i] for v in ds.data_vars if v not in ("time", "wall_time")} | {"status": str(ds.status.values[i])}
        for i, rid in enumerate(ds.run_id.values)
    }


def assert_same_trajectories(a, b):
    ta, tb = trajectories(a), trajectories(b)
    assert ta.keys() == tb.keys()
    for rid in ta:
        for var, value in ta[rid].items():
            np.testing.assert_array_equal(value, tb[rid][var], err_msg=f"{rid} {var}")


GMM_STUDY = {
    "study": {"name": "exec", "seeds": [0, 1, 2]},
    "budget": {"iterations": 15, "checkpoints": 5},
    "problem": [{"model": "gmm", "dataset": "gmm-synthetic", "dataset_params": {"n": 400, "n_test": 100}}],
    "algorithm": [{"name": "svi", "params": {"batch_size": 40, "kappa": [0.6, 0.9]}}, {"name": "vmp"}],
}


def test_local_and_a_dask_local_cluster_give_identical_trajectories(tmp_path):
    study = parse_study(GMM_STUDY)
    run_study(study, tmp_path / "local", partial(run_local, workers=2), progress=False)
    run_study(study, tmp_path / "dask", partial(run_dask, workers=2), progress=False)
    local, dask = open_results(tmp_path / "local"), open_results(tmp_path / "dask")
    assert local.sizes["run"] == 9 and set(local.status.values) == {"ok"}
    assert_same_trajectories(local, dask)


def test_workers_fork_when_that_is_safe_and_forked_and_spawned_workers_give_identical_trajectories(tmp_path, monkeypatch):
    import threading

    from svibench.executors import local

    monkeypatch.setattr(threading, "active_count", lambda: 1)
    assert local.start_method(None) == ("fork" if sys.platform.startswith("linux") else "spawn")
    assert local.start_method(2**30) == "spawn"  # a forked worker's address space would start with ours
    monkeypatch.setattr(threading, "active_count", lambda: 2)
    assert local.start_method(None) == "spawn"  # another thread may hold a lock the fork would copy held
    study = parse_study(GMM_STUDY)
    for how in ("fork", "spawn"):
        monkeypatch.setattr(local, "start_method", lambda limit, how=how: how)
        run_study(study, tmp_path / how, partial(run_local, workers=2), progress=False)
    forked, spawned = open_results(tmp_path / "fork"), open_results(tmp_path / "spawn")
    assert set(forked.status.values) == {"ok"}
    assert_same_trajectories(forked, spawned)


def test_a_killed_worker_is_retried_or_recorded_and_the_sweep_completes(tmp_path, faulty_plugin):
    marker = tmp_path / "killed-once"
    raw = {
        "study": {"name": "kill", "seeds": [0, 1]},
        "budget": {"iterations": 5, "checkpoints": 3},
        "problem": [{"model": "test-slow-eval", "dataset": "test-points", "model_params": {"sleep": 0.0}}],
        "algorithm": [
            {"name": "test-killer", "label": "always", "params": {"kill_at": 2}},
            {"name": "test-killer", "label": "once", "params": {"kill_at": 3, "marker": str(marker)}},
            {"name": "test-sleeper"},
        ],
    }
    study = parse_study(raw, plugins=(faulty_plugin,))
    result = run_study(study, tmp_path / "out", partial(run_local, workers=2, retries=1), progress=False)
    ds = open_results(tmp_path / "out")
    assert ds.sizes["run"] == 6 and len(run_files(tmp_path / "out")) == 6
    status = {(str(l), int(s)): str(st) for l, s, st in zip(ds.label.values, ds.seed.values, ds.status.values)}
    assert status[("always", 0)] == status[("always", 1)] == "failed"
    assert "worker process died" in str(ds.message.values[list(ds.label.values).index("always")])
    assert "killed by signal 9" in str(ds.message.values[list(ds.label.values).index("always")])
    # the marker makes the first attempt of one "once" run die; its retry (and the other seed) succeed
    assert {status[("once", 0)], status[("once", 1)]} == {"ok"} and marker.exists()
    assert status[("test-sleeper", 0)] == status[("test-sleeper", 1)] == "ok"
    assert sorted(result.statuses.values()).count("ok") == 4


def test_a_step_that_hangs_is_killed_and_recorded_as_timeout(faulty_plugin):
    spec = RunSpec("hang", TEST_PROBLEM, "test-hanger", "h", {"hang": 60.0}, 0, Budget(iterations=5),
                   Checkpoints(count=3), timeout=0.5, plugins=(faulty_plugin,))
    quick = RunSpec("hang", TEST_PROBLEM, "test-sleeper", "s", {}, 0, Budget(iterations=5), Checkpoints(count=3),
                    plugins=(faulty_plugin,))
    started = time.monotonic()
    out = {ds.attrs["label"]: ds for ds in run_local([spec, quick], workers=2, timeout_grace=1.0)}
    assert time.monotonic() - started < 30
    assert out["h"].attrs["status"] == "timeout" and "did not return" in out["h"].attrs["message"]
    assert out["s"].attrs["status"] == "ok"


def test_the_memory_guard_ends_a_runaway_run_as_failed(faulty_plugin):
    spec = RunSpec("mem", TEST_PROBLEM, "test-hog", "hog", {"gib": 16.0}, 0, Budget(iterations=4), Checkpoints(count=2),
                   plugins=(faulty_plugin,))
    quick = RunSpec("mem", TEST_PROBLEM, "test-sleeper", "s", {}, 0, Budget(iterations=4), Checkpoints(count=2),
                    plugins=(faulty_plugin,))
    out = {ds.attrs["label"]: ds for ds in run_local([spec, quick], workers=2, memory_limit=4 * 2**30)}
    assert out["hog"].attrs["status"] == "failed" and "MemoryError" in out["hog"].attrs["message"]
    assert out["s"].attrs["status"] == "ok"


STUDY_TOML = """
[study]
name = "interrupt"
seeds = [0, 1, 2, 3, 4, 5]

[budget]
iterations = 12
checkpoints = 4

[[problem]]
model = "test-slow-eval"
dataset = "test-points"
model_params = {{ sleep = 0.0 }}

[[algorithm]]
name = "test-sleeper"
params = {{ work = {work} }}
"""


def _default_sigint() -> None:
    # A shell without job control starts background commands with SIGINT ignored, and Python
    # keeps an ignored SIGINT (no KeyboardInterrupt): give the CLI Ctrl-C whatever ran the tests.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def cli(*args, **kw):
    return subprocess.Popen([sys.executable, "-m", "svibench.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint, **kw)


def test_interrupt_then_resume_runs_only_the_missing_runs_and_matches_an_uninterrupted_sweep(tmp_path, faulty_plugin):
    study = tmp_path / "study.toml"
    study.write_text(STUDY_TOML.format(work=0.1))
    out = tmp_path / "out"
    common = ["--plugin", faulty_plugin, "-o", str(out), "--workers", "2", "--no-report"]
    proc = cli("run", str(study), *common)
    deadline = time.monotonic() + 60
    while len(run_files(out)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err and "Traceback" not in err
    done = len(run_files(out))
    assert 2 <= done < 6
    assert not list((out / "runs").glob(".*.tmp"))  # nothing half-written

    proc = cli("run", str(study), *common)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert f"{6 - done} runs made, {done} already on disk" in stdout

    fresh = tmp_path / "fresh"
    proc = cli("run", str(study), "--plugin", faulty_plugin, "-o", str(fresh), "--workers", "2", "--no-report", "-q")
    assert proc.wait(timeout=120) == 0
    assert_same_trajectories(open_results(out), open_results(fresh))


def _state_and_parent(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of a process from /proc, or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[0], int(fields[1])


def _alive(pid: int) -> bool:
    info = _state_and_parent(pid)
    return info is not None and info[0] != "Z"


def _spawned_workers(pid: int) -> list[int]:
    """Live child processes of ``pid``, forked or spawned workers (not multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").glob("[0-9]*"):
        child = int(entry.name)
        try:
            tracker = b"resource_tracker" in (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if not tracker and _alive(child) and (_state_and_parent(child) or ("", 0))[1] == pid:
            found.append(child)
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process table from /proc")
def test_workers_of_a_killed_sweep_end_instead_of_finishing_their_runs(tmp_path, faulty_plugin):
    study = tmp_path / "study.toml"
    study.write_text(STUDY_TOML.format(work=0.2).replace("iterations = 12", "iterations = 300"))  # 60 s per run
    proc = cli("run", str(study), "--plugin", faulty_plugin, "-o", str(tmp_path / "out"), "--workers", "2",
               "--no-report", "-q")
    try:
        deadline = time.monotonic() + 60
        while len(workers := _spawned_workers(proc.pid)) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(workers) == 2, proc.stderr.read() if proc.poll() is not None else "workers did not start"
        time.sleep(1.0)  # into their first runs
    finally:
        proc.kill()  # also when the test fails: the sweep's runs last minutes
        proc.wait()
    deadline = time.monotonic() + 10
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(map(_alive, workers)), "a worker outlived its killed parent"


def test_a_truncated_run_file_is_detected_and_run_again_on_resume(tmp_path):
    study = parse_study(GMM_STUDY | {"algorithm": [{"name": "vmp"}]})
    folder = tmp_path / "out"
    run_study(study, folder, run_local, progress=False)
    victim = run_files(folder)[1]
    victim.write_bytes(victim.read_bytes()[:64])
    result = run_study(study, folder, run_local, progress=False)
    assert result.corrupt == [victim.name]
    assert result.executed == [victim.stem] and len(result.reused) == 2
    assert open_results(folder).sizes["run"] == 3


def test_resume_retries_failed_runs_unless_told_not_to(tmp_path, faulty_plugin):
    raw = GMM_STUDY | {"algorithm": [{"name": "test-failing"}, {"name": "vmp"}]}
    study = parse_study(raw, plugins=(faulty_plugin,))
    folder = tmp_path / "out"
    run_study(study, folder, run_local, progress=False)
    again = run_study(study, folder, run_local, progress=False, retry_failed=False)
    assert again.executed == []
    retried = run_study(study, folder, run_local, progress=False)
    assert len(retried.executed) == 3 and len(retried.reused) == 3


def test_a_changed_study_is_refused_with_what_changed_unless_forced(tmp_path):
    folder = tmp_path / "out"
    run_study(parse_study(GMM_STUDY | {"algorithm": [{"name": "vmp"}]}), folder, run_local, progress=False)
    changed = parse_study(GMM_STUDY | {"study": {"name": "exec", "seeds": [0, 1, 7]}, "algorithm": [{"name": "vmp"}]})
    with pytest.raises(SweepError, match=r"1 stored run\(s\) no longer in the study \(VMP seed 2 on gmm/gmm-synthetic\); 1 new run\(s\) \(VMP seed 7"):
        run_study(changed, folder, run_local, progress=False)
    result = run_study(changed, folder, run_local, progress=False, force=True)
    assert len(result.executed) == 1
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(v["seed"] for v in manifest["runs"].values()) == [0, 1, 7]
    # the run of the old study stays on disk but out of the results (and so of reports)
    assert len(run_files(folder)) == 4
    ds = open_results(folder)
    assert sorted(ds.seed.values) == [0, 1, 7] and ds.attrs["stale_runs"] == 1


def _gmm_study_file(tmp_path):
    """STUDY_TOML with the built-in mixture and VMP in place of the test plugin's model and algorithm."""
    study = tmp_path / "s.toml"
    study.write_text(textwrap.dedent(STUDY_TOML.format(work=0.0)).replace("test-slow-eval", "gmm").replace(
        "test-points", "gmm-synthetic").replace("model_params = { sleep = 0.0 }", "").replace("test-sleeper", "vmp").replace(
        "params = { work = 0.0 }", ""))
    return study


def test_an_unreachable_scheduler_is_a_clear_error_within_seconds(tmp_path):
    study = _gmm_study_file(tmp_path)
    started = time.monotonic()
    proc = cli("run", str(study), "--executor", "dask", "--address", "tcp://127.0.0.1:9", "-o", str(tmp_path / "o"))
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and time.monotonic() - started < 20
    assert "cannot reach a Dask scheduler at tcp://127.0.0.1:9" in err and "Traceback" not in err


def test_a_dask_sweep_is_not_the_default_dask_scheduler_so_its_run_files_are_written_without_scheduler_locks(tmp_path):
    """xarray guards each netCDF write with a lock on the default Dask scheduler when there is one: ~100 ms of round
    trips per run file (measured), and the parent's CPU in the scheduler; svibench's client must not be the default."""
    import dask

    from svibench.executors.dask import local_cluster

    assert dask.base.get_scheduler() is None
    study = parse_study(GMM_STUDY)
    seen = []
    with local_cluster(1) as cluster:
        for ds in run_dask(study.runs[:2], address=cluster.scheduler_address):
            seen.append(dask.base.get_scheduler())
        assert seen == [None, None]
        assert [ds.attrs["status"] for ds in run_dask(study.runs[:1], workers=1)] == ["ok"]  # a LocalCluster of its own


def test_a_local_clusters_workers_pay_the_first_runs_imports_as_they_start_and_monitor_themselves_less():
    """A fresh worker's first run took ~0.5 s longer than the next (registry, xarray importing dask.array,
    threadpoolctl's scan): in a sweep of short runs a cost the cluster's start must pay instead; and the
    profiler, system monitor, 20 ms health checks and 0.1 s memory checks nobody watches took CPU from the runs
    (issue 33): the nannies check their workers' memory, and the workers their own, every 0.5 s."""
    from svibench.executors.dask import _client, local_cluster

    def ready(dask_worker):
        import sys

        import dask

        from svibench.registry import get_registry

        return ("dask.array" in sys.modules and get_registry.cache_info().currsize > 0,
                "profile" in dask_worker.periodic_callbacks, dask.config.get("distributed.admin.tick.interval"),
                dask_worker.memory_manager.memory_monitor_interval)

    with local_cluster(1) as cluster, _client(cluster) as client:
        assert list(client.run(ready).values()) == [(True, False, "1s", 0.5)]
        nannies = list(cluster.workers.values())
        assert [nanny.memory_manager.memory_monitor_interval for nanny in nannies] == [0.5]
        assert all(nanny.periodic_callbacks["memory_monitor"].callback_time == 500 for nanny in nannies)


def _sleepers(faulty_plugin, n):
    return [RunSpec("chunk", TEST_PROBLEM, "test-sleeper", "s", {}, seed, Budget(iterations=3), Checkpoints(count=2),
                    plugins=(faulty_plugin,)) for seed in range(n)]


def test_dask_runs_travel_in_chunks_and_reach_the_caller_one_by_one_in_order(faulty_plugin):
    """12 runs on one worker are 5 tasks (6, 3, then single runs); each run comes back once, as its own Dataset,
    in the order of the specs (one worker makes its tasks in the order they were submitted)."""
    specs = _sleepers(faulty_plugin, 12)
    with _recorded_tasks() as tasks:
        out = list(run_dask(specs, workers=1))
    assert tasks == [([6, 3, 1, 1, 1], 0)]  # one graph, queued by the scheduler
    assert [ds.attrs["run_id"] for ds in out] == [s.run_id for s in specs]
    assert {ds.attrs["status"] for ds in out} == {"ok"}


@contextmanager
def _recorded_tasks():
    """The chunk sizes and the priority of each graph the Dask executor submits (``Client.map``)."""
    import distributed

    tasks, submit = [], distributed.Client.map

    def recording(self, fn, cut, *args, **kw):
        tasks.append(([len(chunk) for chunk in cut], kw.get("priority", 0)))
        return submit(self, fn, cut, *args, **kw)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(distributed.Client, "map", recording)
        yield tasks


def test_the_runs_a_chunk_past_its_time_leaves_come_back_cut_small_and_ahead_of_the_queue(faulty_plugin):
    """12 runs of ~0.3 s on one worker: the first chunk (6 runs) starts none after ``CHUNK_SECONDS`` (1 s) and
    returns the rest, which is cut again (:func:`chunks`) and submitted first (priority 1), so it runs before the
    last chunks, not after them (a 6-run rest left last held one worker while the other idled: issue 33)."""
    specs = [RunSpec("chunk", TEST_PROBLEM, "test-sleeper", "s", {"sleep": 0.1, "work": 0.0}, seed,
                     Budget(iterations=2), Checkpoints(count=2), plugins=(faulty_plugin,)) for seed in range(12)]
    with _recorded_tasks() as tasks:
        out = [ds.attrs["run_id"] for ds in run_dask(specs, workers=1)]
    ids = [s.run_id for s in specs]
    assert tasks[0] == ([6, 3, 1, 1, 1], 0) and len(tasks) >= 2  # the 3-run chunk too, on a slow machine
    for rest, priority in tasks[1:]:
        assert priority == 1 and rest == [len(c) for c in chunks(list(range(sum(rest))), 1)]
    assert 1 <= sum(tasks[1][0]) <= 4
    # ahead of the runs still queued: the last two singles (the scheduler hands a worker the next queued task as
    # it ends one, so the third last was already the worker's when the rest came back); left last, they would end it
    assert sorted(out) == sorted(ids) and out[-2:] == ids[-2:]


def test_a_run_that_kills_its_dask_worker_inside_a_chunk_is_recorded_alone_and_the_other_runs_finish(faulty_plugin):
    """The first chunk (six runs, the killer second) dies with its worker; its runs are then made one per task, so
    the killer alone is recorded failed and its neighbours end ok, each run once."""
    import dask

    specs = _sleepers(faulty_plugin, 12)
    specs[1] = RunSpec("chunk", TEST_PROBLEM, "test-killer", "k", {"kill_at": 2}, 0, Budget(iterations=3),
                       Checkpoints(count=2), plugins=(faulty_plugin,))
    # KilledWorker at the first death, and no task waiting on the worker besides the one it runs (Dask counts a
    # death against every task assigned to the worker, so a run queued behind the killer could be lost with it)
    quick = {"distributed.scheduler.allowed-failures": 0, "distributed.scheduler.worker-saturation": 1.0}
    with dask.config.set(quick):
        out = {ds.attrs["run_id"]: ds for ds in run_dask(specs, workers=1, retries=0)}
    assert sorted(out) == sorted(s.run_id for s in specs)
    killed = out.pop(specs[1].run_id)
    assert killed.attrs["status"] == "failed" and "dask task lost (KilledWorker" in killed.attrs["message"]
    assert {ds.attrs["status"] for ds in out.values()} == {"ok"}


def _faults_after_a_run(spec):
    """In a Dask worker: a run's task, then the minor page faults of 20 steps that allocate and free three 3 MB
    arrays (``tests/core/test_allocator.py``), and what the nanny put in MALLOC_TRIM_THRESHOLD_."""
    import os
    import resource

    import numpy as np

    from svibench.executors.dask_worker import execute_on_dask

    assert execute_on_dask(spec).attrs["status"] == "ok"

    def step():
        return sum(float(a[-1]) for a in [np.ones(400_000) for _ in range(3)])

    step()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        step()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before, os.environ.get("MALLOC_TRIM_THRESHOLD_")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's allocator")
def test_dask_workers_keep_freed_memory_as_any_run_does():
    """Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which returns freed memory at once (numpy runs
    were ~3x slower there, measured); a run's task fixes the runner's thresholds (svibench.allocator) regardless."""
    from distributed import Client

    from svibench.executors.dask import local_cluster

    spec = parse_study(GMM_STUDY).runs[0]
    with local_cluster(1) as cluster, Client(cluster) as client:
        faults, trim = client.submit(_faults_after_a_run, spec, pure=False).result()
    assert trim is not None, "Dask no longer sets the variable: this test no longer tests the override"
    assert faults < 20 * 3 * 400_000 * 8 // 4096 // 20


def test_dask_workers_pause_their_profiler_during_a_run():
    """Dask's profiler samples the task thread every 10 ms (runs ~10% slower, measured); a run pauses it."""
    from distributed import Client, LocalCluster

    from svibench.executors.dask_worker import profiler_paused

    def profiling():
        from distributed import get_worker

        return get_worker().periodic_callbacks["profile"].is_running()

    def profiling_during_a_run():
        with profiler_paused():
            return profiling()

    with profiler_paused():  # outside a worker: nothing to pause, no error
        pass
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        assert client.submit(profiling, pure=False).result() is True
        assert client.submit(profiling_during_a_run, pure=False).result() is False
        deadline = time.monotonic() + 10
        while not client.submit(profiling, pure=False).result():  # restarted after the run
            assert time.monotonic() < deadline
            time.sleep(0.1)


def test_data_that_cannot_be_loaded_stops_the_sweep_before_any_run(tmp_path, monkeypatch):
    """Data are loaded once, up front: a corrupt file or parameters the loader rejects give one clear
    error naming the problem (and the file), and no run is made."""
    data = tmp_path / "data"
    (data / "images").mkdir(parents=True)
    (data / "images" / "boat.png").write_bytes(b"not a png")
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(data))
    study = parse_study({
        "study": {"name": "corrupt", "seeds": [0, 1]},
        "budget": {"iterations": 2},
        "problem": [{"name": "boat", "model": "bpfa", "dataset": "image-patches",
                     "dataset_params": {"image": "boat", "task": "inpainting", "size": 16}}],
        "algorithm": [{"name": "mf-svi"}, {"name": "gibbs-ssvi"}],
    })
    with pytest.raises(DataError, match=r"nothing was run.*\n  boat: .*boat\.png is corrupt: SHA-256"):
        run_study(study, tmp_path / "out", run_local, progress=False)
    assert not (tmp_path / "out" / "runs").exists()
    bad = {"study": {"name": "bad", "seeds": [0]}, "budget": {"iterations": 2},
           "problem": [{"name": "tiny", "model": "gmm", "dataset": "gmm-synthetic", "dataset_params": {"n": 10}}],
           "algorithm": [{"name": "vmp"}]}
    bad_params = parse_study(bad)
    bad_params.runs[0] = replace(bad_params.runs[0], problem=replace(bad_params.runs[0].problem,
                                                                    dataset_params={"n": -5}))
    with pytest.raises(DataError, match=r"nothing was run.*\n  tiny: dataset 'gmm-synthetic' with \{'n': -5\}: \w+Error"):
        run_study(bad_params, tmp_path / "out2", run_local, progress=False)
    bad["problem"][0]["dataset_params"]["n"] = -5  # a value outside the documented range never gets that far
    with pytest.raises(StudyError, match=r"dataset 'gmm-synthetic': n = -5 is outside its declared range: int ≥ 1"):
        parse_study(bad)


def test_an_unavailable_dataset_stops_the_sweep_before_any_run_saying_where_and_what_to_do(tmp_path, capsys,
                                                                                            monkeypatch):
    """covtype's file is not in this data directory (it cannot be downloaded): the sweep stops at once with
    one message naming the problem, the file, the data directory and where to get it, and makes no run (it
    used to record every run of the problem as failed and exit 0).  The problems whose data load are not named."""
    from svibench.cli import main
    from svibench.data import data_dir

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "libsvm").symlink_to(data_dir() / "libsvm")
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path / "data"))

    study = tmp_path / "study.toml"
    study.write_text(textwrap.dedent("""
        [study]
        name = "unavailable"
        seeds = [0]
        [budget]
        iterations = 2
        [[problem]]
        name = "logreg/covtype"
        model = "logreg"
        dataset = "covtype"
        [[problem]]
        name = "logreg/australian"
        model = "logreg"
        dataset = "australian"
        [[algorithm]]
        name = "cvi"
    """))
    with pytest.raises(DataError) as info:
        run_study(load_study(study), tmp_path / "out", lambda s: run_local(s), progress=False)
    message = str(info.value)
    assert message.startswith("nothing was run")
    assert f"logreg/covtype: dataset 'covtype' is not available (data directory {data_dir()})" in message
    assert "covtype/covtype.data.gz is not in the data directory" in message and "SOURCES.md, covtype/" in message
    assert "australian" not in message
    assert not (tmp_path / "out" / "runs").exists()
    assert main(["run", str(study), "-o", str(tmp_path / "cli"), "--quiet", "--no-report"]) != 0
    assert "not available" in capsys.readouterr().err
    assert not (tmp_path / "cli" / "runs").exists()


def test_a_sweep_on_a_running_scheduler_records_the_cluster_size(tmp_path):
    """With --address the parallelism is the cluster's (2 single-threaded workers), whatever --workers says."""
    from distributed import LocalCluster

    study = _gmm_study_file(tmp_path)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        proc = cli("run", str(study), "--executor", "dask", "--address", cluster.scheduler_address, "--workers", "5",
                   "-o", str(tmp_path / "o"), "--no-report")
        out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "2 worker(s)" in out
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert manifest["parallel_workers"] == 2 and manifest["scheduler"] == cluster.scheduler_address
    assert {r["status"] for r in manifest["runs"].values()} == {"ok"}
