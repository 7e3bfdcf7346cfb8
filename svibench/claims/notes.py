"""Live numbers in claim notes: values of the results through placeholders, every other measured number tagged.

A claim's ``note`` is prose written once and read after every rerun, so a
number it quotes from the results must come from the results.

Placeholders (filled by :func:`render_note` when the report is written)::

    {final[LABEL].METRIC}          mean, over LABEL's ok runs, of METRIC's final value, pooled over every problem
    {final[LABEL@PROBLEM].METRIC}  the same on PROBLEM only; a base name (logreg/australian) pools its grid points
    {sd[LABEL].METRIC}             standard deviation (ddof 1) of those final values ("n/a (one run)" for one);
                                   also with @PROBLEM
    {ttt[LABEL]}                   median algorithm seconds to the study's first [report] target over the ok runs
                                   of LABEL that reach it, as "0.36 s", plus "(k/n reached)" when some do not,
                                   "not reached" when none does; also with @PROBLEM
    {runs[LABEL].ok}               "k/n": k of LABEL's n runs in the results ended ok; also with @PROBLEM

LABEL is a run label exactly as the study makes it: the algorithm's label (or
the entry's ``label``), with ``(k=v, …)`` appended for a point of a parameter
grid, e.g. ``{final[SVI (t0=64.0)@lda/synthetic].perplexity_vs_truth}``.  A
Python format spec may follow a colon, applied to the number:
``{final[CVI].neg_elbo:.1f}`` (default ``.4g``; ``.3g`` for ``ttt``; none for
``runs``).  ``{{`` and ``}}`` are literal braces.  A label with no ok run in the
results renders "no ok run".

Tags, for numbers that are not values of these results::

    [at e8ffc74: CVI 33.13 ± 0.01 after 60 s]      a historic measurement, with the commit (7-40 hex digits)
                                                   it came from; renders "… (measured at e8ffc74)"
    [paper: 0.35 (ADAM) and 0.33 (CVI)]            the paper's own numbers; renders "paper: …"

A tag ends at its matching ``]`` (brackets inside it, as in ``E[log beta]``,
must balance); it holds no placeholder (a historic value is not a live one),
and a ``[paper: …]`` may sit inside an ``[at …]``.

The measured-number rule (:func:`check_note`, at study load).  A number is a
run of digits with optional decimals, thousands commas and exponent
(``0.812``, ``4,000``, ``-1.38e5``) that is not part of a word (``a1a``,
``GH-50``, ``tau0``, ``128x128``).  It is *measured* when

1. it carries a sign: ``+``, ``-`` or ``−`` written straight before it and not after a letter, digit, ``)`` or
   ``]`` (so the ranges ``0.1-0.5`` and names ``usps-3v5`` carry none), or ``±`` before it; or it is followed by
   ``±`` (the mean of ``33.13 ± 0.01``); or
2. a unit follows it, after at most one space: ``%``, ``dB``, ``nat``/``nats``, ``bit``/``bits``, ``s``,
   ``ms``, ``min``, ``h``; or ``×``/``x`` written straight after it (``4.8×``, ``3.5x slower``; not ``128x128``).

It is then allowed only inside a placeholder or a tag, or as a setting or a
threshold: right after ``=`` (``w = 0.4``, ``margin = -0.01``, ``seconds = 40``)
or a comparison ``<``, ``>``, ``≤``, ``≥`` (``≥ 5 dB``, ``<= 0.01 nats``).  So
parameters (``K = 100``, ``δ = 0.002``), section, table and figure numbers
(``§5.1``, ``Table 3``, ``Fig. 1(b)``) and counts in prose (``5 seeds``) pass,
while ``0.812 nats``, ``52.52 s``, ``+0.012``, ``-63``, ``4.8×``, ``12%`` and
``31.2 dB`` fail.  A bare number without sign or unit (``ELBO 33.13``) is not
caught: the rule guards against the usual slips, and the author still tags
or replaces every measured number.  A budget in prose is a setting: write it
``seconds = 40``, not ``40 s``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ..settings import ReportError

__all__ = ["check_note", "segments", "Segment", "KINDS", "DEFAULT_SPEC"]

#: Placeholder kinds, and the field each takes ("metric", "ok" or none).
KINDS = {"final": "metric", "sd": "metric", "ttt": None, "runs": "ok"}
DEFAULT_SPEC = {"final": ".4g", "sd": ".4g", "ttt": ".3g"}
PLACEHOLDER = re.compile(r"\{(?P<kind>\w+)\[(?P<label>[^\[\]{}@]+)(?:@(?P<problem>[^\[\]{}@]+))?\]"
                         r"(?:\.(?P<field>\w+))?(?::(?P<spec>[^{}]*))?\}")
TAG = re.compile(r"\[(?:at (?P<commit>[0-9a-f]{7,40})|(?P<paper>paper)):[ \t]*")
#: Where plain text stops: a brace (placeholder or escape) or the start of a tag.
SPECIAL = re.compile(r"\{\{|\}\}|[{}]|\[(?=at |paper:)")
NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?:[eE][-+−]?\d+)?")
UNIT = re.compile(r"(?:[ \t]?(?:%|dB|nats?|bits?|ms|min|s|h)|[×x])(?!\w)")
SIGNS = "+-−"
SETTING = "=<>≤≥"
HOW_TO_TAG = ("put a value of these results in a placeholder ({final[LABEL].METRIC}, {ttt[LABEL]}), a historic one "
              "in [at <commit>: …], the paper's in [paper: …]; a setting is written name = value")


@dataclass(frozen=True)
class Segment:
    """A piece of a note: plain ``text``, a ``placeholder`` (its match) or a tag (``at``/``paper``, its body)."""

    kind: str
    text: str
    match: re.Match | None = None
    commit: str = ""


def _closing(text: str, start: int) -> int:
    """Index of the ``]`` that closes the ``[`` at ``start``."""
    depth = 0
    for j in range(start, len(text)):
        depth += {"[": 1, "]": -1}.get(text[j], 0)
        if depth == 0:
            return j
    raise ReportError(f"unclosed tag {_snippet(text, start)!r}: end it with a matching ']'")


def _snippet(text: str, start: int, end: int | None = None) -> str:
    """Up to 40 characters of ``text`` from ``start``, on one line."""
    return " ".join(text[start:min(end or len(text), start + 40)].split())


def segments(text: str) -> list[Segment]:
    """Split a note into plain text, placeholders and tags (ReportError, one line, for a malformed one)."""
    out, pos = [], 0
    while (special := SPECIAL.search(text, pos)) is not None:
        out.append(Segment("text", text[pos:special.start()]))
        token = special.group()
        if token in ("{{", "}}"):
            out.append(Segment("text", token[0]))
            pos = special.end()
        elif token == "{":
            out.append(_placeholder(text, special.start()))
            pos = special.start() + len(out[-1].text)
        elif token == "}":
            raise ReportError(f"a '}}' without its '{{' at {_snippet(text, max(0, special.start() - 20))!r}: "
                              "write }} for a literal brace")
        else:
            end = _closing(text, special.start())
            out.append(_tag(text, special.start(), end))
            pos = end + 1
    return _merged(out + [Segment("text", text[pos:])])


def _placeholder(text: str, start: int) -> Segment:
    """The placeholder ``{…}`` starting at ``start``."""
    end = text.find("}", start)
    match = PLACEHOLDER.fullmatch(text, start, end + 1) if end >= 0 else None
    if match is None:
        raise ReportError(f"malformed placeholder {_snippet(text, start, end + 1)!r}: write {{final[LABEL].METRIC}}, "
                          "{sd[LABEL].METRIC}, {ttt[LABEL]} or {runs[LABEL].ok} (LABEL@PROBLEM for one problem); "
                          "a literal brace is {{ or }}")
    return Segment("placeholder", match.group(), match)


def _merged(parts: list[Segment]) -> list[Segment]:
    """Adjacent plain-text segments joined (an escaped brace splits none), empty ones dropped."""
    out: list[Segment] = []
    for s in parts:
        if out and s.kind == out[-1].kind == "text":
            out[-1] = Segment("text", out[-1].text + s.text)
        elif s.text:
            out.append(s)
    return out


def _tag(text: str, start: int, end: int) -> Segment:
    """The ``[at COMMIT: …]`` or ``[paper: …]`` tag from ``start`` to its closing ``]`` at ``end``."""
    tag = TAG.match(text, start, end)
    if tag is None:
        raise ReportError(f"malformed tag {_snippet(text, start)!r}: write [at <commit, 7-40 hex digits>: …] for a "
                          "historic measurement or [paper: …] for the paper's number")
    body = text[tag.end():end]
    if any(s.kind == "placeholder" for s in segments(body)):
        raise ReportError(f"a placeholder inside the tag {_snippet(text, start)!r}: a historic or published "
                          "number is not a value of these results; move the placeholder out of the tag")
    return Segment("paper" if tag["paper"] else "at", body, commit=tag["commit"] or "")


def _measured(text: str) -> list[tuple[str, int]]:
    """The measured numbers of plain ``text`` (see the module docstring), each with its sign and unit, and where it
    starts."""
    found = []
    for number in NUMBER.finditer(text):
        start, end = number.start(), number.end()
        sign = text[start - 1] if start and text[start - 1] in SIGNS else ""
        signed = bool(sign) and (start < 2 or not (text[start - 2].isalnum() or text[start - 2] in ")]"))
        plus_minus = "±" in text[max(0, start - 2):start] or text[end:end + 2].lstrip(" ").startswith("±")
        unit = UNIT.match(text, end)
        before = text[:start - len(sign) if signed else start].rstrip()
        if (signed or plus_minus or unit) and not (before and before[-1] in SETTING):
            found.append((text[start - (1 if signed else 0):unit.end() if unit else end], start))
    return found


def check_note(text: str, *, labels: Iterable[str], problems: Iterable[str], metrics: Iterable[str]) -> None:
    """Raise :class:`ReportError` (one line) for a malformed placeholder or tag, a placeholder naming an unknown
    kind, label, problem or metric, or a measured number outside placeholders and tags (module docstring)."""
    labels, problems, metrics = set(labels), list(problems), set(metrics)
    for segment in segments(text):
        if segment.kind == "placeholder":
            _check_placeholder(segment.match, labels, problems, metrics)
        measured = _measured(segment.text) if segment.kind == "text" else []
        if measured:
            number, start = measured[0]
            raise ReportError(f"untagged measured number {number!r} in "
                              f"{_snippet(segment.text, max(0, start - 20))!r}: {HOW_TO_TAG}")


def _check_placeholder(match: re.Match, labels: set[str], problems: list[str], metrics: set[str]) -> None:
    """One placeholder's kind, label, problem, field and format spec exist (else ReportError)."""
    text, kind, field = match.group(), match["kind"], match["field"]
    if kind not in KINDS:
        raise ReportError(f"unknown placeholder kind {kind!r} in {text}; use one of {', '.join(KINDS)}")
    if match["label"] not in labels:
        raise ReportError(f"{text}: no run of the study has the label {match['label']!r}; "
                          f"labels: {', '.join(sorted(labels))}")
    if match["problem"] and match["problem"] not in problems:
        raise ReportError(f"{text}: no problem of the study is {match['problem']!r}; "
                          f"problems: {', '.join(sorted(problems))}")
    wanted = KINDS[kind]
    if wanted == "metric" and field not in metrics:
        raise ReportError(f"{text}: no model of the study reports {field!r}; write {{{kind}[LABEL].METRIC}} "
                          f"with METRIC one of {', '.join(sorted(metrics))}")
    if wanted != "metric" and field != wanted:
        raise ReportError(f"{text}: {kind} takes " + (f"the field .{wanted}" if wanted else "no field"))
    spec = match["spec"]
    if spec is not None and kind not in DEFAULT_SPEC:
        raise ReportError(f"{text}: {kind} takes no format spec; remove ':{spec}'")
    try:
        format(1.0, spec or "")
    except ValueError:
        raise ReportError(f"{text}: {spec!r} is not a format spec for a number; write e.g. :.3g or :.1f") from None
