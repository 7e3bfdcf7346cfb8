"""The paper's table row by row: the paper's number, the authors' code's, svibench's, and a verdict per row.

For every ``[[paper]]`` row that names the ``iteration`` its number was printed at
(the authors' iteration count for that method and data set), the three values at
that iteration side by side: the paper's; the authors' own code's (its committed
trajectory, :mod:`svibench.authors_code`: the value, or the median and range of its
Monte-Carlo seeds); and each svibench variant's (median and range over seeds).  A
row's verdict is the ``digits`` rule of value claims (:mod:`svibench.claims.kinds`):
*reproduced* where svibench prints the paper's number at that iteration, or passes
through it at an iteration where the authors' code does; else *not reproduced*,
with svibench's nearest iteration to the paper's number and the difference there.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ..authors_code import AuthorsTrajectories
from ..claims.evidence import Evidence
from ..claims.kinds import decimals_of, passes_through, prints
from .fmt import DASH
from .tables import Table

__all__ = ["rows_table"]


def _spread(values: np.ndarray, decimals: int) -> str:
    values = values[np.isfinite(values)]
    if not values.size:
        return DASH
    med = f"{np.median(values):.{decimals}f}"
    return med if values.size == 1 or values.min() == values.max() else \
        f"{med} ({values.min():.{decimals}f} to {values.max():.{decimals}f}, n={values.size})"


def _authors(theirs: AuthorsTrajectories | None, row: dict[str, Any], decimals: int) -> tuple[str, float]:
    method = theirs.methods.get(row["algorithm"]) if theirs is not None else None
    if method is None or row["metric"] not in method.values or row["iteration"] > method.iterations:
        return DASH, np.nan
    values = method.at(row["metric"], row["iteration"])
    return _spread(values, decimals), float(np.median(values))


def _nearest(ev: Evidence, r: int, metric: str, published: float) -> tuple[int, float]:
    iterations, values = ev.trajectory(r, metric, "iteration")
    k = int(np.nanargmin(np.abs(values - published)))
    return int(iterations[k]), float(values[k] - published)


def _verdict(ev: Evidence, row: dict[str, Any], problem: str, runs: list[int], decimals: int) -> tuple[str, bool]:
    published, metric = float(row["value"]), row["metric"]
    held, words = 0, []
    for r in runs:
        value = ev.value_at_iteration(r, metric, row["iteration"])
        if prints(value, published, decimals):
            held += 1
            continue
        through = passes_through(ev, row, problem, r, decimals)
        if through is not None:
            held += 1
            words.append(f"through the authors' point at iteration {through}")
            continue
        at, diff = _nearest(ev, r, metric, published)
        words.append(f"nearest at iteration {at}, {diff:+.{decimals + 1}f}")
    verdict = "reproduced" if held == len(runs) else "not reproduced" if held == 0 else f"{held}/{len(runs)} seeds"
    return verdict + (f" ({'; '.join(dict.fromkeys(words))})" if words else ""), held == len(runs)


def rows_table(ev: Evidence, paper: list[dict[str, Any]]) -> Table | None:
    """The ``[[paper]]`` rows with an ``iteration``, three values each and a verdict (module docstring)."""
    rows, records = [], []
    for row in (r for r in paper if "iteration" in r):
        decimals = decimals_of(row)
        for problem in ev.pool(row["problem"]):
            theirs_text, theirs = _authors(ev.authors.get(problem), row, decimals)
            for label in ev.labels_of(row["algorithm"]):
                runs = [r for r in (ev.run(problem, label, s) for s in ev.seeds(problem, [label])) if r is not None]
                if not runs:
                    continue
                ours = np.array([ev.value_at_iteration(r, row["metric"], row["iteration"]) for r in runs])
                verdict, holds = _verdict(ev, row, problem, runs, decimals)
                rows.append([problem, label, row["metric"], str(row["iteration"]), f"{row['value']:.{decimals}f}",
                             theirs_text, _spread(ours, decimals), verdict])
                records.append({"problem": problem, "algorithm": row["algorithm"], "label": label, "metric": row["metric"],
                                "iteration": row["iteration"], "paper": float(row["value"]), "authors": theirs,
                                "svibench": float(np.nanmedian(ours)) if np.isfinite(ours).any() else np.nan,
                                "reproduced": holds})
    if not rows:
        return None
    held = sum(r["reproduced"] for r in records)
    return Table(
        "The paper's table, row by row",
        ["problem", "algorithm", "metric", "iteration", "paper", "authors' code", "svibench", "verdict"],
        rows,
        f"{held} of {len(rows)} rows reproduced. Each value is read after the paper's iteration count for that method "
        "and data set (the authors' code's own), printed to the paper's decimals. Authors' code: its committed "
        "trajectory on the same split and start (the median and range of its Monte-Carlo seeds). A row is reproduced "
        "when svibench prints the paper's number at that iteration, or passes through it at an iteration where the "
        "authors' code does; otherwise the verdict gives svibench's nearest iteration and its difference there.",
        data=pd.DataFrame(records),
    )
