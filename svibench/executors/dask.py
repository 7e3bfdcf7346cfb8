"""The Dask executor: an existing scheduler (``address``) or a ``LocalCluster`` of
single-threaded worker processes.  This module is the client's side; what runs in the
workers is :mod:`svibench.executors.dask_worker`.

Runs travel in chunks, each a task (``pure=False``, ``retries`` on lost workers): a
chunk makes its runs one after the other and returns them together, which costs the
scheduler, the client and the worker one task instead of one per run (:func:`chunks`:
large chunks first, single runs last, so the workers end together; a chunk starts no
run after ``dask_worker.CHUNK_SECONDS``, so finished runs reach disk within about that delay).
The chunks go as one graph, which the scheduler queues and hands to each worker as it frees a slot; the runs a chunk
did not start come back cut again and ahead of that queue (priority 1).  Submitted one by one, the first chunks
were placed on workers before the queue applied, and a late chunk of unstarted runs went last: with 2 chunks per
slot, one worker then idled up to 1.5 s at the end of a 4 s sweep while the other made it (issue 33; now
0.02–0.06 s).
Progress within a run travels as Dask events (``Worker.log_event`` → ``Client.subscribe_topic``).
"""
from __future__ import annotations

import itertools
import uuid
from dataclasses import fields
from typing import Iterator, Sequence

import xarray as xr

from ..progress import RunEvent
from ..spec import RunSpec
from . import dask_worker
from .base import ExecutorError, OnProgress, finished, ignore, lost_run, pinned_threads

__all__ = ["run_dask", "dask_slots", "local_cluster", "chunks", "require_distributed"]

#: Chunks per worker thread the runs are first cut into; the larger, the more tasks and the better balanced.  Each
#: task costs the client and the scheduler several ms of CPU, which on a machine with a core per worker the workers
#: lose: 2 instead of 4 took ~0.08 s off the parent's 0.35 s (medians of 12 sweeps) in a sweep of 48 runs of
#: ~0.15 s on 2 workers (issue 33).
CHUNKS_PER_SLOT = 2


def chunks(specs: Sequence[RunSpec], slots: int) -> list[list[RunSpec]]:
    """``specs`` cut in order into chunks of decreasing size (guided scheduling): each holds a
    ``CHUNKS_PER_SLOT × slots``-th of the runs not yet cut, at least one, so the last chunks are single runs and
    the workers end together; e.g. 48 runs on 2 slots give 14 chunks, 12, 9, 6, 5, 4, 3, 2 and 7 × 1."""
    out, rest = [], list(specs)
    while rest:
        size = max(1, len(rest) // (CHUNKS_PER_SLOT * max(1, slots)))
        out.append(rest[:size])
        rest = rest[size:]
    return out


def _run_event(message: dict) -> RunEvent:
    """The :class:`RunEvent` a worker logged (the scheduler adds keys of its own, e.g. ``worker``)."""
    return RunEvent(**{f.name: message[f.name] for f in fields(RunEvent)})


def require_distributed():
    """The ``distributed`` package, or a clear error saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ExecutorError("the dask executor needs dask.distributed: pip install 'svibench[dask]'") from None
    return distributed


def _client(address, **kw):
    """A Dask client of ``address`` (a scheduler's or a cluster) that is not the process's default scheduler.

    As the default, it would make xarray guard every netCDF write of this process with a lock held on the
    scheduler: writing a run's file cost the sweep ~100 ms of round trips (and the scheduler's CPU), most of
    what a Dask sweep of short runs spent besides its runs (issue 33).  svibench submits its runs itself.
    """
    return require_distributed().Client(address, set_as_default=False, **kw)


def _connect(address: str, connect_timeout: float):
    try:
        return _client(address, timeout=f"{connect_timeout}s")
    except (OSError, TimeoutError) as exc:
        raise ExecutorError(f"cannot reach a Dask scheduler at {address} within {connect_timeout:g} s ({exc}); "
                            "start one with `dask scheduler` or run without --address for a local cluster") from None


def dask_slots(address: str, connect_timeout: float = 5.0) -> int:
    """How many runs the Dask cluster at ``address`` executes at once (its workers' threads).

    Raises :class:`ExecutorError` if the scheduler cannot be reached, so a sweep
    fails before any work when the address is wrong.
    """
    with _connect(address, connect_timeout) as client:
        return _slots(client)


def _slots(client) -> int:
    return sum(w["nthreads"] for w in client.scheduler_info()["workers"].values())


#: Dask settings of the processes of :func:`local_cluster`, whose monitoring nobody watches (it has no dashboard):
#: no statistical profiler (see ``dask_worker.profiler_paused``), the system monitor every 10 s instead of 0.5 s,
#: the event loop's health check every second instead of 20 ms.  Together they cost each process ~15 ms of CPU a
#: second (measured on an idle cluster: parent 27 → 10 ms/s, worker 27 → 10 ms/s), CPU the runs' workers lose on
#: a machine with as many cores as workers.  Each worker's memory is checked against ``memory_limit`` every 0.5 s
#: instead of 0.1 s: the nannies, in this process, read their workers' memory ~0.6 ms a time, 12 ms/s for 2
#: workers (idle parent 19–20 → 9–11 ms/s; issue 33); a run growing by 1 GB/s can pass the limit by 0.5 GB
#: before its worker is restarted.
QUIET_CLUSTER = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.interval": "10s",
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "500ms",
}


def local_cluster(workers: int, memory_limit: int | None = None):
    """A Dask ``LocalCluster`` of ``workers`` single-threaded processes (BLAS pinned to one thread, no dashboard,
    ``memory_limit`` bytes each or Dask's default) whose workers import :mod:`~svibench.executors.dask_worker` as
    they start (a preload) and run its ``dask_setup``, so that svibench's imports are part of the cluster's start
    and not of its first runs; its processes monitor themselves less (:data:`QUIET_CLUSTER`)."""
    distributed = require_distributed()
    import dask

    with pinned_threads(1), dask.config.set(QUIET_CLUSTER):
        return distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                        dashboard_address=None, memory_limit=memory_limit or "auto",
                                        preload=[dask_worker.__name__])


def _completed_runs(client, specs: Sequence[RunSpec], name: str, retries: int,
                    on_progress: OnProgress) -> Iterator[xr.Dataset]:
    """Submit ``specs`` in :func:`chunks` and yield each run as its chunk returns; a chunk's unstarted runs go in
    new chunks ahead of those queued, and the runs of a chunk lost after its retries each go in a chunk of their own
    (which of them killed the worker is unknown), so only a run lost alone is recorded ``failed``."""
    distributed, count = require_distributed(), itertools.count()
    pending, chunk_of = distributed.as_completed(loop=client.loop), {}

    def submit(cut: list[list[RunSpec]], priority: int = 0) -> None:
        keys = [f"{name}-runs-{chunk[0].run_id}-{next(count)}" for chunk in cut]
        futures = client.map(dask_worker.execute_chunk, cut, [f"{name}-progress"] * len(cut), key=keys, pure=False,
                             retries=retries, priority=priority)
        for future, chunk in zip(futures, cut):
            chunk_of[future] = chunk
            pending.add(future)

    slots = _slots(client)
    submit(chunks(specs, slots))
    for future in pending:
        chunk = chunk_of.pop(future)
        try:
            done, rest = future.result()
        except Exception as exc:  # KilledWorker and friends: the runs, not the sweep, are lost
            if len(chunk) > 1:
                submit([[spec] for spec in chunk])
                continue
            reason = f"dask task lost ({type(exc).__name__}: {exc}) after {retries} retries"
            done, rest = [lost_run(chunk[0], reason)], []
        if rest:
            submit(chunks(rest, slots), priority=1)
        for ds in done:
            yield finished(ds, on_progress)


def run_dask(
    specs: Sequence[RunSpec],
    *,
    address: str | None = None,
    workers: int = 2,
    retries: int = 1,
    memory_limit: int | None = None,
    connect_timeout: float = 5.0,
    on_progress: OnProgress | None = None,
) -> Iterator[xr.Dataset]:
    """Run ``specs`` as Dask tasks (in chunks, see the module), yielding each run's Dataset as it completes.

    Parameters
    ----------
    address : str, optional
        A running scheduler, e.g. ``tcp://127.0.0.1:8786``.  Without one, a
        ``LocalCluster`` of ``workers`` single-threaded processes is started
        (and closed at the end), never more than there are runs (:func:`local_cluster`).
    retries : int
        Dask retries of a chunk whose worker was lost; after that its runs are
        made again one per task, and a run lost alone is recorded ``failed``
        with the reason.
    memory_limit : int, optional
        Bytes per worker of the ``LocalCluster`` (Dask's nanny restarts a worker
        over it; its run is then retried, then recorded ``failed``).  A running
        cluster's workers have their own limit, so with ``address`` it must be None.
    on_progress : callable, optional
        Called with a :class:`~svibench.progress.RunEvent` within each run and
        at its end (from the client's event thread for the former).
    """
    on_progress = on_progress or ignore
    cluster = None
    if address:
        if memory_limit:
            raise ExecutorError("memory_limit applies to the LocalCluster svibench starts; set it on the workers of "
                                f"the cluster at {address} (`dask worker --memory-limit ...`)")
        client = _connect(address, connect_timeout)
    else:
        cluster = local_cluster(max(1, min(workers, len(specs))), memory_limit)
        client = _client(cluster)
    name = f"svibench-{uuid.uuid4().hex[:8]}"  # of this sweep's tasks and progress events
    topic = f"{name}-progress"
    client.subscribe_topic(topic, lambda event: on_progress(_run_event(event[1])))
    try:
        yield from _completed_runs(client, specs, name, retries, on_progress)
    finally:
        client.unsubscribe_topic(topic)
        client.close()
        if cluster is not None:
            cluster.close()
