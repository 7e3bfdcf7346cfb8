"""The command line starts at once: building its parser (``svibench --help``, ``svibench check --help``) imports none
of the heavy libraries a command imports when it runs.  The CPU seconds are asv's (benchmarks/bench_cli.py)."""
import subprocess
import sys

import pytest

from svibench.cli import main

HEAVY = ("xarray", "numba", "scipy.stats", "matplotlib", "pandas", "svibench.registry", "svibench.study")
CODE = f"""import sys
from svibench.cli import build_parser
build_parser()
print(",".join(m for m in {HEAVY!r} if m in sys.modules))
"""


def test_building_the_parser_imports_no_heavy_library():
    out = subprocess.run([sys.executable, "-c", CODE], check=True, capture_output=True, text=True).stdout.strip()
    assert out == "", f"imported at start: {out}"


def test_an_error_of_any_module_is_still_one_line_and_exit_2(tmp_path, capsys):
    """The command line catches svibench.errors.UserError, which every module's own error subclasses."""
    assert main(["run", str(tmp_path / "missing.toml")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("svibench: error: ")


@pytest.mark.parametrize("name", ["StudyError", "RegistryError", "DataError", "ResultsError", "SweepError",
                                  "ExecutorError", "MemoryBudgetError", "ReferenceError", "ScaffoldError"])
def test_every_users_error_is_a_user_error(name):
    import svibench.data, svibench.executors, svibench.memory, svibench.reference.artifact, svibench.registry
    import svibench.results, svibench.scaffold, svibench.study, svibench.sweep
    from svibench.errors import UserError

    modules = (svibench.data, svibench.executors, svibench.memory, svibench.reference.artifact, svibench.registry,
               svibench.results, svibench.scaffold, svibench.study, svibench.sweep)
    cls = next(getattr(m, name) for m in modules if hasattr(m, name))
    assert issubclass(cls, UserError)
