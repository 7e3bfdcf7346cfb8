"""The plan's probes kept on disk, so that a second ``regenerate --plan`` answers at once.

A probe (:func:`svibench.plan.probe`) times the first steps and checkpoints of one group of runs; it depends on
the code, the machine and the group (its algorithm point, problem, budget, time limit and plugins), not on the
seeds.  Each probe is one small JSON file in ``<cache>/plan/`` (:func:`svibench.catalogue.cache_dir`), named by a
hash of all of these: the code's :func:`~svibench.catalogue.fingerprint` (any edit, install or upgrade gives new
names), the host, its architecture and CPU count, and the group.  Files are written atomically, so probes made in
several processes at once do not collide.  Delete the folder to make every probe afresh (a probe made on a busy
machine is kept like any other).  A failed probe is never stored.  No library fits: the key is this package's own.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
from pathlib import Path
from typing import Any

from .catalogue import cache_dir, fingerprint, store_json
from .spec import RunSpec, canonical_json

__all__ = ["probe_key", "read", "write", "folder"]


def folder() -> Path:
    """Where the probes are (module docstring)."""
    return cache_dir() / "plan"


@functools.lru_cache(maxsize=1)
def _code_and_machine() -> list[str]:
    return [fingerprint(), platform.node(), platform.machine(), str(os.cpu_count())]


def probe_key(spec: RunSpec) -> str:
    """The name of ``spec``'s probe: a hash of the code, the machine and the run's group (not its seed)."""
    group = [spec.algorithm, spec.params, spec.problem.key(), spec.budget.key(), spec.timeout, list(spec.plugins)]
    return hashlib.sha256(canonical_json([*_code_and_machine(), group]).encode()).hexdigest()[:32]


def read(spec: RunSpec) -> dict[str, Any] | None:
    """The stored probe of ``spec``'s group (its fields), or None."""
    try:
        stored = json.loads((folder() / f"{probe_key(spec)}.json").read_text())
    except (OSError, ValueError):
        return None
    return stored if isinstance(stored, dict) else None


def write(spec: RunSpec, fields: dict[str, Any]) -> None:
    """Store the probe of ``spec``'s group; a cache that cannot be written is ignored."""
    store_json(folder() / f"{probe_key(spec)}.json", fields)
