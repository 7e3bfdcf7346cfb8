"""The report as GitHub-readable Markdown; figures are PNG files beside it (``figures/NAME.png``)."""
from __future__ import annotations

from .figures import ReportFigure
from .header import Header
from .html import Section
from .tables import Details, Prose, Table

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


def _paragraph(p: str | Details) -> list[str]:
    if isinstance(p, Details):
        return [f"<details><summary>{p.summary}</summary>", ""] + [f"- {line}" for line in p.lines] + ["", "</details>", ""]
    return [p, ""]


def _table(table: Table, heading: bool) -> list[str]:
    lines = [f"### {table.title}", ""] if heading else []
    numeric = table.numeric_columns()
    lines.append("| " + " | ".join(_cell(c) for c in table.columns) + " |")
    lines.append("|" + "|".join(" ---: " if j in numeric else " --- " for j in range(len(table.columns))) + "|")
    for i, row in enumerate(table.rows):
        cells = [f"**{_cell(c)}**" if (i, j) in table.bold and c else _cell(c) for j, c in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
    if not table.rows:
        lines.append("| " + " | ".join(["(none)"] + [""] * (len(table.columns) - 1)) + " |")
    if table.note:
        lines += ["", f"_{_cell(table.note)}_"]
    return lines + [""]


def _figure(fig: ReportFigure, figures_dir: str, caption: bool) -> list[str]:
    return [f"### {fig.title}", "", f"![{fig.title}]({figures_dir}/{fig.name}.png)", ""] + (
        [f"_{fig.caption}_", ""] if caption else [])


def render_markdown(header: Header, sections: list[Section], figures_dir: str = "figures") -> str:
    """The summary as a string; figure links are relative to the Markdown file."""
    lines = [f"# {header.title}", ""]
    if header.description:
        lines += [header.description, ""]
    facts = dict(header.facts)
    lines += [" · ".join(facts[k] for k in ("study", "svibench", "results written") if k in facts), ""]
    for title, items in sections:
        lines += [f"## {title}", ""]
        shown = [item for item in items if isinstance(item, ReportFigure)]
        common = len({fig.caption for fig in shown}) == 1 and len(shown) > 1
        if common:
            lines += [f"_{shown[0].caption}_", ""]
        for item in items:
            if isinstance(item, Table):
                lines += _table(item, item.title != title)
            elif isinstance(item, Prose):
                for heading, paragraphs in item.items:
                    lines += [f"### {heading}", ""] + [line for p in paragraphs for line in _paragraph(p)]
            else:
                lines += _figure(item, figures_dir, caption=not common)
    lines += ["## About this run", "", "| | |", "| --- | --- |"]
    lines += [f"| **{_cell(k)}** | {_cell(v)} |" for k, v in header.facts] + [""]
    lines += [f"> {_cell(c)}" + "\n" for c in header.caveats]
    return "\n".join(lines).rstrip() + "\n"
