"""The clock: algorithm time is CPU time of the run's process over init and the steps only; the wall time of the same
intervals is kept beside it.  That a competing process moves the wall time and not the CPU time is a measurement,
made by asv (benchmarks/bench_clock.py), not a test: it depends on the machine's load."""
from __future__ import annotations

import itertools

import numpy as np

from svibench.clock import Clock, Stopwatch
from svibench.runner import execute
from svibench.spec import Budget, Checkpoints, ProblemSpec, RunSpec

GMM = ProblemSpec("gmm/clock", "gmm", "gmm-synthetic", {"components": 3}, {"n": 600, "n_test": 100, "components": 3})

def test_the_stopwatch_adds_up_cpu_and_wall_seconds_of_its_intervals_only():
    ticks = itertools.count()
    cpu_reads = iter([0.0, 1.0, 10.0, 12.5])
    watch = Stopwatch(Clock(cpu=lambda: next(cpu_reads), wall=lambda: 2.0 * next(ticks)))
    watch.start()
    watch.stop()
    watch.start()
    watch.stop()
    assert watch.cpu == 1.0 + 2.5  # 10.0 - 1.0 between the intervals is not counted
    assert watch.wall == 2.0 + 2.0


def test_time_is_the_cpu_clock_and_wall_time_the_wall_clock_over_init_and_steps_only():
    """Injected clocks that tick 1 (CPU) and 3 (wall) per read: every interval (init, then each of the
    30 steps) adds exactly one tick, whatever happens between them (warm-up, evaluation)."""
    cpu, wall = itertools.count(), itertools.count(step=3)
    spec = RunSpec("clock", GMM, "svi", "SVI", {"batch_size": 50}, 0, Budget(iterations=30), Checkpoints(count=8))
    ds = execute(spec, clock=Clock(cpu=lambda: float(next(cpu)), wall=lambda: float(next(wall))))
    assert ds.attrs["status"] == "ok", ds.attrs["message"]
    np.testing.assert_array_equal(ds["time"].values, ds["iteration"].values + 1)
    np.testing.assert_array_equal(ds["wall_time"].values, 3 * (ds["iteration"].values + 1))
    assert ds.attrs["warmup_seconds"] == 1.0  # its own interval, apart from the run's time


def test_every_builtin_algorithm_says_what_a_step_is():
    """docs/steps.md has a row for every registered built-in algorithm (speed claims rest on it)."""
    from pathlib import Path

    from svibench.registry import get_registry

    text = (Path(__file__).resolve().parents[2] / "docs" / "steps.md").read_text()
    rows = {line.split("|")[1].strip().split(" ")[0].strip("`") for line in text.splitlines() if line.startswith("| `")}
    builtins = {name for name, entry in get_registry().algorithms.items() if entry.source.startswith("built-in")}
    assert builtins <= rows, f"docs/steps.md lacks {sorted(builtins - rows)}"
    assert "never on steps" in text
