"""The report as GitHub-readable Markdown, from the Jinja2 template ``templates/report.md.j2``; figures are PNG
files beside it (``figures/NAME.png``)."""
from __future__ import annotations

from .figures import ReportFigure
from .header import Header
from .html import Section
from .jinja import templates
from .tables import Details, Prose, Table

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    """A Markdown table cell: backslashes and pipes escaped, on one line."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


ENVIRONMENT = templates(
    filters={"cell": _cell},
    tests={"table": lambda x: isinstance(x, Table), "prose": lambda x: isinstance(x, Prose),
           "details": lambda x: isinstance(x, Details), "figure": lambda x: isinstance(x, ReportFigure)},
)


def render_markdown(header: Header, sections: list[Section], figures_dir: str = "figures") -> str:
    """The summary as a string; figure links are relative to the Markdown file."""
    facts = dict(header.facts)
    run_line = " · ".join(facts[k] for k in ("study", "svibench", "results written") if k in facts)
    text = ENVIRONMENT.get_template("report.md.j2").render(header=header, sections=sections, run_line=run_line,
                                                           figures_dir=figures_dir)
    return text.rstrip() + "\n"
