"""Study files: problems × algorithms (with hyperparameter grids) × seeds × budget.

A study is a TOML file (read with the standard library's ``tomllib``)::

    [study]
    name = "quickstart"
    seeds = [0, 1, 2]
    timeout = 600                 # optional, seconds of wall-clock per run
    # score_reference = "last"    # optional: score q against a reference posterior at the last checkpoint only

    [budget]                      # any of iterations / epochs / seconds
    iterations = 200
    checkpoints = 20              # how many, log-spaced (or spacing = "linear", or at = [...])
    # until_converged = { metric = "elbo", tolerance = 1e-4, window = 0.1 }   # optional: stop once it levels off;
    #                               # the limits above are then the cap (e.g. seconds = 600 of CPU)

    [[problem]]
    model = "gmm"
    dataset = "gmm-synthetic"
    dataset_params = { n = 2000 }
    # budget = { iterations = 10, at = [1, 2, 5, 10] }   # optional: its own keys over [budget], at every scale

    [[algorithm]]
    name = "svi"
    params = { batch_size = 100, kappa = [0.6, 0.9] }   # a list is a grid
    # label = "SVI", method = "SVI"   # optional: the name in reports, and the method it is a variant of

    [scales.paper]                # `svibench run --scale paper` merges these in
    seeds = [0, 1, 2, 3, 4]
    dataset_params = { n = 100000 }
    problems = ["gmm/synthetic"]  # optional: only these [[problem]]s run at this scale

    [[paper]]                     # published numbers, for the report
    problem = "gmm/synthetic"
    algorithm = "SVI"
    metric = "elbo"
    value = -1.0

    claim = "table1"              # optional: the [[claim]] these numbers belong to

    [report]                      # see svibench.settings
    target = { metric = "elbo", relative = 0.001 }

    [[claim]]                     # a checked statement of the paper; see svibench.claims.schema
    id = "table1"
    source = "Table 1"
    kind = "value"                # or "order": better beat worse by >= margin on a metric
    tolerance = 0.05

    [[reference]]                 # a problem's best known value f*, for the suboptimality figures
    problem = "gmm/synthetic"
    metric = "elbo"
    value = -0.9
    how = "VMP run to convergence"

Validation of every section, ``[report]`` included, happens at load, before any
work: every error names the key, what was expected and what was found, in one
line.  One parser per section (``_parse_scales``, ``_parse_study_table``,
``_parse_budget``, ``_parse_problems``, ``_parse_algorithms``, ``_parse_paper``,
``_parse_report``, ``_parse_claims`` for ``[[claim]]`` and ``[[reference]]``, see
:mod:`svibench.claims.schema`; a claim's ``note`` quotes measured numbers only through placeholders or
tags, see :mod:`svibench.claims.notes`).
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import itertools
import subprocess
import tomllib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from .authors_code import AuthorsError, match_problems
from . import describe as documented
from .errors import UserError
from .metrics import DERIVED, MetricError, check_declaration
from .registry import AlgorithmEntry, Registry, RegistryError, accepted_params, get_registry
from .claims.schema import (Claim, Reference, check_names, parse_claims, parse_references, scale_claims, skip_reasons,
                            skipped_not_run)
from .claims.notes import check_text
from .settings import ReportError, ReportSettings
from .spec import SCORE_REFERENCE, Budget, Checkpoints, ProblemSpec, RunSpec, UntilConverged, canonical_json

__all__ = ["Study", "StudyError", "load_study", "parse_study"]


class StudyError(UserError, ValueError):
    """A study file that cannot be run; the message names the key and the fix."""


TOP_KEYS = {"study", "budget", "problem", "algorithm", "scales", "paper", "report", "claim", "target", "reference"}
STUDY_KEYS = {"name", "description", "seeds", "timeout", "score_reference"}
BUDGET_KEYS = {"iterations", "epochs", "seconds", "checkpoints", "spacing", "at", "until_converged"}
UNTIL_KEYS = {"metric", "tolerance", "window", "least"}
PROBLEM_KEYS = {"name", "model", "dataset", "model_params", "dataset_params", "budget"}
ALGORITHM_KEYS = {"name", "label", "method", "params", "models", "problems"}
SCALE_KEYS = {"seeds", "budget", "problem_budget", "timeout", "model_params", "dataset_params", "algorithm_params",
              "problems", "methods", "claim"}
PAPER_KEYS = {"problem", "algorithm", "metric", "value", "sd", "note", "claim", "versus", "iteration", "decimals"}
#: A plotted metric gets a warning at load below this many checkpoints per run (too few to show convergence).
MIN_CHECKPOINTS = 10


@dataclass(frozen=True)
class Skipped:
    """An algorithm–problem pair that cannot run, and why (``algorithm``: the entry's label; ``method``: its method)."""

    problem: str
    algorithm: str
    reason: str
    method: str


@dataclass(frozen=True)
class AlgorithmPoint:
    """One point of an ``[[algorithm]]`` grid: its registry entry, parameters, label, method, the
    parameters the grid varies here (``variant``) and the models and problems it is restricted to (None: all)."""

    entry: AlgorithmEntry
    params: dict[str, Any]
    label: str
    method: str
    variant: dict[str, Any]
    models: frozenset[str] | None
    problems: frozenset[str] | None = None

    def runs_on(self, problem: ProblemSpec) -> bool:
        """Whether the study asks for this entry on ``problem`` (by model, and by problem name or its grid's base)."""
        return ((self.models is None or problem.model in self.models)
                and (self.problems is None or bool({problem.name, problem.base} & self.problems)))


@dataclass
class Study:
    """A validated study, expanded into runs."""

    name: str
    description: str
    runs: list[RunSpec]
    skipped: list[Skipped]
    paper: list[dict[str, Any]]
    report: dict[str, Any]
    source: str
    scale: str
    plugins: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    #: Problem name → the file of the paper's own code's trajectories on it ([report] authors).
    authors: dict[str, str] = field(default_factory=dict)

    @property
    def hash(self) -> str:
        """Identity of what the runs compute (not of comments or report settings)."""
        ids = sorted(run.run_id for run in self.runs)
        return hashlib.sha1(canonical_json([self.name, ids]).encode()).hexdigest()[:16]


def load_study(path: str | Path, *, scale: str = "default", plugins: tuple[str, ...] = ()) -> Study:
    """Read and validate a study file (``scale`` picks a ``[scales.NAME]`` override)."""
    path = Path(path)
    if path.is_dir():
        inside = sorted(path.glob("*.toml"))
        raise StudyError(f"{path} is a directory; give the study file, e.g. {inside[0] if inside else path / 'study.toml'}")
    if not path.is_file():
        raise StudyError(f"study file {path} does not exist")
    try:
        text = path.read_text()
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise StudyError(f"{path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError:
        raise StudyError(f"{path} is not a UTF-8 text file") from None
    return parse_study(raw, source=str(path), scale=scale, plugins=plugins, text=text)


def _type_name(value: Any) -> str:
    return f"{value!r} ({type(value).__name__})"


def _check_keys(table: Any, allowed: set[str], where: str) -> dict[str, Any]:
    if not isinstance(table, dict):
        raise StudyError(f"{where}: expected a table, got {_type_name(table)}")
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise StudyError(f"{where}: unknown key {unknown[0]!r}; valid keys: {', '.join(sorted(allowed))}")
    return table


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise StudyError(f"{where}: expected a table, got {_type_name(value)}")
    return value


def _positive(value: Any, where: str, kind: type) -> Any:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) if kind is float else (
        isinstance(value, int) and not isinstance(value, bool)
    )
    if not ok or value <= 0:
        raise StudyError(f"{where}: expected a positive {'number' if kind is float else 'integer'}, got {_type_name(value)}")
    return kind(value)


def _merge(base: dict, override: dict) -> dict:
    out = dict(base)
    for key, value in override.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _grid(params: Any, where: str) -> list[tuple[dict[str, Any], list[str]]]:
    """Cartesian product of list-valued params → [(params, names varied)]."""
    if not isinstance(params, dict):
        raise StudyError(f"{where}: expected a table of parameters, got {_type_name(params)}")
    keys = sorted(params)
    axes = []
    for key in keys:
        value = params[key]
        if isinstance(value, list):
            if not value:
                raise StudyError(f"{where}.{key}: empty grid; give at least one value")
            axes.append(value)
        else:
            axes.append([value])
    varied = [k for k in keys if isinstance(params[k], list) and len(params[k]) > 1]
    return [(dict(zip(keys, combo)), varied) for combo in itertools.product(*axes)]


def _check_params(given: dict[str, Any], func: Any, names: list[str], where: str, owner: str,
                  declared: Sequence[documented.Param] = ()) -> None:
    """Names must exist; a value must match the type of the default where there is one, and the documented range or
    set of the parameter (``declared``: :mod:`svibench.describe`, what ``svibench describe`` prints), and a parameter
    documented as "not possible in a study" is refused."""
    documented = {p.name: p for p in declared}
    for key, value in given.items():
        if key not in names:
            raise StudyError(f"{where}: {owner} has no parameter {key!r}; valid: {', '.join(names) or '(none)'}")
        refusal = documented[key].refusal(value) if key in documented else ""
        if refusal:
            raise StudyError(f"{where}: {owner}: {refusal} (svibench describe shows what it takes)")
        param = inspect.signature(func).parameters.get(key)
        default = param.default if param is not None else inspect.Parameter.empty
        if default is inspect.Parameter.empty or default is None:
            continue
        expected = type(default)
        ok = isinstance(value, expected) or (expected is float and isinstance(value, int))
        if isinstance(value, bool) != isinstance(default, bool):
            ok = False
        if not ok:
            raise StudyError(f"{where}.{key}: expected {expected.__name__} (like the default {default!r}), got {_type_name(value)}")


def parse_study(
    raw: dict[str, Any],
    *,
    source: str = "<study>",
    scale: str = "default",
    plugins: tuple[str, ...] = (),
    text: str = "",
    registry: Registry | None = None,
) -> Study:
    """Validate a parsed study table, every section of it, and expand it into :class:`RunSpec` s."""
    registry = registry or get_registry(tuple(plugins))
    _check_keys(raw, TOP_KEYS, source)
    overrides = _parse_scales(raw.get("scales", {}), scale, source)
    name, description, seeds, timeout, score_reference = _parse_study_table(raw.get("study", {}), overrides)
    every_problem, budgets = _parse_problems(raw.get("problem"), overrides, registry, raw.get("budget", {}))
    problems = _scale_problems(every_problem, overrides.get("problems"))
    runs, skipped = [], []
    points = _parse_algorithms(raw.get("algorithm"), overrides, registry, every_problem)
    if overrides.get("algorithm_params"):  # the notes may name every label of the study, as problems of every scale
        labels = {p.label for p in points + _parse_algorithms(raw.get("algorithm"), {}, registry, every_problem)}
    else:
        labels = {p.label for p in points}
    kept = _scale_methods(points, overrides.get("methods"), scale)
    dropped = {p.method for p in points} - {p.method for p in kept}
    points = kept
    for point in points:
        for problem in problems:
            if not point.runs_on(problem):
                continue  # the study asks for this entry on other models or problems only
            reason = point.entry.incompatibility(registry.model(problem.model), point.params)
            if reason:
                skipped.append(Skipped(problem.name, point.label, reason, point.method))
                continue
            budget, checkpoints = budgets[problem.name]
            runs.extend(RunSpec(name, problem, point.entry.name, point.label, point.params, seed, budget, checkpoints,
                                timeout, tuple(plugins), point.method, point.variant, score_reference) for seed in seeds)
    ids = [r.run_id for r in runs]
    if len(set(ids)) != len(ids):
        raise StudyError("[[algorithm]]: two entries describe the same runs (same algorithm and parameters); remove one")
    if not runs:
        reasons = "; ".join(f"{s.algorithm} on {s.problem}: {s.reason}" for s in skipped)
        raise StudyError(f"no algorithm in the study can run on any of its problems: {reasons}")
    paper = _parse_paper(raw.get("paper", []))
    info = {m: meta for p in problems for m, meta in registry.model(p.model).metrics.items()}
    metrics = set(info)
    report = _parse_report(raw.get("report", {}), metrics)
    unrun = skip_reasons(vars(s) for s in skipped)
    unrun.update({m: f"not among the {scale} scale's methods = [...]" for m in dropped})
    claims, references = _parse_claims(raw, paper, problems, runs, info, report, every_problem, scale, labels, unrun,
                                       _commits(source))
    for checkpoints in {budgets[p.name][1] for p in problems}:
        _warn_few_checkpoints(checkpoints, report, {m for m in metrics if not info[m].tracked_by})
    authors = _parse_authors(report, source, problems)
    return Study(name, description, runs, skipped, paper, report, source, scale, tuple(plugins), raw | {"_text": text},
                 claims, references, authors)


def _parse_authors(report: dict[str, Any], source: str, problems: list[ProblemSpec]) -> dict[str, str]:
    """``[report] authors``: the folder (relative to the study file) of the trajectories of the paper's own code,
    matched to the problems run on the same split and checked against their prior (:func:`match_problems`)."""
    if "authors" not in report:
        return {}
    folder = Path(source).parent / report["authors"]
    if not folder.is_dir():
        raise StudyError(f"[report] authors: {folder} is not a folder (the path is relative to the study file)")
    try:
        return match_problems(folder, [(p.name, p.dataset, p.model_params, p.dataset_params) for p in problems])
    except AuthorsError as exc:
        raise StudyError(f"[report] authors: {exc}") from None


def _parse_scales(scales: Any, scale: str, source: str) -> dict[str, Any]:
    """Check every ``[scales.NAME]`` table; return the one ``scale`` picks (empty for the default)."""
    if not isinstance(scales, dict):
        raise StudyError(f"[scales]: expected a table of named scales, got {_type_name(scales)}")
    if scale != "default" and scale not in scales:
        raise StudyError(f"{source}: no [scales.{scale}] table; available scales: default{''.join(', ' + s for s in sorted(scales))}")
    for name, table in scales.items():
        _check_keys(table, SCALE_KEYS, f"[scales.{name}]")
        for key in ("budget", "problem_budget", "model_params", "dataset_params", "algorithm_params", "claim"):
            _table(table.get(key, {}), f"[scales.{name}] {key}")
        for claim, own in table.get("claim", {}).items():
            _table(own, f"[scales.{name}] claim.{claim}")
        for problem, own in table.get("problem_budget", {}).items():
            _check_keys(_table(own, f"[scales.{name}] problem_budget.{problem}"), BUDGET_KEYS,
                        f"[scales.{name}] problem_budget.{problem}")
    return scales[scale] if scale != "default" else {}


def _parse_study_table(table: Any, overrides: dict[str, Any]) -> tuple[str, str, list[int], float | None, str]:
    """``[study]``: name, description, seeds (a list or a count), the optional per-run timeout and when runs are
    scored against a reference posterior (:data:`~svibench.spec.SCORE_REFERENCE`)."""
    study = dict(_check_keys(table, STUDY_KEYS, "[study]"))
    study.update({key: overrides[key] for key in ("seeds", "timeout") if key in overrides})
    name = study.get("name")
    if not isinstance(name, str) or not name.strip():
        raise StudyError(f"[study] name: expected a non-empty string, got {_type_name(name)}")
    seeds = study.get("seeds", [0])
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = list(range(seeds))
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise StudyError(f"[study] seeds: expected a non-empty list of non-negative integers (or a count), got {_type_name(seeds)}")
    if len(set(seeds)) != len(seeds):
        raise StudyError(f"[study] seeds: {seeds} repeats a seed")
    timeout = study.get("timeout")
    if timeout is not None:
        timeout = _positive(timeout, "[study] timeout", float)
    score = study.get("score_reference", SCORE_REFERENCE[0])
    if score not in SCORE_REFERENCE:
        raise StudyError(f"[study] score_reference: expected one of {', '.join(map(repr, SCORE_REFERENCE))} "
                         f"(when runs are scored against a reference posterior), got {score!r}")
    return name, str(study.get("description", "")), seeds, timeout, score


def _parse_budget(table: Any, overrides: dict[str, Any], own: dict[str, Any] | None = None,
                  where: str = "[budget]") -> tuple[Budget, Checkpoints]:
    """``[budget]``: the limits (at least one) and when to evaluate.  ``own`` is a ``[[problem]]``'s ``budget``
    with the scale's ``problem_budget`` for it over that: its keys replace the study's (and the scale's), e.g. the
    paper's iteration count and markers on one dataset.  A limit set to ``false`` is dropped (a scale that runs
    to a CPU cap instead of the study's iterations)."""
    budget_raw = _merge(_check_keys(table, BUDGET_KEYS, "[budget]"), overrides.get("budget", {}))
    _check_keys(budget_raw, BUDGET_KEYS, "[budget]")
    if own is not None:
        budget_raw = _merge(budget_raw, _check_keys(own, BUDGET_KEYS, where))
    limits = {key: _positive(budget_raw[key], f"{where} {key}", kind)  # false: a scale drops the study's limit
              for key, kind in (("iterations", int), ("epochs", float), ("seconds", float))
              if budget_raw.get(key, False) is not False}
    if not limits:
        raise StudyError(f"{where}: set at least one of iterations, epochs, seconds")
    spacing = budget_raw.get("spacing", "log")
    if spacing not in ("log", "linear"):
        raise StudyError(f"{where} spacing: expected 'log' or 'linear', got {_type_name(spacing)}")
    at = budget_raw.get("at", [])
    if not isinstance(at, list) or not all(isinstance(a, (int, float)) and not isinstance(a, bool) and a > 0 for a in at):
        raise StudyError(f"{where} at: expected a list of positive numbers, got {_type_name(at)}")
    count = _positive(budget_raw.get("checkpoints", 20), f"{where} checkpoints", int)
    until = _parse_until(budget_raw.get("until_converged"), f"{where} until_converged")
    return Budget(**limits, until=until), Checkpoints(count=count, spacing=spacing, at=tuple(at))


def _parse_until(table: Any, where: str) -> UntilConverged | None:
    """``until_converged = { metric, tolerance, window = 0.1, least = 5 }``: stop a run once the metric levels off
    (:class:`svibench.spec.UntilConverged`); the budget's limits are its cap.  ``false`` (e.g. in a scale whose
    runs must reach the paper's iteration count) turns off a rule set elsewhere."""
    if table is None or table is False:
        return None
    _check_keys(_table(table, where), UNTIL_KEYS, where)
    if not isinstance(table.get("metric"), str) or "tolerance" not in table:
        raise StudyError(f"{where}: give the metric and the tolerance, e.g. {{ metric = \"elbo\", tolerance = 1e-4 }}")
    window = _positive(table.get("window", 0.1), f"{where} window", float)
    if window >= 1:
        raise StudyError(f"{where} window: a fraction of the checkpoints in (0, 1), got {window:g}")
    return UntilConverged(table["metric"], _positive(table["tolerance"], f"{where} tolerance", float), window,
                          _positive(table.get("least", 5), f"{where} least", int))


def _parse_problems(tables: Any, overrides: dict[str, Any], registry: Registry,
                    budget: Any) -> tuple[list[ProblemSpec], dict[str, tuple[Budget, Checkpoints]]]:
    """``[[problem]]``: every table, with its model and dataset parameter grids expanded, and each problem's budget
    and checkpoints (the study's ``budget``, with a table's own ``budget`` keys over it)."""
    study = _parse_budget(budget, overrides)
    if not isinstance(tables, list) or not tables:
        raise StudyError("[[problem]]: a study needs at least one [[problem]] table")
    problems, budgets = [], {}
    scaled = dict(overrides.get("problem_budget", {}))
    for i, table in enumerate(tables):
        where = f"[[problem]] #{i + 1}"
        expanded = _parse_problem(table, where, overrides, registry)
        own = _merge(_table(table.get("budget", {}), f"{where} budget"), scaled.pop(expanded[0].base, {}))
        problems += expanded
        budgets.update({p.name: _parse_budget(budget, overrides, own, f"{where} budget") if own else study
                        for p in expanded})
    if len({p.name for p in problems}) != len(problems):
        raise StudyError("[[problem]]: two problems have the same name; give them distinct `name`s")
    for p in problems:
        until = budgets[p.name][0].until
        declared = registry.model(p.model).metrics
        if until is not None and until.metric not in declared:
            raise StudyError(f"[budget] until_converged metric: {p.model!r} (problem {p.name}) reports no "
                             f"{until.metric!r}; its metrics: {', '.join(sorted(declared))}")
    if scaled:
        known = ", ".join(dict.fromkeys(p.base for p in problems))
        raise StudyError(f"[scales] problem_budget: no [[problem]] named {next(iter(scaled))!r}; the study's problems: {known}")
    return problems, budgets


def _scale_subset(items: list, names: Any, name_of: Callable[[Any], str], where: str, what: str) -> list:
    """The ``items`` whose name (``name_of``) a scale's list ``names`` keeps (all when it has none); ``what`` is how an
    error names one, e.g. "[[problem]] named"."""
    if names is None:
        return items
    known = list(dict.fromkeys(name_of(i) for i in items))
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise StudyError(f"{where}: expected a non-empty list of {what.split()[0]} names, got {_type_name(names)}")
    unknown = [n for n in names if n not in known]
    if unknown:
        raise StudyError(f"{where}: no {what} {unknown[0]!r}; the study's {where.split()[-1]}: {', '.join(known)}")
    return [i for i in items if name_of(i) in names]


def _scale_methods(points: list[AlgorithmPoint], names: Any, scale: str) -> list[AlgorithmPoint]:
    """A scale's optional ``methods = [...]``: only the ``[[algorithm]]`` points of these methods run at that scale,
    e.g. the paper's methods at the paper's settings, where the others' budgets would mean nothing."""
    return _scale_subset(points, names, lambda p: p.method, f"[scales.{scale}] methods", "[[algorithm]] has the method")


def _scale_problems(problems: list[ProblemSpec], names: Any) -> list[ProblemSpec]:
    """A scale's optional ``problems = [...]``: only the ``[[problem]]`` s of these names (their grids whole)
    run at that scale, e.g. the one problem whose paper-scale runs fit on the machine."""
    return _scale_subset(problems, names, lambda p: p.base, "[scales] problems", "[[problem]] named")


def _parse_problem(table: Any, where: str, overrides: dict[str, Any], registry: Registry) -> list[ProblemSpec]:
    table = _check_keys(table, PROBLEM_KEYS, where)
    for key in ("model", "dataset"):
        if not isinstance(table.get(key), str):
            raise StudyError(f"{where} {key}: expected a name (string), got {_type_name(table.get(key))}")
    try:
        model_cls = registry.model(table["model"])
        info = registry.dataset(table["dataset"])
        check_declaration(model_cls)
    except (RegistryError, MetricError) as exc:
        raise StudyError(f"{where}: {exc}") from None
    if info.kind not in model_cls.data_kinds:
        raise StudyError(
            f"{where}: model {model_cls.name!r} takes datasets of kind {', '.join(model_cls.data_kinds)}; "
            f"dataset {info.name!r} is of kind {info.kind!r}"
        )
    base = table.get("name") or f"{model_cls.name}/{info.name}"
    if not isinstance(base, str):
        raise StudyError(f"{where} name: expected a string, got {_type_name(base)}")
    loader_names = accepted_params(info.loader)
    model_params = _merge(_table(table.get("model_params", {}), f"{where} model_params"), overrides.get("model_params", {}))
    dataset_params = _merge(_table(table.get("dataset_params", {}), f"{where} dataset_params"), {
        k: v for k, v in overrides.get("dataset_params", {}).items() if k in loader_names
    })
    model_names = accepted_params(model_cls.__init__)
    model_declared, dataset_declared = documented.model_params(model_cls), documented.dataset_params(info)
    problems = []
    for mp, m_varied in _grid(model_params, f"{where} model_params"):
        _check_params(mp, model_cls.__init__, model_names, f"{where} model_params", f"model {model_cls.name!r}",
                      model_declared)
        for dp, d_varied in _grid(dataset_params, f"{where} dataset_params"):
            _check_paper_split(dp, info, registry, f"{where} dataset_params")
            _check_params({k: v for k, v in dp.items() if not (k == "split" and v == "paper")}, info.loader,
                          loader_names, f"{where} dataset_params", f"dataset {info.name!r}",
                          dataset_declared)
            suffix = ", ".join(f"{k}={v}" for k, v in [*((k, mp[k]) for k in m_varied), *((k, dp[k]) for k in d_varied)])
            problems.append(ProblemSpec(f"{base} ({suffix})" if suffix else base, model_cls.name, info.name, mp, dp,
                                        base, _grid_point(mp, m_varied, dp, d_varied)))
    return problems


def _check_paper_split(params: dict[str, Any], info: Any, registry: Registry, where: str) -> None:
    """``split = "paper"`` only on a dataset whose loader rebuilds its paper's split."""
    if params.get("split") == "paper" and not info.paper_split:
        having = sorted(name for name in registry.datasets if registry.dataset(name).paper_split)
        raise StudyError(f"{where}.split: dataset {info.name!r} has no paper split; the datasets with one are "
                         f"{', '.join(having) or '(none)'}")


def _grid_point(model_params: dict[str, Any], model_varied: list[str], dataset_params: dict[str, Any],
                dataset_varied: list[str]) -> dict[str, Any]:
    """The model and dataset parameters a ``[[problem]]``'s grid varies at one point, by name (a name both
    grids vary is qualified, ``model_params.k`` and ``dataset_params.k``)."""
    both = set(model_varied) & set(dataset_varied)
    point = {(f"model_params.{k}" if k in both else k): model_params[k] for k in model_varied}
    point.update({(f"dataset_params.{k}" if k in both else k): dataset_params[k] for k in dataset_varied})
    return point


def _parse_algorithms(tables: Any, overrides: dict[str, Any], registry: Registry,
                      problems: list[ProblemSpec]) -> list[AlgorithmPoint]:
    """``[[algorithm]]``: every point of every table's grid.  Its ``method`` defaults to its ``label``, which
    defaults to the registry entry's; the label of a grid point adds the varied parameters, ``(k=v, ...)``: those
    the study's grid varies, even where a scale's ``algorithm_params`` narrow them to one value, so that a run
    keeps its label (and the claim notes that name it) at every scale."""
    if not isinstance(tables, list) or not tables:
        raise StudyError("[[algorithm]]: a study needs at least one [[algorithm]] table")
    out = []
    for i, table in enumerate(tables):
        where = f"[[algorithm]] #{i + 1}"
        table = _check_keys(table, ALGORITHM_KEYS, where)
        if not isinstance(table.get("name"), str):
            raise StudyError(f"{where} name: expected an algorithm name (string), got {_type_name(table.get('name'))}")
        try:
            entry = registry.algorithm(table["name"])
        except RegistryError as exc:
            raise StudyError(f"{where}: {exc}") from None
        where = f"{where} ({entry.name})"
        accepted = entry.param_names()
        params = dict(_table(table.get("params", {}), f"{where} params"))
        study_varied = _grid(params, f"{where} params")[0][1]
        params.update({k: v for k, v in overrides.get("algorithm_params", {}).items() if k in accepted})
        label_base = table.get("label", entry.label)
        method = table.get("method", label_base)
        for key, value in (("label", label_base), ("method", method)):
            if not isinstance(value, str) or not value:
                raise StudyError(f"{where} {key}: expected a non-empty string, got {_type_name(value)}")
        models = _parse_models(table, registry, where)
        only = _parse_problem_names(table, problems, where)
        declared = documented.algorithm_params(entry)
        for combo, scale_varied in _grid(params, f"{where} params"):
            varied = sorted(set(study_varied) | set(scale_varied))
            _check_params(combo, entry.cls.__init__, accepted, f"{where} params", f"algorithm {entry.name!r}",
                          declared)
            try:
                entry.build(combo).check_params()
            except (ValueError, TypeError) as exc:
                raise StudyError(f"{where} params {canonical_json(combo)}: {exc}") from None
            label = label_base + (" (" + ", ".join(f"{k}={combo[k]}" for k in varied) + ")" if varied else "")
            out.append(AlgorithmPoint(entry, combo, label, method, {k: combo[k] for k in varied}, models, only))
    return out


def _parse_models(table: dict[str, Any], registry: Registry, where: str) -> frozenset[str] | None:
    """An ``[[algorithm]]``'s optional ``models = [...]``: run it only on problems of these models
    (e.g. one optimiser setting per model in a study that crosses families)."""
    if "models" not in table:
        return None
    models = table["models"]
    if not isinstance(models, list) or not models or not all(isinstance(m, str) for m in models):
        raise StudyError(f"{where} models: expected a non-empty list of model names, got {models!r}")
    unknown = sorted(set(models) - set(registry.models))
    if unknown:
        raise StudyError(f"{where} models: unknown model(s) {', '.join(unknown)}; "
                         f"registered: {', '.join(sorted(registry.models))}")
    return frozenset(models)


def _parse_problem_names(table: dict[str, Any], problems: list[ProblemSpec], where: str) -> frozenset[str] | None:
    """An ``[[algorithm]]``'s optional ``problems = [...]``: run it only on these problems, each named as its
    ``[[problem]]`` names it (a grid's base name, e.g. ``"logreg/covtype"``, stands for all its points), e.g.
    a step size the paper gives for one dataset."""
    if "problems" not in table:
        return None
    names = table["problems"]
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise StudyError(f"{where} problems: expected a non-empty list of problem names, got {names!r}")
    known = {p.name for p in problems} | {p.base for p in problems}
    unknown = sorted(set(names) - known)
    if unknown:
        raise StudyError(f"{where} problems: unknown problem(s) {', '.join(unknown)}; the study's problems: "
                         f"{', '.join(sorted({p.base for p in problems}))}")
    return frozenset(names)


def _parse_paper(rows: Any) -> list[dict[str, Any]]:
    """``[[paper]]``: published numbers, each with its problem, algorithm, metric and value."""
    if not isinstance(rows, list):
        raise StudyError(f"[[paper]]: expected an array of tables, got {_type_name(rows)}")
    for i, row in enumerate(rows):
        _check_keys(row, PAPER_KEYS, f"[[paper]] #{i + 1}")
        for key in ("problem", "algorithm", "metric"):
            if not isinstance(row.get(key), str):
                raise StudyError(f"[[paper]] #{i + 1} {key}: expected a string, got {_type_name(row.get(key))}")
        if not isinstance(row.get("value"), (int, float)) or isinstance(row.get("value"), bool):
            raise StudyError(f"[[paper]] #{i + 1} value: expected a number, got {_type_name(row.get('value'))}")
        for key in ("iteration", "decimals"):  # the iteration the number was printed at; its printed decimals
            if key in row and (not isinstance(row[key], int) or isinstance(row[key], bool) or row[key] < 0):
                raise StudyError(f"[[paper]] #{i + 1} {key}: expected a non-negative integer, got {_type_name(row[key])}")
    return rows


def _parse_report(table: Any, metrics: set[str]) -> dict[str, Any]:
    """``[report]``: checked now, against the metrics the study's models report, not after the sweep."""
    if not isinstance(table, dict):
        raise StudyError(f"[report]: expected a table, got {_type_name(table)}")
    try:
        ReportSettings.check(table, metrics)
    except ReportError as exc:
        raise StudyError(str(exc)) from None
    return table


def _parse_claims(raw: dict[str, Any], paper: list[dict[str, Any]], problems: list[ProblemSpec], runs: list[RunSpec],
                  info: dict[str, Any], report: dict[str, Any], every_problem: list[ProblemSpec],
                  scale: str, labels: set[str], unrun: dict[str, str],
                  commit_exists: Callable[[str], bool] | None = None) -> tuple[list[Claim], list[Reference]]:
    """``[[claim]]``, ``[[target]]`` and ``[[reference]]``: shape, links to ``[[paper]]``, every name they use
    exists, a faster claim has a target, and every free-text field (a claim's note, source, comparable_why,
    variants_why and not_run; a [[paper]] row's note) passes :func:`svibench.claims.notes.check_text` (a note's
    placeholders may name any of the study's ``labels`` at any scale: one not run here renders "no ok run").
    ``unrun`` maps the labels and methods of skipped entries to a reason (:func:`~.claims.schema.skip_reasons`)."""
    metrics = set(info)
    try:
        claims = _at_scale(parse_claims(scale_claims(raw, scale), paper), paper, problems, every_problem, scale, runs)
        claims = skipped_not_run(claims, {r.method for r in runs} | {r.label for r in runs}, unrun)
        references = [r for r in parse_references(raw.get("reference", [])) if r.problem not in _left_out(problems, every_problem)]
        check_names(claims, references, {p.name: p.base for p in problems}, {r.label: r.method for r in runs},
                    metrics | set(DERIVED))
        _check_targets(claims, report)
        _check_reachable(claims, references, problems, info)
    except ReportError as exc:
        raise StudyError(str(exc)) from None
    names = {n for p in every_problem for n in (p.name, p.base)}
    texts = [(f"[[{c.ledger}]] {c.id!r} {key}", getattr(c, key)) for c in claims
             for key in ("source", "comparable_why", "variants_why", "not_run")]
    texts += [(f"[[{c.ledger}]] {c.id!r} note", c.note) for c in claims if not c.not_run]
    texts += [(f"[[paper]] #{i + 1} note", row["note"]) for i, row in enumerate(paper) if isinstance(row.get("note"), str)]
    for where, text in texts:
        try:
            check_text(text, labels=labels, problems=names, metrics=metrics, commit_exists=commit_exists)
        except ReportError as exc:
            raise StudyError(f"{where}: {exc}") from None
    return claims, references


def _commits(source: str) -> Callable[[str], bool] | None:
    """Whether a commit exists in the history of the git work tree holding the study file ``source`` (None when
    it is in none, or in a shallow clone whose history is cut: an ``[at <commit>]`` tag cannot be checked there)."""
    folder = Path(source).resolve().parent
    try:
        state = subprocess.run(["git", "rev-parse", "--is-inside-work-tree", "--is-shallow-repository"], cwd=folder,
                               capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    if state.returncode != 0 or state.stdout.split() != ["true", "false"]:
        return None

    @functools.cache
    def exists(commit: str) -> bool:
        return subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=folder, capture_output=True,
                              timeout=30).returncode == 0
    return exists


def _left_out(problems: list[ProblemSpec], every_problem: list[ProblemSpec]) -> set[str]:
    """The problem names (grid points and bases) of the study that a scale's ``problems = [...]`` leaves out."""
    kept = {n for p in problems for n in (p.name, p.base)}
    return {n for p in every_problem for n in (p.name, p.base)} - kept


def _at_scale(claims: list[Claim], paper: list[dict[str, Any]], problems: list[ProblemSpec], every_problem: list[ProblemSpec],
              scale: str, runs: list[RunSpec]) -> list[Claim]:
    """Claims at a scale that runs some problems only: a claim naming only left-out problems, or a method that runs
    only on them, is not run (the reason says so); one naming some problems keeps the others.  A value claim's
    problems are those of its [[paper]] rows."""
    out, left_out = [], _left_out(problems, every_problem)
    present = {r.method for r in runs} | {r.label for r in runs}
    for c in claims:
        named = set(c.problems) or ({r["problem"] for r in paper if r.get("claim") == c.paper_id} if c.kind == "value" else set())
        absent = [m for m in (*c.better, *c.worse, *c.methods) if m not in present]
        if left_out and absent and not c.not_run:
            out.append(replace(c, not_run=f"not run at the {scale} scale: {', '.join(absent)} run(s) only on problems "
                                          "outside the scale's problems = [...]"))
        elif c.not_run or not named or not named & left_out:
            out.append(c)
        elif named <= left_out:
            out.append(replace(c, not_run=f"not run at the {scale} scale: its problems ({', '.join(sorted(named))}) are "
                                          f"not among the scale's problems = [...]"))
        else:
            out.append(replace(c, problems=tuple(n for n in c.problems if n not in left_out)))
    return out


def _check_targets(claims: list[Claim], report: dict[str, Any]) -> None:
    """A faster or as-fast claim without its own target needs a ``[report]`` target on its metric."""
    targets = {t.metric for t in ReportSettings.parse(report).targets}
    for c in claims:
        if c.kind in ("faster", "as-fast") and c.target is None and c.metric not in targets and not c.not_run:
            raise ReportError(f"[[{c.ledger}]] {c.id!r}: {'an as-fast' if c.kind == 'as-fast' else 'a faster'} claim needs a target: give target = {{ relative = ... }} "
                              f"or a [report] target on {c.metric!r}")


def _check_reachable(claims: list[Claim], references: list[Reference], problems: list[ProblemSpec],
                     info: dict[str, Any]) -> None:
    """A faster or as-fast claim's fixed target (``value``) must not lie beyond the optimum of an objective that a
    ``[[reference]]`` gives on one of its problems: no method of the claim could reach it, by construction."""
    for c in (c for c in claims if c.kind in ("faster", "as-fast") and c.target is not None and c.target.kind == "value"):
        metric = info.get(c.metric)
        if metric is None or metric.kind != "objective":
            continue
        named = set(c.problems) or {n for p in problems for n in (p.name, p.base)}
        for ref in (r for r in references if r.metric == c.metric and r.problem in named):
            beyond = c.target.amount < ref.value if metric.lower else c.target.amount > ref.value
            if beyond:
                raise ReportError(f"[[{c.ledger}]] {c.id!r} target: {c.metric} = {c.target.amount:g} is beyond the "
                                  f"optimum {ref.value:g} on {ref.problem} ([[reference]]: {ref.how}); no method can "
                                  "reach it: use a relative target or a reachable value")


def _warn_few_checkpoints(checkpoints: Checkpoints, report: dict[str, Any], metrics: set[str]) -> None:
    """Warn when the plotted metrics (``metrics`` that have a trajectory, unless ``[report] plot`` names them) get
    fewer than :data:`MIN_CHECKPOINTS` checkpoints per run."""
    count = len(checkpoints.at) or checkpoints.count
    if count < MIN_CHECKPOINTS:
        plotted = ", ".join(sorted(report.get("plot", metrics)))
        warnings.warn(f"[budget] checkpoints = {count}: the figures of {plotted} get fewer than {MIN_CHECKPOINTS} "
                      "points per run, too few to show convergence; raise `checkpoints`", stacklevel=3)
