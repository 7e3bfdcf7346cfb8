"""``svibench new algorithm NAME``: a plugin package that passes the conformance suite as written.

The package holds one module (the algorithm, with the contract spelled out in
comments), a test that runs :mod:`svibench.testing` on it, and a
``pyproject.toml`` declaring the ``svibench.algorithms`` entry point, so that
``pip install -e DIR`` makes the algorithm appear in ``svibench list``.  The
algorithm it starts from is minibatch SVI with a constant step size on
conditionally conjugate models: replace its update with yours.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from string import Template

from .errors import UserError

__all__ = ["ScaffoldError", "Scaffold", "new_algorithm"]

NAME_PATTERN = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


class ScaffoldError(UserError, ValueError):
    """A name that cannot be (or already is) a registry name, or a folder that is not empty."""


@dataclass(frozen=True)
class Scaffold:
    """Names derived from the registry name, e.g. ``damped-vmp`` → module ``damped_vmp``, class ``DampedVmp``."""

    name: str

    @property
    def module(self) -> str:
        return self.name.replace("-", "_")

    @property
    def cls(self) -> str:
        return "".join(part.capitalize() for part in re.split(r"[-_]", self.name))

    @property
    def package(self) -> str:
        return f"svibench-{self.name.replace('_', '-')}"

    def files(self) -> dict[str, str]:
        fill = {"name": self.name, "module": self.module, "cls": self.cls, "package": self.package}
        return {
            f"{self.module}.py": Template(MODULE).substitute(fill),
            f"test_{self.module}.py": Template(TEST).substitute(fill),
            "pyproject.toml": Template(PYPROJECT).substitute(fill),
        }


def new_algorithm(name: str, directory: str | Path | None = None) -> list[Path]:
    """Write the plugin package for algorithm ``name`` into ``directory`` (default ``./svibench-NAME``).

    Returns the paths written.  Refuses a folder that already holds files, and
    a name the registry already has (a built-in or an installed plugin): the
    plugin would fail to load as "registered twice".
    """
    from .registry import get_registry

    if not NAME_PATTERN.match(name):
        raise ScaffoldError(f"algorithm name {name!r} must be lower-case letters and digits, words joined by - or _ "
                            "(it becomes the registry name and, with _ for -, the module name)")
    taken = get_registry().algorithms.get(name)
    if taken is not None:
        raise ScaffoldError(f"algorithm name {name!r} is taken by {taken.source}; choose another name "
                            f"(e.g. my-{name})")
    scaffold = Scaffold(name)
    folder = Path(directory) if directory is not None else Path(scaffold.package)
    if folder.exists() and any(folder.iterdir()):
        raise ScaffoldError(f"{folder} is not empty; choose another --dir")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, text in scaffold.files().items():
        path = folder / filename
        path.write_text(text)
        written.append(path)
    return written


MODULE = '''\
"""${name}: an svibench algorithm plugin.

Replace this line with what the algorithm does and the paper it comes from.

Started from ``svibench new algorithm ${name}``: minibatch SVI with a constant
step size, λ ← (1 − ρ)λ + ρ(η + N/|B| Σ_{i∈B} η̂ᵢ) (Hoffman et al. 2013, eq. 37).
Check it with ``svibench check ${name}`` (once installed) or ``pytest``.

References
----------
Hoffman, Blei, Wang & Paisley (2013), "Stochastic Variational Inference", JMLR.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from svibench.algorithm import Algorithm
from svibench.capabilities import ConditionallyConjugate, LocalApprox, natural_step
from svibench.capabilities.conjugate import ConjugatePosterior
from svibench.numerics.minibatch import sample_minibatch

__all__ = ["${cls}"]


class ${cls}(Algorithm):
    """Minibatch SVI with a constant step size (replace with your algorithm).

    Parameters
    ----------
    batch_size : int
        |B|, capped at N.
    rho : float
        Constant step size ρ ∈ (0, 1].
    """

    # Registry name (unique across svibench and every installed plugin: a clash
    # is an error naming both sources) and the label reports use.
    name = "${name}"
    label = "${name}"
    # Capability protocols a model must offer (svibench/capabilities/).  The
    # registry skips, with the reason, every model lacking one.
    requires = (ConditionallyConjugate,)

    # Contract: keyword-only hyperparameters, each with a default, stored
    # unchanged under its own name.  Nothing else happens here: no validation,
    # no arrays, no random numbers (scikit-learn's rule).  get_params() and the
    # study files read the names from this signature.
    def __init__(self, *, batch_size: int = 100, rho: float = 0.5) -> None:
        self.batch_size = batch_size
        self.rho = rho

    # Contract: why this algorithm cannot run on ``model_cls`` (a string) or
    # None.  Keep it honest: the conformance suite runs the algorithm on a model
    # it claims (which must work) and on one it rejects (which must not).
    @classmethod
    def incompatibility(cls, model_cls: type, params: dict[str, Any]) -> str | None:
        reason = super().incompatibility(model_cls, params)
        if reason is None and "mf" not in getattr(model_cls, "local_kinds", ()):
            reason = f"{model_cls.name} offers no mean-field local step"
        return reason

    # Contract: validate hyperparameters eagerly (a study calls this when it is
    # loaded, the runner before init); raise ValueError saying what to change.
    def check_params(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be ≥ 1, got {self.batch_size}")
        if not 0.0 < self.rho <= 1.0:
            raise ValueError(f"rho must be in (0, 1], got {self.rho}")

    # Contract: set up state on the model.  Every random number, here and in
    # step(), comes from ``rng`` (same seed → same trajectory).  State lives in
    # attributes ending in '_'.  Never write to the model's or the data's arrays.
    def init(self, model: Any, rng: np.random.Generator) -> None:
        self.model_, self.rng_ = model, rng
        self.approx_ = LocalApprox("mf")
        self.eta_ = model.prior_natural()
        self.lam_ = model.init_globals(rng, model.init_methods[0])

    # Contract: one iteration; return how many data points it touched (the
    # runner counts epochs with it).  The runner times this call only, so do
    # all the work here.  Raise svibench.algorithm.Diverged on invalid state.
    def step(self) -> int:
        model, rng = self.model_, self.rng_
        n = model.n_train
        batch = sample_minibatch(rng, n, self.batch_size)
        stats = model.local_statistics(model.expected_view(self.lam_), batch, self.approx_, rng)
        self.lam_ = natural_step(self.lam_, self.eta_, stats, self.rho, n / len(batch))
        return len(batch)

    # Contract: the current variational posterior, in the form the model's
    # evaluate() takes (for conjugate models: λ with the local approximation
    # used, as the built-in SVI family hands it); cheap and without side
    # effects (evaluation happens with the clock stopped, between steps).
    def posterior(self) -> ConjugatePosterior:
        return ConjugatePosterior(self.lam_, self.approx_, "expected")
'''

TEST = '''\
"""Conformance of ${name}: the checks svibench runs on its own algorithms."""
from svibench.testing import parametrize_with_checks

from ${module} import ${cls}

# A check you knowingly fail, as {check_name: reason}: it is then reported as xfail.
KNOWN_FAILURES: dict[str, str] = {}


@parametrize_with_checks([${cls}], known_failures=KNOWN_FAILURES)
def test_conformance(algorithm, check):
    check(algorithm)
'''

PYPROJECT = '''\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "${package}"
version = "0.1.0"
description = "${name}: an svibench algorithm plugin"
requires-python = ">=3.11"
dependencies = ["svibench"]

# This is what makes `svibench list` find the algorithm once the package is installed.
[project.entry-points."svibench.algorithms"]
${name} = "${module}"

[tool.setuptools]
py-modules = ["${module}"]

[tool.pytest.ini_options]
addopts = "--import-mode=importlib"
pythonpath = ["."]
'''
