"""Issue 52: the performance history opens with no network.  asv's own page loads its JavaScript from CDNs and is
blank offline; tools/asv_offline.py draws every benchmark from asv's results (read with asv's API) into one page
of embedded PNGs.  Checked on results in asv's format for two commits, in headless Chromium where installed."""
import base64
import importlib.util
import json
import re
from pathlib import Path

import pytest

from svibench.report.browser import chromium, images_shown

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = ["result", "params", "version", "started_at", "duration", "stats_ci_99_a", "stats_ci_99_b", "stats_q_25",
           "stats_q_75", "stats_number", "stats_repeat", "samples", "profile"]
PAIRS = [f"'alg{i} @ gmm/bench'" for i in range(10)]  # more than LINES: drawn as the median ratio with its band


def _tool():
    spec = importlib.util.spec_from_file_location("asv_offline", ROOT / "tools" / "asv_offline.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("asv") / "results"
    (folder / "vm").mkdir(parents=True)
    (folder / "vm" / "machine.json").write_text(json.dumps({"machine": "vm", "version": 1}))
    (folder / "benchmarks.json").write_text(json.dumps({
        "bench_cli.CommandLineStart.track_import_cli": {"name": "bench_cli.CommandLineStart.track_import_cli",
                                                        "unit": "CPU seconds", "type": "track", "params": [],
                                                        "param_names": [], "version": "a"},
        "bench_registry.AlgorithmIteration.time_iteration": {
            "name": "bench_registry.AlgorithmIteration.time_iteration", "unit": "seconds", "type": "time",
            "params": [PAIRS], "param_names": ["pair"], "version": "b"},
        "version": 2}))
    for k, (commit, date) in enumerate((("a" * 40, 1795000000000), ("b" * 40, 1795900000000))):
        row = lambda value, params, version: [value, params, version, date, 1.0] + [None] * (len(COLUMNS) - 5)
        (folder / "vm" / f"{commit[:8]}-existing-py.json").write_text(json.dumps({
            "commit_hash": commit, "env_name": "existing-py", "date": date, "params": {"machine": "vm"},
            "python": "3.11", "requirements": {}, "env_vars": {}, "result_columns": COLUMNS, "version": 2,
            "durations": {}, "results": {
                "bench_cli.CommandLineStart.track_import_cli": row([0.08 - 0.01 * k], [], "a"),
                "bench_registry.AlgorithmIteration.time_iteration": row([1e-3 * (i + 1) * (1 + k) for i in range(10)],
                                                                         [PAIRS], "b")}}))
    return folder


@pytest.fixture(scope="module")
def page(results) -> Path:
    out = results.parent / "html" / "offline.html"
    assert _tool().main(["--results", str(results), "-o", str(out)]) == 0
    return out


def test_the_page_draws_every_benchmark_and_needs_no_network(page):
    text = page.read_text()
    sources = re.findall(r'src="([^"]+)"', text)
    assert len(sources) == 2 and all(s.startswith("data:image/png;base64,") for s in sources)
    assert all(base64.b64decode(s.split(",", 1)[1]).startswith(b"\x89PNG") for s in sources)
    assert not re.search(r'(src|href)="(https?:)?//', text) and "<script" not in text
    assert "bbbbbbbb" in text and "aaaaaaaa" not in text  # the latest values are the newer commit's


def test_both_commits_of_every_combination_are_read(results):
    by_bench = _tool().history(results)["vm"]
    assert len(by_bench["bench_registry.AlgorithmIteration.time_iteration"]) == len(PAIRS)
    assert all([p[1] for p in points] == ["aaaaaaaa", "bbbbbbbb"] for combos in by_bench.values()
               for points in combos.values())


@pytest.mark.skipif(chromium() is None, reason="no Chromium on the PATH (apt-get install chromium)")
def test_chromium_offline_shows_every_graph(page):
    assert images_shown(page) == (2, 2)


def test_no_results_is_one_line_and_exit_2(tmp_path, capsys):
    assert _tool().main(["--results", str(tmp_path), "-o", str(tmp_path / "x.html")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
