"""The algorithm side of the contract.

An algorithm is built from keyword hyperparameters (the constructor only
stores them), initialised on a model with a ``numpy.random.Generator``,
advanced one iteration at a time, and asked for its current posterior.  The
runner owns the loop, the budget, the clock and evaluation.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .capabilities import missing
from .errors import Diverged, IncompatibleModel

__all__ = ["Algorithm", "Preset", "Diverged", "IncompatibleModel", "resolve_init_method"]


@dataclass(frozen=True)
class Preset:
    """A named configuration of an algorithm class (e.g. Gibbs-SSVI = SVI with
    Gibbs locals and sampled globals): registry name → report label + fixed
    hyperparameters."""

    label: str
    params: dict[str, Any] = field(default_factory=dict)


class Algorithm:
    """Base class of inference algorithms.

    Subclasses set ``name`` and ``label``, list required capability protocols
    in ``requires``, store keyword-only hyperparameters in ``__init__`` and
    implement :meth:`init`, :meth:`step` and :meth:`posterior`.  ``presets``
    registers further names for fixed hyperparameter settings.
    """

    name: ClassVar[str]
    label: ClassVar[str] = ""
    requires: ClassVar[tuple[type, ...]] = ()
    presets: ClassVar[dict[str, Preset]] = {}
    #: Conformance checks (:mod:`svibench.testing`) this algorithm fails by design, each with the reason:
    #: ``svibench check`` and ``check_algorithm`` report them as expected failures without being told.
    known_failures: ClassVar[dict[str, str]] = {}

    # -- hyperparameters (read from the constructor's signature, as scikit-learn does)
    @classmethod
    def param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values() if p.name != "self" and p.kind == p.KEYWORD_ONLY]

    def get_params(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    # -- compatibility
    @classmethod
    def incompatibility(cls, model_cls: type, params: dict[str, Any]) -> str | None:
        """Why this algorithm (with ``params``) cannot run on ``model_cls``, or None.

        The default checks the required capability protocols; subclasses may
        add checks that depend on hyperparameters (and call ``super()``).
        """
        for protocol in cls.requires:
            lacking = missing(protocol, model_cls)
            if lacking:
                return f"{model_cls.name} does not offer {protocol.__name__} (lacks {', '.join(lacking)})"
        return None

    def check_model(self, model: Any) -> None:
        """Raise :class:`IncompatibleModel`, in one line, when ``model`` lacks what :meth:`incompatibility` asks for
        (called by :meth:`init` of algorithms whose model may have no augmentation; a sweep skips such pairs first)."""
        reason = type(self).incompatibility(type(model), self.get_params())
        if reason:
            raise IncompatibleModel(f"{self.label or type(self).__name__} cannot run on {model.name}: {reason}")

    def check_params(self) -> None:
        """Validate hyperparameters before any work (raise ValueError with the fix).

        Called when a study is loaded, so a bad value stops the sweep before it starts,
        and by the runner before :meth:`init` (which need not call it).
        """

    # -- the iteration
    def init(self, model: Any, rng: np.random.Generator) -> None:
        """Set up state on ``model``; all randomness, now and in :meth:`step`, from ``rng``."""
        raise NotImplementedError

    def step(self) -> int:
        """One iteration.  Returns the number of data points it touched (for epochs)."""
        raise NotImplementedError

    #: Whether :meth:`advance` runs several steps faster than as many :meth:`step` calls (a fused,
    #: compiled loop); only then does the runner hand it more than one step at a time.
    fused: ClassVar[bool] = False

    def advance(self, n: int) -> int:
        """``n`` iterations at once, exactly as ``n`` calls of :meth:`step` (same draws, same state);
        returns the data points they touched.  The runner calls it between checkpoints when
        :attr:`fused` is set; an override fuses the loop (e.g. ``lax.fori_loop``, numba)."""
        return sum(self.step() for _ in range(n))

    def posterior(self) -> Any:
        """The current variational posterior, in the form the model's ``evaluate`` takes (the type
        the capability module of ``requires`` names, e.g. ``ConjugatePosterior``; see ``Model.evaluate``)."""
        raise NotImplementedError


def resolve_init_method(model: Any, init_method: str) -> str:
    """The model's initialisation method an algorithm's ``init_method`` names: ``"default"`` is the
    first of the model's ``init_methods``; a name it does not offer raises ValueError."""
    method = model.init_methods[0] if init_method == "default" else init_method
    if method not in model.init_methods:
        raise ValueError(f"{model.name} has init methods {', '.join(model.init_methods)}, not {init_method!r}")
    return method
