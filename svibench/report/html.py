"""The report as one self-contained HTML page (figures embedded as base64 PNG, no external files), from the
Jinja2 template ``templates/report.html.j2``."""
from __future__ import annotations

import base64

from markupsafe import Markup

from .figures import ReportFigure
from .header import Header
from .tables import Details, Prose, Table
from .jinja import templates

__all__ = ["render_html", "Section", "SECTION_TESTS"]

Section = tuple[str, list[Table | Prose | ReportFigure]]
#: The Jinja tests that tell a section's parts apart, for every template that renders sections.
SECTION_TESTS = {"table": lambda x: isinstance(x, Table), "prose": lambda x: isinstance(x, Prose),
                 "details": lambda x: isinstance(x, Details), "figure": lambda x: isinstance(x, ReportFigure)}

#: Background colour of each claim verdict: one per word, so that no two verdicts look alike in a report or the index.
VERDICT_CLASS = {"reproduced": "v-yes", "partly": "v-part", "mixed": "v-mixed", "not reproduced": "v-no",
                 "too few units": "v-few", "not comparable": "v-nc", "incomplete": "v-inc", "not run": "v-nr"}

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 2rem auto; max-width: 1400px;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
h3 { font-size: 1.05rem; margin-bottom: .3rem; }
.description { color: #555; margin-top: 0; }
table { border-collapse: collapse; margin: .5rem 0; font-size: .9rem; }
th, td { border: 1px solid #d0d0d0; padding: .25rem .6rem; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } tr:nth-child(even) td { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.facts td:first-child { font-weight: 600; white-space: nowrap; }
.note { color: #555; font-size: .85rem; max-width: 60rem; }
.caveat { background: #fff8e1; border-left: 4px solid #f0b400; padding: .4rem .8rem; margin: .4rem 0; }
td { overflow-wrap: break-word; } .scroll { max-width: 100%; overflow-x: auto; }
.figures { display: flex; flex-wrap: wrap; gap: 0 1.5rem; }
figure { margin: 1rem 0; max-width: 100%; overflow-x: auto; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; cursor: zoom-in; }
figure img.full { max-width: none; cursor: zoom-out; }
figcaption { color: #555; font-size: .85rem; max-width: 600px; }
nav a { margin-right: 1rem; }
.glance .note { font-size: .8rem; margin: .2rem 0; } .glance figure { margin-top: .5rem; }
.v-yes { background: #cdeccd !important; } .v-part { background: #fff3bf !important; }
.v-mixed { background: #ffd8a8 !important; } .v-no { background: #f6c6c6 !important; }
.v-few { background: #d3e9f8 !important; } .v-nc { background: #e3dcf5 !important; }
.v-inc { background: #eee2cf !important; } .v-nr { background: #e6e6e6 !important; }
.run-line { color: #555; margin: .1rem 0 .8rem; font-size: .9rem; }
.prose h3 { margin-top: 1.2rem; } .prose p { max-width: 60rem; white-space: pre-line; font-size: .92rem; }
"""


def _cell_class(cell: str, numeric: bool) -> Markup:
    """A cell's class attribute: its verdict's colour, or right-aligned numbers."""
    if cell in VERDICT_CLASS:
        return Markup(f' class="{VERDICT_CLASS[cell]}"')
    return Markup(' class="num"') if numeric else Markup("")


def _anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower())


ENVIRONMENT = templates(
    filters={"anchor": _anchor, "b64": lambda png: base64.b64encode(png).decode("ascii")},
    tests=SECTION_TESTS,
    globals={"cell_class": _cell_class, "css": Markup(CSS)},
)


def render_html(header: Header, sections: list[Section]) -> str:
    """The whole page as a string (``templates/report.html.j2``): title, one line on the run, the sections (the
    first, "At a glance", is the ranking, then the verdicts, then the headline figure, each the page's full width
    so that the figure's labels stay legible), then the full header facts."""
    return ENVIRONMENT.get_template("report.html.j2").render(header=header, sections=sections,
                                                             run_line=header.run_line)
