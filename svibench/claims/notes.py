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

The number rule (:func:`check_text`, at study load, on every free-text field of a claim: ``note``, ``source``,
``comparable_why``, ``variants_why``, ``not_run``, and the ``note`` of every ``[[paper]]`` row).  A number is a
run of digits with optional decimals, thousands commas and exponent (``0.812``, ``4,000``, ``1.38e5``) that is
not part of a word (``a1a``, ``GH-50``, ``tau0``, ``usps-3v5``, ``128x128``).  Every number outside a placeholder
or a tag fails, bare (``CVI ends at 33.40``) or with any unit (``52 seconds``, ``12 percent``, ``4-fold``),
except these forms, which say what a number *is* rather than what was measured:

1. a setting: ``name = value`` with a one-word name (``w = 0.4``, ``K = 100``, ``δ = 0.002``, ``seeds = 5``,
   ``seconds = 40``), the value possibly a list (``seeds = [0, 1, 2]``);
2. a citation: a year in the parentheses of a reference or after a name (``Khan & Lin (2017)``, ``(2015, §6)``,
   ``Bishop 2006``); a section,
   table, figure, equation, algorithm, appendix or issue number after its word (``§5.1``, ``Table 3``,
   ``Fig. 1(c)``, ``Figure 2``, ``Eq. 12``, ``Algorithm 1``, ``App. I``, ``issue 29``, ``#23``).

So ``seeds = 5``, not ``5 seeds``; ``[paper: 52.52 in 51 s]``, not ``52.52 in 51 s``; and a number of an earlier
run in ``[at <commit>: …]`` with a commit that exists in the repository's history (checked when the study is in
a git work tree).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Iterable

from ..settings import ReportError

__all__ = ["check_text", "segments", "Segment", "KINDS", "DEFAULT_SPEC"]

#: Placeholder kinds, and the field each takes ("metric", "ok" or none).
KINDS = {"final": "metric", "sd": "metric", "ttt": None, "runs": "ok"}
DEFAULT_SPEC = {"final": ".4g", "sd": ".4g", "ttt": ".3g"}
PLACEHOLDER = re.compile(r"\{(?P<kind>\w+)\[(?P<label>[^\[\]{}@]+)(?:@(?P<problem>[^\[\]{}@]+))?\]"
                         r"(?:\.(?P<field>\w+))?(?::(?P<spec>[^{}]*))?\}")
TAG = re.compile(r"\[(?:at (?P<commit>[0-9a-f]{7,40})|(?P<paper>paper)):[ \t]*")
#: Where plain text stops: a brace (placeholder or escape) or the start of a tag.
SPECIAL = re.compile(r"\{\{|\}\}|[{}]|\[(?=at |paper:)")
#: A number, unless part of a word (a letter, digit or ``word-`` straight before it, a letter straight after it,
#: except the ``x`` of ``3.5x``).
NUMBER = re.compile(r"(?<![\w.])(?<!\w-)\d+(?:[.,]\d+)*(?:[eE][-+−]?\d+)?(?=[x×](?!\w)|(?!\w))")
#: ``name = value`` (a one-word name; the value a number, or a list of them).
SETTING = re.compile(r"(?<![\w.])[^\W\d][\w.]*[ \t]*=[ \t]*(?:\[[^\]]*\]|[-+−]?\d+(?:[.,]\d+)*(?:[eE][-+−]?\d+)?)")
#: A year in a reference's parentheses, or the number of a section, table, figure, equation, … after its word.
CITATION = re.compile(r"\((?:19|20)\d\d[a-z]?(?=[,;)])|\b[A-Z][a-z]+,? (?:19|20)\d\d[a-z]?\b|"
                      r"(?:§|#|\b(?i:tables?|figs?\.|figures?|eqs?\.|equations?|algorithms?|app\.|appendix|sections?|"
                      r"sec\.|issues?|chapter|ch\.|theorem|lemma|prop\.|proposition|definition|def\.|step)[ \t]*)"
                      r"\(?\d+(?:\.\d+)*")
HOW_TO_TAG = ("put a value of these results in a placeholder ({final[LABEL].METRIC}, {ttt[LABEL]}), a historic one "
              "in [at <commit>: …], the paper's in [paper: …]; a setting is written name = value, a citation "
              "Table 3, §5.1, (2017)")


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


def _untagged(text: str) -> list[tuple[str, int]]:
    """The numbers of plain ``text`` that are neither a setting nor a citation (module docstring), with where each
    starts."""
    allowed = [m.span() for pattern in (SETTING, CITATION) for m in pattern.finditer(text)]
    return [(m.group(), m.start()) for m in NUMBER.finditer(text)
            if not any(lo <= m.start() and m.end() <= hi for lo, hi in allowed)]


def check_text(text: str, *, labels: Iterable[str] = (), problems: Iterable[str] = (), metrics: Iterable[str] = (),
               commit_exists: Callable[[str], bool] | None = None) -> None:
    """Raise :class:`ReportError` (one line) for a malformed placeholder or tag, a placeholder naming an unknown
    kind, label, problem or metric, an ``[at <commit>]`` naming a commit ``commit_exists`` does not know, or a
    number outside placeholders and tags that is neither a setting nor a citation (module docstring)."""
    labels, problems, metrics = set(labels), list(problems), set(metrics)
    for segment in segments(text):
        if segment.kind == "placeholder":
            _check_placeholder(segment.match, labels, problems, metrics)
        if segment.kind == "at" and commit_exists is not None and not commit_exists(segment.commit):
            raise ReportError(f"[at {segment.commit}: …]: no commit {segment.commit} in the repository's history; "
                              "name the commit the number was measured at")
        found = _untagged(segment.text) if segment.kind == "text" else []
        if found:
            number, start = found[0]
            raise ReportError(f"untagged number {number!r} in {_snippet(segment.text, max(0, start - 20))!r}: {HOW_TO_TAG}")



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
