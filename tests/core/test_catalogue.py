"""`svibench list` and `describe NAME` answer from a cache of their texts that any change to what they are built
from invalidates (svibench.catalogue); the CPU seconds are asv's (benchmarks/bench_cli.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from svibench import catalogue
from svibench.cli import main

CODE = """import sys
from svibench.cli import main
main(sys.argv[1:])
print("svibench.registry" in sys.modules, file=sys.stderr)
"""


def _command(args, cache):
    env = {**os.environ, catalogue.CACHE_VAR: str(cache)}
    done = subprocess.run([sys.executable, "-c", CODE, *args], env=env, check=True, capture_output=True, text=True)
    return done.stdout, done.stderr.strip().splitlines()[-1] == "True"


@pytest.mark.parametrize("args", [["list"], ["describe", "vmp"], ["describe", "bpfa"]])
def test_a_second_call_prints_the_same_without_building_the_registry(tmp_path, args):
    first, built_first = _command(args, tmp_path)
    second, built_second = _command(args, tmp_path)
    assert second == first and built_first and not built_second


def test_a_datasets_description_is_built_each_time(tmp_path):
    """It says which of its files the data directory holds, which changes without any source changing."""
    _command(["describe", "reuters"], tmp_path)
    assert _command(["describe", "reuters"], tmp_path)[1]


def test_an_unknown_name_is_refused_and_not_cached(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(catalogue.CACHE_VAR, str(tmp_path))
    assert main(["describe", "nope"]) == 2
    assert "nope" in capsys.readouterr().err
    assert "nope" not in catalogue.cache_file().read_text() if catalogue.cache_file().exists() else True


def test_the_fingerprint_follows_the_sources_and_the_entry_point_selection(tmp_path, monkeypatch):
    source = tmp_path / "mod.py"
    source.write_text('"""A docstring."""\n')
    before = catalogue.fingerprint([tmp_path])
    assert catalogue.fingerprint([tmp_path]) == before
    source.write_text('"""A docstring, edited."""\n')
    assert catalogue.fingerprint([tmp_path]) != before
    edited = catalogue.fingerprint([tmp_path])
    monkeypatch.setenv("SVIBENCH_ENTRY_POINTS", "svibench,another")
    assert catalogue.fingerprint([tmp_path]) != edited


def test_a_stale_cache_is_rebuilt(tmp_path, monkeypatch):
    """A cache written under another fingerprint (another install, an edited source) is never read."""
    monkeypatch.setenv(catalogue.CACHE_VAR, str(tmp_path))
    catalogue.cache_file().write_text('{"fingerprint": "old", "list": "stale"}')
    assert "Algorithms:" in catalogue.list_text()
    assert "stale" not in catalogue.cache_file().read_text()


def test_a_cache_that_cannot_be_written_is_ignored(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv(catalogue.CACHE_VAR, str(blocker))
    assert main(["list"]) == 0
    assert "Algorithms:" in capsys.readouterr().out


def test_plugin_files_bypass_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(catalogue.CACHE_VAR, str(tmp_path / "cache"))
    plugin = tmp_path / "plug.py"
    plugin.write_text(
        "from svibench.algorithms.svi import SVI\n\n"
        "class Mine(SVI):\n    name = 'mine-svi'\n    label = 'Mine'\n")
    assert "mine-svi" in catalogue.list_text((str(plugin),))
    assert "mine-svi" not in catalogue.list_text()


def test_every_registered_class_is_in_a_fingerprinted_folder():
    """The built-in packages sit outside svibench/ in an editable install (pyproject's package-dir): an edit to
    any of them must rebuild the texts."""
    import inspect

    from svibench.registry import get_registry

    reg, roots = get_registry(), catalogue._source_roots()
    classes = [e.cls for e in reg.algorithms.values()] + [cls for cls, _ in reg.models.values()]
    loaders = [info.loader for info, _ in reg.datasets.values()]
    for obj in classes + loaders:
        path = Path(inspect.getfile(obj)).resolve()
        assert any(path.is_relative_to(root) for root in roots), path
