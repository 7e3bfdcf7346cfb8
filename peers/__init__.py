"""Peers: other libraries' inference, behind svibench's interface, scored by svibench's own metrics.

Each module adapts one library's method (NumPyro's SVI, scikit-learn's online LDA, Bayesian
Gaussian mixture and Laplace GP classifier) as an :class:`~svibench.algorithm.Algorithm`,
registered through the ``svibench.algorithms`` entry points of svibench's own distribution, so it
is found exactly as a third party's plugin is.  The libraries come with the extra
``pip install 'svibench[peers]'`` and are never required: a module imports its library only
inside ``init``, and while the library is missing, :class:`Peer` makes every pair skip with the
install command instead of failing.
"""
from __future__ import annotations

import importlib.util
from typing import Any, ClassVar

from ..algorithm import Algorithm

__all__ = ["Peer", "INSTALL", "missing_libraries"]

#: What a user runs to get every peer's library.
INSTALL = "pip install 'svibench[peers]'"


def missing_libraries(modules: tuple[str, ...]) -> list[str]:
    """The importable names among ``modules`` that this environment lacks."""
    return [m for m in modules if importlib.util.find_spec(m) is None]


class Peer(Algorithm):
    """An algorithm of another library.  ``libraries`` are the modules it imports (checked before
    anything else, so a missing one is a skip with :data:`INSTALL`, never an ImportError).  A peer
    that fits one model only names its class in ``model`` and what the library fits in ``fits``
    (e.g. "scikit-learn's LatentDirichletAllocation fits LDA only"): any other model is a skip that
    says so."""

    libraries: ClassVar[tuple[str, ...]] = ()
    model: ClassVar[type | None] = None
    fits: ClassVar[str] = ""

    @classmethod
    def incompatibility(cls, model_cls: type, params: dict[str, Any]) -> str | None:
        lacking = missing_libraries(cls.libraries)
        if lacking:
            return f"needs {', '.join(lacking)}: {INSTALL}"
        if cls.model is not None and not (isinstance(model_cls, type) and issubclass(model_cls, cls.model)):
            return f"{cls.fits}, not {getattr(model_cls, 'name', model_cls)}"
        return super().incompatibility(model_cls, params)
