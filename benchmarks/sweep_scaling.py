"""Wall clock of a sweep on 1 and 2 workers, for the local and Dask executors (issue 33): one command,

    python benchmarks/sweep_scaling.py [--shapes short long] [--executors local dask] [--workers 1 2]

Two study shapes: ``short``, many short runs (48 runs of ~0.15 s CPU: what a sweep spends besides its
algorithms shows), and ``long``, few long runs (4 runs of ~8 s CPU).  Each sweep writes its results to a
temporary folder through :func:`svibench.sweep.run_study`, as ``svibench run`` does.  Dask's ``LocalCluster``
is started before the clock and timed apart (``start``: its wall seconds, and ``start cpu``: the CPU seconds its
worker processes spent starting, i.e. importing svibench, left out of the children's CPU).  Per sweep it prints
the wall seconds, the CPU seconds of this process (the sweep's parent: results, manifest, Dask's client, scheduler
and nannies) and of its finished children (workers), the runs' algorithm CPU (algorithm and warm-up, from the
results), the CPU per run that is not algorithm time (evaluation, starting local workers, loading, passing and
writing results), and the speedup of N workers over 1.  Wall-clock speedups need a quiet machine: the load average (``uptime``) is printed before and after.

On a shared VM the runs' own CPU time moves between sweeps (by up to 22% here, with both cores busy or
not), and the wall-clock speedup with it.  So the last column, ``at equal alg.``, is the speedup scaled by
the ratio of the runs' algorithm CPU (N workers over 1): what the sweep's machinery (start, balance,
loading, results) gives, had the runs cost the same in both sweeps.  ``--repeat R`` runs every
configuration R times, each timed and printed, then the medians.
Not an asv benchmark (asv times one process); it lives here to sit beside them.
"""
from __future__ import annotations

import argparse
import os
import resource
import tempfile
import time
import warnings
from functools import partial

import numpy as np

SHAPES = {
    "short": {"study": {"name": "short", "seeds": list(range(16))}, "budget": {"epochs": 20, "checkpoints": 10},
              "problem": [{"model": "gmm", "dataset": "gmm-synthetic", "dataset_params": {"n": 2000, "n_test": 500}}],
              "algorithm": [{"name": "svi", "params": {"batch_size": 100, "kappa": [0.6, 0.9]}}, {"name": "vmp"}]},
    "long": {"study": {"name": "long", "seeds": [0, 1]}, "budget": {"epochs": 150, "checkpoints": 20},
             "problem": [{"model": "gmm", "dataset": "gmm-synthetic", "dataset_params": {"n": 20000, "n_test": 2000}}],
             "algorithm": [{"name": "svi", "params": {"batch_size": 200, "kappa": [0.6, 0.9]}}]},
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cluster_cpu() -> float:
    """CPU seconds so far of this process's child processes still running (a LocalCluster's workers)."""
    import psutil  # comes with dask.distributed

    def cpu(process) -> float:
        times = process.cpu_times()
        return times.user + times.system

    return sum(cpu(child) for child in psutil.Process().children(recursive=True))


def _load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def sweep(shape: str, executor: str, workers: int) -> dict:
    """One sweep of ``shape`` on ``executor`` with ``workers`` workers, timed (see the module docstring)."""
    from svibench.executors import run_dask, run_local
    from svibench.results import open_results
    from svibench.study import parse_study
    from svibench.sweep import run_study

    study = parse_study(SHAPES[shape])
    cluster, start, start_cpu = None, 0.0, 0.0
    run = partial(run_local, workers=workers)
    if executor == "dask":
        from svibench.executors.dask import local_cluster

        t = time.perf_counter()
        cluster = local_cluster(workers)  # the cluster run_dask starts without an address
        start, start_cpu = time.perf_counter() - t, _cluster_cpu()
        run = partial(run_dask, address=cluster.scheduler_address)
    with tempfile.TemporaryDirectory() as out:
        cpu, children, wall = time.process_time(), _children_cpu(), time.perf_counter()
        result = run_study(study, out, run, progress=False,
                           execution={"executor": executor, "parallel_workers": workers})
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if cluster is not None:
            cluster.close()  # its workers' CPU counts once they are reaped
        children = _children_cpu() - children - start_cpu
        ds = open_results(out)
        own = float((ds["time"].max("checkpoint") + ds["warmup_seconds"]).sum())
    assert set(result.statuses.values()) == {"ok"}, result.statuses
    runs = len(study.runs)
    return {"shape": shape, "executor": executor, "workers": workers, "runs": runs, "start": start,
            "start_cpu": start_cpu, "wall": wall,
            "cpu": cpu, "children": children, "own": own, "overhead": (cpu + children - own) / runs}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--executors", nargs="+", default=["local", "dask"], choices=["local", "dask"])
    parser.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeat", type=int, default=1, help="times to run every configuration")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print(f"load average before: {_load()} ({os.cpu_count()} cores)")
    print(f"{'shape':<6} {'executor':<8} {'workers':>7} {'runs':>5} {'start s':>8} {'start cpu s':>11} {'wall s':>8} "
          f"{'cpu s':>7} {'children s':>10} {'algorithm s':>11} {'not alg./run s':>14} {'speedup':>8} {'at equal alg.':>13}")
    speedups: dict[tuple, list] = {}
    for executor in args.executors:  # local first: a Dask cluster leaves threads behind, and then local spawns
        for shape in args.shapes:
            for _ in range(args.repeat):
                first = None
                for workers in args.workers:
                    r = sweep(shape, executor, workers)
                    first = first or r
                    speedup = first["wall"] / r["wall"]
                    equal = speedup * r["own"] / first["own"]
                    speedups.setdefault((shape, executor, workers), []).append((speedup, equal))
                    print(f"{shape:<6} {executor:<8} {workers:>7} {r['runs']:>5} {r['start']:>8.2f} "
                          f"{r['start_cpu']:>11.2f} {r['wall']:>8.2f} {r['cpu']:>7.2f} {r['children']:>10.2f} "
                          f"{r['own']:>11.2f} {r['overhead']:>14.3f} {speedup:>7.2f}x {equal:>12.2f}x", flush=True)
    if args.repeat > 1:
        print(f"medians of {args.repeat} repeats (speedup, at equal alg.):")
        for (shape, executor, workers), values in speedups.items():
            if workers != args.workers[0]:
                wall, equal = np.median(values, axis=0)
                print(f"  {shape:<6} {executor:<8} {workers} workers: {wall:.2f}x, {equal:.2f}x")
    print(f"load average after: {_load()}")


if __name__ == "__main__":
    main()
