"""`svibench run` as a new user meets it: the executor asked for is the one used (also for a
single run, with its progress shown), bad options and paths are named, the exit status
says whether a run failed, and the console's table matches the report's."""
from __future__ import annotations

import io
import json
import sys
import textwrap
from pathlib import Path

import pytest

from svibench.cli import main
from svibench.results import open_results
from svibench.scaffold import ScaffoldError, new_algorithm

DASK_ONLY = '''
import time

from svibench.algorithm import Algorithm


class DaskOnly(Algorithm):
    """Fails unless it runs in a Dask worker; sleeps ``work`` seconds per step."""

    name = "test-dask-only"

    def __init__(self, *, work: float = 0.05) -> None:
        self.work = work

    def init(self, model, rng):
        from distributed import get_worker

        get_worker()  # ValueError outside a Dask worker: the run would end failed
        self.value_ = 0.0

    def step(self):
        time.sleep(self.work)
        self.value_ += 1.0
        return 10

    def posterior(self):
        return self.value_
'''

STUDIES = Path(__file__).resolve().parents[1] / "studies"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _study(tmp_path, algorithms: str, problem: str = 'model = "test-slow-eval"\ndataset = "test-points"\n'
           'model_params = { sleep = 0.0 }', budget: str = "iterations = 10", seeds: str = "[0]", report: str = ""):
    path = tmp_path / "study.toml"
    path.write_text(textwrap.dedent(f"""
        [study]
        name = "cli"
        seeds = {seeds}

        [budget]
        {budget}
        checkpoints = 3

        [[problem]]
        {problem}
        """) + algorithms + report)
    return path


def test_a_single_run_with_executor_dask_runs_on_dask_and_shows_its_progress(tmp_path, faulty_plugin, monkeypatch,
                                                                            capsys):
    """A one-run study used to swap in an in-process executor, ignoring --executor dask."""
    plugin = tmp_path / "dask_only.py"
    plugin.write_text(DASK_ONLY)
    # 40 steps of 0.05 s asleep: ~2 s of wall clock (a budget in algorithm seconds would take as long as the worker
    # takes to burn them besides sleeping: minutes)
    study = _study(tmp_path, '[[algorithm]]\nname = "test-dask-only"\n', budget="iterations = 40")
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code = main(["run", str(study), "--executor", "dask", "--workers", "1", "--plugin", faulty_plugin,
                 "--plugin", str(plugin), "-o", str(tmp_path / "out"), "--no-report"])
    assert code == 0, terminal.getvalue()
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["executor"] == "dask" and [r["status"] for r in manifest["runs"].values()] == ["ok"]
    draws = terminal.getvalue().split("\r")
    assert "0/1 runs" in draws[1] and "iteration" not in draws[1]  # drawn at the start, before any report
    within = [d for d in draws if "0/1 runs" in d and "iteration" in d]
    assert len(within) >= 2, draws  # progress from within the run, on the Dask worker
    assert "1/1 runs  100.0%" in draws[-1]


def test_workers_below_one_are_refused_with_the_valid_range(tmp_path, capsys):
    for value in ("0", "-2", "two"):
        with pytest.raises(SystemExit) as info:
            main(["run", str(tmp_path / "study.toml"), "--workers", value])
        assert info.value.code == 2
        assert f"argument --workers: expected a whole number of at least 1, got '{value}'" in capsys.readouterr().err


def test_a_directory_as_the_study_file_is_named_a_directory(tmp_path, capsys):
    assert main(["run", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"svibench: error: {tmp_path} is a directory; give the study file, e.g. {tmp_path / 'study.toml'}\n"


def test_exit_status_is_1_when_a_run_failed_with_the_counts_in_the_last_line(tmp_path, faulty_plugin, capsys):
    study = _study(tmp_path, '[[algorithm]]\nname = "svi"\nparams = { batch_size = 20 }\n'
                             '[[algorithm]]\nname = "test-failing"\n',
                   problem='model = "gmm"\ndataset = "gmm-synthetic"\ndataset_params = { n = 200, n_test = 50 }')
    code = main(["run", str(study), "--workers", "1", "--plugin", faulty_plugin, "-q"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.strip().splitlines()[-1] == "2 runs: 1 ok, 0 diverged, 1 failed, 0 timed out; exit status 1 " \
                                           "(see `message` in the results)"
    # the console ends with the report's first-screen ranking: the failed run counts as never, with its health
    code = main(["run", str(study), "--workers", "1", "--plugin", faulty_plugin, "--keep-failed"])
    out, err = capsys.readouterr()
    assert code == 1  # the failed run is kept, so the study still holds a failure
    lines = out.splitlines()
    title = next(i for i, line in enumerate(lines) if line.startswith("Ranking: first to "))
    failing = next(line for line in lines[title:] if "test-failing" in line)
    assert "never" in failing and failing.endswith("0/1 ok, 1 failed/timed out")
    report = (tmp_path / "results" / "report" / "summary.md").read_text()  # beside the (ignored) results
    assert lines[title] in report
    row = next(line for line in report[report.index(lines[title]):].splitlines() if "test-failing" in line)
    cells = " ".join(cell.strip().strip("*") for cell in row.strip().strip("|").split("|"))
    assert " ".join(cells.split()) == " ".join(failing.split())  # the same cells as the report's row
    # with --no-report the console shows the final metrics: a failed run's are "—", not its last checkpoint
    main(["run", str(study), "--workers", "1", "--plugin", faulty_plugin, "--keep-failed", "--no-report"])
    failing = next(line for line in capsys.readouterr().out.splitlines() if "test-failing" in line)
    assert failing.split()[-1] == "0/1" and "—" in failing


def test_diverged_runs_are_results_not_faults_exit_status_0(tmp_path, faulty_plugin, capsys):
    study = _study(tmp_path, '[[algorithm]]\nname = "test-diverging"\n[[algorithm]]\nname = "test-sleeper"\n'
                             'params = { work = 0.0 }\n')
    code = main(["run", str(study), "--workers", "1", "--plugin", faulty_plugin, "--no-report"])
    out = capsys.readouterr().out
    assert code == 0
    assert out.strip().splitlines()[-1] == "2 runs: 1 ok, 1 diverged, 0 failed, 0 timed out"


def test_the_manifest_and_results_record_where_each_plugin_came_from(tmp_path, faulty_plugin, capsys):
    import hashlib
    from pathlib import Path

    study = _study(tmp_path, '[[algorithm]]\nname = "test-sleeper"\nparams = { work = 0.0 }\n')
    assert main(["run", str(study), "--workers", "1", "--plugin", faulty_plugin, "--no-report", "-q"]) == 0
    manifest = json.loads((tmp_path / "results" / "manifest.json").read_text())
    digest = hashlib.sha256(Path(faulty_plugin).read_bytes()).hexdigest()
    expected = f"plugin file {Path(faulty_plugin).resolve()} (sha256 {digest})"
    assert manifest["origins"] == {"algorithm test-sleeper": expected, "dataset test-points": expected,
                                   "model test-slow-eval": expected}
    assert json.loads(open_results(tmp_path / "results").attrs["origins"]) == manifest["origins"]


def test_builtin_origins_carry_the_svibench_version(tmp_path, capsys):
    from importlib.metadata import version

    study = _study(tmp_path, '[[algorithm]]\nname = "vmp"\n',
                   problem='model = "gmm"\ndataset = "gmm-synthetic"\ndataset_params = { n = 200, n_test = 50 }')
    assert main(["run", str(study), "--workers", "1", "--no-report", "-q"]) == 0
    origins = json.loads((tmp_path / "results" / "manifest.json").read_text())["origins"]
    assert origins["algorithm vmp"] == f"built-in svibench.algorithms.svi (svibench {version('svibench')})"
    assert set(origins) == {"algorithm vmp", "model gmm", "dataset gmm-synthetic"}


def test_an_entry_point_origin_carries_its_package_version():
    from importlib.metadata import version

    import numpy

    from svibench.sweep import _origin

    source = "entry point fake = numpy (numpy)"  # as the registry names it; any installed package will do
    assert _origin(numpy.ndarray, source) == f"{source} (numpy {version('numpy')})"


@pytest.mark.parametrize("name", ["svi", "vmp", "mf-svi"])
def test_new_algorithm_refuses_a_name_the_registry_already_has(tmp_path, name):
    with pytest.raises(ScaffoldError, match=rf"algorithm name '{name}' is taken by built-in svibench.algorithms\.\S+; "
                                            "choose another name"):
        new_algorithm(name, tmp_path / "x")
    assert not (tmp_path / "x").exists()


def test_list_into_a_closed_pipe_ends_without_a_traceback():
    """`svibench list | head -1`: the reader closes the pipe early; svibench stops quietly."""
    import subprocess
    import sys
    proc = subprocess.run(f"'{sys.executable}' -m svibench.cli list | head -1", shell=True, capture_output=True,
                          text=True, timeout=120)
    assert proc.stdout.startswith("Algorithms:")
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr


def _two_runs(tmp_path):
    return _study(tmp_path, '[[algorithm]]\nname = "test-sleeper"\nparams = { work = 0.0 }\n', seeds="[0, 1]")


def test_workers_are_capped_at_the_runs_and_cores_with_a_warning_and_the_manifest_records_the_count(tmp_path, faulty_plugin,
                                                                                                     capsys):
    import os

    code = main(["run", str(_two_runs(tmp_path)), "--workers", "10000", "--plugin", faulty_plugin, "--no-report"])
    out, err = capsys.readouterr()
    used = min(2, os.cpu_count() or 1)
    assert code == 0
    assert f"--workers 10000: using {used} (the study has 2 run(s), this machine {os.cpu_count()} core(s))" in err
    assert f"{used} worker(s)" in out and "10000" not in out
    manifest = json.loads((tmp_path / "results" / "manifest.json").read_text())
    assert manifest["parallel_workers"] == used and "10000" not in json.dumps(manifest)


def test_a_dask_local_cluster_never_has_more_workers_than_runs_and_takes_the_memory_limit(tmp_path, faulty_plugin,
                                                                                          monkeypatch, capsys):
    import distributed

    started = []

    class Recording(distributed.LocalCluster):
        def __init__(self, **kwargs):
            started.append(kwargs)
            super().__init__(**kwargs)

    monkeypatch.setattr(distributed, "LocalCluster", Recording)
    study = _study(tmp_path, '[[algorithm]]\nname = "test-sleeper"\nparams = { work = 0.0 }\n')
    assert main(["run", str(study), "--executor", "dask", "--workers", "2", "--memory-limit", "1.5",
                 "--plugin", faulty_plugin, "--no-report", "-q"]) == 0
    assert started[0]["n_workers"] == 1 and started[0]["memory_limit"] == int(1.5 * 2**30)


def test_memory_limit_with_a_running_cluster_is_refused(tmp_path, faulty_plugin, capsys):
    code = main(["run", str(_two_runs(tmp_path)), "--executor", "dask", "--address", "tcp://127.0.0.1:1",
                 "--memory-limit", "2", "--plugin", faulty_plugin])
    assert code == 2
    assert "--memory-limit limits the workers svibench starts" in capsys.readouterr().err


def test_output_at_a_file_is_refused_for_run_and_report(tmp_path, faulty_plugin, capsys):
    file = tmp_path / "taken"
    file.write_text("")
    assert main(["run", str(_two_runs(tmp_path)), "--plugin", faulty_plugin, "-o", str(file)]) == 2
    assert capsys.readouterr().err == f"svibench: error: -o {file} is a file; give a folder (it is created if missing)\n"
    assert main(["report", str(tmp_path), "-o", str(file)]) == 2
    assert capsys.readouterr().err == f"svibench: error: -o {file} is a file; give a folder (it is created if missing)\n"


def test_an_explicit_plugin_that_fails_to_load_is_an_error_even_when_the_study_does_not_use_it(tmp_path, capsys):
    broken, empty = tmp_path / "broken.py", tmp_path / "empty.py"
    broken.write_text("import not_a_module_anywhere\n")
    empty.write_text("X = 1\n")
    study = _study(tmp_path, '[[algorithm]]\nname = "svi"\nparams = { batch_size = 20 }\n',
                   problem='model = "gmm"\ndataset = "gmm-synthetic"\ndataset_params = { n = 200, n_test = 50 }')
    for plugin, why in ((broken, "ModuleNotFoundError: No module named 'not_a_module_anywhere'"),
                        (empty, "defines no Algorithm or Model subclass")):
        assert main(["run", str(study), "--plugin", str(plugin), "--no-report"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"svibench: error: --plugin {plugin}: ") and why in err and err.count("\n") == 1


def test_report_names_a_corrupt_run_file_as_corrupt_not_missing(tmp_path, faulty_plugin, capsys):
    assert main(["run", str(_two_runs(tmp_path)), "--workers", "1", "--plugin", faulty_plugin, "--no-report", "-q"]) == 0
    victim = sorted((tmp_path / "results" / "runs").glob("*.nc"))[0]
    victim.write_bytes(b"not netcdf")
    capsys.readouterr()
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "report")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("svibench: error: 1 unreadable run file(s)") and victim.name in err
    summary = (tmp_path / "report" / "summary.md").read_text()  # written all the same: nothing is lost
    assert "| corrupt |" in summary and "its run file is unreadable" in summary and "interrupted sweep" not in summary
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "report"), "--allow-missing"]) == 0
    assert capsys.readouterr().err.startswith("svibench: warning: 1 unreadable run file(s)")


def test_ctrl_c_while_the_report_is_written_is_one_line_and_exit_130(tmp_path, faulty_plugin, capsys, monkeypatch):
    assert main(["run", str(_two_runs(tmp_path)), "--workers", "1", "--plugin", faulty_plugin, "--no-report", "-q"]) == 0

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("svibench.report.write_report", interrupted)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "results"), "-o", str(tmp_path / "report")]) == 130
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"svibench report {tmp_path / 'results'} -o {tmp_path / 'report'}" in err
    assert sorted((tmp_path / "results" / "runs").glob("*.nc"))  # the runs stay on disk


def test_a_memory_limit_a_worker_cannot_start_in_is_one_line_before_any_run(tmp_path, faulty_plugin, capsys):
    """--memory-limit 0.01: every worker would die importing numpy (it printed 250 lines of tracebacks)."""
    code = main(["run", str(_two_runs(tmp_path)), "--workers", "2", "--plugin", faulty_plugin, "--memory-limit", "0.01"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("svibench: error: --memory-limit 0.01 GiB is below the ") and "address space a worker holds" in err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ["-1", "0", "lots"])
def test_a_memory_limit_must_be_a_positive_number_of_gib(tmp_path, value, capsys):
    with pytest.raises(SystemExit) as exit:
        main(["run", str(tmp_path / "study.toml"), "--memory-limit", value])
    assert exit.value.code == 2
    assert f"expected a positive number of GiB, got {value!r}" in capsys.readouterr().err


def test_the_dask_executor_without_dask_is_one_line_before_anything_is_written(tmp_path, monkeypatch, capsys):
    """A default install has no dask.distributed: `--executor dask` says how to get it, and leaves no results folder."""
    monkeypatch.setitem(sys.modules, "distributed", None)  # `import distributed` raises ImportError
    study = tmp_path / "study.toml"
    study.write_text((STUDIES / "one-vmp-run.toml").read_text())
    out = tmp_path / "results"
    assert main(["run", str(study), "--executor", "dask", "-o", str(out)]) == 2
    assert capsys.readouterr().err == ("svibench: error: the dask executor needs dask.distributed: "
                                       "pip install 'svibench[dask]'\n")
    assert not out.exists()
