"""How the Dask executor cuts a sweep into chunks of runs, and how a chunk stops taking runs (issue 33)."""
from __future__ import annotations

from svibench.executors.dask import chunks
from svibench.executors.dask_worker import execute_chunk
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec


def test_runs_are_cut_in_order_into_chunks_of_decreasing_size_ending_with_single_runs():
    runs = list(range(48))
    cut = chunks(runs, slots=2)
    assert [len(c) for c in cut] == [12, 9, 6, 5, 4, 3, 2] + [1] * 7  # 14 tasks instead of 48
    assert [r for c in cut for r in c] == runs
    assert [len(c) for c in chunks(list(range(4)), slots=2)] == [1, 1, 1, 1]  # few runs: one task each, as before
    assert [len(c) for c in chunks(list(range(12)), slots=1)] == [6, 3, 1, 1, 1]
    assert chunks(list(range(5)), slots=0) == chunks(list(range(5)), slots=1)  # a cluster whose workers are not up


def _specs(faulty_plugin, n):
    problem = ProblemSpec("t", "test-slow-eval", "test-points", {"sleep": 0.0}, {})
    return [RunSpec("chunk", problem, "test-sleeper", "s", {}, seed, Budget(iterations=3), Checkpoints(count=2),
                    plugins=(faulty_plugin,)) for seed in range(n)]


def test_a_chunk_makes_its_runs_in_order_and_starts_none_past_its_time(faulty_plugin):
    specs = _specs(faulty_plugin, 3)
    done, rest = execute_chunk(specs, seconds=3600.0)  # time enough for all, however loaded the machine
    assert [ds.attrs["run_id"] for ds in done] == [s.run_id for s in specs] and rest == []
    assert {ds.attrs["status"] for ds in done} == {"ok"}
    done, rest = execute_chunk(specs, seconds=0.0)  # past its time at once: the first run only, the rest back
    assert [ds.attrs["run_id"] for ds in done] == [specs[0].run_id] and rest == specs[1:]
