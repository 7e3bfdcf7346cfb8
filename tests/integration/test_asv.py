"""The asv suite imports, and its parameters cover every compatible pair of the registry."""
from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def suite():
    sys.path.insert(0, str(ROOT))
    try:
        problems = importlib.import_module("benchmarks._problems")
        bench = importlib.import_module("benchmarks.bench_registry")
        yield problems, bench
    finally:
        sys.path.remove(str(ROOT))


def test_the_suite_covers_every_compatible_pair_of_the_registry(suite):
    problems, bench = suite
    from svibench.registry import get_registry

    registry = get_registry()
    benchmarked = problems.problems()
    expected = {
        f"{alg} @ {benchmarked[model].name}"
        for (alg, model), reason in registry.compatibility().items()
        if reason is None and model in benchmarked and registry.algorithms[alg].source.startswith("built-in")
    }
    assert expected, "no compatible pair at all"
    for cls in (bench.AlgorithmIteration, bench.AlgorithmEpoch, bench.AlgorithmQuality):
        assert set(cls.params[0]) == expected
    for model in ("gmm", "bpfa", "gpc"):  # models with an entry are benchmarked on it
        if model in registry.models:
            assert benchmarked[model] == problems.PROBLEMS[model]


def test_peak_memory_covers_the_bpfa_and_gp_problems(suite):
    problems, bench = suite
    peak = set(problems.pairs(problems.PEAKMEM_MODELS))
    if peak:
        assert set(bench.AlgorithmPeakMemory.params[0]) == peak
        assert all(p.split(" @ ")[1].split("/")[0] in problems.PEAKMEM_MODELS for p in peak)


def test_a_benchmark_pair_runs_and_tracks_a_finite_elbo(suite):
    _, bench = suite
    pair = "vmp @ gmm/bench"
    it = bench.AlgorithmIteration()
    it.setup(pair)
    it.time_iteration(pair)
    quality = bench.AlgorithmQuality()
    quality.setup(pair)
    assert quality.track_elbo(pair) < 0 and quality.track_heldout_loglik(pair) < 0


def test_asv_config_builds_wheels_from_this_repo_into_git_ignored_folders():
    text = (ROOT / "asv.conf.json").read_text()
    conf = json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))
    assert conf["repo"] == "." and conf["branches"] == ["main"] and conf["benchmark_dir"] == "benchmarks"
    assert conf["environment_type"] == "virtualenv" and "wheel" in conf["build_command"][0]
    for key in ("env_dir", "results_dir", "html_dir"):
        assert conf[key].startswith(".asv/")
    assert ".asv/" in (ROOT / ".gitignore").read_text().split()


def test_every_built_in_algorithm_module_ships_in_the_wheel():
    """asv measures the wheel: a subpackage missing from pyproject's list would not be benchmarked."""
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"svibench." + p.parent.relative_to(ROOT / "svibench").as_posix().replace("/", ".")
             for p in (ROOT / "svibench").rglob("__init__.py") if p.parent != ROOT / "svibench"}
    assert found - {"svibench.algorithms", "svibench.datasets", "svibench.models"} <= listed


@pytest.mark.slow
def test_asv_check_passes():
    out = subprocess.run([sys.executable, "-m", "asv", "check", "--python=same"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr


def test_installed_plugins_enter_the_suite_only_when_asked(suite, monkeypatch):
    problems, _ = suite
    assert problems._included("built-in svibench.algorithms.cvi")
    assert not problems._included("entry point damped = my_pkg:Damped (my-pkg)")
    monkeypatch.setenv(problems.PLUGINS_ENV, "1")
    assert problems._included("entry point damped = my_pkg:Damped (my-pkg)")


def test_no_benchmark_class_name_is_part_of_another(suite):
    names = [cls for path in (ROOT / "benchmarks").glob("bench_*.py")
             for cls in re.findall(r"^\s*class (\w+)", path.read_text(), flags=re.M)]
    assert len(names) == len(set(names))
    assert not [(a, b) for a in names for b in names if a != b and a in b]


@pytest.mark.slow
def test_the_readmes_asv_commands_save_results_that_publish_builds_a_site_from(tmp_path):
    """On a tiny benchmark of a throwaway repository: the README's `asv run --python=same ...` line, then
    `asv publish`, give a saved result and a site with that benchmark's graph."""
    command = next(line.split("#")[0].strip() for line in (ROOT / "README.md").read_text().splitlines()
                   if line.strip().startswith("asv run --python=same"))
    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "benchmarks" / "__init__.py").write_text("")
    (tmp_path / "benchmarks" / "bench_tiny.py").write_text("class Tiny:\n    def time_sum(self):\n        sum(range(100))\n")
    (tmp_path / "asv.conf.json").write_text(json.dumps({
        "version": 1, "project": "tiny", "repo": ".", "branches": ["main"], "dvcs": "git",
        "environment_type": "virtualenv", "benchmark_dir": "benchmarks", "env_dir": ".asv/env",
        "results_dir": ".asv/results", "html_dir": ".asv/html"}))
    asv = str(Path(sys.executable).parent / "asv")
    script = (f"git init -q -b main && git add -A && git -c user.name=t -c user.email=t@t commit -qm t && "
              f"{asv} machine --yes > /dev/null && {command.replace('asv ', asv + ' ', 1)} && {asv} publish")
    done = subprocess.run(["bash", "-c", script], cwd=tmp_path, env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert list((tmp_path / ".asv" / "results").glob("*/*-existing-*.json")), "asv saved no result"
    assert list((tmp_path / ".asv" / "html" / "graphs").rglob("bench_tiny.Tiny.time_sum.json")), "the site has no graph"


def test_the_peer_benchmarks_skip_without_their_libraries(monkeypatch):
    """asv's skip (NotImplementedError in setup) when scikit-learn or numpyro is missing, before any work."""
    sys.path.insert(0, str(ROOT))
    try:
        bench = importlib.import_module("benchmarks.bench_peers")
    finally:
        sys.path.remove(str(ROOT))
    monkeypatch.setattr(bench, "missing_libraries", lambda modules: list(modules))
    for cls in (bench.SklearnLDAInterleaved, bench.SklearnBGMMInterleaved):
        with pytest.raises(NotImplementedError, match="scikit-learn is not installed"):
            cls().setup()
    advi = bench.NumPyroADVIInterleaved()
    with pytest.raises(NotImplementedError, match="numpyro is not installed"):
        advi.setup(advi.setup_cache(), "a7a")


def test_every_time_benchmark_is_timed_on_the_process_cpu_clock(suite):
    # asv reads `timer` from the benchmark, its class, then its module; the default is the wall clock, which a busy
    # machine lengthens.  Every module with a time_ benchmark must give the CPU clock the runner uses.
    import time

    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        module = importlib.import_module(f"benchmarks.{path.stem}")
        timed = [name for name, obj in vars(module).items()
                 if name.startswith("time_") or any(a.startswith("time_") for a in dir(obj) if isinstance(obj, type))]
        if timed:
            assert getattr(module, "timer", None) is time.process_time, f"{path.name}: {timed} on the wall clock"


def test_peak_memory_of_paper_problems_covers_every_study():
    """Every study in reports/ has its largest paper-scale problem in ``bench_peakmem`` (or shares another's, spec
    for spec), and every named problem is one its study runs at --scale paper."""
    sys.path.insert(0, str(ROOT))
    try:
        bench = importlib.import_module("benchmarks.bench_peakmem")
    finally:
        sys.path.remove(str(ROOT))
    studies = {path.parent.name for path in (ROOT / "reports").glob("*/study.toml")}
    assert set(bench.LARGEST) | set(bench.SAME_AS) == studies and not set(bench.LARGEST) & set(bench.SAME_AS)
    specs = {study: bench.paper_problem(study) for study in bench.LARGEST}
    assert all(spec.name == bench.LARGEST[study] for study, spec in specs.items())
    for study, other in bench.SAME_AS.items():
        assert bench.paper_problem(study, bench.LARGEST[other]) == specs[other]
