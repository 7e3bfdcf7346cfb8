"""Plugin files in the registry: clashes name both sources; subclasses of built-ins; pickling across processes."""
from __future__ import annotations

import pickle
import subprocess
import sys

import pytest

from svibench.registry import RegistryError, build_registry

SUBCLASS = '''
from svibench.algorithms.svi import SVI


class {cls}(SVI):
    name = "{name}"
'''


def test_clash_with_a_builtin_names_both_sources(tmp_path):
    path = tmp_path / "clash.py"
    path.write_text(SUBCLASS.format(cls="MyVMP", name="vmp").replace("SVI", "VMP"))
    with pytest.raises(RegistryError) as info:
        build_registry([path])
    message = str(info.value)
    assert "'vmp'" in message and "built-in svibench.algorithms.svi" in message and f"plugin file {path}" in message


def test_clash_between_two_plugin_files_names_both(tmp_path):
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text(SUBCLASS.format(cls="A", name="test-same"))
    second.write_text(SUBCLASS.format(cls="B", name="test-same"))
    with pytest.raises(RegistryError, match=f"by plugin file {first} and by plugin file {second}"):
        build_registry([first, second])


def test_clash_is_an_error_on_the_command_line(tmp_path):
    path = tmp_path / "clash.py"
    path.write_text(SUBCLASS.format(cls="X", name="svi"))
    result = subprocess.run([sys.executable, "-m", "svibench.cli", "list", "--plugin", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "built-in svibench.algorithms.svi" in result.stderr and str(path) in result.stderr


def test_subclass_of_a_builtin_registers_its_own_name_only(tmp_path):
    path = tmp_path / "variant.py"
    path.write_text(SUBCLASS.format(cls="MySVI", name="test-my-svi"))
    registry = build_registry([path])
    entry = registry.algorithm("test-my-svi")
    assert entry.source == f"plugin file {path}" and entry.label == "test-my-svi"
    # the parent's presets stay the parent's
    assert registry.algorithm("mf-svi").source == "built-in svibench.algorithms.svi"


def test_plugin_objects_unpickle_in_a_process_that_loaded_the_same_file(tmp_path):
    path = tmp_path / "variant.py"
    path.write_text(SUBCLASS.format(cls="MySVI", name="test-my-svi"))
    alg = build_registry([path]).algorithm("test-my-svi").build({"batch_size": 7})
    blob = tmp_path / "alg.pkl"
    blob.write_bytes(pickle.dumps(alg))
    code = (
        "import pickle, sys; from svibench.registry import build_registry; build_registry([sys.argv[1]]); "
        "print(pickle.loads(open(sys.argv[2], 'rb').read()).batch_size)"
    )
    result = subprocess.run([sys.executable, "-c", code, str(path), str(blob)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "7"


def test_study_runs_an_algorithm_from_a_plugin_file(tmp_path):
    path = tmp_path / "variant.py"
    path.write_text(SUBCLASS.format(cls="MySVI", name="test-my-svi"))
    study = tmp_path / "study.toml"
    study.write_text(
        '[study]\nname = "plugin-file"\nseeds = [0]\n\n[budget]\niterations = 5\ncheckpoints = 2\n\n'
        '[[problem]]\nmodel = "linreg"\ndataset = "linreg-synthetic"\ndataset_params = { n = 100, n_test = 20 }\n\n'
        '[[algorithm]]\nname = "test-my-svi"\nparams = { batch_size = 10 }\n\n[[algorithm]]\nname = "vmp"\n'
    )
    from svibench.cli import main
    from svibench.results import open_results

    assert main(["run", str(study), "-o", str(tmp_path / "out"), "--workers", "1", "-q", "--plugin", str(path)]) == 0
    ds = open_results(tmp_path / "out")
    assert sorted(ds["algorithm"].values) == ["test-my-svi", "vmp"] and set(ds["status"].values) == {"ok"}
