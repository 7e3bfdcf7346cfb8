"""Seaborn figures: every recorded metric against algorithm time and against epochs.

One figure per (metric, axis), one panel per problem.  Each ok run is
interpolated (linearly, in log-x where the axis is logarithmic) onto a common
grid of the problem's x range, never extended past its own first or last
checkpoint, so the mean and the ± 1 sd band over seeds exist at every grid
point.  An axis spanning two decades or more is log-scaled.  Colours come
from one palette keyed by algorithm label, shared by every figure.
"""
from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd
import seaborn as sns
import xarray as xr
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

__all__ = ["ReportFigure", "palette", "resample", "metric_figures", "GRID_POINTS", "LOG_DECADES"]

GRID_POINTS = 60
LOG_DECADES = 2.0
AXES = {"time": "algorithm time (s)", "epoch": "epochs"}


@dataclass(frozen=True)
class ReportFigure:
    """A rendered figure: file stem, title, caption and PNG bytes."""

    name: str
    title: str
    caption: str
    png: bytes


def palette(labels: list[str]) -> dict[str, tuple[float, float, float]]:
    """One colour per algorithm label (sorted), the same in every figure of a report."""
    labels = sorted(set(labels))
    colours = sns.color_palette("tab10" if len(labels) <= 10 else "husl", len(labels))
    return dict(zip(labels, colours))


def _grid(xs: list[np.ndarray]) -> tuple[np.ndarray, bool]:
    """Common grid over all runs' x values; log-spaced when the positive range spans ≥ LOG_DECADES."""
    allx = np.concatenate(xs)
    positive = allx[allx > 0]
    log = positive.size > 1 and np.log10(positive.max() / positive.min()) >= LOG_DECADES
    if log:
        return np.geomspace(positive.min(), positive.max(), GRID_POINTS), True
    return np.linspace(allx.min(), allx.max(), GRID_POINTS), False


def resample(ds: xr.Dataset, metric: str, axis: str) -> tuple[pd.DataFrame, bool]:
    """Long table (label, seed, x, value) of ``ds``'s runs on a common grid of ``axis``; and whether it is log."""
    curves = []
    for r in range(ds.sizes["run"]):
        x, y = ds[axis].values[r], ds[metric].values[r]
        keep = np.isfinite(x) & np.isfinite(y)
        if keep.any():
            curves.append((r, x[keep], y[keep]))
    if not curves:
        return pd.DataFrame(columns=["label", "seed", "x", "value"]), False
    grid, log = _grid([x for _, x, _ in curves])
    transform = np.log if log else (lambda v: v)
    frames = []
    for r, x, y in curves:
        if log:
            x, y = x[x > 0], y[x > 0]
            if not x.size:
                continue
        order = np.argsort(x, kind="stable")
        values = np.interp(transform(grid), transform(x[order]), y[order], left=np.nan, right=np.nan)
        frames.append(pd.DataFrame({"label": str(ds["label"].values[r]), "seed": int(ds["seed"].values[r]),
                                    "x": grid, "value": values}))
    return pd.concat(frames, ignore_index=True).dropna(subset=["value"]), log


def _ylim(df: pd.DataFrame) -> tuple[float, float] | None:
    """Keep the approach visible: clip what lies far outside the curves' late values.

    Clipped are an initial transient (values before the first quarter of the x
    range) and a label whose late values spread over more than 20 times the
    median label's spread (a run that diverges or jitters wildly): its line
    leaves the axes instead of flattening every other curve; the table keeps
    its numbers.
    """
    means = df.groupby(["label", "x"])["value"].mean()
    late = df[df["x"] >= df["x"].quantile(0.25)]
    if means.empty or late.empty:
        return None
    ranges = late.groupby("label")["value"].agg(["min", "max"])
    width = ranges["max"] - ranges["min"]
    scale = 1e-12 * max(float(ranges.abs().max().max()), 1.0)
    kept = ranges[width <= 20 * max(float(width.median()), scale)]
    llo, lhi = float(kept["min"].min()), float(kept["max"].max())
    span = max(lhi - llo, scale)
    if float(means.max() - means.min()) > 20 * span:
        return llo - 0.5 * span, lhi + 0.5 * span
    return None


def _panel(ax, df: pd.DataFrame, log: bool, colours: dict, problem: str, metric: str, axis: str) -> None:
    labels = [lb for lb in colours if lb in set(df["label"])]
    sns.lineplot(data=df, x="x", y="value", hue="label", hue_order=labels, palette=colours, estimator="mean",
                 errorbar="sd", ax=ax, legend=False)
    if log:
        ax.set_xscale("log")
    limits = _ylim(df)
    if limits is not None:
        ax.set_ylim(*limits)
    ax.set_title(problem, fontsize=10)
    ax.set_xlabel(AXES[axis])
    ax.set_ylabel(metric)
    ax.grid(True, alpha=0.3)


def _compact_png(fig: Figure, dpi: int) -> io.BytesIO:
    """PNG of ``fig`` with a 256-colour palette: a third of the size, the same look for line plots."""
    from PIL import Image

    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=dpi)
    raw.seek(0)
    out = io.BytesIO()
    Image.open(raw).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="png", optimize=True)
    return out


def metric_figures(ds: xr.Dataset, metrics: list[str], colours: dict, *, dpi: int = 100) -> list[ReportFigure]:
    """Figures of ``metrics`` of ``ds`` (ok runs) against time and epochs, one panel per problem."""
    problems = sorted(set(map(str, ds["problem"].values)))
    figures = []
    for metric in metrics:
        for axis in AXES:
            panels = []
            for problem in problems:
                sub = ds.isel(run=np.flatnonzero(ds["problem"].values == problem))
                df, log = resample(sub, metric, axis)
                if not df.empty:
                    panels.append((problem, df, log))
            if not panels:
                continue
            ncols = min(3, len(panels))
            nrows = -(-len(panels) // ncols)
            fig = Figure(figsize=(4.0 * ncols + 2.0, 3.2 * nrows), layout="constrained")
            axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
            used = set()
            for ax, (problem, df, log) in zip(axes, panels):
                _panel(ax, df, log, colours, problem, metric, axis)
                used |= set(df["label"])
            for ax in axes[len(panels):]:
                ax.set_visible(False)
            handles = [Line2D([], [], color=colours[lb], linewidth=2) for lb in colours if lb in used]
            fig.legend(handles, [lb for lb in colours if lb in used], loc="outside right upper", frameon=False)
            buf = _compact_png(fig, dpi)
            figures.append(ReportFigure(
                f"{_slug(metric)}-vs-{axis}",
                f"{metric} against {AXES[axis]}",
                f"Mean over seeds (line) ± 1 sd (band) of ok runs, interpolated onto a common "
                f"{'log-spaced ' if any(p[2] for p in panels) else ''}grid of {GRID_POINTS} points per problem; "
                "a run is not extended past its last checkpoint.",
                buf.getvalue(),
            ))
    return figures


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
