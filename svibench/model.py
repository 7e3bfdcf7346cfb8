"""The model side of the contract.

A model is bound to one dataset at construction (that is its job: precompute
what inference needs).  It offers capabilities (``svibench.capabilities``) to
algorithms and evaluates whatever variational posterior an algorithm hands it.
"""
from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import Any, Callable, ClassVar, Iterator, TypeVar

import numpy as np

from .data import Dataset
from .metrics import Metric, check_declaration

__all__ = ["Model", "IncompatibleData", "evaluate_posterior", "per_checkpoint"]

F = TypeVar("F", bound=Callable[..., Any])


def per_checkpoint(method: F) -> F:
    """Compute ``method`` once per checkpoint for the same argument objects, so that a model's metrics and the
    reference scorer share what both read of one posterior (logistic regression's test predictive, say).

    Only inside :meth:`Model.checkpoint` (the runner opens one around each evaluation), where the posterior does
    not change: outside it every call computes afresh.  Arguments are matched by identity and held until the
    checkpoint ends, so an id cannot be reused for another object meanwhile."""

    @functools.wraps(method)
    def once(self: "Model", *args: Any) -> Any:
        memo = self.__dict__.get("_checkpoint_memo")
        if memo is None:
            return method(self, *args)
        key = (method.__name__, *map(id, args))
        if key not in memo:
            memo[key] = (method(self, *args), args)
        return memo[key][0]

    return once  # type: ignore[return-value]


class IncompatibleData(ValueError):
    """The dataset's kind or arrays do not fit the model."""


class Model:
    """Base class of models.

    Subclasses set ``name`` (registry key), ``data_kinds`` (dataset kinds they
    accept), ``metrics`` (every metric :meth:`evaluate` may report, with its
    meaning: ``svibench.metrics.metric_table(Metric(...), ...)``) and ``answer``
    (the objective or task metric that answers a study by default), take the
    dataset plus keyword-only hyperparameters in ``__init__``, and implement
    :meth:`evaluate` and :attr:`n_train`.  There is no default table: a model
    that declares none is refused when a study using it is loaded
    (:func:`svibench.metrics.check_declaration`).
    """

    name: ClassVar[str]
    data_kinds: ClassVar[tuple[str, ...]]
    metrics: ClassVar[dict[str, Metric]] = {}
    answer: ClassVar[str] = ""
    #: The metrics shown by default, at most three (its objective, a predictive and its task metric; empty: the
    #: first objective and ``answer``); the others stay in the results (``svibench.metrics.Metric.primary``).
    primary: ClassVar[tuple[str, ...]] = ()
    #: The posterior types :meth:`evaluate` takes (empty: not checked), so that an algorithm
    #: handing out anything else is told so in one line instead of failing inside ``evaluate``.
    posterior_types: ClassVar[tuple[type, ...]] = ()
    #: Keyword parameters that choose how algorithms approximate the model, not the model: its posterior, and so
    #: a reference posterior of it (:mod:`svibench.reference`), does not depend on them.
    approximation_params: ClassVar[tuple[str, ...]] = ()
    #: Keyword parameters that choose how a posterior is scored (which rows or patches, how many predictive draws,
    #: chunk sizes), not the model: a reference posterior does not depend on them either.
    evaluation_params: ClassVar[tuple[str, ...]] = ()
    #: Keyword parameters that count rows of the data (an evaluation subset's size; 0: every row): a plan's reduced
    #: problem scales them with the dataset's size (:mod:`svibench.reduced_problem`).
    row_params: ClassVar[tuple[str, ...]] = ()

    def __init__(self, data: Dataset) -> None:
        if data.kind not in self.data_kinds:
            raise IncompatibleData(
                f"model {self.name!r} takes datasets of kind {', '.join(self.data_kinds)}; "
                f"{data.name!r} is of kind {data.kind!r}"
            )
        self.data = data

    @contextmanager
    def checkpoint(self) -> Iterator[None]:
        """One checkpoint's evaluation: within it, :func:`per_checkpoint` methods compute once per arguments."""
        self._checkpoint_memo: dict[tuple, tuple] | None = {}
        try:
            yield
        finally:
            self._checkpoint_memo = None

    @classmethod
    def data_refusal(cls, data: Dataset, params: dict[str, Any]) -> str:
        """Why model parameters ``params`` cannot run on ``data`` (empty: they can), in one line that names the
        parameter and what it may be; the sweep asks before any run (:func:`svibench.sweep.check_data`), so that a
        setting only the loaded data can refuse (an evaluation subset larger than the data) stops nothing midway.
        Default: nothing refused."""
        return ""

    @property
    def n_train(self) -> int:
        """Number of training data points (the ``N`` of the epoch count)."""
        raise NotImplementedError

    @classmethod
    def memory_bytes(cls, data: Dataset, params: dict[str, Any], algorithm: dict[str, Any]) -> int | None:
        """An upper estimate of the peak bytes of one run of this model, with model parameters ``params``,
        on ``data`` (already loaded) under an algorithm with hyperparameters ``algorithm`` (all of them,
        defaults included); None (the default): no estimate, the run is not checked.  The sweep refuses a
        run whose estimate exceeds the memory one run may use, before any run (:mod:`svibench.memory`)."""
        return None

    def metric_info(self) -> dict[str, Metric]:
        """What each metric means on this model bound to its data: the class's ``metrics``.

        A model whose metric is a fair ranking key on some data and not on other
        data overrides this (same names, e.g. BPFA's ``psnr_fit`` on noisy pixels);
        the runner saves its result with every run.
        """
        return check_declaration(type(self))

    def evaluate(self, posterior: Any, rng: np.random.Generator) -> dict[str, float]:
        """Metrics of a variational posterior.

        What ``posterior`` is, each capability module says: a
        :class:`~svibench.capabilities.conjugate.ConjugatePosterior` (conditionally
        conjugate), a :class:`~svibench.capabilities.latent_gaussian.GaussianPosterior`
        (latent Gaussian), the :data:`~svibench.capabilities.mean_field.Blocks`
        (mean-field), what the model's own family hands out (log joint), or the
        model's chain state (``algorithms.gibbs``).

        Returns only metrics that apply to this posterior; the runner records
        NaN for the others.  A returned value that is NaN or inf marks the run
        as diverged.  ``rng`` serves Monte-Carlo metrics; it is not the
        algorithm's generator, so evaluation never perturbs a trajectory.
        """
        raise NotImplementedError

    def evaluate_final(self, posterior: Any, rng: np.random.Generator) -> dict[str, float]:
        """Metrics computed once, at a run's last checkpoint, added to that checkpoint's row: those a model's
        ``evaluate`` estimates on an evaluation subset at every checkpoint and measures on the whole data only at
        the end, because the whole data costs more than the run (BPFA's ``eval_patches = "windows"``).  Each is
        declared with ``tracked_by`` naming its per-checkpoint estimate.  Default: none."""
        return {}

    def final_evaluation_ratio(self) -> float:
        """What :meth:`evaluate_final` costs in units of one checkpoint's :meth:`evaluate` (0: nothing), for the plan
        (:mod:`svibench.plan`), which times a checkpoint and not the whole data.  Default 0."""
        return 0.0


def evaluate_posterior(model: Model, posterior: Any, rng: np.random.Generator) -> dict[str, float]:
    """``model.evaluate(posterior, rng)``, after checking that ``model`` takes a posterior of that type
    (:attr:`Model.posterior_types`): a TypeError that says what it takes, instead of a failure inside
    ``evaluate``.  The runner and the conformance suite evaluate through it."""
    types = type(model).posterior_types
    if types and not isinstance(posterior, types):
        takes = " or ".join(f"{t.__module__}.{t.__qualname__}" for t in types)
        raise TypeError(f"model {model.name!r} evaluates a {takes}; the algorithm's posterior() returned a "
                        f"{type(posterior).__name__}")
    return model.evaluate(posterior, rng)
