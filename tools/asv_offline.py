"""svibench's performance history as one page that opens from disk with no network.

``asv publish`` writes a site whose page loads jQuery, flot and bootstrap from CDNs, so offline it is blank ("Can
not determine continental origin of swallow").  This writes ``offline.html`` beside it (asv.conf.json's
``html_dir``): every benchmark's value against the commits measured, drawn with matplotlib and embedded as PNG, no
JavaScript, and each benchmark's latest values in a table.  The results are read with asv's own API
(:mod:`asv.results`), machine by machine.

A benchmark with at most :data:`LINES` parameter combinations gets a line each; one with more (the generated
``bench_registry`` suite: every algorithm on every problem) is drawn as the median over its combinations of the
value relative to the combination's first measured commit, with the 10-90% band, so that a regression of many
pairs shows as a rise of the band.

    asv publish                       # asv's own site, which needs the network
    python tools/asv_offline.py       # .asv/html/offline.html, which does not
"""
from __future__ import annotations

import argparse
import base64
import html
import io
import itertools
import json
import re
import sys
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

#: Parameter combinations drawn one line each; beyond, the median ratio to the first commit with its band.
LINES = 8


def _conf(root: Path) -> dict:
    text = (root / "asv.conf.json").read_text()
    return json.loads(re.sub(r"^\s*//.*$", "", text, flags=re.M))


def history(results_dir: Path) -> dict[str, dict[str, dict[str, list[tuple[datetime, str, float]]]]]:
    """machine → benchmark → parameter combination → [(commit date, commit, value)], oldest first."""
    from asv.results import iter_results_for_machine

    benchmarks = json.loads((results_dir / "benchmarks.json").read_text())
    out: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for machine in sorted(p.name for p in results_dir.iterdir() if (p / "machine.json").exists()):
        for res in iter_results_for_machine(str(results_dir), machine):
            when = datetime.fromtimestamp(res.date / 1000, tz=timezone.utc)
            for key in res.get_result_keys(benchmarks):
                params = res.get_result_params(key)
                combos = [", ".join(map(str, c)) for c in itertools.product(*params)] if params else [""]
                for combo, value in zip(combos, res.get_result_value(key, params)):
                    if value is not None and np.isfinite(value):
                        out[machine][key][combo].append((when, res.commit_hash[:8], float(value)))
    for machine in out.values():
        for combos in machine.values():
            for points in combos.values():
                points.sort()
    return out


def _figure(name: str, unit: str, combos: dict[str, list[tuple[datetime, str, float]]]) -> str:
    """One benchmark's history as a base64 PNG: x is the commits in the order measured (by commit date)."""
    from matplotlib.figure import Figure

    commits = sorted({(p[0], p[1]) for points in combos.values() for p in points})
    at = {c: i for i, c in enumerate(commits)}
    fig = Figure(figsize=(6.4, 3.0), layout="constrained")
    ax = fig.subplots()
    if len(combos) <= LINES:
        for combo, points in combos.items():
            ax.plot([at[p[:2]] for p in points], [p[2] for p in points], marker="o",
                    label=combo or name.split(".")[-1])
        ax.set_ylabel(unit)
        if len(combos) > 1:
            ax.legend(fontsize=8, frameon=False)
    else:
        ratios = np.full((len(combos), len(commits)), np.nan)
        for i, points in enumerate(combos.values()):
            first = points[0][2]
            for point in points:
                ratios[i, at[point[:2]]] = point[2] / first if first else np.nan
        lo, mid, hi = (np.nanpercentile(ratios, q, axis=0) for q in (10, 50, 90))
        ax.plot(range(len(commits)), mid, marker="o", label=f"median of {len(combos)} combinations")
        ax.fill_between(range(len(commits)), lo, hi, alpha=0.25, label="10-90%")
        ax.set_ylabel(f"{unit} / first commit's")
        ax.legend(fontsize=8, frameon=False)
    ax.set_xticks(range(len(commits)), [c[1] for c in commits], rotation=30, ha="right", fontsize=8)
    ax.set_xlim(-0.5, len(commits) - 0.5)
    ax.set_title(name, fontsize=10)
    ax.grid(True, alpha=0.3)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _latest(combos: dict[str, list[tuple[datetime, str, float]]]) -> str:
    rows = "".join(f"<tr><td>{html.escape(c or '—')}</td><td>{p[-1][1]}</td><td class=num>{p[-1][2]:.4g}</td></tr>"
                   for c, p in combos.items())
    return f"<details><summary>latest values</summary><table><tr><th>parameters</th><th>commit</th><th>value</th></tr>{rows}</table></details>"


def render(results_dir: Path) -> str:
    """The whole page."""
    benchmarks = json.loads((results_dir / "benchmarks.json").read_text())
    parts = []
    for machine, by_bench in history(results_dir).items():
        parts.append(f"<h2>Machine {html.escape(machine)}</h2>")
        for module in sorted({k.split(".")[0] for k in by_bench}):
            parts.append(f"<h3>{html.escape(module)}</h3><div class=grid>")
            for key in sorted(k for k in by_bench if k.split(".")[0] == module):
                unit = benchmarks.get(key, {}).get("unit", "")
                parts.append(f'<figure><img alt="{html.escape(key)}" src="data:image/png;base64,'
                             f'{_figure(key, unit, by_bench[key])}">{_latest(by_bench[key])}</figure>')
            parts.append("</div>")
    if not parts:
        parts.append("<p>No results yet: run <code>asv run</code> first.</p>")
    style = ("body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1400px;padding:0 1rem}"
             ".grid{display:flex;flex-wrap:wrap;gap:1rem}figure{margin:0;max-width:100%}img{max-width:100%}"
             "table{border-collapse:collapse;font-size:.8rem}td,th{border:1px solid #ddd;padding:.1rem .4rem}"
             ".num{text-align:right}")
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>svibench: performance history</title>"
            f"<style>{style}</style></head><body><h1>svibench: performance history (asv results)</h1>"
            f"<p>Every benchmark against the commits measured (x: the commits, oldest first). Written by tools/asv_offline.py from "
            f"{html.escape(str(results_dir))}; opens with no network.</p>{''.join(parts)}</body></html>")


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[1]
    conf = _conf(root)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default=str(root / conf["results_dir"]), help="asv's results folder")
    parser.add_argument("-o", "--output", default=str(root / conf["html_dir"] / "offline.html"), help="the page")
    args = parser.parse_args(argv)
    results = Path(args.results)
    if not (results / "benchmarks.json").exists():
        print(f"asv_offline: no asv results in {results} (run `asv run` first)", file=sys.stderr)
        return 2
    out = Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results), encoding="utf-8")
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
