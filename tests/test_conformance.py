"""The conformance suite on every built-in algorithm: the rules plugins are held to hold here too."""
from __future__ import annotations

import pytest

from svibench.registry import get_registry
from svibench.testing import parametrize_with_checks, small_problems

REGISTRY = get_registry()
BUILTINS = sorted(name for name, entry in REGISTRY.algorithms.items() if entry.source.startswith("built-in"))


@parametrize_with_checks(BUILTINS)
def test_builtin_algorithm_conforms(algorithm, check):
    check(algorithm)


@pytest.mark.parametrize("model", sorted(REGISTRY.models))
def test_small_problem_of_each_model_builds_small(model):
    problems, missing = small_problems(REGISTRY)
    if model in missing:
        pytest.skip(f"{model} {missing[model]}: the conformance suite leaves it out")
    built = problems[model].build(REGISTRY)
    assert 0 < built.n_train <= 2000, "a conformance problem must be small (the suite runs it dozens of times)"
