"""Running the checks: on a subject (:func:`run_checks`), from Python (:func:`check_algorithm`),
as pytest parameters (:func:`parametrize_with_checks`) and from the command line (:func:`cli_check`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..registry import RegistryError
from .checks import CHECKS
from .subjects import CheckFailed, CheckSkipped, Subject, resolve, small_problems

__all__ = ["CheckResult", "ConformanceError", "run_checks", "check_algorithm", "parametrize_with_checks", "cli_check"]


@dataclass(frozen=True)
class CheckResult:
    """One check on one algorithm: ``pass``, ``fail``, ``skip``, ``xfail`` (known failure) or ``xpass``."""

    check: str
    algorithm: str
    source: str
    status: str
    message: str = ""

    def __str__(self) -> str:
        tail = f": {self.message}" if self.message else ""
        return f"{self.status.upper():<5} {self.check} — {self.algorithm} ({self.source}){tail}"


class ConformanceError(AssertionError):
    """Raised by :func:`check_algorithm` when a check fails; ``results`` has every outcome."""

    def __init__(self, results: list[CheckResult]) -> None:
        self.results = results
        failed = [str(r) for r in results if r.status == "fail"]
        super().__init__(f"{len(failed)} conformance check(s) failed:\n" + "\n".join(failed))


def run_checks(subject: Subject, known_failures: Mapping[str, str] | None = None) -> Iterator[CheckResult]:
    """Run every check on ``subject``, yielding each outcome as it is known; the checks its class declares
    (``Algorithm.known_failures``) and ``known_failures`` are expected to fail."""
    known = {**subject.entry.cls.known_failures, **(known_failures or {})}
    unknown = sorted(set(known) - {c.__name__ for c in CHECKS})
    if unknown:
        raise ValueError(f"known_failures names unknown checks {unknown}; checks: {', '.join(c.__name__ for c in CHECKS)}")
    for check in CHECKS:
        name = check.__name__
        try:
            check(subject)
        except CheckSkipped as exc:
            status, message = "skip", str(exc)
        except Exception as exc:
            text = str(exc) if isinstance(exc, CheckFailed) else f"{type(exc).__name__}: {exc}"
            status, message = ("xfail", f"{text} [known: {known[name]}]") if name in known else ("fail", text)
        else:
            status, message = ("xpass", f"listed as known failure ({known[name]}) but passes") if name in known else ("pass", "")
        yield CheckResult(name, subject.entry.name, subject.entry.source, status, message)


def check_algorithm(algorithm: Any, known_failures: Mapping[str, str] | None = None, *,
                    plugins: Iterable[str] = (), raise_on_failure: bool = True) -> list[CheckResult]:
    """Run the conformance suite on an algorithm class, registry name, entry-point name or plugin file.

    Parameters
    ----------
    algorithm : Algorithm subclass, str or AlgorithmEntry
        What to check; a plugin file checks every algorithm it defines.
    known_failures : dict of check name to reason
        Checks expected to fail; they are run and reported as ``xfail``.
    plugins : paths of plugin files the algorithm or its models need.
    raise_on_failure : bool
        Raise :class:`ConformanceError` if a check fails (otherwise just return the results).
    """
    results = [r for subject in resolve(algorithm, plugins) for r in run_checks(subject, known_failures)]
    if raise_on_failure and any(r.status == "fail" for r in results):
        raise ConformanceError(results)
    return results


class _PytestCheck:
    """A check as a pytest parameter: skips become ``pytest.skip``."""

    def __init__(self, check: Callable[[Subject], None]) -> None:
        self.check = check

    def __call__(self, subject: Subject) -> None:
        import pytest

        try:
            self.check(subject)
        except CheckSkipped as exc:
            pytest.skip(str(exc))

    def __repr__(self) -> str:
        return self.check.__name__


def parametrize_with_checks(algorithms: Iterable[Any], *, plugins: Iterable[str] = (),
                            known_failures: Mapping[str, str] | None = None):
    """A ``pytest.mark.parametrize`` over (algorithm, check) pairs; known failures (``known_failures`` and those the
    algorithm's class declares) become ``xfail``.

    Examples
    --------
    >>> @parametrize_with_checks(["svi", "vmp"])        # doctest: +SKIP
    ... def test_conformance(algorithm, check):
    ...     check(algorithm)
    """
    import pytest

    params = []
    for obj in algorithms:
        for subject in resolve(obj, plugins):
            known = {**subject.entry.cls.known_failures, **(known_failures or {})}
            for check in CHECKS:
                marks = [pytest.mark.xfail(reason=known[check.__name__], strict=False)] if check.__name__ in known else []
                params.append(pytest.param(subject, _PytestCheck(check), id=f"{subject.entry.name}-{check.__name__}", marks=marks))
    return pytest.mark.parametrize("algorithm, check", params)


def cli_check(target: str, plugins: Iterable[str] = (), known_failures: Mapping[str, str] | None = None,
              out: Callable[[str], None] = print) -> int:
    """``svibench check TARGET``: print every outcome; 0 if nothing failed, 1 otherwise."""
    try:
        subjects = resolve(target, plugins)
    except RegistryError as exc:
        out(f"FAIL  check_plugin_loads — {target}: {exc}")
        return 1
    failed = skips = 0
    for subject in subjects:
        for result in run_checks(subject, known_failures):
            out(str(result))
            failed += result.status == "fail"
            skips += result.status == "skip"
        for model, reason in small_problems(subject.registry)[1].items():
            if model in subject.registry.models and subject.entry.incompatibility(subject.registry.model(model)) is None:
                out(f"SKIP  every check on {model} — {subject.entry.name}: {reason}")
                skips += 1
    skipped = f", {skips} skipped (the reasons are above)" if skips else ""
    passed = f"all checks that ran passed ({len(subjects)} algorithm(s){skipped})"
    out(f"{failed} check(s) failed{skipped}" if failed else passed)
    return 1 if failed else 0
