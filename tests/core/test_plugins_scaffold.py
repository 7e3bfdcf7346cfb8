"""`svibench new algorithm`: the scaffolded plugin passes its own generated test, unchanged."""
from __future__ import annotations

import subprocess
import sys

import pytest

from svibench.cli import main
from svibench.scaffold import ScaffoldError, new_algorithm


def test_scaffolded_plugin_passes_its_generated_test(tmp_path):
    folder = tmp_path / "svibench-my-svi"
    assert main(["new", "algorithm", "my-svi", "--dir", str(folder)]) == 0
    assert sorted(p.name for p in folder.iterdir()) == ["my_svi.py", "pyproject.toml", "test_my_svi.py"]
    assert '[project.entry-points."svibench.algorithms"]\nmy-svi = "my_svi"' in (folder / "pyproject.toml").read_text()
    result = subprocess.run([sys.executable, "-m", "pytest", str(folder), "-q", "-p", "no:cacheprovider"],
                            capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passed" in result.stdout and "failed" not in result.stdout


def test_scaffolded_module_passes_svibench_check_as_a_plugin_file(tmp_path):
    new_algorithm("my-svi", tmp_path / "pkg")
    result = subprocess.run([sys.executable, "-m", "svibench.cli", "check", str(tmp_path / "pkg" / "my_svi.py")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS  check_runs_in_runner — my-svi" in result.stdout


@pytest.mark.parametrize("name", ["MySVI", "my svi", "1svi", "svi-"])
def test_scaffold_rejects_names_that_cannot_be_registry_names(tmp_path, name):
    with pytest.raises(ScaffoldError, match="lower-case"):
        new_algorithm(name, tmp_path / "x")


def test_scaffold_never_overwrites(tmp_path):
    (tmp_path / "mine.py").write_text("# my work\n")
    with pytest.raises(ScaffoldError, match="not empty"):
        new_algorithm("my-svi", tmp_path)
    assert (tmp_path / "mine.py").read_text() == "# my work\n"
