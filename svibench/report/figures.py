"""Seaborn figures: metrics against algorithm CPU time and epochs, final values, and the performance profile.

One figure per (metric, axis), one panel per problem (the grid points of a
``[[problem]]``, e.g. random splits, share its base's panel).  Metrics their
model declares objectives are drawn as suboptimality |f − f*| / |f*| on a log axis,
so the final differences stay visible whatever the starting value.  Each ok run is
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

from .compare import pairs, performance_profile, pools

__all__ = ["ReportFigure", "palette", "resample", "best_known", "suboptimality", "curve_figure", "final_figure",
           "profile_figure", "headline_styles", "GRID_POINTS", "LOG_DECADES", "FLOOR"]

GRID_POINTS = 60
LOG_DECADES = 2.0
AXES = {"time": "algorithm CPU time (s)", "epoch": "epochs"}
#: Suboptimality drawn for f = f* when no run has a positive one.
FLOOR = 1e-12


@dataclass(frozen=True)
class ReportFigure:
    """A rendered figure: file stem, title, caption and PNG bytes; ``font_px``, where measured, the height in pixels
    of its smallest text at the PNG's own size (the page scales it by its width on screen)."""

    name: str
    title: str
    caption: str
    png: bytes
    font_px: float | None = None


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


def _panel(ax, df: pd.DataFrame, log: bool, colours: dict, problem: str, metric: str, axis: str,
           subopt: bool = False, dashes: dict | None = None, markers: dict | None = None) -> None:
    labels = [lb for lb in colours if lb in set(df["label"])]
    style = dict(style="label", style_order=labels, dashes={lb: dashes[lb] for lb in labels}) if dashes else {}
    if markers:
        style |= dict(style="label", style_order=labels, markers={lb: markers[lb] for lb in labels},
                      markevery=GRID_POINTS // 5, markersize=5)
    sns.lineplot(data=df, x="x", y="value", hue="label", hue_order=labels, palette=colours,
                 estimator="median" if subopt else "mean", errorbar=("pi", 100) if subopt else "sd", ax=ax, legend=False,
                 **style)
    if log:
        ax.set_xscale("log")
    if subopt:
        ax.set_yscale("log")
    else:
        limits = _ylim(df)
        if limits is not None:
            ax.set_ylim(*limits)
    ax.set_title(problem, fontsize=10)
    ax.set_xlabel(AXES[axis])
    ax.set_ylabel(f"|f − f*| / |f*| ({metric})" if subopt else metric)
    ax.grid(True, alpha=0.3)


def smallest_font_px(fig: Figure, dpi: int) -> float:
    """The smallest font size of ``fig``'s visible, non-empty texts (tick labels, titles, legend), in pixels at
    ``dpi``."""
    from matplotlib.text import Text

    sizes = [t.get_fontsize() for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return min(sizes, default=0.0) * dpi / 72


def _compact_png(fig: Figure, dpi: int) -> io.BytesIO:
    """PNG of ``fig`` with a 256-colour palette: a third of the size, the same look for line plots."""
    from PIL import Image

    raw = io.BytesIO()
    fig.savefig(raw, format="png", dpi=dpi)
    raw.seek(0)
    out = io.BytesIO()
    Image.open(raw).convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(out, format="png", optimize=True)
    return out


def best_known(ds: xr.Dataset, metric: str, lower: bool, references: dict[str, float]) -> dict[tuple[str, int], tuple[float, str]]:
    """f* per instance (problem, seed): the ``[[reference]]`` value of the problem (one given for a problem base
    also covers its grid points), else the best value any ok run of the instance reached at any checkpoint (a seed
    may change the data, so one seed's best is no target for another's); with where it came from."""
    out = {}
    problems, seeds = ds["problem"].values.astype(str), ds["seed"].values
    for problem, base, seed in sorted(set(zip(problems, pools(ds), seeds.tolist()))):
        ref = references.get(problem, references.get(base))
        if ref is not None:
            out[(problem, seed)] = (float(ref), "reference")
            continue
        values = ds[metric].values[(problems == problem) & (seeds == seed)]
        values = values[np.isfinite(values)]
        if values.size:
            out[(problem, seed)] = (float(values.min() if lower else values.max()), "best over the instance's runs")
    return out


def suboptimality(ds: xr.Dataset, metric: str, fstar: dict[tuple[str, int], tuple[float, str]]) -> xr.Dataset:
    """``ds`` with ``metric`` replaced by |f − f*| / |f*| per run; zeros (the run that defines f*) are drawn at a
    tenth of the smallest positive value, so a log axis keeps them without stretching to 0."""
    out = ds.copy()
    values = ds[metric].values.copy()
    for r, key in enumerate(zip(ds["problem"].values.astype(str), ds["seed"].values.tolist())):
        star = fstar.get(key, (np.nan, ""))[0]
        values[r] = np.abs(values[r] - star) / max(abs(star), 1e-300)
    positive = values[np.isfinite(values) & (values > 0)]
    floor = 0.1 * float(positive.min()) if positive.size else FLOOR
    out[metric] = (ds[metric].dims, np.where(values > floor, values, np.where(np.isfinite(values), floor, np.nan)))
    return out


def _pools(ds: xr.Dataset, split_panels: bool) -> list[tuple[str, xr.Dataset]]:
    names = pools(ds, split_panels)
    return [(pool, ds.isel(run=np.flatnonzero(names == pool))) for pool in sorted(set(names))]


def _grid_figure(n: int) -> tuple[Figure, np.ndarray]:
    ncols = min(3, n)
    nrows = -(-n // ncols)
    fig = Figure(figsize=(4.0 * ncols + 2.0, 3.2 * nrows), layout="constrained")
    axes = np.atleast_1d(fig.subplots(nrows, ncols, squeeze=False)).ravel()
    for ax in axes[n:]:
        ax.set_visible(False)
    return fig, axes


def _legend(fig: Figure, colours: dict, used: set[str], dashes: dict | None = None,
            markers: dict | None = None) -> None:
    handles = [Line2D([], [], color=colours[lb], linewidth=2, dashes=(dashes or {}).get(lb, ()) or (None, None),
                      marker=(markers or {}).get(lb), markersize=5)
               for lb in colours if lb in used]
    fig.legend(handles, [lb for lb in colours if lb in used], loc="outside right upper", frameon=False)


#: Line dash patterns, one per method (with a distinct colour each): solid first.
DASHES = ((), (6, 2), (2, 1.5), (6, 2, 1.5, 2), (10, 3), (3, 3, 1, 3, 1, 3))


#: Marker shapes, one per method on top of its colour and dash pattern.
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def headline_styles(chosen: dict[str, dict[str, str]]) -> tuple[dict[str, tuple], dict[str, tuple], dict[str, str]]:
    """Colours, dash patterns and markers for the headline figure, from each panel's label → method (best first,
    :func:`svibench.report.rank.headline`), keyed by label and ordered best first.  The methods, ordered by their
    best place in any panel, take the dash patterns and markers in turn (so the first six differ in both), and each a
    colour of the colour-blind-safe tab10 that no method sharing a panel with it has (greedily, best first), so that
    the lines of one panel differ in colour, with dashes and markers on top."""
    place: dict[str, int] = {}
    for labels in chosen.values():
        for i, method in enumerate(labels.values()):
            place[method] = min(place.get(method, i), i)
    order = sorted(place, key=lambda m: (place[m], m))
    neighbours = {m: {o for labels in chosen.values() if m in labels.values() for o in labels.values()} - {m}
                  for m in order}
    tab10, colour = sns.color_palette("tab10", 10), {}
    for i, method in enumerate(order):
        taken = {colour[o] for o in neighbours[method] if o in colour}
        colour[method] = next((c for c in range(10) if c not in taken), i % 10)
    by_label = sorted({lb: m for labels in chosen.values() for lb, m in labels.items()}.items(),
                      key=lambda item: (order.index(item[1]), item[0]))
    return ({lb: tab10[colour[m]] for lb, m in by_label},
            {lb: DASHES[order.index(m) % len(DASHES)] for lb, m in by_label},
            {lb: MARKERS[order.index(m) % len(MARKERS)] for lb, m in by_label})


def curve_figure(ds: xr.Dataset, metric: str, axis: str, colours: dict, *, dpi: int = 100, split_panels: bool = False,
                 fstar: dict[tuple[str, int], tuple[float, str]] | None = None, dashes: dict | None = None,
                 markers: dict | None = None, name: str = "") -> ReportFigure | None:
    """``metric`` of ``ds`` (ok runs) against ``axis``, one panel per pooled problem.

    With ``fstar`` the curve is the suboptimality |f − f*| / |f*| on a log axis
    (median over splits × seeds, band: their range); without, the metric itself
    (mean, band: ± 1 sd) on an axis fitted to the converging part.  ``dashes``
    (label → dash pattern) draws each label in its own line style, ``markers``
    (label → marker) with its own marker; ``name`` prefixes the file name
    (e.g. ``headline-``).
    """
    data = suboptimality(ds, metric, fstar) if fstar is not None else ds
    panels = [(pool, *resample(sub, metric, axis)) for pool, sub in _pools(data, split_panels)]
    panels = [p for p in panels if not p[1].empty]
    if not panels:
        return None
    fig, axes = _grid_figure(len(panels))
    used = set()
    for ax, (pool, df, log) in zip(axes, panels):
        _panel(ax, df, log, colours, pool, metric, axis, subopt=fstar is not None, dashes=dashes, markers=markers)
        used |= set(df["label"])
    _legend(fig, colours, used, dashes, markers)
    sources = sorted({how for _, how in (fstar or {}).values()})
    what = (f"Suboptimality |f − f*| / |f*| of {metric} (log scale; f*: {' / '.join(sources)}): median over "
            "splits × seeds (line) and their range (band)" if fstar is not None
            else f"{metric}: mean over splits × seeds (line) ± 1 sd (band)")
    return ReportFigure(
        f"{name}{'subopt-' if fstar is not None else ''}{_slug(metric)}-vs-{axis}",
        f"{'Suboptimality of ' if fstar is not None else ''}{metric} against {AXES[axis]}",
        f"{what} of ok runs, interpolated onto a common {'log-spaced ' if any(p[2] for p in panels) else ''}grid of "
        f"{GRID_POINTS} points; a run is not extended past its last checkpoint.",
        _compact_png(fig, dpi).getvalue(),
        smallest_font_px(fig, dpi),
    )


def final_figure(ds: xr.Dataset, metric: str, colours: dict, *, dpi: int = 100, split_panels: bool = False,
                 fstar: dict[tuple[str, int], tuple[float, str]] | None = None) -> ReportFigure | None:
    """Strip plot of every ok run's final ``metric`` (suboptimality with ``fstar``), one panel per pooled problem."""
    data = suboptimality(ds, metric, fstar) if fstar is not None else ds
    frames = []
    for pool, sub in _pools(data, split_panels):
        finals = pairs(sub, metric, split_panels).dropna(subset=["value"])
        frames.append(finals.assign(pool=pool))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if df.empty:
        return None
    pools = sorted(df["pool"].unique())
    fig, axes = _grid_figure(len(pools))
    labels = [lb for lb in colours if lb in set(df["label"])]
    for ax, pool in zip(axes, pools):
        sub = df[df["pool"] == pool]
        order = [lb for lb in labels if lb in set(sub["label"])]
        sns.stripplot(data=sub, x="value", y="label", hue="label", order=order, hue_order=order, palette=colours,
                      ax=ax, legend=False, size=6, jitter=0.15, alpha=0.8)
        if fstar is not None:
            ax.set_xscale("log")
        ax.set_title(pool, fontsize=10)
        ax.set_xlabel(f"|f − f*| / |f*| of {metric}" if fstar is not None else f"final {metric}")
        ax.set_ylabel("")
        ax.grid(True, axis="x", alpha=0.3)
    return ReportFigure(
        f"final-{'subopt-' if fstar is not None else ''}{_slug(metric)}",
        f"Final {'suboptimality of ' if fstar is not None else ''}{metric}, every run",
        "One dot per ok run (seed × split) at its last checkpoint.",
        _compact_png(fig, dpi).getvalue(),
    )


def profile_figure(ratios: pd.DataFrame, colours: dict, target: str, *, dpi: int = 100) -> ReportFigure:
    """Performance profile: ρ_a(τ) against τ (log x), one step curve per algorithm (Dolan & Moré 2002)."""
    fig = Figure(figsize=(7.5, 3.6), layout="constrained")
    ax = fig.subplots()
    finite = ratios.to_numpy()[np.isfinite(ratios.to_numpy())]
    taus = np.geomspace(1.0, max(2.0, 1.5 * float(finite.max()) if finite.size else 2.0), 400)
    for label in ratios.columns:
        rho = performance_profile(ratios[[label]], tuple(taus)).loc[label, list(taus)].to_numpy(dtype=float)
        ax.step(taus, rho, where="post", color=colours.get(label), label=label, linewidth=2)
    ax.set_xscale("log")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("τ (CPU time / fastest CPU time on the instance)")
    ax.set_ylabel("fraction of instances")
    ax.grid(True, alpha=0.3)
    fig.legend(loc="outside right upper", frameon=False)
    return ReportFigure("performance-profile", f"Performance profile: time to the {target} target",
                        "Fraction of instances (problem × seed) on which an algorithm reaches the target within τ × "
                        "the fastest algorithm's CPU time on that instance (Dolan & Moré 2002); right end: the fraction "
                        "it reaches at all.", _compact_png(fig, dpi).getvalue())


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
