"""The report as one self-contained HTML page (figures embedded as base64 PNG, no external files)."""
from __future__ import annotations

import base64
from html import escape

from .figures import ReportFigure
from .header import Header
from .tables import Details, Prose, Table

__all__ = ["render_html", "Section"]

Section = tuple[str, list[Table | Prose | ReportFigure]]

#: Background colour of each claim verdict.
VERDICT_CLASS = {"reproduced": "v-yes", "partly": "v-part", "not reproduced": "v-no", "not comparable": "v-nc",
                 "not run": "v-nr", "mixed": "v-part", "too few units": "v-nc", "incomplete": "v-nr"}

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
.figures { display: flex; flex-wrap: wrap; gap: 0 1.5rem; }
figure { margin: 1rem 0; max-width: 100%; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { color: #555; font-size: .85rem; max-width: 600px; }
nav a { margin-right: 1rem; }
.glance { display: grid; grid-template-columns: minmax(0, 1.15fr) minmax(0, 1fr); gap: 0 1.5rem; align-items: start; }
.glance .figures figure { margin-top: 0; } .glance table { font-size: .82rem; } .glance .note { font-size: .78rem; margin: .2rem 0; }
@media (max-width: 900px) { .glance { grid-template-columns: 1fr; } }
.v-yes { background: #d7f2d7 !important; } .v-part { background: #fff1c2 !important; }
.v-no { background: #f8d4d4 !important; } .v-nc { background: #e4e4f4 !important; } .v-nr { background: #eee !important; }
.run-line { color: #555; margin: .1rem 0 .8rem; font-size: .9rem; }
.prose h3 { margin-top: 1.2rem; } .prose p { max-width: 60rem; white-space: pre-line; font-size: .92rem; }
"""


def _table(table: Table, heading: bool) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in table.columns)
    numeric, body = table.numeric_columns(), []
    for i, row in enumerate(table.rows):
        cells = []
        for j, cell in enumerate(row):
            text = escape(cell)
            if (i, j) in table.bold:
                text = f"<strong>{text}</strong>"
            cls = f' class="{VERDICT_CLASS[cell]}"' if cell in VERDICT_CLASS else (' class="num"' if j in numeric else "")
            cells.append(f"<td{cls}>{text}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    rows = "\n".join(body) if body else f'<tr><td colspan="{len(table.columns)}">(none)</td></tr>'
    title = f"<h3>{escape(table.title)}</h3>\n" if heading else ""
    return f"{title}<table>\n<tr>{head}</tr>\n{rows}\n</table>\n{note}"


def _figure(fig: ReportFigure, caption: bool) -> str:
    data = base64.b64encode(fig.png).decode("ascii")
    text = f"<figcaption>{escape(fig.caption)}</figcaption>" if caption else ""
    return (f'<figure id="{escape(fig.name)}"><h3>{escape(fig.title)}</h3>'
            f'<img alt="{escape(fig.title)}" src="data:image/png;base64,{data}">{text}</figure>')


def _anchor(title: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in title.lower())


def _paragraph(p: str | Details) -> str:
    if isinstance(p, Details):
        items = "".join(f"<li>{escape(line)}</li>" for line in p.lines)
        return f"<details><summary>{escape(p.summary)}</summary><ul>{items}</ul></details>"
    return f"<p>{escape(p)}</p>"


def _prose(prose: Prose) -> str:
    parts = []
    for heading, paragraphs in prose.items:
        parts.append(f"<h3>{escape(heading)}</h3>" + "".join(_paragraph(p) for p in paragraphs))
    return '<div class="prose">' + "\n".join(parts) + "</div>"


def _section(title: str, items: list, side_by_side: bool = False) -> list[str]:
    """A section: its tables and prose, then its figures; ``side_by_side`` puts the figures to the right of the
    tables (the first screen, so that the ranking, the verdicts and a figure are seen without scrolling)."""
    if side_by_side:
        tables, shown = [i for i in items if not isinstance(i, ReportFigure)], [i for i in items if isinstance(i, ReportFigure)]
        if tables and shown:
            return [f'<h2 id="{_anchor(title)}">{escape(title)}</h2>', '<div class="glance"><div>',
                    *_section(title, tables)[1:], '</div><div class="figures">',
                    *(_figure(fig, True) for fig in shown), "</div></div>"]
    parts = [f'<h2 id="{_anchor(title)}">{escape(title)}</h2>']
    for item in items:
        if isinstance(item, Table):
            parts.append(_table(item, item.title != title))
        elif isinstance(item, Prose):
            parts.append(_prose(item))
    shown = [item for item in items if isinstance(item, ReportFigure)]
    common = len({fig.caption for fig in shown}) == 1 and len(shown) > 1
    if shown and common:
        parts.append(f'<p class="note">{escape(shown[0].caption)}</p>')
    if shown:
        parts.append('<div class="figures">' + "\n".join(_figure(item, not common) for item in shown) + "</div>")
    return parts


def render_html(header: Header, sections: list[Section]) -> str:
    """The whole page as a string: title, one line on the run, the sections, then the full header facts."""
    facts = "\n".join(f"<tr><td>{escape(k)}</td><td>{escape(v)}</td></tr>" for k, v in header.facts)
    caveats = "\n".join(f'<p class="caveat">{escape(c)}</p>' for c in header.caveats)
    nav = " ".join(f'<a href="#{_anchor(t)}">{escape(t)}</a>' for t, _ in sections) + ' <a href="#about">About this run</a>'
    parts = [part for i, (title, items) in enumerate(sections) for part in _section(title, items, side_by_side=i == 0)]
    description = f'<p class="description">{escape(header.description)}</p>' if header.description else ""
    facts_by_name = dict(header.facts)
    run_line = " · ".join(facts_by_name[k] for k in ("study", "svibench", "results written") if k in facts_by_name)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(header.title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{escape(header.title)}</h1>
{description}
<p class="run-line">{escape(run_line)}</p>
<nav>{nav}</nav>
{chr(10).join(parts)}
<h2 id="about">About this run</h2>
<table class="facts">
{facts}
</table>
{caveats}
</body>
</html>
"""
