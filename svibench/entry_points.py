"""Which installed entry points svibench reads: the groups, and the distributions allowed to supply them.

Kept apart from :mod:`svibench.registry` (which imports every algorithm and model) so that the command line can
fingerprint the installed plugins without loading them (:mod:`svibench.catalogue`).
"""
from __future__ import annotations

import os
from importlib.metadata import EntryPoint, entry_points

__all__ = ["GROUPS", "ENTRY_POINTS_VAR", "selected"]

GROUPS = ("algorithms", "models", "datasets")

#: Environment variable: the distributions whose entry points the registry loads, comma-separated (unset: every
#: installed one).  The test suite sets it to ``svibench``, so that its results never depend on which third-party
#: plugins happen to be installed.
ENTRY_POINTS_VAR = "SVIBENCH_ENTRY_POINTS"


def selected(group: str) -> list[EntryPoint]:
    """The entry points of ``group`` (e.g. ``svibench.algorithms``) from the distributions :data:`ENTRY_POINTS_VAR`
    allows."""
    allowed = os.environ.get(ENTRY_POINTS_VAR)
    names = None if allowed is None else {name.strip() for name in allowed.split(",") if name.strip()}
    return [ep for ep in entry_points(group=group) if names is None or (ep.dist is not None and ep.dist.name in names)]
