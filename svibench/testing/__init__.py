"""Conformance checks for algorithms, in the spirit of scikit-learn's ``check_estimator``.

Each check is a small standalone function ``check_<property>(subject)`` that
raises :class:`CheckFailed` with what is wrong (or :class:`CheckSkipped` with
why it does not apply).  The same checks run on every built-in algorithm in CI
(``tests/algorithms/test_conformance.py``) and on plugins, three ways::

    check_algorithm("damped-vmp", known_failures={"check_picklable": "holds a lock"})

    @parametrize_with_checks([DampedVMP])          # pytest, one test per check
    def test_conformance(algorithm, check):
        check(algorithm)

    $ svibench check path/to/plugin.py             # or a registry / entry-point name

Small problems
--------------
The checks run an algorithm on small synthetic problems, one per model that
declares one.  A model declares its problem as a class attribute::

    conformance_problem = {"dataset": "gmm-synthetic", "dataset_params": {"n": 300},
                           "model_params": {"components": 3}, "steps": 20}

(``steps``: the budget in which the ELBO must improve).  A model without one
is left out, and the skipped checks say so.

Modules: :mod:`.subjects` (what is checked, and on which problems),
:mod:`.trials` (short runs and state comparison), :mod:`.checks` (the checks),
:mod:`.runners` (running them from Python, pytest and the command line).
"""
from __future__ import annotations

from .checks import CHECKS
from .runners import CheckResult, ConformanceError, check_algorithm, cli_check, parametrize_with_checks, run_checks
from .subjects import CheckFailed, CheckSkipped, SmallProblem, Subject, resolve, small_problems

__all__ = [
    "SmallProblem",
    "Subject",
    "CheckResult",
    "CheckFailed",
    "CheckSkipped",
    "ConformanceError",
    "CHECKS",
    "resolve",
    "small_problems",
    "check_algorithm",
    "run_checks",
    "parametrize_with_checks",
    "cli_check",
]
