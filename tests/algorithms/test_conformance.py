"""The conformance suite on every built-in algorithm: the rules plugins are held to hold here too."""
from __future__ import annotations

import pytest

from svibench.peers import sklearn_gpc
from svibench.registry import get_registry
from svibench.testing import parametrize_with_checks, small_problems

REGISTRY = get_registry()
BUILTINS = sorted(name for name, entry in REGISTRY.algorithms.items() if entry.source.startswith("built-in"))
#: svibench's own peers (svibench.peers), registered through its entry points as a plugin's algorithms are.
PEERS = sorted(name for name, entry in REGISTRY.algorithms.items() if entry.source.endswith("(svibench)"))


#: Properties a built-in violates by design, with the reason (as a plugin would declare them).
KNOWN_FAILURES = {
    "ncvmp": {
        "check_improves_over_init": "undamped NC-VMP oscillates on GP classification (the ELBO jumps between "
        "-767 at init and -6513 after 10 steps on the 110-point problem; Knowles & Minka 2011 give no convergence guarantee); "
        "damping=0.5 converges, see test_damped_ncvmp_improves_on_gp_classification",
    },
    "sklearn-gpc-laplace": sklearn_gpc.KNOWN_FAILURES,  # Laplace climbs log p(f | y), not the ELBO
}


@parametrize_with_checks([name for name in BUILTINS if name not in KNOWN_FAILURES])
def test_builtin_algorithm_conforms(algorithm, check):
    check(algorithm)


@parametrize_with_checks([name for name in PEERS if name not in KNOWN_FAILURES])
def test_peer_conforms(algorithm, check):
    check(algorithm)


@pytest.mark.parametrize("name", sorted(KNOWN_FAILURES))
def test_algorithm_conforms_but_for_its_declared_failures(name):
    from svibench.testing import check_algorithm

    results = check_algorithm(name, known_failures=KNOWN_FAILURES[name])
    assert {r.check: r.status for r in results if r.check in KNOWN_FAILURES[name]} == dict.fromkeys(KNOWN_FAILURES[name], "xfail")


@pytest.mark.parametrize("model", sorted(REGISTRY.models))
def test_small_problem_of_each_model_builds_small(model):
    problems, missing = small_problems(REGISTRY)
    if model in missing:
        pytest.skip(f"{model} {missing[model]}: the conformance suite leaves it out")
    built = problems[model].build()
    assert 0 < built.n_train <= 2000, "a conformance problem must be small (the suite runs it dozens of times)"


def test_the_suite_checks_hyperparameters_before_init_as_the_runner_does(picky_plugin):
    """Algorithms no longer call check_params in init: the suite's runs call it first, so a rejected
    value is reported as check_params' error, not as whatever init does with it."""
    from svibench.testing import CheckFailed, resolve
    from svibench.testing.checks import check_params_round_trip, check_runs_on_claimed_models

    subject = resolve(picky_plugin)[0]
    with pytest.raises(CheckFailed, match=r"check_params raised ValueError: rate must be > 0, got -1\.0"):
        check_runs_on_claimed_models(subject)
    with pytest.raises(CheckFailed, match="rejects the default hyperparameters"):
        check_params_round_trip(subject)
