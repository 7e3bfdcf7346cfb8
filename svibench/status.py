"""The one selector of the runs that count as finished: status :data:`OK` (after :func:`svibench.health.apply`,
which turns an ``ok`` run with an unhealthy checkpoint into ``diverged``)."""
from __future__ import annotations

import numpy as np

__all__ = ["OK", "is_ok"]

#: The status of a run that finished its budget healthy.
OK = "ok"


def is_ok(status):
    """Where ``status`` (one run's, or an array or Series of them) is :data:`OK`: the one selector of the runs that
    count as finished."""
    if isinstance(status, str):
        return status == OK
    if hasattr(status, "eq"):  # a pandas Series keeps its index
        return status.eq(OK)
    return np.asarray(status) == OK
