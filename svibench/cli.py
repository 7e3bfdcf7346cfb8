"""The ``svibench`` command line: list, describe, run, report, regenerate, reference, check, new."""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Callable

from .errors import UserError
from .reference import command as reference

# The commands import what they use when they run, so that `svibench --help` and a command's --help start at once
# (xarray, numba, scipy.stats and the registry's modules cost about 2 CPU s to import).

__all__ = ["main"]


def _cmd_describe(args: argparse.Namespace) -> int:
    from .catalogue import describe_text

    print(describe_text(args.name, _plugins(args.plugin)))
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    from .catalogue import list_text
    from .data import data_dir

    plugins = tuple(str(Path(p).resolve()) for p in args.plugin)  # a plugin that fails is listed with why
    if args.params:
        from .describe import describe_all
        from .registry import get_registry

        print(describe_all(get_registry(plugins)))
        return 0
    print(list_text(plugins))
    print(f"Data directory: {data_dir()} (SVIBENCH_DATA_DIR sets it)")
    return 0


def _executor(args: argparse.Namespace, workers: int) -> Callable:
    """The executor the options ask for, configured (it is called with the runs and ``on_progress``)."""
    from .executors import require_distributed, run_dask, run_local

    memory = int(args.memory_limit * 2**30) if args.memory_limit else None
    if args.executor == "dask":
        require_distributed()
        return partial(run_dask, address=args.address, workers=workers, retries=args.retries, memory_limit=memory)
    return partial(run_local, workers=workers, retries=args.retries, memory_limit=memory)


def _workers(args: argparse.Namespace, runs: int) -> int:
    """How many runs execute at once: the size of the cluster at --address, else --workers (default: the cores)
    capped at the study's runs and this machine's cores, with a one-line warning when the cap bites."""
    from .executors import ExecutorError, dask_slots

    if args.address and args.executor != "dask":
        raise ExecutorError("--address needs --executor dask")
    if args.address:
        if args.memory_limit:
            raise ExecutorError("--memory-limit limits the workers svibench starts; a running cluster's workers take "
                                "it from `dask worker --memory-limit ...`: drop --memory-limit or --address")
        workers = dask_slots(args.address)  # a cluster of its own size: checked (and reached) before any work
        if workers == 0 and not args.quiet:
            print(f"the scheduler at {args.address} has no workers yet: runs wait until `dask worker` processes join")
        return workers
    cores = os.cpu_count() or 1
    workers = max(1, min(args.workers or cores, runs, cores))
    if args.workers and workers < args.workers:
        print(f"svibench: warning: --workers {args.workers}: using {workers} (the study has {runs} run(s), this machine "
              f"{cores} core(s))", file=sys.stderr)
    return workers


class CliError(UserError, RuntimeError):
    """An option the command cannot use (the message says which and what to give instead)."""


def _plugins(files: list[str]) -> tuple[str, ...]:
    """The --plugin files, resolved; each one must load and define something, used by the study or not."""
    if not files:
        return ()
    from .registry import get_registry

    plugins = tuple(str(Path(p).resolve()) for p in files)
    unavailable = get_registry(plugins).unavailable
    for path in plugins:
        reason = unavailable.get(f"plugin file {path}")
        if reason:
            raise CliError(f"--plugin {path}: {reason}; fix the file or drop the option")
    return plugins


def _folder(path: Path, option: str) -> Path:
    """An output folder (created later if missing); an existing file there is refused."""
    if path.exists() and not path.is_dir():
        raise CliError(f"{option} {path} is a file; give a folder (it is created if missing)")
    return path


def _cmd_run(args: argparse.Namespace) -> int:
    from .reference.attach import missing_notes
    from .registry import get_registry
    from .study import load_study
    from .sweep import run_study

    study = load_study(args.study, scale=args.scale, plugins=_plugins(args.plugin))
    out = _folder(Path(args.output) if args.output else Path(args.study).resolve().parent / "results", "-o")
    workers = _workers(args, len(study.runs))
    if args.memory_limit:
        from .memory import check_worker_limit

        check_worker_limit(int(args.memory_limit * 2**30), args.executor)
    if args.plan:
        return _plan_run(study, out, workers, args)
    executor = _executor(args, workers)  # e.g. dask.distributed missing: an error before anything is written
    if not args.quiet:
        print(f"study {study.name!r} ({study.scale} scale): {len(study.runs)} runs, {workers} worker(s) -> {out}")
        for skip in study.skipped:
            print(f"  skipped {skip.algorithm} on {skip.problem}: {skip.reason}")
        problems = {run.problem.key(): run.problem for run in study.runs}
        for note in missing_notes(list(problems.values()), get_registry(study.plugins)):
            print(f"  {note}")
    try:
        result = run_study(
            study, out, executor,
            resume=not args.no_resume, retry_failed=not args.keep_failed, force=args.force,
            progress=False if args.quiet else None,
            execution={"executor": args.executor, "parallel_workers": workers if len(study.runs) > 1 else 1,
                       **({"scheduler": args.address} if args.address else {})},
            memory_limit=int(args.memory_limit * 2**30) if args.memory_limit else None,
        )
    except KeyboardInterrupt:
        print(f"\ninterrupted: the finished runs are saved in {out}; run the same command again to resume "
              "(only the missing runs will run)", file=sys.stderr)
        return 130
    if result.corrupt:
        print(f"unreadable run files (run again): {', '.join(result.corrupt)}", file=sys.stderr)
    if not args.quiet:
        print(f"{len(result.executed)} runs made, {len(result.reused)} already on disk")
    if args.no_report:
        if not args.quiet:
            print(_final_metrics_text(out))
        return _exit_status(result.statuses, args.quiet)
    from .report import write_report  # seaborn/matplotlib load only when a report is written

    try:
        report = write_report(out, out / "report")
    except KeyboardInterrupt:
        return _report_interrupted(out, out / "report")
    if not args.quiet:
        print(_first_screen_text(report) or _final_metrics_text(out))
        print(f"report: {report.html} (open it in a browser; Markdown: {report.markdown.name})")
    return _exit_status(result.statuses, args.quiet)


def _first_screen_text(report) -> str:
    """The report's first-screen ranking as text (its title, the table, where its columns are explained); empty if
    the report has none."""
    import pandas as pd

    table = next((t for t in report.tables if t.title.startswith("Ranking: ")), None)
    if table is None:
        return ""
    text = pd.DataFrame(table.rows, columns=table.columns).to_string(index=False)
    return f"{table.title}\n{text}\n(as the report's first screen; its columns are explained under the table there)"


def _plan_run(study, out: Path, workers: int, args: argparse.Namespace) -> int:
    """``run --plan``: the runs this command would make (those not kept in ``out``), their estimated CPU time and
    wall clock on ``workers`` (:mod:`svibench.plan`); nothing is run or written."""
    from .plan import format_study, plan_studies
    from .sweep import pending_runs

    pending = pending_runs(study, out, resume=not args.no_resume, retry_failed=not args.keep_failed, force=args.force)
    if not pending.todo:
        print(f"all {len(study.runs)} runs of {study.name!r} are in {out}: nothing to make")
        return 0
    if pending.kept:
        print(f"{len(pending.kept)} of {len(study.runs)} runs are already in {out} and are kept; the plan is of the "
              f"{len(pending.todo)} to make")
    print(format_study(next(plan_studies([replace(study, runs=pending.todo)], workers, cache=True)), workers))
    return 0


def _final_metrics_text(out: Path) -> str:
    """The report's final-metrics table as text (runs not ok, blown-up ones included, left out of the means, as in
    the report)."""
    import pandas as pd

    from .health import open_judged
    from .report.tables import final_metrics

    from .settings import ReportSettings
    from .results import metric_info

    ds = open_judged(out, skip_corrupt=True)
    manifest = json.loads((out / "manifest.json").read_text())
    table = final_metrics(ds, ReportSettings.parse(manifest.get("report")).shown(metric_info(ds)))
    return pd.DataFrame(table.rows, columns=table.columns).to_string(index=False)


def _exit_status(statuses: dict[str, str], quiet: bool) -> int:
    """1 if any run of the study failed or timed out, else 0; says so, with the counts, in the last line.

    A diverged run is a result (the algorithm diverged at those settings), not a fault: it does not
    change the exit status.
    """
    counts = Counter(statuses.values())
    faults = counts["failed"] + counts["timeout"]
    line = (f"{len(statuses)} runs: {counts['ok']} ok, {counts['diverged']} diverged, {counts['failed']} failed, "
            f"{counts['timeout']} timed out")
    if faults:
        print(f"{line}; exit status 1 (see `message` in the results)", file=sys.stderr)
    elif not quiet:
        print(line)
    return 1 if faults else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from .report import write_report

    out = _folder(Path(args.output), "-o")
    try:
        report = write_report(args.results, out, study=args.study, all_metrics=args.metrics == "all")
    except KeyboardInterrupt:
        return _report_interrupted(Path(args.results), out)
    print(f"report: {report.html} ({len(report.figures)} figures; Markdown: {report.markdown})")
    if report.unreadable:
        level, status = ("warning", 0) if args.allow_missing else ("error", 1)
        print(f"svibench: {level}: {len(report.unreadable)} unreadable run file(s) in {args.results} were left out of "
              f"the report: {', '.join(report.unreadable)}; run the study again to remake them"
              + ("" if args.allow_missing else " (--allow-missing: exit 0)"), file=sys.stderr)
        return status
    return 0


def _report_interrupted(results: Path, out: Path) -> int:
    """Ctrl-C while a report is written: the runs are on disk; one line says how to finish the report (exit 130)."""
    print(f"\ninterrupted while writing the report: the runs are saved in {results}; "
          f"`svibench report {results} -o {out}` writes it", file=sys.stderr)
    return 130


def _cmd_regenerate(args: argparse.Namespace) -> int:
    from .regenerate import plan, regenerate

    if args.plan:
        plan(args.reports, args.studies, scale=args.scale, workers=args.workers)
        return 0

    done = regenerate(args.reports, args.studies, scale=args.scale, workers=args.workers, executor=args.executor)
    bad = [f"{d.study}: {n} {s}" for d in done for s, n in Counter(d.statuses.values()).items() if s not in ("ok", "diverged")]
    if bad:
        print(f"runs not ok ({'; '.join(bad)}): see 'Runs not ok' in the reports", file=sys.stderr)
    return 1 if bad else 0


def _cmd_check(args: argparse.Namespace) -> int:
    from .registry import RegistryError
    from .testing import cli_check

    bad = [item for item in args.known_failure if "=" not in item]
    if bad:
        raise RegistryError(f"--known-failure takes CHECK=REASON, got {bad[0]!r}")
    known = dict(item.split("=", 1) for item in args.known_failure)
    return cli_check(args.target, plugins=args.plugin, known_failures=known)


def _cmd_new(args: argparse.Namespace) -> int:
    from .scaffold import ScaffoldError, new_algorithm

    try:
        written = new_algorithm(args.name, args.dir)
    except ScaffoldError as exc:
        print(f"svibench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`svibench list | head`): no traceback, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    folder = written[0].parent
    print("wrote " + ", ".join(str(path) for path in written))
    print(f"next: pip install -e {folder}   # then `svibench list` shows {args.name!r}\n"
          f"      svibench check {args.name}   # or: pytest {folder}")
    return 0


def _at_least_one(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r} "
                                         "(leave --workers out for one per core)")
    return value


def _positive_gib(text: str) -> float:
    """An argparse type: a positive number of GiB."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of GiB, got {text!r} (leave --memory-limit out "
                                         "for no limit)")
    return value


def _add_run(sub) -> None:
    """The ``run`` command's options (the longest list; kept apart from :func:`build_parser`)."""
    p = sub.add_parser("run", help="run a study file")
    p.add_argument("study", help="the study's TOML file")
    p.add_argument("-o", "--output", help="results folder (default: results/ beside the study file)")
    p.add_argument("--workers", type=_at_least_one, default=0, help="worker processes (default: number of cores; capped at the runs and the cores)")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="local worker processes (default) or Dask distributed")
    p.add_argument("--address", help="with --executor dask: a running scheduler, e.g. tcp://127.0.0.1:8786 "
                   "(default: start a LocalCluster)")
    p.add_argument("--retries", type=int, default=1, help="restarts of a run whose worker died (default 1)")
    p.add_argument("--memory-limit", type=_positive_gib, default=0, metavar="GiB",
                   help="address-space limit per local worker process, or memory limit per Dask LocalCluster worker "
                        "(a run over it ends failed); "
                        "a run whose model estimates more memory than this is refused before any run")
    p.add_argument("--scale", default="default", help="a [scales.NAME] of the study, e.g. 'paper'")
    p.add_argument("--no-resume", action="store_true", help="make every run again even if it is on disk")
    p.add_argument("--keep-failed", action="store_true", help="when resuming, do not retry failed/timed-out runs")
    p.add_argument("--force", action="store_true", help="add to a results folder of a different study version")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE", help="load algorithms from a Python file")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    p.add_argument("--plan", action="store_true",
                   help="run and write nothing: print the runs this command would make, their estimated CPU time "
                        "(from a timed first checkpoint) and the wall clock on --workers")
    p.add_argument("--no-report", action="store_true",
                   help="do not write the report (default: index.html, summary.md, figures/ in OUT/report; "
                        "the committed reports beside the study files are rebuilt by `svibench regenerate`)")
    p.set_defaults(func=_cmd_run)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="svibench", description="Compare stochastic variational inference algorithms.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="algorithms, models, datasets and which pairs are compatible")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE", help="load algorithms from a Python file")
    p.add_argument("--params", action="store_true", help="describe every one instead (as `svibench describe NAME`)")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("describe", help="the parameters a study may set for an algorithm, model or dataset, and more")
    p.add_argument("name", help="an algorithm, model or dataset name (`svibench list` shows them)")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE", help="load algorithms from a Python file")
    p.set_defaults(func=_cmd_describe)

    _add_run(sub)

    p = sub.add_parser("regenerate", help="rebuild the committed reports and their index at a clean HEAD")
    p.add_argument("studies", nargs="*", metavar="STUDY", help="study folder names under REPORTS (default: all)")
    p.add_argument("--reports", default="reports", help="the folder of study folders (default: reports)")
    p.add_argument("--scale", default="default", help="a [scales.NAME] of every study, e.g. 'paper'")
    p.add_argument("--workers", type=_at_least_one, default=1, help="worker processes (default 1: serial timings)")
    p.add_argument("--executor", choices=("local", "dask"), default="local",
                   help="local worker processes (default) or a Dask LocalCluster of --workers processes")
    p.add_argument("--plan", action="store_true",
                   help="run and write nothing: print each study's runs, their estimated CPU time (from a timed first "
                        "checkpoint) and the total wall clock on --workers")
    p.set_defaults(func=_cmd_regenerate)

    p = sub.add_parser("report", help="write an HTML and Markdown report of saved results")
    p.add_argument("results", help="a results folder written by `svibench run`")
    p.add_argument("-o", "--output", required=True, help="folder for index.html, summary.md and figures/")
    p.add_argument("--study", help="take the claims, references, paper numbers and [report] from this study file "
                                   "instead of the copy saved with the results")
    p.add_argument("--allow-missing", action="store_true",
                   help="exit 0 even when unreadable run files were left out of the report (they are named on stderr)")
    p.add_argument("--metrics", choices=("shown", "all"), default="shown",
                   help="figures and final metrics of the study's [report] plot or the models' primary metrics "
                        "(default), or of every recorded one")
    p.set_defaults(func=_cmd_report)

    reference.add_parser(sub)

    p = sub.add_parser("check", help="run the conformance suite on an algorithm plugin")
    p.add_argument("target", metavar="PLUGIN", help="a plugin file, or a registry or entry-point name")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE", help="load algorithms from a Python file")
    p.add_argument("--known-failure", action="append", default=[], metavar="CHECK=REASON",
                   help="a check expected to fail (reported as xfail)")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("new", help="scaffold a plugin package that passes the conformance suite")
    p.add_argument("kind", choices=["algorithm"])
    p.add_argument("name", help="registry name, e.g. damped-vmp")
    p.add_argument("--dir", help="folder to write (default: ./svibench-NAME)")
    p.set_defaults(func=_cmd_new)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except UserError as exc:
        print(f"svibench: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`svibench list | head`): no traceback, as Python's docs advise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
