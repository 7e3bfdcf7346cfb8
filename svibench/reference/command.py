"""``svibench reference STUDY.toml``: compute (or reuse) the reference posterior of each of a study's problems."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the command imports what it uses when it runs: `svibench --help` builds this parser at once
    from svibench.spec import ProblemSpec

    from .build import Made

__all__ = ["add_parser", "study_problems", "describe"]


def study_problems(study_file: str, names: list[str], scale: str, plugins: tuple[str, ...]) -> list[ProblemSpec]:
    """The study's problems (one per key, in study order), those named by ``names`` (a name or its grid's base)."""
    from svibench.study import load_study

    from .artifact import ReferenceError

    problems = {run.problem.key(): run.problem for run in load_study(study_file, scale=scale, plugins=plugins).runs}
    chosen = [p for p in problems.values() if not names or {p.name, p.base} & set(names)]
    unknown = [n for n in names if not any(n in (p.name, p.base) for p in problems.values())]
    if unknown:
        listed = ", ".join(sorted({p.name for p in problems.values()}))
        raise ReferenceError(f"--problem {unknown[0]!r} is not a problem of {study_file}; its problems: {listed}")
    return chosen


def describe(spec: ProblemSpec, made: Made) -> str:
    """One line: what was done, where, how long, and the diagnostics."""
    meta = made.reference.meta
    what = "computed" if made.computed else "reused"
    if meta["method"] == "exact":
        return f"{spec.name}: {what} {made.path} (exact posterior)"
    d, s = meta["diagnostics"], meta["sampler"]
    state = "passed" if d["passed"] else "FAILED the floor, stored with --force: " + "; ".join(d["failures"])
    return (f"{spec.name}: {what} {made.path} ({s['chains']} chains × {s['draws']} draws after {s['warmup']} warm-up, "
            f"{meta['seconds']['cpu']:.0f} CPU s; R̂ max {d['rhat_max']:.4f}, ESS bulk min {d['ess_bulk_min']:.0f}, "
            f"tail min {d['ess_tail_min']:.0f}, {d['ess_bulk_min_per_cpu_second']:.1f} bulk ESS/CPU s; {state})")


def run(args: argparse.Namespace) -> int:
    """Make each chosen problem's reference; a problem whose model cannot have one is skipped (an error if named)."""
    from svibench.problem import build_model

    from .artifact import ReferenceError
    from .build import make_reference
    from .capability import reference_kind
    from .diagnostics import Floor
    from .sampling import SamplerSettings

    plugins = tuple(str(Path(p).resolve()) for p in args.plugin)
    settings = SamplerSettings(args.chains, args.warmup, args.draws, args.thin, args.seed)
    floor, status = Floor(args.rhat_max, args.ess_min), 0
    for spec in study_problems(args.study, args.problem, args.scale, plugins):
        model = build_model(spec, plugins, cache=False)
        if reference_kind(model) is None:
            if args.problem:
                raise ReferenceError(f"{spec.name}: model {spec.model!r} cannot give a reference posterior yet")
            print(f"{spec.name}: skipped (model {spec.model!r} offers no reference posterior)")
            continue
        try:
            print(describe(spec, make_reference(spec, model, settings, floor, args.force,
                                                Path(args.output) if args.output else None)), flush=True)
        except ReferenceError as exc:
            print(f"svibench: error: {exc}", flush=True)
            status = 1
    return status


def add_parser(sub) -> None:
    """The ``reference`` command's options."""
    p = sub.add_parser("reference", help="compute (or reuse) the reference posteriors of a study's problems")
    p.add_argument("study", help="the study's TOML file (its [[problem]]s, at --scale)")
    p.add_argument("--problem", action="append", default=[], metavar="NAME",
                   help="only this problem (a name, or a [[problem]]'s name for all its grid points); repeatable")
    p.add_argument("--scale", default="default", help="a [scales.NAME] of the study")
    p.add_argument("--force", action="store_true", help="compute again even if stored, and store it even when its "
                   "diagnostics fail the floor (marked so)")
    p.add_argument("-o", "--output", help="references folder (default: $SVIBENCH_REFERENCE_DIR or the repository's "
                   "references/; runs read theirs from there)")
    p.add_argument("--chains", type=int, default=4, help="chains, started from different seeds and starts (default 4)")
    p.add_argument("--warmup", type=int, default=1000, help="discarded sweeps per chain (default 1000)")
    p.add_argument("--draws", type=int, default=5000, help="kept draws per chain (default 5000)")
    p.add_argument("--thin", type=int, default=1, help="keep every THIN-th sweep (default 1)")
    p.add_argument("--seed", type=int, default=0, help="root seed of the chains (default 0)")
    p.add_argument("--rhat-max", type=float, default=1.01, help="floor: every coordinate's split-R̂ below (1.01)")
    p.add_argument("--ess-min", type=float, default=400.0, help="floor: every bulk and tail ESS at least (400)")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE", help="load algorithms from a Python file")
    p.set_defaults(func=run)
