"""The claims ledger's schema: a study's ``[[claim]]``, ``[[target]]`` and ``[[reference]]`` entries.

A ``[[claim]]`` states what a paper says, no weaker and no different; a
``[[target]]`` has the same form but is the project's own acceptance target
(shown apart, never counted in the tally of paper claims).  Their verdicts come
from :mod:`svibench.claims`.  Kinds::

    [[claim]]
    id = "cvi-faster-than-chol"
    source = "Khan & Lin (2017), §7"             # where the paper says it
    kind = "faster"                  # better reach the target sooner than worse, paired by (problem, seed)
    metric = "neg_elbo"
    better = ["CVI"]                 # methods: every variant the study ran is a candidate
    worse = ["Chol"]
    target = { relative = 0.001 }    # default: the study's [report] target on this metric
    ratio = 1.0                      # optional: worse takes ≥ ratio × better's time
    axis = "time"                    # "time" (CPU seconds) or "epoch" (data passes); never steps
    final = "equivalent"             # optional, when the paper also says where they end: "better", "not worse"
                                     #   (beyond the tie) or "equivalent" (within tolerance/absolute) final values

    kind = "as-fast"      # methods = [...] reach the target in times within a factor ``ratio`` of each other
                          #   (every pair within [1/ratio, ratio]; a method that never reaches it fails the unit);
                          #   keys metric, methods, ratio (> 1, required), target and axis as for faster
    kind = "order"        # better's value beats worse's by more than max(margin, tie) at an equal budget
                          #   axis = "time" | "epoch" (value at the pair's common budget) | "final"
    kind = "equivalent"   # methods = [...] reach the same value: spread ≤ tolerance (relative) or absolute
    kind = "value"        # the [[paper]] rows with claim = id, within `tolerance` (relative), one unit per
                          #   row (it holds when most of its runs do); needs comparable (below) and
                          #   comparable_why = "..."; a row with
                          #   versus = "label" gives the paired difference algorithm − versus; a row with
                          #   iteration = K is read at the run's checkpoint at iteration K, not its end.
                          #   rule = "digits" instead of a tolerance: the value must print the paper's
                          #   number (rounded to the row's decimals), or pass through it at an iteration
                          #   where the authors' code does ([report] authors: their trajectories)
    kind = "trend"        # method's value improves (shape = "improving") or worsens along the grid
                          #   parameter `setting`, optionally with diminishing steps (diminishing = true)

Shared keys: ``problems`` (default: every problem; a name pools its grid points,
e.g. its random splits), ``tie`` (relative tolerance under which two values or
times are a tie; default: the study's target tolerance on that metric, else
1e-3), ``at_budget`` (true when the paper's statement is at a budget; else a
unit a still-moving run could flip is left undecided), ``variants`` (``{ method =
["label", ...] }``: only these variants of a method, with ``variants_why``
saying why, e.g. "the paper's settings"), ``not_run`` (why the study cannot run
the experiment yet: the verdict is *not run*, and the names it uses are not
checked), ``note``, ``comparable`` (``true``, ``false``, or per problem ``{ "logreg/a1a" = true, ... }``, a problem
not listed being not comparable: whether the claim's problems are the paper's setting; units on the others are
shown but not counted, and with none left the verdict is *not comparable*) with ``comparable_why``.  A name in
``better``/``worse``/``methods`` is a method (every variant) or one exact run
label, which is a declared variant and so needs ``variants_why``.  ``readings``
(``["psnr_fit"]``: other metrics that read the paper's quantity too, besides the
claim's ``metric`` or a value claim's rows' metric, e.g. PSNR against the clean image or on the observed
pixels): the claim is also judged on each, as ``ID [METRIC]``, so that no
reading of an ambiguous metric is picked silently; a value claim's verdicts say
which reading the paper's magnitudes are closest to.

A ``[[reference]]`` gives a problem's best known value of a metric (f*), with
how it was obtained; the suboptimality figures measure distance to it::

    [[reference]]
    problem = "logreg/a1a"
    metric = "neg_elbo"
    value = 1234.5
    how = "Chol (L-BFGS on the exact ELBO) run to convergence, 200 s"
"""
from __future__ import annotations

import re

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from ..settings import ReportError, Target, parse_target

__all__ = ["Claim", "Reference", "KINDS", "LEDGERS", "READING_ID", "parse_claims", "parse_references", "scale_claims", "check_names",
           "skip_reasons", "skipped_not_run"]

KINDS = ("order", "faster", "as-fast", "equivalent", "value", "trend")
LEDGERS = {"claim": "[[claim]]", "target": "[[target]]"}
AXES = ("time", "epoch", "final")
SHAPES = ("improving", "worsening")
RULES = ("tolerance", "digits")
FINALS = ("any", "better", "not worse", "equivalent")
COMMON_KEYS = ("id", "source", "kind", "problems", "tie", "at_budget", "variants", "variants_why", "not_run", "note",
               "comparable", "comparable_why", "readings")
KIND_KEYS = {
    "order": ("metric", "better", "worse", "margin", "axis"),
    "faster": ("metric", "better", "worse", "target", "ratio", "axis", "final", "tolerance", "absolute"),
    "as-fast": ("metric", "methods", "target", "ratio", "axis"),
    "equivalent": ("metric", "methods", "tolerance", "absolute", "axis"),
    "value": ("tolerance", "rule"),
    "trend": ("metric", "method", "setting", "shape", "diminishing"),
}
REQUIRED = {"order": ("metric", "better", "worse"), "faster": ("metric", "better", "worse"),
            "as-fast": ("metric", "methods", "ratio"),
            "equivalent": ("metric", "methods"), "value": ("comparable", "comparable_why"),
            "trend": ("metric", "method", "setting", "shape")}
REFERENCE_KEYS = ("problem", "metric", "value", "how")


@dataclass(frozen=True)
class Claim:
    """One checked statement (see the module docstring); ``ledger`` is "claim" (a paper's) or "target" (ours)."""

    id: str
    source: str
    kind: str
    metric: str = ""
    problems: tuple[str, ...] = ()
    better: tuple[str, ...] = ()
    worse: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    margin: float = 0.0
    tolerance: float | None = None
    absolute: float | None = None
    target: Target | None = None
    ratio: float = 1.0
    axis: str = "final"
    tie: float | None = None
    at_budget: bool = False
    variants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    variants_why: str = ""
    #: Whether the claim's problems are the paper's setting: True/False for all, or per problem (base name; a
    #: problem not listed is not comparable).
    comparable: bool | dict[str, bool] = True
    comparable_why: str = ""
    setting: str = ""
    shape: str = ""
    diminishing: bool = False
    final: str = "any"
    rule: str = "tolerance"
    not_run: str = ""
    note: str = ""
    ledger: str = "claim"
    #: Other metrics the claim is judged on too (``readings``); on such a reading, the id it is a reading of.
    readings: tuple[str, ...] = ()
    reading_of: str = ""
    #: A trend claim's one method is ``methods[0]``.

    @property
    def paper_id(self) -> str:
        """The id its [[paper]] rows link to (a reading's rows are those of the claim it reads)."""
        return self.reading_of or self.id

    def comparable_on(self, problem: str) -> bool:
        """Whether the claim's numbers on ``problem`` (a base name) are the paper's setting."""
        return self.comparable if isinstance(self.comparable, bool) else self.comparable.get(problem, False)


@dataclass(frozen=True)
class Reference:
    """The best known value ``value`` of ``metric`` on ``problem``, and how it was obtained."""

    problem: str
    metric: str
    value: float
    how: str


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ReportError(f"{where}: expected a list of names, got {value!r}")
    return tuple(value)


def _number(value: Any, where: str, minimum: float | None = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (minimum is not None and value < minimum):
        raise ReportError(f"{where}: expected a {'non-negative ' if minimum is not None else ''}number, got {value!r}")
    return float(value)


def _text(table: dict, key: str, where: str, required: bool = False) -> str:
    value = table.get(key, "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise ReportError(f"{where} {key}: expected a non-empty string, got {value!r}")
    return value.strip()


def _flag(table: dict, key: str, where: str, default: bool = False) -> bool:
    value = table.get(key, default)
    if not isinstance(value, bool):
        raise ReportError(f"{where} {key}: expected true or false, got {value!r}")
    return value


def _check_shape(table: Any, where: str) -> str:
    """The claim's kind, after checking its keys: known kind, no unknown or missing key."""
    if not isinstance(table, dict):
        raise ReportError(f"{where}: expected a table, got {table!r}")
    kind = table.get("kind")
    if kind not in KINDS:
        raise ReportError(f"{where} kind: unknown claim kind {kind!r}; use one of {', '.join(KINDS)}")
    allowed = COMMON_KEYS + KIND_KEYS[kind]
    unknown = sorted(set(table) - set(allowed))
    if unknown:
        raise ReportError(f"{where}: unknown key {unknown[0]!r} for a {kind} claim; valid keys: {', '.join(allowed)}")
    missing = [k for k in REQUIRED[kind] if k not in table]
    if missing:
        raise ReportError(f"{where} ({table.get('id', '?')}): a {kind} claim needs {', '.join(map(repr, missing))}")
    return kind


def _variants(table: dict, where: str) -> dict[str, tuple[str, ...]]:
    raw = table.get("variants", {})
    if not isinstance(raw, dict):
        raise ReportError(f"{where} variants: expected a table method = [labels], got {raw!r}")
    out = {method: _strings(labels, f"{where} variants.{method}") for method, labels in raw.items()}
    if out and not _text(table, "variants_why", where):
        raise ReportError(f"{where} variants: say why only these variants count, in variants_why")
    return out


def _kind_fields(kind: str, table: dict, where: str) -> dict[str, Any]:
    """The kind-specific fields of a :class:`Claim`, checked."""
    out: dict[str, Any] = {"metric": _text(table, "metric", where, kind != "value")}
    if kind in ("order", "faster"):
        out.update(better=_strings(table["better"], f"{where} better"), worse=_strings(table["worse"], f"{where} worse"))
        if "margin" in table and _number(table["margin"], f"{where} margin", None) < 0:
            raise ReportError(f"{where} margin: {table['margin']!r} is negative; a tie or a loss must never pass "
                              "as a win (use kind = \"equivalent\" for 'about the same')")
        out["margin"] = _number(table.get("margin", 0.0), f"{where} margin")
    if kind in ("faster", "as-fast"):
        out["target"] = parse_target({"metric": out["metric"], **table["target"]}, where) if "target" in table else None
        out["ratio"] = _number(table.get("ratio", 1.0), f"{where} ratio", 1.0)
    if kind == "faster":
        out["final"] = table.get("final", "any")
        if out["final"] not in FINALS:
            raise ReportError(f"{where} final: expected one of {', '.join(FINALS)}, got {out['final']!r}")
    if kind in ("equivalent", "as-fast"):
        out["methods"] = _strings(table["methods"], f"{where} methods")
    if kind == "as-fast" and (out["ratio"] <= 1.0 or len(set(out["methods"])) < 2):
        raise ReportError(f"{where}: an as-fast claim needs ratio > 1 (the factor its times may differ by, got "
                          f"{table['ratio']!r}) and two or more distinct methods (got {table['methods']!r})")
    if (kind == "equivalent" or out.get("final") == "equivalent") and ("tolerance" in table) == ("absolute" in table):
        raise ReportError(f"{where}: an equivalence gives one of tolerance (relative) or absolute")
    if kind == "trend":
        out["methods"] = (_text(table, "method", where, True),)
        out.update(setting=_text(table, "setting", where, True), diminishing=_flag(table, "diminishing", where))
        if table["shape"] not in SHAPES:
            raise ReportError(f"{where} shape: expected one of {', '.join(SHAPES)}, got {table['shape']!r}")
        out["shape"] = table["shape"]
    if kind == "value":
        _text(table, "comparable_why", where, True)  # a value claim always says what its numbers are compared on
    for key in ("tolerance", "absolute"):
        if key in table:
            out[key] = _number(table[key], f"{where} {key}")
    if kind == "value":
        out["tolerance"] = out.get("tolerance", 0.05)
        out["rule"] = table.get("rule", "tolerance")
        if out["rule"] not in RULES:
            raise ReportError(f"{where} rule: expected one of {', '.join(RULES)}, got {out['rule']!r}")
    return out


def _claim(table: Any, where: str, ledger: str) -> Claim:
    kind = _check_shape(table, where)
    timed = kind in ("faster", "as-fast")
    axis = table.get("axis", "time" if timed else "final")
    if axis not in (AXES[:2] if timed else AXES):
        raise ReportError(f"{where} axis: expected one of {', '.join(AXES[:2] if timed else AXES)}, got {axis!r}")
    return Claim(
        id=_text(table, "id", where, True), source=_text(table, "source", where, ledger == "claim"), kind=kind,
        problems=_strings(table.get("problems", []), f"{where} problems"), axis=axis,
        tie=_number(table["tie"], f"{where} tie") if "tie" in table else None,
        at_budget=_flag(table, "at_budget", where), variants=_variants(table, where),
        variants_why=_text(table, "variants_why", where), not_run=_text(table, "not_run", where),
        note=_text(table, "note", where), ledger=ledger, **_comparability(table, where),
        readings=_readings(table, where), **_kind_fields(kind, table, where),
    )


def _readings(table: dict, where: str) -> tuple[str, ...]:
    return tuple(r for r in _strings(table.get("readings", []), f"{where} readings") if r != table.get("metric"))


#: The id of a claim's reading on another metric, ``ID [METRIC]`` (:func:`with_readings`); ledgers are read back by it.
READING_ID = re.compile(r"^(?P<id>.+) \[(?P<metric>[^\]]+)\]$")


def with_readings(claim: Claim) -> list[Claim]:
    """``claim``, then one claim per other reading of its metric: id ``ID [METRIC]`` (:data:`READING_ID`), the same
    statement judged on ``METRIC``."""
    return [claim] + [replace(claim, id=f"{claim.id} [{m}]", metric=m, readings=(), reading_of=claim.id,
                              note=f"The claim {claim.id} read on {m} (its readings = [{', '.join(claim.readings)}]); "
                                   "its note says how it is tested.")
                      for m in claim.readings]


def _comparability(table: dict, where: str) -> dict[str, Any]:
    """``comparable`` (true/false, or a table problem = true/false) and, when anything is not comparable, why."""
    raw = table.get("comparable", True)
    if isinstance(raw, dict):
        bad = [k for k, v in raw.items() if not isinstance(v, bool)]
        if bad:
            raise ReportError(f"{where} comparable.{bad[0]}: expected true or false, got {raw[bad[0]]!r}")
    elif not isinstance(raw, bool):
        raise ReportError(f"{where} comparable: expected true, false or a table problem = true/false, got {raw!r}")
    why = _text(table, "comparable_why", where)
    if (raw is False or (isinstance(raw, dict) and not all(raw.values()))) and not why:
        raise ReportError(f"{where}: say in comparable_why why some of its problems are not the paper's setting")
    return {"comparable": dict(raw) if isinstance(raw, dict) else raw, "comparable_why": why}


def parse_claims(raw: dict[str, Any], paper: list[dict[str, Any]]) -> list[Claim]:
    """A study's ``[[claim]]`` and ``[[target]]`` entries, checked for shape; a value claim needs linked [[paper]] rows."""
    claims = []
    for ledger, section in LEDGERS.items():
        rows = raw.get(ledger, [])
        if not isinstance(rows, list):
            raise ReportError(f"{section}: expected an array of tables, got {rows!r}")
        claims += [c for i, row in enumerate(rows) for c in with_readings(_claim(row, f"{section} #{i + 1}", ledger))]
    ids = [c.id for c in claims]
    if len(set(ids)) != len(ids):
        raise ReportError(f"[[claim]]/[[target]]: two entries have the id {next(i for i in ids if ids.count(i) > 1)!r}; "
                          "ids must be unique")
    linked = {row.get("claim") for row in paper}
    for claim in claims:
        if claim.kind == "value" and claim.paper_id not in linked:
            raise ReportError(f"[[claim]] {claim.id!r}: a value claim needs [[paper]] rows with claim = {claim.paper_id!r}")
    for j, row in enumerate(paper):
        if row.get("claim") is not None and row["claim"] not in ids:
            raise ReportError(f"[[paper]] #{j + 1} claim: no [[claim]] has the id {row['claim']!r}; ids: {', '.join(ids) or '(none)'}")
    return claims


def scale_claims(raw: dict[str, Any], scale: str) -> dict[str, Any]:
    """``raw`` with the keys of ``[scales.<scale>.claim.<id>]`` over those of the ``[[claim]]`` or ``[[target]]``
    of that id: what a claim says that differs with the scale, e.g. that its rows are comparable on the paper's
    splits."""
    overrides = dict(raw.get("scales", {}).get(scale, {}).get("claim", {})) if scale != "default" else {}
    out = dict(raw)
    for ledger in ("claim", "target"):
        out[ledger] = [dict(c, **overrides.pop(c.get("id"), {})) if isinstance(c, dict) else c for c in raw.get(ledger, [])]
    if overrides:
        raise ReportError(f"[scales.{scale}] claim: no [[claim]] or [[target]] has the id {next(iter(overrides))!r}")
    return out


def parse_references(rows: Any) -> list[Reference]:
    """``[[reference]]`` entries: problem, metric, value and how it was obtained."""
    if not isinstance(rows, list):
        raise ReportError(f"[[reference]]: expected an array of tables, got {rows!r}")
    out = []
    for i, row in enumerate(rows):
        where = f"[[reference]] #{i + 1}"
        if not isinstance(row, dict) or set(row) != set(REFERENCE_KEYS):
            raise ReportError(f"{where}: expected exactly the keys {', '.join(REFERENCE_KEYS)}, got {row!r}")
        for key in ("problem", "metric", "how"):
            if not isinstance(row[key], str):
                raise ReportError(f"{where} {key}: expected a string, got {row[key]!r}")
        out.append(Reference(row["problem"], row["metric"], _number(row["value"], f"{where} value", None), row["how"]))
    return out


def check_names(claims: list[Claim], references: list[Reference], problems: dict[str, str],
                runs: dict[str, str], metrics: set[str]) -> None:
    """Every problem, method, label and metric a claim or reference names exists in the study (else ReportError).

    ``problems`` maps each problem name to its base name (the ``[[problem]]`` it expands from), ``runs`` each run
    label to its method.  A label that is not a method is a declared variant and needs ``variants_why``.
    """
    pools = set(problems) | set(problems.values())
    methods = set(runs.values())
    for c in (c for c in claims if not c.not_run):
        where = f"[[{c.ledger}]] {c.id!r}"
        for key, names in (("problems", c.problems), ("comparable", c.comparable if isinstance(c.comparable, dict) else ())):
            for name in names:
                if name not in pools:
                    raise ReportError(f"{where} {key}: no problem of the study is {name!r}; use one of {', '.join(sorted(pools))}")
        for name in c.better + c.worse + c.methods + tuple(c.variants):
            if name not in methods and name not in runs:
                raise ReportError(f"{where}: the study runs no method or label {name!r}; methods: {', '.join(sorted(methods))}")
            if name not in methods and not c.variants_why:
                raise ReportError(f"{where}: {name!r} is one variant of {runs[name]!r}; name the method, or say why only "
                                  "this variant counts in variants_why")
        for method, labels in c.variants.items():
            bad = [lb for lb in labels if runs.get(lb) != method]
            if bad:
                raise ReportError(f"{where} variants.{method}: {bad[0]!r} is not a run label of method {method!r}")
        if c.metric and c.metric not in metrics:
            raise ReportError(f"{where} metric: no model of the study reports {c.metric!r}; use one of {', '.join(sorted(metrics))}")
    for r in references:
        if r.problem not in pools:
            raise ReportError(f"[[reference]] problem: no problem of the study is {r.problem!r}")
        if r.metric not in metrics:
            raise ReportError(f"[[reference]] metric: no model of the study reports {r.metric!r}; use one of {', '.join(sorted(metrics))}")


def skip_reasons(skipped: Iterable[dict[str, str]]) -> dict[str, str]:
    """Label and method of each skipped algorithm–problem pair (``algorithm``, ``method``, ``reason``: a study's
    skipped pairs, or a manifest's, whose entries from before the ``method`` key give the label only) → the first
    reason."""
    out: dict[str, str] = {}
    for pair in skipped:
        for name in (pair["algorithm"], pair.get("method", pair["algorithm"])):
            out.setdefault(name, pair["reason"])
    return out


def skipped_not_run(claims: list[Claim], present: set[str], unrun: dict[str, str]) -> list[Claim]:
    """``claims``, each that names a method or label with no run (not in ``present``) whose entries were skipped
    (in ``unrun``, :func:`skip_reasons`; e.g. a peer whose library is not installed) marked not run with the skip's
    reason: the study loads and its other claims are judged."""
    out = []
    for c in claims:
        absent = [m for m in (*c.better, *c.worse, *c.methods, *c.variants) if m not in present and m in unrun]
        skipped = absent and not c.not_run
        out.append(replace(c, not_run=f"{absent[0]} was skipped: {unrun[absent[0]]}") if skipped else c)
    return out
