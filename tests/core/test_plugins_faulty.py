"""Faulty plugin files are caught, each with a message naming the file and the check,
and never break `svibench list` or other runs."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from svibench.registry import build_registry
from svibench.testing import cli_check

# A correct algorithm (minibatch SVI, constant step); each faulty plugin changes one thing.
GOOD = '''
import numpy as np
from svibench.algorithm import Algorithm
from svibench.capabilities import ConditionallyConjugate, ConjugatePosterior, LocalApprox, natural_step


class Base(Algorithm):  # no `name` of its own: not registered
    requires = (ConditionallyConjugate,)
    LOCAL = "mf"

    def __init__(self, *, batch_size: int = 50, rho: float = 0.5) -> None:
        self.batch_size = batch_size
        self.rho = rho

    @classmethod
    def incompatibility(cls, model_cls, params):
        return super().incompatibility(model_cls, params)

    def init(self, model, rng):
        self.model_, self.rng_ = model, rng
        self.eta_ = model.prior_natural()
        self.lam_ = model.init_globals(rng, model.init_methods[0])

    def batch(self, n):
        return np.sort(self.rng_.choice(n, size=min(self.batch_size, n), replace=False))

    def step(self):
        n = self.model_.n_train
        batch = self.batch(n)
        view = self.model_.expected_view(self.lam_)
        stats = self.model_.local_statistics(view, batch, LocalApprox(self.LOCAL), self.rng_)
        self.lam_ = natural_step(self.lam_, self.eta_, stats, self.rho, n / len(batch))
        return len(batch)

    def posterior(self):
        return ConjugatePosterior(self.lam_)


class Plugin(Base):
    name = "{name}"
'''


def _plugin(tmp_path: Path, filename: str, name: str, patch: str = "") -> Path:
    """A plugin file: the good algorithm registered as ``name``, with ``patch`` in its class body."""
    code = GOOD.format(name=name) + textwrap.indent(textwrap.dedent(patch), "    ")
    path = tmp_path / filename
    path.write_text(code)
    return path


def _check(path: Path) -> tuple[int, list[str]]:
    lines: list[str] = []
    return cli_check(str(path), out=lines.append), lines


def _failures(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith("FAIL")]


def test_good_plugin_passes_every_check(tmp_path):
    code, lines = _check(_plugin(tmp_path, "good.py", "test-good"))
    assert code == 0, "\n".join(lines)
    assert not _failures(lines)


@pytest.mark.parametrize(
    "filename, text, reason",
    [
        ("syntax_error.py", "def broken(:\n    pass\n", "SyntaxError"),
        ("missing_dependency.py", "import svibench_no_such_dependency\n", "ModuleNotFoundError"),
    ],
)
def test_plugin_that_fails_to_import_is_reported_with_file_and_reason(tmp_path, filename, text, reason):
    path = tmp_path / filename
    path.write_text(text)
    code, lines = _check(path)
    assert code == 1
    [line] = _failures(lines)
    assert "check_plugin_loads" in line and str(path) in line and reason in line


@pytest.mark.parametrize(
    "name, patch, check, words",
    [
        ("test-mutates", """
         def init(self, model, rng):
             super().init(model, rng)
             if hasattr(model, "X"):          # gmm, linreg (other conjugate models keep data elsewhere)
                 x = model.X
                 x.setflags(write=True)
                 x[:, 0] -= x[:, 0].mean()   # "centring" the data in place
         """, "check_does_not_mutate_data", "model.X"),
        ("test-writable-view", """
         def init(self, model, rng):
             super().init(model, rng)
             if hasattr(model, "X"):
                 self.x_ = model.X[:10]
                 self.x_.setflags(write=True)   # holds a writable view, writes nothing (yet)
         """, "check_does_not_mutate_data", "alg.x_ is a writable view of data.train['X']"),
        ("test-nondeterministic", """
         def batch(self, n):
             return np.sort(np.random.default_rng().choice(n, size=min(self.batch_size, n), replace=False))
         """, "check_deterministic_by_seed", "two runs with seed 0 differ"),
        ("test-private-rng", """
         def init(self, model, rng):
             super().init(model, np.random.default_rng(1234))
         """, "check_seed_matters", "makes its own generator"),
        ("test-rejects-working-model", """
         @classmethod
         def incompatibility(cls, model_cls, params):
             return super().incompatibility(model_cls, params) or (
                 "linear regression is not supported" if model_cls.name == "linreg" else None)
         """, "check_rejections_are_honest", "declares linreg incompatible"),
        ("test-warm-starts", """
         last = {}   # class level: every instance (the runner's warm-up copy too) starts from the last one's end
         def init(self, model, rng):
             super().init(model, rng)
             self.lam_ = self.last.get(model.name, self.lam_)
         def step(self):
             n = super().step()
             self.last[self.model_.name] = self.lam_
             return n
         """, "check_warm_up_does_not_perturb", "a warm-up before the run changes its trajectory"),
        ("test-claims-too-much", """
         LOCAL = "gibbs"   # but claims every conditionally conjugate model, and linreg has no Gibbs step
         """, "check_runs_on_claimed_models", "on linreg"),
    ],
    ids=lambda value: value if isinstance(value, str) and value.startswith("test-") else "",
)
def test_faulty_plugin_is_caught_naming_file_and_check(tmp_path, name, patch, check, words):
    path = _plugin(tmp_path, f"{name.replace('-', '_')}.py", name, patch)
    code, lines = _check(path)
    assert code == 1
    failing = [line for line in _failures(lines) if check in line]
    assert failing, "\n".join(lines)
    assert str(path) in failing[0] and words in failing[0], failing[0]


#: An init that writes into the model's data; the warm-up shares the model's read-only data, so it sees the same
#: mutation (twice: a changed trajectory).
MUTATES = """
     def init(self, model, rng):
         super().init(model, rng)
         if hasattr(model, "X"):
             model.X.setflags(write=True)
             model.X[0, 0] += 1.0
     """
KNOWN = {"check_does_not_mutate_data": "work in progress", "check_warm_up_does_not_perturb": "the same mutation"}


@pytest.mark.parametrize("declared", [False, True], ids=["told", "declared-by-the-class"])
def test_a_known_failure_is_reported_as_xfail_whether_told_or_declared_by_the_class(tmp_path, declared):
    """``svibench check --known-failure`` (``known_failures=``) or the class's ``known_failures``, which check applies
    by itself."""
    patch = (f"\n     known_failures = {KNOWN!r}\n" if declared else "") + MUTATES
    path = _plugin(tmp_path, "mutates.py", "test-mutates-known", patch)
    lines: list[str] = []
    code = cli_check(str(path), known_failures=None if declared else KNOWN, out=lines.append)
    assert code == 0, "\n".join(lines)
    assert any(line.startswith("XFAIL") and "work in progress" in line for line in lines)


def test_broken_plugins_do_not_break_listing_or_other_runs(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("import svibench_no_such_dependency\n")
    syntax = tmp_path / "syntax.py"
    syntax.write_text("class (:\n")
    result = subprocess.run(
        [sys.executable, "-m", "svibench.cli", "list", "--plugin", str(broken), "--plugin", str(syntax)],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert f"plugin file {broken}: ModuleNotFoundError" in result.stdout
    assert f"plugin file {syntax}: SyntaxError" in result.stdout
    assert "vmp" in result.stdout

    registry = build_registry([broken])
    assert "vmp" in registry.algorithms
    with pytest.raises(LookupError, match=f"plugin file {broken} failed to load: ModuleNotFoundError"):
        registry.algorithm("test-from-broken")


def test_svibench_check_exits_nonzero_on_a_failed_check(tmp_path):
    path = _plugin(tmp_path, "liar.py", "test-liar", 'LOCAL = "gibbs"\n')
    result = subprocess.run([sys.executable, "-m", "svibench.cli", "check", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1
    assert f"FAIL  check_runs_on_claimed_models — test-liar (plugin file {path})" in result.stdout


def test_check_needs_no_data_and_names_the_model_whose_small_problem_needs_a_file(tmp_path, monkeypatch):
    """`svibench check vmp` with an empty data directory: the models whose small problem is generated are checked,
    those whose small problem is a real data file (gpc: USPS, logreg: breast-cancer, the problems their known
    failures and the peers' tests were measured on) are skipped with the file named, never downloaded."""
    monkeypatch.setenv("SVIBENCH_DATA_DIR", str(tmp_path))
    lines: list[str] = []
    assert cli_check("vmp", out=lines.append) == 0, "\n".join(lines)
    skipped = {line.split()[4]: line for line in lines if line.startswith("SKIP  every check on")}
    assert set(skipped) == {"gpc", "logreg"}
    assert "usps/usps_all.mat" in skipped["gpc"] and str(tmp_path) in skipped["gpc"]
    assert any(line.startswith("PASS") and "check_improves_over_init" in line for line in lines)
    assert not list(tmp_path.iterdir())  # nothing fetched
