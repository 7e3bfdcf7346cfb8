"""The report as GitHub-readable Markdown, from the Jinja2 template ``templates/report.md.j2``; figures are PNG
files beside it (``figures/NAME.png``)."""
from __future__ import annotations

from .header import Header
from .html import SECTION_TESTS, Section
from .jinja import templates

__all__ = ["render_markdown"]


def _cell(text: str) -> str:
    """A Markdown table cell: backslashes and pipes escaped, on one line."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").strip()


ENVIRONMENT = templates(
    filters={"cell": _cell},
    tests=SECTION_TESTS,
)


def render_markdown(header: Header, sections: list[Section], figures_dir: str = "figures") -> str:
    """The summary as a string; figure links are relative to the Markdown file."""
    text = ENVIRONMENT.get_template("report.md.j2").render(header=header, sections=sections, run_line=header.run_line,
                                                           figures_dir=figures_dir)
    return text.rstrip() + "\n"
